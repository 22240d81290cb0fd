/* ops.c — the acp operations table (host/ops.h): one row per operation of
 * the "/acp" RPC channel (engines, probe, sessions, session, bind, unbind,
 * open, config), each with its argument and result shapes; `$ops` on the
 * channel lists them. Handlers validate → call state.c / probe.c /
 * service.c → shape the value; the hooks keep the channel's error form
 * (bad-request / not-found / conflict / internal, details.code the precise
 * code). Adding an operation is adding a row. */
#include "plugins/acp/ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/rpc.h"
#include "plugins/acp/probe.h"
#include "plugins/acp/state.h"
#include "plugins/acp/turn.h"

/* ---- schemas ------------------------------------------------------------------ */

#define STR "{\"type\":\"string\"}"
#define SESSION_PROP "\"session\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128}"
#define SESSION_ARGS                                                                               \
    "{\"type\":\"object\",\"properties\":{" SESSION_PROP "},\"required\":[\"session\"]}"
#define OBJECT "{\"type\":\"object\"}"
/* What session, bind, unbind, open and config answer. */
#define STATE                                                                                      \
    "{\"type\":\"object\",\"properties\":{\"binding\":{\"oneOf\":[{\"type\":\"null\"}," OBJECT     \
    "]},\"locked\":{\"type\":\"boolean\"},\"config\":{\"oneOf\":[{\"type\":\"null\"}," OBJECT      \
    "]},\"via\":" STR "},\"required\":[\"binding\",\"locked\",\"config\"]}"

/* ---- handlers --------------------------------------------------------------------- */

static const char *arg_str(const cdsh_op_call *call, const char *key)
{
    return json_string_value(json_object_get(call->args, key));
}

/* STATE of one cdsh session. */
static json_t *engine_state(cdsh_acp_service *svc, const char *sid)
{
    json_t *entry = NULL;
    if (cdsh_acp_state_session_get(cdsh_acp_service_home(svc), sid, &entry, NULL) < 0)
        entry = NULL;
    json_t *cfg = entry ? cdsh_acp_service_config_dup(svc, sid) : NULL;
    bool locked = entry && json_is_string(json_object_get(entry, "lockedEngineId"));
    return json_pack("{s:o, s:b, s:o}", "binding", entry ? entry : json_null(), "locked", locked,
                     "config", cfg ? cfg : json_null());
}

/* The page's session list shows bindings: say that one changed. */
static void announce(cdsh__acp_ops_ud *u, const char *sid)
{
    if (!u->host)
        return;
    json_t *ch = json_pack("{s:s, s:s}", "reason", "engine", "id", sid);
    cdsh_events_emit(cdsh_host_events(u->host), "sessions/change", NULL, false, ch);
    json_decref(ch);
}

static int op_engines(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err)
{
    (void)call;
    cdsh__acp_ops_ud *u = ud;
    json_t *engines = NULL, *diags = NULL;
    int rc = cdsh_acp_state_engines_listing(cdsh_acp_service_home(u->svc), &engines, &diags, err);
    if (rc < 0)
        return rc;
    *value = json_pack("{s:o,s:o}", "engines", engines, "diagnostics", diags ? diags : json_array());
    return 0;
}

static int op_probe(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err)
{
    cdsh__acp_ops_ud *u = ud;
    const char *engine = arg_str(call, "engine");
    if (!engine)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_REQUEST", "engine is required");
    cdsh_acp_probe_opts o = {.prompt = arg_str(call, "prompt"), .cwd = arg_str(call, "cwd")};
    return cdsh_acp_probe_run(cdsh_acp_service_home(u->svc), engine, &o, value, NULL, err);
}

static int op_sessions(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err)
{
    (void)call;
    cdsh__acp_ops_ud *u = ud;
    return cdsh_acp_state_sessions_dup(cdsh_acp_service_home(u->svc), value, err);
}

static int op_session(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err)
{
    (void)err;
    cdsh__acp_ops_ud *u = ud;
    *value = engine_state(u->svc, arg_str(call, "session"));
    return 0;
}

static int op_bind(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err)
{
    cdsh__acp_ops_ud *u = ud;
    const char *sid = arg_str(call, "session"), *engine = arg_str(call, "engine");
    const char *cwd = arg_str(call, "cwd");
    char here[4096];
    if (!engine)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_REQUEST", "\"engine\" is required");
    if (!cwd && !cdsh_acp_turn_is_bound(cdsh_acp_service_home(u->svc), sid))
        cwd = getcwd(here, sizeof here) ? here : "/";
    int rc = cdsh_acp_service_bind(u->svc, sid, engine, cwd, err);
    if (rc < 0)
        return rc;
    *value = engine_state(u->svc, sid);
    announce(u, sid);
    return 0;
}

/* unbind: refused once the engine is locked (the first message went). */
static int op_unbind(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err)
{
    cdsh__acp_ops_ud *u = ud;
    const char *sid = arg_str(call, "session");
    const cdsh_home *home = cdsh_acp_service_home(u->svc);
    json_t *entry = NULL;
    int rc = cdsh_acp_state_session_get(home, sid, &entry, err);
    if (rc == 0 && json_is_string(json_object_get(entry, "lockedEngineId")))
        rc = cdsh_error_set(err, CDSH_EPERM, "ENGINE_LOCKED",
                            "the session's engine is locked after its first message");
    json_decref(entry);
    if (rc == 0) {
        cdsh_acp_service_release(u->svc, sid, NULL);
        rc = cdsh_acp_state_session_remove(home, sid, err);
    }
    if (rc < 0)
        return rc;
    *value = engine_state(u->svc, sid);
    announce(u, sid);
    return 0;
}

