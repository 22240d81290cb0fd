/* tools.c — the six model-facing xiangqi tools (seed §2): validate → call
 * the service as the opponent → return the value; output schemas declared
 * field by field, one text block of content, only xiangqi_board parallel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "host/dispatch.h"
#include "host/toolresult.h"
#include "plugins/xiangqi/plugin.h"

/* ---- schemas ------------------------------------------------------------------ */

#define NULLABLE(t) "{\"oneOf\":[{\"type\":\"null\"}," t "]}"
#define INT "{\"type\":\"integer\"}"
#define STR "{\"type\":\"string\"}"
#define BOOL "{\"type\":\"boolean\"}"
#define SIDE "{\"type\":\"string\",\"enum\":[\"r\",\"b\"]}"
#define MOVE_ITEM                                                                                  \
    "{\"type\":\"object\",\"properties\":{\"iccs\":" STR ",\"zh\":" STR "},"                       \
    "\"required\":[\"iccs\",\"zh\"],\"additionalProperties\":false}"

#define PROJECTION_PROPS                                                                                                                                                                        \
    "\"ok\":" BOOL ",\"revision\":{\"type\":\"integer\",\"minimum\":1},\"fen\":" STR                                                                                                            \
    ",\"turn\":" SIDE ",\"hero\":" SIDE                                                                                                                                                         \
    ",\"phase\":{\"type\":\"string\",\"enum\":[\"playing\",\"over\"]},"                                                                                                                         \
    "\"pending\":" NULLABLE(                                                                                                                                                                    \
        "{\"type\":\"string\",\"enum\":[\"ai-thinking\",\"ai-failed\"]}") ","                                                                                                                   \
                                                                          "\"status\":{\"type\":"                                                                                               \
                                                                          "\"object\","                                                                                                         \
                                                                          "\"properties\":{"                                                                                                    \
                                                                          "\"state\":" STR                                                                                                      \
                                                                          ",\"winner\":" NULLABLE(                                                                                              \
                                                                              SIDE) ",\"reasonZh"                                                                                               \
                                                                                    "\":" STR "},"                                                                                              \
                                                                                    "\"required\""                                                                                              \
                                                                                    ":[\"state\","                                                                                              \
                                                                                    "\"winner\","                                                                                               \
                                                                                    "\"reasonZh\""                                                                                              \
                                                                                    "],"                                                                                                        \
                                                                                    "\"additional"                                                                                              \
                                                                                    "Properties\""                                                                                              \
                                                                                    ":false},"                                                                                                  \
                                                                                    "\"inCheck\""                                                                                               \
                                                                                    ":" BOOL ","                                                                                                \
                                                                                    "\"board\":{"                                                                                               \
                                                                                    "\"type\":"                                                                                                 \
                                                                                    "\"array\","                                                                                                \
                                                                                    "\"items\""                                                                                                 \
                                                                                    ":" STR                                                                                                     \
                                                                                    ",\"minItems"                                                                                               \
                                                                                    "\":90,"                                                                                                    \
                                                                                    "\"maxItems\""                                                                                              \
                                                                                    ":90},"                                                                                                     \
                                                                                    "\"legalTarge"                                                                                              \
                                                                                    "ts\":{"                                                                                                    \
                                                                                    "\"type\":"                                                                                                 \
                                                                                    "\"object\","                                                                                               \
                                                                                    "\"additional"                                                                                              \
                                                                                    "Properties\""                                                                                              \
                                                                                    ":true},"                                                                                                   \
                                                                                    "\"lastMove\""                                                                                              \
                                                                                    ":" NULLABLE(                                                                                               \
                                                                                        "{\"type"                                                                                               \
                                                                                        "\":"                                                                                                   \
                                                                                        "\"object"                                                                                              \
                                                                                        "\","                                                                                                   \
                                                                                        "\"proper"                                                                                              \
                                                                                        "ties\":{"                                                                                              \
                                                                                        "\"from\""                                                                                              \
                                                                                        ":" INT                                                                                                 \
                                                                                        ",\"to\""                                                                                               \
                                                                                        ":" INT                                                                                                 \
                                                                                        ",\"iccs"                                                                                               \
                                                                                        "\":" STR                                                                                               \
                                                                                        ",\"zh\""                                                                                               \
                                                                                        ":" STR                                                                                                 \
                                                                                        "},"                                                                                                    \
                                                                                        "\"requir"                                                                                              \
                                                                                        "ed\":["                                                                                                \
                                                                                        "\"from\""                                                                                              \
                                                                                        ",\"to\","                                                                                              \
                                                                                        "\"iccs\""                                                                                              \
                                                                                        ",\"zh\"]"                                                                                              \
                                                                                        ","                                                                                                     \
                                                                                        "\"additi"                                                                                              \
                                                                                        "onalProp"                                                                                              \
                                                                                        "erties\""                                                                                              \
                                                                                        ":false}") ","                                                                                          \
                                                                                                   "\"history\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"zh\":" STR \
                                                                                                   ",\"iccs\":" STR                                                                             \
                                                                                                   ",\"captured\":" STR                                                                         \
                                                                                                   "},\"required\":[\"zh\",\"iccs\",\"captured\"],"                                             \
                                                                                                   "\"additionalProperties\":false}},"                                                          \
                                                                                                   "\"opponent\":{\"type\":\"object\",\"properties\":{\"kind\":{\"type\":\"string\",\"enum\":"  \
                                                                                                   "[\"model\",\"local\"]},\"provider\":" NULLABLE(STR) ",\"model\":" NULLABLE(                 \
                                                                                                       STR) ",\"label\":" STR                                                                   \
                                                                                                            "},\"required\":[\"kind\",\"provider\",\"model\",\"label\"],"                       \
                                                                                                            "\"additionalProperties\":false},"                                                  \
                                                                                                            "\"usage\":{\"type\":\"object\",\"properties\":{\"inputTokens\":" INT               \
                                                                                                            ",\"outputTokens\":" INT                                                            \
                                                                                                            ",\"totalTokens\":" INT                                                             \
                                                                                                            ",\"calls\":" INT                                                                   \
                                                                                                            "},"                                                                                \
                                                                                                            "\"required\":[\"inputTokens\",\"outputTokens\",\"totalTokens\",\"calls\"],"        \
                                                                                                            "\"additionalProperties\":false},"                                                  \
                                                                                                            "\"clock\":{\"type\":\"object\",\"properties\":{\"red\":" INT                       \
                                                                                                            ",\"black\":" INT                                                                   \
                                                                                                            "},"                                                                                \
                                                                                                            "\"required\":[\"red\",\"black\"],\"additionalProperties\":false},"                 \
                                                                                                            "\"message\":" NULLABLE(                                                            \
                                                                                                                "{\"type\":\"object\",\"properties\":{\"code\":" STR                            \
                                                                                                                ",\"tone\":{\"type\":\"string\","                                               \
                                                                                                                "\"enum\":[\"info\",\"warn\",\"error\"]}},\"required\":[\"code\",\"tone\"],"    \
                                                                                                                "\"additionalProperties\":false}")

