/* bench.h — the engine's fixed bench (positions searched to a fixed depth
 * with a cleared engine and one thread; the total node count is the build's
 * search signature) and a set of balanced opening lines for matches.
 * Thread-safety: the tables are constant; cdsh_xq_bench_run uses its own
 * engine. */
#ifndef CDSH_XQ_BENCH_H
#define CDSH_XQ_BENCH_H

#include <stdint.h>

#include "base/err.h"

#define CDSH_XQ_BENCH_DEPTH 10 /* default bench depth */

extern const char *const cdsh_xq_bench_fens[];
extern const int cdsh_xq_bench_count;

/* Opening lines from the start position, ICCS moves separated by spaces
 * (a few plies of common openings; both colours are played from each). */
extern const char *const cdsh_xq_openings[];
extern const int cdsh_xq_openings_count;

typedef struct cdsh_xq_bench_entry {
    int index;
    const char *fen;
    uint64_t nodes;
    int64_t time_ms;
    int depth;
    char best[6];
    int score;
} cdsh_xq_bench_entry;

typedef void (*cdsh_xq_bench_fn)(const cdsh_xq_bench_entry *e, void *user);

/* time_ms is wall time; cpu_ms the CPU time the process used meanwhile
 * (all threads), which a loaded machine disturbs far less: cpu_nps =
 * nodes per CPU second. */
typedef struct cdsh_xq_bench_totals {
    uint64_t nodes;
    int64_t time_ms;
    uint64_t nps;
    int64_t cpu_ms;
    uint64_t cpu_nps;
} cdsh_xq_bench_totals;

/* Searches every bench position to `depth` (<= 0: CDSH_XQ_BENCH_DEPTH)
 * with hash_mb (<= 0: 16) and `threads` (<= 0: 1), clearing the engine
 * before each; fn (may be NULL) sees each position's figures.
 * Errors: as cdsh_xq_engine_new. */
int cdsh_xq_bench_run(int depth, int hash_mb, int threads, cdsh_xq_bench_fn fn, void *user,
                      cdsh_xq_bench_totals *totals, cdsh_error *err);

#endif
