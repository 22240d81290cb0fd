/* report.c — Markdown reports and starter proposals for the analyzer (the
 * original's renderReport / renderProposal, plus a cdsh YAML proposal).
 * Analysis itself is analyze.c. */
#include "plugins/facade/report.h"

#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/strbuf.h"
#include "plugins/facade/analyze.h"

/* `a`, `b` (backticked, comma-joined) or `none`. */
static void names(cdsh_strbuf *sb, const json_t *arr, const char *none)
{
    size_t i;
    json_t *n;
    if (json_array_size(arr) == 0) {
        cdsh_strbuf_append_str(sb, none);
        return;
    }
    json_array_foreach(arr, i, n) {
        cdsh_strbuf_appendf(sb, "%s`%s`", i ? ", " : "", json_string_value(n));
    }
}

char *cdsh_facade_report_markdown_dup(const json_t *report)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    const json_t *counts = json_object_get(report, "counts");
    const json_t *tools = json_object_get(report, "tools");
    const json_t *cands = json_object_get(report, "candidates");
    const json_t *caps = json_object_get(report, "capabilities");
    cdsh_strbuf_appendf(&sb, "# Tool-surface analysis: %s\n\n",
                        cdsh_json_str_or(report, "root", ""));
    cdsh_strbuf_appendf(&sb,
                        "Scanned %lld source file(s); found %lld model-facing tool registration(s) "
                        "and %lld capability declaration(s).\n\n",
                        (long long)json_integer_value(json_object_get(counts, "files")),
                        (long long)json_integer_value(json_object_get(counts, "tools")),
                        (long long)json_integer_value(json_object_get(counts, "capabilities")));
    cdsh_strbuf_append_str(&sb, "## Registered tools\n\n");
    size_t i, j;
    json_t *t;
    if (json_array_size(tools) == 0) {
        cdsh_strbuf_append_str(&sb, "_No statically visible `defineTool({ name: … })` call. The "
                                    "plugin may build tools dynamically; inspect it by hand._\n");
    } else {
        cdsh_strbuf_append_str(&sb, "| Tool | Shape | Parameters | Source |\n| --- | --- | --- | "
                                    "--- |\n");
        json_array_foreach(tools, i, t) {
            const char *name = cdsh_json_str_or(t, "name", "");
            const char *shape = json_is_true(json_object_get(t, "dynamic"))
                                    ? "dynamic name"
                                    : cdsh_facade_classify(name);
            cdsh_strbuf_appendf(&sb, "| `%s` | %s | ", name, shape);
            const json_t *params = json_object_get(t, "parameters");
            if (!params)
                cdsh_strbuf_append_str(&sb, "_(dynamic)_");
            else if (json_array_size(params) == 0)
                cdsh_strbuf_append_str(&sb, "\u2014");
            json_t *p;
            json_array_foreach(params, j, p) {
                cdsh_strbuf_appendf(&sb, "%s%s", j ? ", " : "", json_string_value(p));
            }
            cdsh_strbuf_appendf(&sb, " | `%s:%lld` |\n", cdsh_json_str_or(t, "file", ""),
                                (long long)json_integer_value(json_object_get(t, "line")));
        }
    }
    cdsh_strbuf_append_str(&sb, "\n## Candidate groupings (for review, not adoption)\n\n");
    if (json_array_size(cands) == 0)
        cdsh_strbuf_append_str(&sb, "_No prefix group holds two or more tools._\n");
    json_array_foreach(cands, i, t) {
        cdsh_strbuf_appendf(&sb, "### `%s`\n\n- tools: ", cdsh_json_str_or(t, "group", ""));
        json_t *m;
        json_array_foreach(json_object_get(t, "tools"), j, m) {
            cdsh_strbuf_appendf(&sb, "%s`%s` (%s)", j ? ", " : "", cdsh_json_str_or(m, "name", ""),
                                cdsh_json_str_or(m, "kind", ""));
        }
        cdsh_strbuf_append_str(&sb, "\n- primitive-like: ");
        names(&sb, json_object_get(t, "primitiveLike"), "_none_");
        cdsh_strbuf_append_str(&sb, "\n- operation-like: ");
        names(&sb, json_object_get(t, "operationLike"), "_none_");
        cdsh_strbuf_appendf(&sb, "\n- question for the model/human: %s\n\n",
                            cdsh_json_str_or(t, "question", ""));
    }
    if (json_array_size(cands) == 0)
        cdsh_strbuf_append_str(&sb, "\n");
    if (json_array_size(caps) > 0) {
        cdsh_strbuf_append_str(&sb, "## Existing capability declarations\n\n");
        json_array_foreach(caps, i, t) {
            cdsh_strbuf_appendf(&sb, "- `%s` \u2192 ", cdsh_json_str_or(t, "id", ""));
            names(&sb, json_object_get(t, "operations"), "_(no static operation names)_");
            cdsh_strbuf_appendf(&sb, " (`%s:%lld`)\n", cdsh_json_str_or(t, "file", ""),
                                (long long)json_integer_value(json_object_get(t, "line")));
        }
        cdsh_strbuf_append_str(&sb, "\n");
    }
    cdsh_strbuf_append_str(
        &sb,
        "## Boundary\n\n"
        "This report is read-only. It groups by name prefix and classifies by verb \u2014 both "
        "are heuristics.\n"
        "A grouping is a *question*, not a recommendation: whether two tools form one "
        "semantic operation is a judgment call.\n"
        "The analyzer never hides, moves, or rewrites a tool, and never claims one is "
        "unnecessary.");
    return cdsh_strbuf_take(&sb, NULL);
}

