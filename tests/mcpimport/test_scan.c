/* test_scan.c — the whole scan over a fixture tree built from the samples: a
 * Claude plugin cache with two marketplaces and several plugins, a
 * ~/.claude.json with user and local scopes, a project, a Codex home;
 * expected verdicts compared exactly; secrets from the environment and a
 * fake keyring tool never reach the report. */
#include "support/testkit.h"

#include "support/import_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "plugins/mcpimport/report.h"
#include "plugins/mcpimport/service.h"

#define SAMPLES CDSH_TEST_DATA_DIR "/import-samples/"
#define ENV_SECRET "tok-planted-5f1e9a"
#define KEYRING_SECRET "kr-planted-77c0d2"

typedef struct fx {
    cdsh_test_import_tree t; /* its home doubles as the fixture root */
} fx;

static void put(fx *f, const char *rel, const char *text)
{
    cdsh_test_import_tree_put(&f->t, rel, text);
}

static void copy(fx *f, const char *sample, const char *rel)
{
    char src[512];
    snprintf(src, sizeof src, SAMPLES "%s", sample);
    char *text = cdsh_test_read_file(src, NULL);
    assert_non_null(text);
    put(f, rel, text);
    free(text);
}

static void build(fx *f)
{
    /* the CLI's defaults must never read the developer's ~/.claude or ~/.codex */
    cdsh_test_import_tree_open(&f->t);
    char reg[4096];
    snprintf(reg, sizeof reg,
             "{\"version\":2,\"plugins\":{"
             "\"commit-commands@official\":[{\"scope\":\"user\",\"installPath\":\"%s/claude/"
             "plugins/cache/official/commit-commands/1.0.0\",\"version\":\"1.0.0\"}],"
             "\"context7@official\":[{\"scope\":\"user\",\"installPath\":\"%s/claude/plugins/"
             "cache/official/context7/unknown\",\"version\":\"unknown\"}],"
             "\"tools@community\":[{\"scope\":\"project\",\"projectPath\":\"%s/proj\","
             "\"installPath\":\"%s/claude/plugins/cache/community/tools/2.0\"}],"
             "\"legal@community\":[{\"scope\":\"user\",\"installPath\":\"%s/claude/plugins/cache/"
             "community/legal/1.0\"}]}}",
             f->t.home, f->t.home, f->t.home, f->t.home, f->t.home);
    put(f, "claude/plugins/installed_plugins.json", reg);
    copy(f, "claude-plugin.commit-commands.json",
         "claude/plugins/cache/official/commit-commands/1.0.0/.claude-plugin/plugin.json");
    copy(f, "claude-command.commit.md",
         "claude/plugins/cache/official/commit-commands/1.0.0/commands/commit.md");
    copy(f, "claude-mcp.flat-stdio.context7.json",
         "claude/plugins/cache/official/context7/unknown/.mcp.json");
    put(f, "claude/plugins/cache/community/tools/2.0/.claude-plugin/plugin.json",
        "{\"name\":\"tools\",\"hooks\":{},\"mcpServers\":{\"local-srv\":{\"command\":\"./bin/srv\","
        "\"args\":[\"${CLAUDE_PLUGIN_ROOT}/c.json\"]}}}");
    put(f, "claude/plugins/cache/community/tools/2.0/bin/srv", "#!/bin/sh\n");
    chmod(cdsh_test_import_tree_path(&f->t, "claude/plugins/cache/community/tools/2.0/bin/srv"),
          0755);
    put(f, "claude/plugins/cache/community/tools/2.0/agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews\n---\nYou review.\n");
    put(f, "claude/plugins/cache/community/tools/2.0/skills/helper/SKILL.md",
        "---\nname: helper\ndescription: Helps\n---\nHelp.\n");
    copy(f, "claude-mcp.wrapped-http.employment-legal.json",
         "claude/plugins/cache/community/legal/1.0/.mcp.json");
    char cj[2048];
    snprintf(
        cj, sizeof cj,
        "{\"numStartups\":3,\"mcpServers\":{\"context7\":{\"command\":\"npx\",\"args\":[\"-y\","
        "\"@upstash/context7-mcp\"]}},\"projects\":{\"%s/proj\":{\"mcpServers\":{"
        "\"secret-api\":{\"type\":\"http\",\"url\":\"https://api.example.com/mcp\","
        "\"headers\":{\"Authorization\":\"Bearer ${SCAN_TEST_TOKEN}\"}},"
        "\"kr\":{\"command\":\"node\",\"env\":{\"K\":\"${KR_VAR}\"}}}}}}",
        f->t.home);
    put(f, "claude/.claude.json", cj);
    put(f, "proj/.mcp.json",
        "{\"mcpServers\":{\"dock\":{\"command\":\"docker\",\"args\":[\"run\","
        "\"img\"]}}}");
    put(f, "proj/.claude/commands/hello.md", "Say hello to $ARGUMENTS\n");
    copy(f, "codex-config.codex2dsh-fixture.toml", "codex/config.toml");
    put(f, "codex/prompts/review.md", "---\ndescription: Review\n---\nReview #$1\n");
    put(f, "bin/secret-tool",
        "#!/bin/sh\n[ \"$1 $2 $3 $4 $5\" = \"lookup service cdsh-import name KR_VAR\" ] && "
        "printf '%s' '" KEYRING_SECRET "' && exit 0\nexit 1\n");
    chmod(cdsh_test_import_tree_path(&f->t, "bin/secret-tool"), 0755);
    setenv("SCAN_TEST_TOKEN", ENV_SECRET, 1);
}

