/* service.h — external ACP agents as cdsh sessions: binds a cdsh session id
 * to an engine (sessions.json), keeps one agent process per engine shared
 * by its sessions (lazily spawned, disposed after idleDisposeMs), sends
 * prompts and streams updates to the caller's sink (permission requests go
 * to the approval broker), cancels, switches config options / modes,
 * resumes the ACP session after a restart (session/load, else
 * session/resume, else a fresh session with a warning), forks bound
 * sessions (session/fork) and lists the agent's own sessions
 * (session/list). Front ends (chat, web) are thin wrappers.
 *
 * Threads: all functions are thread-safe; one prompt per cdsh session at a
 * time (a second gets CDSH_EBUSY). Sink callbacks run on the connection's
 * dispatcher thread (see proto/acp/conn.h) and must not call
 * cdsh_acp_service_prompt; cdsh_acp_service_cancel is fine. */
#ifndef CDSH_PLUGINS_ACP_SERVICE_H
#define CDSH_PLUGINS_ACP_SERVICE_H

#include <jansson.h>
#include <stdbool.h>

#include "base/cancel.h"
#include "base/err.h"
#include "base/home.h"
#include "host/approval.h"
#include "host/tools.h"
#include "proto/acp/conn.h"

typedef struct cdsh_acp_service cdsh_acp_service;

/* Where a turn's streamed updates go (on_update may be NULL). Permission
 * requests do not go here: they go to the service's approval broker. */
typedef struct cdsh_acp_turn_sink {
    void (*on_update)(void *ud, const char *cdsh_session_id, cdsh_acp_update_kind kind,
                      const char *kind_name, const json_t *update);
    void *ud;
} cdsh_acp_turn_sink;

typedef struct cdsh_acp_service_opts {
    bool no_fs;          /* do not advertise fs/read_text_file, fs/write_text_file */
    bool no_terminal;    /* do not advertise terminal (terminal/create and the rest) */
    json_t *mcp_servers; /* borrowed ACP McpServer array offered in session/new and
                            session/load when the engine's mcp is "inherit" (e.g. cdsh's
                            own MCP server); NULL: none */
    bool record;         /* keep raw lines (probe) */
    /* Borrowed; must outlive the service. session/request_permission during
     * a turn (or an open) becomes a request to the person with the agent's
     * options (optionId, `name` shown verbatim, kind), titled with the
     * tool call's title (else kind, else "acp:<toolCallId>") and the cdsh
     * session id; answered "cancelled" on any ending but a selection.
     * NULL, or a request outside a turn: "cancelled" (fail closed). */
    cdsh_approvals *approvals;
    /* When approvals is NULL: the broker the front end installed on these
     * tools at the time of the request (cdsh_approvals_installed), so the
     * plugin's own service asks wherever the person is (web page,
     * terminal). Borrowed; must outlive the service. */
    cdsh_tools *approvals_of;
    /* Progress while an engine's handshake waits (cdsh_acp_conn_opts):
     * e.g. "waiting for opencode to initialize… 12 s". NULL: none. */
    cdsh_acp_wait_fn on_wait;
    void *wait_ud;
    int64_t wait_notice_ms; /* <= 0: CDSH_ACP_WAIT_NOTICE_MS */
    /* Borrowed, may be NULL; must outlive the service. Once fired, an
     * engine handshake that waits (a cold start's initialize, session/new,
     * session/load) fails CANCELED and leaves no process: a front end's
     * SIGTERM is not held up by an agent's start. */
    cdsh_cancel *cancel;
} cdsh_acp_service_opts;

/* home (borrowed, must outlive the service) holds the engine and session
 * state (state.h). opts may be NULL. NULL with err filled on failure. */
cdsh_acp_service *cdsh_acp_service_new(const cdsh_home *home, const cdsh_acp_service_opts *opts,
                                       cdsh_error *err);
/* The home the service was made with (borrowed). */
const cdsh_home *cdsh_acp_service_home(const cdsh_acp_service *svc);

/* Disposes every agent process (SIGTERM, SIGKILL after its grace) and frees.
 * Bindings in sessions.json stay. NULL-safe. */
void cdsh_acp_service_free(cdsh_acp_service *svc);

/* Binds (or rebinds before the first message) a cdsh session to an engine
 * with its working directory (absolute; NULL keeps the current one). The
 * engine must exist. Errors: UNKNOWN_ENGINE, ENGINE_LOCKED (CDSH_EPERM). */
int cdsh_acp_service_bind(cdsh_acp_service *svc, const char *cdsh_session_id, const char *engine_id,
                          const char *cwd, cdsh_error *err);

/* Sends one user message to the bound engine and waits for the turn's end.
 * Always returns an owned result object (NULL only on ENOMEM):
 *   {ok:true, stopReason, engineId, acpSessionId, opened:"live"|"new"|"load"|
 *    "resume", latencyMs, updates, warnings:[...]} or
 *   {ok:false, code: INSUFFICIENT_FUNDS|RATE_LIMITED|UNAUTHORIZED|TIMEOUT|
 *    PROTOCOL|UNKNOWN|CANCELLED|UNBOUND_SESSION|UNKNOWN_ENGINE|ENGINE_DISABLED|
 *    ENGINE_LOCKED|COMMAND_NOT_FOUND|TURN_RUNNING, message (the agent's own
 *    words verbatim where it gave any), engineId?, warnings}.
 * The first message locks the session's engine. cancel may be NULL. */
json_t *cdsh_acp_service_prompt(cdsh_acp_service *svc, const char *cdsh_session_id,
                                const char *text, const cdsh_acp_turn_sink *sink,
                                cdsh_cancel *cancel);

