/* mcp_client.c — MCP client: connections (stdio child + JSON-RPC peer, or
 * Streamable HTTP over libcurl, loaded by the first HTTP connection), the
 * initialize handshake, paged tools/list, tools/call with
 * progress/cancel/timeout, list_changed and reconnects.
 * Tool registration into the kernel is mcp_bridge.c's job, not this file's. */
#include "proto/mcp/mcp_client.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/curl_dl.h"
#include "base/sse.h"
#include "base/json.h"
#include "proto/jsonrpc.h"
#include "base/log.h"
#include "base/process.h"
#include "base/strbuf.h"
#include "proto/mcp/mcp.h"

#define TAIL_MAX 2048
/* How long a closed stdio server's exit is awaited, and then how long its
 * stderr drain may take to read its last words, before the error is told. */
#define EXIT_WAIT_MS 2000
#define DRAIN_WAIT_MS 1000
#define MAX_PAGES 1000

typedef struct progress_slot {
    char token[40];
    cdsh_mcp_progress_fn fn;
    void *arg;
    struct progress_slot *next;
} progress_slot;

typedef struct conn {
    int refs; /* under client->lock */
    cdsh_mcp_client *client;
    bool http;
    /* stdio */
    cdsh_process *proc;
    cdsh_jsonrpc *peer;
    pthread_t err_thread;
    bool err_started;
    pthread_mutex_t tail_lock;
    char tail[TAIL_MAX + 1];
    size_t tail_len;
    char fatal[200];         /* why the connection was cut by us (oversize frame) */
    bool drain_done;         /* the stderr drain saw EOF (under tail_lock) */
    pthread_cond_t drain_cv; /* signalled (under tail_lock) when drain_done is set */
    /* http */
    pthread_mutex_t id_lock;
    int64_t next_id;
    char *session_id;
    CURLSH *share;
    pthread_mutex_t share_lock;
    pthread_t get_thread;
    bool get_started;
    cdsh_cancel *stop;
    /* negotiated */
    char *version;
    json_t *server_info, *caps;
    char *instructions;
    bool lost; /* under client->lock */
} conn;

struct cdsh_mcp_client {
    char *name;
    char **argv;
    json_t *env, *headers;
    char *cwd, *url, *bearer;
    int64_t init_timeout_ms, call_timeout_ms;
    size_t max_instr, max_message;
    bool stderr_inherit, reconnect;
    int64_t rc_initial, rc_max;
    int rc_attempts;
    cdsh_mcp_client_event_fn on_event;
    void *event_arg;

    pthread_mutex_t lock; /* cur, tools, reconnect state */
    conn *cur;
    json_t *tools;
    bool closing, recon_running, recon_joinable, gave_up;
    pthread_t recon_thread;
    cdsh_cancel *shutdown;

    pthread_mutex_t plock; /* progress slots */
    progress_slot *slots;
    uint64_t next_token;
};

static void emit(cdsh_mcp_client *cl, cdsh_mcp_client_event ev)
{
    if (cl->on_event)
        cl->on_event(cl->event_arg, cl, ev);
}

/* ---- connection references --------------------------------------------------- */

static void conn_destroy(conn *c);

static conn *conn_get(cdsh_mcp_client *cl)
{
    pthread_mutex_lock(&cl->lock);
    conn *c = cl->cur;
    if (c)
        c->refs++;
    pthread_mutex_unlock(&cl->lock);
    return c;
}

static void conn_put(conn *c)
{
    if (!c)
        return;
    cdsh_mcp_client *cl = c->client;
    pthread_mutex_lock(&cl->lock);
    int left = --c->refs;
    pthread_mutex_unlock(&cl->lock);
    if (left == 0)
        conn_destroy(c);
}

static void start_reconnect(cdsh_mcp_client *cl);

/* The connection died under us: detach it from the client (once) and start
 * reconnecting if configured. Safe on the reader thread: nothing is freed
 * here unless this was the last reference, and the reader's own peer holds
 * none. */
static void conn_lost(conn *c)
{
    cdsh_mcp_client *cl = c->client;
    pthread_mutex_lock(&cl->lock);
    bool was_cur = cl->cur == c && !c->lost;
    c->lost = true;
    bool closing = cl->closing;
    pthread_mutex_unlock(&cl->lock);
    if (!was_cur || closing)
        return;
    cdsh_log_info("mcp", "MCP server \"%s\" disconnected", cl->name);
    emit(cl, CDSH_MCP_EVENT_DISCONNECTED);
    if (cl->reconnect)
        start_reconnect(cl);
}

/* ---- incoming messages (both transports) -------------------------------------- */

static void route_progress(cdsh_mcp_client *cl, const json_t *params)
{
    json_t *tok = json_object_get(params, "progressToken");
    char key[40];
    if (json_is_string(tok))
        snprintf(key, sizeof key, "%s", json_string_value(tok));
    else if (json_is_integer(tok))
        snprintf(key, sizeof key, "%lld", (long long)json_integer_value(tok));
    else
        return;
    double progress = json_number_value(json_object_get(params, "progress"));
    json_t *t = json_object_get(params, "total");
    double total = json_is_number(t) ? json_number_value(t) : -1;
    const char *msg = json_string_value(json_object_get(params, "message"));
    /* The slot stays registered while its call runs, and the call removes it
     * under plock, so calling fn under plock keeps fn/arg valid. */
    pthread_mutex_lock(&cl->plock);
    for (progress_slot *s = cl->slots; s; s = s->next)
        if (strcmp(s->token, key) == 0) {
            s->fn(s->arg, progress, total, msg);
            break;
        }
    pthread_mutex_unlock(&cl->plock);
}

static int cdsh_mcp_client_refresh_tools(cdsh_mcp_client *cl, cdsh_cancel *cancel, cdsh_error *err);

static void on_list_changed(cdsh_mcp_client *cl)
{
    conn *c = conn_get(cl);
    conn_put(c);
    if (!c)
        return; /* early notification during connect: the first list follows anyway */
    cdsh_error err = {0};
    if (cdsh_mcp_client_refresh_tools(cl, NULL, &err) != 0)
        cdsh_log_warn("mcp", "re-listing tools of \"%s\" failed: %s", cl->name, err.message);
}

/* A notification from the server (either transport). */
static void handle_notification(conn *c, const char *method, const json_t *params)
{
    cdsh_mcp_client *cl = c->client;
    if (strcmp(method, "notifications/progress") == 0)
        route_progress(cl, params);
    else if (strcmp(method, "notifications/tools/list_changed") == 0)
        on_list_changed(cl);
    else if (strcmp(method, "notifications/message") == 0)
        cdsh_log_debug("mcp", "%s: log %s", cl->name,
                       json_string_value(json_object_get(params, "level")));
}

/* ---- stdio transport ------------------------------------------------------------ */

