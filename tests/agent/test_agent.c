/* test_agent.c — the agent loop against the scripted fake model: multi-step
 * tool use, parallel-safe tools running together with results in model
 * order, step and token limits, cancellation, a busy session, a missing key,
 * a process killed mid-turn repaired on the next turn, and slash commands. */
#include "support/testkit.h"

#include "support/model_env.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "host/dispatch.h"

/* ---- a host with test tools ------------------------------------------------- */

static atomic_int running, max_running;

static int sleep_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    int now = atomic_fetch_add(&running, 1) + 1;
    int prev = atomic_load(&max_running);
    while (now > prev && !atomic_compare_exchange_weak(&max_running, &prev, now))
        ;
    /* "await": n holds the call until n calls have run at once (a serial
     * runner hangs here, and CTest's timeout reports it) */
    json_int_t await = json_integer_value(json_object_get(exec->args, "await"));
    while (atomic_load(&max_running) < await && !cdsh_cancel_is_fired(exec->cancel))
        usleep(1000);
    json_int_t ms = json_integer_value(json_object_get(exec->args, "ms"));
    cdsh_cancel_wait(exec->cancel, ms);
    atomic_fetch_sub(&running, 1);
    if (cdsh_cancel_is_fired(exec->cancel))
        return cdsh_dispatch_fail(exec, "AbortError", "ABORTED", "stopped");
    *value = json_pack("{s:s}", "tag", json_string_value(json_object_get(exec->args, "tag")));
    return 0;
}

/* Writes the marker file named in args, then waits for cancellation. */
static int block_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    const char *marker = json_string_value(json_object_get(exec->args, "marker"));
    if (marker)
        cdsh_test_write_file(marker, "started");
    cdsh_cancel_wait(exec->cancel, 60000);
    *value = json_string("unblocked");
    return 0;
}

/* Returns the id of the scope the call was dispatched in and its parent's. */
static int whoami_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    *value = json_pack("{s:s, s:s}", "scope", cdsh_scope_id(exec->agent), "parent",
                       cdsh_scope_id(cdsh_scope_parent(exec->agent)));
    return 0;
}

static int ctx_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    cdsh_dispatch_defer_context(exec, "the user prefers metric units");
    *value = json_string("noted");
    return 0;
}

typedef struct env {
    char *home;
    cdsh_host *host;
    cdsh_session_store *store;
    cdsh_agent *agent;
    char *sid;
    json_t *events; /* every event the loop sent */
    pthread_mutex_t mu;
} env;

static void on_event(void *arg, const json_t *ev)
{
    env *e = arg;
    pthread_mutex_lock(&e->mu);
    json_array_append_new(e->events, json_deep_copy(ev));
    pthread_mutex_unlock(&e->mu);
}

static void add_tool(cdsh_host *host, const char *name, cdsh_tool_body_fn body, bool parallel)
{
    json_t *params = json_pack("{s:s}", "type", "object");
    json_t *out = json_object();
    cdsh_tool_def def = {.name = name,
                         .description = "a test tool",
                         .parameters = params,
                         .output_schema = out,
                         .execute = body,
                         .is_concurrency_safe = parallel ? cdsh_tools_always_safe : NULL};
    cdsh_disposer_t d;
    cdsh_error err;
    assert_int_equal(cdsh_tools_register(cdsh_host_tools(host), NULL, &def, &d, &err), 0);
    json_decref(params);
    json_decref(out);
}

