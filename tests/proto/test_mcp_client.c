/* test_mcp_client.c — the MCP client against tests/peers/mcp_peer (a small
 * hand-written server that misbehaves on demand), and the import of its tools
 * into the kernel under DSH's public names. */
#include "support/testkit.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "host/dispatch.h"
#include "proto/mcp/mcp_bridge.h"
#include "proto/mcp/mcp_client.h"

static char *peer;

static int setup(void **state)
{
    (void)state;
    peer = cdsh_test_peer_path_dup("mcp_peer");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(peer);
    return 0;
}

static int connect_peer(const char *const *extra, cdsh_mcp_client_opts *o, cdsh_mcp_client **cl,
                        cdsh_error *err)
{
    const char *argv[16] = {peer};
    size_t n = 1;
    for (size_t i = 0; extra && extra[i] && n < 15; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    cdsh_mcp_client_opts d = {0};
    if (!o)
        o = &d;
    o->name = o->name ? o->name : "peer";
    o->argv = argv;
    return cdsh_mcp_client_connect(o, cl, err);
}

static json_t *call_ok(cdsh_mcp_client *cl, const char *tool, const char *args_json)
{
    json_t *args = args_json ? json_loads(args_json, 0, NULL) : NULL;
    json_t *res = NULL;
    cdsh_error err = {0};
    int rc = cdsh_mcp_client_call(cl, tool, args, NULL, &res, &err);
    if (rc != 0)
        fail_msg("call %s failed: %s", tool, err.message);
    json_decref(args);
    return res;
}

static const char *first_text(const json_t *res)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
}

static void connect_lists_every_page_and_reads_server_info(void **state)
{
    (void)state;
    const char *extra[] = {"--tools", "7", "--page", "3", NULL};
    cdsh_mcp_client *cl = NULL;
    cdsh_error err = {0};
    assert_int_equal(connect_peer(extra, NULL, &cl, &err), 0);
    json_t *tools = cdsh_mcp_client_tools_dup(cl);
    assert_int_equal(json_array_size(tools), 9 + 7);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 0), "name")),
                        "echo");
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 15), "name")),
                        "t6");
    json_decref(tools);
    char *v = cdsh_mcp_client_version_dup(cl);
    assert_string_equal(v, "2025-06-18");
    free(v);
    char *instr = cdsh_mcp_client_instructions_dup(cl);
    assert_string_equal(instr, "Use echo to echo.");
    free(instr);
    json_t *info = cdsh_mcp_client_server_info_dup(cl);
    assert_string_equal(json_string_value(json_object_get(info, "name")), "mcp_peer");
    json_decref(info);
    assert_int_equal(cdsh_mcp_client_ping(cl, 2000, NULL), 0);
    cdsh_mcp_client_free(cl);
}

static void calls_return_text_structured_content_and_tool_errors(void **state)
{
    (void)state;
    cdsh_mcp_client *cl = NULL;
    assert_int_equal(connect_peer(NULL, NULL, &cl, NULL), 0);
    json_t *r = call_ok(cl, "echo", "{\"text\":\"hello\"}");
    assert_string_equal(first_text(r), "hello");
    assert_null(json_object_get(r, "isError"));
    json_decref(r);
    r = call_ok(cl, "structured", NULL);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(r, "structuredContent"), "sum")), 3);
    json_decref(r);
    r = call_ok(cl, "fail", NULL);
    assert_true(json_is_true(json_object_get(r, "isError")));
    assert_string_equal(first_text(r), "it failed on purpose");
    json_decref(r);
    /* The peer answers an unknown tool with a JSON-RPC error. */
    json_t *res = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_mcp_client_call(cl, "nope", NULL, NULL, &res, &err), CDSH_EPROTO);
    assert_string_equal(err.code, "RPC_ERROR");
    assert_string_equal(err.message,
                        "MCP server \"peer\" refused tools/call nope: Unknown tool (code -32602)");
    assert_int_equal(cdsh_mcp_client_call(cl, "task_only", NULL, NULL, &res, &err),
                     CDSH_EUNSUPPORTED);
    assert_string_equal(err.code, "TASK_REQUIRED");
    cdsh_mcp_client_free(cl);
}

typedef struct prog {
    int count;
    double last, total;
} prog;

static void on_progress(void *arg, double progress, double total, const char *message)
{
    (void)message;
    prog *p = arg;
    p->count++;
    p->last = progress;
    p->total = total;
}

