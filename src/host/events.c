/* events.c — listener list with reference-counted entries so emission can run
 * listeners without holding the bus lock. */
#include "host/events.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "host/ptrs.h"

typedef struct listener {
    atomic_int refs;
    cdsh_events *bus;
    char *pattern;
    cdsh_scope *filter;
    cdsh_event_fn fn;
    void *arg;
    atomic_bool live;
} listener;

struct cdsh_events {
    pthread_mutex_t lock;
    cdsh__ptrs items; /* of listener*, subscription order */
};

static void listener_unref(listener *l)
{
    if (l && atomic_fetch_sub(&l->refs, 1) == 1) {
        free(l->pattern);
        cdsh_scope_unref(l->filter);
        free(l);
    }
}

cdsh_events *cdsh_events_new(void)
{
    cdsh_events *bus = calloc(1, sizeof *bus);
    if (bus)
        pthread_mutex_init(&bus->lock, NULL);
    return bus;
}

void cdsh_events_free(cdsh_events *bus)
{
    if (!bus)
        return;
    for (size_t i = 0; i < bus->items.n; i++)
        listener_unref(bus->items.items[i]);
    cdsh__ptrs_deinit(&bus->items);
    pthread_mutex_destroy(&bus->lock);
    free(bus);
}

static void dispose_listener(void *arg)
{
    listener *l = arg;
    cdsh_events *bus = l->bus;
    pthread_mutex_lock(&bus->lock);
    cdsh__ptrs_remove(&bus->items, l);
    atomic_store(&l->live, false);
    pthread_mutex_unlock(&bus->lock);
    listener_unref(l);
}

int cdsh_events_on(cdsh_events *bus, const char *pattern, cdsh_scope *filter, cdsh_event_fn fn,
                   void *arg, cdsh_disposer_t *out, cdsh_error *err)
{
    if (!bus || !pattern || !*pattern || !fn || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT",
                              "events: a listener needs a bus, a non-empty pattern and a function");
    listener *l = calloc(1, sizeof *l);
    char *pat = strdup(pattern);
    if (!l || !pat) {
        free(l);
        free(pat);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    atomic_init(&l->refs, 1);
    atomic_init(&l->live, true);
    l->bus = bus;
    l->pattern = pat;
    l->filter = cdsh_scope_ref(filter);
    l->fn = fn;
    l->arg = arg;

    pthread_mutex_lock(&bus->lock);
    if (cdsh__ptrs_push(&bus->items, l) != 0) {
        pthread_mutex_unlock(&bus->lock);
        listener_unref(l);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    pthread_mutex_unlock(&bus->lock);
    *out = (cdsh_disposer_t){dispose_listener, l};
    return 0;
}

static bool pattern_matches(const char *pattern, const char *name)
{
    size_t n = strlen(pattern);
    if (n == 1 && pattern[0] == '*')
        return true;
    if (n >= 2 && pattern[n - 1] == '*' && pattern[n - 2] == '/')
        return strncmp(pattern, name, n - 1) == 0;
    return strcmp(pattern, name) == 0;
}

void cdsh_events_emit(cdsh_events *bus, const char *name, const cdsh_scope *scope, bool filtered,
                      const json_t *payload)
{
    if (!bus || !name)
        return;
    listener *stack_buf[16];
    listener **snap = stack_buf;
    size_t count = 0;

    pthread_mutex_lock(&bus->lock);
    if (bus->items.n > 16) {
        snap = malloc(bus->items.n * sizeof *snap);
        if (!snap) {
            pthread_mutex_unlock(&bus->lock);
            return;
        }
    }
    for (size_t i = 0; i < bus->items.n; i++) {
        listener *l = bus->items.items[i];
        if (!pattern_matches(l->pattern, name))
            continue;
        if (filtered && l->filter && !cdsh_scope_contains(l->filter, scope))
            continue;
        atomic_fetch_add(&l->refs, 1);
        snap[count++] = l;
    }
    pthread_mutex_unlock(&bus->lock);

    for (size_t i = 0; i < count; i++) {
        if (atomic_load(&snap[i]->live))
            snap[i]->fn(snap[i]->arg, name, scope, payload);
        listener_unref(snap[i]);
    }
    if (snap != stack_buf)
        free(snap);
}

size_t cdsh_events_count(cdsh_events *bus)
{
    if (!bus)
        return 0; /* NULL-safe like emit: a registry may run without a bus */
    pthread_mutex_lock(&bus->lock);
    size_t n = bus->items.n;
    pthread_mutex_unlock(&bus->lock);
    return n;
}
