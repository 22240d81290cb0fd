/* test_tools.c — the tool registry: registration rules, layers and
 * shadowing, the single visibility resolver behind list/get/dispatch,
 * restrict() and every refusal, change events, parallel classification. */
#include "tools_fixture.h"

/* ---- registration ------------------------------------------------------------ */

static void schemas_show_exactly_name_description_parameters(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    json_t *schemas = cdsh_tools_schemas(f->tools, NULL);
    assert_int_equal(json_array_size(schemas), 1);
    json_t *s = json_array_get(schemas, 0);
    assert_int_equal(json_object_size(s), 3);
    assert_string_equal(json_string_value(json_object_get(s, "name")), "echo");
    assert_string_equal(json_string_value(json_object_get(s, "description")), "echo the text");
    json_t *want = js("{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}");
    assert_true(json_equal(json_object_get(s, "parameters"), want));
    json_decref(want);
    json_decref(schemas);
}

static void register_refuses_names_outside_provider_rule(void **state)
{
    fx *f = *state;
    const char *bad[] = {
        "",        "a b", "tool.name",
        "ünïcode", "x/y", "a2345678901234567890123456789012345678901234567890123456789012345"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cdsh_tool_def def = fx_def(bad[i], body_echo, NULL);
        cdsh_disposer_t d;
        cdsh_error err;
        assert_int_equal(cdsh_tools_register(f->tools, NULL, &def, &d, &err), CDSH_EINVAL);
        assert_string_equal(err.code, "BAD_TOOL_NAME");
        char want[256];
        snprintf(want, sizeof want,
                 "tool name \"%s\" is invalid: use 1-64 characters from A-Z a-z 0-9 _ -", bad[i]);
        assert_string_equal(err.message, want);
        assert_null(d.fn);
    }
    assert_int_equal(cdsh_tools_count(f->tools), 0);
}

static void register_accepts_64_characters_dash_and_underscore(void **state)
{
    fx *f = *state;
    const char *name = "A-z_012345678901234567890123456789012345678901234567890123456789";
    assert_int_equal(strlen(name), 64);
    cdsh_tool_def def = fx_def(name, body_echo, NULL);
    fx_add(f, NULL, &def);
    assert_true(cdsh_tools_visible(f->tools, NULL, name));
}

