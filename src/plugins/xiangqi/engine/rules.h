/* rules.h — end of game: checkmate and stalemate (both lose for the side to
 * move), repetition with perpetual check and then perpetual chase losing
 * (Pikafish/FSF simplified rules), the no-capture move rule
 * (120 plies by default) and the bare-material draw. The full rule set, with
 * its simplifications, is documented in docs/xiangqi-engine.md.
 * Thread-safety: as position.h. */
#ifndef CDSH_XQ_RULES_H
#define CDSH_XQ_RULES_H

#include "plugins/xiangqi/engine/position.h"

typedef enum cdsh_xq_outcome {
    CDSH_XQ_ONGOING = 0,
    CDSH_XQ_RED_WINS,
    CDSH_XQ_BLACK_WINS,
    CDSH_XQ_DRAW,
} cdsh_xq_outcome;

typedef enum cdsh_xq_reason {
    CDSH_XQ_REASON_NONE = 0,
    CDSH_XQ_REASON_CHECKMATE,       /* no legal move, in check */
    CDSH_XQ_REASON_STALEMATE,       /* no legal move, not in check (a loss in xiangqi) */
    CDSH_XQ_REASON_PERPETUAL_CHECK, /* repetition where one side checked on every move */
    CDSH_XQ_REASON_REPETITION,      /* repetition without a one-sided perpetual check or chase */
    CDSH_XQ_REASON_MOVE_RULE,       /* move_rule_plies plies without a capture */
    CDSH_XQ_REASON_BARE_MATERIAL,   /* no chariot, horse, cannon or soldier on the board */
    CDSH_XQ_REASON_PERPETUAL_CHASE, /* repetition where one side chased a piece throughout */
} cdsh_xq_reason;

typedef struct cdsh_xq_rules {
    int move_rule_plies; /* plies without capture that draw; default 120; 0 = off */
    int repetitions;     /* occurrences of a position that end the game; default 3 */
} cdsh_xq_rules;

#define CDSH_XQ_DEFAULT_MOVE_RULE 120
#define CDSH_XQ_DEFAULT_REPETITIONS 3

void cdsh_xq_rules_default(cdsh_xq_rules *rules);

typedef struct cdsh_xq_result {
    cdsh_xq_outcome outcome;
    cdsh_xq_reason reason;
} cdsh_xq_result;

/* Game status of the position, judged in this order: no legal move (loss
 * for the side to move), repetition, move rule, bare material. rules may be
 * NULL for the defaults. The position is left unchanged. */
cdsh_xq_result cdsh_xq_status(cdsh_xq_pos *pos, const cdsh_xq_rules *rules);

/* Stable lower-case names: "ongoing", "red_wins", "black_wins", "draw";
 * "none", "checkmate", "stalemate", "perpetual_check", "repetition",
 * "move_rule", "bare_material", "perpetual_chase". */
const char *cdsh_xq_outcome_name(cdsh_xq_outcome o);
const char *cdsh_xq_reason_name(cdsh_xq_reason r);

/* Repetition verdict from the side to move's point of view. */
typedef enum cdsh_xq_rep {
    CDSH_XQ_REP_NONE = 0,   /* not repeated often enough */
    CDSH_XQ_REP_DRAW,       /* repeated; no one-sided perpetual check or chase */
    CDSH_XQ_REP_WIN,        /* the opponent gave check with every move of the cycle */
    CDSH_XQ_REP_LOSS,       /* the side to move gave check with every move of the cycle */
    CDSH_XQ_REP_CHASE_WIN,  /* no perpetual check, no check at all; the opponent chased */
    CDSH_XQ_REP_CHASE_LOSS, /* no perpetual check, no check at all; the side to move chased */
} cdsh_xq_rep;

/* Looks back over the plies since the last capture (and since the last null
 * move) for `earlier` earlier occurrences of the current position with the
 * same side to move (2 = threefold for a game; search uses 1). The cycle
 * judged is the span from the oldest counted occurrence to now: perpetual
 * check first (one side checked with every move, the other not); else, if
 * no move of the cycle gave check, perpetual chase (one side, not both,
 * attacked the same enemy piece anew after each of its moves and that attack
 * is a chase: see docs/xiangqi-engine.md); else a draw. */
cdsh_xq_rep cdsh_xq_repetition(const cdsh_xq_pos *pos, int earlier);

/* Squares of the enemy pieces that `side` attacks as a chase in this
 * position (the per-position half of the perpetual-chase test: attacker not
 * a general or soldier, target not the general or an uncrossed soldier, the
 * capture legal, the target stronger or without a legal recapture, same-type
 * attacks only when the target cannot hit back). Returns how many. */
int cdsh_xq_chased(const cdsh_xq_pos *pos, int side, cdsh_xq_square_t out[16]);

/* 1 if neither side has a chariot, horse, cannon or soldier. */
int cdsh_xq_bare_material(const cdsh_xq_pos *pos);

#endif
