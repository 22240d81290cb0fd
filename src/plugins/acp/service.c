/* service.c — the engine pool (one process per engine, idle disposal),
 * live cdsh-session ↔ ACP-session bindings, turns and their results.
 * The wire protocol is proto/acp/conn.c; the files are state.c. */
#include "plugins/acp/service.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/redact.h"
#include "plugins/acp/engine.h"
#include "plugins/acp/state.h"
#include "proto/acp/classify.h"

typedef struct live_session live_session;

typedef struct pool_engine {
    char *id;
    char *pool_key; /* the row's poolKey: processes started differently are not shared */
    json_t *row;
    cdsh_acp_conn *conn;
    int busy;           /* operations in flight using conn */
    int64_t idle_since; /* mono ms when the last session left; 0 while used */
    struct pool_engine *next;
} pool_engine;

struct live_session {
    char *cdsh_id;
    char *acp_id;
    pool_engine *engine;
    bool dead; /* released: kept until the engine's process goes */
    bool prompting;
    /* Opened fresh although the binding had an ACP session (load/resume
     * failed) or is a fork that got none: the agent lacks the context until
     * a prompt carries it. Cleared by the first finished prompt. */
    bool context_lost;
    const cdsh_acp_turn_sink *sink; /* set for the duration of a prompt / open */
    int callbacks;                  /* sink calls in flight (session_done waits for 0) */
    cdsh_cancel *turn_cancel;       /* the running turn's token (service_cancel fires it) */
    cdsh_acp_service *svc;
    live_session *next;
};

typedef struct claim {
    char *cdsh_id;
    struct claim *next;
} claim;

struct cdsh_acp_service {
    pthread_mutex_t mu;
    claim *claims;            /* cdsh sessions being opened or prompted (one operation each) */
    pthread_mutex_t spawn_mu; /* serialises spawns; taken before mu */
    pthread_cond_t cv;
    pthread_t reaper;
    bool stop;
    pool_engine *engines;
    live_session *sessions;
    bool no_fs, no_terminal, record;
    json_t *mcp_servers;
    cdsh_approvals *approvals;
    cdsh_tools *approvals_of; /* else the broker installed on these tools */
    cdsh_acp_wait_fn on_wait;
    void *wait_ud;
    int64_t wait_notice_ms;
    cdsh_cancel *cancel;      /* borrowed (opts.cancel): ends waiting handshakes */
    const cdsh_home *home;    /* borrowed: where the engine and session state lives */
};

/* ---- sink trampolines (dispatcher thread) ---------------------------------- */

/* The caller's sink, counted in flight so that the turn cannot return (and
 * its caller free the sink) while a late update is still being delivered. */
static const cdsh_acp_turn_sink *sink_enter(live_session *ls)
{
    pthread_mutex_lock(&ls->svc->mu);
    const cdsh_acp_turn_sink *sink = ls->sink;
    if (sink)
        ls->callbacks++;
    pthread_mutex_unlock(&ls->svc->mu);
    return sink;
}

static void sink_leave(live_session *ls, const cdsh_acp_turn_sink *sink)
{
    if (!sink)
        return;
    pthread_mutex_lock(&ls->svc->mu);
    ls->callbacks--;
    pthread_cond_broadcast(&ls->svc->cv);
    pthread_mutex_unlock(&ls->svc->mu);
}

static void tramp_update(void *ud, cdsh_acp_update_kind kind, const char *kind_name,
                         const json_t *update)
{
    live_session *ls = ud;
    const cdsh_acp_turn_sink *sink = sink_enter(ls);
    /* Updates outside a turn (or an open) are not bridged (digest §4.5). */
    if (sink && sink->on_update)
        sink->on_update(sink->ud, ls->cdsh_id, kind, kind_name, update);
    sink_leave(ls, sink);
}

/* The agent's request as a request to the person: its own options and
 * words, never cdsh's (digest §4.7 for the title). */
static char *permission_ask(cdsh_approvals *ap, const char *cdsh_id, const json_t *params,
                            cdsh_cancel *cancel)
{
    const json_t *tc = json_object_get(params, "toolCall");
    const char *title = json_string_value(json_object_get(tc, "title"));
    const char *kind = json_string_value(json_object_get(tc, "kind"));
    char fallback[160];
    snprintf(fallback, sizeof fallback, "acp:%s",
             json_string_value(json_object_get(tc, "toolCallId"))
                 ? json_string_value(json_object_get(tc, "toolCallId"))
                 : "?");
    const json_t *raw = json_object_get(tc, "rawInput");
    char *desc = raw ? cdsh_json_dump_compact_dup(raw) : NULL;
    char *option = cdsh_approvals_ask(ap, cdsh_id, "acp",
                                      title  ? title
                                      : kind ? kind
                                             : fallback,
                                      desc, NULL, json_object_get(params, "options"), cancel, NULL);
    free(desc);
    return option;
}

static char *tramp_permission(void *ud, const json_t *params, cdsh_cancel *cancel)
{
    live_session *ls = ud;
    const cdsh_acp_turn_sink *sink = sink_enter(ls);
    char *option = NULL; /* nobody can answer: fail closed */
    cdsh_approvals *ap = ls->svc->approvals ? ls->svc->approvals
                                            : cdsh_approvals_installed(ls->svc->approvals_of);
    if (sink && ap)
        option = permission_ask(ap, ls->cdsh_id, params, cancel);
    sink_leave(ls, sink);
    return option;
}

json_t *cdsh_acp_cdsh_mcp_server_dup(const char *cdsh_path, const char *tools_glob)
{
    char self[4096];
    if (!cdsh_path) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
            return NULL;
        self[n] = '\0';
        cdsh_path = self;
    }
    json_t *args =
        tools_glob ? json_pack("[s,s,s]", "mcp", "--tools", tools_glob) : json_pack("[s]", "mcp");
    return json_pack("{s:s,s:s,s:o,s:[]}", "name", "cdsh", "command", cdsh_path, "args", args,
                     "env");
}

