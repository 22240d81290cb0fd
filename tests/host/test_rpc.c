/* test_rpc.c — RPC channels: channel and endpoint rules, one handler per
 * channel, results and error codes, cancellation and the wire envelope. */
#include "support/testkit.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "host/rpc.h"

static int echo(void *arg, const char *endpoint, const json_t *payload, cdsh_cancel *cancel,
                json_t **result, cdsh_error *err)
{
    const char *mode = arg;
    if (mode && strcmp(mode, "throw") == 0)
        return cdsh_error_set(err, CDSH_EIO, "X", "database is locked");
    if (mode && strcmp(mode, "malformed") == 0) {
        *result = json_pack("{s:s}", "hello", "world");
        return 0;
    }
    if (mode && strcmp(mode, "not-found") == 0) {
        *result = cdsh_rpc_error_new(CDSH_RPC_SESSION_NOT_FOUND, "no session s1",
                                     json_pack("{s:s}", "sessionId", "s1"));
        return 0;
    }
    if (mode && strcmp(mode, "cancel-self") == 0)
        cdsh_cancel_fire(cancel, "stop");
    *result = cdsh_rpc_ok_new(
        json_pack("{s:s, s:O}", "endpoint", endpoint, "payload", (json_t *)payload));
    return 0;
}

static char *dump(const json_t *v)
{
    return json_dumps(v, JSON_COMPACT);
}

static void channel_names_follow_the_pattern(void **state)
{
    (void)state;
    assert_true(cdsh_rpc_channel_valid("/xiangqi"));
    assert_true(cdsh_rpc_channel_valid("/a.b_c~d-e9"));
    assert_true(cdsh_rpc_channel_valid("/api")); /* valid shape; reserved at handle() */
    assert_false(cdsh_rpc_channel_valid("xiangqi"));
    assert_false(cdsh_rpc_channel_valid("/"));
    assert_false(cdsh_rpc_channel_valid("/a/b"));
    assert_false(cdsh_rpc_channel_valid("/a b"));
    assert_false(cdsh_rpc_channel_valid("/caf\xc3\xa9"));
    assert_false(cdsh_rpc_channel_valid(NULL));
}

static void endpoint_segments_follow_the_rules(void **state)
{
    (void)state;
    assert_true(cdsh_rpc_endpoint_valid("state"));
    assert_true(cdsh_rpc_endpoint_valid("games/$id/move.v2"));
    assert_true(cdsh_rpc_endpoint_valid("a-b_c"));
    assert_true(cdsh_rpc_endpoint_valid("..."));
    assert_false(cdsh_rpc_endpoint_valid(""));
    assert_false(cdsh_rpc_endpoint_valid("."));
    assert_false(cdsh_rpc_endpoint_valid("a/../b"));
    assert_false(cdsh_rpc_endpoint_valid("a//b"));
    assert_false(cdsh_rpc_endpoint_valid("/a"));
    assert_false(cdsh_rpc_endpoint_valid("a/"));
    assert_false(cdsh_rpc_endpoint_valid("a~b"));
    assert_false(cdsh_rpc_endpoint_valid(NULL));
}

