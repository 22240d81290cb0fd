/* test_xq_plugin_play.c — `cdsh xiangqi play` end to end: the CJK board, a
 * move in Chinese notation answered by the engine, a refusal with the legal
 * moves, resume of the saved game, and usage errors. */
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
    assert_non_null(strstr(out, "当前可走的合法着法"));
    free(out);
    free(err);
    /* --resume continues the saved game: red's cannon is still on e2 */
    rc = cdsh_test_run_cdsh("quit\n", &out, &err, "xiangqi", "play", "--resume", NULL);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "2  ・炮・・炮・・・・\n"));
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
        cmocka_unit_test_setup_teardown(bad_options_are_usage_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
