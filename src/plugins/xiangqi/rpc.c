/* rpc.c — the /xiangqi-mate RPC channel for the board panel (seed §4.1):
 * admit payload.sessionId against the session store → call the service as
 * the person → the unified envelope. Refusals become {ok:false, error:{code:
 * kebab-case of the refusal code, message: errorZh, details: the refusal}}. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/xiangqi/plugin.h"

static json_t *bad_request(const char *fmt, const char *a)
{
    char msg[256];
    snprintf(msg, sizeof msg, fmt, a);
    return cdsh_rpc_error_new(CDSH_RPC_BAD_REQUEST, msg, NULL);
}

/* 0 when payload.sessionId names a stored session; otherwise *result holds
 * the refusal (bad-request / session-not-found). */
static int admit(cdsh__xq_plugin *p, const json_t *payload, const char **sid, json_t **result)
{
    *sid = json_string_value(json_object_get(payload, "sessionId"));
    if (!json_is_object(payload) || !*sid) {
        *result = cdsh_rpc_error_new(CDSH_RPC_BAD_REQUEST, "payload.sessionId is required", NULL);
        return -1;
    }
    json_t *s = cdsh__xq_plugin_session_get(p, *sid);
    if (!s) {
        char msg[256];
        snprintf(msg, sizeof msg, "no session \"%.100s\"", *sid);
        *result = cdsh_rpc_error_new(CDSH_RPC_SESSION_NOT_FOUND, msg,
                                     json_pack("{s:s}", "sessionId", *sid));
        return -1;
    }
    json_decref(s);
    cdsh__xq_plugin_touch(p, *sid);
    return 0;
}

/* Service value → envelope (takes v). */
static json_t *envelope(json_t *v, const cdsh_error *e)
{
    if (!v)
        return cdsh_rpc_error_new(CDSH_RPC_INTERNAL, e->message[0] ? e->message : "xiangqi failed",
                                  NULL);
    if (json_is_true(json_object_get(v, "ok")))
        return cdsh_rpc_ok_new(v);
    char code[64];
    const char *c = json_string_value(json_object_get(v, "error"));
    size_t i = 0;
    for (; c && c[i] && i < sizeof code - 1; i++)
        code[i] = c[i] == '_' ? '-' : (char)tolower((unsigned char)c[i]);
    code[i] = 0;
    json_t *out = cdsh_rpc_error_new(code, json_string_value(json_object_get(v, "errorZh")), v);
    return out;
}

static int opt_int(const json_t *payload, const char *name, int dflt, int *out)
{
    json_t *v = json_object_get(payload, name);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_integer(v))
        return -1;
    *out = (int)json_integer_value(v);
    return 0;
}

static json_t *do_move(cdsh__xq_plugin *p, const char *sid, const json_t *payload, cdsh_error *e,
                       int *bad)
{
    /* priority: move → iccs → from+to (seed §4.1) */
    json_t *mv = json_object_get(payload, "move");
    json_t *iccs = json_object_get(payload, "iccs");
    json_t *from = json_object_get(payload, "from"), *to = json_object_get(payload, "to");
    if (json_is_object(mv)) {
        from = json_object_get(mv, "from");
        to = json_object_get(mv, "to");
        mv = NULL;
    }
    if (json_is_string(mv) && json_string_length(mv) > 0)
        return cdsh_xq_service_move(p->svc, sid, CDSH_XQ_ACTOR_HERO, json_string_value(mv), -1, -1,
                                    e);
    if (json_is_string(iccs) && json_string_length(iccs) > 0)
        return cdsh_xq_service_move(p->svc, sid, CDSH_XQ_ACTOR_HERO, json_string_value(iccs), -1,
                                    -1, e);
    if (json_is_integer(from) && json_is_integer(to))
        return cdsh_xq_service_move(p->svc, sid, CDSH_XQ_ACTOR_HERO, NULL,
                                    (int)json_integer_value(from), (int)json_integer_value(to), e);
    *bad = 1;
    return NULL;
}

