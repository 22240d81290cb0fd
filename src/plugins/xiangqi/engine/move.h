/* move.h — xiangqi squares, pieces and the 16-bit move encoding, plus ICCS/UCI
 * coordinate text ("h2e2") in and out. Pure value helpers: no position here
 * (checking a move against a position is cdsh_xq_move_check in movegen.h).
 * Thread-safe: every function is pure. */
#ifndef CDSH_XQ_MOVE_H
#define CDSH_XQ_MOVE_H

#include <stdint.h>

#include "base/err.h"

/* Squares live on a 16x16 mailbox: sq = (rank + 3) * 16 + (file + 3), with
 * file 0..8 = ICCS a..i (from Red's left) and rank 0..9 = ICCS rank (Red at 0).
 * The 3-wide border holds a sentinel so sliders, horses and elephants never
 * need a bounds test. Valid squares are 51..203; 0 is never a board square. */
typedef uint8_t cdsh_xq_square_t;

#define CDSH_XQ_FILES 9
#define CDSH_XQ_RANKS 10

static inline cdsh_xq_square_t cdsh_xq_square(int file, int rank)
{
    return (cdsh_xq_square_t)((rank + 3) * 16 + file + 3);
}
static inline int cdsh_xq_square_file(cdsh_xq_square_t sq)
{
    return (sq & 15) - 3;
}
static inline int cdsh_xq_square_rank(cdsh_xq_square_t sq)
{
    return (sq >> 4) - 3;
}
/* 1 if sq is one of the 90 board points. */
static inline int cdsh_xq_square_valid(int sq)
{
    if (sq < 0 || sq >= 256)
        return 0;
    int f = (sq & 15) - 3, r = (sq >> 4) - 3;
    return f >= 0 && f < 9 && r >= 0 && r < 10;
}
/* 0..89 in FEN order (row 0 = Black's back rank): (9 - rank) * 9 + file.
 * This is the index the cdsh seed examples use (h2 = 70, e2 = 67). */
static inline int cdsh_xq_square_index90(cdsh_xq_square_t sq)
{
    return (9 - cdsh_xq_square_rank(sq)) * 9 + cdsh_xq_square_file(sq);
}
static inline cdsh_xq_square_t cdsh_xq_square_from_index90(int idx)
{
    return cdsh_xq_square(idx % 9, 9 - idx / 9);
}

/* Sides. */
enum { CDSH_XQ_RED = 0, CDSH_XQ_BLACK = 1 };

/* Piece types (1-based so 0 can mean "none"). */
enum {
    CDSH_XQ_NO_TYPE = 0,
    CDSH_XQ_KING = 1, /* general 帅/将, FEN K */
    CDSH_XQ_ADVISOR,  /* 仕/士, FEN A */
    CDSH_XQ_ELEPHANT, /* 相/象, FEN B (E accepted) */
    CDSH_XQ_HORSE,    /* 马, FEN N (H accepted) */
    CDSH_XQ_CHARIOT,  /* 车, FEN R */
    CDSH_XQ_CANNON,   /* 炮, FEN C */
    CDSH_XQ_PAWN,     /* 兵/卒, FEN P */
};

/* A piece value: 0 = empty, otherwise type | side << 3 (Red 1..7, Black 9..15). */
typedef uint8_t cdsh_xq_piece_t;
#define CDSH_XQ_NO_PIECE 0
static inline cdsh_xq_piece_t cdsh_xq_piece_make(int side, int type)
{
    return (cdsh_xq_piece_t)(type | side << 3);
}
static inline int cdsh_xq_piece_type(cdsh_xq_piece_t p)
{
    return p & 7;
}
static inline int cdsh_xq_piece_side(cdsh_xq_piece_t p)
{
    return p >> 3;
}
/* FEN letter of a piece ('K'..'P' Red, 'k'..'p' Black; '.' for none). */
char cdsh_xq_piece_char(cdsh_xq_piece_t p);

/* A move: from | to << 8, both mailbox squares; 0 means "no move". The
 * captured piece is not part of the move (read it from the board before
 * making the move, or from the undo stack afterwards), which keeps moves at
 * 16 bits for the transposition table. */
typedef uint16_t cdsh_xq_move_t;
#define CDSH_XQ_MOVE_NONE ((cdsh_xq_move_t)0)

static inline cdsh_xq_move_t cdsh_xq_move_make(cdsh_xq_square_t from, cdsh_xq_square_t to)
{
    return (cdsh_xq_move_t)(from | to << 8);
}
static inline cdsh_xq_square_t cdsh_xq_move_from(cdsh_xq_move_t m)
{
    return (cdsh_xq_square_t)(m & 0xFF);
}
static inline cdsh_xq_square_t cdsh_xq_move_to(cdsh_xq_move_t m)
{
    return (cdsh_xq_square_t)(m >> 8);
}

/* Writes "h2e2" (5 bytes with NUL) into out; "0000" for CDSH_XQ_MOVE_NONE. */
void cdsh_xq_move_to_iccs(cdsh_xq_move_t m, char out[6]);

/* Parses the 4-character ICCS/UCI form, lower or upper case, with or without
 * the hyphen of ICCS proper ("h2e2", "H2-E2"). Errors: MOVE_SYNTAX. The move is
 * not checked against any position. */
int cdsh_xq_move_parse_iccs(const char *text, cdsh_xq_move_t *out, cdsh_error *err);

/* Chinese text for an error code set by the xiangqi engine (FEN_*, MOVE_*),
 * or NULL for an unknown code. The English message is in cdsh_error.message. */
const char *cdsh_xq_error_zh(const char *code);

#endif