static void env_open(env *e, int max_steps, int64_t max_tokens)
{
    memset(e, 0, sizeof *e);
    pthread_mutex_init(&e->mu, NULL);
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    e->home = cdsh_test_home_new();
    e->host = cdsh_host_new();
    add_tool(e->host, "sleep", sleep_body, true);
    add_tool(e->host, "block", block_body, false);
    add_tool(e->host, "remember", ctx_body, false);
    add_tool(e->host, "whoami", whoami_body, false);
    cdsh_error err;
    assert_int_equal(cdsh_session_store_open(cdsh_test_home(), NULL, &e->store, &err), 0);
    cdsh_agent_options o = {.host = e->host,
                            .store = e->store,
                            .max_steps = max_steps,
                            .max_tokens = max_tokens,
                            .base_prompt = "BASE PROMPT"};
    assert_int_equal(cdsh_agent_new(&o, &e->agent, &err), 0);
    cdsh_session_spec spec = {.title = "t"};
    assert_int_equal(cdsh_session_store_create(e->store, &spec, &e->sid, &err), 0);
    e->events = json_array();
    atomic_store(&running, 0);
    atomic_store(&max_running, 0);
}

static void env_close(env *e)
{
    cdsh_agent_free(e->agent);
    cdsh_session_store_close(e->store);
    cdsh_host_free(e->host);
    cdsh_test_home_free(e->home);
    json_decref(e->events);
    free(e->sid);
    pthread_mutex_destroy(&e->mu);
}

/* Types of the events in order, space-separated, skipping deltas. */
static char *event_types(const json_t *events)
{
    static char buf[4096];
    buf[0] = '\0';
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) {
        const char *type = json_string_value(json_object_get(ev, "type"));
        if (strstr(type, "/delta") || strcmp(type, "tool/pending") == 0 ||
            strcmp(type, "step/start") == 0)
            continue;
        if (buf[0])
            strcat(buf, " ");
        strcat(buf, type);
    }
    return buf;
}

static char *log_types(env *e)
{
    static char buf[4096];
    buf[0] = '\0';
    cdsh_error err;
    json_t *evs = cdsh_session_store_events(e->store, e->sid, 0, 1000, NULL, &err);
    size_t i;
    json_t *ev;
    json_array_foreach(evs, i, ev) {
        if (buf[0])
            strcat(buf, " ");
        strcat(buf, json_string_value(json_object_get(ev, "type")));
    }
    json_decref(evs);
    return buf;
}

/* ---- tests -------------------------------------------------------------------- */

static void multi_step_tool_use_feeds_results_back(void **state)
{
    (void)state;
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(
        &f, "["
            "{\"chunks\":[{\"text\":\"Let me check.\"},"
            " {\"tool_call\":{\"index\":0,\"id\":\"c1\",\"name\":\"sleep\","
            "  \"arguments\":\"{\\\"ms\\\":1,\\\"tag\\\":\\\"first\\\"}\"}}],"
            " \"finish_reason\":\"tool_calls\","
            " \"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5,\"total_tokens\":15}},"
            "{\"chunks\":[{\"tool_call\":{\"index\":0,\"id\":\"c2\",\"name\":\"sleep\","
            "  \"arguments\":\"{\\\"ms\\\":1,\\\"tag\\\":\\\"second\\\"}\"}}],"
            " \"finish_reason\":\"tool_calls\"},"
            "{\"chunks\":[{\"text\":\"All \"},{\"text\":\"done.\"}],\"finish_reason\":\"stop\","
            " \"usage\":{\"prompt_tokens\":20,\"completion_tokens\":2,\"total_tokens\":22}}]");
    env e;
    env_open(&e, 0, 0);
    cdsh_agent_outcome out;
    cdsh_error err;
    assert_int_equal(
        cdsh_agent_run_turn(e.agent, e.sid, "please sleep twice", NULL, on_event, &e, &out, &err),
        0);
    assert_string_equal(out.reason, "done");
    assert_int_equal(out.steps, 3);
    assert_int_equal(out.turn, 1);
    assert_string_equal(out.text, "All done.");
    assert_int_equal(out.usage.total_tokens, 37);
    assert_string_equal(event_types(e.events),
                        "turn/start user/message assistant/message tool/call tool/result "
                        "assistant/message tool/call tool/result assistant/message turn/end");
    assert_string_equal(log_types(&e),
                        "turn/start user/message assistant/message tool/call tool/result "
                        "assistant/message tool/call tool/result assistant/message turn/end");
    /* The third request carries the system prompt, both results and the calls. */
    json_t *bodies = cdsh_test_model_env_bodies(&f);
    assert_int_equal(json_array_size(bodies), 3);
    json_t *msgs = json_object_get(json_array_get(bodies, 2), "messages");
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 0), "role")),
                        "system");
    assert_non_null(strstr(json_string_value(json_object_get(json_array_get(msgs, 0), "content")),
                           "BASE PROMPT"));
    assert_non_null(strstr(json_string_value(json_object_get(json_array_get(msgs, 0), "content")),
                           "- sleep: a test tool"));
    assert_int_equal(json_array_size(msgs), 6); /* system user asst tool asst tool */
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 3), "content")),
                        "{\"tag\":\"first\"}");
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 5), "tool_call_id")),
                        "c2");
    assert_int_equal(json_array_size(json_object_get(json_array_get(bodies, 0), "tools")), 4);
    json_decref(bodies);
    /* Streamed text arrived as deltas before the assistant message. */
    json_t *last = json_array_get(e.events, json_array_size(e.events) - 1);
    assert_string_equal(json_string_value(json_object_get(last, "reason")), "done");
    cdsh_agent_outcome_deinit(&out);
    env_close(&e);
    cdsh_test_model_env_stop(&f);
}

