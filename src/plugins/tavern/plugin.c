/* plugin.c — the tavern plugin's apply: service, its operations table (tools
 * and RPC channel), the provided service, all owned by the plugin context. On by
 * default (role-play works after `make run`); a turn of a session with no card
 * bound masks the tavern tools in its scope, so an ordinary chat's tool
 * surface does not grow. */
#include "plugins/tavern/plugin.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "agent/model_client.h"
#include "agent/model_config.h"
#include "agent/session_store.h"
#include "base/log.h"
#include "host/host.h"
#include "host/ops.h"
#include "plugins/tavern/cmd_tavern.h"
#include "plugins/tavern/service.h"
#include "plugins/tavern/wire.h"

typedef struct state {
    cdsh_tavern_service *svc;
    cdsh_session_store *sessions;
    cdsh_host *host; /* borrowed: the bus for the panel's "plugin/state" events */
    json_t *tool_names; /* owned: the tavern's tool names (masked in unbound turns) */
    pthread_mutex_t mu; /* guards masks */
    struct mask {
        char *session;
        int64_t turn;
        cdsh_disposer_t undo;
    } *masks; /* restrictions of running unbound turns, undone at their end */
    size_t n_masks;
} state;

/* True when session `sid` has a card bound (a role-play story). */
static bool session_bound(cdsh_tavern_service *svc, const char *sid)
{
    json_t *payload = json_pack("{s:s}", "sessionId", sid), *value = NULL;
    bool bound = payload && cdsh_tavern_service_call(svc, "getSessionBinding", payload, &value,
                                                     NULL) == 0 &&
                 json_is_object(json_object_get(value, "binding"));
    json_decref(payload);
    json_decref(value);
    return bound;
}

/* A turn of an unbound session: deny the tavern tools in the turn's scope
 * (the model's tool list for this turn is computed there), undone at turn
 * end. A failure only logs: the tools then stay visible and answer "not
 * bound" as before. */
static void mask_tools(state *st, const cdsh_scope *scope, const char *sid, int64_t turn)
{
    size_t n = json_array_size(st->tool_names);
    const char **deny = calloc(n + 1, sizeof *deny);
    char *session = strdup(sid);
    cdsh_disposer_t undo = {0};
    cdsh_error err = {0};
    if (!deny || !session)
        goto done;
    for (size_t i = 0; i < n; i++)
        deny[i] = json_string_value(json_array_get(st->tool_names, i));
    /* the scope is the turn's own (agent.c), not shared: masking it is the
     * per-session restriction the host offers (tools.h §5) */
    if (cdsh_tools_restrict(cdsh_host_tools(st->host), (cdsh_scope *)scope, NULL, deny, &undo,
                            &err) < 0) {
        cdsh_log_warn("tavern", "session %s: tools not masked: %s", sid, err.message);
        goto done;
    }
    pthread_mutex_lock(&st->mu);
    struct mask *m = realloc(st->masks, (st->n_masks + 1) * sizeof *m);
    if (m) {
        st->masks = m;
        st->masks[st->n_masks++] = (struct mask){session, turn, undo};
        session = NULL;
        undo = (cdsh_disposer_t){0};
    }
    pthread_mutex_unlock(&st->mu);
done:
    cdsh_disposer_run(&undo);
    free(session);
    free(deny);
}

static void unmask_tools(state *st, const char *sid, int64_t turn)
{
    cdsh_disposer_t undo = {0};
    pthread_mutex_lock(&st->mu);
    for (size_t i = 0; i < st->n_masks; i++) {
        if (st->masks[i].turn != turn || strcmp(st->masks[i].session, sid) != 0)
            continue;
        undo = st->masks[i].undo;
        free(st->masks[i].session);
        st->masks[i] = st->masks[--st->n_masks];
        break;
    }
    pthread_mutex_unlock(&st->mu);
    cdsh_disposer_run(&undo);
}

/* Impersonation through the configured model (environment / defaults, the
 * same resolution as the agent loop): one non-tool completion. */
static int model_helper(void *ud, const json_t *messages, char **finish_reason, char **text,
                        cdsh_error *err)
{
    (void)ud;
    cdsh_model_config cfg;
    int rc = cdsh_model_config_resolve(NULL, NULL, &cfg, err);
    if (rc < 0)
        return rc;
    cdsh_model_client *client = cdsh_model_client_new(&cfg, err);
    cdsh_model_config_deinit(&cfg);
    if (!client)
        return err ? err->rc : CDSH_ENOMEM;
    cdsh_model_request req = {
        .messages = messages, .max_tokens = 512, .reasoning = CDSH_MODEL_REASONING_DROP};
    cdsh_model_reply reply = {0};
    rc = cdsh_model_client_complete(client, &req, &reply, err);
    if (rc == 0) {
        *finish_reason = reply.finish_reason ? strdup(reply.finish_reason) : NULL;
        *text = strdup(reply.text ? reply.text : "");
    }
    cdsh_model_reply_deinit(&reply);
    cdsh_model_client_free(client);
    return rc;
}

/* Idle maintenance's summary call through the same helper. */
static int summarize(void *ud, const char *prompt, char **finish_reason, char **text,
                     cdsh_error *err)
{
    json_t *msgs = json_pack("[{s:s,s:s}]", "role", "user", "content", prompt);
    int rc = model_helper(ud, msgs, finish_reason, text, err);
    json_decref(msgs);
    return rc;
}