static void handle_refuses_invalid_and_reserved_channels(void **state)
{
    (void)state;
    cdsh_rpc *rpc = cdsh_rpc_new();
    cdsh_disposer_t d = {0};
    cdsh_error err = {0};
    assert_int_equal(cdsh_rpc_handle(rpc, "/api", echo, NULL, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_CHANNEL");
    assert_string_equal(err.message, "connection: invalid or reserved RPC channel \"/api\"");
    assert_int_equal(cdsh_rpc_handle(rpc, "nope", echo, NULL, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "connection: invalid or reserved RPC channel \"nope\"");
    assert_int_equal(cdsh_rpc_count(rpc), 0);
    cdsh_rpc_free(rpc);
}

static void one_handler_per_channel(void **state)
{
    (void)state;
    cdsh_rpc *rpc = cdsh_rpc_new();
    cdsh_disposer_t d1, d2 = {0};
    cdsh_error err = {0};
    assert_int_equal(cdsh_rpc_handle(rpc, "/game", echo, NULL, &d1, NULL), 0);
    assert_int_equal(cdsh_rpc_handle(rpc, "/game", echo, NULL, &d2, &err), CDSH_EEXIST);
    assert_string_equal(err.code, "DUPLICATE_CHANNEL");
    assert_string_equal(err.message, "connection: RPC channel \"/game\" already has a handler");
    cdsh_disposer_run(&d1);
    assert_int_equal(cdsh_rpc_handle(rpc, "/game", echo, NULL, &d2, NULL), 0); /* free again */
    cdsh_disposer_run(&d2);
    assert_int_equal(cdsh_rpc_count(rpc), 0);
    cdsh_rpc_free(rpc);
}

static void call_returns_handler_value(void **state)
{
    (void)state;
    cdsh_rpc *rpc = cdsh_rpc_new();
    cdsh_disposer_t d;
    cdsh_rpc_handle(rpc, "/game", echo, NULL, &d, NULL);
    json_t *payload = json_pack("{s:s}", "move", "h2e2");
    json_t *r = cdsh_rpc_call(rpc, "/game", "games/1/move", payload, NULL);
    char *s = dump(r);
    assert_string_equal(s, "{\"ok\":true,\"value\":{\"endpoint\":\"games/1/move\","
                           "\"payload\":{\"move\":\"h2e2\"}}}");
    free(s);
    json_decref(r);
    r = cdsh_rpc_call(rpc, "/game", "state", NULL, NULL);
    assert_true(json_is_null(json_object_get(json_object_get(r, "value"), "payload")));
    json_decref(r);
    json_decref(payload);
    cdsh_disposer_run(&d);
    cdsh_rpc_free(rpc);
}

static void handler_error_result_passes_through_with_details(void **state)
{
    (void)state;
    cdsh_rpc *rpc = cdsh_rpc_new();
    cdsh_disposer_t d;
    cdsh_rpc_handle(rpc, "/s", echo, "not-found", &d, NULL);
    json_t *r = cdsh_rpc_call(rpc, "/s", "get", NULL, NULL);
    char *s = dump(r);
    assert_string_equal(s, "{\"ok\":false,\"error\":{\"code\":\"session-not-found\","
                           "\"message\":\"no session s1\",\"details\":{\"sessionId\":\"s1\"}}}");
    free(s);
    json_decref(r);
    cdsh_disposer_run(&d);
    cdsh_rpc_free(rpc);
}

static void handler_failure_becomes_internal(void **state)
{
    (void)state;
    cdsh_rpc *rpc = cdsh_rpc_new();
    cdsh_disposer_t d1, d2;
    cdsh_rpc_handle(rpc, "/t", echo, "throw", &d1, NULL);
    cdsh_rpc_handle(rpc, "/m", echo, "malformed", &d2, NULL);
    json_t *r = cdsh_rpc_call(rpc, "/t", "x", NULL, NULL);
    json_t *e = json_object_get(r, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "internal");
    assert_string_equal(json_string_value(json_object_get(e, "message")),
                        "handler failure: database is locked");
    json_decref(r);
    r = cdsh_rpc_call(rpc, "/m", "x", NULL, NULL);
    e = json_object_get(r, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "internal");
    assert_string_equal(json_string_value(json_object_get(e, "message")),
                        "handler failure: handler returned a malformed result");
    json_decref(r);
    cdsh_disposer_run(&d1);
    cdsh_disposer_run(&d2);
    cdsh_rpc_free(rpc);
}

static void bad_channel_endpoint_or_missing_handler_are_results(void **state)
{
    (void)state;
    cdsh_rpc *rpc = cdsh_rpc_new();
    json_t *r = cdsh_rpc_call(rpc, "nochannel", "x", NULL, NULL);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "code")),
                        "bad-request");
    json_decref(r);
    r = cdsh_rpc_call(rpc, "/x", "../etc", NULL, NULL);
    json_t *e = json_object_get(r, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "bad-request");
    assert_string_equal(json_string_value(json_object_get(e, "message")),
                        "invalid RPC endpoint \"../etc\"");
    json_decref(r);
    r = cdsh_rpc_call(rpc, "/x", "state", NULL, NULL);
    e = json_object_get(r, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "not-found");
    assert_string_equal(json_string_value(json_object_get(e, "message")),
                        "no handler for RPC channel \"/x\"");
    json_decref(r);
    cdsh_rpc_free(rpc);
}

