/* turn.h — one engine turn of a bound cdsh session, written into the cdsh
 * session store with the agent loop's own event types (turn/start,
 * user/message, tool/call, tool/result, notice, assistant/message,
 * turn/end) and reported as the same JSON events (docs/agent.md), so the
 * terminal printer, the web page and `cdsh sessions show` need no special
 * case. The one writer both front ends plug in; the wire is service.c.
 *
 * Mapping (digest §4.4/§4.5): agent text and thought chunks stream as
 * text/delta and reasoning/delta and are written once, at the end, as one
 * assistant/message {text, reasoning, finishReason: stopReason}; once a
 * toolCallId's status moves past "pending", another call is first seen or
 * the turn ends, it logs
 * tool/call {callId, name, arguments (the latest non-empty rawInput as
 * JSON, else "{}"), title?, kind? (the latest before that)} — agents send
 * the real input late (Claude Code: {} first) — advertised first (the advertisement
 * rule) by an assistant/message {text:"", toolCalls:[{id, name,
 * arguments}]} — calls first seen while others are still open wait for
 * those results and are then advertised together; its first
 * completed/failed status logs tool/result {callId, isError, content};
 * other status changes are the live event tool/update {callId, name,
 * status, title?}; calls without a final status get an error result
 * ACP_NO_RESULT at the end; a plan is a
 * notice ACP_PLAN listing its entries; a failure is a notice whose code is
 * the class (INSUFFICIENT_FUNDS, ..., UNKNOWN) and whose text is the
 * agent's own message; turn/end {reason, stopReason?, engineId}. Other
 * update kinds are the live event acp/update {kind, update}. Updates that
 * a session/load replays before the turn are not part of the turn.
 *
 * Thread-safety: runs on the caller's thread; updates arrive on the
 * connection's dispatcher thread and are serialised by the turn. */
#ifndef CDSH_PLUGINS_ACP_TURN_H
#define CDSH_PLUGINS_ACP_TURN_H

#include <jansson.h>
#include <stdint.h>

#include "agent/agent.h"
#include "agent/session_store.h"
#include "base/cancel.h"
#include "base/err.h"
#include "plugins/acp/service.h"

typedef struct cdsh_acp_turn_opts {
    cdsh_acp_service *svc;        /* required; borrowed */
    cdsh_session_store *store;    /* required; borrowed */
    int64_t lease_timeout_ms;     /* wait for a session busy elsewhere; 0: refuse at once */
    cdsh_agent_event_fn on_event; /* may be NULL; called on the dispatcher thread too */
    void *event_arg;
} cdsh_acp_turn_opts;

/* Sends text to the session's engine as one recorded turn. Returns 0 once
 * the turn was recorded, however it ended, with *result (may be NULL) the
 * service's result object (owned; see cdsh_acp_service_prompt). Negative
 * before a turn starts: NO_SESSION / BAD_SESSION_ID, SESSION_BUSY
 * (CDSH_EBUSY: its lease is held), UNBOUND_SESSION (not bound to an
 * engine), CDSH_EINVAL "BAD_ARGUMENT" (empty text), or a store failure.
 * cancel (may be NULL) cancels the turn (session/cancel). */
int cdsh_acp_turn_run(const cdsh_acp_turn_opts *opts, const char *session_id, const char *text,
                      cdsh_cancel *cancel, json_t **result, cdsh_error *err);

/* Cap in bytes of the transcript replayed to an agent that lost a session. */
#define CDSH_ACP_TRANSCRIPT_MAX 100000

/* True when the cdsh session is bound to an engine in sessions.json. */
bool cdsh_acp_turn_is_bound(const cdsh_home *home, const char *session_id);

#endif