static void register_refuses_reserved_run_code(void **state)
{
    fx *f = *state;
    cdsh_scope *agent = cdsh_scope_new("agent", NULL);
    cdsh_tool_def def = fx_def("run_code", body_echo, NULL);
    cdsh_disposer_t d;
    cdsh_error err;
    assert_int_equal(cdsh_tools_register(f->tools, NULL, &def, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "RESERVED_TOOL");
    assert_string_equal(err.message, "tool name \"run_code\" is reserved for the Code Mode "
                                     "presentation transport and cannot be registered or shadowed");
    /* Nor can a scope shadow it. */
    assert_int_equal(cdsh_tools_register(f->tools, agent, &def, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "RESERVED_TOOL");
    cdsh_scope_unref(agent);
}

static void register_refuses_duplicate_in_global_layer(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    cdsh_tool_def def = fx_def("echo", body_echo, NULL);
    cdsh_disposer_t d;
    cdsh_error err;
    assert_int_equal(cdsh_tools_register(f->tools, NULL, &def, &d, &err), CDSH_EEXIST);
    assert_string_equal(err.code, "TOOL_EXISTS");
    assert_string_equal(err.message, "tool \"echo\" is already registered (register it through "
                                     "agent.ctx to shadow it for one agent)");
}

static void register_refuses_duplicate_in_same_scope(void **state)
{
    fx *f = *state;
    cdsh_scope *agent = cdsh_scope_new("agent", NULL);
    fx_add_echo(f, agent, "echo");
    cdsh_tool_def def = fx_def("echo", body_echo, NULL);
    cdsh_disposer_t d;
    cdsh_error err;
    assert_int_equal(cdsh_tools_register(f->tools, agent, &def, &d, &err), CDSH_EEXIST);
    assert_string_equal(err.message, "tool \"echo\" is already registered in this scope");
    cdsh_scope_unref(agent);
}

static void register_requires_execute_description_and_output_schema(void **state)
{
    fx *f = *state;
    cdsh_disposer_t d;
    cdsh_error err;
    cdsh_tool_def def = fx_def("t", NULL, NULL);
    assert_int_equal(cdsh_tools_register(f->tools, NULL, &def, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "BAD_TOOL_DEF");
    assert_string_equal(err.message, "tool \"t\" must declare execute");
    def = fx_def("t", body_echo, NULL);
    def.description = NULL;
    assert_int_equal(cdsh_tools_register(f->tools, NULL, &def, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "tool \"t\" must declare a description");
    def = fx_def("t", body_echo, NULL);
    def.output_schema = NULL;
    assert_int_equal(cdsh_tools_register(f->tools, NULL, &def, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.message,
                        "tool \"t\" must declare output { schema, render, presentationMeta? }");
    assert_int_equal(cdsh_tools_count(f->tools), 0);
}

static void register_refuses_non_positive_timeout(void **state)
{
    fx *f = *state;
    cdsh_tool_def def = fx_def("slow", body_echo, NULL);
    def.timeout_ms = -5;
    cdsh_disposer_t d;
    cdsh_error err;
    assert_int_equal(cdsh_tools_register(f->tools, NULL, &def, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "tool \"slow\" timeoutMs must be a positive finite number");
}

static void register_refuses_schemas_outside_the_subset(void **state)
{
    fx *f = *state;
    json_t *bad = js("{\"type\":\"object\",\"patternProperties\":{}}");
    cdsh_tool_def def = fx_def("t", body_echo, NULL);
    def.parameters = bad;
    cdsh_disposer_t d;
    cdsh_error err;
    assert_int_equal(cdsh_tools_register(f->tools, NULL, &def, &d, &err), CDSH_EUNSUPPORTED);
    assert_string_equal(err.code, "UNSUPPORTED_SCHEMA");
    assert_non_null(strstr(err.message, "tool \"t\" parameters: "));
    assert_non_null(strstr(err.message, "patternProperties"));
    def = fx_def("t", body_echo, NULL);
    def.output_schema = bad;
    assert_int_equal(cdsh_tools_register(f->tools, NULL, &def, &d, &err), CDSH_EUNSUPPORTED);
    assert_string_equal(err.code, "UNSUPPORTED_SCHEMA");
    assert_non_null(strstr(err.message, "tool \"t\" output schema: "));
    json_decref(bad);
}

static atomic_int g_freed;
static void count_free(void *ud)
{
    (void)ud;
    atomic_fetch_add(&g_freed, 1);
}

static void failed_registration_leaves_ud_to_the_caller(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    atomic_store(&g_freed, 0);
    cdsh_tool_def def = fx_def("echo", body_echo, NULL);
    def.free_ud = count_free;
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_register(f->tools, NULL, &def, &d, NULL), CDSH_EEXIST);
    assert_int_equal(atomic_load(&g_freed), 0);
}

static void disposer_unregisters_and_releases_ud(void **state)
{
    fx *f = *state;
    atomic_store(&g_freed, 0);
    cdsh_tool_def def = fx_def("temp", body_echo, NULL);
    def.free_ud = count_free;
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_register(f->tools, NULL, &def, &d, NULL), 0);
    assert_true(cdsh_tools_visible(f->tools, NULL, "temp"));
    cdsh_disposer_run(&d);
    assert_false(cdsh_tools_visible(f->tools, NULL, "temp"));
    assert_int_equal(atomic_load(&g_freed), 1);
    assert_int_equal(cdsh_tools_count(f->tools), 0);
    /* The name is free again. */
    assert_int_equal(cdsh_tools_register(f->tools, NULL, &def, &d, NULL), 0);
    cdsh_disposer_run(&d);
    assert_int_equal(atomic_load(&g_freed), 2);
}

typedef struct self_dispose {
    cdsh_disposer_t d;
    bool freed_during_body;
} self_dispose;

static void mark_freed(void *ud)
{
    atomic_store(&g_freed, 1);
    (void)ud;
}

static int body_disposes_itself(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)exec;
    self_dispose *sd = ud;
    cdsh_disposer_run(&sd->d);
    sd->freed_during_body = atomic_load(&g_freed) != 0;
    *value = json_string("still here");
    return 0;
}

static void ud_outlives_a_call_that_disposes_its_tool(void **state)
{
    fx *f = *state;
    atomic_store(&g_freed, 0);
    self_dispose sd = {0};
    cdsh_tool_def def = fx_def("selfish", body_disposes_itself, &sd);
    def.free_ud = mark_freed;
    assert_int_equal(cdsh_tools_register(f->tools, NULL, &def, &sd.d, NULL), 0);
    cdsh_toolresult *res = fx_call(f, NULL, "selfish", NULL);
    assert_string_equal(vstr(res), "still here");
    assert_false(sd.freed_during_body);
    assert_int_equal(atomic_load(&g_freed), 1);
    assert_false(cdsh_tools_visible(f->tools, NULL, "selfish"));
    cdsh_toolresult_free(res);
}

static void registry_keeps_its_own_copy_of_schemas(void **state)
{
    fx *f = *state;
    json_t *params = js("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}");
    cdsh_tool_def def = fx_def("copy", body_echo, NULL);
    def.parameters = params;
    fx_add(f, NULL, &def);
    json_object_set_new(params, "title", json_string("mutated"));
    json_t *got = cdsh_tools_info_dup(f->tools, NULL, "copy");
    assert_null(json_object_get(json_object_get(got, "parameters"), "title"));
    /* And what get/schemas return are copies too. */
    json_object_set_new(json_object_get(got, "parameters"), "title", json_string("x"));
    json_t *again = cdsh_tools_info_dup(f->tools, NULL, "copy");
    assert_null(json_object_get(json_object_get(again, "parameters"), "title"));
    json_decref(got);
    json_decref(again);
    json_decref(params);
}

static void get_describes_visible_tool_with_its_layer(void **state)
{
    fx *f = *state;
    cdsh_scope *agent = cdsh_scope_new("a1", NULL);
    cdsh_tool_def def = fx_def("timed", body_echo, NULL);
    def.timeout_ms = 1500;
    fx_add(f, NULL, &def);
    fx_add_echo(f, agent, "mine");
    json_t *g = cdsh_tools_info_dup(f->tools, agent, "timed");
    assert_non_null(g);
    assert_string_equal(json_string_value(json_object_get(g, "name")), "timed");
    assert_true(json_is_null(json_object_get(g, "layer")));
    assert_int_equal(json_integer_value(json_object_get(g, "timeoutMs")), 1500);
    assert_non_null(json_object_get(g, "outputSchema"));
    json_decref(g);
    g = cdsh_tools_info_dup(f->tools, agent, "mine");
    assert_string_equal(json_string_value(json_object_get(g, "layer")), "a1");
    assert_null(json_object_get(g, "timeoutMs"));
    json_decref(g);
    assert_null(cdsh_tools_info_dup(f->tools, NULL, "mine"));
    assert_null(cdsh_tools_info_dup(f->tools, NULL, "nope"));
    cdsh_scope_unref(agent);
}

/* ---- layers and shadowing ------------------------------------------------------- */

static void scoped_registration_shadows_global_for_that_agent_only(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL), *b = cdsh_scope_new("b", NULL);
    json_t *global_value = json_string("global"), *scoped_value = json_string("scoped");
    cdsh_tool_def g = fx_def("who", body_const, global_value);
    cdsh_tool_def s = fx_def("who", body_const, scoped_value);
    fx_add(f, NULL, &g);
    fx_add(f, a, &s);
    cdsh_toolresult *ra = fx_call(f, a, "who", NULL);
    cdsh_toolresult *rb = fx_call(f, b, "who", NULL);
    cdsh_toolresult *rg = fx_call(f, NULL, "who", NULL);
    assert_string_equal(vstr(ra), "scoped");
    assert_string_equal(vstr(rb), "global");
    assert_string_equal(vstr(rg), "global");
    cdsh_toolresult_free(ra);
    cdsh_toolresult_free(rb);
    cdsh_toolresult_free(rg);
    json_decref(global_value);
    json_decref(scoped_value);
    cdsh_scope_unref(a);
    cdsh_scope_unref(b);
}

static void shadowed_name_keeps_its_original_position(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    fx_add_echo(f, NULL, "first");
    fx_add_echo(f, NULL, "second");
    fx_add_echo(f, NULL, "third");
    fx_add_echo(f, a, "own");
    fx_add_echo(f, a, "second");
    json_t *names = cdsh_tools_names(f->tools, a);
    json_t *want = js("[\"first\",\"second\",\"third\",\"own\"]");
    assert_true(json_equal(names, want));
    json_decref(names);
    json_decref(want);
    cdsh_scope_unref(a);
}

static void agent_inherits_its_preset_layer(void **state)
{
    fx *f = *state;
    cdsh_scope *preset = cdsh_scope_new("preset", NULL);
    cdsh_scope *agent = cdsh_scope_new("agent", preset);
    cdsh_scope *other = cdsh_scope_new("other", NULL);
    fx_add_echo(f, preset, "preset_tool");
    assert_true(cdsh_tools_visible(f->tools, agent, "preset_tool"));
    assert_true(cdsh_tools_visible(f->tools, preset, "preset_tool"));
    assert_false(cdsh_tools_visible(f->tools, other, "preset_tool"));
    assert_false(cdsh_tools_visible(f->tools, NULL, "preset_tool"));
    cdsh_toolresult *res = fx_call(f, agent, "preset_tool", "{\"text\":\"hi\"}");
    assert_string_equal(vstr(res), "hi");
    cdsh_toolresult_free(res);
    cdsh_scope_unref(agent);
    cdsh_scope_unref(preset);
    cdsh_scope_unref(other);
}

static void nearer_ancestor_shadows_farther_one(void **state)
{
    fx *f = *state;
    cdsh_scope *root = cdsh_scope_new("root", NULL);
    cdsh_scope *mid = cdsh_scope_new("mid", root);
    cdsh_scope *leaf = cdsh_scope_new("leaf", mid);
    json_t *vg = json_string("g"), *vr = json_string("root"), *vm = json_string("mid");
    cdsh_tool_def g = fx_def("x", body_const, vg), r = fx_def("x", body_const, vr),
                  m = fx_def("x", body_const, vm);
    fx_add(f, NULL, &g);
    fx_add(f, root, &r);
    fx_add(f, mid, &m);
    cdsh_toolresult *res = fx_call(f, leaf, "x", NULL);
    assert_string_equal(vstr(res), "mid");
    cdsh_toolresult_free(res);
    res = fx_call(f, root, "x", NULL);
    assert_string_equal(vstr(res), "root");
    cdsh_toolresult_free(res);
    json_decref(vg);
    json_decref(vr);
    json_decref(vm);
    cdsh_scope_unref(leaf);
    cdsh_scope_unref(mid);
    cdsh_scope_unref(root);
}

static void another_agents_tools_are_unknown(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL), *b = cdsh_scope_new("b", NULL);
    fx_add_echo(f, a, "private");
    json_t *names = cdsh_tools_names(f->tools, b);
    assert_int_equal(json_array_size(names), 0);
    json_decref(names);
    cdsh_toolresult *res = fx_call(f, b, "private", NULL);
    assert_error(res, "UNKNOWN_TOOL", "unknown tool \"private\"");
    assert_string_equal(res->error_name, "ToolNotFoundError");
    assert_string_equal(only_text(res), "Error: unknown tool \"private\"");
    cdsh_toolresult_free(res);
    cdsh_scope_unref(a);
    cdsh_scope_unref(b);
}

static void global_view_ignores_scoped_layers(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    fx_add_echo(f, NULL, "g");
    fx_add_echo(f, a, "s");
    json_t *names = cdsh_tools_names(f->tools, NULL);
    json_t *want = js("[\"g\"]");
    assert_true(json_equal(names, want));
    json_decref(names);
    json_decref(want);
    cdsh_scope_unref(a);
}

/* ---- restrict ------------------------------------------------------------------ */

static const char *const NONE[] = {NULL};

static void restrict_refuses_unscoped_context(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    const char *deny[] = {"echo", NULL};
    cdsh_disposer_t d;
    cdsh_error err;
    assert_int_equal(cdsh_tools_restrict(f->tools, NULL, NULL, deny, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "BAD_RESTRICTION");
    assert_string_equal(err.message,
                        "tools.restrict() requires a scoped context (agent.ctx): a context-global "
                        "restriction would mask every agent — deny the tool for the intended "
                        "agent instead");
}

static void restrict_refuses_empty_filter(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    cdsh_disposer_t d;
    cdsh_error err;
    assert_int_equal(cdsh_tools_restrict(f->tools, a, NULL, NULL, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.message,
                        "tools.restrict({}) is a no-op: pass `allow` and/or `deny` (an empty "
                        "filter is almost always a materialized-empty-config bug)");
    cdsh_scope_unref(a);
}

static void restrict_refuses_run_code(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    const char *allow[] = {"run_code", NULL};
    cdsh_disposer_t d;
    cdsh_error err;
    assert_int_equal(cdsh_tools_restrict(f->tools, a, allow, NULL, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.message,
                        "tools.restrict() cannot name reserved Code Mode presentation transport "
                        "\"run_code\"; restrict end-capability tools instead");
    cdsh_scope_unref(a);
}

static void restrict_refuses_an_unknown_name_listing_known_ones(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    fx_add_echo(f, NULL, "zeta");
    fx_add_echo(f, NULL, "alpha");
    const char *deny[] = {"ghost", NULL};
    cdsh_disposer_t d;
    cdsh_error err;
    assert_int_equal(cdsh_tools_restrict(f->tools, a, NULL, deny, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "tools.restrict() names unknown global tool \"ghost\"; "
                                     "known global tools: alpha, zeta");
    cdsh_scope_unref(a);
}

static void restrict_refuses_several_unknown_names_in_plural(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    fx_add_echo(f, NULL, "echo");
    const char *allow[] = {"echo", "x", NULL};
    const char *deny[] = {"y", NULL};
    cdsh_disposer_t d;
    cdsh_error err;
    assert_int_equal(cdsh_tools_restrict(f->tools, a, allow, deny, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "tools.restrict() names unknown global tools \"x\", \"y\"; "
                                     "known global tools: echo");
    cdsh_scope_unref(a);
}

static void restrict_refuses_own_layer_names(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    fx_add_echo(f, a, "mine");
    const char *deny[] = {"mine", NULL};
    cdsh_disposer_t d;
    cdsh_error err;
    assert_int_equal(cdsh_tools_restrict(f->tools, a, NULL, deny, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "tools.restrict() names unknown global tool \"mine\"; "
                                     "known global tools: (none)");
    assert_true(cdsh_tools_visible(f->tools, a, "mine"));
    cdsh_scope_unref(a);
}

static void restrict_deny_hides_from_list_get_and_dispatch_alike(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    fx_add_echo(f, NULL, "echo");
    fx_add_echo(f, NULL, "other");
    const char *deny[] = {"echo", NULL};
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_restrict(f->tools, a, NULL, deny, &d, NULL), 0);
    fx_keep(f, d);
    json_t *schemas = cdsh_tools_schemas(f->tools, a);
    assert_int_equal(json_array_size(schemas), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(schemas, 0), "name")),
                        "other");
    json_decref(schemas);
    assert_false(cdsh_tools_visible(f->tools, a, "echo"));
    assert_null(cdsh_tools_info_dup(f->tools, a, "echo"));
    cdsh_toolresult *res = fx_call(f, a, "echo", "{\"text\":\"x\"}");
    assert_error(res, "UNKNOWN_TOOL", "unknown tool \"echo\"");
    cdsh_toolresult_free(res);
    /* Still restrictable (known), and still visible globally. */
    json_t *known = cdsh_tools_restrictable_names(f->tools, a);
    json_t *want = js("[\"echo\",\"other\"]");
    assert_true(json_equal(known, want));
    json_decref(known);
    json_decref(want);
    assert_true(cdsh_tools_visible(f->tools, NULL, "echo"));
    cdsh_scope_unref(a);
}

static void restrict_allow_keeps_only_listed_and_excludes_later_globals(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    fx_add_echo(f, NULL, "keep");
    fx_add_echo(f, NULL, "drop");
    const char *allow[] = {"keep", NULL};
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_restrict(f->tools, a, allow, NULL, &d, NULL), 0);
    fx_keep(f, d);
    fx_add_echo(f, NULL, "later");
    json_t *names = cdsh_tools_names(f->tools, a);
    json_t *want = js("[\"keep\"]");
    assert_true(json_equal(names, want));
    json_decref(names);
    json_decref(want);
    cdsh_scope_unref(a);
}

static void restrict_deny_admits_later_globals(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    fx_add_echo(f, NULL, "bad");
    const char *deny[] = {"bad", NULL};
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_restrict(f->tools, a, NULL, deny, &d, NULL), 0);
    fx_keep(f, d);
    fx_add_echo(f, NULL, "later");
    assert_true(cdsh_tools_visible(f->tools, a, "later"));
    assert_false(cdsh_tools_visible(f->tools, a, "bad"));
    cdsh_scope_unref(a);
}

static void restrict_empty_allow_hides_every_inherited_tool(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    fx_add_echo(f, NULL, "g");
    fx_add_echo(f, a, "own");
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_restrict(f->tools, a, NONE, NULL, &d, NULL), 0);
    fx_keep(f, d);
    json_t *names = cdsh_tools_names(f->tools, a);
    json_t *want = js("[\"own\"]");
    assert_true(json_equal(names, want));
    json_decref(names);
    json_decref(want);
    cdsh_scope_unref(a);
}

static void restrict_masks_intersect_within_a_scope(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    fx_add_echo(f, NULL, "x");
    fx_add_echo(f, NULL, "y");
    fx_add_echo(f, NULL, "z");
    const char *allow1[] = {"x", "y", NULL}, *allow2[] = {"y", "z", NULL};
    cdsh_disposer_t d1, d2;
    assert_int_equal(cdsh_tools_restrict(f->tools, a, allow1, NULL, &d1, NULL), 0);
    assert_int_equal(cdsh_tools_restrict(f->tools, a, allow2, NULL, &d2, NULL), 0);
    json_t *names = cdsh_tools_names(f->tools, a);
    json_t *want = js("[\"y\"]");
    assert_true(json_equal(names, want));
    json_decref(names);
    json_decref(want);
    /* The exact disposer lifts only its own mask. */
    cdsh_disposer_run(&d1);
    names = cdsh_tools_names(f->tools, a);
    want = js("[\"y\",\"z\"]");
    assert_true(json_equal(names, want));
    json_decref(names);
    json_decref(want);
    cdsh_disposer_run(&d2);
    assert_true(cdsh_tools_visible(f->tools, a, "x"));
    assert_int_equal(cdsh_tools_count(f->tools), 3);
    cdsh_scope_unref(a);
}

static void preset_restriction_binds_its_agents(void **state)
{
    fx *f = *state;
    cdsh_scope *preset = cdsh_scope_new("preset", NULL);
    cdsh_scope *agent = cdsh_scope_new("agent", preset);
    fx_add_echo(f, NULL, "shell");
    fx_add_echo(f, NULL, "read");
    const char *deny[] = {"shell", NULL};
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_restrict(f->tools, preset, NULL, deny, &d, NULL), 0);
    fx_keep(f, d);
    assert_false(cdsh_tools_visible(f->tools, agent, "shell"));
    assert_true(cdsh_tools_visible(f->tools, agent, "read"));
    /* The agent's own allow cannot bring it back: masks intersect. */
    const char *allow[] = {"shell", "read", NULL};
    assert_int_equal(cdsh_tools_restrict(f->tools, agent, allow, NULL, &d, NULL), 0);
    fx_keep(f, d);
    assert_false(cdsh_tools_visible(f->tools, agent, "shell"));
    cdsh_scope_unref(agent);
    cdsh_scope_unref(preset);
}

