/* mcp_server.c — MCP server core: per-connection sessions, the legacy
 * lifecycle and the stateless 2026-07-28 request model, tools/list paging,
 * tools/call with progress and cancellation, and the stdio transport on top
 * of base/jsonrpc. Knows nothing of the tool kernel (see mcp_bridge.c) or of
 * HTTP (src/server/mcp_http.c). */
#include "proto/mcp/mcp_server.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "proto/jsonrpc.h"
#include "base/log.h"
#include "proto/mcp/mcp.h"

#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_SERVER_INFO "io.modelcontextprotocol/serverInfo"
#define META_SUBSCRIPTION "io.modelcontextprotocol/subscriptionId"

/* A request in flight: a tools/call, or an open subscriptions/listen (which
 * ends when its token fires). */
typedef struct inflight {
    json_t *id;
    cdsh_cancel *cancel;
    bool listen_tools; /* a subscription that asked for toolsListChanged */
    struct inflight *next;
} inflight;

typedef struct pool_job {
    void (*fn)(void *);
    void *arg;
    struct pool_job *next;
} pool_job;

struct cdsh_mcp_server {
    cdsh_mcp_provider p;
    char *name, *version, *instructions;
    size_t page_size;
    pthread_mutex_t lock; /* sessions list, subscriptions count */
    cdsh_mcp_session *sessions;
    int subscriptions;
    /* The worker pool: at most `workers` threads, started as jobs arrive,
     * running queued jobs in order. */
    pthread_mutex_t pool_lock;
    pthread_cond_t pool_cond;
    pool_job *queue, **queue_tail;
    pthread_t *threads;
    size_t workers, started, idle;
    bool pool_stop;
};

struct cdsh_mcp_session {
    cdsh_mcp_server *server;
    cdsh_mcp_send_fn send;
    void *send_arg;
    void *ud;
    pthread_mutex_t lock; /* fields below */
    pthread_cond_t idle;
    char version[16];
    bool initialized, closing;
    inflight *calls;
    int running;
    char log_level[16];
    cdsh_mcp_session *next; /* in server->sessions, under server->lock */
};

struct cdsh__mcp_call {
    json_t *token; /* progressToken or NULL */
    double last;
    bool any;
    pthread_mutex_t lock;
};

/* ---- server ------------------------------------------------------------------ */

cdsh_mcp_server *cdsh_mcp_server_new(const cdsh_mcp_provider *provider,
                                     const cdsh_mcp_server_opts *opts, cdsh_error *err)
{
    if (!provider || !provider->list_tools || !provider->call_tool) {
        cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT",
                       "an MCP server needs a provider with list_tools and call_tool");
        return NULL;
    }
    cdsh_mcp_server *s = calloc(1, sizeof *s);
    if (!s)
        goto nomem;
    s->p = *provider;
    s->name = strdup(opts && opts->name ? opts->name : "cdsh");
    s->version = strdup(opts && opts->version ? opts->version : CDSH_VERSION);
    s->instructions = opts && opts->instructions ? strdup(opts->instructions) : NULL;
    s->page_size = opts && opts->page_size ? opts->page_size : CDSH_MCP_PAGE_SIZE;
    s->workers = opts && opts->workers ? opts->workers : CDSH_MCP_WORKERS;
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->pool_lock, NULL);
    pthread_cond_init(&s->pool_cond, NULL);
    s->queue_tail = &s->queue;
    s->threads = calloc(s->workers, sizeof *s->threads);
    if (!s->name || !s->version || (opts && opts->instructions && !s->instructions) ||
        !s->threads) {
        cdsh_mcp_server_free(s);
        goto nomem;
    }
    return s;
nomem:
    cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    return NULL;
}

static void *pool_main(void *arg)
{
    cdsh_mcp_server *s = arg;
    pthread_mutex_lock(&s->pool_lock);
    for (;;) {
        while (!s->queue && !s->pool_stop)
            pthread_cond_wait(&s->pool_cond, &s->pool_lock);
        pool_job *j = s->queue;
        if (!j)
            break; /* stopping, nothing left */
        if (!(s->queue = j->next))
            s->queue_tail = &s->queue;
        s->idle--;
        pthread_mutex_unlock(&s->pool_lock);
        j->fn(j->arg);
        free(j);
        pthread_mutex_lock(&s->pool_lock);
        s->idle++;
    }
    pthread_mutex_unlock(&s->pool_lock);
    return NULL;
}

