/* prompt.c — the prompt segment registry: layers, shadowing, ordering and
 * rendering outside the lock; per-turn providers and tool sources; the
 * order of the model's tool list (DSH's toolOrder) and the "systemPrompt"
 * plugin that sets it. Assembly with skills is the agent loop's. */
#include "host/prompt.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
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
    json_t *tool_order; /* NULL = sort by name */
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
    json_decref(p->tool_order);
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
    cdsh_prompt_tools_fn tools;
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
    if (!def->context && !def->sampling && !def->tools)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_PROVIDER",
                              "prompt provider \"%s\" gives neither context, sampling nor tools",
                              def->name);
    provider *v = calloc(1, sizeof *v);
    if (!v || !(v->name = strdup(def->name))) {
        free(v);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    v->owner = p;
    v->context = def->context;
    v->sampling = def->sampling;
    v->tools = def->tools;
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
            if (!x->context && !x->sampling)
                continue;
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

/* ---- the model's tool list ----------------------------------------------------- */

void cdsh_prompt_tools_materialize(cdsh_prompt *p, cdsh_cancel *cancel)
{
    if (!p)
        return;
    provider **v = NULL;
    size_t n = 0;
    pthread_mutex_lock(&p->mu);
    v = calloc(p->nproviders ? p->nproviders : 1, sizeof *v);
    for (provider *x = v ? p->providers : NULL; x; x = x->next) {
        if (!x->tools)
            continue;
        x->refs++;
        v[n++] = x;
    }
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < n; i++) {
        int rc = v[i]->tools(v[i]->ud, cancel);
        if (rc != 0)
            cdsh_log_warn("prompt", "tool source \"%s\" failed (%d)", v[i]->name, rc);
        provider_unref(p, v[i]);
    }
    free(v);
}

/* Next UTF-16 code unit of a UTF-8 string (a supplementary character gives
 * its high then its low surrogate); *pend holds a pending low surrogate.
 * Invalid bytes count as themselves. Returns -1 at the end. */
static int next_unit(const unsigned char **ps, int *pend)
{
    if (*pend >= 0) {
        int u = *pend;
        *pend = -1;
        return u;
    }
    const unsigned char *s = *ps;
    if (!*s)
        return -1;
    unsigned cp = *s, len = 1;
    if (cp >= 0xF0 && cp < 0xF8 && s[1] && s[2] && s[3])
        cp = ((cp & 7u) << 18) | ((s[1] & 63u) << 12) | ((s[2] & 63u) << 6) | (s[3] & 63u), len = 4;
    else if (cp >= 0xE0 && cp < 0xF0 && s[1] && s[2])
        cp = ((cp & 15u) << 12) | ((s[1] & 63u) << 6) | (s[2] & 63u), len = 3;
    else if (cp >= 0xC0 && cp < 0xE0 && s[1])
        cp = ((cp & 31u) << 6) | (s[1] & 63u), len = 2;
    *ps = s + len;
    if (cp >= 0x10000) {
        cp -= 0x10000;
        *pend = (int)(0xDC00 + (cp & 0x3FF));
        return (int)(0xD800 + (cp >> 10));
    }
    return (int)cp;
}

int cdsh_prompt_utf16_cmp(const char *a, const char *b)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    int px = -1, py = -1;
    for (;;) {
        int ux = next_unit(&x, &px), uy = next_unit(&y, &py);
        if (ux != uy)
            return ux < uy ? -1 : 1;
        if (ux < 0)
            return 0;
    }
}

int cdsh_prompt_tool_order_check(const json_t *order, cdsh_error *err)
{
    if (!order || json_is_null(order))
        return 0;
    if (!json_is_array(order))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_TOOL_ORDER",
                              "toolOrder must be an array of tool names");
    bool rest = false;
    size_t i, j;
    json_t *v;
    json_array_foreach(order, i, v) {
        if (!json_is_string(v))
            return cdsh_error_set(err, CDSH_EINVAL, "INVALID_TOOL_ORDER",
                                  "toolOrder entries must be strings");
        for (j = 0; j < i; j++)
            if (strcmp(json_string_value(json_array_get(order, j)), json_string_value(v)) == 0)
                return cdsh_error_set(err, CDSH_EINVAL, "INVALID_TOOL_ORDER",
                                      "toolOrder lists \"%s\" more than once", json_string_value(v));
        rest = rest || strcmp(json_string_value(v), CDSH_PROMPT_TOOL_ORDER_REST) == 0;
    }
    if (!rest)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_TOOL_ORDER",
                              "toolOrder must contain the \"%s\" rest entry (where unlisted tools "
                              "are inserted)",
                              CDSH_PROMPT_TOOL_ORDER_REST);
    return 0;
}

