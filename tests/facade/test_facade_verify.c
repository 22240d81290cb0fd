/* test_facade_verify.c — `cdsh profile verify`: a good and a broken profile,
 * the user's home left untouched, a plugin that fails to apply named, a
 * profile given as a file path, and --smoke against the scripted fake model
 * (one agent turn with the composed host's tools). */
#include "support/testkit.h"
#include "support/fake_model.h"

#include "dir_snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/process.h"
#include "plugins/builtin.h"
#include "plugins/facade/plugin.h"
#include "plugins/facade/verify.h"

static char *HOME_DIR;

/* xiangqi, tavern and jobs (on by default) are turned off so the composed
 * surface is exactly `skill` plus the declared operation. */
static const char *GOOD = "plugins:\n"
                          "  xiangqi:\n"
                          "    enabled: false\n"
                          "  tavern:\n"
                          "    enabled: false\n"
                          "  jobs:\n"
                          "    enabled: false\n"
                          "  facade:\n"
                          "    config:\n"
                          "      capabilities:\n"
                          "        - id: docs\n"
                          "          description: Project documentation.\n"
                          "          operations:\n"
                          "            - name: open\n"
                          "              description: Load one skill's instructions.\n"
                          "              parameters: {name: {type: string, required: true}}\n"
                          "              steps: [{tool: skill}]\n";

static const char *BROKEN =
    "plugins:\n"
    "  nosuch:\n"
    "    enabled: true\n"
    "  skills:\n"
    "    config:\n"
    "      maxBodyBytes: lots\n"
    "  facade:\n"
    "    config:\n"
    "      capabilities:\n"
    "        - id: docs2\n"
    "          description: x\n"
    "          operations: [{name: a, description: y, steps: [{tool: nowhere}]}]\n";

static void write_profile(const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/profiles", HOME_DIR);
    assert_int_equal(cdsh_fs_mkdir_p(path, 0700, NULL), 0);
    snprintf(path, sizeof path, "%s/profiles/%s.yaml", HOME_DIR, name);
    cdsh_test_write_file(path, text);
}

static int setup(void **state)
{
    (void)state;
    HOME_DIR = cdsh_test_home_new();
    write_profile("good", GOOD);
    write_profile("broken", BROKEN);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cdsh_test_home_free(HOME_DIR);
    unsetenv("CDSH_BASE_URL");
    unsetenv("CDSH_MODEL");
    return 0;
}

static void good_profile_verifies_without_touching_the_home(void **state)
{
    (void)state;
    static char before[16384], after[16384];
    before[0] = after[0] = 0;
    dir_snapshot(HOME_DIR, before, sizeof before);
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "profile", "verify", "good", NULL), 0);
    char want[8192];
    snprintf(want, sizeof want,
             "ok   parse: %s/profiles/good.yaml\n"
             "ok   plugins resolve: 4 row(s)\n" /* xiangqi, tavern, jobs, facade */
             "ok   configs validate: 4 row(s)\n"
             /* skills, skills-local, systemPrompt, acp (on by default, no tools), facade */
             "ok   compose: 5 plugin(s) loaded, 2 tool(s), 1 capability(ies)\n"
             "VERIFY-OK\n",
             HOME_DIR);
    assert_string_equal(out, want);
    free(out), free(err);
    dir_snapshot(HOME_DIR, after, sizeof after);
    assert_string_equal(after, before); /* nothing written to the user's home */
}

static void broken_profile_names_every_problem(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "profile", "verify", "broken", NULL), 1);
    assert_non_null(strstr(out, "FAIL plugins resolve: unknown plugin rows\n"));
    assert_non_null(strstr(out, "FAIL configs validate: invalid config\n"));
    /* the known list grows with the built-in table: check its ends */
    assert_non_null(strstr(out, "problem: plugin \"nosuch\": no such plugin (known: skills, "));
    assert_non_null(strstr(out, ", facade)\n"));
    assert_non_null(strstr(out, "problem: plugin \"skills\": invalid config:\n  - expected "
                                "integer but got string (at maxBodyBytes)\n"));
    assert_non_null(strstr(out, "problem: plugin \"facade\": capability 0: capability \"docs2.a\" "
                                "step 1: tool \"nowhere\" is not registered (or is restricted "
                                "away). Register the tool first, then the capability.\n"));
    assert_non_null(strstr(out, "VERIFY-FAILED: 3 problem(s)\n"));
    free(out), free(err);
    /* JSON form */
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "profile", "verify", "broken", "--json", NULL), 1);
    json_t *r = json_loads(out, 0, NULL);
    assert_non_null(r);
    assert_true(json_is_false(json_object_get(r, "ok")));
    assert_int_equal(json_array_size(json_object_get(r, "problems")), 3);
    json_decref(r);
    free(out), free(err);
    /* a missing profile is a problem, not an empty profile */
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "profile", "verify", "absent", NULL), 1);
    assert_non_null(strstr(out, "problem: profile \"absent\": cannot read "));
    free(out), free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "profile", "verify", NULL), 2);
    free(out), free(err);
}

