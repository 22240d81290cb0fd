/* test_xq_plugin_model.c — the model opponent against the scripted fake
 * model: a legal mover, one that corrects an illegal move from legalMoves,
 * one that keeps playing illegal moves, one that stalls (ai.timeout) and one
 * that spends its budget (ai.budget). */
#include "support/testkit.h"
#include "support/fake_model.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/host.h"
#include "plugins/xiangqi/plugin.h"

typedef struct fixture {
    char *home;
    cdsh_test_fake_model fk;
    cdsh_host *host;
} fixture;

static void start(fixture *f, const char *script, int timeout_ms, int max_tokens, int max_invalid)
{
    f->home = cdsh_test_home_new();
    cdsh_test_fake_model_start(&f->fk, script, NULL);
    setenv("CDSH_BASE_URL", f->fk.url, 1);
    setenv("CDSH_MODEL", "fake-chat", 1);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/xq", f->home);
    json_t *cfg = json_pack("{s:s,s:s,s:{s:i,s:i,s:i},s:{s:i,s:i,s:i,s:i}}", "storageDir", dir,
                            "defaultOpponent", "model", "engine", "depth", 1, "movetimeMs", 100,
                            "hashMb", 1, "model", "timeoutMs", timeout_ms, "maxTokens", max_tokens,
                            "maxInvalidMoves", max_invalid, "maxSteps", 6);
    f->host = cdsh_host_new();
    cdsh_error err;
    assert_int_equal(cdsh_plugin_load(f->host, &cdsh_xq_plugin, cfg, NULL, &err), 0);
    json_decref(cfg);
}

static void stop(fixture *f)
{
    cdsh_host_free(f->host);
    cdsh_test_fake_model_stop(&f->fk);
    unsetenv("CDSH_BASE_URL");
    unsetenv("CDSH_MODEL");
    cdsh_test_home_free(f->home);
}

static json_t *command(fixture *f, const char *line)
{
    cdsh_command_outcome out;
    cdsh_error err;
    assert_int_equal(
        cdsh_commands_execute(cdsh_host_commands(f->host), NULL, line, NULL, NULL, &out, &err), 1);
    json_t *v = json_loads(out.text, 0, NULL);
    if (!v)
        fail_msg("%s: %s", line, out.text);
    cdsh_commands_outcome_clear(&out);
    return v;
}

/* Waits until the model's turn is over (pending not ai-thinking). */
static json_t *settle(fixture *f)
{
    for (int i = 0; i < 400; i++) {
        json_t *v = command(f, "/xiangqi state");
        const char *pending = json_string_value(json_object_get(v, "pending"));
        if (!pending || strcmp(pending, "ai-thinking") != 0)
            return v;
        json_decref(v);
        usleep(25000);
    }
    fail_msg("the model turn never ended");
    return NULL;
}

#define MOVE_CALL(id, mv)                                                                          \
    "{\"chunks\":[{\"tool_call\":{\"index\":0,\"id\":\"" id "\",\"name\":\"xiangqi_move\","        \
    "\"arguments\":\"{\\\"move\\\":\\\"" mv "\\\"}\"}}],\"finish_reason\":\"tool_calls\","         \
    "\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":20,\"total_tokens\":120}}"

static const char *second_iccs(const json_t *v)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(v, "history"), 1), "iccs"));
}

