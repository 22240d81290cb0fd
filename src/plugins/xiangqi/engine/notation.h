/* notation.h — move text for people and models: Chinese file notation
 * (炮二平五, 马８进７, 前车进一, 三兵平四) and WXF (C2.5, R+.3, P-+1) in and out,
 * one parser that takes ICCS, Chinese or WXF, and the legal-move list with all
 * three forms. ICCS itself is move.h. docs/xiangqi-engine.md "Notation" gives
 * the exact conventions. Thread-safety: as position.h (one position per thread). */
#ifndef CDSH_XQ_NOTATION_H
#define CDSH_XQ_NOTATION_H

#include <jansson.h>
#include <stddef.h>

#include "base/err.h"
#include "plugins/xiangqi/engine/move.h"
#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/position.h"

/* Buffer sizes that always suffice, NUL included: four CJK characters of
 * three bytes in UTF-8; four ASCII characters. */
#define CDSH_XQ_ZH_MAX 16
#define CDSH_XQ_WXF_MAX 8

/* A parse failure: err.code is one of NOTATION_SYNTAX, NOTATION_NO_SUCH_PIECE,
 * NOTATION_AMBIGUOUS, NOTATION_ILLEGAL (err.rc is CDSH_EINVAL) and err.message
 * says in English exactly what is wrong; zh says the same in Chinese. For
 * NOTATION_ILLEGAL, cause holds the engine's reason code when there is one
 * (MOVE_SELF_CHECK, MOVE_GENERALS_FACE, MOVE_OWN_PIECE, MOVE_ILLEGAL_FOR_PIECE)
 * and "" when the text names a point off the board or a move the piece never
 * makes (a horse moving 平). */
typedef struct cdsh_xq_notation_error {
    cdsh_error err;
    char zh[CDSH_ERROR_MESSAGE_MAX];
    char cause[CDSH_ERROR_CODE_MAX];
} cdsh_xq_notation_error;

/* Chinese notation of m, which must be pseudo-legal for the side to move,
 * written in UTF-8 into buf: Red with Chinese numerals (炮二平五), Black with
 * full-width digits (马８进７); simplified piece names (帅仕相马车炮兵 /
 * 将士象马车炮卒); 前/后 for two pieces of a kind on a file, 前/中/后 for three
 * soldiers, and for four or five soldiers (or soldiers stacked on two files)
 * the xqbase index form 一兵..五兵 (Black １卒..５卒). Advisors and elephants
 * always give their file. Returns 0, CDSH_EINVAL for a move that is not
 * pseudo-legal, CDSH_ETOOBIG if size < CDSH_XQ_ZH_MAX. */
int cdsh_xq_move_to_chinese(const cdsh_xq_pos *pos, cdsh_xq_move_t m, char *buf, size_t size);

/* WXF notation of m (official WXF page): H2+3, C2.5 ('.' for sideways),
 * R+.3 / C--1 for two on a file, soldiers P+ P3 P- (three on a file),
 * ++ P+ P- -- (four), ++ P+ P3 P- -- (five), and 3+ 33 3- (file digit first)
 * when soldiers are stacked on two files. Returns as cdsh_xq_move_to_chinese,
 * CDSH_ETOOBIG if size < CDSH_XQ_WXF_MAX. */
int cdsh_xq_move_to_wxf(const cdsh_xq_pos *pos, cdsh_xq_move_t m, char *buf, size_t size);

/* Parses Chinese notation for the side to move and returns the legal move it
 * names. Accepted: Chinese numerals, ASCII and full-width digits for either
 * side (files always count from the mover's right); 进/進, 退, 平; traditional
 * and variant names (車 俥, 馬 傌, 砲 包, 帥 將, 象/相 and 士/仕 and 兵/卒 for
 * either side); 前/中/后/後 and index forms (一兵..五兵, also DhtmlXQ's
 * 前/二/三/四/后 for four or five soldiers on one file). A file number given
 * where 前/后 was needed (车二进四 with two chariots on file 二) is accepted
 * when only one of those pieces can legally make the move, and refused as
 * NOTATION_AMBIGUOUS otherwise. Spaces are ignored. err may be NULL. */
int cdsh_xq_parse_chinese(const cdsh_xq_pos *pos, const char *text, cdsh_xq_move_t *out,
                          cdsh_xq_notation_error *err);

/* Parses WXF as written by cdsh_xq_move_to_wxf; also '=' for sideways, B for
 * the elephant, N for the horse and lower case letters. */
int cdsh_xq_parse_wxf(const cdsh_xq_pos *pos, const char *text, cdsh_xq_move_t *out,
                      cdsh_xq_notation_error *err);

/* Any of the three: ICCS ("h2e2", "H2-E2"; its MOVE_* failures are reported
 * as NOTATION_SYNTAX / NOTATION_NO_SUCH_PIECE / NOTATION_ILLEGAL with the
 * MOVE_* code in cause), Chinese (text with any non-ASCII character)
 * or WXF (anything else). */
int cdsh_xq_parse_any(const cdsh_xq_pos *pos, const char *text, cdsh_xq_move_t *out,
                      cdsh_xq_notation_error *err);

/* Chinese text of a NOTATION_* code (generic; the precise text is in
 * cdsh_xq_notation_error.zh), falling back to cdsh_xq_error_zh; NULL if unknown. */
const char *cdsh_xq_notation_error_zh(const char *code);

/* One legal move in every notation. from/to are the 0..89 FEN-order indexes
 * of the seed's board projection (cdsh_xq_square_index90). */
typedef struct cdsh_xq_notated_move {
    cdsh_xq_move_t move;
    int from, to;
    char iccs[6];
    char zh[CDSH_XQ_ZH_MAX];
    char wxf[CDSH_XQ_WXF_MAX];
} cdsh_xq_notated_move;

/* Legal moves of the side to move, in generation order; returns how many were
 * written. pos is changed and restored while legality is tested. */
int cdsh_xq_legal_moves_notated(cdsh_xq_pos *pos, cdsh_xq_notated_move out[CDSH_XQ_MAX_MOVES]);

/* The same as a new JSON array of {"iccs","zh","wxf","from","to"} (owned by
 * the caller); NULL on no memory. */
json_t *cdsh_xq_legal_moves_json(cdsh_xq_pos *pos);

#endif
