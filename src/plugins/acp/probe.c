/* probe.c — one probe run and its evidence file. The protocol work is
 * proto/acp/conn.c; redaction is base/redact.c; nothing here is cached. */
#include "plugins/acp/probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/redact.h"
#include "plugins/acp/engine.h"
#include "plugins/acp/state.h"
#include "proto/acp/classify.h"
#include "proto/acp/conn.h"

typedef struct probe_ctx {
    json_t *by_type; /* update kind → count */
    json_t *text;    /* agent_message_chunk text, concatenated */
} probe_ctx;

static void probe_update(void *ud, cdsh_acp_update_kind kind, const char *kind_name,
                         const json_t *update)
{
    probe_ctx *p = ud;
    json_t *n = json_object_get(p->by_type, kind_name);
    json_object_set_new(p->by_type, kind_name, json_integer(n ? json_integer_value(n) + 1 : 1));
    const json_t *content = json_object_get(update, "content");
    if (kind == CDSH_ACP_UPDATE_AGENT_MESSAGE_CHUNK) {
        const char *t = json_string_value(json_object_get(content, "text"));
        if (t) {
            size_t a = json_string_length(p->text), b = strlen(t);
            char *buf = malloc(a + b + 1);
            if (buf) {
                memcpy(buf, json_string_value(p->text), a);
                memcpy(buf + a, t, b + 1);
                json_string_set(p->text, buf);
                free(buf);
            }
        }
    }
}

/* A probe never grants anything: unattended permission asks are cancelled. */
static char *probe_permission(void *ud, const json_t *params, cdsh_cancel *cancel)
{
    (void)ud;
    (void)params;
    (void)cancel;
    return NULL;
}

static const char *method_status(int rc, const cdsh_jsonrpc_remote_error *rerr, const cdsh_error *e,
                                 char *buf, size_t size)
{
    if (rc == 0)
        return "ok";
    if (rerr && rerr->message && rerr->code == CDSH_JSONRPC_METHOD_NOT_FOUND)
        return "method_not_found";
    snprintf(buf, size, "error: %s", e->message);
    return buf;
}

static void try_method(cdsh_acp_conn *c, json_t *methods, const char *method, json_t *params)
{
    char buf[CDSH_ERROR_MESSAGE_MAX + 16];
    cdsh_jsonrpc_remote_error rerr = {0};
    cdsh_error e = {0};
    int rc = cdsh_acp_conn_request(c, method, params, 30000, NULL, NULL, &rerr, &e);
    json_object_set_new(methods, method,
                        json_string(method_status(rc, &rerr, &e, buf, sizeof buf)));
    cdsh_jsonrpc_remote_error_clear(&rerr);
}

static json_t *capability_summary(const json_t *init, const json_t *session, const json_t *cb)
{
    const json_t *caps = json_object_get(init, "agentCapabilities");
    json_t *opts = json_object_get(session, "configOptions");
    json_t *modes = json_object_get(session, "modes");
    json_t *models = json_object_get(session, "models");
    return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:O}", "fs",
                     json_object_get(cb, "fs/read_text_file") ||
                             json_object_get(cb, "fs/write_text_file")
                         ? json_true()
                         : json_null(),
                     "terminal", json_object_get(cb, "terminal/create") ? json_true() : json_null(),
                     "permissionRequests",
                     json_object_get(cb, "session/request_permission") ? json_true() : json_null(),
                     "configOptions", session ? json_boolean(json_is_array(opts)) : json_null(),
                     "models", session ? json_boolean(json_is_object(models)) : json_null(),
                     "modes", session ? json_boolean(json_is_object(modes)) : json_null(),
                     "agentCapabilities", caps ? (json_t *)caps : json_null());
}

/* The record as it may be stored and shown: the pattern redactor over
 * everything (a secret-looking key hides its whole value) except
 * initialize.authMethods, which seed 003 §6 wants verbatim (its key merely
 * contains "auth"), so only its strings are scrubbed; then every literal
 * secret cdsh handed the engine (env values, secret args) wherever the
 * agent echoed it. Owned; NULL on ENOMEM. */
