/* test_agent_context.c — per-turn runtime context and sampling providers
 * (host/prompt.h) in the agent loop against the scripted fake model: frozen
 * bytes in every step of a turn, changes only on the next turn, sampling in
 * the request body, and providers gone with their plugin. */
#include "support/testkit.h"

#include "support/model_env.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "host/prompt.h"

/* ---- fixtures ---------------------------------------------------------------- */

static atomic_int calls;   /* provider invocations */
static atomic_int version; /* bumped by the "bump" tool mid-turn */

static int bump_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    (void)exec;
    atomic_fetch_add(&version, 1);
    *value = json_string("bumped");
    return 0;
}

static char *ctx_fn(void *ud, const cdsh_scope *scope, const char *sid, long long turn)
{
    (void)scope;
    atomic_fetch_add(&calls, 1);
    char buf[256];
    snprintf(buf, sizeof buf, "%s v%d session=%s turn=%lld", (const char *)ud,
             atomic_load(&version), sid, turn);
    return strdup(buf);
}

static json_t *samp_fn(void *ud, const cdsh_scope *scope, const char *sid, long long turn)
{
    (void)ud;
    (void)scope;
    (void)sid;
    (void)turn;
    return json_pack("{s:f, s:i, s:[s], s:s, s:f}", "temperature", 0.25, "maxTokens", 321, "stop",
                     "</end>", "reasoningEffort", "high", "topP", 0.9);
}

typedef struct env {
    char *home;
    cdsh_host *host;
    cdsh_session_store *store;
    cdsh_agent *agent;
    char *sid;
} env;

static void env_open(env *e)
{
    memset(e, 0, sizeof *e);
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    atomic_store(&calls, 0);
    atomic_store(&version, 1);
    e->home = cdsh_test_home_new();
    e->host = cdsh_host_new();
    json_t *params = json_pack("{s:s}", "type", "object");
    json_t *out = json_object();
    cdsh_tool_def def = {.name = "bump",
                         .description = "changes the provider's answer",
                         .parameters = params,
                         .output_schema = out,
                         .execute = bump_body};
    cdsh_disposer_t d;
    cdsh_error err;
    assert_int_equal(cdsh_tools_register(cdsh_host_tools(e->host), NULL, &def, &d, &err), 0);
    json_decref(params);
    json_decref(out);
    assert_int_equal(cdsh_session_store_open(cdsh_test_home(), NULL, &e->store, &err), 0);
    cdsh_agent_options o = {.host = e->host, .store = e->store, .base_prompt = "BASE PROMPT"};
    assert_int_equal(cdsh_agent_new(&o, &e->agent, &err), 0);
    cdsh_session_spec spec = {.title = "t"};
    assert_int_equal(cdsh_session_store_create(e->store, &spec, &e->sid, &err), 0);
}

static void env_close(env *e)
{
    cdsh_agent_free(e->agent);
    cdsh_session_store_close(e->store);
    cdsh_host_free(e->host);
    cdsh_test_home_free(e->home);
    free(e->sid);
}

static void run(env *e, const char *text, int steps)
{
    cdsh_agent_outcome out;
    cdsh_error err = {0};
    assert_int_equal(cdsh_agent_run_turn(e->agent, e->sid, text, NULL, NULL, NULL, &out, &err), 0);
    assert_string_equal(out.reason, "done");
    assert_int_equal(out.steps, steps);
    cdsh_agent_outcome_deinit(&out);
}

static const json_t *last_msg(const json_t *body)
{
    const json_t *m = json_object_get(body, "messages");
    return json_array_get(m, json_array_size(m) - 1);
}

static const char *content(const json_t *msg)
{
    return json_string_value(json_object_get(msg, "content"));
}

#define BUMP_THEN_STOP                                                                             \
    "{\"chunks\":[{\"tool_call\":{\"index\":0,\"id\":\"c1\",\"name\":\"bump\","                    \
    "\"arguments\":\"{}\"}}],\"finish_reason\":\"tool_calls\"},"                                   \
    "{\"chunks\":[{\"text\":\"ok\"}],\"finish_reason\":\"stop\"}"

/* ---- tests -------------------------------------------------------------------- */

