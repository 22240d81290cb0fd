/* xq_position.h — building xiangqi positions in tests: from a FEN, and by
 * playing ICCS moves; each fails the test on
 * bad input. */
#ifndef CDSH_TEST_XQ_POSITION_H
#define CDSH_TEST_XQ_POSITION_H

#include "plugins/xiangqi/engine/position.h"

/* A new position (owned: cdsh_xq_pos_free). */
cdsh_xq_pos *cdsh_test_xq_pos(const char *fen);

/* Plays the space-separated moves, in ICCS ("h2e2"). */
void cdsh_test_xq_play(cdsh_xq_pos *pos, const char *moves);

#endif