typedef struct fake {
    char srv[1024];
} fake;

static bool found(void *ud, const char *cmd)
{
    const fake *f = ud;
    return strcmp(cmd, "npx") == 0 || strcmp(cmd, "node") == 0 || strcmp(cmd, "docker") == 0 ||
           strcmp(cmd, f->srv) == 0;
}

static bool docker_down(void *ud)
{
    (void)ud;
    return false;
}

static void run_scan(fx *f, cdsh_mcpimport_scan *scan)
{
    char claude[1024], cjson[1024], codex[1024], proj[1024], tool[1024];
    snprintf(claude, sizeof claude, "%s/claude", f->t.home);
    snprintf(cjson, sizeof cjson, "%s/claude/.claude.json", f->t.home);
    snprintf(codex, sizeof codex, "%s/codex", f->t.home);
    snprintf(proj, sizeof proj, "%s/proj", f->t.home);
    snprintf(tool, sizeof tool, "%s/bin/secret-tool", f->t.home);
    const char *projects[] = {proj, NULL};
    cdsh_mcpimport_roots roots = {claude, cjson, codex, projects};
    static fake fk;
    snprintf(fk.srv, sizeof fk.srv, "%s/claude/plugins/cache/community/tools/2.0/bin/srv",
             f->t.home);
    cdsh_mcpimport_probe probe = {found, docker_down, &fk};
    const char *allow[] = {"KR_VAR", NULL};
    cdsh_mcpimport_secret_opts so = {allow, tool};
    assert_int_equal(cdsh_mcpimport_scan_run(&roots, &probe, &so, scan, NULL), 0);
}

static void teardown_fx(fx *f)
{
    unsetenv("SCAN_TEST_TOKEN");
    cdsh_test_import_tree_close(&f->t);
}

static char *verdicts(const json_t *list)
{
    char buf[4096] = "";
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x) {
        char one[256];
        snprintf(one, sizeof one, "%s%s=%s", i ? " " : "",
                 json_string_value(json_object_get(x, "name")),
                 json_string_value(json_object_get(x, "verdict")));
        strncat(buf, one, sizeof buf - strlen(buf) - 1);
    }
    return strdup(buf);
}

