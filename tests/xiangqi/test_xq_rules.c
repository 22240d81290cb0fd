/* test_xq_rules.c — xiangqi game status: checkmate and stalemate lose for the
 * side to move, perpetual check loses, plain repetition draws, the 120-ply
 * (configurable) no-capture rule, bare material, and the stable names. */
#include "support/testkit.h"

#include "support/xq_position.h"

#include <stdlib.h>
#include <string.h>

#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/position.h"
#include "plugins/xiangqi/engine/rules.h"

static void assert_status(cdsh_xq_pos *pos, const cdsh_xq_rules *rules, cdsh_xq_outcome o,
                          cdsh_xq_reason r)
{
    cdsh_xq_result res = cdsh_xq_status(pos, rules);
    if (res.outcome != o || res.reason != r)
        fail_msg("want %s/%s, got %s/%s", cdsh_xq_outcome_name(o), cdsh_xq_reason_name(r),
                 cdsh_xq_outcome_name(res.outcome), cdsh_xq_reason_name(res.reason));
}

static void start_position_is_ongoing(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    assert_status(pos, NULL, CDSH_XQ_ONGOING, CDSH_XQ_REASON_NONE);
    cdsh_xq_pos_free(pos);
}

static void checkmate_loses_for_side_to_move(void **state)
{
    (void)state;
    /* Black chariots on a0 (checking) and a1 */
    cdsh_xq_pos *pos = cdsh_test_xq_pos("3k5/9/9/9/9/9/9/9/r8/r3K4 w - - 0 1");
    assert_true(cdsh_xq_in_check(pos));
    assert_int_equal(cdsh_xq_count_legal(pos), 0);
    assert_status(pos, NULL, CDSH_XQ_BLACK_WINS, CDSH_XQ_REASON_CHECKMATE);
    cdsh_xq_pos_free(pos);
    /* mirrored for Black, reached by a move: Red chariot a8 mates on rank 9 */
    pos = cdsh_test_xq_pos("5k3/R8/9/9/9/9/9/9/9/3K5 w - - 0 1");
    assert_status(pos, NULL, CDSH_XQ_ONGOING, CDSH_XQ_REASON_NONE);
    cdsh_xq_pos_free(pos);
    pos = cdsh_test_xq_pos("4k4/R7R/9/9/9/9/9/9/9/3K5 w - - 0 1");
    cdsh_test_xq_play(pos, "a8a9");
    assert_status(pos, NULL, CDSH_XQ_RED_WINS, CDSH_XQ_REASON_CHECKMATE);
    cdsh_xq_pos_free(pos);
}

static void stalemate_loses_for_side_to_move(void **state)
{
    (void)state;
    /* Red general e0 not in check; d0 faces the Black general, f0 and e1 are covered */
    cdsh_xq_pos *pos = cdsh_test_xq_pos("3k1r3/9/9/9/9/9/9/9/r8/4K4 w - - 0 1");
    assert_false(cdsh_xq_in_check(pos));
    assert_status(pos, NULL, CDSH_XQ_BLACK_WINS, CDSH_XQ_REASON_STALEMATE);
    cdsh_xq_pos_free(pos);
}