static void cancellation_before_or_during_gives_cancelled(void **state)
{
    (void)state;
    cdsh_rpc *rpc = cdsh_rpc_new();
    cdsh_disposer_t d1, d2;
    cdsh_rpc_handle(rpc, "/a", echo, NULL, &d1, NULL);
    cdsh_rpc_handle(rpc, "/b", echo, "cancel-self", &d2, NULL);
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    cdsh_cancel_fire(tok, NULL);
    json_t *r = cdsh_rpc_call(rpc, "/a", "x", NULL, tok);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "code")),
                        "cancelled");
    json_decref(r);
    cdsh_cancel *tok2 = cdsh_cancel_new(NULL);
    r = cdsh_rpc_call(rpc, "/b", "x", NULL, tok2);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "code")),
                        "cancelled");
    json_decref(r);
    cdsh_cancel_free(tok);
    cdsh_cancel_free(tok2);
    cdsh_disposer_run(&d1);
    cdsh_disposer_run(&d2);
    cdsh_rpc_free(rpc);
}

static void envelope_round_trip_and_bad_requests(void **state)
{
    (void)state;
    cdsh_rpc *rpc = cdsh_rpc_new();
    cdsh_disposer_t d;
    cdsh_rpc_handle(rpc, "/g", echo, NULL, &d, NULL);
    json_t *body = json_pack("{s:s, s:s, s:s, s:i}", "type", "client-request", "rpcId", "r-1",
                             "method", "state", "payload", 3);
    json_t *resp = cdsh_rpc_dispatch_envelope(rpc, "/g", "state", body, NULL);
    char *s = dump(resp);
    assert_string_equal(s, "{\"type\":\"server-response\",\"rpcId\":\"r-1\",\"result\":{\"ok\":"
                           "true,\"value\":{\"endpoint\":\"state\",\"payload\":3}}}");
    free(s);
    json_decref(resp);

    resp = cdsh_rpc_dispatch_envelope(rpc, "/g", "other", body, NULL); /* method ≠ endpoint */
    json_t *e = json_object_get(json_object_get(resp, "result"), "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "bad-request");
    assert_string_equal(json_string_value(json_object_get(e, "message")),
                        "method must equal the endpoint");
    assert_string_equal(json_string_value(json_object_get(resp, "rpcId")), "r-1");
    json_decref(resp);

    json_object_set_new(body, "type", json_string("server-response"));
    resp = cdsh_rpc_dispatch_envelope(rpc, "/g", "state", body, NULL);
    e = json_object_get(json_object_get(resp, "result"), "error");
    assert_string_equal(json_string_value(json_object_get(e, "message")),
                        "request type must be \"client-request\"");
    json_decref(resp);

    json_t *noid =
        json_pack("{s:s, s:s, s:n}", "type", "client-request", "method", "state", "payload");
    resp = cdsh_rpc_dispatch_envelope(rpc, "/g", "state", noid, NULL);
    assert_string_equal(json_string_value(json_object_get(resp, "rpcId")), "");
    e = json_object_get(json_object_get(resp, "result"), "error");
    assert_string_equal(json_string_value(json_object_get(e, "message")),
                        "rpcId must be a non-empty string");
    json_decref(resp);
    json_decref(noid);
    json_decref(body);
    cdsh_disposer_run(&d);
    cdsh_rpc_free(rpc);
}

static void result_shape_check(void **state)
{
    (void)state;
    json_t *ok = cdsh_rpc_ok_new(NULL);
    json_t *bad = cdsh_rpc_error_new("bad-request", "nope", NULL);
    json_t *junk = json_pack("{s:b}", "ok", 0);
    assert_true(cdsh_rpc_result_valid(ok));
    assert_true(cdsh_rpc_result_valid(bad));
    assert_false(cdsh_rpc_result_valid(junk));
    assert_false(cdsh_rpc_result_valid(NULL));
    assert_true(json_is_null(json_object_get(json_object_get(bad, "error"), "details")));
    json_decref(ok);
    json_decref(bad);
    json_decref(junk);
}

static bool sessions_only(void *arg, const char *endpoint)
{
    (void)arg;
    return strncmp(endpoint, "sessions/", 9) == 0;
}

static void api_has_one_interceptor_for_the_endpoints_it_matches(void **state)
{
    (void)state;
    cdsh_rpc *rpc = cdsh_rpc_new();
    cdsh_disposer_t d1, d2 = {0};
    cdsh_error err = {0};
    assert_int_equal(cdsh_rpc_intercept(rpc, "/api", sessions_only, echo, NULL, &d1, NULL), 0);
    assert_int_equal(cdsh_rpc_intercept(rpc, "/api", sessions_only, echo, NULL, &d2, &err),
                     CDSH_EEXIST);
    assert_string_equal(err.message, "connection: \"/api\" already has an interceptor");
    assert_int_equal(cdsh_rpc_intercept(rpc, "/game", sessions_only, echo, NULL, &d2, &err),
                     CDSH_EINVAL);
    assert_string_equal(err.message, "connection: only \"/api\" can be intercepted, not \"/game\"");
    json_t *r = cdsh_rpc_call(rpc, "/api", "sessions/list", NULL, NULL);
    assert_true(json_is_true(json_object_get(r, "ok")));
    json_decref(r);
    r = cdsh_rpc_call(rpc, "/api", "settings/get", NULL, NULL);
    json_t *e = json_object_get(r, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "not-found");
    assert_string_equal(json_string_value(json_object_get(e, "message")),
                        "no handler for /api/settings/get");
    json_decref(r);
    cdsh_disposer_run(&d1);
    r = cdsh_rpc_call(rpc, "/api", "sessions/list", NULL, NULL);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "code")),
                        "not-found");
    json_decref(r);
    cdsh_rpc_free(rpc);
}

