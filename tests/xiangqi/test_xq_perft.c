/* test_xq_perft.c — every count of tests/data/xiangqi/xiangqi-perft.epd up to
 * depth CDSH_XQ_PERFT_DEPTH (default 4, the unit tier; the slow tier runs the
 * same executable with 5; AddressSanitizer caps it at 4, where depth 5 of all
 * 16 positions would take minutes), the same positions colour-flipped (Black
 * to move) one ply less deep, divide, and the `cdsh xiangqi perft` command
 * line. */
#include "support/testkit.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/xiangqi/engine/perft.h"
#include "plugins/xiangqi/engine/position.h"

#if defined(__SANITIZE_ADDRESS__)
#define DEPTH_CAP 4
#else
#define DEPTH_CAP 5
#endif

/* The deepest EPD count checked: CDSH_XQ_PERFT_DEPTH (1..5, capped). */
static int epd_max_depth(void)
{
    const char *env = getenv("CDSH_XQ_PERFT_DEPTH");
    int d = env && *env ? atoi(env) : 4;
    if (d < 1 || d > 5)
        fail_msg("CDSH_XQ_PERFT_DEPTH=%s: want 1..5", env);
    return d < DEPTH_CAP ? d : DEPTH_CAP;
}

typedef struct epd_line {
    char fen[256];
    int ndepth;
    int depth[8];
    unsigned long long count[8];
} epd_line;

static int load_epd(epd_line *lines, int max)
{
    char *text = cdsh_test_read_file(CDSH_TEST_DATA("xiangqi/xiangqi-perft.epd"), NULL);
    assert_non_null(text);
    int n = 0;
    for (char *line = strtok(text, "\n"); line && n < max; line = strtok(NULL, "\n")) {
        if (line[0] == '#' || line[0] == '\0')
            continue;
        char *semi = strchr(line, ';');
        assert_non_null(semi);
        epd_line *e = &lines[n++];
        memset(e, 0, sizeof *e);
        snprintf(e->fen, sizeof e->fen, "%.*s", (int)(semi - line), line);
        for (char *p = semi; p && e->ndepth < 8; p = strchr(p + 1, ';')) {
            int d;
            unsigned long long c;
            if (sscanf(p, "; D%d %llu", &d, &c) == 2) {
                e->depth[e->ndepth] = d;
                e->count[e->ndepth++] = c;
            }
        }
    }
    free(text);
    return n;
}

/* Swap colours: reverse the rank order, swap case, other side to move. */
static void flip_fen(const char *fen, char *out, size_t cap)
{
    char board[128], side[8];
    assert_int_equal(sscanf(fen, "%127s %7s", board, side), 2);
    char *ranks[10];
    int n = 0;
    for (char *r = strtok(board, "/"); r && n < 10; r = strtok(NULL, "/"))
        ranks[n++] = r;
    assert_int_equal(n, 10);
    size_t len = 0;
    for (int i = 9; i >= 0; i--) {
        for (char *c = ranks[i]; *c; c++)
            out[len++] = isupper((unsigned char)*c) ? (char)tolower((unsigned char)*c)
                                                    : (char)toupper((unsigned char)*c);
        if (i)
            out[len++] = '/';
    }
    snprintf(out + len, cap - len, " %c - - 0 1", side[0] == 'b' ? 'w' : 'b');
}

static void epd_counts_match_up_to_the_depth(void **state)
{
    (void)state;
    int max_depth = epd_max_depth();
    printf("EPD counts to depth %d\n", max_depth);
    epd_line lines[32];
    int n = load_epd(lines, 32);
    assert_int_equal(n, 16);
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    int checked = 0;
    for (int i = 0; i < n; i++) {
        cdsh_error err = {0};
        if (cdsh_xq_pos_set_fen(pos, lines[i].fen, &err) != 0)
            fail_msg("%s: %s", lines[i].fen, err.message);
        uint64_t h = cdsh_xq_hash(pos);
        for (int j = 0; j < lines[i].ndepth; j++) {
            if (lines[i].depth[j] > max_depth)
                continue;
            uint64_t got = cdsh_xq_perft(pos, lines[i].depth[j]);
            if (got != lines[i].count[j])
                fail_msg("%s depth %d: %llu, want %llu", lines[i].fen, lines[i].depth[j],
                         (unsigned long long)got, lines[i].count[j]);
            checked++;
        }
        assert_int_equal(cdsh_xq_hash(pos), h);
        assert_int_equal(cdsh_xq_ply(pos), 0);
    }
    assert_true(checked >= 16 * (max_depth < 4 ? max_depth : 4) - 6);
    cdsh_xq_pos_free(pos);
}

