/* test_engine.c — EngineSpec validation, coercions, defaults, builtins,
 * patch semantics and command resolution (plugins/acp/engine.c). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acp_fixture.h"
#include "plugins/acp/engine.h"

static json_t *norm(const char *text, bool user, cdsh_error *err)
{
    json_t *in = json_loads(text, 0, NULL);
    assert_non_null(in);
    json_t *out = NULL;
    int rc = cdsh_acp_engine_normalize(in, "user-file", user, &out, err);
    json_decref(in);
    return rc == 0 ? out : NULL;
}

static void normalize_fills_the_seed_defaults(void **state)
{
    (void)state;
    cdsh_error err = {0};
    json_t *r = norm("{\"id\":\"x\",\"command\":\"x-agent\"}", true, &err);
    assert_non_null(r);
    json_t *ib = json_object_get(r, "initBudget");
    assert_int_equal(json_integer_value(json_object_get(ib, "steadySecs")), 30);
    assert_int_equal(json_integer_value(json_object_get(ib, "coldSecs")), 300);
    /* Cold until a start of this executable succeeded (issue 21 item 5). */
    assert_string_equal(json_string_value(json_object_get(ib, "coldProbe")), "first-start");
    assert_string_equal(json_string_value(json_object_get(r, "skillDelivery")), "auto");
    char *dirs = json_dumps(json_object_get(r, "skillsDirs"), JSON_COMPACT);
    assert_string_equal(dirs, "[\"~/.agents/skills\"]");
    free(dirs);
    char *tmpl = json_dumps(json_object_get(r, "skillArgsTemplate"), JSON_COMPACT);
    assert_string_equal(tmpl, "[\"--skill\",\"{dir}\"]");
    free(tmpl);
    assert_string_equal(json_string_value(json_object_get(r, "permissionMode")), "default");
    assert_int_equal(json_object_size(json_object_get(r, "permissionTemplates")), 0);
    assert_string_equal(json_string_value(json_object_get(r, "poolKey")), "x");
    assert_int_equal(json_integer_value(json_object_get(r, "disposeGraceMs")), 6000);
    assert_int_equal(json_integer_value(json_object_get(r, "cancelGraceMs")), 6000);
    assert_int_equal(json_integer_value(json_object_get(r, "idleDisposeMs")), 30000);
    assert_true(json_is_true(json_object_get(r, "enabled")));
    assert_int_equal(json_integer_value(json_object_get(r, "sortOrder")), 100);
    assert_string_equal(json_string_value(json_object_get(r, "dialect")), "canonical");
    assert_string_equal(json_string_value(json_object_get(r, "cwdPolicy")), "session");
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "label"), "en")), "x");
    assert_true(json_is_null(json_object_get(json_object_get(r, "capabilities"), "fs")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "health"), "status")),
                        "unknown");
    assert_int_equal(cdsh_acp_engine_init_budget_ms(r, NULL), 30000);
    json_decref(r);
}

static void normalize_rejects_bad_ids_and_missing_command(void **state)
{
    (void)state;
    const char *bad[] = {"{\"command\":\"a\"}",
                         "{\"id\":\"\",\"command\":\"a\"}",
                         "{\"id\":\"Bad\",\"command\":\"a\"}",
                         "{\"id\":\"-x\",\"command\":\"a\"}",
                         "{\"id\":\"a_b\",\"command\":\"a\"}",
                         "{\"id\":7,\"command\":\"a\"}",
                         "[1]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cdsh_error err = {0};
        assert_null(norm(bad[i], true, &err));
        assert_int_equal(err.rc, CDSH_EINVAL);
        assert_string_equal(err.code, "INVALID_ENGINE");
    }
    cdsh_error err = {0};
    assert_null(norm("{\"id\":\"ok\"}", true, &err));
    assert_string_equal(err.message, "engine \"ok\": command is required");
    json_t *r = norm("{\"id\":\"  ok-1  \",\"command\":\"a\"}", true, &err);
    assert_string_equal(json_string_value(json_object_get(r, "id")), "ok-1");
    json_decref(r);
}