static void agent_can_restrict_preset_tools(void **state)
{
    fx *f = *state;
    cdsh_scope *preset = cdsh_scope_new("preset", NULL);
    cdsh_scope *agent = cdsh_scope_new("agent", preset);
    fx_add_echo(f, preset, "preset_tool");
    const char *deny[] = {"preset_tool", NULL};
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_restrict(f->tools, agent, NULL, deny, &d, NULL), 0);
    fx_keep(f, d);
    assert_false(cdsh_tools_visible(f->tools, agent, "preset_tool"));
    assert_true(cdsh_tools_visible(f->tools, preset, "preset_tool"));
    cdsh_scope_unref(agent);
    cdsh_scope_unref(preset);
}

static void own_registration_survives_a_mask_on_the_same_name(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    json_t *vg = json_string("global"), *vs = json_string("own");
    cdsh_tool_def g = fx_def("t", body_const, vg), s = fx_def("t", body_const, vs);
    fx_add(f, NULL, &g);
    const char *deny[] = {"t", NULL};
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_restrict(f->tools, a, NULL, deny, &d, NULL), 0);
    fx_keep(f, d);
    assert_false(cdsh_tools_visible(f->tools, a, "t"));
    fx_add(f, a, &s);
    cdsh_toolresult *res = fx_call(f, a, "t", NULL);
    assert_string_equal(vstr(res), "own");
    cdsh_toolresult_free(res);
    json_decref(vg);
    json_decref(vs);
    cdsh_scope_unref(a);
}

