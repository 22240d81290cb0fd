/* test_xq_plugin_rpc.c — the /xiangqi-mate channel: session admission, the
 * unified envelope, every endpoint, the three move shapes (regression), the
 * state event, and no lost update under concurrent RPC and tool calls. */
#include "support/testkit.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/session_store.h"
#include "host/dispatch.h"
#include "host/host.h"
#include "plugins/xiangqi/plugin.h"

typedef struct fixture {
    char *home;
    cdsh_host *host;
    json_t *config;
    char *sid;
    int events;
    long long last_event_revision;
} fixture;

static int stub_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    static int token;
    return cdsh_ctx_provide(ctx, "connection", &token, err);
}
static const cdsh_plugin_def connection_stub = {.name = "connection-stub", .apply = stub_apply};

static void on_state(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    (void)name;
    (void)scope;
    fixture *f = arg;
    assert_string_equal(json_string_value(json_object_get(payload, "plugin")), "xiangqi");
    assert_string_equal(json_string_value(json_object_get(payload, "sessionId")), f->sid);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(payload, "state"), "revision")),
        json_integer_value(json_object_get(payload, "revision")));
    f->events++;
    f->last_event_revision = json_integer_value(json_object_get(payload, "revision"));
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    char dir[600];
    snprintf(dir, sizeof dir, "%s/xq", f->home);
    f->config =
        json_pack("{s:s,s:{s:i,s:i,s:i},s:{s:i},s:{s:i}}", "storageDir", dir, "engine", "depth", 1,
                  "movetimeMs", 100, "hashMb", 1, "hint", "depth", 2, "review", "depth", 1);
    cdsh_session_store *s = NULL;
    cdsh_error err;
    assert_int_equal(cdsh_session_store_open(cdsh_test_home(), NULL, &s, &err), 0);
    cdsh_session_spec spec = {.title = "xiangqi"};
    assert_int_equal(cdsh_session_store_create(s, &spec, &f->sid, &err), 0);
    cdsh_session_store_close(s);
    f->host = cdsh_host_new();
    cdsh_disposer_t d;
    assert_int_equal(
        cdsh_events_on(cdsh_host_events(f->host), CDSH_XQ_EVENT, NULL, on_state, f, &d, &err), 0);
    assert_int_equal(cdsh_plugin_load(f->host, &connection_stub, NULL, NULL, &err), 0);
    assert_int_equal(cdsh_plugin_load(f->host, &cdsh_xq_plugin, f->config, NULL, &err), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    cdsh_host_free(f->host);
    json_decref(f->config);
    free(f->sid);
    cdsh_test_home_free(f->home);
    free(f);
    return 0;
}

/* Calls an endpoint with payload (JSON text; sessionId added unless the
 * text already has one). Owned envelope. */
static json_t *rpc(fixture *f, const char *endpoint, const char *payload)
{
    json_t *p = json_loads(payload ? payload : "{}", 0, NULL);
    assert_non_null(p);
    if (!json_object_get(p, "sessionId"))
        json_object_set_new(p, "sessionId", json_string(f->sid));
    json_t *r = cdsh_rpc_call(cdsh_host_rpc(f->host), CDSH_XQ_RPC_CHANNEL, endpoint, p, NULL);
    json_decref(p);
    assert_non_null(r);
    assert_true(cdsh_rpc_result_valid(r));
    return r;
}

static const json_t *ok_value(const json_t *r)
{
    if (!json_is_true(json_object_get(r, "ok")))
        fail_msg("rpc failed: %s", json_dumps(r, 0));
    return json_object_get(r, "value");
}

static const char *err_code(const json_t *r)
{
    assert_false(json_is_true(json_object_get(r, "ok")));
    return json_string_value(json_object_get(json_object_get(r, "error"), "code"));
}