static json_t *redact_record(const json_t *row, const json_t *rec)
{
    json_t *red = cdsh_redact_json_dup(rec);
    const json_t *methods = json_object_get(json_object_get(rec, "initialize"), "authMethods");
    json_t *init = json_object_get(red, "initialize");
    if (red && methods && json_is_object(init)) {
        /* Scrubbed as a value under a neutral key, so "authMethods" itself
         * does not make every string in it secret. */
        json_t *wrap = json_pack("{s:O}", "value", methods);
        json_t *clean = wrap ? cdsh_redact_json_dup(wrap) : NULL;
        json_object_set(init, "authMethods", json_object_get(clean, "value"));
        json_decref(clean);
        json_decref(wrap);
    }
    char **secrets = cdsh_acp_engine_secrets_dup(row);
    json_t *out = red && secrets ? cdsh_redact_json_literals_dup(red, (const char *const *)secrets)
                                 : NULL;
    cdsh_acp_engine_strv_free(secrets);
    json_decref(red);
    return out;
}

/* One probe run: what the steps share. */
typedef struct probe_run {
    const cdsh_home *home;
    const char *engine_id;
    const cdsh_acp_probe_opts *opts;
    const char *cwd;
    json_t *row;     /* the engine row (owned) */
    json_t *rec;     /* the record being built (owned) */
    json_t *methods; /* rec.methods (borrowed) */
    json_t *health;  /* owned */
    json_t *caps;    /* the capability summary for runtime.json (owned) */
    json_t *first_session; /* {configOptions, modes} of the first session (owned) */
    char *resolved;
    cdsh_acp_conn *c;
    probe_ctx pc;
    char *sid, *sid2;
} probe_run;

/* Step 1: resolve, spawn and initialize. false when the probe cannot go on
 * (the record says why). */
static bool probe_connect(probe_run *r)
{
    const char *via = NULL;
    cdsh_error e = {0};
    if (cdsh_acp_engine_resolve(r->row, &r->resolved, &via, &e) < 0) {
        json_object_set_new(r->rec, "spawn",
                            json_pack("{s:b,s:s}", "ok", 0, "error", e.message));
        json_object_set_new(r->health, "error", json_string(e.message));
        return false;
    }
    json_object_set_new(r->rec, "resolved", json_string(r->resolved));
    json_object_set_new(r->rec, "via", json_string(via));
    char **argv = cdsh_acp_engine_argv_dup(r->row, r->resolved);
    char **env = cdsh_acp_engine_env_dup(r->row);
    const char *fixed = json_string_value(json_object_get(r->row, "cwd"));
    bool use_fixed =
        fixed && strcmp(json_string_value(json_object_get(r->row, "cwdPolicy")), "fixed") == 0;
    cdsh_acp_cold_check cold;
    int64_t budget = cdsh_acp_engine_init_budget_ms(r->row, &cold);
    cdsh_acp_conn_opts co = {.name = r->engine_id,
                             .argv = (const char *const *)argv,
                             .env_set = (const char *const *)env,
                             .cwd = use_fixed ? fixed : r->cwd,
                             .init_timeout_ms = budget,
                             .request_timeout_ms = 120000,
                             .dispose_grace_ms =
                                 json_integer_value(json_object_get(r->row, "disposeGraceMs")),
                             .fs_read = true,
                             .fs_write = false,
                             .record = true,
                             .on_wait = r->opts ? r->opts->on_wait : NULL,
                             .wait_ud = r->opts ? r->opts->wait_ud : NULL,
                             .cancel = r->opts ? r->opts->cancel : NULL};
    int rc = cdsh_acp_conn_open(&co, &r->c, &e);
    cdsh_acp_engine_strv_free(argv);
    cdsh_acp_engine_strv_free(env);
    json_object_set_new(r->rec, "initBudgetMs", json_integer(budget));
    if (rc < 0) {
        bool spawned = strcmp(e.code, "COMMAND_NOT_FOUND") != 0 &&
                       strcmp(e.code, "EXEC_FAILED") != 0 && strcmp(e.code, "CWD_NOT_FOUND") != 0;
        json_object_set_new(r->rec, "spawn", json_pack("{s:b}", "ok", spawned));
        json_object_set_new(r->rec, "initialize",
                            json_pack("{s:b,s:s,s:b,s:s}", "ok", 0, "error", e.message,
                                      "coldStart", cold.cold, "coldReason", cold.reason));
        json_object_set_new(r->methods, "initialize", json_sprintf("error: %s", e.message));
        json_object_set_new(r->health, "error", json_string(e.message));
        return false;
    }
    cdsh_acp_state_runtime_warm(r->home, r->engine_id, r->resolved, NULL); /* not a first start */
    const json_t *init = cdsh_acp_conn_init_result_get(r->c);
    int64_t lat = cdsh_acp_conn_init_latency_ms(r->c);
    char *tail = cdsh_acp_conn_stderr_tail_dup(r->c);
    json_object_set_new(r->rec, "spawn",
                        json_pack("{s:b,s:i,s:s}", "ok", 1, "pid", cdsh_acp_conn_pid(r->c),
                                  "stderrExcerpt", tail ? tail : ""));
    free(tail);
    const json_t *info = json_object_get(init, "agentInfo");
    const json_t *auth = json_object_get(init, "authMethods");
    const json_t *caps = json_object_get(init, "agentCapabilities");
    json_object_set_new(
        r->rec, "initialize",
        json_pack("{s:b,s:I,s:b,s:s,s:O,s:O,s:O,s:O}", "ok", 1, "latencyMs", (json_int_t)lat,
                  "coldStart", cold.cold, "coldReason", cold.reason, "protocolVersion",
                  json_object_get(init, "protocolVersion"), "agentInfo",
                  info ? info : json_null(), "authMethods", auth ? auth : json_null(),
                  "capabilities", caps ? caps : json_null()));
    json_object_set_new(r->methods, "initialize", json_string("ok"));
    json_object_set_new(r->health, "latencyMs", json_integer(lat));
    json_object_set_new(r->health, "status", json_string("degraded"));
    return true;
}

