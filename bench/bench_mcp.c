/* bench_mcp.c — tools/call round-trip latency and throughput over stdio of
 * `cdsh mcp --fixture` versus the official TypeScript SDK serving the same
 * trivial echo tool (tests/e2e/sdk_echo_server.mjs), both driven by cdsh's
 * MCP client; prints both figures and the ratio. Needs node and
 * tests/node_modules (scripts/bootstrap.sh); skips the SDK side otherwise. */
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "proto/mcp/mcp_client.h"

#define SEQ_CALLS 2000
#define THREADS 4
#define PAR_CALLS 1000 /* per thread */

typedef struct figures {
    double p50_us, p99_us, mean_us, calls_per_s;
} figures;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int call_echo(cdsh_mcp_client *cl)
{
    json_t *args = json_pack("{s:s}", "text", "ping");
    json_t *res = NULL;
    int rc = cdsh_mcp_client_call(cl, "echo", args, NULL, &res, NULL);
    json_decref(res);
    json_decref(args);
    return rc;
}

static void *par_main(void *arg)
{
    cdsh_mcp_client *cl = arg;
    for (int i = 0; i < PAR_CALLS; i++)
        if (call_echo(cl) != 0)
            return (void *)1;
    return NULL;
}

static int measure(const char *label, const char *const *argv, figures *f)
{
    cdsh_mcp_client_opts o = {.name = label, .argv = argv};
    cdsh_mcp_client *cl = NULL;
    cdsh_error err = {0};
    if (cdsh_mcp_client_connect(&o, &cl, &err) != 0) {
        fprintf(stderr, "bench_mcp: %s: %s\n", label, err.message);
        return -1;
    }
    for (int i = 0; i < 100; i++)
        call_echo(cl);
    int64_t *lat = malloc(sizeof *lat * SEQ_CALLS);
    int64_t total = 0;
    for (int i = 0; i < SEQ_CALLS; i++) {
        int64_t t0 = cdsh_clock_mono_ns();
        if (call_echo(cl) != 0) {
            fprintf(stderr, "bench_mcp: %s: call failed\n", label);
            free(lat);
            cdsh_mcp_client_free(cl);
            return -1;
        }
        lat[i] = cdsh_clock_mono_ns() - t0;
        total += lat[i];
    }
    qsort(lat, SEQ_CALLS, sizeof *lat, cmp_i64);
    f->p50_us = (double)lat[SEQ_CALLS / 2] / 1e3;
    f->p99_us = (double)lat[SEQ_CALLS * 99 / 100] / 1e3;
    f->mean_us = (double)total / SEQ_CALLS / 1e3;
    free(lat);
    pthread_t t[THREADS];
    int64_t t0 = cdsh_clock_mono_ns();
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, par_main, cl);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    double secs = (double)(cdsh_clock_mono_ns() - t0) / 1e9;
    f->calls_per_s = THREADS * PAR_CALLS / secs;
    cdsh_mcp_client_free(cl);
    printf(
        "%-10s latency p50 %8.1f us  p99 %8.1f us  mean %8.1f us   throughput (%d threads) %9.0f "
        "calls/s\n",
        label, f->p50_us, f->p99_us, f->mean_us, THREADS, f->calls_per_s);
    fflush(stdout);
    return 0;
}

int main(void)
{
    char exe[PATH_MAX], cdsh[PATH_MAX + 16], src[PATH_MAX], script[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return 1;
    exe[n] = '\0';
    const char *env_bin = getenv("CDSH_BINARY");
    if (env_bin)
        snprintf(cdsh, sizeof cdsh, "%s", env_bin);
    else
        snprintf(cdsh, sizeof cdsh, "%s/cdsh", dirname(dirname(exe))); /* build/bench/.. */
    snprintf(src, sizeof src, "%s", __FILE__); /* CMake passes absolute source paths */
    snprintf(script, sizeof script, "%s/tests/e2e/sdk_echo_server.mjs", dirname(dirname(src)));

    /* A throwaway state directory, so the served cdsh never reads ~/.cdsh. */
    char home[] = "/tmp/cdsh-bench-mcp-XXXXXX";
    if (!getenv("CDSH_HOME") && mkdtemp(home))
        setenv("CDSH_HOME", home, 1);
    printf("MCP tools/call over stdio, echo tool, %d sequential calls + %d x %d concurrent\n",
           SEQ_CALLS, THREADS, PAR_CALLS);
    const char *cdsh_argv[] = {cdsh, "mcp", "--fixture", NULL};
    const char *sdk_argv[] = {"node", script, NULL};
    figures c = {0}, s = {0};
    if (measure("cdsh", cdsh_argv, &c) != 0)
        return 1;
    if (access(script, R_OK) != 0 || measure("ts-sdk", sdk_argv, &s) != 0) {
        printf("ts-sdk     skipped (node or tests/node_modules missing)\n");
        return 0;
    }
    printf("ratio (ts-sdk / cdsh): latency p50 %.2fx, mean %.2fx; throughput (cdsh / ts-sdk) "
           "%.2fx\n",
           s.p50_us / c.p50_us, s.mean_us / c.mean_us, c.calls_per_s / s.calls_per_s);
    return 0;
}
