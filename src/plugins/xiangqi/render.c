/* render.c — how xiangqi values read as text: the tools' one text block
 * (the projection with the board, the legal moves, candidates, review) and
 * a refusal for people (errorZh, then the legal moves). The operations
 * themselves are ops.c's rows; this file only formats their values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "host/toolresult.h"
#include "plugins/xiangqi/plugin.h"

/* ---- render ------------------------------------------------------------------- */

/* "a3a4 兵九进一, ..." */
static void append_moves(cdsh_strbuf *sb, const json_t *moves)
{
    size_t i;
    json_t *m;
    json_array_foreach(moves, i, m) {
        cdsh_strbuf_appendf(sb, "%s%s %s", i ? ", " : "",
                            json_string_value(json_object_get(m, "iccs")),
                            json_string_value(json_object_get(m, "zh")));
    }
    cdsh_strbuf_append_char(sb, '\n');
}

char *cdsh__xq_refusal_text_dup(const json_t *v)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    json_t *legal = json_object_get(v, "legalMoves");
    cdsh_strbuf_appendf(&sb, "错误 %s：%s\n(%s)\n", json_string_value(json_object_get(v, "error")),
                        json_string_value(json_object_get(v, "errorZh")),
                        json_string_value(json_object_get(v, "message")));
    cdsh_strbuf_appendf(&sb, "当前可走的合法着法（%zu）：", json_array_size(legal));
    append_moves(&sb, legal);
    return cdsh_strbuf_take(&sb, NULL);
}

static const char *side_name(const char *s)
{
    return s && strcmp(s, "b") == 0 ? "黑方" : "红方";
}