static void runtime_context_is_frozen_for_every_step_of_a_turn(void **state)
{
    (void)state;
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, "[" BUMP_THEN_STOP "," BUMP_THEN_STOP "]");
    env e;
    env_open(&e);
    cdsh_prompt_provider_def def = {.name = "test:turn", .context = ctx_fn, .ud = "STATE"};
    cdsh_disposer_t d;
    cdsh_error err;
    assert_int_equal(cdsh_prompt_provider_register(cdsh_host_prompt(e.host), &def, &d, &err), 0);
    run(&e, "first", 2);
    run(&e, "second", 2);
    assert_int_equal(atomic_load(&calls), 2); /* once per turn, not per step */

    json_t *bodies = cdsh_test_model_env_bodies(&f);
    assert_int_equal(json_array_size(bodies), 4);
    char want1[256], want2[256];
    snprintf(want1, sizeof want1,
             CDSH_AGENT_CONTEXT_HEAD "<runtime_context name=\"test:turn\">\nSTATE v1 session=%s "
                                     "turn=1\n</runtime_context>",
             e.sid);
    snprintf(want2, sizeof want2,
             CDSH_AGENT_CONTEXT_HEAD "<runtime_context name=\"test:turn\">\nSTATE v2 session=%s "
                                     "turn=2\n</runtime_context>",
             e.sid);
    /* Turn 1: the tool changed the provider's answer after step 1, yet step 2
     * carries the same bytes; turn 2 sees the change. */
    for (size_t i = 0; i < 4; i++) {
        const json_t *m = last_msg(json_array_get(bodies, i));
        assert_string_equal(json_string_value(json_object_get(m, "role")), "user");
        assert_string_equal(content(m), i < 2 ? want1 : want2);
    }
    /* Step 2 of turn 1: system user assistant(call) tool context. */
    json_t *msgs = json_object_get(json_array_get(bodies, 1), "messages");
    assert_int_equal(json_array_size(msgs), 5);
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 3), "role")),
                        "tool");
    /* Turn 2's history holds no context text: it was never stored. */
    msgs = json_object_get(json_array_get(bodies, 2), "messages");
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m)
        if (i + 1 < json_array_size(msgs) && content(m))
            assert_null(strstr(content(m), "runtime_context"));
    json_decref(bodies);

    /* The log records name and byte count, never the text. */
    json_t *evs = cdsh_session_store_events(e.store, e.sid, 0, 1000, NULL, &err);
    int seen = 0;
    json_array_foreach(evs, i, m) {
        const char *type = json_string_value(json_object_get(m, "type"));
        char *dump = json_dumps(m, 0);
        if (strcmp(type, "turn/context") == 0) {
            seen++;
            json_t *c =
                json_array_get(json_object_get(json_object_get(m, "payload"), "contexts"), 0);
            assert_string_equal(json_string_value(json_object_get(c, "name")), "test:turn");
            char expect[128];
            snprintf(expect, sizeof expect, "STATE v%d session=%s turn=%d", seen, e.sid, seen);
            assert_int_equal(json_integer_value(json_object_get(c, "bytes")), strlen(expect));
        }
        assert_null(strstr(dump, "STATE v"));
        free(dump);
    }
    assert_int_equal(seen, 2);
    json_decref(evs);
    cdsh_disposer_run(&d);
    env_close(&e);
    cdsh_test_model_env_stop(&f);
}

static void sampling_overrides_reach_the_request_body(void **state)
{
    (void)state;
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, "[" BUMP_THEN_STOP "]");
    env e;
    env_open(&e);
    cdsh_prompt_provider_def def = {.name = "test:sampling", .sampling = samp_fn};
    cdsh_disposer_t d;
    cdsh_error err;
    assert_int_equal(cdsh_prompt_provider_register(cdsh_host_prompt(e.host), &def, &d, &err), 0);
    run(&e, "hi", 2);
    json_t *bodies = cdsh_test_model_env_bodies(&f);
    assert_int_equal(json_array_size(bodies), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *b = json_array_get(bodies, i);
        assert_float_equal(json_number_value(json_object_get(b, "temperature")), 0.25, 1e-9);
        assert_int_equal(json_integer_value(json_object_get(b, "max_tokens")), 321);
        assert_string_equal(json_string_value(json_array_get(json_object_get(b, "stop"), 0)),
                            "</end>");
        assert_string_equal(json_string_value(json_object_get(b, "reasoning_effort")), "high");
        assert_null(json_object_get(b, "top_p"));
        assert_null(json_object_get(b, "topP"));
        /* No context provider: the last message is the user's own (step 1). */
        if (i == 0)
            assert_string_equal(content(last_msg(b)), "hi");
    }
    json_decref(bodies);
    /* topP is recorded, not sent. */
    json_t *evs = cdsh_session_store_events(e.store, e.sid, 0, 1000, NULL, &err);
    size_t i;
    json_t *m;
    int seen = 0;
    json_array_foreach(evs, i, m) {
        if (strcmp(json_string_value(json_object_get(m, "type")), "turn/context"))
            continue;
        seen++;
        json_t *p = json_object_get(m, "payload");
        assert_float_equal(
            json_number_value(json_object_get(json_object_get(p, "recorded"), "topP")), 0.9, 1e-9);
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(p, "sampling"), "maxTokens")), 321);
        assert_int_equal(json_array_size(json_object_get(p, "contexts")), 0);
    }
    assert_int_equal(seen, 1);
    json_decref(evs);
    cdsh_disposer_run(&d);
    env_close(&e);
    cdsh_test_model_env_stop(&f);
}

