/* plugins.c — fibers, the services table and plugin contexts. Starting
 * plugins that waited for a service is deferred until the outermost lifecycle
 * call returns ("settle"), so a dependent never runs against a provider still
 * inside apply. Lock order: the manager's lock before a plugin's; neither is
 * held while apply, a disposer or a listener runs. */
#include "host/plugins.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/config.h"
#include "host/host.h"
#include "host/ptrs.h"

typedef struct stack {
    cdsh_disposer_t *items;
    size_t n, cap;
} stack;

struct cdsh_plugin_ctx {
    atomic_int refs; /* scoped contexts: the owner's handle + the parent's record */
    cdsh_plugin *plugin;
    cdsh_plugin_ctx *parent; /* scoped contexts only */
    cdsh_scope *scope;
    stack effects; /* guarded by plugin->lock */
    bool closed;   /* guarded by plugin->lock; scoped contexts only */
};

struct cdsh_plugin {
    cdsh__plugins *mgr;
    const cdsh_plugin_def *def;
    pthread_mutex_t lock; /* state, error and every context's effects */
    cdsh_plugin_state state;
    json_t *schema;
    json_t *config;
    char *error;
    bool *opt_seen; /* availability of each optional service at the last apply */
    cdsh_plugin_ctx ctx;
};

typedef struct hook {
    char kind[64];
    const void *ptr;
    cdsh__plugins *mgr;
} hook;

typedef struct service {
    char *name;
    void *impl;
    cdsh_plugin *provider;
    cdsh__plugins *mgr;
} service;

struct cdsh__plugins {
    cdsh_host *host;
    pthread_mutex_t lock; /* fibers and services */
    cdsh__ptrs fibers;    /* of cdsh_plugin*, live ones in load order */
    cdsh__ptrs disposed;  /* fibers that ended; kept so handles stay valid */
    cdsh__ptrs services;  /* of service* */
    cdsh__ptrs hooks;     /* of hook*, registration order */
    int depth;
    bool settling, shutting_down;
};

static const char *const STATE_NAMES[] = {"pending",   "loading",  "active",
                                          "unloading", "disposed", "failed"};

const char *cdsh_plugin_state_name(cdsh_plugin_state state)
{
    return (unsigned)state < 6 ? STATE_NAMES[state] : "unknown";
}

static int grow(void **items, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 8;
    void *g = realloc(*items, c * size);
    if (!g)
        return CDSH_ENOMEM;
    *items = g;
    *cap = c;
    return 0;
}

/* ---- manager -------------------------------------------------------------- */

cdsh__plugins *cdsh__plugins_new(cdsh_host *host)
{
    cdsh__plugins *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->host = host;
    pthread_mutex_init(&m->lock, NULL);
    return m;
}

static void unload_to(cdsh_plugin *p, cdsh_plugin_state target);

void cdsh__plugins_shutdown(cdsh__plugins *mgr)
{
    if (!mgr)
        return;
    mgr->shutting_down = true;
    for (size_t i = mgr->fibers.n; i-- > 0;) {
        if (i >= mgr->fibers.n) { /* the list shrank under us: start again at the top */
            i = mgr->fibers.n;
            continue;
        }
        unload_to(mgr->fibers.items[i], CDSH_PLUGIN_DISPOSED);
    }
}

static void free_fibers(cdsh__ptrs *list)
{
    for (size_t i = 0; i < list->n; i++) {
        cdsh_plugin *p = list->items[i];
        free(p->ctx.effects.items);
        json_decref(p->schema);
        json_decref(p->config);
        free(p->error);
        free(p->opt_seen);
        pthread_mutex_destroy(&p->lock);
        free(p);
    }
    cdsh__ptrs_deinit(list);
}

void cdsh__plugins_free(cdsh__plugins *mgr)
{
    if (!mgr)
        return;
    free_fibers(&mgr->fibers);
    free_fibers(&mgr->disposed);
    for (size_t i = 0; i < mgr->services.n; i++) {
        service *s = mgr->services.items[i];
        free(s->name);
        free(s);
    }
    cdsh__ptrs_deinit(&mgr->services);
    for (size_t i = 0; i < mgr->hooks.n; i++)
        free(mgr->hooks.items[i]);
    cdsh__ptrs_deinit(&mgr->hooks);
    pthread_mutex_destroy(&mgr->lock);
    free(mgr);
}