static void normalize_refuses_unknown_dialects(void **state)
{
    (void)state;
    cdsh_error err = {0};
    assert_null(norm("{\"id\":\"x\",\"command\":\"a\",\"dialect\":\"aioncore\"}", true, &err));
    assert_string_equal(err.code, "UNKNOWN_DIALECT");
    json_t *r = norm("{\"id\":\"x\",\"command\":\"a\",\"dialect\":\"canonical\"}", true, &err);
    assert_non_null(r);
    json_decref(r);
}

static void user_rows_cannot_set_probed_capabilities_or_health(void **state)
{
    (void)state;
    cdsh_error err = {0};
    assert_null(
        norm("{\"id\":\"x\",\"command\":\"a\",\"capabilities\":{\"fs\":true}}", true, &err));
    assert_int_equal(err.rc, CDSH_EPERM);
    assert_string_equal(err.code, "READ_ONLY_FIELD");
    assert_null(
        norm("{\"id\":\"x\",\"command\":\"a\",\"health\":{\"status\":\"ok\"}}", true, &err));
    assert_string_equal(err.code, "READ_ONLY_FIELD");
    /* Trusted rows (builtins, runtime) carry them. */
    json_t *r =
        norm("{\"id\":\"x\",\"command\":\"a\",\"health\":{\"status\":\"ok\"}}", false, &err);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "health"), "status")),
                        "ok");
    json_decref(r);
}

static void normalize_coerces_values(void **state)
{
    (void)state;
    cdsh_error err = {0};
    json_t *r = norm("{\"id\":\"x\",\"command\":\"a\",\"args\":[1,\"two\",true,null],"
                     "\"env\":{\"N\":5,\"S\":\"s\",\"BAD=\":\"x\"},\"sortOrder\":\"7\","
                     "\"enabled\":false,\"cwdPolicy\":\"fixed\",\"initBudget\":{\"coldProbe\":"
                     "\"npx-cache\"},\"initialConfigOptions\":[{\"configId\":\"model\",\"value\":"
                     "\"m\"},{\"configId\":\"x\"}],\"promptTimeoutMs\":\"0\"}",
                     true, &err);
    assert_non_null(r);
    char *args = json_dumps(json_object_get(r, "args"), JSON_COMPACT);
    assert_string_equal(args, "[\"1\",\"two\",\"true\"]");
    free(args);
    char *env = json_dumps(json_object_get(r, "env"), JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(env, "{\"N\":\"5\",\"S\":\"s\"}");
    free(env);
    assert_int_equal(json_integer_value(json_object_get(r, "sortOrder")), 7);
    assert_true(json_is_false(json_object_get(r, "enabled")));
    assert_string_equal(json_string_value(json_object_get(r, "cwdPolicy")), "fixed");
    assert_int_equal(json_array_size(json_object_get(r, "initialConfigOptions")), 1);
    /* npx-cache on a command that is not npx: nothing is installed, never cold. */
    cdsh_acp_cold_check cold;
    assert_int_equal(cdsh_acp_engine_init_budget_ms(r, &cold), 30000);
    assert_false(cold.cold);
    assert_string_equal(cold.reason, "a is not npx: nothing to install");
    assert_int_equal(cdsh_acp_engine_prompt_timeout_ms(r), 0);
    assert_int_equal(cdsh_acp_engine_idle_timeout_ms(r), 180000);
    json_decref(r);
}

static void builtins_carry_the_digest_launch_details(void **state)
{
    (void)state;
    json_t *b = cdsh_acp_engine_builtins_dup();
    const char *ids[] = {"omp",       "opencode",        "commandcode", "qodercn",
                         "codex-acp", "claude-code-acp", "gemini"};
    const char *args[] = {"[\"acp\"]", "[\"acp\"]", "[\"acp\"]",  "[\"--acp\"]",
                          "[]",        "[]",        "[\"--acp\"]"};
    assert_int_equal(json_array_size(b), 7);
    for (size_t i = 0; i < 7; i++) {
        json_t *r = json_array_get(b, i);
        assert_string_equal(json_string_value(json_object_get(r, "id")), ids[i]);
        char *a = json_dumps(json_object_get(r, "args"), JSON_COMPACT);
        assert_string_equal(a, args[i]);
        free(a);
        assert_string_equal(json_string_value(json_object_get(r, "source")), "builtin");
    }
    assert_string_equal(json_string_value(json_object_get(json_array_get(b, 2), "command")),
                        "commandcode");
    assert_non_null(
        json_object_get(json_object_get(json_array_get(b, 1), "commandOverrides"), "windows"));
    /* The original's details (digest §2): OpenCode's free model first and a
     * longer budget, Command Code's skills as args, Qoder's templates. */
    json_t *oc = json_array_get(b, 1);
    json_t *ico = json_array_get(json_object_get(oc, "initialConfigOptions"), 0);
    assert_string_equal(json_string_value(json_object_get(ico, "configId")), "model");
    assert_non_null(strstr(json_string_value(json_object_get(ico, "value")), "-free"));
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(oc, "initBudget"), "steadySecs")), 90);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(oc, "initBudget"), "coldSecs")), 900);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(b, 2), "skillDelivery")), "args");
    json_t *q = json_array_get(b, 3);
    assert_string_equal(json_string_value(json_object_get(q, "command")), "qoder-cn");
    char *t = json_dumps(json_object_get(q, "permissionTemplates"), JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(t, "{\"bypass\":[\"--dangerously-skip-permissions\"],"
                           "\"dont_ask\":[\"--permission-mode\",\"dont_ask\"]}");
    free(t);
    json_decref(b);
}

