/* commands.c — the person's `/xiangqi new | state | move <m> | undo | hint |
 * resign | review | export` (seed §3): parse the line → call the service as
 * the hero → success with the projection JSON, or an error in Chinese. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/strbuf.h"
#include "plugins/xiangqi/plugin.h"

#define USAGE                                                                                              \
    "用法：/xiangqi new [r|b] [local|model] | state | move <着法> | undo [步数] | hint [个数] | " \
    "resign | review [turning|all] | export | fallback"

static int set(cdsh_command_result *out, cdsh_command_kind kind, const char *text, cdsh_error *err)
{
    if (cdsh_command_result_set(out, kind, text) != 0)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    return 0;
}

/* value → result: projections as JSON, refusals as Chinese text. */
static int reply(json_t *v, const cdsh_error *e, cdsh_command_result *out, cdsh_error *err)
{
    if (!v) {
        char msg[CDSH_ERROR_MESSAGE_MAX + 32];
        snprintf(msg, sizeof msg, "象棋服务出错：%s", e->message[0] ? e->message : e->code);
        return set(out, CDSH_COMMAND_ERROR, msg, err);
    }
    char *text = json_is_true(json_object_get(v, "ok")) ? cdsh_json_dump_compact_dup(v)
                                                        : cdsh__xq_refusal_text_dup(v);
    int kind = json_is_true(json_object_get(v, "ok")) ? CDSH_COMMAND_SUCCESS : CDSH_COMMAND_ERROR;
    json_decref(v);
    int rc = text ? set(out, kind, text, err)
                  : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    free(text);
    return rc;
}

static int xiangqi_command(void *arg, const cdsh_command_invocation *inv, cdsh_command_result *out,
                           cdsh_error *err)
{
    cdsh__xq_plugin *p = arg;
    char key[CDSH__XQ_KEY_MAX + 1];
    cdsh__xq_key_from_scope(p, inv->agent, key);
    char line[512];
    snprintf(line, sizeof line, "%s", inv->raw_input ? inv->raw_input : "");
    char *save = NULL;
    char *sub = strtok_r(line, " \t\r\n", &save);
    char *rest = save ? save + strspn(save, " \t") : NULL;
    if (rest) {
        size_t n = strlen(rest);
        while (n && isspace((unsigned char)rest[n - 1]))
            rest[--n] = 0;
    }
    cdsh_error e = {0};
    if (!sub || strcmp(sub, "state") == 0)
        return reply(cdsh_xq_service_state(p->svc, key, &e), &e, out, err);
    if (strcmp(sub, "new") == 0) {
        cdsh_xq_new_opts o = {0};
        for (char *t = strtok_r(rest, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
            if (!strcmp(t, "r") || !strcmp(t, "b"))
                o.side = t;
            else if (!strcmp(t, "red") || !strcmp(t, "红"))
                o.side = "r";
            else if (!strcmp(t, "black") || !strcmp(t, "黑"))
                o.side = "b";
            else if (!strcmp(t, "local") || !strcmp(t, "model"))
                o.opponent = t;
            else
                return set(out, CDSH_COMMAND_ERROR, USAGE, err);
        }
        return reply(cdsh_xq_service_new_game(p->svc, key, &o, &e), &e, out, err);
    }
    if (strcmp(sub, "move") == 0) {
        if (!rest || !*rest)
            return set(out, CDSH_COMMAND_ERROR, "请给出着法，例如 /xiangqi move 炮二平五 或 h2e2",
                       err);
        return reply(cdsh_xq_service_move(p->svc, key, CDSH_XQ_ACTOR_HERO, rest, -1, -1, &e), &e,
                     out, err);
    }
    if (strcmp(sub, "undo") == 0)
        return reply(cdsh_xq_service_undo(p->svc, key, CDSH_XQ_ACTOR_HERO,
                                          rest && *rest ? atoi(rest) : 2, &e),
                     &e, out, err);
    if (strcmp(sub, "hint") == 0)
        return reply(cdsh_xq_service_hint(p->svc, key, rest && *rest ? atoi(rest) : 0, 0, &e), &e,
                     out, err);
    if (strcmp(sub, "resign") == 0)
        return reply(cdsh_xq_service_resign(p->svc, key, &e), &e, out, err);
    if (strcmp(sub, "fallback") == 0)
        return reply(cdsh_xq_service_fallback(p->svc, key, &e), &e, out, err);
    if (strcmp(sub, "review") == 0)
        return reply(cdsh_xq_service_review(p->svc, key, rest && *rest ? rest : NULL, &e), &e, out,
                     err);
    if (strcmp(sub, "export") == 0) {
        json_t *v = cdsh_xq_service_export(p->svc, key, &e);
        if (!v)
            return reply(NULL, &e, out, err);
        char *text = NULL;
        int n = asprintf(&text, "FEN: %s\n\n%s", json_string_value(json_object_get(v, "fen")),
                         json_string_value(json_object_get(v, "pgn")));
        json_decref(v);
        if (n < 0)
            return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        int rc = set(out, CDSH_COMMAND_SUCCESS, text, err);
        free(text);
        return rc;
    }
    return set(out, CDSH_COMMAND_ERROR, USAGE, err);
}

int cdsh__xq_command_register(cdsh_plugin_ctx *ctx, cdsh__xq_plugin *p, cdsh_error *err)
{
    cdsh_command_def def = {
        .name = "xiangqi",
        .description = "play xiangqi (Chinese chess): new, state, move, undo, hint, resign, "
                       "review, export",
        .input_hint = "new | state | move <着法> | undo | hint | resign | review | export",
        .handler = xiangqi_command,
        .arg = p,
    };
    return cdsh_ctx_register_command(ctx, &def, err);
}
