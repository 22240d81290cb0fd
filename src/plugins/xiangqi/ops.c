/* ops.c — the xiangqi operations table (host/ops.h): one row per
 * operation, from which the six model tools (xiangqi_*, acting for the
 * opponent), the person's `/xiangqi <row> ...` command and the board panel's
 * /xiangqi-mate RPC channel (both acting for the person) are built; `$ops`
 * on the channel lists its rows. Handlers validate → call the service →
 * return its value; the surfaces' hooks keep each surface's form (seed §2-§4).
 * Text rendering lives in render.c. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "host/rpc.h"
#include "plugins/xiangqi/cmd_xiangqi_analyze.h"
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
                                                                                                                "\"enum\":[\"info\",\"warn\",\"error\"]},\"cause\":{\"type\":\"object\","            \
                                 "\"properties\":{\"code\":" STR ",\"message\":" STR ",\"fix\":" STR     \
                                 ",\"fixZh\":" STR "},\"required\":[\"code\",\"message\"],"               \
                                 "\"additionalProperties\":false}},\"required\":[\"code\",\"tone\"],"    \
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

/* A value of an operation that changes or reads the game: the projection
 * plus `props` (",\"name\":schema..." or "") with `req` required (",\"name\""
 * or ""), or a refusal. */
#define OUTPUT(props, req)                                                                         \
    "{\"oneOf\":[{\"type\":\"object\",\"properties\":{" PROJECTION_PROPS props "},"                 \
    "\"required\":[" PROJECTION_REQUIRED req "],\"additionalProperties\":false}," REFUSAL "]}"

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


/* A hint deeper than a turn's budget: the background job running it. */
#define HINT_JOB                                                                                   \
    "{\"type\":\"object\",\"properties\":{\"id\":" STR ",\"depth\":" INT ",\"turnDepth\":" INT  \
    ",\"collectWith\":" STR "},\"required\":[\"id\",\"depth\",\"turnDepth\",\"collectWith\"],"     \
    "\"additionalProperties\":false}"

/* RPC-only rows: the session the panel shows is the game. */
#define SESSION_ARGS                                                                               \
    "{\"type\":\"object\",\"properties\":{\"sessionId\":" STR "},\"required\":[\"sessionId\"]}"

#define EXPORT_RESULT                                                                              \
    "{\"type\":\"object\",\"properties\":{\"ok\":" BOOL ",\"fen\":" STR ",\"startFen\":" STR     \
    ",\"pgn\":" STR "},\"required\":[\"ok\",\"fen\",\"startFen\",\"pgn\"]}"

#define USAGE                                                                                              \
    "用法：/xiangqi new [r|b] [local|model] | state | move <着法> | undo [步数] | hint [个数] | " \
    "resign | review [turning|all] | export | fallback"

/* ---- shared by the handlers ---------------------------------------------------- */

/* The game: on the RPC surface the admitted payload.sessionId, else the
 * caller's scope (cdsh__xq_key_from_scope). */
static void game_key(cdsh__xq_plugin *p, const cdsh_op_call *call, char key[CDSH__XQ_KEY_MAX + 1])
{
    if (call->surface == CDSH_OP_RPC)
        snprintf(key, CDSH__XQ_KEY_MAX + 1, "%s",
                 json_string_value(json_object_get(call->args, "sessionId")));
    else
        cdsh__xq_key_from_scope(p, call->agent, key);
}

/* Tools act for the opponent (the model); the panel and the command for the person. */
static cdsh_xq_actor actor_of(const cdsh_op_call *call)
{
    return call->surface == CDSH_OP_TOOL ? CDSH_XQ_ACTOR_OPPONENT : CDSH_XQ_ACTOR_HERO;
}

static int done(json_t *v, json_t **value, cdsh_error *err)
{
    if (!v)
        return err->rc < 0 ? err->rc : CDSH_EIO;
    *value = v;
    return 0;
}

static int bad_request(cdsh_error *err, const char *msg)
{
    return cdsh_error_set(err, CDSH_EINVAL, CDSH_RPC_BAD_REQUEST, "%s", msg);
}

/* args[name] as an int, dflt when absent or null; -1 for another type. */
static int opt_int(const json_t *args, const char *name, int dflt, int *out)
{
    json_t *v = json_object_get(args, name);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_integer(v))
        return -1;
    *out = (int)json_integer_value(v);
    return 0;
}

