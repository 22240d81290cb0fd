/* cmd_import.c — `cdsh import`: scan prints the report (registers nothing),
 * enable/disable record choices in the profile's "import" plugin config,
 * list shows them. Parsing and printing only; the pipeline is
 * src/plugins/mcpimport/service.h. */
#include "plugins/mcpimport/cmd_import.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"

#include "host/cli.h"
#include "plugins/mcpimport/plugin.h"
#include "plugins/mcpimport/preflight.h"
#include "plugins/mcpimport/probe.h"
#include "plugins/mcpimport/redact.h"
#include "plugins/mcpimport/report.h"
#include "plugins/mcpimport/service.h"

#define MAXV 64

static void usage(FILE *out)
{
    fprintf(
        out,
        "Usage:\n"
        "  cdsh import scan [ROOT OPTIONS] [--json]\n"
        "      find Claude Code and Codex MCP servers, commands, prompts, skills and\n"
        "      sub-agents, judge each (ok / warn / blocked, with reasons) and print the\n"
        "      report; registers nothing\n"
        "  cdsh import enable (NAME... | --all-ok) [ROOT OPTIONS] [--profile P]\n"
        "      record servers (NAME), commands (/NAME) and skills or sub-agents\n"
        "      (skill:NAME; a bare NAME is a server, else a skill, else a command) in the\n"
        "      profile; they are registered when cdsh starts. Blocked ones are refused\n"
        "      with the reason.\n"
        "  cdsh import disable (NAME... | --all) [--profile P]\n"
        "      remove them from the profile (nothing of them is left registered)\n"
        "  cdsh import list [--profile P] [--json]\n"
        "      what the profile enables\n"
        "\n"
        "Root options:\n"
        "  --root DIR          a project directory (.mcp.json, .claude/{commands,skills,agents};\n"
        "                      ~/.claude.json\n"
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
    /* GNU getopt permutes: options may follow names, as the usage lines show;
     * "--" ends the options (a name may then start with '-'). */
    while ((c = getopt_long(argc, argv, "-h", longopts, NULL)) != -1) {
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
        case 1:
            if (o->nnames < MAXV)
                o->names[o->nnames++] = optarg;
            break;
        case 'h': usage(stdout); return 0;
        default:
        bad:
            fprintf(stderr, "cdsh import %s: unknown or misplaced option \"%s\"\n", action,
                    argv[optind - 1]);
            return 2;
        }
    }
    for (int i = optind; i < argc; i++)
        if (o->nnames < MAXV)
            o->names[o->nnames++] = argv[i];
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
    json_array_foreach(json_object_get(cfg, "keyringAllow"), i, v) {
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
    json_t *report = cdsh_mcpimport_report_new(
        scan.servers, cdsh_mcpimport_scan_commands_json(&scan), scan.skills, scan.notes);
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
    json_array_foreach(arr, i, v) {
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
    json_array_foreach(json_object_get(ir, "reasons"), i, r) {
        if (strcmp(json_string_value(json_object_get(r, "level")), "blocked") == 0) {
            char *m =
                cdsh_mcpimport_redact_text_dup(json_string_value(json_object_get(r, "message")));
            fprintf(stderr, "  - %s: %s\n", json_string_value(json_object_get(r, "code")),
                    m ? m : "[REDACTED]");
            free(m);
        }
    }
}

/* The profile's lists of enabled names, one per kind (owned copies). */
typedef struct enabled {
    json_t *servers, *commands, *skills;
} enabled;

static void enabled_load(enabled *en, const json_t *cfg, bool empty)
{
    en->servers = empty ? json_array() : cfg_list(cfg, "servers");
    en->commands = empty ? json_array() : cfg_list(cfg, "commands");
    en->skills = empty ? json_array() : cfg_list(cfg, "skills");
}

static void enabled_deinit(enabled *en)
{
    json_decref(en->servers), json_decref(en->commands), json_decref(en->skills);
}

static int save(cdsh_profile *profile, const enabled *en, json_t *projects, const opts *o)
{
    cdsh_error err = {0};
    bool any = json_array_size(en->servers) || json_array_size(en->commands) ||
               json_array_size(en->skills);
    int rc = cdsh_profile_set_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME, "servers",
                                     json_incref(en->servers), &err);
    if (!rc)
        rc = cdsh_profile_set_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME, "commands",
                                     json_incref(en->commands), &err);
    if (!rc)
        rc = cdsh_profile_set_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME, "skills",
                                     json_incref(en->skills), &err);
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

