/* notation_zh.c — Chinese file notation (纵线方式, reference §4.1): writing
 * 炮二平五 / 马８进７ / 前车进一 / 三兵平四 and reading them with their
 * traditional and variant spellings. Which piece a text names, and every
 * legality error, is decided in notation.c. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/utf8.h"
#include "plugins/xiangqi/engine/notation.h"
#include "plugins/xiangqi/engine/notation_internal.h"

static int is_advisor_elephant_king(int type)
{
    return type == CDSH_XQ_KING || type == CDSH_XQ_ADVISOR || type == CDSH_XQ_ELEPHANT;
}

int cdsh_xq_move_to_chinese(const cdsh_xq_pos *pos, cdsh_xq_move_t m, char *buf, size_t size)
{
    const int type = cdsh__xq_note_mover(pos, m, buf, size, CDSH_XQ_ZH_MAX);
    if (type < 0)
        return type;
    const int side = pos->side;
    const cdsh_xq_square_t from = cdsh_xq_move_from(m);
    const int file = cdsh__xq_file_of(side, from);
    cdsh__xq_nlist l, s;
    cdsh__xq_nlist_get(pos, side, type, &l);
    const char *piece = cdsh__xq_zh_piece(side, type), *lead = NULL;
    int first = 0, k = cdsh__xq_nlist_on_file(&l, file, &first),
        idx = cdsh__xq_nlist_find(&l, from);
    if (type == CDSH_XQ_PAWN) {
        cdsh__xq_nlist_stacked(&l, &s);
        int i = cdsh__xq_nlist_find(&s, from);
        if (i >= 0 && s.n <= 3)
            lead = i == 0 ? "前" : i == s.n - 1 ? "后" : "中";
        else if (i >= 0)
            lead = cdsh__xq_zh_number(side, i + 1); /* xqbase: 一兵..五兵 */
    } else if (!is_advisor_elephant_king(type) && k >= 2) {
        lead = idx == first ? "前" : "后";
    }
    int dir, num;
    cdsh__xq_note_dir_num(side, type, m, &dir, &num);
    const char *d = dir > 0 ? "进" : dir < 0 ? "退" : "平";
    if (lead)
        snprintf(buf, size, "%s%s%s%s", lead, piece, d, cdsh__xq_zh_number(side, num));
    else
        snprintf(buf, size, "%s%s%s%s", piece, cdsh__xq_zh_number(side, file), d,
                 cdsh__xq_zh_number(side, num));
    return 0;
}

static int zh_piece_type(long cp)
{
    switch (cp) {
    case 0x5E25:
    case 0x5E05:
    case 0x5C06:
    case 0x5C07: return CDSH_XQ_KING; /* 帥帅将將 */
    case 0x4ED5:
    case 0x58EB: return CDSH_XQ_ADVISOR; /* 仕士 */
    case 0x76F8:
    case 0x8C61: return CDSH_XQ_ELEPHANT; /* 相象 */
    case 0x9A6C:
    case 0x99AC:
    case 0x508C: return CDSH_XQ_HORSE; /* 马馬傌 */
    case 0x8F66:
    case 0x8ECA:
    case 0x4FE5: return CDSH_XQ_CHARIOT; /* 车車俥 */
    case 0x70AE:
    case 0x7832:
    case 0x5305: return CDSH_XQ_CANNON; /* 炮砲包 */
    case 0x5175:
    case 0x5352: return CDSH_XQ_PAWN; /* 兵卒 */
    default: return 0;
    }
}

static int zh_number(long cp)
{
    static const long numerals[9] = {0x4E00, 0x4E8C, 0x4E09, 0x56DB, 0x4E94,
                                     0x516D, 0x4E03, 0x516B, 0x4E5D}; /* 一..九 */
    for (int i = 0; i < 9; i++)
        if (cp == numerals[i])
            return i + 1;
    if (cp >= '1' && cp <= '9')
        return (int)(cp - '0');
    if (cp >= 0xFF11 && cp <= 0xFF19) /* full-width １..９ */
        return (int)(cp - 0xFF10);
    return 0;
}

static int zh_position(long cp)
{
    switch (cp) {
    case 0x524D: return XQN_FRONT;  /* 前 */
    case 0x4E2D: return XQN_MIDDLE; /* 中 */
    case 0x540E:
    case 0x5F8C: return XQN_REAR; /* 后後 */
    default: return -1;
    }
}

static int zh_direction(long cp)
{
    switch (cp) {
    case 0x8FDB:
    case 0x9032: return 1;  /* 进進 */
    case 0x9000: return -1; /* 退 */
    case 0x5E73: return 0;  /* 平 */
    default: return 2;
    }
}

static int syntax(cdsh_xq_notation_error *e, const char *q, const char *en_why, const char *zh_why)
{
    return cdsh__xq_note_syntax(
        e, q, "Chinese notation", "中文记谱", en_why, zh_why,
        "write piece, file, 进/退/平, number (炮二平五, 马８进７) or 前/中/后 and the piece first "
        "(前车进一)",
        "应写棋子、纵线、进/退/平、数字（如 炮二平五、马８进７），或前/中/后加棋子（如 前车进一）");
}

int cdsh_xq_parse_chinese(const cdsh_xq_pos *pos, const char *text, cdsh_xq_move_t *out,
                          cdsh_xq_notation_error *err)
{
    if (!pos || !text || !out)
        return cdsh__xq_note_fail(err, "NOTATION_SYNTAX", NULL, "no move given", "没有给出着法");
    char q[48];
    cdsh__xq_note_echo(text, q, 40);
    long cp[4];
    int n = 0;
    const size_t len = strlen(text);
    for (size_t at = 0, step; at < len; at += step) {
        uint32_t c;
        if (cdsh_utf8_decode(text + at, len - at, &c, &step) != 0)
            return syntax(err, q, "the text is not valid UTF-8", "文本不是有效的 UTF-8");
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0x3000)
            continue;
        if (n == 4)
            return syntax(err, q, "it has more than four characters", "超过四个字");
        cp[n++] = c;
    }
    if (n < 4)
        return syntax(err, q, "it has fewer than four characters", "不足四个字");
    cdsh__xq_ndesc d = {0};
    int p;
    if ((d.type = zh_piece_type(cp[0])) != 0) {
        d.sel = XQN_FILE;
        d.arg = zh_number(cp[1]);
        if (d.arg == 0)
            return syntax(err, q, "the second character must be a file number (一..九 or 1..9)",
                          "第二个字应为纵线数字（一至九或1至9）");
    } else if ((d.type = zh_piece_type(cp[1])) != 0 && (p = zh_position(cp[0])) >= 0) {
        d.sel = p;
    } else if (d.type != 0 && zh_number(cp[0]) >= 1 && zh_number(cp[0]) <= 5) {
        d.sel = XQN_INDEX;
        d.arg = zh_number(cp[0]);
    } else {
        return syntax(err, q,
                      "no piece name (车 马 炮 相 仕 帅 兵, 将 士 象 卒) in first or second place",
                      "第一或第二个字应为棋子名（车马炮相仕帅兵、将士象卒）");
    }
    d.dir = zh_direction(cp[2]);
    if (d.dir == 2)
        return syntax(err, q, "the third character must be 进, 退 or 平", "第三个字应为进、退或平");
    d.num = zh_number(cp[3]);
    if (d.num == 0)
        return syntax(err, q, "the last character must be a number (一..九 or 1..9)",
                      "最后一个字应为数字（一至九或1至9）");
    return cdsh__xq_note_resolve(pos, &d, q, out, err);
}
