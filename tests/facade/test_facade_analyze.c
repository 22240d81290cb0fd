/* test_facade_analyze.c — the 23 analyzer behaviours of capability-facade.md
 * §9 (same fixtures: pdf_* literals, dynamic names, the wrapper form, an
 * optional-chained declaration, an empty plugin, the read-only guarantee and
 * the proposal shape), plus the tokenizer cases the original's regex scan got
 * wrong, the walk rules and the `cdsh facade analyze` CLI. */
#include "support/testkit.h"

#include "dir_snapshot.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "plugins/facade/analyze.h"
#include "plugins/facade/report.h"

static char *ROOT;

static int setup(void **state)
{
    (void)state;
    ROOT = cdsh_test_home_new();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cdsh_test_home_free(ROOT);
    ROOT = NULL;
    return 0;
}

/* Writes rel (with parent dirs) under a fresh plugin dir below ROOT. */
static void put(const char *rel, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/plugin/%s", ROOT, rel);
    char *slash = strrchr(path, '/');
    *slash = 0;
    assert_int_equal(cdsh_fs_mkdir_p(path, 0755, NULL), 0);
    *slash = '/';
    cdsh_test_write_file(path, text);
}

static char *plugin_dir(void)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/plugin", ROOT) > 0);
    return p;
}

static json_t *analyze_fixture(const char *source)
{
    put("lib/index.js", source);
    char *dir = plugin_dir();
    json_t *report = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_facade_analyze_dir(dir, &report, &err), 0);
    free(dir);
    return report;
}

static const json_t *tool_named(const json_t *report, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(report, "tools"), i, t) {
        if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0)
            return t;
    }
    return NULL;
}

static char *dump(const json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
}

static void assert_json(const json_t *got, const char *expected)
{
    char *g = dump(got);
    json_t *e = json_loads(expected, JSON_DECODE_ANY, NULL);
    assert_non_null(e);
    char *x = dump(e);
    assert_string_equal(g, x);
    free(g);
    free(x);
    json_decref(e);
}

static const char *LITERALS =
    "    import { defineTool } from '@deepseek-ai/dsh-tools'\n"
    "    export function apply(ctx) {\n"
    "      ctx.tools.register(defineTool({\n"
    "        name: 'pdf_extract',\n"
    "        description: 'Extract raw text from a PDF.',\n"
    "        parameters: { path: { type: 'string', required: true } },\n"
    "        output: OUT,\n"
    "        async execute() { return {} },\n"
    "      }))\n"
    "      ctx.tools.register(defineTool({\n"
    "        name: 'pdf.layout',\n"
    "        description: 'Compute layout blocks.',\n"
    "        parameters: { path: { type: 'string' }, mode: { type: 'string' } },\n"
    "        output: OUT,\n"
    "        async execute() { return {} },\n"
    "      }))\n"
    "      ctx.tools.register(defineTool({\n"
    "        name: 'pdf_analyze',\n"
    "        description: 'Analyze a PDF in one call.',\n"
    "        parameters: { path: { type: 'string' } },\n"
    "        output: OUT,\n"
    "        async execute() { return {} },\n"
    "      }))\n"
    "    }\n";

/* 1-6 */
static void literal_registrations_are_found_grouped_and_questioned(void **state)
{
    (void)state;
    json_t *r = analyze_fixture(LITERALS);
    assert_json(json_object_get(r, "scannedFiles"), "[\"lib/index.js\"]");
    assert_non_null(tool_named(r, "pdf.layout")); /* 1 */
    assert_non_null(tool_named(r, "pdf_analyze"));
    assert_non_null(tool_named(r, "pdf_extract"));
    assert_int_equal(json_array_size(json_object_get(r, "tools")), 3);
    assert_json(json_object_get(tool_named(r, "pdf.layout"), "parameters"),
                "[\"path\",\"mode\"]");                                                   /* 2 */
    assert_true(json_is_false(json_object_get(tool_named(r, "pdf_extract"), "dynamic"))); /* 3 */
    assert_json(tool_named(r, "pdf_extract"),
                "{\"name\":\"pdf_extract\",\"dynamic\":false,\"description\":\"Extract raw text "
                "from a PDF.\",\"parameters\":[\"path\"],\"file\":\"lib/index.js\",\"line\":3}");
    const json_t *cands = json_object_get(r, "candidates");
    assert_int_equal(json_array_size(cands), 1); /* 4 */
    const json_t *c = json_array_get(cands, 0);
    assert_string_equal(json_string_value(json_object_get(c, "group")), "pdf");
    assert_json(json_object_get(c, "primitiveLike"), "[\"pdf_extract\",\"pdf.layout\"]"); /* 5 */
    assert_json(json_object_get(c, "operationLike"), "[\"pdf_analyze\"]");
    assert_string_equal(json_string_value(json_object_get(c, "question")), /* 6 */
                        "Are \"pdf_extract\", \"pdf.layout\" steps of one pdf operation, or "
                        "independent capabilities?");
    assert_json(json_object_get(r, "counts"),
                "{\"files\":1,\"tools\":3,\"capabilities\":0,\"candidates\":1}");
    json_decref(r);
}

