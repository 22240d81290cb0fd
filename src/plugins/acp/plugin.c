/* plugin.c — the "acp" plugin: creates the ACP service, provides it,
 * registers its operations table (ops.c: the "/acp" RPC channel, the one
 * engines surface the web page's picker and any panel use), its
 * session-fork participant and its session runner (the turns of
 * engine-bound sessions, turn.c) through its context. Thin wrappers only. */
#include "plugins/acp/plugin.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/session_runner.h"
#include "host/host.h"
#include "host/jobs.h"
#include "host/rpc.h"
#include "plugins/acp/cmd_acp.h"
#include "plugins/acp/cmd_acp_probe.h"
#include "plugins/acp/ops.h"
#include "plugins/acp/probe.h"
#include "plugins/acp/service.h"
#include "plugins/acp/state.h"
#include "plugins/acp/turn.h"

/* One load of the plugin: its service and the hooks that point at it. */
typedef struct acp_plugin {
    cdsh_acp_service *svc;
    cdsh_host *host;
    cdsh__acp_ops_ud ops; /* what the operations table's handlers work on */
    cdsh_session_fork_hook fork;
    cdsh_session_runner runner;
} acp_plugin;

static void plugin_free(void *arg)
{
    acp_plugin *p = arg;
    cdsh_acp_service_free(p->svc); /* disposes the engine processes */
    free(p);
}

/* ---- the session runner (engine-bound sessions' turns) ---------------------------------- */