static service *find_service(cdsh__plugins *m, const char *name)
{
    for (size_t i = 0; i < m->services.n; i++) {
        service *s = m->services.items[i];
        if (strcmp(s->name, name) == 0)
            return s;
    }
    return NULL;
}

static bool service_present(cdsh__plugins *m, const char *name)
{
    pthread_mutex_lock(&m->lock);
    bool present = find_service(m, name) != NULL;
    pthread_mutex_unlock(&m->lock);
    return present;
}

static bool requires_met(cdsh_plugin *p)
{
    for (const char *const *r = p->def->requires; r && *r; r++)
        if (!service_present(p->mgr, *r))
            return false;
    return true;
}

static bool optional_changed(cdsh_plugin *p)
{
    size_t i = 0;
    for (const char *const *o = p->def->optional; o && *o; o++, i++)
        if (p->opt_seen && p->opt_seen[i] != service_present(p->mgr, *o))
            return true;
    return false;
}

static bool uses_service(const cdsh_plugin *p, const char *name)
{
    for (const char *const *r = p->def->requires; r && *r; r++)
        if (strcmp(*r, name) == 0)
            return true;
    for (const char *const *o = p->def->optional; o && *o; o++)
        if (strcmp(*o, name) == 0)
            return true;
    return false;
}

/* ---- state and events ----------------------------------------------------- */

static cdsh_plugin_state get_state(cdsh_plugin *p)
{
    pthread_mutex_lock(&p->lock);
    cdsh_plugin_state s = p->state;
    pthread_mutex_unlock(&p->lock);
    return s;
}

static void set_state(cdsh_plugin *p, cdsh_plugin_state s)
{
    pthread_mutex_lock(&p->lock);
    p->state = s;
    pthread_mutex_unlock(&p->lock);
    json_t *ev = json_pack("{s:s, s:s}", "name", p->def->name, "state", cdsh_plugin_state_name(s));
    cdsh_events_emit(cdsh_host_events(p->mgr->host), "plugins/change", NULL, false, ev);
    json_decref(ev);
}

/* Ends a fiber: DISPOSED, and moved off the live list so that lookups and
 * settling stay proportional to the live plugins however often they reload. */
static void bury(cdsh_plugin *p)
{
    set_state(p, CDSH_PLUGIN_DISPOSED);
    cdsh__plugins *m = p->mgr;
    pthread_mutex_lock(&m->lock);
    if (cdsh__ptrs_push(&m->disposed, p) == 0)
        cdsh__ptrs_remove(&m->fibers, p); /* on ENOMEM it stays listed, still DISPOSED */
    pthread_mutex_unlock(&m->lock);
}

static void fail(cdsh_plugin *p, const char *message)
{
    pthread_mutex_lock(&p->lock);
    free(p->error);
    p->error = strdup(message);
    pthread_mutex_unlock(&p->lock);
    set_state(p, CDSH_PLUGIN_FAILED);
    json_t *ev = json_pack("{s:s, s:s}", "name", p->def->name, "message", message);
    cdsh_events_emit(cdsh_host_events(p->mgr->host), "plugin/failed", NULL, false, ev);
    json_decref(ev);
}

/* ---- context stacks ------------------------------------------------------- */

static bool ctx_active_locked(const cdsh_plugin_ctx *ctx)
{
    cdsh_plugin_state s = ctx->plugin->state;
    return (s == CDSH_PLUGIN_LOADING || s == CDSH_PLUGIN_ACTIVE) && !ctx->closed;
}

static int inactive(const cdsh_plugin_ctx *ctx, cdsh_error *err)
{
    const char *state = ctx->closed ? "disposed" : cdsh_plugin_state_name(ctx->plugin->state);
    return cdsh_error_set(err, CDSH_ECLOSED, "INACTIVE_EFFECT",
                          "plugin \"%s\" is not active: effects cannot be added while it is %s",
                          ctx->plugin->def->name, state);
}

static int check_active(cdsh_plugin_ctx *ctx, cdsh_error *err)
{
    if (!ctx)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "plugin context is NULL");
    pthread_mutex_lock(&ctx->plugin->lock);
    int rc = ctx_active_locked(ctx) ? 0 : inactive(ctx, err);
    pthread_mutex_unlock(&ctx->plugin->lock);
    return rc;
}