static void parallel_safe_tools_run_together_and_keep_model_order(void **state)
{
    (void)state;
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, "["
                                  "{\"tool_calls\":["
                                  " {\"index\":0,\"id\":\"a\",\"name\":\"sleep\",\"arguments\":\"{"
                                  "\\\"ms\\\":400,\\\"await\\\":3,\\\"tag\\\":\\\"A\\\"}\"},"
                                  " {\"index\":1,\"id\":\"b\",\"name\":\"sleep\",\"arguments\":\"{"
                                  "\\\"ms\\\":200,\\\"await\\\":3,\\\"tag\\\":\\\"B\\\"}\"},"
                                  " {\"index\":2,\"id\":\"c\",\"name\":\"sleep\",\"arguments\":\"{"
                                  "\\\"ms\\\":1,\\\"await\\\":3,\\\"tag\\\":\\\"C\\\"}\"}],"
                                  " \"finish_reason\":\"tool_calls\"},"
                                  "{\"text\":\"ok\",\"finish_reason\":\"stop\"}]");
    env e;
    env_open(&e, 0, 0);
    cdsh_agent_outcome out;
    cdsh_error err;
    /* each call waits until all three run at once (then finishes in reverse
     * order), so returning at all shows they ran together */
    assert_int_equal(cdsh_agent_run_turn(e.agent, e.sid, "go", NULL, on_event, &e, &out, &err), 0);
    assert_string_equal(out.reason, "done");
    assert_int_equal(atomic_load(&max_running), 3);
    /* tool/result events and the replayed tool messages follow the model's order. */
    const char *want[] = {"a", "b", "c"};
    size_t k = 0, i;
    json_t *ev;
    json_array_foreach(e.events, i, ev) {
        if (strcmp(json_string_value(json_object_get(ev, "type")), "tool/result") == 0) {
            assert_true(k < 3);
            assert_string_equal(json_string_value(json_object_get(ev, "callId")), want[k++]);
        }
        if (strcmp(json_string_value(json_object_get(ev, "type")), "tool/call") == 0)
            assert_true(json_is_true(json_object_get(ev, "parallel")));
    }
    assert_int_equal(k, 3);
    json_t *bodies = cdsh_test_model_env_bodies(&f);
    json_t *msgs = json_object_get(json_array_get(bodies, 1), "messages");
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 3), "content")),
                        "{\"tag\":\"A\"}");
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 5), "content")),
                        "{\"tag\":\"C\"}");
    json_decref(bodies);
    cdsh_agent_outcome_deinit(&out);
    env_close(&e);
    cdsh_test_model_env_stop(&f);
}

