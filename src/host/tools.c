/* tools.c — the tool registry: layers keyed by scope, the single visibility
 * resolver (§4), restrict() masks, guards, hook snapshots and the approval
 * slot. Dispatch lives in dispatch.c; this file never runs a tool body.
 * Lock order: `lock` (registry state) before `life` (closing vs emitting);
 * neither is held while user code runs, except that event listeners run
 * under `life` read-locked (which only excludes cdsh_tools_free). */
#include "host/tools.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "base/schema.h"
#include "base/strbuf.h"
#include "host/tools_priv.h"

#define RUN_CODE "run_code"
#define NAME_MAX_LEN 64

typedef struct mask {
    char **allow; /* NULL = absent */
    size_t nallow;
    char **deny; /* NULL = absent */
    size_t ndeny;
} mask;

typedef struct layer {
    cdsh_scope *scope;  /* referenced; NULL = global */
    cdsh__tool **items; /* registration order */
    size_t n, cap;
    cdsh__tool **slots; /* open addressing by name, rebuilt on change */
    size_t nslots;
    mask **masks;
    size_t nmasks, capmasks;
} layer;

/* A disposable registration other than a tool (mask, hook, approval). */
typedef struct ticket {
    cdsh_tools *tools;
    cdsh_scope *scope;
    mask *m;
    cdsh__hook *hook;
    uint64_t approval_id;
} ticket;

struct cdsh_tools {
    atomic_int refs;
    pthread_rwlock_t lock;
    pthread_rwlock_t life;
    cdsh_events *bus;
    bool closed;
    layer **layers; /* layers[0] is global */
    size_t nlayers, caplayers;
    cdsh__hook **hooks; /* every hook in registration order */
    size_t nhooks, caphooks;
    cdsh__hookset *hookset; /* current snapshot */
    bool has_approval;
    cdsh_approval_service approval;
    uint64_t approval_id, next_approval_id;
    atomic_uint max_depth;
    _Atomic int64_t grace_ms;
    pthread_mutex_t hold_lock;
    pthread_cond_t hold_cond;
    size_t holds;
};

/* ---- small helpers ------------------------------------------------------ */

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool valid_name(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > NAME_MAX_LEN)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

static bool in_list(char *const *list, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0)
            return true;
    return false;
}

static bool grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t ncap = *cap ? *cap * 2 : 8;
    while (ncap < need)
        ncap *= 2;
    void *p = realloc(*arr, ncap * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = ncap;
    return true;
}

/* ---- tool and hook entries ------------------------------------------------ */

void cdsh__tool_ref(cdsh__tool *tool)
{
    if (tool)
        atomic_fetch_add(&tool->refs, 1);
}

void cdsh__tool_unref(cdsh__tool *tool)
{
    if (!tool || atomic_fetch_sub(&tool->refs, 1) != 1)
        return;
    if (tool->free_ud)
        tool->free_ud(tool->ud);
    free(tool->name);
    free(tool->description);
    json_decref(tool->parameters);
    json_decref(tool->output_schema);
    cdsh_schema_free(tool->params);
    cdsh_schema_free(tool->output);
    cdsh_scope_unref(tool->scope);
    free(tool);
}

static void hook_unref(cdsh__hook *hook)
{
    if (!hook || atomic_fetch_sub(&hook->refs, 1) != 1)
        return;
    if (hook->free_ud)
        hook->free_ud(hook->ud);
    cdsh_scope_unref(hook->scope);
    free(hook);
}

void cdsh__hookset_unref(cdsh__hookset *hs)
{
    if (!hs || atomic_fetch_sub(&hs->refs, 1) != 1)
        return;
    for (int k = 0; k < CDSH__HOOK_KINDS; k++) {
        for (size_t i = 0; i < hs->n[k]; i++)
            hook_unref(hs->list[k][i]);
        free(hs->list[k]);
    }
    free(hs);
}

/* Builds a new snapshot from t->hooks (caller holds the write lock). */
static cdsh__hookset *hookset_build(cdsh_tools *t)
{
    cdsh__hookset *hs = calloc(1, sizeof *hs);
    if (!hs)
        return NULL;
    atomic_init(&hs->refs, 1);
    for (int k = 0; k < CDSH__HOOK_KINDS; k++) {
        size_t n = 0;
        for (size_t i = 0; i < t->nhooks; i++)
            n += t->hooks[i]->kind == k;
        if (!n)
            continue;
        hs->list[k] = malloc(n * sizeof *hs->list[k]);
        if (!hs->list[k]) {
            cdsh__hookset_unref(hs);
            return NULL;
        }
        for (size_t i = 0; i < t->nhooks; i++) {
            if (t->hooks[i]->kind == k) {
                atomic_fetch_add(&t->hooks[i]->refs, 1);
                hs->list[k][hs->n[k]++] = t->hooks[i];
            }
        }
    }
    return hs;
}

static void mask_free(mask *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nallow; i++)
        free(m->allow[i]);
    for (size_t i = 0; i < m->ndeny; i++)
        free(m->deny[i]);
    free(m->allow);
    free(m->deny);
    free(m);
}

static bool mask_admits(const mask *m, const char *name)
{
    if (m->allow && !in_list(m->allow, m->nallow, name))
        return false;
    if (m->deny && in_list(m->deny, m->ndeny, name))
        return false;
    return true;
}

