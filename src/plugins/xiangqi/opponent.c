/* opponent.c — the model opponent: one thread per session turn runs a small
 * agent loop (model call → xiangqi tool calls through the kernel's dispatch →
 * repeat) until the model has moved, then stops; on timeout, budget or
 * repeated invalid moves it hands the move to the local engine. */
#include "plugins/xiangqi/opponent.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/model_client.h"
#include "base/cancel.h"
#include "base/json.h"
#include "host/dispatch.h"
#include "host/host.h"
#include "plugins/xiangqi/plugin.h"

typedef struct turn {
    struct cdsh__xq_opponent *o;
    char key[CDSH__XQ_KEY_MAX + 1];
    pthread_t th;
    int finished; /* under o->mu */
    int again;    /* under o->mu: started again while running */
    struct turn *next;
} turn;

struct cdsh__xq_opponent {
    cdsh__xq_plugin *p;
    pthread_mutex_t mu;
    cdsh_cancel *stop;
    int stopping;
    turn *turns;
};

void cdsh__xq_opponent_describe(const char **provider, const char **model)
{
    const char *url = getenv("CDSH_BASE_URL");
    const char *m = getenv("CDSH_MODEL");
    *provider = url && *url && !strstr(url, "deepseek.com") ? "openai-compatible" : "deepseek";
    *model = m && *m ? m : "deepseek-chat";
}