/* 7-9 */
static void dynamic_names_and_missing_parameters_are_reported_not_guessed(void **state)
{
    (void)state;
    json_t *r = analyze_fixture("    export function apply(ctx) {\n"
                                "      for (const kind of ['a', 'b']) {\n"
                                "        ctx.tools.register(defineTool({\n"
                                "          name: `dyn_${kind}`,\n"
                                "          description: 'dynamic',\n"
                                "          parameters: {},\n"
                                "          output: OUT,\n"
                                "          async execute() { return {} },\n"
                                "        }))\n"
                                "      }\n"
                                "      ctx.tools.register(defineTool({\n"
                                "        name: 'plain_one',\n"
                                "        description: 'no parameters spec at all',\n"
                                "        output: OUT,\n"
                                "        async execute() { return {} },\n"
                                "      }))\n"
                                "    }\n");
    const json_t *d = tool_named(r, "dyn_${kind}"); /* 7 */
    assert_non_null(d);
    assert_true(json_is_true(json_object_get(d, "dynamic")));
    assert_json(json_object_get(r, "candidates"), "[]"); /* 8 */
    const json_t *p = tool_named(r, "plain_one");        /* 9 */
    assert_non_null(p);
    assert_null(json_object_get(p, "parameters"));
    char *md = cdsh_facade_report_markdown_dup(r);
    assert_non_null(strstr(md, "| `dyn_${kind}` | dynamic name | \u2014 |"));
    assert_non_null(strstr(md, "| `plain_one` | unclassified | _(dynamic)_ | `lib/index.js:11` |"));
    free(md);
    json_decref(r);
}

/* 10-13 */
static void wrapper_registrations_are_found_and_name_only_objects_are_not(void **state)
{
    (void)state;
    json_t *r = analyze_fixture(
        "    export function apply(ctx) {\n"
        "      const register = (spec) => { ctx.tools.register(defineTool(spec)) }\n"
        "      register({\n"
        "        name: 'trajectory_find',\n"
        "        description: 'Find events by literal substring.',\n"
        "        parameters: { session: { type: 'string' }, query: { type: 'string' } },\n"
        "        output: OUT,\n"
        "        async execute() { return {} },\n"
        "      })\n"
        "      register({\n"
        "        name: 'trajectory_window',\n"
        "        description: 'Read a window of events.',\n"
        "        parameters: { session: { type: 'string' }, from: { type: 'integer' }, to: { type: "
        "'integer' } },\n"
        "        output: OUT,\n"
        "        async execute() { return {} },\n"
        "      })\n"
        "    }\n");
    assert_int_equal(json_array_size(json_object_get(r, "tools")), 2); /* 10 */
    assert_non_null(tool_named(r, "trajectory_find"));
    assert_json(json_object_get(tool_named(r, "trajectory_window"), "parameters"),
                "[\"session\",\"from\",\"to\"]"); /* 11 */
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(r, "candidates"), 0), "group")),
                        "trajectory"); /* 12 */
    assert_int_equal(json_array_size(json_object_get(r, "candidates")), 1);
    json_decref(r);
    r = analyze_fixture(
        "    export function apply(ctx) {\n"
        "      const config = { name: 'not-a-tool', description: 'config object' }\n"
        "      ctx.logger.info(config)\n"
        "      describe({ name: 'also-not-a-tool', description: 'no parameters' })\n"
        "    }\n");
    assert_json(json_object_get(r, "tools"), "[]"); /* 13 */
    json_decref(r);
}