int cdsh_mcp_server_submit(cdsh_mcp_server *s, void (*fn)(void *), void *arg)
{
    pool_job *j = malloc(sizeof *j);
    if (!j)
        return CDSH_ENOMEM;
    *j = (pool_job){.fn = fn, .arg = arg};
    pthread_mutex_lock(&s->pool_lock);
    *s->queue_tail = j;
    s->queue_tail = &j->next;
    size_t queued = 0;
    for (pool_job *q = s->queue; q; q = q->next)
        queued++;
    if (queued > s->idle && s->started < s->workers &&
        pthread_create(&s->threads[s->started], NULL, pool_main, s) == 0) {
        s->started++;
        s->idle++;
    }
    bool none = s->started == 0;
    pthread_cond_signal(&s->pool_cond);
    if (none) {
        /* Not a single worker could start: run it here rather than never. */
        s->queue = NULL;
        s->queue_tail = &s->queue;
    }
    pthread_mutex_unlock(&s->pool_lock);
    if (none) {
        fn(arg);
        free(j);
    }
    return 0;
}

void cdsh_mcp_server_free(cdsh_mcp_server *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->pool_lock);
    s->pool_stop = true;
    pthread_cond_broadcast(&s->pool_cond);
    pthread_mutex_unlock(&s->pool_lock);
    for (size_t i = 0; i < s->started; i++)
        pthread_join(s->threads[i], NULL);
    free(s->threads);
    pthread_cond_destroy(&s->pool_cond);
    pthread_mutex_destroy(&s->pool_lock);
    pthread_mutex_destroy(&s->lock);
    free(s->name);
    free(s->version);
    free(s->instructions);
    free(s);
}

/* The params of a notification sent on subscription `id` (2026-07-28). */
static json_t *subscription_params(const json_t *id, json_t *params)
{
    json_t *p = params ? params : json_object();
    if (p)
        json_object_set_new(p, "_meta", json_pack("{s:O}", META_SUBSCRIPTION, id));
    return p;
}

void cdsh_mcp_server_tools_changed(cdsh_mcp_server *s)
{
    /* Sending under the server lock keeps sessions alive; send functions only
     * queue or write a frame and never call back into the server. Legacy
     * sessions get the notification unsolicited; 2026-07-28 clients get it on
     * each subscriptions/listen stream that asked for it. */
    pthread_mutex_lock(&s->lock);
    for (cdsh_mcp_session *ss = s->sessions; ss; ss = ss->next) {
        pthread_mutex_lock(&ss->lock);
        bool ok = ss->initialized && !ss->closing;
        json_t *subs = json_array();
        for (inflight *f = ss->calls; f && subs; f = f->next)
            if (f->listen_tools && !cdsh_cancel_is_fired(f->cancel))
                json_array_append(subs, f->id);
        pthread_mutex_unlock(&ss->lock);
        if (ok)
            ss->send(ss->send_arg, "notifications/tools/list_changed", NULL);
        size_t i;
        json_t *id;
        json_array_foreach(subs, i, id)
        {
            json_t *p = subscription_params(id, NULL);
            if (p)
                ss->send(ss->send_arg, "notifications/tools/list_changed", p);
            json_decref(p);
        }
        json_decref(subs);
    }
    pthread_mutex_unlock(&s->lock);
}

/* ---- sessions ------------------------------------------------------------------ */

cdsh_mcp_session *cdsh_mcp_session_new(cdsh_mcp_server *server, const char *transport,
                                       cdsh_mcp_send_fn send, void *send_arg, cdsh_error *err)
{
    cdsh_mcp_session *ss = calloc(1, sizeof *ss);
    if (!ss) {
        cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        return NULL;
    }
    ss->server = server;
    ss->send = send;
    ss->send_arg = send_arg;
    pthread_mutex_init(&ss->lock, NULL);
    pthread_cond_init(&ss->idle, NULL);
    if (server->p.session_open)
        ss->ud = server->p.session_open(server->p.ud, transport);
    pthread_mutex_lock(&server->lock);
    ss->next = server->sessions;
    server->sessions = ss;
    pthread_mutex_unlock(&server->lock);
    return ss;
}