static void progress_notifications_reach_the_caller(void **state)
{
    (void)state;
    cdsh_mcp_client *cl = NULL;
    assert_int_equal(connect_peer(NULL, NULL, &cl, NULL), 0);
    prog p = {0};
    cdsh_mcp_call_opts co = {.on_progress = on_progress, .progress_arg = &p};
    json_t *args = json_pack("{s:i}", "ms", 300);
    json_t *res = NULL;
    assert_int_equal(cdsh_mcp_client_call(cl, "slow", args, &co, &res, NULL), 0);
    assert_string_equal(first_text(res), "slept");
    /* Six were sent; the last ones may lose the race with the result (the
     * result completes the call first; later progress is dropped). */
    assert_true(p.count >= 1 && p.count <= 6);
    assert_true(p.last >= 1.0 && p.last <= 6.0 && p.total == 6.0);
    json_decref(res);
    json_decref(args);
    cdsh_mcp_client_free(cl);
}

/* Fires the call's token at the first progress notification: the server is
 * then running the call for sure, so it must be told of the cancel. */
static void fire_on_progress(void *arg, double progress, double total, const char *message)
{
    (void)progress, (void)total, (void)message;
    cdsh_cancel_fire(arg, "user pressed stop");
}

static void cancelled_call_returns_promptly_and_tells_the_server(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char logpath[512];
    snprintf(logpath, sizeof logpath, "%s/peer.log", home);
    const char *extra[] = {"--log", logpath, NULL};
    cdsh_mcp_client *cl = NULL;
    assert_int_equal(connect_peer(extra, NULL, &cl, NULL), 0);
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    cdsh_mcp_call_opts co = {.cancel = tok, .on_progress = fire_on_progress, .progress_arg = tok};
    json_t *args = json_pack("{s:i}", "ms", 60000);
    json_t *res = NULL;
    cdsh_error err = {0};
    int64_t start = cdsh_clock_mono_ms();
    assert_int_equal(cdsh_mcp_client_call(cl, "slow", args, &co, &res, &err), CDSH_ECANCELED);
    assert_true(cdsh_clock_mono_ms() - start < 30000); /* the tool would run 60 s */
    /* The peer logs the notifications/cancelled it received. */
    char *log = NULL;
    while (!(log && strstr(log, "cancelled"))) { /* CTest's timeout bounds it */
        free(log);
        usleep(20000);
        log = cdsh_test_read_file(logpath, NULL);
    }
    assert_non_null(log);
    assert_non_null(strstr(log, "cancelled user pressed stop"));
    free(log);
    json_t *r = call_ok(cl, "echo", "{\"text\":\"still alive\"}");
    assert_string_equal(first_text(r), "still alive");
    json_decref(r);
    json_decref(args);
    cdsh_cancel_free(tok);
    cdsh_mcp_client_free(cl);
    cdsh_test_home_free(home);
}

static void timed_out_call_fails_with_a_clear_message(void **state)
{
    (void)state;
    cdsh_mcp_client *cl = NULL;
    assert_int_equal(connect_peer(NULL, NULL, &cl, NULL), 0);
    cdsh_mcp_call_opts co = {.timeout_ms = 200};
    json_t *args = json_pack("{s:i}", "ms", 60000);
    json_t *res = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_mcp_client_call(cl, "slow", args, &co, &res, &err), CDSH_ETIMEDOUT);
    assert_string_equal(err.message, "MCP tool \"slow\" on server \"peer\" timed out after 200 ms");
    json_decref(args);
    cdsh_mcp_client_free(cl);
}

static void server_dying_mid_call_is_a_clear_error(void **state)
{
    (void)state;
    cdsh_mcp_client *cl = NULL;
    assert_int_equal(connect_peer(NULL, NULL, &cl, NULL), 0);
    json_t *res = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_mcp_client_call(cl, "die", NULL, NULL, &res, &err), CDSH_ECLOSED);
    assert_string_equal(err.code, "SERVER_EXITED");
    assert_non_null(strstr(err.message, "MCP server \"peer\" exited with status 3 while cdsh "
                                        "waited for tools/call"));
    assert_non_null(strstr(err.message, "peer: dying on purpose"));
    assert_false(cdsh_mcp_client_is_connected(cl));
    assert_int_equal(cdsh_mcp_client_call(cl, "echo", NULL, NULL, &res, &err), CDSH_ECLOSED);
    assert_string_equal(err.code, "DISCONNECTED");
    cdsh_mcp_client_free(cl);
}