#define PROJECTION_REQUIRED                                                                        \
    "\"ok\",\"revision\",\"fen\",\"turn\",\"hero\",\"phase\",\"pending\",\"status\",\"inCheck\","  \
    "\"board\","                                                                                   \
    "\"legalTargets\",\"lastMove\",\"history\",\"opponent\",\"usage\",\"clock\",\"message\""

#define REFUSAL                                                                                    \
    "{\"type\":\"object\",\"properties\":{\"ok\":" BOOL ",\"error\":" STR ",\"errorZh\":" STR      \
    ",\"message\":" STR ",\"revision\":" INT                                                       \
    ",\"legalMoves\":{\"type\":\"array\",\"items\":" MOVE_ITEM                                     \
    "}},\"required\":[\"ok\",\"error\",\"errorZh\",\"message\",\"revision\","                      \
    "\"legalMoves\"],\"additionalProperties\":false}"

/* {oneOf:[projection + extra props (extra_req required), refusal]} */
static json_t *output_schema(const char *extra_props, const char *extra_req)
{
    char *text = NULL;
    if (asprintf(&text,
                 "{\"oneOf\":[{\"type\":\"object\",\"properties\":{" PROJECTION_PROPS "%s%s},"
                 "\"required\":[" PROJECTION_REQUIRED
                 "%s%s],\"additionalProperties\":false}," REFUSAL "]}",
                 extra_props[0] ? "," : "", extra_props, extra_req[0] ? "," : "", extra_req) < 0)
        return NULL;
    json_t *s = json_loads(text, 0, NULL);
    free(text);
    return s;
}

