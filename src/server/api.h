/* api.h — the web UI's HTTP API on top of web.h: sessions, turns run on a
 * bounded worker pool, cancel, commands, status, panels, and server-sent
 * events per session and global (turn progress, streamed text, tool calls
 * and results, plugin state). Sessions a plugin's runner owns (engine-bound
 * ones) run their turns there; plugins' own surfaces are their RPC
 * channels. Routes and events: docs/web.md. Thread-safe. */
#ifndef CDSH_SERVER_API_H
#define CDSH_SERVER_API_H

#include "agent/agent.h"
#include "host/approval.h"
#include "server/hub.h"
#include "server/web.h"

typedef struct cdsh_api cdsh_api;

typedef struct cdsh_api_options {
    /* The approval broker the page answers (borrowed). NULL: the api makes
     * its own with approval_timeout_ms. Either way the api installs its web
     * channel on it and the broker as the host tools' approval service. */
    cdsh_approvals *approvals;
    int64_t approval_timeout_ms; /* own broker only; <= 0: the default */
    size_t turn_workers;         /* turn threads; 0: CDSH_API_TURN_WORKERS */
} cdsh_api_options;

/* Turns of every session run on one pool of at most this many threads (a
 * turn holds one pool thread; the HTTP request that started it returns at
 * once with 202; turns beyond the pool wait for a thread and their session
 * counts as busy meanwhile). */
#define CDSH_API_TURN_WORKERS 8

/* A turn whose turn/end event went out still holds its session for the
 * moment it takes to release the lease; a request for that session (a new
 * message, delete, fork) waits up to this long for it instead of getting
 * SESSION_BUSY. */
#define CDSH_API_SETTLE_MS 5000

/* Registers the /api routes on web and listens on the agent's host bus for
 * "plugin/state", "plugins/change" and "sessions/change". agent and web (and the options'
 * objects) are borrowed and must outlive the api. opts may be NULL. */
int cdsh_api_start_ex(cdsh_web *web, cdsh_agent *agent, const cdsh_api_options *opts,
                      cdsh_api **out, cdsh_error *err);

/* cdsh_api_start_ex with its own broker.
 * keep-public: fuzz_web_request starts the api with it. */
int cdsh_api_start(cdsh_web *web, cdsh_agent *agent, cdsh_api **out, cdsh_error *err);

/* Cancels running turns, ends pending approval requests ("cancelled") and
 * every SSE stream, so the web server can stop. Call before cdsh_web_stop. */
void cdsh_api_shutdown(cdsh_api *api);

/* After cdsh_web_stop: waits for every turn (queued ones run, cancelled)
 * and frees. NULL-safe. */
void cdsh_api_free(cdsh_api *api);

/* Turn threads started so far (never more than the pool's size).
 * keep-public: test_web counts the turn threads. */
size_t cdsh_api_turn_threads(cdsh_api *api);

#endif