/* ---- layers ----------------------------------------------------------------- */

static layer *find_layer(const cdsh_tools *t, const cdsh_scope *scope)
{
    if (!scope)
        return t->layers[0];
    for (size_t i = 1; i < t->nlayers; i++)
        if (t->layers[i]->scope == scope)
            return t->layers[i];
    return NULL;
}

static layer *layer_get_or_add(cdsh_tools *t, cdsh_scope *scope)
{
    layer *l = find_layer(t, scope);
    if (l)
        return l;
    if (!grow((void **)&t->layers, &t->caplayers, t->nlayers + 1, sizeof *t->layers))
        return NULL;
    l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->scope = cdsh_scope_ref(scope);
    t->layers[t->nlayers++] = l;
    return l;
}

static void layer_free(layer *l)
{
    for (size_t i = 0; i < l->n; i++) {
        l->items[i]->live = false;
        cdsh__tool_unref(l->items[i]);
    }
    for (size_t i = 0; i < l->nmasks; i++)
        mask_free(l->masks[i]);
    free(l->items);
    free(l->slots);
    free(l->masks);
    cdsh_scope_unref(l->scope);
    free(l);
}

/* Drops an empty scoped layer so its scope reference goes away. */
static void layer_maybe_drop(cdsh_tools *t, layer *l)
{
    if (!l->scope || l->n || l->nmasks)
        return;
    for (size_t i = 1; i < t->nlayers; i++) {
        if (t->layers[i] == l) {
            memmove(&t->layers[i], &t->layers[i + 1], (t->nlayers - i - 1) * sizeof *t->layers);
            t->nlayers--;
            break;
        }
    }
    layer_free(l);
}

static cdsh__tool *layer_lookup(const layer *l, const char *name)
{
    if (!l || !l->nslots)
        return NULL;
    size_t bits = l->nslots - 1;
    for (size_t i = hash_name(name) & bits;; i = (i + 1) & bits) {
        cdsh__tool *tool = l->slots[i];
        if (!tool)
            return NULL;
        if (strcmp(tool->name, name) == 0)
            return tool;
    }
}

static bool layer_rehash(layer *l)
{
    size_t want = 16;
    while (want < l->n * 2 + 2)
        want *= 2;
    cdsh__tool **slots = calloc(want, sizeof *slots);
    if (!slots)
        return false;
    for (size_t k = 0; k < l->n; k++) {
        size_t i = hash_name(l->items[k]->name) & (want - 1);
        while (slots[i])
            i = (i + 1) & (want - 1);
        slots[i] = l->items[k];
    }
    free(l->slots);
    l->slots = slots;
    l->nslots = want;
    return true;
}

/* ---- the resolver (§4) ------------------------------------------------------ */

#define CHAIN_MAX 64

/* Chain layers farthest-first, own layer last (NULL entries for scopes that
 * have no layer). Returns the count (scopes on the chain, capped). */
static size_t chain_layers(const cdsh_tools *t, const cdsh_scope *scope, layer **out)
{
    const cdsh_scope *chain[CHAIN_MAX];
    size_t n = 0;
    for (const cdsh_scope *s = scope; s && n < CHAIN_MAX; s = cdsh_scope_parent(s))
        chain[n++] = s;
    for (size_t i = 0; i < n; i++)
        out[i] = find_layer(t, chain[n - 1 - i]);
    return n;
}

static bool chain_admits(layer *const *chain, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (!chain[i])
            continue;
        for (size_t m = 0; m < chain[i]->nmasks; m++)
            if (!mask_admits(chain[i]->masks[m], name))
                return false;
    }
    return true;
}

/* The visible definition of `name` for `scope` (borrowed; caller holds the lock). */
static cdsh__tool *resolve_locked(const cdsh_tools *t, const cdsh_scope *scope, const char *name)
{
    if (!scope)
        return layer_lookup(t->layers[0], name);
    layer *chain[CHAIN_MAX];
    size_t n = chain_layers(t, scope, chain);
    cdsh__tool *own = layer_lookup(chain[n - 1], name);
    if (own)
        return own;
    cdsh__tool *inherited = NULL;
    for (size_t i = n - 1; i-- > 0 && !inherited;)
        inherited = layer_lookup(chain[i], name);
    if (!inherited)
        inherited = layer_lookup(t->layers[0], name);
    if (!inherited || !chain_admits(chain, n, name))
        return NULL;
    return inherited;
}

/* An ordered name → tool list used to build views. */
typedef struct view {
    json_t *index; /* name → position */
    cdsh__tool **items;
    size_t n, cap;
} view;

static bool view_put(view *v, cdsh__tool *tool)
{
    json_t *pos = json_object_get(v->index, tool->name);
    if (pos) {
        v->items[json_integer_value(pos)] = tool;
        return true;
    }
    if (!grow((void **)&v->items, &v->cap, v->n + 1, sizeof *v->items))
        return false;
    if (json_object_set_new(v->index, tool->name, json_integer((json_int_t)v->n)) != 0)
        return false;
    v->items[v->n++] = tool;
    return true;
}

static void view_clear(view *v)
{
    json_decref(v->index);
    free(v->items);
    memset(v, 0, sizeof *v);
}

