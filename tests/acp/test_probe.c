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
    /* The first start of an executable is a cold one (issue 21 item 5). */
    assert_true(json_is_true(json_object_get(init, "coldStart")));
    assert_non_null(strstr(json_string_value(json_object_get(init, "coldReason")),
                           "first start: no initialize of "));
    assert_int_equal(json_integer_value(json_object_get(rec, "initBudgetMs")), 300000);
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
    /* Started once: the next start is warm, with the steady budget. */
    assert_int_equal(cdsh_acp_probe_run(cdsh_test_home(), "fixture", &o, &rec, &path, &err), 0);
    init = json_object_get(rec, "initialize");
    assert_true(json_is_false(json_object_get(init, "coldStart")));
    assert_non_null(strstr(json_string_value(json_object_get(init, "coldReason")), "warm: "));
    assert_int_equal(json_integer_value(json_object_get(rec, "initBudgetMs")), 30000);
    json_decref(rec);
    free(path);
    /* A reinstalled executable (a new inode) starts cold again. */
    char copy[4200];
    snprintf(copy, sizeof copy, "%s/agent-copy", home);
    char *peer = cdsh_test_peer_path_dup("acp_agent");
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "cp %s %s", peer, copy);
    assert_int_equal(system(cmd), 0);
    char extra[4400];
    snprintf(extra, sizeof extra, "\"resolvedCommand\":\"%s\"", copy);
    acp_write_fixture_engine(home, "[]", extra);
    assert_int_equal(cdsh_acp_probe_run(cdsh_test_home(), "fixture", &o, &rec, &path, &err), 0);
    assert_true(json_is_true(json_object_get(json_object_get(rec, "initialize"), "coldStart")));
    json_decref(rec);
    free(path);
    snprintf(cmd, sizeof cmd, "rm %s && cp %s %s", copy, peer, copy);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(cdsh_acp_probe_run(cdsh_test_home(), "fixture", &o, &rec, &path, &err), 0);
    assert_non_null(strstr(json_string_value(json_object_get(json_object_get(rec, "initialize"),
                                                             "coldReason")),
                           "was installed or changed"));
    json_decref(rec);
    free(path);
    free(peer);
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

/* Column of the first occurrence of needle in the line of text that
 * starts with prefix. */
static long column_of(const char *text, const char *prefix, const char *needle)
{
    const char *line = text;
    while (line && strncmp(line, prefix, strlen(prefix)) != 0) {
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    assert_non_null(line);
    const char *hit = strstr(line, needle);
    assert_non_null(hit);
    return (long)(hit - line);
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
    assert_int_equal(column_of(out, "fixture ", "ok "), column_of(out, "ENGINE", "HEALTH"));
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

/* Seed 003 §6: authMethods verbatim; issue 21 item 9: nothing cdsh handed
 * the engine (env values, --api-key) and nothing personal (e-mail, 密码)
 * survives in the evidence, the listing or `engines --json`. */
static void evidence_keeps_auth_methods_and_hides_what_cdsh_passed(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    acp_write_fixture_engine(home,
                             "[\"--echo-env\",\"FIXTURE_UPSTREAM\",\"--api-key\","
                             "\"plainVALUEabc123\",\"--token=tokVALUE789xyz\",\"--page-size\",\"2\"]",
                             "\"env\":{\"FIXTURE_UPSTREAM\":\"upstreamVALUE0123456789\","
                             "\"FIXTURE_MODE\":\"quiet-mode\"}");
    json_t *rec = NULL;
    char *path = NULL;
    cdsh_acp_probe_opts o = {.cwd = home};
    assert_int_equal(cdsh_acp_probe_run(cdsh_test_home(), "fixture", &o, &rec, &path, NULL), 0);
    json_t *am = json_object_get(json_object_get(rec, "initialize"), "authMethods");
    assert_true(json_is_array(am));
    assert_string_equal(json_string_value(json_object_get(json_array_get(am, 0), "id")),
                        "fixture-login");
    assert_string_equal(json_string_value(json_object_get(json_array_get(am, 0), "description")),
                        "Log in to the fixture");
    char *text = evidence_text(path);
    assert_null(strstr(text, "upstreamVALUE"));
    assert_null(strstr(text, "plainVALUE"));
    assert_null(strstr(text, "tokVALUE"));
    assert_null(strstr(text, "ops@example.com"));
    assert_null(strstr(text, "hunter2x"));
    assert_non_null(strstr(text, "\"--api-key\""));
    assert_non_null(strstr(text, "\"--token=[REDACTED]\""));
    assert_non_null(strstr(text, "\"--page-size\""));
    assert_non_null(strstr(text, "fixture-login"));
    free(text);
    json_decref(rec);
    free(path);
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "engines", "--json", NULL), 0);
    assert_null(strstr(out, "upstreamVALUE"));
    assert_null(strstr(out, "quiet-mode"));
    assert_null(strstr(out, "plainVALUE"));
    assert_null(strstr(out, "tokVALUE"));
    assert_non_null(strstr(out, "\"FIXTURE_UPSTREAM\": \"[REDACTED]\""));
    free(out);
    free(err);
    /* The stored health and runtime files neither. */
    char rt[4200];
    snprintf(rt, sizeof rt, "%s/multi-acp/runtime.json", home);
    char *runtime = cdsh_test_read_file(rt, NULL);
    assert_non_null(runtime);
    assert_null(strstr(runtime, "upstreamVALUE"));
    free(runtime);
    cdsh_test_home_free(home);
}

