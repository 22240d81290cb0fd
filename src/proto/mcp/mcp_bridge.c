/* mcp_bridge.c — the tool kernel served over MCP (export) and MCP servers'
 * tools registered into the kernel (import). The protocol itself is in
 * mcp_server.c / mcp_client.c; this file only translates shapes. */
#include "proto/mcp/mcp_bridge.h"

#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/random.h"
#include "host/dispatch.h"
#include "host/toolresult.h"
#include "proto/mcp/mcp.h"

/* ---- export ------------------------------------------------------------------ */

struct cdsh_mcp_export {
    cdsh_tools *tools;
    cdsh_events *bus;
    char *glob;
    cdsh_scope *parent;
    int64_t tick_ms;
    pthread_mutex_t lock;
    cdsh_mcp_server *server;
    cdsh_disposer_t listener;
    uint64_t next_call;
    /* Progress heartbeats: one ticker thread for all calls that asked for
     * progress (started with the first), not one per call. */
    struct beat *beats;   /* under lock */
    pthread_cond_t beat;  /* (lock, monotonic) beats changed / a send ended */
    pthread_t ticker;
    bool ticker_started, stopping;
};

typedef struct beat {
    const cdsh_mcp_call_ctx *ctx;
    int64_t start, due;
    int ticks;
    bool sending; /* the ticker is sending for it, unlocked */
    struct beat *next;
} beat;

static bool glob_ok(const cdsh_mcp_export *ex, const char *name)
{
    return !ex->glob || fnmatch(ex->glob, name, 0) == 0;
}

/* True when every value the schema admits is an object: type "object", or a
 * oneOf/anyOf whose branches all are (cdsh's schema subset forbids type next to
 * oneOf, so a tool answering a value or a refusal declares only the oneOf). */
static bool describes_object(const json_t *schema)
{
    const char *t = json_string_value(json_object_get(schema, "type"));
    if (t)
        return strcmp(t, "object") == 0;
    json_t *alts = json_object_get(schema, "oneOf");
    if (!alts)
        alts = json_object_get(schema, "anyOf");
    if (!json_is_array(alts) || json_array_size(alts) == 0)
        return false;
    size_t i;
    json_t *alt;
    json_array_foreach(alts, i, alt) {
        if (!describes_object(alt))
            return false;
    }
    return true;
}

json_t *cdsh_mcp_export_tool_json(const json_t *kt)
{
    json_t *params = json_object_get(kt, "parameters");
    json_t *desc = json_object_get(kt, "description");
    json_t *t = json_pack("{s:O,s:o,s:o}", "name", json_object_get(kt, "name"), "description",
                          desc ? json_incref(desc) : json_string(""), "inputSchema",
                          params ? json_incref(params) : json_pack("{s:s}", "type", "object"));
    json_t *os = json_object_get(kt, "outputSchema");
    if (t && json_is_object(os) && describes_object(os)) {
        if (json_object_get(os, "type")) {
            json_object_set(t, "outputSchema", os);
        } else {
            /* MCP requires type "object" at an outputSchema's root */
            json_t *copy = json_copy(os);
            if (copy && json_object_set_new(copy, "type", json_string("object")) == 0)
                json_object_set_new(t, "outputSchema", copy);
            else
                json_decref(copy);
        }
    }
    return t;
}

static json_t *ex_list(void *ud, void *session_ud)
{
    cdsh_mcp_export *ex = ud;
    cdsh_scope *scope = session_ud;
    json_t *names = cdsh_tools_names(ex->tools, scope);
    json_t *out = json_array();
    size_t i;
    json_t *n;
    json_array_foreach(names, i, n) {
        if (!glob_ok(ex, json_string_value(n)))
            continue;
        json_t *kt = cdsh_tools_info_dup(ex->tools, scope, json_string_value(n));
        if (kt)
            json_array_append_new(out, cdsh_mcp_export_tool_json(kt));
        json_decref(kt);
    }
    json_decref(names);
    return out;
}

/* The ticker: every tick_ms each running call that asked for progress gets
 * a heartbeat notifications/progress (kernel tools have no progress channel
 * of their own; this tells the client the call is alive). Sends happen
 * unlocked, the beat marked `sending` so its call waits before leaving. */
