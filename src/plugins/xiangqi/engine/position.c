/* position.c — board state, Zobrist keys, FEN parsing/validation/printing,
 * make/unmake and attack queries. Move generation is in movegen.c. */
#include "plugins/xiangqi/engine/position.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/xiangqi/engine/xq_internal.h"

#define P_(s, t) ((t) | (s) << 3)
const uint8_t cdsh__xq_piece_of[256] = {
    [16] = P_(0, 1), [17] = P_(0, 2), [18] = P_(0, 2), [19] = P_(0, 3), [20] = P_(0, 3),
    [21] = P_(0, 4), [22] = P_(0, 4), [23] = P_(0, 5), [24] = P_(0, 5), [25] = P_(0, 6),
    [26] = P_(0, 6), [27] = P_(0, 7), [28] = P_(0, 7), [29] = P_(0, 7), [30] = P_(0, 7),
    [31] = P_(0, 7), [32] = P_(1, 1), [33] = P_(1, 2), [34] = P_(1, 2), [35] = P_(1, 3),
    [36] = P_(1, 3), [37] = P_(1, 4), [38] = P_(1, 4), [39] = P_(1, 5), [40] = P_(1, 5),
    [41] = P_(1, 6), [42] = P_(1, 6), [43] = P_(1, 7), [44] = P_(1, 7), [45] = P_(1, 7),
    [46] = P_(1, 7), [47] = P_(1, 7),
};
const uint8_t cdsh__xq_slot_first[8] = {0, 0, 1, 3, 5, 7, 9, 11};
const uint8_t cdsh__xq_slot_count[8] = {0, 1, 2, 2, 2, 2, 2, 5};

/* Shared read-only tables, filled once by cdsh__xq_tables_init (pthread_once). */
uint8_t cdsh__xq_sqflags[256];
uint64_t cdsh__xq_zob[16][256];
uint64_t cdsh__xq_zob_side;

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void tables_build(void)
{
    uint64_t seed = CDSH_XQ_ZOBRIST_SEED;
    for (int p = 0; p < 16; p++)
        for (int sq = 0; sq < 256; sq++)
            cdsh__xq_zob[p][sq] = splitmix64(&seed);
    cdsh__xq_zob_side = splitmix64(&seed);
    for (int r = 0; r < 10; r++)
        for (int f = 0; f < 9; f++) {
            uint8_t fl = r < 5 ? XQ_F_HALF(0) : XQ_F_HALF(1);
            if (f >= 3 && f <= 5 && r <= 2)
                fl |= XQ_F_PALACE(0);
            if (f >= 3 && f <= 5 && r >= 7)
                fl |= XQ_F_PALACE(1);
            cdsh__xq_sqflags[cdsh_xq_square(f, r)] = fl;
        }
}

void cdsh__xq_tables_init(void)
{
    pthread_once(&tables_once, tables_build);
}

uint64_t cdsh_xq_zobrist_piece(cdsh_xq_piece_t p, cdsh_xq_square_t sq)
{
    cdsh__xq_tables_init();
    return cdsh__xq_zob[p & 15][sq];
}

uint64_t cdsh_xq_zobrist_side(void)
{
    cdsh__xq_tables_init();
    return cdsh__xq_zob_side;
}

cdsh_xq_pos *cdsh_xq_pos_new(void)
{
    cdsh_xq_pos *pos = malloc(sizeof *pos);
    if (pos)
        cdsh_xq_pos_set_start(pos);
    return pos;
}

void cdsh_xq_pos_free(cdsh_xq_pos *pos)
{
    free(pos);
}

void cdsh_xq_pos_set_start(cdsh_xq_pos *pos)
{
    int rc = cdsh_xq_pos_set_fen(pos, CDSH_XQ_START_FEN, NULL);
    (void)rc; /* the start FEN is valid by construction */
}

cdsh_xq_piece_t cdsh_xq_piece_at(const cdsh_xq_pos *pos, cdsh_xq_square_t sq)
{
    return cdsh__xq_piece_of[pos->board[sq]];
}

int cdsh_xq_pieces(const cdsh_xq_pos *pos, int side, int type, cdsh_xq_square_t out[5])
{
    if (type < CDSH_XQ_KING || type > CDSH_XQ_PAWN || (side != 0 && side != 1))
        return 0;
    int n = 0, base = 16 + 16 * side + cdsh__xq_slot_first[type];
    for (int i = 0; i < cdsh__xq_slot_count[type]; i++)
        if (pos->where[base + i])
            out[n++] = pos->where[base + i];
    return n;
}

