/* plugin.c — the "import" plugin's apply: scan, then register what the
 * profile enabled (commands, skills, servers). A blocked or failing item is
 * logged and skipped; it never fails the plugin or touches the others. */
#include "plugins/mcpimport/plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "plugins/mcpimport/cmd_import.h"
#include "plugins/mcpimport/preflight.h"
#include "plugins/mcpimport/probe.h"
#include "plugins/mcpimport/redact.h"
#include "plugins/mcpimport/register.h"
#include "plugins/mcpimport/register_mcp.h"
#include "plugins/mcpimport/service.h"

char **cdsh_mcpimport_strv_dup(const json_t *arr)
{
    if (!json_is_array(arr))
        return NULL;
    size_t n = json_array_size(arr);
    char **v = calloc(n + 1, sizeof *v);
    for (size_t i = 0, j = 0; v && i < n; i++)
        if (json_is_string(json_array_get(arr, i)))
            v[j++] = strdup(json_string_value(json_array_get(arr, i)));
    return v;
}

void cdsh_mcpimport_strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

static void scan_dispose(void *arg)
{
    cdsh_mcpimport_scan *scan = arg;
    cdsh_mcpimport_scan_deinit(scan);
    free(scan);
}

/* The message of a judged IR's first blocking reason, redacted for the log
 * (a reason may quote a URL or an argument), in buf. */
static const char *first_blocked_r(const json_t *ir, char *buf, size_t n)
{
    size_t k;
    json_t *r;
    snprintf(buf, n, "?");
    json_array_foreach(json_object_get(ir, "reasons"), k, r) {
        if (strcmp(json_string_value(json_object_get(r, "level")), "blocked") == 0) {
            char *m = cdsh_mcpimport_redact_text_dup(json_string_value(json_object_get(r, "message")));
            snprintf(buf, n, "%s", m ? m : "[REDACTED]");
            free(m);
            break;
        }
    }
    return buf;
}
#define first_blocked(ir) first_blocked_r((ir), (char[1024]){0}, 1024)

/* Registers each enabled command or skill in `names` (a blocked or vanished
 * one is logged and skipped); `pre`/`post` frame a name in the log. */
static void register_enabled(cdsh_plugin_ctx *ctx, const cdsh_mcpimport_scan *scan,
                             const json_t *names, const char *pre, const char *post,
                             json_t *(*lookup)(const cdsh_mcpimport_scan *, const char *),
                             int (*reg)(cdsh_plugin_ctx *, const json_t *, cdsh_error *))
{
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v) {
        const char *name = json_string_value(v);
        json_t *ir = name ? lookup(scan, name) : NULL;
        cdsh_error e = {0};
        if (!ir)
            cdsh_log_warn("import", "enabled %s%s%s was not found; skipped", pre, name ? name : "?",
                          post);
        else if (strcmp(cdsh_mcpimport_verdict(ir), "blocked") == 0)
            cdsh_log_warn("import", "enabled %s%s%s is blocked (%s); skipped", pre, name, post,
                          first_blocked(ir));
        else if (reg(ctx, ir, &e) != 0)
            cdsh_log_warn("import", "%s%s%s: %s", pre, name, post, e.message);
    }
}

