/* fuzz_dispatch.c — fuzzes a tool call with model-made arguments: the input
 * is a parameters schema JSON text, a newline, then an arguments JSON text.
 * When the schema compiles, a tool echoing its arguments is registered and
 * called; the result must be frozen, well-formed (§9) and consistent: a
 * success returns the arguments unchanged, a failure is INVALID_ARGS with
 * "Error: <message>" content. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/dispatch.h"
#include "host/tools.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int body_echo_args(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    *value = json_deep_copy(exec->args);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static cdsh_tools *tools; /* one registry for the whole run */
    if (!tools && !(tools = cdsh_tools_new(NULL)))
        abort();
    const char *text = (const char *)data;
    const char *nl = memchr(text, '\n', size);
    size_t schema_len = nl ? (size_t)(nl - text) : size;
    json_t *params = json_loadb(text, schema_len, JSON_DECODE_ANY, NULL);
    json_t *args = nl ? json_loadb(nl + 1, size - schema_len - 1, JSON_DECODE_ANY, NULL) : NULL;
    json_t *output = json_object();
    cdsh_tool_def def = {.name = "t",
                         .description = "fuzz",
                         .parameters = params,
                         .output_schema = output,
                         .execute = body_echo_args};
    cdsh_disposer_t undo;
    if (params && cdsh_tools_register(tools, NULL, &def, &undo, NULL) == 0) {
        cdsh_dispatch_input in = {.call_id = "fuzz", .name = "t", .args = args};
        cdsh_toolresult *res = cdsh_dispatch_execute(tools, &in);
        if (!res || !cdsh_toolresult_is_frozen(res) || !json_is_array(res->content))
            abort();
        if (res->is_error) {
            if (!res->error_message || !res->error_code ||
                strcmp(res->error_code, "INVALID_ARGS") != 0)
                abort();
            char *shown = cdsh_toolresult_text_dup(res);
            if (!shown || strncmp(shown, "Error: invalid arguments: ", 26) != 0)
                abort();
            free(shown);
        } else if (args ? !json_equal(res->value, args)
                        : !json_is_object(res->value) || json_object_size(res->value)) {
            abort();
        }
        json_t *shape = cdsh_toolresult_to_json(res);
        if (!shape || !json_is_boolean(json_object_get(shape, "isError")))
            abort();
        json_decref(shape);
        cdsh_toolresult_free(res);
        cdsh_disposer_run(&undo);
    }
    json_decref(params);
    json_decref(args);
    json_decref(output);
    return 0;
}
