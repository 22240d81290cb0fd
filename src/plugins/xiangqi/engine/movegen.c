/* movegen.c — pseudo-legal generation (one specialised loop per piece type
 * over the fixed piece slots), the fast legality filter and the checked path
 * with reasons. Rules of the game's end are in rules.c. */
#include "plugins/xiangqi/engine/movegen.h"

#include <stdlib.h>
#include <string.h>

#include "plugins/xiangqi/engine/movegen_inline.h"
#include "plugins/xiangqi/engine/xq_internal.h"

int cdsh_xq_gen_pseudo(const cdsh_xq_pos *pos, cdsh_xq_move_t *out)
{
    return cdsh__xq_gen(pos, out, XQ_GEN_ALL);
}

int cdsh_xq_gen_captures(const cdsh_xq_pos *pos, cdsh_xq_move_t *out)
{
    return cdsh__xq_gen(pos, out, XQ_GEN_CAPTURES);
}

int cdsh_xq_gen_quiets(const cdsh_xq_pos *pos, cdsh_xq_move_t *out)
{
    return cdsh__xq_gen(pos, out, XQ_GEN_QUIETS);
}

int cdsh_xq_is_legal(cdsh_xq_pos *pos, cdsh_xq_move_t m)
{
    return cdsh__xq_legal(pos, pos->where[16 + 16 * pos->side], cdsh_xq_in_check(pos), m);
}

static int filter_legal(cdsh_xq_pos *pos, cdsh_xq_move_t *out, int n)
{
    const int k = pos->where[16 + 16 * pos->side], chk = cdsh_xq_in_check(pos);
    int j = 0;
    for (int i = 0; i < n; i++)
        if (cdsh__xq_legal(pos, k, chk, out[i]))
            out[j++] = out[i];
    return j;
}

int cdsh_xq_gen_legal(cdsh_xq_pos *pos, cdsh_xq_move_t *out)
{
    return filter_legal(pos, out, cdsh__xq_gen(pos, out, XQ_GEN_ALL));
}

int cdsh_xq_gen_legal_captures(cdsh_xq_pos *pos, cdsh_xq_move_t *out)
{
    return filter_legal(pos, out, cdsh__xq_gen(pos, out, XQ_GEN_CAPTURES));
}

int cdsh_xq_count_legal(cdsh_xq_pos *pos)
{
    return cdsh__xq_count_legal(pos);
}

int cdsh_xq_has_legal_move(cdsh_xq_pos *pos)
{
    cdsh_xq_move_t buf[CDSH_XQ_MAX_MOVES];
    const int n = cdsh__xq_gen(pos, buf, XQ_GEN_ALL);
    const int k = pos->where[16 + 16 * pos->side], chk = cdsh_xq_in_check(pos);
    for (int i = 0; i < n; i++)
        if (cdsh__xq_legal(pos, k, chk, buf[i]))
            return 1;
    return 0;
}

/* Count of occupied points strictly between a and b on one line (step d). */
static int between(const uint8_t *b, int a, int z, int d)
{
    int n = 0;
    for (int x = a + d; x != z; x += d)
        n += b[x] != 0;
    return n;
}

int cdsh_xq_is_pseudo_legal(const cdsh_xq_pos *pos, cdsh_xq_move_t m)
{
    const int f = m & 0xFF, t = m >> 8, side = pos->side;
    if (!cdsh_xq_square_valid(f) || !cdsh_xq_square_valid(t) || f == t)
        return 0;
    const uint8_t *b = pos->board;
    const uint8_t pc = cdsh__xq_piece_of[b[f]], tp = cdsh__xq_piece_of[b[t]];
    if (!pc || (pc >> 3) != side || (tp && (tp >> 3) == side))
        return 0;
    const int d = t - f;
    const int df = (t & 15) - (f & 15), dr = (t >> 4) - (f >> 4);
    const uint8_t fl = cdsh__xq_sqflags[t];
    switch (pc & 7) {
    case CDSH_XQ_KING:
        return (d == 1 || d == -1 || d == 16 || d == -16) && (fl & XQ_F_PALACE(side));
    case CDSH_XQ_ADVISOR:
        return (d == 15 || d == -15 || d == 17 || d == -17) && (fl & XQ_F_PALACE(side));
    case CDSH_XQ_ELEPHANT:
        return (d == 30 || d == -30 || d == 34 || d == -34) && (fl & XQ_F_HALF(side)) &&
               !b[f + d / 2];
    case CDSH_XQ_HORSE: {
        int leg;
        if ((dr == 2 || dr == -2) && (df == 1 || df == -1))
            leg = f + dr / 2 * 16;
        else if ((df == 2 || df == -2) && (dr == 1 || dr == -1))
            leg = f + df / 2;
        else
            return 0;
        return !b[leg];
    }
    case CDSH_XQ_CHARIOT:
    case CDSH_XQ_CANNON: {
        if (df != 0 && dr != 0)
            return 0;
        const int step = df ? (df > 0 ? 1 : -1) : (dr > 0 ? 16 : -16);
        const int n = between(b, f, t, step);
        if ((pc & 7) == CDSH_XQ_CHARIOT || !tp)
            return n == 0;
        return n == 1;
    }
    case CDSH_XQ_PAWN: {
        const int fwd = side == CDSH_XQ_RED ? 16 : -16;
        if (d == fwd)
            return 1;
        return (d == 1 || d == -1) && (cdsh__xq_sqflags[f] & XQ_F_HALF(side ^ 1));
    }
    default: return 0;
    }
}