/* Stops list_changed fan-out to the session (before its transport goes). */
static void session_unlink(cdsh_mcp_session *ss)
{
    cdsh_mcp_server *s = ss->server;
    pthread_mutex_lock(&s->lock);
    for (cdsh_mcp_session **p = &s->sessions; *p; p = &(*p)->next)
        if (*p == ss) {
            *p = ss->next;
            break;
        }
    pthread_mutex_unlock(&s->lock);
}

void cdsh_mcp_session_free(cdsh_mcp_session *ss)
{
    if (!ss)
        return;
    cdsh_mcp_server *s = ss->server;
    session_unlink(ss);
    pthread_mutex_lock(&ss->lock);
    ss->closing = true;
    for (inflight *f = ss->calls; f; f = f->next)
        cdsh_cancel_fire(f->cancel, "MCP session closed");
    while (ss->running > 0)
        pthread_cond_wait(&ss->idle, &ss->lock);
    pthread_mutex_unlock(&ss->lock);
    if (s->p.session_close)
        s->p.session_close(s->p.ud, ss->ud);
    pthread_cond_destroy(&ss->idle);
    pthread_mutex_destroy(&ss->lock);
    free(ss);
}

void cdsh_mcp_session_cancel_all(cdsh_mcp_session *ss, const char *reason)
{
    pthread_mutex_lock(&ss->lock);
    ss->closing = true;
    for (inflight *f = ss->calls; f; f = f->next)
        cdsh_cancel_fire(f->cancel, reason ? reason : "MCP session closed");
    pthread_mutex_unlock(&ss->lock);
}

void cdsh_mcp_session_notification(cdsh_mcp_session *ss, const char *method, const json_t *params)
{
    if (strcmp(method, "notifications/initialized") == 0) {
        pthread_mutex_lock(&ss->lock);
        ss->initialized = true;
        pthread_mutex_unlock(&ss->lock);
    } else if (strcmp(method, "notifications/cancelled") == 0) {
        json_t *rid = json_object_get(params, "requestId");
        const char *reason = json_string_value(json_object_get(params, "reason"));
        pthread_mutex_lock(&ss->lock);
        for (inflight *f = ss->calls; rid && f; f = f->next)
            if (json_equal(f->id, rid))
                cdsh_cancel_fire(f->cancel, reason ? reason : "cancelled by the MCP client");
        pthread_mutex_unlock(&ss->lock);
    }
    /* Other notifications (roots/list_changed, progress, ...) need nothing. */
}

bool cdsh_mcp_call_wants_progress(const cdsh_mcp_call_ctx *ctx)
{
    return ctx && ctx->priv && ctx->priv->token;
}

void cdsh_mcp_call_progress(const cdsh_mcp_call_ctx *ctx, double progress, double total,
                            const char *message)
{
    if (!ctx || !ctx->priv || !ctx->priv->token)
        return;
    struct cdsh__mcp_call *c = ctx->priv;
    pthread_mutex_lock(&c->lock);
    bool send = !c->any || progress > c->last;
    if (send) {
        c->any = true;
        c->last = progress;
    }
    pthread_mutex_unlock(&c->lock);
    if (!send || cdsh_cancel_is_fired(ctx->cancel))
        return;
    json_t *p = cdsh_mcp_progress_params_new(c->token, progress, total, message);
    if (p)
        ctx->session->send(ctx->session->send_arg, "notifications/progress", p);
    json_decref(p);
}

/* ---- request handlers --------------------------------------------------------------- */

typedef struct reply {
    json_t *result;
    int64_t code;
    char *msg;
    json_t *data;
} reply;

static void fail(reply *r, int64_t code, const char *fmt, const char *arg)
{
    char buf[CDSH_ERROR_MESSAGE_MAX + 256];
    snprintf(buf, sizeof buf, fmt, arg ? arg : "");
    r->code = code;
    r->msg = strdup(buf);
}

static json_t *capabilities(void)
{
    return json_pack("{s:{s:b},s:{}}", "tools", "listChanged", 1, "logging");
}

