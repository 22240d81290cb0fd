/* test_ops.c — operations tables (host/ops.h): registration builds exactly
 * the flagged surfaces, malformed tables are refused with their message and
 * fail the plugin, unloading removes every surface, and a tool, the RPC
 * endpoint and the slash subcommand of one row run the same handler with the
 * same result. */
#include "support/testkit.h"

#include <string.h>

#include "host/dispatch.h"
#include "host/host.h"
#include "host/ops.h"

/* ---- a small plugin: a counter with three rows ---------------------------------- */

typedef struct demo {
    long long total;
    int calls;
    unsigned last_surface;
    int released;
} demo;

static demo the_demo;

static int add_op(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err)
{
    demo *d = ud;
    json_int_t n = json_integer_value(json_object_get(call->args, "n"));
    if (n > 100)
        return cdsh_error_set(err, CDSH_EINVAL, "too-big", "n must be at most 100, not %lld",
                              (long long)n);
    d->calls++;
    d->last_surface = call->surface;
    d->total += n;
    *value = json_pack("{s:I,s:I}", "added", n, "total", (json_int_t)d->total);
    return 0;
}

static int peek_op(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err)
{
    (void)err;
    demo *d = ud;
    d->calls++;
    d->last_surface = call->surface;
    *value = json_pack("{s:I}", "total", (json_int_t)d->total);
    return 0;
}

static int wrong_shape_op(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err)
{
    (void)ud, (void)call, (void)err;
    *value = json_string("not an object");
    return 0;
}

static int parse_add(void *ud, const char *rest, json_t **args, cdsh_error *err)
{
    (void)ud;
    char *end = NULL;
    long long n = rest ? strtoll(rest, &end, 10) : 0;
    if (!rest || !*rest || *end)
        return cdsh_error_set(err, CDSH_EINVAL, "usage", "usage: /demo add <n>");
    *args = json_pack("{s:I}", "n", (json_int_t)n);
    return 0;
}

#define ADD_ARGS                                                                                   \
    "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}},\"required\":[\"n\"]}"
#define TOTAL_RESULT                                                                               \
    "{\"type\":\"object\",\"properties\":{\"total\":{\"type\":\"integer\"}},\"required\":["        \
    "\"total\"]}"

static const cdsh_op demo_ops[] = {
    {.name = "add",
     .description = "Add n to the counter.",
     .args_schema = ADD_ARGS,
     .result_schema = TOTAL_RESULT,
     .handler = add_op,
     .surfaces = CDSH_OP_TOOL | CDSH_OP_RPC | CDSH_OP_COMMAND,
     .parse = parse_add},
    {.name = "peek",
     .description = "Read the counter.",
     .args_schema = "{\"type\":\"object\"}",
     .result_schema = TOTAL_RESULT,
     .handler = peek_op,
     .surfaces = CDSH_OP_RPC | CDSH_OP_COMMAND,
     .flags = CDSH_OP_READ},
    {.name = "secret",
     .description = "Read the counter (model only).",
     .args_schema = "{\"type\":\"object\"}",
     .result_schema = TOTAL_RESULT,
     .handler = peek_op,
     .surfaces = CDSH_OP_TOOL,
     .flags = CDSH_OP_READ},
    {.name = "broken",
     .args_schema = "{\"type\":\"object\"}",
     .result_schema = "{\"type\":\"object\"}",
     .handler = wrong_shape_op,
     .surfaces = CDSH_OP_RPC | CDSH_OP_COMMAND},
};

static const cdsh_ops_table demo_table = {
    .plugin = "demo",
    .ops = demo_ops,
    .n_ops = sizeof demo_ops / sizeof *demo_ops,
    .tool_prefix = "demo_",
    .tool_error = "DemoError",
    .rpc_channel = "/demo",
    .command = "demo",
    .command_description = "the demo counter",
    .command_default = "peek",
    .command_usage = "usage: /demo add <n> | peek",
};