/* inherited (pre-restriction) and visible lists for scope; caller holds the lock. */
static int view_build(const cdsh_tools *t, const cdsh_scope *scope, view *inherited, view *visible)
{
    layer *chain[CHAIN_MAX];
    size_t n = scope ? chain_layers(t, scope, chain) : 0;
    layer *own = scope ? chain[n - 1] : NULL;
    memset(inherited, 0, sizeof *inherited);
    memset(visible, 0, sizeof *visible);
    inherited->index = json_object();
    visible->index = json_object();
    if (!inherited->index || !visible->index)
        goto nomem;
    const layer *global = t->layers[0];
    if (scope) {
        for (size_t i = 0; i < global->n; i++)
            if (!view_put(inherited, global->items[i]))
                goto nomem;
        for (size_t c = 0; c + 1 < n; c++)
            for (size_t i = 0; chain[c] && i < chain[c]->n; i++)
                if (!view_put(inherited, chain[c]->items[i]))
                    goto nomem;
        for (size_t i = 0; i < inherited->n; i++)
            if (chain_admits(chain, n, inherited->items[i]->name) &&
                !view_put(visible, inherited->items[i]))
                goto nomem;
        for (size_t i = 0; own && i < own->n; i++)
            if (!view_put(visible, own->items[i]))
                goto nomem;
    } else {
        /* The global view: the global layer is the scope's own layer. */
        for (size_t i = 0; i < global->n; i++)
            if (!view_put(visible, global->items[i]))
                goto nomem;
    }
    return 0;
nomem:
    view_clear(inherited);
    view_clear(visible);
    return CDSH_ENOMEM;
}

/* ---- lifecycle -------------------------------------------------------------- */

cdsh_tools *cdsh_tools_new(cdsh_events *bus)
{
    cdsh_tools *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->layers = calloc(8, sizeof *t->layers);
    t->caplayers = 8;
    if (t->layers)
        t->layers[0] = calloc(1, sizeof(layer));
    if (!t->layers || !t->layers[0]) {
        free(t->layers);
        free(t);
        return NULL;
    }
    t->nlayers = 1;
    t->hookset = hookset_build(t);
    if (!t->hookset) {
        free(t->layers[0]);
        free(t->layers);
        free(t);
        return NULL;
    }
    atomic_init(&t->refs, 1);
    pthread_rwlock_init(&t->lock, NULL);
    pthread_rwlock_init(&t->life, NULL);
    pthread_mutex_init(&t->hold_lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&t->hold_cond, &attr);
    pthread_condattr_destroy(&attr);
    t->bus = bus;
    t->next_approval_id = 1;
    atomic_init(&t->max_depth, 8);
    atomic_init(&t->grace_ms, 50);
    return t;
}

static void tools_destroy(cdsh_tools *t)
{
    pthread_rwlock_destroy(&t->lock);
    pthread_rwlock_destroy(&t->life);
    pthread_mutex_destroy(&t->hold_lock);
    pthread_cond_destroy(&t->hold_cond);
    free(t);
}

void cdsh__tools_hold(cdsh_tools *t)
{
    atomic_fetch_add(&t->refs, 1);
    pthread_mutex_lock(&t->hold_lock);
    t->holds++;
    pthread_mutex_unlock(&t->hold_lock);
}

void cdsh__tools_release(cdsh_tools *t)
{
    pthread_mutex_lock(&t->hold_lock);
    t->holds--;
    pthread_cond_broadcast(&t->hold_cond);
    pthread_mutex_unlock(&t->hold_lock);
    if (atomic_fetch_sub(&t->refs, 1) == 1)
        tools_destroy(t);
}

void cdsh_tools_free(cdsh_tools *t)
{
    if (!t)
        return;
    /* Close first: a detached body's nested calls and emissions stop here. */
    pthread_rwlock_wrlock(&t->lock);
    pthread_rwlock_wrlock(&t->life);
    t->closed = true;
    pthread_rwlock_unlock(&t->life);
    pthread_rwlock_unlock(&t->lock);

    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += 2;
    pthread_mutex_lock(&t->hold_lock);
    while (t->holds > 0)
        if (pthread_cond_timedwait(&t->hold_cond, &t->hold_lock, &deadline) != 0)
            break;
    pthread_mutex_unlock(&t->hold_lock);

    pthread_rwlock_wrlock(&t->lock);
    for (size_t i = 0; i < t->nlayers; i++)
        layer_free(t->layers[i]);
    free(t->layers);
    t->layers = NULL;
    t->nlayers = 0;
    for (size_t i = 0; i < t->nhooks; i++)
        hook_unref(t->hooks[i]);
    free(t->hooks);
    t->hooks = NULL;
    t->nhooks = 0;
    cdsh__hookset_unref(t->hookset);
    t->hookset = NULL;
    pthread_rwlock_unlock(&t->lock);
    if (atomic_fetch_sub(&t->refs, 1) == 1)
        tools_destroy(t);
}

void cdsh_tools_set_max_depth(cdsh_tools *t, unsigned max_depth)
{
    if (t)
        atomic_store(&t->max_depth, max_depth);
}

void cdsh_tools_set_timeout_grace(cdsh_tools *t, int64_t grace_ms)
{
    if (t)
        atomic_store(&t->grace_ms, grace_ms < 0 ? 0 : grace_ms);
}

bool cdsh_tools_always_safe(void *ud, const json_t *args)
{
    (void)ud;
    (void)args;
    return true;
}

