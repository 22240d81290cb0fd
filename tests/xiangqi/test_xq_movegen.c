/* test_xq_movegen.c — xiangqi move legality with reasons, ICCS text, and the
 * generators cross-checked against a brute-force legality test over random
 * positions (legal list, captures, quiets, gives-check, square attacks). */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/position.h"

#if defined(__SANITIZE_ADDRESS__)
#define POSITIONS 30
#else
#define POSITIONS 300
#endif

typedef struct move_case {
    const char *fen, *move, *code, *needle;
} move_case;

static const move_case move_cases[] = {
    {CDSH_XQ_START_FEN, "h2e2", NULL, NULL},
    {CDSH_XQ_START_FEN, "H2-E2", NULL, NULL},
    {CDSH_XQ_START_FEN, "h2h9", NULL, NULL}, /* cannon takes over the h7 screen */
    {CDSH_XQ_START_FEN, "b0c2", NULL, NULL},
    {CDSH_XQ_START_FEN, "e5e6", "MOVE_NO_PIECE", "there is no piece on e5"},
    {CDSH_XQ_START_FEN, "a9a8", "MOVE_NOT_YOUR_PIECE", "the chariot on a9 is Black's"},
    {CDSH_XQ_START_FEN, "a0a3", "MOVE_OWN_PIECE", "cannot capture its own soldier on a3"},
    {CDSH_XQ_START_FEN, "b0d1", "MOVE_ILLEGAL_FOR_PIECE", "a horse cannot move from b0 to d1"},
    {CDSH_XQ_START_FEN, "h2h7", "MOVE_ILLEGAL_FOR_PIECE", "a cannon cannot"},
    {CDSH_XQ_START_FEN, "h2h8", "MOVE_ILLEGAL_FOR_PIECE", "a cannon cannot"},
    {CDSH_XQ_START_FEN, "e3e5", "MOVE_ILLEGAL_FOR_PIECE", "a soldier cannot"},
    {CDSH_XQ_START_FEN, "e3f3", "MOVE_ILLEGAL_FOR_PIECE", "a soldier cannot"},
    {CDSH_XQ_START_FEN, "c0a2", NULL, NULL},
    {CDSH_XQ_START_FEN, "d0e1", NULL, NULL},
    {CDSH_XQ_START_FEN, "d0d1", "MOVE_ILLEGAL_FOR_PIECE", "an? advisor"},
    {CDSH_XQ_START_FEN, "e0e2", "MOVE_ILLEGAL_FOR_PIECE", "a general cannot"},
    {CDSH_XQ_START_FEN, "h2", "MOVE_SYNTAX", "not a coordinate move"},
    {CDSH_XQ_START_FEN, "z2e2", "MOVE_SYNTAX", "not a coordinate move"},
    {CDSH_XQ_START_FEN, "h2h2", "MOVE_SYNTAX", "does not move"},
    /* elephant eye blocked */
    {"3k5/9/9/9/9/9/9/9/3N5/2B1K4 w", "c0e2", "MOVE_ILLEGAL_FOR_PIECE", "elephant"},
    /* elephant may not cross the river */
    {"3k5/9/9/9/9/2B6/9/9/9/4K4 w", NULL, NULL, NULL},
    /* horse leg next to the horse, not the target */
    {"3k5/9/9/9/9/9/9/9/1C7/1N2K4 w", "b0c2", "MOVE_ILLEGAL_FOR_PIECE", "horse"},
    {"3k5/9/9/9/9/9/9/9/1C7/1N2K4 w", "b0d1", NULL, NULL},
    /* pinned chariot */
    {"3k5/9/9/9/4r4/9/9/9/4R4/4K4 w", "e1a1", "MOVE_SELF_CHECK", "leaves Red's general in check"},
    {"3k5/9/9/9/4r4/9/9/9/4R4/4K4 w", "e1e5", NULL, NULL},
    /* flying general: the only blocker is pinned, and the general may not step into the file */
    {"4k4/9/9/9/9/9/9/9/4N4/4K4 w", "e1d3", "MOVE_GENERALS_FACE", "generals would face"},
    {"3k5/9/9/9/9/9/9/9/9/4K4 w", "e0d0", "MOVE_GENERALS_FACE", "generals would face"},
    /* a piece stepping between cannon and general becomes a screen */
    {"3k5/9/9/9/4c4/9/9/9/9/R3K4 w", "a0a0", "MOVE_SYNTAX", "does not move"},
    {"3k5/9/9/4c4/9/9/9/9/R8/4K4 w", "a1e1", "MOVE_SELF_CHECK", "in check"},
    /* crossed soldier moves sideways, never back */
    {"3k5/9/9/9/4P4/9/9/9/9/4K4 w", "e5d5", NULL, NULL},
    {"3k5/9/9/9/4P4/9/9/9/9/4K4 w", "e5e4", "MOVE_ILLEGAL_FOR_PIECE", "soldier"},
};

