/* plugin.c — the `xiangqi` plugin: config schema (§6), apply (service, six
 * tools, /xiangqi, the playbook skill, /xiangqi-mate when a web connection
 * exists, the model opponent) and the state its wrappers share. */
#include "plugins/xiangqi/plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/session_store.h"
#include "host/host.h"
#include "plugins/xiangqi/cmd_xiangqi.h"
#include "plugins/xiangqi/cmd_xiangqi_analyze.h"
#include "plugins/xiangqi/opponent.h"
#include "plugins/xiangqi/playbook.h"

#define INTKEY(name, dflt, lo, hi, desc)                                                           \
    "\"" name "\":{\"type\":\"integer\",\"default\":" #dflt ",\"minimum\":" #lo                    \
    ",\"maximum\":" #hi ",\"description\":\"" desc "\"}"

static const char config_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"defaultSide\":{\"type\":\"string\",\"enum\":[\"r\",\"b\"],\"default\":\"r\","
    "\"description\":\"the person's side in a new game (r moves first)\"},"
    "\"defaultOpponent\":{\"type\":\"string\",\"enum\":[\"local\",\"model\"],"
    "\"default\":\"local\",\"description\":\"who answers the person: the local engine or the "
    "session's model\"}," INTKEY(
        "maxPlies", 300, 2, 4000,
        "plies after which a game is drawn") ","
                                             "\"storageDir\":{\"type\":\"string\",\"default\":\"\","
                                             "\"description\":\"where games are "
                                             "kept; empty: $CDSH_HOME/xiangqi\"},"
                                             "\"engine\":{\"type\":\"object\",\"description\":"
                                             "\"the local engine as opponent\","
                                             "\"properties\":{" INTKEY("depth", 5, 1, 30, "search depth limit per move") "," INTKEY(
                                                 "movetimeMs", 1000,
                                                 10, 60000, "time limit per move") "," INTKEY("hash"
                                                                                              "Mb",
                                                                                              16, 1,
                                                                                              1024,
                                                                                              "tran"
                                                                                              "spos"
                                                                                              "itio"
                                                                                              "n "
                                                                                              "tabl"
                                                                                              "e "
                                                                                              "siz"
                                                                                              "e") "}},"
                                                                                                   "\"hint\":{\"type\":\"object\",\"properties\":{" INTKEY("count", 3, 1, 16, "candidates xiangqi_hint returns by default") "," INTKEY("depth", 6, 1, 30, "search depth for hints") "}},"
                                                                                                                                                                                                                                                                                    "\"review\":{\"type\":\"object\",\"properties\":{" INTKEY("depth", 2, 1, 10, "search depth per ply of the evaluation curve") "," INTKEY("turningCp", 150,
                                                                                                                                                                                                                                                                                                                                                                                                                            10,
                                                                                                                                                                                                                                                                                                                                                                                                                            5000,
                                                                                                                                                                                                                                                                                                                                                                                                                            "evaluation swing (centipawns) that marks a turning "
                                                                                                                                                                                                                                                                                                                                                                                                                            "point") "}},"
                                                                                                                                                                                                                                                                                                                                                                                                                                     "\"model\":{\"type\":\"object\",\"description\":\"the model as opponent\",\"properties\":{" INTKEY("timeoutMs",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                        30000,
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                        100,
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                        600000,
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                        "time the model has for one move before the local "
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                        "engine plays it (ai.timeout)") "," INTKEY("maxCalls", 40, 1, 100000, "model calls per game before falling back (ai.budget)") "," INTKEY("maxTokens",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                 200000,
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                 100,
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                 100000000,
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                 "tokens per game before falling back "
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                 "(ai.budget)") "," INTKEY("maxInvalidMoves", 3, 1, 50,
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                           "refused moves in one turn before falling back "
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                           "(ai.fallback.local)") "," INTKEY("maxSteps",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                             8,
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                             1,
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                             100,
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                             "model calls in one turn") "}}"
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                        "}}";

static const char *const optional_services[] = {"connection", NULL};

cdsh__xq_plugin *cdsh__xq_plugin_ref(cdsh__xq_plugin *p)
{
    atomic_fetch_add(&p->refs, 1);
    return p;
}

void cdsh__xq_plugin_unref(void *ptr)
{
    cdsh__xq_plugin *p = ptr;
    if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
        return;
    cdsh__xq_opponent_free(p->opponent);
    cdsh_xq_service_free(p->svc);
    if (p->sessions)
        cdsh_session_store_close(p->sessions);
    pthread_mutex_destroy(&p->mu);
    json_decref(p->config);
    free(p);
}

json_t *cdsh__xq_plugin_session_dup(cdsh__xq_plugin *p, const char *id)
{
    cdsh_error e;
    json_t *s = NULL;
    pthread_mutex_lock(&p->mu);
    if (!p->sessions) {
        cdsh_session_store *store = NULL;
        if (cdsh_session_store_open(cdsh_host_home(p->host), NULL, &store, &e) == 0)
            p->sessions = store;
    }
    if (p->sessions && cdsh_xq_service_key_valid(id))
        s = cdsh_session_store_info_dup(p->sessions, id, &e);
    pthread_mutex_unlock(&p->mu);
    return s;
}

void cdsh__xq_plugin_touch(cdsh__xq_plugin *p, const char *key)
{
    pthread_mutex_lock(&p->mu);
    snprintf(p->last_key, sizeof p->last_key, "%s", key);
    pthread_mutex_unlock(&p->mu);
}

