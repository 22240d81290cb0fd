/* cmd_xiangqi_bench.c — `cdsh xiangqi bench [--depth N] [--hash MB]
 * [--threads N] [--json]`: searches the bench positions to a fixed depth and
 * prints per-position and total nodes, time and speed. */
#include "plugins/xiangqi/cmd_xiangqi_bench.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/xiangqi/engine/bench.h"
#include "plugins/xiangqi/engine/search.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: cdsh xiangqi bench [--depth N] [--hash MB] [--threads N] [--json]\n"
            "\n"
            "Searches %d fixed positions to a fixed depth (default %d) with a cleared\n"
            "engine and prints each position's nodes, then the total nodes (the search\n"
            "signature of this build: it changes whenever search or evaluation does),\n"
            "the time and nodes per second. With one thread the node count is exact.\n"
            "\n"
            "Options:\n"
            "  --depth N     depth in plies, 1 to %d\n"
            "  --hash MB     transposition table size (default 16)\n"
            "  --threads N   search threads (default 1; counts vary with more)\n"
            "  --json        one JSON object: depth, positions[], nodes, ms, nps,\n"
            "                cpu_ms, cpu_nps (CPU time: steadier on a loaded machine)\n"
            "  -h, --help    show this help\n",
            cdsh_xq_bench_count, CDSH_XQ_BENCH_DEPTH, CDSH_XQ_MAX_DEPTH);
}

typedef struct bench_ctx {
    int json;
    json_t *arr;
} bench_ctx;

static void on_entry(const cdsh_xq_bench_entry *e, void *user)
{
    bench_ctx *c = user;
    if (c->json) {
        json_array_append_new(c->arr, json_pack("{s:s, s:I, s:I, s:s, s:i}", "fen", e->fen, "nodes",
                                                (json_int_t)e->nodes, "ms", (json_int_t)e->time_ms,
                                                "best", e->best, "score", e->score));
        return;
    }
    printf("Position %2d/%d: %-10llu nodes %6lld ms  best %s  score %d\n", e->index + 1,
           cdsh_xq_bench_count, (unsigned long long)e->nodes, (long long)e->time_ms, e->best,
           e->score);
}

static int parse_num(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

int cdsh_cmd_xiangqi_bench(int argc, char **argv)
{
    static const struct option opts[] = {
        {"depth", required_argument, NULL, 'd'},   {"hash", required_argument, NULL, 'H'},
        {"threads", required_argument, NULL, 't'}, {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
    int depth = CDSH_XQ_BENCH_DEPTH, hash = 16, threads = 1, c;
    bench_ctx ctx = {0};
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'd':
            if (parse_num(optarg, 1, CDSH_XQ_MAX_DEPTH, &depth)) {
                fprintf(stderr, "cdsh xiangqi bench: --depth must be 1..%d\n", CDSH_XQ_MAX_DEPTH);
                return 2;
            }
            break;
        case 'H':
            if (parse_num(optarg, 1, 65536, &hash)) {
                fprintf(stderr, "cdsh xiangqi bench: --hash must be 1..65536 (MB)\n");
                return 2;
            }
            break;
        case 't':
            if (parse_num(optarg, 1, CDSH_XQ_MAX_THREADS, &threads)) {
                fprintf(stderr, "cdsh xiangqi bench: --threads must be 1..%d\n",
                        CDSH_XQ_MAX_THREADS);
                return 2;
            }
            break;
        case 'j': ctx.json = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "cdsh xiangqi bench: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (ctx.json)
        ctx.arr = json_array();
    else
        setvbuf(stdout, NULL, _IOLBF, 0);
    cdsh_xq_bench_totals t;
    cdsh_error err = {0};
    if (cdsh_xq_bench_run(depth, hash, threads, on_entry, &ctx, &t, &err) != 0) {
        fprintf(stderr, "cdsh xiangqi bench: %s\n", err.message);
        json_decref(ctx.arr);
        return 1;
    }
    if (ctx.json) {
        json_t *o = json_pack("{s:i, s:i, s:o, s:I, s:I, s:I, s:I, s:I}", "depth", depth,
                              "threads", threads, "positions", ctx.arr, "nodes",
                              (json_int_t)t.nodes, "ms", (json_int_t)t.time_ms, "nps",
                              (json_int_t)t.nps, "cpu_ms", (json_int_t)t.cpu_ms, "cpu_nps",
                              (json_int_t)t.cpu_nps);
        char *s = json_dumps(o, JSON_COMPACT);
        printf("%s\n", s);
        free(s);
        json_decref(o);
        return 0;
    }
    printf("===========================\n");
    printf("Depth           : %d\n", depth);
    printf("Total time (ms) : %lld\n", (long long)t.time_ms);
    printf("Nodes searched  : %llu\n", (unsigned long long)t.nodes);
    printf("Nodes/second    : %llu\n", (unsigned long long)t.nps);
    printf("CPU time (ms)   : %lld\n", (long long)t.cpu_ms);
    printf("Nodes/CPU-second: %llu\n", (unsigned long long)t.cpu_nps);
    return 0;
}
