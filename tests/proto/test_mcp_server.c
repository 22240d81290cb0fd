/* test_mcp_server.c — the MCP server core and the kernel export, driven by
 * raw JSON-RPC lines over pipes (lifecycle, errors, paging, results,
 * cancellation, list_changed), and cdsh's client against cdsh's server over
 * Streamable HTTP (in process) and stdio (`cdsh mcp --fixture`). */
#include "support/testkit.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/strbuf.h"
#include "host/dispatch.h"
#include "proto/mcp/mcp_bridge.h"
#include "proto/mcp/mcp_client.h"
#include "proto/mcp/mcp_server.h"
#include "server/mcp_http.h"
#include "server/web.h"

/* ---- a kernel with a few tools -------------------------------------------- */

static int echo_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    *value = json_incref(json_object_get(exec->args, "text"));
    return 0;
}

static int sum_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    *value = json_pack("{s:I}", "sum",
                       json_integer_value(json_object_get(exec->args, "a")) +
                           json_integer_value(json_object_get(exec->args, "b")));
    return 0;
}

static int fail_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud, (void)value;
    return cdsh_dispatch_fail(exec, "TestError", "BROKEN", "broken on purpose");
}

static int wait_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    if (cdsh_cancel_wait(exec->cancel, 60000))
        return cdsh_dispatch_fail(exec, "AbortError", "ABORTED", "wait cancelled");
    *value = json_string("waited");
    return 0;
}

typedef struct kernel {
    cdsh_events *bus;
    cdsh_tools *tools;
    cdsh_disposer_t d[8];
    cdsh_mcp_export *ex;
    cdsh_mcp_server *server;
} kernel;

static void reg(kernel *k, int slot, const char *name, cdsh_tool_body_fn fn, const char *in,
                const char *out)
{
    json_t *pin = json_loads(in, 0, NULL), *pout = json_loads(out, 0, NULL);
    cdsh_tool_def def = {.name = name,
                         .description = name,
                         .parameters = pin,
                         .output_schema = pout,
                         .execute = fn,
                         .is_concurrency_safe = cdsh_tools_always_safe};
    cdsh_error err = {0};
    if (cdsh_tools_register(k->tools, NULL, &def, &k->d[slot], &err) != 0)
        fail_msg("register %s: %s", name, err.message);
    json_decref(pin);
    json_decref(pout);
}