static void step_limit_stops_with_a_notice(void **state)
{
    (void)state;
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(
        &f, "[{\"repeat\":true,\"tool_calls\":[{\"index\":0,\"id\":\"x\",\"name\":\"sleep\","
            "\"arguments\":\"{\\\"ms\\\":1}\"}],\"finish_reason\":\"tool_calls\"}]");
    env e;
    env_open(&e, 2, 0);
    cdsh_agent_outcome out;
    cdsh_error err;
    assert_int_equal(cdsh_agent_run_turn(e.agent, e.sid, "loop", NULL, on_event, &e, &out, &err),
                     0);
    assert_string_equal(out.reason, "step-limit");
    assert_int_equal(out.steps, 2);
    json_t *bodies = cdsh_test_model_env_bodies(&f);
    assert_int_equal(json_array_size(bodies), 2);
    json_decref(bodies);
    json_t *evs = cdsh_session_store_events(e.store, e.sid, 0, 100, NULL, &err);
    json_t *n = json_array_get(evs, json_array_size(evs) - 2);
    assert_string_equal(json_string_value(json_object_get(n, "type")), "notice");
    assert_string_equal(json_string_value(json_object_get(json_object_get(n, "payload"), "code")),
                        "STEP_LIMIT");
    assert_non_null(
        strstr(json_string_value(json_object_get(json_object_get(n, "payload"), "text")),
               "after 2 model steps"));
    json_t *end = json_array_get(evs, json_array_size(evs) - 1);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(end, "payload"), "reason")),
        "step-limit");
    json_decref(evs);
    /* A balanced log: the next turn starts cleanly. */
    json_t *s = cdsh_session_store_info_dup(e.store, e.sid, &err);
    assert_true(json_is_null(json_object_get(s, "openTurn")));
    json_decref(s);
    cdsh_agent_outcome_deinit(&out);
    env_close(&e);
    cdsh_test_model_env_stop(&f);
}

static void token_limit_stops_with_a_notice(void **state)
{
    (void)state;
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(
        &f, "[{\"repeat\":true,\"tool_calls\":[{\"index\":0,\"id\":\"x\",\"name\":\"sleep\","
            "\"arguments\":\"{\\\"ms\\\":1}\"}],\"finish_reason\":\"tool_calls\","
            "\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":10,\"total_tokens\":50}}]");
    env e;
    env_open(&e, 0, 120);
    cdsh_agent_outcome out;
    cdsh_error err;
    assert_int_equal(cdsh_agent_run_turn(e.agent, e.sid, "loop", NULL, on_event, &e, &out, &err),
                     0);
    assert_string_equal(out.reason, "token-limit");
    assert_int_equal(out.steps, 3);
    assert_int_equal(out.usage.total_tokens, 150);
    bool seen = false;
    size_t i;
    json_t *ev;
    json_array_foreach(e.events, i, ev) {
        const char *code = json_string_value(json_object_get(ev, "code"));
        if (code && strcmp(code, "TOKEN_LIMIT") == 0) {
            seen = true;
            assert_non_null(strstr(json_string_value(json_object_get(ev, "text")),
                                   "using 150 tokens (the limit per turn is 120)"));
        }
    }
    assert_true(seen);
    cdsh_agent_outcome_deinit(&out);
    env_close(&e);
    cdsh_test_model_env_stop(&f);
}

typedef struct canceller {
    cdsh_cancel *tok;
    char marker[256];
} canceller;

static void *cancel_when_started(void *arg)
{
    canceller *c = arg;
    while (access(c->marker, F_OK) != 0) /* no time budget: CTest's timeout */
        usleep(10000);
    cdsh_cancel_fire(c->tok, "user");
    return NULL;
}

