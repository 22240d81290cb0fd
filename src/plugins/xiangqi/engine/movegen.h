/* movegen.h — move generation into caller buffers (all pseudo-legal moves,
 * captures only, legal moves), fast legality of a generated move, and the
 * checked path for moves that come from outside (a person, a GUI, a model):
 * parse + legality with a precise reason, and play.
 * Thread-safety: as position.h (one position per thread). */
#ifndef CDSH_XQ_MOVEGEN_H
#define CDSH_XQ_MOVEGEN_H

#include "base/err.h"
#include "plugins/xiangqi/engine/move.h"
#include "plugins/xiangqi/engine/position.h"

/* Buffer size that always suffices for one position's moves (the most
 * pseudo-legal moves one side can have is below 120). */
#define CDSH_XQ_MAX_MOVES 128

/* Pseudo-legal moves (piece rules and blocking obeyed; may leave the own
 * general attacked). Returns the number written. */
int cdsh_xq_gen_pseudo(const cdsh_xq_pos *pos, cdsh_xq_move_t *out);
/* Pseudo-legal captures only (for quiescence). */
int cdsh_xq_gen_captures(const cdsh_xq_pos *pos, cdsh_xq_move_t *out);
/* Pseudo-legal non-captures only. */
int cdsh_xq_gen_quiets(const cdsh_xq_pos *pos, cdsh_xq_move_t *out);

/* Is the pseudo-legal move m legal (own general not attacked afterwards,
 * flying general included)? Most moves are decided without touching the
 * board; otherwise the board is changed and restored, hence non-const. */
int cdsh_xq_is_legal(cdsh_xq_pos *pos, cdsh_xq_move_t m);
/* Does m obey the piece rules in this position (any 16-bit value accepted,
 * e.g. a move from the transposition table)? Does not test self-check. */
int cdsh_xq_is_pseudo_legal(const cdsh_xq_pos *pos, cdsh_xq_move_t m);

/* Legal moves / legal captures. */
int cdsh_xq_gen_legal(cdsh_xq_pos *pos, cdsh_xq_move_t *out);
int cdsh_xq_gen_legal_captures(cdsh_xq_pos *pos, cdsh_xq_move_t *out);
/* Number of legal moves (perft's bulk count); 1 if any, stops early. */
int cdsh_xq_count_legal(cdsh_xq_pos *pos);
int cdsh_xq_has_legal_move(cdsh_xq_pos *pos);

/* Checks an arbitrary move against the position. Returns 0 if legal, else
 * CDSH_EINVAL with one of: MOVE_NO_PIECE, MOVE_NOT_YOUR_PIECE, MOVE_OWN_PIECE,
 * MOVE_ILLEGAL_FOR_PIECE, MOVE_SELF_CHECK, MOVE_GENERALS_FACE (English
 * message in err; cdsh_xq_error_zh(code) for Chinese). */
int cdsh_xq_move_check(const cdsh_xq_pos *pos, cdsh_xq_move_t m, cdsh_error *err);

/* Parses ICCS/UCI text ("h2e2", "H2-E2") and checks it as above
 * (MOVE_SYNTAX for malformed text). */
int cdsh_xq_parse_move(const cdsh_xq_pos *pos, const char *text, cdsh_xq_move_t *out,
                       cdsh_error *err);

/* Checked make: cdsh_xq_move_check, then refuses with MOVE_HISTORY_FULL
 * (CDSH_ETOOBIG) when the undo stack is full, then makes the move. */
int cdsh_xq_play(cdsh_xq_pos *pos, cdsh_xq_move_t m, cdsh_error *err);

#endif