static void release_demo(void *ud)
{
    ((demo *)ud)->released++;
}

static const cdsh_ops_table *table_in_use = &demo_table;

static int demo_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    return cdsh_ops_register_table(ctx, table_in_use, &the_demo, release_demo, err);
}

static const cdsh_plugin_def demo_plugin = {
    .name = "demo",
    .description = "operations table demo",
    .enabled_by_default = true,
    .apply = demo_apply,
};

static int setup(void **state)
{
    memset(&the_demo, 0, sizeof the_demo);
    table_in_use = &demo_table;
    *state = cdsh_host_new();
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    cdsh_host_free(*state);
    return 0;
}

static cdsh_toolresult *tool_call(cdsh_host *h, const char *name, json_t *args_take)
{
    cdsh_dispatch_input in = {.call_id = "c1", .name = name, .args = args_take};
    cdsh_toolresult *r = cdsh_dispatch_execute(cdsh_host_tools(h), &in);
    json_decref(args_take);
    assert_non_null(r);
    return r;
}

static json_t *rpc(cdsh_host *h, const char *endpoint, json_t *payload_take)
{
    json_t *r = cdsh_rpc_call(cdsh_host_rpc(h), "/demo", endpoint, payload_take, NULL);
    json_decref(payload_take);
    assert_non_null(r);
    return r;
}

static const char *rpc_code(const json_t *r)
{
    assert_false(json_is_true(json_object_get(r, "ok")));
    return json_string_value(json_object_get(json_object_get(r, "error"), "code"));
}

static const char *rpc_message(const json_t *r)
{
    return json_string_value(json_object_get(json_object_get(r, "error"), "message"));
}

/* Runs a slash line; returns the kind and copies the text. */
static int command(cdsh_host *h, const char *line, char *text, size_t cap)
{
    cdsh_command_outcome out;
    cdsh_error err = {0};
    int rc = cdsh_commands_execute(cdsh_host_commands(h), NULL, line, NULL, NULL, &out, &err);
    assert_int_equal(rc, 1);
    snprintf(text, cap, "%s", out.text ? out.text : "");
    int kind = (int)out.kind;
    cdsh_commands_outcome_clear(&out);
    return kind;
}

static bool json_array_has(const json_t *a, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
        if (strcmp(json_string_value(v), s) == 0)
            return true;
    return false;
}

/* ---- tests -------------------------------------------------------------------------- */

static void registration_builds_exactly_the_flagged_surfaces(void **state)
{
    cdsh_host *h = *state;
    assert_int_equal(cdsh_plugin_load(h, &demo_plugin, NULL, NULL, NULL), 0);
    json_t *names = cdsh_tools_names(cdsh_host_tools(h), NULL);
    assert_int_equal(json_array_size(names), 2);
    assert_true(json_array_has(names, "demo_add"));
    assert_true(json_array_has(names, "demo_secret"));
    json_decref(names);
    /* the read flag makes the tool parallel */
    assert_true(cdsh_tools_is_parallel(cdsh_host_tools(h), NULL, "demo_secret", NULL));
    json_t *one = json_pack("{s:i}", "n", 1);
    assert_false(cdsh_tools_is_parallel(cdsh_host_tools(h), NULL, "demo_add", one));
    json_decref(one);
    /* the tool's schemas are the row's */
    json_t *info = cdsh_tools_info_dup(cdsh_host_tools(h), NULL, "demo_add");
    assert_string_equal(json_string_value(json_object_get(info, "description")),
                        "Add n to the counter.");
    json_t *want = json_loads(ADD_ARGS, 0, NULL);
    assert_true(json_equal(json_object_get(info, "parameters"), want));
    json_decref(want);
    json_decref(info);

    json_t *channels = cdsh_rpc_channels(cdsh_host_rpc(h));
    assert_true(json_array_has(channels, "/demo"));
    json_decref(channels);
    json_t *r = rpc(h, "secret", NULL); /* a tool-only row is no endpoint */
    assert_string_equal(rpc_code(r), "not-found");
    assert_string_equal(rpc_message(r), "no operation \"secret\" on /demo");
    json_decref(r);

    json_t *cmds = cdsh_commands_list(cdsh_host_commands(h), NULL);
    assert_int_equal(json_array_size(cmds), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(cmds, 0), "name")),
                        "demo");
    json_decref(cmds);
    char text[256];
    assert_int_equal(command(h, "/demo secret", text, sizeof text), CDSH_COMMAND_ERROR);
    assert_string_equal(text, "usage: /demo add <n> | peek");
    assert_int_equal(the_demo.calls, 0);
}

