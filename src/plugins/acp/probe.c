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

int cdsh_acp_probe_run(const cdsh_home *home, const char *engine_id,
                       const cdsh_acp_probe_opts *opts, json_t **record, char **evidence_path,
                       cdsh_error *err)
{
    if (!engine_id || !record)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "probe needs an engine id");
    json_t *row = NULL;
    int rc = cdsh_acp_state_engine_find(home, engine_id, &row, err);
    if (rc < 0)
        return rc;
    char *dir = NULL;
    rc = cdsh_acp_state_dir_dup(home, &dir, err);
    if (rc < 0) {
        json_decref(row);
        return rc;
    }
    int64_t t0 = cdsh_clock_mono_ms();
    char iso[CDSH_ISO8601_MAX];
    cdsh_clock_format_iso8601(cdsh_clock_wall_ms(), iso, sizeof iso);
    char here[4096];
    const char *cwd = opts && opts->cwd ? opts->cwd : (getcwd(here, sizeof here) ? here : "/");
    json_t *rec = json_pack("{s:s,s:s,s:O,s:o,s:b,s:{},s:[],s:[],s:s}", "engineId", engine_id,
                            "probedAt", iso, "command", json_object_get(row, "command"), "args",
                            cdsh_acp_engine_args_public_dup(json_object_get(row, "args")), "ok",
                            0, "methods", "sessions", "dialectRejects", "notes", "");
    json_t *methods = json_object_get(rec, "methods");
    json_t *health = json_pack("{s:s,s:s,s:n,s:n}", "lastCheckAt", iso, "status", "failed",
                               "latencyMs", "error");
    json_t *caps = NULL, *first_session = NULL;
    char *resolved = NULL, **argv = NULL, **env = NULL;
    const char *via = NULL;
    cdsh_acp_conn *c = NULL;
    probe_ctx pc = {json_object(), json_string("")};
    cdsh_error e = {0};
    if (cdsh_acp_engine_resolve(row, &resolved, &via, &e) < 0) {
        json_object_set_new(rec, "spawn", json_pack("{s:b,s:s}", "ok", 0, "error", e.message));
        json_object_set_new(health, "error", json_string(e.message));
        goto finish;
    }
    json_object_set_new(rec, "resolved", json_string(resolved));
    json_object_set_new(rec, "via", json_string(via));
    argv = cdsh_acp_engine_argv_dup(row, resolved);
    env = cdsh_acp_engine_env_dup(row);
    const char *fixed = json_string_value(json_object_get(row, "cwd"));
    bool use_fixed =
        fixed && strcmp(json_string_value(json_object_get(row, "cwdPolicy")), "fixed") == 0;
    cdsh_acp_cold_check cold;
    int64_t budget = cdsh_acp_engine_init_budget_ms(row, &cold);
    cdsh_acp_conn_opts co = {.name = engine_id,
                             .argv = (const char *const *)argv,
                             .env_set = (const char *const *)env,
                             .cwd = use_fixed ? fixed : cwd,
                             .init_timeout_ms = budget,
                             .request_timeout_ms = 120000,
                             .dispose_grace_ms =
                                 json_integer_value(json_object_get(row, "disposeGraceMs")),
                             .fs_read = true,
                             .fs_write = false,
                             .record = true,
                             .on_wait = opts ? opts->on_wait : NULL,
                             .wait_ud = opts ? opts->wait_ud : NULL};
    rc = cdsh_acp_conn_open(&co, &c, &e);
    json_object_set_new(rec, "initBudgetMs", json_integer(budget));
    if (rc < 0) {
        json_t *failed = json_pack("{s:b,s:s,s:b,s:s}", "ok", 0, "error", e.message, "coldStart",
                                   cold.cold, "coldReason", cold.reason);
        bool spawned = strcmp(e.code, "COMMAND_NOT_FOUND") != 0 &&
                       strcmp(e.code, "EXEC_FAILED") != 0 && strcmp(e.code, "CWD_NOT_FOUND") != 0;
        json_object_set_new(rec, "spawn", json_pack("{s:b}", "ok", spawned));
        json_object_set_new(rec, "initialize", failed);
        json_object_set_new(methods, "initialize", json_sprintf("error: %s", e.message));
        json_object_set_new(health, "error", json_string(e.message));
        goto finish;
    }
    cdsh_acp_state_runtime_warm(home, engine_id, resolved, NULL); /* no longer a first start */
    const json_t *init = cdsh_acp_conn_init_result_get(c);
    int64_t lat = cdsh_acp_conn_init_latency_ms(c);
    char *tail = cdsh_acp_conn_stderr_tail_dup(c);
    json_object_set_new(rec, "spawn",
                        json_pack("{s:b,s:i,s:s}", "ok", 1, "pid", cdsh_acp_conn_pid(c),
                                  "stderrExcerpt", tail ? tail : ""));
    free(tail);
    json_object_set_new(
        rec, "initialize",
        json_pack(
            "{s:b,s:I,s:b,s:s,s:O,s:O,s:O,s:O}", "ok", 1, "latencyMs", (json_int_t)lat, "coldStart",
            cold.cold, "coldReason", cold.reason, "protocolVersion",
            json_object_get(init, "protocolVersion"), "agentInfo",
            json_object_get(init, "agentInfo") ? json_object_get(init, "agentInfo") : json_null(),
            "authMethods",
            json_object_get(init, "authMethods") ? json_object_get(init, "authMethods")
                                                 : json_null(),
            "capabilities",
            json_object_get(init, "agentCapabilities") ? json_object_get(init, "agentCapabilities")
                                                       : json_null()));
    json_object_set_new(methods, "initialize", json_string("ok"));
    json_object_set_new(health, "latencyMs", json_integer(lat));
    json_object_set_new(health, "status", json_string("degraded"));
    cdsh_acp_session_handlers h = {probe_update, probe_permission, &pc};
    char *sid = NULL, *sid2 = NULL;
    rc = cdsh_acp_conn_session_open(c, CDSH_ACP_OPEN_NEW, NULL, cwd, NULL, &h, &sid, &e);
    if (rc < 0) {
        json_object_set_new(methods, "session/new", json_sprintf("error: %s", e.message));
        json_array_append_new(json_object_get(rec, "sessions"),
                              json_pack("{s:i,s:b,s:s}", "index", 0, "ok", 0, "error", e.message));
        json_object_set_new(health, "error", json_string(e.message));
        goto after_sessions;
    }
    json_object_set_new(methods, "session/new", json_string("ok"));
    first_session = cdsh_acp_conn_session_config_dup(c, sid);
    json_array_append_new(json_object_get(rec, "sessions"),
                          json_pack("{s:i,s:b,s:s,s:O,s:O}", "index", 0, "ok", 1, "sessionId", sid,
                                    "configOptions",
                                    json_object_get(first_session, "configOptions"), "modes",
                                    json_object_get(first_session, "modes")));
    /* Multiplexing (R3): a second session on the same process. */
    if (cdsh_acp_conn_session_open(c, CDSH_ACP_OPEN_NEW, NULL, cwd, NULL, &h, &sid2, &e) == 0)
        json_array_append_new(json_object_get(rec, "sessions"),
                              json_pack("{s:i,s:b,s:s}", "index", 1, "ok", 1, "sessionId", sid2));
    else
        json_array_append_new(json_object_get(rec, "sessions"),
                              json_pack("{s:i,s:b,s:s}", "index", 1, "ok", 0, "error", e.message));
    /* Config: setting the current value again is harmless and proves the path. */
    json_t *opt0 = json_array_get(json_object_get(first_session, "configOptions"), 0);
    if (json_is_string(json_object_get(opt0, "currentValue"))) {
        json_t *p =
            json_pack("{s:s,s:O,s:O}", "sessionId", sid, "configId", json_object_get(opt0, "id"),
                      "value", json_object_get(opt0, "currentValue"));
        try_method(c, methods, "session/set_config_option", p);
        json_decref(p);
    } else {
        json_object_set_new(methods, "session/set_config_option", json_string("not_advertised"));
    }
    json_t *modes = json_object_get(first_session, "modes");
    if (json_is_string(json_object_get(modes, "currentModeId"))) {
        json_t *p = json_pack("{s:s,s:O}", "sessionId", sid, "modeId",
                              json_object_get(modes, "currentModeId"));
        try_method(c, methods, "session/set_mode", p);
        json_decref(p);
    } else {
        json_object_set_new(methods, "session/set_mode", json_string("not_advertised"));
    }
    if (cdsh_acp_conn_supports(c, "session/list")) {
        json_t *p = json_pack("{s:s}", "cwd", cwd);
        try_method(c, methods, "session/list", p);
        json_decref(p);
    } else {
        json_object_set_new(methods, "session/list", json_string("not_advertised"));
    }
    if (opts && opts->prompt) {
        json_t *prompt = json_pack("[{s:s,s:s}]", "type", "text", "text", opts->prompt);
        cdsh_acp_prompt_opts po = {.idle_timeout_ms = cdsh_acp_engine_idle_timeout_ms(row),
                                   .total_timeout_ms = cdsh_acp_engine_prompt_timeout_ms(row)};
        cdsh_acp_prompt_result pr = {0};
        rc = cdsh_acp_conn_prompt(c, sid, prompt, &po, NULL, &pr, &e);
        json_decref(prompt);
        if (rc == 0) {
            json_object_set_new(rec, "prompt",
                                json_pack("{s:b,s:I,s:s,s:O,s:O}", "ok", 1, "latencyMs",
                                          (json_int_t)pr.latency_ms, "stopReason", pr.stop_reason,
                                          "text", pc.text, "updatesByType", pc.by_type));
            json_object_set_new(methods, "session/prompt", json_string("ok"));
        } else {
            const char *cls = cdsh_acp_classify_error(rc, e.code, e.message);
            json_object_set_new(rec, "prompt",
                                json_pack("{s:b,s:I,s:s,s:s,s:O}", "ok", 0, "latencyMs",
                                          (json_int_t)pr.latency_ms, "class", cls, "error",
                                          e.message, "updatesByType", pc.by_type));
            json_object_set_new(methods, "session/prompt", json_sprintf("error: %s", e.message));
            json_object_set_new(health, "error", json_sprintf("%s: %s", cls, e.message));
        }
        cdsh_acp_prompt_result_deinit(&pr);
    }
    if (cdsh_acp_conn_supports(c, "session/close")) {
        cdsh_error ce = {0};
        int crc = cdsh_acp_conn_session_release(c, sid2 ? sid2 : sid, true, &ce);
        json_object_set_new(methods, "session/close",
                            crc == 0 ? json_string("ok") : json_sprintf("error: %s", ce.message));
    } else {
        json_object_set_new(methods, "session/close", json_string("not_advertised"));
    }
    if (json_is_null(json_object_get(health, "error")) || !json_object_get(health, "error"))
        json_object_set_new(health, "status", json_string("ok"));
    free(sid);
    free(sid2);
