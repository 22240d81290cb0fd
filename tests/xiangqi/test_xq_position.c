/* test_xq_position.c — xiangqi FEN parsing (every error code), FEN output and
 * round trips, board queries, and make/unmake restoring board and hash over
 * random playouts (incremental hash compared with a from-scratch one). */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/position.h"

#if defined(__SANITIZE_ADDRESS__)
#define PLAYOUTS 20
#else
#define PLAYOUTS 200
#endif

static const char *const epd_fens[] = {
    CDSH_XQ_START_FEN,
    "r1ba1a3/4kn3/2n1b4/pNp1p1p1p/4c4/6P2/P1P2R2P/1CcC5/9/2BAKAB2 w - - 0 1",
    "1cbak4/9/n2a5/2p1p3p/5cp2/2n2N3/6PCP/3AB4/2C6/3A1K1N1 w - - 0 1",
    "CRN1k1b2/3ca4/4ba3/9/2nr5/9/9/4B4/4A4/4KA3 w - - 0 1",
    "C1nNk4/9/9/9/9/9/n1pp5/B3C4/9/3A1K3 w - - 0 1",
    "1C2ka3/9/C1Nab1n2/p3p3p/6p2/9/P3P3P/3AB4/3p2c2/c1BAK4 w - - 0 1",
    "r2akab1r/3n5/4b3n/p1p1pRp1p/9/2P3P2/P3P3c/N2C3C1/4A4/1RBAK1B2 w - - 0 1",
    "1rbaka2R/5r3/6n2/2p1p1p2/4P1bP1/PpC3Bc1/1nPR2P2/2N2AN2/1c2K1p2/2BAC4 w - - 0 1",
    "4kcP1N/8n/3rb4/9/9/9/9/3p1A3/4K4/5CB2 w - - 0 1",
    "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR b - - 12 34",
};

static void fen_round_trips_exactly(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    char out[CDSH_XQ_FEN_MAX];
    for (size_t i = 0; i < sizeof epd_fens / sizeof epd_fens[0]; i++) {
        cdsh_error err = {0};
        assert_int_equal(cdsh_xq_pos_set_fen(pos, epd_fens[i], &err), 0);
        cdsh_xq_pos_fen(pos, out);
        assert_string_equal(out, epd_fens[i]);
        assert_int_equal(cdsh_xq_hash(pos), cdsh_xq_hash_compute(pos));
    }
    cdsh_xq_pos_free(pos);
}

static void fen_accepts_synonyms_and_short_forms(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    char out[CDSH_XQ_FEN_MAX];
    /* E/H letters, side r, fields cut after the side */
    assert_int_equal(cdsh_xq_pos_set_fen(pos,
                                         "rheakaehr/9/1c5c1/p1p1p1p1p/9/9/"
                                         "P1P1P1P1P/1C5C1/9/RHEAKAEHR r",
                                         NULL),
                     0);
    cdsh_xq_pos_fen(pos, out);
    assert_string_equal(out, CDSH_XQ_START_FEN);
    /* board only: Red to move, counters 0 and 1 */
    assert_int_equal(
        cdsh_xq_pos_set_fen(pos, "  rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR ",
                            NULL),
        0);
    cdsh_xq_pos_fen(pos, out);
    assert_string_equal(out, CDSH_XQ_START_FEN);
    assert_int_equal(cdsh_xq_pos_set_fen(pos, "4k4/9/9/9/9/9/9/9/4A4/4K4 b - - 7", NULL), 0);
    assert_int_equal(cdsh_xq_side_to_move(pos), CDSH_XQ_BLACK);
    assert_int_equal(cdsh_xq_halfmove(pos), 7);
    assert_int_equal(cdsh_xq_fullmove(pos), 1);
    cdsh_xq_pos_free(pos);
}

typedef struct fen_case {
    const char *fen, *code, *needle;
} fen_case;