static void do_initialize(cdsh_mcp_session *ss, const json_t *params, reply *r)
{
    const char *req = json_string_value(json_object_get(params, "protocolVersion"));
    if (!req) {
        fail(r, CDSH_JSONRPC_INVALID_PARAMS, "initialize needs a string protocolVersion%s", NULL);
        return;
    }
    const char *v = cdsh_mcp_negotiate(req);
    pthread_mutex_lock(&ss->lock);
    snprintf(ss->version, sizeof ss->version, "%s", v);
    pthread_mutex_unlock(&ss->lock);
    cdsh_mcp_server *s = ss->server;
    r->result = json_pack("{s:s,s:o,s:{s:s,s:s}}", "protocolVersion", v, "capabilities",
                          capabilities(), "serverInfo", "name", s->name, "version", s->version);
    if (r->result && s->instructions)
        json_object_set_new(r->result, "instructions", json_string(s->instructions));
}

static void do_discover(cdsh_mcp_session *ss, reply *r)
{
    cdsh_mcp_server *s = ss->server;
    json_t *versions = json_array();
    for (size_t i = 0; cdsh_mcp_legacy_versions[i]; i++)
        json_array_append_new(versions, json_string(cdsh_mcp_legacy_versions[i]));
    json_array_append_new(versions, json_string(CDSH_MCP_V2026_07_28));
    r->result = json_pack("{s:s,s:o,s:o,s:i,s:s,s:{s:{s:s,s:s}}}", "resultType", "complete",
                          "supportedVersions", versions, "capabilities", capabilities(), "ttlMs", 0,
                          "cacheScope", "private", "_meta", "io.modelcontextprotocol/serverInfo",
                          "name", s->name, "version", s->version);
    if (r->result && s->instructions)
        json_object_set_new(r->result, "instructions", json_string(s->instructions));
}

/* Cursors are "o<offset>" — opaque to clients, checked here. */
static bool parse_cursor(const char *c, size_t *off)
{
    if (!c || c[0] != 'o' || !c[1])
        return false;
    char *end;
    unsigned long long v = strtoull(c + 1, &end, 10);
    if (*end || c[1] == '-' || c[1] == '+')
        return false;
    *off = (size_t)v;
    return true;
}

static void do_list(cdsh_mcp_session *ss, const json_t *params, bool modern, reply *r)
{
    cdsh_mcp_server *s = ss->server;
    size_t off = 0;
    json_t *cur = json_object_get(params, "cursor");
    if (cur && !json_is_null(cur) && !parse_cursor(json_string_value(cur), &off)) {
        fail(r, CDSH_JSONRPC_INVALID_PARAMS, "invalid cursor%s", NULL);
        return;
    }
    json_t *all = s->p.list_tools(s->p.ud, ss->ud);
    if (!json_is_array(all)) {
        json_decref(all);
        fail(r, CDSH_JSONRPC_INTERNAL_ERROR, "cannot list tools%s", NULL);
        return;
    }
    size_t n = json_array_size(all);
    if (off > n) {
        json_decref(all);
        fail(r, CDSH_JSONRPC_INVALID_PARAMS, "invalid cursor%s", NULL);
        return;
    }
    json_t *page = json_array();
    for (size_t i = off; i < n && i < off + s->page_size; i++)
        json_array_append(page, json_array_get(all, i));
    r->result = json_pack("{s:o}", "tools", page);
    if (r->result && off + s->page_size < n) {
        char buf[32];
        snprintf(buf, sizeof buf, "o%zu", off + s->page_size);
        json_object_set_new(r->result, "nextCursor", json_string(buf));
    }
    if (r->result && modern) {
        /* 2026-07-28 cacheable result: the visible tool set can change at
         * any time (a plugin loads, a restriction changes) and differs per
         * profile, so nothing may be cached or shared. */
        json_object_set_new(r->result, "ttlMs", json_integer(0));
        json_object_set_new(r->result, "cacheScope", json_string("private"));
    }
    json_decref(all);
}