after_sessions:;
    json_t *cb = cdsh_acp_conn_callbacks_dup(c);
    caps = capability_summary(init, first_session, cb);
    json_object_set_new(rec, "callbacks", cb);
    json_object_set_new(rec, "dialectRejects", cdsh_acp_conn_rejects_dup(c));
    json_object_set_new(rec, "rawLines", cdsh_acp_conn_raw_lines_dup(c));
    tail = cdsh_acp_conn_stderr_tail_dup(c);
    json_object_set_new(rec, "stderrTail", json_string(tail ? tail : ""));
    free(tail);
finish:
    cdsh_acp_conn_free(c);
    json_object_set_new(
        rec, "ok",
        json_boolean(strcmp(json_string_value(json_object_get(health, "status")), "ok") == 0));
    json_object_set(rec, "health", health);
    json_object_set_new(rec, "totalMs", json_integer(cdsh_clock_mono_ms() - t0));
    json_t *red = redact_record(row, rec);
    json_t *red_health = redact_record(row, health);
    cdsh_acp_state_runtime_record(home, engine_id, caps, red_health, NULL);
    /* evidence/probe-<id>-<time with ':' and '.' as '-'>.json */
    char stamp[CDSH_ISO8601_MAX];
    snprintf(stamp, sizeof stamp, "%s", iso);
    for (char *p = stamp; *p; p++)
        if (*p == ':' || *p == '.')
            *p = '-';
    char *edir = cdsh_fs_path_join_dup(dir, "evidence");
    char name[256];
    snprintf(name, sizeof name, "probe-%s-%s.json", engine_id, stamp);
    char *path = edir ? cdsh_fs_path_join_dup(edir, name) : NULL;
    char *text = red ? cdsh_json_dump_pretty_dup(red) : NULL;
    rc = 0;
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
    json_decref(rec);
    json_decref(health);
    json_decref(caps);
    json_decref(first_session);
    json_decref(pc.by_type);
    json_decref(pc.text);
    cdsh_acp_engine_strv_free(argv);
    cdsh_acp_engine_strv_free(env);
    free(resolved);
    free(dir);
    json_decref(row);
    return rc;
}
