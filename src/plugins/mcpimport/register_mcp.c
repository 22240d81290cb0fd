/* register_mcp.c — enabled servers, connected lazily: tools come from the
 * tool list cached at the last connection (re-validated by the first call)
 * or, with no valid cache, from a connection made when the model's tool
 * list is assembled. No CLI start spawns a server by itself. Names,
 * scrubbing and result mapping are src/proto/mcp's. */
#include "plugins/mcpimport/register_mcp.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/hash.h"
#include "base/home.h"
#include "base/log.h"
#include "host/dispatch.h"
#include "host/host.h"
#include "host/prompt.h"
#include "plugins/mcpimport/plugin.h"
#include "plugins/mcpimport/vars.h"
#include "proto/mcp/mcp.h"
#include "proto/mcp/mcp_bridge.h"
#include "proto/mcp/mcp_client.h"

#define CACHE_VERSION 1
#define CACHE_MAX_BYTES (16u << 20)
#define RETRY_AFTER_MS 30000 /* a failed connect is retried by the next tool listing after this */

/* Locks, in the order they may be taken: conn_mu (held across a connect),
 * reg_mu (the registered generation), mu (refs, client, closed). A tool's
 * free_ud takes only mu, so disposing registrations under reg_mu is safe. */
typedef struct server {
    pthread_mutex_t conn_mu, reg_mu, mu;
    int refs; /* the plugin's disposer + one per registered tool + the tool source */
    bool closed;
    json_t *ir;                      /* own copy */
    cdsh_mcpimport_secrets *secrets; /* the scan's; used only while !closed (under conn_mu) */
    cdsh_tools *tools;
    cdsh_mcp_client *client;
    char *name;
    char **enabled, **disabled;
    char *cache_dir, *cache_path; /* NULL when the cdsh home is unknown */
    char fingerprint[CDSH_SHA256_HEX_LEN + 1];
    json_t *listed;       /* the list the registered generation comes from (NULL: none yet) */
    bool listed_is_live;  /* listed came from a connection, not the cache */
    cdsh_disposer_t *undo;
    size_t nundo;
    int64_t failed_at_ms; /* last failed connect (monotonic), 0 = none */
} server;

typedef struct proxy {
    server *s;
    char *raw;
    char pub[CDSH_MCP_PUBLIC_NAME_MAX + 1];
} proxy;

/* Frees an argv whose arguments may carry a filled-in secret: wiped first. */
static void argv_wipe_free(char **v)
{
    for (char **p = v; p && *p; p++)
        memset(*p, 0, strlen(*p));
    cdsh_mcpimport_strv_free(v);
}

static void server_unref(server *s)
{
    pthread_mutex_lock(&s->mu);
    int left = --s->refs;
    pthread_mutex_unlock(&s->mu);
    if (left > 0)
        return;
    cdsh_mcp_client_free(s->client);
    json_decref(s->ir);
    json_decref(s->listed);
    free(s->undo);
    free(s->name);
    free(s->cache_path);
    free(s->cache_dir);
    cdsh_mcpimport_strv_free(s->enabled);
    cdsh_mcpimport_strv_free(s->disabled);
    pthread_mutex_destroy(&s->conn_mu);
    pthread_mutex_destroy(&s->reg_mu);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static void server_ref(server *s)
{
    pthread_mutex_lock(&s->mu);
    s->refs++;
    pthread_mutex_unlock(&s->mu);
}

/* ---- the cache ---------------------------------------------------------------- */

/* What decides whether a cached list still describes the server: how it is
 * started or reached (references unexpanded; their values may change). */
static void fingerprint(const json_t *ir, char out[CDSH_SHA256_HEX_LEN + 1])
{
    static const char *const keys[] = {"name", "transport", "command", "args",
                                       "env",  "cwd",       "url",     "headers"};
    json_t *o = json_object();
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        json_t *v = json_object_get(ir, keys[i]);
        if (v)
            json_object_set(o, keys[i], v);
    }
    char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    if (!text || cdsh_hash_sha256_hex(text, strlen(text), out) != 0)
        out[0] = '\0';
    free(text);
    json_decref(o);
}