static void kernel_init(kernel *k, const char *glob, size_t page)
{
    memset(k, 0, sizeof *k);
    k->bus = cdsh_events_new();
    k->tools = cdsh_tools_new(k->bus);
    reg(k, 0, "echo", echo_body,
        "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":["
        "\"text\"]}",
        "{\"type\":\"string\"}");
    reg(k, 1, "sum", sum_body,
        "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":"
        "\"integer\"}},\"required\":[\"a\",\"b\"]}",
        "{\"type\":\"object\",\"properties\":{\"sum\":{\"type\":\"integer\"}}}");
    reg(k, 2, "broken", fail_body, "{\"type\":\"object\"}", "{\"type\":\"string\"}");
    reg(k, 3, "wait", wait_body, "{\"type\":\"object\"}", "{\"type\":\"string\"}");
    cdsh_mcp_export_opts eo = {.tools_glob = glob, .progress_every_ms = 100};
    k->ex = cdsh_mcp_export_new(k->tools, k->bus, &eo, NULL);
    cdsh_mcp_provider p;
    cdsh_mcp_export_provider(k->ex, &p);
    cdsh_mcp_server_opts so = {.page_size = page, .instructions = "test server"};
    k->server = cdsh_mcp_server_new(&p, &so, NULL);
    cdsh_mcp_export_attach(k->ex, k->server);
}

static void kernel_deinit(kernel *k)
{
    cdsh_mcp_export_attach(k->ex, NULL);
    cdsh_mcp_server_free(k->server);
    cdsh_mcp_export_free(k->ex);
    for (int i = 7; i >= 0; i--)
        cdsh_disposer_run(&k->d[i]);
    cdsh_tools_free(k->tools);
    cdsh_events_free(k->bus);
}

/* ---- a raw stdio session over pipes ------------------------------------------ */

typedef struct raw {
    kernel *k;
    int to_srv[2], from_srv[2];
    pthread_t thr;
    cdsh_cancel *stop;
    char buf[1 << 16];
    size_t len;
} raw;

static void *serve_main(void *arg)
{
    raw *r = arg;
    cdsh_mcp_serve_fds(r->k->server, r->to_srv[0], r->from_srv[1], r->stop, NULL);
    return NULL;
}

static void raw_open(raw *r, kernel *k)
{
    memset(r, 0, sizeof *r);
    r->k = k;
    assert_int_equal(pipe(r->to_srv), 0);
    assert_int_equal(pipe(r->from_srv), 0);
    r->stop = cdsh_cancel_new(NULL);
    pthread_create(&r->thr, NULL, serve_main, r);
}

static void raw_close(raw *r)
{
    close(r->to_srv[1]); /* EOF ends the session */
    pthread_join(r->thr, NULL);
    close(r->to_srv[0]);
    close(r->from_srv[0]);
    close(r->from_srv[1]);
    cdsh_cancel_free(r->stop);
}

static void raw_send(raw *r, const char *line)
{
    size_t n = strlen(line);
    assert_int_equal(write(r->to_srv[1], line, n), (ssize_t)n);
    assert_int_equal(write(r->to_srv[1], "\n", 1), 1);
}

/* Next message from the server within 30 s (owned). */
static json_t *raw_recv(raw *r)
{
    int64_t deadline = cdsh_clock_mono_ms() + cdsh_test_scale_ms(30000);
    for (;;) {
        char *nl = memchr(r->buf, '\n', r->len);
        if (nl) {
            size_t n = (size_t)(nl - r->buf);
            json_t *v = json_loadb(r->buf, n, 0, NULL);
            memmove(r->buf, nl + 1, r->len - n - 1);
            r->len -= n + 1;
            assert_non_null(v);
            return v;
        }
        int64_t left = deadline - cdsh_clock_mono_ms();
        if (left <= 0)
            fail_msg("no message from the server within 30 s");
        struct pollfd p = {.fd = r->from_srv[0], .events = POLLIN};
        if (poll(&p, 1, (int)left) <= 0)
            continue;
        ssize_t got = read(r->from_srv[0], r->buf + r->len, sizeof r->buf - r->len);
        assert_true(got > 0);
        r->len += (size_t)got;
    }
}

/* Next response (skipping notifications, which go to *notes if non-NULL). */
static json_t *raw_response(raw *r, json_t *notes)
{
    for (;;) {
        json_t *m = raw_recv(r);
        if (json_object_get(m, "id"))
            return m;
        if (notes)
            json_array_append(notes, m);
        json_decref(m);
    }
}

static json_t *raw_rpc(raw *r, const char *line)
{
    raw_send(r, line);
    return raw_response(r, NULL);
}

static int64_t err_code(const json_t *m)
{
    return json_integer_value(json_object_get(json_object_get(m, "error"), "code"));
}

static const char *err_msg(const json_t *m)
{
    return json_string_value(json_object_get(json_object_get(m, "error"), "message"));
}

static void raw_init(raw *r)
{
    json_t *m = raw_rpc(r, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                           "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                           "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
    json_t *res = json_object_get(m, "result");
    assert_string_equal(json_string_value(json_object_get(res, "protocolVersion")), "2025-06-18");
    assert_true(json_is_true(json_object_get(
        json_object_get(json_object_get(res, "capabilities"), "tools"), "listChanged")));
    assert_string_equal(json_string_value(json_object_get(res, "instructions")), "test server");
    json_decref(m);
    raw_send(r, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

/* ---- tests ------------------------------------------------------------------- */

static void requests_before_initialize_and_unknown_methods_are_errors(void **state)
{
    (void)state;
    kernel k;
    kernel_init(&k, NULL, 0);
    raw r;
    raw_open(&r, &k);
    json_t *m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
    assert_int_equal(err_code(m), -32600);
    assert_string_equal(err_msg(m), "the session is not initialized: send initialize first");
    json_decref(m);
    m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
    assert_true(json_is_object(json_object_get(m, "result")));
    json_decref(m);
    raw_init(&r);
    m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/list\"}");
    assert_int_equal(err_code(m), -32601);
    assert_string_equal(err_msg(m), "Method not found: resources/list");
    json_decref(m);
    m = raw_rpc(&r, "{this is not json");
    assert_int_equal(err_code(m), -32700);
    assert_true(json_is_null(json_object_get(m, "id")));
    json_decref(m);
    m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\",\"params\":{}}");
    assert_int_equal(err_code(m), -32602);
    json_decref(m);
    m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"logging/setLevel\",\"params\":"
                    "{\"level\":\"debug\"}}");
    assert_true(json_is_object(json_object_get(m, "result")));
    json_decref(m);
    raw_close(&r);
    kernel_deinit(&k);
}

static void unknown_initialize_version_gets_the_latest(void **state)
{
    (void)state;
    kernel k;
    kernel_init(&k, NULL, 0);
    raw r;
    raw_open(&r, &k);
    json_t *m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                            "\"protocolVersion\":\"2030-01-01\",\"capabilities\":{}}}");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(m, "result"), "protocolVersion")),
        "2025-11-25");
    json_decref(m);
    raw_close(&r);
    kernel_deinit(&k);
}

static json_t *exported_output_schema(const char *output_schema, json_t **tool)
{
    json_t *kt = json_pack("{s:s,s:s,s:{s:s}}", "name", "t", "description", "d", "parameters",
                           "type", "object");
    json_t *os = json_loads(output_schema, 0, NULL);
    assert_non_null(os);
    json_object_set_new(kt, "outputSchema", os);
    *tool = cdsh_mcp_export_tool_json(kt);
    /* the kernel's description is not changed by the export */
    json_t *again = json_loads(output_schema, 0, NULL);
    assert_true(json_equal(again, json_object_get(kt, "outputSchema")));
    json_decref(again);
    json_decref(kt);
    assert_non_null(*tool);
    return json_object_get(*tool, "outputSchema");
}

static void export_keeps_object_output_schemas_and_types_a_oneof_of_objects(void **state)
{
    (void)state;
    json_t *tool;
    /* a value-or-refusal oneOf (the xiangqi tools) gains type "object" at its root */
    json_t *os = exported_output_schema(
        "{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"}}},"
        "{\"anyOf\":[{\"type\":\"object\"}]}]}",
        &tool);
    assert_non_null(os);
    assert_string_equal(json_string_value(json_object_get(os, "type")), "object");
    assert_int_equal(json_array_size(json_object_get(os, "oneOf")), 2);
    json_decref(tool);
    /* a plain object schema is kept as it is */
    os = exported_output_schema("{\"type\":\"object\",\"properties\":{}}", &tool);
    assert_string_equal(json_string_value(json_object_get(os, "type")), "object");
    assert_null(json_object_get(os, "oneOf"));
    json_decref(tool);
    /* anything that may be a non-object is not exported */
    const char *dropped[] = {
        "{\"type\":\"string\"}",
        "{\"oneOf\":[{\"type\":\"object\"},{\"type\":\"null\"}]}",
        "{\"anyOf\":[]}",
        "{\"oneOf\":[{\"properties\":{}}]}",
        "{}",
    };
    for (size_t i = 0; i < sizeof dropped / sizeof *dropped; i++) {
        assert_null(exported_output_schema(dropped[i], &tool));
        json_decref(tool);
    }
}

