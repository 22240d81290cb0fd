/* notation_internal.h — what the Chinese and WXF notation files share: the
 * mover-relative piece lists, the parsed description of a move and the one
 * resolver that turns it into a legal move or a precise error. Not public. */
#ifndef CDSH_XQ_NOTATION_INTERNAL_H
#define CDSH_XQ_NOTATION_INTERNAL_H

#include "plugins/xiangqi/engine/notation.h"

/* A piece seen from its owner: file 1..9 counted from the owner's right,
 * adv 0..9 = ranks advanced from the owner's back rank. */
typedef struct cdsh__xq_np {
    cdsh_xq_square_t sq;
    int file, adv;
} cdsh__xq_np;

/* A side's pieces of one type ordered by file (owner's right to left), then
 * front to back: for soldiers this is xqbase's order. */
typedef struct cdsh__xq_nlist {
    int n;
    cdsh__xq_np p[5];
} cdsh__xq_nlist;

void cdsh__xq_nlist_get(const cdsh_xq_pos *pos, int side, int type, cdsh__xq_nlist *l);
/* Pieces of the list on a file (count and, through first, where they start). */
int cdsh__xq_nlist_on_file(const cdsh__xq_nlist *l, int file, int *first);
/* Number of files holding two or more of the list's pieces. */
int cdsh__xq_nlist_stacked_files(const cdsh__xq_nlist *l);
/* Index in the list of the piece on sq, -1 if none. */
int cdsh__xq_nlist_find(const cdsh__xq_nlist *l, cdsh_xq_square_t sq);
/* The list's pieces that share a file with another one (xqbase's S). */
void cdsh__xq_nlist_stacked(const cdsh__xq_nlist *l, cdsh__xq_nlist *s);

int cdsh__xq_file_of(int side, cdsh_xq_square_t sq);
int cdsh__xq_adv_of(int side, cdsh_xq_square_t sq);

/* Which piece the text names. */
enum {
    XQN_FILE,        /* by file; WXF: the middle one when 3 or 5 soldiers share it */
    XQN_FRONT,       /* 前 / WXF letter then + */
    XQN_MIDDLE,      /* 中 */
    XQN_REAR,        /* 后 / WXF letter then - */
    XQN_INDEX,       /* 一兵..五兵: index into xqbase's S */
    XQN_WXF_FFRONT,  /* WXF ++ */
    XQN_WXF_RREAR,   /* WXF -- */
    XQN_FILE_FRONT,  /* WXF 3+ */
    XQN_FILE_MIDDLE, /* WXF 33 */
    XQN_FILE_REAR,   /* WXF 3- */
};

typedef struct cdsh__xq_ndesc {
    int wxf;  /* 1 for WXF text (changes XQN_FILE/FRONT/REAR for soldiers, and messages) */
    int type; /* CDSH_XQ_* piece type */
    int sel;  /* XQN_* */
    int arg;  /* file for XQN_FILE*, 1-based index for XQN_INDEX */
    int dir;  /* +1 进 / +, -1 退 / -, 0 平 / . */
    int num;  /* 1..9 */
} cdsh__xq_ndesc;

/* Finds the legal move d describes; text is the input (quoted in messages). */
int cdsh__xq_note_resolve(const cdsh_xq_pos *pos, const cdsh__xq_ndesc *d, const char *text,
                          cdsh_xq_move_t *out, cdsh_xq_notation_error *e);

/* Fills e (if non-NULL) and returns CDSH_EINVAL. */
int cdsh__xq_note_fail(cdsh_xq_notation_error *e, const char *code, const char *cause,
                       const char *en, const char *zh);

/* NOTATION_SYNTAX: "'q' is not <what>: <why>; <hint>" in both languages. */
int cdsh__xq_note_syntax(cdsh_xq_notation_error *e, const char *q, const char *what_en,
                         const char *what_zh, const char *why_en, const char *why_zh,
                         const char *hint_en, const char *hint_zh);

/* Checks the arguments of a move_to_* function: the type of the moving piece
 * (m pseudo-legal for the side to move), or CDSH_EINVAL / CDSH_ETOOBIG. */
int cdsh__xq_note_mover(const cdsh_xq_pos *pos, cdsh_xq_move_t m, const char *buf, size_t size,
                        size_t need);

/* Copies the valid UTF-8 prefix of at most max bytes of text, for messages
 * (which must stay valid UTF-8 to go into JSON). */
void cdsh__xq_note_echo(const char *text, char *out, size_t max);

/* Direction and number of a move as the notation writes them. */
void cdsh__xq_note_dir_num(int side, int type, cdsh_xq_move_t m, int *dir, int *num);

/* Chinese number for a side: Red 一..九, Black full-width １..９ (UTF-8). */
const char *cdsh__xq_zh_number(int side, int n);
/* Chinese piece name for side and type (simplified). */
const char *cdsh__xq_zh_piece(int side, int type);
const char *cdsh__xq_zh_side(int side);

#endif