static void cancel_ends_the_turn_and_aborts_the_tool(void **state)
{
    (void)state;
    env e;
    env_open(&e, 0, 0);
    canceller c;
    snprintf(c.marker, sizeof c.marker, "%s/marker", e.home);
    char script[1024];
    snprintf(script, sizeof script,
             "[{\"tool_calls\":[{\"index\":0,\"id\":\"k\",\"name\":\"block\","
             "\"arguments\":\"{\\\"marker\\\":\\\"%s\\\"}\"}],\"finish_reason\":\"tool_calls\"}]",
             c.marker);
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, script);
    c.tok = cdsh_cancel_new(NULL);
    pthread_t th;
    pthread_create(&th, NULL, cancel_when_started, &c);
    cdsh_agent_outcome out;
    cdsh_error err;
    assert_int_equal(cdsh_agent_run_turn(e.agent, e.sid, "block", c.tok, on_event, &e, &out, &err),
                     0);
    pthread_join(th, NULL);
    assert_string_equal(out.reason, "cancelled");
    json_t *evs = cdsh_session_store_events(e.store, e.sid, 0, 100, NULL, &err);
    bool aborted = false;
    size_t i;
    json_t *ev;
    json_array_foreach(evs, i, ev) {
        json_t *p = json_object_get(ev, "payload");
        if (strcmp(json_string_value(json_object_get(ev, "type")), "tool/result") == 0)
            aborted =
                strcmp(json_string_value(json_object_get(json_object_get(p, "error"), "code")),
                       "ABORTED") == 0;
    }
    assert_true(aborted);
    assert_string_equal(log_types(&e), "turn/start user/message assistant/message tool/call "
                                       "tool/result notice turn/end");
    json_decref(evs);
    cdsh_cancel_free(c.tok);
    cdsh_agent_outcome_deinit(&out);
    env_close(&e);
    cdsh_test_model_env_stop(&f);
}

static void busy_session_is_refused(void **state)
{
    (void)state;
    env e;
    env_open(&e, 0, 0);
    cdsh_session_lease *lease;
    cdsh_error err;
    assert_int_equal(cdsh_session_store_lease(e.store, e.sid, 0, NULL, &lease, &err), 0);
    assert_int_equal(cdsh_agent_run_turn(e.agent, e.sid, "hi", NULL, NULL, NULL, NULL, &err),
                     CDSH_EBUSY);
    assert_string_equal(err.code, "SESSION_BUSY");
    cdsh_session_lease_release(lease);
    assert_int_equal(cdsh_agent_run_turn(e.agent, "s-nope", "hi", NULL, NULL, NULL, NULL, &err),
                     CDSH_ENOTFOUND);
    assert_string_equal(err.code, "NO_SESSION");
    assert_int_equal(cdsh_agent_run_turn(e.agent, e.sid, "", NULL, NULL, NULL, NULL, &err),
                     CDSH_EINVAL);
    env_close(&e);
}

static void missing_key_is_a_notice_that_says_how_to_set_one(void **state)
{
    (void)state;
    env e;
    env_open(&e, 0, 0);
    unsetenv("CDSH_BASE_URL");
    cdsh_agent_outcome out;
    cdsh_error err;
    assert_int_equal(cdsh_agent_run_turn(e.agent, e.sid, "hi", NULL, on_event, &e, &out, &err), 0);
    assert_string_equal(out.reason, "error");
    assert_string_equal(out.code, "MISSING_CREDENTIAL");
    assert_string_equal(event_types(e.events), "turn/start user/message notice turn/end");
    json_t *n = json_array_get(e.events, 2);
    assert_string_equal(json_string_value(json_object_get(n, "code")), "MISSING_CREDENTIAL");
    assert_non_null(strstr(json_string_value(json_object_get(n, "text")), "DEEPSEEK_API_KEY"));
    cdsh_agent_outcome_deinit(&out);
    env_close(&e);
}