/* 14 */
static void optional_chained_declaration_is_found_with_its_operations(void **state)
{
    (void)state;
    json_t *r = analyze_fixture(
        "    export function apply(ctx) {\n"
        "      const capabilities = ctx.get('capabilities')\n"
        "      capabilities?.register({\n"
        "        id: 'doc',\n"
        "        description: 'already declared',\n"
        "        operations: [{ name: 'read', description: 'Read a doc.', steps: [{ tool: "
        "'doc_read' }] }],\n"
        "      })\n"
        "      ctx.capabilities.register({ id: 'pdf', operations: [{ name: 'scan' }, { name: "
        "`x_${y}` }] })\n"
        "    }\n");
    assert_json(json_object_get(r, "capabilities"),
                "[{\"id\":\"doc\",\"operations\":[\"read\"],\"file\":\"lib/index.js\",\"line\":3},"
                "{\"id\":\"pdf\",\"operations\":[\"scan\"],\"file\":\"lib/index.js\",\"line\":8}]");
    assert_json(json_object_get(r, "tools"), "[]");
    char *md = cdsh_facade_report_markdown_dup(r);
    assert_non_null(strstr(md, "## Existing capability declarations\n\n- `doc` \u2192 `read` "
                               "(`lib/index.js:3`)\n"));
    free(md);
    json_decref(r);
}

/* 15-17 */
static void plugin_without_tools_reports_so_instead_of_failing(void **state)
{
    (void)state;
    json_t *r = analyze_fixture("export function apply(ctx) { ctx.logger.info('nothing here') }");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "counts"), "tools")),
                     0);                                 /* 15 */
    assert_json(json_object_get(r, "candidates"), "[]"); /* 16 */
    char *md = cdsh_facade_report_markdown_dup(r);       /* 17 */
    assert_non_null(strstr(md, "No statically visible"));
    assert_non_null(strstr(md, "_No prefix group holds two or more tools._"));
    assert_non_null(strstr(md, "## Boundary\n\nThis report is read-only."));
    free(md);
    json_decref(r);
}

static const char *RO_SOURCE =
    "\n    export function apply(ctx) {\n"
    "      ctx.tools.register(defineTool({ name: 'x_read', description: 'x', parameters: {}, "
    "output: OUT, async execute() { return {} } }))\n"
    "      ctx.tools.register(defineTool({ name: 'x_write', description: 'x', parameters: {}, "
    "output: OUT, async execute() { return {} } }))\n"
    "    }\n  ";

/* 18-19 */
static void analysis_report_and_proposal_write_nothing(void **state)
{
    (void)state;
    put("lib/index.js", RO_SOURCE);
    put("lib/extra.ts", "export const x = 1\n");
    put("README.md", "# readme\n");
    char *dir = plugin_dir();
    static char before[65536], after[65536];
    before[0] = after[0] = 0;
    dir_snapshot(dir, before, sizeof before);
    json_t *r = NULL;
    assert_int_equal(cdsh_facade_analyze_dir(dir, &r, NULL), 0);
    char *md = cdsh_facade_report_full_dup(r, 1);
    char *js = cdsh_facade_proposal_js_dup(json_array_get(json_object_get(r, "candidates"), 0));
    /* the CLI as well, with every option */
    char *out = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, NULL, "facade", "analyze", dir, "--propose", NULL), 0);
    free(out);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "facade", "analyze", dir, "--json", NULL),
                     0);
    free(out);
    dir_snapshot(dir, after, sizeof after);
    assert_string_equal(after, before); /* 18 */
    char path[4096];
    snprintf(path, sizeof path, "%s/lib/index.js", dir);
    char *text = cdsh_test_read_file(path, NULL);
    assert_string_equal(text, RO_SOURCE); /* 19 */
    free(text);
    free(md);
    free(js);
    json_decref(r);
    free(dir);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* 20-23 */
