/* test_xq_search.c — search and evaluation: mates in 1-3 at the distance an
 * exhaustive solver proves, stalemate and perpetual check scored right,
 * reproducible node counts, multi-PV, limits, stop/cancel from another
 * thread, two engines at once, lazy SMP, the hash table, eval symmetry and
 * the bench/opening tables. */
#include "support/testkit.h"

#include "support/xq_position.h"

#include <pthread.h>
#include <sys/resource.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/xiangqi/engine/bench.h"
#include "plugins/xiangqi/engine/eval.h"
#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/rules.h"
#include "plugins/xiangqi/engine/search.h"
#include "plugins/xiangqi/engine/tt.h"

static cdsh_xq_move_t mv(const cdsh_xq_pos *pos, const char *iccs)
{
    cdsh_xq_move_t m;
    cdsh_error err = {0};
    if (cdsh_xq_parse_move(pos, iccs, &m, &err) != 0)
        fail_msg("%s: %s", iccs, err.message);
    return m;
}

static cdsh_xq_engine *engine(int threads)
{
    cdsh_xq_engine *eng = NULL;
    cdsh_xq_engine_opts o = {.hash_mb = 4, .threads = threads};
    assert_int_equal(cdsh_xq_engine_new(&o, &eng, NULL), 0);
    return eng;
}

static cdsh_xq_search_result run(cdsh_xq_engine *eng, const cdsh_xq_pos *pos,
                                 const cdsh_xq_limits *lim)
{
    cdsh_xq_search_result r;
    cdsh_error err = {0};
    if (cdsh_xq_search(eng, pos, lim, NULL, NULL, &r, &err) != 0)
        fail_msg("search: %s", err.message);
    return r;
}

/* Exhaustive solver: can the side to move force a win (mate or stalemate:
 * both lose for the side left without a move) within n of its moves? */
static int forced_win(cdsh_xq_pos *pos, int n)
{
    cdsh_xq_move_t a[CDSH_XQ_MAX_MOVES];
    const int na = cdsh_xq_gen_legal(pos, a);
    for (int i = 0; i < na; i++) {
        cdsh_xq_make_move(pos, a[i]);
        cdsh_xq_move_t d[CDSH_XQ_MAX_MOVES];
        const int nd = cdsh_xq_gen_legal(pos, d);
        int win = nd == 0;
        if (!win && n > 1) {
            win = 1;
            for (int j = 0; j < nd && win; j++) {
                cdsh_xq_make_move(pos, d[j]);
                win = forced_win(pos, n - 1);
                cdsh_xq_unmake_move(pos);
            }
        }
        cdsh_xq_unmake_move(pos);
        if (win)
            return 1;
    }
    return 0;
}

static void assert_mate_in(const char *fen, int n, int depth)
{
    cdsh_xq_pos *pos = cdsh_test_xq_pos(fen);
    /* the solver proves the distance: a win in n, none in n - 1 */
    assert_true(forced_win(pos, n));
    if (n > 1)
        assert_false(forced_win(pos, n - 1));
    cdsh_xq_engine *eng = engine(1);
    cdsh_xq_limits lim = {.depth = depth};
    cdsh_xq_search_result r = run(eng, pos, &lim);
    assert_int_equal(r.mate, n);
    assert_int_equal(r.score, CDSH_XQ_MATE - (2 * n - 1));
    assert_int_equal(r.lines[0].mate, n);
    /* the PV starts with a legal move that keeps the forced win */
    assert_int_equal(cdsh_xq_move_check(pos, r.best, NULL), 0);
    cdsh_xq_make_move(pos, r.best);
    if (n == 1) {
        assert_false(cdsh_xq_has_legal_move(pos));
    } else {
        cdsh_xq_move_t d[CDSH_XQ_MAX_MOVES];
        const int nd = cdsh_xq_gen_legal(pos, d);
        for (int j = 0; j < nd; j++) {
            cdsh_xq_make_move(pos, d[j]);
            assert_true(forced_win(pos, n - 1));
            cdsh_xq_unmake_move(pos);
        }
    }
    cdsh_xq_engine_free(eng);
    cdsh_xq_pos_free(pos);
}

