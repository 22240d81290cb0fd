/* test_agent_turn_end.c — whatever the model endpoint or a tool does, a turn
 * that started ends with turn/end (in the log and in the event stream) and
 * the session takes the next turn: an HTTP error, an error inside the
 * stream, a truncated stream, the reply cap, duplicate tool-call ids,
 * malformed tool arguments, a crashing tool body, a cancel mid-stream, a
 * session deleted under the turn. Hostile replies come from the fake model. */
#include "support/testkit.h"

#include "support/model_env.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "host/dispatch.h"

typedef struct env {
    char *home;
    cdsh_host *host;
    cdsh_session_store *store;
    cdsh_agent *agent;
    char *sid;
    json_t *events;
    pthread_mutex_t mu;
} env;

static void on_event(void *arg, const json_t *ev)
{
    env *e = arg;
    pthread_mutex_lock(&e->mu);
    json_array_append_new(e->events, json_deep_copy(ev));
    pthread_mutex_unlock(&e->mu);
}

static env *current; /* the env a tool body works on (one test at a time) */

/* Fails like a body that hit an internal error: a negative code, no message. */
static int crash_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    (void)exec;
    (void)value;
    return CDSH_EIO;
}

/* Deletes the session the turn runs on (another process could). */
static int delete_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    (void)exec;
    cdsh_error err;
    assert_int_equal(cdsh_session_store_delete(current->store, current->sid, &err), 0);
    *value = json_string("deleted");
    return 0;
}

static int echo_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    *value = json_deep_copy(exec->args);
    return 0;
}

static void add_tool(cdsh_host *host, const char *name, cdsh_tool_body_fn body)
{
    json_t *params = json_pack("{s:s}", "type", "object");
    json_t *out = json_object();
    cdsh_tool_def def = {.name = name,
                         .description = "a test tool",
                         .parameters = params,
                         .output_schema = out,
                         .execute = body};
    cdsh_disposer_t d;
    cdsh_error err;
    assert_int_equal(cdsh_tools_register(cdsh_host_tools(host), NULL, &def, &d, &err), 0);
    json_decref(params);
    json_decref(out);
}

static void env_open(env *e, int max_reply_bytes)
{
    memset(e, 0, sizeof *e);
    pthread_mutex_init(&e->mu, NULL);
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    e->home = cdsh_test_home_new();
    e->host = cdsh_host_new();
    add_tool(e->host, "crash", crash_body);
    add_tool(e->host, "delete_session", delete_body);
    add_tool(e->host, "echo", echo_body);
    cdsh_error err;
    assert_int_equal(cdsh_session_store_open(cdsh_test_home(), NULL, &e->store, &err), 0);
    cdsh_model_config model;
    cdsh_model_config_init(&model);
    model.max_retries = -1;
    model.max_reply_bytes = max_reply_bytes;
    cdsh_agent_options o = {
        .host = e->host, .store = e->store, .model = &model, .base_prompt = "BASE"};
    assert_int_equal(cdsh_agent_new(&o, &e->agent, &err), 0);
    cdsh_model_config_deinit(&model);
    cdsh_session_spec spec = {.title = "t"};
    assert_int_equal(cdsh_session_store_create(e->store, &spec, &e->sid, &err), 0);
    e->events = json_array();
    current = e;
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
    current = NULL;
}

/* A string member, or "(none)" so a missing field fails an assertion cleanly. */
static const char *str(const json_t *obj, const char *key)
{
    const char *v = json_string_value(json_object_get(obj, key));
    return v ? v : "(none)";
}

/* The last event of the stream with this type, or NULL. */
static json_t *last_of(const json_t *events, const char *type)
{
    json_t *found = NULL;
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev)
        if (strcmp(json_string_value(json_object_get(ev, "type")), type) == 0)
            found = ev;
    return found;
}

static const char *last_type(const json_t *events)
{
    return json_string_value(json_object_get(json_array_get(events, json_array_size(events) - 1),
                                             "type"));
}

