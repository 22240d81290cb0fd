/* disposer.h — the undo handle every host registration returns (tool,
 * command, skill, RPC handler, hook, listener, restriction, guard). A plugin
 * context keeps them in a stack and runs them in reverse order on unload, so
 * nothing a plugin registered outlives it. Running a disposer twice is a bug;
 * a zeroed disposer is a valid no-op. */
#ifndef CDSH_HOST_DISPOSER_H
#define CDSH_HOST_DISPOSER_H

#include <stddef.h>

typedef struct cdsh_disposer_t {
    void (*fn)(void *arg); /* NULL: nothing to undo */
    void *arg;
} cdsh_disposer_t;

/* Runs and clears the disposer; NULL-safe and safe on a zeroed value. */
static inline void cdsh_disposer_run(cdsh_disposer_t *d)
{
    if (d && d->fn) {
        void (*fn)(void *) = d->fn;
        void *arg = d->arg;
        d->fn = NULL;
        d->arg = NULL;
        fn(arg);
    }
}

#endif