/* A usable tool list: an array of objects with distinct string names. */
static bool list_valid(const json_t *list)
{
    if (!json_is_array(list))
        return false;
    size_t n = json_array_size(list);
    for (size_t i = 0; i < n; i++) {
        const char *a = json_string_value(json_object_get(json_array_get(list, i), "name"));
        if (!a)
            return false;
        for (size_t j = 0; j < i; j++)
            if (strcmp(a, json_string_value(json_object_get(json_array_get(list, j), "name"))) ==
                0)
                return false;
    }
    return true;
}

/* The cached list when it matches the server's fingerprint (owned), else NULL. */
static json_t *cache_read(const server *s)
{
    if (!s->cache_path || !s->fingerprint[0])
        return NULL;
    char *text = NULL;
    size_t len = 0;
    if (cdsh_fs_read_file(s->cache_path, CACHE_MAX_BYTES, &text, &len, NULL) != 0)
        return NULL;
    json_t *doc = json_loadb(text, len, 0, NULL);
    free(text);
    json_t *tools = json_object_get(doc, "tools");
    json_t *out = NULL;
    if (json_integer_value(json_object_get(doc, "version")) == CACHE_VERSION &&
        json_is_string(json_object_get(doc, "fingerprint")) &&
        strcmp(json_string_value(json_object_get(doc, "fingerprint")), s->fingerprint) == 0 &&
        list_valid(tools))
        out = json_incref(tools);
    else
        cdsh_log_info("import", "cached tool list of \"%s\" is stale or unreadable; it connects "
                      "when its tools are needed", s->name);
    json_decref(doc);
    return out;
}

static void cache_write(const server *s, const json_t *list)
{
    if (!s->cache_path || !s->cache_dir || !s->fingerprint[0])
        return;
    const char *dir = s->cache_dir;
    json_t *doc = json_pack("{s:i, s:s, s:s, s:O}", "version", CACHE_VERSION, "server", s->name,
                            "fingerprint", s->fingerprint, "tools", list);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    cdsh_error e = {0};
    if (!text || cdsh_fs_mkdir_p(dir, 0700, &e) != 0 ||
        cdsh_fs_write_atomic(s->cache_path, text, strlen(text), 0600, &e) != 0)
        cdsh_log_warn("import", "could not cache the tool list of \"%s\": %s", s->name,
                      e.message[0] ? e.message : "out of memory");
    free(text);
    json_decref(doc);
}

/* ---- the registered generation ------------------------------------------------ */

static int proxy_execute(void *ud, const cdsh_tool_exec *exec, json_t **value);

static json_t *proxy_render(void *ud, const json_t *args, const json_t *value, cdsh_error *err)
{
    (void)args;
    proxy *p = ud;
    char *text = cdsh_mcp_content_text_dup(json_object_get(value, "content"), p->pub);
    if (!text) {
        cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        return NULL;
    }
    json_t *c = cdsh_toolresult_text_content(text);
    free(text);
    return c;
}

static void proxy_free(void *ud)
{
    proxy *p = ud;
    server_unref(p->s);
    free(p->raw);
    free(p);
}

static void undo_all(cdsh_disposer_t *d, size_t n)
{
    for (size_t i = n; i > 0; i--)
        cdsh_disposer_run(&d[i - 1]);
}

/* Replaces the registered generation by one from `list` (borrowed), all or
 * nothing; the old names are freed first (a failure leaves the server with
 * no tools, logged by the caller). Caller holds reg_mu. */
static int register_list(server *s, const json_t *list, cdsh_error *err)
{
    undo_all(s->undo, s->nundo);
    free(s->undo);
    s->undo = NULL;
    s->nundo = 0;
    size_t n = json_array_size(list), k = 0, i;
    cdsh_disposer_t *d = calloc(n ? n : 1, sizeof *d);
    json_t *out_schema = json_pack("{s:s}", "type", "object");
    int rc = 0;
    if (!d || !out_schema) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto fail;
    }
    json_t *t;
    json_array_foreach(list, i, t) {
        const char *raw = json_string_value(json_object_get(t, "name"));
        if (!raw || !cdsh_mcp_import_tool_enabled((const char *const *)s->enabled,
                                                  (const char *const *)s->disabled, raw))
            continue;
        proxy *p = calloc(1, sizeof *p);
        if (!p || !(p->raw = strdup(raw))) {
            free(p);
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
            goto fail;
        }
        p->s = s;
        server_ref(s);
        cdsh_mcp_public_tool_name(s->name, raw, p->pub);
        const char *desc = json_string_value(json_object_get(t, "description"));
        const json_t *params = json_object_get(t, "inputSchema");
        cdsh_tool_def def = {
            .name = p->pub,
            .description = desc ? desc : "",
            .parameters = json_is_object(params) ? params : NULL,
            .output_schema = out_schema,
            .execute = proxy_execute,
            .render = proxy_render,
            .is_concurrency_safe = cdsh_tools_always_safe,
            .ud = p,
            .free_ud = proxy_free,
        };
        rc = cdsh_tools_register(s->tools, NULL, &def, &d[k], err);
        if (rc == CDSH_EUNSUPPORTED) {
            /* Input schema outside the kernel's subset: the server validates. */
            def.parameters = NULL;
            rc = cdsh_tools_register(s->tools, NULL, &def, &d[k], err);
        }
        if (rc != 0) {
            proxy_free(p);
            goto fail;
        }
        k++;
    }
    json_decref(out_schema);
    s->undo = d;
    s->nundo = k;
    return 0;