static void perpetual_check_loses(void **state)
{
    (void)state;
    /* Red chariot checks on ranks 8 and 9 in turn; the Black general steps back and forth */
    cdsh_xq_pos *pos = cdsh_test_xq_pos("R8/4k4/9/9/9/9/9/9/9/3K5 w - - 0 1");
    static const char *cycle[4] = {"a9a8", "e8e9", "a8a9", "e9e8"};
    for (int i = 0; i < 4; i++) {
        cdsh_test_xq_play(pos, cycle[i]);
        assert_status(pos, NULL, CDSH_XQ_ONGOING, CDSH_XQ_REASON_NONE);
    }
    /* second occurrence: enough for search, not for the game */
    assert_int_equal(cdsh_xq_repetition(pos, 1), CDSH_XQ_REP_LOSS);
    assert_int_equal(cdsh_xq_repetition(pos, 2), CDSH_XQ_REP_NONE);
    for (int i = 0; i < 3; i++) {
        cdsh_test_xq_play(pos, cycle[i]);
        assert_status(pos, NULL, CDSH_XQ_ONGOING, CDSH_XQ_REASON_NONE);
    }
    /* Black's reply completes the third occurrence; Red, to move, checked throughout */
    cdsh_test_xq_play(pos, cycle[3]);
    assert_status(pos, NULL, CDSH_XQ_BLACK_WINS, CDSH_XQ_REASON_PERPETUAL_CHECK);
    /* seen from the checked side one ply earlier: Black to move, Red checked throughout */
    cdsh_xq_unmake_move(pos);
    assert_int_equal(cdsh_xq_repetition(pos, 1), CDSH_XQ_REP_WIN);
    /* repetitions = 2 makes the second occurrence final */
    cdsh_xq_rules rules;
    cdsh_xq_rules_default(&rules);
    rules.repetitions = 2;
    assert_status(pos, &rules, CDSH_XQ_BLACK_WINS, CDSH_XQ_REASON_PERPETUAL_CHECK);
    cdsh_xq_pos_free(pos);
}

static void repetition_without_checks_is_a_draw(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_test_xq_pos("4k4/9/9/9/9/9/9/9/9/R2K5 w - - 0 1");
    static const char *cycle[4] = {"a0a1", "e9e8", "a1a0", "e8e9"};
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 4; i++) {
            assert_status(pos, NULL, CDSH_XQ_ONGOING, CDSH_XQ_REASON_NONE);
            cdsh_test_xq_play(pos, cycle[i]);
        }
    assert_status(pos, NULL, CDSH_XQ_DRAW, CDSH_XQ_REASON_REPETITION);
    assert_int_equal(cdsh_xq_repetition(pos, 2), CDSH_XQ_REP_DRAW);
    /* repetitions = 0 turns the rule off */
    cdsh_xq_rules rules;
    cdsh_xq_rules_default(&rules);
    rules.repetitions = 0;
    assert_status(pos, &rules, CDSH_XQ_ONGOING, CDSH_XQ_REASON_NONE);
    cdsh_xq_pos_free(pos);
}

static void repetition_counts_positions_after_the_last_capture(void **state)
{
    (void)state;
    /* the window starts at the capture (halfmove counter 0) */
    cdsh_xq_pos *pos = cdsh_test_xq_pos("4k4/9/9/9/9/9/9/p8/9/R2K5 w - - 0 1");
    cdsh_test_xq_play(pos, "a0a1");
    cdsh_test_xq_play(pos, "e9e8");
    cdsh_test_xq_play(pos, "a1a2"); /* captures the soldier */
    assert_int_equal(cdsh_xq_halfmove(pos), 0);
    cdsh_test_xq_play(pos, "e8e9");
    cdsh_test_xq_play(pos, "a2a1");
    cdsh_test_xq_play(pos, "e9e8");
    cdsh_test_xq_play(pos, "a1a2");
    cdsh_test_xq_play(pos, "e8e9");
    assert_int_equal(cdsh_xq_repetition(pos, 1), CDSH_XQ_REP_DRAW);
    assert_int_equal(cdsh_xq_repetition(pos, 2), CDSH_XQ_REP_NONE);
    cdsh_xq_pos_free(pos);
}

