/* test_cmd_inspect.c — `cdsh tools list`, `cdsh commands list` and
 * `cdsh skills list/show`: what a host built from the profile exposes. */
#include "support/testkit.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "host/host.h"
#include "plugins/builtin.h"

static int setup(void **state)
{
    *state = cdsh_test_home_new();
    return 0;
}

/* A home whose default profile turns off every plugin that is on by default
 * except `skills`, so the surface is exactly the `skill` tool, the `/skills`
 * command and no skills — whatever else happens to ship enabled. */
static int setup_minimal(void **state)
{
    char *home = cdsh_test_home_new(), path[4096];
    snprintf(path, sizeof path, "%s/profiles", home);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/profiles/default.yaml", home);
    cdsh_test_write_file(path,
                         "plugins:\n  xiangqi:\n    enabled: false\n  tavern:\n    enabled: false\n"
                         "  jobs:\n    enabled: false\n");
    *state = home;
    return 0;
}

static int teardown(void **state)
{
    cdsh_test_home_free(*state);
    return 0;
}

/* Schema bytes as the model would receive them, computed in-process. */
static size_t expected_bytes(const char *tool)
{
    cdsh_host *h = cdsh_host_new();
    cdsh_host_load_plugins(h, cdsh_builtin_plugins, NULL, NULL);
    json_t *schemas = cdsh_tools_schemas(cdsh_host_tools(h), NULL);
    size_t bytes = 0, i;
    json_t *s;
    json_array_foreach(schemas, i, s) {
        if (strcmp(json_string_value(json_object_get(s, "name")), tool) == 0) {
            char *c = json_dumps(s, JSON_COMPACT | JSON_PRESERVE_ORDER);
            bytes = strlen(c);
            free(c);
        }
    }
    json_decref(schemas);
    cdsh_host_free(h);
    return bytes;
}

static void tools_list_json_counts_schema_bytes(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tools", "list", "--json", NULL), 0);
    json_t *doc = json_loads(out, 0, NULL);
    assert_non_null(doc);
    assert_true(json_is_null(json_object_get(doc, "agent")));
    assert_int_equal(json_integer_value(json_object_get(doc, "count")), 1);
    json_t *t = json_array_get(json_object_get(doc, "tools"), 0);
    assert_string_equal(json_string_value(json_object_get(t, "name")), "skill");
    size_t want = expected_bytes("skill");
    assert_true(want > 100);
    assert_int_equal(json_integer_value(json_object_get(t, "bytes")), want);
    assert_int_equal(json_integer_value(json_object_get(doc, "totalBytes")), want);
    json_decref(doc);
    free(out);
}

static void tools_list_text_shows_rows_and_total(void **state)
{
    (void)state;
    char *out = NULL, line[256];
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tools", "list", NULL), 0);
    size_t want = expected_bytes("skill");
    snprintf(line, sizeof line, "skill %7zu bytes  Load the full instructions of a skill by name.",
             want);
    assert_non_null(strstr(out, line));
    snprintf(line, sizeof line, "\n1 tool, %zu schema bytes in total\n", want);
    assert_non_null(strstr(out, line));
    free(out);
}

static void tools_list_for_an_agent_names_it(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, NULL, "tools", "list", "--agent", "a1", "--json", NULL), 0);
    json_t *doc = json_loads(out, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(doc, "agent")), "a1");
    assert_int_equal(json_integer_value(json_object_get(doc, "count")), 1); /* inherits globals */
    json_decref(doc);
    free(out);
    cdsh_test_run_cdsh(NULL, &out, NULL, "tools", "list", "--agent", "a1", NULL);
    assert_non_null(strstr(out, "schema bytes in total for agent a1\n"));
    free(out);
}

static void tools_usage_errors(void **state)
{
    (void)state;
    char *err = NULL, *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "tools", "show", NULL), 2);
    assert_string_equal(err, "cdsh tools: unknown action 'show' (try `cdsh tools --help`)\n");
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "tools", "list", "--bogus", NULL), 2);
    assert_string_equal(err, "cdsh tools: unknown option '--bogus' (try `cdsh tools --help`)\n");
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "tools", "list", "extra", NULL), 2);
    assert_string_equal(err, "cdsh tools: unexpected argument 'extra'\n");
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "tools", "list", "--agent", "", NULL), 2);
    assert_string_equal(err, "cdsh tools: --agent needs a non-empty scope id\n");
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "help", "tools", NULL), 0);
    assert_non_null(strstr(out, "Usage: cdsh tools list [--agent A] [--profile NAME] [--json]"));
    free(out);
}

