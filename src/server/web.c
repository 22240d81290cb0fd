/* web.c — libmicrohttpd server: request guards (Host, Origin, token, size),
 * JSON errors, the route table, embedded static assets and /healthz. What
 * the routes do lives in their modules (api.c, rpc gateway, ...). */
#include "server/web.h"

#include <arpa/inet.h>
#include "server/mhd_dl.h" /* <microhttpd.h>, loaded on first use */
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/random.h"
#include "base/strbuf.h"
#include "server/web_assets.h"

#define TOKEN_COOKIE "cdsh_token"
#define WEB_MAX_CONNECTIONS 128 /* capped as accepted, before any request (or token) is read */

typedef struct route {
    struct route *next;
    int id;
    char *method; /* NULL: any */
    char *path;
    unsigned flags;
    cdsh_web_handler_fn fn;
    void *arg;
} route;

struct cdsh_web {
    struct MHD_Daemon *daemon;
    cdsh_mcp_http *mcp;
    uint16_t port;
    char host[64]; /* the bound address as text */
    bool loopback;
    char token[65];
    size_t max_body;
    pthread_rwlock_t lock; /* guards routes */
    route *routes;
    int next_id;
};

/* Per-request state across the callbacks of one request. */
typedef struct req_state {
    cdsh_strbuf body;
    bool too_big;
    bool mcp;        /* handed to the MCP transport, which keeps its own state: */
    void *mcp_state; /* its *req_state, released by cdsh_mcp_http_completed */
} req_state;

/* ---- helpers ----------------------------------------------------------------- */

/* Constant-time comparison so the token cannot be probed byte by byte
 * (shared with the MCP endpoint, mcp_http.c). */
#define token_equal cdsh__server_token_equal

static bool host_allowed(const cdsh_web *web, const char *host)
{
    if (!host)
        return false;
    char buf[96];
    const char *names[] = {"127.0.0.1", "localhost", "[::1]", web->loopback ? NULL : web->host};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (!names[i])
            continue;
        snprintf(buf, sizeof buf, "%s:%u", names[i], web->port);
        if (strcmp(host, buf) == 0)
            return true;
    }
    /* Bound to every address: any IPv4 literal with our port (never a name,
     * which is what a rebinding attack needs). */
    if (strcmp(web->host, "0.0.0.0") == 0) {
        const char *colon = strrchr(host, ':');
        char ip[32];
        struct in_addr a;
        if (colon && (size_t)(colon - host) < sizeof ip && (unsigned)atoi(colon + 1) == web->port) {
            memcpy(ip, host, (size_t)(colon - host));
            ip[colon - host] = '\0';
            return inet_pton(AF_INET, ip, &a) == 1;
        }
    }
    return false;
}

void cdsh_web_reply_json(cdsh_web_response *res, unsigned status, json_t *json)
{
    json_decref(res->json);
    res->status = status;
    res->json = json;
}