char *cdsh_acp_permission_option_dup(const json_t *params, cdsh_approval_outcome outcome)
{
    return cdsh_approvals_option_for_dup(params, outcome);
}

/* ---- pool ---------------------------------------------------------------------- */

static void engine_free(pool_engine *e)
{
    cdsh_acp_conn_free(e->conn);
    json_decref(e->row);
    free(e->id);
    free(e->pool_key);
    free(e);
}

/* Unlinks and frees the released sessions of an engine. Caller holds mu. */
static void drop_sessions_of(cdsh_acp_service *svc, pool_engine *e, bool all)
{
    for (live_session **pp = &svc->sessions; *pp;) {
        live_session *s = *pp;
        if (s->engine == e && (all || s->dead)) {
            *pp = s->next;
            free(s->cdsh_id);
            free(s->acp_id);
            free(s);
        } else {
            pp = &s->next;
        }
    }
}

/* Disposes an unlinked engine (svc->mu not held): the process and its
 * dispatcher go first, so no update can still reach a session freed after. */
static void engine_dispose(cdsh_acp_service *svc, pool_engine *e)
{
    cdsh_acp_conn_free(e->conn);
    e->conn = NULL;
    pthread_mutex_lock(&svc->mu);
    drop_sessions_of(svc, e, true);
    pthread_mutex_unlock(&svc->mu);
    engine_free(e);
}

static size_t live_count(cdsh_acp_service *svc, pool_engine *e)
{
    size_t n = 0;
    for (live_session *s = svc->sessions; s; s = s->next)
        if (s->engine == e && !s->dead)
            n++;
    return n;
}

static void *reaper_main(void *arg)
{
    cdsh_acp_service *svc = arg;
    pthread_mutex_lock(&svc->mu);
    while (!svc->stop) {
        struct timespec ts;
        cdsh_clock_deadline(CLOCK_REALTIME, 100, &ts);
        pthread_cond_timedwait(&svc->cv, &svc->mu, &ts);
        if (svc->stop)
            break;
        int64_t now = cdsh_clock_mono_ms();
        for (pool_engine **pp = &svc->engines; *pp;) {
            pool_engine *e = *pp;
            int64_t idle = json_integer_value(json_object_get(e->row, "idleDisposeMs"));
            bool crashed = e->conn && cdsh_acp_conn_is_closed(e->conn);
            bool idle_out = e->idle_since > 0 && now - e->idle_since >= idle;
            if (e->busy == 0 && (idle_out || crashed) && (crashed || live_count(svc, e) == 0)) {
                *pp = e->next;
                pthread_mutex_unlock(&svc->mu);
                cdsh_log_write(CDSH_LOG_INFO, "acp", "engine %s: process %s", e->id,
                               crashed ? "exited; disposed" : "idle; disposed");
                engine_dispose(svc, e); /* outside the lock: may wait the dispose grace */
                pthread_mutex_lock(&svc->mu);
                pp = &svc->engines; /* the list may have changed */
                continue;
            }
            pp = &e->next;
        }
    }
    pthread_mutex_unlock(&svc->mu);
    return NULL;
}

cdsh_acp_service *cdsh_acp_service_new(const cdsh_home *home, const cdsh_acp_service_opts *opts,
                                       cdsh_error *err)
{
    cdsh_acp_service *svc = calloc(1, sizeof *svc);
    if (!svc) {
        cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        return NULL;
    }
    pthread_mutex_init(&svc->mu, NULL);
    pthread_mutex_init(&svc->spawn_mu, NULL);
    pthread_cond_init(&svc->cv, NULL);
    svc->home = home;
    if (opts) {
        svc->no_fs = opts->no_fs;
        svc->no_terminal = opts->no_terminal;
        svc->record = opts->record;
        svc->approvals = opts->approvals;
        svc->approvals_of = opts->approvals_of;
        svc->on_wait = opts->on_wait;
        svc->wait_ud = opts->wait_ud;
        svc->wait_notice_ms = opts->wait_notice_ms;
        svc->cancel = opts->cancel;
        svc->mcp_servers =
            json_is_array(opts->mcp_servers) ? json_deep_copy(opts->mcp_servers) : NULL;
    }
    if (pthread_create(&svc->reaper, NULL, reaper_main, svc) != 0) {
        cdsh_error_set(err, CDSH_EIO, "IO_ERROR", "cannot start the engine reaper thread");
        pthread_mutex_destroy(&svc->mu);
        pthread_mutex_destroy(&svc->spawn_mu);
        pthread_cond_destroy(&svc->cv);
        json_decref(svc->mcp_servers);
        free(svc);
        return NULL;
    }
    return svc;
}

const cdsh_home *cdsh_acp_service_home(const cdsh_acp_service *svc)
{
    return svc ? svc->home : NULL;
}

void cdsh_acp_service_free(cdsh_acp_service *svc)
{
    if (!svc)
        return;
    pthread_mutex_lock(&svc->mu);
    svc->stop = true;
    pthread_cond_broadcast(&svc->cv);
    pthread_mutex_unlock(&svc->mu);
    pthread_join(svc->reaper, NULL);
    while (svc->engines) {
        pool_engine *e = svc->engines;
        svc->engines = e->next;
        engine_dispose(svc, e);
    }
    while (svc->claims) {
        claim *c = svc->claims;
        svc->claims = c->next;
        free(c->cdsh_id);
        free(c);
    }
    json_decref(svc->mcp_servers);
    pthread_mutex_destroy(&svc->mu);
    pthread_mutex_destroy(&svc->spawn_mu);
    pthread_cond_destroy(&svc->cv);
    free(svc);
}

