/* cmdir.c — the arena, the C command IR and its JSON form (cmdir.h). The
 * JSON is made in the key order commands.h documents, reasons and verdict
 * last (preflight adds them in that order). */
#include "plugins/mcpimport/cmdir.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_SIZE (64 * 1024)

struct cdsh__mcpimport_block {
    struct cdsh__mcpimport_block *next;
    size_t used, size;
    alignas(max_align_t) unsigned char data[];
};

void *cdsh__mcpimport_arena_alloc(cdsh__mcpimport_arena *a, size_t n)
{
    const size_t al = alignof(max_align_t);
    n = (n + al - 1) & ~(al - 1);
    struct cdsh__mcpimport_block *b = a->head;
    bool large = n > BLOCK_SIZE / 4;
    if (!b || b->size - b->used < n) {
        size_t size = large ? n : BLOCK_SIZE - sizeof *b;
        struct cdsh__mcpimport_block *nb = malloc(sizeof *nb + size);
        if (!nb)
            return NULL;
        nb->used = 0;
        nb->size = size;
        if (b && large) { /* a large one: behind the current block, which stays open */
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            a->head = nb;
        }
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
}

static char *arena_strndup(cdsh__mcpimport_arena *a, const char *s, size_t n)
{
    char *p = s ? cdsh__mcpimport_arena_alloc(a, n + 1) : NULL;
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

char *cdsh__mcpimport_arena_strdup(cdsh__mcpimport_arena *a, const char *s)
{
    return s ? arena_strndup(a, s, strlen(s)) : NULL;
}

void cdsh__mcpimport_arena_deinit(cdsh__mcpimport_arena *a)
{
    for (struct cdsh__mcpimport_block *b = a->head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    a->head = NULL;
}

bool cdsh__mcpimport_strv_from_json(cdsh__mcpimport_arena *a, const json_t *arr,
                                    cdsh__mcpimport_strv *out)
{
    size_t n = json_array_size(arr);
    out->n = 0;
    out->v = NULL;
    if (!n)
        return true;
    out->v = cdsh__mcpimport_arena_alloc(a, n * sizeof *out->v);
    if (!out->v)
        return false;
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_array_get(arr, i);
        const char *t =
            arena_strndup(a, json_string_value(s), json_string_length(s));
        if (!t)
            return false;
        out->v[out->n++] = t;
    }
    return true;
}

void cdsh__mcpimport_cmds_init(cdsh__mcpimport_cmds *l)
{
    memset(l, 0, sizeof *l);
}

void cdsh__mcpimport_cmds_deinit(cdsh__mcpimport_cmds *l)
{
    for (size_t i = 0; i < l->n; i++) {
        json_decref(l->v[i]->provenance);
        json_decref(l->v[i]->json);
        free(l->v[i]->reasons);
    }
    free(l->v);
    json_decref(l->json);
    for (size_t i = 0; i < sizeof l->scratch / sizeof l->scratch[0]; i++)
        json_decref(l->scratch[i]);
    cdsh__mcpimport_arena_deinit(&l->arena);
    memset(l, 0, sizeof *l);
}

bool cdsh__mcpimport_cmds_push(cdsh__mcpimport_cmds *l, cdsh__mcpimport_cmd *c)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        cdsh__mcpimport_cmd **g = realloc(l->v, nc * sizeof *g);
        if (!g)
            return false;
        l->v = g;
        l->cap = nc;
    }
    l->v[l->n++] = c;
    return true;
}

/* ---- JSON ------------------------------------------------------------------ */

/* Strings were checked for UTF-8 when the struct was built (commands.c). */
static json_t *plain_str(void *ud, const char *s)
{
    (void)ud;
    return json_string_nocheck(s);
}

static json_t *plain_value(void *ud, const json_t *v)
{
    (void)ud;
    return json_incref((json_t *)v);
}

static const cdsh__mcpimport_jmap PLAIN = {plain_str, plain_value, NULL, NULL, NULL};

static json_t *str_or_null(const cdsh__mcpimport_jmap *m, const char *s)
{
    return s ? m->str(m->ud, s) : json_null();
}

static bool set(json_t *o, const char *k, json_t *v)
{
    return v && json_object_set_new_nocheck(o, k, v) == 0;
}