static void tool_rpc_and_command_run_one_handler_with_one_result(void **state)
{
    cdsh_host *h = *state;
    assert_int_equal(cdsh_plugin_load(h, &demo_plugin, NULL, NULL, NULL), 0);

    cdsh_toolresult *t = tool_call(h, "demo_add", json_pack("{s:i}", "n", 2));
    assert_false(t->is_error);
    assert_int_equal(the_demo.last_surface, CDSH_OP_TOOL);
    json_t *from_tool = json_incref(t->value);
    cdsh_toolresult_free(t);

    json_t *r = rpc(h, "add", json_pack("{s:i}", "n", 2));
    assert_true(json_is_true(json_object_get(r, "ok")));
    assert_int_equal(the_demo.last_surface, CDSH_OP_RPC);
    json_t *from_rpc = json_object_get(r, "value");

    char text[256];
    assert_int_equal(command(h, "/demo add 2", text, sizeof text), CDSH_COMMAND_SUCCESS);
    assert_int_equal(the_demo.last_surface, CDSH_OP_COMMAND);
    assert_int_equal(the_demo.calls, 3);

    /* same handler, same shape: only the running total differs */
    assert_int_equal(json_integer_value(json_object_get(from_tool, "added")), 2);
    assert_int_equal(json_integer_value(json_object_get(from_tool, "total")), 2);
    assert_int_equal(json_integer_value(json_object_get(from_rpc, "added")), 2);
    assert_int_equal(json_integer_value(json_object_get(from_rpc, "total")), 4);
    assert_string_equal(text, "{\"added\":2,\"total\":6}");
    json_decref(from_tool);
    json_decref(r);

    /* the default subcommand and an in-process call see the same state */
    assert_int_equal(command(h, "/demo", text, sizeof text), CDSH_COMMAND_SUCCESS);
    assert_string_equal(text, "{\"total\":6}");
    r = rpc(h, "peek", NULL);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "value"), "total")), 6);
    json_decref(r);
}

static void handler_failures_reach_each_surface_in_its_form(void **state)
{
    cdsh_host *h = *state;
    assert_int_equal(cdsh_plugin_load(h, &demo_plugin, NULL, NULL, NULL), 0);
    cdsh_toolresult *t = tool_call(h, "demo_add", json_pack("{s:i}", "n", 101));
    assert_true(t->is_error);
    assert_string_equal(t->error_name, "DemoError");
    assert_string_equal(t->error_code, "too-big");
    assert_string_equal(t->error_message, "n must be at most 100, not 101");
    cdsh_toolresult_free(t);
    /* the registry validates tool arguments against the row's schema */
    t = tool_call(h, "demo_add", json_pack("{s:s}", "n", "two"));
    assert_true(t->is_error);
    assert_string_equal(t->error_code, CDSH_TOOL_INVALID_ARGS);
    cdsh_toolresult_free(t);

    json_t *r = rpc(h, "add", json_pack("{s:i}", "n", 101));
    assert_string_equal(rpc_code(r), "too-big");
    assert_string_equal(rpc_message(r), "n must be at most 100, not 101");
    json_decref(r);
    r = rpc(h, "add", json_string("x"));
    assert_string_equal(rpc_code(r), "bad-request");
    assert_string_equal(rpc_message(r), "payload must be an object");
    json_decref(r);

    char text[256];
    assert_int_equal(command(h, "/demo add 101", text, sizeof text), CDSH_COMMAND_ERROR);
    assert_string_equal(text, "n must be at most 100, not 101");
    assert_int_equal(command(h, "/demo add two", text, sizeof text), CDSH_COMMAND_ERROR);
    assert_string_equal(text, "usage: /demo add <n>");
    assert_int_equal(command(h, "/demo nope", text, sizeof text), CDSH_COMMAND_ERROR);
    assert_string_equal(text, "usage: /demo add <n> | peek");
    assert_int_equal(the_demo.calls, 0);
}

