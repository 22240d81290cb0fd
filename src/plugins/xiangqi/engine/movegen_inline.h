/* movegen_inline.h — the hot generator and legality filter as static inline
 * code, shared by movegen.c and perft.c (perft inlines them into its leaf
 * loop); not part of the public API. */
#ifndef CDSH_XQ_MOVEGEN_INLINE_H
#define CDSH_XQ_MOVEGEN_INLINE_H

#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/xq_internal.h"

enum { XQ_GEN_ALL = 0, XQ_GEN_CAPTURES = 1, XQ_GEN_QUIETS = 2 };

/* `kind` is a compile-time constant at every call site, so each variant is
 * specialised. Quiet: target empty; capture: target enemy. */
static inline int cdsh__xq_gen(const cdsh_xq_pos *pos, cdsh_xq_move_t *out, const int kind)
{
    const uint8_t *b = pos->board;
    const int side = pos->side;
    const uint8_t own = (uint8_t)(XQ_SIDE_BIT(side) | XQ_OFF), opp = (uint8_t)XQ_SIDE_BIT(side ^ 1);
    const uint8_t *w = pos->where + 16 + 16 * side;
    const uint8_t *fl = cdsh__xq_sqflags;
    int n = 0;
#define XQ_OK(t)                                                                                   \
    (kind == XQ_GEN_ALL ? !(b[t] & own) : kind == XQ_GEN_CAPTURES ? (b[t] & opp) : !b[t])
#define XQ_ADD(f, t) (out[n++] = (cdsh_xq_move_t)((f) | (t) << 8))
    static const int orth[4] = {16, -16, 1, -1};
    static const int diag[4] = {17, 15, -15, -17};

    /* chariots */
    for (int i = 7; i <= 8; i++) {
        const int f = w[i];
        if (!f)
            continue;
        for (int j = 0; j < 4; j++) {
            const int d = orth[j];
            int x = f + d;
            while (!b[x]) {
                if (kind != XQ_GEN_CAPTURES)
                    XQ_ADD(f, x);
                x += d;
            }
            if (kind != XQ_GEN_QUIETS && (b[x] & opp))
                XQ_ADD(f, x);
        }
    }
    /* cannons */
    for (int i = 9; i <= 10; i++) {
        const int f = w[i];
        if (!f)
            continue;
        for (int j = 0; j < 4; j++) {
            const int d = orth[j];
            int x = f + d;
            while (!b[x]) {
                if (kind != XQ_GEN_CAPTURES)
                    XQ_ADD(f, x);
                x += d;
            }
            if (kind == XQ_GEN_QUIETS || b[x] == XQ_OFF)
                continue;
            x += d;
            while (!b[x])
                x += d;
            if (b[x] & opp)
                XQ_ADD(f, x);
        }
    }
    /* horses: leg next to the horse */
    for (int i = 5; i <= 6; i++) {
        const int f = w[i];
        if (!f)
            continue;
        static const int tg[4][2] = {{33, 31}, {-31, -33}, {18, -14}, {14, -18}};
        for (int j = 0; j < 4; j++) {
            if (b[f + orth[j]])
                continue;
            const int t1 = f + tg[j][0], t2 = f + tg[j][1];
            if (XQ_OK(t1))
                XQ_ADD(f, t1);
            if (XQ_OK(t2))
                XQ_ADD(f, t2);
        }
    }
    /* pawns */
    {
        const int fwd = side == CDSH_XQ_RED ? 16 : -16;
        for (int i = 11; i <= 15; i++) {
            const int f = w[i];
            if (!f)
                continue;
            if (XQ_OK(f + fwd))
                XQ_ADD(f, f + fwd);
            if (fl[f] & XQ_F_HALF(side ^ 1)) {
                if (XQ_OK(f + 1))
                    XQ_ADD(f, f + 1);
                if (XQ_OK(f - 1))
                    XQ_ADD(f, f - 1);
            }
        }
    }
    /* elephants: stay home, eye empty */
    for (int i = 3; i <= 4; i++) {
        const int f = w[i];
        if (!f)
            continue;
        for (int j = 0; j < 4; j++) {
            const int t = f + 2 * diag[j];
            if ((fl[t] & XQ_F_HALF(side)) && !b[f + diag[j]] && XQ_OK(t))
                XQ_ADD(f, t);
        }
    }
    /* advisors */
    for (int i = 1; i <= 2; i++) {
        const int f = w[i];
        if (!f)
            continue;
        for (int j = 0; j < 4; j++) {
            const int t = f + diag[j];
            if ((fl[t] & XQ_F_PALACE(side)) && XQ_OK(t))
                XQ_ADD(f, t);
        }
    }
    /* general */
    {
        const int f = w[0];
        for (int j = 0; j < 4; j++) {
            const int t = f + orth[j];
            if ((fl[t] & XQ_F_PALACE(side)) && XQ_OK(t))
                XQ_ADD(f, t);
        }
    }
#undef XQ_OK
#undef XQ_ADD
    return n;
}

/* Legality of a pseudo-legal move for the side to move whose general is on
 * k. When not in check, a non-general move can only expose the general if it
 * leaves or enters the general's file or rank (chariot/general lines, cannon
 * screens) or vacates a diagonal neighbour of the general (a horse leg);
 * every other move is legal without touching the board. */
static inline int cdsh__xq_legal(cdsh_xq_pos *pos, int k, int in_check, cdsh_xq_move_t m)
{
    const int f = m & 0xFF, t = m >> 8;
    if (f != k && !in_check) {
        const int a = f ^ k, c = t ^ k, dd = f - k;
        if ((a & 0x0F) && (a & 0xF0) && (c & 0x0F) && (c & 0xF0) && dd != 15 && dd != 17 &&
            dd != -15 && dd != -17)
            return 1;
    }
    uint8_t *b = pos->board;
    const uint8_t id = b[f], cap = b[t];
    b[t] = id;
    b[f] = 0;
    const int att = cdsh__xq_king_attacked_at(b, pos->side, f == k ? t : k);
    b[f] = id;
    b[t] = cap;
    return !att;
}

static inline int cdsh__xq_count_legal(cdsh_xq_pos *pos)
{
    cdsh_xq_move_t buf[CDSH_XQ_MAX_MOVES];
    const int n = cdsh__xq_gen(pos, buf, XQ_GEN_ALL);
    const int k = pos->where[16 + 16 * pos->side], chk = cdsh_xq_in_check(pos);
    int c = 0;
    for (int i = 0; i < n; i++)
        c += cdsh__xq_legal(pos, k, chk, buf[i]);
    return c;
}

#endif
