/* test_xq_chase.c — perpetual chase (长捉): hand-built repetition cycles
 * (chaser loses; protected, soldier and mutual chases draw; stronger pieces
 * chased even when protected; a check in the cycle defers to the check
 * rule), the per-position chase probe (pinned defenders, uncrossed
 * soldiers), Fairy-Stockfish's own AXF repetition cases with its published
 * verdicts, and the search scoring a chaser's repetition as a loss. */
#include "support/testkit.h"

#include "support/xq_position.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/position.h"
#include "plugins/xiangqi/engine/rules.h"
#include "plugins/xiangqi/engine/search.h"

/* Verdict from the side to move: 1 wins, -1 loses, 0 draw, 9 ongoing. */
static int verdict(cdsh_xq_pos *pos, cdsh_xq_reason *reason)
{
    cdsh_xq_result r = cdsh_xq_status(pos, NULL);
    if (reason)
        *reason = r.reason;
    if (r.outcome == CDSH_XQ_ONGOING)
        return 9;
    if (r.outcome == CDSH_XQ_DRAW)
        return 0;
    return (r.outcome == CDSH_XQ_RED_WINS) == (cdsh_xq_side_to_move(pos) == CDSH_XQ_RED) ? 1 : -1;
}

/* Plays a four-ply cycle twice from fen (the start position occurs a third
 * time at the end) and checks the final verdict and reason; before the
 * last ply the game must still be on. */
static void check_cycle(const char *fen, const char *cycle, int want, cdsh_xq_reason want_reason)
{
    cdsh_xq_pos *pos = cdsh_test_xq_pos(fen);
    cdsh_test_xq_play(pos, cycle);
    assert_int_equal(verdict(pos, NULL), 9);
    cdsh_xq_reason reason;
    char first3[64];
    /* second round: all but the last move, then the last */
    snprintf(first3, sizeof first3, "%.*s", (int)(strrchr(cycle, ' ') - cycle), cycle);
    cdsh_test_xq_play(pos, first3);
    assert_int_equal(verdict(pos, NULL), 9);
    cdsh_test_xq_play(pos, strrchr(cycle, ' ') + 1);
    int got = verdict(pos, &reason);
    if (got != want || reason != want_reason)
        fail_msg("%s / %s: want %d %s, got %d %s", fen, cycle, want,
                 cdsh_xq_reason_name(want_reason), got, cdsh_xq_reason_name(reason));
    cdsh_xq_pos_free(pos);
}

static void chariot_chasing_an_unprotected_horse_loses(void **state)
{
    (void)state;
    /* Red chariot b2/c2 follows the Black horse c9/b7; Red, to move at the
     * third occurrence, is the chaser */
    check_cycle("2n1k4/9/9/9/9/9/9/1R7/9/3K5 w - - 0 1", "b2c2 c9b7 c2b2 b7c9", -1,
                CDSH_XQ_REASON_PERPETUAL_CHASE);
    /* seen from the chased side one ply earlier, with repetitions = 2 */
    cdsh_xq_pos *pos = cdsh_test_xq_pos("2n1k4/9/9/9/9/9/9/1R7/9/3K5 w - - 0 1");
    cdsh_test_xq_play(pos, "b2c2 c9b7 c2b2 b7c9 b2c2");
    cdsh_xq_rules rules;
    cdsh_xq_rules_default(&rules);
    rules.repetitions = 2;
    cdsh_xq_result r = cdsh_xq_status(pos, &rules);
    assert_int_equal(r.outcome, CDSH_XQ_BLACK_WINS);
    assert_int_equal(r.reason, CDSH_XQ_REASON_PERPETUAL_CHASE);
    assert_int_equal(cdsh_xq_repetition(pos, 1), CDSH_XQ_REP_CHASE_WIN);
    cdsh_xq_pos_free(pos);
}

static void chariot_attacking_a_protected_horse_is_a_draw(void **state)
{
    (void)state;
    /* the elephant a7 guards c9, the chariot g7 guards b7 */
    check_cycle("2n1k4/9/b5r2/9/9/9/9/1R7/9/3K5 w - - 0 1", "b2c2 c9b7 c2b2 b7c9", 0,
                CDSH_XQ_REASON_REPETITION);
}