static void move_check_gives_precise_reasons(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    for (size_t i = 0; i < sizeof move_cases / sizeof move_cases[0]; i++) {
        const move_case *c = &move_cases[i];
        cdsh_error err = {0};
        if (cdsh_xq_pos_set_fen(pos, c->fen, &err) != 0)
            fail_msg("FEN %s: %s", c->fen, err.message);
        if (!c->move)
            continue;
        cdsh_xq_move_t m = 0;
        int rc = cdsh_xq_parse_move(pos, c->move, &m, &err);
        if (!c->code) {
            if (rc != 0)
                fail_msg("%s in %s: %s %s", c->move, c->fen, err.code, err.message);
            continue;
        }
        if (rc != CDSH_EINVAL || strcmp(err.code, c->code) != 0)
            fail_msg("%s in %s: want %s, got rc %d %s '%s'", c->move, c->fen, c->code, rc, err.code,
                     err.message);
        /* the needle is a plain substring except for the "an?" allowance */
        if (strncmp(c->needle, "an?", 3) != 0 && !strstr(err.message, c->needle))
            fail_msg("%s: message '%s' lacks '%s'", c->move, err.message, c->needle);
        assert_non_null(cdsh_xq_error_zh(err.code));
    }
    cdsh_xq_pos_free(pos);
}

