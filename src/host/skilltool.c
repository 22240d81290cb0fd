/* skilltool.c — the `skill` tool: validate the name → look the skill up in
 * the caller's view → return its rendered body. Unknown names fail with
 * UNKNOWN_SKILL and the list of skills the model may load; a user-only skill
 * is refused (SKILL_NOT_MODEL_INVOCABLE). Nothing else. */
#include "host/skilltool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/dispatch.h"
#include "host/host.h"

#define TRUNCATED_SUFFIX "\n…[skill body truncated]"

typedef struct skilltool {
    cdsh_skills *skills;
    size_t max_bytes;
} skilltool;

/* Cuts at max bytes without splitting a UTF-8 sequence. */
static size_t utf8_cut(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n <= max)
        return n;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    return max;
}

static int skill_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    skilltool *st = ud;
    const char *name = json_string_value(json_object_get(exec->args, "name"));
    json_t *info = cdsh_skills_info_dup(st->skills, exec->agent, name);
    bool user_only = json_is_true(json_object_get(info, "userOnly"));
    json_decref(info);
    if (user_only)
        return cdsh_dispatch_fail(exec, "SkillNotModelInvocableError", "SKILL_NOT_MODEL_INVOCABLE",
                                  "skill \"%s\" can only be run by the user (its invocation "
                                  "policy keeps it from the model); do not load it",
                                  name);
    char *body = cdsh_skills_render_dup(st->skills, exec->agent, name);
    if (!body) {
        json_t *list = cdsh_skills_list(st->skills, exec->agent);
        char names[1024] = "";
        size_t used = 0, i;
        json_t *it;
        json_array_foreach(list, i, it) {
            if (json_is_true(json_object_get(it, "userOnly")))
                continue;
            if (used < sizeof names)
                used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                                         used ? ", " : "",
                                         json_string_value(json_object_get(it, "name")));
        }
        json_decref(list);
        return cdsh_dispatch_fail(exec, "SkillNotFoundError", "UNKNOWN_SKILL",
                                  "unknown skill \"%s\"; available skills: %s", name ? name : "",
                                  used ? names : "(none)");
    }
    size_t keep = utf8_cut(body, st->max_bytes);
    if (keep < strlen(body)) {
        char *cut = NULL;
        if (asprintf(&cut, "%.*s%s", (int)keep, body, TRUNCATED_SUFFIX) < 0) {
            free(body);
            return cdsh_dispatch_fail(exec, NULL, NULL, "out of memory");
        }
        free(body);
        body = cut;
    }
    *value = json_string(body);
    free(body);
    return 0;
}

static int apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    skilltool *st = calloc(1, sizeof *st);
    if (!st)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    st->skills = cdsh_host_skills(cdsh_ctx_host(ctx));
    st->max_bytes = (size_t)json_integer_value(json_object_get(config, "maxBodyBytes"));
    json_t *params = json_pack("{s:s, s:{s:{s:s, s:s}}, s:[s], s:b}", "type", "object",
                               "properties", "name", "type", "string", "description",
                               "The skill's name, as listed in <available_skills>.", "required",
                               "name", "additionalProperties", 0);
    json_t *output = json_pack("{s:s}", "type", "string");
    cdsh_tool_def def = {
        .name = CDSH_SKILLTOOL_NAME,
        .description = "Load the full instructions of a skill by name. The available skills "
                       "are listed in the system prompt under <available_skills>; load one "
                       "before doing a task it covers.",
        .parameters = params,
        .output_schema = output,
        .execute = skill_body,
        .is_concurrency_safe = cdsh_tools_always_safe,
        .ud = st,
        .free_ud = free,
    };
    int rc = cdsh_ctx_register_tool(ctx, &def, err); /* takes st, even on failure */
    json_decref(params);
    json_decref(output);
    return rc;
}

const cdsh_plugin_def cdsh_skilltool_plugin = {
    .name = "skills",
    .description = "the model-facing `skill` tool that loads a skill's instructions",
    .config_schema = "{\"type\":\"object\",\"properties\":{\"maxBodyBytes\":{"
                     "\"type\":\"integer\",\"default\":20000,\"minimum\":100,"
                     "\"description\":\"longest skill body (bytes) handed to the model\"}}}",
    .enabled_by_default = true,
    .apply = apply,
};
