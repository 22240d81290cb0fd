/* cmd_profile.c — `cdsh profile verify <profile> [--smoke] [--json]`:
 * argument handling and printing; the verification is
 * plugins/facade/verify.c. */
#include "plugins/facade/cmd_profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/home.h"
#include "host/cli.h"
#include "plugins/facade/verify.h"

static void usage(FILE *out)
{
    fprintf(out, "Usage: cdsh profile verify <profile> [--smoke] [--json]\n"
                 "\n"
                 "Composes the profile (a name in $CDSH_HOME/profiles, or a path to a YAML file)\n"
                 "in a temporary CDSH_HOME without touching yours, and checks that every plugin\n"
                 "row names a plugin cdsh has, its config validates, every enabled plugin loads\n"
                 "and no name collides (tools, commands, capability declarations).\n"
                 "\n"
                 "  --smoke   then run one agent turn (\"reply with the single word OK\") on the\n"
                 "            composed host, in a throwaway session in the temporary home,\n"
                 "            against the configured endpoint (CDSH_BASE_URL / CDSH_MODEL /\n"
                 "            key); the model may call the composed tools; the turn must end\n"
                 "            with a reply, else its code and message are the problem\n"
                 "  --json    print the report object\n"
                 "\n"
                 "Prints one line per check, each problem, and VERIFY-OK (exit 0) or\n"
                 "VERIFY-FAILED (exit 1).\n");
}

int cdsh_cmd_profile(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "verify") != 0) {
        fprintf(stderr, "cdsh profile: unknown action '%s' (try `cdsh profile --help`)\n", argv[1]);
        return 2;
    }
    int smoke = 0, json = 0;
    const char *name = NULL;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--smoke") == 0)
            smoke = 1;
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] != '-' && !name)
            name = argv[i];
        else {
            fprintf(stderr, "cdsh profile: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!name) {
        usage(stderr);
        return 2;
    }
    char *home = NULL;
    cdsh_error err = {0};
    if (cdsh_home_dir_dup(cdsh_cli_home(), &home, &err) != 0) {
        fprintf(stderr, "cdsh profile: %s\n", err.message);
        return 1;
    }
    json_t *report = NULL;
    int rc = cdsh_facade_verify(home, name, cdsh_cli_host_plugins(), smoke, &report, &err);
    free(home);
    if (rc != 0) {
        fprintf(stderr, "cdsh profile: %s\n", err.message);
        return 1;
    }
    bool ok = json_is_true(json_object_get(report, "ok"));
    if (json) {
        cdsh_cli_print_json(stdout, report);
    } else {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(report, "checks"), i, c) {
            printf("%-4s %s: %s\n", json_is_true(json_object_get(c, "ok")) ? "ok" : "FAIL",
                   json_string_value(json_object_get(c, "check")),
                   json_string_value(json_object_get(c, "detail")));
        }
        json_array_foreach(json_object_get(report, "problems"), i, c) {
            printf("problem: %s\n", json_string_value(c));
        }
        if (ok)
            printf("VERIFY-OK\n");
        else
            printf("VERIFY-FAILED: %zu problem(s)\n",
                   json_array_size(json_object_get(report, "problems")));
    }
    json_decref(report);
    return ok ? 0 : 1;
}