size_t cdsh_acp_service_process_count(cdsh_acp_service *svc)
{
    size_t n = 0;
    if (!svc)
        return 0;
    pthread_mutex_lock(&svc->mu);
    for (pool_engine *e = svc->engines; e; e = e->next)
        n++;
    pthread_mutex_unlock(&svc->mu);
    return n;
}

static void engine_put(cdsh_acp_service *svc, pool_engine *e)
{
    pthread_mutex_lock(&svc->mu);
    e->busy--;
    if (e->busy == 0 && live_count(svc, e) == 0 && e->idle_since == 0)
        e->idle_since = cdsh_clock_mono_ms();
    pthread_cond_broadcast(&svc->cv);
    pthread_mutex_unlock(&svc->mu);
}

/* Runtime health of an engine after a spawn + initialize (runtime.json;
 * never the user's engines.json). Failing to record it is not an error. */
static void record_health(cdsh_acp_service *svc, const json_t *row, int rc, cdsh_acp_conn *conn,
                          const cdsh_error *err)
{
    const char *id = json_string_value(json_object_get(row, "id"));
    char iso[CDSH_ISO8601_MAX];
    cdsh_clock_format_iso8601(cdsh_clock_wall_ms(), iso, sizeof iso);
    json_t *h = json_pack("{s:s,s:s,s:o,s:o}", "lastCheckAt", iso, "status",
                          rc == 0 ? "ok" : "failed", "latencyMs",
                          rc == 0 ? json_integer(cdsh_acp_conn_init_latency_ms(conn)) : json_null(),
                          "error", rc == 0 || !err ? json_null() : json_string(err->message));
    /* The error may quote the agent's stderr echoing what cdsh handed it. */
    char **secrets = cdsh_acp_engine_secrets_dup(row);
    json_t *clean = secrets ? cdsh_redact_json_literals_dup(h, (const char *const *)secrets) : NULL;
    cdsh_acp_engine_strv_free(secrets);
    if (clean)
        cdsh_acp_state_runtime_record(svc->home, id, NULL, clean, NULL);
    json_decref(clean);
    json_decref(h);
}

/* The running process of an engine (spawned if needed), marked busy;
 * release with engine_put. cwd is where a new process starts. */
static int engine_get(cdsh_acp_service *svc, const json_t *row, const char *cwd, pool_engine **out,
                      cdsh_error *err)
{
    const char *id = json_string_value(json_object_get(row, "id"));
    const char *key = json_string_value(json_object_get(row, "poolKey"));
    if (!key)
        key = id;
    pthread_mutex_lock(&svc->spawn_mu);
    pthread_mutex_lock(&svc->mu);
    for (pool_engine *e = svc->engines; e; e = e->next)
        if (strcmp(e->pool_key, key) == 0 && !cdsh_acp_conn_is_closed(e->conn)) {
            e->busy++;
            e->idle_since = 0;
            pthread_mutex_unlock(&svc->mu);
            pthread_mutex_unlock(&svc->spawn_mu);
            *out = e;
            return 0;
        }
    pthread_mutex_unlock(&svc->mu);
    char *resolved = NULL;
    char **argv = NULL, **env = NULL;
    pool_engine *e = NULL;
    int rc = cdsh_acp_engine_resolve(row, &resolved, NULL, err);
    if (rc < 0)
        goto done;
    argv = cdsh_acp_engine_argv_dup(row, resolved);
    env = cdsh_acp_engine_env_dup(row);
    e = calloc(1, sizeof *e);
    if (!argv || !env || !e) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto done;
    }
    const char *fixed = json_string_value(json_object_get(row, "cwd"));
    bool use_fixed =
        fixed && strcmp(json_string_value(json_object_get(row, "cwdPolicy")), "fixed") == 0;
    cdsh_acp_conn_opts co = {
        .name = id,
        .argv = (const char *const *)argv,
        .env_set = (const char *const *)env,
        .cwd = use_fixed ? fixed : cwd,
        .init_timeout_ms = cdsh_acp_engine_init_budget_ms(row, NULL),
        .request_timeout_ms = cdsh_acp_engine_prompt_timeout_ms(row) > 0
                                  ? cdsh_acp_engine_prompt_timeout_ms(row)
                                  : 300000,
        .dispose_grace_ms = json_integer_value(json_object_get(row, "disposeGraceMs")),
        .fs_read = !svc->no_fs,
        .fs_write = !svc->no_fs,
        .terminal = !svc->no_terminal,
        .record = svc->record,
        .on_wait = svc->on_wait,
        .wait_ud = svc->wait_ud,
        .wait_notice_ms = svc->wait_notice_ms,
        .cancel = svc->cancel,
    };
    rc = cdsh_acp_conn_open(&co, &e->conn, err);
    if (rc != CDSH_ECANCELED) /* a start we gave up on says nothing of the engine */
        record_health(svc, row, rc, e->conn, err);
    if (rc < 0)
        goto done;
    cdsh_acp_state_runtime_warm(svc->home, id, resolved, NULL); /* no longer a first start */
    e->id = strdup(id);
    e->pool_key = strdup(key);
    if (!e->id || !e->pool_key) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        cdsh_acp_conn_free(e->conn);
        e->conn = NULL;
        goto done;
    }
    e->row = json_deep_copy(row);
    e->busy = 1;
    pool_engine *stale = NULL;
    pthread_mutex_lock(&svc->mu);
    /* Unlink a crashed predecessor (its process is gone); disposed below,
     * outside the lock, because its dispatcher may be waiting for it. */
    for (pool_engine **pp = &svc->engines; *pp;)
        if (strcmp((*pp)->pool_key, key) == 0 && (*pp)->busy == 0) {
            pool_engine *old = *pp;
            *pp = old->next;
            old->next = stale;
            stale = old;
        } else {
            pp = &(*pp)->next;
        }
    e->next = svc->engines;
    svc->engines = e;
    pthread_mutex_unlock(&svc->mu);
    while (stale) {
        pool_engine *next = stale->next;
        engine_dispose(svc, stale);
        stale = next;
    }
    *out = e;
    e = NULL;