/* Records d in ctx; if ctx became inactive or memory ran out, undoes d now. */
static int push(cdsh_plugin_ctx *ctx, cdsh_disposer_t d, cdsh_error *err)
{
    if (!d.fn)
        return 0;
    pthread_mutex_lock(&ctx->plugin->lock);
    int rc = 0;
    if (!ctx_active_locked(ctx))
        rc = inactive(ctx, err);
    else if (grow((void **)&ctx->effects.items, &ctx->effects.cap, ctx->effects.n,
                  sizeof *ctx->effects.items) != 0)
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    else
        ctx->effects.items[ctx->effects.n++] = d;
    pthread_mutex_unlock(&ctx->plugin->lock);
    if (rc)
        cdsh_disposer_run(&d);
    return rc;
}

/* Runs every recorded disposer, newest first, without holding the lock. */
static void run_stack(cdsh_plugin_ctx *ctx)
{
    for (;;) {
        pthread_mutex_lock(&ctx->plugin->lock);
        if (ctx->effects.n == 0) {
            pthread_mutex_unlock(&ctx->plugin->lock);
            return;
        }
        cdsh_disposer_t d = ctx->effects.items[--ctx->effects.n];
        pthread_mutex_unlock(&ctx->plugin->lock);
        cdsh_disposer_run(&d);
    }
}

/* ---- lifecycle ------------------------------------------------------------ */

static void settle(cdsh__plugins *m);

static void leave(cdsh__plugins *m)
{
    if (--m->depth == 0)
        settle(m);
}

static int start(cdsh_plugin *p, cdsh_error *err)
{
    set_state(p, CDSH_PLUGIN_LOADING);
    size_t nopt = 0;
    for (const char *const *o = p->def->optional; o && *o; o++)
        nopt++;
    free(p->opt_seen);
    p->opt_seen = calloc(nopt + 1, sizeof *p->opt_seen);
    for (size_t i = 0; p->opt_seen && i < nopt; i++)
        p->opt_seen[i] = service_present(p->mgr, p->def->optional[i]);

    cdsh_error aerr = {0};
    int rc = p->def->apply(&p->ctx, p->config, &aerr);
    /* Unloaded (or sent back to pending by a vanished service) during apply:
     * its disposers already ran and whatever apply failed on since is moot. */
    if (get_state(p) != CDSH_PLUGIN_LOADING)
        return 0;
    if (rc >= 0) {
        set_state(p, CDSH_PLUGIN_ACTIVE);
        return 0;
    }
    /* Undo what apply managed to register, refusing new effects meanwhile. */
    set_state(p, CDSH_PLUGIN_UNLOADING);
    run_stack(&p->ctx);
    char msg[CDSH_ERROR_MESSAGE_MAX + 128];
    snprintf(msg, sizeof msg, "plugin \"%s\" failed to apply: %s", p->def->name,
             aerr.message[0] ? aerr.message : cdsh_strerror(rc));
    fail(p, msg);
    cdsh_error_set(err, rc, aerr.code[0] ? aerr.code : "PLUGIN_FAILED", "%s", msg);
    return rc;
}

static void unload_to(cdsh_plugin *p, cdsh_plugin_state target)
{
    cdsh_plugin_state s = get_state(p);
    if (s == CDSH_PLUGIN_DISPOSED || s == CDSH_PLUGIN_UNLOADING)
        return;
    if (s == CDSH_PLUGIN_PENDING || s == CDSH_PLUGIN_FAILED) {
        if (target == CDSH_PLUGIN_DISPOSED)
            bury(p);
        return;
    }
    cdsh__plugins *m = p->mgr;
    m->depth++;
    set_state(p, CDSH_PLUGIN_UNLOADING);
    /* Dependents of the services this plugin provides go first, so none of
     * them runs against a half-torn-down provider. */
    json_t *provided = json_array(); /* names copied: dependents may withdraw others */
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; provided && i < m->services.n; i++) {
        service *sv = m->services.items[i];
        if (sv->provider == p)
            json_array_append_new(provided, json_string(sv->name));
    }
    pthread_mutex_unlock(&m->lock);
    size_t k;
    json_t *name;
    json_array_foreach(provided, k, name) {
        for (size_t j = 0; j < m->fibers.n; j++) {
            cdsh_plugin *f = m->fibers.items[j];
            cdsh_plugin_state fs = get_state(f);
            if (f != p && (fs == CDSH_PLUGIN_ACTIVE || fs == CDSH_PLUGIN_LOADING) &&
                uses_service(f, json_string_value(name)))
                unload_to(f, CDSH_PLUGIN_PENDING);
        }
    }
    json_decref(provided);
    run_stack(&p->ctx);
    if (target == CDSH_PLUGIN_DISPOSED)
        bury(p);
    else
        set_state(p, target);
    leave(m);
}

