/* rpc.h — RPC channels, the in-process half of DSH's `connection.rpc`: a
 * plugin claims "/channel" with one handler; a panel calls <channel>/<endpoint>
 * with a JSON payload and gets {ok:true, value} | {ok:false, error:{code,
 * message, details}}. The HTTP binding is the web front end's (it calls
 * cdsh_rpc_dispatch_envelope). Thread-safe; no lock held while a handler runs. */
#ifndef CDSH_HOST_RPC_H
#define CDSH_HOST_RPC_H

#include <jansson.h>
#include <stdbool.h>

#include "base/cancel.h"
#include "base/err.h"
#include "host/disposer.h"

typedef struct cdsh_rpc cdsh_rpc;

#define CDSH_RPC_API "/api" /* the shared host API channel */

/* Result codes used by the host (plugins may add their own kebab-case codes). */
#define CDSH_RPC_BAD_REQUEST "bad-request"
#define CDSH_RPC_CANCELLED "cancelled"
#define CDSH_RPC_INTERNAL "internal"
#define CDSH_RPC_NOT_FOUND "not-found"
#define CDSH_RPC_SESSION_NOT_FOUND "session-not-found"
#define CDSH_RPC_AGENT_BUSY "agent-busy"
#define CDSH_RPC_COMMAND_ERROR "command-error"
#define CDSH_RPC_UNKNOWN_COMMAND "unknown-command"
#define CDSH_RPC_SETTINGS_REJECTED "settings-rejected"

/* A handler returns an owned RpcResult in *result (build it with
 * cdsh_rpc_ok_new / cdsh_rpc_error_new) and 0; a negative return (or a
 * malformed result) becomes {ok:false, error:{code:"internal",
 * message:"handler failure: <message>"}}. payload is borrowed; cancel may be
 * NULL and should be observed by long handlers. */
typedef int (*cdsh_rpc_fn)(void *arg, const char *endpoint, const json_t *payload,
                           cdsh_cancel *cancel, json_t **result, cdsh_error *err);

cdsh_rpc *cdsh_rpc_new(void);
void cdsh_rpc_free(cdsh_rpc *rpc);

/* ^/[A-Za-z0-9._~-]+$ (the reserved "/api" passes this check). */
bool cdsh_rpc_channel_valid(const char *channel);

/* One or more "/"-separated segments, each ^[A-Za-z0-9_$.-]+$ and not "." or "..". */
bool cdsh_rpc_endpoint_valid(const char *endpoint);

/* Claims `channel` for fn. Invalid or reserved: CDSH_EINVAL, code
 * "INVALID_CHANNEL", `connection: invalid or reserved RPC channel "/x"`.
 * Already claimed: CDSH_EEXIST, code "DUPLICATE_CHANNEL",
 * `connection: RPC channel "/x" already has a handler`. */
int cdsh_rpc_handle(cdsh_rpc *rpc, const char *channel, cdsh_rpc_fn fn, void *arg,
                    cdsh_disposer_t *out, cdsh_error *err);

/* For the /api interceptor: true if it serves `endpoint`. */
typedef bool (*cdsh_rpc_match_fn)(void *arg, const char *endpoint);

/* Claims the endpoints of "/api" that matches() accepts (one interceptor at
 * most). Other channels: CDSH_EINVAL "INVALID_CHANNEL" `connection: only
 * "/api" can be intercepted, not "/x"`; a second interceptor: CDSH_EEXIST
 * "DUPLICATE_CHANNEL" `connection: "/api" already has an interceptor`. */
int cdsh_rpc_intercept(cdsh_rpc *rpc, const char *channel, cdsh_rpc_match_fn matches,
                       cdsh_rpc_fn fn, void *arg, cdsh_disposer_t *out, cdsh_error *err);

/* Calls a channel in-process. Always returns an owned RpcResult (NULL only
 * on ENOMEM): an invalid channel or endpoint gives bad-request; a channel with
 * no handler gives not-found (`no handler for RPC channel "/x"`; an /api
 * endpoint the interceptor does not match: `no handler for /api/<ep>`); a fired
 * cancel token (before or during the call) gives cancelled; a handler failure
 * gives internal. payload may be NULL (treated as null). */
json_t *cdsh_rpc_call(cdsh_rpc *rpc, const char *channel, const char *endpoint,
                      const json_t *payload, cdsh_cancel *cancel);

/* The wire envelope for the HTTP binding: body must be {type:"client-request",
 * rpcId: string, method: string equal to endpoint, payload}. Returns an owned
 * {type:"server-response", rpcId, result}; envelope problems give a
 * bad-request result (rpcId "" when absent). */
json_t *cdsh_rpc_dispatch_envelope(cdsh_rpc *rpc, const char *channel, const char *endpoint,
                                   const json_t *body, cdsh_cancel *cancel);

/* {ok:true, value} — takes the reference to value (NULL means null). */
json_t *cdsh_rpc_ok_new(json_t *value);
/* {ok:false, error:{code, message, details}} — takes details (NULL means null). */
json_t *cdsh_rpc_error_new(const char *code, const char *message, json_t *details);

/* True if result has the RpcResult shape.
 * keep-public: tests check result shapes with it. */
bool cdsh_rpc_result_valid(const json_t *result);

/* Number of claimed channels (for reload leak checks).
 * keep-public: reload leak checks in tests. */
size_t cdsh_rpc_count(cdsh_rpc *rpc);

/* Owned sorted array of claimed channel names.
 * keep-public: tests list claimed channels. */
json_t *cdsh_rpc_channels(cdsh_rpc *rpc);

#endif
