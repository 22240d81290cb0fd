/* bench_xq_search.c — search speed on the bench positions: fixed depth
 * (total nodes = signature, time, nps) and fixed time (depth, nps), side by
 * side with fairy-stockfish (UCCI, `go depth` / `go movetime`) when
 * installed. Env: CDSH_FAIRY_STOCKFISH, CDSH_BENCH_XQ_DEPTH (10),
 * CDSH_BENCH_XQ_MOVETIME (500 ms). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/xiangqi/engine/bench.h"
#include "plugins/xiangqi/engine/search.h"
#include "xq_client.h"

typedef struct fig {
    uint64_t nodes;
    int64_t ms;
    int depth;
} fig;

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* One FSF search; the last info line gives depth and nodes, the wall time
 * between `go` and `bestmove` gives the time. */
static int fsf_search(opp *o, const char *fen, const char *go, fig *f)
{
    opp_send(o, "position fen %s", fen);
    opp_send(o, "isready");
    if (opp_expect(o, "readyok", 10000))
        return -1;
    const int64_t t0 = now_ms();
    opp_send(o, "%s", go);
    char line[8192];
    memset(f, 0, sizeof *f);
    while (opp_line(o, line, sizeof line, 600000) == 0) {
        const char *p;
        if (strncmp(line, "info depth ", 11) == 0 && (p = strstr(line, " nodes ")) != NULL) {
            f->depth = atoi(line + 11);
            f->nodes = strtoull(p + 7, NULL, 10);
        }
        if (strncmp(line, "bestmove", 8) == 0 || strncmp(line, "nobestmove", 10) == 0) {
            f->ms = now_ms() - t0;
            return 0;
        }
    }
    return -1;
}

static void cdsh_search(cdsh_xq_engine *eng, const char *fen, const cdsh_xq_limits *lim, fig *f)
{
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    cdsh_xq_pos_set_fen(pos, fen, NULL);
    cdsh_xq_engine_clear(eng);
    cdsh_xq_search_result r;
    cdsh_xq_search(eng, pos, lim, NULL, NULL, &r, NULL);
    f->nodes = r.nodes;
    f->ms = r.time_ms;
    f->depth = r.depth;
    cdsh_xq_pos_free(pos);
}

static double nps(const fig *f)
{
    return f->ms > 0 ? (double)f->nodes * 1000.0 / (double)f->ms : 0;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *env = getenv("CDSH_BENCH_XQ_DEPTH");
    const int depth = env && atoi(env) > 0 ? atoi(env) : CDSH_XQ_BENCH_DEPTH;
    env = getenv("CDSH_BENCH_XQ_MOVETIME");
    const int movetime = env && atoi(env) > 0 ? atoi(env) : 500;
    cdsh_xq_engine *eng = NULL;
    if (cdsh_xq_engine_new(NULL, &eng, NULL) != 0)
        return 1;
    const char *path = find_fsf();
    static opp o;
    int have_fsf = path && opp_start(&o, path, 1, 0) == 0;
    if (have_fsf)
        opp_send(&o, "setoption name Hash value 16");
    printf("xiangqi search bench: %d positions, depth %d, then %d ms each; opponent: %s\n",
           cdsh_xq_bench_count, depth, movetime,
           have_fsf ? o.name : "none (fairy-stockfish not found)");
    printf("%-4s %12s %8s %10s | %12s %8s %10s\n", "pos", "cdsh nodes", "ms", "nps", "fsf nodes",
           "ms", "nps");
    fig tc = {0}, tf = {0};
    for (int i = 0; i < cdsh_xq_bench_count; i++) {
        const char *fen = cdsh_xq_bench_fens[i];
        cdsh_xq_limits lim = {.depth = depth};
        fig c, f = {0};
        cdsh_search(eng, fen, &lim, &c);
        char go[64];
        snprintf(go, sizeof go, "go depth %d", depth);
        if (have_fsf && fsf_search(&o, fen, go, &f) != 0)
            have_fsf = 0;
        tc.nodes += c.nodes;
        tc.ms += c.ms;
        tf.nodes += f.nodes;
        tf.ms += f.ms;
        printf("%-4d %12llu %8lld %10.0f | %12llu %8lld %10.0f\n", i + 1,
               (unsigned long long)c.nodes, (long long)c.ms, nps(&c), (unsigned long long)f.nodes,
               (long long)f.ms, nps(&f));
    }
    printf("depth %d total: cdsh %llu nodes (signature) in %lld ms, %.0f nps", depth,
           (unsigned long long)tc.nodes, (long long)tc.ms, nps(&tc));
    if (have_fsf)
        printf(
            " | fairy-stockfish %llu nodes in %lld ms, %.0f nps; time-to-depth ratio fsf/cdsh %.2f",
            (unsigned long long)tf.nodes, (long long)tf.ms, nps(&tf),
            tc.ms > 0 ? (double)tf.ms / (double)tc.ms : 0);
    printf("\n");
    /* fixed time: depth reached and speed */
    fig mc = {0}, mf = {0};
    int dc = 0, df = 0;
    for (int i = 0; i < cdsh_xq_bench_count; i++) {
        const char *fen = cdsh_xq_bench_fens[i];
        cdsh_xq_limits lim = {.movetime_ms = movetime, .overhead_ms = 1};
        fig c, f = {0};
        cdsh_search(eng, fen, &lim, &c);
        char go[64];
        snprintf(go, sizeof go, "go movetime %d", movetime);
        if (have_fsf && fsf_search(&o, fen, go, &f) != 0)
            have_fsf = 0;
        mc.nodes += c.nodes;
        mc.ms += c.ms;
        mf.nodes += f.nodes;
        mf.ms += f.ms;
        dc += c.depth;
        df += f.depth;
    }
    printf("%d ms per position: cdsh mean depth %.1f, %.0f nps", movetime,
           (double)dc / cdsh_xq_bench_count, nps(&mc));
    if (have_fsf)
        printf(" | fairy-stockfish mean depth %.1f, %.0f nps", (double)df / cdsh_xq_bench_count,
               nps(&mf));
    printf("\n");
    if (o.proc)
        opp_stop(&o);
    cdsh_xq_engine_free(eng);
    return 0;
}