static void restriction_of_one_agent_leaves_siblings_alone(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL), *b = cdsh_scope_new("b", NULL);
    fx_add_echo(f, NULL, "echo");
    const char *deny[] = {"echo", NULL};
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_restrict(f->tools, a, NULL, deny, &d, NULL), 0);
    fx_keep(f, d);
    assert_true(cdsh_tools_visible(f->tools, b, "echo"));
    cdsh_toolresult *res = fx_call(f, b, "echo", "{\"text\":\"ok\"}");
    assert_string_equal(vstr(res), "ok");
    cdsh_toolresult_free(res);
    cdsh_scope_unref(a);
    cdsh_scope_unref(b);
}

static void restrictable_names_are_sorted_and_exclude_own_layer(void **state)
{
    fx *f = *state;
    cdsh_scope *preset = cdsh_scope_new("p", NULL);
    cdsh_scope *agent = cdsh_scope_new("a", preset);
    fx_add_echo(f, NULL, "zz");
    fx_add_echo(f, preset, "mm");
    fx_add_echo(f, agent, "aa");
    json_t *known = cdsh_tools_restrictable_names(f->tools, agent);
    json_t *want = js("[\"mm\",\"zz\"]");
    assert_true(json_equal(known, want));
    json_decref(known);
    json_decref(want);
    known = cdsh_tools_restrictable_names(f->tools, NULL);
    assert_int_equal(json_array_size(known), 0);
    json_decref(known);
    cdsh_scope_unref(agent);
    cdsh_scope_unref(preset);
}

