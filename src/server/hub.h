/* hub.h — the server-sent-events hub: a bounded, ordered buffer of events
 * (each with a global id, an optional session and a type) that SSE streams
 * follow with a cursor, resuming after Last-Event-ID. Publishing never
 * blocks on slow readers: a reader that falls out of the buffer gets a
 * "reset" event. Thread-safe (one mutex + condvar). */
#ifndef CDSH_SERVER_HUB_H
#define CDSH_SERVER_HUB_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cdsh_hub cdsh_hub;
struct MHD_Response;

#define CDSH_HUB_DEFAULT_CAPACITY 4096
#define CDSH_HUB_KEEPALIVE_MS 15000

/* capacity 0: the default. NULL on ENOMEM. */
cdsh_hub *cdsh_hub_new(size_t capacity);
/* Call after every stream has ended (cdsh_hub_close, then stop the server). */
void cdsh_hub_free(cdsh_hub *hub);

/* Appends an event; data (borrowed) is sent as the SSE data line (compact
 * JSON). session NULL: a global event, seen by every stream. Returns its id
 * (1, 2, ...), or 0 after close / on ENOMEM. */
int64_t cdsh_hub_publish(cdsh_hub *hub, const char *session, const char *type, const json_t *data);

/* The id of the newest event (0 when none). */
int64_t cdsh_hub_last_id(cdsh_hub *hub);

/* Wakes every waiting stream and makes them end; later publishes are dropped. */
void cdsh_hub_close(cdsh_hub *hub);

/* A streaming text/event-stream response following `session` from events
 * after `after` (negative: from now on). NULL on ENOMEM. */
struct MHD_Response *cdsh_hub_stream_new(cdsh_hub *hub, const char *session, int64_t after);

#endif
