/* conn.h — an ACP (Agent Client Protocol v1) client connection to one agent
 * process: spawn, initialize, authenticate, sessions multiplexed by ACP
 * session id, prompts with streamed session/update, cancel, config options
 * and modes, and the agent→client callbacks (permission, confined fs,
 * terminals — the latter in terminal.c).
 * It knows nothing about engines, state files or cdsh sessions (plugins/acp).
 *
 * Threads: every function is thread-safe. Incoming session/update
 * notifications and agent requests run on the JSON-RPC dispatcher thread,
 * one at a time and in order; update and permission callbacks run there and
 * must not call back into a blocking conn function for the same session
 * (firing a prompt's cancel token is fine). Lock order: conn lock, then nothing. */
#ifndef CDSH_PROTO_ACP_CONN_H
#define CDSH_PROTO_ACP_CONN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cancel.h"
#include "base/err.h"
#include "proto/jsonrpc.h"

#define CDSH_ACP_PROTOCOL_VERSION 1
#define CDSH_ACP_FS_MAX_BYTES ((size_t)4 * 1024 * 1024) /* fs/read and fs/write limit */

typedef struct cdsh_acp_conn cdsh_acp_conn;

/* The session/update kinds of the v1 schema; anything else is UNKNOWN
 * (logged at debug level and passed on, never an error). */
typedef enum cdsh_acp_update_kind {
    CDSH_ACP_UPDATE_UNKNOWN = 0,
    CDSH_ACP_UPDATE_USER_MESSAGE_CHUNK,
    CDSH_ACP_UPDATE_AGENT_MESSAGE_CHUNK,
    CDSH_ACP_UPDATE_AGENT_THOUGHT_CHUNK,
    CDSH_ACP_UPDATE_TOOL_CALL,
    CDSH_ACP_UPDATE_TOOL_CALL_UPDATE,
    CDSH_ACP_UPDATE_PLAN,
    CDSH_ACP_UPDATE_AVAILABLE_COMMANDS,
    CDSH_ACP_UPDATE_CURRENT_MODE,
    CDSH_ACP_UPDATE_CONFIG_OPTION,
    CDSH_ACP_UPDATE_SESSION_INFO,
    CDSH_ACP_UPDATE_USAGE,
    CDSH_ACP_UPDATE_NOTICE,
    CDSH_ACP_UPDATE_COMPACTION,
    CDSH_ACP_UPDATE_COMPACTION_SUMMARY_CHUNK,
} cdsh_acp_update_kind;

/* A streamed update for one session: kind as sent (borrowed string) and the
 * whole `update` object (borrowed, valid during the call). */
typedef void (*cdsh_acp_update_fn)(void *ud, cdsh_acp_update_kind kind, const char *kind_name,
                                   const json_t *update);

/* session/request_permission for one session. params is the request's
 * params (toolCall, options: borrowed). cancel fires when the turn is
 * cancelled or the connection goes. Return an owned optionId (the agent's
 * own id, one of params.options[].optionId) or NULL for "cancelled". */
typedef char *(*cdsh_acp_permission_fn)(void *ud, const json_t *params, cdsh_cancel *cancel);

/* Default interval of handshake progress notices. */
#define CDSH_ACP_WAIT_NOTICE_MS 5000

/* A handshake progress notice: name is the engine (opts.name). */
typedef void (*cdsh_acp_wait_fn)(void *ud, const char *name, const char *step,
                                 int64_t elapsed_ms, int64_t budget_ms);

typedef struct cdsh_acp_conn_opts {
    const char *name;             /* for messages, e.g. the engine id */
    const char *const *argv;      /* argv[0] path or PATH name */
    const char *const *env_set;   /* "NAME=value" added to the scrubbed env */
    const char *const *env_allow; /* secret-looking names to keep from the parent */
    const char *cwd;              /* the process's working directory */
    int64_t init_timeout_ms;      /* initialize budget (<= 0: 30000) */
    int64_t request_timeout_ms;   /* other requests (<= 0: 300000) */
    int64_t dispose_grace_ms;     /* SIGTERM → SIGKILL (<= 0: 6000) */
    bool fs_read, fs_write;       /* advertise and serve fs read/write_text_file */
    bool terminal;                /* advertise and serve the terminal calls (terminal.h) */
    bool record;                  /* keep raw incoming lines for evidence */
    /* Progress while the handshake waits: called on a helper thread every
     * wait_notice_ms (<= 0: CDSH_ACP_WAIT_NOTICE_MS) until initialize is
     * answered, with the step ("initialize"), the time waited and the
     * budget. NULL: no progress. */
    cdsh_acp_wait_fn on_wait;
    void *wait_ud;
    int64_t wait_notice_ms;
    /* Borrowed, may be NULL; must outlive the connection. Once fired, a
     * handshake step (initialize, session/new|load|resume) that waits fails
     * with CDSH_ECANCELED (a SIGTERM while a cold agent starts). */
    cdsh_cancel *cancel;
} cdsh_acp_conn_opts;

