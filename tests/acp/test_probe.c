/* test_probe.c — probe / try-connect evidence (plugins/acp/probe.c): the
 * seed §6 record, credential redaction, rejected lines kept, health, and
 * the `cdsh acp` command line (engines, probe, prompt, sessions). */
#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "acp_fixture.h"
#include "plugins/acp/engine.h"
#include "plugins/acp/probe.h"
#include "plugins/acp/state.h"

static char *evidence_text(const char *path)
{
    char *t = cdsh_test_read_file(path, NULL);
    assert_non_null(t);
    return t;
}

static void probe_writes_the_seed_record(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    acp_write_fixture_engine(home, "[]", "");
    json_t *rec = NULL;
    char *path = NULL;
    cdsh_error err = {0};
    cdsh_acp_probe_opts o = {.prompt = "hello", .cwd = home};
    assert_int_equal(cdsh_acp_probe_run(cdsh_test_home(), "fixture", &o, &rec, &path, &err), 0);
    assert_non_null(strstr(path, "/multi-acp/evidence/probe-fixture-"));
    assert_true(json_is_true(json_object_get(rec, "ok")));
    json_t *init = json_object_get(rec, "initialize");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(init, "agentInfo"), "name")),
        "fixture-agent");
    assert_true(json_is_array(json_object_get(init, "authMethods")));
    assert_true(json_is_false(json_object_get(init, "coldStart")));
    assert_string_equal(json_string_value(json_object_get(init, "coldReason")),
                        "coldProbe is none");
    json_t *m = json_object_get(rec, "methods");
    const char *oks[] = {"initialize",       "session/new",  "session/set_config_option",
                         "session/set_mode", "session/list", "session/prompt",
                         "session/close"};
    for (size_t i = 0; i < sizeof oks / sizeof *oks; i++)
        assert_string_equal(json_string_value(json_object_get(m, oks[i])), "ok");
    assert_int_equal(json_array_size(json_object_get(rec, "sessions")), 2);
    json_t *pr = json_object_get(rec, "prompt");
    assert_string_equal(json_string_value(json_object_get(pr, "text")), "PONG");
    assert_string_equal(json_string_value(json_object_get(pr, "stopReason")), "end_turn");
    assert_true(json_array_size(json_object_get(rec, "rawLines")) > 3);
    /* Health and capabilities are recorded for `cdsh acp engines`. */
    json_t *row = NULL;
    assert_int_equal(cdsh_acp_state_engine_find(cdsh_test_home(), "fixture", &row, NULL), 0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(row, "health"), "status")), "ok");
    assert_true(json_is_true(json_object_get(json_object_get(row, "capabilities"), "modes")));
    json_decref(row);
    json_decref(rec);
    free(path);
    cdsh_test_home_free(home);
}

static void probe_evidence_has_no_credentials(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    acp_write_fixture_engine(home, "[\"--leak\"]", "");
    json_t *rec = NULL;
    char *path = NULL;
    cdsh_acp_probe_opts o = {.cwd = home};
    assert_int_equal(cdsh_acp_probe_run(cdsh_test_home(), "fixture", &o, &rec, &path, NULL), 0);
    char *text = evidence_text(path);
    assert_null(strstr(text, "fixtureSECRET"));
    assert_null(strstr(text, "fixtureTOKEN"));
    assert_null(strstr(text, "fixtureCOOKIE"));
    assert_non_null(strstr(text, "[REDACTED]"));
    /* Everything else is kept verbatim. */
    assert_non_null(strstr(text, "Log in to the fixture"));
    char *dump = json_dumps(rec, 0);
    assert_null(strstr(dump, "fixtureSECRET"));
    free(dump);
    free(text);
    json_decref(rec);
    free(path);
    cdsh_test_home_free(home);
}

static void probe_keeps_rejected_lines_and_records_failures(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    acp_write_fixture_engine(home, "[\"--garbage-first\"]", "");
    json_t *rec = NULL;
    char *path = NULL;
    cdsh_acp_probe_opts o = {.prompt = "funds", .cwd = home};
    assert_int_equal(cdsh_acp_probe_run(cdsh_test_home(), "fixture", &o, &rec, &path, NULL), 0);
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(rec, "dialectRejects"), 0)),
        "fixture agent starting (not json)");
    json_t *pr = json_object_get(rec, "prompt");
    assert_false(json_is_true(json_object_get(pr, "ok")));
    assert_string_equal(json_string_value(json_object_get(pr, "class")), "INSUFFICIENT_FUNDS");
    assert_false(json_is_true(json_object_get(rec, "ok")));
    json_t *h = json_object_get(rec, "health");
    assert_string_equal(json_string_value(json_object_get(h, "status")), "degraded");
    assert_non_null(strstr(json_string_value(json_object_get(h, "error")), "INSUFFICIENT_FUNDS"));
    json_decref(rec);
    free(path);
    /* A missing command is a failed probe with a record, not an error. */
    acp_write_engines(home, "[{\"id\":\"ghost\",\"command\":\"/nonexistent/ghost-agent\"}]");
    assert_int_equal(cdsh_acp_probe_run(cdsh_test_home(), "ghost", &o, &rec, &path, NULL), 0);
    assert_false(json_is_true(json_object_get(json_object_get(rec, "spawn"), "ok")));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(rec, "health"), "status")), "failed");
    json_decref(rec);
    free(path);
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_probe_run(cdsh_test_home(), "nope", &o, &rec, &path, &err),
                     CDSH_ENOTFOUND);
    assert_string_equal(err.code, "UNKNOWN_ENGINE");
    cdsh_test_home_free(home);
}