static void model_plays_a_legal_move(void **state)
{
    (void)state;
    fixture f;
    start(&f, "[" MOVE_CALL("c1", "h9g7") "]", 10000, 100000, 3);
    json_decref(command(&f, "/xiangqi new r model"));
    json_t *v = command(&f, "/xiangqi move h2e2");
    assert_string_equal(json_string_value(json_object_get(v, "played")), "炮二平五");
    json_decref(v);
    v = settle(&f);
    assert_string_equal(second_iccs(v), "h9g7");
    assert_string_equal(json_string_value(json_object_get(v, "turn")), "r");
    assert_true(json_is_null(json_object_get(v, "message")));
    json_t *u = json_object_get(v, "usage");
    assert_int_equal(json_integer_value(json_object_get(u, "calls")), 1);
    assert_int_equal(json_integer_value(json_object_get(u, "totalTokens")), 120);
    assert_int_equal(json_integer_value(json_object_get(u, "inputTokens")), 100);
    json_t *opp = json_object_get(v, "opponent");
    assert_string_equal(json_string_value(json_object_get(opp, "kind")), "model");
    assert_string_equal(json_string_value(json_object_get(opp, "model")), "fake-chat");
    json_decref(v);
    /* the request offered the xiangqi tools */
    json_t *reqs = cdsh_test_fake_model_requests(&f.fk);
    assert_int_equal(json_array_size(reqs), 1);
    char *body = json_dumps(json_object_get(json_array_get(reqs, 0), "body"), 0);
    assert_non_null(strstr(body, "xiangqi_move"));
    assert_non_null(strstr(body, "xiangqi_hint"));
    free(body);
    json_decref(reqs);
    stop(&f);
}

static void model_corrects_an_illegal_move_from_the_legal_list(void **state)
{
    (void)state;
    fixture f;
    start(&f, "[" MOVE_CALL("c1", "h9h5") "," MOVE_CALL("c2", "马８进７") "]", 10000, 100000, 3);
    json_decref(command(&f, "/xiangqi new r model"));
    json_decref(command(&f, "/xiangqi move h2e2"));
    json_t *v = settle(&f);
    assert_string_equal(second_iccs(v), "h9g7");
    assert_true(json_is_null(json_object_get(v, "message")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "usage"), "calls")), 2);
    json_decref(v);
    json_t *reqs = cdsh_test_fake_model_requests(&f.fk);
    assert_int_equal(json_array_size(reqs), 2);
    char *body = json_dumps(json_object_get(json_array_get(reqs, 1), "body"), 0);
    /* the refusal card with the legal moves went back to the model */
    assert_non_null(strstr(body, "ILLEGAL_MOVE"));
    assert_non_null(strstr(body, "h9g7 马８进７"));
    free(body);
    json_decref(reqs);
    stop(&f);
}

static void repeated_invalid_moves_fall_back_to_the_engine(void **state)
{
    (void)state;
    fixture f;
    start(&f,
          "[{\"repeat\":true,\"chunks\":[{\"tool_call\":{\"index\":0,\"id\":\"c1\",\"name\":"
          "\"xiangqi_move\",\"arguments\":\"{\\\"move\\\":\\\"e9e7\\\"}\"}}],"
          "\"finish_reason\":\"tool_calls\"}]",
          10000, 100000, 2);
    json_decref(command(&f, "/xiangqi new r model"));
    json_decref(command(&f, "/xiangqi move h2e2"));
    json_t *v = settle(&f);
    assert_int_equal(json_array_size(json_object_get(v, "history")), 2);
    assert_string_equal(json_string_value(json_object_get(v, "turn")), "r");
    assert_true(json_is_null(json_object_get(v, "pending")));
    json_t *m = json_object_get(v, "message");
    assert_string_equal(json_string_value(json_object_get(m, "code")), "ai.fallback.local");
    assert_string_equal(json_string_value(json_object_get(m, "tone")), "warn");
    json_decref(v);
    stop(&f);
}

static void a_stalled_model_times_out_to_the_engine(void **state)
{
    (void)state;
    fixture f;
    start(&f, "[{\"first_byte_delay_ms\":3000,\"text\":\"...\"}]", 300, 100000, 3);
    json_decref(command(&f, "/xiangqi new r model"));
    json_t *v = command(&f, "/xiangqi move h2e2");
    json_decref(v);
    v = settle(&f);
    assert_int_equal(json_array_size(json_object_get(v, "history")), 2);
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "message"), "code")),
                        "ai.timeout");
    json_decref(v);
    stop(&f);
}

