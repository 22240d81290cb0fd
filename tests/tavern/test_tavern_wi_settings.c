/* test_tavern_wi_settings.c — plugins/tavern/wi_settings and the token
 * estimate: SillyTavern's defaults, its world_info_* keys beside cdsh's,
 * validation (unknown keys, types, ranges; nothing applied on failure), the
 * budget rule, generation types, and ceil(UTF-8 bytes / 3.35). */
#include "support/testkit.h"

#include <string.h>

#include "plugins/tavern/tokens.h"
#include "plugins/tavern/wi_settings.h"

static void defaults_are_sillytaverns(void **state)
{
    (void)state;
    cdsh_tavern_wi_settings s;
    cdsh_tavern_wi_settings_default(&s);
    json_t *j = cdsh_tavern_wi_settings_json(&s);
    json_t *want = json_pack(
        "{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:b,s:b,s:b,s:b,s:b,s:b,s:i,s:i}", "scanDepth", 2,
        "budgetPercent", 25, "budgetCap", 0, "minActivations", 0, "minActivationsDepthMax", 0,
        "maxRecursionSteps", 0, "characterStrategy", 1, "recursive", 1, "caseSensitive", 0,
        "matchWholeWords", 1, "includeNames", 1, "overflowAlert", 0, "useGroupScoring", 0,
        "maxContext", 128000, "tokenBudget", 0);
    assert_true(json_equal(j, want));
    json_decref(j);
    json_decref(want);
    s.max_context = 8192;
    assert_int_equal(cdsh_tavern_wi_settings_budget(&s), 2048);
}

static void sillytavern_keys_and_nested_settings_apply(void **state)
{
    (void)state;
    cdsh_tavern_wi_settings s;
    cdsh_tavern_wi_settings_default(&s);
    json_t *st = json_loads("{\"world_info_settings\":{\"world_info\":{\"globalSelect\":[]},"
                            "\"world_info_depth\":5,\"world_info_recursive\":false,"
                            "\"world_info_match_whole_words\":0,\"world_info_budget\":10,"
                            "\"world_info_budget_cap\":300,\"world_info_character_strategy\":2,"
                            "\"world_info_max_recursion_steps\":3},\"maxContext\":8000}",
                            0, NULL);
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_wi_settings_apply(&s, st, &err), 0);
    assert_int_equal(s.scan_depth, 5);
    assert_false(s.recursive);
    assert_false(s.match_whole_words);
    assert_int_equal(s.character_strategy, CDSH_TAVERN_WI_GLOBAL_FIRST);
    assert_int_equal(s.max_recursion_steps, 3);
    /* round(10 % of 8000) = 800, capped at 300 */
    assert_int_equal(cdsh_tavern_wi_settings_budget(&s), 300);
    json_decref(st);
    /* a tiny context still gives a budget of 1 (ST's "|| 1") */
    s.budget_cap = 0;
    s.max_context = 3;
    assert_int_equal(cdsh_tavern_wi_settings_budget(&s), 1);
    s.token_budget = 77;
    assert_int_equal(cdsh_tavern_wi_settings_budget(&s), 77);
}

static void bad_settings_are_refused_whole(void **state)
{
    (void)state;
    static const char *const BAD[][2] = {
        {"{\"scanDepth\":-1}", "scanDepth"},
        {"{\"scanDepth\":1001}", "scanDepth"},
        {"{\"budgetPercent\":0}", "budgetPercent"},
        {"{\"budgetPercent\":101}", "budgetPercent"},
        {"{\"scanDepth\":2.5}", "scanDepth"},
        {"{\"recursive\":\"yes\"}", "recursive"},
        {"{\"recursive\":2}", "recursive"},
        {"{\"characterStrategy\":3}", "characterStrategy"},
        {"{\"wholeWords\":true}", "wholeWords"},
        {"{\"world_info_settings\":[]}", "world_info_settings"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        cdsh_tavern_wi_settings s, before;
        cdsh_tavern_wi_settings_default(&s);
        before = s;
        /* a valid key first: it must not stick when a later one fails */
        json_t *o = json_loads(BAD[i][0], 0, NULL);
        json_object_set_new(o, "includeNames", json_false());
        cdsh_error err = {0};
        assert_int_equal(cdsh_tavern_wi_settings_apply(&s, o, &err), CDSH_EINVAL);
        assert_string_equal(err.code, "wi-settings-rejected");
        assert_non_null(strstr(err.message, BAD[i][1]));
        assert_memory_equal(&s, &before, sizeof s);
        json_decref(o);
    }
    cdsh_tavern_wi_settings s;
    cdsh_tavern_wi_settings_default(&s);
    cdsh_error err = {0};
    json_t *arr = json_array();
    assert_int_equal(cdsh_tavern_wi_settings_apply(&s, arr, &err), CDSH_EINVAL);
    json_decref(arr);
    assert_int_equal(cdsh_tavern_wi_settings_apply(&s, NULL, &err), 0);
}

static void generation_types(void **state)
{
    (void)state;
    const char *ok[] = {"normal", "continue", "impersonate", "swipe", "regenerate", "quiet"};
    for (size_t i = 0; i < 6; i++)
        assert_true(cdsh_tavern_generation_type_valid(ok[i]));
    assert_false(cdsh_tavern_generation_type_valid("Normal"));
    assert_false(cdsh_tavern_generation_type_valid(""));
    assert_false(cdsh_tavern_generation_type_valid(NULL));
}

/* SillyTavern's guesstimate: Math.ceil(new TextEncoder().encode(s).length / 3.35). */
static void token_estimate_is_utf8_bytes(void **state)
{
    (void)state;
    assert_int_equal(cdsh_tavern_tokens_count_str(""), 0);
    assert_int_equal(cdsh_tavern_tokens_count_str("a"), 1);
    assert_int_equal(cdsh_tavern_tokens_count_str("abcd"), 2);       /* 4 / 3.35 */
    assert_int_equal(cdsh_tavern_tokens_count_str("龍龍龍龍龍"), 5);   /* 15 bytes */
    assert_int_equal(cdsh_tavern_tokens_count_str("龍"), 1);         /* 3 bytes */
    assert_int_equal(cdsh_tavern_tokens_count_str("😀😀"), 3);       /* 8 bytes */
    /* 67 bytes: 67 / 3.35 is 20 in doubles as in JavaScript */
    char buf[68];
    memset(buf, 'x', 67);
    buf[67] = 0;
    assert_int_equal(cdsh_tavern_tokens_count_str(buf), 20);
    /* an invalid byte is U+FFFD in JavaScript: 3 bytes */
    assert_int_equal(cdsh_tavern_tokens_count("\xff\xff\xff\xff", 4), 4); /* 12 / 3.35 */
    cdsh_tavern_tokens_tally t = {0};
    cdsh_tavern_tokens_add(&t, "ab", 2);
    cdsh_tavern_tokens_add(&t, "龍", 3);
    assert_int_equal(cdsh_tavern_tokens_total(&t), cdsh_tavern_tokens_count_str("ab龍"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_are_sillytaverns),
        cmocka_unit_test(sillytavern_keys_and_nested_settings_apply),
        cmocka_unit_test(bad_settings_are_refused_whole),
        cmocka_unit_test(generation_types),
        cmocka_unit_test(token_estimate_is_utf8_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
