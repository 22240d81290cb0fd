/* bench.c — bench positions (opening, middlegame and endgame, from the perft
 * suite and common openings) and the opening lines the match runner uses. */
#include "plugins/xiangqi/engine/bench.h"

#include <stdio.h>
#include <time.h>

#include "plugins/xiangqi/engine/search.h"

const char *const cdsh_xq_bench_fens[] = {
    "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1",
    "r1bakabnr/9/1cn4c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C1N2/9/RNBAKAB1R b - - 3 2",
    "r1bakab1r/9/1cn3nc1/p1p1p1p1p/9/9/P1P1P1P1P/1CN3NC1/9/R1BAKAB1R w - - 0 1",
    "r1bakab1r/9/1c2c4/p3p3p/2p3p2/2P3P2/P3P3P/1C2C4/9/R1BAKAB1R w - - 0 1",
    "r2akab1r/3n5/4b3n/p1p1pRp1p/9/2P3P2/P3P3c/N2C3C1/4A4/1RBAK1B2 w - - 0 1",
    "r1ba1a3/4kn3/2n1b4/pNp1p1p1p/4c4/6P2/P1P2R2P/1CcC5/9/2BAKAB2 w - - 0 1",
    "1rbaka2R/5r3/6n2/2p1p1p2/4P1bP1/PpC3Bc1/1nPR2P2/2N2AN2/1c2K1p2/2BAC4 w - - 0 1",
    "1C2ka3/9/C1Nab1n2/p3p3p/6p2/9/P3P3P/3AB4/3p2c2/c1BAK4 w - - 0 1",
    "1cbak4/9/n2a5/2p1p3p/5cp2/2n2N3/6PCP/3AB4/2C6/3A1K1N1 w - - 0 1",
    "5a3/3k5/3aR4/9/5r3/5n3/9/3A1A3/5K3/2BC2B2 w - - 0 1",
    "CRN1k1b2/3ca4/4ba3/9/2nr5/9/9/4B4/4A4/4KA3 w - - 0 1",
    "4ka3/4a4/9/9/4N4/p8/9/4C3c/7n1/2BK5 w - - 0 1",
    "2b1ka3/9/b3N4/4n4/9/9/9/4C4/2p6/2BK5 w - - 0 1",
    "3k5/9/4b4/9/2b6/9/9/4B4/4A4/3AK1N2 w - - 0 1",
    "3akab2/9/4b4/9/9/6n2/9/9/4R4/3K5 w - - 0 1",
    "4ka3/4a4/9/9/4P4/2N6/9/9/9/3K5 w - - 0 1",
};
const int cdsh_xq_bench_count = (int)(sizeof cdsh_xq_bench_fens / sizeof cdsh_xq_bench_fens[0]);

const char *const cdsh_xq_openings[] = {
    "h2e2 h9g7",                        /* central cannon vs screen horse */
    "h2e2 b9c7 h0g2 a9b9",              /* central cannon, screen horses */
    "h2e2 h7e7",                        /* same-direction cannons */
    "h2e2 b7e7",                        /* opposite-direction cannons */
    "b2e2 h9g7",           "c3c4 g6g5", /* pawn openings */
    "c3c4 b9c7",           "g3g4 c6c5",
    "c0e2 h7e7",                                  /* elephant openings */
    "c0e2 g6g5",           "h0g2 g6g5",           /* horse openings */
    "b0c2 h7e7",           "h2f2 h9g7",           /* cannon to the palace corner */
    "b2d2 b9c7",           "h2e2 h9g7 h0g2 i9h9", /* central cannon, straight chariot */
    "h2e2 h9g7 h0g2 g6g5", "c3c4 h7g7",
    "g3g4 h9g7",           "h2e2 c6c5",
    "h2g2 h9g7",           "h2e2 b9c7",
    "h2e2 g9e7",           "h2e2 c9e7",
    "h2e2 h7f7",           "h2e2 i9i8 h0g2 i8d8",
    "b2e2 b9c7",           "b2e2 h7e7",
    "c3c4 c6c5",           "c3c4 h9g7",
    "c3c4 b7e7",           "g3g4 g6g5",
    "g3g4 b7c7",           "c0e2 c6c5",
    "c0e2 b9c7",           "g0e2 h9g7",
    "h0g2 c6c5",           "h0g2 h9g7",
    "b0c2 b9c7",           "b0c2 g6g5",
    "e3e4 h9g7",           "i0i1 h9g7",
    "a0a1 b9c7",           "h2f2 b9c7",
    "b2d2 h9g7",           "h2d2 h9g7",
    "b2f2 b9c7",           "h2e2 h9g7 h0g2 i9h9 i0h0 b9c7",
    "h2e2 b9c7 b0c2 h9g7", "c3c4 g6g5 h0g2 h9g7",
    "g3g4 h9g7 h0g2 g6g5",
};
const int cdsh_xq_openings_count = (int)(sizeof cdsh_xq_openings / sizeof cdsh_xq_openings[0]);

static int64_t cpu_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

int cdsh_xq_bench_run(int depth, int hash_mb, int threads, cdsh_xq_bench_fn fn, void *user,
                      cdsh_xq_bench_totals *totals, cdsh_error *err)
{
    cdsh_xq_engine_opts o = {.hash_mb = hash_mb > 0 ? hash_mb : 16,
                             .threads = threads > 0 ? threads : 1};
    cdsh_xq_engine *eng = NULL;
    int rc = cdsh_xq_engine_new(&o, &eng, err);
    if (rc)
        return rc;
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    if (!pos) {
        cdsh_xq_engine_free(eng);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    totals->nodes = 0;
    totals->time_ms = 0;
    int64_t cpu = 0;
    for (int i = 0; i < cdsh_xq_bench_count; i++) {
        rc = cdsh_xq_pos_set_fen(pos, cdsh_xq_bench_fens[i], err);
        if (rc)
            break;
        cdsh_xq_engine_clear(eng);
        cdsh_xq_limits lim = {.depth = depth > 0 ? depth : CDSH_XQ_BENCH_DEPTH};
        cdsh_xq_search_result r;
        const int64_t c0 = cpu_us();
        rc = cdsh_xq_search(eng, pos, &lim, NULL, NULL, &r, err);
        cpu += cpu_us() - c0;
        if (rc)
            break;
        totals->nodes += r.nodes;
        totals->time_ms += r.time_ms;
        if (fn) {
            cdsh_xq_bench_entry e = {.index = i,
                                     .fen = cdsh_xq_bench_fens[i],
                                     .nodes = r.nodes,
                                     .time_ms = r.time_ms,
                                     .depth = r.depth,
                                     .score = r.score};
            cdsh_xq_move_to_iccs(r.best, e.best);
            fn(&e, user);
        }
    }
    totals->nps = totals->time_ms > 0 ? totals->nodes * 1000 / (uint64_t)totals->time_ms
                                      : totals->nodes * 1000;
    totals->cpu_ms = cpu / 1000;
    totals->cpu_nps = cpu > 0 ? totals->nodes * 1000000 / (uint64_t)cpu : 0;
    cdsh_xq_pos_free(pos);
    cdsh_xq_engine_free(eng);
    return rc;
}