static void tools_list_is_paged_with_opaque_cursors(void **state)
{
    (void)state;
    kernel k;
    kernel_init(&k, NULL, 3);
    raw r;
    raw_open(&r, &k);
    raw_init(&r);
    json_t *m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
    json_t *res = json_object_get(m, "result");
    assert_int_equal(json_array_size(json_object_get(res, "tools")), 3);
    const char *cursor = json_string_value(json_object_get(res, "nextCursor"));
    assert_non_null(cursor);
    json_t *sum = json_array_get(json_object_get(res, "tools"), 1);
    assert_string_equal(json_string_value(json_object_get(sum, "name")), "sum");
    assert_non_null(json_object_get(sum, "outputSchema"));
    assert_null(json_object_get(json_array_get(json_object_get(res, "tools"), 0),
                                "outputSchema")); /* echo returns a string */
    char line[256];
    snprintf(
        line, sizeof line,
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{\"cursor\":\"%s\"}}",
        cursor);
    json_decref(m);
    m = raw_rpc(&r, line);
    res = json_object_get(m, "result");
    assert_int_equal(json_array_size(json_object_get(res, "tools")), 1);
    assert_null(json_object_get(res, "nextCursor"));
    json_decref(m);
    m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":"
                    "{\"cursor\":\"bogus\"}}");
    assert_int_equal(err_code(m), -32602);
    assert_string_equal(err_msg(m), "invalid cursor");
    json_decref(m);
    raw_close(&r);
    kernel_deinit(&k);
}

static void tools_call_maps_results_errors_and_structured_content(void **state)
{
    (void)state;
    kernel k;
    kernel_init(&k, NULL, 0);
    raw r;
    raw_open(&r, &k);
    raw_init(&r);
    json_t *m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
                            "{\"name\":\"sum\",\"arguments\":{\"a\":2,\"b\":40}}}");
    json_t *res = json_object_get(m, "result");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(res, "structuredContent"), "sum")), 42);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(res, "content"), 0), "text")),
                        "{\"sum\":42}");
    assert_null(json_object_get(res, "isError"));
    json_decref(m);
    m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
                    "{\"name\":\"broken\"}}");
    res = json_object_get(m, "result");
    assert_true(json_is_true(json_object_get(res, "isError")));
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(res, "content"), 0), "text")),
                        "Error: broken on purpose");
    json_decref(m);
    /* Argument validation failures are tool errors, not protocol errors. */
    m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":"
                    "{\"name\":\"sum\",\"arguments\":{\"a\":\"x\"}}}");
    assert_true(json_is_true(json_object_get(json_object_get(m, "result"), "isError")));
    json_decref(m);
    m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":"
                    "{\"name\":\"nope\"}}");
    assert_int_equal(err_code(m), -32602);
    assert_string_equal(err_msg(m), "Unknown tool: nope");
    json_decref(m);
    m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":"
                    "{\"name\":\"sum\",\"arguments\":[1]}}");
    assert_int_equal(err_code(m), -32602);
    json_decref(m);
    raw_close(&r);
    kernel_deinit(&k);
}

static void cancellation_stops_the_tool_and_progress_flows(void **state)
{
    (void)state;
    kernel k;
    kernel_init(&k, NULL, 0);
    raw r;
    raw_open(&r, &k);
    raw_init(&r);
    int64_t start = cdsh_clock_mono_ms();
    raw_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":\"w1\",\"method\":\"tools/call\",\"params\":"
                 "{\"name\":\"wait\",\"_meta\":{\"progressToken\":\"pt\"}}}");
    /* Heartbeat progress arrives while the tool runs. */
    json_t *n = raw_recv(&r);
    assert_string_equal(json_string_value(json_object_get(n, "method")), "notifications/progress");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(n, "params"), "progressToken")), "pt");
    json_decref(n);
    raw_send(&r, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
                 "{\"requestId\":\"w1\",\"reason\":\"stop\"}}");
    json_t *m = raw_response(&r, NULL);
    assert_string_equal(json_string_value(json_object_get(m, "id")), "w1");
    assert_true(json_is_true(json_object_get(json_object_get(m, "result"), "isError")));
    assert_true(cdsh_clock_mono_ms() - start < 30000); /* the tool would wait 60 s */
    json_decref(m);
    raw_close(&r);
    kernel_deinit(&k);
}

static void registry_changes_send_list_changed_and_glob_filters(void **state)
{
    (void)state;
    kernel k;
    kernel_init(&k, "[es]*", 0);
    raw r;
    raw_open(&r, &k);
    raw_init(&r);
    json_t *m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
    assert_int_equal(json_array_size(json_object_get(json_object_get(m, "result"), "tools")), 2);
    json_decref(m);
    m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
                    "{\"name\":\"wait\"}}");
    assert_int_equal(err_code(m), -32602); /* filtered out */
    json_decref(m);
    cdsh_disposer_run(&k.d[0]); /* unregister echo */
    json_t *n = raw_recv(&r);
    assert_string_equal(json_string_value(json_object_get(n, "method")),
                        "notifications/tools/list_changed");
    json_decref(n);
    m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}");
    assert_int_equal(json_array_size(json_object_get(json_object_get(m, "result"), "tools")), 1);
    json_decref(m);
    raw_close(&r);
    kernel_deinit(&k);
}