static int plugin_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    cdsh_prompt_provider_def c = {.name = "plug:turn", .context = ctx_fn, .ud = "PLUG"};
    cdsh_prompt_provider_def s = {.name = "plug:sampling", .sampling = samp_fn};
    int rc = cdsh_prompt_ctx_provide(ctx, &c, err);
    return rc ? rc : cdsh_prompt_ctx_provide(ctx, &s, err);
}

static const cdsh_plugin_def plugin_def = {
    .name = "ctxplug", .description = "provides runtime context", .apply = plugin_apply};

static void unloading_the_plugin_removes_its_providers(void **state)
{
    (void)state;
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, "[{\"chunks\":[{\"text\":\"a\"}],\"finish_reason\":\"stop\"},"
                                  "{\"chunks\":[{\"text\":\"b\"}],\"finish_reason\":\"stop\"}]");
    env e;
    env_open(&e);
    cdsh_plugin *pl;
    cdsh_error err;
    assert_int_equal(cdsh_plugin_load(e.host, &plugin_def, NULL, &pl, &err), 0);
    assert_int_equal(cdsh_prompt_provider_count(cdsh_host_prompt(e.host)), 2);
    run(&e, "one", 1);
    cdsh_plugin_unload(pl);
    assert_int_equal(cdsh_prompt_provider_count(cdsh_host_prompt(e.host)), 0);
    run(&e, "two", 1);
    json_t *bodies = cdsh_test_model_env_bodies(&f);
    assert_int_equal(json_array_size(bodies), 2);
    assert_non_null(strstr(content(last_msg(json_array_get(bodies, 0))), "PLUG v1"));
    assert_non_null(json_object_get(json_array_get(bodies, 0), "temperature"));
    assert_string_equal(content(last_msg(json_array_get(bodies, 1))), "two");
    assert_null(json_object_get(json_array_get(bodies, 1), "temperature"));
    assert_null(json_object_get(json_array_get(bodies, 1), "max_tokens"));
    json_decref(bodies);
    env_close(&e);
    cdsh_test_model_env_stop(&f);
}

static void provider_registration_checks_its_arguments(void **state)
{
    (void)state;
    cdsh_prompt *p = cdsh_prompt_new(NULL);
    cdsh_error err = {0};
    cdsh_disposer_t d;
    cdsh_prompt_provider_def none = {.name = "x"};
    assert_int_equal(cdsh_prompt_provider_register(p, &none, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_PROVIDER");
    cdsh_prompt_provider_def bad = {.name = "bad name", .context = ctx_fn};
    assert_int_equal(cdsh_prompt_provider_register(p, &bad, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_PROVIDER");
    cdsh_prompt_provider_def ok = {.name = "a", .context = ctx_fn, .ud = "A"};
    assert_int_equal(cdsh_prompt_provider_register(p, &ok, &d, &err), 0);
    cdsh_disposer_t d2;
    assert_int_equal(cdsh_prompt_provider_register(p, &ok, &d2, &err), CDSH_EEXIST);
    assert_string_equal(err.code, "DUPLICATE_PROVIDER");
    assert_string_equal(err.message, "prompt provider \"a\" is already registered");
    json_t *samp = NULL;
    json_t *ctx = cdsh_prompt_turn_context(p, NULL, "s1", 7, &samp);
    assert_int_equal(json_array_size(ctx), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ctx, 0), "text")),
                        "A v1 session=s1 turn=7");
    assert_int_equal(json_object_size(samp), 0);
    json_decref(ctx);
    json_decref(samp);
    cdsh_disposer_run(&d);
    assert_int_equal(cdsh_prompt_provider_count(p), 0);
    cdsh_prompt_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(runtime_context_is_frozen_for_every_step_of_a_turn),
        cmocka_unit_test(sampling_overrides_reach_the_request_body),
        cmocka_unit_test(unloading_the_plugin_removes_its_providers),
        cmocka_unit_test(provider_registration_checks_its_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
