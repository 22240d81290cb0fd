/* prompt.c — the prompt segment registry: layers, shadowing, ordering and
 * rendering outside the lock. Assembly with skills and tools is the agent
 * loop's (agent/agent.c). */
#include "host/prompt.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "host/host.h"

typedef struct segment {
    struct segment *next;
    cdsh_prompt *owner;
    char *id;
    int order;
    unsigned long serial; /* registration order */
    char *text;
    cdsh_prompt_render_fn render;
    void *ud;
    void (*free_ud)(void *);
    cdsh_scope *scope;
    int refs; /* the list's reference plus one per render in flight */
    bool disposed;
} segment;

struct cdsh_prompt {
    pthread_mutex_t mu;
    cdsh_events *bus;
    segment *head;
    unsigned long serial;
    size_t count;
    struct provider *providers; /* registration order */
    size_t nproviders;
};

cdsh_prompt *cdsh_prompt_new(cdsh_events *bus)
{
    cdsh_prompt *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_mutex_init(&p->mu, NULL);
    p->bus = bus;
    return p;
}

static void segment_destroy(segment *s)
{
    if (s->free_ud)
        s->free_ud(s->ud);
    cdsh_scope_unref(s->scope);
    free(s->id);
    free(s->text);
    free(s);
}

/* Drops one reference; called with the lock NOT held. */
static void segment_unref(cdsh_prompt *p, segment *s)
{
    pthread_mutex_lock(&p->mu);
    int left = --s->refs;
    pthread_mutex_unlock(&p->mu);
    if (left == 0)
        segment_destroy(s);
}

static void provider_free_all(cdsh_prompt *p);

void cdsh_prompt_free(cdsh_prompt *p)
{
    if (!p)
        return;
    segment *s = p->head;
    while (s) {
        segment *next = s->next;
        segment_destroy(s);
        s = next;
    }
    provider_free_all(p);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static bool id_valid(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  strchr("_.:/-", c) != NULL;
        if (!ok)
            return false;
    }
    return true;
}

static void emit_change(cdsh_prompt *p, const char *reason, const char *id, const cdsh_scope *sc)
{
    if (!p->bus)
        return;
    json_t *payload = json_pack("{s:s, s:s, s:o}", "reason", reason, "id", id, "scope",
                                sc ? json_string(cdsh_scope_id(sc)) : json_null());
    cdsh_events_emit(p->bus, "prompt/change", NULL, false, payload);
    json_decref(payload);
}

static void dispose_segment(void *arg)
{
    segment *s = arg;
    cdsh_prompt *p = s->owner;
    pthread_mutex_lock(&p->mu);
    for (segment **pp = &p->head; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            p->count--;
            break;
        }
    }
    s->disposed = true;
    pthread_mutex_unlock(&p->mu);
    emit_change(p, "unregister", s->id, s->scope);
    segment_unref(p, s);
}

int cdsh_prompt_register(cdsh_prompt *p, cdsh_scope *scope, const cdsh_prompt_segment_def *def,
                         cdsh_disposer_t *out, cdsh_error *err)
{
    if (out)
        *out = (cdsh_disposer_t){0};
    if (!p || !def)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_SEGMENT", "prompt segment is missing");
    if (!id_valid(def->id))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_SEGMENT",
                              "prompt segment id \"%s\" is invalid: use 1-64 characters from "
                              "A-Z a-z 0-9 _ . : / -",
                              def->id ? def->id : "");
    if ((def->text == NULL) == (def->render == NULL))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_SEGMENT",
                              "prompt segment \"%s\" must give exactly one of text or render",
                              def->id);
    segment *s = calloc(1, sizeof *s);
    if (!s)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    s->id = strdup(def->id);
    s->text = def->text ? strdup(def->text) : NULL;
    if (!s->id || (def->text && !s->text)) {
        free(s->id);
        free(s->text);
        free(s);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    s->owner = p;
    s->order = def->order;
    s->render = def->render;
    s->scope = cdsh_scope_ref(scope);
    s->refs = 1;

    pthread_mutex_lock(&p->mu);
    for (segment *o = p->head; o; o = o->next) {
        if (o->scope == scope && strcmp(o->id, def->id) == 0) {
            pthread_mutex_unlock(&p->mu);
            cdsh_scope_unref(s->scope);
            free(s->id);
            free(s->text);
            free(s);
            return cdsh_error_set(err, CDSH_EEXIST, "DUPLICATE_SEGMENT",
                                  "prompt segment \"%s\" is already registered", def->id);
        }
    }
    s->ud = def->ud;
    s->free_ud = def->free_ud;
    s->serial = ++p->serial;
    s->next = p->head;
    p->head = s;
    p->count++;
    pthread_mutex_unlock(&p->mu);
    emit_change(p, "register", s->id, scope);
    if (out)
        *out = (cdsh_disposer_t){dispose_segment, s};
    return 0;
}