static void do_call(cdsh_mcp_session *ss, const json_t *id, const json_t *params,
                    cdsh_cancel *cancel, reply *r)
{
    cdsh_mcp_server *s = ss->server;
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *args = json_object_get(params, "arguments");
    if (!name) {
        fail(r, CDSH_JSONRPC_INVALID_PARAMS, "tools/call needs a string name%s", NULL);
        return;
    }
    if (args && !json_is_object(args) && !json_is_null(args)) {
        fail(r, CDSH_JSONRPC_INVALID_PARAMS, "tools/call arguments of %s must be an object", name);
        return;
    }
    inflight f = {.id = id ? json_deep_copy(id) : NULL, .cancel = cdsh_cancel_new(cancel)};
    struct cdsh__mcp_call priv = {
        .token = json_object_get(json_object_get(params, "_meta"), "progressToken"),
    };
    if (!f.cancel) {
        json_decref(f.id);
        fail(r, CDSH_JSONRPC_INTERNAL_ERROR, "out of memory%s", NULL);
        return;
    }
    if (priv.token && !json_is_string(priv.token) && !json_is_integer(priv.token))
        priv.token = NULL;
    pthread_mutex_init(&priv.lock, NULL);
    pthread_mutex_lock(&ss->lock);
    bool closing = ss->closing;
    if (!closing) {
        f.next = ss->calls;
        /* A stack node: unlinked below before this function returns. */
        // cppcheck-suppress autoVariables
        ss->calls = &f;
        ss->running++;
    }
    pthread_mutex_unlock(&ss->lock);
    if (closing) {
        fail(r, CDSH_JSONRPC_INTERNAL_ERROR, "MCP session is closing%s", NULL);
    } else {
        cdsh_mcp_call_ctx ctx = {
            .cancel = f.cancel, .session = ss, .session_ud = ss->ud, .priv = &priv};
        json_t *empty = json_object();
        cdsh_error err = {0};
        int rc = s->p.call_tool(s->p.ud, &ctx, name, json_is_object(args) ? args : empty,
                                &r->result, &err);
        json_decref(empty);
        if (rc == CDSH_ENOTFOUND)
            fail(r, CDSH_JSONRPC_INVALID_PARAMS, "Unknown tool: %s", name);
        else if (rc == CDSH_EINVAL)
            fail(r, CDSH_JSONRPC_INVALID_PARAMS, "%s", err.message);
        else if (rc != 0)
            fail(r, CDSH_JSONRPC_INTERNAL_ERROR, "%s",
                 err.message[0] ? err.message : "tool failed");
        pthread_mutex_lock(&ss->lock);
        for (inflight **p = &ss->calls; *p; p = &(*p)->next)
            if (*p == &f) {
                *p = f.next;
                break;
            }
        if (--ss->running == 0)
            pthread_cond_broadcast(&ss->idle);
        pthread_mutex_unlock(&ss->lock);
    }
    pthread_mutex_destroy(&priv.lock);
    cdsh_cancel_free(f.cancel);
    json_decref(f.id);
}

/* subscriptions/listen (2026-07-28): acknowledges the honoured filter, then
 * holds the request open — notifications/tools/list_changed tagged with the
 * subscription id flow through the session's send function — until the
 * client cancels it (notifications/cancelled, or the transport's token: a
 * closed HTTP stream) or the session closes (server shutdown). The answer
 * is the graceful-close result. cdsh has only tools, so only
 * toolsListChanged is ever honoured. */