/* One kind of importable item: its IR in the scan, its profile list, and how
 * `enable` / `list` print a name. A bare NAME is looked up in this order. */
enum { KIND_SERVER, KIND_SKILL, KIND_COMMAND, KIND_COUNT };
typedef struct kind {
    const char *what, *prefix;
    json_t *(*lookup)(const cdsh_mcpimport_scan *, const char *);
    const json_t *irs;
    json_t *list;
} kind;

static void kinds_init(kind k[KIND_COUNT], cdsh_mcpimport_scan *scan, enabled *en)
{
    k[KIND_SERVER] =
        (kind){"server", "", cdsh_mcpimport_scan_server, scan ? scan->servers : NULL, en->servers};
    k[KIND_SKILL] =
        (kind){"skill", "", cdsh_mcpimport_scan_skill, scan ? scan->skills : NULL, en->skills};
    k[KIND_COMMAND] = (kind){"command", "/", cdsh_mcpimport_scan_command,
                             scan ? cdsh_mcpimport_scan_commands_json(scan) : NULL, en->commands};
}

static void add_name(kind *k, const char *name, json_t *added)
{
    if (list_has(k->list, name))
        return;
    json_array_append_new(k->list, json_string(name));
    json_array_append_new(added, json_pack("[s,s]", k->what, name));
}

/* The kind a NAME argument asks for: "/x" a command, "skill:x" a skill, a
 * bare name any kind (servers, then skills, then commands). *name is the
 * name without its prefix. -1 for any. */
static int name_kind(const char *arg, const char **name)
{
    *name = arg;
    if (arg[0] == '/') {
        *name = arg + 1;
        return KIND_COMMAND;
    }
    if (strncmp(arg, "skill:", 6) == 0) {
        *name = arg + 6;
        return KIND_SKILL;
    }
    return -1;
}