static void results_outside_the_shape_are_refused(void **state)
{
    cdsh_host *h = *state;
    assert_int_equal(cdsh_plugin_load(h, &demo_plugin, NULL, NULL, NULL), 0);
    json_t *r = rpc(h, "broken", NULL);
    assert_string_equal(rpc_code(r), "invalid-result");
    assert_non_null(strstr(rpc_message(r), "result of \"broken\" does not match its shape: "));
    json_decref(r);
    char text[512];
    assert_int_equal(command(h, "/demo broken", text, sizeof text), CDSH_COMMAND_ERROR);
    assert_non_null(strstr(text, "result of \"broken\" does not match its shape"));
}

static void the_rpc_channel_describes_its_rows(void **state)
{
    cdsh_host *h = *state;
    assert_int_equal(cdsh_plugin_load(h, &demo_plugin, NULL, NULL, NULL), 0);
    json_t *r = rpc(h, "$ops", NULL);
    json_t *rows = json_object_get(r, "value");
    assert_int_equal(json_array_size(rows), 3); /* add, peek, broken: not the tool-only row */
    json_t *add = json_array_get(rows, 0);
    assert_string_equal(json_string_value(json_object_get(add, "name")), "add");
    json_t *want = json_loads(ADD_ARGS, 0, NULL);
    assert_true(json_equal(json_object_get(add, "args"), want));
    json_decref(want);
    assert_int_equal(json_array_size(json_object_get(add, "surfaces")), 3);
    assert_true(json_is_true(json_object_get(json_array_get(rows, 1), "read")));
    json_decref(r);
}

static void unload_removes_every_surface_and_releases_once(void **state)
{
    cdsh_host *h = *state;
    size_t tools0 = cdsh_tools_count(cdsh_host_tools(h));
    cdsh_plugin *pl = NULL;
    for (int round = 0; round < 2; round++) {
        assert_int_equal(cdsh_plugin_load(h, &demo_plugin, NULL, &pl, NULL), 0);
        assert_int_equal(cdsh_tools_count(cdsh_host_tools(h)), tools0 + 2);
        assert_int_equal(cdsh_rpc_count(cdsh_host_rpc(h)), 1);
        assert_int_equal(cdsh_commands_count(cdsh_host_commands(h)), 1);
        assert_int_equal(the_demo.released, round);
        cdsh_plugin_unload(pl);
        assert_int_equal(cdsh_tools_count(cdsh_host_tools(h)), tools0);
        assert_int_equal(cdsh_rpc_count(cdsh_host_rpc(h)), 0);
        assert_int_equal(cdsh_commands_count(cdsh_host_commands(h)), 0);
        assert_int_equal(cdsh_plugin_effect_count(pl), 0);
        assert_int_equal(the_demo.released, round + 1);
    }
}

/* ---- refusals ---------------------------------------------------------------------- */