static void a_crash_mid_turn_is_repaired_on_the_next_turn(void **state)
{
    (void)state;
    env e;
    env_open(&e, 0, 0);
    char marker[256];
    snprintf(marker, sizeof marker, "%s/started", e.home);
    char script[1024];
    snprintf(script, sizeof script,
             "[{\"match\":{\"last_user_contains\":\"block\"},\"tool_calls\":["
             "{\"index\":0,\"id\":\"k1\",\"name\":\"block\",\"arguments\":\"{\\\"marker\\\":\\\"%"
             "s\\\"}\"},"
             "{\"index\":1,\"id\":\"k2\",\"name\":\"block\",\"arguments\":\"{}\"}],"
             "\"finish_reason\":\"tool_calls\"},"
             "{\"text\":\"recovered\",\"finish_reason\":\"stop\"}]",
             marker);
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, script);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cdsh_agent_run_turn(e.agent, e.sid, "block", NULL, NULL, NULL, NULL, NULL);
        _exit(0);
    }
    while (access(marker, F_OK) != 0) /* no time budget: CTest's timeout */
        usleep(10000);
    assert_int_equal(access(marker, F_OK), 0);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status));

    cdsh_agent_outcome out;
    cdsh_error err;
    assert_int_equal(cdsh_agent_run_turn(e.agent, e.sid, "again", NULL, on_event, &e, &out, &err),
                     0);
    assert_string_equal(out.reason, "done");
    assert_int_equal(out.turn, 2);
    assert_string_equal(log_types(&e),
                        "turn/start user/message assistant/message tool/call tool/result "
                        "tool/result notice turn/end turn/start user/message assistant/message "
                        "turn/end");
    /* The model saw both calls answered: k1 started (outcome unknown), k2 not. */
    json_t *bodies = cdsh_test_model_env_bodies(&f);
    json_t *msgs = json_object_get(json_array_get(bodies, 1), "messages");
    assert_int_equal(json_array_size(msgs), 6); /* system user asst tool tool user */
    assert_non_null(
        strstr(json_string_value(json_object_get(json_array_get(msgs, 3), "content")), "Error:"));
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 5), "content")),
                        "again");
    json_decref(bodies);
    json_t *evs = cdsh_session_store_events(e.store, e.sid, 0, 100, NULL, &err);
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(json_array_get(evs, 4), "payload"), "error"), "code")),
        "TOOL_OUTCOME_UNKNOWN");
    json_decref(evs);
    cdsh_agent_outcome_deinit(&out);
    env_close(&e);
    cdsh_test_model_env_stop(&f);
}

static void deferred_contexts_become_user_messages_after_results(void **state)
{
    (void)state;
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f,
                              "[{\"tool_calls\":[{\"index\":0,\"id\":\"r\",\"name\":\"remember\","
                              "\"arguments\":\"\"}],\"finish_reason\":\"tool_calls\"},"
                              "{\"text\":\"ok\",\"finish_reason\":\"stop\"}]");
    env e;
    env_open(&e, 0, 0);
    cdsh_agent_outcome out;
    cdsh_error err;
    assert_int_equal(cdsh_agent_run_turn(e.agent, e.sid, "go", NULL, on_event, &e, &out, &err), 0);
    json_t *bodies = cdsh_test_model_env_bodies(&f);
    json_t *msgs = json_object_get(json_array_get(bodies, 1), "messages");
    json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
    assert_string_equal(json_string_value(json_object_get(last, "role")), "user");
    assert_string_equal(json_string_value(json_object_get(last, "content")),
                        "the user prefers metric units");
    json_decref(bodies);
    cdsh_agent_outcome_deinit(&out);
    env_close(&e);
    cdsh_test_model_env_stop(&f);
}