static void *ticker_main(void *arg)
{
    cdsh_mcp_export *ex = arg;
    pthread_mutex_lock(&ex->lock);
    while (!ex->stopping) {
        int64_t now = cdsh_clock_mono_ms(), soonest = INT64_MAX;
        beat *due = NULL;
        for (beat *b = ex->beats; b; b = b->next) {
            if (!due && b->due <= now)
                due = b;
            soonest = b->due < soonest ? b->due : soonest;
        }
        if (due) {
            due->sending = true;
            due->due = now + ex->tick_ms;
            int tick = ++due->ticks;
            int64_t ran = now - due->start;
            pthread_mutex_unlock(&ex->lock);
            char msg[64];
            snprintf(msg, sizeof msg, "running for %lld ms", (long long)ran);
            cdsh_mcp_call_progress(due->ctx, tick, -1, msg);
            pthread_mutex_lock(&ex->lock);
            due->sending = false;
            pthread_cond_broadcast(&ex->beat);
        } else if (soonest == INT64_MAX) {
            pthread_cond_wait(&ex->beat, &ex->lock);
        } else {
            struct timespec ts;
            cdsh_clock_deadline(CLOCK_MONOTONIC, soonest - now, &ts);
            pthread_cond_timedwait(&ex->beat, &ex->lock, &ts);
        }
    }
    pthread_mutex_unlock(&ex->lock);
    return NULL;
}

/* Runs the dispatch on the calling thread while the ticker sends the
 * heartbeats. */
static cdsh_toolresult *run_with_heartbeat(cdsh_mcp_export *ex, const cdsh_mcp_call_ctx *ctx,
                                           const cdsh_dispatch_input *in)
{
    int64_t now = cdsh_clock_mono_ms();
    beat b = {.ctx = ctx, .start = now, .due = now + ex->tick_ms};
    cdsh_mcp_call_progress(ctx, 0, -1, "started");
    pthread_mutex_lock(&ex->lock);
    if (!ex->ticker_started)
        ex->ticker_started = pthread_create(&ex->ticker, NULL, ticker_main, ex) == 0;
    bool beating = ex->ticker_started;
    if (beating) {
        b.next = ex->beats;
        ex->beats = &b;
        pthread_cond_broadcast(&ex->beat);
    }
    pthread_mutex_unlock(&ex->lock);
    cdsh_toolresult *res = cdsh_dispatch_execute(ex->tools, in);
    if (beating) {
        pthread_mutex_lock(&ex->lock);
        while (b.sending)
            pthread_cond_wait(&ex->beat, &ex->lock);
        for (beat **p = &ex->beats; *p; p = &(*p)->next)
            if (*p == &b) {
                *p = b.next;
                break;
            }
        pthread_mutex_unlock(&ex->lock);
    }
    return res;
}

static int ex_call(void *ud, const cdsh_mcp_call_ctx *ctx, const char *name, const json_t *args,
                   json_t **result, cdsh_error *err)
{
    cdsh_mcp_export *ex = ud;
    cdsh_scope *scope = ctx->session_ud;
    if (!glob_ok(ex, name) || !cdsh_tools_visible(ex->tools, scope, name))
        return cdsh_error_set(err, CDSH_ENOTFOUND, "UNKNOWN_TOOL", "Unknown tool: %s", name);
    pthread_mutex_lock(&ex->lock);
    uint64_t n = ++ex->next_call;
    pthread_mutex_unlock(&ex->lock);
    char call_id[96];
    snprintf(call_id, sizeof call_id, "%s:mcp-%llu", scope ? cdsh_scope_id(scope) : "mcp",
             (unsigned long long)n);
    cdsh_dispatch_input in = {
        .call_id = call_id,
        .name = name,
        .args = args,
        .agent = scope,
        .cancel = ctx->cancel,
    };
    cdsh_toolresult *res = cdsh_mcp_call_wants_progress(ctx)
                               ? run_with_heartbeat(ex, ctx, &in)
                               : cdsh_dispatch_execute(ex->tools, &in);
    if (!res)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    json_t *r = json_object();
    json_object_set(r, "content", res->content ? res->content : json_array());
    if (res->is_error) {
        json_object_set_new(r, "isError", json_true());
    } else if (json_is_object(res->value)) {
        json_t *kt = cdsh_tools_info_dup(ex->tools, scope, name);
        json_t *mt = kt ? cdsh_mcp_export_tool_json(kt) : NULL;
        if (json_object_get(mt, "outputSchema"))
            json_object_set(r, "structuredContent", res->value);
        json_decref(mt);
        json_decref(kt);
    }
    cdsh_toolresult_free(res);
    *result = r;
    return 0;
}