/* The steps of a proposal: primitive-like members, or every member if none. */
static json_t *step_names(const json_t *candidate)
{
    const json_t *prim = json_object_get(candidate, "primitiveLike");
    if (json_array_size(prim) > 0)
        return json_incref((json_t *)prim);
    json_t *all = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(candidate, "tools"), i, t) {
        json_array_append(all, json_object_get(t, "name"));
    }
    return all;
}

/* A JavaScript string literal for s: JSON's string syntax is a subset of JS's,
 * so jansson's encoder quotes and escapes it (a name with a quote, a backslash
 * or a line break stays one literal). */
static void append_js_string(cdsh_strbuf *sb, const char *s)
{
    json_t *v = json_string(s ? s : "");
    char *lit = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;
    cdsh_strbuf_append_str(sb, lit ? lit : "\"\"");
    free(lit);
    json_decref(v);
}

char *cdsh_facade_proposal_js_dup(const json_t *candidate)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    cdsh_strbuf_append_str(&sb, "// PROPOSAL \u2014 review before adopting. Generated from tool "
                                "names only; no semantics were inferred.\n"
                                "ctx.capabilities.register({\n"
                                "  id: ");
    append_js_string(&sb, cdsh_json_str_or(candidate, "group", ""));
    cdsh_strbuf_append_str(
        &sb, ",\n"
             "  description: \"TODO: one sentence describing what the model can do with this "
             "capability.\",\n"
             "  operations: [\n"
             "    {\n"
             "      name: \"analyze\", // TODO: name the semantic operation, not the steps\n"
             "      description: \"TODO: what this operation produces, in the model's terms.\",\n"
             "      parameters: { /* TODO */ },\n"
             "      steps: [\n");
    json_t *steps = step_names(candidate);
    size_t i;
    json_t *n;
    json_array_foreach(steps, i, n) {
        cdsh_strbuf_append_str(&sb, "        { tool: ");
        append_js_string(&sb, json_string_value(n));
        cdsh_strbuf_append_str(&sb, " }, // TODO: confirm order and argument mapping\n");
    }
    json_decref(steps);
    cdsh_strbuf_append_str(&sb, "      ],\n    },\n  ],\n})\n");
    return cdsh_strbuf_take(&sb, NULL);
}

char *cdsh_facade_proposal_yaml_dup(const json_t *candidate)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    const char *group = cdsh_json_str_or(candidate, "group", "");
    cdsh_strbuf_append_str(
        &sb, "# PROPOSAL \u2014 review before adopting. Generated from tool names only; no "
             "semantics were inferred.\n"
             "# Merge into $CDSH_HOME/profiles/<profile>.yaml, then run `cdsh profile verify "
             "<profile>`.\n"
             "plugins:\n"
             "  facade:\n"
             "    config:\n"
             "      capabilities:\n"
             "        - id: ");
    cdsh_strbuf_append_json_string(&sb, group, strlen(group));
    cdsh_strbuf_append_str(
        &sb, "  # TODO: must match ^[a-z][a-z0-9_]*$\n"
             "          description: \"TODO: one sentence describing what the model can do with "
             "this capability.\"\n"
             "          operations:\n"
             "            - name: analyze  # TODO: name the semantic operation, not the steps\n"
             "              description: \"TODO: what this operation produces, in the model's "
             "terms.\"\n"
             "              parameters: {}  # TODO: {field: {type: string, required: true}}\n"
             "              steps:\n");
    json_t *steps = step_names(candidate);
    size_t i;
    json_t *n;
    json_array_foreach(steps, i, n) {
        const char *name = json_string_value(n);
        cdsh_strbuf_append_str(&sb, "                - tool: ");
        cdsh_strbuf_append_json_string(&sb, name, strlen(name));
        cdsh_strbuf_append_str(&sb, strchr(name, '.')
                                        ? "  # TODO: a step tool name cannot contain '.'; use the "
                                          "name cdsh registers\n"
                                        : "  # TODO: confirm order; add from: <field> to pass "
                                          "one argument object\n");
    }
    json_decref(steps);
    return cdsh_strbuf_take(&sb, NULL);
}

char *cdsh_facade_report_full_dup(const json_t *report, int propose)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    char *md = cdsh_facade_report_markdown_dup(report);
    cdsh_strbuf_append_str(&sb, md);
    free(md);
    size_t i;
    json_t *c;
    json_array_foreach(propose ? json_object_get(report, "candidates") : NULL, i, c) {
        char *js = cdsh_facade_proposal_js_dup(c);
        char *yaml = cdsh_facade_proposal_yaml_dup(c);
        cdsh_strbuf_appendf(&sb,
                            "\n\n---\n\n## Starter declaration for `%s`\n\n```js\n%s\n```\n\n"
                            "```yaml\n%s```",
                            cdsh_json_str_or(c, "group", ""), js ? js : "", yaml ? yaml : "");
        free(js);
        free(yaml);
    }
    return cdsh_strbuf_take(&sb, NULL);
}