static void finds_mate_in_one(void **state)
{
    (void)state;
    assert_mate_in("3k5/1R7/R8/9/9/9/9/9/9/4K4 w - - 0 1", 1, 4);
}

static void finds_mate_in_two(void **state)
{
    (void)state;
    assert_mate_in("3k5/4a4/9/9/9/9/9/9/R8/1R2K4 w - - 0 1", 2, 6);
    assert_mate_in("4ka3/9/9/9/9/9/9/9/R8/1R1K5 w - - 0 1", 2, 6);
}

static void finds_mate_in_three(void **state)
{
    (void)state;
    assert_mate_in("3k5/4a4/4ba3/9/9/9/9/9/R8/1R2K4 w - - 0 1", 3, 8);
    assert_mate_in("3akab2/9/9/9/9/9/9/9/4C4/1R1K1R3 w - - 0 1", 3, 8);
}

static void mated_side_reports_no_move(void **state)
{
    (void)state;
    /* Red has just been stalemated (not in check, no legal move) */
    cdsh_xq_pos *pos = cdsh_test_xq_pos("3k5/9/9/9/9/9/9/9/1R7/4K4 w - - 0 1");
    cdsh_test_xq_play(pos, "b1b8");
    assert_false(cdsh_xq_in_check(pos));
    cdsh_xq_engine *eng = engine(1);
    cdsh_xq_limits lim = {.depth = 5};
    cdsh_xq_search_result r = run(eng, pos, &lim);
    assert_int_equal(r.best, CDSH_XQ_MOVE_NONE);
    assert_int_equal(r.score, -CDSH_XQ_MATE);
    cdsh_xq_engine_free(eng);
    cdsh_xq_pos_free(pos);
}

static void stalemating_the_opponent_scores_as_a_win(void **state)
{
    (void)state;
    /* Black: the red general on d0 has no move (the crossed soldier covers
     * d1 and e0); any general move that keeps the position stalemates Red */
    cdsh_xq_pos *pos = cdsh_test_xq_pos("4k4/9/9/9/9/9/9/9/4p4/3K5 b - - 0 1");
    assert_true(forced_win(pos, 1));
    cdsh_xq_engine *eng = engine(1);
    cdsh_xq_limits lim = {.depth = 4};
    cdsh_xq_search_result r = run(eng, pos, &lim);
    assert_int_equal(r.mate, 1);
    cdsh_xq_make_move(pos, r.best);
    cdsh_xq_result st = cdsh_xq_status(pos, NULL);
    assert_int_equal(st.outcome, CDSH_XQ_BLACK_WINS);
    assert_int_equal(st.reason, CDSH_XQ_REASON_STALEMATE);
    cdsh_xq_engine_free(eng);
    cdsh_xq_pos_free(pos);
}

static void perpetual_check_scores_as_a_loss_for_the_checker(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_test_xq_pos("3k5/9/R8/9/9/9/9/9/9/4K4 w - - 0 1");
    const char *cycle[] = {"a7a9", "d9d8", "a9a8", "d8d9", "a8a9", "d9d8"};
    for (int i = 0; i < 6; i++)
        cdsh_test_xq_play(pos, cycle[i]);
    /* checking again (a9a8) repeats the checking cycle */
    cdsh_xq_move_t again = mv(pos, "a9a8");
    cdsh_xq_engine *eng = engine(1);
    cdsh_xq_limits only = {.depth = 4, .searchmoves = &again, .nsearchmoves = 1};
    cdsh_xq_search_result r = run(eng, pos, &only);
    assert_int_equal(r.best, again);
    assert_true(r.score <= -CDSH_XQ_MATE_BOUND);
    assert_true(r.mate < 0);
    /* free to choose, the engine does not repeat the perpetual check */
    cdsh_xq_engine_clear(eng);
    cdsh_xq_limits free_lim = {.depth = 4};
    r = run(eng, pos, &free_lim);
    assert_int_not_equal(r.best, again);
    assert_true(r.score > -CDSH_XQ_MATE_BOUND);
    cdsh_xq_engine_free(eng);
    cdsh_xq_pos_free(pos);
}

