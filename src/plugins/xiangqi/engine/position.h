/* position.h — the xiangqi position: 16x16 mailbox with fixed piece slots,
 * FEN in/out with strict validation, incremental Zobrist hash and material,
 * make/unmake over an in-struct undo stack, check and attack queries.
 * Move generation is movegen.h; game-end rules are rules.h.
 *
 * Why a mailbox rather than bitboards: the board has 90 points, so bitboards
 * need 128-bit masks, and xiangqi's blockable movers (horse legs, elephant
 * eyes, cannon screens) make them mostly lookup-bound anyway. A padded 16x16
 * mailbox makes every step one add with no bounds test (the border holds a
 * sentinel), squares fit a byte (a move is 16 bits), and 32 fixed piece slots
 * (K, A A, B B, N N, R R, C C, P x5 per side) act as piece lists. Legality is
 * "make on the board, ask whether our general is attacked", and most moves
 * skip even that: see movegen.c.
 *
 * Thread-safety: a cdsh_xq_pos belongs to one thread at a time; different
 * positions may be used concurrently (the shared Zobrist table is created
 * once under pthread_once and then only read). */
#ifndef CDSH_XQ_POSITION_H
#define CDSH_XQ_POSITION_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "plugins/xiangqi/engine/move.h"

#define CDSH_XQ_START_FEN "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1"

/* Capacity of the undo stack: plies that can be made on top of the position
 * that was set from a FEN. cdsh_xq_play refuses beyond it; cdsh_xq_make_move
 * (the fast path) does not check. A game service keeps a long game under it
 * by re-setting the position from a FEN after a capture (the usual UCCI way). */
#define CDSH_XQ_MAX_PLY 4096

/* Longest FEN cdsh_xq_pos_fen writes, NUL included. */
#define CDSH_XQ_FEN_MAX 128

/* Largest halfmove counter a FEN may carry. */
#define CDSH_XQ_MAX_HALFMOVE 999

/* One entry of the undo stack: the state of the position after a move. */
typedef struct cdsh_xq_state {
    uint64_t hash;       /* Zobrist hash of this position (side included) */
    cdsh_xq_move_t move; /* move that led here (NONE for the root) */
    uint8_t captured;    /* internal piece id captured by that move, 0 if none */
    uint8_t in_check;    /* 1 if the side to move here is in check */
    uint16_t halfmove;   /* plies since the last capture (FEN field 5) */
    uint16_t reserved;
} cdsh_xq_state;

/* The position. Fields are public for speed (search embeds and copies it);
 * treat them as read-only and use the functions below. board[] holds
 * internal piece ids (16..31 Red, 32..47 Black, 0 empty, 0x40 off-board);
 * use cdsh_xq_piece_at for the public piece value. */
typedef struct cdsh_xq_pos {
    uint8_t board[256];
    uint8_t where[48];   /* square of each piece id, 0 if captured/absent */
    uint8_t count[2][8]; /* pieces on the board per side and type */
    int side;            /* CDSH_XQ_RED or CDSH_XQ_BLACK to move */
    int ply;             /* index of the current entry in st[] */
    int fullmove;        /* FEN field 6 */
    cdsh_xq_state st[CDSH_XQ_MAX_PLY + 1];
} cdsh_xq_pos;

/* Heap position (the struct is ~70 KB; prefer this over the stack for a
 * long-lived one). _new returns the start position; NULL on no memory. */
cdsh_xq_pos *cdsh_xq_pos_new(void);
void cdsh_xq_pos_free(cdsh_xq_pos *pos);

/* Sets the standard start position. */
void cdsh_xq_pos_set_start(cdsh_xq_pos *pos);

/* Parses a FEN (letters K A B N R C P, also E for elephant and H for horse;
 * side w, r or b; fields 3-6 optional, 3 and 4 must be '-' when present) and
 * validates it strictly. On failure pos is unchanged and err gets one of
 * these codes (English message with details; cdsh_xq_error_zh for Chinese):
 * FEN_EMPTY, FEN_RANK_COUNT, FEN_RANK_WIDTH, FEN_BAD_CHAR, FEN_NO_GENERAL,
 * FEN_EXTRA_GENERAL, FEN_TOO_MANY, FEN_GENERAL_SQUARE, FEN_ADVISOR_SQUARE,
 * FEN_ELEPHANT_SQUARE, FEN_PAWN_SQUARE, FEN_SIDE, FEN_FIELD, FEN_HALFMOVE,
 * FEN_FULLMOVE, FEN_EXTRA_FIELDS, FEN_GENERALS_FACE, FEN_OPPONENT_IN_CHECK.
 * Returns 0 or CDSH_EINVAL. The undo stack restarts empty. */