static void stdio_notification(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)peer;
    handle_notification(arg, cdsh_jsonrpc_request_method(req), cdsh_jsonrpc_request_params(req));
}

static void stdio_ping(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)arg;
    (void)peer;
    json_t *empty = json_object();
    cdsh_jsonrpc_respond(req, empty, NULL);
    json_decref(empty);
}

static void stdio_diag(void *arg, cdsh_jsonrpc_diag kind, const char *message)
{
    conn *c = arg;
    if (kind == CDSH_JSONRPC_DIAG_OVERSIZE) {
        /* A frame we cannot read may be the answer a caller waits for: cut the
         * connection so every waiter gets a clear error instead of a timeout. */
        pthread_mutex_lock(&c->tail_lock);
        snprintf(c->fatal, sizeof c->fatal, "the server sent an oversize message (%s)", message);
        pthread_mutex_unlock(&c->tail_lock);
        cdsh_process_signal(c->proc, SIGKILL, NULL);
    } else if (kind == CDSH_JSONRPC_DIAG_IO) {
        conn_lost(c);
    } else {
        cdsh_log_debug("mcp", "%s: %s", c->client->name, message);
    }
}

static void stdio_cancel_hook(void *arg, cdsh_jsonrpc *peer, const json_t *id, const char *method,
                              int rc, const char *reason)
{
    (void)arg;
    (void)rc;
    if (strcmp(method, "initialize") == 0)
        return; /* the spec forbids cancelling initialize */
    json_t *p = json_pack("{s:O,s:s}", "requestId", id, "reason", reason ? reason : "cancelled");
    if (p)
        cdsh_jsonrpc_notify(peer, "notifications/cancelled", p, NULL);
    json_decref(p);
}

static void *stderr_drain(void *arg)
{
    conn *c = arg;
    int fd = cdsh_process_stderr_fd(c->proc);
    char buf[1024];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0)
            break;
        pthread_mutex_lock(&c->tail_lock);
        /* buf is smaller than the tail, so one chunk always fits after a shift. */
        if (c->tail_len + (size_t)n > TAIL_MAX) {
            size_t drop = c->tail_len + (size_t)n - TAIL_MAX;
            memmove(c->tail, c->tail + drop, c->tail_len - drop);
            c->tail_len -= drop;
        }
        memcpy(c->tail + c->tail_len, buf, (size_t)n);
        c->tail_len += (size_t)n;
        c->tail[c->tail_len] = '\0';
        pthread_mutex_unlock(&c->tail_lock);
    }
    pthread_mutex_lock(&c->tail_lock);
    c->drain_done = true;
    pthread_cond_broadcast(&c->drain_cv);
    pthread_mutex_unlock(&c->tail_lock);
    return NULL;
}

static int stdio_open(conn *c, cdsh_error *err)
{
    cdsh_mcp_client *cl = c->client;
    int rc;
    char **env = cdsh_mcp_child_env_new(NULL, cl->env, err);
    if (!env)
        return err ? err->rc : CDSH_ENOMEM;
    cdsh_process_opts po = {
        .stdin_mode = CDSH_PROCESS_PIPE,
        .stdout_mode = CDSH_PROCESS_PIPE,
        .stderr_mode = cl->stderr_inherit ? CDSH_PROCESS_INHERIT : CDSH_PROCESS_PIPE,
        .env = (const char *const *)env,
        .cwd = cl->cwd,
    };
    rc = cdsh_process_spawn((const char *const *)cl->argv, &po, &c->proc, err);
    cdsh_mcp_env_free(env);
    if (rc != 0)
        return rc;
    if (!cl->stderr_inherit) {
        if (pthread_create(&c->err_thread, NULL, stderr_drain, c) != 0)
            return cdsh_error_set(err, CDSH_EIO, "THREAD", "cannot start a thread");
        c->err_started = true;
    }
    char pname[160];
    snprintf(pname, sizeof pname, "MCP server \"%.100s\"", cl->name);
    cdsh_jsonrpc_config cfg = {
        .name = pname,
        .max_frame = cl->max_message,
        .on_diag = stdio_diag,
        .diag_arg = c,
        .on_cancel = stdio_cancel_hook,
        .cancel_arg = c,
    };
    c->peer = cdsh_jsonrpc_new(cdsh_process_stdout_fd(c->proc), cdsh_process_stdin_fd(c->proc),
                               &cfg, err);
    if (!c->peer)
        return err ? err->rc : CDSH_ENOMEM;
    static const char *const notes[] = {
        "notifications/progress", "notifications/tools/list_changed", "notifications/message"};
    for (size_t i = 0; i < sizeof notes / sizeof *notes; i++)
        if ((rc = cdsh_jsonrpc_handle(c->peer, notes[i], stdio_notification, c, err)) != 0)
            return rc;
    if ((rc = cdsh_jsonrpc_handle(c->peer, "ping", stdio_ping, c, err)) != 0)
        return rc;
    return cdsh_jsonrpc_start(c->peer, err);
}

/* After the peer reported CLOSED: explain with the exit status and stderr. */
static int stdio_closed_error(conn *c, const char *method, cdsh_error *err)
{
    cdsh_process_status st;
    char desc[96] = "closed its output";
    if (cdsh_process_wait(c->proc, EXIT_WAIT_MS, NULL, &st, NULL) == 0)
        cdsh_process_status_describe(&st, desc, sizeof desc);
    /* Give the drain a moment to read the child's last words (joined later). */
    struct timespec until;
    cdsh_clock_deadline(CLOCK_MONOTONIC, DRAIN_WAIT_MS, &until);
    pthread_mutex_lock(&c->tail_lock);
    while (c->err_started && !c->drain_done)
        if (pthread_cond_timedwait(&c->drain_cv, &c->tail_lock, &until) == ETIMEDOUT)
            break;
    char tail[400];
    size_t tl = c->tail_len > 300 ? 300 : c->tail_len;
    memcpy(tail, c->tail + c->tail_len - tl, tl);
    tail[tl] = '\0';
    for (size_t i = 0; i < tl; i++)
        if (tail[i] == '\n' || tail[i] == '\r')
            tail[i] = ' ';
    char fatal[sizeof c->fatal];
    memcpy(fatal, c->fatal, sizeof fatal);
    pthread_mutex_unlock(&c->tail_lock);
    return cdsh_error_set(err, CDSH_ECLOSED, "SERVER_EXITED",
                          "MCP server \"%s\" %s while cdsh waited for %s%s%s", c->client->name,
                          fatal[0] ? fatal : desc, method, tl ? "; stderr: " : "", tail);
}

/* ---- HTTP transport --------------------------------------------------------------- */

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *u)
{
    (void)h, (void)d, (void)a;
    pthread_mutex_lock(&((conn *)u)->share_lock);
}
static void share_unlock(CURL *h, curl_lock_data d, void *u)
{
    (void)h, (void)d;
    pthread_mutex_unlock(&((conn *)u)->share_lock);
}