static void horse_chasing_a_protected_chariot_loses(void **state)
{
    (void)state;
    /* the chariot on d7 (guarded by the advisor) and d8 (by the general) */
    check_cycle("3k5/4a4/3r5/4N4/9/9/9/9/9/4K4 w - - 0 1", "e6c5 d7d8 c5e6 d8d7", -1,
                CDSH_XQ_REASON_PERPETUAL_CHASE);
}

static void soldier_chasing_is_allowed(void **state)
{
    (void)state;
    /* a crossed soldier follows an unprotected cannon: soldiers may chase */
    check_cycle("4k4/9/9/3c5/4P4/9/9/9/9/5K3 w - - 0 1", "e5d5 d6e6 d5e5 e6d6", 0,
                CDSH_XQ_REASON_REPETITION);
    /* the same dance by a chariot after a crossed soldier is a chase */
    check_cycle("5k3/9/9/4R4/9/9/3p5/9/9/3K5 w - - 0 1", "e6d6 d3e3 d6e6 e3d3", -1,
                CDSH_XQ_REASON_PERPETUAL_CHASE);
}

static void probe_sees_through_fake_protection_and_skips_uncrossed_soldiers(void **state)
{
    (void)state;
    cdsh_xq_square_t sq[16];
    /* the horse b7 is guarded by the chariot f7, free to recapture: no chase */
    cdsh_xq_pos *pos = cdsh_test_xq_pos("5k3/9/1n3r3/9/9/9/9/1R7/9/3K5 w - - 0 1");
    assert_int_equal(cdsh_xq_chased(pos, CDSH_XQ_RED, sq), 0);
    cdsh_xq_pos_free(pos);
    /* the same guard pinned on the f-file by the chariot f3: fake protection */
    pos = cdsh_test_xq_pos("5k3/9/1n3r3/9/9/9/5R3/1R7/9/3K5 w - - 0 1");
    assert_int_equal(cdsh_xq_chased(pos, CDSH_XQ_RED, sq), 1);
    assert_int_equal(sq[0], cdsh_xq_square(1, 7));
    cdsh_xq_pos_free(pos);
    /* a guard pinned by the flying general: the Black elephant e7 stands
     * alone between the generals and may not retake on c9 */
    pos = cdsh_test_xq_pos("2n1k4/9/4b4/9/9/9/9/2R6/9/4K4 w - - 0 1");
    assert_int_equal(cdsh_xq_chased(pos, CDSH_XQ_RED, sq), 1);
    assert_int_equal(sq[0], cdsh_xq_square(2, 9));
    cdsh_xq_pos_free(pos);
    pos = cdsh_test_xq_pos("2n1k4/9/4b4/9/9/9/9/2R6/9/3K5 w - - 0 1");
    assert_int_equal(cdsh_xq_chased(pos, CDSH_XQ_RED, sq), 0);
    cdsh_xq_pos_free(pos);
    /* an unprotected uncrossed soldier is no chase target, a crossed one is */
    pos = cdsh_test_xq_pos("4k4/9/9/9/2p6/9/9/2R6/9/3K5 w - - 0 1");
    assert_int_equal(cdsh_xq_chased(pos, CDSH_XQ_RED, sq), 0);
    cdsh_xq_pos_free(pos);
    pos = cdsh_test_xq_pos("4k4/9/9/9/9/2p6/9/2R6/9/3K5 w - - 0 1");
    assert_int_equal(cdsh_xq_chased(pos, CDSH_XQ_RED, sq), 1);
    assert_int_equal(sq[0], cdsh_xq_square(2, 4));
    cdsh_xq_pos_free(pos);
    /* the general never counts as chased, and generals and soldiers never chase */
    pos = cdsh_test_xq_pos("3k5/9/9/9/9/9/9/9/3p5/4K4 w - - 0 1");
    assert_int_equal(cdsh_xq_chased(pos, CDSH_XQ_RED, sq), 0);
    assert_int_equal(cdsh_xq_chased(pos, CDSH_XQ_BLACK, sq), 0);
    cdsh_xq_pos_free(pos);
}

/* Fairy-Stockfish's test.py repetition cases (AXF rules; its moves converted
 * to ranks 0-9): FEN, moves, FSF's verdict for the side to move after them,
 * and ours (Pikafish rules). The two rule sets differ on check/chase
 * mixtures (a check anywhere in the cycle: Pikafish hands over to the check
 * rule, AXF counts "one check, one chase" as a perpetual attack) and on a
 * chase made by taking away the target's protection (D39, which FSF's own
 * comment calls controversial: the Pikafish rule counts every newly
 * attacked piece, so both sides chase there). */
