/* cmd_import.c — `cdsh import`, built from the importer's operations table
 * (ops.c): the usage, argv → a row's arguments, and each row's value →
 * what is printed and the exit status. The work is in the handlers. */
#include "plugins/mcpimport/cmd_import.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/cli.h"
#include "plugins/mcpimport/ops.h"
#include "plugins/mcpimport/report.h"

#define MAXV 64

void cdsh__mcpimport_cli_usage(FILE *out)
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

static void add_str(json_t *args, const char *key, const char *v)
{
    json_t *a = json_object_get(args, key);
    if (!a) {
        a = json_array();
        json_object_set_new(args, key, a);
    }
    if (json_array_size(a) < MAXV)
        json_array_append_new(a, json_string(v));
}

int cdsh__mcpimport_cli_parse(void *ud, int argc, char **argv, json_t **args)
{
    (void)ud;
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
    const char *action = argv[0];
    json_t *a = json_object();
    optind = 1;
    opterr = 0;
    int c, status = -1;
    /* GNU getopt permutes: options may follow names, as the usage lines show;
     * "--" ends the options (a name may then start with '-'). */
    while (status < 0 && (c = getopt_long(argc, argv, "-:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'r': add_str(a, "roots", optarg); break;
        case 'k': add_str(a, "keyringAllow", optarg); break;
        case 'c': json_object_set_new(a, "claudeDir", json_string(optarg)); break;
        case 'x': json_object_set_new(a, "codexHome", json_string(optarg)); break;
        case 'p': json_object_set_new(a, "profile", json_string(optarg)); break;
        case 'j': json_object_set_new(a, "json", json_true()); break;
        case 'A':
            if (strcmp(action, "enable") != 0)
                goto bad;
            json_object_set_new(a, "all", json_true());
            break;
        case 'a':
            if (strcmp(action, "disable") != 0)
                goto bad;
            json_object_set_new(a, "all", json_true());
            break;
        case 1: add_str(a, "names", optarg); break;
        case 'h':
            cdsh__mcpimport_cli_usage(stdout);
            status = 0;
            break;
        case ':':
            fprintf(stderr, "cdsh import %s: option \"%s\" needs a value\n", action,
                    argv[optind - 1]);
            status = 2;
            break;
        default:
        bad:
            fprintf(stderr, "cdsh import %s: unknown or misplaced option \"%s\"\n", action,
                    argv[optind - 1]);
            status = 2;
        }
    }
    for (int i = optind; status < 0 && i < argc; i++)
        add_str(a, "names", argv[i]);
    const json_t *names = json_object_get(a, "names");
    bool all = json_is_true(json_object_get(a, "all"));
    if (status < 0 && (strcmp(action, "scan") == 0 || strcmp(action, "list") == 0) &&
        json_array_size(names)) {
        fprintf(stderr, "cdsh import %s: unexpected argument \"%s\"\n", action,
                json_string_value(json_array_get(names, 0)));
        status = 2;
    } else if (status < 0 && strcmp(action, "enable") == 0 && !all && !json_array_size(names)) {
        fprintf(stderr,
                "cdsh import enable: name a server, /command or skill:name, or pass --all-ok\n");
        status = 2;
    } else if (status < 0 && strcmp(action, "disable") == 0 && !all && !json_array_size(names)) {
        fprintf(stderr, "cdsh import disable: name a server, /command or skill:name, or pass "
                        "--all\n");
        status = 2;
    }
    if (status >= 0)
        json_decref(a);
    else
        *args = a;
    return status;
}

static const char *s_of(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static int print_scan(const json_t *args, const json_t *report)
{
    if (json_is_true(json_object_get(args, "json"))) {
        /* as cdsh_cli_print_json prints it, streamed: a large report is
         * not first made into one string */
        json_dumpf(report, stdout, JSON_INDENT(2) | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
        fputc('\n', stdout);
    } else {
        char *text = cdsh_mcpimport_report_text_dup(report);
        fputs(text ? text : "", stdout);
        free(text);
    }
    return 0;
}

static int print_enable(const json_t *args, const json_t *v)
{
    (void)args;
    const json_t *refused = json_object_get(v, "refused");
    size_t i;
    json_t *a;
    if (refused && strcmp(s_of(refused, "why"), "unknown") == 0) {
        fprintf(stderr, "cdsh import enable: no imported %s named \"%s\" (see cdsh import scan)\n",
                s_of(refused, "what"), s_of(refused, "name"));
        return 1;
    }
    if (refused) {
        fprintf(stderr, "cdsh import enable: %s \"%s\" is blocked:\n", s_of(refused, "what"),
                s_of(refused, "name"));
        json_array_foreach(json_object_get(refused, "reasons"), i, a) {
            fprintf(stderr, "  - %s: %s\n", s_of(a, "code"), s_of(a, "message"));
        }
        return 1;
    }
    json_array_foreach(json_object_get(v, "added"), i, a) {
        const char *what = json_string_value(json_array_get(a, 0));
        printf("enabled %s %s%s\n", what, strcmp(what, "command") == 0 ? "/" : "",
               json_string_value(json_array_get(a, 1)));
    }
    if (!json_array_size(json_object_get(v, "added")))
        printf("nothing new to enable\n");
    printf("profile \"%s\": plugin \"import\" enabled; registered when cdsh starts\n",
           s_of(v, "profile"));
    return 0;
}

static int print_disable(const json_t *args, const json_t *v)
{
    (void)args;
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(v, "disabled"), i, n) {
        printf("disabled %s\n", json_string_value(n));
    }
    if (s_of(v, "notEnabled")) {
        fprintf(stderr, "cdsh import disable: \"%s\" is not enabled\n", s_of(v, "notEnabled"));
        return 1;
    }
    if (s_of(v, "saveError")) {
        fprintf(stderr, "cdsh import: %s\n", s_of(v, "saveError"));
        return 1;
    }
    if (json_is_true(json_object_get(v, "all")))
        printf("disabled everything imported\n");
    return 0;
}

static int print_list(const json_t *args, const json_t *v)
{
    if (json_is_true(json_object_get(args, "json"))) {
        cdsh_cli_print_json(stdout, v);
        return 0;
    }
    static const char *const kinds[][3] = {
        {"servers", "server", ""}, {"skills", "skill", ""}, {"commands", "command", "/"}};
    size_t i, total = 0;
    json_t *n;
    for (size_t k = 0; k < 3; k++) {
        const json_t *list = json_object_get(v, kinds[k][0]);
        json_array_foreach(list, i, n) {
            printf("%-8s %s%s\n", kinds[k][1], kinds[k][2], json_string_value(n));
        }
        total += json_array_size(list);
    }
    if (!total)
        printf("nothing imported is enabled\n");
    return 0;
}

/* A row's printer: a failed call is `cdsh import: <message>` and 1, else
 * print(args, value); value is taken. */
static int printed(const cdsh_op_call *call, int rc, json_t *value, const cdsh_error *err,
                   int (*print)(const json_t *args, const json_t *value))
{
    int status = 1;
    if (rc < 0)
        fprintf(stderr, "cdsh import: %s\n", err->message);
    else
        status = print(call->args, value);
    json_decref(value);
    return status;
}

#define PRINTER(row)                                                                               \
    int cdsh__mcpimport_print_##row(void *ud, const cdsh_op_call *call, int rc, json_t *value,     \
                                    const cdsh_error *err)                                         \
    {                                                                                              \
        (void)ud;                                                                                  \
        return printed(call, rc, value, err, print_##row);                                         \
    }
PRINTER(scan)
PRINTER(enable)
PRINTER(disable)
PRINTER(list)

int cdsh_cmd_import(int argc, char **argv)
{
    cdsh_ops *ops = NULL;
    cdsh_error err = {0};
    if (cdsh_ops_new(cdsh_mcpimport_ops_table(), NULL, NULL, &ops, &err) != 0) {
        fprintf(stderr, "cdsh import: %s\n", err.message);
        return 1;
    }
    int status = cdsh_ops_cli_run(ops, argc, argv);
    cdsh_ops_free(ops);
    return status;
}

const cdsh_subcommand cdsh_mcpimport_subcommands[] = {
    {"import", "scan Claude Code / Codex MCP servers and commands; enable them in a profile",
     cdsh_cmd_import},
    {NULL, NULL, NULL},
};