static void move_rule_draws_after_120_quiet_plies(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_test_xq_pos("4k4/9/9/9/9/9/9/9/9/R2K5 w - - 119 80");
    assert_status(pos, NULL, CDSH_XQ_ONGOING, CDSH_XQ_REASON_NONE);
    cdsh_test_xq_play(pos, "a0a5");
    assert_int_equal(cdsh_xq_halfmove(pos), 120);
    assert_status(pos, NULL, CDSH_XQ_DRAW, CDSH_XQ_REASON_MOVE_RULE);
    cdsh_xq_rules rules;
    cdsh_xq_rules_default(&rules);
    rules.move_rule_plies = 200;
    assert_status(pos, &rules, CDSH_XQ_ONGOING, CDSH_XQ_REASON_NONE);
    rules.move_rule_plies = 0;
    assert_status(pos, &rules, CDSH_XQ_ONGOING, CDSH_XQ_REASON_NONE);
    cdsh_xq_pos_free(pos);
    /* a mate on the 120th ply is still a mate */
    pos = cdsh_test_xq_pos("4k4/R7R/9/9/9/9/9/9/9/3K5 w - - 119 1");
    cdsh_test_xq_play(pos, "a8a9");
    assert_status(pos, NULL, CDSH_XQ_RED_WINS, CDSH_XQ_REASON_CHECKMATE);
    cdsh_xq_pos_free(pos);
    /* a capture resets the counter */
    pos = cdsh_test_xq_pos("4k4/9/9/9/p8/9/9/9/9/R2K5 w - - 119 1");
    cdsh_test_xq_play(pos, "a0a5");
    assert_int_equal(cdsh_xq_halfmove(pos), 0);
    assert_status(pos, NULL, CDSH_XQ_ONGOING, CDSH_XQ_REASON_NONE);
    cdsh_xq_pos_free(pos);
}

static void bare_material_is_a_draw(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_test_xq_pos("3ak4/4a4/4b4/9/9/9/9/4B4/4A4/3AK4 w - - 0 1");
    assert_true(cdsh_xq_bare_material(pos));
    assert_status(pos, NULL, CDSH_XQ_DRAW, CDSH_XQ_REASON_BARE_MATERIAL);
    cdsh_xq_pos_free(pos);
    /* one soldier anywhere keeps the game going */
    pos = cdsh_test_xq_pos("3ak4/4a4/4b4/9/9/9/9/4B4/p3A4/3AK4 w - - 0 1");
    assert_false(cdsh_xq_bare_material(pos));
    assert_status(pos, NULL, CDSH_XQ_ONGOING, CDSH_XQ_REASON_NONE);
    cdsh_xq_pos_free(pos);
}

static void names_are_stable(void **state)
{
    (void)state;
    assert_string_equal(cdsh_xq_outcome_name(CDSH_XQ_ONGOING), "ongoing");
    assert_string_equal(cdsh_xq_outcome_name(CDSH_XQ_RED_WINS), "red_wins");
    assert_string_equal(cdsh_xq_outcome_name(CDSH_XQ_BLACK_WINS), "black_wins");
    assert_string_equal(cdsh_xq_outcome_name(CDSH_XQ_DRAW), "draw");
    assert_string_equal(cdsh_xq_reason_name(CDSH_XQ_REASON_CHECKMATE), "checkmate");
    assert_string_equal(cdsh_xq_reason_name(CDSH_XQ_REASON_STALEMATE), "stalemate");
    assert_string_equal(cdsh_xq_reason_name(CDSH_XQ_REASON_PERPETUAL_CHECK), "perpetual_check");
    assert_string_equal(cdsh_xq_reason_name(CDSH_XQ_REASON_REPETITION), "repetition");
    assert_string_equal(cdsh_xq_reason_name(CDSH_XQ_REASON_MOVE_RULE), "move_rule");
    assert_string_equal(cdsh_xq_reason_name(CDSH_XQ_REASON_BARE_MATERIAL), "bare_material");
    assert_string_equal(cdsh_xq_reason_name(CDSH_XQ_REASON_NONE), "none");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(start_position_is_ongoing),
        cmocka_unit_test(checkmate_loses_for_side_to_move),
        cmocka_unit_test(stalemate_loses_for_side_to_move),
        cmocka_unit_test(perpetual_check_loses),
        cmocka_unit_test(repetition_without_checks_is_a_draw),
        cmocka_unit_test(repetition_counts_positions_after_the_last_capture),
        cmocka_unit_test(move_rule_draws_after_120_quiet_plies),
        cmocka_unit_test(bare_material_is_a_draw),
        cmocka_unit_test(names_are_stable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
