/* bench_toml.c — TOML parsing throughput (MB/s) on a generated ~8 MB document
 * mixing tables, arrays of tables, escaped and multi-line strings, numbers,
 * date-times and inline tables, in plain and typed form; plus documents per
 * second for a small Codex-style config. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/toml.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *generate(size_t target, size_t *len)
{
    size_t cap = target + 4096, o = 0;
    char *doc = malloc(cap);
    if (!doc)
        return NULL;
    o += (size_t)snprintf(doc + o, cap - o, "title = \"bench\"\nversion = 3\n");
    for (int i = 0; o + 2048 < target; i++) {
        o += (size_t)snprintf(
            doc + o, cap - o,
            "\n[servers.s%d]\n"
            "command = \"/usr/bin/server-%d\"\n"
            "args = [\"--port\", \"%d\", \"--name\", \"caf\\u00e9 \\\"%d\\\"\"]\n"
            "env = { HOME = \"/home/u%d\", LEVEL = \"debug\", RETRIES = %d }\n"
            "timeout_sec = %d.%d\n"
            "enabled = %s\n"
            "started = 2024-05-%02dT10:%02d:00.%03dZ\n"
            "limits.cpu = 1_000\n"
            "limits.mem = 0x%x\n"
            "notes = '''\nline one of %d\nline two with 'quotes'\n'''\n"
            "[[servers.s%d.routes]]\npath = '/v1/%d' # comment\nweights = [1, 2.5, -3e2]\n"
            "[[servers.s%d.routes]]\npath = '/v2/%d'\nweights = []\n",
            i, i, 1000 + i % 60000, i, i, i % 7, i % 300, i % 10, i % 2 ? "true" : "false",
            1 + i % 28, i % 60, i % 1000, 4096 + i, i, i, i, i, i);
    }
    *len = o;
    return doc;
}

static void run(const char *label, const char *doc, size_t len, int typed, int reps)
{
    cdsh_toml_options opts = {.max_bytes = len + 1, .typed = typed};
    double best = 1e9;
    for (int r = 0; r < reps; r++) {
        json_t *out = NULL;
        cdsh_error err = {0};
        double start = now();
        if (cdsh_toml_parse_with(doc, len, &opts, &out, &err) != 0) {
            fprintf(stderr, "bench_toml: %s\n", err.message);
            exit(1);
        }
        double secs = now() - start;
        json_decref(out);
        if (secs < best)
            best = secs;
    }
    printf("%-28s %8.2f MB in %.3f s = %7.1f MB/s (best of %d)\n", label, (double)len / 1e6, best,
           (double)len / 1e6 / best, reps);
}

static const char CODEX[] = "model = \"o3\"\napproval_policy = \"on-request\"\n"
                            "[mcp_servers.docs]\ncommand = \"npx\"\n"
                            "args = [\"-y\", \"@modelcontextprotocol/server-filesystem\"]\n"
                            "env = { API_KEY = \"x\" }\nstartup_timeout_sec = 20\n"
                            "[mcp_servers.remote]\nurl = \"https://example.com/mcp\"\n"
                            "bearer_token_env_var = \"TOKEN\"\n";

int main(void)
{
    size_t len = 0;
    char *doc = generate((size_t)8 * 1024 * 1024, &len);
    if (!doc)
        return 1;
    run("large document, plain", doc, len, 0, 3);
    run("large document, typed", doc, len, 1, 3);
    free(doc);

    enum { N = 20000 };
    double start = now();
    for (int i = 0; i < N; i++) {
        json_t *out = NULL;
        if (cdsh_toml_parse(CODEX, sizeof CODEX - 1, &out, NULL) != 0)
            return 1;
        json_decref(out);
    }
    double secs = now() - start;
    printf("%-28s %8d docs in %.3f s = %9.0f /s (%.2f us each)\n", "Codex config, plain", N, secs,
           (double)N / secs, secs * 1e6 / N);
    return 0;
}