static void bad_tool_arguments_are_an_invalid_args_result(void **state)
{
    (void)state;
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(
        &f, "[{\"tool_calls\":[{\"index\":0,\"id\":\"q\",\"name\":\"sleep\","
            "\"arguments\":\"{not json\"},{\"index\":1,\"id\":\"u\",\"name\":\"nope\","
            "\"arguments\":\"{}\"}],\"finish_reason\":\"tool_calls\"},"
            "{\"text\":\"ok\",\"finish_reason\":\"stop\"}]");
    env e;
    env_open(&e, 0, 0);
    cdsh_agent_outcome out;
    cdsh_error err;
    assert_int_equal(cdsh_agent_run_turn(e.agent, e.sid, "go", NULL, on_event, &e, &out, &err), 0);
    assert_string_equal(out.reason, "done");
    const char *codes[2] = {NULL, NULL};
    size_t k = 0, i;
    json_t *ev;
    json_array_foreach(e.events, i, ev) {
        if (strcmp(json_string_value(json_object_get(ev, "type")), "tool/result") == 0 && k < 2)
            codes[k++] = json_string_value(json_object_get(json_object_get(ev, "error"), "code"));
    }
    assert_string_equal(codes[0], "INVALID_ARGS");
    assert_string_equal(codes[1], "UNKNOWN_TOOL");
    cdsh_agent_outcome_deinit(&out);
    env_close(&e);
    cdsh_test_model_env_stop(&f);
}

/* Plugins with per-session state (a game, a story) find the session from
 * exec->agent: tools run in a scope named after the session, below the
 * agent's own scope, and commands run in the same scope. */
static void tools_run_in_the_session_scope(void **state)
{
    (void)state;
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(
        &f, "["
            "{\"chunks\":[{\"tool_call\":{\"index\":0,\"id\":\"c1\",\"name\":\"whoami\","
            "  \"arguments\":\"{}\"}}],\"finish_reason\":\"tool_calls\"},"
            "{\"chunks\":[{\"text\":\"ok\"}],\"finish_reason\":\"stop\"}]");
    env e;
    env_open(&e, 0, 0);
    cdsh_agent_outcome out;
    cdsh_error err;
    assert_int_equal(cdsh_agent_run_turn(e.agent, e.sid, "who", NULL, on_event, &e, &out, &err), 0);
    assert_string_equal(out.reason, "done");
    json_t *bodies = cdsh_test_model_env_bodies(&f);
    json_t *msgs = json_object_get(json_array_get(bodies, 1), "messages");
    char expect[256];
    snprintf(expect, sizeof expect, "{\"scope\":\"%s\",\"parent\":\"\"}", e.sid);
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 3), "content")),
                        expect);
    json_decref(bodies);
    cdsh_agent_outcome_deinit(&out);
    env_close(&e);
    cdsh_test_model_env_stop(&f);
}

static int scope_cmd(void *arg, const cdsh_command_invocation *inv, cdsh_command_result *out,
                     cdsh_error *err)
{
    (void)arg;
    (void)err;
    return cdsh_command_result_set(out, CDSH_COMMAND_SUCCESS, cdsh_scope_id(inv->agent));
}

static void commands_run_in_the_session_scope(void **state)
{
    (void)state;
    env e;
    env_open(&e, 0, 0);
    cdsh_command_def def = {.name = "where", .description = "scope id", .handler = scope_cmd};
    cdsh_disposer_t d;
    cdsh_error err;
    assert_int_equal(cdsh_commands_register(cdsh_host_commands(e.host), NULL, &def, &d, &err), 0);
    json_t *res = NULL;
    assert_int_equal(
        cdsh_agent_exec_command(e.agent, e.sid, "/where", NULL, NULL, NULL, &res, &err), 0);
    assert_string_equal(json_string_value(json_object_get(res, "text")), e.sid);
    json_decref(res);
    cdsh_disposer_run(&d);
    env_close(&e);
}

static int echo_cmd(void *arg, const cdsh_command_invocation *inv, cdsh_command_result *out,
                    cdsh_error *err)
{
    (void)arg;
    (void)err;
    char buf[128];
    snprintf(buf, sizeof buf, "echo:%s", inv->raw_input);
    return cdsh_command_result_set(out, CDSH_COMMAND_SUCCESS, buf);
}

