/* workpool.c — bounded worker threads over a FIFO job queue (workpool.h).
 * One mutex guards the queue and the counters; jobs run without it. */
#include "base/workpool.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "base/err.h"

typedef struct job {
    void (*fn)(void *);
    void *arg;
    struct job *next;
} job;

struct cdsh_workpool {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    job *head, **tail;
    size_t queued, idle, started, max;
    pthread_t *threads;
    bool stop;
};

cdsh_workpool *cdsh_workpool_new(size_t max)
{
    if (max == 0)
        return NULL;
    cdsh_workpool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->threads = calloc(max, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cond, NULL);
    p->tail = &p->head;
    p->max = max;
    return p;
}

static void *worker_main(void *arg)
{
    cdsh_workpool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stop)
            pthread_cond_wait(&p->cond, &p->mu);
        job *j = p->head;
        if (!j)
            break; /* stopping and the queue is empty */
        if (!(p->head = j->next))
            p->tail = &p->head;
        p->queued--;
        p->idle--;
        pthread_mutex_unlock(&p->mu);
        j->fn(j->arg);
        free(j);
        pthread_mutex_lock(&p->mu);
        p->idle++;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int cdsh_workpool_submit(cdsh_workpool *p, void (*fn)(void *), void *arg)
{
    job *j = malloc(sizeof *j);
    if (!j)
        return CDSH_ENOMEM;
    *j = (job){.fn = fn, .arg = arg};
    pthread_mutex_lock(&p->mu);
    *p->tail = j;
    p->tail = &j->next;
    p->queued++;
    if (p->queued > p->idle && p->started < p->max &&
        pthread_create(&p->threads[p->started], NULL, worker_main, p) == 0) {
        p->started++;
        p->idle++;
    }
    bool none = p->started == 0;
    if (none) {
        /* Not a single worker could start: run it here rather than never. */
        p->head = NULL;
        p->tail = &p->head;
        p->queued = 0;
    } else {
        pthread_cond_signal(&p->cond);
    }
    pthread_mutex_unlock(&p->mu);
    if (none) {
        fn(arg);
        free(j);
    }
    return 0;
}

size_t cdsh_workpool_threads(cdsh_workpool *p)
{
    pthread_mutex_lock(&p->mu);
    size_t n = p->started;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void cdsh_workpool_free(cdsh_workpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < p->started; i++)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