static void fixture_tree_gives_expected_verdicts_in_precedence_order(void **state)
{
    (void)state;
    fx f;
    build(&f);
    cdsh_mcpimport_scan scan;
    run_scan(&f, &scan);
    char *v = verdicts(scan.servers);
    /* the first context7 shadows the later one, as in Claude Code: info, ok */
    assert_string_equal(v, "secret-api=ok kr=ok dock=blocked context7=ok context7=blocked "
                           "local-srv=ok Slack=warn Google-Drive=warn google-mcp-toolbox=blocked "
                           "kingbase-demo-db=warn oracle-demo-db=warn node_repl=blocked");
    free(v);
    v = verdicts(cdsh_mcpimport_scan_commands_json(&scan));
    assert_string_equal(v, "commit-commands_commit=warn hello=ok review=ok");
    free(v);
    json_t *dock = json_array_get(scan.servers, 2);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(dock, "reasons"), 0), "code")),
                        "DOCKER_UNREACHABLE");
    json_t *local = json_array_get(scan.servers, 5);
    json_t *prov = json_object_get(local, "provenance");
    assert_string_equal(json_string_value(json_object_get(prov, "plugin")), "tools@community");
    assert_string_equal(json_string_value(json_object_get(prov, "scope")), "project");
    char want[1024];
    snprintf(want, sizeof want, "%s/claude/plugins/cache/community/tools/2.0/c.json", f.t.home);
    assert_string_equal(json_string_value(json_array_get(json_object_get(local, "args"), 0)), want);
    json_t *sa = json_array_get(scan.servers, 0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(sa, "provenance"), "scope")), "local");
    /* plugin skills and sub-agents are offered as namespaced skills, skills first */
    v = verdicts(scan.skills);
    assert_string_equal(v, "tools-helper=ok tools-reviewer=ok");
    free(v);
    assert_string_equal(json_string_value(json_object_get(json_array_get(scan.skills, 1), "kind")),
                        "agent");
    cdsh_mcpimport_scan_deinit(&scan);
    teardown_fx(&f);
}

static void secrets_resolve_from_env_and_keyring_but_never_reach_the_report(void **state)
{
    (void)state;
    fx f;
    build(&f);
    cdsh_mcpimport_scan scan;
    run_scan(&f, &scan);
    json_t *sa = json_array_get(scan.servers, 0), *kr = json_array_get(scan.servers, 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(sa, "unresolved"), 0), "resolvedFrom")),
                        "env");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(kr, "unresolved"), 0), "resolvedFrom")),
                        "keyring");
    assert_string_equal(cdsh_mcpimport_secrets_get(scan.secrets, "KR_VAR"), KEYRING_SECRET);
    assert_string_equal(cdsh_mcpimport_secrets_get(scan.secrets, "SCAN_TEST_TOKEN"), ENV_SECRET);
    json_t *report = cdsh_mcpimport_report_new(
        scan.servers, cdsh_mcpimport_scan_commands_json(&scan), scan.skills, scan.notes);
    char *json = json_dumps(report, 0), *text = cdsh_mcpimport_report_text_dup(report);
    assert_null(strstr(json, ENV_SECRET));
    assert_null(strstr(json, KEYRING_SECRET));
    assert_null(strstr(text, ENV_SECRET));
    assert_null(strstr(text, KEYRING_SECRET));
    assert_non_null(strstr(text, "Summary: servers 4 ok, 4 warn, 4 blocked; commands 2 ok, 1 "
                                 "warn, 0 blocked; skills 1 ok, 0 warn, 0 blocked; agents 1 ok, 0 "
                                 "warn, 0 blocked.\n"));
    /* a literal password in the Codex args is shown redacted */
    assert_null(strstr(json, "Example#2023"));
    assert_false(json_is_true(json_object_get(report, "registered")));
    free(json), free(text);
    json_decref(report);
    cdsh_mcpimport_scan_deinit(&scan);
    teardown_fx(&f);
}