#define CANDIDATE                                                                                  \
    "{\"type\":\"object\",\"properties\":{\"iccs\":" STR ",\"zh\":" STR ",\"from\":" INT           \
    ",\"to\":" INT ",\"score\":" INT ",\"mate\":" INT ",\"depth\":" INT                            \
    ",\"pv\":{\"type\":\"array\",\"items\":" STR "},\"pvZh\":{\"type\":\"array\",\"items\":" STR   \
    "}},\"required\":[\"iccs\",\"zh\",\"from\",\"to\",\"score\",\"mate\",\"depth\",\"pv\","        \
    "\"pvZh\"],\"additionalProperties\":false}"

#define REVIEW_MOVE                                                                                \
    "{\"type\":\"object\",\"properties\":{\"ply\":" INT ",\"side\":" SIDE ",\"iccs\":" STR         \
    ",\"zh\":" STR ",\"captured\":" STR ",\"score\":" INT ",\"delta\":" INT ",\"turning\":" BOOL   \
    "},\"required\":[\"ply\",\"side\",\"iccs\",\"zh\",\"captured\",\"score\",\"delta\","           \
    "\"turning\"],\"additionalProperties\":false}"

#define TURNING_POINT                                                                              \
    "{\"type\":\"object\",\"properties\":{\"ply\":" INT ",\"side\":" SIDE ",\"iccs\":" STR         \
    ",\"zh\":" STR ",\"score\":" INT ",\"delta\":" INT ",\"kindZh\":" STR "},"                     \
    "\"required\":[\"ply\",\"side\",\"iccs\",\"zh\",\"score\",\"delta\",\"kindZh\"],"              \
    "\"additionalProperties\":false}"

typedef struct xq_tool {
    const char *name;
    const char *description;
    const char *params;
    const char *extra_props, *extra_req;
    cdsh_tool_body_fn body;
    bool parallel;
} xq_tool;

/* ---- bodies ------------------------------------------------------------------- */

static int service_failed(const cdsh_tool_exec *exec, const cdsh_error *e)
{
    return cdsh_dispatch_fail(exec, "XiangqiError", e->code[0] ? e->code : "XIANGQI_FAILED", "%s",
                              e->message[0] ? e->message : "xiangqi service failed");
}

#define KEY(exec)                                                                                  \
    char key[CDSH__XQ_KEY_MAX + 1];                                                                \
    cdsh__xq_key_from_scope(p, (exec)->agent, key)

static int done(const cdsh_tool_exec *exec, json_t *v, const cdsh_error *e, json_t **value)
{
    if (!v)
        return service_failed(exec, e);
    *value = v;
    return 0;
}

static int arg_int(const cdsh_tool_exec *exec, const char *name, int dflt)
{
    json_t *v = json_object_get(exec->args, name);
    return json_is_integer(v) ? (int)json_integer_value(v) : dflt;
}

static const char *arg_str(const cdsh_tool_exec *exec, const char *name)
{
    return json_string_value(json_object_get(exec->args, name));
}

static bool arg_bool(const cdsh_tool_exec *exec, const char *name, bool dflt)
{
    json_t *v = json_object_get(exec->args, name);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

static int new_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    cdsh__xq_plugin *p = ud;
    KEY(exec);
    cdsh_error e = {0};
    cdsh_xq_new_opts o = {.side = arg_str(exec, "side"),
                          .opponent = arg_str(exec, "opponent"),
                          .max_plies = arg_int(exec, "maxPlies", 0),
                          .actor = CDSH_XQ_ACTOR_OPPONENT};
    return done(exec, cdsh_xq_service_new_game(p->svc, key, &o, &e), &e, value);
}

