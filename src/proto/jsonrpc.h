/* jsonrpc.h — a JSON-RPC 2.0 peer over a pair of file descriptors with
 * newline-delimited framing: outgoing calls (blocking and async) and
 * notifications, incoming requests routed to handlers by method name.
 * It carries MCP, ACP and the test peers but knows none of their method
 * names; it never spawns processes (it is handed fds). */
#ifndef CDSH_BASE_JSONRPC_H
#define CDSH_BASE_JSONRPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cancel.h"
#include "base/err.h"

/* Threads and locks.
 * - Every function below is thread-safe unless stated otherwise; any number
 *   of threads may call, notify and respond at once. Each frame is written
 *   whole under a write lock, so frames never interleave.
 * - Each started peer runs two threads: a reader that parses lines, wakes
 *   waiting callers and expires async calls; and a dispatcher that runs
 *   handlers one at a time, in arrival order (so notifications stay ordered).
 *   Responses are routed by the reader, so a handler may make blocking calls
 *   to the peer without deadlock; while it blocks, later incoming messages
 *   wait. A slow handler should hold the request and answer from its own
 *   thread (cdsh_jsonrpc_request_hold).
 * - Lock order: a cancellation token's lock, then the peer's state lock. The
 *   write lock is a leaf. No peer lock is held while a handler, a completion
 *   callback, the diagnostic callback or the cancel hook runs.
 * - Completion callbacks, the diagnostic callback and (for async timeouts)
 *   the cancel hook may run on the reader thread: they must not make
 *   blocking calls on the same peer (nothing would read the answer). The
 *   cancel hook may send a notification.
 * - Incoming messages wait in an unbounded queue while a handler runs.
 * - A call's write (and its wait for the write lock) observes the call's
 *   timeout and token: a call that could not be sent fails with
 *   CDSH_ETIMEDOUT / CDSH_ECANCELED ("<name> did not read the request for
 *   <method> in time") and no cancel hook runs. If that happens mid-frame the
 *   stream is cut and every later write fails with CDSH_ECLOSED.
 *   Notifications and responses wait for the writer without limit (until
 *   cdsh_jsonrpc_free).
 * - Writes poll the write fd; the peer sets O_NONBLOCK on both fds. A write to
 *   a peer that has gone fails with CDSH_ECLOSED; SIGPIPE is blocked on the
 *   writing thread for the duration of the write and never delivered.
 *
 * Ids: outgoing ids are integers 1, 2, 3, ... (or strings "<n>" with
 * string_ids); incoming ids may be strings or integers and are echoed back
 * exactly. Batches (JSON arrays) are answered with -32600. */

/* Standard JSON-RPC error codes. */
enum {
    CDSH_JSONRPC_PARSE_ERROR = -32700,
    CDSH_JSONRPC_INVALID_REQUEST = -32600,
    CDSH_JSONRPC_METHOD_NOT_FOUND = -32601,
    CDSH_JSONRPC_INVALID_PARAMS = -32602,
    CDSH_JSONRPC_INTERNAL_ERROR = -32603,
};

#define CDSH_JSONRPC_DEFAULT_MAX_FRAME ((size_t)16 * 1024 * 1024)

typedef struct cdsh_jsonrpc cdsh_jsonrpc;
typedef struct cdsh_jsonrpc_request cdsh_jsonrpc_request;

/* An error response from the other side. message and data are owned; clear
 * with cdsh_jsonrpc_remote_error_clear. */
typedef struct cdsh_jsonrpc_remote_error {
    int64_t code;
    char *message; /* never NULL once filled */
    json_t *data;  /* NULL when absent */
} cdsh_jsonrpc_remote_error;

void cdsh_jsonrpc_remote_error_clear(cdsh_jsonrpc_remote_error *rerr);

/* What the diagnostic callback reports. Each also bumps a counter. */
typedef enum cdsh_jsonrpc_diag {
    CDSH_JSONRPC_DIAG_MALFORMED, /* a line that is not JSON */
    CDSH_JSONRPC_DIAG_OVERSIZE,  /* a line longer than max_frame, discarded */
    CDSH_JSONRPC_DIAG_INVALID,   /* JSON that is not a valid JSON-RPC message */
    CDSH_JSONRPC_DIAG_UNMATCHED, /* a response for no pending call (e.g. late) */
    CDSH_JSONRPC_DIAG_IO,        /* the read side ended or failed */
} cdsh_jsonrpc_diag;

/* Called on the reader thread; must be quick and must not free the peer. */
typedef void (*cdsh_jsonrpc_diag_fn)(void *arg, cdsh_jsonrpc_diag kind, const char *message);

