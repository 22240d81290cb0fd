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


/* ---- hostile input (issue 26 item 6) ---- */

/* A move list of 14 002 plies on one 70 KB line: every move is played (the
 * old reader cut commands at 4 096 words and lines at 64 KiB). */
static void uci_long_position_is_read_whole(void **state)
{
    (void)state;
    const char *cycle[] = {"h0g2", "h9g7", "g2h0", "g7h9"};
    const int plies = 14002;
    size_t cap = 64 + (size_t)plies * 5 + 64;
    char *in = malloc(cap + 64);
    assert_non_null(in);
    size_t n = (size_t)snprintf(in, cap, "position startpos moves");
    for (int i = 0; i < plies; i++)
        n += (size_t)snprintf(in + n, cap - n, " %s", cycle[i % 4]);
    n += (size_t)snprintf(in + n, cap - n, "\nd\ngo depth 1\n");
    assert_true(n > 65536 && n < cap);
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(in, &out, NULL, "xiangqi", "uci", NULL), 0);
    assert_null(strstr(out, "error"));
    assert_non_null(strstr(out, "Fen: rnbakab1r/9/1c4nc1/p1p1p1p1p/9/9/P1P1P1P1P/1C4NC1/9/"
                                "RNBAKAB1R w - - 14002 7002\n"));
    assert_int_equal(count_lines_starting(out, "bestmove "), 1);
    const char *moves[] = {"h0g2", "h9g7"};
    assert_bestmove_legal(out, CDSH_XQ_START_FEN, moves, 2);
    free(out);
    free(in);
}

/* A line longer than the input's limit is dropped whole and reported once;
 * the session goes on. */
static void uci_overlong_line_is_reported_and_dropped(void **state)
{
    (void)state;
    const size_t big = (size_t)CDSH_XQ_PROTOCOL_LINE_MAX + 100;
    char *in = malloc(big + 64);
    assert_non_null(in);
    memcpy(in, "position startpos moves", 23);
    for (size_t i = 23; i < big; i += 5)
        memcpy(in + i, " h0g2", 5);
    size_t n = big - big % 5 + 3;
    n = 23 + (big - 23) / 5 * 5;
    snprintf(in + n, 64, "\nisready\n");
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(in, &out, NULL, "xiangqi", "uci", NULL), 0);
    char want[128];
    snprintf(want, sizeof want, "info string error: line longer than %d bytes ignored\nreadyok\n",
             CDSH_XQ_PROTOCOL_LINE_MAX);
    assert_string_equal(out, want);
    free(out);
    free(in);
}

/* End of input stops a search without a bound (plain go, go infinite,
 * ponder) and ends the process with a legal move written. */
static void uci_end_of_input_ends_an_unbounded_search(void **state)
{
    (void)state;
    const char *inputs[] = {"position startpos\ngo\n", "position startpos\ngo infinite\n",
                            "position startpos moves h2e2\ngo ponder\n"};
    for (int i = 0; i < 3; i++) {
        char *out = NULL;
        assert_int_equal(cdsh_test_run_cdsh(inputs[i], &out, NULL, "xiangqi", "uci", NULL), 0);
        assert_int_equal(count_lines_starting(out, "bestmove "), 1);
        const char *moves[] = {"h2e2"};
        assert_bestmove_legal(out, CDSH_XQ_START_FEN, moves, i == 2);
        free(out);
    }
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh("position startpos\ngo depth infinite\n", &out, NULL,
                                        "xiangqi", "ucci", NULL),
                     0);
    assert_int_equal(count_lines_starting(out, "bestmove "), 1);
    free(out);
}