static void do_listen(cdsh_mcp_session *ss, const json_t *id, const json_t *params,
                      cdsh_cancel *cancel, reply *r)
{
    json_t *filter = json_object_get(params, "notifications");
    if (!json_is_object(filter)) {
        fail(r, CDSH_JSONRPC_INVALID_PARAMS,
             "subscriptions/listen needs a notifications object%s", NULL);
        return;
    }
    if (!id) {
        fail(r, CDSH_JSONRPC_INVALID_REQUEST, "subscriptions/listen must be a request%s", NULL);
        return;
    }
    cdsh_mcp_server *srv = ss->server;
    pthread_mutex_lock(&srv->lock);
    bool full = srv->subscriptions >= CDSH_MCP_MAX_SUBSCRIPTIONS;
    if (!full)
        srv->subscriptions++;
    pthread_mutex_unlock(&srv->lock);
    if (full) {
        /* Each open subscription holds a thread: their number is bounded. */
        fail(r, CDSH_JSONRPC_INTERNAL_ERROR,
             "too many open subscriptions (at most " CDSH_MCP_MAX_SUBSCRIPTIONS_STR
             ")%s: close one first",
             NULL);
        return;
    }
    bool tools = json_is_true(json_object_get(filter, "toolsListChanged"));
    inflight f = {.id = json_deep_copy(id), .cancel = cdsh_cancel_new(cancel)};
    if (!f.id || !f.cancel) {
        json_decref(f.id);
        cdsh_cancel_free(f.cancel);
        fail(r, CDSH_JSONRPC_INTERNAL_ERROR, "out of memory%s", NULL);
        return;
    }
    pthread_mutex_lock(&ss->lock);
    bool closing = ss->closing;
    if (!closing) {
        f.next = ss->calls;
        /* A stack node: unlinked below before this function returns. */
        // cppcheck-suppress autoVariables
        ss->calls = &f;
        ss->running++;
    }
    pthread_mutex_unlock(&ss->lock);
    if (closing) {
        fail(r, CDSH_JSONRPC_INTERNAL_ERROR, "MCP session is closing%s", NULL);
        goto out;
    }
    json_t *ack = json_pack("{s:{}}", "notifications");
    if (ack && tools)
        json_object_set_new(json_object_get(ack, "notifications"), "toolsListChanged",
                            json_true());
    ack = ack ? subscription_params(f.id, ack) : NULL;
    if (ack)
        ss->send(ss->send_arg, "notifications/subscriptions/acknowledged", ack);
    json_decref(ack);
    /* Only now may list_changed be sent on it: the acknowledgement is first. */
    pthread_mutex_lock(&ss->lock);
    f.listen_tools = tools;
    pthread_mutex_unlock(&ss->lock);
    while (!cdsh_cancel_wait(f.cancel, 60000))
        ;
    pthread_mutex_lock(&ss->lock);
    for (inflight **p = &ss->calls; *p; p = &(*p)->next)
        if (*p == &f) {
            *p = f.next;
            break;
        }
    if (--ss->running == 0)
        pthread_cond_broadcast(&ss->idle);
    pthread_mutex_unlock(&ss->lock);
    r->result = json_pack("{s:{s:O}}", "_meta", META_SUBSCRIPTION, f.id);
out:
    pthread_mutex_lock(&srv->lock);
    srv->subscriptions--;
    pthread_mutex_unlock(&srv->lock);
    cdsh_cancel_free(f.cancel);
    json_decref(f.id);
}

/* Stamps a 2026-07-28 result: resultType and _meta serverInfo. */
static void stamp_modern(const cdsh_mcp_server *s, json_t *result)
{
    if (!json_object_get(result, "resultType"))
        json_object_set_new(result, "resultType", json_string("complete"));
    json_t *meta = json_object_get(result, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(result, "_meta", meta);
    }
    if (meta && !json_object_get(meta, META_SERVER_INFO))
        json_object_set_new(meta, META_SERVER_INFO,
                            json_pack("{s:s,s:s}", "name", s->name, "version", s->version));
}