static void misbehaving_servers_fail_connect_with_clear_errors(void **state)
{
    (void)state;
    /* Only "no-init" is meant to time out; the others get a budget a slow
     * (sanitised, loaded) start can never exhaust. */
    static const struct {
        const char *mode;
        int rc;
        const char *code, *fragment;
        int64_t init_ms;
    } cases[] = {
        {"no-init", CDSH_ETIMEDOUT, "INIT_TIMEOUT",
         "MCP server \"peer\" did not answer initialize within 400 ms", 400},
        {"big-instructions", CDSH_ETOOBIG, "INSTRUCTIONS_TOO_LARGE",
         "sent 39999 bytes of instructions (limit 32768)", 30000},
        {"dup-tools", CDSH_EPROTO, "BAD_TOOLS", "listed tool \"echo\" more than once", 30000},
        {"same-cursor", CDSH_EPROTO, "BAD_TOOLS", "returned the same tools/list cursor twice",
         30000},
        {"exit-at-start", CDSH_ECLOSED, "SERVER_EXITED", "peer: refusing to start", 30000},
        {"old-version", CDSH_EPROTO, "BAD_VERSION", "wants protocol version 1999-01-01", 30000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *extra[] = {"--mode", cases[i].mode, "--page", "4", NULL};
        cdsh_mcp_client_opts o = {.init_timeout_ms = cases[i].init_ms};
        cdsh_mcp_client *cl = NULL;
        cdsh_error err = {0};
        int64_t start = cdsh_clock_mono_ms();
        assert_int_equal(connect_peer(extra, &o, &cl, &err), cases[i].rc);
        assert_null(cl);
        assert_string_equal(err.code, cases[i].code);
        if (!strstr(err.message, cases[i].fragment))
            fail_msg("%s: unexpected message: %s", cases[i].mode, err.message);
        assert_true(cdsh_clock_mono_ms() - start < 30000);
    }
}

static void garbage_lines_between_messages_are_ignored(void **state)
{
    (void)state;
    const char *extra[] = {"--mode", "garbage", NULL};
    cdsh_mcp_client *cl = NULL;
    assert_int_equal(connect_peer(extra, NULL, &cl, NULL), 0);
    json_t *r = call_ok(cl, "echo", "{\"text\":\"through the noise\"}");
    assert_string_equal(first_text(r), "through the noise");
    json_decref(r);
    cdsh_mcp_client_free(cl);
}

static void oversize_answer_cuts_the_connection_instead_of_hanging(void **state)
{
    (void)state;
    cdsh_mcp_client_opts o = {.max_message = 1 << 20};
    cdsh_mcp_client *cl = NULL;
    assert_int_equal(connect_peer(NULL, &o, &cl, NULL), 0);
    json_t *res = NULL;
    cdsh_error err = {0};
    int64_t start = cdsh_clock_mono_ms();
    assert_int_equal(cdsh_mcp_client_call(cl, "oversize", NULL, NULL, &res, &err), CDSH_ECLOSED);
    assert_true(cdsh_clock_mono_ms() - start < 30000); /* cut, not left hanging */
    assert_non_null(strstr(err.message, "the server sent an oversize message"));
    cdsh_mcp_client_free(cl);
}

static void missing_command_is_reported(void **state)
{
    (void)state;
    const char *argv[] = {"/nonexistent/mcp-server", NULL};
    cdsh_mcp_client_opts o = {.name = "ghost", .argv = argv};
    cdsh_mcp_client *cl = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_mcp_client_connect(&o, &cl, &err), CDSH_ENOTFOUND);
    assert_string_equal(err.code, "COMMAND_NOT_FOUND");
    cdsh_mcp_client_opts both = {.name = "x", .argv = argv, .url = "http://127.0.0.1:1/mcp"};
    assert_int_equal(cdsh_mcp_client_connect(&both, &cl, &err), CDSH_EINVAL);
    cdsh_mcp_client_opts badurl = {.name = "x", .url = "ftp://x"};
    assert_int_equal(cdsh_mcp_client_connect(&badurl, &cl, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "BAD_URL");
}

static void child_environment_is_scrubbed_then_server_env_added(void **state)
{
    (void)state;
    setenv("MCPTEST_API_KEY", "leak1", 1);
    setenv("DSH_MCPTEST", "leak2", 1);
    setenv("MCPTEST_PASSWORD_X", "leak3", 1);
    setenv("MCPTEST_KEEP", "kept", 1);
    json_t *env =
        json_pack("{s:s,s:s}", "MCPTEST_EXTRA", "extra", "MCPTEST_SERVICE_TOKEN", "configured");
    cdsh_mcp_client_opts o = {.env = env};
    cdsh_mcp_client *cl = NULL;
    assert_int_equal(connect_peer(NULL, &o, &cl, NULL), 0);
    json_t *r = call_ok(cl, "env", NULL);
    const char *text = first_text(r);
    assert_non_null(strstr(text, "\"MCPTEST_KEEP=kept\""));
    assert_non_null(strstr(text, "\"MCPTEST_EXTRA=extra\""));
    assert_non_null(strstr(text, "\"MCPTEST_SERVICE_TOKEN=configured\""));
    assert_null(strstr(text, "leak1"));
    assert_null(strstr(text, "leak2"));
    assert_null(strstr(text, "leak3"));
    json_decref(r);
    json_decref(env);
    cdsh_mcp_client_free(cl);
    unsetenv("MCPTEST_API_KEY");
    unsetenv("DSH_MCPTEST");
    unsetenv("MCPTEST_PASSWORD_X");
    unsetenv("MCPTEST_KEEP");
}

typedef struct events {
    pthread_mutex_t lock;
    int changed, disconnected, reconnected, gave_up;
} events;

static void on_event(void *arg, cdsh_mcp_client *cl, cdsh_mcp_client_event ev)
{
    (void)cl;
    events *e = arg;
    pthread_mutex_lock(&e->lock);
    if (ev == CDSH_MCP_EVENT_TOOLS_CHANGED)
        e->changed++;
    else if (ev == CDSH_MCP_EVENT_DISCONNECTED)
        e->disconnected++;
    else if (ev == CDSH_MCP_EVENT_RECONNECTED)
        e->reconnected++;
    else
        e->gave_up++;
    pthread_mutex_unlock(&e->lock);
}

static int read_count(events *e, const int *field)
{
    pthread_mutex_lock(&e->lock);
    int v = *field;
    pthread_mutex_unlock(&e->lock);
    return v;
}

static void list_changed_triggers_a_relist(void **state)
{
    (void)state;
    events e = {.lock = PTHREAD_MUTEX_INITIALIZER};
    cdsh_mcp_client_opts o = {.on_event = on_event, .event_arg = &e};
    cdsh_mcp_client *cl = NULL;
    assert_int_equal(connect_peer(NULL, &o, &cl, NULL), 0);
    json_t *r = call_ok(cl, "change", NULL);
    json_decref(r);
    for (int i = 0; i < 1500 && read_count(&e, &e.changed) == 0; i++)
        usleep(10000);
    assert_int_equal(read_count(&e, &e.changed), 1);
    json_t *tools = cdsh_mcp_client_tools_dup(cl);
    assert_int_equal(json_array_size(tools), 10);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 9), "name")),
                        "added");
    json_decref(tools);
    cdsh_mcp_client_free(cl);
}

