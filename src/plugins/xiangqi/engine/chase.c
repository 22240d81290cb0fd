/* chase.c — the perpetual-chase (长捉) test over a repetition cycle
 * (Pikafish/FSF simplified rules; see docs/xiangqi-engine.md). */
#include "plugins/xiangqi/engine/rules.h"

#include <string.h>

#include "plugins/xiangqi/engine/xq_internal.h"

/* A light copy of the board: enough to walk the cycle backwards and to try
 * captures without touching the caller's position or its undo stack. */
typedef struct chase_board {
    uint8_t b[256];
    uint8_t w[48];
} chase_board;

static int id_side(int id)
{
    return id >= 32;
}

static int id_type(int id)
{
    return cdsh__xq_piece_of[id] & 7;
}

/* Squares holding enemy pieces that the piece `id` on `sq` could capture
 * (pseudo-legal: legs, eyes, screens, palace and river respected). */
static int piece_captures(const uint8_t *b, int id, int sq, uint8_t out[8])
{
    static const int orth[4] = {16, -16, 1, -1};
    static const int diag[4] = {17, 15, -15, -17};
    const int side = id_side(id);
    const uint8_t opp = (uint8_t)XQ_SIDE_BIT(side ^ 1);
    const uint8_t *fl = cdsh__xq_sqflags;
    int n = 0;
    switch (id_type(id)) {
    case CDSH_XQ_CHARIOT:
    case CDSH_XQ_CANNON: {
        const int cannon = id_type(id) == CDSH_XQ_CANNON;
        for (int j = 0; j < 4; j++) {
            int x = sq + orth[j];
            while (!b[x])
                x += orth[j];
            if (cannon && b[x] != XQ_OFF) {
                x += orth[j];
                while (!b[x])
                    x += orth[j];
            }
            if (b[x] & opp)
                out[n++] = (uint8_t)x;
        }
        break;
    }
    case CDSH_XQ_HORSE: {
        static const int tg[4][2] = {{33, 31}, {-31, -33}, {18, -14}, {14, -18}};
        for (int j = 0; j < 4; j++) {
            if (b[sq + orth[j]])
                continue;
            for (int k = 0; k < 2; k++)
                if (b[sq + tg[j][k]] & opp)
                    out[n++] = (uint8_t)(sq + tg[j][k]);
        }
        break;
    }
    case CDSH_XQ_ELEPHANT:
        for (int j = 0; j < 4; j++) {
            const int t = sq + 2 * diag[j];
            if ((fl[t] & XQ_F_HALF(side)) && !b[sq + diag[j]] && (b[t] & opp))
                out[n++] = (uint8_t)t;
        }
        break;
    case CDSH_XQ_ADVISOR:
        for (int j = 0; j < 4; j++) {
            const int t = sq + diag[j];
            if ((fl[t] & XQ_F_PALACE(side)) && (b[t] & opp))
                out[n++] = (uint8_t)t;
        }
        break;
    case CDSH_XQ_KING:
        for (int j = 0; j < 4; j++) {
            const int t = sq + orth[j];
            if ((fl[t] & XQ_F_PALACE(side)) && (b[t] & opp))
                out[n++] = (uint8_t)t;
        }
        break;
    case CDSH_XQ_PAWN: {
        const int fwd = side == CDSH_XQ_RED ? 16 : -16;
        if (b[sq + fwd] & opp)
            out[n++] = (uint8_t)(sq + fwd);
        if (fl[sq] & XQ_F_HALF(side ^ 1))
            for (int d = -1; d <= 1; d += 2)
                if (b[sq + d] & opp)
                    out[n++] = (uint8_t)(sq + d);
        break;
    }
    default: break;
    }
    return n;
}

/* Is the capture of the piece on t by the piece on f legal (the mover's
 * general not attacked afterwards, flying general included)? */
static int capture_legal(chase_board *cb, int f, int t)
{
    const uint8_t id = cb->b[f], cap = cb->b[t];
    const int side = id_side(id);
    cb->b[t] = id;
    cb->b[f] = 0;
    const int k = id_type(id) == CDSH_XQ_KING ? t : cb->w[16 + 16 * side];
    const int att = cdsh__xq_king_attacked_at(cb->b, side, k);
    cb->b[f] = id;
    cb->b[t] = cap;
    return !att;
}

/* Has `side` a legal capture onto t? */
static int can_capture_on(chase_board *cb, int side, int t)
{
    for (int id = 16 + 16 * side; id < 32 + 16 * side; id++) {
        const int sq = cb->w[id];
        if (!sq)
            continue;
        uint8_t tg[8];
        const int n = piece_captures(cb->b, id, sq, tg);
        for (int i = 0; i < n; i++)
            if (tg[i] == t && capture_legal(cb, sq, t))
                return 1;
    }
    return 0;
}