typedef struct order_undo {
    cdsh_prompt *p;
    json_t *previous;
} order_undo;

static void order_emit(cdsh_prompt *p)
{
    if (!p->bus)
        return;
    json_t *payload = json_pack("{s:s}", "reason", "tool-order");
    cdsh_events_emit(p->bus, "prompt/change", NULL, false, payload);
    json_decref(payload);
}

static void restore_order(void *arg)
{
    order_undo *u = arg;
    pthread_mutex_lock(&u->p->mu);
    json_decref(u->p->tool_order);
    u->p->tool_order = u->previous;
    pthread_mutex_unlock(&u->p->mu);
    order_emit(u->p);
    free(u);
}

/* Sets the order (a copy; NULL = the default sort) after checking it; the
 * disposer puts back the order that was set before. Emits "prompt/change"
 * {reason:"tool-order"}. */
static int cdsh_prompt_set_tool_order(cdsh_prompt *p, const json_t *order, cdsh_disposer_t *out,
                                      cdsh_error *err)
{
    if (out)
        *out = (cdsh_disposer_t){0};
    if (!p)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "prompt is missing");
    int rc = cdsh_prompt_tool_order_check(order, err);
    if (rc != 0)
        return rc;
    json_t *copy = order && !json_is_null(order) ? json_deep_copy(order) : NULL;
    order_undo *u = out ? calloc(1, sizeof *u) : NULL;
    if ((order && !json_is_null(order) && !copy) || (out && !u)) {
        json_decref(copy);
        free(u);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    pthread_mutex_lock(&p->mu);
    json_t *previous = p->tool_order;
    p->tool_order = copy;
    pthread_mutex_unlock(&p->mu);
    if (u) {
        u->p = p;
        u->previous = previous;
        *out = (cdsh_disposer_t){restore_order, u};
    } else {
        json_decref(previous);
    }
    order_emit(p);
    return 0;
}

json_t *cdsh_prompt_tool_order_dup(cdsh_prompt *p)
{
    if (!p)
        return NULL;
    pthread_mutex_lock(&p->mu);
    json_t *o = p->tool_order ? json_deep_copy(p->tool_order) : NULL;
    pthread_mutex_unlock(&p->mu);
    return o;
}

static int by_tool_name(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    return cdsh_prompt_utf16_cmp(json_string_value(json_object_get(x, "name")),
                                 json_string_value(json_object_get(y, "name")));
}

static int by_string(const void *a, const void *b)
{
    return cdsh_prompt_utf16_cmp(*(const char *const *)a, *(const char *const *)b);
}

static bool in_strings(const json_t *arr, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        const char *s = json_is_string(v) ? json_string_value(v)
                                          : json_string_value(json_object_get(v, "name"));
        if (s && strcmp(s, name) == 0)
            return true;
    }
    return false;
}

/* The unknown-entry message: DSH's wording, known names sorted. */
static int unknown_entries(const json_t *order, const json_t *known, cdsh_error *err)
{
    cdsh_strbuf sb, names;
    cdsh_strbuf_init(&sb);
    cdsh_strbuf_init(&names);
    size_t n = 0, i;
    json_t *v;
    json_array_foreach(order, i, v) {
        const char *s = json_string_value(v);
        if (strcmp(s, CDSH_PROMPT_TOOL_ORDER_REST) == 0 || in_strings(known, s))
            continue;
        cdsh_strbuf_appendf(&names, "%s\"%s\"", n ? ", " : "", s);
        n++;
    }
    size_t nk = json_array_size(known);
    const char **k = calloc(nk ? nk : 1, sizeof *k);
    for (i = 0; k && i < nk; i++) {
        json_t *e = json_array_get(known, i);
        k[i] = json_is_string(e) ? json_string_value(e) : json_string_value(json_object_get(e, "name"));
    }
    if (k)
        qsort(k, nk, sizeof *k, by_string);
    for (i = 0; k && i < nk; i++)
        cdsh_strbuf_appendf(&sb, "%s%s", i ? ", " : "", k[i]);
    free(k);
    int rc = cdsh_error_set(err, CDSH_ENOTFOUND, "UNKNOWN_TOOL_ORDER_ENTRY",
                            "toolOrder lists unregistered tool%s %s; known tools: %s",
                            n > 1 ? "s" : "", names.data ? names.data : "",
                            sb.len ? sb.data : "(none)");
    cdsh_strbuf_deinit(&sb);
    cdsh_strbuf_deinit(&names);
    return rc;
}