static void settle(cdsh__plugins *m)
{
    if (m->settling || m->shutting_down)
        return;
    m->settling = true;
    m->depth++;
    bool changed = true;
    for (int round = 0; changed && round < 1000; round++) {
        changed = false;
        for (size_t i = 0; i < m->fibers.n; i++) {
            cdsh_plugin *f = m->fibers.items[i];
            cdsh_plugin_state s = get_state(f);
            if (s == CDSH_PLUGIN_ACTIVE && (!requires_met(f) || optional_changed(f))) {
                unload_to(f, CDSH_PLUGIN_PENDING);
                changed = true;
            } else if (s == CDSH_PLUGIN_PENDING && f->config && requires_met(f)) {
                start(f, NULL);
                changed = true;
            }
        }
    }
    m->depth--;
    m->settling = false;
}

int cdsh_plugin_load(cdsh_host *host, const cdsh_plugin_def *def, const json_t *config,
                     cdsh_plugin **out, cdsh_error *err)
{
    if (out)
        *out = NULL;
    if (!host || !def || !def->name || !*def->name || !def->apply)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_PLUGIN",
                              "a plugin descriptor needs a name and an apply function");
    cdsh__plugins *m = cdsh__host_plugins(host);
    cdsh_plugin *old = cdsh_host_plugin_find(host, def->name);
    if (old && get_state(old) == CDSH_PLUGIN_FAILED)
        unload_to(old, CDSH_PLUGIN_DISPOSED); /* a failed load may be retried */
    else if (old)
        return cdsh_error_set(err, CDSH_EEXIST, "PLUGIN_EXISTS", "plugin \"%s\" is already loaded",
                              def->name);
    cdsh_plugin *p = calloc(1, sizeof *p);
    if (!p)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    p->mgr = m;
    p->def = def;
    pthread_mutex_init(&p->lock, NULL);
    p->state = CDSH_PLUGIN_PENDING;
    atomic_init(&p->ctx.refs, 1);
    p->ctx.plugin = p;
    pthread_mutex_lock(&m->lock);
    int grc = cdsh__ptrs_push(&m->fibers, p);
    pthread_mutex_unlock(&m->lock);
    if (grc) {
        pthread_mutex_destroy(&p->lock);
        free(p);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    if (out)
        *out = p;

    m->depth++;
    int rc = 0;
    cdsh_error cerr = {0};
    json_error_t jerr;
    p->schema = def->config_schema ? json_loads(def->config_schema, 0, &jerr)
                                   : json_pack("{s:s}", "type", "object");
    if (!p->schema) {
        rc = cdsh_error_set(&cerr, CDSH_EUNSUPPORTED, "UNSUPPORTED_SCHEMA",
                            "plugin \"%s\": config schema is not JSON: %s", def->name, jerr.text);
    } else if ((rc = cdsh_config_schema_check(p->schema, &cerr)) == 0) {
        rc = cdsh_config_resolve(p->schema, config, &p->config, NULL, &cerr);
    }
    if (rc) {
        fail(p, cerr.message);
        if (err)
            *err = cerr;
    } else if (requires_met(p)) {
        rc = start(p, err);
    } else {
        set_state(p, CDSH_PLUGIN_PENDING);
    }
    leave(m);
    return rc;
}

void cdsh_plugin_unload(cdsh_plugin *plugin)
{
    if (plugin)
        unload_to(plugin, CDSH_PLUGIN_DISPOSED);
}

cdsh_plugin_state cdsh_plugin_state_get(const cdsh_plugin *plugin)
{
    return get_state((cdsh_plugin *)plugin);
}

const char *cdsh_plugin_name(const cdsh_plugin *plugin)
{
    return plugin->def->name;
}

const cdsh_plugin_def *cdsh_plugin_def_get(const cdsh_plugin *plugin)
{
    return plugin->def;
}

const char *cdsh_plugin_error(const cdsh_plugin *plugin)
{
    return get_state((cdsh_plugin *)plugin) == CDSH_PLUGIN_FAILED ? plugin->error : NULL;
}

