/* test_cmd_config.c — `cdsh config`: listing every plugin setting with its
 * default and current value, get/set/unset with schema validation, enable
 * and disable, profiles, and usage errors. */
#include "support/testkit.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int setup(void **state)
{
    *state = cdsh_test_home_new();
    return 0;
}

static int teardown(void **state)
{
    cdsh_test_home_free(*state);
    return 0;
}

static char *profile_text(const char *home, const char *name)
{
    char *path = NULL;
    assert_true(asprintf(&path, "%s/profiles/%s.yaml", home, name) > 0);
    char *text = cdsh_test_read_file(path, NULL);
    free(path);
    return text;
}

static void list_prints_every_field_with_default_and_current(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "config", "list", NULL), 0);
    assert_non_null(strstr(out, "profile default ("));
    assert_non_null(strstr(out, "skills (enabled) — the model-facing `skill` tool"));
    assert_non_null(strstr(out, "  maxBodyBytes  integer  default 20000  current 20000  "
                                "longest skill body or resource (bytes) handed to the model\n"));
    assert_non_null(strstr(out, "  collectCacheMaxEntries  integer  default 128  current 128  "
                                "completed skill-provider catalogs kept"));
    free(out);
}

static void list_json_has_profile_plugins_and_fields(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "config", "list", "--json", NULL), 0);
    json_t *doc = json_loads(out, 0, NULL);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "profile")), "default");
    json_t *p = json_array_get(json_object_get(doc, "plugins"), 0);
    assert_string_equal(json_string_value(json_object_get(p, "name")), "skills");
    assert_true(json_is_true(json_object_get(p, "enabled")));
    json_t *f = json_array_get(json_object_get(p, "fields"), 0);
    assert_string_equal(json_string_value(json_object_get(f, "key")), "maxBodyBytes");
    assert_int_equal(json_integer_value(json_object_get(f, "default")), 20000);
    assert_int_equal(json_integer_value(json_object_get(f, "current")), 20000);
    assert_int_equal(json_integer_value(json_object_get(f, "minimum")), 100);
    json_decref(doc);
    free(out);
}

static void set_validates_saves_and_get_reads_back(void **state)
{
    const char *home = *state;
    char *out = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, NULL, "config", "set", "skills.maxBodyBytes", "5000", NULL),
        0);
    assert_string_equal(out, "skills.maxBodyBytes = 5000 (profile default)\n");
    free(out);
    char *text = profile_text(home, "default");
    assert_string_equal(text, "plugins:\n  skills:\n    config:\n      maxBodyBytes: 5000\n");
    free(text);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, NULL, "config", "get", "skills.maxBodyBytes", NULL), 0);
    assert_string_equal(out, "5000\n");
    free(out);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "config", "get", "skills", NULL), 0);
    assert_string_equal(out, "{\"maxBodyBytes\":5000,\"collectCacheMaxEntries\":128}\n");
    free(out);
}

static void set_refuses_invalid_values_with_config_lines(void **state)
{
    const char *home = *state;
    char *err = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, NULL, &err, "config", "set", "skills.maxBodyBytes", "50", NULL),
        1);
    assert_string_equal(err, "cdsh config: plugin \"skills\": invalid config:\n"
                             "  - expected a value >= 100 but got 50 (at maxBodyBytes)\n");
    free(err);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, NULL, &err, "config", "set", "skills.maxBodyBytes", "many", NULL),
        1);
    assert_string_equal(err, "cdsh config: plugin \"skills\": invalid config:\n"
                             "  - expected integer but got text \"many\" (at maxBodyBytes)\n");
    free(err);
    char *text = profile_text(home, "default");
    assert_null(text); /* nothing was written */
}

static void unknown_plugin_or_key_is_reported(void **state)
{
    (void)state;
    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "config", "set", "nope.x", "1", NULL), 1);
    /* the list grows with the built-in table; check the shape and one member */
    const char *want = "cdsh config: unknown plugin \"nope\"; plugins: ";
    assert_int_equal(strncmp(err, want, strlen(want)), 0);
    assert_non_null(strstr(err + strlen(want), "skills"));
    free(err);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, NULL, &err, "config", "set", "skills.depth", "1", NULL), 1);
    assert_string_equal(err, "cdsh config: plugin \"skills\": unknown config key \"depth\"\n");
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "config", "get", "skills.depth", NULL),
                     1);
    assert_string_equal(err, "cdsh config: unknown config key \"depth\" for plugin \"skills\"\n");
    free(err);
}

static void unset_returns_to_the_default(void **state)
{
    (void)state;
    char *out = NULL;
    cdsh_test_run_cdsh(NULL, NULL, NULL, "config", "set", "skills.maxBodyBytes", "300", NULL);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, NULL, "config", "unset", "skills.maxBodyBytes", NULL), 0);
    assert_string_equal(out, "skills.maxBodyBytes reset to its default (profile default)\n");
    free(out);
    cdsh_test_run_cdsh(NULL, &out, NULL, "config", "get", "skills.maxBodyBytes", NULL);
    assert_string_equal(out, "20000\n");
    free(out);
}