static void lost_server_is_reconnected_with_backoff(void **state)
{
    (void)state;
    events e = {.lock = PTHREAD_MUTEX_INITIALIZER};
    cdsh_mcp_client_opts o = {.on_event = on_event,
                              .event_arg = &e,
                              .reconnect = true,
                              .reconnect_initial_ms = 50,
                              .reconnect_max_ms = 200};
    cdsh_mcp_client *cl = NULL;
    assert_int_equal(connect_peer(NULL, &o, &cl, NULL), 0);
    json_t *res = NULL;
    assert_int_equal(cdsh_mcp_client_call(cl, "die", NULL, NULL, &res, NULL), CDSH_ECLOSED);
    for (int i = 0; i < 1500 && read_count(&e, &e.reconnected) == 0; i++)
        usleep(10000);
    assert_int_equal(read_count(&e, &e.disconnected), 1);
    assert_int_equal(read_count(&e, &e.reconnected), 1);
    assert_true(cdsh_mcp_client_is_connected(cl));
    json_t *r = call_ok(cl, "echo", "{\"text\":\"back\"}");
    assert_string_equal(first_text(r), "back");
    json_decref(r);
    cdsh_mcp_client_free(cl);
}

static void reconnect_gives_up_after_the_attempt_budget(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char script[512];
    snprintf(script, sizeof script, "%s/flaky.sh", home);
    /* Runs the peer the first time only; later starts fail at once. */
    char body[1500];
    snprintf(body, sizeof body,
             "#!/bin/sh\nif [ -e %s/ran ]; then exit 9; fi\ntouch %s/ran\nexec %s\n", home, home,
             peer);
    cdsh_test_write_file(script, body);
    chmod(script, 0755);
    events e = {.lock = PTHREAD_MUTEX_INITIALIZER};
    const char *argv[] = {script, NULL};
    cdsh_mcp_client_opts o = {.name = "flaky",
                              .argv = argv,
                              .on_event = on_event,
                              .event_arg = &e,
                              .reconnect = true,
                              .reconnect_initial_ms = 10,
                              .reconnect_max_ms = 40,
                              .reconnect_max_attempts = 3,
                              .init_timeout_ms = cdsh_test_scale_ms(30000)};
    cdsh_mcp_client *cl = NULL;
    assert_int_equal(cdsh_mcp_client_connect(&o, &cl, NULL), 0);
    json_t *res = NULL;
    assert_int_equal(cdsh_mcp_client_call(cl, "die", NULL, NULL, &res, NULL), CDSH_ECLOSED);
    for (int i = 0; i < 1500 && read_count(&e, &e.gave_up) == 0; i++)
        usleep(10000);
    assert_int_equal(read_count(&e, &e.gave_up), 1);
    assert_int_equal(read_count(&e, &e.reconnected), 0);
    assert_false(cdsh_mcp_client_is_connected(cl));
    cdsh_mcp_client_free(cl);
    cdsh_test_home_free(home);
}