static json_t *sessions_json(void)
{
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "sessions", "--json", NULL), 0);
    json_t *doc = json_loads(out, 0, NULL);
    assert_non_null(doc);
    free(out);
    free(err);
    return doc;
}

/* Issue 21 items 6 and 12 on the command line. */
static void cli_prompt_prints_only_the_new_turn_and_reports_its_end(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    acp_write_fixture_engine(home, "[]",
                             "\"initialConfigOptions\":[{\"configId\":\"bogus\",\"value\":\"x\"}]");
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "prompt", "fixture", "first",
                                        "--session", "s-replay", "--cwd", home, NULL),
                     0);
    assert_string_equal(out, "PONG\n");
    free(out);
    free(err);
    /* A new process: session/load replays "restored …" before the turn. */
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "prompt", "fixture", "again",
                                        "--session", "s-replay", "--cwd", home, NULL),
                     0);
    assert_string_equal(out, "PONG\n");
    assert_null(strstr(err, "restored"));
    free(out);
    free(err);
    /* The unapplied option's warning comes before the turn's approval lines. */
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "prompt", "fixture", "permission",
                                        "--approve", "allow", "--cwd", home, NULL),
                     0);
    const char *warn = strstr(err, "warning: initial config option bogus=x not applied");
    const char *ask = strstr(err, "[approval]");
    assert_non_null(warn);
    assert_non_null(ask);
    assert_true(warn < ask);
    free(out);
    free(err);
    /* Codex's "abort": the turn ends cancelled, which is not a success. */
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "prompt", "fixture", "abort",
                                        "--approve", "reject", "--cwd", home, NULL),
                     1);
    assert_non_null(strstr(err, "error [CANCELLED]: the engine ended the turn as cancelled"));
    free(out);
    free(err);
    /* No --session: nothing is left bound. */
    json_t *doc = sessions_json();
    const char *k;
    json_t *v;
    json_object_foreach(doc, k, v) {
        assert_true(strncmp(k, "cli-", 4) != 0);
    }
    assert_non_null(json_object_get(doc, "s-replay"));
    json_decref(doc);
    /* A failed first message does not lock the session to its engine. */
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "prompt", "fixture", "funds",
                                        "--session", "s-failed", "--cwd", home, NULL),
                     1);
    free(out);
    free(err);
    doc = sessions_json();
    json_t *e = json_object_get(doc, "s-failed");
    assert_non_null(e);
    assert_true(json_is_null(json_object_get(e, "lockedEngineId")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "s-replay"),
                                                          "lockedEngineId")),
                        "fixture");
    json_decref(doc);
    cdsh_test_home_free(home);
}

static void engines_table_aligns_long_ids(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *peer = cdsh_test_peer_path_dup("acp_agent");
    char rows[8192];
    snprintf(rows, sizeof rows,
             "[{\"id\":\"a-very-long-engine-identifier-for-columns\",\"command\":\"%s\","
             "\"enabled\":false},{\"id\":\"fixture\",\"command\":\"%s\"}]",
             peer, peer);
    acp_write_engines(home, rows);
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "engines", NULL), 0);
    long head = column_of(out, "ENGINE", "ENABLED");
    assert_int_equal(column_of(out, "a-very-long-engine-identifier-for-columns ", "no "), head);
    assert_int_equal(column_of(out, "fixture ", "yes "), head);
    assert_int_equal(column_of(out, "gemini ", "yes "), head);
    long cmd = column_of(out, "ENGINE", "COMMAND");
    assert_int_equal(column_of(out, "fixture ", peer), cmd);
    free(out);
    free(err);
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
        cmocka_unit_test(evidence_keeps_auth_methods_and_hides_what_cdsh_passed),
        cmocka_unit_test(cli_prompt_prints_only_the_new_turn_and_reports_its_end),
        cmocka_unit_test(engines_table_aligns_long_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