/* Step 2: two sessions on one process (R3). false when session/new failed. */
static bool probe_sessions(probe_run *r)
{
    cdsh_acp_session_handlers h = {probe_update, probe_permission, &r->pc};
    cdsh_error e = {0};
    json_t *sessions = json_object_get(r->rec, "sessions");
    if (cdsh_acp_conn_session_open(r->c, CDSH_ACP_OPEN_NEW, NULL, r->cwd, NULL, &h, &r->sid, &e) <
        0) {
        json_object_set_new(r->methods, "session/new", json_sprintf("error: %s", e.message));
        json_array_append_new(sessions,
                              json_pack("{s:i,s:b,s:s}", "index", 0, "ok", 0, "error", e.message));
        json_object_set_new(r->health, "error", json_string(e.message));
        return false;
    }
    json_object_set_new(r->methods, "session/new", json_string("ok"));
    r->first_session = cdsh_acp_conn_session_config_dup(r->c, r->sid);
    json_array_append_new(sessions,
                          json_pack("{s:i,s:b,s:s,s:O,s:O}", "index", 0, "ok", 1, "sessionId",
                                    r->sid, "configOptions",
                                    json_object_get(r->first_session, "configOptions"), "modes",
                                    json_object_get(r->first_session, "modes")));
    if (cdsh_acp_conn_session_open(r->c, CDSH_ACP_OPEN_NEW, NULL, r->cwd, NULL, &h, &r->sid2,
                                   &e) == 0)
        json_array_append_new(sessions, json_pack("{s:i,s:b,s:s}", "index", 1, "ok", 1,
                                                  "sessionId", r->sid2));
    else
        json_array_append_new(sessions,
                              json_pack("{s:i,s:b,s:s}", "index", 1, "ok", 0, "error", e.message));
    return true;
}

/* Step 3: the optional methods, each only when advertised. Setting the
 * current value again is harmless and proves the path. */
static void probe_methods(probe_run *r)
{
    json_t *opt0 = json_array_get(json_object_get(r->first_session, "configOptions"), 0);
    if (json_is_string(json_object_get(opt0, "currentValue"))) {
        json_t *p = json_pack("{s:s,s:O,s:O}", "sessionId", r->sid, "configId",
                              json_object_get(opt0, "id"), "value",
                              json_object_get(opt0, "currentValue"));
        try_method(r->c, r->methods, "session/set_config_option", p);
        json_decref(p);
    } else {
        json_object_set_new(r->methods, "session/set_config_option",
                            json_string("not_advertised"));
    }
    json_t *modes = json_object_get(r->first_session, "modes");
    if (json_is_string(json_object_get(modes, "currentModeId"))) {
        json_t *p = json_pack("{s:s,s:O}", "sessionId", r->sid, "modeId",
                              json_object_get(modes, "currentModeId"));
        try_method(r->c, r->methods, "session/set_mode", p);
        json_decref(p);
    } else {
        json_object_set_new(r->methods, "session/set_mode", json_string("not_advertised"));
    }
    if (cdsh_acp_conn_supports(r->c, "session/list")) {
        json_t *p = json_pack("{s:s}", "cwd", r->cwd);
        try_method(r->c, r->methods, "session/list", p);
        json_decref(p);
    } else {
        json_object_set_new(r->methods, "session/list", json_string("not_advertised"));
    }
}

