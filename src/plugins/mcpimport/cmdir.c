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

static void arena_deinit(cdsh__mcpimport_arena *a)
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
    arena_deinit(&l->arena);
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
static json_t *str_or_null(const char *s)
{
    return s ? json_string_nocheck(s) : json_null();
}

static json_t *strv_json(const cdsh__mcpimport_strv *v)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < v->n; i++)
        if (json_array_append_new(a, json_string_nocheck(v->v[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static json_t *pair(const char *k1, const char *v1, const char *k2, const char *v2, const char *k3,
                    const char *v3)
{
    json_t *o = json_object();
    if (o && json_object_set_new_nocheck(o, k1, json_string_nocheck(v1)) == 0 &&
        json_object_set_new_nocheck(o, k2, json_string_nocheck(v2)) == 0 &&
        (!k3 || json_object_set_new_nocheck(o, k3, json_string_nocheck(v3)) == 0))
        return o;
    json_decref(o);
    return NULL;
}

static bool set(json_t *o, const char *k, json_t *v)
{
    return v && json_object_set_new_nocheck(o, k, v) == 0;
}

json_t *cdsh__mcpimport_cmd_reasons_json(const cdsh__mcpimport_cmd *c)
{
    json_t *reasons = json_array();
    for (size_t i = 0; reasons && i < c->n_reasons; i++)
        if (json_array_append_new(reasons,
                                  pair("level", c->reasons[i].level, "code", c->reasons[i].code,
                                       "message", c->reasons[i].message)) != 0) {
            json_decref(reasons);
            return NULL;
        }
    return reasons;
}

json_t *cdsh__mcpimport_cmd_json(cdsh__mcpimport_cmd *c)
{
    if (c->json)
        return c->json;
    json_t *o = json_object(), *uns = json_array();
    json_t *reasons = c->verdict ? cdsh__mcpimport_cmd_reasons_json(c) : NULL;
    bool ok = o && uns && (!c->verdict || reasons);
    for (size_t i = 0; ok && i + 1 < c->unsupported.n; i += 2)
        ok = json_array_append_new(uns, pair("feature", c->unsupported.v[i], "text",
                                             c->unsupported.v[i + 1], NULL, NULL)) == 0;
    ok = ok && set(o, "name", json_string_nocheck(c->name)) &&
         set(o, "originalName", json_string_nocheck(c->original)) &&
         set(o, "description", json_string_nocheck(c->description)) &&
         set(o, "argumentHint", str_or_null(c->hint)) &&
         set(o, "prompt", json_string_nocheck(c->prompt)) &&
         set(o, "arguments", strv_json(&c->arguments)) &&
         set(o, "placeholderStyle", json_string_nocheck(c->style)) &&
         set(o, "namedArguments", strv_json(&c->named)) &&
         set(o, "allowedTools", strv_json(&c->allowed)) && set(o, "model", str_or_null(c->model)) &&
         set(o, "disableModelInvocation", json_boolean(c->dmi)) &&
         set(o, "source", json_string_nocheck(c->source)) &&
         set(o, "file", json_string_nocheck(c->file)) &&
         set(o, "provenance", json_incref(c->provenance)) &&
         set(o, "warnings", strv_json(&c->warnings)) && set(o, "unsupported", json_incref(uns)) &&
         set(o, "info", strv_json(&c->info)) &&
         (!c->verdict || (set(o, "reasons", json_incref(reasons)) &&
                          set(o, "verdict", json_string_nocheck(c->verdict))));
    json_decref(uns);
    json_decref(reasons);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    c->json = o;
    return o;
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

void cdsh__mcpimport_index_deinit(cdsh__mcpimport_index *ix)
{
    free(ix->keys), free(ix->vals);
    memset(ix, 0, sizeof *ix);
}