int cdsh__xq_opponent_new(cdsh__xq_plugin *p, cdsh__xq_opponent **out, cdsh_error *err)
{
    cdsh__xq_opponent *o = calloc(1, sizeof *o);
    if (!o || !(o->stop = cdsh_cancel_new(NULL))) {
        free(o);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    o->p = p;
    pthread_mutex_init(&o->mu, NULL);
    *out = o;
    return 0;
}

static void join_finished(cdsh__xq_opponent *o, int all)
{
    for (;;) {
        pthread_mutex_lock(&o->mu);
        turn **pp = &o->turns, *t = NULL;
        while (*pp && !(all || (*pp)->finished))
            pp = &(*pp)->next;
        if (*pp) {
            t = *pp;
            *pp = t->next;
        }
        pthread_mutex_unlock(&o->mu);
        if (!t)
            return;
        pthread_join(t->th, NULL);
        free(t);
    }
}

void cdsh__xq_opponent_stop(cdsh__xq_opponent *o)
{
    if (!o)
        return;
    pthread_mutex_lock(&o->mu);
    o->stopping = 1;
    pthread_mutex_unlock(&o->mu);
    cdsh_cancel_fire(o->stop, "plugin unloading");
    join_finished(o, 1);
}

void cdsh__xq_opponent_free(cdsh__xq_opponent *o)
{
    if (!o)
        return;
    cdsh__xq_opponent_stop(o);
    cdsh_cancel_free(o->stop);
    pthread_mutex_destroy(&o->mu);
    free(o);
}

/* ---- one turn ----------------------------------------------------------------- */

static int cfg(const cdsh__xq_plugin *p, const char *key)
{
    return (int)json_integer_value(json_object_get(json_object_get(p->config, "model"), key));
}

typedef struct watchdog {
    cdsh_cancel *done, *turn;
    int64_t ms;
} watchdog;

static void *watch(void *arg)
{
    watchdog *w = arg;
    if (!cdsh_cancel_wait(w->done, w->ms))
        cdsh_cancel_fire(w->turn, "timeout");
    return NULL;
}

/* The session's own provider/model/base URL, when the session is stored. */
static int resolve_model(cdsh__xq_plugin *p, const char *key, cdsh_model_config *out,
                         cdsh_error *err)
{
    cdsh_model_config session;
    cdsh_model_config_init(&session);
    json_t *rec = cdsh__xq_plugin_session_dup(p, key);
    const char *model = json_string_value(json_object_get(rec, "model"));
    const char *url = json_string_value(json_object_get(rec, "baseUrl"));
    if (model)
        cdsh_model_config_set_model(&session, model);
    if (url)
        cdsh_model_config_set_base_url(&session, url);
    json_decref(rec);
    int rc = cdsh_model_config_resolve(&session, NULL, out, err);
    cdsh_model_config_deinit(&session);
    return rc;
}

static json_t *tool_list(cdsh_tools *tools, const cdsh_scope *scope)
{
    json_t *all = cdsh_tools_schemas(tools, scope), *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(all, i, t) {
        const char *name = json_string_value(json_object_get(t, "name"));
        if (name && (strncmp(name, "xiangqi_", 8) == 0 || strcmp(name, "skill") == 0))
            json_array_append_new(out, json_pack("{s:s,s:O}", "type", "function", "function", t));
    }
    json_decref(all);
    return out;
}

static json_t *first_messages(const cdsh_xq_turn_info *info)
{
    char user[512];
    int black = strstr(info->fen, " b ") != NULL;
    snprintf(user, sizeof user,
             "轮到你（%s）走棋。当前局面 FEN：%s\n请调用 xiangqi_move 走一步（可先用 xiangqi_board "
             "查看合法着法，或用 xiangqi_hint 请本地引擎给建议）。",
             black ? "黑方" : "红方", info->fen);
    return json_pack(
        "[{s:s,s:s},{s:s,s:s}]", "role", "system", "content",
        "你是象棋（中国象棋）对手，通过 xiangqi_* 工具与人类对弈。只在轮到你时走子，"
        "绝不替人类方走子；着法被拒时从返回的合法着法中选择一个重试。需要时可调用 skill 工具加载 "
        "xiangqi-mate-playbook。",
        "role", "user", "content", user);
}

typedef enum { END_MOVED, END_TIMEOUT, END_BUDGET, END_INVALID, END_ERROR, END_STOPPED } turn_end;

/* Plays the model's turn; on END_ERROR and END_TIMEOUT *why holds the
 * failure (a timeout: the endpoint's, or the move clock's MOVE_TIMEOUT). */
static turn_end play_turn(cdsh__xq_opponent *o, const char *key, cdsh_cancel *tok,
                          cdsh_error *why)
{
    cdsh__xq_plugin *p = o->p;
    cdsh_xq_turn_info info;
    cdsh_error err;
    if (cdsh_xq_service_turn_info(p->svc, key, &info, &err) != 0 || !info.model_to_move)
        return END_MOVED;
    if (info.calls >= cfg(p, "maxCalls") || info.total_tokens >= cfg(p, "maxTokens"))
        return END_BUDGET;
    cdsh_model_config mc;
    if (resolve_model(p, key, &mc, why) != 0)
        return END_ERROR;
    cdsh_model_client *client = cdsh_model_client_new(&mc, why);
    cdsh_model_config_deinit(&mc);
    if (!client)
        return END_ERROR;
    cdsh_scope *scope = cdsh_scope_new(key, NULL);
    cdsh_tools *tools = cdsh_host_tools(p->host);
    json_t *tl = tool_list(tools, scope);
    json_t *messages = first_messages(&info);
    turn_end end = END_INVALID;
    int steps = cfg(p, "maxSteps");
    for (int step = 0; step < steps; step++) {
        cdsh_model_request req = {.messages = messages, .tools = tl, .cancel = tok};
        cdsh_model_reply reply;
        int rc = cdsh_model_client_complete(client, &req, &reply, &err);
        if (rc != 0) {
            end = cdsh_cancel_is_fired(o->stop) ? END_STOPPED
                  : cdsh_cancel_is_fired(tok)   ? END_TIMEOUT
                  : rc == CDSH_ETIMEDOUT        ? END_TIMEOUT
                                                : END_ERROR;
            if (end == END_ERROR || (end == END_TIMEOUT && !cdsh_cancel_is_fired(tok)))
                *why = err;
            break;
        }
        cdsh_xq_service_add_usage(p->svc, key, reply.usage.input_tokens, reply.usage.output_tokens,
                                  reply.usage.total_tokens, &err);
        json_array_append_new(messages, cdsh_model_reply_to_message(&reply));
        for (size_t i = 0; i < reply.n_tool_calls; i++) {
            const cdsh_model_tool_call *c = &reply.tool_calls[i];
            cdsh_error perr;
            json_t *args =
                cdsh_json_parse(c->arguments ? c->arguments : "{}",
                                strlen(c->arguments ? c->arguments : "{}"), 1 << 20, &perr);
            if (!json_is_object(args)) {
                json_decref(args);
                args = json_object();
            }
            cdsh_dispatch_input in = {
                .call_id = c->id, .name = c->name, .args = args, .agent = scope, .cancel = tok};
            cdsh_toolresult *res = cdsh_dispatch_execute(tools, &in);
            char *text = res ? cdsh_toolresult_text_dup(res) : NULL;
            cdsh_toolresult_free(res);
            json_decref(args);
            json_array_append_new(messages,
                                  json_pack("{s:s,s:s,s:s}", "role", "tool", "tool_call_id", c->id,
                                            "content", text ? text : "Error: tool failed"));
            free(text);
        }
        if (reply.n_tool_calls == 0)
            json_array_append_new(messages, json_pack("{s:s,s:s}", "role", "user", "content",
                                                      "请调用 xiangqi_move 走一步。"));
        cdsh_model_reply_deinit(&reply);
        if (cdsh_xq_service_turn_info(p->svc, key, &info, &err) != 0 || !info.model_to_move) {
            end = END_MOVED;
            break;
        }
        if (cdsh_cancel_is_fired(tok)) {
            end = cdsh_cancel_is_fired(o->stop) ? END_STOPPED : END_TIMEOUT;
            break;
        }
        if (info.invalid_moves >= cfg(p, "maxInvalidMoves")) {
            end = END_INVALID;
            break;
        }
        if (info.calls >= cfg(p, "maxCalls") || info.total_tokens >= cfg(p, "maxTokens")) {
            end = END_BUDGET;
            break;
        }
    }
    json_decref(messages);
    json_decref(tl);
    cdsh_scope_unref(scope);
    cdsh_model_client_free(client);
    return end;
}

static void run_turn(turn *t)
{
    cdsh__xq_opponent *o = t->o;
    cdsh_cancel *tok = cdsh_cancel_new(o->stop);
    cdsh_cancel *done = cdsh_cancel_new(NULL);
    watchdog w = {.done = done, .turn = tok, .ms = cfg(o->p, "timeoutMs")};
    pthread_t wd;
    int have_wd = tok && done && pthread_create(&wd, NULL, watch, &w) == 0;
    cdsh_error why = {0};
    turn_end end = tok && done ? play_turn(o, t->key, tok, &why) : END_ERROR;
    if (end == END_TIMEOUT && !why.code[0]) /* the move clock ran out, not the endpoint's */
        cdsh_error_set(&why, CDSH_ETIMEDOUT, "MOVE_TIMEOUT",
                       "no move within %lld ms (xiangqi.model.timeoutMs)", (long long)w.ms);
    if (have_wd) {
        cdsh_cancel_fire(done, "turn over");
        pthread_join(wd, NULL);
    }
    cdsh_cancel_free(tok);
    cdsh_cancel_free(done);
    cdsh_error err;
    switch (end) {
    case END_MOVED:
    case END_STOPPED: break;
    case END_TIMEOUT: cdsh_xq_service_fallback_ai(o->p->svc, t->key, "ai.timeout", &why, &err); break;
    case END_BUDGET: cdsh_xq_service_fallback_ai(o->p->svc, t->key, "ai.budget", NULL, &err); break;
    case END_INVALID:
        cdsh_xq_service_fallback_ai(o->p->svc, t->key, "ai.fallback.local", NULL, &err);
        break;
    case END_ERROR: cdsh_xq_service_mark_failed(o->p->svc, t->key, "ai.error", why.code[0] ? &why : NULL, &err); break;
    }
}

static void *turn_main(void *arg)
{
    turn *t = arg;
    for (;;) {
        run_turn(t);
        pthread_mutex_lock(&t->o->mu);
        int again = t->again && !t->o->stopping;
        t->again = 0;
        t->finished = !again;
        pthread_mutex_unlock(&t->o->mu);
        if (!again)
            return NULL;
    }
}

int cdsh__xq_opponent_start(void *ud, const char *key)
{
    cdsh__xq_opponent *o = ud;
    join_finished(o, 0);
    pthread_mutex_lock(&o->mu);
    if (o->stopping) {
        pthread_mutex_unlock(&o->mu);
        return -1;
    }
    for (turn *t = o->turns; t; t = t->next)
        if (!t->finished && strcmp(t->key, key) == 0) {
            t->again = 1;
            pthread_mutex_unlock(&o->mu);
            return 0; /* that turn sees the new state */
        }
    turn *t = calloc(1, sizeof *t);
    if (!t) {
        pthread_mutex_unlock(&o->mu);
        return -1;
    }
    t->o = o;
    snprintf(t->key, sizeof t->key, "%s", key);
    if (pthread_create(&t->th, NULL, turn_main, t) != 0) {
        pthread_mutex_unlock(&o->mu);
        free(t);
        return -1;
    }
    t->next = o->turns;
    o->turns = t;
    pthread_mutex_unlock(&o->mu);
    return 0;
}
