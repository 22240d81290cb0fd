/* test_skilltool.c — the built-in "skills" plugin: the model-facing `skill`
 * tool loads a skill's body through the dispatch pipeline, in the caller's
 * view, with its config cap; and plugin-owned tools leave with the plugin. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "host/dispatch.h"
#include "host/host.h"
#include "host/skilltool.h"

static int setup(void **state)
{
    *state = cdsh_host_new();
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    cdsh_host_free(*state);
    return 0;
}

static cdsh_toolresult *call_skill(cdsh_host *h, cdsh_scope *agent, const char *name)
{
    json_t *args = name ? json_pack("{s:s}", "name", name) : json_object();
    cdsh_dispatch_input in = {.call_id = "c1", .name = "skill", .args = args, .agent = agent};
    cdsh_toolresult *r = cdsh_dispatch_execute(cdsh_host_tools(h), &in);
    json_decref(args);
    return r;
}

static void add_skill(cdsh_host *h, cdsh_scope *scope, const char *name, const char *content,
                      cdsh_disposer_t *d)
{
    cdsh_skill_def s = {.name = name, .description = "d", .content = content};
    assert_int_equal(cdsh_skills_register(cdsh_host_skills(h), scope, &s, d, NULL), 0);
}

static void plugin_registers_the_skill_tool_with_its_schema(void **state)
{
    cdsh_host *h = *state;
    assert_int_equal(cdsh_plugin_load(h, &cdsh_skilltool_plugin, NULL, NULL, NULL), 0);
    json_t *t = cdsh_tools_info_dup(cdsh_host_tools(h), NULL, "skill");
    assert_non_null(t);
    json_t *params = json_object_get(t, "parameters");
    assert_string_equal(json_string_value(json_array_get(json_object_get(params, "required"), 0)),
                        "name");
    json_t *args = json_pack("{s:s}", "name", "x");
    assert_true(cdsh_tools_is_parallel(cdsh_host_tools(h), NULL, "skill", args)); /* read-only */
    json_decref(args);
    json_decref(t);
}

static void skill_tool_returns_the_rendered_body(void **state)
{
    cdsh_host *h = *state;
    cdsh_plugin_load(h, &cdsh_skilltool_plugin, NULL, NULL, NULL);
    cdsh_disposer_t d;
    add_skill(h, NULL, "chess", "Think before moving.", &d);
    cdsh_toolresult *r = call_skill(h, NULL, "chess");
    assert_false(r->is_error);
    char *v = json_dumps(r->value, JSON_COMPACT);
    assert_string_equal(v, "{\"name\":\"chess\",\"provider\":\"runtime\",\"content\":"
                           "\"Think before moving.\"}");
    free(v);
    json_t *block = json_array_get(r->content, 0);
    assert_string_equal(json_string_value(json_object_get(block, "text")),
                        "<skill_content name=\"chess\">\n<skill_resources>\n"
                        "Resources for this skill are managed by provider \"runtime\".\n"
                        "Load referenced resources only as needed.\n</skill_resources>\n\n"
                        "<skill_instructions>\nThink before moving.\n</skill_instructions>\n"
                        "</skill_content>");
    cdsh_toolresult_free(r);
    cdsh_disposer_run(&d);
}

static void unknown_skill_fails_with_the_available_names(void **state)
{
    cdsh_host *h = *state;
    cdsh_plugin_load(h, &cdsh_skilltool_plugin, NULL, NULL, NULL);
    cdsh_toolresult *r = call_skill(h, NULL, "nope");
    assert_true(r->is_error);
    assert_string_equal(r->error_code, "UNKNOWN_SKILL");
    assert_string_equal(r->error_message, "unknown skill \"nope\"; available skills: (none)");
    cdsh_toolresult_free(r);
    cdsh_disposer_t d1, d2;
    add_skill(h, NULL, "b-skill", "x", &d1);
    add_skill(h, NULL, "a-skill", "x", &d2);
    r = call_skill(h, NULL, "Bad Name");
    assert_string_equal(r->error_message,
                        "unknown skill \"Bad Name\"; available skills: a-skill, b-skill");
    cdsh_toolresult_free(r);
    cdsh_disposer_run(&d1);
    cdsh_disposer_run(&d2);
}