static char *fmt_dup(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *fmt_dup(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *out = NULL;
    if (vasprintf(&out, fmt, ap) < 0)
        out = NULL;
    va_end(ap);
    return out;
}

static bool runner_owns(void *arg, const char *sid)
{
    acp_plugin *p = arg;
    return cdsh_acp_turn_is_bound(cdsh_acp_service_home(p->svc), sid);
}

static int runner_run(void *arg, const cdsh_session_turn *t, char **note, cdsh_error *err)
{
    acp_plugin *p = arg;
    cdsh_acp_turn_opts to = {.svc = p->svc,
                             .store = t->store,
                             .on_event = t->on_event,
                             .event_arg = t->event_arg};
    json_t *res = NULL;
    int rc = cdsh_acp_turn_run(&to, t->session_id, t->text, t->cancel, &res, err);
    const char *stop = json_string_value(json_object_get(res, "stopReason"));
    if (note)
        *note = rc == 0 && json_is_true(json_object_get(res, "ok")) && stop &&
                        strcmp(stop, "end_turn") != 0
                    ? fmt_dup("turn ended: %s", stop)
                    : NULL;
    json_decref(res);
    return rc;
}

static int runner_bind(void *arg, const char *sid, const char *engine, const char *cwd,
                       cdsh_error *err)
{
    acp_plugin *p = arg;
    return cdsh_acp_service_bind(p->svc, sid, engine, cwd, err);
}

static char *runner_describe(void *arg, const char *sid)
{
    acp_plugin *p = arg;
    json_t *entry = NULL;
    char *line = NULL;
    if (cdsh_acp_state_session_get(cdsh_acp_service_home(p->svc), sid, &entry, NULL) == 0) {
        const char *cwd = json_string_value(json_object_get(entry, "cwd"));
        line = fmt_dup(
            "Engine %s in %s%s.", json_string_value(json_object_get(entry, "engineId")),
            cwd ? cwd : "(the current directory)",
            json_is_string(json_object_get(entry, "lockedEngineId")) ? " (locked)" : "");
    }
    json_decref(entry);
    return line;
}

/* A deleted session's binding goes with it (its live ACP session too). */
static void runner_forget(void *arg, const char *sid)
{
    acp_plugin *p = arg;
    cdsh_acp_service_release(p->svc, sid, NULL);
    cdsh_acp_state_session_remove(cdsh_acp_service_home(p->svc), sid, NULL);
}

static int on_fork(void *arg, const cdsh_session_fork_info *info, json_t *notes, cdsh_error *err)
{
    /* The row's own service, else the front end's live one (its engine
     * process already runs), else one made for this call; the state lives
     * in the service's home, else the front end's. */
    cdsh_acp_service *svc = arg, *own = NULL;
    if (!svc)
        svc = cdsh_session_fork_service(info, CDSH_ACP_SERVICE);
    const cdsh_home *home = svc ? cdsh_acp_service_home(svc) : cdsh_session_fork_home(info);
    json_t *entry = NULL;
    cdsh_error ge = {0};
    int rc = cdsh_acp_state_session_get(home, info->parent_id, &entry, &ge);
    json_decref(entry);
    if (rc == CDSH_ENOTFOUND)
        return 0; /* not bound: nothing to carry over */
    if (rc < 0)
        return cdsh_error_set(err, rc, ge.code, "%s", ge.message);
    if (!svc) {
        json_t *self = cdsh_acp_cdsh_mcp_server_dup(NULL, NULL);
        json_t *mcp = self ? json_pack("[o]", self) : json_array();
        cdsh_acp_service_opts so = {.mcp_servers = mcp};
        svc = own = cdsh_acp_service_new(home, &so, err);
        json_decref(mcp);
        if (!svc)
            return err ? err->rc : CDSH_ENOMEM;
    }
    json_t *warnings = json_array();
    rc = cdsh_acp_service_fork(svc, info->parent_id, info->child_id, info->whole, warnings, err);
    if (rc == 0 && cdsh_acp_state_session_get(home, info->child_id, &entry, NULL) == 0) {
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

static int apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    json_t *mcp = json_deep_copy(json_object_get(config, "mcpServers"));
    const char *glob = json_string_value(json_object_get(config, "cdshTools"));
    if (!json_is_array(mcp)) {
        json_decref(mcp);
        mcp = json_array();
    }
    if (glob && *glob) /* "*": every tool (no --tools) */
        json_array_append_new(mcp, cdsh_acp_cdsh_mcp_server_dup(NULL, strcmp(glob, "*") == 0
                                                                        ? NULL
                                                                        : glob));
    cdsh_host *host = cdsh_ctx_host(ctx);
    cdsh_acp_service_opts o = {
        .no_fs = json_is_false(json_object_get(config, "fs")),
        .no_terminal = json_is_false(json_object_get(config, "terminal")),
        .mcp_servers = mcp,
        .approvals_of = cdsh_host_tools(host), /* the front end's broker, when it has one */
    };
    acp_plugin *p = calloc(1, sizeof *p);
    if (p)
        p->svc = cdsh_acp_service_new(cdsh_ctx_home(ctx), &o, err);
    json_decref(mcp);
    if (!p || !p->svc) {
        free(p);
        return p ? (err ? err->rc : CDSH_ENOMEM)
                 : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    p->host = host;
    p->ops = (cdsh__acp_ops_ud){.svc = p->svc, .host = host};
    p->fork = (cdsh_session_fork_hook){.name = "acp", .fn = on_fork, .arg = p->svc};
    p->runner = (cdsh_session_runner){.name = "engine",
                                      .owns = runner_owns,
                                      .run = runner_run,
                                      .bind = runner_bind,
                                      .describe_dup = runner_describe,
                                      .forget = runner_forget,
                                      .arg = p};
    /* Disposers run newest first: the hooks and channel go before p. */
    int rc = cdsh_ctx_adopt(ctx, (cdsh_disposer_t){plugin_free, p}, err);
    if (rc == 0)
        rc = cdsh_ctx_provide(ctx, CDSH_ACP_SERVICE, p->svc, err);
    if (rc == 0) /* `cdsh acp probe --all` runs as a job this plugin owns */
        rc = cdsh_ctx_provide(ctx, CDSH_ACP_JOBS_SERVICE, ctx, err);
    if (rc == 0)
        rc = cdsh_ctx_hook(ctx, CDSH_JOB_STARTERS, &cdsh_acp_probe_all_starter, err);
    if (rc == 0)
        rc = cdsh_ops_register_table(ctx, &cdsh__acp_ops_table, &p->ops, NULL, err);
    if (rc == 0)
        rc = cdsh_ctx_hook(ctx, CDSH_SESSION_FORK_HOOKS, &p->fork, err);
    if (rc == 0)
        rc = cdsh_ctx_hook(ctx, CDSH_SESSION_RUNNERS, &p->runner, err);
    return rc;
}

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
        "commands (argv, or /bin/sh -c without args; scrubbed env) inside the session directory\"},\"mcpServers\":{\"type\":"
        "\"array\",\"default\":[],\"description\":\"ACP McpServer objects offered to "
        "engines whose mcp is inherit\",\"items\":{\"type\":\"object\","
        "\"additionalProperties\":true}},\"cdshTools\":{\"type\":\"string\","
        "\"default\":\"*\",\"description\":\"offer cdsh's own tools matching this "
        "glob (cdsh mcp) to engines as an MCP server; *: all of them, empty: none\"}}}",
    /* On: engines spawn only when a session is bound to one and messaged. */
    .enabled_by_default = true,
    .apply = apply,
    .subcommands = cdsh_acp_subcommands,
};
