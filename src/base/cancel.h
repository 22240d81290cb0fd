/* cancel.h — cancellation tokens. A token is fired once (with a reason) and
 * stays fired; child tokens fire when their parent does; blocking waits
 * subscribe a wake-up callback so they observe cancellation promptly.
 * All functions are thread-safe. Lock order: a parent's lock before a child's.
 * A parent must outlive its children. */
#ifndef CDSH_BASE_CANCEL_H
#define CDSH_BASE_CANCEL_H

#include <stdbool.h>
#include <stdint.h>

typedef struct cdsh_cancel cdsh_cancel;
typedef void (*cdsh_cancel_fn)(void *arg);

/* New unfired token; when parent is non-NULL the token also fires when the
 * parent fires (immediately if the parent already has). NULL on ENOMEM. */
cdsh_cancel *cdsh_cancel_new(cdsh_cancel *parent);

/* Detaches from the parent and frees. Subscribers must have unsubscribed. */
void cdsh_cancel_free(cdsh_cancel *tok);

/* Fires the token: records reason (copied; NULL means "cancelled"), runs the
 * subscribed callbacks and fires children. Later calls are no-ops. */
void cdsh_cancel_fire(cdsh_cancel *tok, const char *reason);

/* True once fired. NULL-safe: a NULL token is never fired. */
bool cdsh_cancel_is_fired(const cdsh_cancel *tok);

/* The reason given to the first fire, or NULL while unfired. Borrowed; valid
 * for the token's lifetime. */
const char *cdsh_cancel_reason(const cdsh_cancel *tok);

/* Subscribes cb(arg) to run once when the token fires. If it has already
 * fired, cb runs now on this thread. Callbacks run with the token's lock held:
 * they must be short (signal a condvar, write a pipe) and must not call back
 * into the same token. Returns a subscription id (> 0), or 0 on ENOMEM or a
 * NULL token. */
uint64_t cdsh_cancel_subscribe(cdsh_cancel *tok, cdsh_cancel_fn cb, void *arg);

/* Removes a subscription. When it returns the callback is not running and
 * will not run. Unknown ids and NULL tokens are ignored. */
void cdsh_cancel_unsubscribe(cdsh_cancel *tok, uint64_t id);

/* Sleeps until the token fires or timeout_ms passes (negative: forever).
 * Returns true if fired. */
bool cdsh_cancel_wait(cdsh_cancel *tok, int64_t timeout_ms);

#endif