/* {k1: v1, k2: v2[, k3: v3]} with the strings through m. */
static json_t *pair(const cdsh__mcpimport_jmap *m, const char *k1, const char *v1, const char *k2,
                    const char *v2, const char *k3, const char *v3)
{
    json_t *o = json_object();
    if (o && set(o, k1, m->str(m->ud, v1)) && set(o, k2, m->str(m->ud, v2)) &&
        (!k3 || set(o, k3, m->str(m->ud, v3))))
        return o;
    json_decref(o);
    return NULL;
}

/* What one array of a command is made of: a list of strings, the reasons,
 * or the unsupported (feature, text) pairs. */
typedef struct arr_src {
    char kind; /* 's' strings, 'r' reasons, 'u' unsupported */
    const cdsh__mcpimport_strv *strv;
    const cdsh__mcpimport_cmd *c;
} arr_src;

static json_t *arr_build(const cdsh__mcpimport_jmap *m, const arr_src *src)
{
    json_t *a = json_array();
    const cdsh__mcpimport_cmd *c = src->c;
    size_t n = src->kind == 's' ? src->strv->n
               : src->kind == 'r' ? c->n_reasons
                                  : c->unsupported.n / 2;
    for (size_t i = 0; a && i < n; i++) {
        json_t *x = src->kind == 's' ? m->str(m->ud, src->strv->v[i])
                    : src->kind == 'r'
                        ? pair(m, "level", c->reasons[i].level, "code", c->reasons[i].code,
                               "message", c->reasons[i].message)
                        : pair(m, "feature", c->unsupported.v[2 * i], "text",
                               c->unsupported.v[2 * i + 1], NULL, NULL);
        if (json_array_append_new(a, x) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* Appends "<len>:<s>" to key[*at..size); false when it does not fit. */
static bool key_add(char *key, size_t size, size_t *at, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    int w = snprintf(key + *at, size - *at, "%zu:", n);
    if (w < 0 || (size_t)w + n >= size - *at)
        return false;
    memcpy(key + *at + w, s ? s : "", n);
    *at += (size_t)w + n;
    key[*at] = '\0';
    return true;
}

/* The array src describes; one array shared by every equal one when m
 * shares (the content, length-prefixed, is the key; a long one is not
 * shared). */
static json_t *arr_json(const cdsh__mcpimport_jmap *m, const arr_src *src)
{
    char key[512];
    size_t at = 0;
    bool fits = m->shared != NULL;
    key[0] = src->kind, key[1] = '\0', at = 1;
    const cdsh__mcpimport_cmd *c = src->c;
    if (src->kind == 's')
        for (size_t i = 0; fits && i < src->strv->n; i++)
            fits = key_add(key, sizeof key, &at, src->strv->v[i]);
    else if (src->kind == 'r')
        for (size_t i = 0; fits && i < c->n_reasons; i++)
            fits = key_add(key, sizeof key, &at, c->reasons[i].level) &&
                   key_add(key, sizeof key, &at, c->reasons[i].code) &&
                   key_add(key, sizeof key, &at, c->reasons[i].message);
    else
        for (size_t i = 0; fits && i < c->unsupported.n; i++)
            fits = key_add(key, sizeof key, &at, c->unsupported.v[i]);
    json_t *a = fits ? m->shared(m->ud, key) : NULL;
    if (a)
        return a;
    a = arr_build(m, src);
    if (a && fits)
        m->share(m->ud, key, a);
    return a;
}

static json_t *strv_json(const cdsh__mcpimport_jmap *m, const cdsh__mcpimport_strv *v)
{
    return arr_json(m, &(arr_src){'s', v, NULL});
}

static json_t *reasons_json(const cdsh__mcpimport_jmap *m, const cdsh__mcpimport_cmd *c)
{
    return arr_json(m, &(arr_src){'r', NULL, c});
}

json_t *cdsh__mcpimport_cmd_reasons_json(const cdsh__mcpimport_cmd *c)
{
    return reasons_json(&PLAIN, c);
}

json_t *cdsh__mcpimport_cmd_json_mapped(const cdsh__mcpimport_cmd *c,
                                        const cdsh__mcpimport_jmap *m)
{
    json_t *o = json_object(), *uns = arr_json(m, &(arr_src){'u', NULL, c});
    json_t *reasons = c->verdict ? reasons_json(m, c) : NULL;
    bool ok = o && uns && (!c->verdict || reasons);
    ok = ok && set(o, "name", m->str(m->ud, c->name)) &&
         set(o, "originalName", m->str(m->ud, c->original)) &&
         set(o, "description", m->str(m->ud, c->description)) &&
         set(o, "argumentHint", str_or_null(m, c->hint)) &&
         set(o, "prompt", m->str(m->ud, c->prompt)) &&
         set(o, "arguments", strv_json(m, &c->arguments)) &&
         set(o, "placeholderStyle", m->str(m->ud, c->style)) &&
         set(o, "namedArguments", strv_json(m, &c->named)) &&
         set(o, "allowedTools", strv_json(m, &c->allowed)) &&
         set(o, "model", str_or_null(m, c->model)) &&
         set(o, "disableModelInvocation", json_boolean(c->dmi)) &&
         set(o, "source", m->str(m->ud, c->source)) && set(o, "file", m->str(m->ud, c->file)) &&
         set(o, "provenance", m->value(m->ud, c->provenance)) &&
         set(o, "warnings", strv_json(m, &c->warnings)) &&
         set(o, "unsupported", json_incref(uns)) && set(o, "info", strv_json(m, &c->info)) &&
         (!c->verdict || (set(o, "reasons", json_incref(reasons)) &&
                          set(o, "verdict", m->str(m->ud, c->verdict))));
    json_decref(uns);
    json_decref(reasons);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *cdsh__mcpimport_cmd_json(cdsh__mcpimport_cmd *c)
{
    if (!c->json)
        c->json = cdsh__mcpimport_cmd_json_mapped(c, &PLAIN);
    return c->json;
}

json_t *cdsh__mcpimport_cmds_json(cdsh__mcpimport_cmds *l)
{
    if (l->json)
        return l->json;
    json_t *a = json_array();
    for (size_t i = 0; a && i < l->n; i++) {
        json_t *o = cdsh__mcpimport_cmd_json(l->v[i]);
        if (!o || json_array_append(a, o) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    l->json = a;
    return a;
}

cdsh__mcpimport_cmd *cdsh__mcpimport_cmds_find(const cdsh__mcpimport_cmds *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i]->name, name) == 0)
            return l->v[i];
    return NULL;
}

/* ---- name index ------------------------------------------------------------ */

static size_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

static bool grow(cdsh__mcpimport_index *ix)
{
    size_t cap = ix->cap ? ix->cap * 2 : 256;
    const char **keys = calloc(cap, sizeof *keys);
    void **vals = calloc(cap, sizeof *vals);
    if (!keys || !vals) {
        free(keys), free(vals);
        return false;
    }
    for (size_t i = 0; i < ix->cap; i++) {
        if (!ix->keys[i])
            continue;
        size_t j = fnv1a(ix->keys[i]) & (cap - 1);
        while (keys[j])
            j = (j + 1) & (cap - 1);
        keys[j] = ix->keys[i];
        vals[j] = ix->vals[i];
    }
    free(ix->keys), free(ix->vals);
    ix->keys = keys;
    ix->vals = vals;
    ix->cap = cap;
    return true;
}

void *cdsh__mcpimport_index_first(cdsh__mcpimport_index *ix, const char *key, void *val)
{
    if ((ix->n + 1) * 2 > ix->cap && !grow(ix))
        return NULL;
    size_t j = fnv1a(key) & (ix->cap - 1);
    for (; ix->keys[j]; j = (j + 1) & (ix->cap - 1))
        if (strcmp(ix->keys[j], key) == 0)
            return ix->vals[j];
    ix->keys[j] = key;
    ix->vals[j] = val;
    ix->n++;
    return NULL;
}

void *cdsh__mcpimport_index_get(const cdsh__mcpimport_index *ix, const char *key)
{
    if (!ix->cap)
        return NULL;
    for (size_t j = fnv1a(key) & (ix->cap - 1); ix->keys[j]; j = (j + 1) & (ix->cap - 1))
        if (strcmp(ix->keys[j], key) == 0)
            return ix->vals[j];
    return NULL;
}

void cdsh__mcpimport_index_deinit(cdsh__mcpimport_index *ix)
{
    free(ix->keys), free(ix->vals);
    memset(ix, 0, sizeof *ix);
}
