/* mcp_client.h — an MCP client for one server, over stdio (a child spawned
 * with DSH's scrubbed environment) or Streamable HTTP (libcurl): initialize,
 * fully paged tools/list, tools/call with timeout, cancellation and progress,
 * re-listing on notifications/tools/list_changed, and reconnecting with
 * exponential backoff. Registration into the tool kernel is mcp_bridge.h.
 *
 * Threads: every function is thread-safe; calls may run concurrently. Each
 * stdio connection has the JSON-RPC peer's reader and dispatcher threads and
 * a stderr drain; an HTTP connection has a listener thread for the server's
 * GET stream when the server offers one. The event callback runs on one of
 * those threads or on the reconnect thread, with no client lock held; it may
 * call cdsh_mcp_client_tools_dup but must not free the client. */
#ifndef CDSH_PROTO_MCP_CLIENT_H
#define CDSH_PROTO_MCP_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cancel.h"
#include "base/err.h"

typedef struct cdsh_mcp_client cdsh_mcp_client;

typedef enum cdsh_mcp_client_event {
    CDSH_MCP_EVENT_TOOLS_CHANGED = 1, /* the cached tool list was replaced */
    CDSH_MCP_EVENT_DISCONNECTED,      /* the connection ended; calls fail until reconnected */
    CDSH_MCP_EVENT_RECONNECTED,       /* a new connection is up (tools re-listed) */
    CDSH_MCP_EVENT_GAVE_UP,           /* reconnect attempts exhausted; the client stays down */
} cdsh_mcp_client_event;

typedef void (*cdsh_mcp_client_event_fn)(void *arg, cdsh_mcp_client *client,
                                         cdsh_mcp_client_event event);

/* Everything is borrowed for the duration of cdsh_mcp_client_connect only
 * (copied). Exactly one of argv and url. */
typedef struct cdsh_mcp_client_opts {
    const char *name;             /* server name (messages, public tool names); required */
    const char *const *argv;      /* stdio: command and arguments, NULL-terminated */
    const json_t *env;            /* stdio: object of strings set on top of the scrubbed env */
    const char *cwd;              /* stdio: NULL = inherit */
    const char *url;              /* Streamable HTTP endpoint */
    const json_t *headers;        /* http: object of strings, sent on every request */
    const char *bearer_token;     /* http: sent as "Authorization: Bearer <token>" */
    int64_t init_timeout_ms;      /* initialize + first tools/list; 0 = 30000 */
    int64_t call_timeout_ms;      /* default per-call timeout; 0 = 60000 */
    size_t max_instruction_bytes; /* 0 = 32768; a server over it is refused */
    size_t max_message;           /* longest accepted frame; 0 = 16 MiB */
    bool stderr_inherit;          /* stdio: the child's stderr goes to ours (else kept as a tail) */
    bool reconnect;               /* reconnect after a lost connection */
    int64_t reconnect_initial_ms; /* 0 = 500 */
    int64_t reconnect_max_ms;     /* 0 = 30000 */
    int reconnect_max_attempts;   /* 0 = 10 */
    cdsh_mcp_client_event_fn on_event;
    void *event_arg;
} cdsh_mcp_client_opts;

/* Connects: spawns / reaches the server, sends initialize (the newest legacy
 * revision; any known answer is accepted), notifications/initialized, and
 * lists every tool page. Failures (the connection is then closed, nothing
 * leaks): CDSH_ENOTFOUND / CDSH_EPERM (command, "COMMAND_NOT_FOUND"...),
 * CDSH_ETIMEDOUT code "INIT_TIMEOUT" `MCP server "<name>" did not answer
 * initialize within <ms> ms`, CDSH_ECLOSED code "SERVER_EXITED" (message with
 * the exit status and the tail of its stderr), CDSH_EPROTO codes
 * "INIT_FAILED" / "BAD_VERSION" / "BAD_TOOLS", CDSH_ETOOBIG code
 * "INSTRUCTIONS_TOO_LARGE", CDSH_EIO code "HTTP_ERROR". */
int cdsh_mcp_client_connect(const cdsh_mcp_client_opts *opts, cdsh_mcp_client **out,
                            cdsh_error *err);

/* Closes (stdio: close stdin, 2 s, SIGTERM, 2 s, SIGKILL; http: DELETE the
 * session) and frees. Calls in flight fail with CDSH_ECLOSED. NULL-safe. */
void cdsh_mcp_client_free(cdsh_mcp_client *client);

/* Borrowed views, valid until the client is freed. */
const char *cdsh_mcp_client_name(const cdsh_mcp_client *client);

/* Owned copies of what the current connection negotiated (NULL if down):
 * protocol version, serverInfo, instructions.
 * keep-public: what the connection negotiated; test_mcp_client reads it. */
char *cdsh_mcp_client_version_dup(cdsh_mcp_client *client);
json_t *cdsh_mcp_client_server_info_dup(cdsh_mcp_client *client);
char *cdsh_mcp_client_instructions_dup(cdsh_mcp_client *client);

/* Owned copy of the cached tool list (array of Tool objects as listed). */
json_t *cdsh_mcp_client_tools_dup(cdsh_mcp_client *client);

/* Progress callback: runs on the connection's dispatcher thread (stdio) or
 * the request's thread (HTTP), while the call is pending. Over stdio,
 * notifications sent just before the result may be dropped: the result
 * completes the call first. total < 0 when the server sent none. */
typedef void (*cdsh_mcp_progress_fn)(void *arg, double progress, double total, const char *message);

typedef struct cdsh_mcp_call_opts {
    int64_t timeout_ms;               /* 0 = the client's default; < 0 = none */
    cdsh_cancel *cancel;              /* may be NULL */
    cdsh_mcp_progress_fn on_progress; /* non-NULL: a progressToken is sent */
    void *progress_arg;
} cdsh_mcp_call_opts;

/* tools/call {name, arguments}. args (borrowed) must be an object or NULL
 * ({}; DSH replaces non-object arguments by {} too). On 0, *result is the
 * owned CallToolResult (which may have isError:true: that is a tool failure,
 * not a protocol error). A cancelled or timed-out call sends
 * notifications/cancelled and returns CDSH_ECANCELED / CDSH_ETIMEDOUT (code
 * "TIMEOUT": `MCP tool "<t>" on server "<s>" timed out after <ms> ms`). A
 * JSON-RPC error reply is CDSH_EPROTO code "RPC_ERROR" with the server's
 * message; a lost connection CDSH_ECLOSED; a malformed result CDSH_EPROTO
 * "BAD_RESULT". Tools that require task execution fail at once (CDSH_EUNSUPPORTED,
 * "TASK_REQUIRED"). */
int cdsh_mcp_client_call(cdsh_mcp_client *client, const char *tool, const json_t *args,
                         const cdsh_mcp_call_opts *opts, json_t **result, cdsh_error *err);

/* Sends ping and waits for {} (liveness).
 * keep-public: test_mcp_client pings with it. */
int cdsh_mcp_client_ping(cdsh_mcp_client *client, int64_t timeout_ms, cdsh_error *err);

/* True while a connection is up.
 * keep-public: test_mcp_client checks the connection state. */
bool cdsh_mcp_client_is_connected(cdsh_mcp_client *client);

#endif
