/* cmd_tools.c — `cdsh tools list`: loads the profile's plugins and prints the
 * tools the model would see (global view or one agent's) in the order the
 * model sees them (systemPrompt.toolOrder, else by name), with the size of
 * each schema sent to the model and the total. */
#include "cli/cmd_tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/cli.h"
#include "host/prompt.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: cdsh tools list [--agent A] [--profile NAME] [--json]\n"
            "\n"
            "Prints the model-visible tool surface of a host with the plugins the profile\n"
            "enables, in the order the model sees it (the systemPrompt plugin's toolOrder,\n"
            "else sorted by name): each tool's name, the bytes of its schema ({name,\n"
            "description, parameters} as compact JSON) and its description, then the\n"
            "totals. Imported MCP servers without a cached tool list connect first.\n"
            "\n"
            "Options:\n"
            "  --agent A       the view of agent scope A instead of the global view\n"
            "  --profile NAME  profile in $CDSH_HOME/profiles (default \"default\")\n"
            "  --json          {\"agent\", \"tools\":[{name, bytes, description}], \"count\",\n"
            "                  \"totalBytes\"}\n"
            "  -h, --help      show this help\n");
}

int cdsh_cmd_tools(int argc, char **argv)
{
    static const char *const actions[] = {"list", NULL};
    cdsh_cli_opts o;
    int action, rc = cdsh_cli_action("tools", argc, argv, actions, usage, &action);
    if (rc < 0)
        rc = cdsh_cli_parse_opts("tools", argc, argv, 1, 0, usage, &o);
    if (rc >= 0)
        return rc;
    const char *agent = o.agent, *profile_name = o.profile;
    int json = o.json;
    cdsh_host *host = NULL;
    cdsh_profile *profile = NULL;
    if (cdsh_cli_host_open("tools", profile_name, &host, &profile))
        return 1;
    cdsh_scope *scope = agent ? cdsh_scope_new(agent, NULL) : NULL;
    cdsh_error err = {0};
    json_t *schemas = cdsh_prompt_tools_dup(cdsh_host_prompt(host), cdsh_host_tools(host), scope,
                                            NULL, &err);
    if (!schemas) {
        fprintf(stderr, "cdsh tools: %s\n", err.message);
        cdsh_scope_unref(scope);
        cdsh_host_free(host);
        cdsh_profile_free(profile);
        return 1;
    }
    json_t *rows = json_array();
    size_t total = 0, i;
    json_t *s;
    json_array_foreach(schemas, i, s) {
        char *compact = json_dumps(s, JSON_COMPACT | JSON_PRESERVE_ORDER);
        size_t bytes = compact ? strlen(compact) : 0;
        free(compact);
        total += bytes;
        json_array_append_new(rows, json_pack("{s:O, s:I, s:O}", "name", json_object_get(s, "name"),
                                              "bytes", (json_int_t)bytes, "description",
                                              json_object_get(s, "description")));
    }
    size_t n = json_array_size(rows);
    if (json) {
        json_t *doc = json_pack("{s:s?, s:O, s:I, s:I}", "agent", agent, "tools", rows, "count",
                                (json_int_t)n, "totalBytes", (json_int_t)total);
        cdsh_cli_print_json(stdout, doc);
        json_decref(doc);
    } else {
        size_t width = 4;
        json_array_foreach(rows, i, s) {
            size_t len = strlen(json_string_value(json_object_get(s, "name")));
            width = len > width ? len : width;
        }
        json_array_foreach(rows, i, s) {
            char sum[128];
            printf("%-*s %7lld bytes  %s\n", (int)width,
                   json_string_value(json_object_get(s, "name")),
                   (long long)json_integer_value(json_object_get(s, "bytes")),
                   cdsh_cli_summary(json_string_value(json_object_get(s, "description")), sum,
                                    sizeof sum, 72));
        }
        printf("%zu tool%s, %zu schema bytes in total%s%s\n", n, n == 1 ? "" : "s", total,
               agent ? " for agent " : "", agent ? agent : "");
    }
    json_decref(rows);
    json_decref(schemas);
    cdsh_scope_unref(scope);
    cdsh_host_free(host);
    cdsh_profile_free(profile);
    return 0;
}
