/* test_commands.c — command IR from Markdown (front matter, name mapping,
 * placeholders, unsupported features) and the expansion run by an imported
 * command, Claude and Codex rules. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "plugins/mcpimport/commands.h"
#include "plugins/mcpimport/frontmatter.h"

#define SAMPLES CDSH_TEST_DATA_DIR "/import-samples/"

static json_t *ir_of(const char *source, const char *ns, const char *stem, const char *text)
{
    json_t *c = json_pack("{s:{s:s, s:s, s:s}, s:s, s:s?}", "provenance", "source", source, "file",
                          "/x.md", "scope", "user", "stem", stem, "namespace", ns);
    json_t *ir = cdsh_mcpimport_command_from_markdown(c, text, strlen(text));
    json_decref(c);
    assert_non_null(ir);
    return ir;
}

static char *expand(const json_t *ir, const char *input)
{
    char *out = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_mcpimport_command_expand(ir, input, &out, &e), 0);
    return out;
}

static const char *s(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void commit_sample_becomes_namespaced_command_with_shell_lines_reported(void **state)
{
    (void)state;
    char *text = cdsh_test_read_file(SAMPLES "claude-command.commit.md", NULL);
    json_t *ir = ir_of("claude", "commit-commands", "commit", text);
    free(text);
    assert_string_equal(s(ir, "name"), "commit-commands_commit");
    assert_string_equal(s(ir, "originalName"), "commit-commands:commit");
    assert_string_equal(s(ir, "description"),
                        "Create a git commit with generateing clear commit messages from git "
                        "diffs. Use when writing commit messages or reviewing staged changes.");
    json_t *allowed = json_object_get(ir, "allowedTools");
    assert_int_equal(json_array_size(allowed), 3);
    assert_string_equal(json_string_value(json_array_get(allowed, 0)), "Bash(git add:*)");
    assert_string_equal(s(ir, "placeholderStyle"), "none");
    json_t *un = json_object_get(ir, "unsupported");
    assert_int_equal(json_array_size(un), 4);
    assert_string_equal(s(json_array_get(un, 1), "text"), "git diff HEAD");
    assert_string_equal(s(json_array_get(un, 1), "feature"), "shell");
    /* no placeholder: the arguments are appended as Claude Code does */
    char *p = expand(ir, "  fix the build ");
    assert_non_null(strstr(p, "\n\nARGUMENTS: fix the build"));
    free(p);
    json_decref(ir);
}

static void names_map_to_the_cdsh_pattern(void **state)
{
    (void)state;
    char *n = cdsh_mcpimport_command_name_dup("My.Plugin", "Do It");
    assert_string_equal(n, "my-plugin_do-it");
    free(n);
    n = cdsh_mcpimport_command_name_dup(NULL, "2fa");
    assert_string_equal(n, "cmd-2fa");
    free(n);
}

static void claude_placeholders_expand_zero_based_with_dollar_zero(void **state)
{
    (void)state;
    json_t *ir = ir_of("claude", NULL, "fix",
                       "---\ndescription: Fix\n---\nFix $0 with $1; all: $ARGUMENTS; third "
                       "$ARGUMENTS[2]; none $5\n");
    assert_string_equal(s(ir, "placeholderStyle"), "claude");
    char *p = expand(ir, "#12 \"high prio\" x");
    assert_string_equal(p, "Fix #12 with high prio; all: #12 \"high prio\" x; third x; none $5\n");
    free(p);
    json_decref(ir);
}

static void claude_one_based_positionals_are_legacy_and_warned(void **state)
{
    (void)state;
    json_t *ir = ir_of("claude", NULL, "rev", "Review PR #$1 at priority $2.");
    assert_string_equal(s(ir, "placeholderStyle"), "claude-1based");
    assert_string_equal(json_string_value(json_array_get(json_object_get(ir, "warnings"), 0)),
                        "uses $1.. without $0: expanded from $1 as older Claude Code did (current "
                        "Claude Code counts from $0: $1 is the second argument there)");
    char *p = expand(ir, "42 high");
    assert_string_equal(p, "Review PR #42 at priority high.");
    free(p);
    json_decref(ir);
}