cdsh_xq_move_t cdsh_xq_last_move(const cdsh_xq_pos *pos, int back)
{
    if (back < 1 || back > pos->ply)
        return CDSH_XQ_MOVE_NONE;
    return pos->st[pos->ply - back + 1].move;
}

uint64_t cdsh_xq_hash_compute(const cdsh_xq_pos *pos)
{
    cdsh__xq_tables_init();
    uint64_t h = pos->side == CDSH_XQ_BLACK ? cdsh__xq_zob_side : 0;
    for (int sq = 0; sq < 256; sq++) {
        uint8_t p = cdsh__xq_piece_of[pos->board[sq]];
        if (p)
            h ^= cdsh__xq_zob[p][sq];
    }
    return h;
}

int cdsh_xq_king_attacked(const cdsh_xq_pos *pos, int side)
{
    return cdsh__xq_king_attacked_at(pos->board, side, pos->where[16 + 16 * side]);
}

/* ---- make / unmake ---------------------------------------------------- */

void cdsh_xq_make_move(cdsh_xq_pos *pos, cdsh_xq_move_t m)
{
    const int f = m & 0xFF, t = m >> 8;
    const uint8_t id = pos->board[f], cap = pos->board[t];
    const cdsh_xq_state *prev = &pos->st[pos->ply];
    cdsh_xq_state *s = &pos->st[++pos->ply];
    const uint8_t pc = cdsh__xq_piece_of[id];
    uint64_t h = prev->hash ^ cdsh__xq_zob_side ^ cdsh__xq_zob[pc][f] ^ cdsh__xq_zob[pc][t];
    if (cap) {
        const uint8_t cp = cdsh__xq_piece_of[cap];
        h ^= cdsh__xq_zob[cp][t];
        pos->where[cap] = 0;
        pos->count[cp >> 3][cp & 7]--;
        s->halfmove = 0;
    } else {
        s->halfmove = (uint16_t)(prev->halfmove + (prev->halfmove < UINT16_MAX));
    }
    pos->board[t] = id;
    pos->board[f] = 0;
    pos->where[id] = (uint8_t)t;
    s->hash = h;
    s->move = m;
    s->captured = cap;
    pos->fullmove += pos->side; /* after Black's move */
    pos->side ^= 1;
    s->in_check =
        (uint8_t)cdsh__xq_king_attacked_at(pos->board, pos->side, pos->where[16 + 16 * pos->side]);
}

void cdsh_xq_unmake_move(cdsh_xq_pos *pos)
{
    const cdsh_xq_state *s = &pos->st[pos->ply];
    const int f = s->move & 0xFF, t = s->move >> 8;
    const uint8_t id = pos->board[t], cap = s->captured;
    pos->board[f] = id;
    pos->where[id] = (uint8_t)f;
    pos->board[t] = cap;
    if (cap) {
        const uint8_t cp = cdsh__xq_piece_of[cap];
        pos->where[cap] = (uint8_t)t;
        pos->count[cp >> 3][cp & 7]++;
    }
    pos->side ^= 1;
    pos->fullmove -= pos->side;
    pos->ply--;
}

void cdsh_xq_make_null(cdsh_xq_pos *pos)
{
    const cdsh_xq_state *prev = &pos->st[pos->ply];
    cdsh_xq_state *s = &pos->st[++pos->ply];
    s->hash = prev->hash ^ cdsh__xq_zob_side;
    s->move = CDSH_XQ_MOVE_NONE;
    s->captured = 0;
    s->halfmove = (uint16_t)(prev->halfmove + (prev->halfmove < UINT16_MAX));
    s->in_check = 0;
    pos->fullmove += pos->side;
    pos->side ^= 1;
}

void cdsh_xq_unmake_null(cdsh_xq_pos *pos)
{
    pos->side ^= 1;
    pos->fullmove -= pos->side;
    pos->ply--;
}

/* ---- attacks ------------------------------------------------------------ */