static void stateless_requests_are_served_without_initialize(void **state)
{
    (void)state;
    kernel k;
    kernel_init(&k, NULL, 0);
    raw r;
    raw_open(&r, &k);
    json_t *m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\"}");
    json_t *res = json_object_get(m, "result");
    assert_string_equal(json_string_value(json_object_get(res, "resultType")), "complete");
    assert_int_equal(json_array_size(json_object_get(res, "supportedVersions")), 5);
    json_decref(m);
    m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
                    "\"echo\",\"arguments\":{\"text\":\"x\"},\"_meta\":{\"io.modelcontextprotocol/"
                    "protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/"
                    "clientCapabilities\":{}}}}");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(m, "result"), "resultType")), "complete");
    json_decref(m);
    m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{\"_meta\":"
                    "{\"io.modelcontextprotocol/protocolVersion\":\"2031-01-01\"}}}");
    assert_int_equal(err_code(m), -32022);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(m, "error"), "data"), "requested")),
                        "2031-01-01");
    json_decref(m);
    raw_close(&r);
    kernel_deinit(&k);
}


#define MODERN_META                                                                                \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{}}"

static void modern_results_carry_cache_fields_and_server_info(void **state)
{
    (void)state;
    kernel k;
    kernel_init(&k, NULL, 2);
    raw r;
    raw_open(&r, &k);
    json_t *m =
        raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" MODERN_META
                    "}}");
    json_t *res = json_object_get(m, "result");
    assert_non_null(res);
    /* 2026-07-28 CacheableResult: both required; the tool set may change. */
    assert_true(json_is_integer(json_object_get(res, "ttlMs")));
    assert_int_equal(json_integer_value(json_object_get(res, "ttlMs")), 0);
    assert_string_equal(json_string_value(json_object_get(res, "cacheScope")), "private");
    assert_string_equal(json_string_value(json_object_get(res, "resultType")), "complete");
    assert_string_equal(json_string_value(json_object_get(json_object_get(
                            json_object_get(res, "_meta"), "io.modelcontextprotocol/serverInfo"),
                                                          "name")),
                        "cdsh");
    assert_int_equal(json_array_size(json_object_get(res, "tools")), 2);
    assert_non_null(json_object_get(res, "nextCursor"));
    json_decref(m);
    /* Every 2026-07-28 request declares its client's capabilities. */
    m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{\"_meta\":"
                    "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}");
    assert_int_equal(err_code(m), -32602);
    assert_non_null(strstr(err_msg(m), "clientCapabilities"));
    json_decref(m);
    /* subscriptions/listen is a 2026-07-28 method only. */
    m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"subscriptions/listen\",\"params\":"
                    "{\"notifications\":{\"toolsListChanged\":true}}}");
    assert_int_equal(err_code(m), -32601);
    json_decref(m);
    m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"subscriptions/listen\",\"params\":{" MODERN_META
                    "}}");
    assert_int_equal(err_code(m), -32602);
    json_decref(m);
    raw_close(&r);
    kernel_deinit(&k);
}

static const char *sub_id_of(const json_t *m)
{
    return json_string_value(json_object_get(
        json_object_get(json_object_get(m, "params"), "_meta"), "io.modelcontextprotocol/subscriptionId"));
}

static void subscriptions_listen_carries_list_changed_until_cancelled(void **state)
{
    (void)state;
    kernel k;
    kernel_init(&k, NULL, 0);
    raw r;
    raw_open(&r, &k);
    raw_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":\"L1\",\"method\":\"subscriptions/listen\",\"params\":{"
                 "\"notifications\":{\"toolsListChanged\":true,\"promptsListChanged\":true},"
                 MODERN_META "}}");
    json_t *ack = raw_recv(&r);
    assert_string_equal(json_string_value(json_object_get(ack, "method")),
                        "notifications/subscriptions/acknowledged");
    assert_string_equal(sub_id_of(ack), "L1");
    /* Only what cdsh has is honoured: it has no prompts. */
    json_t *want = json_pack("{s:b}", "toolsListChanged", 1);
    assert_true(json_equal(json_object_get(json_object_get(ack, "params"), "notifications"), want));
    json_decref(want);
    json_decref(ack);
    /* A second subscription without the tools filter hears nothing. */
    raw_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"subscriptions/listen\",\"params\":{"
                 "\"notifications\":{}," MODERN_META "}}");
    ack = raw_recv(&r);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(ack, "params"), "_meta"),
                         "io.modelcontextprotocol/subscriptionId")),
                     7);
    assert_int_equal(json_object_size(json_object_get(json_object_get(ack, "params"), "notifications")), 0);
    json_decref(ack);
    /* The tool set changes: one tagged notification, no unsolicited one (the
     * session never sent initialize). */
    cdsh_disposer_run(&k.d[0]);
    json_t *n = raw_recv(&r);
    assert_string_equal(json_string_value(json_object_get(n, "method")),
                        "notifications/tools/list_changed");
    assert_string_equal(sub_id_of(n), "L1");
    json_decref(n);
    /* The client cancels: the subscription answers its closing result. */
    raw_send(&r, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                 "\"requestId\":\"L1\"}}");
    json_t *m = raw_response(&r, NULL);
    assert_string_equal(json_string_value(json_object_get(m, "id")), "L1");
    json_t *res = json_object_get(m, "result");
    assert_string_equal(json_string_value(json_object_get(res, "resultType")), "complete");
    assert_string_equal(json_string_value(json_object_get(json_object_get(res, "_meta"),
                                                          "io.modelcontextprotocol/subscriptionId")),
                        "L1");
    json_decref(m);
    /* Another change: nobody listens for it any more, so the next message is
     * the answer to this ping. */
    cdsh_disposer_run(&k.d[1]);
    m = raw_rpc(&r, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}");
    assert_int_equal(json_integer_value(json_object_get(m, "id")), 8);
    json_decref(m);
    /* EOF closes the session; the open subscription 7 ends with it. */
    raw_close(&r);
    kernel_deinit(&k);
}