json_t *cdsh_prompt_order_tools(const json_t *schemas, const json_t *order, const json_t *known,
                                cdsh_error *err)
{
    size_t n = json_array_size(schemas), i;
    json_t *v;
    json_array_foreach(schemas, i, v) {
        if (strcmp(json_string_value(json_object_get(v, "name")), CDSH_PROMPT_TOOL_ORDER_REST) == 0) {
            cdsh_error_set(err, CDSH_EINVAL, "RESERVED_TOOL_NAME",
                           "tool provider returned reserved tool name \"%s\" (reserved for "
                           "toolOrder's rest entry)",
                           CDSH_PROMPT_TOOL_ORDER_REST);
            return NULL;
        }
    }
    if (cdsh_prompt_tool_order_check(order, err) != 0)
        return NULL;
    json_t **sorted = calloc(n ? n : 1, sizeof *sorted);
    json_t *out = json_array();
    if (!sorted || !out) {
        free(sorted);
        json_decref(out);
        cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        return NULL;
    }
    for (i = 0; i < n; i++)
        sorted[i] = json_array_get(schemas, i);
    qsort(sorted, n, sizeof *sorted, by_tool_name);
    if (!order || json_is_null(order)) {
        for (i = 0; i < n; i++)
            json_array_append(out, sorted[i]);
        free(sorted);
        return out;
    }
    const json_t *names = known ? known : schemas;
    json_array_foreach(order, i, v) {
        const char *s = json_string_value(v);
        if (strcmp(s, CDSH_PROMPT_TOOL_ORDER_REST) != 0 && !in_strings(names, s)) {
            unknown_entries(order, names, err);
            free(sorted);
            json_decref(out);
            return NULL;
        }
    }
    json_array_foreach(order, i, v) {
        const char *s = json_string_value(v);
        bool rest = strcmp(s, CDSH_PROMPT_TOOL_ORDER_REST) == 0;
        for (size_t j = 0; j < n; j++) {
            const char *name = json_string_value(json_object_get(sorted[j], "name"));
            if (rest ? !in_strings(order, name) : strcmp(name, s) == 0)
                json_array_append(out, sorted[j]);
        }
    }
    free(sorted);
    return out;
}

json_t *cdsh_prompt_tools_dup(cdsh_prompt *p, cdsh_tools *tools, const cdsh_scope *scope,
                              cdsh_cancel *cancel, cdsh_error *err)
{
    cdsh_prompt_tools_materialize(p, cancel);
    json_t *schemas = cdsh_tools_schemas(tools, scope);
    json_t *order = cdsh_prompt_tool_order_dup(p);
    json_t *known = NULL;
    if (order) {
        known = cdsh_tools_restrictable_names(tools, scope);
        size_t i;
        json_t *v;
        json_array_foreach(schemas, i, v) {
            if (!in_strings(known, json_string_value(json_object_get(v, "name"))))
                json_array_append(known, json_object_get(v, "name"));
        }
    }
    json_t *out = schemas ? cdsh_prompt_order_tools(schemas, order, known, err) : NULL;
    if (!schemas)
        cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    json_decref(known);
    json_decref(order);
    json_decref(schemas);
    return out;
}

/* ---- the "systemPrompt" plugin ----------------------------------------------- */

static int prompt_plugin_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    const json_t *order = json_object_get(config, "toolOrder");
    if (!order || json_is_null(order))
        return 0;
    cdsh_disposer_t d;
    int rc = cdsh_prompt_set_tool_order(cdsh_host_prompt(cdsh_ctx_host(ctx)), order, &d, err);
    return rc != 0 ? rc : cdsh_ctx_adopt(ctx, d, err);
}

const cdsh_plugin_def cdsh_prompt_plugin = {
    .name = "systemPrompt",
    .description = "the order of the tools in the model's tool list (toolOrder)",
    .config_schema =
        "{\"type\":\"object\",\"properties\":{\"toolOrder\":{\"type\":\"array\","
        "\"items\":{\"type\":\"string\"},"
        "\"description\":\"tool names in the order the model sees them, with \\\"<unlisted-tools>\\\" "
        "exactly once where every other tool goes (sorted by name); absent: all sorted by name\"}}}",
    .enabled_by_default = true,
    .apply = prompt_plugin_apply,
};