/* Tells the role-play panel that a floor closed: "plugin/state"
 * {plugin:"tavern", sessionId, kind:"floor", turn, committed}, emitted after
 * the commit so a panel that reloads the floors on it sees the closed floor. */
static void announce_floor(cdsh_host *host, const char *sid, int64_t turn, bool committed)
{
    json_t *p = json_pack("{s:s,s:s,s:s,s:I,s:b}", "plugin", CDSH_TAVERN_PLUGIN, "sessionId", sid,
                          "kind", "floor", "turn", (json_int_t)turn, "committed", committed);
    if (p)
        cdsh_events_emit(cdsh_host_events(host), "plugin/state", NULL, false, p);
    json_decref(p);
}

/* The agent loop's "agent/turn" bus event (synchronous): open the floor at
 * turn start; at turn end commit it, announce it to the panel, then run idle
 * maintenance (a summary only when compression is due, at most once per
 * closed turn). Maintenance runs on the turn's thread after the turn is
 * recorded; a background queue would let the turn return sooner. */
static void on_turn(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    (void)name;
    state *st = arg;
    cdsh_tavern_service *svc = st->svc;
    const char *sid = json_string_value(json_object_get(payload, "sessionId"));
    const char *phase = json_string_value(json_object_get(payload, "phase"));
    int64_t turn = json_integer_value(json_object_get(payload, "turn"));
    if (!sid || !phase)
        return;
    bool end = strcmp(phase, "end") == 0;
    if (strcmp(phase, "start") == 0 && !session_bound(svc, sid))
        mask_tools(st, scope, sid, turn);
    else if (end)
        unmask_tools(st, sid, turn);
    cdsh_error err = {0};
    int rc = strcmp(phase, "start") == 0
                 ? cdsh_tavern_service_turn_begin(svc, scope, sid, turn, &err)
             : end ? cdsh_tavern_service_turn_end(svc, sid, turn, &err)
                   : 0;
    if (rc < 0)
        cdsh_log_warn("tavern", "session %s turn %lld %s: %s", sid, (long long)turn, phase,
                      err.message);
    if (!end)
        return;
    announce_floor(st->host, sid, turn, rc == 0);
    if (cdsh_tavern_service_idle(svc, sid, summarize, NULL, NULL, &err) < 0)
        cdsh_log_info("tavern", "session %s: memory summary not written: %s", sid, err.message);
}

static void state_free(void *arg)
{
    state *st = arg;
    for (size_t i = 0; i < st->n_masks; i++) {
        cdsh_disposer_run(&st->masks[i].undo);
        free(st->masks[i].session);
    }
    free(st->masks);
    json_decref(st->tool_names);
    pthread_mutex_destroy(&st->mu);
    cdsh_tavern_service_free(st->svc);
    cdsh_session_store_close(st->sessions);
    free(st);
}

static int apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    const char *root = json_string_value(json_object_get(config, "root"));
    state *st = calloc(1, sizeof *st);
    if (!st)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    pthread_mutex_init(&st->mu, NULL);
    int rc = 0;
    if (json_is_true(json_object_get(config, "branches")))
        rc = cdsh_session_store_open(cdsh_ctx_home(ctx), NULL, &st->sessions, err);
    if (rc == 0)
        rc = cdsh_tavern_service_new(cdsh_ctx_home(ctx), root && *root ? root : NULL, st->sessions,
                                     &st->svc, err);
    if (rc < 0) {
        state_free(st);
        return rc;
    }
    cdsh_tavern_service_set_helper(st->svc, model_helper, NULL);
    st->tool_names = cdsh_ops_names(cdsh_tavern_service_ops(st->svc), CDSH_OP_TOOL);
    st->host = cdsh_ctx_host(ctx);
    /* Adopted first so it is freed last, after the tools and channel are gone. */
    if ((rc = cdsh_ctx_adopt(ctx, (cdsh_disposer_t){state_free, st}, err)) < 0)
        return rc;
    /* the seven tools and the /tavern channel, from one operations table */
    if ((rc = cdsh_ops_register(ctx, cdsh_tavern_service_ops(st->svc), err)) < 0)
        return rc;
    if ((rc = cdsh_tavern_wire_register(ctx, st->svc, err)) < 0)
        return rc;
    if ((rc = cdsh_ctx_on(ctx, "agent/turn", on_turn, st, err)) < 0)
        return rc;
    return cdsh_ctx_provide(ctx, CDSH_TAVERN_SERVICE, st->svc, err);
}

static const char *const requires_[] = {NULL};

const cdsh_plugin_def cdsh_tavern_plugin = {
    .name = CDSH_TAVERN_PLUGIN,
    .description =
        "tavern role-play: stories, floors, branches, memory, world state, tools, /tavern",
    .requires = requires_,
    .config_schema = "{\"type\":\"object\",\"properties\":{\"root\":{\"type\":\"string\","
                     "\"default\":\"\",\"description\":\"tavern data directory (empty: "
                     "$CDSH_HOME/tavern)\"},\"branches\":{\"type\":\"boolean\",\"default\":true,"
                     "\"description\":\"open the host session store for branch operations\"}}}",
    .enabled_by_default = true, /* role-play after `make run`, no config edit */
    .apply = apply,
    .subcommands = cdsh_tavern_subcommands,
};
