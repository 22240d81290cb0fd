/* cancel.c — cancellation tokens: fire-once flag, subscriber callbacks,
 * parent→child propagation. Waiting helpers in other modules build on
 * cdsh_cancel_subscribe; this file knows nothing about what is waiting. */
#include "base/cancel.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"

typedef struct subscription {
    uint64_t id;
    cdsh_cancel_fn cb;
    void *arg;
} subscription;

struct cdsh_cancel {
    pthread_mutex_t lock;
    atomic_bool fired;
    char *reason;
    subscription *subs;
    size_t nsubs, capsubs;
    uint64_t next_id;
    cdsh_cancel *parent;
    uint64_t parent_sub;
};

static void fire_from_parent(void *arg)
{
    cdsh_cancel *child = arg;
    cdsh_cancel_fire(child, NULL);
}

cdsh_cancel *cdsh_cancel_new(cdsh_cancel *parent)
{
    cdsh_cancel *tok = calloc(1, sizeof *tok);
    if (!tok)
        return NULL;
    pthread_mutex_init(&tok->lock, NULL);
    atomic_init(&tok->fired, false);
    tok->next_id = 1;
    if (parent) {
        tok->parent = parent;
        tok->parent_sub = cdsh_cancel_subscribe(parent, fire_from_parent, tok);
        if (tok->parent_sub == 0) {
            pthread_mutex_destroy(&tok->lock);
            free(tok);
            return NULL;
        }
    }
    return tok;
}

void cdsh_cancel_free(cdsh_cancel *tok)
{
    if (!tok)
        return;
    if (tok->parent)
        cdsh_cancel_unsubscribe(tok->parent, tok->parent_sub);
    pthread_mutex_destroy(&tok->lock);
    free(tok->reason);
    free(tok->subs);
    free(tok);
}

void cdsh_cancel_fire(cdsh_cancel *tok, const char *reason)
{
    if (!tok)
        return;
    pthread_mutex_lock(&tok->lock);
    if (atomic_load(&tok->fired)) {
        pthread_mutex_unlock(&tok->lock);
        return;
    }
    if (!tok->reason) {
        const char *parent_reason = tok->parent ? cdsh_cancel_reason(tok->parent) : NULL;
        const char *r = reason ? reason : parent_reason ? parent_reason : "cancelled";
        tok->reason = strdup(r);
    }
    atomic_store(&tok->fired, true);
    for (size_t i = 0; i < tok->nsubs; i++)
        tok->subs[i].cb(tok->subs[i].arg);
    pthread_mutex_unlock(&tok->lock);
}

bool cdsh_cancel_is_fired(const cdsh_cancel *tok)
{
    return tok && atomic_load(&((cdsh_cancel *)tok)->fired);
}

const char *cdsh_cancel_reason(const cdsh_cancel *tok)
{
    if (!cdsh_cancel_is_fired(tok))
        return NULL;
    return tok->reason ? tok->reason : "cancelled";
}

uint64_t cdsh_cancel_subscribe(cdsh_cancel *tok, cdsh_cancel_fn cb, void *arg)
{
    if (!tok || !cb)
        return 0;
    pthread_mutex_lock(&tok->lock);
    if (tok->nsubs == tok->capsubs) {
        size_t cap = tok->capsubs ? tok->capsubs * 2 : 4;
        subscription *grown = realloc(tok->subs, cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&tok->lock);
            return 0;
        }
        tok->subs = grown;
        tok->capsubs = cap;
    }
    uint64_t id = tok->next_id++;
    tok->subs[tok->nsubs++] = (subscription){id, cb, arg};
    if (atomic_load(&tok->fired))
        cb(arg);
    pthread_mutex_unlock(&tok->lock);
    return id;
}

void cdsh_cancel_unsubscribe(cdsh_cancel *tok, uint64_t id)
{
    if (!tok || id == 0)
        return;
    pthread_mutex_lock(&tok->lock);
    for (size_t i = 0; i < tok->nsubs; i++) {
        if (tok->subs[i].id == id) {
            memmove(&tok->subs[i], &tok->subs[i + 1], (tok->nsubs - i - 1) * sizeof *tok->subs);
            tok->nsubs--;
            break;
        }
    }
    pthread_mutex_unlock(&tok->lock);
}

typedef struct waiter {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool woken;
} waiter;

static void wake_waiter(void *arg)
{
    waiter *w = arg;
    pthread_mutex_lock(&w->lock);
    w->woken = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

bool cdsh_cancel_wait(cdsh_cancel *tok, int64_t timeout_ms)
{
    waiter w = {.woken = false};
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w.cond, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&w.lock, NULL);

    struct timespec deadline; /* unused when timeout_ms < 0 */
    cdsh_clock_deadline(CLOCK_MONOTONIC, timeout_ms, &deadline);
    uint64_t sub = cdsh_cancel_subscribe(tok, wake_waiter, &w);
    /* Without a subscription (ENOMEM) nothing would wake us: poll instead. */
    bool poll = tok && sub == 0;
    pthread_mutex_lock(&w.lock);
    while (!w.woken && !(poll && cdsh_cancel_is_fired(tok))) {
        struct timespec until = deadline;
        if (poll) {
            cdsh_clock_deadline(CLOCK_MONOTONIC, 10, &until);
            if (timeout_ms >= 0 &&
                (until.tv_sec > deadline.tv_sec ||
                 (until.tv_sec == deadline.tv_sec && until.tv_nsec > deadline.tv_nsec)))
                until = deadline;
        }
        int rc = timeout_ms >= 0 || poll ? pthread_cond_timedwait(&w.cond, &w.lock, &until)
                                         : pthread_cond_wait(&w.cond, &w.lock);
        if (rc == ETIMEDOUT && timeout_ms >= 0 && !poll)
            break;
        if (rc == ETIMEDOUT && poll && timeout_ms >= 0 && until.tv_sec == deadline.tv_sec &&
            until.tv_nsec == deadline.tv_nsec)
            break;
    }
    pthread_mutex_unlock(&w.lock);
    cdsh_cancel_unsubscribe(tok, sub);
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.lock);
    return cdsh_cancel_is_fired(tok);
}