static void disable_and_enable_are_saved_and_listed(void **state)
{
    const char *home = *state;
    char *out = NULL;
    /* leave `skills` as the only plugin on, whatever else is on by default */
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "config", "disable", "xiangqi", NULL), 0);
    assert_string_equal(out, "xiangqi disabled (profile default)\n");
    free(out);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "config", "disable", "tavern", NULL), 0);
    assert_string_equal(out, "tavern disabled (profile default)\n");
    free(out);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "config", "disable", "jobs", NULL), 0);
    assert_string_equal(out, "jobs disabled (profile default)\n");
    free(out);
    cdsh_test_run_cdsh(NULL, &out, NULL, "tools", "list", NULL);
    assert_non_null(strstr(out, "\n1 tool, "));
    free(out);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "config", "disable", "skills", NULL), 0);
    assert_string_equal(out, "skills disabled (profile default)\n");
    free(out);
    char *text = profile_text(home, "default");
    assert_string_equal(text, "plugins:\n  xiangqi:\n    enabled: false\n"
                              "  tavern:\n    enabled: false\n"
                              "  jobs:\n    enabled: false\n"
                              "  skills:\n    enabled: false\n");
    free(text);
    cdsh_test_run_cdsh(NULL, &out, NULL, "config", "list", NULL);
    assert_non_null(strstr(out, "skills (disabled)"));
    free(out);
    cdsh_test_run_cdsh(NULL, &out, NULL, "tools", "list", NULL);
    assert_string_equal(out, "0 tools, 0 schema bytes in total\n"); /* the tool went with it */
    free(out);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "config", "enable", "skills", NULL), 0);
    free(out);
    cdsh_test_run_cdsh(NULL, &out, NULL, "tools", "list", NULL);
    assert_non_null(strstr(out, "\n1 tool, "));
    assert_non_null(strstr(out, "skill "));
    free(out);
}

static void profile_flag_selects_another_file(void **state)
{
    const char *home = *state;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, NULL, "config", "set", "--profile", "work",
                                        "skills.maxBodyBytes", "777", NULL),
                     0);
    char *work = profile_text(home, "work"), *dflt = profile_text(home, "default");
    assert_non_null(strstr(work, "maxBodyBytes: 777"));
    assert_null(dflt);
    free(work);
    char *out = NULL;
    cdsh_test_run_cdsh(NULL, &out, NULL, "config", "get", "skills.maxBodyBytes", "--profile",
                       "work", NULL);
    assert_string_equal(out, "777\n");
    free(out);
    char *err = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, NULL, &err, "config", "list", "--profile", "../x", NULL), 1);
    assert_non_null(strstr(err, "profile name \"../x\" is invalid"));
    free(err);
}

static void broken_profile_is_reported_with_its_path(void **state)
{
    const char *home = *state;
    char *dir = NULL, *file = NULL;
    assert_true(asprintf(&dir, "%s/profiles", home) > 0);
    assert_true(asprintf(&file, "%s/default.yaml", dir) > 0);
    char *mk[] = {"/bin/mkdir", "-p", dir, NULL};
    cdsh_test_run(mk, NULL, NULL, NULL, 5000);
    cdsh_test_write_file(file, "plugins:\n  xiangqi:\n    enabled: false\n"
                               "  tavern:\n    enabled: false\n"
                               "  jobs:\n    enabled: false\n"
                               "  skills:\n    config:\n      maxBodyBytes: 1\n");
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "config", "list", NULL), 0);
    assert_non_null(strstr(out, "  ! invalid config:\n  - expected a value >= 100 but got 1"));
    assert_non_null(strstr(out, "current 1"));
    free(out);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "tools", "list", NULL), 0);
    assert_non_null(strstr(err, "cdsh tools: warning: invalid config:"));
    assert_string_equal(out, "0 tools, 0 schema bytes in total\n"); /* the plugin did not load */
    free(out);
    free(err);
    cdsh_test_write_file(file, "plugins: [\n");
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "config", "list", NULL), 1);
    assert_non_null(strstr(err, "profiles/default.yaml: line "));
    free(err);
    free(dir);
    free(file);
}

static void usage_errors_exit_2(void **state)
{
    (void)state;
    char *err = NULL, *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "config", NULL), 2);
    assert_non_null(strstr(err, "Usage: cdsh config list"));
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "config", "frob", NULL), 2);
    assert_string_equal(err, "cdsh config: unknown action 'frob' (try `cdsh config --help`)\n");
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "config", "set", "skills.x", NULL), 2);
    assert_string_equal(err, "cdsh config: set needs 2 arguments (try `cdsh config --help`)\n");
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "config", "list", "--agent", "a", NULL),
                     2);
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "config", "--help", NULL), 0);
    assert_non_null(strstr(out, "Usage: cdsh config list [--json]"));
    free(out);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(list_prints_every_field_with_default_and_current),
        T(list_json_has_profile_plugins_and_fields),
        T(set_validates_saves_and_get_reads_back),
        T(set_refuses_invalid_values_with_config_lines),
        T(unknown_plugin_or_key_is_reported),
        T(unset_returns_to_the_default),
        T(disable_and_enable_are_saved_and_listed),
        T(profile_flag_selects_another_file),
        T(broken_profile_is_reported_with_its_path),
        T(usage_errors_exit_2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