static void *ex_session_open(void *ud, const char *transport)
{
    cdsh_mcp_export *ex = ud;
    char *id = cdsh_random_id_dup(strcmp(transport, "http") == 0 ? "mcp-http-" : "mcp-stdio-");
    cdsh_scope *s = id ? cdsh_scope_new(id, ex->parent) : NULL;
    free(id);
    return s;
}

/* The session is over: say so on the host bus (whoever keeps something for
 * it — background jobs it owns — lets go), then drop its scope. */
static void ex_session_close(void *ud, void *session_ud)
{
    cdsh_mcp_export *ex = ud;
    const char *id = session_ud ? cdsh_scope_id(session_ud) : NULL;
    json_t *p = id ? json_pack("{s:s, s:s}", "id", id, "reason", "mcp-session-closed") : NULL;
    if (ex->bus && p)
        cdsh_events_emit(ex->bus, CDSH_EVENT_SESSION_END, NULL, false, p);
    json_decref(p);
    cdsh_scope_unref(session_ud);
}

static void ex_on_change(void *arg, const char *name, const cdsh_scope *scope,
                         const json_t *payload)
{
    (void)name, (void)scope, (void)payload;
    cdsh_mcp_export *ex = arg;
    pthread_mutex_lock(&ex->lock);
    cdsh_mcp_server *s = ex->server;
    if (s)
        cdsh_mcp_server_tools_changed(s);
    pthread_mutex_unlock(&ex->lock);
}

cdsh_mcp_export *cdsh_mcp_export_new(cdsh_tools *tools, cdsh_events *bus,
                                     const cdsh_mcp_export_opts *opts, cdsh_error *err)
{
    if (!tools) {
        cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "cdsh_mcp_export_new: tools is NULL");
        return NULL;
    }
    cdsh_mcp_export *ex = calloc(1, sizeof *ex);
    if (!ex)
        goto nomem;
    ex->tools = tools;
    ex->bus = bus;
    ex->parent = opts ? opts->parent_scope : NULL;
    ex->tick_ms = opts && opts->progress_every_ms > 0 ? opts->progress_every_ms : 1000;
    pthread_mutex_init(&ex->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ex->beat, &ca);
    pthread_condattr_destroy(&ca);
    if (opts && opts->tools_glob && !(ex->glob = strdup(opts->tools_glob))) {
        cdsh_mcp_export_free(ex);
        goto nomem;
    }
    if (bus && cdsh_events_on(bus, "tools/change", NULL, ex_on_change, ex, &ex->listener, err)) {
        cdsh_mcp_export_free(ex);
        return NULL;
    }
    return ex;
nomem:
    cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    return NULL;
}

void cdsh_mcp_export_provider(cdsh_mcp_export *ex, cdsh_mcp_provider *out)
{
    *out = (cdsh_mcp_provider){
        .list_tools = ex_list,
        .call_tool = ex_call,
        .session_open = ex_session_open,
        .session_close = ex_session_close,
        .ud = ex,
    };
}

void cdsh_mcp_export_attach(cdsh_mcp_export *ex, cdsh_mcp_server *server)
{
    pthread_mutex_lock(&ex->lock);
    ex->server = server;
    pthread_mutex_unlock(&ex->lock);
}

void cdsh_mcp_export_free(cdsh_mcp_export *ex)
{
    if (!ex)
        return;
    cdsh_disposer_run(&ex->listener);
    pthread_mutex_lock(&ex->lock);
    ex->stopping = true;
    pthread_cond_broadcast(&ex->beat);
    pthread_mutex_unlock(&ex->lock);
    if (ex->ticker_started)
        pthread_join(ex->ticker, NULL);
    pthread_cond_destroy(&ex->beat);
    pthread_mutex_destroy(&ex->lock);
    free(ex->glob);
    free(ex);
}