int cdsh_mcp_session_request(cdsh_mcp_session *ss, const json_t *id, const char *method,
                             const json_t *params, cdsh_cancel *cancel, json_t **result,
                             int64_t *ecode, char **emsg, json_t **edata)
{
    reply r = {0};
    *result = NULL;
    *emsg = NULL;
    *edata = NULL;
    *ecode = 0;
    const char *mver =
        json_string_value(json_object_get(json_object_get(params, "_meta"), META_VERSION));
    bool modern = false;
    if (mver) {
        if (!cdsh_mcp_version_is_modern(mver) && !cdsh_mcp_version_known(mver)) {
            r.code = CDSH_MCP_UNSUPPORTED_VERSION;
            r.msg = strdup("Unsupported protocol version");
            r.data = json_pack("{s:[s,s,s],s:s}", "supported", CDSH_MCP_V2026_07_28,
                               CDSH_MCP_V2025_11_25, CDSH_MCP_V2025_06_18, "requested", mver);
            goto done;
        }
        modern = cdsh_mcp_version_is_modern(mver);
        if (modern && !json_is_object(json_object_get(json_object_get(params, "_meta"),
                                                      META_CAPS))) {
            /* 2026-07-28: every request declares its client's capabilities. */
            fail(&r, CDSH_JSONRPC_INVALID_PARAMS,
                 "missing required _meta[\"%s\"] (an object, may be empty)", META_CAPS);
            goto done;
        }
    }
    pthread_mutex_lock(&ss->lock);
    bool has_version = ss->version[0] != '\0';
    pthread_mutex_unlock(&ss->lock);
    if (strcmp(method, "initialize") == 0)
        do_initialize(ss, params, &r);
    else if (strcmp(method, "ping") == 0)
        r.result = json_object();
    else if (strcmp(method, "server/discover") == 0)
        do_discover(ss, &r);
    else if (strcmp(method, "subscriptions/listen") == 0 && modern)
        do_listen(ss, id, params, cancel, &r);
    else if (!has_version && !modern &&
             (strcmp(method, "tools/list") == 0 || strcmp(method, "tools/call") == 0 ||
              strcmp(method, "logging/setLevel") == 0))
        fail(&r, CDSH_JSONRPC_INVALID_REQUEST,
             "the session is not initialized: send initialize "
             "first%s",
             NULL);
    else if (strcmp(method, "tools/list") == 0)
        do_list(ss, params, modern, &r);
    else if (strcmp(method, "tools/call") == 0)
        do_call(ss, id, params, cancel, &r);
    else if (strcmp(method, "logging/setLevel") == 0) {
        const char *lvl = json_string_value(json_object_get(params, "level"));
        if (!lvl) {
            fail(&r, CDSH_JSONRPC_INVALID_PARAMS, "logging/setLevel needs a level%s", NULL);
        } else {
            pthread_mutex_lock(&ss->lock);
            snprintf(ss->log_level, sizeof ss->log_level, "%s", lvl);
            pthread_mutex_unlock(&ss->lock);
            r.result = json_object();
        }
    } else
        fail(&r, CDSH_JSONRPC_METHOD_NOT_FOUND, "Method not found: %s", method);
done:
    if (r.result && (modern || strcmp(method, "server/discover") == 0) &&
        json_is_object(r.result))
        stamp_modern(ss->server, r.result);
    if (!r.result && !r.msg) {
        json_decref(r.data);
        return CDSH_ENOMEM;
    }
    *result = r.result;
    *ecode = r.code;
    *emsg = r.msg;
    *edata = r.data;
    return 0;
}

/* ---- stdio ------------------------------------------------------------------------------ */

typedef struct stdio_srv {
    cdsh_jsonrpc *peer;
    cdsh_mcp_session *session;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int workers;
    uint64_t handled; /* messages that reached stdio_handler */
} stdio_srv;

static void stdio_send(void *arg, const char *method, json_t *params)
{
    stdio_srv *st = arg;
    cdsh_jsonrpc_notify(st->peer, method, params, NULL);
}

static void answer(stdio_srv *st, cdsh_jsonrpc_request *req)
{
    json_t *result = NULL, *edata = NULL;
    int64_t code = 0;
    char *msg = NULL;
    int rc = cdsh_mcp_session_request(
        st->session, cdsh_jsonrpc_request_id(req), cdsh_jsonrpc_request_method(req),
        cdsh_jsonrpc_request_params(req), cdsh_jsonrpc_request_cancel_get(req), &result, &code,
        &msg, &edata);
    if (rc != 0)
        cdsh_jsonrpc_respond_error(req, CDSH_JSONRPC_INTERNAL_ERROR, "out of memory", NULL, NULL);
    else if (result)
        cdsh_jsonrpc_respond(req, result, NULL);
    else
        cdsh_jsonrpc_respond_error(req, code, msg, edata, NULL);
    json_decref(result);
    json_decref(edata);
    free(msg);
}

typedef struct worker_arg {
    stdio_srv *st;
    cdsh_jsonrpc_request *req;
} worker_arg;

static void worker_run(void *arg)
{
    worker_arg *w = arg;
    stdio_srv *st = w->st;
    answer(st, w->req);
    free(w);
    pthread_mutex_lock(&st->lock);
    if (--st->workers == 0)
        pthread_cond_broadcast(&st->cond);
    pthread_mutex_unlock(&st->lock);
}

static void *worker_main(void *arg)
{
    worker_run(arg);
    return NULL;
}