static void expect_refusal(const cdsh_op *rows, size_t n, const cdsh_ops_table *base,
                           const char *message)
{
    cdsh_ops_table t = *base;
    t.ops = rows;
    t.n_ops = n;
    demo d = {0};
    cdsh_ops *ops = (cdsh_ops *)1;
    cdsh_error err = {0};
    int rc = cdsh_ops_new(&t, &d, release_demo, &ops, &err);
    assert_int_equal(rc, CDSH_EINVAL);
    assert_null(ops);
    assert_string_equal(err.code, "INVALID_OPS_TABLE");
    if (strcmp(err.message, message) != 0)
        fail_msg("expected \"%s\", got \"%s\"", message, err.message);
    assert_int_equal(d.released, 1); /* ud is released on refusal */
}

#define OBJ "{\"type\":\"object\"}"
#define ROW(nm, surf)                                                                              \
    {                                                                                              \
        .name = nm, .description = "d", .args_schema = OBJ, .result_schema = OBJ,                  \
        .handler = peek_op, .surfaces = surf                                                       \
    }

static void malformed_tables_are_refused_with_a_message(void **state)
{
    (void)state;
    const char *pre = "operations table of \"demo\": ";
    char want[256];
    cdsh_ops_table plain = demo_table;
    plain.command_default = NULL;
#define EXPECT(rows, base, msg)                                                                    \
    do {                                                                                           \
        snprintf(want, sizeof want, "%s%s", pre, msg);                                             \
        expect_refusal(rows, sizeof rows / sizeof *rows, base, want);                              \
    } while (0)

    cdsh_op dup[] = {ROW("a", CDSH_OP_RPC), ROW("b", CDSH_OP_RPC), ROW("a", CDSH_OP_TOOL)};
    EXPECT(dup, &plain, "row 2 (\"a\"): duplicate name");
    cdsh_op badname[] = {ROW("a-b", CDSH_OP_RPC)};
    EXPECT(badname, &plain, "row 0 (\"a-b\"): the name must match ^[A-Za-z][A-Za-z0-9_]*$");
    cdsh_op noname[] = {ROW(NULL, CDSH_OP_RPC)};
    EXPECT(noname, &plain, "row 0 (\"\"): the name must match ^[A-Za-z][A-Za-z0-9_]*$");
    cdsh_op nohandler[] = {ROW("a", CDSH_OP_RPC)};
    nohandler[0].handler = NULL;
    EXPECT(nohandler, &plain, "row 0 (\"a\"): no handler");
    cdsh_op nosurface[] = {ROW("a", 0)};
    EXPECT(nosurface, &plain, "row 0 (\"a\"): no surface");
    cdsh_op badsurface[] = {ROW("a", CDSH_OP_RPC | 0x10u)};
    EXPECT(badsurface, &plain, "row 0 (\"a\"): unknown surface");
    cdsh_op nodesc[] = {ROW("a", CDSH_OP_TOOL)};
    nodesc[0].description = "";
    EXPECT(nodesc, &plain, "row 0 (\"a\"): a tool row needs a description");
    cdsh_op noargs[] = {ROW("a", CDSH_OP_RPC)};
    noargs[0].args_schema = NULL;
    EXPECT(noargs, &plain, "row 0 (\"a\"): no args schema");
    cdsh_op badjson[] = {ROW("a", CDSH_OP_RPC)};
    badjson[0].args_schema = "{\"type\":";
    expect_refusal(badjson, 1, &plain,
                   "operations table of \"demo\": row 0 (\"a\"): args schema is not valid JSON "
                   "(unexpected token near end of file)");
    cdsh_op array[] = {ROW("a", CDSH_OP_RPC)};
    array[0].result_schema = "[]";
    EXPECT(array, &plain, "row 0 (\"a\"): result schema is not a JSON object");
    cdsh_op notobj[] = {ROW("a", CDSH_OP_RPC)};
    notobj[0].args_schema = "{\"type\":\"string\"}";
    EXPECT(notobj, &plain, "row 0 (\"a\"): args schema must have type \"object\"");
    cdsh_op noresult[] = {ROW("a", CDSH_OP_RPC)};
    noresult[0].result_schema = NULL;
    EXPECT(noresult, &plain, "row 0 (\"a\"): no result schema");
    cdsh_op unsupported[] = {ROW("a", CDSH_OP_RPC)};
    unsupported[0].result_schema = "{\"type\":\"frob\"}";
    demo d = {0};
    cdsh_ops *ops = NULL;
    cdsh_error err = {0};
    cdsh_ops_table t = plain;
    t.ops = unsupported;
    t.n_ops = 1;
    assert_int_equal(cdsh_ops_new(&t, &d, NULL, &ops, &err), CDSH_EINVAL);
    if (!strstr(err.message, "row 0 (\"a\"): result schema: unsupported JSON schema"))
        fail_msg("got %s", err.message);

    cdsh_ops_table nochannel = demo_table;
    nochannel.rpc_channel = NULL;
    cdsh_op rpcrow[] = {ROW("a", CDSH_OP_RPC)};
    EXPECT(rpcrow, &nochannel, "RPC rows need a valid rpc_channel");
    cdsh_ops_table nocommand = demo_table;
    nocommand.command = NULL;
    cdsh_op cmdrow[] = {ROW("peek", CDSH_OP_COMMAND)};
    EXPECT(cmdrow, &nocommand,
           "command rows need the table's command, command_description and command_usage");
    cdsh_ops_table baddefault = demo_table;
    baddefault.command_default = "a";
    cdsh_op onlyrpc[] = {ROW("a", CDSH_OP_RPC)};
    EXPECT(onlyrpc, &baddefault, "command_default names no command row");
    cdsh_ops_table longprefix = demo_table;
    longprefix.tool_prefix = "a_prefix_that_is_much_too_long_for_any_tool_name_to_fit_in_it_";
    cdsh_op toolrow[] = {ROW("abcdef", CDSH_OP_TOOL)};
    EXPECT(toolrow, &longprefix, "row 0 (\"abcdef\"): the tool name is longer than 64 characters");
    cdsh_op none[1];
    expect_refusal(none, 0, &plain, "operations table of \"demo\": the table has no rows");
#undef EXPECT
}

