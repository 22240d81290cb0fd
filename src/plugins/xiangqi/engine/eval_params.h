/* eval_params.h — every evaluation weight in one place: material and
 * piece-square tables (middlegame and endgame), mobility, king safety and
 * soldier structure. Tune here (docs/xiangqi-engine.md, "Tuning"); eval.c
 * only reads cdsh_xq_eval_params. */
#ifndef CDSH_XQ_EVAL_PARAMS_H
#define CDSH_XQ_EVAL_PARAMS_H

/* Tables are written from the owner's side: row 0 = the owner's back rank,
 * row 9 = the enemy back rank; columns are files a..i seen from Red (the
 * tables are left-right symmetric, so Black uses the same columns). Values
 * are added on top of the material value, in centipawns. */
typedef struct cdsh_xq_eval_params {
    /* material per type (index = CDSH_XQ_* type; 0 and the general unused) */
    int value_mg[8];
    int value_eg[8];
    /* piece-square tables per type [type][row][file] */
    int pst_mg[8][10][9];
    int pst_eg[8][10][9];
    /* mobility: centipawns per reachable point (beyond `mob_base`) */
    int mob_chariot_mg, mob_chariot_eg;
    int mob_horse_mg, mob_horse_eg;
    int mob_cannon_mg, mob_cannon_eg;
    int mob_base_chariot, mob_base_horse, mob_base_cannon;
    /* king safety (middlegame weights, scaled by the attacker's material) */
    int ks_missing_advisor;  /* per missing advisor, per unit of enemy attack */
    int ks_missing_elephant; /* per missing elephant, per unit of enemy attack */
    int ks_central_cannon;   /* enemy cannon on the general's file, one screen */
    int ks_empty_cannon;     /* enemy cannon on the general's file, nothing between */
    int ks_chariot_file;     /* enemy chariot on the general's file or an open palace file */
    int ks_near_attacker;    /* enemy horse/soldier/chariot in or next to the palace */
    int ks_king_exposed;     /* general off its home file while enemy chariots remain */
    /* soldiers */
    int pawn_connected_mg, pawn_connected_eg; /* crossed soldiers side by side */
    int pawn_blocked_mg;                      /* uncrossed soldier facing a piece (own or enemy) */
    /* side to move bonus */
    int tempo;
    /* phase weights: a chariot, horse or cannon counts this much (max 2 each side) */
    int phase_chariot, phase_horse, phase_cannon;
} cdsh_xq_eval_params;

/* The defaults (hand-set, then checked against Fairy-Stockfish in matches;
 * see docs). */