static void flipped_positions_give_the_same_counts(void **state)
{
    (void)state;
    int flip_depth = epd_max_depth() - 1;
    epd_line lines[32];
    int n = load_epd(lines, 32);
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    for (int i = 0; i < n; i++) {
        char flipped[256];
        flip_fen(lines[i].fen, flipped, sizeof flipped);
        cdsh_error err = {0};
        if (cdsh_xq_pos_set_fen(pos, flipped, &err) != 0)
            fail_msg("%s: %s", flipped, err.message);
        assert_int_equal(cdsh_xq_side_to_move(pos), CDSH_XQ_BLACK);
        for (int j = 0; j < lines[i].ndepth; j++) {
            if (lines[i].depth[j] > flip_depth)
                continue;
            uint64_t got = cdsh_xq_perft(pos, lines[i].depth[j]);
            if (got != lines[i].count[j])
                fail_msg("%s depth %d: %llu, want %llu", flipped, lines[i].depth[j],
                         (unsigned long long)got, lines[i].count[j]);
        }
    }
    cdsh_xq_pos_free(pos);
}

typedef struct divide_acc {
    uint64_t sum;
    int calls, total;
} divide_acc;

static int acc_fn(cdsh_xq_move_t m, uint64_t nodes, int index, int total, void *user)
{
    divide_acc *a = user;
    assert_int_not_equal(m, CDSH_XQ_MOVE_NONE);
    assert_int_equal(index, a->calls);
    a->sum += nodes;
    a->calls++;
    a->total = total;
    return 0;
}

static void divide_sums_to_perft(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    divide_acc a = {0};
    assert_int_equal(cdsh_xq_perft_divide(pos, 3, acc_fn, &a), 79666);
    assert_int_equal(a.sum, 79666);
    assert_int_equal(a.calls, 44);
    assert_int_equal(a.total, 44);
    assert_int_equal(cdsh_xq_perft(pos, 0), 1);
    assert_int_equal(cdsh_xq_perft_divide(pos, 1, NULL, NULL), 44);
    cdsh_xq_pos_free(pos);
}

static void cli_perft_prints_nodes(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "xiangqi", "perft", "--depth", "3", NULL),
                     0);
    assert_non_null(strstr(out, "Nodes searched: 79666\n"));
    assert_non_null(strstr(out, "M nodes/s"));
    free(out);
    out = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, NULL, "xiangqi", "perft", "--depth", "2", "--divide", NULL),
        0);
    assert_non_null(strstr(out, "h2e2: 45\n")); /* Fairy-Stockfish divide agrees */
    assert_non_null(strstr(out, "Nodes searched: 1920\n"));
    free(out);
}

static void cli_perft_json_with_fen_and_divide(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, NULL, "xiangqi", "perft", "--depth", "2", "--json",
                           "--divide", "--fen",
                           "r1ba1a3/4kn3/2n1b4/pNp1p1p1p/4c4/6P2/P1P2R2P/1CcC5/9/2BAKAB2 r", NULL),
        0);
    json_error_t jerr;
    json_t *o = json_loads(out, 0, &jerr);
    assert_non_null(o);
    assert_int_equal(json_integer_value(json_object_get(o, "nodes")), 1128);
    assert_int_equal(json_integer_value(json_object_get(o, "depth")), 2);
    assert_string_equal(json_string_value(json_object_get(o, "fen")),
                        "r1ba1a3/4kn3/2n1b4/pNp1p1p1p/4c4/6P2/P1P2R2P/1CcC5/9/2BAKAB2 w - - 0 1");
    assert_true(json_is_number(json_object_get(o, "seconds")));
    assert_int_equal(json_array_size(json_object_get(o, "divide")), 38);
    json_decref(o);
    free(out);
}

static void cli_perft_rejects_bad_input(void **state)
{
    (void)state;
    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "xiangqi", "perft", "--depth", "2",
                                        "--fen", "9/9 w", NULL),
                     2);
    assert_non_null(strstr(err, "bad FEN (FEN_RANK_COUNT)"));
    free(err);
    err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "xiangqi", "perft", NULL), 2);
    assert_non_null(strstr(err, "--depth N is required"));
    free(err);
    err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "xiangqi", "perft", "--depth", "0", NULL),
                     2);
    assert_non_null(strstr(err, "--depth wants a number from 1 to 15, got '0'"));
    free(err);
    err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "xiangqi", "frobnicate", NULL), 2);
    assert_non_null(strstr(err, "unknown subcommand 'frobnicate'"));
    free(err);
}

static void cli_help_describes_options(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "xiangqi", "--help", NULL), 0);
    assert_non_null(strstr(out, "Usage: cdsh xiangqi <subcommand>"));
    assert_non_null(strstr(out, "  perft "));
    free(out);
    out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "xiangqi", "perft", "--help", NULL), 0);
    assert_non_null(strstr(out, "Usage: cdsh xiangqi perft --depth N"));
    assert_non_null(strstr(out, "--divide"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(epd_counts_match_up_to_the_depth),
        cmocka_unit_test(flipped_positions_give_the_same_counts),
        cmocka_unit_test(divide_sums_to_perft),
        cmocka_unit_test(cli_perft_prints_nodes),
        cmocka_unit_test(cli_perft_json_with_fen_and_divide),
        cmocka_unit_test(cli_perft_rejects_bad_input),
        cmocka_unit_test(cli_help_describes_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