int cdsh_xq_attacked(const cdsh_xq_pos *pos, cdsh_xq_square_t sq, int by)
{
    const uint8_t *b = pos->board;
    const uint8_t *po = cdsh__xq_piece_of;
    const int s = sq;
    if (!cdsh_xq_square_valid(s))
        return 0;
    const uint8_t bR = (uint8_t)P_(by, CDSH_XQ_CHARIOT), bC = (uint8_t)P_(by, CDSH_XQ_CANNON);
    const uint8_t bN = (uint8_t)P_(by, CDSH_XQ_HORSE), bP = (uint8_t)P_(by, CDSH_XQ_PAWN);
    const uint8_t bK = (uint8_t)P_(by, CDSH_XQ_KING), bA = (uint8_t)P_(by, CDSH_XQ_ADVISOR);
    const uint8_t bB = (uint8_t)P_(by, CDSH_XQ_ELEPHANT);
    const uint8_t target = po[b[s]];
    static const int lines[4] = {16, -16, 1, -1};
    for (int i = 0; i < 4; i++) {
        const int d = lines[i];
        int x = s + d;
        while (!b[x])
            x += d;
        if (po[b[x]] == bR)
            return 1;
        /* flying general: only onto the other general */
        if (po[b[x]] == bK && (d == 16 || d == -16) && target == (uint8_t)P_(by ^ 1, CDSH_XQ_KING))
            return 1;
        if (b[x] == XQ_OFF)
            continue;
        x += d;
        while (!b[x])
            x += d;
        if (po[b[x]] == bC)
            return 1;
    }
    static const int diag[4] = {17, 15, -15, -17};
    for (int i = 0; i < 4; i++) {
        const int d = diag[i];
        const int dr = d > 0 ? 16 : -16, df = d - dr;
        if (!b[s + d] && (po[b[s + d + dr]] == bN || po[b[s + d + df]] == bN))
            return 1;
    }
    /* a pawn of `by` moving forward onto s stands one step behind it */
    const int fwd = by == CDSH_XQ_RED ? 16 : -16;
    if (po[b[s - fwd]] == bP)
        return 1;
    for (int d = -1; d <= 1; d += 2)
        if (po[b[s + d]] == bP && (cdsh__xq_sqflags[s + d] & XQ_F_HALF(by ^ 1)))
            return 1;
    if (cdsh__xq_sqflags[s] & XQ_F_PALACE(by)) {
        for (int i = 0; i < 4; i++) {
            if (po[b[s + diag[i]]] == bA || po[b[s + lines[i]]] == bK)
                return 1;
        }
    }
    if (cdsh__xq_sqflags[s] & XQ_F_HALF(by)) {
        for (int i = 0; i < 4; i++)
            if (!b[s + diag[i]] && po[b[s + 2 * diag[i]]] == bB)
                return 1;
    }
    return 0;
}

int cdsh_xq_gives_check(const cdsh_xq_pos *pos, cdsh_xq_move_t m)
{
    uint8_t b[256];
    memcpy(b, pos->board, sizeof b);
    const int f = m & 0xFF, t = m >> 8;
    b[t] = b[f];
    b[f] = 0;
    const int o = pos->side ^ 1;
    return cdsh__xq_king_attacked_at(b, o, pos->where[16 + 16 * o]);
}

/* ---- FEN ---------------------------------------------------------------- */

const char *cdsh__xq_side_name(int s)
{
    return s == CDSH_XQ_RED ? "Red" : "Black";
}

const char *cdsh__xq_type_name(int t)
{
    static const char *names[8] = {"?",     "general", "advisor", "elephant",
                                   "horse", "chariot", "cannon",  "soldier"};
    return names[t & 7];
}

char cdsh_xq_piece_char(cdsh_xq_piece_t p)
{
    static const char letters[] = ".KABNRCP";
    int t = cdsh_xq_piece_type(p);
    if (t == 0 || p > 15)
        return '.';
    char c = letters[t];
    return cdsh_xq_piece_side(p) ? (char)tolower((unsigned char)c) : c;
}

static int letter_type(char c)
{
    switch (toupper((unsigned char)c)) {
    case 'K': return CDSH_XQ_KING;
    case 'A': return CDSH_XQ_ADVISOR;
    case 'B':
    case 'E': return CDSH_XQ_ELEPHANT;
    case 'N':
    case 'H': return CDSH_XQ_HORSE;
    case 'R': return CDSH_XQ_CHARIOT;
    case 'C': return CDSH_XQ_CANNON;
    case 'P': return CDSH_XQ_PAWN;
    default: return 0;
    }
}

