/* sse.h — an incremental parser for server-sent events (the WHATWG
 * "text/event-stream" format): bytes go in as they arrive, complete events
 * come out through a callback. It knows nothing about HTTP or JSON. */
#ifndef CDSH_AGENT_SSE_H
#define CDSH_AGENT_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

typedef struct cdsh_sse cdsh_sse;

/* One dispatched event. `event` is the last "event:" field ("message" when
 * none was given), `data` joins the "data:" lines with "\n" (NUL-terminated,
 * data_len excludes the NUL), `id` is the last "id:" seen on the stream (or
 * ""). All pointers are borrowed and valid only during the callback. */
typedef struct cdsh_sse_event {
    const char *event;
    const char *data;
    size_t data_len;
    const char *id;
} cdsh_sse_event;

/* Called for each complete event. A non-zero return stops parsing: feed
 * returns that value. */
typedef int (*cdsh_sse_event_fn)(void *arg, const cdsh_sse_event *ev);

/* New parser. max_event_bytes bounds one line and one event's data
 * (0: 16 MiB). NULL on ENOMEM. Not thread-safe: one parser per stream. */
cdsh_sse *cdsh_sse_new(size_t max_event_bytes, cdsh_sse_event_fn fn, void *arg);
void cdsh_sse_free(cdsh_sse *p);

/* Feeds bytes. Lines may end in "\n", "\r\n" or "\r" and may be split
 * anywhere across calls (a leading UTF-8 BOM is skipped). Comment lines
 * (":...") are ignored, "retry:" is ignored. Returns 0, the callback's
 * non-zero value, or CDSH_ETOOBIG ("SSE_TOO_BIG") when a line or an
 * event exceeds the limit; after an error the parser must not be fed again. */
int cdsh_sse_feed(cdsh_sse *p, const char *buf, size_t len, cdsh_error *err);

/* End of stream: an event still pending without its blank line is dropped
 * (as the specification says). Returns true when no partial data is
 * pending, i.e. the stream ended on an event boundary. */
bool cdsh_sse_finish(cdsh_sse *p);

#endif
