/* mcp_server.h — the MCP server core: sessions (one per connection, one cdsh
 * session each), initialize / ping / logging / tools/list (paged) /
 * tools/call with progress and cancellation, server/discover and
 * stateless requests of the 2026-07-28 revision, list_changed fan-out, and
 * serving a session over stdio. Tools come from a provider (mcp_bridge.h
 * wires the kernel in); the HTTP transport is src/server/mcp_http.c.
 *
 * Threads: every function is thread-safe. Requests of one session may be
 * handled concurrently (tools/call runs on the server's bounded worker pool).
 * The provider's callbacks run without any server lock held. */
#ifndef CDSH_PROTO_MCP_SERVER_H
#define CDSH_PROTO_MCP_SERVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/cancel.h"
#include "base/err.h"

typedef struct cdsh_mcp_server cdsh_mcp_server;
typedef struct cdsh_mcp_session cdsh_mcp_session;
typedef struct cdsh_mcp_call_ctx cdsh_mcp_call_ctx;

/* What a tool body sees of its MCP call. */
struct cdsh_mcp_call_ctx {
    cdsh_cancel *cancel;       /* fires on notifications/cancelled or disconnect */
    cdsh_mcp_session *session; /* the calling session */
    void *session_ud;          /* the provider's per-session state */
    struct cdsh__mcp_call *priv;
};

/* Sends notifications/progress when the client asked for progress (a no-op
 * otherwise, and for values not above the previous one). total < 0 and
 * message NULL are omitted. */
void cdsh_mcp_call_progress(const cdsh_mcp_call_ctx *ctx, double progress, double total,
                            const char *message);

/* True when the client sent a progressToken with this call. */
bool cdsh_mcp_call_wants_progress(const cdsh_mcp_call_ctx *ctx);

typedef struct cdsh_mcp_provider {
    /* Owned array of Tool objects ({name, description?, inputSchema,
     * outputSchema?, annotations?}) visible to this session. Required. */
    json_t *(*list_tools)(void *ud, void *session_ud);
    /* Runs a tool. On 0 *result is an owned CallToolResult (isError:true for
     * tool failures). CDSH_ENOTFOUND: unknown tool (answered -32602);
     * CDSH_EINVAL: bad arguments shape (-32602); other errors -32603 with
     * err's message. Required. */
    int (*call_tool)(void *ud, const cdsh_mcp_call_ctx *ctx, const char *name, const json_t *args,
                     json_t **result, cdsh_error *err);
    /* Optional per-connection state, e.g. a cdsh session. */
    void *(*session_open)(void *ud, const char *transport);
    void (*session_close)(void *ud, void *session_ud);
    void *ud;
} cdsh_mcp_provider;

typedef struct cdsh_mcp_server_opts {
    const char *name;         /* serverInfo.name; NULL = "cdsh" */
    const char *version;      /* NULL = CDSH_VERSION */
    const char *instructions; /* optional */
    size_t page_size;         /* tools per tools/list page; 0 = CDSH_MCP_PAGE_SIZE */
    size_t workers;           /* tools/call worker threads; 0 = CDSH_MCP_WORKERS */
} cdsh_mcp_server_opts;

/* Tool calls of every session run on one pool of at most this many threads
 * (a call uses one pool thread plus its transport's thread; calls beyond
 * the pool wait their turn). Open subscriptions/listen streams, which hold
 * a thread each, are capped at CDSH_MCP_MAX_SUBSCRIPTIONS per server. */
#define CDSH_MCP_WORKERS 8
#define CDSH_MCP_MAX_SUBSCRIPTIONS 16
#define CDSH_MCP_MAX_SUBSCRIPTIONS_STR "16"

/* Runs fn(arg) on the server's worker pool (in submission order as threads
 * free up). 0, or CDSH_ENOMEM. Used by the transports for tools/call. */
int cdsh_mcp_server_submit(cdsh_mcp_server *server, void (*fn)(void *), void *arg);

/* provider is copied; its ud must outlive the server. NULL on ENOMEM or a
 * provider without list_tools/call_tool (err filled). */
cdsh_mcp_server *cdsh_mcp_server_new(const cdsh_mcp_provider *provider,
                                     const cdsh_mcp_server_opts *opts, cdsh_error *err);

/* All sessions must be closed first. NULL-safe. */
void cdsh_mcp_server_free(cdsh_mcp_server *server);

/* Tells every initialized session whose client may care that the visible
 * tool set changed (notifications/tools/list_changed). */
void cdsh_mcp_server_tools_changed(cdsh_mcp_server *server);

/* ---- sessions (used by transports) ------------------------------------------ */

/* Sends a notification to this session's client (params borrowed). */
typedef void (*cdsh_mcp_send_fn)(void *arg, const char *method, json_t *params);

/* A new session; `transport` ("stdio", "http") is passed to session_open. */
cdsh_mcp_session *cdsh_mcp_session_new(cdsh_mcp_server *server, const char *transport,
                                       cdsh_mcp_send_fn send, void *send_arg, cdsh_error *err);

/* Fires the tokens of calls in flight and waits until they return, then
 * frees. NULL-safe. */
void cdsh_mcp_session_free(cdsh_mcp_session *session);

/* Handles one request and waits for its answer. id is the request id
 * (borrowed; used to match notifications/cancelled). cancel (may be NULL) is
 * the transport's token for this request. Exactly one of *result (owned) or
 * (*ecode, *emsg owned, *edata owned or NULL) is set. Returns 0 always except
 * CDSH_ENOMEM. */
int cdsh_mcp_session_request(cdsh_mcp_session *session, const json_t *id, const char *method,
                             const json_t *params, cdsh_cancel *cancel, json_t **result,
                             int64_t *ecode, char **emsg, json_t **edata);

/* Fires the tokens of the calls in flight (e.g. the HTTP session was
 * deleted); new calls are refused from now on. */
void cdsh_mcp_session_cancel_all(cdsh_mcp_session *session, const char *reason);

/* Handles one notification from the client (initialized, cancelled, ...). */
void cdsh_mcp_session_notification(cdsh_mcp_session *session, const char *method,
                                   const json_t *params);

/* ---- stdio -------------------------------------------------------------------- */

/* Serves one session over rfd/wfd (newline-delimited JSON-RPC) until the
 * client closes its side or stop fires. Returns 0, or an error if the
 * session could not be started. Does not close the fds. */
int cdsh_mcp_serve_fds(cdsh_mcp_server *server, int rfd, int wfd, cdsh_cancel *stop,
                       cdsh_error *err);

#endif