static void repetition_without_checks_scores_as_a_draw(void **state)
{
    (void)state;
    /* both sides shuffle; going back into the cycle scores exactly 0 */
    cdsh_xq_pos *pos = cdsh_test_xq_pos(CDSH_XQ_START_FEN);
    const char *cycle[] = {"b0c2", "b9c7", "c2b0", "c7b9", "b0c2", "b9c7", "c2b0"};
    for (int i = 0; i < 7; i++)
        cdsh_test_xq_play(pos, cycle[i]);
    cdsh_xq_move_t back = mv(pos, "c7b9");
    cdsh_xq_engine *eng = engine(1);
    cdsh_xq_limits lim = {.depth = 3, .searchmoves = &back, .nsearchmoves = 1};
    cdsh_xq_search_result r = run(eng, pos, &lim);
    assert_int_equal(r.score, 0);
    cdsh_xq_engine_free(eng);
    cdsh_xq_pos_free(pos);
}

static void fixed_depth_node_count_is_reproducible(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_test_xq_pos(cdsh_xq_bench_fens[4]);
    cdsh_xq_engine *a = engine(1), *b = engine(1);
    cdsh_xq_limits lim = {.depth = 6};
    cdsh_xq_search_result r1 = run(a, pos, &lim);
    cdsh_xq_engine_clear(a);
    cdsh_xq_search_result r2 = run(a, pos, &lim);
    cdsh_xq_search_result r3 = run(b, pos, &lim);
    assert_true(r1.nodes > 1000);
    assert_int_equal(r1.nodes, r2.nodes);
    assert_int_equal(r1.nodes, r3.nodes);
    assert_int_equal(r1.best, r2.best);
    assert_int_equal(r1.score, r3.score);
    assert_int_equal(r1.depth, 6);
    cdsh_xq_engine_free(a);
    cdsh_xq_engine_free(b);
    cdsh_xq_pos_free(pos);
}

static void multipv_lines_are_distinct_and_ordered(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_test_xq_pos(CDSH_XQ_START_FEN);
    cdsh_xq_engine *eng = engine(1);
    cdsh_xq_limits lim = {.depth = 5, .multipv = 4};
    cdsh_xq_search_result r = run(eng, pos, &lim);
    assert_int_equal(r.nlines, 4);
    assert_int_equal(r.lines[0].pv[0], r.best);
    assert_int_equal(r.lines[0].score, r.score);
    for (int i = 0; i < 4; i++) {
        assert_true(r.lines[i].pv_len >= 1);
        assert_int_equal(cdsh_xq_move_check(pos, r.lines[i].pv[0], NULL), 0);
        if (i > 0)
            assert_true(r.lines[i].score <= r.lines[i - 1].score);
        for (int j = 0; j < i; j++)
            assert_int_not_equal(r.lines[i].pv[0], r.lines[j].pv[0]);
    }
    /* more lines than legal moves: one line per legal move */
    cdsh_xq_pos *few = cdsh_test_xq_pos("4k4/9/9/9/9/9/9/9/4p4/3K5 b - - 0 1");
    cdsh_xq_limits many = {.depth = 2, .multipv = CDSH_XQ_MULTIPV_MAX};
    cdsh_xq_search_result r2 = run(eng, few, &many);
    cdsh_xq_move_t legal[CDSH_XQ_MAX_MOVES];
    const int nlegal = cdsh_xq_gen_legal(few, legal);
    assert_true(nlegal < CDSH_XQ_MULTIPV_MAX);
    assert_int_equal(r2.nlines, nlegal);
    cdsh_xq_engine_free(eng);
    cdsh_xq_pos_free(pos);
    cdsh_xq_pos_free(few);
}

