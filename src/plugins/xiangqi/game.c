/* game.c — one xiangqi game record: moves over a start FEN, status, the
 * projection of seed §2.2, and its JSON file (written atomically). */
#include "plugins/xiangqi/game.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/model_fix.h"
#include "base/clock.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/strbuf.h"
#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/rules.h"

#define GAME_FILE_MAX (4u << 20)

cdsh__xq_game *cdsh__xq_game_new(const char *key, const char *path)
{
    cdsh__xq_game *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    snprintf(g->key, sizeof g->key, "%s", key);
    g->path = path ? strdup(path) : NULL;
    g->pos = cdsh_xq_pos_new();
    if ((path && !g->path) || !g->pos || pthread_rwlock_init(&g->lock, NULL) != 0) {
        free(g->path);
        cdsh_xq_pos_free(g->pos);
        free(g);
        return NULL;
    }
    snprintf(g->start_fen, sizeof g->start_fen, "%s", CDSH_XQ_START_FEN);
    g->resigned = -1;
    g->winner = -1;
    g->max_plies = 300;
    g->turn_started_ms = cdsh_clock_wall_ms();
    return g;
}

void cdsh__xq_game_free(cdsh__xq_game *g)
{
    if (!g)
        return;
    pthread_rwlock_destroy(&g->lock);
    json_decref(g->cache);
    cdsh_xq_pos_free(g->pos);
    free(g->plies);
    free(g->provider);
    free(g->model_name);
    free(g->path);
    free(g);
}

int cdsh__xq_game_reset(cdsh__xq_game *g, const char *fen, cdsh_error *err)
{
    int rc = cdsh_xq_pos_set_fen(g->pos, fen ? fen : CDSH_XQ_START_FEN, err);
    if (rc != 0)
        return rc;
    cdsh_xq_pos_fen(g->pos, g->start_fen);
    g->nplies = 0;
    g->pending = CDSH__XQ_PENDING_NONE;
    g->msg_code[0] = g->msg_tone[0] = 0;
    g->in_tok = g->out_tok = g->tot_tok = g->calls = 0;
    g->clock_ms[0] = g->clock_ms[1] = 0;
    g->turn_started_ms = cdsh_clock_wall_ms();
    g->resigned = -1;
    g->invalid = 0;
    return 0;
}

int cdsh__xq_game_turn(const cdsh__xq_game *g)
{
    return cdsh_xq_side_to_move(g->pos);
}

int cdsh__xq_game_opponent_to_move(const cdsh__xq_game *g)
{
    return cdsh__xq_game_turn(g) != g->hero;
}

int cdsh__xq_game_play(cdsh__xq_game *g, cdsh_xq_move_t m, cdsh_error *err)
{
    if (g->nplies >= CDSH_XQ_MAX_PLY - 1)
        return cdsh_error_set(err, CDSH_ETOOBIG, "MOVE_HISTORY_FULL", "the game is too long");
    if (g->nplies == g->cap) {
        int cap = g->cap ? g->cap * 2 : 64;
        cdsh__xq_ply *p = realloc(g->plies, (size_t)cap * sizeof *p);
        if (!p)
            return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        g->plies = p;
        g->cap = cap;
    }
    cdsh__xq_ply ply = {.move = m};
    ply.from = cdsh_xq_square_index90(cdsh_xq_move_from(m));
    ply.to = cdsh_xq_square_index90(cdsh_xq_move_to(m));
    cdsh_xq_move_to_iccs(m, ply.iccs);
    if (cdsh_xq_move_to_chinese(g->pos, m, ply.zh, sizeof ply.zh) != 0)
        ply.zh[0] = 0;
    cdsh_xq_piece_t cap = cdsh_xq_piece_at(g->pos, cdsh_xq_move_to(m));
    ply.captured = cap ? cdsh_xq_piece_char(cap) : 0;
    int side = cdsh_xq_side_to_move(g->pos);
    int rc = cdsh_xq_play(g->pos, m, err);
    if (rc != 0)
        return rc;
    g->plies[g->nplies++] = ply;
    int64_t now = cdsh_clock_wall_ms();
    if (now > g->turn_started_ms)
        g->clock_ms[side] += now - g->turn_started_ms;
    g->turn_started_ms = now;
    return 0;
}

