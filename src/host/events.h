/* events.h — the host's notification bus ("tools/change", "tools/result",
 * "commands/change", "command/run", "command/done", "skills/change", ...).
 * Listeners subscribe to an exact name, a prefix pattern ("tools/" then a star)
 * or a lone star, with an
 * optional scope filter: a listener tagged with scope F sees events emitted
 * in F or any descendant of F; an untagged (global) listener sees every event.
 * Scope-filtered emission with a NULL scope reaches only global listeners;
 * unfiltered emission reaches everyone. Waterfall hooks with typed C
 * signatures (pre/post-execute...) live with the tool registry, not here.
 * Thread-safe. No lock is held while a listener runs; a listener disposed
 * while an emission is in flight may still receive that one event. */
#ifndef CDSH_HOST_EVENTS_H
#define CDSH_HOST_EVENTS_H

#include <jansson.h>
#include <stdbool.h>

#include "base/err.h"
#include "host/disposer.h"
#include "host/scope.h"

typedef struct cdsh_events cdsh_events;

/* A front end's session is over for good (an MCP session closed, a web
 * session deleted): emitted unfiltered with {id: the session's scope id,
 * reason}. Services that keep something per session (background jobs)
 * listen and let go before the emission returns. */
#define CDSH_EVENT_SESSION_END "session/end"

/* payload is borrowed for the duration of the call. A listener must not
 * throw away events it does not understand loudly: just ignore them. */
typedef void (*cdsh_event_fn)(void *arg, const char *name, const cdsh_scope *scope,
                              const json_t *payload);

cdsh_events *cdsh_events_new(void);
void cdsh_events_free(cdsh_events *bus);

/* Subscribes; *out receives the disposer. filter may be NULL (global).
 * CDSH_EINVAL for an empty pattern or NULL fn. */
int cdsh_events_on(cdsh_events *bus, const char *pattern, cdsh_scope *filter, cdsh_event_fn fn,
                   void *arg, cdsh_disposer_t *out, cdsh_error *err);

/* Delivers to matching listeners in subscription order. When `filtered` is
 * false the scope filter is ignored (every matching listener runs). */
void cdsh_events_emit(cdsh_events *bus, const char *name, const cdsh_scope *scope, bool filtered,
                      const json_t *payload);

/* Number of live listeners (for leak checks in tests and reload checks);
 * 0 for a NULL bus. */
size_t cdsh_events_count(cdsh_events *bus);

#endif
