/* bench_host.c — cost of the host services a session touches often: a
 * plugin load + unload cycle (tool, command, skill, RPC channel, listener),
 * executing a slash command with 50 commands registered, and an in-process
 * RPC call. */
#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "host/host.h"

static int reply(void *arg, const cdsh_command_invocation *inv, cdsh_command_result *out,
                 cdsh_error *err)
{
    (void)arg, (void)inv, (void)err;
    return cdsh_command_result_set(out, CDSH_COMMAND_SUCCESS, "ok");
}

static int pong(void *arg, const char *endpoint, const json_t *payload, cdsh_cancel *cancel,
                json_t **result, cdsh_error *err)
{
    (void)arg, (void)endpoint, (void)payload, (void)cancel, (void)err;
    *result = cdsh_rpc_ok_new(json_true());
    return 0;
}

static void quiet(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    (void)arg, (void)name, (void)scope, (void)payload;
}

static int body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud, (void)exec;
    *value = json_true();
    return 0;
}

static int apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    static json_t *out;
    if (!out)
        out = json_pack("{s:s}", "type", "boolean");
    cdsh_tool_def tool = {.name = "t", .description = "d", .output_schema = out, .execute = body};
    cdsh_command_def cmd = {.name = "c", .description = "d", .handler = reply};
    cdsh_skill_def skill = {.name = "s", .description = "d", .content = "body"};
    int rc;
    if ((rc = cdsh_ctx_register_tool(ctx, &tool, err)) ||
        (rc = cdsh_ctx_register_command(ctx, &cmd, err)) ||
        (rc = cdsh_ctx_register_skill(ctx, &skill, err)) ||
        (rc = cdsh_ctx_rpc_handle(ctx, "/bench", pong, NULL, err)))
        return rc;
    return cdsh_ctx_on(ctx, "tools/*", quiet, NULL, err);
}

static const cdsh_plugin_def PLUGIN = {
    .name = "bench",
    .config_schema = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\","
                     "\"default\":1}}}",
    .apply = apply,
};

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000;
    cdsh_host *h = cdsh_host_new();

    int64_t t0 = cdsh_clock_mono_ns();
    for (long i = 0; i < n; i++) {
        cdsh_plugin *p = NULL;
        if (cdsh_plugin_load(h, &PLUGIN, NULL, &p, NULL) != 0)
            abort();
        cdsh_plugin_unload(p);
    }
    printf("host: plugin load+unload (5 registrations, config with a default): %.1f us/cycle "
           "(%ld cycles)\n",
           (double)(cdsh_clock_mono_ns() - t0) / (double)n / 1000.0, n);
    cdsh_host_free(h); /* fibers of the cycles above are kept until here */

    h = cdsh_host_new();
    cdsh_disposer_t d[51];
    for (int i = 0; i < 50; i++) {
        char name[16];
        snprintf(name, sizeof name, "cmd%d", i);
        cdsh_command_def c = {.name = name, .description = "d", .handler = reply};
        cdsh_commands_register(cdsh_host_commands(h), NULL, &c, &d[i], NULL);
    }
    long m = n * 10;
    t0 = cdsh_clock_mono_ns();
    for (long i = 0; i < m; i++) {
        cdsh_command_outcome out;
        if (cdsh_commands_execute(cdsh_host_commands(h), NULL, "/cmd49 some args", NULL, NULL, &out,
                                  NULL) != 1)
            abort();
        cdsh_commands_outcome_clear(&out);
    }
    printf("host: /command execution among 50 commands (run+done events): %.0f ns/call\n",
           (double)(cdsh_clock_mono_ns() - t0) / (double)m);

    cdsh_rpc_handle(cdsh_host_rpc(h), "/bench", pong, NULL, &d[50], NULL);
    t0 = cdsh_clock_mono_ns();
    for (long i = 0; i < m; i++) {
        json_t *r = cdsh_rpc_call(cdsh_host_rpc(h), "/bench", "state/get", NULL, NULL);
        if (!json_is_true(json_object_get(r, "ok")))
            abort();
        json_decref(r);
    }
    printf("host: in-process RPC call: %.0f ns/call\n",
           (double)(cdsh_clock_mono_ns() - t0) / (double)m);
    for (int i = 0; i < 51; i++)
        cdsh_disposer_run(&d[i]);
    cdsh_host_free(h);
    return 0;
}
