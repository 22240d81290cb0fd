/* test_cli.c — `cdsh import …` as a user sees it, run as the real binary
 * in a scratch home: the group's usage (bare, --help, -h), every row of
 * the operations table on the CLI surface (each answers --help), unknown
 * actions and options, options in the wrong row, a missing option value,
 * stray arguments; then scan (text and --json, secrets redacted), enable
 * (names, /commands, skill:, --all-ok, unknown and blocked names), list
 * (text and --json), disable (names, a name not enabled, --all), with the
 * exact exit status, stdout and stderr of each. */
#include "support/testkit.h"

#include "support/import_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/ops.h"
#include "plugins/mcpimport/ops.h"

typedef struct run {
    int rc;
    char *out, *err;
} run;

static run cli(const char *a1, const char *a2, const char *a3, const char *a4, const char *a5,
               const char *a6, const char *a7, const char *a8)
{
    run r = {0};
    r.rc = cdsh_test_run_cdsh(NULL, &r.out, &r.err, "import", a1, a2, a3, a4, a5, a6, a7, a8,
                              NULL);
    return r;
}

static void run_free(run *r)
{
    free(r->out), free(r->err);
}

#define USAGE_HEAD "Usage:\n  cdsh import scan [ROOT OPTIONS] [--json]\n"

/* A project with one command, one skill and two servers (one runnable with
 * a literal secret in its env, one whose command does not exist), and the
 * root options that confine the scan to it. */
typedef struct fx {
    cdsh_test_import_tree t;
    char proj[1200], claude[1200], codex[1200];
} fx;

static void build(fx *f)
{
    cdsh_test_import_tree_open(&f->t);
    cdsh_test_import_tree_put(&f->t, "proj/.claude/commands/hello.md",
                              "---\ndescription: Says hello\n---\nSay hello to $ARGUMENTS.\n");
    cdsh_test_import_tree_put(&f->t, "proj/.claude/skills/notes/SKILL.md",
                              "---\nname: notes\ndescription: Takes notes\n---\nWrite notes.\n");
    cdsh_test_import_tree_put(&f->t, "proj/.mcp.json",
                              "{\"mcpServers\": {"
                              "\"shell\": {\"command\": \"/bin/sh\", \"args\": [\"-c\", \"true\"],"
                              " \"env\": {\"API_TOKEN\": \"lit-5ecret-0123456789\"}},"
                              "\"gone\": {\"command\": \"/nonexistent/mcp-server\"}}}");
    cdsh_test_import_tree_put(&f->t, "claude/.keep", "");
    cdsh_test_import_tree_put(&f->t, "codex/.keep", "");
    snprintf(f->proj, sizeof f->proj, "%s", cdsh_test_import_tree_path(&f->t, "proj"));
    snprintf(f->claude, sizeof f->claude, "%s", cdsh_test_import_tree_path(&f->t, "claude"));
    snprintf(f->codex, sizeof f->codex, "%s", cdsh_test_import_tree_path(&f->t, "codex"));
}