const json_t *cdsh_plugin_config(const cdsh_plugin *plugin)
{
    return plugin->config;
}

size_t cdsh_plugin_effect_count(cdsh_plugin *plugin)
{
    pthread_mutex_lock(&plugin->lock);
    size_t n = plugin->ctx.effects.n;
    pthread_mutex_unlock(&plugin->lock);
    return n;
}

cdsh_plugin *cdsh_host_plugin_find(cdsh_host *host, const char *name)
{
    cdsh__plugins *m = cdsh__host_plugins(host);
    cdsh_plugin *found = NULL;
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < m->fibers.n && !found; i++) {
        cdsh_plugin *p = m->fibers.items[i];
        if (strcmp(p->def->name, name) == 0 && get_state(p) != CDSH_PLUGIN_DISPOSED)
            found = p;
    }
    pthread_mutex_unlock(&m->lock);
    return found;
}

json_t *cdsh_host_plugins_list(cdsh_host *host)
{
    cdsh__plugins *m = cdsh__host_plugins(host);
    json_t *arr = json_array();
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; arr && i < m->fibers.n; i++) {
        cdsh_plugin *p = m->fibers.items[i];
        pthread_mutex_lock(&p->lock);
        if (p->state != CDSH_PLUGIN_DISPOSED) {
            json_t *o = json_pack("{s:s, s:s}", "name", p->def->name, "state",
                                  cdsh_plugin_state_name(p->state));
            if (o && p->state == CDSH_PLUGIN_FAILED && p->error)
                json_object_set_new(o, "error", json_string(p->error));
            json_array_append_new(arr, o);
        }
        pthread_mutex_unlock(&p->lock);
    }
    pthread_mutex_unlock(&m->lock);
    return arr;
}

/* ---- context accessors ---------------------------------------------------- */

cdsh_host *cdsh_ctx_host(const cdsh_plugin_ctx *ctx)
{
    return ctx->plugin->mgr->host;
}

const cdsh_home *cdsh_ctx_home(const cdsh_plugin_ctx *ctx)
{
    return cdsh_host_home(ctx->plugin->mgr->host);
}

const char *cdsh_ctx_name(const cdsh_plugin_ctx *ctx)
{
    return ctx->plugin->def->name;
}

cdsh_scope *cdsh_ctx_scope(const cdsh_plugin_ctx *ctx)
{
    return ctx->scope;
}

const json_t *cdsh_ctx_config(const cdsh_plugin_ctx *ctx)
{
    return ctx->plugin->config;
}

cdsh_plugin *cdsh_ctx_plugin_get(const cdsh_plugin_ctx *ctx)
{
    return ctx->plugin;
}

/* ---- registrations through a context -------------------------------------- */

int cdsh_ctx_register_tool(cdsh_plugin_ctx *ctx, const cdsh_tool_def *def, cdsh_error *err)
{
    int rc = check_active(ctx, err);
    cdsh_disposer_t d = {0};
    if (rc == 0)
        rc = cdsh_tools_register(cdsh_host_tools(cdsh_ctx_host(ctx)), ctx->scope, def, &d, err);
    if (rc) {
        /* The registry did not take ud: release it here so ownership always passes. */
        if (def && def->free_ud)
            def->free_ud(def->ud);
        return rc;
    }
    return push(ctx, d, err);
}

int cdsh_ctx_restrict_tools(cdsh_plugin_ctx *ctx, const char *const *allow, const char *const *deny,
                            cdsh_error *err)
{
    int rc = check_active(ctx, err);
    cdsh_disposer_t d = {0};
    if (rc == 0)
        rc = cdsh_tools_restrict(cdsh_host_tools(cdsh_ctx_host(ctx)), ctx->scope, allow, deny, &d,
                                 err);
    return rc ? rc : push(ctx, d, err);
}

int cdsh_ctx_guard_tools(cdsh_plugin_ctx *ctx, cdsh_tools_guard_fn fn, void *ud,
                         void (*free_ud)(void *), cdsh_error *err)
{
    int rc = check_active(ctx, err);
    cdsh_disposer_t d = {0};
    if (rc == 0)
        rc = cdsh_tools_guard(cdsh_host_tools(cdsh_ctx_host(ctx)), ctx->scope, fn, ud, free_ud, &d,
                              err);
    return rc ? rc : push(ctx, d, err);
}

