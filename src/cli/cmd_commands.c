/* cmd_commands.c — `cdsh commands list`: the slash commands registered by the
 * plugins a profile enables (global view or one agent's). */
#include "cli/cmd_commands.h"

#include <stdio.h>
#include <string.h>

#include "host/cli.h"

static void usage(FILE *out)
{
    fprintf(out, "Usage: cdsh commands list [--agent A] [--profile NAME] [--json]\n"
                 "\n"
                 "Prints the slash commands a person can type in a session (`/name args`),\n"
                 "sorted by name, with their input hints.\n"
                 "\n"
                 "Options:\n"
                 "  --agent A       the commands agent scope A sees\n"
                 "  --profile NAME  profile in $CDSH_HOME/profiles (default \"default\")\n"
                 "  --json          [{name, description, input?:{hint}}]\n"
                 "  -h, --help      show this help\n");
}

int cdsh_cmd_commands(int argc, char **argv)
{
    static const char *const actions[] = {"list", NULL};
    cdsh_cli_opts o;
    int action, rc = cdsh_cli_action("commands", argc, argv, actions, usage, &action);
    if (rc < 0)
        rc = cdsh_cli_parse_opts("commands", argc, argv, 1, 0, usage, &o);
    if (rc >= 0)
        return rc;
    cdsh_host *host = NULL;
    cdsh_profile *profile = NULL;
    if (cdsh_cli_host_open("commands", o.profile, &host, &profile))
        return 1;
    cdsh_scope *scope = o.agent ? cdsh_scope_new(o.agent, NULL) : NULL;
    json_t *list = cdsh_commands_list(cdsh_host_commands(host), scope);
    if (o.json) {
        cdsh_cli_print_json(stdout, list);
    } else if (json_array_size(list) == 0) {
        printf("no commands (the enabled plugins register none)\n");
    } else {
        size_t i;
        json_t *c;
        json_array_foreach(list, i, c) {
            const char *hint =
                json_string_value(json_object_get(json_object_get(c, "input"), "hint"));
            char buf[128];
            printf("/%s%s%s  %s\n", json_string_value(json_object_get(c, "name")), hint ? " " : "",
                   hint ? hint : "",
                   cdsh_cli_summary(json_string_value(json_object_get(c, "description")), buf,
                                    sizeof buf, 72));
        }
    }
    json_decref(list);
    cdsh_scope_unref(scope);
    cdsh_host_free(host);
    cdsh_profile_free(profile);
    return 0;
}