typedef struct http_ctx {
    conn *c;
    const json_t *want_id; /* NULL: no response expected */
    json_t *response;      /* the matching response message (owned) */
    bool is_sse;
    cdsh_sse *sse;
    cdsh_strbuf body;
    size_t max;
    bool too_big;
    char *session_id;
    int64_t deadline; /* mono ms; 0 = none */
    cdsh_cancel *cancel;
    bool timed_out, cancelled;
} http_ctx;

static int http_post_msg(conn *c, json_t *msg, http_ctx *ctx, cdsh_error *err);

/* A server → client request arriving over SSE: answer ping, refuse the rest. */
static void http_answer(conn *c, const json_t *id, const char *method)
{
    json_t *resp =
        strcmp(method, "ping") == 0
            ? json_pack("{s:s,s:O,s:{}}", "jsonrpc", "2.0", "id", id, "result")
            : json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id, "error", "code",
                        CDSH_JSONRPC_METHOD_NOT_FOUND, "message", "Method not found");
    if (!resp)
        return;
    http_ctx sub = {.c = c, .max = 1 << 20};
    cdsh_strbuf_init(&sub.body);
    http_post_msg(c, resp, &sub, NULL);
    cdsh_strbuf_deinit(&sub.body);
    free(sub.session_id);
    json_decref(resp);
}

static void http_incoming(http_ctx *ctx, const char *data, size_t len)
{
    json_t *v = NULL;
    cdsh_mcp_msg m;
    if (len == 0 || cdsh_mcp_msg_parse(data, len, &v, &m, NULL) != 0)
        return; /* priming events carry no data */
    if (m.kind == CDSH_MCP_MSG_NOTIFICATION)
        handle_notification(ctx->c, m.method, m.params);
    else if (m.kind == CDSH_MCP_MSG_REQUEST)
        http_answer(ctx->c, m.id, m.method);
    else if (ctx->want_id && !ctx->response && json_equal(m.id, (json_t *)ctx->want_id))
        ctx->response = json_incref(v);
    json_decref(v);
}

static int sse_event(void *arg, const cdsh_sse_event *ev)
{
    http_ctx *ctx = arg;
    http_incoming(ctx, ev->data, ev->data_len);
    return ctx->response ? 1 : 0; /* stop once our answer is in */
}

static size_t http_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    http_ctx *ctx = ud;
    size_t n = size * nmemb;
    if (ctx->is_sse) {
        if (!ctx->sse && !(ctx->sse = cdsh_sse_new(ctx->max, sse_event, ctx)))
            return 0;
        int rc = cdsh_sse_feed(ctx->sse, ptr, n, NULL);
        if (rc == CDSH_ETOOBIG)
            ctx->too_big = true;
        return rc == 0 ? n : 0;
    }
    if (ctx->body.len + n > ctx->max) {
        ctx->too_big = true;
        return 0;
    }
    return cdsh_strbuf_append(&ctx->body, ptr, n) == 0 ? n : 0;
}

static size_t http_header(char *buf, size_t size, size_t nitems, void *ud)
{
    http_ctx *ctx = ud;
    size_t n = size * nitems;
    if (n > 13 && strncasecmp(buf, "content-type:", 13) == 0) {
        const char *v = buf + 13;
        while (*v == ' ')
            v++;
        ctx->is_sse = strncasecmp(v, "text/event-stream", 17) == 0;
    } else if (n > 15 && strncasecmp(buf, "mcp-session-id:", 15) == 0) {
        const char *v = buf + 15;
        size_t l = n - 15;
        while (l && (*v == ' '))
            v++, l--;
        while (l && (v[l - 1] == '\r' || v[l - 1] == '\n' || v[l - 1] == ' '))
            l--;
        free(ctx->session_id);
        ctx->session_id = strndup(v, l);
    }
    return n;
}

static int http_xfer(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    http_ctx *ctx = ud;
    if (cdsh_cancel_is_fired(ctx->cancel)) {
        ctx->cancelled = true;
        return 1;
    }
    if (ctx->deadline && cdsh_clock_mono_ms() >= ctx->deadline) {
        ctx->timed_out = true;
        return 1;
    }
    return 0;
}

static struct curl_slist *http_headers(conn *c, bool get)
{
    cdsh_mcp_client *cl = c->client;
    struct curl_slist *h = NULL, *t;
#define ADD(s)                                                                                     \
    do {                                                                                           \
        if (!(t = cdsh_curl_get()->slist_append(h, (s))))                                          \
            goto fail;                                                                             \
        h = t;                                                                                     \
    } while (0)
    char line[1200];
    if (!get)
        ADD("Content-Type: application/json");
    ADD(get ? "Accept: text/event-stream" : "Accept: application/json, text/event-stream");
    if (c->session_id) {
        snprintf(line, sizeof line, "Mcp-Session-Id: %s", c->session_id);
        ADD(line);
    }
    if (c->version) {
        snprintf(line, sizeof line, "MCP-Protocol-Version: %s", c->version);
        ADD(line);
    }
    if (cl->bearer) {
        snprintf(line, sizeof line, "Authorization: Bearer %s", cl->bearer);
        ADD(line);
    }
    const char *k;
    json_t *v;
    json_object_foreach(cl->headers, k, v) {
        snprintf(line, sizeof line, "%s: %s", k, json_string_value(v));
        ADD(line);
    }
#undef ADD
    return h;
fail:
    cdsh_curl_get()->slist_free_all(h);
    return NULL;
}

static CURL *http_easy(conn *c, http_ctx *ctx, struct curl_slist *hdrs, char *errbuf)
{
    CURL *e = cdsh_curl_get()->easy_init();
    if (!e)
        return NULL;
    cdsh_curl_get()->easy_setopt(e, CURLOPT_URL, c->client->url);
    cdsh_curl_get()->easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
    cdsh_curl_get()->easy_setopt(e, CURLOPT_WRITEFUNCTION, http_write);
    cdsh_curl_get()->easy_setopt(e, CURLOPT_WRITEDATA, ctx);
    cdsh_curl_get()->easy_setopt(e, CURLOPT_HEADERFUNCTION, http_header);
    cdsh_curl_get()->easy_setopt(e, CURLOPT_HEADERDATA, ctx);
    cdsh_curl_get()->easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    cdsh_curl_get()->easy_setopt(e, CURLOPT_XFERINFOFUNCTION, http_xfer);
    cdsh_curl_get()->easy_setopt(e, CURLOPT_XFERINFODATA, ctx);
    cdsh_curl_get()->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    cdsh_curl_get()->easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    cdsh_curl_get()->easy_setopt(e, CURLOPT_SHARE, c->share);
    cdsh_curl_get()->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    cdsh_curl_get()->easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    return e;
}