static void commands_run_and_are_logged(void **state)
{
    (void)state;
    env e;
    env_open(&e, 0, 0);
    cdsh_command_def def = {.name = "echo", .description = "echo", .handler = echo_cmd};
    cdsh_disposer_t d;
    cdsh_error err;
    assert_int_equal(cdsh_commands_register(cdsh_host_commands(e.host), NULL, &def, &d, &err), 0);
    json_t *res = NULL;
    assert_int_equal(
        cdsh_agent_exec_command(e.agent, e.sid, "/echo hi", NULL, on_event, &e, &res, &err), 0);
    assert_string_equal(json_string_value(json_object_get(res, "kind")), "success");
    assert_string_equal(json_string_value(json_object_get(res, "text")), "echo: hi");
    json_decref(res);
    assert_string_equal(log_types(&e), "command/run command/done");
    assert_int_equal(cdsh_agent_exec_command(e.agent, e.sid, "/nope", NULL, NULL, NULL, &res, &err),
                     0);
    assert_string_equal(json_string_value(json_object_get(res, "code")), "unknown-command");
    assert_string_equal(json_string_value(json_object_get(res, "text")),
                        "unknown command \"/nope\"; available commands: /echo");
    json_decref(res);
    assert_int_equal(cdsh_agent_exec_command(e.agent, e.sid, "hello", NULL, NULL, NULL, &res, &err),
                     CDSH_EINVAL);
    assert_string_equal(err.code, "NOT_A_COMMAND");
    cdsh_disposer_run(&d);
    env_close(&e);
}

static char *seg_render(void *ud, const cdsh_scope *scope)
{
    (void)scope;
    return strdup((const char *)ud);
}

static void prompt_segments_are_ordered_into_the_system_prompt(void **state)
{
    (void)state;
    env e;
    env_open(&e, 0, 0);
    cdsh_prompt *p = cdsh_host_prompt(e.host);
    cdsh_disposer_t d1, d2;
    cdsh_error err;
    cdsh_prompt_segment_def late = {.id = "late", .order = 300, .text = "LATE"};
    cdsh_prompt_segment_def early = {
        .id = "early", .order = 10, .render = seg_render, .ud = "EARLY"};
    assert_int_equal(cdsh_prompt_register(p, NULL, &late, &d1, &err), 0);
    assert_int_equal(cdsh_prompt_register(p, NULL, &early, &d2, &err), 0);
    char *sys = cdsh_agent_system_prompt_dup(e.agent);
    assert_non_null(strstr(sys, "BASE PROMPT\n\nEARLY\n\nLATE\n\n<available_tools>"));
    free(sys);
    cdsh_disposer_run(&d1);
    cdsh_disposer_run(&d2);
    env_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(multi_step_tool_use_feeds_results_back),
        cmocka_unit_test(parallel_safe_tools_run_together_and_keep_model_order),
        cmocka_unit_test(step_limit_stops_with_a_notice),
        cmocka_unit_test(token_limit_stops_with_a_notice),
        cmocka_unit_test(cancel_ends_the_turn_and_aborts_the_tool),
        cmocka_unit_test(busy_session_is_refused),
        cmocka_unit_test(missing_key_is_a_notice_that_says_how_to_set_one),
        cmocka_unit_test(a_crash_mid_turn_is_repaired_on_the_next_turn),
        cmocka_unit_test(deferred_contexts_become_user_messages_after_results),
        cmocka_unit_test(bad_tool_arguments_are_an_invalid_args_result),
        cmocka_unit_test(commands_run_and_are_logged),
        cmocka_unit_test(tools_run_in_the_session_scope),
        cmocka_unit_test(commands_run_in_the_session_scope),
        cmocka_unit_test(prompt_segments_are_ordered_into_the_system_prompt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