static int apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    const json_t *servers = json_object_get(config, "servers");
    const json_t *commands = json_object_get(config, "commands");
    const json_t *skills = json_object_get(config, "skills");
    if (!json_array_size(servers) && !json_array_size(commands) && !json_array_size(skills))
        return 0;
    char **projects = cdsh_mcpimport_strv_dup(json_object_get(config, "projects"));
    char **allow = cdsh_mcpimport_strv_dup(json_object_get(config, "keyringAllow"));
    cdsh_mcpimport_rootset set;
    cdsh_mcpimport_scan *scan = calloc(1, sizeof *scan);
    int rc = scan ? 0 : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    if (rc == 0)
        rc = cdsh_mcpimport_rootset_init(&set,
                                         json_string_value(json_object_get(config, "claudeDir")),
                                         json_string_value(json_object_get(config, "codexHome")),
                                         (const char *const *)projects, err);
    if (rc != 0) {
        free(scan);
        cdsh_mcpimport_strv_free(projects), cdsh_mcpimport_strv_free(allow);
        return rc;
    }
    cdsh_mcpimport_roots roots = cdsh_mcpimport_rootset_view(&set);
    cdsh_mcpimport_machine machine;
    cdsh_mcpimport_probe probe;
    cdsh_mcpimport_probe_machine(&probe, &machine);
    cdsh_mcpimport_secret_opts so = {.keyring_allow = (const char *const *)allow};
    rc = cdsh_mcpimport_scan_run(&roots, &probe, &so, scan, err);
    cdsh_mcpimport_rootset_deinit(&set);
    cdsh_mcpimport_strv_free(projects), cdsh_mcpimport_strv_free(allow);
    if (rc != 0) {
        free(scan);
        return rc;
    }
    /* First effect: the scan (IR the commands point into) is freed last. */
    cdsh_disposer_t d = {scan_dispose, scan};
    rc = cdsh_ctx_adopt(ctx, d, err);
    if (rc != 0)
        return rc;
    size_t i;
    json_t *v;
    register_enabled(ctx, scan, commands, "command /", "", cdsh_mcpimport_scan_command,
                     cdsh_mcpimport_register_command);
    register_enabled(ctx, scan, skills, "skill \"", "\"", cdsh_mcpimport_scan_skill,
                     cdsh_mcpimport_register_skill);
    json_array_foreach(servers, i, v) {
        const char *name = json_string_value(v);
        json_t *ir = name ? cdsh_mcpimport_scan_server(scan, name) : NULL;
        cdsh_error e = {0};
        if (!ir) {
            cdsh_log_warn("import", "enabled server \"%s\" was not found; skipped", name);
            continue;
        }
        if (strcmp(cdsh_mcpimport_verdict(ir), "blocked") == 0) {
            cdsh_log_warn("import", "enabled server \"%s\" is blocked (%s); skipped", name,
                          first_blocked(ir));
            continue;
        }
        if (cdsh_mcpimport_register_server(ctx, ir, scan->secrets, &e) != 0)
            cdsh_log_warn("import", "server \"%s\" could not be registered: %s", name, e.message);
    }
    return 0;
}

const cdsh_plugin_def cdsh_mcpimport_plugin = {
    .name = CDSH_MCPIMPORT_PLUGIN_NAME,
    .description = "Claude Code / Codex commands, skills, sub-agents and MCP servers enabled with "
                   "`cdsh import`",
    .config_schema =
        "{\"type\":\"object\",\"properties\":{"
        "\"servers\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"default\":[],"
        "\"description\":\"imported MCP servers to connect (cdsh import enable)\"},"
        "\"commands\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"default\":[],"
        "\"description\":\"imported commands to register (cdsh import enable /name)\"},"
        "\"skills\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"default\":[],"
        "\"description\":\"imported skills and sub-agents to register as skills (cdsh import "
        "enable skill:name)\"},"
        "\"projects\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"default\":[],"
        "\"description\":\"project directories scanned for .mcp.json and "
        ".claude/{commands,skills,agents}\"},"
        "\"claudeDir\":{\"type\":\"string\",\"default\":\"\","
        "\"description\":\"Claude Code config dir (empty: $CLAUDE_CONFIG_DIR or ~/.claude)\"},"
        "\"codexHome\":{\"type\":\"string\",\"default\":\"\","
        "\"description\":\"Codex home (empty: $CODEX_HOME or ~/.codex)\"},"
        "\"keyringAllow\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"default\":[],"
        "\"description\":\"variables that may be read from the keyring (secret-tool)\"}}}",
    .enabled_by_default = false,
    .apply = apply,
    .subcommands = cdsh_mcpimport_subcommands,
};