#define CDSH_XQ_EVAL_PARAMS_DEFAULT                                                                \
    {                                                                                              \
        .value_mg = {0, 0, 130, 130, 290, 650, 320, 40},                                           \
        .value_eg = {0, 0, 110, 110, 320, 700, 290, 60},                                           \
        .pst_mg =                                                                                  \
            {                                                                                      \
                [1] = /* general */                                                                \
                {{0, 0, 0, -6, 0, -6, 0, 0, 0},                                                    \
                 {0, 0, 0, -12, -8, -12, 0, 0, 0},                                                 \
                 {0, 0, 0, -25, -20, -25, 0, 0, 0}},                                               \
                [2] = /* advisor */                                                                \
                {{0, 0, 0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 4, 0, 0, 0, 0}},                        \
                [3] = /* elephant */                                                               \
                {{0, 0, 2, 0, 0, 0, 2, 0, 0},                                                      \
                 {0},                                                                              \
                 {-2, 0, 0, 0, 4, 0, 0, 0, -2},                                                    \
                 {0},                                                                              \
                 {0, 0, -2, 0, 0, 0, -2, 0, 0}},                                                   \
                [4] = /* horse */                                                                  \
                {{-20, -10, -5, -5, -15, -5, -5, -10, -20},                                        \
                 {-10, -5, 0, 5, -10, 5, 0, -5, -10},                                              \
                 {-5, 5, 10, 8, 5, 8, 10, 5, -5},                                                  \
                 {0, 5, 10, 12, 10, 12, 10, 5, 0},                                                 \
                 {0, 10, 14, 16, 14, 16, 14, 10, 0},                                               \
                 {5, 12, 18, 20, 18, 20, 18, 12, 5},                                               \
                 {5, 15, 20, 25, 22, 25, 20, 15, 5},                                               \
                 {5, 18, 24, 26, 24, 26, 24, 18, 5},                                               \
                 {0, 15, 25, 20, 15, 20, 25, 15, 0},                                               \
                 {-5, 0, 5, 10, 0, 10, 5, 0, -5}},                                                 \
                [5] = /* chariot */                                                                \
                {{-6, 6, 4, 12, 0, 12, 4, 6, -6},                                                  \
                 {5, 8, 6, 12, 0, 12, 6, 8, 5},                                                    \
                 {-2, 8, 4, 12, 12, 12, 4, 8, -2},                                                 \
                 {4, 9, 4, 12, 14, 12, 4, 9, 4},                                                   \
                 {8, 12, 12, 14, 15, 14, 12, 12, 8},                                               \
                 {8, 11, 11, 14, 15, 14, 11, 11, 8},                                               \
                 {6, 13, 13, 16, 16, 16, 13, 13, 6},                                               \
                 {6, 8, 7, 14, 16, 14, 7, 8, 6},                                                   \
                 {6, 12, 9, 16, 33, 16, 9, 12, 6},                                                 \
                 {6, 8, 7, 13, 14, 13, 7, 8, 6}},                                                  \
                [6] = /* cannon */                                                                 \
                {{0, 0, 2, 6, 6, 6, 2, 0, 0},                                                      \
                 {0, 2, 4, 4, 4, 4, 4, 2, 0},                                                      \
                 {2, 2, 2, 6, 10, 6, 2, 2, 2},                                                     \
                 {0, 0, 0, 2, 6, 2, 0, 0, 0},                                                      \
                 {-2, 0, 2, 2, 6, 2, 2, 0, -2},                                                    \
                 {0, 0, 0, 2, 6, 2, 0, 0, 0},                                                      \
                 {0, 2, 2, 2, 8, 2, 2, 2, 0},                                                      \
                 {2, 2, 0, -4, -6, -4, 0, 2, 2},                                                   \
                 {4, 4, 0, -6, -8, -6, 0, 4, 4},                                                   \
                 {8, 8, 0, -4, -8, -4, 0, 8, 8}},                                                  \
                [7] = /* soldier */                                                                \
                {{0},                                                                              \
                 {0},                                                                              \
                 {0},                                                                              \
                 {0, 0, 0, 0, 4, 0, 0, 0, 0},                                                      \
                 {2, 0, 6, 0, 10, 0, 6, 0, 2},                                                     \
                 {20, 28, 34, 40, 42, 40, 34, 28, 20},                                             \
                 {28, 40, 50, 58, 60, 58, 50, 40, 28},                                             \
                 {34, 48, 60, 70, 72, 70, 60, 48, 34},                                             \
                 {30, 44, 58, 70, 76, 70, 58, 44, 30},                                             \
                 {10, 14, 20, 30, 34, 30, 20, 14, 10}},                                            \
            },                                                                                     \
        .pst_eg =                                                                                  \
            {                                                                                      \
                [4] = /* horse: centre matters more than depth */                                  \
                {{-20, -10, -5, -5, -10, -5, -5, -10, -20},                                        \
                 {-10, 0, 5, 5, 0, 5, 5, 0, -10},                                                  \
                 {-5, 5, 10, 10, 10, 10, 10, 5, -5},                                               \
                 {-5, 5, 10, 15, 15, 15, 10, 5, -5},                                               \
                 {-5, 5, 12, 15, 15, 15, 12, 5, -5},                                               \
                 {-5, 5, 12, 15, 15, 15, 12, 5, -5},                                               \
                 {-5, 8, 15, 18, 18, 18, 15, 8, -5},                                               \
                 {-5, 8, 15, 20, 20, 20, 15, 8, -5},                                               \
                 {-5, 5, 12, 15, 15, 15, 12, 5, -5},                                               \
                 {-10, 0, 5, 5, 0, 5, 5, 0, -10}},                                                 \
                [5] = /* chariot */                                                                \
                {{0},                                                                              \
                 {0},                                                                              \
                 {0},                                                                              \
                 {0},                                                                              \
                 {5, 5, 5, 5, 5, 5, 5, 5, 5},                                                      \
                 {5, 5, 5, 5, 5, 5, 5, 5, 5},                                                      \
                 {8, 8, 8, 10, 10, 10, 8, 8, 8},                                                   \
                 {8, 8, 8, 10, 10, 10, 8, 8, 8},                                                   \
                 {8, 8, 8, 10, 12, 10, 8, 8, 8},                                                   \
                 {0}},                                                                             \
                [6] = /* cannon: likes its own side late */                                        \
                {{4, 4, 4, 6, 6, 6, 4, 4, 4},                                                      \
                 {4, 4, 4, 6, 8, 6, 4, 4, 4},                                                      \
                 {2, 2, 2, 4, 6, 4, 2, 2, 2}},                                                     \
                [7] = /* soldier: the endgame wants them near the palace, not on the last rank */  \
                {{0},                                                                              \
                 {0},                                                                              \
                 {0},                                                                              \
                 {0, 0, 0, 0, 2, 0, 0, 0, 0},                                                      \
                 {2, 0, 4, 0, 8, 0, 4, 0, 2},                                                      \
                 {30, 36, 44, 50, 52, 50, 44, 36, 30},                                             \
                 {40, 50, 62, 70, 74, 70, 62, 50, 40},                                             \
                 {46, 58, 74, 86, 90, 86, 74, 58, 46},                                             \
                 {40, 52, 70, 86, 90, 86, 70, 52, 40},                                             \
                 {0, 4, 10, 16, 20, 16, 10, 4, 0}},                                                \
            },                                                                                     \
        .mob_chariot_mg = 6, .mob_chariot_eg = 7, .mob_horse_mg = 8, .mob_horse_eg = 8,            \
        .mob_cannon_mg = 3, .mob_cannon_eg = 2, .mob_base_chariot = 6, .mob_base_horse = 3,        \
        .mob_base_cannon = 5, .ks_missing_advisor = 6, .ks_missing_elephant = 4,                   \
        .ks_central_cannon = 30, .ks_empty_cannon = 60, .ks_chariot_file = 25,                     \
        .ks_near_attacker = 12, .ks_king_exposed = 10, .pawn_connected_mg = 10,                    \
        .pawn_connected_eg = 20, .pawn_blocked_mg = 4, .tempo = 10, .phase_chariot = 4,            \
        .phase_horse = 2, .phase_cannon = 2,                                                       \
    }

#endif