static void notes_name_what_is_not_imported(void **state)
{
    (void)state;
    fx f;
    build(&f);
    put(&f, "claude/plugins/cache/official/context7/unknown/.mcp.json", "{not json");
    cdsh_mcpimport_scan scan;
    run_scan(&f, &scan);
    json_t *report = cdsh_mcpimport_report_new(
        scan.servers, cdsh_mcpimport_scan_commands_json(&scan), scan.skills, scan.notes);
    char *text = cdsh_mcpimport_report_text_dup(report);
    assert_non_null(strstr(
        text, "    - hooks are not imported (cdsh runs no Claude Code or Codex hooks) (hooks: "
              "inline)\n"));
    assert_non_null(strstr(text, "unknown/.mcp.json is not valid JSON: invalid JSON at line 1"));
    assert_non_null(strstr(text, "    - Codex plugin browser@openai-bundled is enabled in "));
    assert_non_null(strstr(text, "config.toml but not in the plugin cache; nothing to import\n"));
    /* the broken plugin file no longer yields a duplicate context7 */
    char *v = verdicts(scan.servers);
    assert_null(strstr(v, "context7=blocked"));
    free(v), free(text);
    json_decref(report);
    cdsh_mcpimport_scan_deinit(&scan);
    teardown_fx(&f);
}

static void cli_enable_records_choice_and_refuses_blocked(void **state)
{
    (void)state;
    fx f;
    build(&f);
    char claude[1024], codex[1024], proj[1024];
    snprintf(claude, sizeof claude, "%s/claude", f.t.home);
    snprintf(codex, sizeof codex, "%s/codex", f.t.home);
    snprintf(proj, sizeof proj, "%s/proj", f.t.home);
    char *out = NULL, *err = NULL;
    int rc =
        cdsh_test_run_cdsh(NULL, &out, &err, "import", "enable", "--claude-dir", claude,
                           "--codex-home", codex, "--root", proj, "/hello", "secret-api", NULL);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "enabled command /hello\nenabled server secret-api\nprofile "
                             "\"default\": plugin \"import\" enabled; registered when cdsh "
                             "starts\n");
    free(out), free(err);
    char *profile =
        cdsh_test_read_file(cdsh_test_import_tree_path(&f.t, "profiles/default.yaml"), NULL);
    assert_non_null(strstr(profile, "secret-api"));
    assert_null(strstr(profile, ENV_SECRET));
    free(profile);
    rc = cdsh_test_run_cdsh(NULL, &out, &err, "import", "enable", "--claude-dir", claude,
                            "--codex-home", codex, "--root", proj, "node_repl", NULL);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "cdsh import enable: server \"node_repl\" is blocked:\n  - "
                                "COMMAND_NOT_FOUND: "));
    free(out), free(err);
    rc = cdsh_test_run_cdsh(NULL, &out, &err, "import", "enable", "nope", NULL);
    assert_int_equal(rc, 1);
    free(out), free(err);
    rc = cdsh_test_run_cdsh(NULL, &out, &err, "import", "disable", "/hello", "secret-api", NULL);
    assert_int_equal(rc, 0);
    free(out), free(err);
    rc = cdsh_test_run_cdsh(NULL, &out, &err, "import", "list", "--json", NULL);
    assert_int_equal(rc, 0);
    json_t *doc = json_loads(out, 0, NULL);
    assert_false(json_is_true(json_object_get(doc, "enabled")));
    assert_int_equal(json_array_size(json_object_get(doc, "servers")), 0);
    json_decref(doc);
    free(out), free(err);
    teardown_fx(&f);
}

static const json_t *reason_code(const json_t *ir, const char *level)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(ir, "reasons"), i, r) {
        if (strcmp(json_string_value(json_object_get(r, "level")), level) == 0 &&
            strncmp(json_string_value(json_object_get(r, "code")), "DUPLICATE", 9) != 0)
            return r;
    }
    return NULL;
}

/* Claude Code starts a project .mcp.json server only once it is approved:
 * enabledMcpjsonServers (settings files and ~/.claude.json's project entry)
 * or enableAllProjectMcpServers; disabledMcpjsonServers refuses and wins. */