static bool opt_bool(const json_t *args, const char *name, bool dflt)
{
    json_t *v = json_object_get(args, name);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

#define OP(name_)                                                                                  \
    static int op_##name_(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err)

#define SETUP                                                                                      \
    cdsh__xq_plugin *p = ud;                                                                       \
    char key[CDSH__XQ_KEY_MAX + 1];                                                                \
    game_key(p, call, key)

/* ---- handlers (the RPC surface checks its payload here; tools arrive
 * validated against the row's schema, commands from the row's parse) ---- */

OP(new)
{
    SETUP;
    const char *side = json_string_value(json_object_get(call->args, "side"));
    const char *opp = json_string_value(json_object_get(call->args, "opponent"));
    int n = 0;
    if (opt_int(call->args, "maxPlies", 0, &n) != 0 ||
        (call->surface == CDSH_OP_RPC &&
         ((side && strcmp(side, "r") && strcmp(side, "b")) ||
          (opp && strcmp(opp, "local") && strcmp(opp, "model")) || n < 0 || n > 4000)))
        return bad_request(err, "side must be r|b, opponent local|model, maxPlies 2..4000");
    cdsh_xq_new_opts o = {.side = side, .opponent = opp, .max_plies = n, .actor = actor_of(call)};
    return done(cdsh_xq_service_new_game(p->svc, key, &o, err), value, err);
}

OP(board)
{
    SETUP;
    return done(cdsh_xq_service_board(p->svc, key, opt_bool(call->args, "includeMoves", true),
                                      opt_bool(call->args, "includeEval", false),
                                      opt_bool(call->args, "ascii", true), err),
                value, err);
}

OP(state)
{
    SETUP;
    return done(cdsh_xq_service_state(p->svc, key, err), value, err);
}

/* The move: `move` as text or {from, to} (tools, commands, the panel), or
 * the panel's `iccs` or top-level from+to — in that order (seed §4.1). */
OP(move)
{
    SETUP;
    const json_t *a = call->args;
    json_t *mv = json_object_get(a, "move");
    json_t *iccs = json_object_get(a, "iccs");
    json_t *from = json_object_get(a, "from"), *to = json_object_get(a, "to");
    if (json_is_object(mv)) {
        from = json_object_get(mv, "from");
        to = json_object_get(mv, "to");
        mv = NULL;
    }
    const char *text = json_is_string(mv) && json_string_length(mv) > 0     ? json_string_value(mv)
                       : json_is_string(iccs) && json_string_length(iccs) > 0 ? json_string_value(iccs)
                                                                              : NULL;
    if (!text && !(json_is_integer(from) && json_is_integer(to)))
        return bad_request(err, "move needs payload.move, payload.iccs or payload.from and "
                                "payload.to");
    int f = text ? -1 : (int)json_integer_value(from), t = text ? -1 : (int)json_integer_value(to);
    return done(cdsh_xq_service_move(p->svc, key, actor_of(call), text, f, t, err), value, err);
}

OP(undo)
{
    SETUP;
    int n = 0;
    if (opt_int(call->args, "plies", 2, &n) != 0 || (call->surface == CDSH_OP_RPC && n < 1))
        return bad_request(err, "plies must be a positive integer");
    return done(cdsh_xq_service_undo(p->svc, key, actor_of(call), n, err), value, err);
}

/* The model asked for more depth than a turn may spend: the candidates at
 * the default depth now, and the deep search as a background job owned by
 * the calling session (value.job: its id and how to collect it). */
static int hint_as_job(cdsh__xq_plugin *p, const cdsh_op_call *call, const char *key, int n,
                       int m, json_t **value, cdsh_error *err)
{
    json_t *v = cdsh_xq_service_hint(p->svc, key, n, 0, err);
    const char *fen = json_string_value(json_object_get(v, "fen"));
    const char *phase = json_string_value(json_object_get(v, "phase"));
    if (!v || !json_is_true(json_object_get(v, "ok")) || !phase || strcmp(phase, "playing") ||
        !fen)
        return done(v, value, err); /* a refusal or a finished game: nothing to search */
    cdsh_plugin_ctx *ctx = cdsh_host_service(p->host, CDSH_XQ_JOBS_SERVICE);
    char label[200], *id = NULL;
    snprintf(label, sizeof label, "xiangqi_hint to depth %d: %.150s", m, fen);
    int rc = ctx ? cdsh__xq_analysis_job_start(ctx, fen, m, n > 0 ? n : 3,
                                               call->agent ? cdsh_scope_id(call->agent) : NULL,
                                               label, &id, err)
                 : cdsh_error_set(err, CDSH_ENOTFOUND, "NO_JOBS", "the xiangqi plugin is unloading");
    if (rc < 0) {
        json_decref(v);
        return rc;
    }
    json_object_set_new(v, "job",
                        json_pack("{s:s, s:i, s:i, s:s}", "id", id, "depth", m, "turnDepth",
                                  CDSH_XQ_TURN_DEPTH, "collectWith", "job_output"));
    free(id);
    *value = v;
    return 0;
}

OP(hint)
{
    SETUP;
    int n = 0, m = 0;
    if (opt_int(call->args, "count", 0, &n) != 0 || opt_int(call->args, "depth", 0, &m) != 0 ||
        (call->surface == CDSH_OP_RPC && (n < 0 || n > 16 || m < 0 || m > 30)))
        return bad_request(err, "count must be 1..16 and depth 1..30");
    if (call->surface == CDSH_OP_TOOL && m > CDSH_XQ_TURN_DEPTH)
        return hint_as_job(p, call, key, n, m, value, err);
    return done(cdsh_xq_service_hint(p->svc, key, n, m, err), value, err);
}

OP(review)
{
    SETUP;
    const char *hl = json_string_value(json_object_get(call->args, "highlight"));
    if (call->surface == CDSH_OP_RPC && hl && strcmp(hl, "turning") && strcmp(hl, "all"))
        return cdsh_error_set(err, CDSH_EINVAL, CDSH_RPC_BAD_REQUEST,
                              "highlight must be turning or all, not \"%.40s\"", hl);
    return done(cdsh_xq_service_review(p->svc, key, hl, err), value, err);
}

OP(resign)
{
    SETUP;
    return done(cdsh_xq_service_resign(p->svc, key, err), value, err);
}

OP(fallback)
{
    SETUP;
    return done(cdsh_xq_service_fallback(p->svc, key, err), value, err);
}

OP(export)
{
    SETUP;
    json_t *v = cdsh_xq_service_export(p->svc, key, err);
    if (v)
        json_object_set_new(v, "ok", json_true());
    return done(v, value, err);
}

/* ---- the command's parses: `/xiangqi <row> <rest>` → the row's args ------------ */

static int parse_new(void *ud, const char *rest, json_t **args, cdsh_error *err)
{
    (void)ud;
    char line[512], *save = NULL;
    snprintf(line, sizeof line, "%s", rest ? rest : "");
    *args = json_object();
    for (char *t = strtok_r(line, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
        const char *side = !strcmp(t, "r") || !strcmp(t, "red") || !strcmp(t, "红")     ? "r"
                           : !strcmp(t, "b") || !strcmp(t, "black") || !strcmp(t, "黑") ? "b"
                                                                                        : NULL;
        if (side)
            json_object_set_new(*args, "side", json_string(side));
        else if (!strcmp(t, "local") || !strcmp(t, "model"))
            json_object_set_new(*args, "opponent", json_string(t));
        else
            return cdsh_error_set(err, CDSH_EINVAL, "usage", "%s", USAGE);
    }
    return 0;
}

static int parse_move(void *ud, const char *rest, json_t **args, cdsh_error *err)
{
    (void)ud;
    if (!rest || !*rest)
        return cdsh_error_set(err, CDSH_EINVAL, "usage", "%s",
                              "请给出着法，例如 /xiangqi move 炮二平五 或 h2e2");
    *args = json_pack("{s:s}", "move", rest);
    return 0;
}

/* A number or its default (atoi: "abc" reads as 0, as it always has). */
static int parse_count(const char *rest, const char *name, int dflt, json_t **args)
{
    *args = json_pack("{s:i}", name, rest && *rest ? atoi(rest) : dflt);
    return 0;
}

static int parse_undo(void *ud, const char *rest, json_t **args, cdsh_error *err)
{
    (void)ud, (void)err;
    return parse_count(rest, "plies", 2, args);
}

static int parse_hint(void *ud, const char *rest, json_t **args, cdsh_error *err)
{
    (void)ud, (void)err;
    return parse_count(rest, "count", 0, args);
}

static int parse_review(void *ud, const char *rest, json_t **args, cdsh_error *err)
{
    (void)ud, (void)err;
    *args = rest && *rest ? json_pack("{s:s}", "highlight", rest) : json_object();
    return 0;
}

/* ---- the table ------------------------------------------------------------------ */

#define ALL (CDSH_OP_TOOL | CDSH_OP_RPC | CDSH_OP_COMMAND)
#define PERSON (CDSH_OP_RPC | CDSH_OP_COMMAND)

static const cdsh_op ROWS[] = {
    {.name = "new",
     .description =
         "Start a new xiangqi game in this session. side is the person's side ('r' moves first); "
         "opponent 'model' (you) or 'local' (the built-in engine). Returns the full projection.",
     .args_schema =
         "{\"type\":\"object\",\"properties\":{\"side\":{\"type\":\"string\",\"enum\":[\"r\",\"b\"]},"
         "\"opponent\":{\"type\":\"string\",\"enum\":[\"model\",\"local\"]},"
         "\"maxPlies\":{\"type\":\"integer\",\"minimum\":2,\"maximum\":4000}},"
         "\"additionalProperties\":false}",
     .result_schema = OUTPUT("", ""),
     .handler = op_new,
     .surfaces = ALL,
     .parse = parse_new},
    {.name = "board",
     .description =
         "Read the current xiangqi game: FEN, an ASCII board, the legal moves (ICCS and Chinese), "
         "the evaluation and the move list. Changes nothing.",
     .args_schema =
         "{\"type\":\"object\",\"properties\":{\"includeMoves\":{\"type\":\"boolean\",\"default\":"
         "true},"
         "\"includeEval\":{\"type\":\"boolean\",\"default\":false},"
         "\"ascii\":{\"type\":\"boolean\",\"default\":true}},\"additionalProperties\":false}",
     .result_schema = OUTPUT(",\"ascii\":" STR ",\"legalMoves\":{\"type\":\"array\",\"items\":" MOVE_ITEM
                             "},\"evaluation\":{\"type\":\"object\",\"properties\":{\"score\":" INT
                             ",\"sideScore\":" INT ",\"depth\":" INT
                             "},\"required\":[\"score\",\"sideScore\",\"depth\"],"
                             "\"additionalProperties\":false}",
                             ""),
     .handler = op_board,
     .surfaces = CDSH_OP_TOOL,
     .flags = CDSH_OP_READ},
    {.name = "move",
     .description =
         "Play your move as the opponent. move is ICCS (\"h2e2\"), Chinese notation (\"炮二平五\") "
         "or {from,to} board indexes 0..89 (index = (9-rank)*9+file). Refusals list the legal "
         "moves.",
     .args_schema =
         "{\"type\":\"object\",\"properties\":{\"move\":{\"oneOf\":[{\"type\":\"string\","
         "\"minLength\":1,\"maxLength\":64},{\"type\":\"object\",\"properties\":{\"from\":{"
         "\"type\":\"integer\",\"minimum\":0,\"maximum\":89},\"to\":{\"type\":\"integer\","
         "\"minimum\":0,\"maximum\":89}},\"required\":[\"from\",\"to\"],"
         "\"additionalProperties\":false}]},"
         "\"reason\":{\"type\":\"string\",\"maxLength\":2000}},\"required\":[\"move\"],"
         "\"additionalProperties\":false}",
     .result_schema = OUTPUT(",\"played\":" STR ",\"captured\":" STR, ",\"played\",\"captured\""),
     .handler = op_move,
     .surfaces = ALL,
     .parse = parse_move},
    {.name = "undo",
     .description = "Take back plies (default 2: one move of each side). Returns undone[].",
     .args_schema = "{\"type\":\"object\",\"properties\":{\"plies\":{\"type\":\"integer\","
                    "\"minimum\":1,\"maximum\":400,\"default\":2}},\"additionalProperties\":false}",
     .result_schema = OUTPUT(",\"undone\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
                             "\"properties\":{\"iccs\":" STR ",\"zh\":" STR ",\"captured\":" STR
                             "},\"required\":[\"iccs\",\"zh\",\"captured\"],"
                             "\"additionalProperties\":false}}",
                             ",\"undone\""),
     .handler = op_undo,
     .surfaces = ALL,
     .parse = parse_undo},
    {.name = "hint",
     .description =
         "Ask the local engine for candidate moves (ICCS, Chinese, score in centipawns from Red's "
         "view: positive favours Red, principal variation). Costs no model budget.",
     .args_schema =
         "{\"type\":\"object\",\"properties\":{\"count\":{\"type\":\"integer\",\"minimum\":1,"
         "\"maximum\":16,\"default\":3},\"depth\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":"
         "30}},\"additionalProperties\":false}",
     .result_schema = OUTPUT(",\"candidates\":{\"type\":\"array\",\"items\":" CANDIDATE
                             "},\"evaluation\":" NULLABLE(
                                 "{\"type\":\"object\",\"properties\":{\"score\":" INT
                                 ",\"mate\":" INT ",\"depth\":" INT ",\"bestIccs\":" STR
                                 "},\"required\":[\"score\",\"mate\",\"depth\",\"bestIccs\"],"
                                 "\"additionalProperties\":false}") ",\"job\":" HINT_JOB,
                             ",\"candidates\",\"evaluation\""),
     .handler = op_hint,
     .surfaces = ALL,
     .parse = parse_hint},
    {.name = "review",
     .description =
         "Review the game: the move list, the turning points and an evaluation per ply (Red's "
         "view). highlight 'turning' lists the turning points, 'all' every move.",
     .args_schema = "{\"type\":\"object\",\"properties\":{\"highlight\":{\"type\":\"string\","
                    "\"enum\":[\"turning\",\"all\"],\"default\":\"turning\"}},"
                    "\"additionalProperties\":false}",
     .result_schema =
         OUTPUT(",\"highlight\":{\"type\":\"string\",\"enum\":[\"turning\",\"all\"]},\"moves\":{"
                "\"type\":\"array\",\"items\":" REVIEW_MOVE
                "},\"turningPoints\":{\"type\":\"array\",\"items\":" TURNING_POINT
                "},\"curve\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":"
                "{\"ply\":" INT ",\"score\":" INT "},\"required\":[\"ply\",\"score\"],"
                "\"additionalProperties\":false}}",
                ",\"highlight\",\"moves\",\"turningPoints\",\"curve\""),
     .handler = op_review,
     .surfaces = ALL,
     .parse = parse_review},
    {.name = "state",
     .args_schema = SESSION_ARGS,
     .result_schema = OUTPUT("", ""),
     .handler = op_state,
     .surfaces = PERSON,
     .flags = CDSH_OP_READ},
    {.name = "resign",
     .args_schema = SESSION_ARGS,
     .result_schema = OUTPUT("", ""),
     .handler = op_resign,
     .surfaces = PERSON},
    {.name = "fallback",
     .args_schema = SESSION_ARGS,
     .result_schema = OUTPUT("", ""),
     .handler = op_fallback,
     .surfaces = PERSON},
    {.name = "export",
     .args_schema = SESSION_ARGS,
     .result_schema = EXPORT_RESULT,
     .handler = op_export,
     .surfaces = PERSON,
     .flags = CDSH_OP_READ},
};

/* ---- the surfaces' hooks --------------------------------------------------------- */

/* Failures keep the forms they always had: a tool fails as XiangqiError
 * XIANGQI_FAILED, the panel's channel says "xiangqi failed". */
static int invoke(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err)
{
    int rc = call->op->handler(ud, call, value, err);
    if (rc < 0 && call->surface == CDSH_OP_TOOL) {
        if (!err->code[0])
            snprintf(err->code, sizeof err->code, "%s", "XIANGQI_FAILED");
        if (!err->message[0])
            snprintf(err->message, sizeof err->message, "%s", "xiangqi service failed");
    }
    return rc;
}

/* The panel reaches only stored sessions: payload.sessionId is admitted
 * (bad-request / session-not-found) before any row runs. */
static int rpc_admit(void *ud, const char *endpoint, const json_t *payload, json_t **result)
{
    (void)endpoint;
    cdsh__xq_plugin *p = ud;
    const char *sid = json_string_value(json_object_get(payload, "sessionId"));
    if (!json_is_object(payload) || !sid) {
        *result = cdsh_rpc_error_new(CDSH_RPC_BAD_REQUEST, "payload.sessionId is required", NULL);
        return -1;
    }
    json_t *s = cdsh__xq_plugin_session_dup(p, sid);
    if (!s) {
        char msg[256];
        snprintf(msg, sizeof msg, "no session \"%.100s\"", sid);
        *result = cdsh_rpc_error_new(CDSH_RPC_SESSION_NOT_FOUND, msg,
                                     json_pack("{s:s}", "sessionId", sid));
        return -1;
    }
    json_decref(s);
    cdsh__xq_plugin_touch(p, sid);
    return 0;
}

/* Projections answer ok; a refusal becomes {ok:false, error:{code: kebab-case
 * of its code, message: errorZh, details: the refusal}}. */
static json_t *rpc_result(void *ud, const cdsh_op_call *call, int rc, json_t *value,
                          const cdsh_error *err)
{
    (void)ud, (void)call;
    if (rc < 0)
        return strcmp(err->code, CDSH_RPC_BAD_REQUEST) == 0
                   ? cdsh_rpc_error_new(CDSH_RPC_BAD_REQUEST, err->message, NULL)
                   : cdsh_rpc_error_new(CDSH_RPC_INTERNAL,
                                        err->message[0] ? err->message : "xiangqi failed", NULL);
    if (json_is_true(json_object_get(value, "ok")))
        return cdsh_rpc_ok_new(value);
    char code[64];
    const char *c = json_string_value(json_object_get(value, "error"));
    size_t i = 0;
    for (; c && c[i] && i < sizeof code - 1; i++)
        code[i] = c[i] == '_' ? '-' : (char)tolower((unsigned char)c[i]);
    code[i] = 0;
    return cdsh_rpc_error_new(code, json_string_value(json_object_get(value, "errorZh")), value);
}

static int set_text(cdsh_command_result *out, cdsh_command_kind kind, const char *text,
                    cdsh_error *err)
{
    if (!text || cdsh_command_result_set(out, kind, text) != 0)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    return 0;
}

/* Projections as JSON, export as FEN and PGN text, refusals as Chinese text. */
static int command_result(void *ud, const cdsh_op_call *call, int rc, json_t *value,
                          const cdsh_error *call_err, cdsh_command_result *out, cdsh_error *err)
{
    (void)ud;
    char *text = NULL;
    cdsh_command_kind kind = CDSH_COMMAND_SUCCESS;
    if (rc < 0) {
        kind = CDSH_COMMAND_ERROR;
        if (asprintf(&text, "象棋服务出错：%s",
                     call_err->message[0] ? call_err->message : call_err->code) < 0)
            text = NULL;
    } else if (strcmp(call->op->name, "export") == 0) {
        if (asprintf(&text, "FEN: %s\n\n%s", json_string_value(json_object_get(value, "fen")),
                     json_string_value(json_object_get(value, "pgn"))) < 0)
            text = NULL;
    } else if (json_is_true(json_object_get(value, "ok"))) {
        text = cdsh_json_dump_compact_dup(value);
    } else {
        kind = CDSH_COMMAND_ERROR;
        text = cdsh__xq_refusal_text_dup(value);
    }
    json_decref(value);
    rc = set_text(out, kind, text, err);
    free(text);
    return rc;
}

/* The page's tool card draws the board of any answer that carries one
 * (host-contracts §1 presentResult). */
static json_t *present_board(const json_t *args, const json_t *result)
{
    (void)args;
    const json_t *v = json_object_get(result, "value");
    const char *fen = json_string_value(json_object_get(v, "fen"));
    if (!json_is_true(json_object_get(v, "ok")) || !fen)
        return NULL;
    return json_pack("{s:s, s:s, s:s}", "card", "generic", "view", "xiangqi-board", "fen", fen);
}

const cdsh_ops_table cdsh__xq_ops_table = {
    .plugin = "xiangqi",
    .ops = ROWS,
    .n_ops = sizeof ROWS / sizeof *ROWS,
    .invoke = invoke,
    .tool_prefix = "xiangqi_",
    .tool_error = "XiangqiError",
    .render = cdsh__xq_tool_render,
    .present_result = present_board,
    .rpc_channel = CDSH_XQ_RPC_CHANNEL,
    .rpc_admit = rpc_admit,
    .rpc_result = rpc_result,
    .unknown_code = CDSH_RPC_NOT_FOUND,
    .unknown_format = "no endpoint \"%s\" on " CDSH_XQ_RPC_CHANNEL,
    .command = "xiangqi",
    .command_description = "play xiangqi (Chinese chess): new, state, move, undo, hint, resign, "
                           "review, export",
    .command_hint = "new | state | move <着法> | undo | hint | resign | review | export",
    .command_default = "state",
    .command_usage = USAGE,
    .command_result = command_result,
};
