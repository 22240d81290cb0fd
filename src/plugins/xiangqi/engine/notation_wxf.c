/* notation_wxf.c — WXF notation (reference §4.2, the official WXF page):
 * writing H2+3 / C2.5 / R+.3 and the soldier stack forms (P+ P3 P-, ++ --,
 * 3+ 33 3-) and reading them back. Which piece a text names, and every
 * legality error, is decided in notation.c. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "plugins/xiangqi/engine/notation.h"
#include "plugins/xiangqi/engine/notation_internal.h"

static const char wxf_letter[8] = {'?', 'K', 'A', 'E', 'H', 'R', 'C', 'P'};

int cdsh_xq_move_to_wxf(const cdsh_xq_pos *pos, cdsh_xq_move_t m, char *buf, size_t size)
{
    const int type = cdsh__xq_note_mover(pos, m, buf, size, CDSH_XQ_WXF_MAX);
    if (type < 0)
        return type;
    const cdsh_xq_square_t from = cdsh_xq_move_from(m);
    const int side = pos->side;
    const int file = cdsh__xq_file_of(side, from);
    cdsh__xq_nlist l;
    cdsh__xq_nlist_get(pos, side, type, &l);
    int first = 0, k = cdsh__xq_nlist_on_file(&l, file, &first);
    int i = cdsh__xq_nlist_find(&l, from) - first; /* 0 = front of its file */
    char c0 = wxf_letter[type], c1 = (char)('0' + file);
    if (type == CDSH_XQ_PAWN && k >= 2) {
        if (cdsh__xq_nlist_stacked_files(&l) == 2) {
            c0 = (char)('0' + file);
            c1 = i == 0 ? '+' : i == k - 1 ? '-' : (char)('0' + file);
        } else if (k <= 3) {
            c1 = i == 0 ? '+' : i == k - 1 ? '-' : (char)('0' + file);
        } else if (i == 0 || i == k - 1) {
            c0 = c1 = i == 0 ? '+' : '-';
        } else {
            c1 = i == 1 ? '+' : i == k - 2 ? '-' : (char)('0' + file);
        }
    } else if (k >= 2 && type != CDSH_XQ_ADVISOR && type != CDSH_XQ_ELEPHANT) {
        c1 = i == 0 ? '+' : '-';
    }
    int dir, num;
    cdsh__xq_note_dir_num(side, type, m, &dir, &num);
    snprintf(buf, size, "%c%c%c%d", c0, c1, dir > 0 ? '+' : dir < 0 ? '-' : '.', num);
    return 0;
}

static int wxf_type(int c)
{
    switch (toupper(c)) {
    case 'K': return CDSH_XQ_KING;
    case 'A': return CDSH_XQ_ADVISOR;
    case 'E':
    case 'B': return CDSH_XQ_ELEPHANT;
    case 'H':
    case 'N': return CDSH_XQ_HORSE;
    case 'R': return CDSH_XQ_CHARIOT;
    case 'C': return CDSH_XQ_CANNON;
    case 'P': return CDSH_XQ_PAWN;
    default: return 0;
    }
}

static int syntax(cdsh_xq_notation_error *e, const char *q, const char *en_why, const char *zh_why)
{
    return cdsh__xq_note_syntax(
        e, q, "WXF notation", " WXF 记谱", en_why, zh_why,
        "write piece letter (K A E H R C P), file 1-9 from the mover's right (or + / - for front "
        "/ rear), + - or . for forward, backward, sideways, and a number: C2.5, H2+3, R+.3",
        "应写棋子字母（K A E H R C P）、从己方右侧数的纵线 1-9（或 +/- 表示前/后）、+ - . "
        "表示进退平，再加数字，如 C2.5、H2+3、R+.3");
}

int cdsh_xq_parse_wxf(const cdsh_xq_pos *pos, const char *text, cdsh_xq_move_t *out,
                      cdsh_xq_notation_error *err)
{
    if (!pos || !text || !out)
        return cdsh__xq_note_fail(err, "NOTATION_SYNTAX", NULL, "no move given", "没有给出着法");
    char q[48], c[4];
    cdsh__xq_note_echo(text, q, 40);
    int n = 0;
    for (const char *s = text; *s; s++) {
        if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
            continue;
        if (n == 4)
            return syntax(err, q, "it has more than four characters", "超过四个字符");
        c[n++] = *s;
    }
    if (n < 4)
        return syntax(err, q, "it has fewer than four characters", "不足四个字符");
    cdsh__xq_ndesc d = {.wxf = 1};
    const int digit0 = c[0] >= '1' && c[0] <= '9', digit1 = c[1] >= '1' && c[1] <= '9';
    if ((d.type = wxf_type((unsigned char)c[0])) != 0) {
        if (digit1)
            d.sel = XQN_FILE, d.arg = c[1] - '0';
        else if (c[1] == '+' || c[1] == '-')
            d.sel = c[1] == '+' ? XQN_FRONT : XQN_REAR;
        else
            return syntax(err, q, "the second character must be a file digit 1-9, + or -",
                          "第二个字符应为纵线数字 1-9、+ 或 -");
    } else if ((c[0] == '+' || c[0] == '-') && c[1] == c[0]) {
        d.type = CDSH_XQ_PAWN;
        d.sel = c[0] == '+' ? XQN_WXF_FFRONT : XQN_WXF_RREAR;
    } else if (digit0 && (c[1] == '+' || c[1] == '-' || c[1] == c[0])) {
        d.type = CDSH_XQ_PAWN;
        d.arg = c[0] - '0';
        d.sel = c[1] == '+' ? XQN_FILE_FRONT : c[1] == '-' ? XQN_FILE_REAR : XQN_FILE_MIDDLE;
    } else {
        return syntax(err, q,
                      "it must start with a piece letter, ++ / -- or a soldier file digit "
                      "followed by +, - or the same digit",
                      "开头应为棋子字母、++ / --，或兵的纵线数字后跟 +、- 或同一数字");
    }
    if (c[2] == '+' || c[2] == '-')
        d.dir = c[2] == '+' ? 1 : -1;
    else if (c[2] == '.' || c[2] == '=')
        d.dir = 0;
    else
        return syntax(err, q, "the third character must be +, - or . (= is also accepted)",
                      "第三个字符应为 +、- 或 .（也接受 =）");
    if (!(c[3] >= '1' && c[3] <= '9'))
        return syntax(err, q, "the last character must be a digit 1-9", "最后一个字符应为数字 1-9");
    d.num = c[3] - '0';
    return cdsh__xq_note_resolve(pos, &d, q, out, err);
}
