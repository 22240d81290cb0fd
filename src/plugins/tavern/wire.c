/* wire.c — tavern:standing, tavern:turn and preset sampling for the agent
 * loop: freezes the session's plan (built by service_plan.c) per turn in a
 * per-session pipeline that lives from the first request to turn end, and
 * commits the turn's global variables at its end. It calls the service;
 * the service never calls it. */
#include "plugins/tavern/wire.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/session_store.h"
#include "host/prompt.h"
#include "plugins/tavern/globals.h"
#include "plugins/tavern/pipeline.h"
#include "plugins/tavern/service_priv.h"

typedef struct open_turn {
    struct open_turn *next;
    char *sid;
    long long turn;
    cdsh_tavern_pipeline *pipe;
    json_t *globals_before, *globals_after; /* the turn's globals, committed at its end */
    char *gen_type; /* the turn's generation type (continue, regenerate, ...); NULL: normal */
} open_turn;

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

typedef struct wire {
    cdsh_tavern_service *svc;
    pthread_mutex_t mu;
    open_turn *turns;
} wire;

int cdsh_tavern_wire_plan(cdsh_tavern_service *svc, const char *session_id, json_t **plan,
                          cdsh_error *err)
{
    if (!svc || !session_id || !plan)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "plan: missing argument");
    return cdsh__tavern_plan_build(svc, session_id, NULL, NULL, 0, NULL, plan, NULL, NULL, err);
}

static void drop_globals(open_turn *t)
{
    json_decref(t->globals_before);
    json_decref(t->globals_after);
    t->globals_before = t->globals_after = NULL;
}

static void open_turn_free(open_turn *t)
{
    drop_globals(t);
    cdsh_tavern_pipeline_free(t->pipe);
    free(t->gen_type);
    free(t->sid);
    free(t);
}

/* The session's frozen plan of its open turn (built on first use), or a dry
 * run outside a turn. NULL when unbound or on failure (logged by caller). */
static json_t *turn_plan(wire *w, const char *sid, long long turn, bool open)
{
    cdsh_error err = {0};
    json_t *plan = NULL;
    pthread_mutex_lock(&w->mu);
    open_turn *t = w->turns;
    while (t && strcmp(t->sid, sid) != 0)
        t = t->next;
    if (!t && open) {
        t = calloc(1, sizeof *t);
        if (t && (t->sid = strdup(sid)) && (t->pipe = cdsh_tavern_pipeline_new())) {
            t->turn = turn;
            t->gen_type = cdsh__tavern_gen_type_take_dup(w->svc, sid);
            t->next = w->turns;
            w->turns = t;
        } else if (t) {
            free(t->sid);
            free(t);
            t = NULL;
        }
    }
    if (t && open && t->turn != turn) {
        char old[160];
        snprintf(old, sizeof old, "%s#t%lld", sid, t->turn);
        cdsh_tavern_pipeline_end_turn(t->pipe, old);
        t->turn = turn;
        /* That turn never reported its end: its globals are not committed. */
        drop_globals(t);
        /* A new turn: what asked for it (continue, regenerate) says its type. */
        free(t->gen_type);
        t->gen_type = cdsh__tavern_gen_type_take_dup(w->svc, sid);
    }
    char id[160];
    if (t)
        snprintf(id, sizeof id, "%s#t%lld", sid, t->turn);
    /* Held while building: one plan per turn, and the pipeline is per session. */
    json_t *gb = NULL, *ga = NULL;
    cdsh__tavern_plan_opts opts = {.generation_type = t ? t->gen_type : NULL};
    int rc = cdsh__tavern_plan_build(w->svc, sid, t ? t->pipe : NULL, t ? id : NULL,
                                     t ? t->turn : 0, &opts, &plan, &gb, &ga, &err);
    if (t && gb && ga) {
        drop_globals(t);
        t->globals_before = gb;
        t->globals_after = ga;
    } else {
        json_decref(gb);
        json_decref(ga);
    }
    pthread_mutex_unlock(&w->mu);
    if (rc < 0) {
        cdsh__tavern_log(
            w->svc, "prompt-failed",
            json_pack("{s:s,s:s,s:s}", "sessionId", sid, "code", err.code, "message", err.message));
        return NULL;
    }
    return plan;
}

static char *standing_render(void *ud, const cdsh_scope *scope)
{
    const char *sid = scope ? cdsh_scope_id(scope) : NULL;
    if (!sid || !cdsh_session_id_valid(sid))
        return NULL;
    json_t *plan = turn_plan(ud, sid, 0, false);
    const char *text = str(plan, "standing");
    char *out = text && *text ? strdup(text) : NULL;
    json_decref(plan);
    return out;
}

