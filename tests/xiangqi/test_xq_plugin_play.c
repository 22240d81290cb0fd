/* test_xq_plugin_play.c — `cdsh xiangqi play` end to end: the CJK board, a
 * move in Chinese notation answered by the engine, a refusal in one line
 * pointing at `moves`, the legal moves in three notations, help on the
 * notations, colours (--color) and none in plain output, Ctrl-L redrawing,
 * the game kept open after it ends (review, export, new; also --resume),
 * resume of the saved game, and usage errors. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

static char *home;

static int setup(void **state)
{
    (void)state;
    home = cdsh_test_home_new();
    char *out = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, NULL, "config", "set", "xiangqi.engine.depth", "1", NULL),
        0);
    free(out);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cdsh_test_home_free(home);
    return 0;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void plays_a_move_and_draws_the_board(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    int rc = cdsh_test_run_cdsh("炮二平五\nh2h8\nquit\n", &out, &err, "xiangqi", "play", NULL);
    assert_int_equal(rc, 0);
    /* the start position, then the position after both replies */
    assert_non_null(strstr(out, "9  車馬象士将士象馬車\n"));
    assert_non_null(strstr(out, "0  车马相仕帅仕相马车\n"));
    assert_non_null(strstr(out, "楚河"));
    assert_non_null(strstr(out, "2  ・炮・・炮・・・・\n")); /* the cannon went to e2 */
    assert_int_equal(count(out, "ａｂｃｄｅｆｇｈｉ"), 2);
    assert_non_null(strstr(out, "BAD_NOTATION") ? strstr(out, "BAD_NOTATION")
                                                : strstr(out, "ILLEGAL_MOVE"));
    /* the refusal is one line that points at `moves`, not 44 moves */
    const char *refusal = strstr(out, "错误 ILLEGAL_MOVE");
    assert_non_null(refusal);
    const char *hint = strstr(refusal, "type `moves` to list them");
    assert_non_null(hint);
    assert_null(memchr(refusal, '\n', (size_t)(hint - refusal)));
    assert_null(strstr(out, "当前可走的合法着法"));
    assert_null(strstr(out, "\033[")); /* not a terminal: plain text */
    free(out);
    free(err);
    /* --resume continues the saved game: red's cannon is still on e2 */
    rc = cdsh_test_run_cdsh("quit\n", &out, &err, "xiangqi", "play", "--resume", NULL);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "2  ・炮・・炮・・・・\n"));
    free(out);
    free(err);
}

static void moves_lists_the_legal_moves_in_three_notations(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh("moves\nquit\n", &out, &err, "xiangqi", "play", NULL), 0);
    assert_non_null(strstr(out, "legal moves (44)"));
    assert_non_null(strstr(out, "h2e2 炮二平五 C2.5"));
    assert_non_null(strstr(out, "b0c2 马八进七 H8+7"));
    free(out);
    free(err);
}

static void help_covers_iccs_chinese_and_wxf(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh("help\nquit\n", &out, &err, "xiangqi", "play", NULL), 0);
    const char *want[] = {"ICCS", "h2e2", "Chinese", "炮二平五", "前车进一", "WXF", "C2.5",
                          "H2+3", "R++1", "moves", "new", "Ctrl-L"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(out, want[i]))
            fail_msg("help lacks '%s':\n%s", want[i], out);
    free(out);
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "xiangqi", "play", "--help", NULL), 0);
    assert_non_null(strstr(out, "WXF"));
    assert_non_null(strstr(out, "--plain"));
    free(out);
    free(err);
}

static void colours_for_the_two_sides(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh("quit\n", &out, &err, "xiangqi", "play", "--color", NULL), 0);
    assert_non_null(strstr(out, "\033[1;31m车")); /* Red's chariot in red */
    assert_non_null(strstr(out, "\033[1;36m車")); /* Black's in cyan */
    assert_null(strstr(out, "\033[1;31m車"));
    assert_null(strstr(out, "\033[2J")); /* not a terminal: no screen control */
    free(out);
    free(err);
    /* the last of --color and --plain wins */
    assert_int_equal(
        cdsh_test_run_cdsh("quit\n", &out, &err, "xiangqi", "play", "--color", "--plain", NULL), 0);
    assert_null(strstr(out, "\033["));
    free(out);
    free(err);
}

static void ctrl_l_redraws_the_board(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh("\f\nh2e2\f\nquit\n", &out, &err, "xiangqi", "play", NULL),
                     0);
    /* start, Ctrl-L, Ctrl-L on the move line, the position after the move */
    assert_int_equal(count(out, "ａｂｃｄｅｆｇｈｉ"), 4);
    assert_non_null(strstr(out, "2  ・炮・・炮・・・・\n")); /* the move after the form feed */
    assert_null(strstr(out, "错误"));
    free(out);
    free(err);
}

static void the_game_stays_open_after_it_ends(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh("h2e2\nresign\nh2e2\nmoves\nexport\nreview\nquit\n", &out,
                                        &err, "xiangqi", "play", NULL),
                     0);
    assert_non_null(strstr(out, "对局结束：红方认输，黑方胜"));
    assert_non_null(strstr(out, "the game is over: review, export, new or quit"));
    assert_non_null(strstr(out, "the game is over: no legal moves"));
    assert_non_null(strstr(out, "FEN: "));     /* export after the end */
    assert_non_null(strstr(out, "炮二平五")); /* review lists the moves */
    free(out);
    free(err);
    /* --resume of the finished game opens it for review, then a new game */
    assert_int_equal(cdsh_test_run_cdsh("export\nnew\nh2e2\nquit\n", &out, &err, "xiangqi", "play",
                                        "--resume", NULL),
                     0);
    assert_non_null(strstr(out, "对局结束：红方认输"));
    assert_non_null(strstr(out, "FEN: "));
    const char *fresh = strstr(out, "对局进行中");
    assert_non_null(fresh); /* the new game */
    assert_non_null(strstr(fresh, "2  ・炮・・炮・・・・\n"));
    free(out);
    free(err);
}

static void bad_options_are_usage_errors(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "xiangqi", "play", "--side", "x", NULL),
                     2);
    assert_non_null(strstr(err, "Usage: cdsh xiangqi play"));
    free(out);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(plays_a_move_and_draws_the_board, setup, teardown),
        cmocka_unit_test_setup_teardown(moves_lists_the_legal_moves_in_three_notations, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(help_covers_iccs_chinese_and_wxf, setup, teardown),
        cmocka_unit_test_setup_teardown(colours_for_the_two_sides, setup, teardown),
        cmocka_unit_test_setup_teardown(ctrl_l_redraws_the_board, setup, teardown),
        cmocka_unit_test_setup_teardown(the_game_stays_open_after_it_ends, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_options_are_usage_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