static void stdio_handler(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)peer;
    stdio_srv *st = arg;
    const char *method = cdsh_jsonrpc_request_method(req);
    pthread_mutex_lock(&st->lock);
    st->handled++;
    pthread_mutex_unlock(&st->lock);
    if (cdsh_jsonrpc_request_is_notification(req)) {
        json_t *params = cdsh_jsonrpc_request_params(req);
        cdsh_mcp_session_notification(st->session, method, params);
        json_t *rid = json_object_get(params, "requestId");
        if (strcmp(method, "notifications/cancelled") == 0 && rid)
            /* Also a call still queued for a pool worker: its token is
             * already fired when it starts. */
            cdsh_jsonrpc_cancel_incoming(st->peer, rid, "cancelled by the MCP client");
        return;
    }
    if (strcmp(method, "tools/call") != 0 && strcmp(method, "subscriptions/listen") != 0) {
        answer(st, req);
        return;
    }
    /* Tool calls run on the server's worker pool, subscriptions (bounded in
     * number) on their own thread, so cancellations and other requests keep
     * flowing while a tool works. */
    worker_arg *w = malloc(sizeof *w);
    pthread_attr_t attr;
    pthread_t t;
    if (!w) {
        answer(st, req);
        return;
    }
    w->st = st;
    w->req = cdsh_jsonrpc_request_hold(req);
    pthread_mutex_lock(&st->lock);
    st->workers++;
    pthread_mutex_unlock(&st->lock);
    if (strcmp(method, "tools/call") == 0) {
        if (cdsh_mcp_server_submit(st->session->server, worker_run, w) != 0)
            worker_run(w);
        return;
    }
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, worker_main, w) != 0)
        worker_main(w);
    pthread_attr_destroy(&attr);
}

/* The client closed its side: requests it sent before EOF still get their
 * answers (`printf '...' | cdsh mcp` works for initialize, tools/list, ...).
 * Tool calls still running are cancelled by the peer (a client that closes
 * stdin has left) and answer with their aborted result. Waits for the
 * dispatcher to drain what was read (at most 2 s) and for the calls to
 * return, unless stop fires. */
static void finish_after_eof(stdio_srv *st, cdsh_cancel *stop)
{
    int64_t drain_deadline = cdsh_clock_mono_ms() + 2000;
    for (;;) {
        cdsh_jsonrpc_stats stats;
        cdsh_jsonrpc_stats_get(st->peer, &stats);
        uint64_t expected = stats.frames_in - stats.malformed - stats.oversize - stats.invalid;
        pthread_mutex_lock(&st->lock);
        bool drained = st->handled >= expected || cdsh_clock_mono_ms() > drain_deadline;
        bool idle = drained && st->workers == 0;
        pthread_mutex_unlock(&st->lock);
        if (idle || cdsh_cancel_wait(stop, 10))
            return;
    }
}

int cdsh_mcp_serve_fds(cdsh_mcp_server *server, int rfd, int wfd, cdsh_cancel *stop,
                       cdsh_error *err)
{
    stdio_srv st = {0};
    pthread_mutex_init(&st.lock, NULL);
    pthread_cond_init(&st.cond, NULL);
    int rc = 0;
    cdsh_jsonrpc_config cfg = {.name = "MCP client", .max_frame = CDSH_MCP_MAX_MESSAGE};
    st.peer = cdsh_jsonrpc_new(rfd, wfd, &cfg, err);
    if (!st.peer) {
        rc = err ? err->rc : CDSH_ENOMEM;
        goto out;
    }
    st.session = cdsh_mcp_session_new(server, "stdio", stdio_send, &st, err);
    if (!st.session) {
        rc = CDSH_ENOMEM;
        goto out;
    }
    cdsh_jsonrpc_handle_fallback(st.peer, stdio_handler, &st);
    if ((rc = cdsh_jsonrpc_start(st.peer, err)) != 0)
        goto out;
    while (!cdsh_jsonrpc_is_closed(st.peer) && !cdsh_cancel_wait(stop, 100))
        ;
    if (!cdsh_cancel_is_fired(stop))
        finish_after_eof(&st, stop);
out:
    if (st.session)
        session_unlink(st.session);
    /* Free the peer first: it fires the tokens of held requests, so running
     * tools stop; workers then answer into the closed peer harmlessly. */
    cdsh_jsonrpc_free(st.peer);
    pthread_mutex_lock(&st.lock);
    while (st.workers > 0)
        pthread_cond_wait(&st.cond, &st.lock);
    pthread_mutex_unlock(&st.lock);
    cdsh_mcp_session_free(st.session);
    pthread_cond_destroy(&st.cond);
    pthread_mutex_destroy(&st.lock);
    return rc;
}