done:
    if (e)
        engine_free(e);
    cdsh_acp_engine_strv_free(argv);
    cdsh_acp_engine_strv_free(env);
    free(resolved);
    pthread_mutex_unlock(&svc->spawn_mu);
    return rc;
}

/* ---- sessions ---------------------------------------------------------------------- */

int cdsh_acp_service_bind(cdsh_acp_service *svc, const char *cdsh_session_id, const char *engine_id,
                          const char *cwd, cdsh_error *err)
{
    if (!svc || !cdsh_session_id || !engine_id)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "bind needs a session and engine");
    if (cwd && cwd[0] != '/')
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "cwd must be absolute: %s", cwd);
    json_t *row = NULL;
    int rc = cdsh_acp_state_engine_find(svc->home, engine_id, &row, err);
    json_decref(row);
    if (rc < 0)
        return rc;
    return cdsh_acp_state_session_bind(svc->home, cdsh_session_id, engine_id, cwd, err);
}

static live_session *live_find(cdsh_acp_service *svc, const char *cdsh_id)
{
    for (live_session *s = svc->sessions; s; s = s->next)
        if (!s->dead && strcmp(s->cdsh_id, cdsh_id) == 0 &&
            !cdsh_acp_conn_is_closed(s->engine->conn))
            return s;
    return NULL;
}

static json_t *mcp_for(cdsh_acp_service *svc, const json_t *row, cdsh_acp_conn *conn)
{
    json_t *mcp = json_object_get(row, "mcp");
    json_t *src = json_is_array(mcp) ? mcp
                  : (json_is_string(mcp) && strcmp(json_string_value(mcp), "inherit") == 0)
                      ? svc->mcp_servers
                      : NULL;
    json_t *out = json_array();
    const json_t *caps =
        json_object_get(json_object_get(cdsh_acp_conn_init_result_get(conn), "agentCapabilities"),
                        "mcpCapabilities");
    size_t i;
    json_t *s;
    /* Only what the agent's mcpCapabilities allow: none without them (DSH
     * refuses any server with -32602), stdio unless "stdio":false, http /
     * sse only when advertised true. */
    if (!json_is_object(caps))
        return out;
    json_array_foreach(src, i, s) {
        const char *type = json_string_value(json_object_get(s, "type"));
        json_t *flag = json_object_get(caps, type ? type : "stdio");
        if (type ? json_is_true(flag) : !json_is_false(flag))
            json_array_append(out, s);
    }
    return out;
}

/* Opens the ACP session of a binding entry: session/load, then
 * session/resume of its previous id where the agent offers them, else a
 * new session (then *context_lost when there was a context to carry:
 * a previous id or a fork). *opened names the way that was tried last. */
static int acp_session_open(cdsh_acp_conn *conn, const json_t *entry, const char *cwd,
                            json_t *mcp, const cdsh_acp_session_handlers *h, char **sid,
                            const char **opened, bool *context_lost, json_t *warnings,
                            cdsh_error *err)
{
    const char *prev = json_string_value(json_object_get(entry, "acpSessionId"));
    int rc = -1;
    if (prev && cdsh_acp_conn_supports(conn, "session/load")) {
        cdsh_error le = {0};
        rc = cdsh_acp_conn_session_open(conn, CDSH_ACP_OPEN_LOAD, prev, cwd, mcp, h, sid, &le);
        *opened = "load";
        if (rc < 0)
            json_array_append_new(warnings, json_sprintf("session/load failed: %s", le.message));
    }
    if (rc < 0 && prev && cdsh_acp_conn_supports(conn, "session/resume")) {
        cdsh_error le = {0};
        rc = cdsh_acp_conn_session_open(conn, CDSH_ACP_OPEN_RESUME, prev, cwd, mcp, h, sid, &le);
        *opened = "resume";
        if (rc < 0)
            json_array_append_new(warnings, json_sprintf("session/resume failed: %s", le.message));
    }
    const char *forked = json_string_value(json_object_get(entry, "forkedFrom"));
    if (rc < 0) {
        if (prev)
            json_array_append_new(warnings,
                                  json_string("engine context not restored: a fresh ACP session "
                                              "was opened"));
        else if (forked)
            json_array_append_new(warnings,
                                  json_sprintf("engine context not carried over from %s: a fresh "
                                               "ACP session was opened for this fork",
                                               forked));
        rc = cdsh_acp_conn_session_open(conn, CDSH_ACP_OPEN_NEW, NULL, cwd, mcp, h, sid, err);
        *opened = "new";
        *context_lost = prev || forked;
    }
    return rc;
}

/* The row's initialConfigOptions on a freshly opened session; a refused
 * option is a warning. */
static void initial_config_apply(cdsh_acp_conn *conn, const char *sid, const json_t *row,
                                 json_t *warnings)
{
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(row, "initialConfigOptions"), i, o) {
        cdsh_error ce = {0};
        const char *cid = json_string_value(json_object_get(o, "configId"));
        const char *val = json_string_value(json_object_get(o, "value"));
        if (cdsh_acp_conn_set_config(conn, sid, cid, val, NULL, &ce) < 0)
            json_array_append_new(
                warnings,
                json_sprintf("initial config option %s=%s not applied: %s", cid, val, ce.message));
    }
}

/* Opens (or finds) the live ACP session of a bound cdsh session. Caller
 * gets the engine busy-marked; *opened says how. */