static void bad_limits_are_refused(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_test_xq_pos(CDSH_XQ_START_FEN);
    cdsh_xq_engine *eng = engine(1);
    cdsh_xq_search_result r;
    cdsh_error err = {0};
    cdsh_xq_limits lim = {.depth = 2, .multipv = CDSH_XQ_MULTIPV_MAX + 1};
    assert_int_equal(cdsh_xq_search(eng, pos, &lim, NULL, NULL, &r, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "MULTIPV");
    cdsh_xq_move_t bogus = cdsh_xq_move_make(cdsh_xq_square(4, 0), cdsh_xq_square(4, 5));
    cdsh_xq_limits sm = {.depth = 2, .searchmoves = &bogus, .nsearchmoves = 1};
    assert_int_equal(cdsh_xq_search(eng, pos, &sm, NULL, NULL, &r, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "SEARCHMOVES");
    cdsh_xq_engine *bad = NULL;
    cdsh_xq_engine_opts o = {.threads = CDSH_XQ_MAX_THREADS + 1};
    assert_int_equal(cdsh_xq_engine_new(&o, &bad, &err), CDSH_EINVAL);
    assert_null(bad);
    assert_int_equal(cdsh_xq_engine_set_hash(eng, 0, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "TT_SIZE");
    cdsh_xq_engine_free(eng);
    cdsh_xq_pos_free(pos);
}

static void node_limit_is_honoured(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_test_xq_pos(CDSH_XQ_START_FEN);
    cdsh_xq_engine *eng = engine(1);
    cdsh_xq_limits lim = {.nodes = 5000};
    cdsh_xq_search_result r = run(eng, pos, &lim);
    assert_true(r.nodes >= 5000);
    assert_true(r.nodes <= 5000 + 64);
    assert_int_equal(cdsh_xq_move_check(pos, r.best, NULL), 0);
    cdsh_xq_engine_free(eng);
    cdsh_xq_pos_free(pos);
}

typedef struct bg {
    cdsh_xq_engine *eng;
    cdsh_xq_pos *pos;
    cdsh_xq_limits lim;
    cdsh_xq_search_result r;
    int depth_seen;
    pthread_mutex_t mu;
} bg;

static void bg_info(const cdsh_xq_info *in, void *user)
{
    bg *b = user;
    pthread_mutex_lock(&b->mu);
    b->depth_seen = in->depth;
    pthread_mutex_unlock(&b->mu);
}

static void *bg_main(void *arg)
{
    bg *b = arg;
    cdsh_xq_search(b->eng, b->pos, &b->lim, bg_info, b, &b->r, NULL);
    return NULL;
}

static void wait_depth(bg *b, int depth)
{
    for (int i = 0; i < 20000; i++) {
        pthread_mutex_lock(&b->mu);
        int d = b->depth_seen;
        pthread_mutex_unlock(&b->mu);
        if (d >= depth)
            return;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    fail_msg("search never reached depth %d", depth);
}

static void stop_from_another_thread_ends_an_infinite_search(void **state)
{
    (void)state;
    bg b = {.eng = engine(1), .pos = cdsh_test_xq_pos(CDSH_XQ_START_FEN), .lim = {.infinite = 1}};
    pthread_mutex_init(&b.mu, NULL);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, bg_main, &b), 0);
    wait_depth(&b, 3);
    cdsh_xq_engine_stop(b.eng);
    pthread_join(t, NULL);
    assert_true(b.r.depth >= 3);
    assert_int_equal(cdsh_xq_move_check(b.pos, b.r.best, NULL), 0);
    pthread_mutex_destroy(&b.mu);
    cdsh_xq_engine_free(b.eng);
    cdsh_xq_pos_free(b.pos);
}

static void cancel_token_ends_a_search(void **state)
{
    (void)state;
    cdsh_cancel *c = cdsh_cancel_new(NULL);
    bg b = {.eng = engine(2),
            .pos = cdsh_test_xq_pos(cdsh_xq_bench_fens[3]),
            .lim = {.infinite = 1, .cancel = c}};
    pthread_mutex_init(&b.mu, NULL);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, bg_main, &b), 0);
    wait_depth(&b, 2);
    cdsh_cancel_fire(c, "test");
    pthread_join(t, NULL);
    assert_int_equal(cdsh_xq_move_check(b.pos, b.r.best, NULL), 0);
    /* a token fired before the search starts still yields a legal move */
    cdsh_xq_search_result r = run(b.eng, b.pos, &b.lim);
    assert_int_equal(cdsh_xq_move_check(b.pos, r.best, NULL), 0);
    cdsh_cancel_free(c);
    pthread_mutex_destroy(&b.mu);
    cdsh_xq_engine_free(b.eng);
    cdsh_xq_pos_free(b.pos);
}