void cdsh_web_reply_error(cdsh_web_response *res, unsigned status, const char *code,
                          const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cdsh_web_reply_json(res, status,
                        json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", msg));
}

const char *cdsh_web_header(const cdsh_web_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *cdsh_web_query(const cdsh_web_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

static enum MHD_Result add_query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    json_object_set_new(cls, key, json_string(value ? value : ""));
    return MHD_YES;
}

json_t *cdsh_web_query_object(const cdsh_web_request *req)
{
    json_t *o = json_object();
    if (o)
        MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, add_query_arg, o);
    return o;
}

json_t *cdsh_web_body_object(const cdsh_web_request *req, cdsh_web_response *res)
{
    const char *ct = cdsh_web_header(req, "Content-Type");
    if (!ct || strncasecmp(ct, "application/json", 16) != 0) {
        cdsh_web_reply_error(res, 415, "UNSUPPORTED_MEDIA_TYPE",
                             "send the body as Content-Type: application/json");
        return NULL;
    }
    json_error_t jerr;
    json_t *v = json_loadb(req->body, req->body_len, 0, &jerr);
    if (!v || !json_is_object(v)) {
        cdsh_web_reply_error(res, 400, "BAD_JSON", "the body is not a JSON object%s%s",
                             v ? "" : ": ", v ? "" : jerr.text);
        json_decref(v);
        return NULL;
    }
    return v;
}

static enum MHD_Result send_response(struct MHD_Connection *conn, cdsh_web_response *res,
                                     const char *cookie)
{
    struct MHD_Response *r = res->raw;
    if (!r && res->json) {
        char *text = json_dumps(res->json, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
        size_t n = text ? strlen(text) : 0;
        r = MHD_create_response_from_buffer(n, text ? text : (char *)"", MHD_RESPMEM_MUST_FREE);
        if (!text)
            MHD_destroy_response(r), r = NULL;
        if (r)
            MHD_add_response_header(r, "Content-Type", "application/json; charset=utf-8");
    } else if (!r) {
        r = MHD_create_response_from_buffer(res->body_len, res->body ? res->body : (char *)"",
                                            res->body ? MHD_RESPMEM_MUST_FREE
                                                      : MHD_RESPMEM_PERSISTENT);
        res->body = NULL;
        if (r && res->content_type)
            MHD_add_response_header(r, "Content-Type", res->content_type);
    }
    json_decref(res->json);
    res->json = NULL;
    free(res->body);
    if (!r)
        return MHD_NO;
    if (res->csp)
        MHD_add_response_header(r, "Content-Security-Policy", res->csp);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "X-Frame-Options", res->frameable ? "SAMEORIGIN" : "DENY");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    if (cookie)
        MHD_add_response_header(r, "Set-Cookie", cookie);
    enum MHD_Result ret = MHD_queue_response(conn, res->status ? res->status : 200, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *conn, unsigned status, const char *code,
                                  const char *msg)
{
    cdsh_web_response res = {0};
    cdsh_web_reply_error(&res, status, code, "%s", msg);
    return send_response(conn, &res, NULL);
}

/* The route for method+path (read lock held by the caller). */
static route *find_route(cdsh_web *web, const char *method, const char *path)
{
    route *best = NULL;
    size_t best_len = 0;
    for (route *r = web->routes; r; r = r->next) {
        if (r->method && strcmp(r->method, method) != 0)
            continue;
        if (!(r->flags & CDSH_WEB_ROUTE_PREFIX)) {
            if (strcmp(r->path, path) == 0)
                return r;
            continue;
        }
        size_t n = strlen(r->path);
        if (strncmp(path, r->path, n) == 0 && n > best_len) {
            best = r;
            best_len = n;
        }
    }
    return best;
}

/* Is there a route for path with another method? (for 405 vs 404) */
static bool path_known(cdsh_web *web, const char *path)
{
    for (route *r = web->routes; r; r = r->next) {
        size_t n = strlen(r->path);
        if ((r->flags & CDSH_WEB_ROUTE_PREFIX) ? strncmp(path, r->path, n) == 0
                                               : strcmp(path, r->path) == 0)
            return true;
    }
    return false;
}

/* ---- the request callback ------------------------------------------------------ */

static enum MHD_Result serve_asset(cdsh_web *web, struct MHD_Connection *conn, const char *url,
                                   bool from_query)
{
    const cdsh_web_asset *asset = cdsh_web_asset_find(url);
    if (!asset)
        return send_error(conn, 404, "NOT_FOUND", "no such page or API route");
    cdsh_web_response res = {.raw = MHD_create_response_from_buffer(
                                 asset->size, (void *)asset->data, MHD_RESPMEM_PERSISTENT)};
    MHD_add_response_header(res.raw, "Content-Type", asset->mime);
    MHD_add_response_header(res.raw, "Content-Security-Policy",
                            "default-src 'self'; style-src 'self' 'unsafe-inline'; "
                            "img-src 'self' data:; connect-src 'self'");
    char cookie[160];
    snprintf(cookie, sizeof cookie, TOKEN_COOKIE "=%s; Path=/; HttpOnly; SameSite=Strict",
             web->token);
    return send_response(conn, &res, from_query ? cookie : NULL);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state_ptr)
{
    (void)version;
    cdsh_web *web = cls;
    req_state *st = *state_ptr;
    if (st == CDSH__SERVER_BAD_URI) {
        *state_ptr = NULL;
        return send_error(conn, 400, "BAD_URL",
                          "the URL has a %00 or a malformed percent-escape");
    }
    if (!st) {
        /* First call: headers only. Refuse early what needs no body. */
        const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
        if (!host_allowed(web, host))
            return send_error(conn, 403, "BAD_HOST",
                              "unexpected Host header (open the URL that `cdsh web` printed)");
        const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
        if (origin) {
            char want[128];
            snprintf(want, sizeof want, "http://%s", host);
            if (strcmp(origin, want) != 0)
                return send_error(conn, 403, "BAD_ORIGIN", "cross-origin requests are not allowed");
        }
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > web->max_body) {
            char msg[96];
            snprintf(msg, sizeof msg, "the request body is larger than %zu bytes", web->max_body);
            return send_error(conn, 413, "TOO_LARGE", msg);
        }
        st = calloc(1, sizeof *st);
        if (!st)
            return MHD_NO;
        cdsh_strbuf_init(&st->body);
        *state_ptr = st;
        st->mcp = web->mcp && strcmp(url, "/mcp") == 0;
        if (!st->mcp)
            return MHD_YES;
        /* MCP clients authenticate with the bearer token (or ?token=). */
        const char *a = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
        const char *q = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "token");
        if (!token_equal(cdsh__server_bearer(a), web->token) &&
            !token_equal(q, web->token))
            return send_error(conn, 401, "UNAUTHORIZED",
                              "missing or wrong access token: send Authorization: Bearer <token>");
    }
    if (st->mcp)
        return cdsh_mcp_http_handle(web->mcp, conn, method, upload, upload_size, &st->mcp_state);
    if (*upload_size) {
        if (!st->too_big && st->body.len + *upload_size > web->max_body)
            st->too_big = true;
        if (!st->too_big)
            cdsh_strbuf_append(&st->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (st->too_big) {
        char msg[96];
        snprintf(msg, sizeof msg, "the request body is larger than %zu bytes", web->max_body);
        return send_error(conn, 413, "TOO_LARGE", msg);
    }

    const char *query_token = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "token");
    const char *cookie = MHD_lookup_connection_value(conn, MHD_COOKIE_KIND, TOKEN_COOKIE);
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    const char *bearer = cdsh__server_bearer(auth);
    bool authed = token_equal(cookie, web->token) || token_equal(bearer, web->token);

    pthread_rwlock_rdlock(&web->lock);
    route *r = find_route(web, method, url);
    route copy = r ? *r : (route){0};
    bool known = r || path_known(web, url);
    pthread_rwlock_unlock(&web->lock);

    if (!r) {
        bool page = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
        if (known || !page || strncmp(url, "/api/", 5) == 0 || strncmp(url, "/rpc/", 5) == 0)
            return known ? send_error(conn, 405, "METHOD_NOT_ALLOWED", "method not allowed here")
                         : send_error(conn, 404, "NOT_FOUND", "no such page or API route");
        bool from_query = token_equal(query_token, web->token);
        if (!authed && !from_query)
            return send_error(conn, 401, "UNAUTHORIZED",
                              "missing or wrong access token: open the URL that `cdsh web` "
                              "printed");
        return serve_asset(web, conn, url, from_query);
    }
    if (!(copy.flags & CDSH_WEB_ROUTE_PUBLIC) && !authed)
        return send_error(conn, 401, "UNAUTHORIZED",
                          "missing or wrong access token: open the URL that `cdsh web` printed");
    cdsh_web_request req = {.method = method,
                            .path = url,
                            .tail =
                                (copy.flags & CDSH_WEB_ROUTE_PREFIX) ? url + strlen(copy.path) : "",
                            .body = st->body.data,
                            .body_len = st->body.len,
                            .conn = conn};
    cdsh_web_response res = {0};
    copy.fn(copy.arg, &req, &res);
    if (!res.raw && !res.json && !res.body && !res.status)
        cdsh_web_reply_error(&res, 500, "INTERNAL", "the handler produced no response");
    return send_response(conn, &res, NULL);
}

static void request_done(void *cls, struct MHD_Connection *conn, void **state_ptr,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    req_state *st = *state_ptr;
    if (st && st != CDSH__SERVER_BAD_URI) {
        if (st->mcp)
            cdsh_mcp_http_completed(&st->mcp_state);
        cdsh_strbuf_deinit(&st->body);
        free(st);
        *state_ptr = NULL;
    }
}

/* libmicrohttpd's own messages (malformed requests...) go to the cdsh log,
 * not the terminal. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    cdsh_log_debug("web", "%s", msg);
}

static void healthz(void *arg, const cdsh_web_request *req, cdsh_web_response *res)
{
    (void)arg;
    (void)req;
    cdsh_web_reply_json(res, 200, json_pack("{s:b}", "ok", 1));
}

/* ---- lifecycle ------------------------------------------------------------------- */

int cdsh_web_start(const cdsh_web_options *opts, cdsh_web **out, cdsh_error *err)
{
    if (!out)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "cdsh_web_start: out is NULL");
    *out = NULL;
    cdsh_web_options o = opts ? *opts : (cdsh_web_options){0};
    const char *host = o.host && *o.host ? o.host : "127.0.0.1";
    if (strcmp(host, "localhost") == 0)
        host = "127.0.0.1";
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(o.port);
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_HOST",
                              "--host wants an IPv4 address such as 127.0.0.1, got \"%s\"", host);
    bool loopback = (ntohl(addr.sin_addr.s_addr) >> 24) == 127;
    if (!loopback && !o.allow_remote)
        return cdsh_error_set(err, CDSH_EPERM, "REMOTE_REFUSED",
                              "refusing to listen on %s: it is not a loopback address, and "
                              "anyone who reaches it with the token can run tools; pass "
                              "--allow-remote if you mean it",
                              host);
    if (o.token && (strlen(o.token) >= 65 || !*o.token))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_TOKEN",
                              "the access token must have 1 to 64 characters");
    int lrc = cdsh_mhd_load(err);
    if (lrc)
        return lrc;
    cdsh_web *web = calloc(1, sizeof *web);
    if (!web)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    pthread_rwlock_init(&web->lock, NULL);
    snprintf(web->host, sizeof web->host, "%s", host);
    web->loopback = loopback;
    web->max_body = o.max_body ? o.max_body : CDSH_WEB_DEFAULT_MAX_BODY;
    web->mcp = o.mcp; /* set before the daemon's threads read it */
    if (o.token) {
        strcpy(web->token, o.token);
    } else if (cdsh_random_hex(web->token, sizeof web->token, 24) != 0) {
        cdsh_web_stop(web);
        return cdsh_error_set(err, CDSH_EIO, "NO_RANDOM", "cannot read random bytes for the token");
    }
    cdsh_web_route(web, NULL, "/healthz", CDSH_WEB_ROUTE_PUBLIC, healthz, NULL, NULL, NULL);
    web->daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG, 0,
        NULL, NULL, handle, web, MHD_OPTION_SOCK_ADDR, &addr, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)120, MHD_OPTION_CONNECTION_LIMIT, (unsigned)WEB_MAX_CONNECTIONS,
        MHD_OPTION_NOTIFY_COMPLETED, request_done, web, MHD_OPTION_URI_LOG_CALLBACK,
        cdsh__server_uri_log, NULL, MHD_OPTION_EXTERNAL_LOGGER,
        mhd_log, NULL, MHD_OPTION_END);
    if (!web->daemon) {
        cdsh_web_stop(web);
        return cdsh_error_set(err, CDSH_EIO, "LISTEN_FAILED",
                              "cannot listen on %s:%u (is the port in use? try --port 0)", host,
                              (unsigned)o.port);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(web->daemon, MHD_DAEMON_INFO_BIND_PORT);
    web->port = info ? info->port : 0;
    if (web->mcp)
        cdsh_mcp_http_set_port(web->mcp, web->port);
    *out = web;
    return 0;
}