static int session_ensure_claimed(cdsh_acp_service *svc, const char *cdsh_id,
                                  const cdsh_acp_turn_sink *sink, live_session **out,
                                  const char **opened, json_t *warnings, json_t **row_out,
                                  cdsh_error *err)
{
    json_t *entry = NULL, *row = NULL;
    int rc = cdsh_acp_state_session_get(svc->home, cdsh_id, &entry, err);
    if (rc < 0)
        return rc;
    const char *engine_id = json_string_value(json_object_get(entry, "engineId"));
    rc = cdsh_acp_state_engine_find(svc->home, engine_id, &row, err);
    if (rc < 0)
        goto done;
    if (!json_is_true(json_object_get(row, "enabled"))) {
        rc = cdsh_error_set(err, CDSH_EPERM, "ENGINE_DISABLED",
                            "engine \"%s\" is disabled; enable it or bind the session to another "
                            "engine before its first message",
                            engine_id);
        goto done;
    }
    pthread_mutex_lock(&svc->mu);
    live_session *ls = live_find(svc, cdsh_id);
    if (ls && ls->prompting) {
        pthread_mutex_unlock(&svc->mu);
        rc = cdsh_error_set(err, CDSH_EBUSY, "TURN_RUNNING",
                            "this session already has a turn running");
        goto done;
    }
    if (ls) {
        ls->engine->busy++;
        ls->engine->idle_since = 0;
        ls->sink = sink;
        pthread_mutex_unlock(&svc->mu);
        *out = ls;
        *opened = "live";
        goto done;
    }
    pthread_mutex_unlock(&svc->mu);
    const char *cwd = json_string_value(json_object_get(entry, "cwd"));
    char here[4096];
    if (!cwd || cwd[0] != '/')
        cwd = getcwd(here, sizeof here) ? here : "/";
    pool_engine *e = NULL;
    rc = engine_get(svc, row, cwd, &e, err);
    if (rc < 0)
        goto done;
    ls = calloc(1, sizeof *ls);
    if (!ls || !(ls->cdsh_id = strdup(cdsh_id))) {
        free(ls);
        engine_put(svc, e);
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto done;
    }
    ls->engine = e;
    ls->svc = svc;
    ls->sink = sink;
    cdsh_acp_session_handlers h = {tramp_update, tramp_permission, ls};
    json_t *mcp = mcp_for(svc, row, e->conn);
    char *sid = NULL;
    rc = acp_session_open(e->conn, entry, cwd, mcp, &h, &sid, opened, &ls->context_lost, warnings,
                          err);
    json_decref(mcp);
    if (rc < 0) {
        free(ls->cdsh_id);
        free(ls);
        engine_put(svc, e);
        goto done;
    }
    ls->acp_id = sid;
    pthread_mutex_lock(&svc->mu);
    ls->next = svc->sessions;
    svc->sessions = ls;
    pthread_mutex_unlock(&svc->mu);
    cdsh_error se = {0};
    if (cdsh_acp_state_session_set_acp(svc->home, cdsh_id, sid, &se) < 0)
        json_array_append_new(warnings, json_sprintf("sessions.json not updated: %s", se.message));
    initial_config_apply(e->conn, sid, row, warnings);
    *out = ls;
done:
    if (rc == 0 && row_out)
        *row_out = json_incref(row);
    json_decref(row);
    json_decref(entry);
    return rc;
}

/* Claims a cdsh session for one open/prompt at a time: two concurrent
 * first messages must not open two ACP sessions for it. */
static bool claim_take(cdsh_acp_service *svc, const char *cdsh_id)
{
    bool ok = true;
    pthread_mutex_lock(&svc->mu);
    for (claim *c = svc->claims; c; c = c->next)
        if (strcmp(c->cdsh_id, cdsh_id) == 0)
            ok = false;
    claim *c = ok ? calloc(1, sizeof *c) : NULL;
    if (c && (c->cdsh_id = strdup(cdsh_id))) {
        c->next = svc->claims;
        svc->claims = c;
    } else if (c) {
        free(c);
        c = NULL;
    }
    pthread_mutex_unlock(&svc->mu);
    return c != NULL;
}

static void claim_drop(cdsh_acp_service *svc, const char *cdsh_id)
{
    pthread_mutex_lock(&svc->mu);
    for (claim **pp = &svc->claims; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->cdsh_id, cdsh_id) == 0) {
            claim *c = *pp;
            *pp = c->next;
            free(c->cdsh_id);
            free(c);
            break;
        }
    pthread_mutex_unlock(&svc->mu);
}

static int session_ensure(cdsh_acp_service *svc, const char *cdsh_id,
                          const cdsh_acp_turn_sink *sink, live_session **out, const char **opened,
                          json_t *warnings, json_t **row_out, cdsh_error *err)
{
    if (!claim_take(svc, cdsh_id))
        return cdsh_error_set(err, CDSH_EBUSY, "TURN_RUNNING",
                              "this session already has a turn running");
    int rc = session_ensure_claimed(svc, cdsh_id, sink, out, opened, warnings, row_out, err);
    if (rc < 0)
        claim_drop(svc, cdsh_id);
    return rc;
}

/* Ends an operation begun by session_ensure: the sink is detached (after
 * in-flight calls), the engine released and the claim dropped. */
static void session_done(cdsh_acp_service *svc, live_session *ls)
{
    pthread_mutex_lock(&svc->mu);
    ls->sink = NULL;
    while (ls->callbacks > 0)
        pthread_cond_wait(&svc->cv, &svc->mu);
    pthread_mutex_unlock(&svc->mu);
    /* Before engine_put: once the engine is idle the reaper may free ls. */
    claim_drop(svc, ls->cdsh_id);
    engine_put(svc, ls->engine);
}

int cdsh_acp_service_open(cdsh_acp_service *svc, const char *cdsh_session_id,
                          const cdsh_acp_turn_sink *sink, json_t **warnings, cdsh_error *err)
{
    if (!svc || !cdsh_session_id)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "open needs a session");
    json_t *w = json_array();
    live_session *ls = NULL;
    const char *opened = NULL;
    int rc = session_ensure(svc, cdsh_session_id, sink, &ls, &opened, w, NULL, err);
    if (rc == 0)
        session_done(svc, ls);
    if (warnings)
        *warnings = w;
    else
        json_decref(w);
    return rc;
}