/* Step 4: one prompt, when asked for. */
static void probe_prompt(probe_run *r)
{
    json_t *prompt = json_pack("[{s:s,s:s}]", "type", "text", "text", r->opts->prompt);
    cdsh_acp_prompt_opts po = {.idle_timeout_ms = cdsh_acp_engine_idle_timeout_ms(r->row),
                               .total_timeout_ms = cdsh_acp_engine_prompt_timeout_ms(r->row),
                               .cancel_grace_ms = json_integer_value(
                                   json_object_get(r->row, "cancelGraceMs"))};
    cdsh_acp_prompt_result pr = {0};
    cdsh_error e = {0};
    int rc = cdsh_acp_conn_prompt(r->c, r->sid, prompt, &po, r->opts ? r->opts->cancel : NULL,
                                  &pr, &e);
    json_decref(prompt);
    if (rc == 0) {
        json_object_set_new(r->rec, "prompt",
                            json_pack("{s:b,s:I,s:s,s:O,s:O}", "ok", 1, "latencyMs",
                                      (json_int_t)pr.latency_ms, "stopReason", pr.stop_reason,
                                      "text", r->pc.text, "updatesByType", r->pc.by_type));
        json_object_set_new(r->methods, "session/prompt", json_string("ok"));
    } else {
        const char *cls = cdsh_acp_classify_error(rc, e.code, e.message);
        json_object_set_new(r->rec, "prompt",
                            json_pack("{s:b,s:I,s:s,s:s,s:O}", "ok", 0, "latencyMs",
                                      (json_int_t)pr.latency_ms, "class", cls, "error", e.message,
                                      "updatesByType", r->pc.by_type));
        json_object_set_new(r->methods, "session/prompt", json_sprintf("error: %s", e.message));
        json_object_set_new(r->health, "error", json_sprintf("%s: %s", cls, e.message));
    }
    cdsh_acp_prompt_result_deinit(&pr);
}

/* Step 5: close a session (when advertised); health is ok when nothing failed. */
static void probe_close(probe_run *r)
{
    if (cdsh_acp_conn_supports(r->c, "session/close")) {
        cdsh_error ce = {0};
        int crc = cdsh_acp_conn_session_release(r->c, r->sid2 ? r->sid2 : r->sid, true, &ce);
        json_object_set_new(r->methods, "session/close",
                            crc == 0 ? json_string("ok") : json_sprintf("error: %s", ce.message));
    } else {
        json_object_set_new(r->methods, "session/close", json_string("not_advertised"));
    }
    if (json_is_null(json_object_get(r->health, "error")) || !json_object_get(r->health, "error"))
        json_object_set_new(r->health, "status", json_string("ok"));
}

/* Step 6: what the connection kept (callbacks, rejected and raw lines,
 * stderr) and the capability summary. */
static void probe_collect(probe_run *r)
{
    json_t *cb = cdsh_acp_conn_callbacks_dup(r->c);
    r->caps = capability_summary(cdsh_acp_conn_init_result_get(r->c), r->first_session, cb);
    json_object_set_new(r->rec, "callbacks", cb);
    json_object_set_new(r->rec, "dialectRejects", cdsh_acp_conn_rejects_dup(r->c));
    json_object_set_new(r->rec, "rawLines", cdsh_acp_conn_raw_lines_dup(r->c));
    char *tail = cdsh_acp_conn_stderr_tail_dup(r->c);
    json_object_set_new(r->rec, "stderrTail", json_string(tail ? tail : ""));
    free(tail);
}

/* Step 7: health and capabilities into runtime.json, the redacted record
 * into evidence/probe-<id>-<time with ':' and '.' as '-'>.json. */