void cdsh_web_stop(cdsh_web *web)
{
    if (!web)
        return;
    if (web->daemon) {
        /* /mcp event streams hold connection threads: end them first. */
        cdsh_mcp_http_close_streams(web->mcp);
        MHD_stop_daemon(web->daemon);
    }
    route *r = web->routes;
    while (r) {
        route *next = r->next;
        free(r->method);
        free(r->path);
        free(r);
        r = next;
    }
    pthread_rwlock_destroy(&web->lock);
    free(web);
}

int cdsh_web_route(cdsh_web *web, const char *method, const char *path, unsigned flags,
                   cdsh_web_handler_fn fn, void *arg, int *id_out, cdsh_error *err)
{
    if (!web || !path || path[0] != '/' || !fn)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ROUTE", "a route needs a path and a handler");
    if ((flags & CDSH_WEB_ROUTE_PREFIX) && path[strlen(path) - 1] != '/')
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ROUTE", "a prefix route must end with '/'");
    route *r = calloc(1, sizeof *r);
    if (!r)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    r->method = method ? strdup(method) : NULL;
    r->path = strdup(path);
    r->flags = flags;
    r->fn = fn;
    r->arg = arg;
    pthread_rwlock_wrlock(&web->lock);
    for (route *o = web->routes; o; o = o->next) {
        bool same_method =
            (!o->method && !method) || (o->method && method && strcmp(o->method, method) == 0);
        if (same_method && strcmp(o->path, path) == 0 &&
            (o->flags & CDSH_WEB_ROUTE_PREFIX) == (flags & CDSH_WEB_ROUTE_PREFIX)) {
            pthread_rwlock_unlock(&web->lock);
            free(r->method);
            free(r->path);
            free(r);
            return cdsh_error_set(err, CDSH_EEXIST, "ROUTE_EXISTS", "route %s %s already exists",
                                  method ? method : "*", path);
        }
    }
    r->id = ++web->next_id;
    r->next = web->routes;
    web->routes = r;
    pthread_rwlock_unlock(&web->lock);
    if (id_out)
        *id_out = r->id;
    return 0;
}

void cdsh_web_unroute(cdsh_web *web, int id)
{
    if (!web)
        return;
    route *gone = NULL;
    pthread_rwlock_wrlock(&web->lock);
    for (route **pp = &web->routes; *pp; pp = &(*pp)->next) {
        if ((*pp)->id == id) {
            gone = *pp;
            *pp = gone->next;
            break;
        }
    }
    pthread_rwlock_unlock(&web->lock);
    if (gone) {
        free(gone->method);
        free(gone->path);
        free(gone);
    }
}

uint16_t cdsh_web_port(const cdsh_web *web)
{
    return web->port;
}

const char *cdsh_web_token(const cdsh_web *web)
{
    return web->token;
}

char *cdsh_web_url_dup(const cdsh_web *web)
{
    size_t n = strlen(web->token) + 128;
    char *url = malloc(n);
    if (url)
        snprintf(url, n, "http://%s:%u/?token=%s", web->loopback ? "127.0.0.1" : web->host,
                 web->port, web->token);
    return url;
}