typedef struct picked {
    segment *seg;
    size_t depth;
} picked;

static int picked_cmp(const void *a, const void *b)
{
    const segment *x = ((const picked *)a)->seg, *y = ((const picked *)b)->seg;
    if (x->order != y->order)
        return x->order < y->order ? -1 : 1;
    return x->serial < y->serial ? -1 : (x->serial > y->serial);
}

json_t *cdsh_prompt_segments(cdsh_prompt *p, const cdsh_scope *scope)
{
    json_t *arr = json_array();
    if (!p || !arr)
        return arr;
    pthread_mutex_lock(&p->mu);
    picked *v = calloc(p->count ? p->count : 1, sizeof *v);
    size_t n = 0;
    for (segment *s = v ? p->head : NULL; s; s = s->next) {
        if (!cdsh_scope_contains(s->scope, scope))
            continue;
        size_t depth = cdsh_scope_depth(s->scope);
        size_t i;
        for (i = 0; i < n; i++)
            if (strcmp(v[i].seg->id, s->id) == 0)
                break;
        if (i < n) {
            if (depth > v[i].depth) { /* the nearer layer shadows */
                v[i].seg->refs--;
                v[i] = (picked){s, depth};
                s->refs++;
            }
            continue;
        }
        v[n++] = (picked){s, depth};
        s->refs++;
    }
    pthread_mutex_unlock(&p->mu);
    if (!v)
        return arr;
    qsort(v, n, sizeof *v, picked_cmp);
    for (size_t i = 0; i < n; i++) {
        segment *s = v[i].seg;
        char *rendered = s->render ? s->render(s->ud, scope) : NULL;
        const char *text = s->render ? rendered : s->text;
        if (text && *text)
            json_array_append_new(
                arr, json_pack("{s:s, s:i, s:o, s:s}", "id", s->id, "order", s->order, "scope",
                               s->scope ? json_string(cdsh_scope_id(s->scope)) : json_null(),
                               "text", text));
        free(rendered);
        segment_unref(p, s);
    }
    free(v);
    return arr;
}

char *cdsh_prompt_render_dup(cdsh_prompt *p, const cdsh_scope *scope)
{
    json_t *segs = cdsh_prompt_segments(p, scope);
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    size_t i;
    json_t *s;
    json_array_foreach(segs, i, s) {
        if (i > 0)
            cdsh_strbuf_append_str(&sb, "\n\n");
        cdsh_strbuf_append_str(&sb, json_string_value(json_object_get(s, "text")));
    }
    json_decref(segs);
    char *out = cdsh_strbuf_take(&sb, NULL);
    return out ? out : strdup("");
}

size_t cdsh_prompt_count(cdsh_prompt *p)
{
    if (!p)
        return 0;
    pthread_mutex_lock(&p->mu);
    size_t n = p->count;
    pthread_mutex_unlock(&p->mu);
    return n;
}

int cdsh_prompt_ctx_register(cdsh_plugin_ctx *ctx, const cdsh_prompt_segment_def *def,
                             cdsh_error *err)
{
    cdsh_prompt *p = ctx ? cdsh_host_prompt(cdsh_ctx_host(ctx)) : NULL;
    cdsh_disposer_t d;
    int rc = cdsh_prompt_register(p, ctx ? cdsh_ctx_scope(ctx) : NULL, def, &d, err);
    if (rc != 0) {
        if (def && def->free_ud)
            def->free_ud(def->ud);
        return rc;
    }
    return cdsh_ctx_adopt(ctx, d, err);
}

/* ---- per-turn providers ----------------------------------------------------- */

typedef struct provider {
    struct provider *next;
    cdsh_prompt *owner;
    char *name;
    cdsh_prompt_context_fn context;
    cdsh_prompt_sampling_fn sampling;
    void *ud;
    void (*free_ud)(void *);
    int refs; /* the list's reference plus one per call in flight */
} provider;

static void provider_destroy(provider *v)
{
    if (v->free_ud)
        v->free_ud(v->ud);
    free(v->name);
    free(v);
}

static void provider_unref(cdsh_prompt *p, provider *v)
{
    pthread_mutex_lock(&p->mu);
    int left = --v->refs;
    pthread_mutex_unlock(&p->mu);
    if (left == 0)
        provider_destroy(v);
}