/* The log's last event type and the turn/end reason in it. */
static void assert_log_ends(env *e, const char *reason)
{
    cdsh_error err;
    json_t *evs = cdsh_session_store_events(e->store, e->sid, 0, 10000, NULL, &err);
    assert_non_null(evs);
    json_t *last = json_array_get(evs, json_array_size(evs) - 1);
    assert_string_equal(json_string_value(json_object_get(last, "type")), "turn/end");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(last, "payload"), "reason")), reason);
    json_decref(evs);
}

/* The session takes another turn, which the script answers with "fine". */
static void assert_next_turn_works(env *e)
{
    cdsh_agent_outcome out;
    cdsh_error err;
    assert_int_equal(cdsh_agent_run_turn(e->agent, e->sid, "again", NULL, NULL, NULL, &out, &err),
                     0);
    assert_string_equal(out.reason, "done");
    assert_string_equal(out.text, "fine");
    cdsh_agent_outcome_deinit(&out);
    assert_log_ends(e, "done");
}

/* Runs one turn on `hostile` (a script entry) and checks how it ended. */
static void hostile_turn(const char *hostile, int max_reply_bytes, const char *reason,
                         const char *code)
{
    char script[4096];
    snprintf(script, sizeof script,
             "[{\"match\":{\"last_user_contains\":\"again\"},\"text\":\"fine\","
             "\"finish_reason\":\"stop\",\"repeat\":true},%s]",
             hostile);
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, script);
    env e;
    env_open(&e, max_reply_bytes);
    cdsh_agent_outcome out;
    cdsh_error err = {0};
    assert_int_equal(cdsh_agent_run_turn(e.agent, e.sid, "go", NULL, on_event, &e, &out, &err), 0);
    assert_string_equal(out.reason, reason);
    if (code)
        assert_string_equal(out.code, code);
    assert_string_equal(last_type(e.events), "turn/end");
    json_t *end = last_of(e.events, "turn/end");
    assert_string_equal(str(end, "reason"), reason);
    if (code) {
        assert_string_equal(str(end, "code"), code);
        json_t *n = last_of(e.events, "notice");
        assert_non_null(n);
        assert_string_equal(str(n, "code"), code);
    }
    assert_log_ends(&e, reason);
    cdsh_agent_outcome_deinit(&out);
    assert_next_turn_works(&e);
    env_close(&e);
    cdsh_test_model_env_stop(&f);
}

static void an_http_error_ends_the_turn(void **state)
{
    (void)state;
    hostile_turn("{\"status\":400,\"error\":{\"message\":\"bad request\"}}", 0, "error",
                 "INVALID_REQUEST");
}

static void an_error_inside_the_stream_ends_the_turn(void **state)
{
    (void)state;
    hostile_turn("{\"chunks\":[{\"text\":\"half\"},{\"error\":{\"message\":\"boom\"}}]}", 0,
                 "error", "SERVER");
}

static void a_truncated_stream_ends_the_turn(void **state)
{
    (void)state;
    hostile_turn("{\"chunks\":[{\"text\":\"partial\"},{\"drop\":true}]}", 0, "error",
                 "TRANSPORT");
}

static void an_endless_stream_ends_the_turn_at_the_reply_cap(void **state)
{
    (void)state;
    hostile_turn("{\"chunks\":[{\"text\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\",\"forever\":true}]}",
                 65536, "error", "REPLY_TOO_LARGE");
}

static void duplicate_tool_call_ids_end_the_turn(void **state)
{
    (void)state;
    hostile_turn("{\"tool_calls\":[{\"index\":0,\"id\":\"same\",\"name\":\"echo\",\"arguments\":"
                 "\"{}\"},{\"index\":1,\"id\":\"same\",\"name\":\"echo\",\"arguments\":\"{}\"}],"
                 "\"finish_reason\":\"tool_calls\"}",
                 0, "error", "BAD_RESPONSE");
}

static void a_malformed_chunk_ends_the_turn(void **state)
{
    (void)state;
    hostile_turn("{\"chunks\":[{\"text\":\"a\"},{\"raw\":\"data: {not json\\n\\n\"}]}", 0, "error",
                 "BAD_RESPONSE");
}

/* Malformed tool JSON and a crashing body are tool results the model sees;
 * the turn goes on to the model's next reply. */