static void a_spent_budget_falls_back_with_ai_budget(void **state)
{
    (void)state;
    fixture f;
    start(&f,
          "[{\"text\":\"让我想想……\",\"finish_reason\":\"stop\",\"usage\":{\"prompt_tokens\":400,"
          "\"completion_tokens\":100,\"total_tokens\":500}}]",
          10000, 300, 3);
    json_decref(command(&f, "/xiangqi new r model"));
    json_decref(command(&f, "/xiangqi move h2e2"));
    json_t *v = settle(&f);
    assert_int_equal(json_array_size(json_object_get(v, "history")), 2);
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "message"), "code")),
                        "ai.budget");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(v, "usage"), "totalTokens")), 500);
    json_decref(v);
    /* the next turn does not even ask the model */
    json_decref(command(&f, "/xiangqi move h0g2"));
    v = settle(&f);
    assert_int_equal(json_array_size(json_object_get(v, "history")), 4);
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "message"), "code")),
                        "ai.budget");
    json_decref(v);
    json_t *reqs = cdsh_test_fake_model_requests(&f.fk);
    assert_int_equal(json_array_size(reqs), 1);
    json_decref(reqs);
    stop(&f);
}

static void a_model_error_waits_for_the_person_to_fall_back(void **state)
{
    (void)state;
    fixture f;
    start(&f, "[{\"status\":400,\"error\":{\"message\":\"bad request\"}}]", 10000, 100000, 3);
    json_decref(command(&f, "/xiangqi new r model"));
    json_decref(command(&f, "/xiangqi move h2e2"));
    json_t *v = settle(&f);
    assert_string_equal(json_string_value(json_object_get(v, "pending")), "ai-failed");
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "message"), "code")),
                        "ai.error");
    assert_string_equal(json_string_value(json_object_get(v, "turn")), "b");
    json_decref(v);
    v = command(&f, "/xiangqi fallback");
    assert_true(json_is_null(json_object_get(v, "pending")));
    assert_string_equal(json_string_value(json_object_get(v, "turn")), "r");
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "message"), "code")),
                        "ai.fallback.local");
    json_decref(v);
    stop(&f);
}

/* The failure says why (the model client's code, the HTTP status and the
 * endpoint's message) and what to do, in both languages; a fallback clears it. */
static void a_model_error_carries_its_cause_and_what_to_do(void **state)
{
    (void)state;
    fixture f;
    start(&f, "[{\"status\":401,\"error\":{\"message\":\"Authentication Fails, Your api key "
              "is invalid\"}}]",
          10000, 100000, 3);
    json_decref(command(&f, "/xiangqi new r model"));
    json_decref(command(&f, "/xiangqi move h2e2"));
    json_t *v = settle(&f);
    json_t *cause = json_object_get(json_object_get(v, "message"), "cause");
    assert_true(json_is_object(cause));
    assert_string_equal(json_string_value(json_object_get(cause, "code")), "INVALID_CREDENTIAL");
    assert_string_equal(json_string_value(json_object_get(cause, "message")),
                        "HTTP 401: Authentication Fails, Your api key is invalid");
    assert_non_null(strstr(json_string_value(json_object_get(cause, "fix")), "refused the key"));
    assert_non_null(strstr(json_string_value(json_object_get(cause, "fixZh")), "服务拒绝了密钥"));
    json_decref(v);
    v = command(&f, "/xiangqi fallback");
    assert_null(json_object_get(json_object_get(v, "message"), "cause"));
    json_decref(v);
    stop(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(model_plays_a_legal_move),
        cmocka_unit_test(model_corrects_an_illegal_move_from_the_legal_list),
        cmocka_unit_test(repeated_invalid_moves_fall_back_to_the_engine),
        cmocka_unit_test(a_stalled_model_times_out_to_the_engine),
        cmocka_unit_test(a_spent_budget_falls_back_with_ai_budget),
        cmocka_unit_test(a_model_error_waits_for_the_person_to_fall_back),
        cmocka_unit_test(a_model_error_carries_its_cause_and_what_to_do),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