static int do_enable(const opts *o)
{
    if (!o->all && o->nnames == 0) {
        fprintf(stderr,
                "cdsh import enable: name a server, /command or skill:name, or pass --all-ok\n");
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
    enabled en;
    enabled_load(&en, cfg, false);
    kind kinds[KIND_COUNT];
    kinds_init(kinds, &scan, &en);
    json_t *added = json_array();
    size_t i;
    json_t *ir;
    for (int k = 0; o->all && k < KIND_COUNT; k++) {
        json_array_foreach(kinds[k].irs, i, ir) {
            const char *n = json_string_value(json_object_get(ir, "name"));
            if (strcmp(cdsh_mcpimport_verdict(ir), "ok") == 0 && kinds[k].lookup(&scan, n) == ir)
                add_name(&kinds[k], n, added);
        }
    }
    for (int a = 0; a < o->nnames && rc == 0; a++) {
        const char *n;
        int want = name_kind(o->names[a], &n);
        int k = want >= 0 ? want : KIND_SERVER;
        ir = kinds[k].lookup(&scan, n);
        while (!ir && want < 0 && ++k < KIND_COUNT)
            ir = kinds[k].lookup(&scan, n);
        if (!ir) {
            fprintf(stderr,
                    "cdsh import enable: no imported %s named \"%s\" (see cdsh import scan)\n",
                    want < 0 ? "server, skill or command" : kinds[want].what, n);
            rc = 1;
        } else if (strcmp(cdsh_mcpimport_verdict(ir), "blocked") == 0) {
            print_blocked(kinds[k].what, ir);
            rc = 1;
        } else
            add_name(&kinds[k], json_string_value(json_object_get(ir, "name")), added);
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
        rc = save(profile, &en, projects, o);
    }
    if (rc == 0) {
        json_t *a;
        json_array_foreach(added, i, a) {
            const char *what = json_string_value(json_array_get(a, 0));
            printf("enabled %s %s%s\n", what, strcmp(what, "command") == 0 ? "/" : "",
                   json_string_value(json_array_get(a, 1)));
        }
        if (!json_array_size(added))
            printf("nothing new to enable\n");
        printf("profile \"%s\": plugin \"import\" enabled; registered when cdsh starts\n",
               cdsh_profile_name(profile));
    }
    json_decref(added);
    enabled_deinit(&en);
    cdsh_mcpimport_scan_deinit(&scan);
    cdsh_profile_free(profile);
    cdsh_fs_lock_close(lock);
    return rc;
}

/* Removes name from *list (replacing it); true when it was there. */
static bool remove_name(json_t **list, const char *name)
{
    json_t *out = json_array();
    bool removed = false;
    size_t i;
    json_t *v;
    json_array_foreach(*list, i, v) {
        if (strcmp(json_string_value(v), name) == 0)
            removed = true;
        else
            json_array_append(out, v);
    }
    json_decref(*list);
    *list = out;
    return removed;
}

static int do_disable(const opts *o)
{
    if (!o->all && o->nnames == 0) {
        fprintf(stderr, "cdsh import disable: name a server, /command or skill:name, or pass "
                        "--all\n");
        return 2;
    }
    cdsh_fs_lock *lock = NULL;
    cdsh_profile *profile = NULL;
    if (cdsh_cli_profile_open("import", o->profile, &lock, &profile))
        return 1;
    const json_t *cfg = cdsh_profile_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME);
    enabled en;
    enabled_load(&en, cfg, o->all);
    json_t **lists[KIND_COUNT] = {
        [KIND_SERVER] = &en.servers, [KIND_SKILL] = &en.skills, [KIND_COMMAND] = &en.commands};
    int rc = 0;
    for (int a = 0; a < o->nnames && rc == 0; a++) {
        const char *n;
        int want = name_kind(o->names[a], &n);
        bool removed = false;
        for (int k = 0; k < KIND_COUNT; k++)
            if (want < 0 || want == k)
                removed |= remove_name(lists[k], n);
        if (!removed) {
            fprintf(stderr, "cdsh import disable: \"%s\" is not enabled\n", o->names[a]);
            rc = 1;
        } else
            printf("disabled %s\n", o->names[a]);
    }
    if (rc == 0)
        rc = save(profile, &en, NULL, o);
    if (rc == 0 && o->all)
        printf("disabled everything imported\n");
    enabled_deinit(&en);
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
    enabled en;
    enabled_load(&en, cfg, false);
    if (o->json) {
        json_t *doc =
            json_pack("{s:b, s:O, s:O, s:O}", "enabled",
                      cdsh_profile_enabled(profile, CDSH_MCPIMPORT_PLUGIN_NAME) == 1, "servers",
                      en.servers, "commands", en.commands, "skills", en.skills);
        cdsh_cli_print_json(stdout, doc);
        json_decref(doc);
    } else {
        kind kinds[KIND_COUNT];
        kinds_init(kinds, NULL, &en);
        size_t i, total = 0;
        json_t *v;
        for (int k = 0; k < KIND_COUNT; k++) {
            json_array_foreach(kinds[k].list, i, v) {
                printf("%-8s %s%s\n", kinds[k].what, kinds[k].prefix, json_string_value(v));
            }
            total += json_array_size(kinds[k].list);
        }
        if (!total)
            printf("nothing imported is enabled\n");
    }
    enabled_deinit(&en);
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
    if ((action == 0 || action == 3) && o.nnames) {
        fprintf(stderr, "cdsh import %s: unexpected argument \"%s\"\n", actions[action],
                o.names[0]);
        return 2;
    }
    switch (action) {
    case 0: return do_scan(&o);
    case 1: return do_enable(&o);
    case 2: return do_disable(&o);
    default: return do_list(&o);
    }
}

const cdsh_subcommand cdsh_mcpimport_subcommands[] = {
    {"import", "scan Claude Code / Codex MCP servers and commands; enable them in a profile",
     cdsh_cmd_import},
    {NULL, NULL, NULL},
};