static void provider_free_all(cdsh_prompt *p)
{
    provider *v = p->providers;
    while (v) {
        provider *next = v->next;
        provider_destroy(v);
        v = next;
    }
    p->providers = NULL;
}

static void dispose_provider(void *arg)
{
    provider *v = arg;
    cdsh_prompt *p = v->owner;
    pthread_mutex_lock(&p->mu);
    for (provider **pp = &p->providers; *pp; pp = &(*pp)->next) {
        if (*pp == v) {
            *pp = v->next;
            p->nproviders--;
            break;
        }
    }
    pthread_mutex_unlock(&p->mu);
    provider_unref(p, v);
}

int cdsh_prompt_provider_register(cdsh_prompt *p, const cdsh_prompt_provider_def *def,
                                  cdsh_disposer_t *out, cdsh_error *err)
{
    if (out)
        *out = (cdsh_disposer_t){0};
    if (!p || !def)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_PROVIDER", "prompt provider is missing");
    if (!id_valid(def->name))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_PROVIDER",
                              "prompt provider name \"%s\" is invalid: use 1-64 characters from "
                              "A-Z a-z 0-9 _ . : / -",
                              def->name ? def->name : "");
    if (!def->context && !def->sampling)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_PROVIDER",
                              "prompt provider \"%s\" gives neither context nor sampling",
                              def->name);
    provider *v = calloc(1, sizeof *v);
    if (!v || !(v->name = strdup(def->name))) {
        free(v);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    v->owner = p;
    v->context = def->context;
    v->sampling = def->sampling;
    v->refs = 1;
    pthread_mutex_lock(&p->mu);
    provider **tail = &p->providers;
    for (; *tail; tail = &(*tail)->next) {
        if (strcmp((*tail)->name, def->name) == 0) {
            pthread_mutex_unlock(&p->mu);
            free(v->name);
            free(v);
            return cdsh_error_set(err, CDSH_EEXIST, "DUPLICATE_PROVIDER",
                                  "prompt provider \"%s\" is already registered", def->name);
        }
    }
    v->ud = def->ud;
    v->free_ud = def->free_ud;
    *tail = v;
    p->nproviders++;
    pthread_mutex_unlock(&p->mu);
    if (out)
        *out = (cdsh_disposer_t){dispose_provider, v};
    return 0;
}

int cdsh_prompt_ctx_provide(cdsh_plugin_ctx *ctx, const cdsh_prompt_provider_def *def,
                            cdsh_error *err)
{
    cdsh_prompt *p = ctx ? cdsh_host_prompt(cdsh_ctx_host(ctx)) : NULL;
    cdsh_disposer_t d;
    int rc = cdsh_prompt_provider_register(p, def, &d, err);
    if (rc != 0) {
        if (def && def->free_ud)
            def->free_ud(def->ud);
        return rc;
    }
    return cdsh_ctx_adopt(ctx, d, err);
}

json_t *cdsh_prompt_turn_context(cdsh_prompt *p, const cdsh_scope *scope, const char *session_id,
                                 long long turn, json_t **sampling)
{
    json_t *arr = json_array();
    json_t *samp = json_object();
    provider **v = NULL;
    size_t n = 0;
    if (p && arr && samp) {
        pthread_mutex_lock(&p->mu);
        v = calloc(p->nproviders ? p->nproviders : 1, sizeof *v);
        for (provider *x = v ? p->providers : NULL; x; x = x->next) {
            x->refs++;
            v[n++] = x;
        }
        pthread_mutex_unlock(&p->mu);
    }
    for (size_t i = 0; i < n; i++) {
        provider *x = v[i];
        char *text = x->context ? x->context(x->ud, scope, session_id, turn) : NULL;
        if (text && *text)
            json_array_append_new(arr, json_pack("{s:s, s:s}", "name", x->name, "text", text));
        free(text);
        json_t *o = x->sampling ? x->sampling(x->ud, scope, session_id, turn) : NULL;
        if (json_is_object(o))
            json_object_update(samp, o);
        json_decref(o);
        provider_unref(p, x);
    }
    free(v);
    if (sampling)
        *sampling = samp;
    else
        json_decref(samp);
    return arr;
}

size_t cdsh_prompt_provider_count(cdsh_prompt *p)
{
    if (!p)
        return 0;
    pthread_mutex_lock(&p->mu);
    size_t n = p->nproviders;
    pthread_mutex_unlock(&p->mu);
    return n;
}
