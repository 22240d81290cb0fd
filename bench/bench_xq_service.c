/* bench_xq_service.c — the xiangqi game service: parallel state reads (the
 * cached projection), a person's move with the local engine's reply at a few
 * depths (search + save + projection), and undo (save + projection). */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugins/xiangqi/service.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct reader {
    cdsh_xq_service *svc;
    int n;
} reader;

static void *read_loop(void *arg)
{
    reader *r = arg;
    for (int i = 0; i < r->n; i++)
        json_decref(cdsh_xq_service_state(r->svc, "bench", NULL));
    return NULL;
}

static cdsh_xq_service *open_service(const char *dir, int depth)
{
    cdsh_xq_service_opts o = {
        .dir = dir, .engine_depth = depth, .engine_movetime_ms = 60000, .engine_hash_mb = 16};
    cdsh_xq_service *svc = NULL;
    cdsh_error err;
    if (cdsh_xq_service_new(&o, &svc, &err) != 0) {
        fprintf(stderr, "bench_xq_service: %s\n", err.message);
        exit(1);
    }
    return svc;
}

int main(void)
{
    char dir[] = "/tmp/cdsh-bench-xq-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    cdsh_xq_service *svc = open_service(dir, 1);
    json_decref(cdsh_xq_service_new_game(svc, "bench", NULL, NULL));
    const int threads = 4, per = 5000;
    reader r[4];
    pthread_t th[4];
    double t0 = now();
    for (int i = 0; i < threads; i++) {
        r[i] = (reader){svc, per};
        pthread_create(&th[i], NULL, read_loop, &r[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    double dt = now() - t0;
    printf("state reads, %d threads: %d in %.3f s = %.0f reads/s\n", threads, threads * per, dt,
           threads * per / dt);
    cdsh_xq_service_free(svc);
    for (int depth = 1; depth <= 5; depth += 2) {
        svc = open_service(dir, depth);
        const int rounds = 10;
        double move_total = 0, undo_total = 0;
        for (int i = 0; i < rounds; i++) {
            json_decref(cdsh_xq_service_new_game(svc, "bench", NULL, NULL));
            t0 = now();
            json_decref(
                cdsh_xq_service_move(svc, "bench", CDSH_XQ_ACTOR_HERO, "h2e2", -1, -1, NULL));
            move_total += now() - t0;
            t0 = now();
            json_decref(cdsh_xq_service_undo(svc, "bench", CDSH_XQ_ACTOR_HERO, 2, NULL));
            undo_total += now() - t0;
        }
        printf("move + engine reply at depth %d: %.2f ms; undo: %.2f ms (mean of %d)\n", depth,
               1000 * move_total / rounds, 1000 * undo_total / rounds, rounds);
        cdsh_xq_service_free(svc);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
