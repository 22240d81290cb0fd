/* bench_jsonrpc.c — round-trip calls per second between two in-process
 * JSON-RPC peers over a socketpair: one caller thread, then eight, plus a
 * 64 KiB payload echo. Prints figures; asserts nothing about speed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "proto/jsonrpc.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void echo(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)arg;
    (void)peer;
    cdsh_jsonrpc_respond(req, cdsh_jsonrpc_request_params(req), NULL);
}

typedef struct job {
    cdsh_jsonrpc *peer;
    int calls;
    json_t *params;
    int failures;
} job;

static void *run_calls(void *arg)
{
    job *j = arg;
    for (int i = 0; i < j->calls; i++) {
        json_t *result = NULL;
        if (cdsh_jsonrpc_call(j->peer, "echo", j->params, 10000, NULL, &result, NULL, NULL))
            j->failures++;
        json_decref(result);
    }
    return NULL;
}

static void measure(cdsh_jsonrpc *client, const char *label, int threads, int calls_each,
                    json_t *params)
{
    pthread_t t[16];
    job jobs[16];
    double t0 = now_s();
    for (int i = 0; i < threads; i++) {
        jobs[i] = (job){client, calls_each, params, 0};
        pthread_create(&t[i], NULL, run_calls, &jobs[i]);
    }
    int failures = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        failures += jobs[i].failures;
    }
    double dt = now_s() - t0;
    int total = threads * calls_each;
    printf("jsonrpc %-28s %8d calls %8.3f s %10.0f calls/s %8.1f us/call%s\n", label, total, dt,
           total / dt, dt * 1e6 / total, failures ? "  (FAILURES)" : "");
}

int main(void)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
        return 1;
    cdsh_jsonrpc_config cfg = {.close_fds = true};
    cdsh_jsonrpc *client = cdsh_jsonrpc_new(sv[0], sv[0], &cfg, NULL);
    cdsh_jsonrpc *server = cdsh_jsonrpc_new(sv[1], sv[1], &cfg, NULL);
    if (!client || !server)
        return 1;
    cdsh_jsonrpc_handle(server, "echo", echo, NULL, NULL);
    cdsh_jsonrpc_start(client, NULL);
    cdsh_jsonrpc_start(server, NULL);

    json_t *small = json_pack("{s:i, s:s}", "n", 42, "s", "hello");
    measure(client, "small, 1 thread", 1, 20000, small);
    measure(client, "small, 8 threads", 8, 2500, small);
    char *big = malloc(65536 + 1);
    memset(big, 'x', 65536);
    big[65536] = '\0';
    json_t *large = json_pack("{s:s}", "blob", big);
    measure(client, "64 KiB, 1 thread", 1, 500, large);
    free(big);
    json_decref(small);
    json_decref(large);
    cdsh_jsonrpc_free(client);
    cdsh_jsonrpc_free(server);
    return 0;
}