/* Called after a pending outgoing call was given up on (rc is CDSH_ECANCELED
 * or CDSH_ETIMEDOUT) so the protocol layer can tell the other side, e.g. by
 * sending its cancel notification with cdsh_jsonrpc_notify. id is the call's
 * JSON id (borrowed). Runs on the thread that gave up — the caller, the
 * canceller or the reader (async timeouts) — with no peer lock held. */
typedef void (*cdsh_jsonrpc_cancel_hook_fn)(void *arg, cdsh_jsonrpc *peer, const json_t *id,
                                            const char *method, int rc, const char *reason);

typedef struct cdsh_jsonrpc_config {
    const char *name; /* for messages ("peer <name> ..."); copied; NULL = "peer" */
    size_t max_frame; /* longest accepted incoming line in bytes; 0 = default */
    bool close_fds;   /* close both fds (once if equal) in cdsh_jsonrpc_free */
    bool string_ids;  /* send ids as JSON strings instead of integers */
    cdsh_jsonrpc_diag_fn on_diag;
    void *diag_arg;
    cdsh_jsonrpc_cancel_hook_fn on_cancel;
    void *cancel_arg;
} cdsh_jsonrpc_config;

typedef struct cdsh_jsonrpc_stats {
    uint64_t frames_in;  /* non-blank lines read, malformed ones included */
    uint64_t frames_out; /* frames written whole */
    uint64_t malformed, oversize, invalid, unmatched; /* as cdsh_jsonrpc_diag */
    uint64_t notifications_unhandled;                 /* incoming notifications with no handler */
} cdsh_jsonrpc_stats;

/* ---- lifecycle ---------------------------------------------------------- */

/* A peer reading rfd and writing wfd (may be the same fd, e.g. a socket).
 * cfg may be NULL. Nothing is read until cdsh_jsonrpc_start, so handlers can
 * be registered first. Returns NULL with err filled on failure (the fds are
 * then left open). */
cdsh_jsonrpc *cdsh_jsonrpc_new(int rfd, int wfd, const cdsh_jsonrpc_config *cfg, cdsh_error *err);

/* Starts the reader and dispatcher threads. Once only. */
int cdsh_jsonrpc_start(cdsh_jsonrpc *peer, cdsh_error *err);

/* Stops the threads (never waits for the other side), fails every pending
 * call with CDSH_ECLOSED, drops unhandled queued messages, fires the cancel
 * tokens of incoming requests still being handled, closes the fds if
 * close_fds, and releases the caller's reference. Safe from a handler.
 * Threads still inside a call or holding a request keep the memory alive
 * until they return / respond; their operations then fail with
 * CDSH_ECLOSED. NULL-safe. Call once. */
void cdsh_jsonrpc_free(cdsh_jsonrpc *peer);

/* True once the read side has ended (EOF, error or free). */
bool cdsh_jsonrpc_is_closed(cdsh_jsonrpc *peer);

/* Copies the counters. */
void cdsh_jsonrpc_stats_get(cdsh_jsonrpc *peer, cdsh_jsonrpc_stats *out);

/* ---- outgoing ----------------------------------------------------------- */

/* Sends a request and waits for its response. params (borrowed) must be an
 * object, an array or NULL (omitted). timeout_ms < 0 waits forever; cancel
 * may be NULL. On 0, *result is the owned result. Failures:
 *   CDSH_EPROTO   the other side answered with an error: err code
 *                 "RPC_ERROR", *rerr (if non-NULL) filled; or a malformed
 *                 response (code "BAD_RESPONSE");
 *   CDSH_ETIMEDOUT, CDSH_ECANCELED (code "TIMEOUT" / "CANCELED");
 *   CDSH_ECLOSED  the connection ended ("peer closed the connection while
 *                 waiting for <method>"), code "CLOSED";
 *   CDSH_EINVAL, CDSH_ENOMEM, CDSH_EIO.
 * A response that arrives after a timeout or cancel is dropped (counted as
 * unmatched). A token that has already fired fails the call before anything
 * is sent (and without the cancel hook). */
int cdsh_jsonrpc_call(cdsh_jsonrpc *peer, const char *method, json_t *params, int64_t timeout_ms,
                      cdsh_cancel *cancel, json_t **result, cdsh_jsonrpc_remote_error *rerr,
                      cdsh_error *err);

/* Completion of an async call: rc as for cdsh_jsonrpc_call; result, rerr and
 * err are borrowed for the duration of the callback (result non-NULL only
 * when rc == 0, rerr only for an error response). To keep the result for
 * another thread, prefer json_deep_copy to json_incref. Runs exactly once, on the
 * reader thread, the thread that cancelled it, or the freeing thread; never
 * on the calling thread inside cdsh_jsonrpc_call_async. */