/* ---- import ------------------------------------------------------------------ */

typedef struct imp_tool {
    cdsh_mcp_client *client;
    char *raw;
    char pub[CDSH_MCP_PUBLIC_NAME_MAX + 1];
} imp_tool;

struct cdsh_mcp_import {
    cdsh_mcp_client *client;
    cdsh_tools *tools;
    cdsh_scope *scope;
    char **enabled, **disabled;
    pthread_mutex_t lock; /* generation */
    cdsh_disposer_t *disposers;
    json_t *names; /* [{publicName, rawName}] */
    size_t count;
};

bool cdsh_mcp_import_tool_enabled(const char *const *enabled, const char *const *disabled,
                                  const char *raw)
{
    if (enabled) {
        bool found = false;
        for (size_t i = 0; enabled[i] && !found; i++)
            found = strcmp(enabled[i], raw) == 0;
        if (!found)
            return false;
    }
    for (size_t i = 0; disabled && disabled[i]; i++)
        if (strcmp(disabled[i], raw) == 0)
            return false;
    return true;
}

static void imp_tool_free(void *ud)
{
    imp_tool *t = ud;
    free(t->raw);
    free(t);
}

static int imp_execute(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    imp_tool *t = ud;
    cdsh_mcp_call_opts co = {.cancel = exec->cancel};
    json_t *res = NULL;
    cdsh_error err = {0};
    int rc = cdsh_mcp_client_call(t->client, t->raw, exec->args, &co, &res, &err);
    if (rc != 0)
        return cdsh_dispatch_fail(exec, "McpError", err.code, "%s", err.message);
    if (json_is_true(json_object_get(res, "isError"))) {
        char *text = cdsh_mcp_content_text_dup(json_object_get(res, "content"), t->pub);
        rc = cdsh_dispatch_fail(exec, "McpToolError", "MCP_TOOL_ERROR", "%s",
                                text ? text : "MCP tool failed");
        free(text);
        json_decref(res);
        return rc;
    }
    json_t *v = json_pack("{s:O}", "content", json_object_get(res, "content"));
    json_t *sc = json_object_get(res, "structuredContent");
    if (v && sc)
        json_object_set(v, "structuredContent", sc);
    json_decref(res);
    *value = v;
    return v ? 0 : CDSH_ENOMEM;
}

static json_t *imp_render(void *ud, const json_t *args, const json_t *value, cdsh_error *err)
{
    (void)args;
    imp_tool *t = ud;
    char *text = cdsh_mcp_content_text_dup(json_object_get(value, "content"), t->pub);
    if (!text) {
        cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        return NULL;
    }
    json_t *c = cdsh_toolresult_text_content(text);
    free(text);
    return c;
}

static void dispose_all(cdsh_disposer_t *d, size_t n)
{
    for (size_t i = n; i > 0; i--)
        cdsh_disposer_run(&d[i - 1]);
    free(d);
}

/* Registers one generation from a tool list; all or nothing. */
static int register_gen(cdsh_mcp_import *imp, const json_t *list, cdsh_disposer_t **out_d,
                        size_t *out_n, json_t **out_names, cdsh_error *err)
{
    size_t n = json_array_size(list), k = 0;
    cdsh_disposer_t *d = calloc(n ? n : 1, sizeof *d);
    json_t *names = json_array();
    const char *server = cdsh_mcp_client_name(imp->client);
    json_t *out_schema = json_pack("{s:s}", "type", "object");
    int rc = 0;
    if (!d || !names || !out_schema) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto fail;
    }
    size_t i;
    json_t *t;
    json_array_foreach(list, i, t) {
        const char *raw = json_string_value(json_object_get(t, "name"));
        if (!raw || !cdsh_mcp_import_tool_enabled((const char *const *)imp->enabled,
                                                  (const char *const *)imp->disabled, raw))
            continue;
        imp_tool *it = calloc(1, sizeof *it);
        if (!it || !(it->raw = strdup(raw))) {
            free(it);
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
            goto fail;
        }
        it->client = imp->client;
        cdsh_mcp_public_tool_name(server, raw, it->pub);
        const char *desc = json_string_value(json_object_get(t, "description"));
        cdsh_tool_def def = {
            .name = it->pub,
            .description = desc ? desc : "",
            .parameters = json_object_get(t, "inputSchema"),
            .output_schema = out_schema,
            .execute = imp_execute,
            .render = imp_render,
            .is_concurrency_safe = cdsh_tools_always_safe,
            .ud = it,
            .free_ud = imp_tool_free,
        };
        rc = cdsh_tools_register(imp->tools, imp->scope, &def, &d[k], err);
        if (rc == CDSH_EUNSUPPORTED) {
            /* Input schema outside the kernel's subset: the server validates. */
            def.parameters = NULL;
            rc = cdsh_tools_register(imp->tools, imp->scope, &def, &d[k], err);
        }
        if (rc != 0) {
            imp_tool_free(it);
            goto fail;
        }
        k++;
        json_array_append_new(names, json_pack("{s:s,s:s}", "publicName", it->pub, "rawName", raw));
    }
    json_decref(out_schema);
    *out_d = d;
    *out_n = k;
    *out_names = names;
    return 0;
