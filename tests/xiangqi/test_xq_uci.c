/* test_xq_uci.c — UCI and UCCI driven through pipes: the built `cdsh
 * xiangqi uci|ucci` (batch, and a live process stopped during go infinite
 * and quit mid-search) and the loop in-process over pipe streams; checks
 * handshakes, info formats, legal best moves, MultiPV, mate scores,
 * banmoves, no-move answers and error replies (no wall-clock asserts). */
#include "support/testkit.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/process.h"
#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/uci.h"

/* ---- helpers ---- */

static int count_lines_starting(const char *out, const char *prefix)
{
    int n = 0;
    size_t len = strlen(prefix);
    for (const char *p = out; p && *p;) {
        if (strncmp(p, prefix, len) == 0)
            n++;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return n;
}

/* Copies the last line starting with prefix into buf; 0 if none. */
static int last_line(const char *out, const char *prefix, char *buf, size_t cap)
{
    int found = 0;
    size_t len = strlen(prefix);
    for (const char *p = out; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (strncmp(p, prefix, len) == 0) {
            snprintf(buf, cap, "%.*s", (int)l, p);
            found = 1;
        }
        p = e ? e + 1 : NULL;
    }
    return found;
}

/* Asserts "bestmove <m> [ponder <p>]" names a legal move of fen+moves. */
static void assert_bestmove_legal(const char *out, const char *fen, const char *const *moves,
                                  int nmoves)
{
    char line[256], best[16] = "";
    assert_true(last_line(out, "bestmove ", line, sizeof line));
    assert_int_equal(sscanf(line, "bestmove %15s", best), 1);
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    assert_int_equal(cdsh_xq_pos_set_fen(pos, fen, NULL), 0);
    for (int i = 0; i < nmoves; i++) {
        cdsh_xq_move_t m;
        assert_int_equal(cdsh_xq_parse_move(pos, moves[i], &m, NULL), 0);
        assert_int_equal(cdsh_xq_play(pos, m, NULL), 0);
    }
    cdsh_xq_move_t m;
    cdsh_error err = {0};
    if (cdsh_xq_parse_move(pos, best, &m, &err) != 0)
        fail_msg("bestmove %s is not legal: %s", best, err.message);
    cdsh_xq_pos_free(pos);
}

/* Checks one UCI info line: depth seldepth multipv score (cp|mate) nodes
 * nps hashfull tbhits time pv, with every pv move well formed. */
static void assert_uci_info_format(const char *line)
{
    int depth, sel, mpv, hashfull, tb, consumed = 0;
    long long score, nodes, nps, t;
    char kind[8];
    int n = sscanf(line,
                   "info depth %d seldepth %d multipv %d score %7s %lld nodes %lld nps %lld "
                   "hashfull %d tbhits %d time %lld pv%n",
                   &depth, &sel, &mpv, kind, &score, &nodes, &nps, &hashfull, &tb, &t, &consumed);
    if (n != 10 || consumed == 0)
        fail_msg("malformed info line: %s", line);
    assert_true(depth >= 1);
    assert_true(mpv >= 1);
    assert_true(strcmp(kind, "cp") == 0 || strcmp(kind, "mate") == 0);
    assert_true(nodes > 0);
    assert_true(hashfull >= 0 && hashfull <= 1000);
    const char *pv = line + consumed;
    int moves = 0;
    char tok[16];
    int used;
    while (sscanf(pv, "%15s%n", tok, &used) == 1) {
        cdsh_xq_move_t m;
        assert_int_equal(cdsh_xq_move_parse_iccs(tok, &m, NULL), 0);
        assert_int_equal(strlen(tok), 4);
        moves++;
        pv += used;
    }
    assert_true(moves >= 1);
}

/* ---- batch runs of the built binary ---- */

static void uci_handshake_lists_options(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh("uci\nisready\nquit\n", &out, NULL, "xiangqi", "uci", NULL),
                     0);
    assert_non_null(strstr(out, "id name cdsh-xiangqi\n"));
    assert_non_null(strstr(out, "id author "));
    assert_non_null(strstr(out, "option name Hash type spin default 16 min 1 max "));
    assert_non_null(strstr(out, "option name Threads type spin default 1 min 1 max "));
    assert_non_null(strstr(out, "option name MultiPV type spin default 1 min 1 max 16\n"));
    char *uciok = strstr(out, "uciok\n"), *ready = strstr(out, "readyok\n");
    assert_non_null(uciok);
    assert_non_null(ready);
    assert_true(ready > uciok);
    free(out);
}