typedef void (*cdsh_jsonrpc_done_fn)(void *arg, int rc, json_t *result,
                                     const cdsh_jsonrpc_remote_error *rerr, const cdsh_error *err);

/* Sends a request without waiting. On 0 the callback will run exactly once
 * and *call_id (if non-NULL) identifies the call for cancel/touch. On failure
 * the callback never runs. cancel (may be NULL) must outlive the call. */
int cdsh_jsonrpc_call_async(cdsh_jsonrpc *peer, const char *method, json_t *params,
                            int64_t timeout_ms, cdsh_cancel *cancel, cdsh_jsonrpc_done_fn done,
                            void *arg, uint64_t *call_id, cdsh_error *err);

/* Gives up on a pending async or blocking call: the waiter gets
 * CDSH_ECANCELED and the cancel hook runs. CDSH_ENOTFOUND if the call is no
 * longer pending. */
int cdsh_jsonrpc_cancel_call(cdsh_jsonrpc *peer, uint64_t call_id, const char *reason);

/* Restarts a pending call's timeout from now (e.g. on a progress
 * notification). CDSH_ENOTFOUND if not pending.
 * keep-public: extends a pending call's timeout (test_jsonrpc); no caller extends on progress yet.
 */
int cdsh_jsonrpc_touch(cdsh_jsonrpc *peer, uint64_t call_id);

/* Sends a notification. params as for cdsh_jsonrpc_call. */
int cdsh_jsonrpc_notify(cdsh_jsonrpc *peer, const char *method, json_t *params, cdsh_error *err);

/* ---- incoming ----------------------------------------------------------- */

/* Handles an incoming request or notification, on the dispatcher thread.
 * For a request the handler either answers before returning
 * (cdsh_jsonrpc_respond / _respond_error), or calls cdsh_jsonrpc_request_hold
 * and answers later from any thread. A request returned from unanswered and
 * unheld is answered with -32603. Notifications need no answer. */
typedef void (*cdsh_jsonrpc_handler_fn)(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req);

/* Registers a handler for method (copied). CDSH_EEXIST if already set. */
int cdsh_jsonrpc_handle(cdsh_jsonrpc *peer, const char *method, cdsh_jsonrpc_handler_fn fn,
                        void *arg, cdsh_error *err);

/* Handler for methods with no specific handler (NULL removes it). Without
 * one, unknown requests get -32601 "Method not found: <method>" and unknown
 * notifications are counted and dropped. */
void cdsh_jsonrpc_handle_fallback(cdsh_jsonrpc *peer, cdsh_jsonrpc_handler_fn fn, void *arg);

/* Borrowed views of an incoming message, valid while the handle lives. */
const char *cdsh_jsonrpc_request_method(const cdsh_jsonrpc_request *req);
json_t *cdsh_jsonrpc_request_params(const cdsh_jsonrpc_request *req);   /* NULL if absent */
const json_t *cdsh_jsonrpc_request_id(const cdsh_jsonrpc_request *req); /* NULL: notification */
bool cdsh_jsonrpc_request_is_notification(const cdsh_jsonrpc_request *req);

/* Fired when cdsh_jsonrpc_cancel_incoming names this request or the peer
 * closes. Borrowed. */
cdsh_cancel *cdsh_jsonrpc_request_cancel_get(const cdsh_jsonrpc_request *req);

/* Keeps a request handle alive after its handler returns; the answer
 * (respond/respond_error) releases it. Call only from the handler. Returns
 * req for convenience. */
cdsh_jsonrpc_request *cdsh_jsonrpc_request_hold(cdsh_jsonrpc_request *req);

/* Answers a request once, with result (borrowed; NULL means null), or with
 * an error (message copied; data borrowed, may be NULL). After the first
 * answer the handle may be gone (if held): do not touch it again. Answering
 * a notification or a second time is CDSH_EINVAL. CDSH_ECLOSED when the
 * peer is gone (the held handle is still released). */
int cdsh_jsonrpc_respond(cdsh_jsonrpc_request *req, json_t *result, cdsh_error *err);
int cdsh_jsonrpc_respond_error(cdsh_jsonrpc_request *req, int64_t code, const char *message,
                               json_t *data, cdsh_error *err);

/* Fires the cancel token of the incoming request with this id (as received:
 * string or integer), e.g. from the protocol's cancel notification handler.
 * The request must still be answered. CDSH_ENOTFOUND if none is in flight. */
int cdsh_jsonrpc_cancel_incoming(cdsh_jsonrpc *peer, const json_t *id, const char *reason);

#endif