static void malformed_arguments_and_a_crashing_tool_are_results(void **state)
{
    (void)state;
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(
        &f, "[{\"match\":{\"last_user_contains\":\"again\"},\"text\":\"fine\",\"repeat\":true},"
            "{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"name\":\"echo\",\"arguments\":"
            "\"{\\\"x\\\":\"},{\"index\":1,\"id\":\"b\",\"name\":\"crash\",\"arguments\":\"{}\"}],"
            "\"finish_reason\":\"tool_calls\"},"
            "{\"text\":\"after tools\",\"finish_reason\":\"stop\"}]");
    env e;
    env_open(&e, 0);
    cdsh_agent_outcome out;
    cdsh_error err;
    assert_int_equal(cdsh_agent_run_turn(e.agent, e.sid, "go", NULL, on_event, &e, &out, &err), 0);
    assert_string_equal(out.reason, "done");
    assert_string_equal(out.text, "after tools");
    size_t i;
    json_t *ev;
    int errors = 0;
    json_array_foreach(e.events, i, ev) {
        if (strcmp(json_string_value(json_object_get(ev, "type")), "tool/result") == 0 &&
            json_is_true(json_object_get(ev, "isError")))
            errors++;
    }
    assert_int_equal(errors, 2);
    assert_string_equal(last_type(e.events), "turn/end");
    assert_log_ends(&e, "done");
    cdsh_agent_outcome_deinit(&out);
    assert_next_turn_works(&e);
    env_close(&e);
    cdsh_test_model_env_stop(&f);
}

typedef struct canceller {
    char marker[512];
    cdsh_cancel *tok;
} canceller;

static void *cancel_on_first_text(void *arg)
{
    canceller *c = arg;
    for (;;) { /* no time budget: CTest's timeout */
        pthread_mutex_lock(&current->mu);
        bool seen = last_of(current->events, "text/delta") != NULL;
        pthread_mutex_unlock(&current->mu);
        if (seen)
            break;
        usleep(2000);
    }
    cdsh_cancel_fire(c->tok, "user");
    cdsh_test_write_file(c->marker, "go on"); /* let the held chunk go */
    return NULL;
}

static void a_cancel_mid_stream_ends_the_turn(void **state)
{
    (void)state;
    env e;
    env_open(&e, 0);
    canceller c;
    snprintf(c.marker, sizeof c.marker, "%s/release", e.home);
    char script[2048];
    snprintf(script, sizeof script,
             "[{\"match\":{\"last_user_contains\":\"again\"},\"text\":\"fine\",\"repeat\":true},"
             "{\"chunks\":[{\"text\":\"first\"},{\"text\":\"second\",\"wait_file\":\"%s\"}],"
             "\"finish_reason\":\"stop\"}]",
             c.marker);
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, script);
    c.tok = cdsh_cancel_new(NULL);
    pthread_t th;
    pthread_create(&th, NULL, cancel_on_first_text, &c);
    cdsh_agent_outcome out;
    cdsh_error err;
    assert_int_equal(cdsh_agent_run_turn(e.agent, e.sid, "go", c.tok, on_event, &e, &out, &err),
                     0);
    pthread_join(th, NULL);
    assert_string_equal(out.reason, "cancelled");
    assert_string_equal(last_type(e.events), "turn/end");
    assert_log_ends(&e, "cancelled");
    cdsh_agent_outcome_deinit(&out);
    cdsh_cancel_free(c.tok);
    assert_next_turn_works(&e);
    env_close(&e);
    cdsh_test_model_env_stop(&f);
}

/* The store refuses the rest of the turn (the session is gone): the event
 * stream still ends with turn/end, and the call reports the store's code. */