static void imported_tools_register_under_public_names_with_filter(void **state)
{
    (void)state;
    cdsh_mcp_client *cl = NULL;
    cdsh_mcp_client_opts o = {.name = "my.peer"};
    assert_int_equal(connect_peer(NULL, &o, &cl, NULL), 0);
    cdsh_tools *tools = cdsh_tools_new(NULL);
    const char *enabled[] = {"echo", "structured", "fail", NULL};
    const char *disabled[] = {"fail", NULL};
    cdsh_mcp_import_opts io = {.enabled_tools = enabled, .disabled_tools = disabled};
    cdsh_mcp_import *imp = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_mcp_import_new(cl, tools, &io, &imp, &err), 0);
    json_t *names = cdsh_tools_names(tools, NULL);
    assert_int_equal(json_array_size(names), 2);
    assert_string_equal(json_string_value(json_array_get(names, 0)),
                        "mcp__my_peer__echo_8a91494ca0c5");
    json_decref(names);
    json_t *pairs = cdsh_mcp_import_names(imp);
    assert_string_equal(json_string_value(json_object_get(json_array_get(pairs, 1), "rawName")),
                        "structured");
    json_decref(pairs);

    json_t *args = json_pack("{s:s}", "text", "via kernel");
    cdsh_dispatch_input in = {
        .call_id = "c1", .name = "mcp__my_peer__echo_8a91494ca0c5", .args = args};
    cdsh_toolresult *res = cdsh_dispatch_execute(tools, &in);
    assert_false(res->is_error);
    char *text = cdsh_toolresult_text_dup(res);
    assert_string_equal(text, "via kernel");
    free(text);
    cdsh_toolresult_free(res);
    json_decref(args);

    cdsh_mcp_import_free(imp);
    assert_int_equal(cdsh_tools_count(tools), 0);
    cdsh_tools_free(tools);
    cdsh_mcp_client_free(cl);
    assert_true(cdsh_mcp_import_tool_enabled(NULL, NULL, "x"));
    assert_false(cdsh_mcp_import_tool_enabled(enabled, NULL, "x"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(connect_lists_every_page_and_reads_server_info),
        cmocka_unit_test(calls_return_text_structured_content_and_tool_errors),
        cmocka_unit_test(progress_notifications_reach_the_caller),
        cmocka_unit_test(cancelled_call_returns_promptly_and_tells_the_server),
        cmocka_unit_test(timed_out_call_fails_with_a_clear_message),
        cmocka_unit_test(server_dying_mid_call_is_a_clear_error),
        cmocka_unit_test(misbehaving_servers_fail_connect_with_clear_errors),
        cmocka_unit_test(garbage_lines_between_messages_are_ignored),
        cmocka_unit_test(oversize_answer_cuts_the_connection_instead_of_hanging),
        cmocka_unit_test(missing_command_is_reported),
        cmocka_unit_test(child_environment_is_scrubbed_then_server_env_added),
        cmocka_unit_test(list_changed_triggers_a_relist),
        cmocka_unit_test(lost_server_is_reconnected_with_backoff),
        cmocka_unit_test(reconnect_gives_up_after_the_attempt_budget),
        cmocka_unit_test(imported_tools_register_under_public_names_with_filter),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