/* ---- events ------------------------------------------------------------------- */

bool cdsh__tools_has_listeners(cdsh_tools *t)
{
    return t->bus && cdsh_events_count(t->bus) > 0;
}

void cdsh__tools_emit(cdsh_tools *t, const char *name, const cdsh_scope *scope, bool filtered,
                      const json_t *payload)
{
    if (!t->bus)
        return;
    pthread_rwlock_rdlock(&t->life);
    if (!t->closed)
        cdsh_events_emit(t->bus, name, scope, filtered, payload);
    pthread_rwlock_unlock(&t->life);
}

static void emit_change(cdsh_tools *t, const char *reason, const cdsh_scope *scope,
                        const char *const *names, size_t n)
{
    if (!cdsh__tools_has_listeners(t))
        return;
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        json_array_append_new(arr, json_string(names[i]));
    json_t *payload = json_pack("{s:s, s:o, s:o}", "reason", reason, "scope",
                                scope ? json_string(cdsh_scope_id(scope)) : json_null(), "names",
                                arr ? arr : json_array());
    if (payload)
        cdsh__tools_emit(t, "tools/change", scope, false, payload);
    json_decref(payload);
}

/* ---- registration --------------------------------------------------------------- */

static void dispose_tool(void *arg)
{
    cdsh__tool *tool = arg;
    cdsh_tools *t = tool->tools;
    bool removed = false;
    pthread_rwlock_wrlock(&t->lock);
    if (tool->live && !t->closed) {
        layer *l = find_layer(t, tool->scope);
        for (size_t i = 0; l && i < l->n; i++) {
            if (l->items[i] == tool) {
                memmove(&l->items[i], &l->items[i + 1], (l->n - i - 1) * sizeof *l->items);
                l->n--;
                removed = true;
                break;
            }
        }
        tool->live = false;
        if (l && removed) {
            if (!layer_rehash(l)) {
                /* Out of memory: a linear rebuild is impossible, so drop the
                 * table; lookups then miss until the next successful rehash. */
                free(l->slots);
                l->slots = NULL;
                l->nslots = 0;
            }
            layer_maybe_drop(t, l);
        }
    }
    pthread_rwlock_unlock(&t->lock);
    if (removed) {
        const char *names[1] = {tool->name};
        emit_change(t, "unregister", tool->scope, names, 1);
        cdsh__tool_unref(tool); /* the layer's reference */
    }
}

int cdsh_tools_register(cdsh_tools *t, cdsh_scope *scope, const cdsh_tool_def *def,
                        cdsh_disposer_t *out, cdsh_error *err)
{
    if (!t || !def || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT",
                              "tools.register() needs a registry, a definition and a disposer");
    *out = (cdsh_disposer_t){0};
    const char *name = def->name;
    if (!valid_name(name))
        return cdsh_error_set(
            err, CDSH_EINVAL, "BAD_TOOL_NAME",
            "tool name \"%s\" is invalid: use 1-64 characters from A-Z a-z 0-9 _ -",
            name ? name : "");
    if (strcmp(name, RUN_CODE) == 0)
        return cdsh_error_set(err, CDSH_EINVAL, "RESERVED_TOOL",
                              "tool name \"run_code\" is reserved for the Code Mode presentation "
                              "transport and cannot be registered or shadowed");
    if (!def->execute)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_TOOL_DEF", "tool \"%s\" must declare execute",
                              name);
    if (!def->description)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_TOOL_DEF",
                              "tool \"%s\" must declare a description", name);
    if (!def->output_schema)
        return cdsh_error_set(
            err, CDSH_EINVAL, "BAD_TOOL_DEF",
            "tool \"%s\" must declare output { schema, render, presentationMeta? }", name);
    if (def->timeout_ms < 0)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_TOOL_DEF",
                              "tool \"%s\" timeoutMs must be a positive finite number", name);

    int rc = 0;
    cdsh_error sub;
    cdsh_error_clear(&sub);
    cdsh__tool *tool = calloc(1, sizeof *tool);
    if (!tool)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    atomic_init(&tool->refs, 1);
    tool->name = strdup(name);
    tool->description = strdup(def->description);
    tool->parameters = def->parameters ? cdsh_json_snapshot_dup(def->parameters, "parameters", &sub)
                                       : json_pack("{s:s}", "type", "object");
    if (!tool->name || !tool->description || !tool->parameters) {
        rc = sub.rc ? cdsh_error_set(err, CDSH_EUNSUPPORTED, "UNSUPPORTED_SCHEMA",
                                     "tool \"%s\" parameters: %s", name, sub.message)
                    : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto fail;
    }
    tool->output_schema = cdsh_json_snapshot_dup(def->output_schema, "outputSchema", &sub);
    if (!tool->output_schema) {
        rc = sub.rc ? cdsh_error_set(err, CDSH_EUNSUPPORTED, "UNSUPPORTED_SCHEMA",
                                     "tool \"%s\" output schema: %s", name, sub.message)
                    : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto fail;
    }
    if (cdsh_schema_compile(tool->parameters, &tool->params, &sub) != 0) {
        rc = cdsh_error_set(err, sub.rc == CDSH_ENOMEM ? CDSH_ENOMEM : CDSH_EUNSUPPORTED,
                            sub.code[0] ? sub.code : "UNSUPPORTED_SCHEMA",
                            "tool \"%s\" parameters: %s", name, sub.message);
        goto fail;
    }
    if (cdsh_schema_compile(tool->output_schema, &tool->output, &sub) != 0) {
        rc = cdsh_error_set(err, sub.rc == CDSH_ENOMEM ? CDSH_ENOMEM : CDSH_EUNSUPPORTED,
                            sub.code[0] ? sub.code : "UNSUPPORTED_SCHEMA",
                            "tool \"%s\" output schema: %s", name, sub.message);
        goto fail;
    }
    tool->execute = def->execute;
    tool->render = def->render;
    tool->presentation_meta = def->presentation_meta;
    tool->is_concurrency_safe = def->is_concurrency_safe;
    tool->present_call = def->present_call;
    tool->present_result = def->present_result;
    tool->finalize_content = def->finalize_content;
    tool->timeout_ms = def->timeout_ms;
    tool->ud = def->ud;
    tool->tools = t;
    tool->scope = cdsh_scope_ref(scope);

    pthread_rwlock_wrlock(&t->lock);
    if (t->closed) {
        pthread_rwlock_unlock(&t->lock);
        rc = cdsh_error_set(err, CDSH_ECLOSED, "CLOSED", "the tool registry is closed");
        goto fail;
    }
    layer *l = layer_get_or_add(t, scope);
    if (!l) {
        pthread_rwlock_unlock(&t->lock);
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto fail;
    }
    if (layer_lookup(l, name)) {
        pthread_rwlock_unlock(&t->lock);
        if (scope)
            rc = cdsh_error_set(err, CDSH_EEXIST, "TOOL_EXISTS",
                                "tool \"%s\" is already registered in this scope", name);
        else
            rc = cdsh_error_set(err, CDSH_EEXIST, "TOOL_EXISTS",
                                "tool \"%s\" is already registered (register it through agent.ctx "
                                "to shadow it for one agent)",
                                name);
        goto fail;
    }
    if (!grow((void **)&l->items, &l->cap, l->n + 1, sizeof *l->items)) {
        layer_maybe_drop(t, l);
        pthread_rwlock_unlock(&t->lock);
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto fail;
    }
    l->items[l->n++] = tool;
    if (!layer_rehash(l)) {
        l->n--;
        layer_maybe_drop(t, l);
        pthread_rwlock_unlock(&t->lock);
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto fail;
    }
    tool->live = true;
    pthread_rwlock_unlock(&t->lock);
    /* Set only now: a failed registration must not call the caller's free_ud. */
    tool->free_ud = def->free_ud;
    *out = (cdsh_disposer_t){dispose_tool, tool};
    const char *names[1] = {tool->name};
    emit_change(t, "register", scope, names, 1);
    return 0;
