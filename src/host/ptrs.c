/* ptrs.c — the pointer array behind the host registries. */
#include "host/ptrs.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"

int cdsh__ptrs_push(cdsh__ptrs *v, void *p)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 8;
        void **grown = realloc(v->items, cap * sizeof *grown);
        if (!grown)
            return CDSH_ENOMEM;
        v->items = grown;
        v->cap = cap;
    }
    v->items[v->n++] = p;
    return 0;
}

bool cdsh__ptrs_remove(cdsh__ptrs *v, const void *p)
{
    for (size_t i = 0; i < v->n; i++) {
        if (v->items[i] == p) {
            memmove(&v->items[i], &v->items[i + 1], (v->n - i - 1) * sizeof *v->items);
            v->n--;
            return true;
        }
    }
    return false;
}

void cdsh__ptrs_deinit(cdsh__ptrs *v)
{
    free(v->items);
    memset(v, 0, sizeof *v);
}