int cdsh_xq_move_check(const cdsh_xq_pos *pos, cdsh_xq_move_t m, cdsh_error *err)
{
    const int f = m & 0xFF, t = m >> 8, side = pos->side;
    char txt[6];
    cdsh_xq_move_to_iccs(m, txt);
    if (!cdsh_xq_square_valid(f) || !cdsh_xq_square_valid(t) || f == t)
        return cdsh_error_set(err, CDSH_EINVAL, "MOVE_SYNTAX", "not a move on the board");
    const uint8_t pc = cdsh__xq_piece_of[pos->board[f]], tp = cdsh__xq_piece_of[pos->board[t]];
    if (!pc)
        return cdsh_error_set(err, CDSH_EINVAL, "MOVE_NO_PIECE", "%s: there is no piece on %.2s",
                              txt, txt);
    if ((pc >> 3) != side)
        return cdsh_error_set(err, CDSH_EINVAL, "MOVE_NOT_YOUR_PIECE",
                              "%s: the %s on %.2s is %s's, and it is %s's turn", txt,
                              cdsh__xq_type_name(pc), txt, cdsh__xq_side_name(pc >> 3),
                              cdsh__xq_side_name(side));
    if (tp && (tp >> 3) == side)
        return cdsh_error_set(err, CDSH_EINVAL, "MOVE_OWN_PIECE",
                              "%s: %s cannot capture its own %s on %s", txt,
                              cdsh__xq_side_name(side), cdsh__xq_type_name(tp), txt + 2);
    if (!cdsh_xq_is_pseudo_legal(pos, m))
        return cdsh_error_set(err, CDSH_EINVAL, "MOVE_ILLEGAL_FOR_PIECE",
                              "%s: a %s cannot move from %.2s to %s here", txt,
                              cdsh__xq_type_name(pc), txt, txt + 2);
    uint8_t b[256];
    memcpy(b, pos->board, sizeof b);
    b[t] = b[f];
    b[f] = 0;
    int k = (pc & 7) == CDSH_XQ_KING ? t : pos->where[16 + 16 * side];
    if (!cdsh__xq_king_attacked_at(b, side, k))
        return 0;
    int ok = pos->where[16 + 16 * (side ^ 1)];
    if ((k & 15) == (ok & 15)) {
        int lo = k < ok ? k : ok, hi = k < ok ? ok : k;
        if (between(b, lo, hi, 16) == 0)
            return cdsh_error_set(err, CDSH_EINVAL, "MOVE_GENERALS_FACE",
                                  "%s: after this move the generals would face each other", txt);
    }
    return cdsh_error_set(err, CDSH_EINVAL, "MOVE_SELF_CHECK",
                          "%s: this move leaves %s's general in check", txt,
                          cdsh__xq_side_name(side));
}

int cdsh_xq_parse_move(const cdsh_xq_pos *pos, const char *text, cdsh_xq_move_t *out,
                       cdsh_error *err)
{
    cdsh_xq_move_t m;
    int rc = cdsh_xq_move_parse_iccs(text, &m, err);
    if (rc != 0)
        return rc;
    rc = cdsh_xq_move_check(pos, m, err);
    if (rc != 0)
        return rc;
    *out = m;
    return 0;
}

int cdsh_xq_play(cdsh_xq_pos *pos, cdsh_xq_move_t m, cdsh_error *err)
{
    int rc = cdsh_xq_move_check(pos, m, err);
    if (rc != 0)
        return rc;
    if (pos->ply >= CDSH_XQ_MAX_PLY)
        return cdsh_error_set(err, CDSH_ETOOBIG, "MOVE_HISTORY_FULL",
                              "the position's history is full (%d plies); set it again from a "
                              "FEN to continue",
                              CDSH_XQ_MAX_PLY);
    cdsh_xq_make_move(pos, m);
    return 0;
}