fail:
    cdsh__tool_unref(tool);
    return rc;
}

/* ---- restrict ------------------------------------------------------------------- */

static void dispose_mask(void *arg)
{
    ticket *tk = arg;
    cdsh_tools *t = tk->tools;
    bool removed = false;
    pthread_rwlock_wrlock(&t->lock);
    layer *l = t->closed ? NULL : find_layer(t, tk->scope);
    for (size_t i = 0; l && i < l->nmasks; i++) {
        if (l->masks[i] == tk->m) {
            memmove(&l->masks[i], &l->masks[i + 1], (l->nmasks - i - 1) * sizeof *l->masks);
            l->nmasks--;
            removed = true;
            break;
        }
    }
    if (l && removed)
        layer_maybe_drop(t, l);
    pthread_rwlock_unlock(&t->lock);
    if (removed)
        emit_change(t, "unrestrict", tk->scope, NULL, 0);
    mask_free(tk->m);
    cdsh_scope_unref(tk->scope);
    free(tk);
}

static size_t count_names(const char *const *list)
{
    size_t n = 0;
    while (list && list[n])
        n++;
    return n;
}

static char **copy_names(const char *const *list, size_t n)
{
    char **out = calloc(n ? n : 1, sizeof *out);
    for (size_t i = 0; out && i < n; i++) {
        out[i] = strdup(list[i]);
        if (!out[i]) {
            while (i--)
                free(out[i]);
            free(out);
            return NULL;
        }
    }
    return out;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int cdsh_tools_restrict(cdsh_tools *t, cdsh_scope *scope, const char *const *allow,
                        const char *const *deny, cdsh_disposer_t *out, cdsh_error *err)
{
    if (!t || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT",
                              "tools.restrict() needs a registry and a disposer");
    *out = (cdsh_disposer_t){0};
    if (!scope)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_RESTRICTION",
                              "tools.restrict() requires a scoped context (agent.ctx): a "
                              "context-global restriction would mask every agent — deny the tool "
                              "for the intended agent instead");
    if (!allow && !deny)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_RESTRICTION",
                              "tools.restrict({}) is a no-op: pass `allow` and/or `deny` (an empty "
                              "filter is almost always a materialized-empty-config bug)");
    size_t nallow = count_names(allow), ndeny = count_names(deny);
    for (size_t i = 0; i < nallow + ndeny; i++) {
        const char *n = i < nallow ? allow[i] : deny[i - nallow];
        if (strcmp(n, RUN_CODE) == 0)
            return cdsh_error_set(err, CDSH_EINVAL, "BAD_RESTRICTION",
                                  "tools.restrict() cannot name reserved Code Mode presentation "
                                  "transport \"run_code\"; restrict end-capability tools instead");
    }
    mask *m = calloc(1, sizeof *m);
    ticket *tk = calloc(1, sizeof *tk);
    if (!m || !tk)
        goto nomem;
    if (allow) {
        m->nallow = nallow;
        if (!(m->allow = copy_names(allow, nallow)))
            goto nomem;
    }
    if (deny) {
        m->ndeny = ndeny;
        if (!(m->deny = copy_names(deny, ndeny)))
            goto nomem;
    }

    pthread_rwlock_wrlock(&t->lock);
    view inherited, visible;
    if (t->closed || view_build(t, scope, &inherited, &visible) != 0) {
        pthread_rwlock_unlock(&t->lock);
        goto nomem;
    }
    /* Check names against the restrictable (inherited) names, as DSH does. */
    cdsh_strbuf unknown, known;
    cdsh_strbuf_init(&unknown);
    cdsh_strbuf_init(&known);
    size_t nunknown = 0;
    for (size_t i = 0; i < nallow + ndeny; i++) {
        const char *n = i < nallow ? allow[i] : deny[i - nallow];
        if (!json_object_get(inherited.index, n))
            cdsh_strbuf_appendf(&unknown, "%s\"%s\"", nunknown++ ? ", " : "", n);
    }
    if (nunknown) {
        const char **names = calloc(inherited.n ? inherited.n : 1, sizeof *names);
        for (size_t i = 0; names && i < inherited.n; i++)
            names[i] = inherited.items[i]->name;
        if (names)
            qsort(names, inherited.n, sizeof *names, cmp_str);
        for (size_t i = 0; names && i < inherited.n; i++)
            cdsh_strbuf_appendf(&known, "%s%s", i ? ", " : "", names[i]);
        free(names);
        view_clear(&inherited);
        view_clear(&visible);
        pthread_rwlock_unlock(&t->lock);
        mask_free(m);
        free(tk);
        int rc = cdsh_error_set(err, CDSH_EINVAL, "BAD_RESTRICTION",
                                "tools.restrict() names unknown global tool%s %s; known global "
                                "tools: %s",
                                nunknown > 1 ? "s" : "", unknown.data,
                                known.len ? known.data : "(none)");
        cdsh_strbuf_deinit(&unknown);
        cdsh_strbuf_deinit(&known);
        return rc;
    }
    cdsh_strbuf_deinit(&unknown);
    cdsh_strbuf_deinit(&known);
    view_clear(&inherited);
    view_clear(&visible);
    layer *l = layer_get_or_add(t, scope);
    if (!l || !grow((void **)&l->masks, &l->capmasks, l->nmasks + 1, sizeof *l->masks)) {
        if (l)
            layer_maybe_drop(t, l);
        pthread_rwlock_unlock(&t->lock);
        goto nomem;
    }
    l->masks[l->nmasks++] = m;
    pthread_rwlock_unlock(&t->lock);
    tk->tools = t;
    tk->scope = cdsh_scope_ref(scope);
    tk->m = m;
    *out = (cdsh_disposer_t){dispose_mask, tk};
    emit_change(t, "restrict", scope, NULL, 0);
    return 0;