typedef struct idle_wait {
    cdsh_xq_engine *eng;
    cdsh_xq_pos *pos;
    cdsh_xq_limits lim;
    long switches; /* voluntary context switches of the searching thread */
    cdsh_xq_search_result r;
} idle_wait;

static void *idle_main(void *arg)
{
    idle_wait *w = arg;
    struct rusage before, after;
    getrusage(RUSAGE_THREAD, &before);
    cdsh_xq_search(w->eng, w->pos, &w->lim, NULL, NULL, &w->r, NULL);
    getrusage(RUSAGE_THREAD, &after);
    w->switches = after.ru_nvcsw - before.ru_nvcsw;
    return NULL;
}

/* An infinite search with nothing to think about (the side to move is
 * mated) waits for stop or cancel asleep: the thread wakes a handful of
 * times in 300 ms, not once a millisecond (the wait used to poll with a
 * 1 ms nanosleep: ~300 wake-ups, fewer under load). Counted, not timed. */
static void an_idle_infinite_search_sleeps_until_stopped(void **state)
{
    (void)state;
    for (int by_cancel = 0; by_cancel < 2; by_cancel++) {
        cdsh_cancel *c = by_cancel ? cdsh_cancel_new(NULL) : NULL;
        idle_wait w = {.eng = engine(1),
                       .pos = cdsh_test_xq_pos("3k5/3R5/3R5/9/9/9/9/9/9/4K4 b - - 0 1"),
                       .lim = {.infinite = 1, .cancel = c}};
        assert_int_equal(cdsh_xq_count_legal(w.pos), 0);
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, idle_main, &w), 0);
        struct timespec ts = {0, 300 * 1000000};
        nanosleep(&ts, NULL);
        if (by_cancel)
            cdsh_cancel_fire(c, "test");
        else
            cdsh_xq_engine_stop(w.eng);
        pthread_join(t, NULL);
        printf("idle infinite search (%s): %ld voluntary context switches\n",
               by_cancel ? "cancel" : "stop", w.switches);
        assert_int_equal(w.r.best, CDSH_XQ_MOVE_NONE);
        assert_true(w.switches <= 10);
        cdsh_cancel_free(c);
        cdsh_xq_engine_free(w.eng);
        cdsh_xq_pos_free(w.pos);
    }
}