/* Enemy pieces that side `c` chases on this board, as a mask of the enemy's
 * slots (bit = id - enemy base): attacks by a piece other than the general
 * or a soldier, on a piece other than the general or an uncrossed soldier,
 * by a legal capture, of a stronger piece (horse/cannon on a chariot,
 * advisor/elephant on a chariot, cannon or horse) or of a piece with no
 * legal recapture; same-type attacks count only when the target cannot
 * legally capture back. */
static uint16_t chased_by(chase_board *cb, int c)
{
    const int base = 16 + 16 * c, ebase = 16 + 16 * (c ^ 1);
    uint16_t mask = 0;
    for (int slot = 1; slot <= 10; slot++) {
        const int id = base + slot, f = cb->w[id];
        if (!f)
            continue;
        const int at = id_type(id);
        uint8_t tg[8];
        const int n = piece_captures(cb->b, id, f, tg);
        for (int i = 0; i < n; i++) {
            const int t = tg[i], vid = cb->b[t], vt = id_type(vid);
            const uint16_t bit = (uint16_t)(1u << (vid - ebase));
            if ((mask & bit) || vt == CDSH_XQ_KING)
                continue;
            if (vt == CDSH_XQ_PAWN && !(cdsh__xq_sqflags[t] & XQ_F_HALF(c)))
                continue; /* an uncrossed soldier */
            if (!capture_legal(cb, f, t))
                continue; /* pinned attackers only chase what they may take */
            if (((at == CDSH_XQ_HORSE || at == CDSH_XQ_CANNON) && vt == CDSH_XQ_CHARIOT) ||
                ((at == CDSH_XQ_ADVISOR || at == CDSH_XQ_ELEPHANT) &&
                 (vt == CDSH_XQ_CHARIOT || vt == CDSH_XQ_CANNON || vt == CDSH_XQ_HORSE))) {
                mask |= bit;
                continue;
            }
            /* make the capture and look for a legal recapture */
            cb->b[t] = (uint8_t)id;
            cb->b[f] = 0;
            cb->w[id] = (uint8_t)t;
            cb->w[vid] = 0;
            const int protected_ = can_capture_on(cb, c ^ 1, t);
            cb->w[vid] = (uint8_t)t;
            cb->w[id] = (uint8_t)f;
            cb->b[f] = (uint8_t)id;
            cb->b[t] = (uint8_t)vid;
            if (protected_)
                continue;
            if (vt == at) {
                /* mutual attack: a chase only if the target cannot hit back
                 * (a hobbled horse, a pinned piece) */
                uint8_t back[8];
                const int nb = piece_captures(cb->b, vid, t, back);
                int hits_back = 0;
                for (int j = 0; j < nb && !hits_back; j++)
                    hits_back = back[j] == f && capture_legal(cb, t, f);
                if (hits_back)
                    continue;
            }
            mask |= bit;
        }
    }
    return mask;
}

int cdsh__xq_chase_verdict(const cdsh_xq_pos *pos, int first)
{
    chase_board cb;
    memcpy(cb.b, pos->board, sizeof cb.b);
    memcpy(cb.w, pos->where, sizeof cb.w);
    const int us = pos->side;
    uint16_t chase[2] = {0xFFFF, 0xFFFF};
    for (int j = pos->ply; j > first; j--) {
        const cdsh_xq_state *s = &pos->st[j];
        const int mover = us ^ ((pos->ply - j + 1) & 1);
        uint16_t after = 0;
        if (chase[mover])
            after = chased_by(&cb, mover);
        /* take the move back on the light board */
        const int f = s->move & 0xFF, t = s->move >> 8;
        const uint8_t id = cb.b[t];
        cb.b[f] = id;
        cb.w[id] = (uint8_t)f;
        cb.b[t] = s->captured;
        if (s->captured)
            cb.w[s->captured] = (uint8_t)t;
        if (chase[mover])
            chase[mover] &= (uint16_t)(after & ~chased_by(&cb, mover));
        if (!chase[0] && !chase[1])
            return 0;
    }
    if (!chase[us] == !chase[us ^ 1])
        return 0;
    return chase[us] ? -1 : 1;
}

int cdsh_xq_chased(const cdsh_xq_pos *pos, int side, cdsh_xq_square_t out[16])
{
    if (side != CDSH_XQ_RED && side != CDSH_XQ_BLACK)
        return 0;
    chase_board cb;
    memcpy(cb.b, pos->board, sizeof cb.b);
    memcpy(cb.w, pos->where, sizeof cb.w);
    const uint16_t mask = chased_by(&cb, side);
    int n = 0;
    for (int slot = 0; slot < 16; slot++)
        if (mask & (1u << slot))
            out[n++] = cb.w[16 + 16 * (side ^ 1) + slot];
    return n;
}