/* A user-only skill (DSH modelInvocable:false; Claude's
 * disable-model-invocation) is refused by name, left out of the names the
 * model is offered and of the prompt index; a model-only one loads. */
static void user_only_skills_are_refused_to_the_model(void **state)
{
    cdsh_host *h = *state;
    cdsh_plugin_load(h, &cdsh_skilltool_plugin, NULL, NULL, NULL);
    cdsh_disposer_t d1, d2;
    cdsh_skill_def u = {.name = "deploy", .description = "d", .content = "ship it",
                        .user_only = true};
    cdsh_skill_def m = {.name = "lint", .description = "d", .content = "lint it",
                        .model_only = true};
    assert_int_equal(cdsh_skills_register(cdsh_host_skills(h), NULL, &u, &d1, NULL), 0);
    assert_int_equal(cdsh_skills_register(cdsh_host_skills(h), NULL, &m, &d2, NULL), 0);
    cdsh_toolresult *r = call_skill(h, NULL, "deploy");
    assert_true(r->is_error);
    assert_string_equal(r->error_code, "SKILL_NOT_MODEL_INVOCABLE");
    assert_string_equal(r->error_message,
                        "skill \"deploy\" can only be run by the user (its invocation policy keeps "
                        "it from the model); do not load it");
    cdsh_toolresult_free(r);
    r = call_skill(h, NULL, "nope");
    assert_string_equal(r->error_message, "unknown skill \"nope\"; available skills: lint");
    cdsh_toolresult_free(r);
    r = call_skill(h, NULL, "lint");
    assert_false(r->is_error);
    cdsh_toolresult_free(r);
    char *index = cdsh_skills_index_dup(cdsh_host_skills(h), NULL);
    assert_null(strstr(index, "deploy"));
    assert_non_null(strstr(index, "- lint: d"));
    free(index);
    json_t *list = cdsh_skills_list(cdsh_host_skills(h), NULL);
    json_t *inv = json_object_get(json_array_get(list, 0), "invocation"); /* deploy */
    assert_true(json_is_false(json_object_get(inv, "modelInvocable")));
    assert_true(json_is_true(json_object_get(inv, "userInvocable")));
    inv = json_object_get(json_array_get(list, 1), "invocation"); /* lint */
    assert_true(json_is_true(json_object_get(inv, "modelInvocable")));
    assert_true(json_is_false(json_object_get(inv, "userInvocable")));
    json_decref(list);
    cdsh_disposer_run(&d1);
    cdsh_disposer_run(&d2);
}

static void missing_name_argument_is_invalid_args(void **state)
{
    cdsh_host *h = *state;
    cdsh_plugin_load(h, &cdsh_skilltool_plugin, NULL, NULL, NULL);
    cdsh_toolresult *r = call_skill(h, NULL, NULL);
    assert_true(r->is_error);
    assert_string_equal(r->error_code, "INVALID_ARGS");
    cdsh_toolresult_free(r);
}

static void agent_skills_are_loaded_only_by_that_agent(void **state)
{
    cdsh_host *h = *state;
    cdsh_plugin_load(h, &cdsh_skilltool_plugin, NULL, NULL, NULL);
    cdsh_scope *a = cdsh_scope_new("a", NULL), *b = cdsh_scope_new("b", NULL);
    cdsh_disposer_t d;
    add_skill(h, a, "private", "only for a", &d);
    cdsh_toolresult *ra = call_skill(h, a, "private"), *rb = call_skill(h, b, "private");
    assert_false(ra->is_error);
    assert_true(rb->is_error);
    cdsh_toolresult_free(ra);
    cdsh_toolresult_free(rb);
    cdsh_disposer_run(&d);
    cdsh_scope_unref(a);
    cdsh_scope_unref(b);
}