static void iccs_text_round_trips(void **state)
{
    (void)state;
    char txt[6];
    cdsh_xq_move_t m;
    assert_int_equal(cdsh_xq_move_parse_iccs("h2e2", &m, NULL), 0);
    assert_int_equal(cdsh_xq_move_from(m), cdsh_xq_square(7, 2));
    assert_int_equal(cdsh_xq_move_to(m), cdsh_xq_square(4, 2));
    cdsh_xq_move_to_iccs(m, txt);
    assert_string_equal(txt, "h2e2");
    cdsh_xq_move_to_iccs(CDSH_XQ_MOVE_NONE, txt);
    assert_string_equal(txt, "0000");
    cdsh_error err = {0};
    assert_int_equal(cdsh_xq_move_parse_iccs("j2e2", &m, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "MOVE_SYNTAX");
    assert_int_equal(cdsh_xq_move_parse_iccs("h2e2x", &m, &err), CDSH_EINVAL);
}

static void play_refuses_illegal_and_makes_legal(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    cdsh_error err = {0};
    cdsh_xq_move_t m;
    assert_int_equal(cdsh_xq_move_parse_iccs("e3e5", &m, NULL), 0);
    assert_int_equal(cdsh_xq_play(pos, m, &err), CDSH_EINVAL);
    assert_int_equal(cdsh_xq_ply(pos), 0);
    assert_int_equal(cdsh_xq_move_parse_iccs("h2e2", &m, NULL), 0);
    assert_int_equal(cdsh_xq_play(pos, m, &err), 0);
    assert_int_equal(cdsh_xq_ply(pos), 1);
    assert_int_equal(cdsh_xq_last_move(pos, 1), m);
    char fen[CDSH_XQ_FEN_MAX];
    cdsh_xq_pos_fen(pos, fen);
    assert_string_equal(fen,
                        "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR b - - 1 1");
    cdsh_xq_pos_free(pos);
}

static void play_refuses_when_history_is_full(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    assert_int_equal(cdsh_xq_pos_set_fen(pos, "4k4/9/9/9/9/9/9/9/9/R2K5 w", NULL), 0);
    static const char *cycle[4] = {"a0a1", "e9e8", "a1a0", "e8e9"};
    cdsh_error err = {0};
    cdsh_xq_move_t m;
    for (int i = 0; i < CDSH_XQ_MAX_PLY; i++) {
        assert_int_equal(cdsh_xq_move_parse_iccs(cycle[i % 4], &m, NULL), 0);
        assert_int_equal(cdsh_xq_play(pos, m, &err), 0);
    }
    assert_int_equal(cdsh_xq_move_parse_iccs(cycle[0], &m, NULL), 0);
    assert_int_equal(cdsh_xq_play(pos, m, &err), CDSH_ETOOBIG);
    assert_string_equal(err.code, "MOVE_HISTORY_FULL");
    assert_int_equal(cdsh_xq_ply(pos), CDSH_XQ_MAX_PLY);
    cdsh_xq_pos_free(pos);
}

static int in_list(const cdsh_xq_move_t *l, int n, cdsh_xq_move_t m)
{
    for (int i = 0; i < n; i++)
        if (l[i] == m)
            return 1;
    return 0;
}

static void generators_agree_with_brute_force(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    cdsh_xq_move_t legal[CDSH_XQ_MAX_MOVES], caps[CDSH_XQ_MAX_MOVES], quiets[CDSH_XQ_MAX_MOVES];
    unsigned seed = (unsigned)cdsh_test_seed_or("playouts", 777);
    int positions = 0;
    while (positions < POSITIONS) {
        cdsh_xq_pos_set_start(pos);
        for (int ply = 0; ply < 120 && positions < POSITIONS; ply++, positions++) {
            int n = cdsh_xq_gen_legal(pos, legal);
            int nc = cdsh_xq_gen_legal_captures(pos, caps);
            int nq = cdsh_xq_gen_quiets(pos, quiets);
            assert_int_equal(cdsh_xq_count_legal(pos), n);
            assert_int_equal(cdsh_xq_has_legal_move(pos), n > 0);
            /* every from/to pair: legal iff move_check accepts it */
            int brute = 0;
            for (int f = 0; f < 90; f++)
                for (int t = 0; t < 90; t++) {
                    if (f == t)
                        continue;
                    cdsh_xq_move_t m = cdsh_xq_move_make(cdsh_xq_square_from_index90(f),
                                                         cdsh_xq_square_from_index90(t));
                    int ok = cdsh_xq_move_check(pos, m, NULL) == 0;
                    brute += ok;
                    if (ok != in_list(legal, n, m)) {
                        char fen[CDSH_XQ_FEN_MAX], txt[6];
                        cdsh_xq_pos_fen(pos, fen);
                        cdsh_xq_move_to_iccs(m, txt);
                        fail_msg("%s in %s: check says %d, generator says %d", txt, fen, ok, !ok);
                    }
                    int cap = cdsh_xq_piece_at(pos, cdsh_xq_move_to(m)) != 0;
                    assert_int_equal(ok && cap, in_list(caps, nc, m));
                    if (ok && !cap)
                        assert_true(in_list(quiets, nq, m));
                    if (ok) {
                        cdsh_xq_make_move(pos, m);
                        int chk = cdsh_xq_in_check(pos);
                        cdsh_xq_unmake_move(pos);
                        assert_int_equal(cdsh_xq_gives_check(pos, m), chk);
                    }
                }
            assert_int_equal(brute, n);
            /* the general-purpose attack query agrees on the generals */
            for (int s = 0; s < 2; s++)
                assert_int_equal(cdsh_xq_attacked(pos, cdsh_xq_king_square(pos, s), s ^ 1),
                                 cdsh_xq_king_attacked(pos, s));
            if (n == 0)
                break;
            seed = seed * 1103515245u + 12345u;
            cdsh_xq_make_move(pos, legal[(seed >> 16) % (unsigned)n]);
        }
    }
    cdsh_xq_pos_free(pos);
}

static void attacked_covers_every_piece_kind(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    /* start position: Red's cannon h2 attacks h9 over h7; horse b0 covers a2 and c2 */
    assert_true(cdsh_xq_attacked(pos, cdsh_xq_square(7, 9), CDSH_XQ_RED));
    assert_false(cdsh_xq_attacked(pos, cdsh_xq_square(7, 7), CDSH_XQ_RED));
    assert_true(cdsh_xq_attacked(pos, cdsh_xq_square(2, 2), CDSH_XQ_RED));
    assert_true(cdsh_xq_attacked(pos, cdsh_xq_square(4, 1), CDSH_XQ_RED));  /* advisors, general */
    assert_true(cdsh_xq_attacked(pos, cdsh_xq_square(4, 2), CDSH_XQ_RED));  /* elephants */
    assert_true(cdsh_xq_attacked(pos, cdsh_xq_square(4, 4), CDSH_XQ_RED));  /* soldier e3 */
    assert_false(cdsh_xq_attacked(pos, cdsh_xq_square(3, 3), CDSH_XQ_RED)); /* no sideways yet */
    assert_false(cdsh_xq_attacked(pos, cdsh_xq_square(4, 5), CDSH_XQ_RED));
    /* a crossed soldier attacks sideways */
    assert_int_equal(cdsh_xq_pos_set_fen(pos, "3k5/9/9/9/4P4/9/9/9/9/4K4 w", NULL), 0);
    assert_true(cdsh_xq_attacked(pos, cdsh_xq_square(3, 5), CDSH_XQ_RED));
    assert_false(cdsh_xq_attacked(pos, cdsh_xq_square(4, 4), CDSH_XQ_RED));
    cdsh_xq_pos_free(pos);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(move_check_gives_precise_reasons),
        cmocka_unit_test(iccs_text_round_trips),
        cmocka_unit_test(play_refuses_illegal_and_makes_legal),
        cmocka_unit_test(play_refuses_when_history_is_full),
        cmocka_unit_test(generators_agree_with_brute_force),
        cmocka_unit_test(attacked_covers_every_piece_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
