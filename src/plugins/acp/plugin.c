/* plugin.c — the "acp" plugin: creates the ACP service, provides it and
 * answers the "/acp" RPC channel by calling state.c, probe.c and service.c;
 * also its session-fork participant (cdsh_acp_fork_hook). Thin wrappers
 * only: validate → call → shape. */
#include "plugins/acp/plugin.h"

#include <stdlib.h>
#include <string.h>

#include "host/rpc.h"
#include "plugins/acp/probe.h"
#include "plugins/acp/service.h"
#include "plugins/acp/state.h"

static void service_free(void *arg)
{
    cdsh_acp_service_free(arg);
}

static json_t *fail(const cdsh_error *e)
{
    const char *code = e->rc == CDSH_ENOTFOUND ? CDSH_RPC_NOT_FOUND
                       : e->rc == CDSH_EINVAL  ? CDSH_RPC_BAD_REQUEST
                                               : CDSH_RPC_INTERNAL;
    return cdsh_rpc_error_new(code, e->message, json_pack("{s:s}", "code", e->code));
}

static int on_rpc(void *arg, const char *endpoint, const json_t *payload, cdsh_cancel *cancel,
                  json_t **result, cdsh_error *err)
{
    (void)cancel, (void)err;
    cdsh_acp_service *svc = arg;
    cdsh_error e = {0};
    const char *session = json_string_value(json_object_get(payload, "session"));
    const char *engine = json_string_value(json_object_get(payload, "engine"));
    const char *cwd = json_string_value(json_object_get(payload, "cwd"));
    if (strcmp(endpoint, "engines") == 0) {
        json_t *engines = NULL, *diags = NULL;
        *result =
            cdsh_acp_state_engines_load(&engines, &diags, &e) < 0
                ? fail(&e)
                : cdsh_rpc_ok_new(json_pack("{s:o,s:o}", "engines", engines, "diagnostics", diags));
    } else if (strcmp(endpoint, "probe") == 0) {
        cdsh_acp_probe_opts o = {.prompt = json_string_value(json_object_get(payload, "prompt")),
                                 .cwd = cwd};
        json_t *rec = NULL;
        *result = !engine ? cdsh_rpc_error_new(CDSH_RPC_BAD_REQUEST, "engine is required", NULL)
                  : cdsh_acp_probe_run(engine, &o, &rec, NULL, &e) < 0 ? fail(&e)
                                                                       : cdsh_rpc_ok_new(rec);
    } else if (strcmp(endpoint, "bind") == 0) {
        *result =
            !session || !engine
                ? cdsh_rpc_error_new(CDSH_RPC_BAD_REQUEST, "session and engine are required", NULL)
            : cdsh_acp_service_bind(svc, session, engine, cwd, &e) < 0
                ? fail(&e)
                : cdsh_rpc_ok_new(json_pack("{s:s,s:s}", "session", session, "engine", engine));
    } else if (strcmp(endpoint, "sessions") == 0) {
        json_t *map = NULL;
        *result = cdsh_acp_state_sessions_dup(&map, &e) < 0 ? fail(&e) : cdsh_rpc_ok_new(map);
    } else if (strcmp(endpoint, "config") == 0) {
        json_t *cfg = session ? cdsh_acp_service_config_dup(svc, session) : NULL;
        *result = cfg ? cdsh_rpc_ok_new(cfg)
                      : cdsh_rpc_error_new(CDSH_RPC_SESSION_NOT_FOUND,
                                           "no open ACP session for this session", NULL);
    } else {
        *result = cdsh_rpc_error_new(CDSH_RPC_NOT_FOUND, "unknown /acp endpoint", NULL);
    }
    return 0;
}