static void a_malformed_table_fails_the_plugin_and_registers_nothing(void **state)
{
    cdsh_host *h = *state;
    static const cdsh_op rows[] = {ROW("a", CDSH_OP_TOOL | CDSH_OP_RPC), ROW("a", CDSH_OP_RPC)};
    cdsh_ops_table bad = demo_table;
    bad.ops = rows;
    bad.n_ops = 2;
    table_in_use = &bad;
    size_t tools0 = cdsh_tools_count(cdsh_host_tools(h));
    cdsh_plugin *pl = NULL;
    cdsh_error err = {0};
    assert_true(cdsh_plugin_load(h, &demo_plugin, NULL, &pl, &err) < 0);
    assert_int_equal(cdsh_plugin_state_get(pl), CDSH_PLUGIN_FAILED);
    assert_non_null(strstr(err.message, "operations table of \"demo\": row 1 (\"a\"): duplicate "
                                        "name"));
    assert_int_equal(cdsh_tools_count(cdsh_host_tools(h)), tools0);
    assert_int_equal(cdsh_rpc_count(cdsh_host_rpc(h)), 0);
    assert_int_equal(cdsh_commands_count(cdsh_host_commands(h)), 0);
    assert_int_equal(the_demo.released, 1);
}

static void in_process_calls_go_through_the_table(void **state)
{
    (void)state;
    cdsh_ops *ops = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_ops_new(&demo_table, &the_demo, release_demo, &ops, &err), 0);
    json_t *v = NULL;
    json_t *args = json_pack("{s:i}", "n", 5);
    assert_int_equal(cdsh_ops_call(ops, "add", CDSH_OP_RPC, args, NULL, &v, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(v, "total")), 5);
    json_decref(v);
    /* a row is only reachable on its surfaces */
    assert_int_equal(cdsh_ops_call(ops, "secret", CDSH_OP_RPC, NULL, NULL, &v, &err),
                     CDSH_ENOTFOUND);
    assert_string_equal(err.code, "not-found");
    assert_int_equal(cdsh_ops_call(ops, "secret", CDSH_OP_TOOL, NULL, NULL, &v, &err), 0);
    json_decref(v);
    json_t *arr = json_array();
    assert_int_equal(cdsh_ops_call(ops, "add", CDSH_OP_RPC, arr, NULL, &v, &err), CDSH_EINVAL);
    json_decref(arr);
    assert_string_equal(err.message, "payload must be an object");
    json_t *tools = cdsh_ops_names(ops, CDSH_OP_TOOL);
    json_t *want = json_pack("[s,s]", "demo_add", "demo_secret");
    assert_true(json_equal(tools, want));
    json_decref(want);
    json_decref(tools);
    json_t *cmds = cdsh_ops_names(ops, CDSH_OP_COMMAND);
    want = json_pack("[s,s,s]", "add", "peek", "broken");
    assert_true(json_equal(cmds, want));
    json_decref(want);
    json_decref(cmds);
    json_decref(args);
    assert_ptr_equal(cdsh_ops_find(ops, "peek"), &demo_ops[1]);
    assert_null(cdsh_ops_find(ops, "demo_add"));
    cdsh_ops_free(ops);
    assert_int_equal(the_demo.released, 1);
}

