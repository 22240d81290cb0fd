/* tt.h — the transposition table: clusters of four 16-byte entries stored
 * as (key ^ data, data), so threads share it without locks (a torn entry
 * fails the key check). Size in MB set at creation, changeable between
 * searches. Thread-safety: probe/store from any number of threads at once;
 * resize, clear and free only while no search runs. */
#ifndef CDSH_XQ_TT_H
#define CDSH_XQ_TT_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "plugins/xiangqi/engine/move.h"

enum {
    CDSH_XQ_BOUND_NONE = 0,
    CDSH_XQ_BOUND_UPPER = 1,
    CDSH_XQ_BOUND_LOWER = 2,
    CDSH_XQ_BOUND_EXACT = 3
};

#define CDSH_XQ_TT_MIN_MB 1
#define CDSH_XQ_TT_MAX_MB 65536

typedef struct cdsh_xq_tt cdsh_xq_tt;

/* What a probe found (scores are as stored; the search adjusts mate scores
 * by ply). */
typedef struct cdsh_xq_tt_hit {
    cdsh_xq_move_t move;
    int score;
    int eval;
    int depth;
    int bound;
} cdsh_xq_tt_hit;

/* Allocates mb megabytes (rounded down to a power of two of clusters).
 * Errors: CDSH_EINVAL (mb out of range), CDSH_ENOMEM. */
int cdsh_xq_tt_new(size_t mb, cdsh_xq_tt **out, cdsh_error *err);
void cdsh_xq_tt_free(cdsh_xq_tt *tt);
int cdsh_xq_tt_resize(cdsh_xq_tt *tt, size_t mb, cdsh_error *err);
size_t cdsh_xq_tt_size_mb(const cdsh_xq_tt *tt);
void cdsh_xq_tt_clear(cdsh_xq_tt *tt);
/* Starts a new search generation (older entries are replaced first). */
void cdsh_xq_tt_new_search(cdsh_xq_tt *tt);
/* 1 and *hit filled if key is stored. */
int cdsh_xq_tt_probe(const cdsh_xq_tt *tt, uint64_t key, cdsh_xq_tt_hit *hit);
void cdsh_xq_tt_store(cdsh_xq_tt *tt, uint64_t key, cdsh_xq_move_t move, int score, int eval,
                      int depth, int bound);
/* Permille of sampled entries used in the current generation (UCI hashfull). */
int cdsh_xq_tt_hashfull(const cdsh_xq_tt *tt);

#endif
