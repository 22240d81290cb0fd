/* web.h — the HTTP server behind `cdsh web` (libmicrohttpd): request
 * guards (loopback bind, Host/Origin checks, access token, size limits),
 * JSON errors, the embedded page, and a route table other modules register
 * into (API, SSE, RPC gateway, MCP...). Thread-safety below the includes;
 * HTTP reference: docs/web.md. */
#ifndef CDSH_SERVER_WEB_H
#define CDSH_SERVER_WEB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "server/mcp_http.h"

/* Binds loopback (another address only with allow_remote); every request
 * passes the Host and Origin checks (DNS rebinding), the per-run access
 * token (cookie or bearer) and the body size limit, and every error is
 * answered as JSON.
 *
 * Thread-safety: routes may be added and removed from any thread at any
 * time (a read-write lock guards the table); handlers run on the
 * connection's own thread (one thread per connection), possibly
 * concurrently, and may block (SSE streams do). */

typedef struct cdsh_web cdsh_web;
struct MHD_Connection;
struct MHD_Response;

#define CDSH_WEB_DEFAULT_MAX_BODY (1024 * 1024)

typedef struct cdsh_web_options {
    const char *host;   /* IPv4 address to bind; NULL: "127.0.0.1" ("localhost" allowed) */
    uint16_t port;      /* 0: let the kernel pick a free port */
    const char *token;  /* NULL: a fresh random token (48 hex digits) */
    bool allow_remote;  /* required to bind an address outside 127.0.0.0/8 */
    size_t max_body;    /* request body limit in bytes; 0: CDSH_WEB_DEFAULT_MAX_BODY */
    cdsh_mcp_http *mcp; /* optional: MCP Streamable HTTP at /mcp behind the same guards
                           and token (bearer or ?token=); borrowed, must outlive the server */
} cdsh_web_options;

/* What a handler sees. All pointers are borrowed for the call. */
typedef struct cdsh_web_request {
    const char *method; /* "GET", "POST", ... */
    const char *path;   /* URL path without the query */
    const char *tail;   /* for prefix routes: the path after the prefix ("" if none) */
    const char *body;   /* NUL-terminated (may hold NULs); "" when empty */
    size_t body_len;
    struct MHD_Connection *conn; /* for cdsh_web_header / cdsh_web_query */
} cdsh_web_request;

/* What a handler fills. Exactly one of json, body or raw is used (raw
 * first, then json, then body). Everything set here is taken over. */
typedef struct cdsh_web_response {
    unsigned status; /* 0: 200 */
    json_t *json;    /* sent compact as application/json */
    char *body;      /* malloc'd raw body */
    size_t body_len;
    const char *content_type; /* static string for body */
    struct MHD_Response *raw; /* a ready response (streams); destroyed after queueing */
    const char *csp;          /* static Content-Security-Policy header, or NULL */
    bool frameable; /* pages of this origin may frame it (X-Frame-Options SAMEORIGIN, not DENY) */
} cdsh_web_response;

typedef void (*cdsh_web_handler_fn)(void *arg, const cdsh_web_request *req, cdsh_web_response *res);

enum {
    CDSH_WEB_ROUTE_PREFIX = 1u << 0, /* path is a prefix ending in '/'; req->tail is the rest */
    CDSH_WEB_ROUTE_PUBLIC = 1u << 1, /* no token needed (Host/Origin checks still apply) */
};

/* Starts serving. Errors: CDSH_EINVAL "BAD_HOST" (not an IPv4 address),
 * CDSH_EPERM "REMOTE_REFUSED" (non-loopback without allow_remote),
 * CDSH_EINVAL "BAD_TOKEN", CDSH_EIO "LISTEN_FAILED". */
int cdsh_web_start(const cdsh_web_options *opts, cdsh_web **out, cdsh_error *err);

/* Stops accepting, waits for every connection thread and frees. A module
 * with streaming responses must end its streams first (api.c's
 * cdsh_api_shutdown does). NULL-safe. Routes' args must stay valid until
 * this returns. */
void cdsh_web_stop(cdsh_web *web);

/* Registers a route: method NULL matches any method; path is exact, or a
 * prefix with CDSH_WEB_ROUTE_PREFIX (the longest matching prefix wins; an
 * exact route beats a prefix). *id_out (may be NULL) identifies it for
 * cdsh_web_unroute. Same method+path twice: CDSH_EEXIST "ROUTE_EXISTS". */
int cdsh_web_route(cdsh_web *web, const char *method, const char *path, unsigned flags,
                   cdsh_web_handler_fn fn, void *arg, int *id_out, cdsh_error *err);

/* Removes a route; when it returns, new requests no longer reach it (calls
 * in flight may still be running). */
void cdsh_web_unroute(cdsh_web *web, int id);

uint16_t cdsh_web_port(const cdsh_web *web);
const char *cdsh_web_token(const cdsh_web *web); /* borrowed */

/* Owned "http://<host>:<port>/?token=<token>" (127.0.0.1 for loopback). */
char *cdsh_web_url_dup(const cdsh_web *web);

/* Request helpers: a header or query argument (borrowed), or NULL. */
const char *cdsh_web_header(const cdsh_web_request *req, const char *name);
const char *cdsh_web_query(const cdsh_web_request *req, const char *name);
/* Every query argument as an owned object of strings (an argument without a
 * value is ""; a repeated one keeps its last value). */
json_t *cdsh_web_query_object(const cdsh_web_request *req);

/* Response helpers. json is taken. error bodies are
 * {"error":{"code":code,"message":message}}. */
void cdsh_web_reply_json(cdsh_web_response *res, unsigned status, json_t *json);
void cdsh_web_reply_error(cdsh_web_response *res, unsigned status, const char *code,
                          const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Parses the body as a JSON object: on failure fills res with 415 (content
 * type not JSON) or 400 (bad JSON / not an object) and returns NULL. Owned. */
json_t *cdsh_web_body_object(const cdsh_web_request *req, cdsh_web_response *res);

#endif