static void uci_go_depth_prints_info_and_a_legal_bestmove(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh("uci\nucinewgame\nposition startpos moves h2e2 h9g7\n"
                                        "go depth 5\n",
                                        &out, NULL, "xiangqi", "uci", NULL),
                     0);
    /* one info line per completed depth, then the best move */
    assert_int_equal(count_lines_starting(out, "info depth "), 5);
    for (const char *p = strstr(out, "info depth "); p; p = strstr(p + 1, "\ninfo depth ")) {
        if (*p == '\n')
            p++;
        char line[2048];
        const char *e = strchr(p, '\n');
        snprintf(line, sizeof line, "%.*s", (int)(e ? e - p : (long)strlen(p)), p);
        assert_uci_info_format(line);
    }
    char last[2048];
    assert_true(last_line(out, "info depth 5 ", last, sizeof last));
    const char *moves[] = {"h2e2", "h9g7"};
    assert_bestmove_legal(out, CDSH_XQ_START_FEN, moves, 2);
    free(out);
}

static void uci_multipv_reports_each_line(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh("uci\nsetoption name MultiPV value 3\n"
                                        "position startpos\ngo depth 3\n",
                                        &out, NULL, "xiangqi", "uci", NULL),
                     0);
    char line[2048];
    assert_true(last_line(out, "info depth 3 seldepth", line, sizeof line));
    assert_non_null(strstr(line, " multipv 3 "));
    assert_int_equal(count_lines_starting(out, "info depth "), 9);
    assert_bestmove_legal(out, CDSH_XQ_START_FEN, NULL, 0);
    free(out);
}

static void uci_reports_mate_scores(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh("position fen 3k5/1R7/R8/9/9/9/9/9/9/4K4 w - - 0 1\n"
                                        "go depth 3\n",
                                        &out, NULL, "xiangqi", "uci", NULL),
                     0);
    char line[2048];
    assert_true(last_line(out, "info depth 3 ", line, sizeof line));
    assert_non_null(strstr(line, " score mate 1 "));
    assert_non_null(strstr(out, "bestmove a7a9"));
    free(out);
}

static void uci_without_legal_moves_answers_none(void **state)
{
    (void)state;
    char *out = NULL;
    /* Black is stalemated (both of its general's squares are covered) */
    assert_int_equal(cdsh_test_run_cdsh("position fen 3k5/1R7/9/9/9/9/9/9/9/4K4 b - - 0 1\n"
                                        "go depth 3\n",
                                        &out, NULL, "xiangqi", "uci", NULL),
                     0);
    assert_non_null(strstr(out, "bestmove (none)\n"));
    free(out);
    assert_int_equal(cdsh_test_run_cdsh("position fen 3k5/1R7/9/9/9/9/9/9/9/4K4 b - - 0 1\n"
                                        "go depth 3\n",
                                        &out, NULL, "xiangqi", "ucci", NULL),
                     0);
    assert_non_null(strstr(out, "nobestmove\n"));
    free(out);
}

static void uci_errors_are_reported_and_survived(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh("position fen rnbakabnr/9/9 w\n"
                                        "position startpos moves e0e5\n"
                                        "frobnicate\n"
                                        "setoption name Hash value 0\n"
                                        "setoption name Bogus value 1\n"
                                        "position startpos moves h2e2\n"
                                        "go depth 2\n",
                                        &out, NULL, "xiangqi", "uci", NULL),
                     0);
    assert_non_null(strstr(out, "info string error: bad FEN: "));
    assert_non_null(strstr(out, "info string error: illegal move e0e5\n"));
    assert_non_null(strstr(out, "info string error: unknown command frobnicate\n"));
    assert_non_null(strstr(out, "info string error: bad hash size 0\n"));
    assert_non_null(strstr(out, "info string error: no such option: Bogus\n"));
    const char *moves[] = {"h2e2"};
    assert_bestmove_legal(out, CDSH_XQ_START_FEN, moves, 1);
    free(out);
}