static int failing_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)ctx, (void)config;
    return cdsh_error_set(err, CDSH_EIO, "BROKEN", "the engine binary is missing");
}

static const cdsh_plugin_def broken_plugin = {
    .name = "brokenplug", .enabled_by_default = true, .apply = failing_apply};

static void a_plugin_that_fails_to_apply_is_named(void **state)
{
    (void)state;
    const cdsh_plugin_def *defs[] = {&broken_plugin, &cdsh_facade_plugin, NULL};
    json_t *r = NULL;
    assert_int_equal(cdsh_facade_verify(HOME_DIR, "empty", defs, false, &r, NULL), 0);
    /* "empty" does not exist: reported; now with a real (empty) one */
    assert_true(json_is_false(json_object_get(r, "ok")));
    json_decref(r);
    write_profile("empty", "plugins: {}\n");
    assert_int_equal(cdsh_facade_verify(HOME_DIR, "empty", defs, true, &r, NULL), 0);
    assert_true(json_is_false(json_object_get(r, "ok")));
    const json_t *problems = json_object_get(r, "problems");
    assert_int_equal(json_array_size(problems), 1);
    assert_string_equal(json_string_value(json_array_get(problems, 0)),
                        "plugin \"brokenplug\" failed to apply: the engine binary is missing");
    /* the smoke call is skipped while something is broken */
    const json_t *checks = json_object_get(r, "checks");
    const json_t *last = json_array_get(checks, json_array_size(checks) - 1);
    assert_string_equal(json_string_value(json_object_get(last, "check")), "smoke");
    assert_string_equal(json_string_value(json_object_get(last, "detail")),
                        "skipped: fix the problems above first");
    json_decref(r);
}

static void a_profile_file_path_is_verified_in_place(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/elsewhere.yaml", HOME_DIR);
    cdsh_test_write_file(path, GOOD);
    json_t *r = NULL;
    assert_int_equal(cdsh_facade_verify(HOME_DIR, path, cdsh_builtin_plugins, false, &r, NULL), 0);
    assert_true(json_is_true(json_object_get(r, "ok")));
    assert_string_equal(json_string_value(json_object_get(r, "path")), path);
    assert_string_equal(json_string_value(json_array_get(json_object_get(r, "tools"), 1)),
                        "docs_open");
    json_decref(r);
}

/* ---- --smoke against the fake model ---------------------------------------- */

typedef cdsh_test_fake_model fake;

/* Starts the fake and points the profile's model endpoint at it. */
static void fake_start(fake *f, const char *script)
{
    cdsh_test_fake_model_start(f, script, NULL);
    setenv("CDSH_BASE_URL", f->url, 1);
    setenv("CDSH_MODEL", "fake", 1);
}

static void smoke_runs_one_turn_with_the_composed_tools(void **state)
{
    (void)state;
    fake f;
    fake_start(&f, "{\"match\":{\"has_tools\":true},\"text\":\"OK\",\"finish_reason\":\"stop\"}");
    char *out = NULL, *err = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "profile", "verify", "good", "--smoke", NULL), 0);
    assert_non_null(strstr(out, "ok   smoke: one turn answered: \"OK\"\n"
                                "VERIFY-OK\n"));
    free(out), free(err);
    /* the request carried the composed host's tools */
    char *rec = cdsh_test_read_file(f.record, NULL);
    assert_non_null(rec);
    json_t *line = json_loads(rec, JSON_DISABLE_EOF_CHECK, NULL);
    assert_non_null(line);
    const json_t *tools = json_object_get(json_object_get(line, "body"), "tools");
    assert_int_equal(json_array_size(tools), 2);
    /* in the model's order: by name (host contracts §2) */
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(tools, 0), "function"), "name")),
                        "docs_open");
    json_decref(line);
    free(rec);
    cdsh_test_fake_model_stop(&f);
}