static void proposal_is_a_review_artefact_not_a_patch(void **state)
{
    (void)state;
    json_t *r = analyze_fixture(
        "    export function apply(ctx) {\n"
        "      ctx.tools.register(defineTool({ name: 'doc_read', description: 'x', parameters: {}, "
        "output: OUT, async execute() { return {} } }))\n"
        "      ctx.tools.register(defineTool({ name: 'doc_write', description: 'x', parameters: "
        "{}, output: OUT, async execute() { return {} } }))\n"
        "    }\n");
    const json_t *c = json_array_get(json_object_get(r, "candidates"), 0);
    char *p = cdsh_facade_proposal_js_dup(c);
    assert_non_null(strstr(p, "PROPOSAL"));                  /* 20 */
    assert_true(count(p, "TODO") >= 3);                      /* 21 */
    assert_non_null(strstr(p, "ctx.capabilities.register")); /* 22 */
    assert_non_null(strstr(p, "tool: \"doc_read\""));        /* 23 */
    assert_non_null(strstr(p, "tool: \"doc_write\""));
    char *y = cdsh_facade_proposal_yaml_dup(c);
    assert_non_null(strstr(y, "PROPOSAL"));
    assert_true(count(y, "TODO") >= 3);
    assert_non_null(strstr(y, "- tool: \"doc_read\""));
    assert_non_null(strstr(y, "- tool: \"doc_write\""));
    free(p);
    free(y);
    json_decref(r);
}

static void tokenizer_ignores_comments_strings_and_regex_literals(void **state)
{
    (void)state;
    json_t *r = analyze_fixture(
        "// defineTool({ name: 'in_line_comment', parameters: {} })\n"
        "/* defineTool({ name: 'in_block_comment', parameters: {} }) */\n"
        "const s = \"defineTool({ name: 'in_string', parameters: {} })\"\n"
        "const re = /defineTool\\(\\{ name: 'in_regex' \\}/g, brace = /[}{]/\n"
        "const t = `defineTool({ name: 'in_template', ${ '}' } parameters: {} })`\n"
        "defineTool({ name: 'real_one', description: 'has } and { inside', parameters: { "
        "a: /}/, b: `${'}'}` } })\n"
        "defineTool({ name: 'no_description', parameters: { x: {} } })\n"
        "export const t = defineTool<{ path: string }>({ name: 'typed_one', parameters: "
        "{ path: { type: 'string' } } })\n");
    assert_int_equal(json_array_size(json_object_get(r, "tools")), 3);
    assert_json(json_object_get(tool_named(r, "typed_one"), "parameters"), "[\"path\"]");
    assert_json(json_object_get(tool_named(r, "real_one"), "parameters"), "[\"a\",\"b\"]");
    assert_string_equal(
        json_string_value(json_object_get(tool_named(r, "real_one"), "description")),
        "has } and { inside");
    /* the original throws on a defineTool without a description */
    assert_string_equal(
        json_string_value(json_object_get(tool_named(r, "no_description"), "description")), "");
    assert_int_equal(json_integer_value(json_object_get(tool_named(r, "no_description"), "line")),
                     7);
    json_decref(r);
}

static void walk_follows_the_digest_rules(void **state)
{
    (void)state;
    put("a/one.ts", "defineTool({ name: 'a_ts', parameters: {} })");
    put("a/two.mts", "defineTool({ name: 'a_mts', parameters: {} })");
    put("b.cjs", "defineTool({ name: 'b_cjs', parameters: {} })");
    put("lib/index.mjs", "defineTool({ name: 'lib_mjs', parameters: {} })");
    put("skip.json", "defineTool({ name: 'json_file', parameters: {} })");
    put(".hidden/x.js", "defineTool({ name: 'hidden', parameters: {} })");
    put(".dot.js", "defineTool({ name: 'dotfile', parameters: {} })");
    const char *skipped[] = {"node_modules", "dist", "build", ".turbo",
                             "coverage",     "test", "tests"};
    for (size_t i = 0; i < sizeof skipped / sizeof *skipped; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "%s/x.js", skipped[i]);
        put(rel, "defineTool({ name: 'skipped', parameters: {} })");
    }
    char *dir = plugin_dir();
    json_t *r = NULL;
    assert_int_equal(cdsh_facade_analyze_dir(dir, &r, NULL), 0);
    assert_json(json_object_get(r, "scannedFiles"),
                "[\"a/one.ts\",\"a/two.mts\",\"b.cjs\",\"lib/index.mjs\"]");
    assert_int_equal(json_array_size(json_object_get(r, "tools")), 4);
    assert_json(json_object_get(r, "groups"),
                "[{\"group\":\"a\",\"tools\":[\"a_ts\",\"a_mts\"]},{\"group\":\"b\",\"tools\":"
                "[\"b_cjs\"]},{\"group\":\"lib\",\"tools\":[\"lib_mjs\"]}]");
    json_decref(r);
    char file[4096];
    snprintf(file, sizeof file, "%s/b.cjs", dir);
    cdsh_error err = {0};
    r = NULL;
    assert_int_equal(cdsh_facade_analyze_dir(file, &r, &err), CDSH_EINVAL);
    assert_null(r);
    char want[4200];
    snprintf(want, sizeof want, "analyze: not a directory: %s", file);
    assert_string_equal(err.message, want);
    free(dir);
}

