/* xq_internal.h — tables and hot inline helpers shared by the engine's files
 * (position, movegen, perft); not part of the public API. */
#ifndef CDSH_XQ_INTERNAL_H
#define CDSH_XQ_INTERNAL_H

#include <stdint.h>

#include "plugins/xiangqi/engine/position.h"

#define XQ_OFF 0x40 /* board sentinel outside the 90 points */
/* Piece ids: side base 16 (Red) or 32 (Black) plus a slot; slot 0 = K,
 * 1-2 A, 3-4 B, 5-6 N, 7-8 R, 9-10 C, 11-15 P. */
#define XQ_SIDE_BIT(s) (16 << (s))

/* id (or any board byte) -> public piece value; 0 for empty and XQ_OFF. */
extern const uint8_t cdsh__xq_piece_of[256];
/* first slot and slot count per type (index = type). */
extern const uint8_t cdsh__xq_slot_first[8];
extern const uint8_t cdsh__xq_slot_count[8];
/* square flags: bit 0 Red half, bit 1 Black half, bit 2 Red palace,
 * bit 3 Black palace; 0 off-board. */
extern uint8_t cdsh__xq_sqflags[256];
#define XQ_F_HALF(s) (1 << (s))
#define XQ_F_PALACE(s) (4 << (s))
extern uint64_t cdsh__xq_zob[16][256];
extern uint64_t cdsh__xq_zob_side;

/* Is side's general (on k) attacked, given the board as it stands? Covers
 * chariots, cannons (one screen), horses (leg next to the horse, i.e. the
 * diagonal neighbour of k), pawns (k is always in its own half, so any enemy
 * pawn beside it has crossed) and the flying general. */
static inline int cdsh__xq_king_attacked_at(const uint8_t *b, int side, int k)
{
    const int o = side ^ 1;
    const uint8_t eR = (uint8_t)(CDSH_XQ_CHARIOT | o << 3), eC = (uint8_t)(CDSH_XQ_CANNON | o << 3);
    const uint8_t eN = (uint8_t)(CDSH_XQ_HORSE | o << 3), eP = (uint8_t)(CDSH_XQ_PAWN | o << 3);
    const uint8_t eK = (uint8_t)(CDSH_XQ_KING | o << 3);
    const uint8_t *po = cdsh__xq_piece_of;
    /* pawns: in front (from the enemy's side) and beside */
    const int fwd = side == CDSH_XQ_RED ? 16 : -16;
    if (po[b[k + fwd]] == eP || po[b[k + 1]] == eP || po[b[k - 1]] == eP)
        return 1;
    /* horses: leg = diagonal neighbour of k */
    if (!b[k + 17] && (po[b[k + 33]] == eN || po[b[k + 18]] == eN))
        return 1;
    if (!b[k + 15] && (po[b[k + 31]] == eN || po[b[k + 14]] == eN))
        return 1;
    if (!b[k - 15] && (po[b[k - 31]] == eN || po[b[k - 14]] == eN))
        return 1;
    if (!b[k - 17] && (po[b[k - 33]] == eN || po[b[k - 18]] == eN))
        return 1;
    /* lines: chariot or general first, cannon second */
    static const int dirs[4] = {16, -16, 1, -1};
    for (int i = 0; i < 4; i++) {
        const int d = dirs[i];
        int x = k + d;
        while (!b[x])
            x += d;
        const uint8_t p = po[b[x]];
        if (p == eR || p == eK)
            return 1;
        if (b[x] == XQ_OFF)
            continue;
        x += d;
        while (!b[x])
            x += d;
        if (po[b[x]] == eC)
            return 1;
    }
    return 0;
}

void cdsh__xq_tables_init(void);

/* The perpetual-chase test (chase.c) over the cycle from state `first` to the
 * current one, in which no move gave check (cdsh_xq_repetition leaves a
 * cycle with a check to the check rule): -1 if only the side to move chased
 * the same enemy piece anew after each of its moves, +1 if only the opponent
 * did, 0 otherwise (no chase, or both chase). */
int cdsh__xq_chase_verdict(const cdsh_xq_pos *pos, int first);

/* "Red"/"Black" and "general".."soldier" for messages. */
const char *cdsh__xq_side_name(int side);
const char *cdsh__xq_type_name(int type);

#endif