/* ---- events ------------------------------------------------------------------------ */

static void changes_are_announced_unfiltered(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL), *b = cdsh_scope_new("b", NULL);
    cdsh_disposer_t d;
    fx_add_echo(f, NULL, "g");
    fx_add_echo(f, a, "s");
    const char *deny[] = {"g", NULL};
    assert_int_equal(cdsh_tools_restrict(f->tools, a, NULL, deny, &d, NULL), 0);
    cdsh_disposer_run(&d);
    assert_int_equal(fx_count_events(f, "tools/change"), 4);
    json_t *p = fx_event(f, "tools/change", 0);
    assert_string_equal(json_string_value(json_object_get(p, "reason")), "register");
    assert_true(json_is_null(json_object_get(p, "scope")));
    assert_string_equal(json_string_value(json_array_get(json_object_get(p, "names"), 0)), "g");
    p = fx_event(f, "tools/change", 1);
    assert_string_equal(json_string_value(json_object_get(p, "scope")), "a");
    p = fx_event(f, "tools/change", 2);
    assert_string_equal(json_string_value(json_object_get(p, "reason")), "restrict");
    p = fx_event(f, "tools/change", 3);
    assert_string_equal(json_string_value(json_object_get(p, "reason")), "unrestrict");
    cdsh_scope_unref(a);
    cdsh_scope_unref(b);
}