/* ---- HTTP -------------------------------------------------------------------- */

static long http_status(const char *url, const char *method, const char *body,
                        const char *const *headers)
{
    CURL *e = curl_easy_init();
    struct curl_slist *h = NULL;
    for (size_t i = 0; headers && headers[i]; i++)
        h = curl_slist_append(h, headers[i]);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    if (body)
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, fwrite);
    FILE *null = fopen("/dev/null", "w");
    curl_easy_setopt(e, CURLOPT_WRITEDATA, null);
    curl_easy_perform(e);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    fclose(null);
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    return status;
}

static void count_progress(void *arg, double progress, double total, const char *message)
{
    (void)progress, (void)total, (void)message;
    (*(int *)arg)++;
}

typedef struct progress_stop {
    int count;
    cdsh_cancel *tok; /* fired at the second progress notification */
} progress_stop;

static void stop_after_two_progress(void *arg, double progress, double total, const char *message)
{
    (void)progress, (void)total, (void)message;
    progress_stop *ps = arg;
    if (++ps->count == 2)
        cdsh_cancel_fire(ps->tok, "seen enough progress");
}

static void count_changes(void *arg, cdsh_mcp_client *cl, cdsh_mcp_client_event ev)
{
    (void)cl;
    if (ev == CDSH_MCP_EVENT_TOOLS_CHANGED)
        __atomic_add_fetch((int *)arg, 1, __ATOMIC_SEQ_CST);
}

static void cdsh_client_talks_to_cdsh_server_over_http(void **state)
{
    (void)state;
    kernel k;
    kernel_init(&k, NULL, 2);
    cdsh_mcp_http_opts ho = {.token = "s3cret"};
    cdsh_mcp_http *h = cdsh_mcp_http_new(k.server, &ho, NULL);
    assert_int_equal(cdsh_mcp_http_listen(h, 0, NULL), 0);
    char url[80];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/mcp", cdsh_mcp_http_port(h));

    cdsh_mcp_client_opts o = {.name = "self", .url = url};
    cdsh_mcp_client *cl = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_mcp_client_connect(&o, &cl, &err), CDSH_EIO);
    assert_non_null(strstr(err.message, "HTTP 401"));
    o.bearer_token = "s3cret";
    int changed = 0;
    o.on_event = count_changes;
    o.event_arg = &changed;
    assert_int_equal(cdsh_mcp_client_connect(&o, &cl, &err), 0);
    json_t *tools = cdsh_mcp_client_tools_dup(cl);
    assert_int_equal(json_array_size(tools), 4); /* two pages of two */
    json_decref(tools);
    /* list_changed reaches the client over its GET stream; it re-lists. */
    reg(&k, 4, "late", echo_body, "{\"type\":\"object\"}", "{\"type\":\"string\"}");
    while (__atomic_load_n(&changed, __ATOMIC_SEQ_CST) == 0) /* CTest's timeout bounds it */
        usleep(10000);
    assert_true(__atomic_load_n(&changed, __ATOMIC_SEQ_CST) >= 1);
    tools = cdsh_mcp_client_tools_dup(cl);
    assert_int_equal(json_array_size(tools), 5);
    json_decref(tools);
    json_t *args = json_pack("{s:i,s:i}", "a", 1, "b", 2);
    json_t *res = NULL;
    assert_int_equal(cdsh_mcp_client_call(cl, "sum", args, NULL, &res, &err), 0);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(res, "structuredContent"), "sum")), 3);
    json_decref(res);
    json_decref(args);
    /* Progress arrives over the SSE answer (the call runs until the second
     * heartbeat cancels it: no race against a time budget)... */
    progress_stop ps = {.count = 0, .tok = cdsh_cancel_new(NULL)};
    cdsh_mcp_call_opts pco = {.timeout_ms = -1,
                              .cancel = ps.tok,
                              .on_progress = stop_after_two_progress,
                              .progress_arg = &ps};
    assert_int_equal(cdsh_mcp_client_call(cl, "wait", NULL, &pco, &res, &err), CDSH_ECANCELED);
    assert_true(ps.count >= 2);
    cdsh_cancel_free(ps.tok);
    /* ...and the timeout cancels a call (the tool would wait 60 s). */
    int count = 0;
    cdsh_mcp_call_opts co = {
        .timeout_ms = 450, .on_progress = count_progress, .progress_arg = &count};
    int64_t start = cdsh_clock_mono_ms();
    assert_int_equal(cdsh_mcp_client_call(cl, "wait", NULL, &co, &res, &err), CDSH_ETIMEDOUT);
    assert_true(cdsh_clock_mono_ms() - start < 30000);
    cdsh_mcp_client_free(cl);

    const char *bad_origin[] = {"Authorization: Bearer s3cret", "Origin: http://evil.example",
                                "Content-Type: application/json", NULL};
    assert_int_equal(http_status(url, "POST", "{}", bad_origin), 403);
    const char *bad_host[] = {"Authorization: Bearer s3cret", "Host: evil.example", NULL};
    assert_int_equal(http_status(url, "POST", "{}", bad_host), 403);
    const char *no_session[] = {"Authorization: Bearer s3cret", "Content-Type: application/json",
                                NULL};
    assert_int_equal(http_status(url, "POST",
                                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}",
                                 no_session),
                     400);
    const char *unknown_session[] = {"Authorization: Bearer s3cret", "Mcp-Session-Id: nope",
                                     "Content-Type: application/json", NULL};
    assert_int_equal(http_status(url, "POST",
                                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}",
                                 unknown_session),
                     404);
    const char *bad_version[] = {"Authorization: Bearer s3cret", "MCP-Protocol-Version: 1999-01-01",
                                 NULL};
    assert_int_equal(http_status(url, "POST", "{}", bad_version), 400);
    assert_int_equal(http_status(url, "POST", "not json", no_session), 400);
    assert_int_equal(http_status(url, "PUT", NULL, no_session), 405);
    cdsh_mcp_http_free(h);
    kernel_deinit(&k);
}


