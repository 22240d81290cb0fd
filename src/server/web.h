/* web.h — the local HTTP server behind `cdsh web`: binds 127.0.0.1, guards
 * every request with a per-run access token and a Host check, and serves the
 * embedded web UI. Later layers add routes (RPC gateway, SSE) through it. */
#ifndef CDSH_SERVER_WEB_H
#define CDSH_SERVER_WEB_H

#include <stdint.h>

#include "base/err.h"
#include "server/mcp_http.h"

typedef struct cdsh_web cdsh_web;

typedef struct cdsh_web_options {
    uint16_t port;      /* 0: let the kernel pick a free port */
    const char *token;  /* NULL: a fresh random token */
    cdsh_mcp_http *mcp; /* optional: MCP Streamable HTTP at /mcp behind the same token
                           (borrowed; must outlive the server) */
} cdsh_web_options;

/* Starts the server on 127.0.0.1. Thread-safe to stop from any thread. */
int cdsh_web_start(const cdsh_web_options *opts, cdsh_web **out, cdsh_error *err);

/* Stops serving and frees. NULL-safe. */
void cdsh_web_stop(cdsh_web *web);

uint16_t cdsh_web_port(const cdsh_web *web);

/* Borrowed access token. */
const char *cdsh_web_token(const cdsh_web *web);

/* Owned "http://127.0.0.1:<port>/?token=<token>". */
char *cdsh_web_url_dup(const cdsh_web *web);

#endif
