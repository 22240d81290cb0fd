/* register_mcp.c — enabled servers: expand references, connect through the
 * MCP client, bridge the tools into the registry, hand the teardown to the
 * plugin context. Names, scrubbing and result mapping are src/proto/mcp's. */
#include "plugins/mcpimport/register_mcp.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "host/host.h"
#include "plugins/mcpimport/vars.h"
#include "proto/mcp/mcp_bridge.h"
#include "proto/mcp/mcp_client.h"

typedef struct link {
    pthread_mutex_t mu;
    cdsh_mcp_client *client;
    cdsh_mcp_import *imp;
} link;

static void on_event(void *arg, cdsh_mcp_client *client, cdsh_mcp_client_event ev)
{
    (void)client;
    link *l = arg;
    if (ev != CDSH_MCP_EVENT_TOOLS_CHANGED && ev != CDSH_MCP_EVENT_RECONNECTED)
        return;
    pthread_mutex_lock(&l->mu);
    if (l->imp) {
        cdsh_error e = {0};
        if (cdsh_mcp_import_sync(l->imp, &e) != 0)
            cdsh_log_warn("import", "re-registering tools of \"%s\" failed: %s",
                          cdsh_mcp_client_name(l->client), e.message);
    }
    pthread_mutex_unlock(&l->mu);
}

/* Unregister the tools first, then close the connection. */
static void link_dispose(void *arg)
{
    link *l = arg;
    pthread_mutex_lock(&l->mu);
    cdsh_mcp_import *imp = l->imp;
    l->imp = NULL;
    pthread_mutex_unlock(&l->mu);
    cdsh_mcp_import_free(imp);
    cdsh_mcp_client_free(l->client);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

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
        char *s = expand(json_string_value(v), secrets, &missing);
        if (s && !missing)
            json_object_set_new(out, k, json_string(s));
        if (s)
            memset(s, 0, strlen(s));
        free(s);
    }
    return out;
}

static char **string_list(const json_t *arr)
{
    if (!json_is_array(arr))
        return NULL;
    size_t n = json_array_size(arr);
    char **v = calloc(n + 1, sizeof *v);
    for (size_t i = 0; v && i < n; i++)
        v[i] = strdup(json_string_value(json_array_get(arr, i)));
    return v;
}

static void free_list(char **v)
{
    for (char **p = v; p && *p; p++) {
        memset(*p, 0, strlen(*p)); /* arguments may carry a filled-in secret */
        free(*p);
    }
    free(v);
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

int cdsh_mcpimport_register_server(cdsh_plugin_ctx *ctx, const json_t *ir,
                                   cdsh_mcpimport_secrets *secrets, cdsh_error *err)
{
    const char *name = json_string_value(json_object_get(ir, "name"));
    const char *transport = json_string_value(json_object_get(ir, "transport"));
    const char *command = json_string_value(json_object_get(ir, "command"));
    const char *url = json_string_value(json_object_get(ir, "url"));
    bool stdio = transport && strcmp(transport, "stdio") == 0;
    if (!name || !transport || (stdio && !command) || (!stdio && !url))
        return cdsh_error_set(err, CDSH_EINVAL, "NOT_CONNECTABLE",
                              "server \"%s\" has no usable transport", name ? name : "?");
    int rc = 0;
    char **argv = NULL, *url_x = NULL, *cwd_x = NULL;
    char **enabled = string_list(json_object_get(ir, "enabledTools"));
    char **disabled = string_list(json_object_get(ir, "disabledTools"));
    json_t *env = NULL, *headers = NULL;
    link *l = calloc(1, sizeof *l);
    if (!l) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto done;
    }
    pthread_mutex_init(&l->mu, NULL);
    cdsh_mcp_client_opts o = {
        .name = name, .reconnect = true, .on_event = on_event, .event_arg = l};
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
        argv[0] = expand(command, secrets, NULL);
        for (size_t i = 0; i < json_array_size(args); i++)
            argv[i + 1] = expand(json_string_value(json_array_get(args, i)), secrets, NULL);
        env = expand_map(json_object_get(ir, "env"), secrets);
        const char *cwd = json_string_value(json_object_get(ir, "cwd"));
        cwd_x = cwd ? expand(cwd, secrets, NULL) : NULL;
        o.argv = (const char *const *)argv;
        o.env = env;
        o.cwd = cwd_x;
    } else {
        url_x = expand(url, secrets, NULL);
        headers = expand_map(json_object_get(ir, "headers"), secrets);
        o.url = url_x;
        o.headers = headers;
    }
    rc = cdsh_mcp_client_connect(&o, &l->client, err);
    if (rc != 0)
        goto done;
    cdsh_mcp_import_opts io = {.enabled_tools = (const char *const *)enabled,
                               .disabled_tools = (const char *const *)disabled};
    cdsh_mcp_import *imp = NULL;
    rc = cdsh_mcp_import_new(l->client, cdsh_host_tools(cdsh_ctx_host(ctx)), &io, &imp, err);
    if (rc != 0)
        goto done;
    pthread_mutex_lock(&l->mu);
    l->imp = imp;
    pthread_mutex_unlock(&l->mu);
    cdsh_disposer_t d = {link_dispose, l};
    l = NULL; /* the context owns it now, even when adopt fails (it runs the disposer) */
    rc = cdsh_ctx_adopt(ctx, d, err);
done:
    if (l) {
        cdsh_mcp_client_free(l->client);
        pthread_mutex_destroy(&l->mu);
        free(l);
    }
    free_list(argv);
    free(url_x), free(cwd_x);
    free_list(enabled), free_list(disabled);
    if (env)
        wipe_map(env);
    if (headers)
        wipe_map(headers);
    return rc;
}