int cdsh_ctx_on_pre_execute(cdsh_plugin_ctx *ctx, cdsh_tools_pre_fn fn, void *ud,
                            void (*free_ud)(void *), cdsh_error *err)
{
    int rc = check_active(ctx, err);
    cdsh_disposer_t d = {0};
    if (rc == 0)
        rc = cdsh_tools_on_pre_execute(cdsh_host_tools(cdsh_ctx_host(ctx)), ctx->scope, fn, ud,
                                       free_ud, &d, err);
    return rc ? rc : push(ctx, d, err);
}

int cdsh_ctx_on_post_execute(cdsh_plugin_ctx *ctx, cdsh_tools_post_fn fn, void *ud,
                             void (*free_ud)(void *), cdsh_error *err)
{
    int rc = check_active(ctx, err);
    cdsh_disposer_t d = {0};
    if (rc == 0)
        rc = cdsh_tools_on_post_execute(cdsh_host_tools(cdsh_ctx_host(ctx)), ctx->scope, fn, ud,
                                        free_ud, &d, err);
    return rc ? rc : push(ctx, d, err);
}

int cdsh_ctx_on_execute(cdsh_plugin_ctx *ctx, cdsh_tools_around_fn fn, void *ud,
                        void (*free_ud)(void *), cdsh_error *err)
{
    int rc = check_active(ctx, err);
    cdsh_disposer_t d = {0};
    if (rc == 0)
        rc = cdsh_tools_on_execute(cdsh_host_tools(cdsh_ctx_host(ctx)), ctx->scope, fn, ud, free_ud,
                                   &d, err);
    return rc ? rc : push(ctx, d, err);
}

int cdsh_ctx_set_approval(cdsh_plugin_ctx *ctx, const cdsh_approval_service *approval,
                          cdsh_error *err)
{
    int rc = check_active(ctx, err);
    cdsh_disposer_t d = {0};
    if (rc == 0)
        rc = cdsh_tools_set_approval(cdsh_host_tools(cdsh_ctx_host(ctx)), approval, &d, err);
    return rc ? rc : push(ctx, d, err);
}

int cdsh_ctx_register_command(cdsh_plugin_ctx *ctx, const cdsh_command_def *def, cdsh_error *err)
{
    int rc = check_active(ctx, err);
    cdsh_disposer_t d = {0};
    if (rc == 0)
        rc = cdsh_commands_register(cdsh_host_commands(cdsh_ctx_host(ctx)), ctx->scope, def, &d,
                                    err);
    return rc ? rc : push(ctx, d, err);
}

int cdsh_ctx_register_skill(cdsh_plugin_ctx *ctx, const cdsh_skill_def *def, cdsh_error *err)
{
    int rc = check_active(ctx, err);
    cdsh_disposer_t d = {0};
    if (rc == 0) {
        cdsh_skill_def copy = def ? *def : (cdsh_skill_def){0};
        if (!copy.source)
            copy.source = ctx->plugin->def->name;
        rc = cdsh_skills_register(cdsh_host_skills(cdsh_ctx_host(ctx)), ctx->scope,
                                  def ? &copy : NULL, &d, err);
    }
    return rc ? rc : push(ctx, d, err);
}

int cdsh_ctx_rpc_handle(cdsh_plugin_ctx *ctx, const char *channel, cdsh_rpc_fn fn, void *arg,
                        cdsh_error *err)
{
    int rc = check_active(ctx, err);
    cdsh_disposer_t d = {0};
    if (rc == 0)
        rc = cdsh_rpc_handle(cdsh_host_rpc(cdsh_ctx_host(ctx)), channel, fn, arg, &d, err);
    return rc ? rc : push(ctx, d, err);
}

int cdsh_ctx_rpc_intercept(cdsh_plugin_ctx *ctx, const char *channel, cdsh_rpc_match_fn matches,
                           cdsh_rpc_fn fn, void *arg, cdsh_error *err)
{
    int rc = check_active(ctx, err);
    cdsh_disposer_t d = {0};
    if (rc == 0)
        rc = cdsh_rpc_intercept(cdsh_host_rpc(cdsh_ctx_host(ctx)), channel, matches, fn, arg, &d,
                                err);
    return rc ? rc : push(ctx, d, err);
}