static atomic_int g_scoped_heard;
static void scoped_listener(void *arg, const char *name, const cdsh_scope *scope,
                            const json_t *payload)
{
    (void)arg;
    (void)name;
    (void)scope;
    (void)payload;
    atomic_fetch_add(&g_scoped_heard, 1);
}

static void listener_of_another_agent_hears_changes(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL), *b = cdsh_scope_new("b", NULL);
    atomic_store(&g_scoped_heard, 0);
    cdsh_disposer_t d;
    assert_int_equal(cdsh_events_on(f->bus, "tools/change", b, scoped_listener, NULL, &d, NULL), 0);
    fx_add_echo(f, a, "s");
    assert_int_equal(atomic_load(&g_scoped_heard), 1);
    cdsh_disposer_run(&d);
    cdsh_scope_unref(a);
    cdsh_scope_unref(b);
}

static char *deny_all(void *ud, const cdsh_tool_exec *exec)
{
    (void)ud;
    (void)exec;
    return strdup("no");
}

static void unregistering_announces_and_guards_do_not(void **state)
{
    fx *f = *state;
    cdsh_tool_def def = fx_def("t", body_echo, NULL);
    cdsh_disposer_t d, g;
    assert_int_equal(cdsh_tools_register(f->tools, NULL, &def, &d, NULL), 0);
    assert_int_equal(cdsh_tools_guard(f->tools, NULL, deny_all, NULL, NULL, &g, NULL), 0);
    cdsh_disposer_run(&g);
    cdsh_disposer_run(&d);
    assert_int_equal(fx_count_events(f, "tools/change"), 2);
    json_t *p = fx_event(f, "tools/change", 1);
    assert_string_equal(json_string_value(json_object_get(p, "reason")), "unregister");
}

