/* counter_plugin.c — the example plugin of docs/host.md: one business
 * function (counter_add) behind a tool, a /count command and an RPC channel,
 * plus a skill, a config schema with defaults and a "counter" service whose
 * registration function takes the CALLER's context.
 * tests/host/test_example_plugin.c compiles this file as is. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/dispatch.h"
#include "host/host.h"

/* ---- the service: business logic, no host types --------------------------- */

typedef struct counter {
    pthread_mutex_t lock;
    long long value, step;
} counter;

static long long counter_add(counter *c, long long times)
{
    pthread_mutex_lock(&c->lock);
    c->value += times * c->step;
    long long v = c->value;
    pthread_mutex_unlock(&c->lock);
    return v;
}

static void counter_free(void *arg)
{
    counter *c = arg;
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* ---- thin wrappers ---------------------------------------------------------- */

static int add_tool(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    json_t *times = json_object_get(exec->args, "times"); /* validated by the registry */
    long long v = counter_add(ud, times ? json_integer_value(times) : 1);
    *value = json_pack("{s:I}", "value", (json_int_t)v);
    return 0;
}

static int count_command(void *arg, const cdsh_command_invocation *inv, cdsh_command_result *out,
                         cdsh_error *err)
{
    (void)inv, (void)err;
    char text[64];
    snprintf(text, sizeof text, "count is %lld", counter_add(arg, 0));
    return cdsh_command_result_set(out, CDSH_COMMAND_SUCCESS, text);
}

static int counter_rpc(void *arg, const char *endpoint, const json_t *payload, cdsh_cancel *cancel,
                       json_t **result, cdsh_error *err)
{
    (void)payload, (void)cancel, (void)err;
    if (strcmp(endpoint, "get") != 0) {
        *result = cdsh_rpc_error_new(CDSH_RPC_BAD_REQUEST, "unknown endpoint", NULL);
        return 0;
    }
    *result = cdsh_rpc_ok_new(json_pack("{s:I}", "value", (json_int_t)counter_add(arg, 0)));
    return 0;
}

/* What other plugins call through the service: registrations go into the
 * caller's context, so they leave when the caller unloads. */
int counter_service_add_command(counter *c, cdsh_plugin_ctx *caller, const char *name,
                                cdsh_error *err);
int counter_service_add_command(counter *c, cdsh_plugin_ctx *caller, const char *name,
                                cdsh_error *err)
{
    cdsh_command_def def = {
        .name = name, .description = "show the counter", .handler = count_command, .arg = c};
    return cdsh_ctx_register_command(caller, &def, err);
}

/* ---- apply: register everything through ctx ------------------------------- */

static int counter_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    counter *c = calloc(1, sizeof *c);
    if (!c)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    pthread_mutex_init(&c->lock, NULL);
    c->value = json_integer_value(json_object_get(config, "start")); /* defaults are filled */
    c->step = json_integer_value(json_object_get(config, "step"));
    /* First effect: freed last, after everything that uses it is gone. */
    int rc = cdsh_ctx_adopt(ctx, (cdsh_disposer_t){counter_free, c}, err);
    if (rc)
        return rc;

    json_t *params = json_pack("{s:s, s:{s:{s:s, s:i}}}", "type", "object", "properties", "times",
                               "type", "integer", "minimum", 1);
    json_t *output = json_pack("{s:s, s:{s:{s:s}}, s:[s]}", "type", "object", "properties", "value",
                               "type", "integer", "required", "value");
    cdsh_tool_def tool = {.name = "counter_add",
                          .description = "Add to the counter.",
                          .parameters = params,
                          .output_schema = output,
                          .execute = add_tool,
                          .ud = c};
    cdsh_command_def cmd = {
        .name = "count", .description = "show the counter", .handler = count_command, .arg = c};
    cdsh_skill_def skill = {.name = "counting",
                            .description = "how to count with the counter",
                            .content = "Call counter_add with times=N to add N steps."};
    if ((rc = cdsh_ctx_register_tool(ctx, &tool, err)) == 0 &&
        (rc = cdsh_ctx_register_command(ctx, &cmd, err)) == 0 &&
        (rc = cdsh_ctx_register_skill(ctx, &skill, err)) == 0 &&
        (rc = cdsh_ctx_rpc_handle(ctx, "/counter", counter_rpc, c, err)) == 0)
        rc = cdsh_ctx_provide(ctx, "counter", c, err);
    json_decref(params);
    json_decref(output);
    return rc; /* on failure the host disposes what was registered */
}

const cdsh_plugin_def counter_plugin = {
    .name = "counter",
    .description = "an example counter",
    .config_schema = "{\"type\":\"object\",\"properties\":{"
                     "\"start\":{\"type\":\"integer\",\"default\":0},"
                     "\"step\":{\"type\":\"integer\",\"default\":1,\"minimum\":1,"
                     "\"description\":\"added per call\"}}}",
    .apply = counter_apply,
};