/* Issue 21 item 11: the seed fields validated by name, and used for argv. */
static void skill_and_permission_fields_are_validated_and_shape_argv(void **state)
{
    (void)state;
    cdsh_error err = {0};
    static const struct {
        const char *row, *code, *needle;
    } bad[] = {
        {"\"cwdPolicy\":\"bogus\"", "UNKNOWN_VALUE", "cwdPolicy"},
        {"\"cwdPolicy\":3", "UNKNOWN_VALUE", "cwdPolicy"},
        {"\"initBudget\":{\"coldProbe\":\"sometimes\"}", "UNKNOWN_VALUE", "coldProbe"},
        {"\"skillDelivery\":\"carrier-pigeon\"", "UNKNOWN_VALUE", "skillDelivery"},
        {"\"permissionMode\":\"yolo\"", "UNKNOWN_VALUE", "permissionMode"},
        {"\"permissionMode\":\"bypass\"", "UNSUPPORTED_MODE", "permissionTemplates.bypass"},
        {"\"permissionTemplates\":{\"plan\":[\"--plan\"]}", "UNKNOWN_VALUE", "plan"},
        {"\"permissionTemplates\":{\"bypass\":\"--yolo\"}", "INVALID_ENGINE",
         "permissionTemplates.bypass"},
        {"\"skillsDirs\":[\"a\",7]", "INVALID_ENGINE", "skillsDirs[1]"},
        {"\"skillArgsTemplate\":[\"--skill\"]", "INVALID_ENGINE", "{dir}"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[512];
        snprintf(text, sizeof text, "{\"id\":\"x\",\"command\":\"a\",%s}", bad[i].row);
        json_t *row = json_loads(text, 0, NULL);
        json_t *out = NULL;
        err = (cdsh_error){0};
        assert_int_equal(cdsh_acp_engine_normalize(row, "user-file", true, &out, &err), CDSH_EINVAL);
        assert_null(out);
        if (strcmp(err.code, bad[i].code) != 0 || !strstr(err.message, bad[i].needle))
            fail_msg("%s: got %s: %s", bad[i].row, err.code, err.message);
        json_decref(row);
    }
    char *home = cdsh_test_home_new();
    char skills[4200], text[9000];
    snprintf(skills, sizeof skills, "%s/skills", home);
    assert_int_equal(mkdir(skills, 0700), 0);
    snprintf(text, sizeof text,
             "{\"id\":\"q\",\"command\":\"a\",\"args\":[\"--acp\"],\"skillDelivery\":\"args\","
             "\"skillsDirs\":[\" %s \",\"\",\"%s/missing\"],\"skillArgsTemplate\":[\"--skill={dir}\"],"
             "\"permissionMode\":\"dont_ask\",\"permissionTemplates\":{\"dont_ask\":"
             "[\"--permission-mode\",\"dont_ask\"]}}",
             skills, home);
    json_t *r = norm(text, false, &err);
    assert_non_null(r);
    assert_string_equal(json_string_value(json_object_get(r, "poolKey")), "q#dont_ask");
    assert_int_equal(json_array_size(json_object_get(r, "skillsDirs")), 2);
    char **argv = cdsh_acp_engine_argv_dup(r, "/bin/a");
    char want[4400];
    snprintf(want, sizeof want, "--skill=%s", skills);
    assert_string_equal(argv[0], "/bin/a");
    assert_string_equal(argv[1], "--acp");
    assert_string_equal(argv[2], want); /* the missing directory is skipped */
    assert_string_equal(argv[3], "--permission-mode");
    assert_string_equal(argv[4], "dont_ask");
    assert_null(argv[5]);
    cdsh_acp_engine_strv_free(argv);
    /* A patch may change the preference, not the declaration or the derived key. */
    json_t *patch = json_loads("{\"permissionMode\":\"default\"}", 0, NULL);
    json_t *m = NULL;
    assert_int_equal(cdsh_acp_engine_patch(r, patch, &m, &err), 0);
    assert_string_equal(json_string_value(json_object_get(m, "poolKey")), "q");
    json_decref(m);
    json_decref(patch);
    const char *refused[] = {"{\"skillDelivery\":\"none\"}", "{\"poolKey\":\"q#x\"}"};
    for (int i = 0; i < 2; i++) {
        patch = json_loads(refused[i], 0, NULL);
        m = NULL;
        assert_int_equal(cdsh_acp_engine_patch(r, patch, &m, &err), CDSH_EPERM);
        assert_string_equal(err.code, "READ_ONLY_FIELD");
        json_decref(patch);
    }
    json_decref(r);
    cdsh_test_home_free(home);
}

static void patch_merges_env_keeps_timeouts_and_refuses_read_only(void **state)
{
    (void)state;
    cdsh_error err = {0};
    json_t *cur = norm("{\"id\":\"x\",\"command\":\"a\",\"env\":{\"A\":\"1\",\"B\":\"2\"},"
                       "\"promptTimeoutMs\":5000}",
                       false, &err);
    json_t *patch = json_loads("{\"env\":{\"A\":null,\"C\":\"3\"},\"promptTimeoutMs\":null,"
                               "\"idleTimeoutMs\":\"\",\"args\":[\"--x\"],\"enabled\":false,"
                               "\"cancelGraceMs\":\"2500\"}",
                               0, NULL);
    json_t *m = NULL;
    assert_int_equal(cdsh_acp_engine_patch(cur, patch, &m, &err), 0);
    char *env = json_dumps(json_object_get(m, "env"), JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(env, "{\"B\":\"2\",\"C\":\"3\"}");
    free(env);
    assert_int_equal(json_integer_value(json_object_get(m, "promptTimeoutMs")), 5000);
    assert_int_equal(json_integer_value(json_object_get(m, "idleTimeoutMs")), 180000);
    assert_true(json_is_false(json_object_get(m, "enabled")));
    assert_int_equal(json_integer_value(json_object_get(m, "cancelGraceMs")), 2500);
    json_decref(m);
    json_decref(patch);
    const char *refused[] = {"{\"capabilities\":{\"fs\":true}}", "{\"health\":{}}"};
    for (int i = 0; i < 2; i++) {
        patch = json_loads(refused[i], 0, NULL);
        m = NULL;
        assert_int_equal(cdsh_acp_engine_patch(cur, patch, &m, &err), CDSH_EPERM);
        assert_string_equal(err.code, "READ_ONLY_FIELD");
        assert_null(m);
        json_decref(patch);
    }
    patch = json_loads("{\"bogus\":1}", 0, NULL);
    assert_int_equal(cdsh_acp_engine_patch(cur, patch, &m, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "UNKNOWN_FIELD");
    json_decref(patch);
    patch = json_loads("{\"id\":\"y\"}", 0, NULL);
    assert_int_equal(cdsh_acp_engine_patch(cur, patch, &m, &err), CDSH_EINVAL);
    json_decref(patch);
    json_decref(cur);
}

static void resolve_follows_the_candidate_order(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char bin[4200], exe[4300], exe2[4300];
    snprintf(bin, sizeof bin, "%s/bin", home);
    mkdir(bin, 0700);
    snprintf(exe, sizeof exe, "%s/agent-a", bin);
    snprintf(exe2, sizeof exe2, "%s/agent-b", bin);
    cdsh_test_write_file(exe, "#!/bin/sh\n");
    cdsh_test_write_file(exe2, "#!/bin/sh\n");
    chmod(exe, 0700);
    chmod(exe2, 0700);
    setenv("ACP_TEST_BIN", bin, 1);
    cdsh_error err = {0};
    char text[9000];
    snprintf(text, sizeof text,
             "{\"id\":\"x\",\"command\":\"agent-b\",\"resolvedCommand\":\"/nonexistent/a\","
             "\"fallbackPaths\":[\"/nope/agent\",\"${ACP_TEST_BIN}/agent-a\"],"
             "\"env\":{\"PATH\":\"%s\"}}",
             bin);
    json_t *r = norm(text, true, &err);
    char *res = NULL;
    const char *via = NULL;
    assert_int_equal(cdsh_acp_engine_resolve(r, &res, &via, &err), 0);
    assert_string_equal(res, exe);
    assert_string_equal(via, "fallbackPaths");
    free(res);
    json_object_set_new(r, "fallbackPaths", json_array());
    assert_int_equal(cdsh_acp_engine_resolve(r, &res, &via, &err), 0);
    assert_string_equal(res, exe2);
    assert_string_equal(via, "PATH");
    free(res);
    json_object_set_new(r, "resolvedCommand", json_string(exe));
    assert_int_equal(cdsh_acp_engine_resolve(r, &res, &via, &err), 0);
    assert_string_equal(via, "resolvedCommand");
    free(res);
    json_object_set_new(r, "resolvedCommand", json_null());
    json_object_set_new(r, "command", json_string("no-such-agent-zz"));
    json_object_set_new(r, "fallbackPaths", json_pack("[s]", "%ACP_TEST_BIN%/missing"));
    assert_int_equal(cdsh_acp_engine_resolve(r, &res, &via, &err), CDSH_ENOTFOUND);
    assert_string_equal(err.code, "COMMAND_NOT_FOUND");
    assert_non_null(strstr(err.message, "no-such-agent-zz"));
    assert_non_null(strstr(err.message, "/bin/missing"));
    json_decref(r);
    char *x = cdsh_acp_engine_expand_path_dup("~/a/%ACP_TEST_BIN%/${ACP_TEST_BIN}");
    char want[9000];
    snprintf(want, sizeof want, "%s/a/%s/%s", getenv("HOME"), bin, bin);
    assert_string_equal(x, want);
    free(x);
    unsetenv("ACP_TEST_BIN");
    cdsh_test_home_free(home);
}

static void npx_cache_key_matches_npx_for_one_and_many_packages(void **state)
{
    (void)state;
    char key[17];
    /* Directory names a real npx 11 run created (see engine.c). */
    const char *one[] = {"is-number"};
    assert_int_equal(cdsh_acp_npx_cache_key(one, 1, key), 0);
    assert_string_equal(key, "17faac598b938cd5");
    const char *two[] = {"is-odd", "is-number@7.0.0"};
    assert_int_equal(cdsh_acp_npx_cache_key(two, 2, key), 0);
    assert_string_equal(key, "82596afa42b8ad2e");
    /* The order localeCompare("en") gives in node, whatever the input order. */
    const char *many[] = {"is.number", "Is-number", "is_x",   "is-number",
                          "@scope/a",  "a@^1",      "a@1.0.0"};
    assert_int_equal(cdsh_acp_npx_cache_key(many, 7, key), 0);
    assert_string_equal(key, "6a3b1f28c99b7886");
}

static json_t *npx_row(const char *cache, const char *args_json, const char *probe)
{
    char text[8192];
    snprintf(text, sizeof text,
             "{\"id\":\"npx-agent\",\"command\":\"npx\",\"args\":%s,\"env\":{\"npm_config_cache\":"
             "\"%s\"},\"initBudget\":{\"steadySecs\":7,\"coldSecs\":99,\"coldProbe\":\"%s\"}}",
             args_json, cache, probe);
    cdsh_error err = {0};
    json_t *r = norm(text, true, &err);
    assert_non_null(r);
    return r;
}

static void cold_check_reads_a_fake_npx_cache(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char cache[4200], dir[4600], cmd[9300];
    snprintf(cache, sizeof cache, "%s/npm-cache", home);
    const char *args = "[\"-y\",\"@fixture/agent@1.2.3\",\"--acp\"]";
    json_t *r = npx_row(cache, args, "npx-cache");
    cdsh_acp_cold_check cold;
    assert_int_equal(cdsh_acp_engine_init_budget_ms(r, &cold), 99000);
    assert_true(cold.cold);
    snprintf(dir, sizeof dir, "%s/_npx/df55439a177b02ff", cache);
    char want[5000];
    snprintf(want, sizeof want, "npx cache miss: @fixture/agent not installed in %s", dir);
    assert_string_equal(cold.reason, want);
    /* An empty key directory (an interrupted install) is still cold. */
    snprintf(cmd, sizeof cmd, "mkdir -p %s/node_modules/@fixture/agent", dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(cdsh_acp_engine_init_budget_ms(r, &cold), 99000);
    char pj[5000];
    snprintf(pj, sizeof pj, "%s/node_modules/@fixture/agent/package.json", dir);
    cdsh_test_write_file(pj, "{\"name\":\"@fixture/agent\",\"version\":\"1.2.3\"}");
    assert_int_equal(cdsh_acp_engine_init_budget_ms(r, &cold), 7000);
    assert_false(cold.cold);
    snprintf(want, sizeof want, "npx cache hit: %s", dir);
    assert_string_equal(cold.reason, want);
    json_decref(r);
    /* --package specs, `--cache` on the command line, a spec that is not a registry name. */
    r = npx_row("/nonexistent",
                "[\"--yes\",\"--package=@fixture/agent@1.2.3\",\"--cache\",\"CACHE\","
                "\"agent-bin\"]",
                "npx-cache");
    json_array_set_new(json_object_get(r, "args"), 3, json_string(cache));
    assert_int_equal(cdsh_acp_engine_init_budget_ms(r, &cold), 7000);
    json_decref(r);
    r = npx_row(cache, "[\"-y\",\"github:someone/agent\"]", "npx-cache");
    assert_int_equal(cdsh_acp_engine_init_budget_ms(r, &cold), 99000);
    assert_string_equal(cold.reason,
                        "npx package github:someone/agent is not a registry name: assuming cold");
    json_decref(r);
    /* coldProbe none: the steady budget, whatever the cache holds. */
    r = npx_row(cache, "[\"-y\",\"missing-agent\"]", "none");
    assert_int_equal(cdsh_acp_engine_init_budget_ms(r, &cold), 7000);
    assert_string_equal(cold.reason, "coldProbe is none");
    json_decref(r);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(normalize_fills_the_seed_defaults),
        cmocka_unit_test(normalize_rejects_bad_ids_and_missing_command),
        cmocka_unit_test(normalize_refuses_unknown_dialects),
        cmocka_unit_test(user_rows_cannot_set_probed_capabilities_or_health),
        cmocka_unit_test(normalize_coerces_values),
        cmocka_unit_test(builtins_carry_the_digest_launch_details),
        cmocka_unit_test(skill_and_permission_fields_are_validated_and_shape_argv),
        cmocka_unit_test(patch_merges_env_keeps_timeouts_and_refuses_read_only),
        cmocka_unit_test(resolve_follows_the_candidate_order),
        cmocka_unit_test(npx_cache_key_matches_npx_for_one_and_many_packages),
        cmocka_unit_test(cold_check_reads_a_fake_npx_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