static char *turn_context(void *ud, const cdsh_scope *scope, const char *sid, long long turn)
{
    (void)scope;
    wire *w = ud;
    json_t *plan = turn_plan(w, sid, turn, true);
    if (!plan)
        return NULL;
    cdsh_error err = {0};
    char *extra = NULL;
    json_t *msgs =
        w->svc->sessions ? cdsh_session_store_messages(w->svc->sessions, sid, NULL) : NULL;
    const char *last = NULL;
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m)
        if (str(m, "role") && !strcmp(str(m, "role"), "user"))
            last = str(m, "content");
    cdsh_tavern_service_turn_context(w->svc, sid, last ? last : "", &extra, &err);
    json_decref(msgs);
    const char *t = str(plan, "turn");
    size_t n = (t ? strlen(t) : 0) + (extra ? strlen(extra) : 0) + 3;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s%s%s", t ? t : "", t && *t && extra && *extra ? "\n\n" : "",
                 extra ? extra : "");
    free(extra);
    json_decref(plan);
    return out;
}

static json_t *sampling(void *ud, const cdsh_scope *scope, const char *sid, long long turn)
{
    (void)scope;
    (void)turn;
    wire *w = ud;
    json_t *b = NULL, *out = NULL;
    if (cdsh_tavern_binding_load(w->svc->bindings, sid, &b, NULL) < 0)
        return NULL;
    json_decref(b);
    if (cdsh_tavern_service_sampling(w->svc, sid, &out, NULL) < 0)
        return NULL;
    /* Unset preset values (0, null) are not overrides. */
    json_t *rec = json_object_get(out, "recorded");
    if (json_is_object(rec)) {
        json_incref(rec);
        json_object_del(out, "recorded");
        json_object_update(out, rec);
        json_decref(rec);
    }
    const char *k;
    void *tmp;
    json_t *v;
    json_object_foreach_safe(out, tmp, k, v) {
        if (json_is_null(v) ||
            (json_is_number(v) && json_number_value(v) == 0 && strcmp(k, "temperature") != 0) ||
            (json_is_array(v) && json_array_size(v) == 0))
            json_object_del(out, k);
    }
    return out;
}

static void on_turn(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    (void)name;
    (void)scope;
    wire *w = arg;
    const char *sid = str(payload, "sessionId"), *phase = str(payload, "phase");
    if (!sid || !phase || strcmp(phase, "end") != 0)
        return;
    open_turn *t = NULL;
    pthread_mutex_lock(&w->mu);
    for (open_turn **pp = &w->turns; *pp; pp = &(*pp)->next) {
        if (strcmp((*pp)->sid, sid) == 0) {
            t = *pp;
            *pp = t->next;
            break;
        }
    }
    pthread_mutex_unlock(&w->mu);
    if (!t)
        return;
    /* Once per live turn, at its end, outside the wire's mutex (disk + flock). */
    if (t->globals_before && t->globals_after) {
        cdsh_error err = {0};
        char *dir = cdsh__tavern_globals_dir_dup(w->svc);
        if (!dir ||
            cdsh_tavern_globals_commit(dir, t->globals_before, t->globals_after, NULL, &err) < 0)
            cdsh__tavern_globals_failed(w->svc, sid, dir, &err);
        free(dir);
    }
    open_turn_free(t);
}

static void wire_free(void *arg)
{
    wire *w = arg;
    while (w->turns) {
        open_turn *t = w->turns;
        w->turns = t->next;
        open_turn_free(t);
    }
    pthread_mutex_destroy(&w->mu);
    free(w);
}

int cdsh_tavern_wire_register(cdsh_plugin_ctx *ctx, cdsh_tavern_service *svc, cdsh_error *err)
{
    wire *w = calloc(1, sizeof *w);
    if (!w)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    w->svc = svc;
    pthread_mutex_init(&w->mu, NULL);
    int rc = cdsh_ctx_adopt(ctx, (cdsh_disposer_t){wire_free, w}, err);
    if (rc < 0)
        return rc;
    cdsh_prompt_segment_def seg = {.id = CDSH_TAVERN_STANDING_SEGMENT,
                                   .order = CDSH_TAVERN_STANDING_ORDER,
                                   .render = standing_render,
                                   .ud = w};
    cdsh_prompt_provider_def prov = {
        .name = CDSH_TAVERN_TURN_CONTEXT, .context = turn_context, .sampling = sampling, .ud = w};
    if ((rc = cdsh_ctx_on(ctx, "agent/turn", on_turn, w, err)) < 0 ||
        (rc = cdsh_prompt_ctx_register(ctx, &seg, err)) < 0 ||
        (rc = cdsh_prompt_ctx_provide(ctx, &prov, err)) < 0)
        return rc;
    return 0;
}
