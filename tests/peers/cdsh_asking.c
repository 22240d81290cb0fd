/* cdsh_asking.c — the cdsh command line with one plugin more: a tool
 * "danger" whose pre-execute hook always asks for approval, and a command
 * "/danger" that calls it for the session. Tests run it as a child process
 * to drive the real subcommands' approval channels (run, exec, chat). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/cli.h"
#include "cli/subcommands.h"
#include "plugins/builtin.h"
#include "host/dispatch.h"
#include "../support/danger_tool.h"

typedef struct asker {
    cdsh_host *host;
} asker;

static asker the_asker;

static int danger_command(void *arg, const cdsh_command_invocation *inv, cdsh_command_result *out,
                          cdsh_error *err)
{
    (void)err;
    asker *a = arg;
    cdsh_dispatch_input in = {.call_id = "cmd-danger",
                              .name = "danger",
                              .agent = (cdsh_scope *)inv->agent,
                              .cancel = inv->cancel};
    cdsh_toolresult *r = cdsh_dispatch_execute(cdsh_host_tools(a->host), &in);
    out->kind = r && !r->is_error ? CDSH_COMMAND_SUCCESS : CDSH_COMMAND_ERROR;
    out->text = r ? cdsh_toolresult_text_dup(r) : strdup("out of memory");
    cdsh_toolresult_free(r);
    return 0;
}

static int asking_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    the_asker.host = cdsh_ctx_host(ctx);
    json_t *schema = json_pack("{s:s}", "type", "string");
    cdsh_tool_def tool = {.name = "danger",
                          .description = "does something dangerous",
                          .output_schema = schema,
                          .execute = danger_body};
    cdsh_command_def cmd = {.name = "danger",
                            .description = "calls the danger tool",
                            .handler = danger_command,
                            .arg = &the_asker};
    int rc = cdsh_ctx_register_tool(ctx, &tool, err);
    json_decref(schema);
    if (rc == 0)
        rc = cdsh_ctx_on_pre_execute(ctx, danger_always_asks, NULL, NULL, err);
    if (rc == 0)
        rc = cdsh_ctx_register_command(ctx, &cmd, err);
    return rc;
}

static const cdsh_plugin_def asking_plugin = {
    .name = "asking",
    .description = "a tool that always asks (tests)",
    .enabled_by_default = true,
    .apply = asking_apply,
};

static const cdsh_plugin_def *const extra[] = {&asking_plugin, NULL};

int main(int argc, char **argv)
{
    cdsh_cli_host_set_plugins(cdsh_builtin_plugins);
    cdsh_cli_host_set_extra_plugins(extra);
    const cdsh_subcommand *c = argc > 1 ? cdsh_subcommand_find(argv[1]) : NULL;
    if (!c) {
        fprintf(stderr, "usage: cdsh_asking <cdsh subcommand> ...\n");
        return 2;
    }
    return c->run(argc - 1, argv + 1);
}