void cdsh__xq_key_from_scope(cdsh__xq_plugin *p, const cdsh_scope *scope,
                             char out[CDSH__XQ_KEY_MAX + 1])
{
    for (const cdsh_scope *s = scope; s; s = cdsh_scope_parent(s))
        if (cdsh_xq_service_key_valid(cdsh_scope_id(s))) {
            snprintf(out, CDSH__XQ_KEY_MAX + 1, "%s", cdsh_scope_id(s));
            return;
        }
    pthread_mutex_lock(&p->mu);
    snprintf(out, CDSH__XQ_KEY_MAX + 1, "%s", p->last_key[0] ? p->last_key : "default");
    pthread_mutex_unlock(&p->mu);
}

static void on_change(void *ud, const char *key, const json_t *projection)
{
    cdsh__xq_plugin *p = ud;
    json_t *payload =
        json_pack("{s:s,s:s,s:O,s:O}", "plugin", "xiangqi", "sessionId", key, "revision",
                  json_object_get(projection, "revision"), "state", projection);
    if (payload)
        cdsh_events_emit(cdsh_host_events(p->host), CDSH_XQ_EVENT, NULL, false, payload);
    json_decref(payload);
}

static int cfg_int(const json_t *config, const char *group, const char *key)
{
    const json_t *g = group ? json_object_get(config, group) : config;
    return (int)json_integer_value(json_object_get(g, key));
}

static void stop_plugin(void *ud)
{
    cdsh__xq_plugin *p = ud;
    cdsh_xq_service_set_listener(p->svc, NULL, NULL);
    cdsh_xq_service_set_model_runner(p->svc, NULL, NULL);
    cdsh__xq_opponent_stop(p->opponent);
    cdsh__xq_plugin_unref(p);
}

static int xq_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    cdsh__xq_plugin *p = calloc(1, sizeof *p);
    if (!p)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    atomic_init(&p->refs, 1);
    pthread_mutex_init(&p->mu, NULL);
    p->host = cdsh_ctx_host(ctx);
    p->config = json_deep_copy(config);
    const char *dir = json_string_value(json_object_get(config, "storageDir"));
    const char *side = json_string_value(json_object_get(config, "defaultSide"));
    cdsh_xq_service_opts o = {
        .dir = dir && *dir ? dir : NULL,
        .home = cdsh_ctx_home(ctx),
        .default_hero = side && side[0] == 'b' ? 'b' : 'r',
        .default_opponent = json_string_value(json_object_get(config, "defaultOpponent")),
        .max_plies = cfg_int(config, NULL, "maxPlies"),
        .engine_depth = cfg_int(config, "engine", "depth"),
        .engine_movetime_ms = cfg_int(config, "engine", "movetimeMs"),
        .engine_hash_mb = cfg_int(config, "engine", "hashMb"),
        .hint_count = cfg_int(config, "hint", "count"),
        .hint_depth = cfg_int(config, "hint", "depth"),
        .review_depth = cfg_int(config, "review", "depth"),
        .turning_cp = cfg_int(config, "review", "turningCp"),
    };
    cdsh__xq_opponent_describe(&o.model_provider, &o.model_name);
    int rc = cdsh_xq_service_new(&o, &p->svc, err);
    if (rc == 0)
        rc = cdsh__xq_opponent_new(p, &p->opponent, err);
    if (rc != 0) {
        cdsh__xq_plugin_unref(p);
        return rc;
    }
    cdsh_xq_service_set_listener(p->svc, on_change, p);
    cdsh_xq_service_set_model_runner(p->svc, cdsh__xq_opponent_start, p->opponent);
    /* state first: disposers run newest first, so it outlives every registration */
    if ((rc = cdsh_ctx_adopt(ctx, (cdsh_disposer_t){stop_plugin, p}, err)) != 0)
        return rc;
    /* deep analyses run as jobs this plugin owns (cmd_xiangqi_analyze.c) */
    if ((rc = cdsh_ctx_provide(ctx, CDSH_XQ_JOBS_SERVICE, ctx, err)) != 0)
        return rc;
    /* The table's reference to p is released with its last surface. */
    cdsh_ops *ops = NULL;
    if ((rc = cdsh_ops_new(&cdsh__xq_ops_table, cdsh__xq_plugin_ref(p), cdsh__xq_plugin_unref,
                           &ops, err)) != 0)
        return rc;
    rc = cdsh_ops_register_surfaces(ctx, ops, CDSH_OP_TOOL | CDSH_OP_COMMAND, err);
    if (rc != 0) {
        cdsh_ops_free(ops);
        return rc;
    }
    cdsh_skill_def skill = {.name = CDSH_XQ_SKILL,
                            .description = "How to play xiangqi well through the xiangqi_* tools: "
                                           "notation, openings, piece values, when to ask for a "
                                           "hint.",
                            .content = cdsh_xq_playbook_text,
                            .when_to_use = "when playing xiangqi (Chinese chess) as the opponent"};
    cdsh_error serr;
    (void)cdsh_ctx_register_skill(ctx, &skill, &serr); /* degrades silently (§5) */
    if (cdsh_ctx_get(ctx, "connection"))
        rc = cdsh_ops_register_surfaces(ctx, ops, CDSH_OP_RPC, err);
    cdsh_ops_free(ops);
    return rc;
}

const cdsh_plugin_def cdsh_xq_plugin = {
    .name = "xiangqi",
    .description = "xiangqi (Chinese chess) against the local engine or the session's model: "
                   "six tools, /xiangqi, the /xiangqi-mate panel channel",
    .optional = optional_services,
    .config_schema = config_schema,
    .enabled_by_default = true, /* the main job (`make run`) is playable with no key */
    .apply = xq_apply,
    .subcommands = cdsh_xq_subcommands,
};