static void two_engines_search_independently(void **state)
{
    (void)state;
    cdsh_xq_pos *p1 = cdsh_test_xq_pos(cdsh_xq_bench_fens[2]),
                *p2 = cdsh_test_xq_pos(cdsh_xq_bench_fens[7]);
    cdsh_xq_limits lim = {.depth = 6};
    cdsh_xq_engine *e = engine(1);
    cdsh_xq_search_result s1 = run(e, p1, &lim);
    cdsh_xq_engine_clear(e);
    cdsh_xq_search_result s2 = run(e, p2, &lim);
    cdsh_xq_engine_free(e);
    bg a = {.eng = engine(1), .pos = p1, .lim = lim}, b = {.eng = engine(1), .pos = p2, .lim = lim};
    pthread_mutex_init(&a.mu, NULL);
    pthread_mutex_init(&b.mu, NULL);
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, bg_main, &a), 0);
    assert_int_equal(pthread_create(&tb, NULL, bg_main, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    assert_int_equal(a.r.nodes, s1.nodes);
    assert_int_equal(b.r.nodes, s2.nodes);
    assert_int_equal(a.r.best, s1.best);
    assert_int_equal(b.r.best, s2.best);
    pthread_mutex_destroy(&a.mu);
    pthread_mutex_destroy(&b.mu);
    cdsh_xq_engine_free(a.eng);
    cdsh_xq_engine_free(b.eng);
    cdsh_xq_pos_free(p1);
    cdsh_xq_pos_free(p2);
}

static void lazy_smp_threads_find_the_mate(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_test_xq_pos("3k5/4a4/4ba3/9/9/9/9/9/R8/1R2K4 w - - 0 1");
    cdsh_xq_engine *eng = engine(3);
    cdsh_xq_limits lim = {.depth = 8};
    cdsh_xq_search_result r = run(eng, pos, &lim);
    assert_int_equal(r.mate, 3);
    assert_int_equal(cdsh_xq_engine_set_threads(eng, 1, NULL), 0);
    r = run(eng, pos, &lim);
    assert_int_equal(r.mate, 3);
    cdsh_xq_engine_free(eng);
    cdsh_xq_pos_free(pos);
}

static void clock_limits_return_a_legal_move(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_test_xq_pos(cdsh_xq_bench_fens[5]);
    cdsh_xq_engine *eng = engine(1);
    cdsh_xq_limits lim = {.time_ms = {200, 200}, .inc_ms = {10, 10}};
    cdsh_xq_search_result r = run(eng, pos, &lim);
    assert_int_equal(cdsh_xq_move_check(pos, r.best, NULL), 0);
    assert_true(r.depth >= 1);
    cdsh_xq_limits mt = {.movetime_ms = 20};
    r = run(eng, pos, &mt);
    assert_int_equal(cdsh_xq_move_check(pos, r.best, NULL), 0);
    cdsh_xq_engine_free(eng);
    cdsh_xq_pos_free(pos);
}


/* A clock that advances one millisecond each time it is read. */
static int64_t counting_clock(void *user)
{
    return atomic_fetch_add((_Atomic int64_t *)user, 1);
}

/* movetime is kept at any thread count because every thread reads the
 * clock every CDSH_XQ_TIME_POLL_NODES of its nodes (before, only the main
 * thread did, every 1024 of its own nodes: with more threads than cores a
 * starved main thread overshot, 523 ms for movetime 300 with 64 threads).
 * With a clock that ticks per read, the nodes searched are bounded by
 * ticks x poll interval whatever the number of threads. */
static void time_limit_is_polled_by_every_thread(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_test_xq_pos(cdsh_xq_bench_fens[5]);
    const int threads[] = {1, 4, 16};
    for (int k = 0; k < 3; k++) {
        cdsh_xq_engine *eng = engine(threads[k]);
        _Atomic int64_t ticks = 1000;
        cdsh_xq_engine_set_clock(eng, counting_clock, &ticks);
        cdsh_xq_limits lim = {.movetime_ms = 200, .overhead_ms = 20}; /* budget 180 ticks */
        cdsh_xq_search_result r = run(eng, pos, &lim);
        const uint64_t bound = (uint64_t)(180 + threads[k] + 1) * CDSH_XQ_TIME_POLL_NODES + 3000;
        print_message("threads %d: %llu nodes, %lld ticks, depth %d (bound %llu nodes)\n",
                      threads[k], (unsigned long long)r.nodes, (long long)r.time_ms, r.depth,
                      (unsigned long long)bound);
        assert_int_equal(cdsh_xq_move_check(pos, r.best, NULL), 0);
        assert_true(r.depth >= 1);
        assert_true(r.time_ms >= 180);
        assert_true(r.nodes > 180 * CDSH_XQ_TIME_POLL_NODES / 4);
        assert_true(r.nodes <= bound);
        cdsh_xq_engine_free(eng);
    }
    cdsh_xq_pos_free(pos);
}

/* Issue 26 item 7: an engine allocates its hash table and thread records
 * on the first search, at the size set last. */
static void tables_are_allocated_by_the_first_search(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_test_xq_pos(CDSH_XQ_START_FEN);
    cdsh_xq_engine *eng = NULL;
    cdsh_xq_engine_opts o = {.threads = 2}; /* the default 16 MB of hash */
    assert_int_equal(cdsh_xq_engine_new(&o, &eng, NULL), 0);
    assert_int_equal(cdsh_xq_engine_table_bytes(eng), 0);
    cdsh_xq_engine_clear(eng); /* nothing to clear yet */
    cdsh_xq_limits lim = {.depth = 3};
    cdsh_xq_search_result r = run(eng, pos, &lim);
    assert_true(r.best);
    const size_t full = cdsh_xq_engine_table_bytes(eng);
    assert_true(full >= 16u << 20);
    assert_int_equal(cdsh_xq_engine_set_hash(eng, 2, NULL), 0);
    assert_true(cdsh_xq_engine_table_bytes(eng) < full - (15u << 20)); /* the 16 MB are gone */
    r = run(eng, pos, &lim);
    const size_t two = cdsh_xq_engine_table_bytes(eng);
    assert_true(two >= 2u << 20 && two < 3u << 20);
    assert_int_equal(cdsh_xq_engine_set_threads(eng, 1, NULL), 0);
    assert_int_equal(cdsh_xq_engine_table_bytes(eng), 2u << 20);
    cdsh_xq_engine_free(eng);
    cdsh_xq_pos_free(pos);
}

static void flip_fen(const char *fen, char *out, int mirror)
{
    /* colour flip: reverse the ranks, swap case, swap side; or mirror files */
    char board[128], side[8];
    sscanf(fen, "%127s %7s", board, side);
    char ranks[10][16];
    int n = 0;
    for (char *tok = strtok(board, "/"); tok && n < 10; tok = strtok(NULL, "/"))
        snprintf(ranks[n++], sizeof ranks[0], "%s", tok);
    out[0] = '\0';
    for (int i = 0; i < 10; i++) {
        char r[16];
        const char *src = mirror ? ranks[i] : ranks[9 - i];
        size_t len = strlen(src);
        for (size_t k = 0; k < len; k++) {
            char ch = mirror ? src[len - 1 - k] : src[k];
            if (!mirror && ch >= 'a' && ch <= 'z')
                ch = (char)(ch - 32);
            else if (!mirror && ch >= 'A' && ch <= 'Z')
                ch = (char)(ch + 32);
            r[k] = ch;
        }
        r[len] = '\0';
        strcat(out, r);
        if (i < 9)
            strcat(out, "/");
    }
    strcat(out, mirror ? (side[0] == 'b' ? " b" : " w") : (side[0] == 'b' ? " w" : " b"));
}

static void evaluation_is_colour_and_mirror_symmetric(void **state)
{
    (void)state;
    for (int i = 0; i < cdsh_xq_bench_count; i++) {
        char flipped[160], mirrored[160];
        flip_fen(cdsh_xq_bench_fens[i], flipped, 0);
        flip_fen(cdsh_xq_bench_fens[i], mirrored, 1);
        cdsh_xq_pos *a = cdsh_test_xq_pos(cdsh_xq_bench_fens[i]), *b = cdsh_test_xq_pos(flipped),
                    *c = cdsh_test_xq_pos(mirrored);
        const int ea = cdsh_xq_eval(a, NULL);
        assert_int_equal(ea, cdsh_xq_eval(b, NULL));
        assert_int_equal(ea, cdsh_xq_eval(c, NULL));
        cdsh_xq_pos_free(a);
        cdsh_xq_pos_free(b);
        cdsh_xq_pos_free(c);
    }
}

static void evaluation_sees_material(void **state)
{
    (void)state;
    /* Red is a chariot up: clearly better for Red, clearly worse for Black */
    cdsh_xq_pos *up =
        cdsh_test_xq_pos("rnbakabn1/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w");
    cdsh_xq_pos *down =
        cdsh_test_xq_pos("rnbakabn1/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR b");
    assert_true(cdsh_xq_eval(up, NULL) > 400);
    assert_true(cdsh_xq_eval(down, NULL) < -400);
    cdsh_xq_eval_terms t;
    cdsh_xq_eval_explain(up, NULL, &t);
    assert_int_equal(t.total, t.material_psq + t.mobility + t.king_safety + t.soldiers);
    assert_true(t.phase > 0 && t.phase <= t.phase_max);
    cdsh_xq_pos_free(up);
    cdsh_xq_pos_free(down);
}

static void transposition_table_stores_and_finds(void **state)
{
    (void)state;
    cdsh_xq_tt *tt = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_xq_tt_new(0, &tt, &err), CDSH_EINVAL);
    assert_int_equal(cdsh_xq_tt_new(1, &tt, &err), 0);
    cdsh_xq_tt_hit h;
    assert_false(cdsh_xq_tt_probe(tt, 0x1234567890ABCDEFull, &h));
    cdsh_xq_tt_store(tt, 0x1234567890ABCDEFull, 0x5566, -29990, 42, 7, CDSH_XQ_BOUND_LOWER);
    assert_true(cdsh_xq_tt_probe(tt, 0x1234567890ABCDEFull, &h));
    assert_int_equal(h.move, 0x5566);
    assert_int_equal(h.score, -29990);
    assert_int_equal(h.eval, 42);
    assert_int_equal(h.depth, 7);
    assert_int_equal(h.bound, CDSH_XQ_BOUND_LOWER);
    assert_true(cdsh_xq_tt_hashfull(tt) >= 0);
    assert_int_equal(cdsh_xq_tt_resize(tt, 2, &err), 0);
    assert_int_equal(cdsh_xq_tt_size_mb(tt), 2);
    assert_false(cdsh_xq_tt_probe(tt, 0x1234567890ABCDEFull, &h));
    cdsh_xq_tt_store(tt, 99, 1, 2, 3, 4, CDSH_XQ_BOUND_EXACT);
    cdsh_xq_tt_clear(tt);
    assert_false(cdsh_xq_tt_probe(tt, 99, &h));
    cdsh_xq_tt_free(tt);
}