static void max_body_bytes_truncates_on_a_character_boundary(void **state)
{
    cdsh_host *h = *state;
    json_t *cfg = json_pack("{s:i}", "maxBodyBytes", 100);
    assert_int_equal(cdsh_plugin_load(h, &cdsh_skilltool_plugin, cfg, NULL, NULL), 0);
    json_decref(cfg);
    char body[400] = "";
    for (int i = 0; i < 60; i++)
        strcat(body, "\xe5\xb8\x85"); /* 帅, 3 bytes each */
    cdsh_disposer_t d;
    add_skill(h, NULL, "long", body, &d);
    cdsh_toolresult *r = call_skill(h, NULL, "long");
    assert_false(r->is_error);
    /* jansson refuses invalid UTF-8 */
    const char *v = json_string_value(json_object_get(r->value, "content"));
    assert_non_null(v);
    const char *suffix = "\n…[skill body truncated]";
    assert_string_equal(v + strlen(v) - strlen(suffix), suffix);
    assert_true(strlen(v) - strlen(suffix) <= 100);
    cdsh_toolresult_free(r);
    cdsh_disposer_run(&d);
}

static void max_body_bytes_below_minimum_fails_the_plugin(void **state)
{
    cdsh_host *h = *state;
    json_t *cfg = json_pack("{s:i}", "maxBodyBytes", 10);
    cdsh_error err = {0};
    assert_int_equal(cdsh_plugin_load(h, &cdsh_skilltool_plugin, cfg, NULL, &err), CDSH_EINVAL);
    assert_string_equal(
        err.message, "invalid config:\n  - expected a value >= 100 but got 10 (at maxBodyBytes)");
    assert_null(cdsh_tools_info_dup(cdsh_host_tools(h), NULL, "skill"));
    json_decref(cfg);
}

static void unloading_the_plugin_removes_the_tool_and_reload_restores_it(void **state)
{
    cdsh_host *h = *state;
    size_t base = cdsh_tools_count(cdsh_host_tools(h));
    cdsh_plugin *p = NULL;
    cdsh_plugin_load(h, &cdsh_skilltool_plugin, NULL, &p, NULL);
    assert_int_equal(cdsh_tools_count(cdsh_host_tools(h)), base + 1);
    cdsh_plugin_unload(p);
    assert_int_equal(cdsh_tools_count(cdsh_host_tools(h)), base);
    cdsh_toolresult *r = call_skill(h, NULL, "x");
    assert_string_equal(r->error_code, "UNKNOWN_TOOL");
    cdsh_toolresult_free(r);
    assert_int_equal(cdsh_plugin_load(h, &cdsh_skilltool_plugin, NULL, &p, NULL), 0);
    assert_int_equal(cdsh_tools_count(cdsh_host_tools(h)), base + 1);
}

/* ---- tool registrations through plugin contexts --------------------------- */

static int FREED;

static void count_free(void *ud)
{
    (void)ud;
    FREED++;
}

static int body_ok(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud, (void)exec;
    *value = json_string("ok");
    return 0;
}

static cdsh_tool_def tool_named(const char *name)
{
    static json_t *out;
    if (!out)
        out = json_pack("{s:s}", "type", "string");
    return (cdsh_tool_def){.name = name,
                           .description = "t",
                           .output_schema = out,
                           .execute = body_ok,
                           .free_ud = count_free};
}

static cdsh_plugin_ctx *CTX;

static int keep_ctx(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config, (void)err;
    CTX = ctx;
    return 0;
}