/* As cdsh_acp_service_prompt with the message given as ACP content blocks
 * (borrowed array, at least one; e.g. the replayed transcript first, then
 * the person's text). */
json_t *cdsh_acp_service_prompt_blocks(cdsh_acp_service *svc, const char *cdsh_session_id,
                                       const json_t *blocks, const cdsh_acp_turn_sink *sink,
                                       cdsh_cancel *cancel);

/* True when the live ACP session of a bound cdsh session was opened fresh
 * although the binding had one (session/load and session/resume failed, as
 * with a Claude fork after a restart) or is a fork that got none, and no
 * prompt has finished on it since: the agent does not have the
 * conversation, so a front end that has the transcript should send it with
 * the next message (turn.c does). */
bool cdsh_acp_service_context_lost(cdsh_acp_service *svc, const char *cdsh_session_id);

/* Cancels the running turn of a session (session/cancel; pending
 * permission requests answered "cancelled"). CDSH_ENOTFOUND if none.
 * keep-public: cancels an ACP turn (test_service); no front end's stop calls it yet. */
int cdsh_acp_service_cancel(cdsh_acp_service *svc, const char *cdsh_session_id);

/* Sends sig (SIGINT for a terminal's second Ctrl-C) to the process group of
 * the agent serving a live cdsh session: the agent and what it started get
 * it as if they ran in the terminal. CDSH_ENOTFOUND when the session is not
 * live. */
int cdsh_acp_service_interrupt(cdsh_acp_service *svc, const char *cdsh_session_id, int sig,
                               cdsh_error *err);

/* Opens the ACP side of a bound session now (normally done lazily by the
 * first prompt) so config options can be read before any message. */
int cdsh_acp_service_open(cdsh_acp_service *svc, const char *cdsh_session_id,
                          const cdsh_acp_turn_sink *sink, json_t **warnings, cdsh_error *err);

/* {configOptions, modes} of a live session exactly as the agent sent them
 * (owned), or NULL when the session is not open. */
json_t *cdsh_acp_service_config_dup(cdsh_acp_service *svc, const char *cdsh_session_id);

/* Switches a config option or mode of a live session (set_config_option,
 * falling back to set_mode). *via as cdsh_acp_conn_set_config. */
int cdsh_acp_service_set_config(cdsh_acp_service *svc, const char *cdsh_session_id,
                                const char *config_id, const char *value, const char **via,
                                cdsh_error *err);

/* Closes the live ACP session (session/close when advertised); the binding
 * stays so a later prompt resumes it. The engine process is disposed
 * idleDisposeMs after its last session went. */
int cdsh_acp_service_release(cdsh_acp_service *svc, const char *cdsh_session_id, cdsh_error *err);

/* The engine's own sessions: session/list (every page up to
 * CDSH_ACP_LIST_MAX_PAGES) filtered by cwd (absolute; NULL: every
 * directory), on the engine's process (spawned if needed). *out (owned):
 * {engineId, cwd, sessions:[SessionInfo as sent (sessionId, cwd, title?,
 * updatedAt?, ...) + cdshSessionId: the cdsh session bound to it or null],
 * truncated}. Errors: UNKNOWN_ENGINE, ENGINE_DISABLED, METHOD_NOT_ADVERTISED
 * (CDSH_EUNSUPPORTED, nothing sent), spawn and remote errors. */
int cdsh_acp_service_list_remote(cdsh_acp_service *svc, const char *engine_id, const char *cwd,
                                 json_t **out, cdsh_error *err);

/* The ACP side of a fork: child_id (just forked from parent_id in the
 * session store; whole = it got every event) is bound like the parent
 * (cdsh_acp_state_session_fork: same engine and cwd, locked when the parent
 * is). When the parent has an ACP session, the fork is whole and the engine
 * advertises session/fork, the agent's session is forked on the process the
 * parent uses (or a new one) and becomes the child's, live; otherwise a
 * warning says the child's first message starts a fresh ACP session. The
 * parent's binding and ACP session are untouched. Warnings are appended to
 * `warnings` (an array). Errors: UNBOUND_SESSION (the parent has no
 * engine: nothing to do), state-file errors. */
int cdsh_acp_service_fork(cdsh_acp_service *svc, const char *parent_id, const char *child_id,
                          bool whole, json_t *warnings, cdsh_error *err);

/* Number of live engine processes (for tests and `status`).
 * keep-public: tests count live engine processes. */
size_t cdsh_acp_service_process_count(cdsh_acp_service *svc);

/* The ACP McpServer (stdio) that offers cdsh's own model-facing tools to an
 * engine: {name:"cdsh", command:cdsh_path, args:["mcp"(, "--tools",
 * tools_glob)], env:[]}. cdsh_path NULL: this process's executable
 * (/proc/self/exe). Owned; NULL if the path cannot be found. */
json_t *cdsh_acp_cdsh_mcp_server_dup(const char *cdsh_path, const char *tools_glob);

/* Picks the option of params.options (a request_permission's params) that
 * carries out an approval outcome (digest §4.7): ALLOWED_ONCE → allow_once,
 * else allow_always, else a kind starting "allow"; REJECTED / UNAVAILABLE →
 * reject_once, reject_always, "reject*"; CANCELLED or no match → NULL.
 * Owned optionId. The rule is the broker's (cdsh_approvals_option_for_dup).
 * keep-public: test_service pins the option mapping. */
char *cdsh_acp_permission_option_dup(const json_t *params, cdsh_approval_outcome outcome);

#endif