/* ---- classification, counts, concurrency ------------------------------------------- */

static bool safe_if_flag(void *ud, const json_t *args)
{
    (void)ud;
    return json_is_true(json_object_get(args, "safe"));
}

static void parallel_only_for_visible_valid_and_declared_safe_calls(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    json_t *params = js("{\"type\":\"object\",\"properties\":{\"safe\":{\"type\":\"boolean\"}}}");
    cdsh_tool_def def = fx_def("maybe", body_echo, NULL);
    def.parameters = params;
    def.is_concurrency_safe = safe_if_flag;
    fx_add(f, NULL, &def);
    cdsh_tool_def plain = fx_def("plain", body_echo, NULL);
    fx_add(f, NULL, &plain);
    json_t *yes = js("{\"safe\":true}"), *no = js("{\"safe\":false}"), *bad = js("{\"safe\":1}");
    assert_true(cdsh_tools_is_parallel(f->tools, NULL, "maybe", yes));
    assert_false(cdsh_tools_is_parallel(f->tools, NULL, "maybe", no));
    assert_false(cdsh_tools_is_parallel(f->tools, NULL, "maybe", bad));
    assert_false(cdsh_tools_is_parallel(f->tools, NULL, "plain", yes));
    assert_false(cdsh_tools_is_parallel(f->tools, NULL, "ghost", yes));
    const char *deny[] = {"maybe", NULL};
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_restrict(f->tools, a, NULL, deny, &d, NULL), 0);
    fx_keep(f, d);
    assert_false(cdsh_tools_is_parallel(f->tools, a, "maybe", yes));
    json_decref(yes);
    json_decref(no);
    json_decref(bad);
    json_decref(params);
    cdsh_scope_unref(a);
}