/* POSTs one message. For a request (ctx->want_id set) fills ctx->response. */
static int http_post_msg(conn *c, json_t *msg, http_ctx *ctx, cdsh_error *err)
{
    cdsh_mcp_client *cl = c->client;
    char *text = cdsh_json_dump_compact_dup(msg);
    struct curl_slist *hdrs = http_headers(c, false);
    char errbuf[CURL_ERROR_SIZE] = "";
    CURL *e = NULL;
    int rc = 0;
    if (!text || !hdrs) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto out;
    }
    if (!(e = http_easy(c, ctx, hdrs, errbuf))) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto out;
    }
    cdsh_curl_get()->easy_setopt(e, CURLOPT_POSTFIELDS, text);
    CURLcode cc = cdsh_curl_get()->easy_perform(e);
    long status = 0;
    cdsh_curl_get()->easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    if (ctx->cancelled) {
        rc = cdsh_error_set(err, CDSH_ECANCELED, "CANCELED", "%s",
                            cdsh_cancel_reason(ctx->cancel) ? cdsh_cancel_reason(ctx->cancel)
                                                            : "cancelled");
        goto out;
    }
    if (ctx->timed_out) {
        rc = cdsh_error_set(err, CDSH_ETIMEDOUT, "TIMEOUT", "timed out");
        goto out;
    }
    if (ctx->too_big) {
        rc = cdsh_error_set(err, CDSH_ETOOBIG, "MESSAGE_TOO_BIG",
                            "MCP server \"%s\" sent a message over %zu bytes", cl->name, ctx->max);
        goto out;
    }
    if (cc != CURLE_OK && !(cc == CURLE_WRITE_ERROR && ctx->response)) {
        rc =
            cdsh_error_set(err, CDSH_ECLOSED, "HTTP_ERROR", "MCP server \"%s\" at %s: %s", cl->name,
                           cl->url, errbuf[0] ? errbuf : cdsh_curl_get()->easy_strerror(cc));
        goto out;
    }
    if (status == 404 && c->session_id) {
        rc =
            cdsh_error_set(err, CDSH_ECLOSED, "SESSION_EXPIRED",
                           "MCP server \"%s\" no longer knows session %s", cl->name, c->session_id);
        goto out;
    }
    if (status < 200 || status >= 300) {
        char snippet[200];
        snprintf(snippet, sizeof snippet, "%.*s", (int)(ctx->body.len < 160 ? ctx->body.len : 160),
                 ctx->body.data);
        rc = cdsh_error_set(err, CDSH_EIO, "HTTP_ERROR", "MCP server \"%s\" answered HTTP %ld%s%s",
                            cl->name, status, snippet[0] ? ": " : "", snippet);
        goto out;
    }
    if (ctx->want_id && !ctx->response && !ctx->is_sse && ctx->body.len) {
        json_t *v = NULL;
        cdsh_mcp_msg m;
        cdsh_error perr = {0};
        if (cdsh_mcp_msg_parse(ctx->body.data, ctx->body.len, &v, &m, &perr) != 0) {
            rc =
                cdsh_error_set(err, CDSH_EPROTO, "BAD_RESPONSE",
                               "MCP server \"%s\" sent a bad response: %s", cl->name, perr.message);
            goto out;
        }
        if ((m.kind == CDSH_MCP_MSG_RESULT || m.kind == CDSH_MCP_MSG_ERROR) &&
            json_equal((json_t *)m.id, (json_t *)ctx->want_id))
            ctx->response = v;
        else
            json_decref(v);
    }
    if (ctx->want_id && !ctx->response)
        rc = cdsh_error_set(err, CDSH_EPROTO, "BAD_RESPONSE",
                            "MCP server \"%s\" answered without a JSON-RPC response", cl->name);
out:
    if (e)
        cdsh_curl_get()->easy_cleanup(e);
    cdsh_curl_get()->slist_free_all(hdrs);
    free(text);
    cdsh_sse_free(ctx->sse);
    ctx->sse = NULL;
    return rc;
}

static int http_request(conn *c, const char *method, json_t *params, int64_t timeout_ms,
                        cdsh_cancel *cancel, json_t **result, cdsh_jsonrpc_remote_error *rerr,
                        cdsh_error *err)
{
    pthread_mutex_lock(&c->id_lock);
    int64_t id = ++c->next_id;
    pthread_mutex_unlock(&c->id_lock);
    json_t *jid = json_integer(id);
    json_t *msg = json_pack("{s:s,s:O,s:s}", "jsonrpc", "2.0", "id", jid, "method", method);
    if (msg && params)
        json_object_set(msg, "params", params);
    http_ctx ctx = {.c = c, .want_id = jid, .max = c->client->max_message, .cancel = cancel};
    ctx.deadline = timeout_ms >= 0 ? cdsh_clock_mono_ms() + timeout_ms : 0;
    cdsh_strbuf_init(&ctx.body);
    int rc = msg ? http_post_msg(c, msg, &ctx, err)
                 : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    if (rc == 0 && strcmp(method, "initialize") == 0 && ctx.session_id) {
        free(c->session_id);
        c->session_id = ctx.session_id;
        ctx.session_id = NULL;
    }
    if ((rc == CDSH_ECANCELED || rc == CDSH_ETIMEDOUT) && strcmp(method, "initialize") != 0) {
        json_t *note = json_pack("{s:s,s:s,s:{s:O,s:s}}", "jsonrpc", "2.0", "method",
                                 "notifications/cancelled", "params", "requestId", jid, "reason",
                                 rc == CDSH_ETIMEDOUT ? "timeout" : "cancelled");
        http_ctx sub = {.c = c, .max = 1 << 20};
        cdsh_strbuf_init(&sub.body);
        if (note)
            http_post_msg(c, note, &sub, NULL);
        cdsh_strbuf_deinit(&sub.body);
        free(sub.session_id);
        json_decref(note);
    }
    if (rc == 0) {
        cdsh_mcp_msg m;
        cdsh_mcp_msg_classify(ctx.response, &m, NULL);
        if (m.kind == CDSH_MCP_MSG_ERROR) {
            if (rerr) {
                rerr->code = m.error_code;
                rerr->message = strdup(m.error_message);
                json_t *d = json_object_get(json_object_get(ctx.response, "error"), "data");
                rerr->data = d ? json_incref(d) : NULL;
            }
            rc = cdsh_error_set(err, CDSH_EPROTO, "RPC_ERROR", "%s", m.error_message);
        } else {
            *result = json_incref((json_t *)m.result);
        }
    }
    json_decref(ctx.response);
    cdsh_strbuf_deinit(&ctx.body);
    free(ctx.session_id);
    json_decref(msg);
    json_decref(jid);
    return rc;
}

