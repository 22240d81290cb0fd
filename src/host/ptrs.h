/* ptrs.h — layer-internal: a growable array of pointers in insertion order,
 * shared by the host's registries (commands, skills, RPC channels, plugins,
 * services). Not thread-safe: the owning registry holds its lock. */
#ifndef CDSH_HOST_PTRS_H
#define CDSH_HOST_PTRS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct cdsh__ptrs {
    void **items;
    size_t n, cap;
} cdsh__ptrs;

/* Appends p. 0 or CDSH_ENOMEM (the array is unchanged then). */
int cdsh__ptrs_push(cdsh__ptrs *v, void *p);

/* Removes the first occurrence of p, keeping the order. True if found. */
bool cdsh__ptrs_remove(cdsh__ptrs *v, const void *p);

/* Frees the array (not the pointees) and zeroes v. */
void cdsh__ptrs_deinit(cdsh__ptrs *v);

#endif