/* POSTs body with headers; returns the status, the body in *out (owned). */
static long http_post(const char *url, const char *body, const char *const *headers, char **out)
{
    CURL *e = curl_easy_init();
    struct curl_slist *h = NULL;
    for (size_t i = 0; headers && headers[i]; i++)
        h = curl_slist_append(h, headers[i]);
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, fwrite);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, mem);
    curl_easy_perform(e);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    fclose(mem);
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    *out = buf;
    return status;
}

static int64_t body_code(const char *body)
{
    json_t *v = json_loads(body, 0, NULL);
    int64_t c = err_code(v);
    json_decref(v);
    return c;
}

static void modern_http_requests_mirror_their_headers(void **state)
{
    (void)state;
    kernel k;
    kernel_init(&k, NULL, 0);
    cdsh_mcp_http *h = cdsh_mcp_http_new(k.server, NULL, NULL);
    assert_int_equal(cdsh_mcp_http_listen(h, 0, NULL), 0);
    char url[80];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/mcp", cdsh_mcp_http_port(h));
    const char *call = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
                       "\"echo\",\"arguments\":{\"text\":\"hi\"}," MODERN_META "}}";
    const char *good[] = {"Content-Type: application/json", "Accept: application/json",
                          "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call",
                          "Mcp-Name: echo", NULL};
    char *body = NULL;
    assert_int_equal(http_post(url, call, good, &body), 200);
    assert_non_null(strstr(body, "\"resultType\":\"complete\""));
    free(body);
    /* The name may come base64-encoded ("=?base64?ZWNobw==?=" is "echo"). */
    const char *b64[] = {"Content-Type: application/json", "MCP-Protocol-Version: 2026-07-28",
                         "Mcp-Method: tools/call", "Mcp-Name: =?base64?ZWNobw==?=", NULL};
    assert_int_equal(http_post(url, call, b64, &body), 200);
    free(body);
    const char *wrong_name[] = {"Content-Type: application/json",
                                "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call",
                                "Mcp-Name: sum", NULL};
    assert_int_equal(http_post(url, call, wrong_name, &body), 400);
    assert_int_equal(body_code(body), -32020);
    free(body);
    const char *no_method[] = {"Content-Type: application/json",
                               "MCP-Protocol-Version: 2026-07-28", "Mcp-Name: echo", NULL};
    assert_int_equal(http_post(url, call, no_method, &body), 400);
    assert_int_equal(body_code(body), -32020);
    free(body);
    const char *wrong_version[] = {"Content-Type: application/json",
                                   "MCP-Protocol-Version: 2025-11-25", "Mcp-Method: tools/call",
                                   "Mcp-Name: echo", NULL};
    assert_int_equal(http_post(url, call, wrong_version, &body), 400);
    assert_int_equal(body_code(body), -32020);
    free(body);
    /* An unknown method is 404 with -32601 in this revision. */
    const char *unknown = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"prompts/list\",\"params\":{" MODERN_META "}}";
    const char *uh[] = {"Content-Type: application/json", "MCP-Protocol-Version: 2026-07-28",
                        "Mcp-Method: prompts/list", NULL};
    assert_int_equal(http_post(url, unknown, uh, &body), 404);
    assert_int_equal(body_code(body), -32601);
    free(body);
    /* listen needs an event stream to live on. */
    const char *listen = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"subscriptions/listen\",\"params\":"
                         "{\"notifications\":{\"toolsListChanged\":true}," MODERN_META "}}";
    const char *lh[] = {"Content-Type: application/json", "Accept: application/json",
                        "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: subscriptions/listen",
                        NULL};
    assert_int_equal(http_post(url, listen, lh, &body), 406);
    free(body);
    cdsh_mcp_http_free(h);
    kernel_deinit(&k);
}

/* ---- HTTP server limits and shutdown ------------------------------------------ */

static int tcp_open(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

/* Reads into *acc until `marker` appears (true) or EOF / 30 s (false). */
static bool read_until(int fd, cdsh_strbuf *acc, const char *marker)
{
    int64_t deadline = cdsh_clock_mono_ms() + 30000;
    while (!marker || !acc->data || !strstr(acc->data, marker)) {
        int64_t left = deadline - cdsh_clock_mono_ms();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            return false;
        char buf[4096];
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0)
            return false;
        cdsh_strbuf_append(acc, buf, (size_t)n);
    }
    return true;
}