static void ucci_handshake_banmoves_and_bye(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh("ucci\nsetoption usemillisec true\nsetoption hashsize 8\n"
                                        "isready\nposition startpos\nbanmoves h2e2 b2e2 b0c2 h0g2\n"
                                        "go depth 3\n",
                                        &out, NULL, "xiangqi", "ucci", NULL),
                     0);
    assert_non_null(strstr(out, "id name cdsh-xiangqi\n"));
    assert_non_null(strstr(out, "option usemillisec type check default true\n"));
    assert_non_null(strstr(out, "option hashsize type spin min 1 max "));
    assert_non_null(strstr(out, "ucciok\n"));
    assert_non_null(strstr(out, "readyok\n"));
    char line[2048];
    assert_true(last_line(out, "info depth 3 ", line, sizeof line));
    int d;
    long long score, t, nodes;
    assert_int_equal(
        sscanf(line, "info depth %d score %lld time %lld nodes %lld pv", &d, &score, &t, &nodes),
        4);
    assert_bestmove_legal(out, CDSH_XQ_START_FEN, NULL, 0);
    assert_null(strstr(out, "bestmove h2e2"));
    assert_null(strstr(out, "bestmove b2e2"));
    assert_null(strstr(out, "bestmove b0c2"));
    assert_null(strstr(out, "bestmove h0g2"));
    /* end of input: the session says goodbye last */
    const size_t len = strlen(out);
    assert_true(len >= 4 && strcmp(out + len - 4, "bye\n") == 0);
    free(out);
}

static void ucci_go_time_in_seconds_returns_a_move(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh("ucci\nposition startpos moves h2e2\n"
                                        "go time 1 increment 0 opptime 1 oppincrement 0\nquit\n",
                                        &out, NULL, "xiangqi", "ucci", NULL),
                     0);
    const char *moves[] = {"h2e2"};
    assert_bestmove_legal(out, CDSH_XQ_START_FEN, moves, 1);
    free(out);
}

/* ---- a live process ---- */

typedef struct live {
    cdsh_process *proc;
    int in, out;
    char buf[1 << 16];
    size_t len;
} live;

static void live_start(live *l, const char *dialect)
{
    const char *argv[] = {CDSH_BINARY, "xiangqi", dialect, NULL};
    cdsh_process_opts o = {.stdin_mode = CDSH_PROCESS_PIPE,
                           .stdout_mode = CDSH_PROCESS_PIPE,
                           .stderr_mode = CDSH_PROCESS_NULL};
    cdsh_error err = {0};
    if (cdsh_process_spawn(argv, &o, &l->proc, &err) != 0)
        fail_msg("spawn: %s", err.message);
    l->in = cdsh_process_stdin_fd(l->proc);
    l->out = cdsh_process_stdout_fd(l->proc);
    l->len = 0;
}