static void claude_named_arguments_map_positionally(void **state)
{
    (void)state;
    json_t *ir = ir_of("claude", NULL, "br",
                       "---\narguments: [issue, branch]\n---\nIssue $issue on $branch, {{args}}");
    char *p = expand(ir, "7 main");
    assert_string_equal(p, "Issue 7 on main, 7 main");
    free(p);
    json_decref(ir);
}

static void codex_prompts_use_one_based_and_named_keys(void **state)
{
    (void)state;
    json_t *ir = ir_of("codex", NULL, "review",
                       "---\ndescription: \"Review a PR with context\"\nargument-hint: \"[pr] "
                       "[prio]\"\n---\nReview #$1 ($2) by $AUTHOR costs $$5; args $ARGUMENTS");
    assert_string_equal(s(ir, "placeholderStyle"), "codex");
    assert_string_equal(s(ir, "argumentHint"), "[pr] [prio]");
    char *p = expand(ir, "12 \"very high\" AUTHOR=ann");
    assert_string_equal(p, "Review #12 (very high) by ann costs $5; args 12 very high");
    free(p);
    char *out = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_mcpimport_command_expand(ir, "12", &out, &e), CDSH_EINVAL);
    assert_string_equal(e.code, "MISSING_ARGUMENTS");
    assert_string_equal(e.message, "missing arguments: AUTHOR (pass them as KEY=value)");
    assert_null(out);
    assert_int_equal(cdsh_mcpimport_command_expand(ir, "\"open", &out, &e), CDSH_EINVAL);
    assert_string_equal(e.code, "BAD_ARGUMENTS");
    json_decref(ir);
}

static void file_includes_are_reported_not_emails(void **state)
{
    (void)state;
    json_t *ir = ir_of("claude", NULL, "inc", "Read @src/main.c and mail a@b.com.\n");
    json_t *un = json_object_get(ir, "unsupported");
    assert_int_equal(json_array_size(un), 1);
    assert_string_equal(s(json_array_get(un, 0), "feature"), "file-include");
    assert_string_equal(s(json_array_get(un, 0), "text"), "src/main.c");
    json_decref(ir);
}

static void malformed_front_matter_gives_clear_warnings(void **state)
{
    (void)state;
    json_t *w = json_array(), *meta = NULL;
    size_t off;
    const char *open = "---\ndescription: x\nno closing line\n";
    assert_int_equal(cdsh_mcpimport_frontmatter_parse(open, strlen(open), &meta, &off, w), 0);
    assert_int_equal(off, 0);
    assert_int_equal(json_object_size(meta), 0);
    assert_string_equal(json_string_value(json_array_get(w, 0)),
                        "front matter is not closed (no \"---\" line); the whole file is the "
                        "body");
    json_decref(meta);
    json_array_clear(w);
    const char *bad = "---\ndescription: a: b: [\nmodel: haiku\n---\nbody";
    assert_int_equal(cdsh_mcpimport_frontmatter_parse(bad, strlen(bad), &meta, &off, w), 0);
    assert_string_equal(bad + off, "body");
    assert_non_null(
        strstr(json_string_value(json_array_get(w, 0)), "front matter is not valid YAML ("));
    assert_non_null(strstr(json_string_value(json_array_get(w, 0)), "); read as key: value lines"));
    assert_string_equal(s(meta, "model"), "haiku");
    json_decref(meta);
    json_array_clear(w);
    const char *list = "---\n- a\n- b\n---\nbody";
    assert_int_equal(cdsh_mcpimport_frontmatter_parse(list, strlen(list), &meta, &off, w), 0);
    assert_string_equal(json_string_value(json_array_get(w, 0)),
                        "front matter is not a mapping; ignored");
    assert_int_equal(json_object_size(meta), 0);
    json_decref(meta);
    json_decref(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(commit_sample_becomes_namespaced_command_with_shell_lines_reported),
        cmocka_unit_test(names_map_to_the_cdsh_pattern),
        cmocka_unit_test(claude_placeholders_expand_zero_based_with_dollar_zero),
        cmocka_unit_test(claude_one_based_positionals_are_legacy_and_warned),
        cmocka_unit_test(claude_named_arguments_map_positionally),
        cmocka_unit_test(codex_prompts_use_one_based_and_named_keys),
        cmocka_unit_test(file_includes_are_reported_not_emails),
        cmocka_unit_test(malformed_front_matter_gives_clear_warnings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