static int http_notify(conn *c, const char *method, json_t *params, cdsh_error *err)
{
    json_t *msg = json_pack("{s:s,s:s}", "jsonrpc", "2.0", "method", method);
    if (msg && params)
        json_object_set(msg, "params", params);
    http_ctx ctx = {.c = c, .max = 1 << 20};
    cdsh_strbuf_init(&ctx.body);
    int rc = msg ? http_post_msg(c, msg, &ctx, err) : CDSH_ENOMEM;
    cdsh_strbuf_deinit(&ctx.body);
    free(ctx.session_id);
    json_decref(msg);
    return rc;
}

/* The optional GET stream for server-initiated notifications. */
static void *http_get_stream(void *arg)
{
    conn *c = arg;
    http_ctx ctx = {.c = c, .max = c->client->max_message, .cancel = c->stop};
    cdsh_strbuf_init(&ctx.body);
    struct curl_slist *hdrs = http_headers(c, true);
    char errbuf[CURL_ERROR_SIZE] = "";
    CURL *e = hdrs ? http_easy(c, &ctx, hdrs, errbuf) : NULL;
    if (e) {
        cdsh_curl_get()->easy_setopt(e, CURLOPT_HTTPGET, 1L);
        cdsh_curl_get()->easy_perform(e); /* ends on 405, server close or our stop token */
        cdsh_curl_get()->easy_cleanup(e);
    }
    cdsh_curl_get()->slist_free_all(hdrs);
    cdsh_sse_free(ctx.sse);
    cdsh_strbuf_deinit(&ctx.body);
    free(ctx.session_id);
    return NULL;
}

static int http_open(conn *c, cdsh_error *err)
{
    int rc = cdsh_curl_load(err);
    if (rc)
        return rc;
    if (pthread_mutex_init(&c->share_lock, NULL) != 0)
        return cdsh_error_set(err, CDSH_EIO, "MUTEX", "cannot create a mutex");
    c->share = cdsh_curl_get()->share_init();
    if (!c->share)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    cdsh_curl_get()->share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
    cdsh_curl_get()->share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    cdsh_curl_get()->share_setopt(c->share, CURLSHOPT_USERDATA, c);
    cdsh_curl_get()->share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    return 0;
}

/* ---- connection-level requests ----------------------------------------------------- */

static int conn_request(conn *c, const char *method, json_t *params, int64_t timeout_ms,
                        cdsh_cancel *cancel, json_t **result, cdsh_jsonrpc_remote_error *rerr,
                        cdsh_error *err)
{
    if (c->http)
        return http_request(c, method, params, timeout_ms, cancel, result, rerr, err);
    int rc = cdsh_jsonrpc_call(c->peer, method, params, timeout_ms, cancel, result, rerr, err);
    if (rc == CDSH_ECLOSED)
        return stdio_closed_error(c, method, err);
    return rc;
}

static int conn_notify(conn *c, const char *method, json_t *params, cdsh_error *err)
{
    if (c->http)
        return http_notify(c, method, params, err);
    return cdsh_jsonrpc_notify(c->peer, method, params, err);
}

static void conn_destroy(conn *c)
{
    if (!c)
        return;
    if (c->stop)
        cdsh_cancel_fire(c->stop, "closing");
    if (c->get_started)
        pthread_join(c->get_thread, NULL);
    if (c->http && c->session_id) {
        /* End the session politely; a 405 is fine. */
        struct curl_slist *h = http_headers(c, false);
        http_ctx ctx = {.c = c, .max = 1 << 16};
        cdsh_strbuf_init(&ctx.body);
        ctx.deadline = cdsh_clock_mono_ms() + 2000;
        char eb[CURL_ERROR_SIZE];
        CURL *e = h ? http_easy(c, &ctx, h, eb) : NULL;
        if (e) {
            cdsh_curl_get()->easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
            cdsh_curl_get()->easy_perform(e);
            cdsh_curl_get()->easy_cleanup(e);
        }
        cdsh_curl_get()->slist_free_all(h);
        cdsh_sse_free(ctx.sse);
        cdsh_strbuf_deinit(&ctx.body);
        free(ctx.session_id);
    }
    cdsh_jsonrpc_free(c->peer); /* before closing stdin: the peer writes to it */
    if (c->proc) {
        cdsh_process_close_stdin(c->proc);
        if (cdsh_process_wait(c->proc, 2000, NULL, NULL, NULL) != 0)
            cdsh_process_terminate(c->proc, 2000, NULL, NULL);
    }
    if (c->err_started)
        pthread_join(c->err_thread, NULL);
    cdsh_process_free(c->proc);
    if (c->share)
        cdsh_curl_get()->share_cleanup(c->share);
    if (c->http)
        pthread_mutex_destroy(&c->share_lock);
    cdsh_cancel_free(c->stop);
    pthread_cond_destroy(&c->drain_cv);
    pthread_mutex_destroy(&c->tail_lock);
    pthread_mutex_destroy(&c->id_lock);
    free(c->session_id);
    free(c->version);
    free(c->instructions);
    json_decref(c->server_info);
    json_decref(c->caps);
    free(c);
}

static int list_all(cdsh_mcp_client *cl, conn *c, int64_t timeout_ms, cdsh_cancel *cancel,
                    json_t **out, cdsh_error *err);