static void bench_positions_and_openings_are_legal(void **state)
{
    (void)state;
    for (int i = 0; i < cdsh_xq_bench_count; i++) {
        cdsh_xq_pos *pos = cdsh_test_xq_pos(cdsh_xq_bench_fens[i]);
        assert_true(cdsh_xq_has_legal_move(pos));
        cdsh_xq_pos_free(pos);
    }
    assert_true(cdsh_xq_openings_count >= 50);
    for (int i = 0; i < cdsh_xq_openings_count; i++) {
        cdsh_xq_pos *pos = cdsh_test_xq_pos(CDSH_XQ_START_FEN);
        char buf[128];
        snprintf(buf, sizeof buf, "%s", cdsh_xq_openings[i]);
        for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save))
            cdsh_test_xq_play(pos, t);
        /* each line is distinct */
        for (int j = 0; j < i; j++)
            assert_string_not_equal(cdsh_xq_openings[i], cdsh_xq_openings[j]);
        cdsh_xq_pos_free(pos);
    }
}

static void mate_moves_follow_the_score(void **state)
{
    (void)state;
    assert_int_equal(cdsh_xq_score_mate(CDSH_XQ_MATE - 1), 1);
    assert_int_equal(cdsh_xq_score_mate(CDSH_XQ_MATE - 5), 3);
    assert_int_equal(cdsh_xq_score_mate(-(CDSH_XQ_MATE - 2)), -1);
    assert_int_equal(cdsh_xq_score_mate(-(CDSH_XQ_MATE - 4)), -2);
    assert_int_equal(cdsh_xq_score_mate(350), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(finds_mate_in_one),
        cmocka_unit_test(finds_mate_in_two),
        cmocka_unit_test(finds_mate_in_three),
        cmocka_unit_test(mated_side_reports_no_move),
        cmocka_unit_test(stalemating_the_opponent_scores_as_a_win),
        cmocka_unit_test(perpetual_check_scores_as_a_loss_for_the_checker),
        cmocka_unit_test(repetition_without_checks_scores_as_a_draw),
        cmocka_unit_test(fixed_depth_node_count_is_reproducible),
        cmocka_unit_test(multipv_lines_are_distinct_and_ordered),
        cmocka_unit_test(bad_limits_are_refused),
        cmocka_unit_test(node_limit_is_honoured),
        cmocka_unit_test(stop_from_another_thread_ends_an_infinite_search),
        cmocka_unit_test(an_idle_infinite_search_sleeps_until_stopped),
        cmocka_unit_test(cancel_token_ends_a_search),
        cmocka_unit_test(two_engines_search_independently),
        cmocka_unit_test(lazy_smp_threads_find_the_mate),
        cmocka_unit_test(clock_limits_return_a_legal_move),
        cmocka_unit_test(time_limit_is_polled_by_every_thread),
        cmocka_unit_test(tables_are_allocated_by_the_first_search),
        cmocka_unit_test(evaluation_is_colour_and_mirror_symmetric),
        cmocka_unit_test(evaluation_sees_material),
        cmocka_unit_test(transposition_table_stores_and_finds),
        cmocka_unit_test(bench_positions_and_openings_are_legal),
        cmocka_unit_test(mate_moves_follow_the_score),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