static const struct fsf_case {
    const char *name, *fen, *moves;
    int fsf, ours;
} fsf_cases[] = {
    {"direct chase by cannon",
     "2bakabnr/9/r1n1c4/2p1p1p1p/PP7/9/4P1P1P/2C3NC1/9/1NBAKAB1R w - - 0 1",
     "c2a2 a7b7 a2b2 b7a7 b2a2 a7b7 a2b2 b7a7 b2a2", 1, 1},
    {"chase with chasing side to move",
     "2bakabnr/9/r1n1c4/2p1p1p1p/PP7/9/4P1P1P/2C3NC1/9/1NBAKAB1R w - - 0 1",
     "c2a2 a7b7 a2b2 b7a7 b2a2 a7b7 a2b2 b7a7 b2a2 a7b7 a2b2 b7a7", -1, -1},
    {"discovered chase by cannon", "2bakabr1/9/9/r1p1p1p2/p7R/P8/9/9/9/CC1AKA3 w - - 0 1",
     "a4a5 a6b6 a5b5 b6a6 b5a5 a6b6 a5b5 b6a6 b5a5", 1, 1},
    {"chase by soldier", "2bakabr1/9/9/r1p1p1p2/p7R/P8/9/9/9/1C1AKA3 w - - 0 1",
     "a4a5 a6b6 a5b5 b6a6 b5a5 a6b6 a5b5 b6a6 b5a5", 0, 0},
    {"discovered and anti-discovered chase by cannon", "5k3/9/9/5C3/5c3/5C3/9/9/5p3/4K4 w - - 0 1",
     "f4d4 f5d5 d4f4 d5f5 f4d4 f5d5 d4f4 d5f5", -1, 0},
    {"mutual chase", "4k4/7n1/9/4pR3/9/9/4P4/9/9/4K4 w - - 0 1",
     "f6h6 h8f7 h6h7 f7g5 h7g7 g5i6 g7g6 i6h8 g6h6 h8f7 h6h7 f7g5 h7g7 g5i6 g7g6 i6h8 g6h6", 0, 0},
    {"perpetual check vs intermittent checks", "9/3kc4/3a5/3P5/9/4p4/9/4K4/9/3C5 w - - 0 1",
     "d6e6 e4d4 e6d6 d4e4 d6e6 e4d4 e6d6 d4e4", 1, 1},
    {"perpetual check by soldier", "3k5/9/9/9/9/5p3/9/5p3/5K3/5C3 w - - 0 1",
     "f1e1 f2e2 e1f1 e2f2 f1e1 f2e2 e1f1 e2f2", 1, 1},
    {"cannon chases elephant, soldier checks once", "3k5/4P4/4b4/3C5/4c4/9/9/9/9/5K3 w - - 0 1",
     "d6e6 e7g5 e6d6 g5e7 d6e6 e7g5 e6d6 g5e7", 1, 1},
    {"check and chase alternate (一将一捉)", "3k5/9/9/9/9/9/9/9/cr1CAK3/9 w - - 0 1",
     "d1d3 b1b3 d3d1 b3b1 d1d3 b1b3 d3d1 b3b1", 1, 0},
    {"one-sided chase of a horse", "4k4/9/4b4/2c2nR2/9/9/9/9/9/3K5 w - - 0 1",
     "g6g5 f6g8 g5g6 g8f6 g6g5 f6g8 g5g6 g8f6", 1, 1},
    {"soldier and general vs horses", "3P5/3k5/3nn4/9/9/9/9/9/9/5K3 w - - 0 1",
     "d9e9 d8e8 e9d9 e8d8 d9e9 d8e8 e9d9 e8d8", 1, 1},
    {"chariot chases chariot held by a pin", "4ck3/9/9/9/9/2r1R4/9/9/4A4/3AK4 w - - 0 1",
     "e4e3 c4c3 e3e4 c3c4 e4e3 c4c3 e3e4 c3c4", 1, 1},
    {"cannon chases cannon", "4k4/9/9/c1c6/9/r8/9/9/C8/3K5 w - - 0 1",
     "a1c1 a4c4 c1a1 c4a4 a1c1 a4c4 c1a1 c4a4", 1, 1},
    {"mutual perpetual check", "9/4c4/3k5/3r5/9/9/4C4/9/4K4/3R5 w - - 0 1",
     "e3d3 d6e6 d3e3 e6d6 e3d3 d6e6 d3e3 e6d6", 0, 0},
    {"mutual perpetual check by soldier and cannon", "3k5/6c2/9/7P1/6c2/6P2/9/9/9/5K3 w - - 0 1",
     "h6g6 g5h5 g6h6 h5g5 h6g6 g5h5 g6h6 h5g5", 0, 0},
    {"mutual chase, horses defending", "4ck3/9/9/9/9/2r1R1N2/6N2/9/4A4/3AK4 w - - 0 1",
     "e4e3 c4c3 e3e4 c3c4 e4e3 c4c3 e3e4 c3c4", 0, 0},
    {"mutual cannon chase", "5k3/9/9/c8/9/P1P6/9/2C6/9/3K5 w - - 0 1",
     "c2a2 a6c6 a2c2 c6a6 c2a2 a6c6 a2c2 c6a6", 0, 0},
    {"two chariots against a cannon", "4k4/9/r1r6/9/PPPP5/9/9/9/1C7/5K3 w - - 0 1",
     "b1a1 a7b7 a1c1 c7d7 c1b1 b7a7 b1d1 d7c7 d1a1 a7b7 a1c1 c7d7 c1b1 b7a7 b1d1 d7c7 d1a1", 0, 0},
    {"D106 attack does not change", "3k2b2/4P4/4b4/9/8p/6Bc1/6P1P/3AB4/4pp3/1p1K3R1 w - - 0 1",
     "h0h1 h4h3 h1h0 h3h4 h0h1 h4h3 h1h0 h3h4", 0, 0},
    {"D39 pinned chariot a", "2baka1r1/C4rN2/9/1Rp1p4/9/9/4P4/9/4A4/4KA3 w - - 0 1",
     "b6b8 f9e8 b8b9 e8f9 b9b8 f9e8 b8b9 e8f9 b9b8", 1, 0},
    {"D39 pinned chariot b", "5k3/9/9/9/9/9/7r1/9/2nRA3c/4K4 w - - 0 1",
     "e1f0 h3h1 f0e1 h1h3 e1f0 h3h1 f0e1 h1h3", 1, 0},
    {"pins to undermine root", "4k4/4c4/9/4p4/9/9/3rn4/3NR4/4K4/9 b - - 0 1",
     "e3g4 e1f1 g4e3 f1e1 e3g4 e1f1 g4e3 f1e1", -1, -1},
    {"discovered check capture threat by rook", "5k3/9/9/9/9/1N2P1C2/9/4BC3/9/cr1RK4 w - - 0 1",
     "b4c2 b0c0 c2b4 c0b0 b4c2 b0c0 c2b4 c0b0", 1, 1},
    {"pin + discovered check threat by horse", "5k3/9/9/9/9/4c4/3n5/3NBA3/4A4/4K4 w - - 0 1",
     "e0d0 e4d4 d0e0 d4e4 e0d0 e4d4 d0e0 d4e4", 1, 1},
    {"pin + discovered check threat by rook", "5k3/9/9/9/9/4c4/3r5/3NB4/4A4/4K4 w - - 0 1",
     "e0d0 e4d4 d0e0 d4e4 e0d0 e4d4 d0e0 d4e4", 1, 1},
    {"x-ray protected discovered check", "5k3/9/9/9/9/9/9/9/9/3NK1cr1 w - - 0 1",
     "d0c2 h0h2 c2d0 h2h0 d0c2 h0h2 c2d0 h2h0", 1, 1},
    {"no overprotection by king", "3k5/9/9/3n5/9/9/3r5/9/9/3NK4 w - - 0 1",
     "d0c2 d3c3 c2d0 c3d3 d0c2 d3c3 c2d0 c3d3", 0, 0},
    {"overprotection by king", "3k5/9/9/9/9/9/3r5/9/9/3NK4 w - - 0 1",
     "d0c2 d3c3 c2d0 c3d3 d0c2 d3c3 c2d0 c3d3", 1, 1},
    {"fake protection by cannon", "5k3/9/9/9/9/1C7/1r7/9/1C7/4K4 w - - 0 1",
     "b4c4 b3c3 c4b4 c3b3 b4c4 b3c3 c4b4 c3b3", 1, 1},
    {"fake protection by cannon + mutual chase", "4ka3/c2R1R2c/4b4/9/9/9/9/9/9/4K4 w - - 0 1",
     "f8f6 f9e8 f6f8 e8f9 f8f6 f9e8 f6f8 e8f9", 0, 0},
};