int cdsh_xq_pos_set_fen(cdsh_xq_pos *pos, const char *fen, cdsh_error *err);

/* Writes the six-field FEN (side 'w'/'b', pieces as K A B N R C P). */
void cdsh_xq_pos_fen(const cdsh_xq_pos *pos, char out[CDSH_XQ_FEN_MAX]);

/* Board queries. */
static inline int cdsh_xq_side_to_move(const cdsh_xq_pos *pos)
{
    return pos->side;
}
cdsh_xq_piece_t cdsh_xq_piece_at(const cdsh_xq_pos *pos, cdsh_xq_square_t sq);
/* Square of side's general. */
static inline cdsh_xq_square_t cdsh_xq_king_square(const cdsh_xq_pos *pos, int side)
{
    return pos->where[16 + 16 * side];
}
/* Number of side's pieces of a type on the board (kept incrementally). */
static inline int cdsh_xq_count(const cdsh_xq_pos *pos, int side, int type)
{
    return pos->count[side][type];
}
/* Squares of side's pieces of a type; returns how many were written (<= 5). */
int cdsh_xq_pieces(const cdsh_xq_pos *pos, int side, int type, cdsh_xq_square_t out[5]);

static inline uint64_t cdsh_xq_hash(const cdsh_xq_pos *pos)
{
    return pos->st[pos->ply].hash;
}
static inline int cdsh_xq_in_check(const cdsh_xq_pos *pos)
{
    return pos->st[pos->ply].in_check;
}
static inline int cdsh_xq_halfmove(const cdsh_xq_pos *pos)
{
    return pos->st[pos->ply].halfmove;
}
static inline int cdsh_xq_fullmove(const cdsh_xq_pos *pos)
{
    return pos->fullmove;
}
/* Plies made since the position was set (length of the undo stack). */
static inline int cdsh_xq_ply(const cdsh_xq_pos *pos)
{
    return pos->ply;
}
/* Drops all but the last `keep` plies of the undo stack (the board, side,
 * counters and hash stay); for sessions whose history outgrows
 * CDSH_XQ_MAX_PLY. Repetitions older than `keep` plies are forgotten. */
void cdsh_xq_pos_trim_history(cdsh_xq_pos *pos, int keep);
/* The move made `back` plies ago (1 = the last one), NONE if out of range. */
cdsh_xq_move_t cdsh_xq_last_move(const cdsh_xq_pos *pos, int back);

/* Hash recomputed from scratch (for tests and assertions). */
uint64_t cdsh_xq_hash_compute(const cdsh_xq_pos *pos);

/* The documented key set: splitmix64 seeded with CDSH_XQ_ZOBRIST_SEED, drawn
 * in order piece 0..15 x square 0..255, then the side key. */
#define CDSH_XQ_ZOBRIST_SEED 0x58514348454E4731ull /* "XQCHENG1" */
uint64_t cdsh_xq_zobrist_piece(cdsh_xq_piece_t p, cdsh_xq_square_t sq);
uint64_t cdsh_xq_zobrist_side(void);

/* Makes a pseudo-legal-or-legal move without checks (the fast path for
 * search/perft): the caller guarantees the move came from the generator for
 * this position and that the undo stack has room. Updates hash, material,
 * counters and the in-check flag of the new side to move. */
void cdsh_xq_make_move(cdsh_xq_pos *pos, cdsh_xq_move_t m);
/* Takes back the last made move. */
void cdsh_xq_unmake_move(cdsh_xq_pos *pos);
/* Null move for search (flips the side; not allowed when in check). */
void cdsh_xq_make_null(cdsh_xq_pos *pos);
void cdsh_xq_unmake_null(cdsh_xq_pos *pos);

/* 1 if sq is attacked by any piece of side `by` (cannon screens, horse legs,
 * crossed-pawn sideways, advisor/elephant/general reach, flying general onto
 * the other general's square). */
int cdsh_xq_attacked(const cdsh_xq_pos *pos, cdsh_xq_square_t sq, int by);

/* 1 if side's general is attacked (flying general included). */
int cdsh_xq_king_attacked(const cdsh_xq_pos *pos, int side);

/* 1 if the legal move m would put the opponent in check. */
int cdsh_xq_gives_check(const cdsh_xq_pos *pos, cdsh_xq_move_t m);

#endif
