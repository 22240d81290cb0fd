/* cmd_import.c — `cdsh import`: scan prints the report (registers nothing),
 * enable/disable record choices in the profile's "import" plugin config,
 * list shows them. Parsing and printing only; the pipeline is
 * src/plugins/mcpimport/service.h. */
#include "cli/cmd_import.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"

#include "cli/cli_host.h"
#include "plugins/mcpimport/plugin.h"
#include "plugins/mcpimport/preflight.h"
#include "plugins/mcpimport/probe.h"
#include "plugins/mcpimport/report.h"
#include "plugins/mcpimport/service.h"

#define MAXV 64

static void usage(FILE *out)
{
    fprintf(
        out,
        "Usage:\n"
        "  cdsh import scan [ROOT OPTIONS] [--json]\n"
        "      find Claude Code and Codex MCP servers, commands and prompts, judge each\n"
        "      (ok / warn / blocked, with reasons) and print the report; registers nothing\n"
        "  cdsh import enable (NAME... | --all-ok) [ROOT OPTIONS] [--profile P]\n"
        "      record servers (NAME) and commands (/NAME) in the profile; they are\n"
        "      registered when cdsh starts. Blocked ones are refused with the reason.\n"
        "  cdsh import disable (NAME... | --all) [--profile P]\n"
        "      remove them from the profile (nothing of them is left registered)\n"
        "  cdsh import list [--profile P] [--json]\n"
        "      what the profile enables\n"
        "\n"
        "Root options:\n"
        "  --root DIR          a project directory (.mcp.json, .claude/commands; ~/.claude.json\n"
        "                      local scope); repeatable; default: the current directory\n"
        "  --claude-dir DIR    Claude Code config dir (default $CLAUDE_CONFIG_DIR or ~/.claude)\n"
        "  --codex-home DIR    Codex home (default $CODEX_HOME or ~/.codex)\n"
        "  --keyring-allow VAR may read VAR from the keyring (secret-tool); repeatable\n"
        "\n"
        "Secret values are never printed: reports say only where a value came from.\n"
        "See docs/import.md.\n");
}

typedef struct opts {
    const char *roots[MAXV];
    int nroots;
    const char *allow[MAXV];
    int nallow;
    const char *claude_dir, *codex_home, *profile;
    int json, all;
    const char *names[MAXV];
    int nnames;
} opts;

static int parse(int argc, char **argv, opts *o, const char *action)
{
    static const struct option longopts[] = {{"root", required_argument, NULL, 'r'},
                                             {"claude-dir", required_argument, NULL, 'c'},
                                             {"codex-home", required_argument, NULL, 'x'},
                                             {"keyring-allow", required_argument, NULL, 'k'},
                                             {"profile", required_argument, NULL, 'p'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"all-ok", no_argument, NULL, 'A'},
                                             {"all", no_argument, NULL, 'a'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (c) {
        case 'r':
            if (o->nroots < MAXV)
                o->roots[o->nroots++] = optarg;
            break;
        case 'k':
            if (o->nallow < MAXV)
                o->allow[o->nallow++] = optarg;
            break;
        case 'c': o->claude_dir = optarg; break;
        case 'x': o->codex_home = optarg; break;
        case 'p': o->profile = optarg; break;
        case 'j': o->json = 1; break;
        case 'A':
            if (strcmp(action, "enable") != 0)
                goto bad;
            o->all = 1;
            break;
        case 'a':
            if (strcmp(action, "disable") != 0)
                goto bad;
            o->all = 1;
            break;
        case 'h': usage(stdout); return 0;
        default:
        bad:
            fprintf(stderr, "cdsh import %s: unknown or misplaced option \"%s\"\n", action,
                    argv[optind - 1]);
            return 2;
        }
    }
    for (int i = optind; i < argc; i++) {
        if (argv[i][0] == '-') {
            fprintf(stderr, "cdsh import %s: options go before names (\"%s\")\n", action, argv[i]);
            return 2;
        }
        if (o->nnames < MAXV)
            o->names[o->nnames++] = argv[i];
    }
    return -1;
}

/* Runs the scan with the options (and the profile's keyringAllow). */
static int run_scan(const opts *o, const json_t *cfg, cdsh_mcpimport_scan *scan)
{
    const char *roots[MAXV + 1] = {0};
    char cwd[4096];
    for (int i = 0; i < o->nroots; i++)
        roots[i] = o->roots[i];
    if (o->nroots == 0 && getcwd(cwd, sizeof cwd))
        roots[0] = cwd;
    const char *allow[2 * MAXV + 1] = {0};
    int na = 0;
    for (int i = 0; i < o->nallow; i++)
        allow[na++] = o->allow[i];
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(cfg, "keyringAllow"), i, v)
    {
        if (na < 2 * MAXV && json_is_string(v))
            allow[na++] = json_string_value(v);
    }
    const char *cd =
        o->claude_dir ? o->claude_dir : json_string_value(json_object_get(cfg, "claudeDir"));
    const char *ch =
        o->codex_home ? o->codex_home : json_string_value(json_object_get(cfg, "codexHome"));
    cdsh_mcpimport_rootset set;
    cdsh_error err = {0};
    if (cdsh_mcpimport_rootset_init(&set, cd, ch, roots, &err) != 0) {
        fprintf(stderr, "cdsh import: %s\n", err.message);
        return 1;
    }
    cdsh_mcpimport_roots view = cdsh_mcpimport_rootset_view(&set);
    cdsh_mcpimport_machine machine;
    cdsh_mcpimport_probe probe;
    cdsh_mcpimport_probe_machine(&probe, &machine);
    cdsh_mcpimport_secret_opts so = {.keyring_allow = allow};
    int rc = cdsh_mcpimport_scan_run(&view, &probe, &so, scan, &err);
    cdsh_mcpimport_rootset_deinit(&set);
    if (rc != 0) {
        fprintf(stderr, "cdsh import: %s\n", err.message);
        return 1;
    }
    return 0;
}