int cdsh__xq_game_unplay(cdsh__xq_game *g, cdsh__xq_ply *undone)
{
    if (g->nplies == 0)
        return CDSH_ENOTFOUND;
    cdsh_xq_unmake_move(g->pos);
    g->nplies--;
    if (undone)
        *undone = g->plies[g->nplies];
    g->turn_started_ms = cdsh_clock_wall_ms();
    return 0;
}

static const char *side_zh(int side)
{
    return side == CDSH_XQ_RED ? "红方" : "黑方";
}

static const char *side_code(int side)
{
    return side == CDSH_XQ_RED ? "r" : "b";
}

static void judge(cdsh__xq_game *g)
{
    g->over = 1;
    g->winner = -1;
    if (g->resigned >= 0) {
        g->winner = g->resigned ^ 1;
        snprintf(g->state, sizeof g->state, "resigned");
        snprintf(g->reason_zh, sizeof g->reason_zh, "%s认输，%s胜", side_zh(g->resigned),
                 side_zh(g->winner));
        return;
    }
    cdsh_xq_result r = cdsh_xq_status(g->pos, NULL);
    int stm = cdsh_xq_side_to_move(g->pos);
    if (r.outcome == CDSH_XQ_RED_WINS)
        g->winner = CDSH_XQ_RED;
    else if (r.outcome == CDSH_XQ_BLACK_WINS)
        g->winner = CDSH_XQ_BLACK;
    int loser = g->winner >= 0 ? g->winner ^ 1 : stm;
    switch (r.reason) {
    case CDSH_XQ_REASON_CHECKMATE:
        snprintf(g->reason_zh, sizeof g->reason_zh, "%s被将死，%s胜", side_zh(loser),
                 side_zh(loser ^ 1));
        break;
    case CDSH_XQ_REASON_STALEMATE:
        snprintf(g->reason_zh, sizeof g->reason_zh, "%s无子可走（困毙），%s胜", side_zh(loser),
                 side_zh(loser ^ 1));
        break;
    case CDSH_XQ_REASON_PERPETUAL_CHECK:
        snprintf(g->reason_zh, sizeof g->reason_zh, "%s长将违例，%s胜", side_zh(loser),
                 side_zh(loser ^ 1));
        break;
    case CDSH_XQ_REASON_PERPETUAL_CHASE:
        snprintf(g->reason_zh, sizeof g->reason_zh, "%s长捉违例，%s胜", side_zh(loser),
                 side_zh(loser ^ 1));
        break;
    case CDSH_XQ_REASON_REPETITION:
        snprintf(g->reason_zh, sizeof g->reason_zh, "重复局面，判和");
        break;
    case CDSH_XQ_REASON_MOVE_RULE:
        snprintf(g->reason_zh, sizeof g->reason_zh, "六十回合未吃子，判和");
        break;
    case CDSH_XQ_REASON_BARE_MATERIAL:
        snprintf(g->reason_zh, sizeof g->reason_zh, "双方均无进攻子力，判和");
        break;
    case CDSH_XQ_REASON_NONE:
        if (g->nplies >= g->max_plies) {
            snprintf(g->state, sizeof g->state, "max_plies");
            snprintf(g->reason_zh, sizeof g->reason_zh, "已达最大步数 %d，判和", g->max_plies);
            return;
        }
        g->over = 0;
        snprintf(g->state, sizeof g->state, "playing");
        snprintf(g->reason_zh, sizeof g->reason_zh, "对局进行中");
        return;
    }
    snprintf(g->state, sizeof g->state, "%s", cdsh_xq_reason_name(r.reason));
}

/* The model failure behind an "ai.error" or "ai.timeout" message: {code,
 * message ("HTTP 401: ...", "no move within 30000 ms ..."), fix, fixZh (what
 * to do: model_fix.h, or the move clock's own advice; absent for other
 * codes)}. */
static json_t *cause_json(const cdsh__xq_game *g)
{
    bool clock = strcmp(g->cause_code, "MOVE_TIMEOUT") == 0;
    const char *fix = clock ? "give the model more time (cdsh config set xiangqi.model.timeoutMs "
                              "120000) or use a faster model; the local engine moved this time."
                            : cdsh_model_fix_get(g->cause_code, "en");
    const char *fix_zh = clock ? "给模型更多时间（cdsh config set xiangqi.model.timeoutMs 120000）"
                                 "或换用更快的模型；这一步已由本地引擎代走。"
                               : cdsh_model_fix_get(g->cause_code, "zh");
    return json_pack("{s:s,s:s,s:s?,s:s?}", "code", g->cause_code, "message", g->cause_text, "fix",
                     fix, "fixZh", fix_zh);
}