static int board_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    cdsh__xq_plugin *p = ud;
    KEY(exec);
    cdsh_error e = {0};
    return done(exec,
                cdsh_xq_service_board(p->svc, key, arg_bool(exec, "includeMoves", true),
                                      arg_bool(exec, "includeEval", false),
                                      arg_bool(exec, "ascii", true), &e),
                &e, value);
}

static int move_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    cdsh__xq_plugin *p = ud;
    KEY(exec);
    cdsh_error e = {0};
    json_t *mv = json_object_get(exec->args, "move");
    const char *text = json_string_value(mv);
    int from = -1, to = -1;
    if (!text) {
        from = (int)json_integer_value(json_object_get(mv, "from"));
        to = (int)json_integer_value(json_object_get(mv, "to"));
    }
    return done(exec, cdsh_xq_service_move(p->svc, key, CDSH_XQ_ACTOR_OPPONENT, text, from, to, &e),
                &e, value);
}

static int undo_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    cdsh__xq_plugin *p = ud;
    KEY(exec);
    cdsh_error e = {0};
    return done(
        exec,
        cdsh_xq_service_undo(p->svc, key, CDSH_XQ_ACTOR_OPPONENT, arg_int(exec, "plies", 2), &e),
        &e, value);
}

static int hint_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    cdsh__xq_plugin *p = ud;
    KEY(exec);
    cdsh_error e = {0};
    return done(
        exec,
        cdsh_xq_service_hint(p->svc, key, arg_int(exec, "count", 0), arg_int(exec, "depth", 0), &e),
        &e, value);
}

static int review_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    cdsh__xq_plugin *p = ud;
    KEY(exec);
    cdsh_error e = {0};
    return done(exec, cdsh_xq_service_review(p->svc, key, arg_str(exec, "highlight"), &e), &e,
                value);
}

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

static json_t *render(void *ud, const json_t *args, const json_t *value, cdsh_error *err)
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

/* ---- registration ---------------------------------------------------------------- */