/* Tools and command now, the channel later (xiangqi: only beside a web connection). */
static int split_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    cdsh_ops *ops = NULL;
    int rc = cdsh_ops_new(&demo_table, &the_demo, release_demo, &ops, err);
    if (rc == 0)
        rc = cdsh_ops_register_surfaces(ctx, ops, CDSH_OP_TOOL | CDSH_OP_COMMAND, err);
    if (rc == 0) /* no channel yet */
        assert_int_equal(cdsh_rpc_count(cdsh_host_rpc(cdsh_ctx_host(ctx))), 0);
    if (rc == 0)
        rc = cdsh_ops_register_surfaces(ctx, ops, CDSH_OP_RPC, err);
    cdsh_ops_free(ops);
    return rc;
}

static void surfaces_can_be_registered_in_steps(void **state)
{
    cdsh_host *h = *state;
    const cdsh_plugin_def split = {.name = "demo", .enabled_by_default = true, .apply = split_apply};
    cdsh_plugin *pl = NULL;
    assert_int_equal(cdsh_plugin_load(h, &split, NULL, &pl, NULL), 0);
    assert_int_equal(cdsh_tools_count(cdsh_host_tools(h)), 2);
    assert_int_equal(cdsh_commands_count(cdsh_host_commands(h)), 1);
    assert_int_equal(cdsh_rpc_count(cdsh_host_rpc(h)), 1);
    json_t *r = rpc(h, "add", json_pack("{s:i}", "n", 2));
    assert_true(json_is_true(json_object_get(r, "ok")));
    json_decref(r);
    assert_int_equal(the_demo.released, 0); /* every surface holds the table */
    cdsh_plugin_unload(pl);
    assert_int_equal(cdsh_rpc_count(cdsh_host_rpc(h)), 0);
    assert_int_equal(cdsh_tools_count(cdsh_host_tools(h)), 0);
    assert_int_equal(the_demo.released, 1);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(registration_builds_exactly_the_flagged_surfaces),
        T(tool_rpc_and_command_run_one_handler_with_one_result),
        T(handler_failures_reach_each_surface_in_its_form),
        T(results_outside_the_shape_are_refused),
        T(the_rpc_channel_describes_its_rows),
        T(unload_removes_every_surface_and_releases_once),
        T(malformed_tables_are_refused_with_a_message),
        T(a_malformed_table_fails_the_plugin_and_registers_nothing),
        T(in_process_calls_go_through_the_table),
        T(surfaces_can_be_registered_in_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
