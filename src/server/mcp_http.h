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
} cdsh_mcp_http_opts;

/* server is borrowed and must outlive the transport. */
cdsh_mcp_http *cdsh_mcp_http_new(cdsh_mcp_server *server, const cdsh_mcp_http_opts *opts,
                                 cdsh_error *err);

/* Ends every session (running calls are cancelled) and frees. Stop the
 * daemon that calls cdsh_mcp_http_handle first. NULL-safe. */
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

#endif