static void count_returns_to_zero_after_every_disposer(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    cdsh_disposer_t d[4];
    cdsh_tool_def def = fx_def("t", body_echo, NULL);
    assert_int_equal(cdsh_tools_register(f->tools, NULL, &def, &d[0], NULL), 0);
    const char *deny[] = {"t", NULL};
    assert_int_equal(cdsh_tools_restrict(f->tools, a, NULL, deny, &d[1], NULL), 0);
    assert_int_equal(cdsh_tools_guard(f->tools, a, deny_all, NULL, NULL, &d[2], NULL), 0);
    cdsh_approval_service svc = {.request = NULL};
    assert_int_equal(cdsh_tools_set_approval(f->tools, &svc, &d[3], NULL), CDSH_EINVAL);
    assert_int_equal(cdsh_tools_count(f->tools), 3);
    for (int i = 2; i >= 0; i--)
        cdsh_disposer_run(&d[i]);
    assert_int_equal(cdsh_tools_count(f->tools), 0);
    cdsh_scope_unref(a);
}

typedef struct churn {
    fx *f;
    int id;
    atomic_int *failures;
} churn;

static void *churn_main(void *arg)
{
    churn *c = arg;
    char name[32];
    for (int i = 0; i < 200; i++) {
        snprintf(name, sizeof name, "t%d_%d", c->id, i % 5);
        cdsh_tool_def def = fx_def(name, body_const, NULL);
        cdsh_disposer_t d;
        if (cdsh_tools_register(c->f->tools, NULL, &def, &d, NULL) != 0) {
            atomic_fetch_add(c->failures, 1);
            continue;
        }
        json_t *schemas = cdsh_tools_schemas(c->f->tools, NULL);
        if (!schemas)
            atomic_fetch_add(c->failures, 1);
        json_decref(schemas);
        cdsh_dispatch_input in = {.call_id = "c", .name = "stable"};
        cdsh_toolresult *res = cdsh_dispatch_execute(c->f->tools, &in);
        if (!res || res->is_error)
            atomic_fetch_add(c->failures, 1);
        cdsh_toolresult_free(res);
        cdsh_disposer_run(&d);
    }
    return NULL;
}

static void concurrent_registration_and_dispatch_stay_consistent(void **state)
{
    fx *f = *state;
    json_t *v = json_string("ok");
    cdsh_tool_def stable = fx_def("stable", body_const, v);
    fx_add(f, NULL, &stable);
    atomic_int failures = 0;
    pthread_t th[4];
    churn c[4];
    for (int i = 0; i < 4; i++) {
        c[i] = (churn){f, i, &failures};
        pthread_create(&th[i], NULL, churn_main, &c[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&failures), 0);
    assert_int_equal(cdsh_tools_count(f->tools), 1);
    json_decref(v);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(schemas_show_exactly_name_description_parameters),
        T(register_refuses_names_outside_provider_rule),
        T(register_accepts_64_characters_dash_and_underscore),
        T(register_refuses_reserved_run_code),
        T(register_refuses_duplicate_in_global_layer),
        T(register_refuses_duplicate_in_same_scope),
        T(register_requires_execute_description_and_output_schema),
        T(register_refuses_non_positive_timeout),
        T(register_refuses_schemas_outside_the_subset),
        T(failed_registration_leaves_ud_to_the_caller),
        T(disposer_unregisters_and_releases_ud),
        T(ud_outlives_a_call_that_disposes_its_tool),
        T(registry_keeps_its_own_copy_of_schemas),
        T(get_describes_visible_tool_with_its_layer),
        T(scoped_registration_shadows_global_for_that_agent_only),
        T(shadowed_name_keeps_its_original_position),
        T(agent_inherits_its_preset_layer),
        T(nearer_ancestor_shadows_farther_one),
        T(another_agents_tools_are_unknown),
        T(global_view_ignores_scoped_layers),
        T(restrict_refuses_unscoped_context),
        T(restrict_refuses_empty_filter),
        T(restrict_refuses_run_code),
        T(restrict_refuses_an_unknown_name_listing_known_ones),
        T(restrict_refuses_several_unknown_names_in_plural),
        T(restrict_refuses_own_layer_names),
        T(restrict_deny_hides_from_list_get_and_dispatch_alike),
        T(restrict_allow_keeps_only_listed_and_excludes_later_globals),
        T(restrict_deny_admits_later_globals),
        T(restrict_empty_allow_hides_every_inherited_tool),
        T(restrict_masks_intersect_within_a_scope),
        T(preset_restriction_binds_its_agents),
        T(agent_can_restrict_preset_tools),
        T(own_registration_survives_a_mask_on_the_same_name),
        T(restriction_of_one_agent_leaves_siblings_alone),
        T(restrictable_names_are_sorted_and_exclude_own_layer),
        T(changes_are_announced_unfiltered),
        T(listener_of_another_agent_hears_changes),
        T(unregistering_announces_and_guards_do_not),
        T(parallel_only_for_visible_valid_and_declared_safe_calls),
        T(count_returns_to_zero_after_every_disposer),
        T(concurrent_registration_and_dispatch_stay_consistent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