static void square_name(int sq, char out[3])
{
    out[0] = (char)('a' + cdsh_xq_square_file((cdsh_xq_square_t)sq));
    out[1] = (char)('0' + cdsh_xq_square_rank((cdsh_xq_square_t)sq));
    out[2] = '\0';
}

/* Is a piece of this side and type allowed on this square? */
static int point_ok(int side, int type, int file, int rank)
{
    int r = side == CDSH_XQ_RED ? rank : 9 - rank; /* from the owner's side */
    switch (type) {
    case CDSH_XQ_KING: return file >= 3 && file <= 5 && r <= 2;
    case CDSH_XQ_ADVISOR:
        return ((file == 3 || file == 5) && (r == 0 || r == 2)) || (file == 4 && r == 1);
    case CDSH_XQ_ELEPHANT:
        return ((file == 2 || file == 6) && (r == 0 || r == 4)) ||
               ((file == 0 || file == 4 || file == 8) && r == 2);
    case CDSH_XQ_PAWN: return r >= 5 || ((r == 3 || r == 4) && file % 2 == 0);
    default: return 1;
    }
}

static const char *const point_code[8] = {
    NULL, "FEN_GENERAL_SQUARE", "FEN_ADVISOR_SQUARE", "FEN_ELEPHANT_SQUARE", NULL, NULL,
    NULL, "FEN_PAWN_SQUARE"};

static int parse_uint(const char *s, size_t len, long max, long *out)
{
    if (len == 0 || len > 6)
        return -1;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v > max)
        return -1;
    *out = v;
    return 0;
}

/* A FEN being read: its fields, then the board it describes. */
typedef struct fen_parse {
    const char *fs[7];
    size_t fl[7];
    int nf;
    uint8_t board[256];
    uint8_t where[48];
    uint8_t count[2][8];
} fen_parse;