static int op_open(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err)
{
    cdsh__acp_ops_ud *u = ud;
    const char *sid = arg_str(call, "session");
    json_t *warnings = NULL;
    int rc = cdsh_acp_service_open(u->svc, sid, NULL, &warnings, err);
    json_decref(warnings);
    if (rc < 0)
        return rc;
    *value = engine_state(u->svc, sid);
    return 0;
}

static int op_config(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err)
{
    cdsh__acp_ops_ud *u = ud;
    const char *sid = arg_str(call, "session");
    const char *id = arg_str(call, "configId"), *val = arg_str(call, "value");
    const char *via = NULL;
    int rc = id && val ? cdsh_acp_service_set_config(u->svc, sid, id, val, &via, err)
             : id || val
                 ? cdsh_error_set(err, CDSH_EINVAL, "BAD_REQUEST",
                                  "\"configId\" and \"value\" go together")
                 : 0;
    if (rc < 0)
        return rc;
    *value = engine_state(u->svc, sid);
    if (via)
        json_object_set_new(*value, "via", json_string(via));
    return 0;
}

/* ---- the table ------------------------------------------------------------------ */

static const cdsh_op ROWS[] = {
    {.name = "engines",
     .args_schema = "{\"type\":\"object\"}",
     .result_schema = "{\"type\":\"object\",\"properties\":{\"engines\":{\"type\":\"array\"},"
                      "\"diagnostics\":{\"type\":\"array\"}},\"required\":[\"engines\","
                      "\"diagnostics\"]}",
     .handler = op_engines,
     .surfaces = CDSH_OP_RPC,
     .flags = CDSH_OP_READ},
    {.name = "probe",
     .args_schema = "{\"type\":\"object\",\"properties\":{\"engine\":" STR ",\"prompt\":" STR
                    ",\"cwd\":" STR "},\"required\":[\"engine\"]}",
     .result_schema = "{\"type\":\"object\",\"properties\":{\"engineId\":" STR
                      ",\"ok\":{\"type\":\"boolean\"}},\"required\":[\"engineId\",\"ok\"]}",
     .handler = op_probe,
     .surfaces = CDSH_OP_RPC},
    {.name = "sessions",
     .args_schema = "{\"type\":\"object\"}",
     .result_schema = OBJECT,
     .handler = op_sessions,
     .surfaces = CDSH_OP_RPC,
     .flags = CDSH_OP_READ},
    {.name = "session",
     .args_schema = SESSION_ARGS,
     .result_schema = STATE,
     .handler = op_session,
     .surfaces = CDSH_OP_RPC,
     .flags = CDSH_OP_READ},
    {.name = "bind",
     .args_schema = "{\"type\":\"object\",\"properties\":{" SESSION_PROP ",\"engine\":" STR
                    ",\"cwd\":" STR "},\"required\":[\"session\",\"engine\"]}",
     .result_schema = STATE,
     .handler = op_bind,
     .surfaces = CDSH_OP_RPC},
    {.name = "unbind",
     .args_schema = SESSION_ARGS,
     .result_schema = STATE,
     .handler = op_unbind,
     .surfaces = CDSH_OP_RPC},
    {.name = "open",
     .args_schema = SESSION_ARGS,
     .result_schema = STATE,
     .handler = op_open,
     .surfaces = CDSH_OP_RPC},
    {.name = "config",
     .args_schema = "{\"type\":\"object\",\"properties\":{" SESSION_PROP ",\"configId\":" STR
                    ",\"value\":" STR "},\"required\":[\"session\"]}",
     .result_schema = STATE,
     .handler = op_config,
     .surfaces = CDSH_OP_RPC},
};

/* ---- the channel's hooks ---------------------------------------------------------- */

/* The per-session rows need a session id before anything runs. */
static int rpc_admit(void *ud, const char *endpoint, const json_t *payload, json_t **result)
{
    (void)ud;
    static const char *const per_session[] = {"session", "bind", "unbind", "open", "config",
                                              NULL};
    bool needs = false;
    for (const char *const *e = per_session; endpoint && *e; e++)
        needs |= strcmp(*e, endpoint) == 0;
    const char *sid = json_string_value(json_object_get(payload, "session"));
    if (needs && (!sid || !*sid || strlen(sid) > 128)) {
        *result = cdsh_rpc_error_new(CDSH_RPC_BAD_REQUEST, "a \"session\" id is required", NULL);
        return -1;
    }
    return 0;
}

/* Values answer ok; failures keep the channel's form: the class from the
 * error's rc, the precise code in details. */
static json_t *rpc_result(void *ud, const cdsh_op_call *call, int rc, json_t *value,
                          const cdsh_error *err)
{
    (void)ud, (void)call;
    if (rc == 0)
        return cdsh_rpc_ok_new(value);
    const char *code = err->rc == CDSH_ENOTFOUND                      ? CDSH_RPC_NOT_FOUND
                       : err->rc == CDSH_EINVAL                       ? CDSH_RPC_BAD_REQUEST
                       : err->rc == CDSH_EPERM || err->rc == CDSH_EBUSY ? "conflict"
                                                                        : CDSH_RPC_INTERNAL;
    return cdsh_rpc_error_new(code, err->message[0] ? err->message : "acp operation failed",
                              json_pack("{s:s}", "code", err->code[0] ? err->code : "UNKNOWN"));
}

const cdsh_ops_table cdsh__acp_ops_table = {
    .plugin = "acp",
    .ops = ROWS,
    .n_ops = sizeof ROWS / sizeof *ROWS,
    .rpc_channel = CDSH_ACP_RPC_CHANNEL,
    .rpc_admit = rpc_admit,
    .rpc_result = rpc_result,
    .unknown_code = CDSH_RPC_NOT_FOUND,
    .unknown_format = "unknown " CDSH_ACP_RPC_CHANNEL " endpoint \"%s\"",
};