/* Spawns the agent and sends initialize within init_timeout_ms. On failure
 * nothing is left running; err names the step ("initialize", spawn) and
 * carries the agent's own message for remote errors; a timeout says how
 * long was waited and ends with the agent's stderr tail ("agent stderr:
 * …", or that it wrote nothing). */
int cdsh_acp_conn_open(const cdsh_acp_conn_opts *opts, cdsh_acp_conn **out, cdsh_error *err);

/* Terminates the process (stdin closed, SIGTERM, SIGKILL after the grace)
 * and frees. Pending calls fail with CDSH_ECLOSED. NULL-safe. */
void cdsh_acp_conn_free(cdsh_acp_conn *conn);

/* Sends sig to the agent's process group (the agent runs in a group of its
 * own, so a terminal's Ctrl-C reaches only cdsh; a front end forwards it
 * with this). 0, or the signal error. */
int cdsh_acp_conn_signal(cdsh_acp_conn *conn, int sig, cdsh_error *err);

/* True once the agent's stdout ended (it exited or crashed). */
bool cdsh_acp_conn_is_closed(cdsh_acp_conn *conn);
int cdsh_acp_conn_pid(cdsh_acp_conn *conn);

/* The initialize result (borrowed, immutable after open) and its latency. */
const json_t *cdsh_acp_conn_init_result_get(cdsh_acp_conn *conn);
int64_t cdsh_acp_conn_init_latency_ms(cdsh_acp_conn *conn);

/* Whether the agent advertised a method: "session/load" (loadSession),
 * "session/resume", "session/close", "session/list", "session/fork",
 * "session/delete" (sessionCapabilities.*), "logout". Others: true. */
bool cdsh_acp_conn_supports(cdsh_acp_conn *conn, const char *method);

/* A raw request (params borrowed; result owned). Remote errors: CDSH_EPROTO
 * with err->code "RPC_ERROR" and rerr filled (may be NULL). timeout_ms <= 0
 * uses the request timeout. */
int cdsh_acp_conn_request(cdsh_acp_conn *conn, const char *method, json_t *params,
                          int64_t timeout_ms, cdsh_cancel *cancel, json_t **result,
                          cdsh_jsonrpc_remote_error *rerr, cdsh_error *err);

/* authenticate {methodId}.
 * keep-public: the protocol's authenticate method, for agents that ask for a login; no engine flow
 * calls it yet. */
int cdsh_acp_conn_authenticate(cdsh_acp_conn *conn, const char *method_id, cdsh_error *err);

typedef enum cdsh_acp_open_mode {
    CDSH_ACP_OPEN_NEW = 0, /* session/new */
    CDSH_ACP_OPEN_LOAD,    /* session/load (history replayed as updates) */
    CDSH_ACP_OPEN_RESUME,  /* session/resume */
    CDSH_ACP_OPEN_FORK,    /* session/fork (unstable; sessionCapabilities.fork) */
} cdsh_acp_open_mode;

/* Pages session/list follows at most when the caller gives no bound. */
#define CDSH_ACP_LIST_MAX_PAGES 50

typedef struct cdsh_acp_session_handlers {
    cdsh_acp_update_fn on_update;
    cdsh_acp_permission_fn on_permission; /* NULL: every request is cancelled */
    void *ud;
} cdsh_acp_session_handlers;

/* Opens an ACP session with cwd (absolute; also the fs confinement root)
 * and mcp_servers (borrowed array, NULL = []). For LOAD/RESUME session_id
 * names the agent's session, for FORK the session forked; for NEW it is
 * ignored. A method the agent did not advertise (loadSession,
 * sessionCapabilities.resume / fork) is refused without being sent:
 * CDSH_EUNSUPPORTED, code "METHOD_NOT_ADVERTISED". handlers are copied and
 * installed before the request goes out (load replays history through
 * them). *out_session_id (owned) is the ACP session id. The response's
 * modes / configOptions are kept (see _session_config_dup). */
int cdsh_acp_conn_session_open(cdsh_acp_conn *conn, cdsh_acp_open_mode mode, const char *session_id,
                               const char *cwd, json_t *mcp_servers,
                               const cdsh_acp_session_handlers *handlers, char **out_session_id,
                               cdsh_error *err);

/* session/fork {sessionId: source_session_id, cwd, mcpServers}: a new ACP
 * session carrying the source's context, registered with handlers like
 * session/new (*out_session_id owned). Same as session_open with FORK. */
int cdsh_acp_conn_fork(cdsh_acp_conn *conn, const char *source_session_id, const char *cwd,
                       json_t *mcp_servers, const cdsh_acp_session_handlers *handlers,
                       char **out_session_id, cdsh_error *err);