static int do_scan(const opts *o)
{
    cdsh_profile *profile = NULL;
    if (cdsh_cli_profile_open("import", o->profile, NULL, &profile))
        return 1;
    cdsh_mcpimport_scan scan;
    int rc = run_scan(o, cdsh_profile_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME), &scan);
    cdsh_profile_free(profile);
    if (rc)
        return rc;
    json_t *report =
        cdsh_mcpimport_report_new(scan.servers, scan.commands, scan.assets, scan.notes);
    if (o->json)
        cdsh_cli_print_json(stdout, report);
    else {
        char *text = cdsh_mcpimport_report_text_dup(report);
        fputs(text ? text : "", stdout);
        free(text);
    }
    json_decref(report);
    cdsh_mcpimport_scan_deinit(&scan);
    return 0;
}

static bool list_has(const json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
            return true;
    }
    return false;
}

static json_t *cfg_list(const json_t *cfg, const char *key)
{
    const json_t *v = json_object_get(cfg, key);
    return json_is_array(v) ? json_deep_copy(v) : json_array();
}

static void print_blocked(const char *what, const json_t *ir)
{
    fprintf(stderr, "cdsh import enable: %s \"%s\" is blocked:\n", what,
            json_string_value(json_object_get(ir, "name")));
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(ir, "reasons"), i, r)
    {
        if (strcmp(json_string_value(json_object_get(r, "level")), "blocked") == 0)
            fprintf(stderr, "  - %s: %s\n", json_string_value(json_object_get(r, "code")),
                    json_string_value(json_object_get(r, "message")));
    }
}

static int save(cdsh_profile *profile, json_t *servers, json_t *commands, json_t *projects,
                const opts *o)
{
    cdsh_error err = {0};
    bool any = json_array_size(servers) || json_array_size(commands);
    int rc = cdsh_profile_set_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME, "servers", servers, &err);
    if (!rc)
        rc = cdsh_profile_set_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME, "commands", commands,
                                     &err);
    if (!rc && projects)
        rc = cdsh_profile_set_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME, "projects", projects,
                                     &err);
    else
        json_decref(projects);
    if (!rc && o->claude_dir)
        rc = cdsh_profile_set_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME, "claudeDir",
                                     json_string(o->claude_dir), &err);
    if (!rc && o->codex_home)
        rc = cdsh_profile_set_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME, "codexHome",
                                     json_string(o->codex_home), &err);
    if (!rc && o->nallow) {
        json_t *allow =
            cfg_list(cdsh_profile_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME), "keyringAllow");
        for (int i = 0; i < o->nallow; i++)
            if (!list_has(allow, o->allow[i]))
                json_array_append_new(allow, json_string(o->allow[i]));
        rc = cdsh_profile_set_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME, "keyringAllow", allow,
                                     &err);
    }
    if (!rc)
        rc = cdsh_profile_set_enabled(profile, CDSH_MCPIMPORT_PLUGIN_NAME, any);
    if (!rc)
        rc = cdsh_profile_save(profile, &err);
    if (rc)
        fprintf(stderr, "cdsh import: %s\n", err.message[0] ? err.message : "cannot save");
    return rc ? 1 : 0;
}