static void a_session_deleted_under_the_turn_still_ends_it(void **state)
{
    (void)state;
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(
        &f, "[{\"tool_calls\":[{\"index\":0,\"id\":\"d\",\"name\":\"delete_session\","
            "\"arguments\":\"{}\"}],\"finish_reason\":\"tool_calls\"},"
            "{\"text\":\"unreachable\",\"finish_reason\":\"stop\"}]");
    env e;
    env_open(&e, 0);
    cdsh_agent_outcome out;
    cdsh_error err = {0};
    int rc = cdsh_agent_run_turn(e.agent, e.sid, "go", NULL, on_event, &e, &out, &err);
    assert_int_equal(rc, CDSH_ENOTFOUND);
    assert_string_equal(err.code, "NO_SESSION");
    assert_string_equal(last_type(e.events), "turn/end");
    json_t *end = last_of(e.events, "turn/end");
    assert_string_equal(str(end, "reason"), "error");
    assert_string_equal(str(end, "code"), "NO_SESSION");
    env_close(&e);
    cdsh_test_model_env_stop(&f);
}

#define RACERS 50

static atomic_int finished;

typedef struct racer {
    env *e;
    pthread_barrier_t *go;
    int rc;
    char code[64];
} racer;

static void *race_main(void *arg)
{
    racer *r = arg;
    cdsh_error err = {0};
    cdsh_agent_outcome out;
    pthread_barrier_wait(r->go);
    r->rc = cdsh_agent_run_turn(r->e->agent, r->e->sid, "race", NULL, NULL, NULL, &out, &err);
    if (r->rc == 0)
        cdsh_agent_outcome_deinit(&out);
    snprintf(r->code, sizeof r->code, "%s", err.code);
    atomic_fetch_add(&finished, 1);
    return NULL;
}

/* 50 threads start a turn on one session at once (what RPC front ends and
 * the CLI do through the agent): one runs, 49 get SESSION_BUSY. */
static void concurrent_turns_on_one_session_have_one_winner(void **state)
{
    (void)state;
    env e;
    env_open(&e, 0);
    char script[2048];
    snprintf(script, sizeof script,
             "[{\"match\":{\"last_user_contains\":\"again\"},\"text\":\"fine\",\"repeat\":true},"
             "{\"chunks\":[{\"text\":\"a\"},{\"wait_file\":\"%s/gate\",\"text\":\"b\"}],"
             "\"finish_reason\":\"stop\"}]",
             e.home);
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, script);
    atomic_store(&finished, 0);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, RACERS);
    racer r[RACERS];
    pthread_t th[RACERS];
    for (int i = 0; i < RACERS; i++) {
        r[i] = (racer){.e = &e, .go = &go};
        pthread_create(&th[i], NULL, race_main, &r[i]);
    }
    /* The losers return at once; the winner waits for the gate. */
    while (atomic_load(&finished) < RACERS - 1) /* no time budget: CTest's timeout */
        usleep(2000);
    char gate[600];
    snprintf(gate, sizeof gate, "%s/gate", e.home);
    cdsh_test_write_file(gate, "go");
    for (int i = 0; i < RACERS; i++)
        pthread_join(th[i], NULL);
    int busy = 0;
    int won = 0;
    for (int i = 0; i < RACERS; i++) {
        if (r[i].rc == 0)
            won++;
        else if (r[i].rc == CDSH_EBUSY && strcmp(r[i].code, "SESSION_BUSY") == 0)
            busy++;
    }
    pthread_barrier_destroy(&go);
    assert_int_equal(won, 1);
    assert_int_equal(busy, RACERS - 1);
    assert_log_ends(&e, "done");
    assert_next_turn_works(&e);
    env_close(&e);
    cdsh_test_model_env_stop(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_http_error_ends_the_turn),
        cmocka_unit_test(an_error_inside_the_stream_ends_the_turn),
        cmocka_unit_test(a_truncated_stream_ends_the_turn),
        cmocka_unit_test(an_endless_stream_ends_the_turn_at_the_reply_cap),
        cmocka_unit_test(duplicate_tool_call_ids_end_the_turn),
        cmocka_unit_test(a_malformed_chunk_ends_the_turn),
        cmocka_unit_test(malformed_arguments_and_a_crashing_tool_are_results),
        cmocka_unit_test(a_cancel_mid_stream_ends_the_turn),
        cmocka_unit_test(a_session_deleted_under_the_turn_still_ends_it),
        cmocka_unit_test(concurrent_turns_on_one_session_have_one_winner),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