/* session/list {cwd?, cursor?}, following nextCursor for at most max_pages
 * pages (<= 0: CDSH_ACP_LIST_MAX_PAGES); a cursor handed back unchanged
 * ends the walk. *out_sessions: owned array of the SessionInfo objects as
 * sent (entries without sessionId or cwd skipped). *more (may be NULL):
 * the bound stopped the walk with pages left. cwd NULL: every directory.
 * cancel may be NULL; each page has the request timeout. Not advertised
 * (sessionCapabilities.list): CDSH_EUNSUPPORTED "METHOD_NOT_ADVERTISED",
 * nothing sent. */
int cdsh_acp_conn_list_sessions(cdsh_acp_conn *conn, const char *cwd, int max_pages,
                                cdsh_cancel *cancel, json_t **out_sessions, bool *more,
                                cdsh_error *err);

/* Forgets a session locally (killing and releasing its terminals); sends
 * session/close first when advertised and send_close is set. */
int cdsh_acp_conn_session_release(cdsh_acp_conn *conn, const char *session_id, bool send_close,
                                  cdsh_error *err);

/* Number of sessions currently registered on this connection.
 * keep-public: tests count a connection's sessions. */
size_t cdsh_acp_conn_session_count(cdsh_acp_conn *conn);

/* Number of terminals the agent holds (created, not released). Releasing a
 * session (cdsh_acp_conn_session_release) kills and releases its terminals;
 * freeing the connection kills them all.
 * keep-public: tests count a connection's terminals. */
size_t cdsh_acp_conn_terminal_count(cdsh_acp_conn *conn);

/* Owned {"configOptions": [...]|null, "modes": {...}|null} exactly as the
 * agent sent them (updated by config_option_update / current_mode_update).
 * NULL for an unknown session. */
json_t *cdsh_acp_conn_session_config_dup(cdsh_acp_conn *conn, const char *session_id);

/* Switches a config option: session/set_config_option first; if that fails
 * and the session has modes containing `value` (or config_id is "mode"),
 * falls back to session/set_mode {modeId:value}. *via (may be NULL) is
 * "set_config_option" or "set_mode". */
int cdsh_acp_conn_set_config(cdsh_acp_conn *conn, const char *session_id, const char *config_id,
                             const char *value, const char **via, cdsh_error *err);

typedef struct cdsh_acp_prompt_opts {
    int64_t idle_timeout_ms;  /* no session/update for this long ends the turn; <= 0: none */
    int64_t total_timeout_ms; /* overall cap; <= 0: none */
    int64_t cancel_grace_ms;  /* after session/cancel, wait this long for the answer (<= 0: 5000) */
} cdsh_acp_prompt_opts;

typedef struct cdsh_acp_prompt_result {
    char stop_reason[32]; /* end_turn, max_tokens, max_turn_requests, refusal, cancelled */
    json_t *response;     /* owned raw result (usage, _meta), or NULL */
    int64_t latency_ms;
    uint64_t updates; /* session/update notifications seen during the turn */
} cdsh_acp_prompt_result;

void cdsh_acp_prompt_result_deinit(cdsh_acp_prompt_result *res);

/* session/prompt with `prompt` (borrowed ContentBlock array). Blocks until
 * the agent answers. Cancel (the token fires): sends
 * session/cancel, pending permission requests are answered "cancelled",
 * then waits cancel_grace_ms for the agent's answer; an agent that never
 * answers yields CDSH_ECANCELED. The idle gate and the overall cap end the
 * turn the same way with CDSH_ETIMEDOUT, code "TIMEOUT" and the messages
 * "no session/update from the engine for Ns (engine looks stuck)" /
 * "timed out after Ns (overall cap; last engine update Ns ago)". Remote
 * errors: CDSH_EPROTO, code "RPC_ERROR", message = the agent's message plus
 * its data.details when present (verbatim). */
int cdsh_acp_conn_prompt(cdsh_acp_conn *conn, const char *session_id, json_t *prompt,
                         const cdsh_acp_prompt_opts *opts, cdsh_cancel *cancel,
                         cdsh_acp_prompt_result *res, cdsh_error *err);

/* Evidence: owned arrays of raw incoming lines (verbatim, in order; only
 * with opts.record) and of lines the parser rejected (always; at most 200,
 * each at most 64 KiB). */
json_t *cdsh_acp_conn_raw_lines_dup(cdsh_acp_conn *conn);
json_t *cdsh_acp_conn_rejects_dup(cdsh_acp_conn *conn);

/* Last bytes of the agent's stderr (owned, at most 4 KiB). */
char *cdsh_acp_conn_stderr_tail_dup(cdsh_acp_conn *conn);

/* Owned map of callbacks seen, by name ("sessionUpdate:tool_call",
 * "fs/read_text_file", "terminal/create", "unknown:<method>") to counts. */
json_t *cdsh_acp_conn_callbacks_dup(cdsh_acp_conn *conn);

#endif