static int apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    json_t *mcp = json_deep_copy(json_object_get(config, "mcpServers"));
    const char *glob = json_string_value(json_object_get(config, "cdshTools"));
    if (!json_is_array(mcp)) {
        json_decref(mcp);
        mcp = json_array();
    }
    if (glob && *glob)
        json_array_append_new(mcp, cdsh_acp_cdsh_mcp_server_dup(NULL, glob));
    cdsh_acp_service_opts o = {
        .no_fs = json_is_false(json_object_get(config, "fs")),
        .no_terminal = json_is_false(json_object_get(config, "terminal")),
        .mcp_servers = mcp,
    };
    cdsh_acp_service *svc = cdsh_acp_service_new(&o, err);
    json_decref(mcp);
    if (!svc)
        return err ? err->rc : CDSH_ENOMEM;
    int rc = cdsh_ctx_adopt(ctx, (cdsh_disposer_t){service_free, svc}, err);
    if (rc == 0)
        rc = cdsh_ctx_provide(ctx, CDSH_ACP_SERVICE, svc, err);
    if (rc == 0)
        rc = cdsh_ctx_rpc_handle(ctx, "/acp", on_rpc, svc, err);
    return rc;
}

static int on_fork(void *arg, const cdsh_session_fork_info *info, json_t *notes, cdsh_error *err)
{
    json_t *entry = NULL;
    cdsh_error ge = {0};
    int rc = cdsh_acp_state_session_get(info->parent_id, &entry, &ge);
    json_decref(entry);
    if (rc == CDSH_ENOTFOUND)
        return 0; /* not bound: nothing to carry over */
    if (rc < 0)
        return cdsh_error_set(err, rc, ge.code, "%s", ge.message);
    /* The row's own service, else the front end's live one (its engine
     * process already runs), else one made for this call. */
    cdsh_acp_service *svc = arg, *own = NULL;
    if (!svc)
        svc = cdsh_session_fork_service(info, CDSH_ACP_SERVICE);
    if (!svc) {
        json_t *self = cdsh_acp_cdsh_mcp_server_dup(NULL, NULL);
        json_t *mcp = self ? json_pack("[o]", self) : json_array();
        cdsh_acp_service_opts so = {.mcp_servers = mcp};
        svc = own = cdsh_acp_service_new(&so, err);
        json_decref(mcp);
        if (!svc)
            return err ? err->rc : CDSH_ENOMEM;
    }
    json_t *warnings = json_array();
    rc = cdsh_acp_service_fork(svc, info->parent_id, info->child_id, info->whole, warnings, err);
    if (rc == 0 && cdsh_acp_state_session_get(info->child_id, &entry, NULL) == 0) {
        const char *acp = json_string_value(json_object_get(entry, "acpSessionId"));
        json_array_append_new(
            notes, json_sprintf("bound to engine %s%s%s",
                                json_string_value(json_object_get(entry, "engineId")),
                                acp ? ", ACP session forked as " : " (no ACP session yet)",
                                acp ? acp : ""));
        json_decref(entry);
    }
    json_array_extend(notes, warnings);
    json_decref(warnings);
    cdsh_acp_service_free(own); /* disposes the process it spawned */
    return rc;
}

const cdsh_session_fork_hook cdsh_acp_fork_hook = {.name = "acp", .fn = on_fork, .arg = NULL};

static const char *const requires_[] = {NULL};

const cdsh_plugin_def cdsh_acp_plugin = {
    .name = CDSH_ACP_PLUGIN,
    .description = "external coding agents (OpenCode, Codex, Gemini...) over ACP as cdsh sessions",
    .requires = requires_,
    .config_schema =
        "{\"type\":\"object\",\"properties\":{\"fs\":{\"type\":\"boolean\","
        "\"default\":true,\"description\":\"serve fs/read_text_file and "
        "fs/write_text_file inside the session directory\"},\"terminal\":{\"type\":"
        "\"boolean\",\"default\":true,\"description\":\"run terminal/create "
        "commands (argv, scrubbed env) inside the session directory\"},\"mcpServers\":{\"type\":"
        "\"array\",\"default\":[],\"description\":\"ACP McpServer objects offered to "
        "engines whose mcp is inherit\",\"items\":{\"type\":\"object\","
        "\"additionalProperties\":true}},\"cdshTools\":{\"type\":\"string\","
        "\"default\":\"\",\"description\":\"offer cdsh's own tools matching this "
        "glob (cdsh mcp) to engines as an MCP server; empty: none\"}}}",
    .enabled_by_default = false,
    .apply = apply,
};