/* A new connection: transport, initialize, initialized, first tools/list. */
static int conn_open(cdsh_mcp_client *cl, conn **out, json_t **tools, cdsh_error *err)
{
    *out = NULL;
    conn *c = calloc(1, sizeof *c);
    if (!c)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    c->refs = 1;
    c->client = cl;
    c->http = cl->url != NULL;
    pthread_mutex_init(&c->tail_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->drain_cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&c->id_lock, NULL);
    json_t *params = NULL, *res = NULL;
    cdsh_jsonrpc_remote_error rerr = {0};
    int rc = c->http ? http_open(c, err) : stdio_open(c, err);
    if (rc != 0)
        goto fail;
    params = json_pack("{s:s,s:{},s:{s:s,s:s}}", "protocolVersion", CDSH_MCP_LATEST_LEGACY,
                       "capabilities", "clientInfo", "name", "cdsh", "version", CDSH_VERSION);
    rc = conn_request(c, "initialize", params, cl->init_timeout_ms, cl->shutdown, &res, &rerr, err);
    if (rc == CDSH_ETIMEDOUT) {
        rc = cdsh_error_set(err, CDSH_ETIMEDOUT, "INIT_TIMEOUT",
                            "MCP server \"%s\" did not answer initialize within %lld ms", cl->name,
                            (long long)cl->init_timeout_ms);
        goto fail;
    }
    if (rc == CDSH_EPROTO && rerr.message) {
        rc = cdsh_error_set(err, CDSH_EPROTO, "INIT_FAILED",
                            "MCP server \"%s\" refused initialize: %s (code %lld)", cl->name,
                            rerr.message, (long long)rerr.code);
        goto fail;
    }
    if (rc != 0)
        goto fail;
    const char *ver = json_string_value(json_object_get(res, "protocolVersion"));
    if (!json_is_object(res) || !ver) {
        rc = cdsh_error_set(err, CDSH_EPROTO, "INIT_FAILED",
                            "MCP server \"%s\" answered initialize without a protocolVersion",
                            cl->name);
        goto fail;
    }
    if (!cdsh_mcp_version_known(ver) || cdsh_mcp_version_is_modern(ver)) {
        rc = cdsh_error_set(err, CDSH_EPROTO, "BAD_VERSION",
                            "MCP server \"%s\" wants protocol version %.40s, which cdsh does not "
                            "speak",
                            cl->name, ver);
        goto fail;
    }
    c->version = strdup(ver);
    c->server_info = json_incref(json_object_get(res, "serverInfo"));
    json_t *caps = json_object_get(res, "capabilities");
    c->caps = json_is_object(caps) ? json_incref(caps) : json_object();
    const char *instr = json_string_value(json_object_get(res, "instructions"));
    if (instr && strlen(instr) > cl->max_instr) {
        rc = cdsh_error_set(err, CDSH_ETOOBIG, "INSTRUCTIONS_TOO_LARGE",
                            "MCP server \"%s\" sent %zu bytes of instructions (limit %zu)",
                            cl->name, strlen(instr), cl->max_instr);
        goto fail;
    }
    c->instructions = instr ? strdup(instr) : NULL;
    if ((rc = conn_notify(c, "notifications/initialized", NULL, err)) != 0)
        goto fail;
    if (c->http) {
        if (!(c->stop = cdsh_cancel_new(NULL))) {
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
            goto fail;
        }
        if (pthread_create(&c->get_thread, NULL, http_get_stream, c) == 0)
            c->get_started = true;
    }
    if (json_object_get(c->caps, "tools")) {
        if ((rc = list_all(cl, c, cl->init_timeout_ms, cl->shutdown, tools, err)) != 0)
            goto fail;
    } else {
        *tools = json_array();
    }
    json_decref(params);
    json_decref(res);
    *out = c;
    return 0;
fail:
    cdsh_jsonrpc_remote_error_clear(&rerr);
    json_decref(params);
    json_decref(res);
    c->lost = true;
    conn_destroy(c);
    return rc;
}

/* ---- tools/list -------------------------------------------------------------------- */

static int list_all(cdsh_mcp_client *cl, conn *c, int64_t timeout_ms, cdsh_cancel *cancel,
                    json_t **out, cdsh_error *err)
{
    json_t *all = json_array(), *seen = json_object();
    char *cursor = NULL;
    int rc = 0;
    if (!all || !seen) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto out;
    }
    for (int page = 0;; page++) {
        if (page >= MAX_PAGES) {
            rc = cdsh_error_set(err, CDSH_EPROTO, "BAD_TOOLS",
                                "MCP server \"%s\" kept paging tools/list past %d pages", cl->name,
                                MAX_PAGES);
            goto out;
        }
        json_t *params = cursor ? json_pack("{s:s}", "cursor", cursor) : NULL;
        json_t *res = NULL;
        cdsh_jsonrpc_remote_error rerr = {0};
        rc = conn_request(c, "tools/list", params, timeout_ms, cancel, &res, &rerr, err);
        json_decref(params);
        if (rc == CDSH_EPROTO && rerr.message)
            cdsh_error_set(err, CDSH_EPROTO, "RPC_ERROR",
                           "MCP server \"%s\" refused tools/list: %s (code %lld)", cl->name,
                           rerr.message, (long long)rerr.code);
        cdsh_jsonrpc_remote_error_clear(&rerr);
        if (rc != 0)
            goto out;
        json_t *tools = json_object_get(res, "tools");
        if (!json_is_array(tools)) {
            json_decref(res);
            rc = cdsh_error_set(err, CDSH_EPROTO, "BAD_TOOLS",
                                "MCP server \"%s\" answered tools/list without a tools array",
                                cl->name);
            goto out;
        }
        size_t i;
        json_t *t;
        json_array_foreach(tools, i, t) {
            cdsh_error terr = {0};
            if (cdsh_mcp_tool_check(t, &terr) != 0) {
                json_decref(res);
                rc = cdsh_error_set(err, CDSH_EPROTO, "BAD_TOOLS", "MCP server \"%s\": %s",
                                    cl->name, terr.message);
                goto out;
            }
            const char *nm = json_string_value(json_object_get(t, "name"));
            if (json_object_get(seen, nm)) {
                rc = cdsh_error_set(err, CDSH_EPROTO, "BAD_TOOLS",
                                    "MCP server \"%s\" listed tool \"%s\" more than once", cl->name,
                                    nm);
                json_decref(res);
                goto out;
            }
            json_object_set_new(seen, nm, json_true());
            json_array_append(all, t);
        }
        const char *next = json_string_value(json_object_get(res, "nextCursor"));
        bool same = next && cursor && strcmp(next, cursor) == 0;
        free(cursor);
        cursor = next && *next ? strdup(next) : NULL;
        json_decref(res);
        if (same) {
            rc = cdsh_error_set(err, CDSH_EPROTO, "BAD_TOOLS",
                                "MCP server \"%s\" returned the same tools/list cursor twice",
                                cl->name);
            goto out;
        }
        if (!cursor)
            break;
    }
out:
    free(cursor);
    json_decref(seen);
    if (rc != 0) {
        json_decref(all);
        all = NULL;
    }
    *out = all;
    return rc;
}

/* ---- reconnect ------------------------------------------------------------------------ */

static void *reconnect_main(void *arg)
{
    cdsh_mcp_client *cl = arg;
    int64_t delay = cl->rc_initial;
    for (int attempt = 0; attempt < cl->rc_attempts; attempt++) {
        if (cdsh_cancel_wait(cl->shutdown, delay))
            break;
        delay = delay * 2 > cl->rc_max ? cl->rc_max : delay * 2;
        conn *c = NULL;
        json_t *tools = NULL;
        cdsh_error err = {0};
        if (conn_open(cl, &c, &tools, &err) != 0) {
            cdsh_log_warn("mcp", "reconnecting to \"%s\" (attempt %d of %d) failed: %s", cl->name,
                          attempt + 1, cl->rc_attempts, err.message);
            continue;
        }
        pthread_mutex_lock(&cl->lock);
        conn *old = cl->cur;
        bool closing = cl->closing;
        if (!closing) {
            cl->cur = c;
            json_decref(cl->tools);
            cl->tools = tools;
            tools = NULL;
        }
        cl->recon_running = false;
        pthread_mutex_unlock(&cl->lock);
        json_decref(tools);
        if (closing) {
            conn_put(c);
            return NULL;
        }
        conn_put(old);
        emit(cl, CDSH_MCP_EVENT_RECONNECTED);
        emit(cl, CDSH_MCP_EVENT_TOOLS_CHANGED);
        return NULL;
    }
    pthread_mutex_lock(&cl->lock);
    cl->recon_running = false;
    bool closing = cl->closing;
    if (!closing)
        cl->gave_up = true;
    pthread_mutex_unlock(&cl->lock);
    if (!closing) {
        cdsh_log_error("mcp", "gave up reconnecting to \"%s\"", cl->name);
        emit(cl, CDSH_MCP_EVENT_GAVE_UP);
    }
    return NULL;
}