static void grouping_and_classification_follow_the_hint_lists(void **state)
{
    (void)state;
    char *g = cdsh_facade_group_dup("pdf.extract");
    assert_string_equal(g, "pdf");
    free(g);
    g = cdsh_facade_group_dup("bare");
    assert_string_equal(g, "");
    free(g);
    g = cdsh_facade_group_dup("_a--b_");
    assert_string_equal(g, "a");
    free(g);
    assert_string_equal(cdsh_facade_classify("git-DIFF"), "operation-like");
    assert_string_equal(cdsh_facade_classify("fs_raw"), "primitive-like");
    assert_string_equal(cdsh_facade_classify("fs_frobnicate"), "unclassified");
    assert_string_equal(cdsh_facade_classify("analyze"), "operation-like");
}

static void cli_reports_usage_json_and_missing_directories(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "facade", "analyze", NULL), 2);
    assert_non_null(strstr(err, "Usage: cdsh facade analyze"));
    free(out), free(err);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "facade", "analyze", "/nonexistent/x", NULL), 1);
    assert_string_equal(err, "cdsh facade: analyze: not a directory: /nonexistent/x\n");
    free(out), free(err);
    put("lib/index.js", LITERALS);
    char *dir = plugin_dir();
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "facade", "analyze", dir, "--json", "--propose", NULL),
        0);
    json_t *r = json_loads(out, 0, NULL); /* --json prints the report only */
    assert_non_null(r);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "counts"), "tools")), 3);
    json_decref(r);
    free(out), free(err);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "facade", "analyze", dir, "--propose", NULL), 0);
    assert_non_null(strstr(out, "# Tool-surface analysis: "));
    assert_non_null(strstr(out, "---\n\n## Starter declaration for `pdf`\n\n```js\n// PROPOSAL"));
    assert_non_null(strstr(out, "```yaml\n# PROPOSAL"));
    free(out), free(err);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "facade", "analyze", "--self", "--json", NULL), 0);
    r = json_loads(out, 0, NULL);
    assert_non_null(r);
    assert_string_equal(json_string_value(json_object_get(r, "root")),
                        "cdsh registry (profile default)");
    assert_non_null(json_object_get(r, "counts"));
    json_decref(r);
    free(out), free(err);
    free(dir);
}

/* The JS proposal is valid JavaScript (node --check), also for names that
 * carry quotes, backslashes and non-ASCII text; it once put "model's" inside
 * a single-quoted literal. */
static void proposal_js_passes_node_check(void **state)
{
    (void)state;
    json_t *c = json_pack("{s:s, s:[{s:s}, {s:s}, {s:s}]}", "group", "it's \\ a \"group\"",
                          "tools", "name", "doc_read", "name", "o'neil\\x", "name", "读\n取");
    assert_non_null(c);
    char *js = cdsh_facade_proposal_js_dup(c);
    char path[4096];
    snprintf(path, sizeof path, "%s/proposal.js", ROOT);
    cdsh_test_write_file(path, js);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "node --check '%s' 2>&1", path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char out[4096] = "";
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int status = pclose(p);
    if (status != 0)
        print_error("node --check failed (status %d):\n%s\n--- proposal ---\n%s\n", status, out,
                    js);
    assert_int_equal(status, 0);
    assert_non_null(strstr(js, "id: \"it's \\\\ a \\\"group\\\"\""));
    free(js);
    json_decref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
        T(literal_registrations_are_found_grouped_and_questioned),
        T(dynamic_names_and_missing_parameters_are_reported_not_guessed),
        T(wrapper_registrations_are_found_and_name_only_objects_are_not),
        T(optional_chained_declaration_is_found_with_its_operations),
        T(plugin_without_tools_reports_so_instead_of_failing),
        T(analysis_report_and_proposal_write_nothing),
        T(proposal_is_a_review_artefact_not_a_patch),
        T(proposal_js_passes_node_check),
        T(tokenizer_ignores_comments_strings_and_regex_literals),
        T(walk_follows_the_digest_rules),
        T(grouping_and_classification_follow_the_hint_lists),
        T(cli_reports_usage_json_and_missing_directories),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
