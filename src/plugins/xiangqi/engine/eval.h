/* eval.h — static evaluation: material, piece-square tables, mobility, king
 * safety and soldier structure, tapered between middlegame and endgame by
 * the remaining chariots, horses and cannons. All weights are in
 * eval_params.h. Thread-safety: cdsh_xq_eval_tables are read-only once
 * built, so one table set may be shared by any number of threads. */
#ifndef CDSH_XQ_EVAL_H
#define CDSH_XQ_EVAL_H

#include "plugins/xiangqi/engine/eval_params.h"
#include "plugins/xiangqi/engine/position.h"

/* Mate scores: a mate found n plies from the root scores
 * CDSH_XQ_MATE - n (or -(CDSH_XQ_MATE - n) when mated). Any |score| >=
 * CDSH_XQ_MATE_BOUND is a mate. */
#define CDSH_XQ_MATE 30000
#define CDSH_XQ_MATE_BOUND (CDSH_XQ_MATE - 1000)
#define CDSH_XQ_INFINITE 32000

/* Tables derived from one parameter set (material folded into the
 * piece-square tables, per side and mailbox square). */
typedef struct cdsh_xq_eval_tables {
    cdsh_xq_eval_params params;
    short psq_mg[16][256]; /* index = public piece value (type | side << 3) */
    short psq_eg[16][256];
    int phase_max;
} cdsh_xq_eval_tables;

/* Builds tables from params (NULL: the defaults). */
void cdsh_xq_eval_tables_init(cdsh_xq_eval_tables *t, const cdsh_xq_eval_params *params);

/* The default tables (built once, shared, read-only). */
const cdsh_xq_eval_tables *cdsh_xq_eval_tables_default(void);

/* Static evaluation in centipawns from the side to move's point of view,
 * with the given tables (NULL: the defaults). No search, no mate test. */
int cdsh_xq_eval(const cdsh_xq_pos *pos, const cdsh_xq_eval_tables *t);

/* Score breakdown from Red's point of view (for `analyze` and tuning). */
typedef struct cdsh_xq_eval_terms {
    int material_psq; /* tapered material + piece-square */
    int mobility;
    int king_safety;
    int soldiers;
    int phase; /* 0 (bare endgame) .. phase_max (all pieces) */
    int phase_max;
    int total; /* Red's point of view, tempo excluded */
} cdsh_xq_eval_terms;
void cdsh_xq_eval_explain(const cdsh_xq_pos *pos, const cdsh_xq_eval_tables *t,
                          cdsh_xq_eval_terms *out);

/* Value of a piece type for move ordering (middlegame material). */
int cdsh_xq_piece_value(int type);

#endif
