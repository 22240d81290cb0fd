/* mcp_http.h — MCP's Streamable HTTP transport on libmicrohttpd: POST with
 * JSON or SSE answers (SSE for tools/call, carrying its progress), a GET
 * stream for list_changed, Mcp-Session-Id sessions (one cdsh MCP session
 * each), MCP-Protocol-Version checks, Origin/Host validation against
 * DNS rebinding, and an optional bearer token. Runs standalone (`cdsh mcp
 * --http`) or behind `cdsh web` at /mcp.
 * Thread-safety: all functions are thread-safe; MHD runs one thread per
 * connection. */
#ifndef CDSH_SERVER_MCP_HTTP_H
#define CDSH_SERVER_MCP_HTTP_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "proto/mcp/mcp_server.h"

typedef struct cdsh_mcp_http cdsh_mcp_http;

typedef struct cdsh_mcp_http_opts {
    const char *token; /* NULL: no token check (the caller checked, or loopback-only use) */
    uint16_t port;     /* the port clients use in Host/Origin (set by _listen when 0) */
    /* Standalone (_listen) only; 0 = default. A connection with no bytes
     * either way for idle_timeout_s seconds (30) is closed; at most
     * max_connections (64) are open at once, counted as they are accepted,
     * before any request (or token) is read. */
    unsigned idle_timeout_s, max_connections;
} cdsh_mcp_http_opts;

/* server is borrowed and must outlive the transport. */
cdsh_mcp_http *cdsh_mcp_http_new(cdsh_mcp_server *server, const cdsh_mcp_http_opts *opts,
                                 cdsh_error *err);

/* Shutdown, step one: new requests get 503, running calls and subscriptions
 * are cancelled (subscriptions answer their closing result; calls get up to
 * 500 ms to answer), then every event stream — POST answers and GET streams —
 * ends, so the daemon's connection threads return at once. Call before
 * stopping a daemon that routes to this transport (cdsh_mcp_http_free does
 * it for its own daemon). NULL-safe. */
void cdsh_mcp_http_close_streams(cdsh_mcp_http *h);

/* Ends every session (running calls are cancelled) and frees. Stop the
 * daemon that calls cdsh_mcp_http_handle first (after
 * cdsh_mcp_http_close_streams). NULL-safe. */
void cdsh_mcp_http_free(cdsh_mcp_http *h);

/* The MHD access handler for the MCP endpoint (any URL routed here). Pass
 * MHD's arguments through unchanged; *req_state must start NULL and be
 * released by cdsh_mcp_http_completed from MHD_OPTION_NOTIFY_COMPLETED. */
enum MHD_Result cdsh_mcp_http_handle(cdsh_mcp_http *h, struct MHD_Connection *conn,
                                     const char *method, const char *upload, size_t *upload_size,
                                     void **req_state);
void cdsh_mcp_http_completed(void **req_state);

/* Standalone: listens on 127.0.0.1:port (0 = pick one) and serves /mcp.
 * cdsh_mcp_http_port() tells the port. */
int cdsh_mcp_http_listen(cdsh_mcp_http *h, uint16_t port, cdsh_error *err);
uint16_t cdsh_mcp_http_port(const cdsh_mcp_http *h);

/* Sets the port used for Host/Origin checks (when another daemon listens). */
void cdsh_mcp_http_set_port(cdsh_mcp_http *h, uint16_t port);

/* Layer-internal: constant-time token comparison (false when either is NULL),
 * shared with web.c. */
bool cdsh__server_token_equal(const char *a, const char *b);

/* Layer-internal: the credentials of an Authorization header with the
 * Bearer scheme, matched case-insensitively as RFC 9110 §11.1 says
 * ("bearer x", "BEARER x"); NULL for another scheme or none. */
const char *cdsh__server_bearer(const char *authorization);

/* Layer-internal: an MHD_OPTION_URI_LOG_CALLBACK that returns
 * CDSH__SERVER_BAD_URI for a target cdsh__server_uri_ok refuses and NULL
 * otherwise; the request handlers answer 400 when their state starts as
 * that marker (and never free it). */
void *cdsh__server_uri_log(void *cls, const char *uri, struct MHD_Connection *conn);
extern char cdsh__server_bad_uri_mark;
#define CDSH__SERVER_BAD_URI ((void *)&cdsh__server_bad_uri_mark)

#endif