static int do_enable(const opts *o)
{
    if (!o->all && o->nnames == 0) {
        fprintf(stderr, "cdsh import enable: name a server or /command, or pass --all-ok\n");
        return 2;
    }
    cdsh_fs_lock *lock = NULL;
    cdsh_profile *profile = NULL;
    if (cdsh_cli_profile_open("import", o->profile, &lock, &profile))
        return 1;
    const json_t *cfg = cdsh_profile_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME);
    cdsh_mcpimport_scan scan;
    int rc = run_scan(o, cfg, &scan);
    if (rc) {
        cdsh_profile_free(profile);
        cdsh_fs_lock_close(lock);
        return rc;
    }
    json_t *servers = cfg_list(cfg, "servers"), *commands = cfg_list(cfg, "commands");
    json_t *added = json_array();
    size_t i;
    json_t *ir;
    if (o->all) {
        json_array_foreach(scan.servers, i, ir)
        {
            const char *n = json_string_value(json_object_get(ir, "name"));
            if (strcmp(cdsh_mcpimport_verdict(ir), "ok") == 0 &&
                cdsh_mcpimport_scan_server(&scan, n) == ir && !list_has(servers, n)) {
                json_array_append_new(servers, json_string(n));
                json_array_append_new(added, json_pack("[s,s]", "server", n));
            }
        }
        json_array_foreach(scan.commands, i, ir)
        {
            const char *n = json_string_value(json_object_get(ir, "name"));
            if (strcmp(cdsh_mcpimport_verdict(ir), "ok") == 0 &&
                cdsh_mcpimport_scan_command(&scan, n) == ir && !list_has(commands, n)) {
                json_array_append_new(commands, json_string(n));
                json_array_append_new(added, json_pack("[s,s]", "command", n));
            }
        }
    }
    for (int k = 0; k < o->nnames && rc == 0; k++) {
        const char *n = o->names[k];
        bool slash = n[0] == '/';
        json_t *s = slash ? NULL : cdsh_mcpimport_scan_server(&scan, n);
        json_t *c = s ? NULL : cdsh_mcpimport_scan_command(&scan, slash ? n + 1 : n);
        if (!s && !c) {
            fprintf(stderr,
                    "cdsh import enable: no imported server or command named \"%s\" (see cdsh "
                    "import scan)\n",
                    n);
            rc = 1;
        } else if (strcmp(cdsh_mcpimport_verdict(s ? s : c), "blocked") == 0) {
            print_blocked(s ? "server" : "command", s ? s : c);
            rc = 1;
        } else {
            const char *name = json_string_value(json_object_get(s ? s : c, "name"));
            json_t *list = s ? servers : commands;
            if (!list_has(list, name)) {
                json_array_append_new(list, json_string(name));
                json_array_append_new(added, json_pack("[s,s]", s ? "server" : "command", name));
            }
        }
    }
    if (rc == 0) {
        json_t *projects = cfg_list(cfg, "projects");
        char cwd[4096];
        for (size_t r = 0; r < (size_t)(o->nroots ? o->nroots : 1); r++) {
            const char *root = o->nroots ? o->roots[r] : getcwd(cwd, sizeof cwd);
            char *abs = root && root[0] != '/' && getcwd(cwd, sizeof cwd)
                            ? cdsh_fs_path_join_dup(cwd, root)
                            : (root ? strdup(root) : NULL);
            if (abs && !list_has(projects, abs))
                json_array_append_new(projects, json_string(abs));
            free(abs);
        }
        rc = save(profile, json_incref(servers), json_incref(commands), projects, o);
    }
    if (rc == 0) {
        json_t *a;
        json_array_foreach(added, i, a)
        {
            printf("enabled %s %s%s\n", json_string_value(json_array_get(a, 0)),
                   strcmp(json_string_value(json_array_get(a, 0)), "command") == 0 ? "/" : "",
                   json_string_value(json_array_get(a, 1)));
        }
        if (!json_array_size(added))
            printf("nothing new to enable\n");
        printf("profile \"%s\": plugin \"import\" enabled; registered when cdsh starts\n",
               cdsh_profile_name(profile));
    }
    json_decref(added), json_decref(servers), json_decref(commands);
    cdsh_mcpimport_scan_deinit(&scan);
    cdsh_profile_free(profile);
    cdsh_fs_lock_close(lock);
    return rc;
}

