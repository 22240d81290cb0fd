/* search.c — iterative deepening PVS: aspiration windows, hash table,
 * quiescence with checks, guarded null move, futility/late-move pruning,
 * LMR, killers/history, check extensions, repetition with perpetual check and chase,
 * multi-PV, time management and lazy SMP. All mutable state lives in the
 * engine and its per-thread records. */
#include "plugins/xiangqi/engine/search.h"

#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/rules.h"
#include "plugins/xiangqi/engine/tt.h"
#include "plugins/xiangqi/engine/xq_internal.h"

#define MAX_PLY 128
#define MAX_ROOT 128
#define HIST_MAX 16384
#define NEG_INF (-CDSH_XQ_INFINITE)
#define POS_INF CDSH_XQ_INFINITE

typedef struct root_move {
    cdsh_xq_move_t move;
    int score, prev_score;
    int sel_depth;
    cdsh_xq_move_t pv[CDSH_XQ_PV_MAX];
    int pv_len;
} root_move;

typedef struct thread_data {
    struct cdsh_xq_engine *eng;
    int id;
    pthread_t tid;
    _Atomic uint64_t nodes;
    unsigned poll;
    int seldepth;
    int root_depth;
    int completed_depth;
    int pv_idx, multipv;
    int nroot;
    root_move root[MAX_ROOT];
    cdsh_xq_move_t killers[MAX_PLY + 2][2];
    int16_t history[16][256];
    int static_eval[MAX_PLY + 2];
    cdsh_xq_move_t pv[MAX_PLY + 1][MAX_PLY + 1];
    int pv_len[MAX_PLY + 1];
    /* the lines of the last completed iteration (under eng->done_mu) */
    root_move done[CDSH_XQ_MULTIPV_MAX];
    int done_depth, done_seldepth;
    cdsh_xq_pos pos;
} thread_data;

struct cdsh_xq_engine {
    cdsh_xq_tt *tt; /* NULL until the first search (allocated at hash_mb) */
    int hash_mb;
    cdsh_xq_eval_tables eval;
    int nthreads;
    thread_data **th; /* NULL until the first search (nthreads records) */
    atomic_int stop;
    atomic_int any_done; /* some thread has completed an iteration */
    pthread_mutex_t done_mu;
    /* an infinite search that has finished thinking sleeps on stop_cv until
     * cdsh_xq_engine_stop or the limits' cancel token (stop_mu orders the
     * flag against the sleep) */
    pthread_mutex_t stop_mu;
    pthread_cond_t stop_cv;
    int helpers; /* helper threads of the last search not joined yet */
    /* per search (set before the threads start, read-only while they run) */
    cdsh_xq_limits lim;
    int64_t start_ms;
    int64_t opt_ms, max_ms; /* 0 = no time limit */
    int8_t lmr[64][64];
    cdsh_xq_clock_fn clock; /* NULL: CLOCK_MONOTONIC */
    void *clock_user;
};