typedef struct hammer {
    cdsh_rpc *rpc;
    int ok, missing;
} hammer;

static void *call_loop(void *arg)
{
    hammer *h = arg;
    for (int i = 0; i < 500; i++) {
        json_t *r = cdsh_rpc_call(h->rpc, "/busy", "x", NULL, NULL);
        if (json_is_true(json_object_get(r, "ok")))
            h->ok++;
        else
            h->missing++;
        json_decref(r);
    }
    return NULL;
}

static void calls_race_claims_and_disposals_safely(void **state)
{
    (void)state;
    hammer h = {.rpc = cdsh_rpc_new()};
    pthread_t t;
    pthread_create(&t, NULL, call_loop, &h);
    for (int i = 0; i < 500; i++) {
        cdsh_disposer_t d;
        if (cdsh_rpc_handle(h.rpc, "/busy", echo, NULL, &d, NULL) == 0)
            cdsh_disposer_run(&d);
    }
    pthread_join(t, NULL);
    assert_int_equal(h.ok + h.missing, 500);
    assert_int_equal(cdsh_rpc_count(h.rpc), 0);
    cdsh_rpc_free(h.rpc);
}

static void channels_lists_claimed_names_sorted(void **state)
{
    (void)state;
    cdsh_rpc *rpc = cdsh_rpc_new();
    cdsh_disposer_t d1, d2;
    cdsh_rpc_handle(rpc, "/zeta", echo, NULL, &d1, NULL);
    cdsh_rpc_handle(rpc, "/alpha", echo, NULL, &d2, NULL);
    json_t *c = cdsh_rpc_channels(rpc);
    char *s = dump(c);
    assert_string_equal(s, "[\"/alpha\",\"/zeta\"]");
    free(s);
    json_decref(c);
    cdsh_disposer_run(&d1);
    cdsh_disposer_run(&d2);
    cdsh_rpc_free(rpc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(channel_names_follow_the_pattern),
        cmocka_unit_test(endpoint_segments_follow_the_rules),
        cmocka_unit_test(handle_refuses_invalid_and_reserved_channels),
        cmocka_unit_test(one_handler_per_channel),
        cmocka_unit_test(call_returns_handler_value),
        cmocka_unit_test(handler_error_result_passes_through_with_details),
        cmocka_unit_test(handler_failure_becomes_internal),
        cmocka_unit_test(bad_channel_endpoint_or_missing_handler_are_results),
        cmocka_unit_test(cancellation_before_or_during_gives_cancelled),
        cmocka_unit_test(envelope_round_trip_and_bad_requests),
        cmocka_unit_test(result_shape_check),
        cmocka_unit_test(api_has_one_interceptor_for_the_endpoints_it_matches),
        cmocka_unit_test(calls_race_claims_and_disposals_safely),
        cmocka_unit_test(channels_lists_claimed_names_sorted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