static void start_reconnect(cdsh_mcp_client *cl)
{
    pthread_mutex_lock(&cl->lock);
    if (cl->closing || cl->recon_running || cl->gave_up) {
        pthread_mutex_unlock(&cl->lock);
        return;
    }
    if (cl->recon_joinable) {
        /* the previous reconnect thread has finished (recon_running is false) */
        pthread_join(cl->recon_thread, NULL);
        cl->recon_joinable = false;
    }
    cl->recon_running = true;
    if (pthread_create(&cl->recon_thread, NULL, reconnect_main, cl) == 0)
        cl->recon_joinable = true;
    else
        cl->recon_running = false;
    pthread_mutex_unlock(&cl->lock);
}

/* ---- public API ------------------------------------------------------------------------- */

static void client_free_fields(cdsh_mcp_client *cl)
{
    if (cl->argv)
        for (size_t i = 0; cl->argv[i]; i++)
            free(cl->argv[i]);
    free(cl->argv);
    free(cl->name);
    json_decref(cl->env);
    json_decref(cl->headers);
    free(cl->cwd);
    free(cl->url);
    free(cl->bearer);
    json_decref(cl->tools);
    cdsh_cancel_free(cl->shutdown);
    pthread_mutex_destroy(&cl->lock);
    pthread_mutex_destroy(&cl->plock);
    free(cl);
}

static bool strings_object(const json_t *o)
{
    const char *k;
    json_t *v;
    if (!o)
        return true;
    if (!json_is_object(o))
        return false;
    json_object_foreach((json_t *)o, k, v) {
        if (!json_is_string(v) || strpbrk(k, "\r\n:") || strpbrk(json_string_value(v), "\r\n"))
            return false;
    }
    return true;
}

int cdsh_mcp_client_connect(const cdsh_mcp_client_opts *opts, cdsh_mcp_client **out,
                            cdsh_error *err)
{
    if (!out || !opts || !opts->name || !*opts->name)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT",
                              "an MCP client needs options with a server name");
    *out = NULL;
    if ((opts->argv == NULL) == (opts->url == NULL) || (opts->argv && !opts->argv[0]))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT",
                              "MCP server \"%s\": give either a command or a URL", opts->name);
    if (opts->url && strncmp(opts->url, "http://", 7) != 0 &&
        strncmp(opts->url, "https://", 8) != 0)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_URL",
                              "MCP server \"%s\": URL must start with http:// or https://",
                              opts->name);
    if (!strings_object(opts->env) || !strings_object(opts->headers))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT",
                              "MCP server \"%s\": env and headers must map names to one-line "
                              "strings",
                              opts->name);
    cdsh_mcp_client *cl = calloc(1, sizeof *cl);
    if (!cl)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    pthread_mutex_init(&cl->lock, NULL);
    pthread_mutex_init(&cl->plock, NULL);
    cl->name = strdup(opts->name);
    cl->shutdown = cdsh_cancel_new(NULL);
    bool oom = !cl->name || !cl->shutdown;
    if (opts->argv) {
        size_t n = 0;
        while (opts->argv[n])
            n++;
        cl->argv = calloc(n + 1, sizeof *cl->argv);
        oom |= !cl->argv;
        for (size_t i = 0; cl->argv && i < n; i++)
            oom |= !(cl->argv[i] = strdup(opts->argv[i]));
    }
    cl->env = opts->env ? json_deep_copy(opts->env) : json_object();
    cl->headers = opts->headers ? json_deep_copy(opts->headers) : json_object();
    oom |= !cl->env || !cl->headers;
    if (opts->cwd)
        oom |= !(cl->cwd = strdup(opts->cwd));
    if (opts->url)
        oom |= !(cl->url = strdup(opts->url));
    if (opts->bearer_token)
        oom |= !(cl->bearer = strdup(opts->bearer_token));
    if (oom) {
        client_free_fields(cl);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    cl->init_timeout_ms = opts->init_timeout_ms > 0 ? opts->init_timeout_ms : 30000;
    cl->call_timeout_ms =
        opts->call_timeout_ms > 0 ? opts->call_timeout_ms : CDSH_MCP_CALL_TIMEOUT_MS;
    cl->max_instr =
        opts->max_instruction_bytes ? opts->max_instruction_bytes : CDSH_MCP_MAX_INSTRUCTIONS;
    cl->max_message = opts->max_message ? opts->max_message : CDSH_MCP_MAX_MESSAGE;
    cl->stderr_inherit = opts->stderr_inherit;
    cl->reconnect = opts->reconnect;
    cl->rc_initial = opts->reconnect_initial_ms > 0 ? opts->reconnect_initial_ms : 500;
    cl->rc_max = opts->reconnect_max_ms > 0 ? opts->reconnect_max_ms : 30000;
    cl->rc_attempts = opts->reconnect_max_attempts > 0 ? opts->reconnect_max_attempts : 10;
    cl->on_event = opts->on_event;
    cl->event_arg = opts->event_arg;

    conn *c = NULL;
    json_t *tools = NULL;
    int rc = conn_open(cl, &c, &tools, err);
    if (rc != 0) {
        client_free_fields(cl);
        return rc;
    }
    cl->cur = c;
    cl->tools = tools;
    *out = cl;
    return 0;
}

void cdsh_mcp_client_free(cdsh_mcp_client *cl)
{
    if (!cl)
        return;
    pthread_mutex_lock(&cl->lock);
    cl->closing = true;
    conn *c = cl->cur;
    cl->cur = NULL;
    bool join = cl->recon_joinable;
    pthread_mutex_unlock(&cl->lock);
    cdsh_cancel_fire(cl->shutdown, "client closed");
    if (join)
        pthread_join(cl->recon_thread, NULL);
    conn_put(c);
    client_free_fields(cl);
}

const char *cdsh_mcp_client_name(const cdsh_mcp_client *cl)
{
    return cl ? cl->name : NULL;
}

bool cdsh_mcp_client_is_connected(cdsh_mcp_client *cl)
{
    pthread_mutex_lock(&cl->lock);
    bool up = cl->cur && !cl->cur->lost;
    pthread_mutex_unlock(&cl->lock);
    return up;
}

#define CONN_FIELD_DUP(fn, type, expr)                                                             \
    type fn(cdsh_mcp_client *cl)                                                                   \
    {                                                                                              \
        conn *c = conn_get(cl);                                                                    \
        type v = c ? (expr) : NULL;                                                                \
        conn_put(c);                                                                               \
        return v;                                                                                  \
    }
