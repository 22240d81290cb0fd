/* test_tavern_regex_apply.c — running regex rules: JavaScript flags,
 * placements (scope / timing / role), markdown-only and prompt-only, depth
 * bounds, trim strings, substituteRegex modes, replacement syntax, and the
 * per-rule time limit. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "plugins/tavern/jsregex.h"
#include "plugins/tavern/regex.h"
#include "plugins/tavern/regex_apply.h"

/* Applies ST scripts (JSON text) converted as global rules. */
static char *apply_st(const char *scripts, const char *text, const char *scope, const char *timing,
                      const char *role, int depth, cdsh_tavern_macro_env *env, json_t *failures)
{
    json_t *s = json_loads(scripts, 0, NULL);
    assert_non_null(s);
    cdsh_error err = {0};
    json_t *rules = cdsh_tavern_regex_rules_from_st_dup(s, CDSH_TAVERN_REGEX_USER, &err);
    assert_non_null(rules);
    cdsh_tavern_rxset *set = NULL;
    assert_int_equal(cdsh_tavern_rxset_new(rules, &set, &err), 0);
    char *out = NULL;
    assert_int_equal(
        cdsh_tavern_rxset_apply(set, text, scope, timing, role, depth, env, &out, failures, &err),
        0);
    cdsh_tavern_rxset_free(set);
    json_decref(rules);
    json_decref(s);
    return out;
}

static void expect(const char *scripts, const char *text, const char *want)
{
    char *out = apply_st(scripts, text, "output", "render", "assistant", -1, NULL, NULL);
    assert_string_equal(out, want);
    free(out);
}

static void javascript_flags_behave_as_in_javascript(void **state)
{
    (void)state;
    expect("[{\"findRegex\":\"a\",\"replaceString\":\"b\"}]", "aAa", "bAa"); /* bare: first only */
    expect("[{\"findRegex\":\"/a/g\",\"replaceString\":\"b\"}]", "aAa", "bAb");
    expect("[{\"findRegex\":\"/a/gi\",\"replaceString\":\"b\"}]", "aAa", "bbb");
    expect("[{\"findRegex\":\"/^x/gm\",\"replaceString\":\"y\"}]", "x\nx", "y\ny");
    expect("[{\"findRegex\":\"/^x/g\",\"replaceString\":\"y\"}]", "x\nx", "y\nx");
    expect("[{\"findRegex\":\"/a.b/s\",\"replaceString\":\"!\"}]", "a\nb", "!");
    expect("[{\"findRegex\":\"/a.b/\",\"replaceString\":\"!\"}]", "a\nb", "a\nb");
    expect("[{\"findRegex\":\"/b/y\",\"replaceString\":\"!\"}]", "ab", "ab"); /* sticky at 0 */
    expect("[{\"findRegex\":\"/a/gy\",\"replaceString\":\"!\"}]", "aab", "!!b");
    expect("[{\"findRegex\":\"/x$/\",\"replaceString\":\"!\"}]", "x\n", "x\n"); /* $ only at end */
    expect("[{\"findRegex\":\"/\\\\u0041/\",\"replaceString\":\"!\"}]", "A", "!");
    expect("[{\"findRegex\":\"/[^]/g\",\"replaceString\":\"-\"}]", "a\n", "--");
    expect("[{\"findRegex\":\"/(x)?y\\\\1/\",\"replaceString\":\"!\"}]", "y",
           "!"); /* unset backref */
    expect("[{\"findRegex\":\"/x*/g\",\"replaceString\":\"-\"}]", "ab", "-a-b-");
    expect("[{\"findRegex\":\"/é/gu\",\"replaceString\":\"e\"}]", "café é", "cafe e");
    bool g = cdsh_tavern_jsre_split_literal("/a\\/b/gi", NULL, NULL);
    assert_true(g);
    assert_false(cdsh_tavern_jsre_split_literal("/a/b/", NULL, NULL));
    assert_false(cdsh_tavern_jsre_split_literal("/a/q", NULL, NULL));
    cdsh_tavern_jsre *re = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_jsre_compile("a", "gg", &re, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "REGEX_BAD_FLAGS");
}

static void replacement_syntax_match_groups_names(void **state)
{
    (void)state;
    expect("[{\"findRegex\":\"/(\\\\w+)@(\\\\w+)/\",\"replaceString\":\"$2 at $1 [{{match}}] $3 "
           "$$\"}]",
           "ann@home", "home at ann [ann@home] $3 $");
    expect("[{\"findRegex\":\"/(?<who>\\\\w+)!/\",\"replaceString\":\"<$<who>>\"}]", "hi!", "<hi>");
    expect("[{\"findRegex\":\"/(a)|(b)/g\",\"replaceString\":\"[$1$2]\"}]", "ab", "[a][b]");
    expect("[{\"findRegex\":\"/x/\",\"replaceString\":\"$&$&\"}]", "x", "xx");
}

static void trim_strings_are_removed_from_captures(void **state)
{
    (void)state;
    expect("[{\"findRegex\":\"/<(.*?)>/"
           "g\",\"replaceString\":\"{$1}\",\"trimStrings\":[\"**\",\"_\"]}]",
           "<**bo_ld**> <x>", "{bold} {x}");
}