fail:
    undo_all(d, k);
    free(d);
    json_decref(out_schema);
    return rc;
}

/* Adopts a live list: re-registers and re-caches when it differs from the
 * registered one (a cached list is re-validated this way). */
static void adopt_live(server *s, json_t *live)
{
    pthread_mutex_lock(&s->reg_mu);
    bool same = s->listed && json_equal(s->listed, live);
    if (!same) {
        cdsh_error e = {0};
        if (s->listed)
            cdsh_log_info("import", "server \"%s\" lists other tools than cached; re-registering",
                          s->name);
        if (register_list(s, live, &e) != 0)
            cdsh_log_warn("import", "registering the tools of \"%s\" failed: %s", s->name,
                          e.message);
        json_decref(s->listed);
        s->listed = json_incref(live);
    }
    bool write = !same || !s->listed_is_live;
    s->listed_is_live = true;
    pthread_mutex_unlock(&s->reg_mu);
    if (write)
        cache_write(s, live);
}

static void on_event(void *arg, cdsh_mcp_client *client, cdsh_mcp_client_event ev)
{
    server *s = arg;
    if (ev != CDSH_MCP_EVENT_TOOLS_CHANGED && ev != CDSH_MCP_EVENT_RECONNECTED)
        return;
    pthread_mutex_lock(&s->mu);
    bool closed = s->closed;
    pthread_mutex_unlock(&s->mu);
    json_t *live = closed ? NULL : cdsh_mcp_client_tools_dup(client);
    if (live && list_valid(live))
        adopt_live(s, live);
    json_decref(live);
}

/* ---- connecting ----------------------------------------------------------------- */

static char *expand(const char *s, cdsh_mcpimport_secrets *secrets, bool *missing)
{
    return cdsh_mcpimport_vars_expand_dup(s, cdsh_mcpimport_secrets_get, secrets, missing);
}

/* Object of strings with references filled; optional references that stay
 * unset drop their key (Codex env_http_headers semantics). */
static json_t *expand_map(const json_t *map, cdsh_mcpimport_secrets *secrets)
{
    json_t *out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)map, k, v) {
        bool missing = false;
        char *x = expand(json_string_value(v), secrets, &missing);
        if (x && !missing)
            json_object_set_new(out, k, json_string(x));
        if (x)
            memset(x, 0, strlen(x));
        free(x);
    }
    return out;
}

static void wipe_map(json_t *m)
{
    const char *k;
    json_t *v;
    json_object_foreach(m, k, v) {
        if (json_is_string(v))
            memset((char *)json_string_value(v), 0, json_string_length(v));
    }
    json_decref(m);
}