static json_t *fail_result(const char *code, const char *message, const char *engine,
                           json_t *warnings)
{
    return json_pack("{s:b,s:s,s:s,s:s?,s:O}", "ok", 0, "code", code, "message", message,
                     "engineId", engine, "warnings", warnings);
}

bool cdsh_acp_service_context_lost(cdsh_acp_service *svc, const char *cdsh_session_id)
{
    if (!svc || !cdsh_session_id)
        return false;
    pthread_mutex_lock(&svc->mu);
    live_session *ls = live_find(svc, cdsh_session_id);
    bool lost = ls && ls->context_lost;
    pthread_mutex_unlock(&svc->mu);
    return lost;
}

json_t *cdsh_acp_service_prompt(cdsh_acp_service *svc, const char *cdsh_session_id,
                                const char *text, const cdsh_acp_turn_sink *sink,
                                cdsh_cancel *cancel)
{
    json_t *blocks = text ? json_pack("[{s:s,s:s}]", "type", "text", "text", text) : NULL;
    json_t *res = cdsh_acp_service_prompt_blocks(svc, cdsh_session_id, blocks, sink, cancel);
    json_decref(blocks);
    return res;
}

json_t *cdsh_acp_service_prompt_blocks(cdsh_acp_service *svc, const char *cdsh_session_id,
                                       const json_t *blocks, const cdsh_acp_turn_sink *sink,
                                       cdsh_cancel *cancel)
{
    json_t *warnings = json_array();
    json_t *row = NULL, *result = NULL;
    cdsh_error err = {0};
    live_session *ls = NULL;
    const char *opened = NULL;
    if (!svc || !cdsh_session_id || !json_array_size(blocks)) {
        result = fail_result("INVALID_ARGS", "prompt needs a session id and text", NULL, warnings);
        goto out;
    }
    int rc = session_ensure(svc, cdsh_session_id, sink, &ls, &opened, warnings, &row, &err);
    if (rc < 0) {
        result = fail_result(err.code[0] ? err.code : "UNKNOWN", err.message, NULL, warnings);
        goto out;
    }
    /* A copy: after session_done the engine (and its id) may be freed. */
    char engine_id[128];
    snprintf(engine_id, sizeof engine_id, "%s", ls->engine->id);
    pthread_mutex_lock(&svc->mu);
    bool busy = ls->prompting;
    ls->prompting = true;
    pthread_mutex_unlock(&svc->mu);
    if (busy) {
        session_done(svc, ls);
        result = fail_result("TURN_RUNNING", "this session already has a turn running", engine_id,
                             warnings);
        goto out;
    }
    bool locked_now = false;
    if (cdsh_acp_state_session_mark_message(svc->home, cdsh_session_id, &locked_now, &err) < 0) {
        pthread_mutex_lock(&svc->mu);
        ls->prompting = false;
        pthread_mutex_unlock(&svc->mu);
        session_done(svc, ls);
        result = fail_result(err.code, err.message, engine_id, warnings);
        goto out;
    }
    json_t *prompt = json_deep_copy(blocks);
    cdsh_acp_prompt_opts po = {
        .idle_timeout_ms = cdsh_acp_engine_idle_timeout_ms(row),
        .total_timeout_ms = cdsh_acp_engine_prompt_timeout_ms(row),
        .cancel_grace_ms = json_integer_value(json_object_get(row, "cancelGraceMs")),
    };
    cdsh_acp_prompt_result pr = {0};
    /* The turn's own token: a cancel that arrives before the request is on
     * the wire still ends the turn (the connection polls it). */
    cdsh_cancel *turn = cdsh_cancel_new(cancel);
    pthread_mutex_lock(&svc->mu);
    ls->turn_cancel = turn;
    pthread_mutex_unlock(&svc->mu);
    rc = cdsh_acp_conn_prompt(ls->engine->conn, ls->acp_id, prompt, &po, turn ? turn : cancel, &pr,
                              &err);
    pthread_mutex_lock(&svc->mu);
    ls->turn_cancel = NULL;
    pthread_mutex_unlock(&svc->mu);
    cdsh_cancel_free(turn);
    json_decref(prompt);
    if (rc == 0) {
        pthread_mutex_lock(&svc->mu);
        ls->context_lost = false; /* the agent has this turn now */
        pthread_mutex_unlock(&svc->mu);
        result = json_pack("{s:b,s:s,s:s,s:s,s:s,s:I,s:I,s:O}", "ok", 1, "stopReason",
                           pr.stop_reason, "engineId", engine_id, "acpSessionId", ls->acp_id,
                           "opened", opened, "latencyMs", (json_int_t)pr.latency_ms, "updates",
                           (json_int_t)pr.updates, "warnings", warnings);
        if (result && pr.response)
            json_object_set(result, "response", pr.response);
    } else {
        const char *cls = cdsh_acp_classify_error(rc, err.code, err.message);
        if (rc == CDSH_ECANCELED)
            cls = "CANCELLED";
        result = fail_result(cls, err.message, engine_id, warnings);
        /* A first message the engine failed does not tie the session to it:
         * the person may pick another engine (a cancelled one may have
         * done work, so it stays locked). */
        if (locked_now && rc != CDSH_ECANCELED)
            cdsh_acp_state_session_unlock(svc->home, cdsh_session_id, NULL);
        if (result && cdsh_acp_conn_is_closed(ls->engine->conn)) {
            char *tail = cdsh_acp_conn_stderr_tail_dup(ls->engine->conn);
            json_object_set_new(result, "stderrTail", json_string(tail ? tail : ""));
            free(tail);
        }
    }
    cdsh_acp_prompt_result_deinit(&pr);
    pthread_mutex_lock(&svc->mu);
    ls->prompting = false;
    pthread_mutex_unlock(&svc->mu);
    session_done(svc, ls);
    if (result && row && !json_is_true(json_object_get(result, "ok"))) {
        /* A failure quotes the agent (its stderr tail too), which may echo
         * what cdsh handed it; the result is stored in the session. */
        char **secrets = cdsh_acp_engine_secrets_dup(row);
        json_t *clean =
            secrets ? cdsh_redact_json_literals_dup(result, (const char *const *)secrets) : NULL;
        cdsh_acp_engine_strv_free(secrets);
        if (clean) {
            json_decref(result);
            result = clean;
        }
    }
out:
    json_decref(row);
    json_decref(warnings);
    return result;
}