static void project_servers_need_approval_as_in_claude_code(void **state)
{
    (void)state;
    fx f;
    build(&f);
    put(&f, "proj/.mcp.json",
        "{\"mcpServers\":{\"a\":{\"command\":\"node\"},\"b\":{\"command\":\"node\"},"
        "\"c\":{\"command\":\"node\"},\"d\":{\"command\":\"node\"}}}");
    put(&f, "proj/.claude/settings.local.json",
        "{\"enabledMcpjsonServers\":[\"a\"],\"disabledMcpjsonServers\":[\"b\"]}");
    put(&f, "claude/settings.json", "{\"enabledMcpjsonServers\":[\"b\"]}");
    char cj[1024];
    snprintf(cj, sizeof cj, "{\"projects\":{\"%s/proj\":{\"enabledMcpjsonServers\":[\"c\"]}}}",
             f.t.home);
    put(&f, "claude/.claude.json", cj);
    cdsh_mcpimport_scan sc;
    run_scan(&f, &sc);
    char local[1200], user[1200], cjp[1200];
    snprintf(local, sizeof local, "%s/proj/.claude/settings.local.json", f.t.home);
    snprintf(user, sizeof user, "%s/claude/settings.json", f.t.home);
    snprintf(cjp, sizeof cjp, "%s/claude/.claude.json", f.t.home);
    json_t *a = cdsh_mcpimport_scan_server(&sc, "a");
    assert_string_equal(cdsh_mcpimport_verdict(a), "ok");
    const json_t *r = reason_code(a, "info");
    assert_string_equal(json_string_value(json_object_get(r, "code")), "APPROVED");
    char want[2048];
    snprintf(want, sizeof want, "approved for this project (enabledMcpjsonServers in %s)", local);
    assert_string_equal(json_string_value(json_object_get(r, "message")), want);
    json_t *b = cdsh_mcpimport_scan_server(&sc, "b");
    assert_string_equal(cdsh_mcpimport_verdict(b), "warn");
    r = reason_code(b, "warn");
    assert_string_equal(json_string_value(json_object_get(r, "code")), "DISABLED_IN_SOURCE");
    snprintf(want, sizeof want,
             "disabled in Claude Code (disabledMcpjsonServers in %s): it does not start this "
             "project server",
             local);
    assert_string_equal(json_string_value(json_object_get(r, "message")), want);
    json_t *c = cdsh_mcpimport_scan_server(&sc, "c");
    snprintf(want, sizeof want, "approved for this project (enabledMcpjsonServers in %s)", cjp);
    assert_string_equal(json_string_value(json_object_get(reason_code(c, "info"), "message")),
                        want);
    json_t *d = cdsh_mcpimport_scan_server(&sc, "d");
    assert_string_equal(cdsh_mcpimport_verdict(d), "warn");
    assert_string_equal(json_string_value(json_object_get(reason_code(d, "warn"), "code")),
                        "NOT_APPROVED");
    /* servers of ~/.claude.json need no approval */
    assert_null(json_object_get(cdsh_mcpimport_scan_server(&sc, "kr"), "approval"));
    cdsh_mcpimport_scan_deinit(&sc);
    /* enableAllProjectMcpServers approves the rest; the first file that sets it decides */
    put(&f, "proj/.claude/settings.json", "{\"enableAllProjectMcpServers\":true}");
    put(&f, "claude/settings.json", "{\"enableAllProjectMcpServers\":false}");
    run_scan(&f, &sc);
    d = cdsh_mcpimport_scan_server(&sc, "d");
    assert_string_equal(cdsh_mcpimport_verdict(d), "ok");
    snprintf(want, sizeof want,
             "approved for this project (enableAllProjectMcpServers in %s/proj/.claude/"
             "settings.json)",
             f.t.home);
    assert_string_equal(json_string_value(json_object_get(reason_code(d, "info"), "message")),
                        want);
    assert_string_equal(cdsh_mcpimport_verdict(cdsh_mcpimport_scan_server(&sc, "b")), "warn");
    cdsh_mcpimport_scan_deinit(&sc);
    (void)user;
    teardown_fx(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(project_servers_need_approval_as_in_claude_code),
        cmocka_unit_test(fixture_tree_gives_expected_verdicts_in_precedence_order),
        cmocka_unit_test(secrets_resolve_from_env_and_keyring_but_never_reach_the_report),
        cmocka_unit_test(notes_name_what_is_not_imported),
        cmocka_unit_test(cli_enable_records_choice_and_refuses_blocked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
