/* cmd_acp.c — `cdsh acp <sub>` dispatch plus the listing sub-commands
 * (engines, sessions). Probe and prompt live in cmd_acp_probe.c and
 * cmd_acp_prompt.c; all business logic is in plugins/acp. */
#include "cli/cmd_acp.h"

#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "cli/cmd_acp_probe.h"
#include "cli/cmd_acp_prompt.h"
#include "cli/group.h"
#include "plugins/acp/engine.h"
#include "plugins/acp/state.h"

static const cdsh_subcommand subs[] = {
    {"engines", "list engines: resolved command, enabled, health", cdsh_cmd_acp_engines},
    {"probe", "try-connect an engine and write an evidence record", cdsh_cmd_acp_probe},
    {"prompt", "send one message to an engine and show its streamed reply", cdsh_cmd_acp_prompt},
    {"sessions", "list cdsh sessions bound to engines", cdsh_cmd_acp_sessions},
    {NULL, NULL, NULL},
};

static const cdsh_cli_group group = {
    .name = "acp",
    .about = "External coding agents over the Agent Client Protocol (ACP).\n"
             "Engines are builtin rows plus $CDSH_HOME/multi-acp/engines.json.\n",
    .subs = subs,
};

int cdsh_cmd_acp(int argc, char **argv)
{
    return cdsh_cli_group_run(&group, argc, argv);
}

int cdsh_cmd_acp_engines(int argc, char **argv)
{
    bool as_json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            as_json = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("Usage: cdsh acp engines [--json]\n\nLists every engine (builtin and "
                   "engines.json) with its resolved command, enabled flag and health.\n");
            return 0;
        } else {
            fprintf(stderr, "cdsh acp engines: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    json_t *engines = NULL, *diags = NULL;
    cdsh_error err = {0};
    if (cdsh_acp_state_engines_listing(&engines, &diags, &err) < 0) {
        fprintf(stderr, "cdsh acp engines: %s\n", err.message);
        return 1;
    }
    size_t i;
    json_t *row;
    if (as_json) {
        json_t *out = json_pack("{s:O,s:O}", "engines", engines, "diagnostics", diags);
        char *text = cdsh_json_dump_pretty_dup(out);
        fputs(text ? text : "{}\n", stdout);
        free(text);
        json_decref(out);
    } else {
        printf("%-16s %-8s %-9s %-26s %-8s %s\n", "ENGINE", "ENABLED", "HEALTH", "LAST CHECK",
               "LATENCY", "COMMAND");
        json_array_foreach(engines, i, row)
        {
            json_t *h = json_object_get(row, "health");
            json_t *r = json_object_get(row, "resolved");
            char lat[32] = "-";
            if (json_is_integer(json_object_get(h, "latencyMs")))
                snprintf(lat, sizeof lat, "%lldms",
                         (long long)json_integer_value(json_object_get(h, "latencyMs")));
            const char *last = json_string_value(json_object_get(h, "lastCheckAt"));
            printf("%-16s %-8s %-9s %-26s %-8s %s\n", json_string_value(json_object_get(row, "id")),
                   json_is_true(json_object_get(row, "enabled")) ? "yes" : "no",
                   json_string_value(json_object_get(h, "status"))
                       ? json_string_value(json_object_get(h, "status"))
                       : "unknown",
                   last ? last : "-", lat,
                   json_is_true(json_object_get(r, "found"))
                       ? json_string_value(json_object_get(r, "path"))
                       : "(not found)");
            const char *herr = json_string_value(json_object_get(h, "error"));
            if (herr)
                printf("%-16s last error: %s\n", "", herr);
        }
    }
    json_array_foreach(diags, i, row)
    {
        fprintf(stderr, "cdsh acp engines: %s: %s\n",
                json_string_value(json_object_get(row, "source")),
                json_string_value(json_object_get(row, "message")));
    }
    json_decref(engines);
    json_decref(diags);
    return 0;
}

int cdsh_cmd_acp_sessions(int argc, char **argv)
{
    bool as_json = argc > 1 && strcmp(argv[1], "--json") == 0;
    if (argc > 1 && !as_json) {
        printf("Usage: cdsh acp sessions [--json]\n");
        return strcmp(argv[1], "--help") == 0 ? 0 : 2;
    }
    json_t *sessions = NULL;
    cdsh_error err = {0};
    if (cdsh_acp_state_sessions_dup(&sessions, &err) < 0) {
        fprintf(stderr, "cdsh acp sessions: %s\n", err.message);
        return 1;
    }
    if (as_json) {
        char *text = cdsh_json_dump_pretty_dup(sessions);
        fputs(text ? text : "{}\n", stdout);
        free(text);
    } else {
        const char *k;
        json_t *v;
        json_object_foreach(sessions, k, v)
        {
            const char *acp = json_string_value(json_object_get(v, "acpSessionId"));
            const char *used = json_string_value(json_object_get(v, "lastUsedAt"));
            printf("%s  engine=%s  acp=%s  lastUsed=%s%s\n", k,
                   json_string_value(json_object_get(v, "engineId")), acp ? acp : "-",
                   used ? used : "-",
                   json_is_string(json_object_get(v, "lockedEngineId")) ? "  (engine locked)" : "");
        }
    }
    json_decref(sessions);
    return 0;
}
