/* skilltool.c — the built-in "skills" plugin: the `skill` tool (validate the
 * name → load the winning definition in the caller's view → refuse a skill
 * kept from the model → return {name, provider, resourceBase?, content},
 * rendered as <skill_content>; or read one of its resources), the `/skills`
 * command for the person (user-invocable skills only) and the registry's
 * collectCacheMaxEntries setting. */
#include "host/skilltool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/dispatch.h"
#include "host/host.h"

#define TRUNCATED_SUFFIX "\n…[skill body truncated]"
#define RESOURCE_READ_MAX (4u << 20) /* bytes read from disk before the body cap applies */

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

/* text capped at max bytes (the suffix marks a cut). Owned. */
static char *capped_dup(const char *text, size_t max)
{
    size_t keep = utf8_cut(text, max);
    char *out = NULL;
    if (keep == strlen(text))
        return strdup(text);
    if (asprintf(&out, "%.*s%s", (int)keep, text, TRUNCATED_SUFFIX) < 0)
        return NULL;
    return out;
}

/* "a, b" of the skills the given surface may use, or "(none)". */
static void offered_names(json_t *list, bool model, char *out, size_t n)
{
    size_t used = 0, i;
    json_t *it;
    out[0] = '\0';
    json_array_foreach(list, i, it) {
        const json_t *inv = json_object_get(it, "invocation");
        if (json_is_false(json_object_get(inv, model ? "modelInvocable" : "userInvocable")))
            continue;
        if (used < n)
            used += (size_t)snprintf(out + used, n - used, "%s%s", used ? ", " : "",
                                     json_string_value(json_object_get(it, "name")));
    }
    if (!used)
        snprintf(out, n, "(none)");
}

static int skill_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    skilltool *st = ud;
    const char *name = json_string_value(json_object_get(exec->args, "name"));
    const char *resource = json_string_value(json_object_get(exec->args, "resource"));
    json_t *def = NULL;
    cdsh_error e = {0};
    cdsh_skill_lookup opts = {.cancel = exec->cancel};
    if (cdsh_skills_get_dup(st->skills, exec->agent, name, &opts, &def, &e) != 0)
        return cdsh_dispatch_fail(exec, NULL, e.code, "%s", e.message);
    if (!def) {
        json_t *list = cdsh_skills_list(st->skills, exec->agent);
        char names[1024];
        offered_names(list, true, names, sizeof names);
        json_decref(list);
        return cdsh_dispatch_fail(exec, "SkillNotFoundError", "UNKNOWN_SKILL",
                                  "unknown skill \"%s\"; available skills: %s", name ? name : "",
                                  names);
    }
    if (json_is_false(json_object_get(json_object_get(def, "invocation"), "modelInvocable"))) {
        json_decref(def);
        return cdsh_dispatch_fail(exec, "SkillNotModelInvocableError", "SKILL_NOT_MODEL_INVOCABLE",
                                  "skill \"%s\" can only be run by the user (its invocation "
                                  "policy keeps it from the model); do not load it",
                                  name);
    }
    char *text = NULL;
    if (resource) {
        char *raw = NULL;
        if (cdsh_skills_resource_read_dup(def, resource, RESOURCE_READ_MAX, &raw, &e) != 0) {
            json_decref(def);
            return cdsh_dispatch_fail(exec, "SkillResourceError", e.code, "%s", e.message);
        }
        text = capped_dup(raw, st->max_bytes);
        free(raw);
    } else {
        text = capped_dup(json_string_value(json_object_get(def, "content")), st->max_bytes);
    }
    *value = text ? json_pack("{s:O, s:O, s:s}", "name", json_object_get(def, "name"), "provider",
                              json_object_get(def, "provider"), "content", text)
                  : NULL;
    if (*value && resource)
        json_object_set_new(*value, "resource", json_string(resource));
    else if (*value && json_object_get(def, "resourceBase"))
        json_object_set(*value, "resourceBase", json_object_get(def, "resourceBase"));
    free(text);
    json_decref(def);
    return *value ? 0 : cdsh_dispatch_fail(exec, NULL, NULL, "out of memory");
}

