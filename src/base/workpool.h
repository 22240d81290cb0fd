/* workpool.h — a bounded pool of worker threads running submitted jobs in
 * submission order: at most `max` threads, started only as jobs arrive,
 * jobs beyond them wait in a FIFO queue. No job is ever dropped: free()
 * runs what is still queued before joining. Used by the web API's turns
 * (one pool thread per running turn). All functions are thread-safe. */
#ifndef CDSH_BASE_WORKPOOL_H
#define CDSH_BASE_WORKPOOL_H

#include <stddef.h>

typedef struct cdsh_workpool cdsh_workpool;

/* A pool of at most max (>= 1) threads; NULL on ENOMEM or max == 0. */
cdsh_workpool *cdsh_workpool_new(size_t max);

/* Queues fn(arg). 0, or CDSH_ENOMEM (then fn was not queued). When not a
 * single thread can be created, fn runs on the caller's thread instead. */
int cdsh_workpool_submit(cdsh_workpool *pool, void (*fn)(void *), void *arg);

/* Threads started so far (never more than max). */
size_t cdsh_workpool_threads(cdsh_workpool *pool);

/* Runs every queued job to completion, joins the threads, frees. NULL-safe.
 * Must not be called from one of the pool's own jobs. */
void cdsh_workpool_free(cdsh_workpool *pool);

#endif
