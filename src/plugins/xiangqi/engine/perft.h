/* perft.h — legal-move path counting with bulk counting at the last ply
 * (the counts equal plain perft), and a per-root-move "divide".
 * Thread-safety: as position.h; the position is restored on return. */
#ifndef CDSH_XQ_PERFT_H
#define CDSH_XQ_PERFT_H

#include <stdint.h>

#include "plugins/xiangqi/engine/position.h"

/* Leaf count at `depth` (0 -> 1). The caller keeps depth within the undo
 * stack (depth <= CDSH_XQ_MAX_PLY - cdsh_xq_ply(pos)). */
uint64_t cdsh_xq_perft(cdsh_xq_pos *pos, int depth);

/* Called after each root move with its count; index counts from 0 of total
 * root moves. Return nonzero to stop early. */
typedef int (*cdsh_xq_divide_fn)(cdsh_xq_move_t m, uint64_t nodes, int index, int total,
                                 void *user);

/* perft per legal root move, in generator order; returns the sum so far
 * (all root moves unless fn stopped it). depth >= 1. */
uint64_t cdsh_xq_perft_divide(cdsh_xq_pos *pos, int depth, cdsh_xq_divide_fn fn, void *user);

#endif