static void smoke_reports_a_model_failure(void **state)
{
    (void)state;
    fake f;
    fake_start(&f, "{\"status\":400,\"error\":{\"message\":\"bad tools\",\"type\":"
                   "\"invalid_request_error\"},\"repeat\":true}");
    char *out = NULL, *err = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "profile", "verify", "good", "--smoke", NULL), 1);
    assert_non_null(strstr(out, "FAIL smoke: one turn failed (error)\n"));
    assert_non_null(strstr(out, "problem: smoke: INVALID_REQUEST: HTTP 400: bad tools"));
    assert_non_null(strstr(out, "VERIFY-FAILED: 1 problem(s)\n"));
    free(out), free(err);
    cdsh_test_fake_model_stop(&f);
}

static void smoke_turn_runs_a_composed_tool_then_answers(void **state)
{
    (void)state;
    fake f;
    fake_start(&f, "["
                   "{\"chunks\":[{\"tool_call\":{\"index\":0,\"id\":\"c1\",\"name\":\"docs_open\","
                   "  \"arguments\":\"{\\\"name\\\":\\\"nowhere\\\"}\"}}],"
                   " \"finish_reason\":\"tool_calls\"},"
                   "{\"chunks\":[{\"text\":\"OK, done.\"}],\"finish_reason\":\"stop\"}]");
    char *out = NULL, *err = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "profile", "verify", "good", "--smoke", NULL), 0);
    assert_non_null(strstr(out, "ok   smoke: one turn answered: \"OK, done.\"\n"
                                "VERIFY-OK\n"));
    free(out), free(err);
    /* two requests; the second carries the tool's result for call c1 */
    char *rec = cdsh_test_read_file(f.record, NULL);
    assert_non_null(rec);
    char *second = strchr(rec, '\n');
    assert_non_null(second);
    json_t *line = json_loads(second + 1, JSON_DISABLE_EOF_CHECK, NULL);
    assert_non_null(line);
    const json_t *msgs = json_object_get(json_object_get(line, "body"), "messages");
    bool saw_result = false;
    size_t i;
    const json_t *m;
    json_array_foreach(msgs, i, m) {
        const char *role = json_string_value(json_object_get(m, "role"));
        const char *id = json_string_value(json_object_get(m, "tool_call_id"));
        if (role && strcmp(role, "tool") == 0 && id && strcmp(id, "c1") == 0)
            saw_result = true;
    }
    assert_true(saw_result);
    json_decref(line);
    /* the turn's session store lived in the temporary home, not the user's */
    char *db = NULL;
    assert_true(asprintf(&db, "%s/sessions.db", HOME_DIR) > 0);
    assert_int_equal(access(db, F_OK), -1);
    free(db);
    free(rec);
    cdsh_test_fake_model_stop(&f);
}

static void smoke_names_a_missing_credential(void **state)
{
    (void)state;
    unsetenv("CDSH_BASE_URL");
    unsetenv("CDSH_MODEL");
    unsetenv("CDSH_API_KEY");
    unsetenv("DEEPSEEK_API_KEY");
    char *out = NULL, *err = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "profile", "verify", "good", "--smoke", NULL), 1);
    assert_non_null(strstr(out, "FAIL smoke: one turn failed (error)\n"));
    assert_non_null(strstr(out, "problem: smoke: MISSING_CREDENTIAL: No model is configured: set "
                                "DEEPSEEK_API_KEY (or CDSH_API_KEY)"));
    free(out), free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
        T(good_profile_verifies_without_touching_the_home),
        T(broken_profile_names_every_problem),
        T(a_plugin_that_fails_to_apply_is_named),
        T(a_profile_file_path_is_verified_in_place),
        T(smoke_runs_one_turn_with_the_composed_tools),
        T(smoke_reports_a_model_failure),
        T(smoke_turn_runs_a_composed_tool_then_answers),
        T(smoke_names_a_missing_credential),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