static void usage_help_and_unknown_actions(void **state)
{
    (void)state;
    fx f;
    build(&f);
    run r = cli(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    assert_int_equal(r.rc, 2);
    assert_string_equal(r.out, "");
    assert_true(strncmp(r.err, USAGE_HEAD, strlen(USAGE_HEAD)) == 0);
    run_free(&r);
    static const char *const helps[] = {"--help", "-h"};
    for (size_t i = 0; i < 2; i++) {
        r = cli(helps[i], NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        assert_int_equal(r.rc, 0);
        assert_string_equal(r.err, "");
        assert_true(strncmp(r.out, USAGE_HEAD, strlen(USAGE_HEAD)) == 0);
        assert_non_null(strstr(r.out, "See docs/import.md.\n"));
        run_free(&r);
    }
    r = cli("frob", NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    assert_int_equal(r.rc, 2);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err,
                        "cdsh import: unknown action 'frob' (try `cdsh import --help`)\n");
    run_free(&r);
    cdsh_test_import_tree_close(&f.t);
}

/* Every CLI row of the table is an action the usage names and that answers
 * --help with it; the table has exactly the four documented rows. */
static void every_cli_row_is_an_action_with_help(void **state)
{
    (void)state;
    fx f;
    build(&f);
    cdsh_ops *ops = NULL;
    assert_int_equal(cdsh_ops_new(cdsh_mcpimport_ops_table(), NULL, NULL, &ops, NULL), 0);
    json_t *names = cdsh_ops_names(ops, CDSH_OP_CLI);
    char *list = json_dumps(names, JSON_COMPACT);
    assert_string_equal(list, "[\"scan\",\"enable\",\"disable\",\"list\"]");
    free(list);
    size_t i;
    json_t *n;
    json_array_foreach(names, i, n) {
        const char *row = json_string_value(n);
        char line[64];
        snprintf(line, sizeof line, "\n  cdsh import %s ", row);
        run r = cli(row, "--help", NULL, NULL, NULL, NULL, NULL, NULL);
        assert_int_equal(r.rc, 0);
        assert_string_equal(r.err, "");
        assert_non_null(strstr(r.out, line));
        run_free(&r);
    }
    json_decref(names);
    cdsh_ops_free(ops);
    cdsh_test_import_tree_close(&f.t);
}

static void bad_arguments_are_usage_errors(void **state)
{
    (void)state;
    fx f;
    build(&f);
    static const struct {
        const char *a1, *a2, *a3, *err;
    } cases[] = {
        {"scan", "--bogus", NULL, "cdsh import scan: unknown or misplaced option \"--bogus\"\n"},
        {"scan", "--all-ok", NULL, "cdsh import scan: unknown or misplaced option \"--all-ok\"\n"},
        {"enable", "--all", NULL, "cdsh import enable: unknown or misplaced option \"--all\"\n"},
        {"disable", "--all-ok", NULL,
         "cdsh import disable: unknown or misplaced option \"--all-ok\"\n"},
        {"list", "-x", NULL, "cdsh import list: unknown or misplaced option \"-x\"\n"},
        {"scan", "--root", NULL, "cdsh import scan: option \"--root\" needs a value\n"},
        {"enable", "x", "--profile", "cdsh import enable: option \"--profile\" needs a value\n"},
        {"scan", "stray", NULL, "cdsh import scan: unexpected argument \"stray\"\n"},
        {"list", "--json", "extra", "cdsh import list: unexpected argument \"extra\"\n"},
        {"enable", NULL, NULL,
         "cdsh import enable: name a server, /command or skill:name, or pass --all-ok\n"},
        {"enable", "--json", NULL, "cdsh import enable: name a server, /command or skill:name, "
                                   "or pass --all-ok\n"},
        {"disable", NULL, NULL,
         "cdsh import disable: name a server, /command or skill:name, or pass --all\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run r = cli(cases[i].a1, cases[i].a2, cases[i].a3, NULL, NULL, NULL, NULL, NULL);
        if (r.rc != 2 || strcmp(r.err, cases[i].err) != 0)
            fprintf(stderr, "case %zu: rc %d, stderr %s", i, r.rc, r.err);
        assert_int_equal(r.rc, 2);
        assert_string_equal(r.out, "");
        assert_string_equal(r.err, cases[i].err);
        run_free(&r);
    }
    /* nothing was written by any of them */
    run r = cli("list", "--json", NULL, NULL, NULL, NULL, NULL, NULL);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "{\n  \"enabled\": false,\n  \"servers\": [],\n  \"commands\": [],\n"
                               "  \"skills\": []\n}\n");
    run_free(&r);
    cdsh_test_import_tree_close(&f.t);
}

static void scan_prints_text_and_json_without_secrets(void **state)
{
    (void)state;
    fx f;
    build(&f);
    run r = cli("scan", "--root", f.proj, "--claude-dir", f.claude, "--codex-home", f.codex, NULL);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    assert_true(strncmp(r.out, "Claude Code\n  servers:\n", 23) == 0);
    /* a project's .mcp.json server is not approved yet: warn, with why */
    assert_non_null(strstr(r.out, "    warn     shell  (stdio: /bin/sh)\n"));
    assert_non_null(strstr(r.out, "        - warn NOT_APPROVED: "));
    assert_non_null(strstr(r.out, "    blocked  gone  (stdio: /nonexistent/mcp-server)\n"));
    assert_non_null(strstr(r.out, "  commands:\n    ok       /hello\n"));
    assert_non_null(strstr(r.out, "  skills:\n    ok       notes\n"));
    assert_non_null(strstr(r.out, "Codex\n  nothing found\n"));
    assert_non_null(strstr(r.out, "\nSummary: servers 0 ok, 1 warn, 1 blocked; commands 1 ok, "
                                  "0 warn, 0 blocked; skills 1 ok, 0 warn, 0 blocked; agents 0 "
                                  "ok, 0 warn, 0 blocked.\n"));
    assert_null(strstr(r.out, "lit-5ecret"));
    run_free(&r);

    r = cli("scan", "--json", "--root", f.proj, "--claude-dir", f.claude, "--codex-home", f.codex);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    assert_null(strstr(r.out, "lit-5ecret"));
    json_error_t je;
    json_t *doc = json_loads(r.out, 0, &je);
    assert_non_null(doc);
    assert_false(json_is_true(json_object_get(doc, "registered")));
    json_t *claude = json_array_get(json_object_get(doc, "sources"), 0);
    assert_string_equal(json_string_value(json_object_get(claude, "source")), "claude");
    json_t *shell = json_array_get(json_object_get(claude, "servers"), 0);
    assert_string_equal(json_string_value(json_object_get(shell, "name")), "shell");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(shell, "env"), "API_TOKEN")),
        "[REDACTED]");
    json_t *hello = json_array_get(json_object_get(claude, "commands"), 0);
    assert_string_equal(json_string_value(json_object_get(hello, "prompt")),
                        "Say hello to $ARGUMENTS.\n");
    json_t *sum = json_object_get(json_object_get(doc, "summary"), "servers");
    assert_int_equal(json_integer_value(json_object_get(sum, "blocked")), 1);
    json_decref(doc);
    /* the JSON is printed as the CLI prints every value: two-space indent, a newline */
    assert_true(strncmp(r.out, "{\n  \"sources\": [\n", 17) == 0);
    assert_string_equal(r.out + strlen(r.out) - 3, "\n}\n");
    run_free(&r);
    cdsh_test_import_tree_close(&f.t);
}

