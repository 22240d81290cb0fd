/* move.c — ICCS/UCI move text and the Chinese texts of the engine's error
 * codes. No position logic here. */
#include "plugins/xiangqi/engine/move.h"

#include <ctype.h>
#include <string.h>

void cdsh_xq_move_to_iccs(cdsh_xq_move_t m, char out[6])
{
    if (m == CDSH_XQ_MOVE_NONE) {
        memcpy(out, "0000", 5);
        return;
    }
    cdsh_xq_square_t f = cdsh_xq_move_from(m), t = cdsh_xq_move_to(m);
    out[0] = (char)('a' + cdsh_xq_square_file(f));
    out[1] = (char)('0' + cdsh_xq_square_rank(f));
    out[2] = (char)('a' + cdsh_xq_square_file(t));
    out[3] = (char)('0' + cdsh_xq_square_rank(t));
    out[4] = '\0';
}

static int parse_square(const char *s, cdsh_xq_square_t *out)
{
    int f = tolower((unsigned char)s[0]) - 'a', r = s[1] - '0';
    if (f < 0 || f > 8 || r < 0 || r > 9)
        return -1;
    *out = cdsh_xq_square(f, r);
    return 0;
}

int cdsh_xq_move_parse_iccs(const char *text, cdsh_xq_move_t *out, cdsh_error *err)
{
    if (!text || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "MOVE_SYNTAX", "no move given");
    size_t n = strlen(text);
    cdsh_xq_square_t f, t;
    const char *second = n == 5 && text[2] == '-' ? text + 3 : text + 2;
    if ((n != 4 && !(n == 5 && text[2] == '-')) || parse_square(text, &f) != 0 ||
        parse_square(second, &t) != 0)
        return cdsh_error_set(err, CDSH_EINVAL, "MOVE_SYNTAX",
                              "'%.16s' is not a coordinate move; write it like h2e2 (files a-i "
                              "from Red's left, ranks 0-9 from Red's side)",
                              text);
    if (f == t)
        return cdsh_error_set(err, CDSH_EINVAL, "MOVE_SYNTAX",
                              "'%.16s' does not move: source and destination are the same", text);
    *out = cdsh_xq_move_make(f, t);
    return 0;
}

static const struct {
    const char *code, *zh;
} zh_texts[] = {
    {"FEN_EMPTY", "局面串为空"},
    {"FEN_RANK_COUNT", "局面串必须恰好有10行（用“/”分隔）"},
    {"FEN_RANK_WIDTH", "局面串某一行不是恰好9个点"},
    {"FEN_BAD_CHAR", "局面串含有未知的棋子字母"},
    {"FEN_NO_GENERAL", "缺少将（帅）"},
    {"FEN_EXTRA_GENERAL", "将（帅）多于一个"},
    {"FEN_TOO_MANY", "某种棋子数量超过上限"},
    {"FEN_GENERAL_SQUARE", "将（帅）不在九宫内"},
    {"FEN_ADVISOR_SQUARE", "士（仕）不在合法的位置"},
    {"FEN_ELEPHANT_SQUARE", "象（相）不在合法的位置"},
    {"FEN_PAWN_SQUARE", "兵（卒）不在合法的位置（在起始位置之后）"},
    {"FEN_SIDE", "走子方必须是 w（或 r）红方，或 b 黑方"},
    {"FEN_FIELD", "局面串第3、4字段在象棋中必须是“-”"},
    {"FEN_HALFMOVE", "无吃子步数不合法"},
    {"FEN_FULLMOVE", "回合数不合法"},
    {"FEN_EXTRA_FIELDS", "局面串字段过多"},
    {"FEN_GENERALS_FACE", "将帅照面"},
    {"FEN_OPPONENT_IN_CHECK", "非走子方正被将军，局面不合法"},
    {"MOVE_SYNTAX", "着法格式错误，应为如 h2e2 的坐标格式"},
    {"MOVE_NO_PIECE", "起点没有棋子"},
    {"MOVE_NOT_YOUR_PIECE", "起点的棋子不属于走子方"},
    {"MOVE_OWN_PIECE", "不能吃自己的棋子"},
    {"MOVE_ILLEGAL_FOR_PIECE", "该棋子不能这样走"},
    {"MOVE_SELF_CHECK", "走后己方将（帅）被将军"},
    {"MOVE_GENERALS_FACE", "走后将帅照面"},
    {"MOVE_HISTORY_FULL", "着法历史已满"},
};

const char *cdsh_xq_error_zh(const char *code)
{
    if (!code)
        return NULL;
    for (size_t i = 0; i < sizeof zh_texts / sizeof zh_texts[0]; i++)
        if (strcmp(zh_texts[i].code, code) == 0)
            return zh_texts[i].zh;
    return NULL;
}