/* A loaded skill as <skill_content>; a resource as <skill_resource>. */
static json_t *skill_render(void *ud, const json_t *args, const json_t *value, cdsh_error *err)
{
    (void)ud, (void)args;
    char *text = NULL;
    const char *resource = json_string_value(json_object_get(value, "resource"));
    if (resource) {
        size_t n = 0;
        FILE *f = open_memstream(&text, &n);
        if (f) {
            fprintf(f, "<skill_resource name=\"%s\" path=\"",
                    json_string_value(json_object_get(value, "name")));
            for (const char *p = resource; *p; p++)
                fputs(*p == '"' ? "&quot;" : *p == '&' ? "&amp;" : *p == '<' ? "&lt;" : (char[]){*p, 0}, f);
            fprintf(f, "\">\n%s\n</skill_resource>",
                    json_string_value(json_object_get(value, "content")));
            fclose(f);
        }
    } else {
        text = cdsh_skills_render_def_dup(value);
    }
    json_t *blocks = text ? json_pack("[{s:s, s:s}]", "type", "text", "text", text) : NULL;
    free(text);
    if (!blocks)
        cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    return blocks;
}

/* /skills — the skills the person may run; /skills NAME — one skill's body. */
static int skills_command(void *arg, const cdsh_command_invocation *inv, cdsh_command_result *out,
                          cdsh_error *err)
{
    skilltool *st = arg;
    char name[128] = "";
    const char *raw = inv->raw_input ? inv->raw_input : "";
    size_t lead = strspn(raw, " \t"), len = strcspn(raw + lead, " \t\r\n");
    snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1),
             raw + lead);
    json_t *list = cdsh_skills_list(st->skills, inv->agent);
    char names[1024];
    offered_names(list, false, names, sizeof names);
    int rc = 0;
    if (!*name) {
        char *text = NULL;
        size_t n = 0, i;
        FILE *f = open_memstream(&text, &n);
        json_t *it;
        size_t shown = 0;
        json_array_foreach(list, i, it) {
            if (!f || json_is_false(json_object_get(json_object_get(it, "invocation"),
                                                    "userInvocable")))
                continue;
            fprintf(f, "%s/skills %s — %s", shown++ ? "\n" : "",
                    json_string_value(json_object_get(it, "name")),
                    json_string_value(json_object_get(it, "description")));
        }
        if (f && !shown)
            fputs("no skills you can run (the enabled plugins register none for users)", f);
        if (f)
            fclose(f);
        rc = text ? cdsh_command_result_set(out, CDSH_COMMAND_SUCCESS, text)
                  : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        free(text);
        json_decref(list);
        return rc;
    }
    json_decref(list);
    json_t *def = NULL;
    cdsh_error e = {0};
    cdsh_skill_lookup opts = {.cancel = inv->cancel};
    if (cdsh_skills_get_dup(st->skills, inv->agent, name, &opts, &def, &e) != 0)
        return cdsh_command_result_set(out, CDSH_COMMAND_ERROR, e.message);
    char msg[1400];
    if (!def) {
        snprintf(msg, sizeof msg, "unknown skill \"%s\"; skills you can run: %s", name, names);
        return cdsh_command_result_set(out, CDSH_COMMAND_ERROR, msg);
    }
    if (json_is_false(json_object_get(json_object_get(def, "invocation"), "userInvocable"))) {
        json_decref(def);
        snprintf(msg, sizeof msg,
                 "skill \"%s\" is for the model only (its invocation policy keeps it from "
                 "/skills)",
                 name);
        return cdsh_command_result_set(out, CDSH_COMMAND_ERROR, msg);
    }
    char *body = cdsh_skills_render_def_dup(def);
    json_decref(def);
    rc = body ? cdsh_command_result_set(out, CDSH_COMMAND_SUCCESS, body)
              : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    free(body);
    return rc;
}

