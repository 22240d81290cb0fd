/* scope.c — immutable, reference-counted agent scopes with a parent chain. */
#include "host/scope.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct cdsh_scope {
    atomic_int refs;
    cdsh_scope *parent;
    char id[];
};

cdsh_scope *cdsh_scope_new(const char *id, cdsh_scope *parent)
{
    if (!id || !*id)
        return NULL;
    size_t n = strlen(id);
    cdsh_scope *s = malloc(sizeof *s + n + 1);
    if (!s)
        return NULL;
    atomic_init(&s->refs, 1);
    s->parent = cdsh_scope_ref(parent);
    memcpy(s->id, id, n + 1);
    return s;
}

cdsh_scope *cdsh_scope_ref(cdsh_scope *scope)
{
    if (scope)
        atomic_fetch_add(&scope->refs, 1);
    return scope;
}

void cdsh_scope_unref(cdsh_scope *scope)
{
    /* Iterative so a long chain cannot overflow the stack. */
    while (scope && atomic_fetch_sub(&scope->refs, 1) == 1) {
        cdsh_scope *parent = scope->parent;
        free(scope);
        scope = parent;
    }
}

const char *cdsh_scope_id(const cdsh_scope *scope)
{
    return scope ? scope->id : "";
}

cdsh_scope *cdsh_scope_parent(const cdsh_scope *scope)
{
    return scope ? scope->parent : NULL;
}

size_t cdsh_scope_depth(const cdsh_scope *scope)
{
    size_t d = 0;
    for (; scope; scope = scope->parent)
        d++;
    return d;
}

bool cdsh_scope_contains(const cdsh_scope *ancestor, const cdsh_scope *scope)
{
    if (!ancestor)
        return true;
    for (; scope; scope = scope->parent)
        if (scope == ancestor)
            return true;
    return false;
}