static void commands_list_shows_only_skills_and_json_is_an_array(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "commands", "list", NULL), 0);
    /* the skills plugin's /skills is the only command left */
    assert_string_equal(out, "/skills [skill name]  list the skills you can run, or show one: "
                             "/skills [NAME]\n");
    free(out);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "commands", "list", "--json", NULL), 0);
    json_t *doc = json_loads(out, 0, NULL);
    assert_int_equal(json_array_size(doc), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(doc, 0), "name")),
                        "skills");
    json_decref(doc);
    free(out);
    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "commands", NULL), 2);
    assert_non_null(strstr(err, "Usage: cdsh commands list"));
    free(err);
}

static void skills_list_and_show(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "skills", "list", NULL), 0);
    assert_string_equal(out, "no skills (the enabled plugins register none)\n");
    free(out);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "skills", "list", "--json", NULL), 0);
    assert_string_equal(out, "[]\n");
    free(out);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "skills", "show", "chess", NULL), 1);
    assert_string_equal(err, "cdsh skills: unknown skill \"chess\" (see `cdsh skills list`)\n");
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "skills", "show", NULL), 2);
    assert_string_equal(err, "cdsh skills: show needs a skill name\n");
    free(err);
}

static int has_name(const json_t *arr, const char *name)
{
    size_t i;
    const json_t *e;
    json_array_foreach(arr, i, e) {
        const json_t *v = json_object_get(e, "name");
        if (json_is_string(v) && strcmp(json_string_value(v), name) == 0)
            return 1;
    }
    return 0;
}

/* `cdsh <what> list --json`, parsed; the caller owns the result. */
static json_t *list_json(const char *what)
{
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, what, "list", "--json", NULL), 0);
    json_t *doc = json_loads(out, 0, NULL);
    assert_non_null(doc);
    free(out);
    return doc;
}

/* Asserts that `cdsh <what> list --json` is an array of exactly one `name`. */
static void assert_lists_only(const char *what, const char *name)
{
    json_t *doc = list_json(what);
    assert_int_equal(json_array_size(doc), 1);
    assert_true(has_name(doc, name));
    json_decref(doc);
}

static void default_profile_exposes_xiangqi_tools_command_and_skill(void **state)
{
    (void)state; /* plain home: no profile file, the built-in defaults decide */
    /* the registry's global surface; the tavern's seven are masked in the
     * turns of sessions with no card bound (test_tavern_story_e2e) */
    static const char *const want[] = {
        "skill",          "xiangqi_new",         "xiangqi_board",       "xiangqi_move",
        "xiangqi_undo",   "xiangqi_hint",        "xiangqi_review",      "tavern_memory_search",
        "tavern_memory_write", "tavern_memory_update", "tavern_lore_read", "tavern_worldstate_update",
        "tavern_asset_list",   "tavern_asset_read",   "job_output",          "job_list",
        "job_kill"};
    json_t *doc = list_json("tools");
    const json_t *tools = json_object_get(doc, "tools");
    assert_int_equal(json_integer_value(json_object_get(doc, "count")), 17);
    assert_int_equal(json_array_size(tools), 17);
    size_t total = 0, i;
    for (i = 0; i < sizeof want / sizeof *want; i++) {
        assert_true(has_name(tools, want[i]));
        size_t b = expected_bytes(want[i]);
        assert_true(b > 0);
        total += b;
    }
    assert_int_equal(json_integer_value(json_object_get(doc, "totalBytes")), total);
    json_decref(doc);
    doc = list_json("commands");
    assert_int_equal(json_array_size(doc), 2);
    assert_true(has_name(doc, "xiangqi"));
    assert_true(has_name(doc, "skills"));
    json_decref(doc);
    assert_lists_only("skills", "xiangqi-mate-playbook");
    doc = list_json("config");
    const json_t *p;
    json_array_foreach(json_object_get(doc, "plugins"), i, p) {
        if (strcmp(json_string_value(json_object_get(p, "name")), "xiangqi") == 0)
            assert_true(json_is_true(json_object_get(p, "enabled")));
    }
    assert_true(has_name(json_object_get(doc, "plugins"), "xiangqi"));
    json_decref(doc);
}

static void help_lists_the_new_subcommands(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "--help", NULL), 0);
    assert_non_null(strstr(out, "  tools "));
    assert_non_null(strstr(out, "  commands "));
    assert_non_null(strstr(out, "  skills "));
    assert_non_null(strstr(out, "  config "));
    free(out);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define M(fn) cmocka_unit_test_setup_teardown(fn, setup_minimal, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        M(tools_list_json_counts_schema_bytes),
        M(tools_list_text_shows_rows_and_total),
        M(tools_list_for_an_agent_names_it),
        T(tools_usage_errors),
        M(commands_list_shows_only_skills_and_json_is_an_array),
        M(skills_list_and_show),
        T(default_profile_exposes_xiangqi_tools_command_and_skill),
        T(help_lists_the_new_subcommands),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