static void fairy_stockfish_repetition_cases(void **state)
{
    (void)state;
    int agree = 0;
    for (size_t i = 0; i < sizeof fsf_cases / sizeof fsf_cases[0]; i++) {
        const struct fsf_case *c = &fsf_cases[i];
        cdsh_xq_pos *pos = cdsh_test_xq_pos(c->fen);
        cdsh_test_xq_play(pos, c->moves);
        int got = verdict(pos, NULL);
        if (got != c->ours)
            fail_msg("%s: want %d, got %d", c->name, c->ours, got);
        agree += got == c->fsf;
        cdsh_xq_pos_free(pos);
    }
    /* 31 cases; the 4 documented differences are the only ones */
    assert_int_equal(sizeof fsf_cases / sizeof fsf_cases[0], 31);
    assert_int_equal(agree, 27);
}

static void check_in_the_cycle_defers_to_the_check_rule(void **state)
{
    (void)state;
    /* Red chases the soldier f1 with both moves but d4f4 also checks (the
     * cannon f4 screens for f6): no one-sided perpetual check, so a draw */
    cdsh_xq_pos *pos = cdsh_test_xq_pos("5k3/9/9/5C3/5c3/5C3/9/9/5p3/4K4 w - - 0 1");
    cdsh_test_xq_play(pos, "f4d4 f5d5 d4f4 d5f5 f4d4 f5d5 d4f4");
    assert_true(cdsh_xq_in_check(pos));
    cdsh_test_xq_play(pos, "d5f5");
    cdsh_xq_reason reason;
    assert_int_equal(verdict(pos, &reason), 0);
    assert_int_equal(reason, CDSH_XQ_REASON_REPETITION);
    cdsh_xq_pos_free(pos);
}

