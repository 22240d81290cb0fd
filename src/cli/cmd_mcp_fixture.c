/* cmd_mcp_fixture.c — trivial tools `cdsh mcp --fixture` adds to the served
 * set: echo, add, fail, sleep, and three under the names the official
 * conformance scenarios call (test_simple_text, test_error_handling,
 * test_image_content). They exist so MCP clients, conformance runs and the
 * latency benchmark have something predictable to call; a normal run never
 * registers them. */
#include "cli/cmd_mcp_fixture.h"

#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "host/dispatch.h"

static int echo_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    *value = json_incref(json_object_get(exec->args, "text"));
    return 0;
}

static int add_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    double a = json_number_value(json_object_get(exec->args, "a"));
    double b = json_number_value(json_object_get(exec->args, "b"));
    *value = json_pack("{s:f}", "sum", a + b);
    return *value ? 0 : CDSH_ENOMEM;
}

static int fail_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    (void)value;
    return cdsh_dispatch_fail(exec, "FixtureError", "FIXTURE_FAILURE",
                              "this tool always fails (fixture)");
}

static int sleep_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    json_int_t ms = json_integer_value(json_object_get(exec->args, "ms"));
    if (cdsh_cancel_wait(exec->cancel, ms))
        return cdsh_dispatch_fail(exec, "AbortError", "ABORTED", "sleep was cancelled");
    *value = json_pack("{s:I}", "slept", ms);
    return *value ? 0 : CDSH_ENOMEM;
}

/* A 1x1 PNG. */
static const char TINY_PNG[] =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWj"
    "R9awAAAABJRU5ErkJggg==";

static int simple_text_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud, (void)exec;
    *value = json_string("This is a simple text response for testing.");
    return *value ? 0 : CDSH_ENOMEM;
}

static int error_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud, (void)value;
    return cdsh_dispatch_fail(exec, "FixtureError", "FIXTURE_FAILURE",
                              "This tool intentionally returns an error for testing");
}

static int image_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud, (void)exec;
    *value = json_string(TINY_PNG);
    return *value ? 0 : CDSH_ENOMEM;
}

/* The value is the base64 PNG; the model sees it as an image block. */
static json_t *image_render(void *ud, const json_t *args, const json_t *value, cdsh_error *err)
{
    (void)ud, (void)args;
    json_t *c =
        json_pack("[{s:s,s:O,s:s}]", "type", "image", "data", value, "mimeType", "image/png");
    if (!c)
        cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    return c;
}

int cdsh_cli_mcp_fixture_register(cdsh_tools *tools, cdsh_disposer_t out[CDSH_CLI_MCP_FIXTURE_N],
                                  cdsh_error *err)
{
    json_t *echo_in = json_pack("{s:s,s:{s:{s:s}},s:[s]}", "type", "object", "properties", "text",
                                "type", "string", "required", "text");
    json_t *str_out = json_pack("{s:s}", "type", "string");
    json_t *add_in = json_pack("{s:s,s:{s:{s:s},s:{s:s}},s:[s,s]}", "type", "object", "properties",
                               "a", "type", "number", "b", "type", "number", "required", "a", "b");
    json_t *add_out = json_pack("{s:s,s:{s:{s:s}},s:[s]}", "type", "object", "properties", "sum",
                                "type", "number", "required", "sum");
    json_t *empty_in = json_pack("{s:s}", "type", "object");
    json_t *sleep_in =
        json_pack("{s:s,s:{s:{s:s,s:i,s:i}},s:[s]}", "type", "object", "properties", "ms", "type",
                  "integer", "minimum", 0, "maximum", 600000, "required", "ms");
    json_t *sleep_out =
        json_pack("{s:s,s:{s:{s:s}}}", "type", "object", "properties", "slept", "type", "integer");
    const cdsh_tool_def defs[CDSH_CLI_MCP_FIXTURE_N] = {
        {.name = "echo",
         .description = "Echoes the text back (fixture).",
         .parameters = echo_in,
         .output_schema = str_out,
         .execute = echo_body,
         .is_concurrency_safe = cdsh_tools_always_safe},
        {.name = "add",
         .description = "Adds two numbers a and b (fixture).",
         .parameters = add_in,
         .output_schema = add_out,
         .execute = add_body,
         .is_concurrency_safe = cdsh_tools_always_safe},
        {.name = "fail",
         .description = "Always fails (fixture).",
         .parameters = empty_in,
         .output_schema = str_out,
         .execute = fail_body,
         .is_concurrency_safe = cdsh_tools_always_safe},
        {.name = "sleep",
         .description = "Sleeps ms milliseconds; cancellable (fixture).",
         .parameters = sleep_in,
         .output_schema = sleep_out,
         .execute = sleep_body,
         .is_concurrency_safe = cdsh_tools_always_safe},
        {.name = "test_simple_text",
         .description = "Returns a fixed text (conformance fixture).",
         .parameters = empty_in,
         .output_schema = str_out,
         .execute = simple_text_body,
         .is_concurrency_safe = cdsh_tools_always_safe},
        {.name = "test_error_handling",
         .description = "Always fails (conformance fixture).",
         .parameters = empty_in,
         .output_schema = str_out,
         .execute = error_body,
         .is_concurrency_safe = cdsh_tools_always_safe},
        {.name = "test_image_content",
         .description = "Returns a PNG image (conformance fixture).",
         .parameters = empty_in,
         .output_schema = str_out,
         .execute = image_body,
         .render = image_render,
         .is_concurrency_safe = cdsh_tools_always_safe},
    };
    int rc = 0;
    size_t i = 0;
    memset(out, 0, sizeof(cdsh_disposer_t) * CDSH_CLI_MCP_FIXTURE_N);
    for (; i < CDSH_CLI_MCP_FIXTURE_N && rc == 0; i++)
        rc = cdsh_tools_register(tools, NULL, &defs[i], &out[i], err);
    if (rc != 0)
        for (size_t j = 0; j < CDSH_CLI_MCP_FIXTURE_N; j++)
            cdsh_disposer_run(&out[j]);
    json_decref(echo_in);
    json_decref(str_out);
    json_decref(add_in);
    json_decref(add_out);
    json_decref(empty_in);
    json_decref(sleep_in);
    json_decref(sleep_out);
    return rc;
}