static void live_send(live *l, const char *text)
{
    size_t n = strlen(text), off = 0;
    while (off < n) {
        ssize_t w = write(l->in, text + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        assert_true(w > 0);
        off += (size_t)w;
    }
}

/* Reads lines until one starts with prefix (copied to line); fails after
 * 60 s without it. */
static void live_expect(live *l, const char *prefix, char *line, size_t cap)
{
    for (int waited = 0; waited < 60000;) {
        char *nl;
        while ((nl = memchr(l->buf, '\n', l->len)) != NULL) {
            size_t ll = (size_t)(nl - l->buf);
            int match = strncmp(l->buf, prefix, strlen(prefix)) == 0;
            if (match && line)
                snprintf(line, cap, "%.*s", (int)ll, l->buf);
            memmove(l->buf, nl + 1, l->len - ll - 1);
            l->len -= ll + 1;
            if (match)
                return;
        }
        struct pollfd p = {.fd = l->out, .events = POLLIN};
        int r = poll(&p, 1, 100);
        if (r == 0) {
            waited += 100;
            continue;
        }
        assert_true(l->len < sizeof l->buf);
        ssize_t n = read(l->out, l->buf + l->len, sizeof l->buf - l->len);
        if (n <= 0)
            fail_msg("engine closed its output before '%s'", prefix);
        l->len += (size_t)n;
    }
    fail_msg("no line starting with '%s'", prefix);
}

static void live_finish(live *l)
{
    cdsh_process_status st;
    cdsh_error err = {0};
    assert_int_equal(cdsh_process_wait(l->proc, 30000, NULL, &st, &err), 0);
    assert_true(st.exited);
    assert_int_equal(st.exit_code, 0);
    cdsh_process_free(l->proc);
}

static void uci_stop_ends_go_infinite(void **state)
{
    (void)state;
    static live l;
    live_start(&l, "uci");
    live_send(&l, "uci\n");
    live_expect(&l, "uciok", NULL, 0);
    live_send(&l, "position startpos\ngo infinite\n");
    live_expect(&l, "info depth 3 ", NULL, 0);
    /* still thinking: isready is answered during the search */
    live_send(&l, "isready\n");
    live_expect(&l, "readyok", NULL, 0);
    live_send(&l, "stop\n");
    char line[256];
    live_expect(&l, "bestmove ", line, sizeof line);
    assert_bestmove_legal(line, CDSH_XQ_START_FEN, NULL, 0);
    /* the engine takes a new search after the stop */
    live_send(&l, "position startpos moves h2e2\ngo depth 2\n");
    live_expect(&l, "bestmove ", line, sizeof line);
    const char *moves[] = {"h2e2"};
    assert_bestmove_legal(line, CDSH_XQ_START_FEN, moves, 1);
    live_send(&l, "quit\n");
    live_finish(&l);
}

static void ucci_quit_during_search_exits(void **state)
{
    (void)state;
    static live l;
    live_start(&l, "ucci");
    live_send(&l, "ucci\nposition startpos\ngo depth infinite\n");
    live_expect(&l, "info depth 2 ", NULL, 0);
    live_send(&l, "quit\n");
    live_expect(&l, "bestmove ", NULL, 0);
    live_expect(&l, "bye", NULL, 0);
    live_finish(&l);
}

/* ---- in-process over pipe streams ---- */

typedef struct inproc {
    FILE *in, *out;
    int rc;
} inproc;

static void *inproc_main(void *arg)
{
    inproc *p = arg;
    p->rc = cdsh_xq_protocol_run(CDSH_XQ_DIALECT_UCI, p->in, p->out, NULL);
    fclose(p->out);
    return NULL;
}

static void protocol_loop_runs_in_process_over_pipes(void **state)
{
    (void)state;
    int to_eng[2], from_eng[2];
    assert_int_equal(pipe(to_eng), 0);
    assert_int_equal(pipe(from_eng), 0);
    inproc p = {.in = fdopen(to_eng[0], "r"), .out = fdopen(from_eng[1], "w")};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, inproc_main, &p), 0);
    static live l; /* reuse the line reader on the engine's output pipe */
    l.in = to_eng[1];
    l.out = from_eng[0];
    l.len = 0;
    live_send(&l, "uci\n");
    live_expect(&l, "uciok", NULL, 0);
    live_send(&l, "position startpos\ngo infinite\n");
    live_expect(&l, "info depth 2 ", NULL, 0);
    live_send(&l, "stop\n");
    char line[256];
    live_expect(&l, "bestmove ", line, sizeof line);
    assert_bestmove_legal(line, CDSH_XQ_START_FEN, NULL, 0);
    live_send(&l, "position startpos\ngo nodes 3000\n");
    live_expect(&l, "bestmove ", line, sizeof line);
    assert_bestmove_legal(line, CDSH_XQ_START_FEN, NULL, 0);
    close(to_eng[1]); /* end of input ends the loop */
    pthread_join(t, NULL);
    assert_int_equal(p.rc, 0);
    fclose(p.in);
    close(from_eng[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(uci_handshake_lists_options),
        cmocka_unit_test(uci_go_depth_prints_info_and_a_legal_bestmove),
        cmocka_unit_test(uci_multipv_reports_each_line),
        cmocka_unit_test(uci_reports_mate_scores),
        cmocka_unit_test(uci_without_legal_moves_answers_none),
        cmocka_unit_test(uci_errors_are_reported_and_survived),
        cmocka_unit_test(ucci_handshake_banmoves_and_bye),
        cmocka_unit_test(ucci_go_time_in_seconds_returns_a_move),
        cmocka_unit_test(uci_stop_ends_go_infinite),
        cmocka_unit_test(ucci_quit_during_search_exits),
        cmocka_unit_test(protocol_loop_runs_in_process_over_pipes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