int cdsh_acp_service_interrupt(cdsh_acp_service *svc, const char *cdsh_session_id, int sig,
                               cdsh_error *err)
{
    if (!svc || !cdsh_session_id)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "interrupt needs a session");
    pthread_mutex_lock(&svc->mu);
    live_session *ls = live_find(svc, cdsh_session_id);
    /* Under mu: the engine (and its process) cannot be disposed meanwhile. */
    int rc = ls ? cdsh_acp_conn_signal(ls->engine->conn, sig, err)
                : cdsh_error_set(err, CDSH_ENOTFOUND, "NOT_LIVE",
                                 "session \"%s\" has no live engine process", cdsh_session_id);
    pthread_mutex_unlock(&svc->mu);
    return rc;
}

int cdsh_acp_service_cancel(cdsh_acp_service *svc, const char *cdsh_session_id)
{
    if (!svc || !cdsh_session_id)
        return CDSH_EINVAL;
    pthread_mutex_lock(&svc->mu);
    live_session *ls = live_find(svc, cdsh_session_id);
    bool running = ls && ls->prompting && ls->turn_cancel;
    if (running)
        cdsh_cancel_fire(ls->turn_cancel, "cancelled");
    pthread_mutex_unlock(&svc->mu);
    return running ? 0 : CDSH_ENOTFOUND;
}

/* The live session of a cdsh session with its engine marked busy (release
 * with engine_put), or NULL. */
static live_session *live_acquire(cdsh_acp_service *svc, const char *cdsh_session_id)
{
    pthread_mutex_lock(&svc->mu);
    live_session *ls = live_find(svc, cdsh_session_id);
    if (ls)
        ls->engine->busy++;
    pthread_mutex_unlock(&svc->mu);
    return ls;
}

json_t *cdsh_acp_service_config_dup(cdsh_acp_service *svc, const char *cdsh_session_id)
{
    if (!svc || !cdsh_session_id)
        return NULL;
    live_session *ls = live_acquire(svc, cdsh_session_id);
    if (!ls)
        return NULL;
    json_t *r = cdsh_acp_conn_session_config_dup(ls->engine->conn, ls->acp_id);
    engine_put(svc, ls->engine);
    return r;
}

int cdsh_acp_service_set_config(cdsh_acp_service *svc, const char *cdsh_session_id,
                                const char *config_id, const char *value, const char **via,
                                cdsh_error *err)
{
    if (!svc || !cdsh_session_id)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "set_config needs a session");
    live_session *ls = live_acquire(svc, cdsh_session_id);
    if (!ls)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "NOT_OPEN",
                              "session \"%s\" has no open ACP session", cdsh_session_id);
    int rc = cdsh_acp_conn_set_config(ls->engine->conn, ls->acp_id, config_id, value, via, err);
    engine_put(svc, ls->engine);
    return rc;
}

int cdsh_acp_service_release(cdsh_acp_service *svc, const char *cdsh_session_id, cdsh_error *err)
{
    if (!svc || !cdsh_session_id)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "release needs a session");
    pthread_mutex_lock(&svc->mu);
    live_session *ls = live_find(svc, cdsh_session_id);
    if (!ls || ls->prompting) {
        pthread_mutex_unlock(&svc->mu);
        return ls ? cdsh_error_set(err, CDSH_EBUSY, "TURN_RUNNING", "a turn is running")
                  : cdsh_error_set(err, CDSH_ENOTFOUND, "NOT_OPEN",
                                   "session \"%s\" has no open ACP session", cdsh_session_id);
    }
    ls->dead = true;
    pool_engine *e = ls->engine;
    e->busy++;
    char *acp = strdup(ls->acp_id);
    pthread_mutex_unlock(&svc->mu);
    int rc = cdsh_acp_conn_session_release(e->conn, acp, true, err);
    free(acp);
    engine_put(svc, e);
    return rc;
}

/* ---- the agent's own sessions, forks ------------------------------------------- */

/* The engine's running process for an operation outside a turn: the one the
 * live session cdsh_id uses when there is one (so the agent has its context
 * in memory), else any process of the engine, spawned if needed. */
static int engine_for(cdsh_acp_service *svc, const json_t *row, const char *cdsh_id,
                      const char *cwd, pool_engine **out, cdsh_error *err)
{
    live_session *ls = cdsh_id ? live_acquire(svc, cdsh_id) : NULL;
    if (ls) {
        *out = ls->engine;
        return 0;
    }
    if (!json_is_true(json_object_get(row, "enabled")))
        return cdsh_error_set(err, CDSH_EPERM, "ENGINE_DISABLED", "engine \"%s\" is disabled",
                              json_string_value(json_object_get(row, "id")));
    char here[4096];
    if (!cwd || cwd[0] != '/')
        cwd = getcwd(here, sizeof here) ? here : "/";
    return engine_get(svc, row, cwd, out, err);
}