static int xq_rpc(void *arg, const char *endpoint, const json_t *payload, cdsh_cancel *cancel,
                  json_t **result, cdsh_error *err)
{
    (void)cancel;
    (void)err;
    cdsh__xq_plugin *p = arg;
    const char *sid = NULL;
    if (admit(p, payload, &sid, result) != 0)
        return 0;
    cdsh_error e = {0};
    json_t *v = NULL;
    int n = 0, m = 0;
    if (strcmp(endpoint, "state") == 0) {
        v = cdsh_xq_service_state(p->svc, sid, &e);
    } else if (strcmp(endpoint, "move") == 0) {
        int bad = 0;
        v = do_move(p, sid, payload, &e, &bad);
        if (bad) {
            *result = bad_request("%s", "move needs payload.move, payload.iccs or payload.from "
                                        "and payload.to");
            return 0;
        }
    } else if (strcmp(endpoint, "undo") == 0) {
        if (opt_int(payload, "plies", 2, &n) != 0 || n < 1) {
            *result = bad_request("%s", "plies must be a positive integer");
            return 0;
        }
        v = cdsh_xq_service_undo(p->svc, sid, CDSH_XQ_ACTOR_HERO, n, &e);
    } else if (strcmp(endpoint, "hint") == 0) {
        if (opt_int(payload, "count", 0, &n) != 0 || opt_int(payload, "depth", 0, &m) != 0 ||
            n < 0 || n > 16 || m < 0 || m > 30) {
            *result = bad_request("%s", "count must be 1..16 and depth 1..30");
            return 0;
        }
        v = cdsh_xq_service_hint(p->svc, sid, n, m, &e);
    } else if (strcmp(endpoint, "new") == 0) {
        const char *side = json_string_value(json_object_get(payload, "side"));
        const char *opp = json_string_value(json_object_get(payload, "opponent"));
        if ((side && strcmp(side, "r") && strcmp(side, "b")) ||
            (opp && strcmp(opp, "local") && strcmp(opp, "model")) ||
            opt_int(payload, "maxPlies", 0, &n) != 0 || n < 0 || n > 4000) {
            *result = bad_request("%s", "side must be r|b, opponent local|model, maxPlies 2..4000");
            return 0;
        }
        cdsh_xq_new_opts o = {.side = side, .opponent = opp, .max_plies = n};
        v = cdsh_xq_service_new_game(p->svc, sid, &o, &e);
    } else if (strcmp(endpoint, "review") == 0) {
        const char *hl = json_string_value(json_object_get(payload, "highlight"));
        if (hl && strcmp(hl, "turning") && strcmp(hl, "all")) {
            *result = bad_request("highlight must be turning or all, not \"%.40s\"", hl);
            return 0;
        }
        v = cdsh_xq_service_review(p->svc, sid, hl, &e);
    } else if (strcmp(endpoint, "resign") == 0) {
        v = cdsh_xq_service_resign(p->svc, sid, &e);
    } else if (strcmp(endpoint, "fallback") == 0) {
        v = cdsh_xq_service_fallback(p->svc, sid, &e);
    } else if (strcmp(endpoint, "export") == 0) {
        v = cdsh_xq_service_export(p->svc, sid, &e);
        if (v)
            json_object_set_new(v, "ok", json_true());
    } else {
        char msg[160];
        snprintf(msg, sizeof msg, "no endpoint \"%.80s\" on %s", endpoint, CDSH_XQ_RPC_CHANNEL);
        *result = cdsh_rpc_error_new(CDSH_RPC_NOT_FOUND, msg, NULL);
        return 0;
    }
    *result = envelope(v, &e);
    return 0;
}

int cdsh__xq_rpc_register(cdsh_plugin_ctx *ctx, cdsh__xq_plugin *p, cdsh_error *err)
{
    return cdsh_ctx_rpc_handle(ctx, CDSH_XQ_RPC_CHANNEL, xq_rpc, p, err);
}