/* Spawns / reaches the server with references filled. Caller holds conn_mu. */
static int open_client(server *s, cdsh_mcp_client **out, cdsh_error *err)
{
    const json_t *ir = s->ir;
    bool stdio = strcmp(json_string_value(json_object_get(ir, "transport")), "stdio") == 0;
    char **argv = NULL, *url_x = NULL, *cwd_x = NULL;
    json_t *env = NULL, *headers = NULL;
    int rc = 0;
    cdsh_mcp_client_opts o = {
        .name = s->name, .reconnect = true, .on_event = on_event, .event_arg = s};
    const json_t *t = json_object_get(ir, "toolCallTimeoutMs");
    o.call_timeout_ms = json_is_integer(t) ? json_integer_value(t) : 0;
    t = json_object_get(ir, "startupTimeoutMs");
    o.init_timeout_ms = json_is_integer(t) ? json_integer_value(t) : 0;
    if (stdio) {
        const json_t *args = json_object_get(ir, "args");
        argv = calloc(json_array_size(args) + 2, sizeof *argv);
        if (!argv) {
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
            goto done;
        }
        argv[0] = expand(json_string_value(json_object_get(ir, "command")), s->secrets, NULL);
        for (size_t i = 0; i < json_array_size(args); i++)
            argv[i + 1] = expand(json_string_value(json_array_get(args, i)), s->secrets, NULL);
        env = expand_map(json_object_get(ir, "env"), s->secrets);
        const char *cwd = json_string_value(json_object_get(ir, "cwd"));
        cwd_x = cwd ? expand(cwd, s->secrets, NULL) : NULL;
        o.argv = (const char *const *)argv;
        o.env = env;
        o.cwd = cwd_x;
    } else {
        url_x = expand(json_string_value(json_object_get(ir, "url")), s->secrets, NULL);
        headers = expand_map(json_object_get(ir, "headers"), s->secrets);
        o.url = url_x;
        o.headers = headers;
    }
    rc = cdsh_mcp_client_connect(&o, out, err);
done:
    argv_wipe_free(argv);
    free(url_x), free(cwd_x);
    if (env)
        wipe_map(env);
    if (headers)
        wipe_map(headers);
    return rc;
}

/* Connects once (later callers find the client). `retry_gate`: skip when the
 * last attempt failed less than RETRY_AFTER_MS ago (tool listings; a call
 * always tries). */
static int server_connect(server *s, bool retry_gate, cdsh_error *err)
{
    pthread_mutex_lock(&s->conn_mu);
    pthread_mutex_lock(&s->mu);
    bool closed = s->closed, up = s->client != NULL;
    int64_t failed_at = s->failed_at_ms;
    pthread_mutex_unlock(&s->mu);
    int rc = 0;
    if (closed) {
        rc = cdsh_error_set(err, CDSH_ECLOSED, "SERVER_CLOSED",
                            "MCP server \"%s\" was disabled", s->name);
        goto out;
    }
    if (up)
        goto out;
    if (retry_gate && failed_at && cdsh_clock_mono_ms() - failed_at < RETRY_AFTER_MS) {
        rc = cdsh_error_set(err, CDSH_EBUSY, "RETRY_LATER",
                            "MCP server \"%s\" failed to connect moments ago", s->name);
        goto out;
    }
    cdsh_mcp_client *c = NULL;
    rc = open_client(s, &c, err);
    pthread_mutex_lock(&s->mu);
    if (rc == 0)
        s->client = c;
    s->failed_at_ms = rc == 0 ? 0 : cdsh_clock_mono_ms();
    pthread_mutex_unlock(&s->mu);
    if (rc != 0) {
        cdsh_log_warn("import", "server \"%s\" could not be connected: %s", s->name,
                      err ? err->message : "?");
        goto out;
    }
    json_t *live = cdsh_mcp_client_tools_dup(c);
    if (live && list_valid(live))
        adopt_live(s, live);
    json_decref(live);
out:
    pthread_mutex_unlock(&s->conn_mu);
    return rc;
}