CONN_FIELD_DUP(cdsh_mcp_client_version_dup, char *, c->version ? strdup(c->version) : NULL)
CONN_FIELD_DUP(cdsh_mcp_client_server_info_dup, json_t *, json_deep_copy(c->server_info))
CONN_FIELD_DUP(cdsh_mcp_client_instructions_dup, char *,
               c->instructions ? strdup(c->instructions) : NULL)

json_t *cdsh_mcp_client_tools_dup(cdsh_mcp_client *cl)
{
    pthread_mutex_lock(&cl->lock);
    json_t *t = json_deep_copy(cl->tools);
    pthread_mutex_unlock(&cl->lock);
    return t;
}

static conn *live_conn(cdsh_mcp_client *cl, cdsh_error *err)
{
    conn *c = conn_get(cl);
    if (!c || c->lost) {
        conn_put(c);
        cdsh_error_set(err, CDSH_ECLOSED, "DISCONNECTED", "MCP server \"%s\" is not connected%s",
                       cl->name, cl->reconnect ? " (reconnecting)" : "");
        return NULL;
    }
    return c;
}

/* Lists every page again and replaces the cache (a failure keeps the old
 * one). Duplicate names: CDSH_EPROTO code "BAD_TOOLS" `MCP server "<s>"
 * listed tool "<t>" more than once`. Endless cursors are cut after 1000
 * pages (CDSH_EPROTO "BAD_TOOLS"). */
static int cdsh_mcp_client_refresh_tools(cdsh_mcp_client *cl, cdsh_cancel *cancel, cdsh_error *err)
{
    conn *c = live_conn(cl, err);
    if (!c)
        return CDSH_ECLOSED;
    json_t *tools = NULL;
    int rc = list_all(cl, c, cl->call_timeout_ms, cancel, &tools, err);
    if (rc == CDSH_ECLOSED && c->http)
        conn_lost(c);
    conn_put(c);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&cl->lock);
    json_decref(cl->tools);
    cl->tools = tools;
    pthread_mutex_unlock(&cl->lock);
    emit(cl, CDSH_MCP_EVENT_TOOLS_CHANGED);
    return 0;
}

int cdsh_mcp_client_ping(cdsh_mcp_client *cl, int64_t timeout_ms, cdsh_error *err)
{
    conn *c = live_conn(cl, err);
    if (!c)
        return CDSH_ECLOSED;
    json_t *res = NULL;
    int rc = conn_request(c, "ping", NULL, timeout_ms, NULL, &res, NULL, err);
    json_decref(res);
    conn_put(c);
    return rc;
}

static const json_t *find_tool(const json_t *tools, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        const char *n = json_string_value(json_object_get(t, "name"));
        if (n && strcmp(n, name) == 0)
            return t;
    }
    return NULL;
}

int cdsh_mcp_client_call(cdsh_mcp_client *cl, const char *tool, const json_t *args,
                         const cdsh_mcp_call_opts *opts, json_t **result, cdsh_error *err)
{
    if (!cl || !tool || !result)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT",
                              "cdsh_mcp_client_call: NULL argument");
    *result = NULL;
    cdsh_mcp_call_opts none = {0};
    if (!opts)
        opts = &none;
    int64_t timeout = opts->timeout_ms == 0 ? cl->call_timeout_ms : opts->timeout_ms;
    pthread_mutex_lock(&cl->lock);
    bool task = cdsh_mcp_tool_requires_task(find_tool(cl->tools, tool));
    pthread_mutex_unlock(&cl->lock);
    if (task)
        return cdsh_error_set(err, CDSH_EUNSUPPORTED, "TASK_REQUIRED",
                              "MCP tool \"%s\" on server \"%s\" requires task-based execution, "
                              "which cdsh does not support",
                              tool, cl->name);
    conn *c = live_conn(cl, err);
    if (!c)
        return CDSH_ECLOSED;
    json_t *a = json_is_object(args) ? json_deep_copy(args) : json_object();
    json_t *params = a ? json_pack("{s:s,s:o}", "name", tool, "arguments", a) : NULL;
    progress_slot slot = {0};
    if (params && opts->on_progress) {
        pthread_mutex_lock(&cl->plock);
        snprintf(slot.token, sizeof slot.token, "cdsh-%llu", (unsigned long long)++cl->next_token);
        slot.fn = opts->on_progress;
        slot.arg = opts->progress_arg;
        slot.next = cl->slots;
        /* A stack node: unlinked below before this function returns. */
        // cppcheck-suppress autoVariables
        cl->slots = &slot;
        pthread_mutex_unlock(&cl->plock);
        json_object_set_new(params, "_meta", json_pack("{s:s}", "progressToken", slot.token));
    }
    json_t *res = NULL;
    cdsh_jsonrpc_remote_error rerr = {0};
    int rc = params ? conn_request(c, "tools/call", params, timeout, opts->cancel, &res, &rerr, err)
                    : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    if (opts->on_progress) {
        pthread_mutex_lock(&cl->plock);
        for (progress_slot **p = &cl->slots; *p; p = &(*p)->next)
            if (*p == &slot) {
                *p = slot.next;
                break;
            }
        pthread_mutex_unlock(&cl->plock);
    }
    if (rc == CDSH_ETIMEDOUT)
        cdsh_error_set(err, rc, "TIMEOUT",
                       "MCP tool \"%s\" on server \"%s\" timed out after %lld ms", tool, cl->name,
                       (long long)timeout);
    else if (rc == CDSH_EPROTO && rerr.message)
        cdsh_error_set(err, rc, "RPC_ERROR",
                       "MCP server \"%s\" refused tools/call %s: %s (code %lld)", cl->name, tool,
                       rerr.message, (long long)rerr.code);
    if (rc == CDSH_ECLOSED && c->http)
        conn_lost(c);
    cdsh_jsonrpc_remote_error_clear(&rerr);
    json_decref(params);
    conn_put(c);
    if (rc != 0)
        return rc;
    cdsh_error cerr = {0};
    bool legacy = false;
    if (cdsh_mcp_call_result_check(res, &legacy, &cerr) != 0) {
        json_decref(res);
        return cdsh_error_set(err, CDSH_EPROTO, "BAD_RESULT", "MCP server \"%s\", tool \"%s\": %s",
                              cl->name, tool, cerr.message);
    }
    if (legacy) {
        /* Old-style result without content: one text block with its JSON. */
        char *text = cdsh_json_dump_compact_dup(
            json_object_get(res, "toolResult") ? json_object_get(res, "toolResult") : res);
        json_t *fixed = cdsh_mcp_text_result_new(text ? text : "", NULL, false);
        free(text);
        json_decref(res);
        res = fixed;
    }
    *result = res;
    return res ? 0 : CDSH_ENOMEM;
}