static const fen_case bad_fens[] = {
    {"", "FEN_EMPTY", "empty"},
    {"   ", "FEN_EMPTY", "empty"},
    {"9/9/9 w", "FEN_RANK_COUNT", "has 3 ranks"},
    {"4k4/9/9/9/9/9/9/9/9/4K4/9 w", "FEN_RANK_COUNT", "more than 10 ranks"},
    {"rnbakabn/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w", "FEN_RANK_WIDTH",
     "FEN rank 1 (ICCS rank 9) covers 8 points"},
    {"rnbakabnr1/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w", "FEN_RANK_WIDTH",
     "covers more than 9"},
    {"rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNX w", "FEN_BAD_CHAR",
     "unknown character 'X' in FEN rank 10"},
    {"rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBA1ABNR w", "FEN_NO_GENERAL",
     "Red has no general"},
    {"3k5/9/9/9/9/9/9/9/3K5/4K4 w", "FEN_EXTRA_GENERAL", "Red has more than one general"},
    {"3k5/9/9/9/9/9/9/9/rrr6/4K4 w", "FEN_TOO_MANY", "Black has more than 2 chariots"},
    {"3k5/9/9/9/9/ppppp4/p8/9/9/4K4 w", "FEN_TOO_MANY", "more than 5 soldiers"},
    {"3k5/9/9/9/9/9/9/9/9/K8 w", "FEN_GENERAL_SQUARE", "Red general on a0"},
    {"4k4/9/9/9/9/9/9/4n4/3A5/3K5 w", "FEN_ADVISOR_SQUARE", "Red advisor on d1"},
    {"3k5/9/9/9/9/9/9/9/9/1B2K4 w", "FEN_ELEPHANT_SQUARE", "Red elephant on b0"},
    {"3k5/9/9/9/9/9/9/9/9/4K4 w", NULL, NULL}, /* bare generals on different files: fine */
    {"3k5/9/9/9/9/9/1P7/9/9/4K4 w", "FEN_PAWN_SQUARE", "Red soldier on b3"},
    {"3k5/9/9/9/9/9/9/P8/9/4K4 w", "FEN_PAWN_SQUARE", "Red soldier on a2"},
    {"3k5/9/p8/9/9/9/9/9/9/4K4 w", "FEN_PAWN_SQUARE", "Black soldier on a7"},
    {"3k5/9/9/1p7/9/9/9/9/9/4K4 w", "FEN_PAWN_SQUARE", "Black soldier on b6"},
    {"3k5/9/9/p8/9/9/9/9/9/4K4 w", NULL, NULL}, /* a6 is a Black start point */
    {"3k5/9/9/9/9/9/9/9/9/4K4 x", "FEN_SIDE", "got 'x'"},
    {"3k5/9/9/9/9/9/9/9/9/4K4 w KQ", "FEN_FIELD", "field 3 must be '-'"},
    {"3k5/9/9/9/9/9/9/9/9/4K4 w - e3", "FEN_FIELD", "field 4 must be '-'"},
    {"3k5/9/9/9/9/9/9/9/9/4K4 w - - x 1", "FEN_HALFMOVE", "got 'x'"},
    {"3k5/9/9/9/9/9/9/9/9/4K4 w - - 1000 1", "FEN_HALFMOVE", "0 to 999"},
    {"3k5/9/9/9/9/9/9/9/9/4K4 w - - 0 0", "FEN_FULLMOVE", "got '0'"},
    {"3k5/9/9/9/9/9/9/9/9/4K4 w - - 0 1 extra", "FEN_EXTRA_FIELDS", "extra text 'extra'"},
    {"4k4/9/9/9/9/9/9/9/9/4K4 w", "FEN_GENERALS_FACE", "face each other on file e"},
    {"4k4/9/9/9/9/9/9/9/4R4/3K5 w", "FEN_OPPONENT_IN_CHECK", "Black is in check"},
};

static void fen_errors_have_precise_codes(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    char before[CDSH_XQ_FEN_MAX], after[CDSH_XQ_FEN_MAX];
    cdsh_xq_pos_fen(pos, before);
    for (size_t i = 0; i < sizeof bad_fens / sizeof bad_fens[0]; i++) {
        cdsh_error err = {0};
        int rc = cdsh_xq_pos_set_fen(pos, bad_fens[i].fen, &err);
        if (!bad_fens[i].code) {
            assert_int_equal(rc, 0);
            cdsh_xq_pos_set_start(pos);
            continue;
        }
        if (rc != CDSH_EINVAL || strcmp(err.code, bad_fens[i].code) != 0 ||
            !strstr(err.message, bad_fens[i].needle))
            fail_msg("FEN '%s': got rc %d code %s message '%s'", bad_fens[i].fen, rc, err.code,
                     err.message);
        assert_non_null(cdsh_xq_error_zh(err.code));
        /* a failed parse leaves the position alone */
        cdsh_xq_pos_fen(pos, after);
        assert_string_equal(after, before);
    }
    assert_string_equal(cdsh_xq_error_zh("FEN_GENERALS_FACE"), "将帅照面");
    assert_null(cdsh_xq_error_zh("NO_SUCH_CODE"));
    cdsh_xq_pos_free(pos);
}

static void board_queries_report_pieces(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    assert_int_equal(cdsh_xq_piece_at(pos, cdsh_xq_square(7, 2)),
                     cdsh_xq_piece_make(CDSH_XQ_RED, CDSH_XQ_CANNON));
    assert_int_equal(cdsh_xq_piece_at(pos, cdsh_xq_square(4, 9)),
                     cdsh_xq_piece_make(CDSH_XQ_BLACK, CDSH_XQ_KING));
    assert_int_equal(cdsh_xq_piece_at(pos, cdsh_xq_square(4, 4)), CDSH_XQ_NO_PIECE);
    assert_int_equal(cdsh_xq_king_square(pos, CDSH_XQ_RED), cdsh_xq_square(4, 0));
    assert_int_equal(cdsh_xq_count(pos, CDSH_XQ_BLACK, CDSH_XQ_PAWN), 5);
    cdsh_xq_square_t sq[5];
    assert_int_equal(cdsh_xq_pieces(pos, CDSH_XQ_RED, CDSH_XQ_HORSE, sq), 2);
    assert_int_equal(sq[0], cdsh_xq_square(1, 0));
    assert_int_equal(sq[1], cdsh_xq_square(7, 0));
    assert_int_equal(cdsh_xq_square_index90(cdsh_xq_square(7, 2)), 70);
    assert_int_equal(cdsh_xq_square_from_index90(67), cdsh_xq_square(4, 2));
    assert_int_equal(cdsh_xq_piece_char(cdsh_xq_piece_make(CDSH_XQ_BLACK, CDSH_XQ_ELEPHANT)), 'b');
    assert_false(cdsh_xq_in_check(pos));
    cdsh_xq_pos_free(pos);
}