static int64_t now_ms(const struct cdsh_xq_engine *eng)
{
    if (eng->clock)
        return eng->clock(eng->clock_user);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static int64_t elapsed_ms(const struct cdsh_xq_engine *eng)
{
    return now_ms(eng) - eng->start_ms;
}

void cdsh_xq_engine_set_clock(cdsh_xq_engine *eng, cdsh_xq_clock_fn clock, void *user)
{
    eng->clock = clock;
    eng->clock_user = user;
}

int cdsh_xq_score_mate(int score)
{
    if (score >= CDSH_XQ_MATE_BOUND)
        return (CDSH_XQ_MATE - score + 1) / 2;
    if (score <= -CDSH_XQ_MATE_BOUND)
        return -((CDSH_XQ_MATE + score + 1) / 2);
    return 0;
}

/* ---- engine ---- */

/* Waits for the helpers of the last search. A search returns as soon as
 * its main thread has its result and leaves the helpers (already told to
 * stop) to wind down on their own: with more threads than cores each needs
 * a turn on a core to see the stop, which would otherwise delay the move. */
static void join_helpers(cdsh_xq_engine *eng)
{
    for (int i = 1; i <= eng->helpers; i++)
        pthread_join(eng->th[i]->tid, NULL);
    eng->helpers = 0;
}

static void free_threads(cdsh_xq_engine *eng)
{
    join_helpers(eng);
    if (eng->th)
        for (int i = 0; i < eng->nthreads; i++)
            free(eng->th[i]);
    free(eng->th);
    eng->th = NULL;
}

/* The per-thread records and the hash table, made on first use so an idle
 * engine costs a few kilobytes. */
static int ensure_tables(cdsh_xq_engine *eng, cdsh_error *err)
{
    if (!eng->tt) {
        int rc = cdsh_xq_tt_new((size_t)eng->hash_mb, &eng->tt, err);
        if (rc)
            return rc;
    }
    if (eng->th)
        return 0;
    thread_data **th = calloc((size_t)eng->nthreads, sizeof *th);
    if (!th)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    eng->th = th;
    for (int i = 0; i < eng->nthreads; i++) {
        th[i] = calloc(1, sizeof **th);
        if (!th[i]) {
            free_threads(eng);
            return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        }
        th[i]->eng = eng;
        th[i]->id = i;
    }
    return 0;
}

int cdsh_xq_engine_new(const cdsh_xq_engine_opts *opts, cdsh_xq_engine **out, cdsh_error *err)
{
    *out = NULL;
    int hash = opts && opts->hash_mb ? opts->hash_mb : 16;
    int threads = opts && opts->threads ? opts->threads : 1;
    if (threads < 1 || threads > CDSH_XQ_MAX_THREADS)
        return cdsh_error_set(err, CDSH_EINVAL, "THREADS", "threads %d is outside 1..%d", threads,
                              CDSH_XQ_MAX_THREADS);
    if (hash < CDSH_XQ_TT_MIN_MB || hash > CDSH_XQ_TT_MAX_MB)
        return cdsh_error_set(err, CDSH_EINVAL, "TT_SIZE", "hash size %d MB is outside %d..%d",
                              hash, CDSH_XQ_TT_MIN_MB, CDSH_XQ_TT_MAX_MB);
    cdsh_xq_engine *eng = calloc(1, sizeof *eng);
    if (!eng)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    eng->hash_mb = hash;
    eng->nthreads = threads;
    cdsh_xq_eval_tables_init(&eng->eval, opts ? opts->eval : NULL);
    for (int d = 0; d < 64; d++)
        for (int m = 0; m < 64; m++)
            eng->lmr[d][m] = (int8_t)(d && m ? 0.5 + log((double)d) * log((double)m) / 2.25 : 0);
    atomic_init(&eng->stop, 0);
    atomic_init(&eng->any_done, 0);
    pthread_mutex_init(&eng->done_mu, NULL);
    pthread_mutex_init(&eng->stop_mu, NULL);
    pthread_cond_init(&eng->stop_cv, NULL);
    *out = eng;
    return 0;
}

void cdsh_xq_engine_free(cdsh_xq_engine *eng)
{
    if (!eng)
        return;
    atomic_store(&eng->stop, 1);
    free_threads(eng);
    cdsh_xq_tt_free(eng->tt);
    pthread_mutex_destroy(&eng->done_mu);
    pthread_mutex_destroy(&eng->stop_mu);
    pthread_cond_destroy(&eng->stop_cv);
    free(eng);
}

int cdsh_xq_engine_set_hash(cdsh_xq_engine *eng, int mb, cdsh_error *err)
{
    if (mb < CDSH_XQ_TT_MIN_MB || mb > CDSH_XQ_TT_MAX_MB)
        return cdsh_error_set(err, CDSH_EINVAL, "TT_SIZE", "hash size %d MB is outside %d..%d", mb,
                              CDSH_XQ_TT_MIN_MB, CDSH_XQ_TT_MAX_MB);
    if (mb != eng->hash_mb) { /* the new table is made by the next search */
        join_helpers(eng);
        cdsh_xq_tt_free(eng->tt);
        eng->tt = NULL;
        eng->hash_mb = mb;
    }
    return 0;
}

int cdsh_xq_engine_set_threads(cdsh_xq_engine *eng, int threads, cdsh_error *err)
{
    if (threads < 1 || threads > CDSH_XQ_MAX_THREADS)
        return cdsh_error_set(err, CDSH_EINVAL, "THREADS", "threads %d is outside 1..%d", threads,
                              CDSH_XQ_MAX_THREADS);
    if (threads != eng->nthreads) {
        free_threads(eng);
        eng->nthreads = threads;
    }
    return 0;
}

size_t cdsh_xq_engine_table_bytes(const cdsh_xq_engine *eng)
{
    size_t n = eng->tt ? cdsh_xq_tt_size_mb(eng->tt) << 20 : 0;
    if (eng->th)
        n += (size_t)eng->nthreads * sizeof(thread_data);
    return n;
}

void cdsh_xq_engine_clear(cdsh_xq_engine *eng)
{
    join_helpers(eng);
    if (eng->tt)
        cdsh_xq_tt_clear(eng->tt);
    if (eng->th)
        for (int i = 0; i < eng->nthreads; i++) {
            memset(eng->th[i]->history, 0, sizeof eng->th[i]->history);
            memset(eng->th[i]->killers, 0, sizeof eng->th[i]->killers);
        }
}

void cdsh_xq_engine_stop(cdsh_xq_engine *eng)
{
    pthread_mutex_lock(&eng->stop_mu);
    atomic_store(&eng->stop, 1);
    pthread_cond_broadcast(&eng->stop_cv);
    pthread_mutex_unlock(&eng->stop_mu);
}

static void stop_on_cancel(void *arg)
{
    cdsh_xq_engine_stop(arg);
}

/* `go infinite` (and ponder) never ends on its own: once the search has
 * nothing left to do it sleeps until stopped or cancelled — on a condition
 * variable, not a polling timer. */
static void wait_for_stop(cdsh_xq_engine *eng)
{
    uint64_t sub = eng->lim.cancel ? cdsh_cancel_subscribe(eng->lim.cancel, stop_on_cancel, eng) : 0;
    pthread_mutex_lock(&eng->stop_mu);
    while (!atomic_load(&eng->stop) &&
           !(eng->lim.cancel && cdsh_cancel_is_fired(eng->lim.cancel)))
        pthread_cond_wait(&eng->stop_cv, &eng->stop_mu);
    pthread_mutex_unlock(&eng->stop_mu);
    if (sub)
        cdsh_cancel_unsubscribe(eng->lim.cancel, sub);
}

/* ---- limits ---- */

static uint64_t total_nodes(const cdsh_xq_engine *eng)
{
    uint64_t n = 0;
    for (int i = 0; i < eng->nthreads; i++)
        n += atomic_load_explicit(&eng->th[i]->nodes, memory_order_relaxed);
    return n;
}

/* A stop is honoured once some thread has completed an iteration, so the
 * best move is never a blind guess (depth 1 takes well under a
 * millisecond; with more threads than cores the main thread may be the one
 * that has not run yet, and a helper's result is taken). */
static int stopped(const thread_data *th)
{
    return atomic_load_explicit(&th->eng->stop, memory_order_relaxed) &&
           (th->completed_depth > 0 ||
            atomic_load_explicit(&th->eng->any_done, memory_order_relaxed));
}

/* Every thread reads the clock every CDSH_XQ_TIME_POLL_NODES of its nodes,
 * so a time limit is seen within that many nodes of whichever thread runs,
 * however many threads share the cores. */
static void check_limits(thread_data *th)
{
    cdsh_xq_engine *eng = th->eng;
    if (eng->lim.nodes && total_nodes(eng) >= eng->lim.nodes)
        atomic_store(&eng->stop, 1);
    if (++th->poll % CDSH_XQ_TIME_POLL_NODES)
        return;
    if (eng->max_ms && elapsed_ms(eng) >= eng->max_ms)
        atomic_store(&eng->stop, 1);
    if (eng->lim.cancel && cdsh_cancel_is_fired(eng->lim.cancel))
        atomic_store(&eng->stop, 1);
}

static void plan_time(cdsh_xq_engine *eng, int side)
{
    const cdsh_xq_limits *l = &eng->lim;
    eng->opt_ms = eng->max_ms = 0;
    int64_t overhead = l->overhead_ms > 0 ? l->overhead_ms : 30;
    if (l->infinite)
        return;
    if (l->movetime_ms > 0) {
        int64_t ov = overhead < l->movetime_ms / 10 ? overhead : l->movetime_ms / 10;
        eng->max_ms = eng->opt_ms = l->movetime_ms - ov > 1 ? l->movetime_ms - ov : 1;
        return;
    }
    if (l->time_ms[side] > 0 || l->inc_ms[side] > 0) {
        const int64_t left = l->time_ms[side] > 0 ? l->time_ms[side] : 0, inc = l->inc_ms[side];
        int mtg = l->movestogo > 0 ? (l->movestogo < 40 ? l->movestogo : 40) : (inc ? 25 : 30);
        int64_t opt = left / mtg + inc * 3 / 4;
        int64_t max = left * 4 / 5 - overhead;
        if (max > opt * 4)
            max = opt * 4;
        if (max < 1)
            max = 1;
        if (opt > max)
            opt = max;
        eng->opt_ms = opt;
        eng->max_ms = max;
    }
}

/* ---- move ordering ---- */

static inline int tt_to_score(int s, int ply)
{
    return s >= CDSH_XQ_MATE_BOUND ? s - ply : s <= -CDSH_XQ_MATE_BOUND ? s + ply : s;
}
static inline int score_to_tt(int s, int ply)
{
    return s >= CDSH_XQ_MATE_BOUND ? s + ply : s <= -CDSH_XQ_MATE_BOUND ? s - ply : s;
}

static inline int type_at(const cdsh_xq_pos *pos, int sq)
{
    return cdsh__xq_piece_of[pos->board[sq]] & 7;
}

/* MVV-LVA; captures that give up a more valuable piece on a defended point
 * go below the quiet moves. */
static int capture_score(const cdsh_xq_pos *pos, cdsh_xq_move_t m)
{
    const int f = cdsh_xq_move_from(m), t = cdsh_xq_move_to(m);
    const int victim = cdsh_xq_piece_value(type_at(pos, t));
    const int attacker = type_at(pos, f) == CDSH_XQ_KING ? 0 : cdsh_xq_piece_value(type_at(pos, f));
    int s = victim * 16 - attacker / 16;
    if (attacker > victim + 50 && cdsh_xq_attacked(pos, (cdsh_xq_square_t)t, pos->side ^ 1))
        return -(1 << 22) + s;
    return (1 << 22) + s;
}

static void score_moves(const thread_data *th, const cdsh_xq_move_t *mv, int *sc, int n,
                        cdsh_xq_move_t ttm, int ply)
{
    const cdsh_xq_pos *pos = &th->pos;
    for (int i = 0; i < n; i++) {
        const cdsh_xq_move_t m = mv[i];
        if (m == ttm)
            sc[i] = 1 << 30;
        else if (pos->board[cdsh_xq_move_to(m)])
            sc[i] = capture_score(pos, m);
        else if (m == th->killers[ply][0])
            sc[i] = (1 << 21) + 1;
        else if (m == th->killers[ply][1])
            sc[i] = 1 << 21;
        else
            sc[i] = th->history[cdsh__xq_piece_of[pos->board[cdsh_xq_move_from(m)]]]
                               [cdsh_xq_move_to(m)];
    }
}

static inline cdsh_xq_move_t pick(cdsh_xq_move_t *mv, int *sc, int n, int i)
{
    int best = i;
    for (int j = i + 1; j < n; j++)
        if (sc[j] > sc[best])
            best = j;
    if (best != i) {
        cdsh_xq_move_t m = mv[i];
        mv[i] = mv[best];
        mv[best] = m;
        int s = sc[i];
        sc[i] = sc[best];
        sc[best] = s;
    }
    return mv[i];
}

/* Sorts mv[from..n) by score, best first (insertion sort, stable): after
 * the first few picks a node that has not cut off usually walks all its
 * moves, and picking the best of the rest for each one cost n^2/2 compares
 * (perf: most of search()'s own time). */
static void sort_rest(cdsh_xq_move_t *mv, int *sc, int from, int n)
{
    for (int i = from + 1; i < n; i++) {
        const cdsh_xq_move_t m = mv[i];
        const int s = sc[i];
        int j = i - 1;
        while (j >= from && sc[j] < s) {
            mv[j + 1] = mv[j];
            sc[j + 1] = sc[j];
            j--;
        }
        mv[j + 1] = m;
        sc[j + 1] = s;
    }
}

#define PICK_FIRST 3 /* moves picked one by one before the rest is sorted */

static void history_update(int16_t *h, int bonus)
{
    int v = *h + bonus - *h * (bonus < 0 ? -bonus : bonus) / HIST_MAX;
    if (v > HIST_MAX)
        v = HIST_MAX;
    if (v < -HIST_MAX)
        v = -HIST_MAX;
    *h = (int16_t)v;
}

static int has_pieces(const cdsh_xq_pos *pos, int side)
{
    return pos->count[side][CDSH_XQ_CHARIOT] + pos->count[side][CDSH_XQ_HORSE] +
               pos->count[side][CDSH_XQ_CANNON] >
           0;
}

/* ---- quiescence ---- */

/* Counts the node, polls the limits and tracks the selective depth;
 * 1 when the search must unwind. */
static int enter_node(thread_data *th, int ply)
{
    atomic_store_explicit(&th->nodes, atomic_load_explicit(&th->nodes, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    check_limits(th);
    if (stopped(th))
        return 1;
    if (ply > th->seldepth)
        th->seldepth = ply;
    return 0;
}

static inline int same_line(int a, int b)
{
    return (a & 15) == (b & 15) || (a >> 4) == (b >> 4);
}

/* Can the quiet move m give check to the enemy general on ek? A superset
 * of the moves that do, cheap enough to run on every quiet move of a
 * quiescence node: a direct check needs the mover on ek's file or rank
 * (chariot, cannon, the flying general), a horse's jump from ek or a
 * soldier's step beside it; a discovered check needs the mover to leave
 * ek's file or rank (a chariot's blocker, a cannon's screen) or a diagonal
 * neighbour of ek (the leg of a horse aimed at it); a piece entering ek's
 * file or rank may become a cannon's screen. */
static inline int may_check(const cdsh_xq_pos *pos, cdsh_xq_move_t m, int ek)
{
    const int f = cdsh_xq_move_from(m), t = cdsh_xq_move_to(m);
    if (same_line(f, ek) || same_line(t, ek))
        return 1;
    const int df = f - ek;
    if (df == 17 || df == 15 || df == -15 || df == -17)
        return 1;
    const int d = t - ek, type = type_at(pos, f);
    if (type == CDSH_XQ_HORSE)
        return d == 33 || d == 31 || d == 18 || d == 14 || d == -33 || d == -31 || d == -18 ||
               d == -14;
    return 0; /* a soldier beside ek is on its rank or file: caught above */
}

/* Does a stored bound decide the node? */
static int tt_cuts(const cdsh_xq_tt_hit *hit, int s, int alpha, int beta)
{
    return hit->bound == CDSH_XQ_BOUND_EXACT || (hit->bound == CDSH_XQ_BOUND_LOWER && s >= beta) ||
           (hit->bound == CDSH_XQ_BOUND_UPPER && s <= alpha);
}

static int qsearch(thread_data *th, int alpha, int beta, int ply, int checks)
{
    cdsh_xq_engine *eng = th->eng;
    cdsh_xq_pos *pos = &th->pos;
    if (enter_node(th, ply))
        return 0;
    const int in_check = cdsh_xq_in_check(pos);
    if (ply >= MAX_PLY - 1)
        return in_check ? 0 : cdsh_xq_eval(pos, &eng->eval);
    const int pv_node = beta - alpha > 1;
    const uint64_t key = cdsh_xq_hash(pos);
    cdsh_xq_tt_hit hit;
    cdsh_xq_move_t ttm = CDSH_XQ_MOVE_NONE;
    int tt_eval = NEG_INF;
    if ((checks || in_check) && cdsh_xq_tt_probe(eng->tt, key, &hit)) {
        const int s = tt_to_score(hit.score, ply);
        if (!pv_node && tt_cuts(&hit, s, alpha, beta))
            return s;
        ttm = hit.move;
        tt_eval = hit.eval;
    }
    int best = NEG_INF, stand = NEG_INF;
    if (!in_check) {
        stand = tt_eval != NEG_INF ? tt_eval : cdsh_xq_eval(pos, &eng->eval);
        if (stand >= beta)
            return stand;
        if (stand > alpha)
            alpha = stand;
        best = stand;
    }
    cdsh_xq_move_t mv[CDSH_XQ_MAX_MOVES];
    int sc[CDSH_XQ_MAX_MOVES];
    int n = in_check ? cdsh_xq_gen_pseudo(pos, mv) : cdsh_xq_gen_captures(pos, mv);
    if (ttm && !in_check && !pos->board[cdsh_xq_move_to(ttm)])
        ttm = CDSH_XQ_MOVE_NONE;
    score_moves(th, mv, sc, n, ttm, ply);
    /* at the first quiescence ply, quiet moves that give check too (last);
     * only those that can check are kept (the rest were made, tested and
     * undone one by one) */
    if (checks && !in_check) {
        const int nq = cdsh_xq_gen_quiets(pos, mv + n);
        const int ek = pos->where[16 + 16 * (pos->side ^ 1)];
        int kept = n;
        for (int i = n; i < n + nq; i++)
            if (may_check(pos, mv[i], ek)) {
                mv[kept] = mv[i];
                sc[kept++] = -(1 << 28);
            }
        n = kept;
    }
    int legal = 0;
    cdsh_xq_move_t best_move = CDSH_XQ_MOVE_NONE;
    for (int i = 0; i < n; i++) {
        const cdsh_xq_move_t m = pick(mv, sc, n, i);
        if (!cdsh_xq_is_legal(pos, m))
            continue;
        legal++;
        const int quiet = !pos->board[cdsh_xq_move_to(m)];
        if (!in_check && !quiet) {
            if (sc[i] < 0) /* losing capture */
                continue;
            const int gain = cdsh_xq_piece_value(type_at(pos, cdsh_xq_move_to(m)));
            if (stand + gain + 150 <= alpha)
                continue;
        }
        cdsh_xq_make_move(pos, m);
        if (!in_check && quiet && !cdsh_xq_in_check(pos)) {
            cdsh_xq_unmake_move(pos);
            continue;
        }
        const int v = -qsearch(th, -beta, -alpha, ply + 1, 0);
        cdsh_xq_unmake_move(pos);
        if (stopped(th))
            return 0;
        if (v > best) {
            best = v;
            if (v > alpha) {
                best_move = m;
                if (v >= beta)
                    break;
                alpha = v;
            }
        }
    }
    if (in_check && !legal)
        return -(CDSH_XQ_MATE - ply);
    if (checks || in_check)
        cdsh_xq_tt_store(eng->tt, key, best_move, score_to_tt(best, ply), in_check ? 0 : stand, 0,
                         best >= beta ? CDSH_XQ_BOUND_LOWER : CDSH_XQ_BOUND_UPPER);
    return best;
}

/* ---- main search ---- */

static void update_pv(thread_data *th, int ply, cdsh_xq_move_t m)
{
    th->pv[ply][ply] = m;
    int len = th->pv_len[ply + 1];
    for (int j = ply + 1; j < len; j++)
        th->pv[ply][j] = th->pv[ply + 1][j];
    th->pv_len[ply] = len > ply + 1 ? len : ply + 1;
}

static const int lmp_count[2][6] = {{0, 3, 5, 8, 13, 19}, {0, 5, 8, 12, 19, 28}};

/* The principal-variation search of one node. Longer than 120 lines on
 * purpose, as in every alpha-beta engine: the steps (table probe, mate
 * distance, repetition, reverse futility, null move, internal iterative
 * reduction, the move loop with its pruning, extensions and reductions,
 * the table store) read and narrow the same bounds, eval and table entry
 * in order; each is commented in place, and splitting them would pass a
 * dozen locals by pointer on the hottest path (docs/xiangqi-engine.md,
 * "Algorithm"). */
static int search(thread_data *th, int alpha, int beta, int depth, int ply, int cut_node,
                  int null_ok)
{
    cdsh_xq_engine *eng = th->eng;
    cdsh_xq_pos *pos = &th->pos;
    const int pv_node = beta - alpha > 1;
    const int root = ply == 0;
    th->pv_len[ply] = ply;
    if (depth <= 0)
        return qsearch(th, alpha, beta, ply, 1);
    if (enter_node(th, ply))
        return 0;
    const int in_check = cdsh_xq_in_check(pos);
    if (!root) {
        switch (cdsh_xq_repetition(pos, 1)) {
        case CDSH_XQ_REP_DRAW: return 0;
        case CDSH_XQ_REP_WIN:
        case CDSH_XQ_REP_CHASE_WIN: return CDSH_XQ_MATE - ply;
        case CDSH_XQ_REP_LOSS:
        case CDSH_XQ_REP_CHASE_LOSS: return -(CDSH_XQ_MATE - ply);
        case CDSH_XQ_REP_NONE: break;
        }
        if (cdsh_xq_halfmove(pos) >= CDSH_XQ_DEFAULT_MOVE_RULE && !in_check)
            return 0;
        if (cdsh_xq_bare_material(pos))
            return 0;
        if (ply >= MAX_PLY - 1)
            return in_check ? 0 : cdsh_xq_eval(pos, &eng->eval);
        /* mate distance pruning */
        if (alpha < -(CDSH_XQ_MATE - ply))
            alpha = -(CDSH_XQ_MATE - ply);
        if (beta > CDSH_XQ_MATE - ply - 1)
            beta = CDSH_XQ_MATE - ply - 1;
        if (alpha >= beta)
            return alpha;
    }
    const uint64_t key = cdsh_xq_hash(pos);
    cdsh_xq_tt_hit hit;
    cdsh_xq_move_t ttm = CDSH_XQ_MOVE_NONE;
    int tt_eval = NEG_INF, tt_hit = 0;
    if (cdsh_xq_tt_probe(eng->tt, key, &hit)) {
        tt_hit = 1;
        const int s = tt_to_score(hit.score, ply);
        if (!pv_node && !root && hit.depth >= depth && tt_cuts(&hit, s, alpha, beta))
            return s;
        if (hit.move && cdsh_xq_is_pseudo_legal(pos, hit.move))
            ttm = hit.move;
        tt_eval = hit.eval;
    }
    if (root)
        ttm = th->root[th->pv_idx].move;
    int eval = NEG_INF;
    if (!in_check) {
        eval = tt_hit && tt_eval != NEG_INF ? tt_eval : cdsh_xq_eval(pos, &eng->eval);
        th->static_eval[ply] = eval;
    } else {
        th->static_eval[ply] = NEG_INF;
    }
    const int improving = !in_check && ply >= 2 && th->static_eval[ply - 2] != NEG_INF &&
                          eval > th->static_eval[ply - 2];
    th->killers[ply + 1][0] = th->killers[ply + 1][1] = CDSH_XQ_MOVE_NONE;

    if (!in_check && !pv_node && !root) {
        /* reverse futility */
        if (depth <= 6 && eval - 90 * (depth - improving) >= beta && beta > -CDSH_XQ_MATE_BOUND &&
            eval < CDSH_XQ_MATE_BOUND)
            return eval;
        /* null move, guarded: own chariot/horse/cannon left, not twice in a row */
        if (null_ok && depth >= 3 && eval >= beta && has_pieces(pos, pos->side) &&
            beta > -CDSH_XQ_MATE_BOUND) {
            int r = 3 + depth / 4 + ((eval - beta) / 200 < 3 ? (eval - beta) / 200 : 3);
            cdsh_xq_make_null(pos);
            int v = -search(th, -beta, -beta + 1, depth - r, ply + 1, !cut_node, 0);
            cdsh_xq_unmake_null(pos);
            if (stopped(th))
                return 0;
            if (v >= beta) {
                if (v >= CDSH_XQ_MATE_BOUND)
                    v = beta;
                if (depth < 10)
                    return v;
                const int v2 = search(th, beta - 1, beta, depth - r, ply, 0, 0);
                if (v2 >= beta)
                    return v;
            }
        }
    }
    /* internal iterative reduction */
    if (!ttm && depth >= 6 && !root)
        depth--;

    cdsh_xq_move_t mv[CDSH_XQ_MAX_MOVES];
    int sc[CDSH_XQ_MAX_MOVES];
    int n;
    if (root) {
        n = 0;
        for (int i = th->pv_idx; i < th->nroot; i++) {
            mv[n] = th->root[i].move;
            sc[n] = th->nroot - i; /* keep the root order */
            n++;
        }
    } else if (ttm) {
        /* the table move first, before generating: when it cuts off, the
         * node never generates or scores its moves */
        mv[0] = ttm;
        sc[0] = 1 << 30;
        n = 1;
    } else {
        n = cdsh_xq_gen_pseudo(pos, mv);
        score_moves(th, mv, sc, n, ttm, ply);
    }
    int generated = root || !ttm;
    cdsh_xq_move_t quiets[64];
    int nquiets = 0, legal = 0, searched = 0;
    int best = NEG_INF;
    cdsh_xq_move_t best_move = CDSH_XQ_MOVE_NONE;
    const int orig_alpha = alpha;
    for (int i = 0; i < n || !generated; i++) {
        if (i == n) { /* the table move did not cut off: the other moves */
            generated = 1;
            const int k = cdsh_xq_gen_pseudo(pos, mv + 1);
            n = 1;
            for (int j = 1; j <= k; j++)
                if (mv[j] != ttm)
                    mv[n++] = mv[j];
            score_moves(th, mv + 1, sc + 1, n - 1, ttm, ply);
            if (n == 1)
                break;
        }
        if (i == PICK_FIRST)
            sort_rest(mv, sc, i, n);
        const cdsh_xq_move_t m = i < PICK_FIRST ? pick(mv, sc, n, i) : mv[i];
        if (!root && !cdsh_xq_is_legal(pos, m))
            continue;
        legal++;
        const int to = cdsh_xq_move_to(m);
        const int capture = pos->board[to] != 0;
        const int piece = cdsh__xq_piece_of[pos->board[cdsh_xq_move_from(m)]];
        const int killer = m == th->killers[ply][0] || m == th->killers[ply][1];
        cdsh_xq_make_move(pos, m);
        const int gives_check = cdsh_xq_in_check(pos);
        if (!root && !in_check && !capture && !gives_check && best > -CDSH_XQ_MATE_BOUND) {
            if (depth <= 5 && legal > lmp_count[improving][depth]) {
                cdsh_xq_unmake_move(pos);
                continue;
            }
            if (depth <= 6 && !killer && eval + 100 + 80 * depth <= alpha) {
                cdsh_xq_unmake_move(pos);
                continue;
            }
        }
        searched++;
        const int ext = gives_check && ply < 2 * th->root_depth ? 1 : 0;
        const int new_depth = depth - 1 + ext;
        int v;
        if (pv_node && searched == 1) {
            v = -search(th, -beta, -alpha, new_depth, ply + 1, 0, 1);
        } else {
            int r = 0;
            if (depth >= 3 && searched > 1 + 2 * pv_node && !capture && !in_check) {
                r = eng->lmr[depth < 64 ? depth : 63][searched < 64 ? searched : 63];
                r -= pv_node;
                r += cut_node;
                r += !improving;
                r -= killer;
                r -= gives_check;
                r -= th->history[piece][to] / 6000;
                if (r < 0)
                    r = 0;
                if (r > new_depth - 1)
                    r = new_depth - 1 > 0 ? new_depth - 1 : 0;
            }
            v = -search(th, -alpha - 1, -alpha, new_depth - r, ply + 1, 1, 1);
            if (v > alpha && r > 0)
                v = -search(th, -alpha - 1, -alpha, new_depth, ply + 1, !cut_node, 1);
            if (v > alpha && v < beta && pv_node)
                v = -search(th, -beta, -alpha, new_depth, ply + 1, 0, 1);
        }
        cdsh_xq_unmake_move(pos);
        if (stopped(th))
            return 0;
        if (root) {
            root_move *rm = NULL;
            for (int j = th->pv_idx; j < th->nroot; j++)
                if (th->root[j].move == m)
                    rm = &th->root[j];
            if (searched == 1 || v > alpha) {
                rm->score = v;
                rm->sel_depth = th->seldepth;
                rm->pv[0] = m;
                int len = 1;
                for (int j = 1; j < th->pv_len[1] && len < CDSH_XQ_PV_MAX; j++)
                    rm->pv[len++] = th->pv[1][j];
                rm->pv_len = len;
            } else {
                rm->score = NEG_INF;
            }
        }
        if (v > best) {
            best = v;
            if (v > alpha) {
                best_move = m;
                if (pv_node)
                    update_pv(th, ply, m);
                if (v >= beta) {
                    if (!capture) {
                        if (th->killers[ply][0] != m) {
                            th->killers[ply][1] = th->killers[ply][0];
                            th->killers[ply][0] = m;
                        }
                        const int bonus = depth * depth < 1200 ? depth * depth : 1200;
                        history_update(&th->history[piece][to], bonus * 8);
                        for (int q = 0; q < nquiets; q++) {
                            const int qp =
                                cdsh__xq_piece_of[pos->board[cdsh_xq_move_from(quiets[q])]];
                            history_update(&th->history[qp][cdsh_xq_move_to(quiets[q])],
                                           -bonus * 8);
                        }
                    }
                    break;
                }
                alpha = v;
            }
        }
        if (!capture && nquiets < 64)
            quiets[nquiets++] = m;
    }
    if (!legal)
        return -(CDSH_XQ_MATE - ply); /* checkmate or stalemate: both lose */
    if (!searched)
        return alpha;
    if (!root || th->pv_idx == 0)
        cdsh_xq_tt_store(eng->tt, key, best_move, score_to_tt(best, ply), in_check ? 0 : eval,
                         depth,
                         best >= beta                   ? CDSH_XQ_BOUND_LOWER
                         : pv_node && best > orig_alpha ? CDSH_XQ_BOUND_EXACT
                                                        : CDSH_XQ_BOUND_UPPER);
    return best;
}

/* ---- iterative deepening ---- */

static void sort_root(thread_data *th, int from, int to)
{
    for (int i = from + 1; i < to; i++) { /* stable insertion sort */
        root_move tmp = th->root[i];
        int j = i - 1;
        while (j >= from && th->root[j].score < tmp.score) {
            th->root[j + 1] = th->root[j];
            j--;
        }
        th->root[j + 1] = tmp;
    }
}

static void fill_line(const root_move *rm, int depth, int bound, cdsh_xq_line *line)
{
    memcpy(line->pv, rm->pv, sizeof line->pv);
    line->pv_len = rm->pv_len;
    line->score = rm->score;
    line->mate = cdsh_xq_score_mate(rm->score);
    line->depth = depth;
    line->bound = bound;
}

typedef struct main_ctx {
    cdsh_xq_info_fn info;
    void *user;
    cdsh_xq_search_result *res;
} main_ctx;

static void report(thread_data *th, main_ctx *mc, int depth)
{
    cdsh_xq_engine *eng = th->eng;
    cdsh_xq_search_result *res = mc->res;
    const int64_t t = elapsed_ms(eng);
    const uint64_t nodes = total_nodes(eng);
    res->nlines = th->multipv;
    for (int k = 0; k < th->multipv; k++)
        fill_line(&th->root[k], depth, CDSH_XQ_BOUND_EXACT, &res->lines[k]);
    res->best = th->root[0].move;
    res->ponder = th->root[0].pv_len > 1 ? th->root[0].pv[1] : CDSH_XQ_MOVE_NONE;
    res->score = th->root[0].score;
    res->mate = cdsh_xq_score_mate(res->score);
    res->depth = depth;
    res->seldepth = th->seldepth;
    if (!mc->info)
        return;
    for (int k = 0; k < th->multipv; k++) {
        cdsh_xq_info in = {
            .depth = depth,
            .seldepth = th->seldepth,
            .multipv = k + 1,
            .line = &res->lines[k],
            .nodes = nodes,
            .time_ms = t,
            .nps = t > 0 ? nodes * 1000 / (uint64_t)t : nodes * 1000,
            .hashfull = cdsh_xq_tt_hashfull(eng->tt),
        };
        mc->info(&in, mc->user);
    }
}

static void iterate(thread_data *th, main_ctx *mc)
{
    cdsh_xq_engine *eng = th->eng;
    const int max_depth = eng->lim.depth > 0 && eng->lim.depth < CDSH_XQ_MAX_DEPTH
                              ? eng->lim.depth
                              : CDSH_XQ_MAX_DEPTH;
    cdsh_xq_move_t last_best = CDSH_XQ_MOVE_NONE;
    int stable = 0;
    for (int depth = 1 + (th->id & 1); depth <= max_depth; depth++) {
        th->root_depth = depth;
        th->seldepth = 0;
        for (int i = 0; i < th->nroot; i++)
            th->root[i].prev_score = th->root[i].score;
        for (th->pv_idx = 0; th->pv_idx < th->multipv; th->pv_idx++) {
            root_move *rm = &th->root[th->pv_idx];
            int delta = 20, alpha = NEG_INF, beta = POS_INF;
            if (depth >= 5 && rm->prev_score > NEG_INF + 1000) {
                alpha = rm->prev_score - delta > NEG_INF ? rm->prev_score - delta : NEG_INF;
                beta = rm->prev_score + delta < POS_INF ? rm->prev_score + delta : POS_INF;
            }
            for (;;) {
                const int v = search(th, alpha, beta, depth, 0, 0, 1);
                sort_root(th, th->pv_idx, th->nroot);
                if (stopped(th))
                    break;
                if (v <= alpha) {
                    beta = (alpha + beta) / 2;
                    alpha = v - delta > NEG_INF ? v - delta : NEG_INF;
                } else if (v >= beta) {
                    beta = v + delta < POS_INF ? v + delta : POS_INF;
                } else {
                    break;
                }
                delta += delta / 2;
            }
            sort_root(th, 0, th->pv_idx + 1);
            if (stopped(th))
                break;
        }
        if (stopped(th))
            break;
        th->completed_depth = depth;
        if (th->id != 0) {
            pthread_mutex_lock(&eng->done_mu);
            memcpy(th->done, th->root, sizeof(root_move) * (size_t)th->multipv);
            th->done_depth = depth;
            th->done_seldepth = th->seldepth;
            pthread_mutex_unlock(&eng->done_mu);
        }
        atomic_store_explicit(&eng->any_done, 1, memory_order_relaxed);
        if (th->id != 0 || !mc) /* helpers run without a main context */
            continue;
        report(th, mc, depth);
        /* a forced mate found within the depth: searching deeper cannot improve it */
        if (!eng->lim.infinite && abs(th->root[0].score) >= CDSH_XQ_MATE_BOUND &&
            CDSH_XQ_MATE - abs(th->root[0].score) <= depth && eng->lim.depth == 0)
            break;
        if (th->root[0].move == last_best)
            stable++;
        else
            stable = 0;
        last_best = th->root[0].move;
        if (eng->max_ms && !eng->lim.movetime_ms) {
            const int64_t t = elapsed_ms(eng);
            const int64_t soft = stable >= 3 ? eng->opt_ms / 2 : eng->opt_ms * 3 / 4;
            if (t >= soft)
                break;
        }
        if (th->nroot == 1 && eng->max_ms && depth >= 4 && !eng->lim.infinite)
            break;
    }
}

static void *helper_main(void *arg)
{
    thread_data *th = arg;
    iterate(th, NULL);
    return NULL;
}

static void prepare_thread(thread_data *th, const cdsh_xq_pos *pos, const root_move *root,
                           int nroot, int multipv)
{
    /* the board and the used part of the undo stack (not all 64 KB) */
    if (&th->pos != pos)
        memcpy(&th->pos, pos,
               offsetof(cdsh_xq_pos, st) + sizeof(cdsh_xq_state) * (size_t)(pos->ply + 1));
    atomic_store(&th->nodes, 0);
    th->poll = 0;
    th->seldepth = 0;
    th->completed_depth = 0;
    th->done_depth = 0;
    th->nroot = nroot;
    memcpy(th->root, root, sizeof(root_move) * (size_t)nroot);
    th->multipv = multipv;
    th->pv_idx = 0;
}

int cdsh_xq_search(cdsh_xq_engine *eng, const cdsh_xq_pos *pos, const cdsh_xq_limits *limits,
                   cdsh_xq_info_fn info, void *user, cdsh_xq_search_result *result, cdsh_error *err)
{
    static const cdsh_xq_limits none = {0};
    memset(result, 0, sizeof *result);
    eng->lim = limits ? *limits : none;
    eng->start_ms = now_ms(eng);
    const int multipv = eng->lim.multipv ? eng->lim.multipv : 1;
    if (multipv < 1 || multipv > CDSH_XQ_MULTIPV_MAX)
        return cdsh_error_set(err, CDSH_EINVAL, "MULTIPV", "multipv %d is outside 1..%d", multipv,
                              CDSH_XQ_MULTIPV_MAX);
    join_helpers(eng);
    int rc = ensure_tables(eng, err);
    if (rc)
        return rc;
    thread_data *main_th = eng->th[0];
    /* copy the position, keeping at most the plies since the last capture
     * so the search always has room on the undo stack */
    memcpy(&main_th->pos, pos,
           offsetof(cdsh_xq_pos, st) + sizeof(cdsh_xq_state) * (size_t)(pos->ply + 1));
    cdsh_xq_pos *p = &main_th->pos;
    if (p->ply > CDSH_XQ_MAX_PLY - 2 * MAX_PLY)
        cdsh_xq_pos_trim_history(p, cdsh_xq_halfmove(p) < 200 ? cdsh_xq_halfmove(p) : 200);
    cdsh_xq_move_t legal[CDSH_XQ_MAX_MOVES];
    int nlegal = cdsh_xq_gen_legal(p, legal);
    root_move root[MAX_ROOT];
    int nroot = 0;
    for (int i = 0; i < nlegal; i++) {
        if (eng->lim.searchmoves && eng->lim.nsearchmoves > 0) {
            int found = 0;
            for (int j = 0; j < eng->lim.nsearchmoves; j++)
                found |= eng->lim.searchmoves[j] == legal[i];
            if (!found)
                continue;
        }
        root_move rm = {.move = legal[i], .score = NEG_INF, .prev_score = NEG_INF, .pv_len = 1};
        rm.pv[0] = legal[i];
        root[nroot++] = rm;
    }
    if (eng->lim.searchmoves && eng->lim.nsearchmoves > 0 && nroot < eng->lim.nsearchmoves)
        return cdsh_error_set(err, CDSH_EINVAL, "SEARCHMOVES",
                              "a search move is not legal in this position");
    atomic_store(&eng->stop, eng->lim.cancel && cdsh_cancel_is_fired(eng->lim.cancel));
    atomic_store(&eng->any_done, 0);
    if (nroot == 0) {
        result->score = -CDSH_XQ_MATE;
        result->mate = 0;
        if (eng->lim.infinite)
            wait_for_stop(eng);
        return 0;
    }
    /* order the root by a quick static look: captures first, then the rest */
    {
        int sc[MAX_ROOT];
        for (int i = 0; i < nroot; i++)
            sc[i] = p->board[cdsh_xq_move_to(root[i].move)] ? capture_score(p, root[i].move) : 0;
        for (int i = 1; i < nroot; i++) {
            root_move t = root[i];
            int s = sc[i], j = i - 1;
            while (j >= 0 && sc[j] < s) {
                root[j + 1] = root[j];
                sc[j + 1] = sc[j];
                j--;
            }
            root[j + 1] = t;
            sc[j + 1] = s;
        }
    }
    const int lines = multipv < nroot ? multipv : nroot;
    plan_time(eng, p->side);
    cdsh_xq_tt_new_search(eng->tt);
    prepare_thread(main_th, p, root, nroot, lines);
    int started = 1;
    for (int i = 1; i < eng->nthreads; i++) {
        prepare_thread(eng->th[i], p, root, nroot, lines);
        if (pthread_create(&eng->th[i]->tid, NULL, helper_main, eng->th[i]) != 0)
            break;
        started++;
    }
    main_ctx mc = {info, user, result};
    iterate(main_th, &mc);
    if (eng->lim.infinite)
        wait_for_stop(eng);
    atomic_store(&eng->stop, 1);
    eng->helpers = started - 1; /* joined by the next call on this engine */
    if (!result->best) { /* the main thread completed no iteration: a helper's lines */
        pthread_mutex_lock(&eng->done_mu);
        const thread_data *h = NULL;
        for (int i = 1; i < started; i++)
            if (eng->th[i]->done_depth > 0 && (!h || eng->th[i]->done_depth > h->done_depth))
                h = eng->th[i];
        if (h) {
            for (int k = 0; k < lines; k++)
                fill_line(&h->done[k], h->done_depth, CDSH_XQ_BOUND_EXACT, &result->lines[k]);
            result->nlines = lines;
            result->best = h->done[0].move;
            result->ponder = h->done[0].pv_len > 1 ? h->done[0].pv[1] : CDSH_XQ_MOVE_NONE;
            result->score = h->done[0].score;
            result->mate = cdsh_xq_score_mate(result->score);
            result->depth = h->done_depth;
            result->seldepth = h->done_seldepth;
        }
        pthread_mutex_unlock(&eng->done_mu);
    }
    if (!result->best) { /* stopped before depth 1 completed */
        result->nlines = lines;
        for (int k = 0; k < lines; k++)
            fill_line(&main_th->root[k], 0, CDSH_XQ_BOUND_EXACT, &result->lines[k]);
        result->best = main_th->root[0].move;
        result->score = main_th->root[0].score > NEG_INF ? main_th->root[0].score : 0;
        result->lines[0].score = result->score;
    }
    result->nodes = total_nodes(eng);
    result->time_ms = elapsed_ms(eng);
    result->nps = result->time_ms > 0 ? result->nodes * 1000 / (uint64_t)result->time_ms
                                      : result->nodes * 1000;
    return 0;
}
