/* bench_redact.c — redaction throughput on 1 MiB inputs: ordinary log text,
 * text dense with secrets, and shapes that stress the patterns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/redact.h"

static void fill(char *buf, size_t n, const char *unit)
{
    size_t u = strlen(unit);
    for (size_t i = 0; i < n; i++)
        buf[i] = unit[i % u];
}

static void measure(const char *name, const char *buf, size_t n)
{
    enum { ROUNDS = 5 };
    int64_t best = INT64_MAX;
    for (int r = 0; r < ROUNDS; r++) {
        int64_t t0 = cdsh_clock_mono_ns();
        char *out = cdsh_redact_dupn(buf, n, NULL);
        int64_t dt = cdsh_clock_mono_ns() - t0;
        free(out);
        if (dt < best)
            best = dt;
    }
    printf("redact %-22s %8.2f ms/MiB  %7.1f MiB/s\n", name, best / 1e6,
           (double)n / (1 << 20) / (best / 1e9));
}

int main(void)
{
    const size_t n = 1 << 20;
    char *buf = malloc(n);
    if (!buf)
        return 1;
    fill(buf, n, "2026-11-29T20:47:17.123Z INFO  host: tool read_file finished in 12 ms\n");
    measure("log text", buf, n);
    fill(buf, n, "call with Authorization: Bearer abcdef0123456789 and sk-abcdefghijklmnopqrst\n");
    measure("dense secrets", buf, n);
    fill(buf, n, "{\"token\": \"a\\\"b\", \"n\": 1}");
    measure("json token pairs", buf, n);
    fill(buf, n, "a.");
    measure("word boundaries", buf, n);
    fill(buf, n, "x://y:");
    measure("url fragments", buf, n);
    free(buf);
    return 0;
}