nomem:
    mask_free(m);
    free(tk);
    return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
}

/* ---- hooks and guards -------------------------------------------------------------- */

static void dispose_hook(void *arg)
{
    cdsh__hook *hook = arg;
    cdsh_tools *t = hook->tools;
    bool removed = false;
    pthread_rwlock_wrlock(&t->lock);
    for (size_t i = 0; !t->closed && i < t->nhooks; i++) {
        if (t->hooks[i] == hook) {
            memmove(&t->hooks[i], &t->hooks[i + 1], (t->nhooks - i - 1) * sizeof *t->hooks);
            t->nhooks--;
            removed = true;
            break;
        }
    }
    if (removed) {
        cdsh__hookset *hs = hookset_build(t);
        if (hs) {
            cdsh__hookset_unref(t->hookset);
            t->hookset = hs;
        } else {
            /* Out of memory: keep the old snapshot but make this hook inert. */
            hook->fn.pre = NULL;
        }
    }
    pthread_rwlock_unlock(&t->lock);
    if (removed)
        hook_unref(hook); /* the registry's reference */
}

static int add_hook(cdsh_tools *t, int kind, cdsh_scope *scope, void *fn, void *ud,
                    void (*free_ud)(void *), cdsh_disposer_t *out, cdsh_error *err)
{
    if (!t || !fn || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT",
                              "a tool hook needs a registry, a function and a disposer");
    *out = (cdsh_disposer_t){0};
    cdsh__hook *hook = calloc(1, sizeof *hook);
    if (!hook)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    atomic_init(&hook->refs, 1);
    hook->kind = kind;
    hook->scope = cdsh_scope_ref(scope);
    switch (kind) {
    case CDSH__HOOK_PRE: hook->fn.pre = (cdsh_tools_pre_fn)fn; break;
    case CDSH__HOOK_POST: hook->fn.post = (cdsh_tools_post_fn)fn; break;
    case CDSH__HOOK_AROUND: hook->fn.around = (cdsh_tools_around_fn)fn; break;
    default: hook->fn.guard = (cdsh_tools_guard_fn)fn; break;
    }
    hook->ud = ud;
    hook->tools = t;
    pthread_rwlock_wrlock(&t->lock);
    if (t->closed || !grow((void **)&t->hooks, &t->caphooks, t->nhooks + 1, sizeof *t->hooks)) {
        pthread_rwlock_unlock(&t->lock);
        hook_unref(hook);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    t->hooks[t->nhooks++] = hook;
    cdsh__hookset *hs = hookset_build(t);
    if (!hs) {
        t->nhooks--;
        pthread_rwlock_unlock(&t->lock);
        hook_unref(hook);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    cdsh__hookset_unref(t->hookset);
    t->hookset = hs;
    pthread_rwlock_unlock(&t->lock);
    hook->free_ud = free_ud;
    *out = (cdsh_disposer_t){dispose_hook, hook};
    return 0;
}

int cdsh_tools_guard(cdsh_tools *t, cdsh_scope *scope, cdsh_tools_guard_fn fn, void *ud,
                     void (*free_ud)(void *), cdsh_disposer_t *out, cdsh_error *err)
{
    return add_hook(t, CDSH__HOOK_GUARD, scope, (void *)fn, ud, free_ud, out, err);
}

int cdsh_tools_on_pre_execute(cdsh_tools *t, cdsh_scope *scope, cdsh_tools_pre_fn fn, void *ud,
                              void (*free_ud)(void *), cdsh_disposer_t *out, cdsh_error *err)
{
    return add_hook(t, CDSH__HOOK_PRE, scope, (void *)fn, ud, free_ud, out, err);
}

int cdsh_tools_on_post_execute(cdsh_tools *t, cdsh_scope *scope, cdsh_tools_post_fn fn, void *ud,
                               void (*free_ud)(void *), cdsh_disposer_t *out, cdsh_error *err)
{
    return add_hook(t, CDSH__HOOK_POST, scope, (void *)fn, ud, free_ud, out, err);
}

int cdsh_tools_on_execute(cdsh_tools *t, cdsh_scope *scope, cdsh_tools_around_fn fn, void *ud,
                          void (*free_ud)(void *), cdsh_disposer_t *out, cdsh_error *err)
{
    return add_hook(t, CDSH__HOOK_AROUND, scope, (void *)fn, ud, free_ud, out, err);
}

/* ---- approval ------------------------------------------------------------------------ */

static void dispose_approval(void *arg)
{
    ticket *tk = arg;
    cdsh_tools *t = tk->tools;
    pthread_rwlock_wrlock(&t->lock);
    if (t->approval_id == tk->approval_id) {
        t->has_approval = false;
        t->approval_id = 0;
        memset(&t->approval, 0, sizeof t->approval);
    }
    pthread_rwlock_unlock(&t->lock);
    free(tk);
}

int cdsh_tools_set_approval(cdsh_tools *t, const cdsh_approval_service *service,
                            cdsh_disposer_t *out, cdsh_error *err)
{
    if (!t || !out || (service && !service->request))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT",
                              "approval: a service needs a request function and a disposer");
    *out = (cdsh_disposer_t){0};
    if (!service) {
        pthread_rwlock_wrlock(&t->lock);
        t->has_approval = false;
        t->approval_id = 0;
        memset(&t->approval, 0, sizeof t->approval);
        pthread_rwlock_unlock(&t->lock);
        return 0;
    }
    ticket *tk = calloc(1, sizeof *tk);
    if (!tk)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    tk->tools = t;
    pthread_rwlock_wrlock(&t->lock);
    t->has_approval = true;
    t->approval = *service;
    t->approval_id = t->next_approval_id++;
    tk->approval_id = t->approval_id;
    pthread_rwlock_unlock(&t->lock);
    out->fn = dispose_approval;
    out->arg = tk;
    return 0;
}

bool cdsh_tools_approval_current(cdsh_tools *t, cdsh_approval_service *out)
{
    pthread_rwlock_rdlock(&t->lock);
    bool has = t->has_approval;
    if (has && out)
        *out = t->approval;
    pthread_rwlock_unlock(&t->lock);
    return has;
}

/* ---- snapshots for dispatch ------------------------------------------------------------- */

int cdsh__tools_snapshot(cdsh_tools *t, const cdsh_scope *scope, const char *name,
                         cdsh__snapshot *snap)
{
    memset(snap, 0, sizeof *snap);
    pthread_rwlock_rdlock(&t->lock);
    if (t->closed) {
        pthread_rwlock_unlock(&t->lock);
        return CDSH_ECLOSED;
    }
    snap->tool = resolve_locked(t, scope, name);
    cdsh__tool_ref(snap->tool);
    snap->hooks = t->hookset;
    atomic_fetch_add(&snap->hooks->refs, 1);
    snap->has_approval = t->has_approval;
    snap->approval = t->approval;
    pthread_rwlock_unlock(&t->lock);
    snap->max_depth = atomic_load(&t->max_depth);
    snap->grace_ms = atomic_load(&t->grace_ms);
    return 0;
}

void cdsh__snapshot_release(cdsh__snapshot *snap)
{
    cdsh__tool_unref(snap->tool);
    cdsh__hookset_unref(snap->hooks);
    memset(snap, 0, sizeof *snap);
}

cdsh__tool *cdsh__tools_resolve(cdsh_tools *t, const cdsh_scope *scope, const char *name)
{
    pthread_rwlock_rdlock(&t->lock);
    cdsh__tool *tool = t->closed ? NULL : resolve_locked(t, scope, name);
    cdsh__tool_ref(tool);
    pthread_rwlock_unlock(&t->lock);
    return tool;
}

/* ---- views ----------------------------------------------------------------------------- */

static json_t *model_schema(const cdsh__tool *tool)
{
    return json_pack("{s:s, s:s, s:O}", "name", tool->name, "description", tool->description,
                     "parameters", tool->parameters);
}

static json_t *views_to_json(cdsh_tools *t, const cdsh_scope *scope, int what)
{
    pthread_rwlock_rdlock(&t->lock);
    view inherited, visible;
    if (t->closed || view_build(t, scope, &inherited, &visible) != 0) {
        bool closed = t->closed;
        pthread_rwlock_unlock(&t->lock);
        return closed ? json_array() : NULL;
    }
    json_t *arr = json_array();
    const view *v = what == 2 ? &inherited : &visible;
    for (size_t i = 0; arr && i < v->n; i++) {
        json_t *item = what == 0 ? model_schema(v->items[i]) : json_string(v->items[i]->name);
        /* parameters are deep-copied so callers may edit the list freely. */
        if (item && what == 0) {
            json_t *copy = json_deep_copy(item);
            json_decref(item);
            item = copy;
        }
        if (!item || json_array_append_new(arr, item) != 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    view_clear(&inherited);
    view_clear(&visible);
    pthread_rwlock_unlock(&t->lock);
    if (arr && what == 2 && json_array_size(arr) > 1) {
        size_t n = json_array_size(arr);
        const char **names = malloc(n * sizeof *names);
        json_t *sorted = json_array();
        if (!names || !sorted) {
            free(names);
            json_decref(sorted);
            json_decref(arr);
            return NULL;
        }
        for (size_t i = 0; i < n; i++)
            names[i] = json_string_value(json_array_get(arr, i));
        qsort(names, n, sizeof *names, cmp_str);
        for (size_t i = 0; i < n; i++)
            json_array_append_new(sorted, json_string(names[i]));
        free(names);
        json_decref(arr);
        arr = sorted;
    }
    return arr;
}

json_t *cdsh_tools_schemas(cdsh_tools *t, const cdsh_scope *scope)
{
    return t ? views_to_json(t, scope, 0) : NULL;
}

json_t *cdsh_tools_names(cdsh_tools *t, const cdsh_scope *scope)
{
    return t ? views_to_json(t, scope, 1) : NULL;
}

json_t *cdsh_tools_restrictable_names(cdsh_tools *t, const cdsh_scope *scope)
{
    if (!t)
        return NULL;
    /* The global view inherits nothing. */
    return scope ? views_to_json(t, scope, 2) : json_array();
}

bool cdsh_tools_visible(cdsh_tools *t, const cdsh_scope *scope, const char *name)
{
    if (!t || !name)
        return false;
    cdsh__tool *tool = cdsh__tools_resolve(t, scope, name);
    cdsh__tool_unref(tool);
    return tool != NULL;
}

json_t *cdsh_tools_info_dup(cdsh_tools *t, const cdsh_scope *scope, const char *name)
{
    if (!t || !name)
        return NULL;
    cdsh__tool *tool = cdsh__tools_resolve(t, scope, name);
    if (!tool)
        return NULL;
    json_t *out =
        json_pack("{s:s, s:s, s:O, s:O, s:o}", "name", tool->name, "description", tool->description,
                  "parameters", tool->parameters, "outputSchema", tool->output_schema, "layer",
                  tool->scope ? json_string(cdsh_scope_id(tool->scope)) : json_null());
    if (out) {
        json_t *copy = json_deep_copy(out);
        json_decref(out);
        out = copy;
    }
    if (out && tool->timeout_ms > 0)
        json_object_set_new(out, "timeoutMs", json_integer(tool->timeout_ms));
    cdsh__tool_unref(tool);
    return out;
}

bool cdsh_tools_is_parallel(cdsh_tools *t, const cdsh_scope *scope, const char *name,
                            const json_t *args)
{
    if (!t || !name)
        return false;
    cdsh__tool *tool = cdsh__tools_resolve(t, scope, name);
    bool parallel = false;
    if (tool && tool->is_concurrency_safe) {
        json_t *empty = args ? NULL : json_object();
        const json_t *a = args ? args : empty;
        if (json_is_object(a) && cdsh_json_check_lossless(a, "arguments", NULL) == 0 &&
            cdsh_schema_validate(tool->params, a, "arguments", NULL) == 0)
            parallel = tool->is_concurrency_safe(tool->ud, a);
        json_decref(empty);
    }
    cdsh__tool_unref(tool);
    return parallel;
}

size_t cdsh_tools_count(cdsh_tools *t)
{
    if (!t)
        return 0;
    pthread_rwlock_rdlock(&t->lock);
    size_t n = t->nhooks + (t->has_approval ? 1 : 0);
    for (size_t i = 0; i < t->nlayers; i++)
        n += t->layers[i]->n + t->layers[i]->nmasks;
    pthread_rwlock_unlock(&t->lock);
    return n;
}