/* Every malformed go gets its error line and no search at all. */
static void uci_malformed_go_is_refused(void **state)
{
    (void)state;
    static const struct {
        const char *go, *error;
    } cases[] = {
        {"go depth 0", "depth needs a whole number from 1 to 100, got '0'"},
        {"go depth -3", "depth needs a whole number from 1 to 100, got '-3'"},
        {"go depth", "depth needs a whole number from 1 to 100, got nothing"},
        {"go depth 5x", "depth needs a whole number from 1 to 100, got '5x'"},
        {"go movetime 0", "movetime needs a whole number from 1 to "},
        {"go movetime -50", "movetime needs a whole number from 1 to "},
        {"go nodes 0", "nodes needs a whole number from 1 to 9223372036854775807, got '0'"},
        {"go nodes -1", "nodes needs a whole number from 1 to 9223372036854775807, got '-1'"},
        {"go nodes 99999999999999999999", "nodes needs a whole number from 1 to "},
        {"go wtime 0 btime 0", "no time left on the clock of the side to move"},
        {"go wtime -5 btime 100", "wtime needs a whole number from 0 to "},
        {"go mate 99999999999", "mate needs a whole number from 1 to 49, got '99999999999'"},
        {"go mate 0", "mate needs a whole number from 1 to 49, got '0'"},
        {"go searchmoves e0e5", "searchmoves: e0e5 is not a legal move here"},
        {"go searchmoves", "searchmoves names no move"},
        {"go fast", "unknown parameter fast"},
    };
    const size_t n = sizeof cases / sizeof cases[0];
    char in[4096] = "position startpos\n";
    for (size_t i = 0; i < n; i++) {
        strcat(in, cases[i].go);
        strcat(in, "\n");
    }
    strcat(in, "isready\n");
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(in, &out, NULL, "xiangqi", "uci", NULL), 0);
    for (size_t i = 0; i < n; i++) {
        char want[256];
        snprintf(want, sizeof want, "info string error: go refused: %s", cases[i].error);
        if (!strstr(out, want))
            fail_msg("%s: no '%s' in:\n%s", cases[i].go, want, out);
    }
    assert_int_equal(count_lines_starting(out, "info string error: go refused: "), (int)n);
    assert_int_equal(count_lines_starting(out, "info depth"), 0);
    assert_int_equal(count_lines_starting(out, "bestmove"), 0);
    free(out);
    /* UCCI: time 0 for the side to move, in seconds or milliseconds */
    assert_int_equal(cdsh_test_run_cdsh("position startpos\ngo time 0\n"
                                        "setoption usemillisec true\ngo time 0 opptime 500\n",
                                        &out, NULL, "xiangqi", "ucci", NULL),
                     0);
    assert_int_equal(count_lines_starting(out, "info message error: go refused: no time left"), 2);
    assert_int_equal(count_lines_starting(out, "bestmove"), 0);
    free(out);
}

/* After a refused position nothing is searched until a valid one arrives
 * (the old loop fell back to the start position and answered with a move
 * for a position the GUI never sent). */
static void uci_bad_position_blocks_go_until_a_valid_one(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh("position fen rnbakabnr/9/9 w\ngo depth 1\n"
                                        "position startpos moves h2e2 e0e5\ngo depth 1\n"
                                        "position frobnicate\ngo depth 1\n"
                                        "position startpos junk\ngo depth 1\n"
                                        "position startpos moves h2e2\ngo depth 1\n",
                                        &out, NULL, "xiangqi", "uci", NULL),
                     0);
    assert_int_equal(count_lines_starting(out, "info string error: go refused: no valid position ("),
                     4);
    assert_non_null(strstr(out, "go refused: no valid position (bad FEN: "));
    assert_non_null(strstr(out, "go refused: no valid position (illegal move e0e5); send a "
                                "position first\n"));
    assert_non_null(strstr(out, "go refused: no valid position (position needs startpos or fen)"));
    assert_non_null(strstr(out, "go refused: no valid position (position: expected moves, got "
                                "junk)"));
    assert_int_equal(count_lines_starting(out, "bestmove "), 1);
    const char *moves[] = {"h2e2"};
    assert_bestmove_legal(out, CDSH_XQ_START_FEN, moves, 1);
    free(out);
}


/* Peak resident memory (VmHWM, KB) of a live engine process. */
static long live_peak_kb(live *l)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)cdsh_process_pid(l->proc));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            break;
    fclose(f);
    assert_true(kb > 0);
    return kb;
}

/* The engine's tables are made by the first search, at the size set last
 * (issue 26 item 7: a 16 MB table was allocated and cleared at start, and
 * setoption Hash allocated at once): two idle sessions with 1 MB and 256 MB
 * of hash use the same memory; the 256 MB table appears with a search. */
static void protocol_session_allocates_tables_on_first_search(void **state)
{
    (void)state;
    long peak[2];
    const int mb[2] = {1, 256};
    for (int i = 0; i < 2; i++) {
        static live l;
        live_start(&l, "uci");
        char cmd[128];
        snprintf(cmd, sizeof cmd, "uci\nsetoption name Hash value %d\nisready\n", mb[i]);
        live_send(&l, cmd);
        live_expect(&l, "readyok", NULL, 0);
        peak[i] = live_peak_kb(&l);
        if (i == 1) { /* a search makes the table and fills part of it */
            live_send(&l, "position startpos\ngo nodes 200000\n");
            live_expect(&l, "bestmove ", NULL, 0);
            live_send(&l, "isready\n");
            live_expect(&l, "readyok", NULL, 0);
            const long after = live_peak_kb(&l);
            print_message("peak RSS: idle 1 MB hash %ld KB, idle 256 MB hash %ld KB, after a "
                          "search %ld KB\n",
                          peak[0], peak[1], after);
            assert_true(after > peak[1] + 1024);
        }
        live_send(&l, "quit\n");
        live_finish(&l);
    }
    assert_true(peak[1] < peak[0] + 1024);
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
        cmocka_unit_test(uci_long_position_is_read_whole),
        cmocka_unit_test(uci_overlong_line_is_reported_and_dropped),
        cmocka_unit_test(uci_end_of_input_ends_an_unbounded_search),
        cmocka_unit_test(uci_malformed_go_is_refused),
        cmocka_unit_test(uci_bad_position_blocks_go_until_a_valid_one),
        cmocka_unit_test(protocol_session_allocates_tables_on_first_search),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