static int count_threads(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static void http_request(int fd, uint16_t port, const char *method, const char *extra,
                         const char *body)
{
    char head[1024];
    int n = snprintf(head, sizeof head,
                     "%s /mcp HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nContent-Type: application/json\r\n"
                     "Accept: application/json, text/event-stream\r\n%sContent-Length: %zu\r\n\r\n",
                     method, port, extra, body ? strlen(body) : 0);
    assert_int_equal(write(fd, head, (size_t)n), n);
    if (body)
        assert_int_equal(write(fd, body, strlen(body)), (ssize_t)strlen(body));
}

static void http_shutdown_ends_open_streams_at_once(void **state)
{
    (void)state;
    kernel k;
    kernel_init(&k, NULL, 0);
    cdsh_mcp_http *h = cdsh_mcp_http_new(k.server, NULL, NULL);
    assert_int_equal(cdsh_mcp_http_listen(h, 0, NULL), 0);
    uint16_t port = cdsh_mcp_http_port(h);
    /* A legacy session with its GET stream open. */
    int fi = tcp_open(port);
    http_request(fi, port, "POST", "",
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                 "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{"
                 "\"name\":\"t\",\"version\":\"1\"}}}");
    cdsh_strbuf acc;
    cdsh_strbuf_init(&acc);
    assert_true(read_until(fi, &acc, "\"result\""));
    const char *sid = strcasestr(acc.data, "Mcp-Session-Id: ");
    assert_non_null(sid);
    char hdr[128];
    snprintf(hdr, sizeof hdr, "Mcp-Session-Id: %.32s\r\n", sid + 16);
    close(fi);
    int fg = tcp_open(port);
    http_request(fg, port, "GET", hdr, NULL);
    cdsh_strbuf get;
    cdsh_strbuf_init(&get);
    assert_true(read_until(fg, &get, "text/event-stream"));
    /* A 2026-07-28 subscription, acknowledged. */
    int fl = tcp_open(port);
    http_request(fl, port, "POST",
                 "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n",
                 "{\"jsonrpc\":\"2.0\",\"id\":\"sub-1\",\"method\":\"subscriptions/listen\","
                 "\"params\":{\"notifications\":{\"toolsListChanged\":true}," MODERN_META "}}");
    cdsh_strbuf lis;
    cdsh_strbuf_init(&lis);
    assert_true(read_until(fl, &lis, "notifications/subscriptions/acknowledged"));
    assert_non_null(strstr(lis.data, "\"io.modelcontextprotocol/subscriptionId\":\"sub-1\""));
    /* A client that drops its stream: its thread is not kept. */
    int fd2 = tcp_open(port);
    http_request(fd2, port, "GET", hdr, NULL);
    cdsh_strbuf drop;
    cdsh_strbuf_init(&drop);
    assert_true(read_until(fd2, &drop, "text/event-stream"));
    close(fd2);
    int64_t t0 = cdsh_clock_mono_ms();
    cdsh_mcp_http_free(h);
    print_message("shutdown with 2 open streams took %lld ms\n",
                  (long long)(cdsh_clock_mono_ms() - t0));
    /* Both streams end; the subscription with its closing result. Neither
     * needed a keep-alive to notice (the old code only saw the end when its
     * 15 s keep-alive timer fired). */
    assert_false(read_until(fg, &get, NULL));
    assert_false(read_until(fl, &lis, NULL));
    assert_null(strstr(get.data, "keep-alive"));
    assert_null(strstr(lis.data, "keep-alive"));
    assert_non_null(strstr(lis.data, "\"id\":\"sub-1\",\"result\""));
    assert_non_null(strstr(lis.data, "\"resultType\":\"complete\""));
    close(fg);
    close(fl);
    cdsh_strbuf_deinit(&acc);
    cdsh_strbuf_deinit(&get);
    cdsh_strbuf_deinit(&lis);
    cdsh_strbuf_deinit(&drop);
    kernel_deinit(&k);
}

static void http_caps_connections_and_closes_idle_ones(void **state)
{
    (void)state;
    kernel k;
    kernel_init(&k, NULL, 0);
    cdsh_mcp_http_opts o = {.idle_timeout_s = 1, .max_connections = 8};
    cdsh_mcp_http *h = cdsh_mcp_http_new(k.server, &o, NULL);
    assert_int_equal(cdsh_mcp_http_listen(h, 0, NULL), 0);
    uint16_t port = cdsh_mcp_http_port(h);
    int base = count_threads();
    enum { N = 30 };
    int fds[N];
    /* Half-open connections that never finish their request (no token). */
    for (int i = 0; i < N; i++) {
        fds[i] = tcp_open(port);
        if (i % 2)
            assert_int_equal(write(fds[i], "POST /mcp HTTP/1.1\r\nHost: 1", 28), 28);
    }
    int most = 0, closed = 0;
    int64_t deadline = cdsh_clock_mono_ms() + 60000;
    while (closed < N && cdsh_clock_mono_ms() < deadline) {
        int t = count_threads() - base;
        most = t > most ? t : most;
        struct pollfd p[N];
        for (int i = 0; i < N; i++)
            p[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
        if (poll(p, N, 50) <= 0)
            continue;
        for (int i = 0; i < N; i++) {
            char c;
            if (fds[i] >= 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
                read(fds[i], &c, 1) <= 0) {
                close(fds[i]);
                fds[i] = -1;
                closed++;
            }
        }
    }
    print_message("%d connections: at most %d server threads, %d closed by the server\n", N,
                  most, closed);
    /* Every connection was closed by the server (over the cap at once, idle
     * ones after a second), and never more than the cap held a thread. */
    assert_int_equal(closed, N);
    assert_true(most <= 8);
    /* The server still serves. */
    char url[80], *body = NULL;
    snprintf(url, sizeof url, "http://127.0.0.1:%u/mcp", port);
    const char *hd[] = {"Content-Type: application/json", NULL};
    assert_int_equal(http_post(url, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\"}",
                               hd, &body),
                     200);
    free(body);
    cdsh_mcp_http_free(h);
    kernel_deinit(&k);
}

static void tool_calls_share_a_bounded_pool_of_threads(void **state)
{
    (void)state;
    kernel k;
    kernel_init(&k, NULL, 0);
    /* The same kernel behind a server with a pool of 3 workers. */
    cdsh_mcp_export_attach(k.ex, NULL);
    cdsh_mcp_server_free(k.server);
    cdsh_mcp_provider p;
    cdsh_mcp_export_provider(k.ex, &p);
    cdsh_mcp_server_opts so = {.instructions = "test server", .workers = 3};
    k.server = cdsh_mcp_server_new(&p, &so, NULL);
    cdsh_mcp_export_attach(k.ex, k.server);
    raw r;
    raw_open(&r, &k);
    raw_init(&r);
    int base = count_threads();
    enum { N = 8 };
    char line[256];
    for (int i = 1; i <= N; i++) {
        snprintf(line, sizeof line,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"wait\",\"_meta\":{\"progressToken\":%d}}}",
                 i, i);
        raw_send(&r, line);
    }
    /* Three calls start (progress 0) and tick; the other five wait. */
    int started = 0, ticks = 0;
    while (started < 3 || ticks < 3) {
        json_t *n = raw_recv(&r);
        json_t *pr = json_object_get(json_object_get(n, "params"), "progress");
        if (pr && json_number_value(pr) == 0)
            started++;
        else if (pr)
            ticks++;
        json_decref(n);
    }
    int threads = count_threads() - base;
    print_message("%d tool calls in flight: %d threads more than before (pool of 3)\n", N,
                  threads);
    /* Three pool workers and the one heartbeat ticker — not a thread per
     * call plus one per heartbeat. */
    assert_true(threads <= 4);
    assert_int_equal(started, 3);
    /* Cancel every call, running or queued: each answers. */
    for (int i = 1; i <= N; i++) {
        snprintf(line, sizeof line,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                 "\"requestId\":%d}}",
                 i);
        raw_send(&r, line);
    }
    for (int i = 0; i < N; i++) {
        json_t *m = raw_response(&r, NULL);
        assert_true(json_is_true(json_object_get(json_object_get(m, "result"), "isError")));
        json_decref(m);
    }
    raw_close(&r);
    kernel_deinit(&k);
}

static void web_serves_mcp_at_slash_mcp_behind_its_token(void **state)
{
    (void)state;
    kernel k;
    kernel_init(&k, NULL, 0);
    cdsh_mcp_http *h = cdsh_mcp_http_new(k.server, NULL, NULL);
    cdsh_web_options wo = {.port = 0, .token = "webtok", .mcp = h};
    cdsh_web *web = NULL;
    assert_int_equal(cdsh_web_start(&wo, &web, NULL), 0);
    char url[80];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/mcp", cdsh_web_port(web));
    cdsh_mcp_client_opts o = {.name = "web", .url = url};
    cdsh_mcp_client *cl = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_mcp_client_connect(&o, &cl, &err), CDSH_EIO);
    assert_non_null(strstr(err.message, "HTTP 401"));
    o.bearer_token = "webtok";
    assert_int_equal(cdsh_mcp_client_connect(&o, &cl, &err), 0);
    json_t *tools = cdsh_mcp_client_tools_dup(cl);
    assert_int_equal(json_array_size(tools), 4);
    json_decref(tools);
    cdsh_mcp_client_free(cl);
    cdsh_web_stop(web);
    cdsh_mcp_http_free(h);
    kernel_deinit(&k);
}

static void cdsh_client_talks_to_cdsh_mcp_over_stdio(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    const char *argv[] = {CDSH_BINARY, "mcp", "--fixture", NULL};
    cdsh_mcp_client_opts o = {.name = "cdsh", .argv = argv};
    cdsh_mcp_client *cl = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_mcp_client_connect(&o, &cl, &err), 0);
    json_t *args = json_pack("{s:s}", "text", "round trip");
    json_t *res = NULL;
    assert_int_equal(cdsh_mcp_client_call(cl, "echo", args, NULL, &res, &err), 0);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(res, "content"), 0), "text")),
                        "round trip");
    json_decref(res);
    json_decref(args);
    assert_int_equal(cdsh_mcp_client_call(cl, "fail", NULL, NULL, &res, &err), 0);
    assert_true(json_is_true(json_object_get(res, "isError")));
    json_decref(res);
    cdsh_mcp_client_free(cl);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(requests_before_initialize_and_unknown_methods_are_errors),
        cmocka_unit_test(unknown_initialize_version_gets_the_latest),
        cmocka_unit_test(export_keeps_object_output_schemas_and_types_a_oneof_of_objects),
        cmocka_unit_test(tools_list_is_paged_with_opaque_cursors),
        cmocka_unit_test(tools_call_maps_results_errors_and_structured_content),
        cmocka_unit_test(cancellation_stops_the_tool_and_progress_flows),
        cmocka_unit_test(registry_changes_send_list_changed_and_glob_filters),
        cmocka_unit_test(stateless_requests_are_served_without_initialize),
        cmocka_unit_test(modern_results_carry_cache_fields_and_server_info),
        cmocka_unit_test(subscriptions_listen_carries_list_changed_until_cancelled),
        cmocka_unit_test(cdsh_client_talks_to_cdsh_server_over_http),
        cmocka_unit_test(modern_http_requests_mirror_their_headers),
        cmocka_unit_test(http_shutdown_ends_open_streams_at_once),
        cmocka_unit_test(http_caps_connections_and_closes_idle_ones),
        cmocka_unit_test(tool_calls_share_a_bounded_pool_of_threads),
        cmocka_unit_test(web_serves_mcp_at_slash_mcp_behind_its_token),
        cmocka_unit_test(cdsh_client_talks_to_cdsh_mcp_over_stdio),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