int cdsh_acp_service_list_remote(cdsh_acp_service *svc, const char *engine_id, const char *cwd,
                                 json_t **out, cdsh_error *err)
{
    if (!svc || !engine_id || !out || (cwd && cwd[0] != '/'))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "listing needs an engine (and an absolute cwd if any)");
    json_t *row = NULL, *list = NULL, *bindings = NULL;
    pool_engine *e = NULL;
    bool more = false;
    int rc = cdsh_acp_state_engine_find(svc->home, engine_id, &row, err);
    if (rc == 0)
        rc = engine_for(svc, row, NULL, cwd, &e, err);
    if (rc == 0) {
        rc = cdsh_acp_conn_list_sessions(e->conn, cwd, 0, NULL, &list, &more, err);
        engine_put(svc, e);
    }
    if (rc == 0)
        rc = cdsh_acp_state_sessions_dup(svc->home, &bindings, err);
    if (rc < 0)
        goto done;
    size_t i;
    json_t *info;
    json_array_foreach(list, i, info) {
        const char *sid = json_string_value(json_object_get(info, "sessionId"));
        const char *bound = NULL, *k;
        json_t *b;
        json_object_foreach(bindings, k, b) {
            const char *acp = json_string_value(json_object_get(b, "acpSessionId"));
            /* A hand-edited entry may lack its engine: it binds nothing. */
            const char *eng = json_string_value(json_object_get(b, "engineId"));
            if (acp && eng && strcmp(acp, sid) == 0 && strcmp(eng, engine_id) == 0)
                bound = k;
        }
        json_object_set_new(info, "cdshSessionId", bound ? json_string(bound) : json_null());
    }
    *out = json_pack("{s:s,s:s?,s:O,s:b}", "engineId", engine_id, "cwd", cwd, "sessions", list,
                     "truncated", more);
    if (!*out)
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
done:
    json_decref(bindings);
    json_decref(list);
    json_decref(row);
    return rc;
}

/* Forks the ACP session prev of parent on the engine into a live session
 * of child (*acp_out owned). Every reason not to is a warning: the child
 * then opens a fresh ACP session on its first prompt. */
static void fork_remote(cdsh_acp_service *svc, const json_t *row, const char *parent,
                        const char *child, const char *prev, const char *cwd, json_t *warnings,
                        char **acp_out)
{
    static const char fresh[] = "the fork's first message starts a fresh ACP session, and the "
                                "conversation's transcript is sent with it (cdsh chat and the web "
                                "page; not `cdsh acp prompt`)";
    const char *engine_id = json_string_value(json_object_get(row, "id"));
    pool_engine *e = NULL;
    cdsh_error le = {0};
    if (engine_for(svc, row, parent, cwd, &e, &le) < 0) {
        json_array_append_new(warnings,
                              json_sprintf("engine %s: %s; %s", engine_id, le.message, fresh));
        return;
    }
    live_session *ls = NULL;
    if (!cdsh_acp_conn_supports(e->conn, "session/fork")) {
        json_array_append_new(
            warnings,
            json_sprintf("engine %s does not advertise session/fork: %s", engine_id, fresh));
        goto done;
    }
    ls = calloc(1, sizeof *ls);
    if (!ls || !(ls->cdsh_id = strdup(child))) {
        json_array_append_new(warnings, json_sprintf("out of memory: %s", fresh));
        goto done;
    }
    ls->engine = e;
    ls->svc = svc;
    cdsh_acp_session_handlers h = {tramp_update, tramp_permission, ls};
    json_t *mcp = mcp_for(svc, row, e->conn);
    int rc = cdsh_acp_conn_fork(e->conn, prev, cwd, mcp, &h, &ls->acp_id, &le);
    json_decref(mcp);
    if (rc < 0 || !(*acp_out = strdup(ls->acp_id))) {
        json_array_append_new(warnings, json_sprintf("session/fork failed: %s; %s",
                                                     rc < 0 ? le.message : "out of memory", fresh));
        if (rc == 0)
            cdsh_acp_conn_session_release(e->conn, ls->acp_id, true, NULL);
        goto done;
    }
    pthread_mutex_lock(&svc->mu);
    ls->next = svc->sessions;
    svc->sessions = ls;
    pthread_mutex_unlock(&svc->mu);
    ls = NULL;
done:
    if (ls) {
        free(ls->acp_id);
        free(ls->cdsh_id);
        free(ls);
    }
    engine_put(svc, e);
}

int cdsh_acp_service_fork(cdsh_acp_service *svc, const char *parent_id, const char *child_id,
                          bool whole, json_t *warnings, cdsh_error *err)
{
    if (!svc || !parent_id || !child_id || !json_is_array(warnings))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "fork needs a parent, a child and a warnings array");
    json_t *entry = NULL, *row = NULL;
    char *acp = NULL;
    int rc = cdsh_acp_state_session_get(svc->home, parent_id, &entry, err);
    if (rc < 0)
        return rc;
    const char *engine_id = json_string_value(json_object_get(entry, "engineId"));
    const char *prev = json_string_value(json_object_get(entry, "acpSessionId"));
    const char *cwd = json_string_value(json_object_get(entry, "cwd"));
    rc = cdsh_acp_state_engine_find(svc->home, engine_id, &row, err);
    if (rc < 0)
        goto done;
    if (prev && !whole)
        /* The agent forks its whole session: it cannot be cut at an earlier event. */
        json_array_append_new(warnings,
                              json_sprintf("forked before the parent's last event: engine %s "
                                           "cannot fork its session at that point, so the fork's "
                                           "first message starts a fresh ACP session",
                                           engine_id));
    else if (prev)
        fork_remote(svc, row, parent_id, child_id, prev, cwd, warnings, &acp);
    rc = cdsh_acp_state_session_fork(svc->home, parent_id, child_id, acp, err);
    if (rc < 0 && acp) {
        cdsh_error ignored = {0};
        cdsh_acp_service_release(svc, child_id, &ignored);
    }
done:
    free(acp);
    json_decref(row);
    json_decref(entry);
    return rc;
}