static void sessions_are_admitted_only_when_they_exist(void **state)
{
    fixture *f = *state;
    json_t *r = rpc(f, "state", "{\"sessionId\":\"s-nosuchsession\"}");
    assert_string_equal(err_code(r), "session-not-found");
    json_decref(r);
    r = rpc(f, "state", "{\"sessionId\":\"../../etc/passwd\"}");
    assert_string_equal(err_code(r), "session-not-found");
    json_decref(r);
    r = cdsh_rpc_call(cdsh_host_rpc(f->host), CDSH_XQ_RPC_CHANNEL, "state", NULL, NULL);
    assert_string_equal(err_code(r), "bad-request");
    json_decref(r);
    r = rpc(f, "state", NULL);
    const json_t *v = ok_value(r);
    assert_int_equal(json_array_size(json_object_get(v, "board")), 90);
    assert_string_equal(json_string_value(json_object_get(v, "fen")),
                        "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1");
    json_int_t rev = json_integer_value(json_object_get(v, "revision"));
    json_decref(r);
    /* a tool call without a session scope plays the game the person last opened */
    cdsh_dispatch_input in = {.call_id = "c", .name = "xiangqi_board"};
    cdsh_toolresult *t = cdsh_dispatch_execute(cdsh_host_tools(f->host), &in);
    assert_false(t->is_error);
    assert_int_equal(json_integer_value(json_object_get(t->value, "revision")), rev);
    cdsh_toolresult_free(t);
    json_decref(rpc(f, "new", "{\"side\":\"b\"}"));
    cdsh_command_outcome out;
    assert_int_equal(cdsh_commands_execute(cdsh_host_commands(f->host), NULL, "/xiangqi state",
                                           NULL, NULL, &out, NULL),
                     1);
    json_t *st = json_loads(out.text, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(st, "hero")), "b");
    json_decref(st);
    cdsh_commands_outcome_clear(&out);
    r = rpc(f, "dance", NULL);
    assert_string_equal(err_code(r), "not-found");
    json_decref(r);
}

/* Regression: the panel sends {from,to,iccs}, people write notation; all
 * three shapes play, in the priority move → iccs → from+to. */
static void move_accepts_three_shapes_in_priority_order(void **state)
{
    fixture *f = *state;
    const char *payloads[] = {
        "{\"move\":\"炮二平五\"}",
        "{\"iccs\":\"h2e2\"}",
        "{\"from\":70,\"to\":67}",
        "{\"move\":{\"from\":70,\"to\":67}}",
        "{\"move\":\"h2e2\",\"iccs\":\"b2e2\",\"from\":64,\"to\":67}", /* move wins */
        "{\"iccs\":\"h2e2\",\"from\":64,\"to\":67}",                   /* iccs beats from/to */
    };
    for (size_t i = 0; i < sizeof payloads / sizeof payloads[0]; i++) {
        json_decref(rpc(f, "new", "{\"side\":\"r\",\"opponent\":\"local\"}"));
        json_t *r = rpc(f, "move", payloads[i]);
        const json_t *v = ok_value(r);
        json_t *first = json_array_get(json_object_get(v, "history"), 0);
        assert_string_equal(json_string_value(json_object_get(first, "iccs")), "h2e2");
        assert_string_equal(json_string_value(json_object_get(first, "zh")), "炮二平五");
        json_decref(r);
    }
    json_t *r = rpc(f, "move", "{}");
    assert_string_equal(err_code(r), "bad-request");
    json_decref(r);
}

static void refusals_come_back_in_the_envelope_with_legal_moves(void **state)
{
    fixture *f = *state;
    json_decref(rpc(f, "new", "{\"side\":\"r\"}"));
    json_t *r = rpc(f, "move", "{\"iccs\":\"h2h8\"}");
    assert_string_equal(err_code(r), "illegal-move");
    json_t *e = json_object_get(r, "error");
    json_t *d = json_object_get(e, "details");
    assert_string_equal(json_string_value(json_object_get(d, "error")), "ILLEGAL_MOVE");
    assert_string_equal(json_string_value(json_object_get(e, "message")),
                        json_string_value(json_object_get(d, "errorZh")));
    assert_int_equal(json_array_size(json_object_get(d, "legalMoves")), 44);
    json_decref(r);
    r = rpc(f, "fallback", NULL);
    assert_string_equal(err_code(r), "ai-not-pending");
    json_decref(r);
}

static void every_endpoint_answers(void **state)
{
    fixture *f = *state;
    json_t *r = rpc(f, "new", "{\"side\":\"b\",\"opponent\":\"local\",\"maxPlies\":100}");
    const json_t *v = ok_value(r);
    assert_string_equal(json_string_value(json_object_get(v, "hero")), "b");
    assert_string_equal(json_string_value(json_object_get(v, "turn")), "b"); /* engine opened */
    long long rev = json_integer_value(json_object_get(v, "revision"));
    json_decref(r);
    r = rpc(f, "hint", "{\"count\":2}");
    assert_int_equal(json_array_size(json_object_get(ok_value(r), "candidates")), 2);
    json_decref(r);
    r = rpc(f, "move", "{\"move\":\"马８进７\"}");
    v = ok_value(r);
    assert_true(json_integer_value(json_object_get(v, "revision")) > rev);
    json_decref(r);
    r = rpc(f, "review", "{\"highlight\":\"all\"}");
    assert_int_equal(json_array_size(json_object_get(ok_value(r), "moves")), 3);
    json_decref(r);
    r = rpc(f, "review", "{\"highlight\":\"most\"}");
    assert_string_equal(err_code(r), "bad-request");
    json_decref(r);
    r = rpc(f, "undo", NULL);
    v = ok_value(r);
    assert_int_equal(json_array_size(json_object_get(v, "history")), 1);
    assert_string_equal(json_string_value(json_object_get(v, "turn")), "b");
    json_decref(r);
    r = rpc(f, "export", NULL);
    assert_non_null(strstr(json_string_value(json_object_get(ok_value(r), "pgn")), "[Format"));
    json_decref(r);
    r = rpc(f, "resign", NULL);
    v = ok_value(r);
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "status"), "winner")),
                        "r");
    assert_int_equal(f->last_event_revision, json_integer_value(json_object_get(v, "revision")));
    assert_true(f->events >= 4);
    json_decref(r);
    r = rpc(f, "resign", NULL);
    assert_string_equal(err_code(r), "game-over");
    json_decref(r);
}