static void substitute_regex_modes(void **state)
{
    (void)state;
    cdsh_tavern_macro_env env = {.user = "A.n", .chr = "Bo"};
    const char *t = "A.n and Axn";
    char *out =
        apply_st("[{\"findRegex\":\"/{{user}}/g\",\"replaceString\":\"X\",\"substituteRegex\":0}]",
                 t, "output", "render", NULL, -1, &env, NULL);
    assert_string_equal(out, t); /* literal "{{user}}" pattern matches nothing */
    free(out);
    out =
        apply_st("[{\"findRegex\":\"/{{user}}/g\",\"replaceString\":\"X\",\"substituteRegex\":1}]",
                 t, "output", "render", NULL, -1, &env, NULL);
    assert_string_equal(out, "X and X"); /* raw: "." is a wildcard */
    free(out);
    out = apply_st(
        "[{\"findRegex\":\"/{{user}}/g\",\"replaceString\":\"{{char}}\",\"substituteRegex\":2}]", t,
        "output", "render", NULL, -1, &env, NULL);
    assert_string_equal(out, "Bo and Axn"); /* escaped; replacement macros expanded */
    free(out);
}

static void placements_scopes_roles_and_only_flags(void **state)
{
    (void)state;
    const char *s =
        "[{\"findRegex\":\"/a/g\",\"replaceString\":\"I\",\"placement\":[1]},"
        "{\"findRegex\":\"/b/g\",\"replaceString\":\"O\",\"placement\":[2]},"
        "{\"findRegex\":\"/c/g\",\"replaceString\":\"W\",\"placement\":[5]},"
        "{\"findRegex\":\"/d/g\",\"replaceString\":\"M\",\"placement\":[2],\"markdownOnly\":true},"
        "{\"findRegex\":\"/e/g\",\"replaceString\":\"P\",\"placement\":[1,2],\"promptOnly\":true}]";
    char *o = apply_st(s, "abcde", "input", "send", "user", -1, NULL, NULL);
    assert_string_equal(o, "Ibcde");
    free(o);
    o = apply_st(s, "abcde", "input", "send", "assistant", -1, NULL, NULL);
    assert_string_equal(o, "abcde"); /* input rules touch user messages only */
    free(o);
    o = apply_st(s, "abcde", "output", "render", "assistant", -1, NULL, NULL);
    assert_string_equal(o, "aOcMe");
    free(o);
    o = apply_st(s, "abcde", "prompt", "assemble", NULL, -1, NULL, NULL);
    assert_string_equal(o, "abWdP");
    free(o);
    o = apply_st(s, "abcde", "prompt", "send", NULL, -1, NULL, NULL);
    assert_string_equal(o, "abcdP");
    free(o);
}

static void min_and_max_depth_bound_the_rule(void **state)
{
    (void)state;
    const char *s = "[{\"findRegex\":\"/x/"
                    "\",\"replaceString\":\"y\",\"placement\":[2],\"minDepth\":1,\"maxDepth\":2}]";
    const char *want[] = {"x", "y", "y", "x"};
    for (int d = 0; d < 4; d++) {
        char *o = apply_st(s, "x", "output", "render", "assistant", d, NULL, NULL);
        assert_string_equal(o, want[d]);
        free(o);
    }
    char *o = apply_st(s, "x", "output", "render", "assistant", -1, NULL, NULL);
    assert_string_equal(o, "y"); /* no depth given: bounds ignored */
    free(o);
}

static void catastrophic_pattern_fails_its_rule_only(void **state)
{
    (void)state;
    json_t *failures = json_array();
    char subject[64];
    memset(subject, 'a', 40);
    strcpy(subject + 40, "!");
    char *o = apply_st("[{\"id\":\"bad\",\"scriptName\":\"slow\",\"findRegex\":\"/(a+)+$/"
                       "\",\"replaceString\":\"z\"},"
                       "{\"scriptName\":\"broken\",\"findRegex\":\"/(x/\",\"replaceString\":\"z\"},"
                       "{\"scriptName\":\"fine\",\"findRegex\":\"/!/\",\"replaceString\":\"?\"}]",
                       subject, "output", "render", NULL, -1, NULL, failures);
    assert_int_equal(strlen(o), 41);
    assert_int_equal(o[40], '?');
    assert_int_equal(json_array_size(failures), 2);
    json_t *f0 = json_array_get(failures, 0);
    assert_string_equal(json_string_value(json_object_get(f0, "code")), "REGEX_TIMEOUT");
    assert_string_equal(json_string_value(json_object_get(f0, "name")), "slow");
    assert_string_equal(json_string_value(json_object_get(json_array_get(failures, 1), "code")),
                        "REGEX_BAD_PATTERN");
    free(o);
    json_decref(failures);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(javascript_flags_behave_as_in_javascript),
        cmocka_unit_test(replacement_syntax_match_groups_names),
        cmocka_unit_test(trim_strings_are_removed_from_captures),
        cmocka_unit_test(substitute_regex_modes),
        cmocka_unit_test(placements_scopes_roles_and_only_flags),
        cmocka_unit_test(min_and_max_depth_bound_the_rule),
        cmocka_unit_test(catastrophic_pattern_fails_its_rule_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
