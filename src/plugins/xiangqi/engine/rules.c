/* rules.c — game status: no-move loss, repetition with perpetual check and
 * perpetual chase (the chase test is chase.c), move rule and bare material. */
#include "plugins/xiangqi/engine/rules.h"

#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/xq_internal.h"

void cdsh_xq_rules_default(cdsh_xq_rules *rules)
{
    rules->move_rule_plies = CDSH_XQ_DEFAULT_MOVE_RULE;
    rules->repetitions = CDSH_XQ_DEFAULT_REPETITIONS;
}

int cdsh_xq_bare_material(const cdsh_xq_pos *pos)
{
    for (int s = 0; s < 2; s++)
        if (pos->count[s][CDSH_XQ_CHARIOT] || pos->count[s][CDSH_XQ_HORSE] ||
            pos->count[s][CDSH_XQ_CANNON] || pos->count[s][CDSH_XQ_PAWN])
            return 0;
    return 1;
}

cdsh_xq_rep cdsh_xq_repetition(const cdsh_xq_pos *pos, int earlier)
{
    const int ply = pos->ply;
    if (earlier < 1)
        earlier = 1;
    int end = ply - pos->st[ply].halfmove;
    if (end < 0)
        end = 0;
    for (int j = ply; j > end; j--)
        if (pos->st[j].move == CDSH_XQ_MOVE_NONE) {
            end = j;
            break;
        }
    const uint64_t h = pos->st[ply].hash;
    int found = 0, first = -1;
    for (int i = ply - 4; i >= end && found < earlier; i -= 2)
        if (pos->st[i].hash == h) {
            found++;
            first = i;
        }
    if (found < earlier)
        return CDSH_XQ_REP_NONE;
    /* the move leading to state i was made by the opponent when ply - i is even */
    int opp_all = 1, own_all = 1, any_check = 0;
    for (int i = first + 1; i <= ply; i++) {
        if ((ply - i) % 2 == 0)
            opp_all &= pos->st[i].in_check;
        else
            own_all &= pos->st[i].in_check;
        any_check |= pos->st[i].in_check;
    }
    if (opp_all && !own_all)
        return CDSH_XQ_REP_WIN;
    if (own_all && !opp_all)
        return CDSH_XQ_REP_LOSS;
    if (any_check)
        return CDSH_XQ_REP_DRAW; /* both checked throughout, or a check in the cycle:
                                    the check rule decides, not the chase rule */
    switch (cdsh__xq_chase_verdict(pos, first)) {
    case 1: return CDSH_XQ_REP_CHASE_WIN;
    case -1: return CDSH_XQ_REP_CHASE_LOSS;
    default: return CDSH_XQ_REP_DRAW;
    }
}

static cdsh_xq_outcome winner(int side)
{
    return side == CDSH_XQ_RED ? CDSH_XQ_RED_WINS : CDSH_XQ_BLACK_WINS;
}

cdsh_xq_result cdsh_xq_status(cdsh_xq_pos *pos, const cdsh_xq_rules *rules)
{
    cdsh_xq_rules def;
    if (!rules) {
        cdsh_xq_rules_default(&def);
        rules = &def;
    }
    const int side = pos->side;
    cdsh_xq_result r = {CDSH_XQ_ONGOING, CDSH_XQ_REASON_NONE};
    if (!cdsh_xq_has_legal_move(pos)) {
        r.outcome = winner(side ^ 1);
        r.reason = cdsh_xq_in_check(pos) ? CDSH_XQ_REASON_CHECKMATE : CDSH_XQ_REASON_STALEMATE;
        return r;
    }
    if (rules->repetitions >= 2) {
        switch (cdsh_xq_repetition(pos, rules->repetitions - 1)) {
        case CDSH_XQ_REP_WIN:
            r.outcome = winner(side);
            r.reason = CDSH_XQ_REASON_PERPETUAL_CHECK;
            return r;
        case CDSH_XQ_REP_LOSS:
            r.outcome = winner(side ^ 1);
            r.reason = CDSH_XQ_REASON_PERPETUAL_CHECK;
            return r;
        case CDSH_XQ_REP_CHASE_WIN:
            r.outcome = winner(side);
            r.reason = CDSH_XQ_REASON_PERPETUAL_CHASE;
            return r;
        case CDSH_XQ_REP_CHASE_LOSS:
            r.outcome = winner(side ^ 1);
            r.reason = CDSH_XQ_REASON_PERPETUAL_CHASE;
            return r;
        case CDSH_XQ_REP_DRAW:
            r.outcome = CDSH_XQ_DRAW;
            r.reason = CDSH_XQ_REASON_REPETITION;
            return r;
        case CDSH_XQ_REP_NONE: break;
        }
    }
    if (rules->move_rule_plies > 0 && cdsh_xq_halfmove(pos) >= rules->move_rule_plies) {
        r.outcome = CDSH_XQ_DRAW;
        r.reason = CDSH_XQ_REASON_MOVE_RULE;
        return r;
    }
    if (cdsh_xq_bare_material(pos)) {
        r.outcome = CDSH_XQ_DRAW;
        r.reason = CDSH_XQ_REASON_BARE_MATERIAL;
    }
    return r;
}

const char *cdsh_xq_outcome_name(cdsh_xq_outcome o)
{
    switch (o) {
    case CDSH_XQ_ONGOING: return "ongoing";
    case CDSH_XQ_RED_WINS: return "red_wins";
    case CDSH_XQ_BLACK_WINS: return "black_wins";
    case CDSH_XQ_DRAW: return "draw";
    }
    return "unknown";
}

const char *cdsh_xq_reason_name(cdsh_xq_reason r)
{
    switch (r) {
    case CDSH_XQ_REASON_NONE: return "none";
    case CDSH_XQ_REASON_CHECKMATE: return "checkmate";
    case CDSH_XQ_REASON_STALEMATE: return "stalemate";
    case CDSH_XQ_REASON_PERPETUAL_CHECK: return "perpetual_check";
    case CDSH_XQ_REASON_REPETITION: return "repetition";
    case CDSH_XQ_REASON_MOVE_RULE: return "move_rule";
    case CDSH_XQ_REASON_BARE_MATERIAL: return "bare_material";
    case CDSH_XQ_REASON_PERPETUAL_CHASE: return "perpetual_chase";
    }
    return "unknown";
}