/* ---- concurrency ---------------------------------------------------------------- */

typedef struct worker {
    fixture *f;
    int ok;
} worker;

static void *rpc_worker(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < 12; i++) {
        json_t *st = rpc(w->f, "state", NULL);
        json_t *targets = json_object_get(json_object_get(st, "value"), "legalTargets");
        const char *from = NULL;
        json_t *tos = NULL;
        void *it = json_object_iter(targets);
        if (it) {
            from = json_object_iter_key(it);
            tos = json_object_iter_value(it);
        }
        char payload[96];
        snprintf(payload, sizeof payload, "{\"from\":%s,\"to\":%lld}", from ? from : "0",
                 tos ? (long long)json_integer_value(json_array_get(tos, 0)) : 0LL);
        json_decref(st);
        json_t *r = rpc(w->f, i % 3 == 2 ? "undo" : "move", payload);
        w->ok += json_is_true(json_object_get(r, "ok"));
        json_decref(r);
    }
    return NULL;
}

static void *tool_worker(void *arg)
{
    worker *w = arg;
    cdsh_scope *scope = cdsh_scope_new(w->f->sid, NULL);
    for (int i = 0; i < 12; i++) {
        json_t *args = json_pack("{s:i}", "plies", 2);
        cdsh_dispatch_input in = {.call_id = "t",
                                  .name = i % 2 ? "xiangqi_board" : "xiangqi_undo",
                                  .args = i % 2 ? NULL : args,
                                  .agent = scope};
        cdsh_toolresult *r = cdsh_dispatch_execute(cdsh_host_tools(w->f->host), &in);
        if (i % 2 == 0 && !r->is_error)
            w->ok += json_is_true(json_object_get(r->value, "ok"));
        cdsh_toolresult_free(r);
        json_decref(args);
    }
    cdsh_scope_unref(scope);
    return NULL;
}

static void no_update_is_lost_under_concurrent_rpc_and_tools(void **state)
{
    fixture *f = *state;
    json_t *r = rpc(f, "new", "{\"side\":\"r\",\"opponent\":\"local\"}");
    long long start = json_integer_value(json_object_get(ok_value(r), "revision"));
    json_decref(r);
    worker w[4] = {{f, 0}, {f, 0}, {f, 0}, {f, 0}};
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, i < 2 ? rpc_worker : tool_worker, &w[i]);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    int changes = w[0].ok + w[1].ok + w[2].ok + w[3].ok;
    assert_true(changes > 0);
    r = rpc(f, "state", NULL);
    const json_t *v = ok_value(r);
    /* one revision per accepted change: none was lost or merged */
    assert_int_equal(json_integer_value(json_object_get(v, "revision")), start + changes);
    /* what is on disk is what readers see */
    char path[700];
    snprintf(path, sizeof path, "%s/xq/%s.json", f->home, f->sid);
    char *text = cdsh_test_read_file(path, NULL);
    json_t *doc = json_loads(text, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(doc, "revision")),
                     json_integer_value(json_object_get(v, "revision")));
    json_t *hist = json_object_get(v, "history"), *moves = json_object_get(doc, "moves");
    assert_int_equal(json_array_size(hist), json_array_size(moves));
    for (size_t i = 0; i < json_array_size(moves); i++)
        assert_string_equal(json_string_value(json_array_get(moves, i)),
                            json_string_value(json_object_get(json_array_get(hist, i), "iccs")));
    json_decref(doc);
    free(text);
    json_decref(r);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(sessions_are_admitted_only_when_they_exist),
        T(move_accepts_three_shapes_in_priority_order),
        T(refusals_come_back_in_the_envelope_with_legal_moves),
        T(every_endpoint_answers),
        T(no_update_is_lost_under_concurrent_rpc_and_tools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
