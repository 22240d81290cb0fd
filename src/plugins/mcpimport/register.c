/* register.c — imported commands as cdsh commands and imported skills as
 * cdsh skills. The expansion rules live in commands.c and the skill text in
 * skills.c; this file only wires them to the registries. */
#include "plugins/mcpimport/register.h"

#include <stdio.h>
#include <stdlib.h>

#include "plugins/mcpimport/commands.h"

static int run(void *arg, const cdsh_command_invocation *inv, cdsh_command_result *out,
               cdsh_error *err)
{
    const json_t *cmd = arg;
    char *prompt = NULL;
    cdsh_error e = {0};
    if (cdsh_mcpimport_command_expand(cmd, inv->raw_input, &prompt, &e) != 0) {
        if (e.rc == CDSH_ENOMEM)
            return cdsh_error_set(err, e.rc, e.code, "%s", e.message);
        return cdsh_command_result_set(out, CDSH_COMMAND_ERROR, e.message);
    }
    int rc = cdsh_command_result_set(out, CDSH_COMMAND_SUCCESS, prompt);
    free(prompt);
    return rc;
}

int cdsh_mcpimport_register_command(cdsh_plugin_ctx *ctx, const json_t *cmd, cdsh_error *err)
{
    const char *desc = json_string_value(json_object_get(cmd, "description"));
    const char *hint = json_string_value(json_object_get(cmd, "argumentHint"));
    cdsh_command_def def = {
        .name = json_string_value(json_object_get(cmd, "name")),
        .description = desc && *desc ? desc : "imported command",
        .input_hint = hint && *hint ? hint : NULL,
        .handler = run,
        .arg = (void *)cmd,
    };
    return cdsh_ctx_register_command(ctx, &def, err);
}

int cdsh_mcpimport_register_skill(cdsh_plugin_ctx *ctx, const json_t *skill, cdsh_error *err)
{
    /* A Claude skill folder is the skill's resource directory (DSH resourceBase). */
    const char *dir = json_string_value(json_object_get(skill, "skillDir"));
    json_t *base = dir && *dir ? json_pack("{s:s, s:s}", "kind", "directory", "path", dir) : NULL;
    cdsh_skill_def def = {
        .name = json_string_value(json_object_get(skill, "name")),
        .description = json_string_value(json_object_get(skill, "description")),
        .content = json_string_value(json_object_get(skill, "content")),
        .when_to_use = json_string_value(json_object_get(skill, "whenToUse")),
        .user_only = json_is_true(json_object_get(skill, "disableModelInvocation")),
        .model_only = json_is_false(json_object_get(skill, "userInvocable")),
        .path = json_string_value(json_object_get(skill, "file")),
        .resource_base = base,
    };
    int rc = cdsh_ctx_register_skill(ctx, &def, err);
    json_decref(base);
    return rc;
}