static json_t *without(const json_t *list, const char *name, bool *removed)
{
    json_t *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v)
    {
        if (strcmp(json_string_value(v), name) == 0)
            *removed = true;
        else
            json_array_append(out, v);
    }
    return out;
}

static int do_disable(const opts *o)
{
    if (!o->all && o->nnames == 0) {
        fprintf(stderr, "cdsh import disable: name a server or /command, or pass --all\n");
        return 2;
    }
    cdsh_fs_lock *lock = NULL;
    cdsh_profile *profile = NULL;
    if (cdsh_cli_profile_open("import", o->profile, &lock, &profile))
        return 1;
    const json_t *cfg = cdsh_profile_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME);
    json_t *servers = o->all ? json_array() : cfg_list(cfg, "servers");
    json_t *commands = o->all ? json_array() : cfg_list(cfg, "commands");
    int rc = 0;
    for (int k = 0; k < o->nnames && rc == 0; k++) {
        const char *n = o->names[k];
        bool removed = false;
        json_t *ns = n[0] == '/' ? json_incref(servers) : without(servers, n, &removed);
        json_t *nc = without(commands, n[0] == '/' ? n + 1 : n, &removed);
        json_decref(servers), json_decref(commands);
        servers = ns, commands = nc;
        if (!removed) {
            fprintf(stderr, "cdsh import disable: \"%s\" is not enabled\n", n);
            rc = 1;
        } else
            printf("disabled %s\n", n);
    }
    if (rc == 0)
        rc = save(profile, json_incref(servers), json_incref(commands), NULL, o);
    if (rc == 0 && o->all)
        printf("disabled everything imported\n");
    json_decref(servers), json_decref(commands);
    cdsh_profile_free(profile);
    cdsh_fs_lock_close(lock);
    return rc;
}

static int do_list(const opts *o)
{
    cdsh_profile *profile = NULL;
    if (cdsh_cli_profile_open("import", o->profile, NULL, &profile))
        return 1;
    const json_t *cfg = cdsh_profile_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME);
    json_t *doc =
        json_pack("{s:b, s:o, s:o}", "enabled",
                  cdsh_profile_enabled(profile, CDSH_MCPIMPORT_PLUGIN_NAME) == 1, "servers",
                  cfg_list(cfg, "servers"), "commands", cfg_list(cfg, "commands"));
    if (o->json)
        cdsh_cli_print_json(stdout, doc);
    else {
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(doc, "servers"), i, v)
        {
            printf("server   %s\n", json_string_value(v));
        }
        json_array_foreach(json_object_get(doc, "commands"), i, v)
        {
            printf("command  /%s\n", json_string_value(v));
        }
        if (!json_array_size(json_object_get(doc, "servers")) &&
            !json_array_size(json_object_get(doc, "commands")))
            printf("nothing imported is enabled\n");
    }
    json_decref(doc);
    cdsh_profile_free(profile);
    return 0;
}

int cdsh_cmd_import(int argc, char **argv)
{
    static const char *const actions[] = {"scan", "enable", "disable", "list", NULL};
    int action;
    int rc = cdsh_cli_action("import", argc, argv, actions, usage, &action);
    if (rc >= 0)
        return rc;
    opts o;
    rc = parse(argc - 1, argv + 1, &o, actions[action]);
    if (rc >= 0)
        return rc;
    switch (action) {
    case 0: return do_scan(&o);
    case 1: return do_enable(&o);
    case 2: return do_disable(&o);
    default: return do_list(&o);
    }
}