static void make_unmake_restores_everything_over_random_playouts(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = malloc(sizeof *pos), *copy = malloc(sizeof *copy);
    cdsh_xq_pos *probe = cdsh_xq_pos_new();
    unsigned seed = 12345;
    cdsh_xq_move_t moves[CDSH_XQ_MAX_MOVES];
    char fen[CDSH_XQ_FEN_MAX];
    for (int game = 0; game < PLAYOUTS; game++) {
        cdsh_xq_pos_set_start(pos);
        for (int ply = 0; ply < 150; ply++) {
            int n = cdsh_xq_gen_legal(pos, moves);
            if (n == 0)
                break;
            /* every legal move is undone exactly */
            memcpy(copy, pos, sizeof *pos);
            for (int i = 0; i < n; i++) {
                cdsh_xq_make_move(pos, moves[i]);
                assert_int_equal(cdsh_xq_hash(pos), cdsh_xq_hash_compute(pos));
                assert_int_equal(cdsh_xq_in_check(pos),
                                 cdsh_xq_king_attacked(pos, cdsh_xq_side_to_move(pos)));
                cdsh_xq_unmake_move(pos);
                assert_memory_equal(pos->board, copy->board, sizeof pos->board);
                assert_memory_equal(pos->where, copy->where, sizeof pos->where);
                assert_memory_equal(pos->count, copy->count, sizeof pos->count);
                assert_int_equal(cdsh_xq_hash(pos), cdsh_xq_hash(copy));
                assert_int_equal(pos->fullmove, copy->fullmove);
                assert_int_equal(pos->side, copy->side);
            }
            seed = seed * 1103515245u + 12345u;
            cdsh_xq_make_move(pos, moves[(seed >> 16) % (unsigned)n]);
            /* FEN round trip of the reached position, hash included */
            cdsh_xq_pos_fen(pos, fen);
            assert_int_equal(cdsh_xq_pos_set_fen(probe, fen, NULL), 0);
            for (int sq = 0; sq < 256; sq++)
                assert_int_equal(cdsh_xq_piece_at(probe, (cdsh_xq_square_t)sq),
                                 cdsh_xq_piece_at(pos, (cdsh_xq_square_t)sq));
            assert_int_equal(cdsh_xq_hash(probe), cdsh_xq_hash(pos));
            assert_int_equal(cdsh_xq_halfmove(probe), cdsh_xq_halfmove(pos));
        }
        /* unwinding the whole game returns to the start */
        while (cdsh_xq_ply(pos) > 0)
            cdsh_xq_unmake_move(pos);
        cdsh_xq_pos_fen(pos, fen);
        assert_string_equal(fen, CDSH_XQ_START_FEN);
        assert_int_equal(cdsh_xq_hash(pos), cdsh_xq_hash_compute(pos));
    }
    free(pos);
    free(copy);
    cdsh_xq_pos_free(probe);
}

static void null_move_flips_side_and_hash(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    uint64_t h = cdsh_xq_hash(pos);
    cdsh_xq_make_null(pos);
    assert_int_equal(cdsh_xq_side_to_move(pos), CDSH_XQ_BLACK);
    assert_int_equal(cdsh_xq_hash(pos), h ^ cdsh_xq_zobrist_side());
    assert_int_equal(cdsh_xq_hash(pos), cdsh_xq_hash_compute(pos));
    cdsh_xq_unmake_null(pos);
    assert_int_equal(cdsh_xq_hash(pos), h);
    assert_int_equal(cdsh_xq_side_to_move(pos), CDSH_XQ_RED);
    cdsh_xq_pos_free(pos);
}

static void zobrist_keys_are_the_documented_sequence(void **state)
{
    (void)state;
    /* splitmix64 from the fixed seed: the first draw is piece 0, square 0 */
    uint64_t s = CDSH_XQ_ZOBRIST_SEED + 0x9E3779B97F4A7C15ull;
    uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    assert_int_equal(cdsh_xq_zobrist_piece(0, 0), z);
    assert_int_not_equal(cdsh_xq_zobrist_side(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fen_round_trips_exactly),
        cmocka_unit_test(fen_accepts_synonyms_and_short_forms),
        cmocka_unit_test(fen_errors_have_precise_codes),
        cmocka_unit_test(board_queries_report_pieces),
        cmocka_unit_test(make_unmake_restores_everything_over_random_playouts),
        cmocka_unit_test(null_move_flips_side_and_hash),
        cmocka_unit_test(zobrist_keys_are_the_documented_sequence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
