/* search.h — the xiangqi search engine (iterative deepening PVS, hash,
 * quiescence, pruning, multi-PV, limits, lazy SMP; design in
 * docs/xiangqi-engine.md). An engine owns all state a search mutates, so two
 * engines never interfere. Thread-safety: one search at a time per engine;
 * engine_stop from any thread; set_hash/set_threads/clear only when idle. */
#ifndef CDSH_XQ_SEARCH_H
#define CDSH_XQ_SEARCH_H

#include <stdint.h>

#include "base/cancel.h"
#include "base/err.h"
#include "plugins/xiangqi/engine/eval.h"
#include "plugins/xiangqi/engine/move.h"
#include "plugins/xiangqi/engine/position.h"

#define CDSH_XQ_MAX_DEPTH 100  /* iterative-deepening limit */
#define CDSH_XQ_PV_MAX 64      /* longest PV kept per line */
#define CDSH_XQ_MULTIPV_MAX 16 /* most lines a search reports */
#define CDSH_XQ_MAX_THREADS 64

typedef struct cdsh_xq_engine cdsh_xq_engine;

typedef struct cdsh_xq_engine_opts {
    int hash_mb;                     /* transposition table, MB; 0 = 16 */
    int threads;                     /* search threads (lazy SMP); 0 = 1 */
    const cdsh_xq_eval_params *eval; /* NULL = the defaults of eval_params.h */
} cdsh_xq_engine_opts;

/* Errors: CDSH_EINVAL (hash or threads out of range), CDSH_ENOMEM. */
int cdsh_xq_engine_new(const cdsh_xq_engine_opts *opts, cdsh_xq_engine **out, cdsh_error *err);
void cdsh_xq_engine_free(cdsh_xq_engine *eng);
int cdsh_xq_engine_set_hash(cdsh_xq_engine *eng, int mb, cdsh_error *err);
int cdsh_xq_engine_set_threads(cdsh_xq_engine *eng, int threads, cdsh_error *err);
/* Bytes of hash table and per-thread records allocated now: 0 until the
 * first search (an idle engine costs a few KB), set_hash/set_threads drop
 * the old ones and the next search makes them at the new size. */
size_t cdsh_xq_engine_table_bytes(const cdsh_xq_engine *eng);
/* Forgets everything learnt (hash, history): a new game. */
void cdsh_xq_engine_clear(cdsh_xq_engine *eng);
/* The clock time limits are measured with, in milliseconds from any fixed
 * origin (NULL: CLOCK_MONOTONIC); for tests and simulations. Every search
 * thread reads it every CDSH_XQ_TIME_POLL_NODES of its own nodes. Set only
 * while idle; the function is called from all search threads. */
#define CDSH_XQ_TIME_POLL_NODES 256
typedef int64_t (*cdsh_xq_clock_fn)(void *user);
void cdsh_xq_engine_set_clock(cdsh_xq_engine *eng, cdsh_xq_clock_fn clock, void *user);
/* Asks the running search (if any) to stop as soon as possible; it still
 * returns a best move. Safe from any thread and from signal-free contexts. */
void cdsh_xq_engine_stop(cdsh_xq_engine *eng);

/* Search limits; zero means "no limit of this kind". With no limit at all
 * the search runs to CDSH_XQ_MAX_DEPTH (use infinite + stop instead). */
typedef struct cdsh_xq_limits {
    int depth;                         /* plies */
    uint64_t nodes;                    /* total nodes over all threads */
    int64_t movetime_ms;               /* exact time for this move */
    int64_t time_ms[2];                /* clock left for Red, Black (UCI wtime/btime) */
    int64_t inc_ms[2];                 /* increment per move for Red, Black */
    int movestogo;                     /* moves to the next time control, 0 = sudden death */
    int64_t overhead_ms;               /* reserved per move for communication; default 30 */
    int infinite;                      /* search until stopped (UCI go infinite) */
    int multipv;                       /* lines to report, 1..CDSH_XQ_MULTIPV_MAX; 0 = 1 */
    const cdsh_xq_move_t *searchmoves; /* restrict the root to these (NULL: all) */
    int nsearchmoves;
    cdsh_cancel *cancel; /* stops the search when fired (may be NULL) */
} cdsh_xq_limits;

/* One principal variation. score: centipawns from the side to move's view,
 * or a mate score (see eval.h); mate: moves (not plies) to mate, positive
 * when the side to move mates, negative when it is mated, 0 otherwise. */
typedef struct cdsh_xq_line {
    cdsh_xq_move_t pv[CDSH_XQ_PV_MAX];
    int pv_len;
    int score;
    int mate;
    int depth;
    int bound; /* CDSH_XQ_BOUND_EXACT normally; LOWER/UPPER for an aspiration fail */
} cdsh_xq_line;

typedef struct cdsh_xq_search_result {
    cdsh_xq_move_t best;   /* NONE when the side to move has no legal move */
    cdsh_xq_move_t ponder; /* expected reply, NONE if unknown */
    int score;             /* of the best line */
    int mate;              /* as in cdsh_xq_line */
    int depth, seldepth;   /* last completed iteration */
    uint64_t nodes;
    int64_t time_ms;
    uint64_t nps;
    int nlines; /* multi-PV lines, best first */
    cdsh_xq_line lines[CDSH_XQ_MULTIPV_MAX];
} cdsh_xq_search_result;

/* Reported after each completed iteration, once per multi-PV line (and for
 * aspiration fails of the first line with bound LOWER/UPPER). */
typedef struct cdsh_xq_info {
    int depth, seldepth;
    int multipv; /* 1-based */
    const cdsh_xq_line *line;
    uint64_t nodes;
    int64_t time_ms;
    uint64_t nps;
    int hashfull; /* permille */
} cdsh_xq_info;
typedef void (*cdsh_xq_info_fn)(const cdsh_xq_info *info, void *user);

/* Searches pos (copied; the caller's position is not touched) within limits
 * and fills *result. info (may be NULL) is called from the calling thread.
 * Returns 0, CDSH_EINVAL for bad limits (multipv out of range, a
 * searchmove that is not legal), or CDSH_ENOMEM when the hash table or
 * the thread records (made on the first search) cannot be allocated. A position with no legal move returns 0
 * with best = NONE and score = -CDSH_XQ_MATE (mated or stalemated: both
 * lose in xiangqi). With one thread and no time limit, the node count at a
 * fixed depth is reproducible after cdsh_xq_engine_clear. */
int cdsh_xq_search(cdsh_xq_engine *eng, const cdsh_xq_pos *pos, const cdsh_xq_limits *limits,
                   cdsh_xq_info_fn info, void *user, cdsh_xq_search_result *result,
                   cdsh_error *err);

/* Moves to mate for a score (0 if not a mate score). */
int cdsh_xq_score_mate(int score);

#endif