static json_t *nullable_str(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *cdsh__xq_game_legal_json(const cdsh__xq_game *g)
{
    json_t *arr = json_array();
    for (int i = 0; arr && i < g->nlegal; i++)
        if (json_array_append_new(
                arr, json_pack("{s:s,s:s}", "iccs", g->legal[i].iccs, "zh", g->legal[i].zh)) != 0) {
            json_decref(arr);
            return NULL;
        }
    return arr;
}

static json_t *projection(cdsh__xq_game *g)
{
    char fen[CDSH_XQ_FEN_MAX];
    cdsh_xq_pos_fen(g->pos, fen);
    json_t *board = json_array(), *targets = json_object(), *history = json_array();
    if (!board || !targets || !history)
        goto fail;
    for (int idx = 0; idx < 90; idx++) {
        cdsh_xq_piece_t p = cdsh_xq_piece_at(g->pos, cdsh_xq_square_from_index90(idx));
        char s[2] = {p ? cdsh_xq_piece_char(p) : 0, 0};
        if (json_array_append_new(board, json_string(s)) != 0)
            goto fail;
    }
    for (int i = 0; !g->over && i < g->nlegal; i++) {
        char k[8];
        snprintf(k, sizeof k, "%d", g->legal[i].from);
        json_t *arr = json_object_get(targets, k);
        if (!arr) {
            arr = json_array();
            if (json_object_set_new(targets, k, arr) != 0)
                goto fail;
        }
        if (json_array_append_new(arr, json_integer(g->legal[i].to)) != 0)
            goto fail;
    }
    for (int i = 0; i < g->nplies; i++) {
        char cap[2] = {g->plies[i].captured, 0};
        if (json_array_append_new(history, json_pack("{s:s,s:s,s:s}", "zh", g->plies[i].zh, "iccs",
                                                     g->plies[i].iccs, "captured", cap)) != 0)
            goto fail;
    }
    json_t *last = json_null();
    if (g->nplies > 0) {
        const cdsh__xq_ply *p = &g->plies[g->nplies - 1];
        last = json_pack("{s:i,s:i,s:s,s:s}", "from", p->from, "to", p->to, "iccs", p->iccs, "zh",
                         p->zh);
    }
    const char *pending = g->pending == CDSH__XQ_PENDING_THINKING ? "ai-thinking"
                          : g->pending == CDSH__XQ_PENDING_FAILED ? "ai-failed"
                                                                  : NULL;
    json_t *msg = g->msg_code[0] ? json_pack("{s:s,s:s}", "code", g->msg_code, "tone", g->msg_tone)
                                 : json_null();
    if (json_is_object(msg) && g->cause_code[0] &&
        (!strcmp(g->msg_code, "ai.error") || !strcmp(g->msg_code, "ai.timeout")))
        json_object_set_new(msg, "cause", cause_json(g));
    json_t *opp = json_pack("{s:s,s:o,s:o,s:s}", "kind", g->model ? "model" : "local", "provider",
                            g->model ? nullable_str(g->provider) : json_null(), "model",
                            g->model ? nullable_str(g->model_name) : json_null(), "label",
                            g->model ? "当前会话模型" : "本地引擎");
    json_t *p =
        json_pack("{s:b,s:I,s:s,s:s,s:s,s:s,s:o,s:{s:s,s:o,s:s},s:b,s:o,s:o,s:o,s:o,s:o,"
                  "s:{s:I,s:I,s:I,s:I},s:{s:I,s:I},s:o}",
                  "ok", 1, "revision", (json_int_t)g->revision, "fen", fen, "turn",
                  side_code(cdsh_xq_side_to_move(g->pos)), "hero", side_code(g->hero), "phase",
                  g->over ? "over" : "playing", "pending",
                  pending ? json_string(pending) : json_null(), "status", "state", g->state,
                  "winner", g->winner >= 0 ? json_string(side_code(g->winner)) : json_null(),
                  "reasonZh", g->reason_zh, "inCheck", cdsh_xq_in_check(g->pos) != 0, "board",
                  board, "legalTargets", targets, "lastMove", last, "history", history, "opponent",
                  opp, "usage", "inputTokens", (json_int_t)g->in_tok, "outputTokens",
                  (json_int_t)g->out_tok, "totalTokens", (json_int_t)g->tot_tok, "calls",
                  (json_int_t)g->calls, "clock", "red", (json_int_t)(g->clock_ms[0] / 1000),
                  "black", (json_int_t)(g->clock_ms[1] / 1000), "message", msg);
    return p; /* json_pack "o" steals even on failure */
fail:
    json_decref(board);
    json_decref(targets);
    json_decref(history);
    return NULL;
}

int cdsh__xq_game_refresh(cdsh__xq_game *g, cdsh_error *err)
{
    judge(g);
    g->nlegal = g->over ? 0 : cdsh_xq_legal_moves_notated(g->pos, g->legal);
    json_t *p = projection(g);
    if (!p)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    json_decref(g->cache);
    g->cache = p;
    return 0;
}

/* ---- persistence ------------------------------------------------------------ */

int cdsh__xq_game_save(cdsh__xq_game *g, cdsh_error *err)
{
    json_t *moves = json_array();
    for (int i = 0; moves && i < g->nplies; i++)
        json_array_append_new(moves, json_string(g->plies[i].iccs));
    json_t *doc = json_pack(
        "{s:i,s:s,s:I,s:s,s:o,s:s,s:{s:s,s:o,s:o},s:i,s:i,s:s,s:s,s:o,s:{s:I,s:I,s:I,s:I},"
        "s:{s:I,s:I},s:o,s:i}",
        "version", 1, "key", g->key, "revision", (json_int_t)g->revision, "startFen", g->start_fen,
        "moves", moves ? moves : json_array(), "hero", side_code(g->hero), "opponent", "kind",
        g->model ? "model" : "local", "provider", nullable_str(g->provider), "model",
        nullable_str(g->model_name), "maxPlies", g->max_plies, "pending", g->pending, "messageCode",
        g->msg_code, "messageTone", g->msg_tone, "messageCause",
        g->cause_code[0] ? json_pack("{s:s,s:s}", "code", g->cause_code, "message", g->cause_text)
                         : json_null(),
        "usage", "inputTokens", (json_int_t)g->in_tok,
        "outputTokens", (json_int_t)g->out_tok, "totalTokens", (json_int_t)g->tot_tok, "calls",
        (json_int_t)g->calls, "clockMs", "red", (json_int_t)g->clock_ms[0], "black",
        (json_int_t)g->clock_ms[1], "resigned",
        g->resigned >= 0 ? json_string(side_code(g->resigned)) : json_null(), "invalidMoves",
        g->invalid);
    char *text = doc ? cdsh_json_dump_pretty_dup(doc) : NULL;
    json_decref(doc);
    if (!text)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    int rc = cdsh_fs_write_atomic(g->path, text, strlen(text), 0600, err);
    free(text);
    return rc;
}

static int bad_file(cdsh__xq_game *g, cdsh_error *err, const char *what)
{
    return cdsh_error_set(err, CDSH_EPROTO, "BAD_GAME_FILE", "%s: %s", g->path, what);
}

static int side_of(const char *s)
{
    return s && strcmp(s, "b") == 0 ? CDSH_XQ_BLACK : CDSH_XQ_RED;
}

int cdsh__xq_game_load(cdsh__xq_game *g, cdsh_error *err)
{
    char *text = NULL;
    int rc = cdsh_fs_read_file(g->path, GAME_FILE_MAX, &text, NULL, err);
    if (rc != 0)
        return rc;
    cdsh_error perr;
    json_t *doc = cdsh_json_parse(text, strlen(text), GAME_FILE_MAX, &perr);
    free(text);
    if (!doc || !json_is_object(doc)) {
        json_decref(doc);
        return bad_file(g, err, "not a JSON object");
    }
    const char *fen = json_string_value(json_object_get(doc, "startFen"));
    json_t *moves = json_object_get(doc, "moves");
    rc = (fen && json_is_array(moves)) ? cdsh__xq_game_reset(g, fen, &perr) : -1;
    if (rc != 0) {
        json_decref(doc);
        return bad_file(g, err, "no valid startFen/moves");
    }
    size_t i;
    json_t *mv;
    json_array_foreach(moves, i, mv) {
        cdsh_xq_move_t m;
        const char *t = json_string_value(mv);
        if (!t || cdsh_xq_parse_move(g->pos, t, &m, &perr) != 0 ||
            cdsh__xq_game_play(g, m, &perr) != 0) {
            json_decref(doc);
            return bad_file(g, err, "an illegal move in the record");
        }
    }
    g->revision = json_integer_value(json_object_get(doc, "revision"));
    g->hero = side_of(json_string_value(json_object_get(doc, "hero")));
    json_t *opp = json_object_get(doc, "opponent");
    const char *kind = json_string_value(json_object_get(opp, "kind"));
    g->model = kind && strcmp(kind, "model") == 0;
    const char *s = json_string_value(json_object_get(opp, "provider"));
    free(g->provider);
    g->provider = s ? strdup(s) : NULL;
    s = json_string_value(json_object_get(opp, "model"));
    free(g->model_name);
    g->model_name = s ? strdup(s) : NULL;
    int64_t mp = json_integer_value(json_object_get(doc, "maxPlies"));
    g->max_plies = mp > 0 && mp < CDSH_XQ_MAX_PLY ? (int)mp : 300;
    g->pending = (int)json_integer_value(json_object_get(doc, "pending"));
    if (g->pending < 0 || g->pending > CDSH__XQ_PENDING_FAILED)
        g->pending = 0;
    s = json_string_value(json_object_get(doc, "messageCode"));
    snprintf(g->msg_code, sizeof g->msg_code, "%s", s ? s : "");
    s = json_string_value(json_object_get(doc, "messageTone"));
    snprintf(g->msg_tone, sizeof g->msg_tone, "%s", s ? s : "");
    json_t *cause = json_object_get(doc, "messageCause");
    s = json_string_value(json_object_get(cause, "code"));
    snprintf(g->cause_code, sizeof g->cause_code, "%s", s ? s : "");
    s = json_string_value(json_object_get(cause, "message"));
    snprintf(g->cause_text, sizeof g->cause_text, "%s", s ? s : "");
    json_t *u = json_object_get(doc, "usage");
    g->in_tok = json_integer_value(json_object_get(u, "inputTokens"));
    g->out_tok = json_integer_value(json_object_get(u, "outputTokens"));
    g->tot_tok = json_integer_value(json_object_get(u, "totalTokens"));
    g->calls = json_integer_value(json_object_get(u, "calls"));
    json_t *c = json_object_get(doc, "clockMs");
    g->clock_ms[0] = json_integer_value(json_object_get(c, "red"));
    g->clock_ms[1] = json_integer_value(json_object_get(c, "black"));
    s = json_string_value(json_object_get(doc, "resigned"));
    g->resigned = s ? side_of(s) : -1;
    g->invalid = (int)json_integer_value(json_object_get(doc, "invalidMoves"));
    json_decref(doc);
    return 0;
}

/* ---- drawing ------------------------------------------------------------------ */

static const char *glyph(cdsh_xq_piece_t p)
{
    static const char *const red[8] = {"", "帅", "仕", "相", "马", "车", "炮", "兵"};
    static const char *const black[8] = {"", "将", "士", "象", "馬", "車", "砲", "卒"};
    int t = cdsh_xq_piece_type(p);
    return cdsh_xq_piece_side(p) == CDSH_XQ_RED ? red[t] : black[t];
}

char *cdsh__xq_drawing_dup(const cdsh_xq_pos *pos, int cjk)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    /* full-width letters keep the CJK grid aligned (every cell two columns) */
    cdsh_strbuf_append_str(&sb, cjk ? "   ａｂｃｄｅｆｇｈｉ\n" : "  a b c d e f g h i\n");
    for (int rank = 9; rank >= 0; rank--) {
        cdsh_strbuf_appendf(&sb, cjk ? "%d  " : "%d ", rank);
        for (int file = 0; file < 9; file++) {
            cdsh_xq_piece_t p = cdsh_xq_piece_at(pos, cdsh_xq_square(file, rank));
            if (cjk)
                cdsh_strbuf_append_str(&sb, p ? glyph(p) : "・");
            else
                cdsh_strbuf_appendf(&sb, "%c%s", p ? cdsh_xq_piece_char(p) : '.',
                                    file < 8 ? " " : "");
        }
        cdsh_strbuf_append_char(&sb, '\n');
        if (rank == 5)
            cdsh_strbuf_append_str(&sb, cjk ? "   　　楚河　　漢界\n" : "  ~~~~~ river ~~~~~\n");
    }
    return cdsh_strbuf_take(&sb, NULL);
}
