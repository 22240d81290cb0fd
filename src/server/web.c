/* web.c — libmicrohttpd server for the local web UI: token and Host checks,
 * embedded static assets, /healthz. Only loopback is ever bound: the token
 * protects against other local users' browsers, the Host check against DNS
 * rebinding. */
#include "server/web.h"

#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/random.h"
#include "server/web_assets.h"

#define TOKEN_COOKIE "cdsh_token"

struct cdsh_web {
    struct MHD_Daemon *daemon;
    uint16_t port;
    char token[65];
    cdsh_mcp_http *mcp;
};

/* Constant-time comparison so the token cannot be probed byte by byte
 * (shared with the MCP endpoint, mcp_http.c). */
#define token_equal cdsh__server_token_equal

static int host_allowed(const cdsh_web *web, const char *host)
{
    if (!host)
        return 0;
    char a[64], b[64];
    snprintf(a, sizeof a, "127.0.0.1:%u", web->port);
    snprintf(b, sizeof b, "localhost:%u", web->port);
    return strcmp(host, a) == 0 || strcmp(host, b) == 0;
}

static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned status, const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **req_state)
{
    (void)version;
    cdsh_web *web = cls;

    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
    if (!host_allowed(web, host))
        return reply_text(conn, MHD_HTTP_MISDIRECTED_REQUEST, "unexpected Host header\n");
    if (strcmp(url, "/healthz") == 0)
        return reply_text(conn, MHD_HTTP_OK, "ok\n");
    if (web->mcp && strcmp(url, "/mcp") == 0) {
        /* MCP clients authenticate with the bearer token (or ?token=). */
        const char *a = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
        const char *q = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "token");
        if (!token_equal(a && strncmp(a, "Bearer ", 7) == 0 ? a + 7 : NULL, web->token) &&
            !token_equal(q, web->token))
            return reply_text(conn, MHD_HTTP_UNAUTHORIZED,
                              "missing or wrong access token: send Authorization: Bearer "
                              "<token>\n");
        return cdsh_mcp_http_handle(web->mcp, conn, method, upload, upload_size, req_state);
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return reply_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");

    const char *query_token = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "token");
    const char *cookie = MHD_lookup_connection_value(conn, MHD_COOKIE_KIND, TOKEN_COOKIE);
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    const char *bearer = auth && strncmp(auth, "Bearer ", 7) == 0 ? auth + 7 : NULL;
    int from_query = token_equal(query_token, web->token);
    if (!from_query && !token_equal(cookie, web->token) && !token_equal(bearer, web->token))
        return reply_text(conn, MHD_HTTP_UNAUTHORIZED,
                          "missing or wrong access token: open the URL that `cdsh web` printed\n");

    const cdsh_web_asset *asset = cdsh_web_asset_find(url);
    if (!asset)
        return reply_text(conn, MHD_HTTP_NOT_FOUND, "not found\n");
    struct MHD_Response *r = MHD_create_response_from_buffer(asset->size, (void *)asset->data,
                                                             MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, "Content-Type", asset->mime);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (from_query) {
        char cookie_hdr[160];
        snprintf(cookie_hdr, sizeof cookie_hdr, TOKEN_COOKIE "=%s; Path=/; HttpOnly; SameSite=Strict",
                 web->token);
        MHD_add_response_header(r, "Set-Cookie", cookie_hdr);
    }
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

static void request_completed(void *cls, struct MHD_Connection *conn, void **req_state,
                              enum MHD_RequestTerminationCode code)
{
    (void)cls, (void)conn, (void)code;
    cdsh_mcp_http_completed(req_state); /* only /mcp requests keep state */
}

int cdsh_web_start(const cdsh_web_options *opts, cdsh_web **out, cdsh_error *err)
{
    if (!out)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "cdsh_web_start: out is NULL");
    *out = NULL;
    cdsh_web *web = calloc(1, sizeof *web);
    if (!web)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    if (opts && opts->token) {
        if (strlen(opts->token) >= sizeof web->token) {
            free(web);
            return cdsh_error_set(err, CDSH_EINVAL, "BAD_TOKEN", "access token is too long");
        }
        strcpy(web->token, opts->token);
    } else if (cdsh_random_hex(web->token, sizeof web->token, 24) != 0) {
        free(web);
        return cdsh_error_set(err, CDSH_EIO, "NO_RANDOM", "cannot read random bytes for the token");
    }

    web->mcp = opts ? opts->mcp : NULL; /* set before the daemon's threads read it */
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(opts ? opts->port : 0);
    web->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                                       MHD_USE_ERROR_LOG,
                                   0, NULL, NULL, handle, web, MHD_OPTION_SOCK_ADDR, &addr,
                                   MHD_OPTION_NOTIFY_COMPLETED, request_completed, web,
                                   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120, MHD_OPTION_END);
    if (!web->daemon) {
        unsigned port = opts ? opts->port : 0;
        free(web);
        return cdsh_error_set(err, CDSH_EIO, "LISTEN_FAILED",
                              "cannot listen on 127.0.0.1:%u (is the port in use? try --port 0)",
                              port);
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
    MHD_stop_daemon(web->daemon);
    free(web);
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
    size_t n = strlen(web->token) + 64;
    char *url = malloc(n);
    if (url)
        snprintf(url, n, "http://127.0.0.1:%u/?token=%s", web->port, web->token);
    return url;
}