static void restore_cache_max(void *arg)
{
    cdsh_skills_set_cache_max(arg, CDSH_SKILLS_CACHE_DEFAULT, NULL);
}

typedef struct cache_setting {
    cdsh_skills *skills;
    long long n;
} cache_setting;

static int set_cache_max(void *arg, cdsh_disposer_t *out, cdsh_error *err)
{
    cache_setting *cs = arg;
    int rc = cdsh_skills_set_cache_max(cs->skills, cs->n, err);
    if (rc == 0)
        *out = (cdsh_disposer_t){restore_cache_max, cs->skills};
    return rc;
}

static int apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    skilltool *st = calloc(1, sizeof *st);
    if (!st)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    st->skills = cdsh_host_skills(cdsh_ctx_host(ctx));
    st->max_bytes = (size_t)json_integer_value(json_object_get(config, "maxBodyBytes"));
    cache_setting cs = {st->skills,
                        json_integer_value(json_object_get(config, "collectCacheMaxEntries"))};
    json_t *params = json_pack(
        "{s:s, s:{s:{s:s, s:s}, s:{s:s, s:s}}, s:[s], s:b}", "type", "object", "properties", "name",
        "type", "string", "description", "The skill's name, as listed in <available_skills>.",
        "resource", "type", "string", "description",
        "Optional: a file of the skill, relative to its base directory, as listed under "
        "<skill_resources>; returns that file instead of the instructions.",
        "required", "name", "additionalProperties", 0);
    json_t *output = json_pack(
        "{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}, s:[s,s,s], s:b}", "type", "object",
        "properties", "name", "type", "string", "provider", "type", "string", "content", "type",
        "string", "resource", "type", "string", "resourceBase", "type", "object", "required",
        "name", "provider", "content", "additionalProperties", 0);
    cdsh_tool_def def = {
        .name = CDSH_SKILLTOOL_NAME,
        .description = "Load the full instructions of a skill by name. The available skills "
                       "are listed in the system prompt under <available_skills>; load one "
                       "before doing a task it covers. With `resource`, read one of the files "
                       "the loaded skill lists under <skill_resources>.",
        .parameters = params,
        .output_schema = output,
        .execute = skill_body,
        .render = skill_render,
        .is_concurrency_safe = cdsh_tools_always_safe,
        .ud = st,
        .free_ud = free,
    };
    int rc = cdsh_ctx_register_tool(ctx, &def, err); /* takes st, even on failure */
    json_decref(params);
    json_decref(output);
    cdsh_command_def cmd = {
        .name = "skills",
        .description = "list the skills you can run, or show one: /skills [NAME]",
        .input_hint = "[skill name]",
        .handler = skills_command,
        .arg = st, /* freed with the tool, which is disposed after this command */
    };
    if (rc == 0)
        rc = cdsh_ctx_register_command(ctx, &cmd, err);
    if (rc == 0)
        rc = cdsh_ctx_effect(ctx, set_cache_max, &cs, err);
    return rc;
}

const cdsh_plugin_def cdsh_skilltool_plugin = {
    .name = "skills",
    .description = "the model-facing `skill` tool, the `/skills` command and the skill "
                   "registry's settings",
    .config_schema =
        "{\"type\":\"object\",\"properties\":{\"maxBodyBytes\":{"
        "\"type\":\"integer\",\"default\":20000,\"minimum\":100,"
        "\"description\":\"longest skill body or resource (bytes) handed to the model\"},"
        "\"collectCacheMaxEntries\":{\"type\":\"integer\",\"default\":128,\"minimum\":1,"
        "\"description\":\"completed skill-provider catalogs kept (one per working "
        "directory); the oldest goes first\"}}}",
    .enabled_by_default = true,
    .apply = apply,
};