static void search_avoids_a_losing_perpetual_chase(void **state)
{
    (void)state;
    /* one round of the unprotected-horse chase played; repeating it (c2b2
     * then b7c9 would recreate the position) is a loss for Red in search */
    cdsh_xq_pos *pos = cdsh_test_xq_pos("2n1k4/9/9/9/9/9/9/1R7/9/3K5 w - - 0 1");
    cdsh_test_xq_play(pos, "b2c2 c9b7");
    cdsh_xq_engine_opts opts = {.hash_mb = 4, .threads = 1};
    cdsh_xq_engine *eng = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_xq_engine_new(&opts, &eng, &err), 0);
    /* Black, after c2b2, must either let the horse be taken or return to
     * c9 — repeating; from Black's side that repetition is a win */
    cdsh_test_xq_play(pos, "c2b2");
    cdsh_xq_move_t back;
    assert_int_equal(cdsh_xq_parse_move(pos, "b7c9", &back, &err), 0);
    cdsh_xq_limits lim = {.depth = 3, .searchmoves = &back, .nsearchmoves = 1};
    cdsh_xq_search_result r;
    assert_int_equal(cdsh_xq_search(eng, pos, &lim, NULL, NULL, &r, &err), 0);
    assert_true(r.score >= CDSH_XQ_MATE_BOUND);
    cdsh_xq_engine_free(eng);
    cdsh_xq_pos_free(pos);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chariot_chasing_an_unprotected_horse_loses),
        cmocka_unit_test(chariot_attacking_a_protected_horse_is_a_draw),
        cmocka_unit_test(horse_chasing_a_protected_chariot_loses),
        cmocka_unit_test(soldier_chasing_is_allowed),
        cmocka_unit_test(probe_sees_through_fake_protection_and_skips_uncrossed_soldiers),
        cmocka_unit_test(fairy_stockfish_repetition_cases),
        cmocka_unit_test(check_in_the_cycle_defers_to_the_check_rule),
        cmocka_unit_test(search_avoids_a_losing_perpetual_chase),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
