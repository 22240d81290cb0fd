/* test_facade_surface.c — surface metrics: 157 stub primitives in eight
 * domains (the digest's scale experiment) get 15 semantic operations; prints
 * the visible tool count and schema bytes, counted as `cdsh tools list --json`
 * counts them, before and after, and checks the arithmetic. */
#include "facade_fixture.h"

typedef struct surface {
    size_t count, bytes;
} surface;

static surface measure(cdsh_scope *agent, const char *only_prefix_list)
{
    surface s = {0, 0};
    json_t *schemas = cdsh_tools_schemas(cdsh_host_tools(H), agent);
    size_t i;
    json_t *t;
    json_array_foreach(schemas, i, t) {
        const char *name = json_string_value(json_object_get(t, "name"));
        if (only_prefix_list && !strstr(only_prefix_list, name))
            continue;
        char *compact = json_dumps(t, JSON_COMPACT | JSON_PRESERVE_ORDER);
        s.bytes += strlen(compact);
        s.count++;
        free(compact);
    }
    json_decref(schemas);
    return s;
}

static const struct {
    const char *domain;
    int n;
} pool[] = {{"git", 20},   {"browser", 22}, {"db", 19},    {"pdf", 20},
            {"image", 18}, {"net", 18},     {"cloud", 20}, {"fs", 20}};

static const char *const verbs[] = {"read",   "write",  "list",     "get",    "set",   "create",
                                    "update", "delete", "parse",    "render", "fetch", "open",
                                    "close",  "scan",   "probe",    "split",  "merge", "encode",
                                    "decode", "upload", "download", "convert"};

static void register_pool_tool(const char *domain, int k)
{
    char name[64], desc[256];
    snprintf(name, sizeof name, "%s_%s%s", domain, verbs[k % 22], k >= 22 ? "_x" : "");
    snprintf(desc, sizeof desc,
             "%s primitive %d: %s one %s resource. Low-level building block; callers usually "
             "combine it with other %s tools.",
             domain, k, verbs[k % 22], domain, domain);
    stub *s = calloc(1, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    json_t *params =
        json_pack("{s:s, s:{s:{s:s, s:s}, s:{s:s, s:s}, s:{s:s, s:s}}, s:[s]}", "type", "object",
                  "properties", "resource", "type", "string", "description",
                  "Identifier of the resource to act on.", "options", "type", "object",
                  "description", "Tool-specific options.", "limit", "type", "integer",
                  "description", "Maximum number of items to return.", "required", "resource");
    json_t *out = js("{}");
    cdsh_tool_def def = {.name = name,
                         .description = desc,
                         .parameters = params,
                         .output_schema = out,
                         .execute = stub_body,
                         .ud = s,
                         .free_ud = stub_free};
    assert_int_equal(cdsh_ctx_register_tool(CTX, &def, NULL), 0);
    json_decref(params);
    json_decref(out);
}

static void fifteen_operations_over_157_primitives_add_exactly_their_schemas(void **state)
{
    (void)state;
    int total = 0;
    for (size_t d = 0; d < sizeof pool / sizeof *pool; d++)
        for (int k = 0; k < pool[d].n; k++, total++)
            register_pool_tool(pool[d].domain, k);
    assert_int_equal(total, 157);
    surface before = measure(NULL, NULL);
    assert_int_equal(before.count, 157);

    /* 15 semantic operations: two per domain (one in fs), each 2-3 steps */
    char ops_list[4096] = "";
    int nops = 0;
    for (size_t d = 0; d < sizeof pool / sizeof *pool; d++) {
        const char *dom = pool[d].domain;
        int per = d == 7 ? 1 : 2;
        char cap[4096];
        int off = snprintf(cap, sizeof cap,
                           "{\"id\":\"%s_ops\",\"description\":\"Semantic %s operations: each "
                           "runs a fixed pipeline of %s primitives in one call.\",\"operations\":[",
                           dom, dom, dom);
        for (int o = 0; o < per; o++, nops++) {
            const char *opname = o == 0 ? "inspect" : "migrate";
            char steps[256];
            if (o == 0)
                snprintf(steps, sizeof steps,
                         "{\"tool\":\"%s_open\"},{\"tool\":\"%s_scan\"},{\"tool\":\"%s_close\"}",
                         dom, dom, dom);
            else
                snprintf(steps, sizeof steps, "{\"tool\":\"%s_read\"},{\"tool\":\"%s_write\"}", dom,
                         dom);
            off += snprintf(cap + off, sizeof cap - (size_t)off,
                            "%s{\"name\":\"%s\",\"description\":\"%s a %s resource end to end.\","
                            "\"parameters\":{\"resource\":{\"type\":\"string\",\"required\":"
                            "true,\"description\":\"The %s resource.\"}},\"steps\":[%s]}",
                            o ? "," : "", opname, o ? "Migrate" : "Inspect", dom, dom, steps);
            size_t used = strlen(ops_list);
            snprintf(ops_list + used, sizeof ops_list - used, "|%s_ops_%s|", dom, opname);
        }
        snprintf(cap + off, sizeof cap - (size_t)off, "]}");
        cdsh_error err = {0};
        if (declare_in(NULL, NULL, cap, NULL, &err) != 0)
            fail_msg("%s: %s\n%s", dom, err.message, cap);
    }
    assert_int_equal(nops, 15);
    surface after = measure(NULL, NULL);
    surface ops = measure(NULL, ops_list);
    assert_int_equal(after.count, before.count + 15);
    assert_int_equal(ops.count, 15);
    assert_int_equal(after.bytes, before.bytes + ops.bytes);
    printf("surface: raw pool            %3zu tools, %6zu schema bytes\n", before.count,
           before.bytes);
    printf("surface: pool + 15 operations %3zu tools, %6zu schema bytes (+%zu)\n", after.count,
           after.bytes, after.bytes - before.bytes);
    printf("surface: operations alone     %3zu tools, %6zu schema bytes (%.0f%% of the raw "
           "pool) — what the model sees when primitives are not registered as model-facing\n",
           ops.count, ops.bytes, 100.0 * (double)ops.bytes / (double)before.bytes);
    /* one call runs a whole pipeline */
    cdsh_toolresult *r = call("git_ops_inspect", "{\"resource\":\"repo\"}");
    assert_true(json_is_true(json_object_get(r->value, "ok")));
    assert_int_equal(json_array_size(json_object_get(r->value, "steps")), 3);
    assert_int_equal(json_array_size(CALLS), 3);
    cdsh_toolresult_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            fifteen_operations_over_157_primitives_add_exactly_their_schemas, fx_setup,
            fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