static int probe_store(probe_run *r, const char *dir, const char *iso, json_t **record,
                       char **evidence_path, cdsh_error *err)
{
    bool cut_short = r->opts && cdsh_cancel_is_fired(r->opts->cancel);
    json_object_set_new(
        r->rec, "ok",
        json_boolean(!cut_short &&
                     strcmp(json_string_value(json_object_get(r->health, "status")), "ok") == 0));
    json_object_set(r->rec, "health", r->health);
    json_t *red = redact_record(r->row, r->rec);
    json_t *red_health = redact_record(r->row, r->health);
    if (!cut_short) /* a probe cut short says nothing of the engine's health */
        cdsh_acp_state_runtime_record(r->home, r->engine_id, r->caps, red_health, NULL);
    char stamp[CDSH_ISO8601_MAX];
    snprintf(stamp, sizeof stamp, "%s", iso);
    for (char *p = stamp; *p; p++)
        if (*p == ':' || *p == '.')
            *p = '-';
    char *edir = cdsh_fs_path_join_dup(dir, "evidence");
    char name[256];
    snprintf(name, sizeof name, "probe-%s-%s.json", r->engine_id, stamp);
    char *path = edir ? cdsh_fs_path_join_dup(edir, name) : NULL;
    char *text = red ? cdsh_json_dump_pretty_dup(red) : NULL;
    int rc = 0;
    if (!path || !text)
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    else if ((rc = cdsh_fs_mkdir_p(edir, 0700, err)) == 0)
        rc = cdsh_fs_write_atomic(path, text, strlen(text), 0600, err);
    if (rc == 0) {
        *record = red;
        red = NULL;
        if (evidence_path) {
            *evidence_path = path;
            path = NULL;
        }
    }
    json_decref(red);
    json_decref(red_health);
    free(text);
    free(path);
    free(edir);
    return rc;
}

int cdsh_acp_probe_run(const cdsh_home *home, const char *engine_id,
                       const cdsh_acp_probe_opts *opts, json_t **record, char **evidence_path,
                       cdsh_error *err)
{
    if (!engine_id || !record)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "probe needs an engine id");
    probe_run r = {.home = home, .engine_id = engine_id, .opts = opts};
    int rc = cdsh_acp_state_engine_find(home, engine_id, &r.row, err);
    if (rc < 0)
        return rc;
    char *dir = NULL;
    rc = cdsh_acp_state_dir_dup(home, &dir, err);
    if (rc < 0) {
        json_decref(r.row);
        return rc;
    }
    int64_t t0 = cdsh_clock_mono_ms();
    char iso[CDSH_ISO8601_MAX];
    cdsh_clock_format_iso8601(cdsh_clock_wall_ms(), iso, sizeof iso);
    char here[4096];
    r.cwd = opts && opts->cwd ? opts->cwd : (getcwd(here, sizeof here) ? here : "/");
    r.rec = json_pack("{s:s,s:s,s:O,s:o,s:b,s:{},s:[],s:[],s:s}", "engineId", engine_id,
                      "probedAt", iso, "command", json_object_get(r.row, "command"), "args",
                      cdsh_acp_engine_args_public_dup(json_object_get(r.row, "args")), "ok", 0,
                      "methods", "sessions", "dialectRejects", "notes", "");
    r.methods = json_object_get(r.rec, "methods");
    r.health = json_pack("{s:s,s:s,s:n,s:n}", "lastCheckAt", iso, "status", "failed",
                         "latencyMs", "error");
    r.pc = (probe_ctx){json_object(), json_string("")};
    cdsh_cancel *cancel = opts ? opts->cancel : NULL;
    if (probe_connect(&r)) {
        if (!cdsh_cancel_is_fired(cancel) && probe_sessions(&r)) {
            if (!cdsh_cancel_is_fired(cancel))
                probe_methods(&r);
            if (opts && opts->prompt && !cdsh_cancel_is_fired(cancel))
                probe_prompt(&r);
            probe_close(&r);
        }
        probe_collect(&r);
    }
    cdsh_acp_conn_free(r.c);
    json_object_set_new(r.rec, "totalMs", json_integer(cdsh_clock_mono_ms() - t0));
    if (cdsh_cancel_is_fired(cancel)) {
        json_object_set_new(r.rec, "cancelled", json_true());
        json_object_set_new(r.rec, "notes", json_string("cancelled (a signal) before the end"));
    }
    rc = probe_store(&r, dir, iso, record, evidence_path, err);
    json_decref(r.rec);
    json_decref(r.health);
    json_decref(r.caps);
    json_decref(r.first_session);
    json_decref(r.pc.by_type);
    json_decref(r.pc.text);
    free(r.sid);
    free(r.sid2);
    free(r.resolved);
    free(dir);
    json_decref(r.row);
    return rc;
}
