/* plugin.c — the "facade" plugin: creates and provides the capabilities
 * service, then declares the profile's capabilities through its own context
 * (they belong to the profile, hence to this plugin). Validation, tools and
 * execution are service.c's. */
#include "plugins/facade/plugin.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "host/host.h"
#include "plugins/facade/cmd_facade.h"
#include "plugins/facade/service.h"

typedef struct state {
    cdsh_facade *facade;
    cdsh_plugin_ctx *ctx;
    json_t *decls; /* the config's declarations (borrowed from the fiber's config) */
    bool *waiting; /* decls[i] failed only on a missing step tool */
    char **last;   /* decls[i]'s last reported problem (reported once) */
    size_t n;
    pthread_mutex_t lock;
    bool busy, again; /* a retry pass is running / a change arrived meanwhile */
} state;

static void state_free(void *arg)
{
    state *st = arg;
    cdsh_facade_free(st->facade);
    for (size_t i = 0; st->last && i < st->n; i++)
        free(st->last[i]);
    free(st->last);
    free(st->waiting);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

/* Tries declaration i; reports or clears its problem. */
static void declare(state *st, size_t i)
{
    const json_t *decl = json_array_get(st->decls, i);
    cdsh_error err = {0};
    int rc = cdsh_facade_register(st->facade, st->ctx, decl, NULL, NULL, &err);
    st->waiting[i] = rc == CDSH_ENOTFOUND;
    if (rc == 0) {
        cdsh_facade_set_problem(st->facade, i, NULL);
        return;
    }
    const char *id = json_string_value(json_object_get(decl, "id"));
    json_t *p = json_pack("{s:I, s:s?, s:s, s:s}", "index", (json_int_t)i, "id", id, "code",
                          err.code, "message", err.message);
    cdsh_facade_set_problem(st->facade, i, p);
    json_decref(p);
    /* Retries after every tools/change would repeat the same warning. */
    if (st->last[i] && strcmp(st->last[i], err.message) == 0)
        return;
    free(st->last[i]);
    st->last[i] = strdup(err.message);
    cdsh_log_warn("facade", "profile capability %zu: %s", i, err.message);
    json_t *w = json_pack("{s:s, s:s}", "source", CDSH_FACADE_PLUGIN, "message", err.message);
    cdsh_events_emit(cdsh_host_events(cdsh_ctx_host(st->ctx)), "log/warning", NULL, false, w);
    json_decref(w);
}

/* Declares every waiting declaration, pass after pass while tools keep
 * arriving. Our own registrations re-enter through tools/change; `busy`
 * turns those (and concurrent changes on other threads) into one more pass. */
static void retry(state *st)
{
    pthread_mutex_lock(&st->lock);
    if (st->busy) {
        st->again = true;
        pthread_mutex_unlock(&st->lock);
        return;
    }
    st->busy = true;
    do {
        st->again = false;
        pthread_mutex_unlock(&st->lock);
        for (size_t i = 0; i < st->n; i++)
            if (st->waiting[i])
                declare(st, i);
        pthread_mutex_lock(&st->lock);
    } while (st->again);
    st->busy = false;
    pthread_mutex_unlock(&st->lock);
}

static void on_tools_change(void *arg, const char *name, const cdsh_scope *scope,
                            const json_t *payload)
{
    (void)name, (void)scope;
    const char *reason = json_string_value(json_object_get(payload, "reason"));
    if (reason && strcmp(reason, "register") == 0)
        retry(arg);
}

static int apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    state *st = calloc(1, sizeof *st);
    if (!st)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    pthread_mutex_init(&st->lock, NULL);
    st->ctx = ctx;
    st->decls = json_object_get(config, "capabilities");
    st->n = json_array_size(st->decls);
    st->facade = cdsh_facade_new();
    st->waiting = calloc(st->n ? st->n : 1, sizeof *st->waiting);
    st->last = calloc(st->n ? st->n : 1, sizeof *st->last);
    if (!st->facade || !st->waiting || !st->last) {
        state_free(st);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    for (size_t i = 0; i < st->n; i++)
        st->waiting[i] = true; /* the first pass declares them all */
    /* Adopted first so it is freed last, after every capability is withdrawn. */
    int rc = cdsh_ctx_adopt(ctx, (cdsh_disposer_t){state_free, st}, err);
    if (rc == 0)
        rc = cdsh_ctx_provide(ctx, CDSH_FACADE_SERVICE, st->facade, err);
    if (rc == 0 && st->n > 0)
        rc = cdsh_ctx_on(ctx, "tools/change", on_tools_change, st, err);
    if (rc == 0)
        retry(st);
    return rc;
}

static const char *const requires_[] = {NULL};
/* After every other plugin: capabilities are declared over their tools. */
static const char *const facade_after[] = {"*", NULL};

const cdsh_plugin_def cdsh_facade_plugin = {
    .name = CDSH_FACADE_PLUGIN,
    .description = "capability facade: declared tool pipelines as model-facing operations",
    .requires = requires_,
    .config_schema = "{\"type\":\"object\",\"properties\":{\"capabilities\":{\"type\":\"array\","
                     "\"default\":[],\"description\":\"capability declarations: {id, description, "
                     "operations:[{name, description, parameters?, steps:[{tool, from?}]}]}\","
                     "\"items\":{\"type\":\"object\",\"additionalProperties\":true}}}}",
    .enabled_by_default = true,
    .apply = apply,
    .subcommands = cdsh_facade_subcommands,
    .after = facade_after,
};