fail:
    dispose_all(d, k);
    json_decref(names);
    json_decref(out_schema);
    return rc;
}

/* Re-registers from the client's current list (old generation kept on failure). */
static int import_sync(cdsh_mcp_import *imp, cdsh_error *err)
{
    json_t *list = cdsh_mcp_client_tools_dup(imp->client);
    if (!list)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    pthread_mutex_lock(&imp->lock);
    /* Names of the old generation must be free before the new one registers;
     * a failed sync therefore leaves the server without tools (logged by the
     * caller) rather than with a stale half. */
    dispose_all(imp->disposers, imp->count);
    imp->disposers = NULL;
    imp->count = 0;
    cdsh_disposer_t *d = NULL;
    size_t n = 0;
    json_t *names = NULL;
    int rc = register_gen(imp, list, &d, &n, &names, err);
    if (rc == 0) {
        json_decref(imp->names);
        imp->names = names;
        imp->disposers = d;
        imp->count = n;
    } else {
        json_decref(imp->names);
        imp->names = json_array();
    }
    pthread_mutex_unlock(&imp->lock);
    json_decref(list);
    return rc;
}

static char **dup_list(const char *const *l)
{
    if (!l)
        return NULL;
    size_t n = 0;
    while (l[n])
        n++;
    char **d = calloc(n + 1, sizeof *d);
    for (size_t i = 0; d && i < n; i++)
        d[i] = strdup(l[i]);
    return d;
}

static void free_list(char **l)
{
    for (size_t i = 0; l && l[i]; i++)
        free(l[i]);
    free(l);
}

int cdsh_mcp_import_new(cdsh_mcp_client *client, cdsh_tools *tools,
                        const cdsh_mcp_import_opts *opts, cdsh_mcp_import **out, cdsh_error *err)
{
    if (!client || !tools || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT",
                              "cdsh_mcp_import_new: NULL argument");
    *out = NULL;
    cdsh_mcp_import *imp = calloc(1, sizeof *imp);
    if (!imp)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    imp->client = client;
    imp->tools = tools;
    imp->scope = opts ? opts->scope : NULL;
    imp->enabled = dup_list(opts ? opts->enabled_tools : NULL);
    imp->disabled = dup_list(opts ? opts->disabled_tools : NULL);
    imp->names = json_array();
    pthread_mutex_init(&imp->lock, NULL);
    int rc = import_sync(imp, err);
    if (rc != 0) {
        cdsh_mcp_import_free(imp);
        return rc;
    }
    *out = imp;
    return 0;
}

json_t *cdsh_mcp_import_names(cdsh_mcp_import *imp)
{
    pthread_mutex_lock(&imp->lock);
    json_t *n = json_deep_copy(imp->names);
    pthread_mutex_unlock(&imp->lock);
    return n;
}

void cdsh_mcp_import_free(cdsh_mcp_import *imp)
{
    if (!imp)
        return;
    dispose_all(imp->disposers, imp->count);
    json_decref(imp->names);
    free_list(imp->enabled);
    free_list(imp->disabled);
    pthread_mutex_destroy(&imp->lock);
    free(imp);
}
