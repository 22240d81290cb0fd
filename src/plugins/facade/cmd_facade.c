/* cmd_facade.c — `cdsh facade analyze <dir> | --self [--json] [--propose]`
 * and `cdsh facade list [--json]`: argument handling and printing only; the
 * analysis is plugins/facade/analyze.c, the rendering report.c. */
#include "plugins/facade/cmd_facade.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/cli.h"
#include "plugins/facade/analyze.h"
#include "plugins/facade/cmd_profile.h"
#include "plugins/facade/plugin.h"
#include "plugins/facade/report.h"
#include "plugins/facade/service.h"

static void usage(FILE *out)
{
    fprintf(out, "Usage: cdsh facade analyze <plugin-dir> [--json] [--propose]\n"
                 "       cdsh facade analyze --self [--profile NAME] [--json] [--propose]\n"
                 "       cdsh facade list [--profile NAME] [--json]\n"
                 "\n"
                 "analyze  reads a DSH JavaScript/TypeScript plugin's sources (never writes) and\n"
                 "         reports the tools it registers, prefix groups and the question each\n"
                 "         group raises; --self analyses the live cdsh registry of a profile.\n"
                 "         --json prints the report object only; --propose appends a starter\n"
                 "         declaration (JS and cdsh YAML) per candidate group.\n"
                 "list     the capabilities a profile's host declares, and declarations that\n"
                 "         could not be registered.\n");
}

/* Host for a profile; the facade service (may be NULL if disabled). */
static int open_host(const char *profile_name, cdsh_host **host, cdsh_profile **profile,
                     cdsh_facade **facade)
{
    if (cdsh_cli_host_open("facade", profile_name, host, profile))
        return 1;
    *facade = cdsh_host_service(*host, CDSH_FACADE_SERVICE);
    return 0;
}

static int analyze(int json, int propose, int self, const char *dir, const char *profile_name)
{
    json_t *report = NULL;
    cdsh_host *host = NULL;
    cdsh_profile *profile = NULL;
    if (self) {
        cdsh_facade *facade = NULL;
        if (open_host(profile_name, &host, &profile, &facade))
            return 1;
        char root[160];
        snprintf(root, sizeof root, "cdsh registry (profile %s)",
                 profile_name ? profile_name : CDSH_PROFILE_DEFAULT);
        report = cdsh_facade_analyze_registry(cdsh_host_tools(host), facade, root);
    } else {
        cdsh_error err = {0};
        if (cdsh_facade_analyze_dir(dir, &report, &err) != 0) {
            fprintf(stderr, "cdsh facade: %s\n", err.message);
            return 1;
        }
    }
    int rc = 0;
    if (!report) {
        fprintf(stderr, "cdsh facade: out of memory\n");
        rc = 1;
    } else if (json) {
        cdsh_cli_print_json(stdout, report);
    } else {
        char *text = cdsh_facade_report_full_dup(report, propose);
        printf("%s\n", text ? text : "");
        free(text);
    }
    json_decref(report);
    cdsh_host_free(host);
    cdsh_profile_free(profile);
    return rc;
}

static int list(int json, const char *profile_name)
{
    cdsh_host *host = NULL;
    cdsh_profile *profile = NULL;
    cdsh_facade *facade = NULL;
    if (open_host(profile_name, &host, &profile, &facade))
        return 1;
    json_t *caps = cdsh_facade_list(facade);
    json_t *problems = cdsh_facade_problems(facade);
    if (json) {
        json_t *doc = json_pack("{s:b, s:O, s:O}", "enabled", facade != NULL, "capabilities", caps,
                                "problems", problems);
        cdsh_cli_print_json(stdout, doc);
        json_decref(doc);
    } else {
        if (!facade)
            printf("the facade plugin is disabled in this profile\n");
        size_t i, j;
        json_t *c, *t;
        json_array_foreach(caps, i, c) {
            printf("%s: %s\n", json_string_value(json_object_get(c, "id")),
                   json_string_value(json_object_get(c, "description")));
            json_array_foreach(json_object_get(c, "tools"), j, t) {
                printf("  %s\n", json_string_value(t));
            }
        }
        json_array_foreach(problems, i, c) {
            printf("not registered: %s\n", json_string_value(json_object_get(c, "message")));
        }
        if (json_array_size(caps) == 0 && json_array_size(problems) == 0 && facade)
            printf("no capability declared\n");
    }
    int rc = json_array_size(problems) ? 1 : 0;
    json_decref(caps);
    json_decref(problems);
    cdsh_host_free(host);
    cdsh_profile_free(profile);
    return rc;
}

static int cdsh_cmd_facade(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    int json = 0, propose = 0, self = 0;
    const char *dir = NULL, *profile_name = NULL;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--propose") == 0)
            propose = 1;
        else if (strcmp(argv[i], "--self") == 0)
            self = 1;
        else if (strcmp(argv[i], "--profile") == 0 && i + 1 < argc)
            profile_name = argv[++i];
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] != '-' && !dir)
            dir = argv[i];
        else {
            fprintf(stderr, "cdsh facade: unexpected argument '%s' (try `cdsh facade --help`)\n",
                    argv[i]);
            return 2;
        }
    }
    if (strcmp(argv[1], "analyze") == 0) {
        if (self == (dir != NULL)) {
            usage(stderr);
            return 2;
        }
        return analyze(json, propose, self, dir, profile_name);
    }
    if (strcmp(argv[1], "list") == 0 && !dir && !self && !propose)
        return list(json, profile_name);
    fprintf(stderr, "cdsh facade: unknown action '%s' (try `cdsh facade --help`)\n", argv[1]);
    return 2;
}

const cdsh_subcommand cdsh_facade_subcommands[] = {
    {"facade",
     "capability facade: analyze plugin tool surfaces, list declared capabilities",
     cdsh_cmd_facade},
    {"profile",
     "verify a profile in a temporary home: plugins, configs, collisions (--smoke)",
     cdsh_cmd_profile},
    {NULL, NULL, NULL},
};
