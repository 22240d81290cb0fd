/* session_runner.h — plugins that run the turns of sessions bound to them
 * instead of the model (the ACP plugin: sessions bound to an external
 * coding agent, an "engine"). A plugin registers a cdsh_session_runner
 * through its context (cdsh_ctx_hook(ctx, CDSH_SESSION_RUNNERS, &runner));
 * front ends (chat, web) ask the host which runner owns a session and call
 * it, so they name no plugin. A runner writes its turn into the front end's
 * session store with the agent loop's event types and reports the same JSON
 * events (docs/agent.md), so printers and pages need no special case.
 * Thread-safety: runners' functions are thread-safe; hooks stay valid while
 * their plugin is loaded (host/plugins.h). */
#ifndef CDSH_AGENT_SESSION_RUNNER_H
#define CDSH_AGENT_SESSION_RUNNER_H

#include <jansson.h>
#include <stdbool.h>

#include "agent/agent.h"
#include "agent/session_store.h"
#include "base/cancel.h"
#include "base/err.h"
#include "host/host.h"

/* The hook kind (host/plugins.h) of cdsh_session_runner registrations. */
#define CDSH_SESSION_RUNNERS "session/runner"

/* One turn a front end hands to a runner. */
typedef struct cdsh_session_turn {
    cdsh_session_store *store;    /* the front end's; borrowed */
    const char *session_id, *text;
    cdsh_cancel *cancel;          /* may be NULL */
    cdsh_agent_event_fn on_event; /* may be NULL; may be called from another thread */
    void *event_arg;
} cdsh_session_turn;

typedef struct cdsh_session_runner {
    /* What the sessions are bound to, as front ends say it ("engine"): the
     * chat's --engine option binds through the runner of that name. */
    const char *name;
    /* True when the session's turns are this runner's. */
    bool (*owns)(void *arg, const char *session_id);
    /* Runs one turn. 0 once the turn was recorded, however it ended; *note
     * (may be NULL) gets an owned line for the person about an unusual end
     * ("turn ended: max_tokens") or NULL. Negative before a turn started
     * (SESSION_BUSY, UNBOUND_SESSION, ...), with err filled. */
    int (*run)(void *arg, const cdsh_session_turn *turn, char **note, cdsh_error *err);
    /* Binds the session to `target` (an engine id) working in cwd (absolute;
     * NULL keeps the current one). May be NULL: binding is not offered. */
    int (*bind)(void *arg, const char *session_id, const char *target, const char *cwd,
                cdsh_error *err);
    /* One line about the session's binding for the person (owned), or NULL. */
    char *(*describe_dup)(void *arg, const char *session_id);
    /* The session was deleted: drop what the runner keeps about it. May be NULL. */
    void (*forget)(void *arg, const char *session_id);
    void *arg;
} cdsh_session_runner;

/* The first runner of the host's plugins that owns session_id, or NULL. */
const cdsh_session_runner *cdsh_session_runner_find(cdsh_host *host, const char *session_id);

/* The runner named `name` (e.g. "engine"), or NULL. */
const cdsh_session_runner *cdsh_session_runner_named(cdsh_host *host, const char *name);

/* Tells every runner that session_id was deleted. */
void cdsh_session_runners_forget(cdsh_host *host, const char *session_id);

#endif