static void render_projection(cdsh_strbuf *sb, const json_t *v)
{
    const char *turn = json_string_value(json_object_get(v, "turn"));
    const char *hero = json_string_value(json_object_get(v, "hero"));
    json_t *status = json_object_get(v, "status");
    json_t *last = json_object_get(v, "lastMove");
    json_t *played = json_object_get(v, "played");
    if (played)
        cdsh_strbuf_appendf(sb, "已走：%s\n", json_string_value(played));
    cdsh_strbuf_appendf(sb, "revision %lld · %s · 轮到%s（%s）\n",
                        (long long)json_integer_value(json_object_get(v, "revision")),
                        json_string_value(json_object_get(status, "reasonZh")), side_name(turn),
                        turn && hero && strcmp(turn, hero) == 0 ? "人类方" : "对手");
    if (json_is_object(last))
        cdsh_strbuf_appendf(sb, "上一步：%s (%s)\n", json_string_value(json_object_get(last, "zh")),
                            json_string_value(json_object_get(last, "iccs")));
    cdsh_strbuf_appendf(sb, "FEN: %s\n", json_string_value(json_object_get(v, "fen")));
    json_t *msg = json_object_get(v, "message");
    if (json_is_object(msg))
        cdsh_strbuf_appendf(sb, "提示：%s\n", json_string_value(json_object_get(msg, "code")));
    const char *ascii = json_string_value(json_object_get(v, "ascii"));
    if (ascii)
        cdsh_strbuf_appendf(sb, "%s", ascii);
    json_t *hist = json_object_get(v, "history");
    if (json_array_size(hist)) {
        cdsh_strbuf_append_str(sb, "棋谱：");
        size_t i;
        json_t *h;
        json_array_foreach(hist, i, h) {
            cdsh_strbuf_appendf(sb, "%s%s", i ? " " : "",
                                json_string_value(json_object_get(h, "zh")));
        }
        cdsh_strbuf_append_char(sb, '\n');
    }
    json_t *legal = json_object_get(v, "legalMoves");
    if (legal) {
        cdsh_strbuf_appendf(sb, "合法着法（%zu）：", json_array_size(legal));
        append_moves(sb, legal);
    }
    json_t *ev = json_object_get(v, "evaluation");
    if (json_is_object(ev))
        cdsh_strbuf_appendf(sb, "评估：%lld（红方视角为正）\n",
                            (long long)json_integer_value(json_object_get(ev, "score")));
    json_t *cands = json_object_get(v, "candidates");
    if (cands) {
        cdsh_strbuf_append_str(sb, "候选着法（本地引擎）：\n");
        size_t i;
        json_t *c;
        json_array_foreach(cands, i, c) {
            cdsh_strbuf_appendf(sb, "%zu. %s %s 评分 %lld 变例：", i + 1,
                                json_string_value(json_object_get(c, "iccs")),
                                json_string_value(json_object_get(c, "zh")),
                                (long long)json_integer_value(json_object_get(c, "score")));
            size_t j;
            json_t *z;
            json_array_foreach(json_object_get(c, "pvZh"), j, z) {
                cdsh_strbuf_appendf(sb, "%s%s", j ? " " : "", json_string_value(z));
            }
            cdsh_strbuf_append_char(sb, '\n');
        }
    }
    json_t *job = json_object_get(v, "job");
    if (job) {
        const char *id = json_string_value(json_object_get(job, "id"));
        cdsh_strbuf_appendf(sb,
                            "深度 %lld 超出一回合的预算（%lld 层）：已作为后台任务 %s 运行"
                            "（以上候选为默认深度）。完成时会通知你；用 job_output（job_id "
                            "\"%s\"）取结果，job_kill 可停止。\n"
                            "Depth %lld is beyond a turn's budget: background job %s is "
                            "searching it; collect it with job_output (job_id \"%s\").\n",
                            (long long)json_integer_value(json_object_get(job, "depth")),
                            (long long)json_integer_value(json_object_get(job, "turnDepth")), id,
                            id, (long long)json_integer_value(json_object_get(job, "depth")), id,
                            id);
    }
    json_t *tp = json_object_get(v, "turningPoints");
    if (tp) {
        const char *hl = json_string_value(json_object_get(v, "highlight"));
        json_t *list = hl && strcmp(hl, "all") == 0 ? json_object_get(v, "moves") : tp;
        cdsh_strbuf_appendf(sb, "复盘（%s）：转折点 %zu 个\n", hl ? hl : "turning",
                            json_array_size(tp));
        size_t i;
        json_t *m;
        json_array_foreach(list, i, m) {
            const char *kind = json_string_value(json_object_get(m, "kindZh"));
            cdsh_strbuf_appendf(sb, "第%lld手 %s %s 评估 %lld（变化 %+lld）%s\n",
                                (long long)json_integer_value(json_object_get(m, "ply")),
                                json_string_value(json_object_get(m, "zh")),
                                json_string_value(json_object_get(m, "iccs")),
                                (long long)json_integer_value(json_object_get(m, "score")),
                                (long long)json_integer_value(json_object_get(m, "delta")),
                                kind                                          ? kind
                                : json_is_true(json_object_get(m, "turning")) ? "★"
                                                                              : "");
        }
    }
    json_t *undone = json_object_get(v, "undone");
    if (undone) {
        cdsh_strbuf_append_str(sb, "已悔：");
        size_t i;
        json_t *u;
        json_array_foreach(undone, i, u) {
            cdsh_strbuf_appendf(sb, "%s%s", i ? " " : "",
                                json_string_value(json_object_get(u, "zh")));
        }
        cdsh_strbuf_append_char(sb, '\n');
    }
}

json_t *cdsh__xq_tool_render(void *ud, const json_t *args, const json_t *value, cdsh_error *err)
{
    (void)ud;
    (void)args;
    char *text;
    if (!json_is_true(json_object_get(value, "ok"))) {
        text = cdsh__xq_refusal_text_dup(value);
    } else {
        cdsh_strbuf sb;
        cdsh_strbuf_init(&sb);
        render_projection(&sb, value);
        text = cdsh_strbuf_take(&sb, NULL);
    }
    json_t *content = text ? cdsh_toolresult_text_content(text) : NULL;
    free(text);
    if (!content)
        cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    return content;
}