int cdsh_ctx_on(cdsh_plugin_ctx *ctx, const char *pattern, cdsh_event_fn fn, void *arg,
                cdsh_error *err)
{
    int rc = check_active(ctx, err);
    cdsh_disposer_t d = {0};
    if (rc == 0)
        rc = cdsh_events_on(cdsh_host_events(cdsh_ctx_host(ctx)), pattern, ctx->scope, fn, arg, &d,
                            err);
    return rc ? rc : push(ctx, d, err);
}

int cdsh_ctx_effect(cdsh_plugin_ctx *ctx, cdsh_effect_fn start_fn, void *arg, cdsh_error *err)
{
    if (!start_fn)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "effect needs a start function");
    int rc = check_active(ctx, err);
    cdsh_disposer_t d = {0};
    if (rc == 0)
        rc = start_fn(arg, &d, err);
    return rc ? rc : push(ctx, d, err);
}

int cdsh_ctx_adopt(cdsh_plugin_ctx *ctx, cdsh_disposer_t disposer, cdsh_error *err)
{
    if (!ctx) {
        cdsh_disposer_run(&disposer);
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "plugin context is NULL");
    }
    return push(ctx, disposer, err);
}

/* ---- services ------------------------------------------------------------- */

static void withdraw(void *arg)
{
    service *s = arg;
    cdsh__plugins *m = s->mgr;
    pthread_mutex_lock(&m->lock);
    cdsh__ptrs_remove(&m->services, s);
    pthread_mutex_unlock(&m->lock);
    free(s->name);
    free(s);
}

int cdsh_ctx_provide(cdsh_plugin_ctx *ctx, const char *name, void *impl, cdsh_error *err)
{
    if (!name || !*name || !impl)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT",
                              "a service needs a name and a non-NULL value");
    int rc = check_active(ctx, err);
    if (rc)
        return rc;
    cdsh__plugins *m = ctx->plugin->mgr;
    service *s = calloc(1, sizeof *s);
    if (!s || !(s->name = strdup(name))) {
        free(s);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    s->impl = impl;
    s->provider = ctx->plugin;
    s->mgr = m;
    pthread_mutex_lock(&m->lock);
    service *old = find_service(m, name);
    if (old) {
        rc = cdsh_error_set(err, CDSH_EEXIST, "SERVICE_EXISTS",
                            "service \"%s\" is already provided by plugin \"%s\"", name,
                            old->provider->def->name);
    } else if (cdsh__ptrs_push(&m->services, s) != 0) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    pthread_mutex_unlock(&m->lock);
    if (rc) {
        free(s->name);
        free(s);
        return rc;
    }
    return push(ctx, (cdsh_disposer_t){withdraw, s}, err);
}

/* ---- hooks ---------------------------------------------------------------- */

static void hook_remove(void *arg)
{
    hook *h = arg;
    cdsh__plugins *m = h->mgr;
    pthread_mutex_lock(&m->lock);
    cdsh__ptrs_remove(&m->hooks, h);
    pthread_mutex_unlock(&m->lock);
    free(h);
}

int cdsh_ctx_hook(cdsh_plugin_ctx *ctx, const char *kind, const void *ptr, cdsh_error *err)
{
    if (!kind || !*kind || strlen(kind) >= sizeof ((hook *)0)->kind || !ptr)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT",
                              "a hook needs a kind (1 to 63 bytes) and a non-NULL pointer");
    int rc = check_active(ctx, err);
    if (rc)
        return rc;
    cdsh__plugins *m = ctx->plugin->mgr;
    hook *h = calloc(1, sizeof *h);
    if (!h)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    snprintf(h->kind, sizeof h->kind, "%s", kind);
    h->ptr = ptr;
    h->mgr = m;
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; rc == 0 && i < m->hooks.n; i++) {
        const hook *o = m->hooks.items[i];
        if (o->ptr == ptr && strcmp(o->kind, kind) == 0)
            rc = cdsh_error_set(err, CDSH_EEXIST, "HOOK_EXISTS",
                                "this %s hook is already registered", kind);
    }
    if (rc == 0 && cdsh__ptrs_push(&m->hooks, h) != 0)
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    pthread_mutex_unlock(&m->lock);
    if (rc) {
        free(h);
        return rc;
    }
    return push(ctx, (cdsh_disposer_t){hook_remove, h}, err);
}