static int proxy_execute(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    proxy *p = ud;
    server *s = p->s;
    cdsh_error err = {0};
    if (server_connect(s, false, &err) != 0)
        return cdsh_dispatch_fail(exec, "McpError", err.code, "%s", err.message);
    pthread_mutex_lock(&s->reg_mu);
    bool offered = false;
    size_t i;
    json_t *t;
    json_array_foreach(s->listed, i, t) {
        offered = offered || strcmp(json_string_value(json_object_get(t, "name")), p->raw) == 0;
    }
    pthread_mutex_unlock(&s->reg_mu);
    if (!offered)
        return cdsh_dispatch_fail(exec, "McpError", "TOOL_GONE",
                                  "MCP server \"%s\" no longer offers tool \"%s\"", s->name,
                                  p->raw);
    pthread_mutex_lock(&s->mu);
    cdsh_mcp_client *client = s->client; /* lives as long as this tool's reference */
    pthread_mutex_unlock(&s->mu);
    cdsh_mcp_call_opts co = {.cancel = exec->cancel};
    json_t *res = NULL;
    int rc = cdsh_mcp_client_call(client, p->raw, exec->args, &co, &res, &err);
    if (rc != 0)
        return cdsh_dispatch_fail(exec, "McpError", err.code, "%s", err.message);
    if (json_is_true(json_object_get(res, "isError"))) {
        char *text = cdsh_mcp_content_text_dup(json_object_get(res, "content"), p->pub);
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

/* ---- lifecycle ---------------------------------------------------------------- */

/* The tool source: a server with no valid cache connects when the model's
 * tool list is assembled (cdsh_prompt_tools_dup). */
static int materialize(void *ud, cdsh_cancel *cancel)
{
    (void)cancel; /* the connect has its own startup timeout */
    server *s = ud;
    cdsh_error e = {0};
    int rc = server_connect(s, true, &e);
    return rc == CDSH_EBUSY || rc == CDSH_ECLOSED ? 0 : rc;
}

/* Unregisters the tools, then lets the last reference close the connection
 * (at once unless a call is in flight). */
static void server_dispose(void *arg)
{
    server *s = arg;
    pthread_mutex_lock(&s->conn_mu); /* waits for a connect in progress */
    pthread_mutex_lock(&s->mu);
    s->closed = true;
    s->secrets = NULL;
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(&s->conn_mu);
    pthread_mutex_lock(&s->reg_mu);
    undo_all(s->undo, s->nundo);
    s->nundo = 0;
    pthread_mutex_unlock(&s->reg_mu);
    server_unref(s);
}

int cdsh_mcpimport_register_server(cdsh_plugin_ctx *ctx, const json_t *ir,
                                   cdsh_mcpimport_secrets *secrets, cdsh_error *err)
{
    const char *name = json_string_value(json_object_get(ir, "name"));
    const char *transport = json_string_value(json_object_get(ir, "transport"));
    bool stdio = transport && strcmp(transport, "stdio") == 0;
    if (!name || !transport || (stdio && !json_is_string(json_object_get(ir, "command"))) ||
        (!stdio && !json_is_string(json_object_get(ir, "url"))))
        return cdsh_error_set(err, CDSH_EINVAL, "NOT_CONNECTABLE",
                              "server \"%s\" has no usable transport", name ? name : "?");
    server *s = calloc(1, sizeof *s);
    if (!s)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    pthread_mutex_init(&s->conn_mu, NULL);
    pthread_mutex_init(&s->reg_mu, NULL);
    pthread_mutex_init(&s->mu, NULL);
    s->refs = 1;
    s->ir = json_deep_copy(ir);
    s->secrets = secrets;
    s->tools = cdsh_host_tools(cdsh_ctx_host(ctx));
    s->name = strdup(name);
    s->enabled = cdsh_mcpimport_strv_dup(json_object_get(ir, "enabledTools"));
    s->disabled = cdsh_mcpimport_strv_dup(json_object_get(ir, "disabledTools"));
    char file[64];
    snprintf(file, sizeof file, "%s.json", name); /* server names are [A-Za-z0-9_-]{1,32} */
    s->cache_path = cdsh_home_path_dup(cdsh_ctx_home(ctx), "cache", "import", file, NULL);
    s->cache_dir = cdsh_home_path_dup(cdsh_ctx_home(ctx), "cache", "import", NULL);
    fingerprint(ir, s->fingerprint);
    if (!s->ir || !s->name) {
        server_unref(s);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    json_t *cached = cache_read(s);
    int rc = 0;
    if (cached) {
        pthread_mutex_lock(&s->reg_mu);
        rc = register_list(s, cached, err);
        if (rc == 0)
            s->listed = json_incref(cached);
        pthread_mutex_unlock(&s->reg_mu);
    }
    json_decref(cached);
    cdsh_disposer_t d = {server_dispose, s};
    if (rc != 0) {
        server_dispose(s);
        return rc;
    }
    rc = cdsh_ctx_adopt(ctx, d, err); /* runs the disposer itself on failure */
    if (rc != 0 || cached)
        return rc;
    char pname[64];
    snprintf(pname, sizeof pname, "import:%s", name);
    server_ref(s);
    cdsh_prompt_provider_def src = {.name = pname,
                                    .tools = materialize,
                                    .ud = s,
                                    .free_ud = (void (*)(void *))server_unref};
    return cdsh_prompt_ctx_provide(ctx, &src, err);
}