static const xq_tool tools[] = {
    {"xiangqi_new",
     "Start a new xiangqi game in this session. side is the person's side ('r' moves first); "
     "opponent 'model' (you) or 'local' (the built-in engine). Returns the full projection.",
     "{\"type\":\"object\",\"properties\":{\"side\":{\"type\":\"string\",\"enum\":[\"r\",\"b\"]},"
     "\"opponent\":{\"type\":\"string\",\"enum\":[\"model\",\"local\"]},"
     "\"maxPlies\":{\"type\":\"integer\",\"minimum\":2,\"maximum\":4000}},"
     "\"additionalProperties\":false}",
     "", "", new_body, false},
    {"xiangqi_board",
     "Read the current xiangqi game: FEN, an ASCII board, the legal moves (ICCS and Chinese), "
     "the evaluation and the move list. Changes nothing.",
     "{\"type\":\"object\",\"properties\":{\"includeMoves\":{\"type\":\"boolean\",\"default\":true}"
     ","
     "\"includeEval\":{\"type\":\"boolean\",\"default\":false},"
     "\"ascii\":{\"type\":\"boolean\",\"default\":true}},\"additionalProperties\":false}",
     "\"ascii\":" STR ",\"legalMoves\":{\"type\":\"array\",\"items\":" MOVE_ITEM "},"
     "\"evaluation\":{\"type\":\"object\",\"properties\":{\"score\":" INT ",\"sideScore\":" INT
     ",\"depth\":" INT "},\"required\":[\"score\",\"sideScore\",\"depth\"],"
     "\"additionalProperties\":false}",
     "", board_body, true},
    {"xiangqi_move",
     "Play your move as the opponent. move is ICCS (\"h2e2\"), Chinese notation (\"炮二平五\") or "
     "{from,to} board indexes 0..89 (index = (9-rank)*9+file). Refusals list the legal moves.",
     "{\"type\":\"object\",\"properties\":{\"move\":{\"oneOf\":[{\"type\":\"string\",\"minLength\":"
     "1,\"maxLength\":64},{\"type\":\"object\",\"properties\":{\"from\":{\"type\":\"integer\","
     "\"minimum\":0,\"maximum\":89},\"to\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":89}},"
     "\"required\":[\"from\",\"to\"],\"additionalProperties\":false}]},"
     "\"reason\":{\"type\":\"string\",\"maxLength\":2000}},\"required\":[\"move\"],"
     "\"additionalProperties\":false}",
     "\"played\":" STR ",\"captured\":" STR, "\"played\",\"captured\"", move_body, false},
    {"xiangqi_undo", "Take back plies (default 2: one move of each side). Returns undone[].",
     "{\"type\":\"object\",\"properties\":{\"plies\":{\"type\":\"integer\",\"minimum\":1,"
     "\"maximum\":400,\"default\":2}},\"additionalProperties\":false}",
     "\"undone\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"iccs\":" STR
     ",\"zh\":" STR ",\"captured\":" STR "},\"required\":[\"iccs\",\"zh\",\"captured\"],"
     "\"additionalProperties\":false}}",
     "\"undone\"", undo_body, false},
    {"xiangqi_hint",
     "Ask the local engine for candidate moves (ICCS, Chinese, score in centipawns from Red's "
     "view: positive favours Red, principal variation). Costs no model budget.",
     "{\"type\":\"object\",\"properties\":{\"count\":{\"type\":\"integer\",\"minimum\":1,"
     "\"maximum\":16,\"default\":3},\"depth\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":30}},"
     "\"additionalProperties\":false}",
     "\"candidates\":{\"type\":\"array\",\"items\":" CANDIDATE "},\"evaluation\":" NULLABLE(
         "{\"type\":\"object\",\"properties\":{\"score\":" INT ",\"mate\":" INT ",\"depth\":" INT
         ",\"bestIccs\":" STR "},\"required\":[\"score\",\"mate\",\"depth\",\"bestIccs\"],"
         "\"additionalProperties\":false}"),
     "\"candidates\",\"evaluation\"", hint_body, false},
    {"xiangqi_review",
     "Review the game: the move list, the turning points and an evaluation per ply (Red's view). "
     "highlight 'turning' lists the turning points, 'all' every move.",
     "{\"type\":\"object\",\"properties\":{\"highlight\":{\"type\":\"string\",\"enum\":["
     "\"turning\","
     "\"all\"],\"default\":\"turning\"}},\"additionalProperties\":false}",
     "\"highlight\":{\"type\":\"string\",\"enum\":[\"turning\",\"all\"]},\"moves\":{\"type\":"
     "\"array\",\"items\":" REVIEW_MOVE
     "},\"turningPoints\":{\"type\":\"array\",\"items\":" TURNING_POINT
     "},\"curve\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":"
     "{\"ply\":" INT ",\"score\":" INT "},\"required\":[\"ply\",\"score\"],"
     "\"additionalProperties\":false}}",
     "\"highlight\",\"moves\",\"turningPoints\",\"curve\"", review_body, false},
};

int cdsh__xq_tools_register(cdsh_plugin_ctx *ctx, cdsh__xq_plugin *p, cdsh_error *err)
{
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
        const xq_tool *t = &tools[i];
        json_t *params = json_loads(t->params, 0, NULL);
        json_t *out = output_schema(t->extra_props, t->extra_req);
        if (!params || !out) {
            json_decref(params);
            json_decref(out);
            return cdsh_error_set(err, CDSH_EINVAL, "BAD_TOOL_DEF", "schema of %s does not parse",
                                  t->name);
        }
        cdsh_tool_def def = {
            .name = t->name,
            .description = t->description,
            .parameters = params,
            .output_schema = out,
            .execute = t->body,
            .render = render,
            .is_concurrency_safe = t->parallel ? cdsh_tools_always_safe : NULL,
            .ud = cdsh__xq_plugin_ref(p),
            .free_ud = cdsh__xq_plugin_unref,
        };
        int rc = cdsh_ctx_register_tool(ctx, &def, err);
        json_decref(params);
        json_decref(out);
        if (rc != 0)
            return rc;
    }
    return 0;
}