static void enable_list_disable_round_trip(void **state)
{
    (void)state;
    fx f;
    build(&f);
    const char *P = "--root", *C = "--claude-dir", *X = "--codex-home";
    run r = cli("enable", "/hello", "skill:notes", "shell", P, f.proj, C, f.claude);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    assert_string_equal(r.out, "enabled command /hello\nenabled skill notes\nenabled server shell\n"
                               "profile \"default\": plugin \"import\" enabled; registered when "
                               "cdsh starts\n");
    run_free(&r);
    /* again: nothing new */
    r = cli("enable", "shell", P, f.proj, C, f.claude, X, f.codex);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "nothing new to enable\nprofile \"default\": plugin \"import\" "
                               "enabled; registered when cdsh starts\n");
    run_free(&r);
    /* unknown names, by kind */
    static const struct {
        const char *name, *err;
    } unknown[] = {
        {"nope", "cdsh import enable: no imported server, skill or command named \"nope\" (see "
                 "cdsh import scan)\n"},
        {"/nope", "cdsh import enable: no imported command named \"nope\" (see cdsh import "
                  "scan)\n"},
        {"skill:nope", "cdsh import enable: no imported skill named \"nope\" (see cdsh import "
                       "scan)\n"},
    };
    for (size_t i = 0; i < 3; i++) {
        r = cli("enable", unknown[i].name, P, f.proj, C, f.claude, X, f.codex);
        assert_int_equal(r.rc, 1);
        assert_string_equal(r.out, "");
        assert_string_equal(r.err, unknown[i].err);
        run_free(&r);
    }
    /* a blocked server is refused with its reason, and nothing is saved */
    r = cli("enable", "gone", P, f.proj, C, f.claude, X, f.codex);
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.out, "");
    assert_true(strncmp(r.err, "cdsh import enable: server \"gone\" is blocked:\n  - ", 50) == 0);
    run_free(&r);

    r = cli("list", NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "server   shell\nskill    notes\ncommand  /hello\n");
    run_free(&r);
    r = cli("list", "--json", NULL, NULL, NULL, NULL, NULL, NULL);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "{\n  \"enabled\": true,\n  \"servers\": [\n    \"shell\"\n  ],\n"
                               "  \"commands\": [\n    \"hello\"\n  ],\n  \"skills\": [\n    "
                               "\"notes\"\n  ]\n}\n");
    run_free(&r);

    /* a name not enabled: the names before it are reported, nothing is saved */
    r = cli("disable", "/hello", "ghost", NULL, NULL, NULL, NULL, NULL);
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.out, "disabled /hello\n");
    assert_string_equal(r.err, "cdsh import disable: \"ghost\" is not enabled\n");
    run_free(&r);
    r = cli("list", NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    assert_non_null(strstr(r.out, "command  /hello\n"));
    run_free(&r);
    /* "--" ends the options: a name may start with '-' */
    r = cli("disable", "--", "-odd", NULL, NULL, NULL, NULL, NULL);
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.err, "cdsh import disable: \"-odd\" is not enabled\n");
    run_free(&r);
    r = cli("disable", "skill:notes", NULL, NULL, NULL, NULL, NULL, NULL);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "disabled skill:notes\n");
    run_free(&r);
    r = cli("disable", "--all", NULL, NULL, NULL, NULL, NULL, NULL);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "disabled everything imported\n");
    run_free(&r);
    r = cli("list", NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "nothing imported is enabled\n");
    run_free(&r);

    /* --all-ok takes every ok item: not the warned or the blocked server */
    r = cli("enable", "--all-ok", P, f.proj, C, f.claude, X, f.codex);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "enabled skill notes\nenabled command /hello\n"
                               "profile \"default\": plugin \"import\" enabled; registered when "
                               "cdsh starts\n");
    run_free(&r);
    cdsh_test_import_tree_close(&f.t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(usage_help_and_unknown_actions),
        cmocka_unit_test(every_cli_row_is_an_action_with_help),
        cmocka_unit_test(bad_arguments_are_usage_errors),
        cmocka_unit_test(scan_prints_text_and_json_without_secrets),
        cmocka_unit_test(enable_list_disable_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