const void **cdsh_host_hooks_dup(cdsh_host *host, const char *kind)
{
    cdsh__plugins *m = cdsh__host_plugins(host);
    pthread_mutex_lock(&m->lock);
    const void **out = calloc(m->hooks.n + 1, sizeof *out);
    size_t n = 0;
    for (size_t i = 0; out && kind && i < m->hooks.n; i++) {
        const hook *h = m->hooks.items[i];
        if (strcmp(h->kind, kind) == 0)
            out[n++] = h->ptr;
    }
    pthread_mutex_unlock(&m->lock);
    return out;
}

void *cdsh_host_service(cdsh_host *host, const char *name)
{
    cdsh__plugins *m = cdsh__host_plugins(host);
    if (!name)
        return NULL;
    pthread_mutex_lock(&m->lock);
    service *s = find_service(m, name);
    void *impl = s ? s->impl : NULL;
    pthread_mutex_unlock(&m->lock);
    return impl;
}

void *cdsh_ctx_get(cdsh_plugin_ctx *ctx, const char *name)
{
    /* Only declared services: an undeclared one could vanish under the plugin. */
    if (!ctx || !name || !uses_service(ctx->plugin, name))
        return NULL;
    return cdsh_host_service(cdsh_ctx_host(ctx), name);
}

/* ---- child plugins and scoped contexts ------------------------------------ */

static void unload_child(void *arg)
{
    cdsh_plugin_unload(arg);
}

int cdsh_ctx_plugin(cdsh_plugin_ctx *ctx, const cdsh_plugin_def *def, const json_t *config,
                    cdsh_plugin **out, cdsh_error *err)
{
    if (out)
        *out = NULL;
    int rc = check_active(ctx, err);
    if (rc)
        return rc;
    cdsh_plugin *child = NULL;
    rc = cdsh_plugin_load(cdsh_ctx_host(ctx), def, config, &child, err);
    if (out)
        *out = child;
    if (rc == 0)
        rc = push(ctx, (cdsh_disposer_t){unload_child, child}, err);
    return rc;
}

static void scoped_unref(cdsh_plugin_ctx *s)
{
    if (atomic_fetch_sub(&s->refs, 1) == 1) {
        cdsh_scope_unref(s->scope);
        free(s->effects.items);
        free(s);
    }
}

static void scoped_close(cdsh_plugin_ctx *s)
{
    pthread_mutex_lock(&s->plugin->lock);
    bool was_closed = s->closed;
    s->closed = true;
    pthread_mutex_unlock(&s->plugin->lock);
    if (!was_closed)
        run_stack(s);
}

/* The record in the parent's stack: the plugin unloads (or the parent closes). */
static void scoped_dispose_from_parent(void *arg)
{
    cdsh_plugin_ctx *s = arg;
    scoped_close(s);
    scoped_unref(s);
}

cdsh_plugin_ctx *cdsh_ctx_scoped_new(cdsh_plugin_ctx *ctx, cdsh_scope *scope, cdsh_error *err)
{
    if (!scope) {
        cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "a scoped context needs a scope");
        return NULL;
    }
    if (check_active(ctx, err) != 0)
        return NULL;
    cdsh_plugin_ctx *s = calloc(1, sizeof *s);
    if (!s) {
        cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        return NULL;
    }
    atomic_init(&s->refs, 2);
    s->plugin = ctx->plugin;
    s->parent = ctx;
    s->scope = cdsh_scope_ref(scope);
    if (push(ctx, (cdsh_disposer_t){scoped_dispose_from_parent, s}, err) != 0) {
        /* push already ran the record (closed + one unref); drop the owner's ref. */
        scoped_unref(s);
        return NULL;
    }
    return s;
}

void cdsh_ctx_scoped_free(cdsh_plugin_ctx *scoped)
{
    if (!scoped || !scoped->parent)
        return;
    cdsh_plugin_ctx *parent = scoped->parent;
    bool found = false;
    pthread_mutex_lock(&scoped->plugin->lock);
    /* A closed scoped context's record was already taken by its parent. */
    for (size_t i = scoped->closed ? 0 : parent->effects.n; i-- > 0;) {
        cdsh_disposer_t *d = &parent->effects.items[i];
        if (d->fn == scoped_dispose_from_parent && d->arg == scoped) {
            memmove(d, d + 1, (parent->effects.n - i - 1) * sizeof *d);
            parent->effects.n--;
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&scoped->plugin->lock);
    scoped_close(scoped);
    if (found)
        scoped_unref(scoped);
    scoped_unref(scoped);
}