static void refused_tool_registration_releases_ud(void **state)
{
    cdsh_host *h = *state;
    static const cdsh_plugin_def def = {.name = "t", .apply = keep_ctx};
    cdsh_plugin_load(h, &def, NULL, NULL, NULL);
    FREED = 0;
    cdsh_tool_def bad = tool_named("run_code");
    cdsh_error err = {0};
    assert_int_equal(cdsh_ctx_register_tool(CTX, &bad, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "RESERVED_TOOL");
    assert_int_equal(FREED, 1);
}

static void scoped_tools_and_restrictions_leave_with_the_agent_context(void **state)
{
    cdsh_host *h = *state;
    static const cdsh_plugin_def def = {.name = "t", .apply = keep_ctx};
    cdsh_plugin *p = NULL;
    cdsh_plugin_load(h, &def, NULL, &p, NULL);
    cdsh_tools *tools = cdsh_host_tools(h);
    cdsh_tool_def g = tool_named("global_tool"), own = tool_named("own_tool");
    assert_int_equal(cdsh_ctx_register_tool(CTX, &g, NULL), 0);
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    cdsh_plugin_ctx *actx = cdsh_ctx_scoped_new(CTX, a, NULL);
    assert_int_equal(cdsh_ctx_register_tool(actx, &own, NULL), 0);
    const char *deny[] = {"global_tool", NULL};
    assert_int_equal(cdsh_ctx_restrict_tools(actx, NULL, deny, NULL), 0);
    assert_false(cdsh_tools_visible(tools, a, "global_tool"));
    assert_true(cdsh_tools_visible(tools, a, "own_tool"));
    assert_false(cdsh_tools_visible(tools, NULL, "own_tool"));
    cdsh_error err = {0};
    assert_int_equal(cdsh_ctx_restrict_tools(CTX, NULL, deny, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "BAD_RESTRICTION"); /* global contexts cannot restrict */
    cdsh_ctx_scoped_free(actx);
    assert_true(cdsh_tools_visible(tools, a, "global_tool"));
    assert_false(cdsh_tools_visible(tools, a, "own_tool"));
    cdsh_plugin_unload(p);
    assert_false(cdsh_tools_visible(tools, NULL, "global_tool"));
    assert_int_equal(cdsh_tools_count(tools), 0);
    cdsh_scope_unref(a);
}

static cdsh_tools_verdict ask_always(void *ud, const cdsh_tool_exec *exec, char **reason)
{
    (void)ud, (void)exec, (void)reason;
    return CDSH_TOOLS_ASK;
}

static int APPROVALS;

static cdsh_approval_outcome approve(void *ud, const cdsh_tool_exec *exec, const char *reason)
{
    (void)ud, (void)exec, (void)reason;
    APPROVALS++;
    return CDSH_APPROVAL_ALLOWED_ONCE;
}

static int hooks_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    cdsh_approval_service svc = {.request = approve};
    int rc = cdsh_ctx_on_pre_execute(ctx, ask_always, NULL, NULL, err);
    return rc ? rc : cdsh_ctx_set_approval(ctx, &svc, err);
}

static cdsh_toolresult *call_tool(cdsh_host *h, cdsh_scope *agent, const char *name)
{
    cdsh_dispatch_input in = {.call_id = "c9", .name = name, .agent = agent};
    return cdsh_dispatch_execute(cdsh_host_tools(h), &in);
}

static void hooks_and_approval_belong_to_the_plugin_that_set_them(void **state)
{
    cdsh_host *h = *state;
    static const cdsh_plugin_def tools_def = {.name = "t", .apply = keep_ctx};
    static const cdsh_plugin_def policy = {.name = "policy", .apply = hooks_apply};
    cdsh_plugin_load(h, &tools_def, NULL, NULL, NULL);
    cdsh_tool_def g = tool_named("probe");
    assert_int_equal(cdsh_ctx_register_tool(CTX, &g, NULL), 0);
    size_t before = cdsh_tools_count(cdsh_host_tools(h));
    cdsh_plugin *p = NULL;
    assert_int_equal(cdsh_plugin_load(h, &policy, NULL, &p, NULL), 0);
    assert_int_equal(cdsh_tools_count(cdsh_host_tools(h)), before + 2);
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    APPROVALS = 0;
    cdsh_toolresult *r = call_tool(h, a, "probe");
    assert_false(r->is_error); /* asked, approved once */
    assert_int_equal(APPROVALS, 1);
    cdsh_toolresult_free(r);
    cdsh_plugin_unload(p);
    assert_int_equal(cdsh_tools_count(cdsh_host_tools(h)), before);
    r = call_tool(h, a, "probe"); /* no hook any more: allowed without asking */
    assert_false(r->is_error);
    assert_int_equal(APPROVALS, 1);
    cdsh_toolresult_free(r);
    cdsh_scope_unref(a);
}

/* ---- resources, /skills, providers, the cache setting ------------------------ */

static cdsh_toolresult *call_resource(cdsh_host *h, const char *name, const char *resource)
{
    json_t *args = json_pack("{s:s, s:s}", "name", name, "resource", resource);
    cdsh_dispatch_input in = {.call_id = "c2", .name = "skill", .args = args};
    cdsh_toolresult *r = cdsh_dispatch_execute(cdsh_host_tools(h), &in);
    json_decref(args);
    return r;
}

static const char *text_of(const cdsh_toolresult *r)
{
    return json_string_value(json_object_get(json_array_get(r->content, 0), "text"));
}

static void the_tool_reads_a_resource_of_the_skill(void **state)
{
    cdsh_host *h = *state;
    cdsh_plugin_load(h, &cdsh_skilltool_plugin, NULL, NULL, NULL);
    char *home = cdsh_test_home_new();
    char dir[900], path[1000];
    snprintf(dir, sizeof dir, "%s/notes", home);
    assert_int_equal(cdsh_fs_mkdir_p(dir, 0700, NULL), 0);
    snprintf(path, sizeof path, "%s/template.md", dir);
    cdsh_test_write_file(path, "# Notes\n- who\n");
    json_t *base = json_pack("{s:s, s:s}", "kind", "directory", "path", dir);
    cdsh_skill_def s = {.name = "notes", .description = "d", .content = "Use template.md.",
                        .resource_base = base};
    cdsh_disposer_t d;
    assert_int_equal(cdsh_skills_register(cdsh_host_skills(h), NULL, &s, &d, NULL), 0);
    cdsh_toolresult *r = call_skill(h, NULL, "notes");
    assert_false(r->is_error);
    assert_true(json_equal(json_object_get(r->value, "resourceBase"), base));
    assert_non_null(strstr(text_of(r), "- template.md\n</skill_resources>"));
    cdsh_toolresult_free(r);
    r = call_resource(h, "notes", "template.md");
    assert_false(r->is_error);
    char *v = json_dumps(r->value, JSON_COMPACT);
    assert_string_equal(v, "{\"name\":\"notes\",\"provider\":\"runtime\",\"content\":"
                           "\"# Notes\\n- who\\n\",\"resource\":\"template.md\"}");
    free(v);
    assert_string_equal(text_of(r), "<skill_resource name=\"notes\" path=\"template.md\">\n"
                                    "# Notes\n- who\n\n</skill_resource>");
    cdsh_toolresult_free(r);
    r = call_resource(h, "notes", "../notes/../../x\"y");
    assert_true(r->is_error);
    assert_string_equal(r->error_code, "INVALID_RESOURCE");
    assert_string_equal(r->error_message, "resource \"../notes/../../x\"y\" of skill \"notes\" "
                                          "must be a relative path inside its directory");
    cdsh_toolresult_free(r);
    r = call_resource(h, "notes", "missing.md");
    assert_string_equal(r->error_code, "UNKNOWN_RESOURCE");
    assert_string_equal(r->error_message, "skill \"notes\" has no resource \"missing.md\"");
    cdsh_toolresult_free(r);
    cdsh_disposer_run(&d);
    /* a skill without a directory has no resources */
    cdsh_skill_def plain = {.name = "plain", .description = "d", .content = "x"};
    assert_int_equal(cdsh_skills_register(cdsh_host_skills(h), NULL, &plain, &d, NULL), 0);
    r = call_resource(h, "plain", "a.md");
    assert_string_equal(r->error_code, "NO_SKILL_RESOURCES");
    cdsh_toolresult_free(r);
    cdsh_disposer_run(&d);
    json_decref(base);
    cdsh_test_home_free(home);
}

static int run_line(cdsh_host *h, const char *line, cdsh_command_outcome *oc)
{
    memset(oc, 0, sizeof *oc);
    return cdsh_commands_execute(cdsh_host_commands(h), NULL, line, NULL, NULL, oc, NULL);
}

/* /skills honours userInvocable: model-only skills are neither listed nor
 * shown; user-only ones are (the person may run what the model may not). */
static void skills_command_offers_only_user_invocable_skills(void **state)
{
    cdsh_host *h = *state;
    cdsh_plugin *pl = NULL;
    cdsh_plugin_load(h, &cdsh_skilltool_plugin, NULL, &pl, NULL);
    cdsh_command_outcome oc;
    assert_int_equal(run_line(h, "/skills", &oc), 1);
    assert_int_equal(oc.kind, CDSH_COMMAND_SUCCESS);
    assert_string_equal(oc.text,
                        "no skills you can run (the enabled plugins register none for users)");
    cdsh_commands_outcome_clear(&oc);
    cdsh_disposer_t d1, d2, d3;
    cdsh_skill_def u = {.name = "deploy", .description = "Ship a release", .content = "ship it",
                        .user_only = true};
    cdsh_skill_def m = {.name = "lint", .description = "Lint", .content = "lint it",
                        .model_only = true};
    cdsh_skill_def b = {.name = "notes", .description = "Take notes", .content = "write"};
    cdsh_skills_register(cdsh_host_skills(h), NULL, &u, &d1, NULL);
    cdsh_skills_register(cdsh_host_skills(h), NULL, &m, &d2, NULL);
    cdsh_skills_register(cdsh_host_skills(h), NULL, &b, &d3, NULL);
    assert_int_equal(run_line(h, "/skills", &oc), 1);
    assert_string_equal(oc.text, "/skills deploy — Ship a release\n/skills notes — Take notes");
    cdsh_commands_outcome_clear(&oc);
    assert_int_equal(run_line(h, "/skills  deploy", &oc), 1);
    assert_int_equal(oc.kind, CDSH_COMMAND_SUCCESS);
    assert_non_null(strstr(oc.text, "<skill_instructions>\nship it\n</skill_instructions>"));
    cdsh_commands_outcome_clear(&oc);
    assert_int_equal(run_line(h, "/skills lint", &oc), 1);
    assert_int_equal(oc.kind, CDSH_COMMAND_ERROR);
    assert_string_equal(oc.text, "skill \"lint\" is for the model only (its invocation policy "
                                 "keeps it from /skills)");
    cdsh_commands_outcome_clear(&oc);
    assert_int_equal(run_line(h, "/skills nope", &oc), 1);
    assert_int_equal(oc.kind, CDSH_COMMAND_ERROR);
    assert_string_equal(oc.text, "unknown skill \"nope\"; skills you can run: deploy, notes");
    cdsh_commands_outcome_clear(&oc);
    cdsh_disposer_run(&d1), cdsh_disposer_run(&d2), cdsh_disposer_run(&d3);
    /* the command leaves with the plugin */
    cdsh_plugin_unload(pl);
    assert_int_equal(run_line(h, "/skills", &oc), 0);
}

typedef struct one_provider {
    int lists;
} one_provider;

static int op_list(void *ud, const cdsh_skill_lookup *opts, json_t **out, bool *complete,
                   cdsh_error *err)
{
    (void)opts, (void)err;
    ((one_provider *)ud)->lists++;
    *out = json_pack("[{s:s, s:s, s:s, s:i, s:{s:b, s:b}}, {s:s, s:s, s:s, s:i}]", "name",
                     "hidden", "description", "kept from the model", "source", "bundled", "rank",
                     600, "invocation", "modelInvocable", 0, "userInvocable", 1, "name", "guide",
                     "description", "Guide", "source", "bundled", "rank", 600);
    *complete = true;
    return 0;
}

static int op_get(void *ud, const json_t *cand, const cdsh_skill_lookup *opts, json_t **def,
                  cdsh_error *err)
{
    (void)ud, (void)opts, (void)err;
    *def = json_pack("{s:O, s:s, s:s}", "name", json_object_get(cand, "name"), "description", "d",
                     "content", "from the bundle");
    return 0;
}

/* Provider skills reach the tool, the index and /skills with their flags. */
static void provider_skills_reach_every_surface_with_their_flags(void **state)
{
    cdsh_host *h = *state;
    cdsh_plugin_load(h, &cdsh_skilltool_plugin, NULL, NULL, NULL);
    one_provider op = {0};
    cdsh_skill_provider p = {.name = "bundle", .list = op_list, .get = op_get, .ud = &op};
    cdsh_disposer_t d;
    assert_int_equal(cdsh_skills_register_provider(cdsh_host_skills(h), &p, &d, NULL), 0);
    cdsh_toolresult *r = call_skill(h, NULL, "guide");
    assert_false(r->is_error);
    assert_string_equal(json_string_value(json_object_get(r->value, "content")),
                        "from the bundle");
    assert_string_equal(json_string_value(json_object_get(r->value, "provider")), "bundle");
    assert_non_null(strstr(text_of(r), "managed by provider \"bundle\""));
    cdsh_toolresult_free(r);
    r = call_skill(h, NULL, "hidden");
    assert_string_equal(r->error_code, "SKILL_NOT_MODEL_INVOCABLE");
    cdsh_toolresult_free(r);
    char *index = cdsh_skills_index_dup(cdsh_host_skills(h), NULL);
    assert_string_equal(index, "<available_skills>\n- guide: Guide\n</available_skills>\n"
                               "To use a skill, call the `skill` tool with its name to load "
                               "its instructions.\n");
    free(index);
    cdsh_command_outcome oc;
    run_line(h, "/skills", &oc);
    assert_string_equal(oc.text, "/skills guide — Guide\n/skills hidden — kept from the model");
    cdsh_commands_outcome_clear(&oc);
    cdsh_disposer_run(&d);
}

/* collectCacheMaxEntries is the plugin's setting; unloading restores 128. */
static void collect_cache_max_entries_is_a_setting(void **state)
{
    cdsh_host *h = *state;
    json_t *cfg = json_pack("{s:i}", "collectCacheMaxEntries", 0);
    cdsh_error err = {0};
    assert_int_equal(cdsh_plugin_load(h, &cdsh_skilltool_plugin, cfg, NULL, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "invalid config:\n  - expected a value >= 1 but got 0 (at "
                                     "collectCacheMaxEntries)");
    json_decref(cfg);
    cfg = json_pack("{s:i}", "collectCacheMaxEntries", 3);
    cdsh_plugin *pl = NULL;
    assert_int_equal(cdsh_plugin_load(h, &cdsh_skilltool_plugin, cfg, &pl, NULL), 0);
    cdsh_skills *sk = cdsh_host_skills(h);
    assert_int_equal(cdsh_skills_cache_max(sk), 3);
    one_provider op = {0};
    cdsh_skill_provider p = {.name = "bundle", .list = op_list, .get = op_get, .ud = &op};
    cdsh_disposer_t d;
    cdsh_skills_register_provider(sk, &p, &d, NULL);
    const char *cwds[] = {"/1", "/2", "/3", "/4", "/1"};
    for (size_t i = 0; i < 5; i++) {
        cdsh_skill_lookup o = {.cwd = cwds[i]};
        json_decref(cdsh_skills_snapshot(sk, NULL, &o, NULL));
    }
    assert_int_equal(op.lists, 5); /* /1 was evicted by /4 */
    assert_int_equal(cdsh_skills_cache_size(sk), 3);
    cdsh_plugin_unload(pl);
    assert_int_equal(cdsh_skills_cache_max(sk), 128);
    cdsh_disposer_run(&d);
    json_decref(cfg);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(plugin_registers_the_skill_tool_with_its_schema),
        T(skill_tool_returns_the_rendered_body),
        T(unknown_skill_fails_with_the_available_names),
        T(user_only_skills_are_refused_to_the_model),
        T(missing_name_argument_is_invalid_args),
        T(agent_skills_are_loaded_only_by_that_agent),
        T(max_body_bytes_truncates_on_a_character_boundary),
        T(max_body_bytes_below_minimum_fails_the_plugin),
        T(unloading_the_plugin_removes_the_tool_and_reload_restores_it),
        T(refused_tool_registration_releases_ud),
        T(scoped_tools_and_restrictions_leave_with_the_agent_context),
        T(hooks_and_approval_belong_to_the_plugin_that_set_them),
        T(the_tool_reads_a_resource_of_the_skill),
        T(skills_command_offers_only_user_invocable_skills),
        T(provider_skills_reach_every_surface_with_their_flags),
        T(collect_cache_max_entries_is_a_setting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