/* Splits the FEN into at most 6 whitespace-separated fields. */
static int fen_fields(const char *fen, fen_parse *fp, cdsh_error *err)
{
    fp->nf = 0;
    for (const char *p = fen; *p;) {
        while (*p && isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        const char *start = p;
        while (*p && !isspace((unsigned char)*p))
            p++;
        if (fp->nf == 6)
            return cdsh_error_set(err, CDSH_EINVAL, "FEN_EXTRA_FIELDS",
                                  "FEN has more than 6 fields; extra text '%.*s'", (int)(p - start),
                                  start);
        fp->fs[fp->nf] = start;
        fp->fl[fp->nf] = (size_t)(p - start);
        fp->nf++;
    }
    if (fp->nf == 0)
        return cdsh_error_set(err, CDSH_EINVAL, "FEN_EMPTY", "the FEN is empty");
    return 0;
}

/* One piece letter on (file, rank 9 - rank_i): counted, checked against
 * the per-side maxima and the points the piece can reach, and placed. */
static int fen_piece(fen_parse *fp, char c, int file, int rank_i, cdsh_error *err)
{
    int type = letter_type(c);
    if (!type)
        return cdsh_error_set(err, CDSH_EINVAL, "FEN_BAD_CHAR",
                              "unknown character '%c' in FEN rank %d; pieces are K A B N R "
                              "C P (also E, H), upper case Red, lower case Black",
                              c, rank_i + 1);
    if (file >= 9)
        return cdsh_error_set(err, CDSH_EINVAL, "FEN_RANK_WIDTH",
                              "FEN rank %d (ICCS rank %d) covers more than 9 points", rank_i + 1,
                              9 - rank_i);
    int side = islower((unsigned char)c) ? CDSH_XQ_BLACK : CDSH_XQ_RED;
    int rank = 9 - rank_i;
    char sqn[3];
    int sq = cdsh_xq_square(file, rank);
    square_name(sq, sqn);
    if (fp->count[side][type] >= cdsh__xq_slot_count[type]) {
        if (type == CDSH_XQ_KING)
            return cdsh_error_set(err, CDSH_EINVAL, "FEN_EXTRA_GENERAL",
                                  "%s has more than one general", cdsh__xq_side_name(side));
        return cdsh_error_set(err, CDSH_EINVAL, "FEN_TOO_MANY",
                              "%s has more than %d %ss (one more on %s)", cdsh__xq_side_name(side),
                              cdsh__xq_slot_count[type], cdsh__xq_type_name(type), sqn);
    }
    if (!point_ok(side, type, file, rank))
        return cdsh_error_set(err, CDSH_EINVAL, point_code[type],
                              "%s %s on %s is on a point it can never reach",
                              cdsh__xq_side_name(side), cdsh__xq_type_name(type), sqn);
    int id = 16 + 16 * side + cdsh__xq_slot_first[type] + fp->count[side][type]++;
    fp->board[sq] = (uint8_t)id;
    fp->where[id] = (uint8_t)sq;
    return 0;
}

/* The board field: ten ranks from 9 down to 0, each covering 9 points. */
static int fen_board(fen_parse *fp, cdsh_error *err)
{
    memset(fp->board, XQ_OFF, sizeof fp->board);
    memset(fp->where, 0, sizeof fp->where);
    memset(fp->count, 0, sizeof fp->count);
    for (int r = 0; r < 10; r++)
        for (int f = 0; f < 9; f++)
            fp->board[cdsh_xq_square(f, r)] = 0;
    const char *b = fp->fs[0];
    const size_t n = fp->fl[0];
    int rank_i = 0, file = 0;
    for (size_t i = 0; i <= n; i++) {
        char c = i < n ? b[i] : '\0';
        if (c == '/' || c == '\0') {
            if (file != 9)
                return cdsh_error_set(err, CDSH_EINVAL, "FEN_RANK_WIDTH",
                                      "FEN rank %d (ICCS rank %d) covers %d points; each rank "
                                      "must cover exactly 9",
                                      rank_i + 1, 9 - rank_i, file);
            rank_i++;
            file = 0;
            if (c == '/' && rank_i == 10)
                return cdsh_error_set(err, CDSH_EINVAL, "FEN_RANK_COUNT",
                                      "FEN board has more than 10 ranks; it needs exactly 10 "
                                      "separated by '/'");
            continue;
        }
        if (c >= '1' && c <= '9') {
            file += c - '0';
            if (file > 9)
                return cdsh_error_set(err, CDSH_EINVAL, "FEN_RANK_WIDTH",
                                      "FEN rank %d (ICCS rank %d) covers more than 9 points",
                                      rank_i + 1, 9 - rank_i);
            continue;
        }
        int rc = fen_piece(fp, c, file, rank_i, err);
        if (rc)
            return rc;
        file++;
    }
    if (rank_i != 10)
        return cdsh_error_set(err, CDSH_EINVAL, "FEN_RANK_COUNT",
                              "FEN board has %d ranks; it needs exactly 10 separated by '/'",
                              rank_i);
    for (int s = 0; s < 2; s++)
        if (!fp->count[s][CDSH_XQ_KING])
            return cdsh_error_set(err, CDSH_EINVAL, "FEN_NO_GENERAL", "%s has no general",
                                  cdsh__xq_side_name(s));
    return 0;
}

/* Fields 2-6: side to move, two '-', halfmove counter, move number. */
static int fen_counters(const fen_parse *fp, int *side, long *half, long *full, cdsh_error *err)
{
    const char *const *fs = fp->fs;
    const size_t *fl = fp->fl;
    *side = CDSH_XQ_RED;
    *half = 0;
    *full = 1;
    if (fp->nf >= 2) {
        if (fl[1] != 1 || !strchr("wrb", fs[1][0]))
            return cdsh_error_set(err, CDSH_EINVAL, "FEN_SIDE",
                                  "side to move must be 'w' (or 'r') for Red or 'b' for Black, "
                                  "got '%.*s'",
                                  (int)fl[1], fs[1]);
        *side = fs[1][0] == 'b' ? CDSH_XQ_BLACK : CDSH_XQ_RED;
    }
    for (int i = 2; i < fp->nf && i < 4; i++)
        if (fl[i] != 1 || fs[i][0] != '-')
            return cdsh_error_set(err, CDSH_EINVAL, "FEN_FIELD",
                                  "FEN field %d must be '-' in xiangqi, got '%.*s'", i + 1,
                                  (int)fl[i], fs[i]);
    if (fp->nf >= 5 && parse_uint(fs[4], fl[4], CDSH_XQ_MAX_HALFMOVE, half) != 0)
        return cdsh_error_set(err, CDSH_EINVAL, "FEN_HALFMOVE",
                              "halfmove counter must be a number from 0 to %d, got '%.*s'",
                              CDSH_XQ_MAX_HALFMOVE, (int)fl[4], fs[4]);
    if (fp->nf >= 6 && (parse_uint(fs[5], fl[5], 99999, full) != 0 || *full < 1))
        return cdsh_error_set(err, CDSH_EINVAL, "FEN_FULLMOVE",
                              "move number must be a number from 1 to 99999, got '%.*s'",
                              (int)fl[5], fs[5]);
    return 0;
}

/* The generals may not face each other on an open file, and the side not
 * to move may not be in check. */
static int fen_generals(const fen_parse *fp, int side, cdsh_error *err)
{
    int rk = fp->where[16], bk = fp->where[32];
    if ((rk & 15) == (bk & 15)) {
        int x = rk + 16;
        while (x < bk && !fp->board[x])
            x += 16;
        if (x == bk)
            return cdsh_error_set(err, CDSH_EINVAL, "FEN_GENERALS_FACE",
                                  "the generals face each other on file %c with nothing "
                                  "between them",
                                  'a' + cdsh_xq_square_file((cdsh_xq_square_t)rk));
    }
    if (cdsh__xq_king_attacked_at(fp->board, side ^ 1, fp->where[16 + 16 * (side ^ 1)]))
        return cdsh_error_set(err, CDSH_EINVAL, "FEN_OPPONENT_IN_CHECK",
                              "%s is in check but it is %s's turn; the side not to move "
                              "cannot be in check",
                              cdsh__xq_side_name(side ^ 1), cdsh__xq_side_name(side));
    return 0;
}

int cdsh_xq_pos_set_fen(cdsh_xq_pos *pos, const char *fen, cdsh_error *err)
{
    cdsh__xq_tables_init();
    if (!pos || !fen)
        return cdsh_error_set(err, CDSH_EINVAL, "FEN_EMPTY", "no FEN given");
    fen_parse fp;
    int side;
    long half, full;
    int rc = fen_fields(fen, &fp, err);
    if (!rc)
        rc = fen_board(&fp, err);
    if (!rc)
        rc = fen_counters(&fp, &side, &half, &full, err);
    if (!rc)
        rc = fen_generals(&fp, side, err);
    if (rc)
        return rc;
    memcpy(pos->board, fp.board, sizeof fp.board);
    memcpy(pos->where, fp.where, sizeof fp.where);
    memcpy(pos->count, fp.count, sizeof fp.count);
    pos->side = side;
    pos->ply = 0;
    pos->fullmove = (int)full;
    cdsh_xq_state *s = &pos->st[0];
    memset(s, 0, sizeof *s);
    s->halfmove = (uint16_t)half;
    s->hash = cdsh_xq_hash_compute(pos);
    s->in_check = (uint8_t)cdsh__xq_king_attacked_at(fp.board, side, fp.where[16 + 16 * side]);
    return 0;
}

void cdsh_xq_pos_fen(const cdsh_xq_pos *pos, char out[CDSH_XQ_FEN_MAX])
{
    char *p = out;
    for (int r = 9; r >= 0; r--) {
        int empty = 0;
        for (int f = 0; f < 9; f++) {
            uint8_t pc = cdsh__xq_piece_of[pos->board[cdsh_xq_square(f, r)]];
            if (!pc) {
                empty++;
                continue;
            }
            if (empty)
                *p++ = (char)('0' + empty);
            empty = 0;
            *p++ = cdsh_xq_piece_char(pc);
        }
        if (empty)
            *p++ = (char)('0' + empty);
        if (r)
            *p++ = '/';
    }
    snprintf(p, (size_t)(CDSH_XQ_FEN_MAX - (p - out)), " %c - - %d %d",
             pos->side == CDSH_XQ_RED ? 'w' : 'b', cdsh_xq_halfmove(pos), pos->fullmove);
}

void cdsh_xq_pos_trim_history(cdsh_xq_pos *pos, int keep)
{
    if (keep < 0)
        keep = 0;
    if (pos->ply <= keep)
        return;
    memmove(&pos->st[0], &pos->st[pos->ply - keep], sizeof(cdsh_xq_state) * (size_t)(keep + 1));
    pos->ply = keep;
}