static void cli_lists_probes_and_prompts(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    acp_write_fixture_engine(home, "[]", "");
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "engines", "--json", NULL), 0);
    json_t *doc = json_loads(out, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(doc, "engines")), 8);
    json_decref(doc);
    free(out);
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "probe", "fixture", "--cwd", home,
                                        "--prompt", "hi", NULL),
                     0);
    assert_non_null(strstr(out, "prompt:     end_turn"));
    assert_non_null(strstr(out, "evidence:   "));
    free(out);
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "engines", NULL), 0);
    assert_non_null(strstr(out, "fixture          yes      ok"));
    free(out);
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "prompt", "fixture", "all-updates",
                                        "--session", "cli-1", "--cwd", home, NULL),
                     0);
    assert_string_equal(out, "all done\n");
    assert_non_null(strstr(err, "[plan]"));
    assert_non_null(strstr(err, "[mystery_update] (not understood by cdsh; ignored)"));
    assert_non_null(strstr(err, "[end_turn] session cli-1 (engine fixture)"));
    free(out);
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "prompt", "fixture", "funds",
                                        "--session", "cli-1", "--cwd", home, NULL),
                     1);
    assert_non_null(strstr(err, "error [INSUFFICIENT_FUNDS]: session/prompt failed: Internal "
                                "error (-32603): Upstream request failed: Insufficient account "
                                "funds"));
    free(out);
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "prompt", "gemini", "hi",
                                        "--session", "cli-1", NULL),
                     1);
    assert_non_null(strstr(err, "ENGINE_LOCKED"));
    free(out);
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "prompt", "fixture", "permission",
                                        "--approve", "allow", "--cwd", home, NULL),
                     0);
    assert_string_equal(out, "permission: selected/once\n");
    free(out);
    free(err);
    /* cdsh's own tools offered as an MCP server (stdio: always accepted). */
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "prompt", "fixture", "mcp",
                                        "--cdsh-tools", "xq_*", "--cwd", home, NULL),
                     0);
    assert_string_equal(out, "mcp: cdsh:stdio\n");
    free(out);
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "sessions", NULL), 0);
    assert_non_null(strstr(out, "cli-1  engine=fixture"));
    free(out);
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "probe", "nope", NULL), 2);
    assert_non_null(strstr(err, "unknown engine \"nope\""));
    free(out);
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "frobnicate", NULL), 2);
    free(out);
    free(err);
    cdsh_test_home_free(home);
}

/* An engine launched through npx: a wrapper named npx (it runs the fixture
 * agent; nothing is downloaded) and a fake npm cache built here. */
static void probe_records_cold_start_from_the_npx_cache(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *peer = cdsh_test_peer_path_dup("acp_agent");
    char bin[4200], npx[4300], cache[4200], script[8800], rows[16384];
    snprintf(bin, sizeof bin, "%s/bin", home);
    assert_int_equal(mkdir(bin, 0700), 0);
    snprintf(npx, sizeof npx, "%s/npx", bin);
    snprintf(script, sizeof script, "#!/bin/sh\nexec %s\n", peer);
    cdsh_test_write_file(npx, script);
    assert_int_equal(chmod(npx, 0700), 0);
    snprintf(cache, sizeof cache, "%s/npm-cache", home);
    snprintf(rows, sizeof rows,
             "[{\"id\":\"viax\",\"command\":\"%s\",\"args\":[\"-y\",\"fixture-acp@1.0.0\"],"
             "\"env\":{\"npm_config_cache\":\"%s\"},\"initBudget\":{\"steadySecs\":20,"
             "\"coldSecs\":200,\"coldProbe\":\"npx-cache\"}}]",
             npx, cache);
    acp_write_engines(home, rows);
    cdsh_acp_probe_opts o = {.cwd = home};
    json_t *rec = NULL;
    assert_int_equal(cdsh_acp_probe_run(cdsh_test_home(), "viax", &o, &rec, NULL, NULL), 0);
    json_t *init = json_object_get(rec, "initialize");
    assert_true(json_is_true(json_object_get(init, "ok")));
    assert_true(json_is_true(json_object_get(init, "coldStart")));
    assert_non_null(strstr(json_string_value(json_object_get(init, "coldReason")),
                           "npx cache miss: fixture-acp not installed in "));
    assert_int_equal(json_integer_value(json_object_get(rec, "initBudgetMs")), 200000);
    json_decref(rec);
    /* sha512("fixture-acp@1.0.0")[0:16], as npx names the directory. */
    char key[17], dir[4600], cmd[9300];
    const char *spec[] = {"fixture-acp@1.0.0"};
    assert_int_equal(cdsh_acp_npx_cache_key(spec, 1, key), 0);
    snprintf(dir, sizeof dir, "%s/_npx/%s/node_modules/fixture-acp", cache, key);
    snprintf(cmd, sizeof cmd, "mkdir -p %s && echo '{}' > %s/package.json", dir, dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(cdsh_acp_probe_run(cdsh_test_home(), "viax", &o, &rec, NULL, NULL), 0);
    init = json_object_get(rec, "initialize");
    assert_true(json_is_false(json_object_get(init, "coldStart")));
    assert_non_null(
        strstr(json_string_value(json_object_get(init, "coldReason")), "npx cache hit: "));
    assert_int_equal(json_integer_value(json_object_get(rec, "initBudgetMs")), 20000);
    json_decref(rec);
    free(peer);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(probe_writes_the_seed_record),
        cmocka_unit_test(probe_records_cold_start_from_the_npx_cache),
        cmocka_unit_test(probe_evidence_has_no_credentials),
        cmocka_unit_test(probe_keeps_rejected_lines_and_records_failures),
        cmocka_unit_test(cli_lists_probes_and_prompts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
