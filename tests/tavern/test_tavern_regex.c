/* test_tavern_regex.c — ST regex scripts → internal rules (placements,
 * markdownOnly/promptOnly, the card enable policy), rule validation, and
 * preset/persona normalisation. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "plugins/tavern/preset.h"
#include "plugins/tavern/regex.h"

static json_t *parse(const char *text)
{
    json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
    assert_non_null(j);
    return j;
}

static json_t *rule(const char *script, cdsh_tavern_regex_source src)
{
    json_t *s = parse(script);
    json_t *r = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_regex_from_st(s, src, &r, &err), 0);
    json_decref(s);
    return r;
}

static char *list(const json_t *r, const char *key)
{
    return cdsh_json_dump_compact_dup(json_object_get(r, key));
}

static void assert_list(const json_t *r, const char *key, const char *want)
{
    char *got = list(r, key);
    assert_string_equal(got, want);
    free(got);
}

static void placements_map_to_scopes_timing_and_roles(void **state)
{
    (void)state;
    json_t *r = rule("{\"id\":\"r1\",\"scriptName\":\"n\",\"findRegex\":\"/a/gi\","
                     "\"replaceString\":\"b\",\"placement\":[1,2,5],\"minDepth\":-1,\"maxDepth\":3,"
                     "\"substituteRegex\":true,\"trimStrings\":[\"x\"]}",
                     CDSH_TAVERN_REGEX_USER);
    assert_string_equal(json_string_value(json_object_get(r, "id")), "r1");
    assert_string_equal(json_string_value(json_object_get(r, "find")), "/a/gi");
    assert_string_equal(json_string_value(json_object_get(r, "replace")), "b");
    assert_list(r, "scopes", "[\"input\",\"output\",\"prompt\"]");
    assert_list(r, "timing", "[\"send\",\"render\",\"assemble\"]");
    assert_list(r, "roles", "[\"user\",\"assistant\"]");
    assert_true(json_is_null(json_object_get(r, "minDepth")));
    assert_int_equal(json_integer_value(json_object_get(r, "maxDepth")), 3);
    assert_int_equal(json_integer_value(json_object_get(r, "substituteRegex")), 1);
    assert_string_equal(json_string_value(json_object_get(r, "source")), "user");
    assert_true(json_is_true(json_object_get(r, "enabled")));
    assert_list(r, "trimStrings", "[\"x\"]");
    json_decref(r);

    r = rule("{\"findRegex\":\"a\"}", CDSH_TAVERN_REGEX_USER); /* default placement [2] */
    assert_list(r, "scopes", "[\"output\"]");
    assert_list(r, "timing", "[\"render\"]");
    assert_true(strncmp(json_string_value(json_object_get(r, "id")), "rx-", 3) == 0);
    json_decref(r);

    json_t *s = parse("{\"findRegex\":\"a\",\"placement\":[3,6]}");
    json_t *none = (json_t *)1;
    assert_int_equal(cdsh_tavern_regex_from_st(s, CDSH_TAVERN_REGEX_USER, &none, NULL), 0);
    assert_null(none);
    json_decref(s);
}

static void markdown_and_prompt_only_flags_restrict_placement(void **state)
{
    (void)state;
    json_t *r = rule("{\"findRegex\":\"a\",\"placement\":[1],\"markdownOnly\":true}",
                     CDSH_TAVERN_REGEX_USER);
    assert_list(r, "scopes", "[\"output\"]");
    assert_list(r, "timing", "[\"render\"]");
    json_decref(r);
    r = rule("{\"findRegex\":\"a\",\"placement\":[2],\"promptOnly\":true}", CDSH_TAVERN_REGEX_USER);
    assert_list(r, "scopes", "[\"prompt\"]");
    assert_list(r, "timing", "[\"assemble\",\"send\"]");
    assert_null(json_object_get(r, "roles"));
    json_decref(r);
    r = rule("{\"findRegex\":\"a\",\"placement\":[2],\"promptOnly\":true,\"markdownOnly\":true}",
             CDSH_TAVERN_REGEX_USER);
    assert_list(r, "scopes", "[\"output\",\"prompt\"]");
    assert_list(r, "timing", "[\"render\",\"assemble\",\"send\"]");
    json_decref(r);
}

static void card_rules_follow_the_enable_policy(void **state)
{
    (void)state;
    json_t *r = rule("{\"findRegex\":\"a\",\"placement\":[2]}", CDSH_TAVERN_REGEX_CARD);
    assert_true(json_is_true(json_object_get(r, "enabled")));
    assert_string_equal(json_string_value(json_object_get(r, "source")), "card");
    json_decref(r);
    /* a rule with a display part is reduced to display-only and kept on */
    r = rule("{\"findRegex\":\"a\",\"placement\":[1,2,5]}", CDSH_TAVERN_REGEX_CARD);
    assert_true(json_is_true(json_object_get(r, "enabled")));
    assert_list(r, "scopes", "[\"output\"]");
    assert_list(r, "timing", "[\"render\"]");
    assert_list(r, "roles", "[\"assistant\"]");
    json_decref(r);
    /* prompt/input card rules default off */
    r = rule("{\"findRegex\":\"a\",\"placement\":[5]}", CDSH_TAVERN_REGEX_CARD);
    assert_false(json_is_true(json_object_get(r, "enabled")));
    json_decref(r);
    r = rule("{\"findRegex\":\"a\",\"placement\":[1]}", CDSH_TAVERN_REGEX_CARD);
    assert_false(json_is_true(json_object_get(r, "enabled")));
    json_decref(r);
    /* disabled:true is always off */
    r = rule("{\"findRegex\":\"a\",\"placement\":[2],\"disabled\":true}", CDSH_TAVERN_REGEX_CARD);
    assert_false(json_is_true(json_object_get(r, "enabled")));
    json_decref(r);
    /* preset rules follow their flag, prompt rules included */
    r = rule("{\"findRegex\":\"a\",\"placement\":[5]}", CDSH_TAVERN_REGEX_PRESET);
    assert_true(json_is_true(json_object_get(r, "enabled")));
    assert_string_equal(json_string_value(json_object_get(r, "source")), "preset");
    json_decref(r);
}

static void bad_scripts_and_rules_are_refused(void **state)
{
    (void)state;
    const char *scripts[] = {"[]", "{\"findRegex\":5}", "{\"findRegex\":\"a\",\"placement\":2}",
                             "{\"findRegex\":\"a\",\"replaceString\":[]}"};
    for (size_t i = 0; i < 4; i++) {
        json_t *s = parse(scripts[i]);
        json_t *r = NULL;
        cdsh_error err = {0};
        assert_true(cdsh_tavern_regex_from_st(s, CDSH_TAVERN_REGEX_USER, &r, &err) < 0);
        assert_string_equal(err.code, "REGEX_BAD_SCRIPT");
        json_decref(s);
    }
    const char *rules[] = {"{\"find\":\"\"}", "{\"find\":\"a\",\"scopes\":[\"everywhere\"]}",
                           "{\"find\":\"a\",\"timing\":[]}", "{\"find\":\"a\",\"source\":\"x\"}",
                           "{\"find\":\"a\",\"substituteRegex\":3}"};
    for (size_t i = 0; i < 5; i++) {
        json_t *s = parse(rules[i]);
        cdsh_error err = {0};
        assert_null(cdsh_tavern_regex_rule_normalize_dup(s, &err));
        assert_string_equal(err.code, "REGEX_BAD_RULE");
        json_decref(s);
    }
}

static void import_accepts_scripts_and_rules_mixed(void **state)
{
    (void)state;
    json_t *in = parse("[{\"findRegex\":\"/x/\",\"scriptName\":\"st\"},"
                       "{\"find\":\"y\",\"name\":\"internal\",\"extra\":1},"
                       "{\"findRegex\":\"z\",\"placement\":[3]}]");
    cdsh_error err = {0};
    json_t *out = cdsh_tavern_regex_import_dup(in, CDSH_TAVERN_REGEX_USER, &err);
    assert_non_null(out);
    assert_int_equal(json_array_size(out), 2);
    json_t *r1 = json_array_get(out, 1);
    assert_list(r1, "scopes", "[\"output\"]"); /* new rules default to output/render */
    assert_int_equal(json_integer_value(json_object_get(r1, "extra")), 1);
    json_t *again = cdsh_tavern_regex_import_dup(out, CDSH_TAVERN_REGEX_USER, &err);
    assert_true(cdsh_json_equal(out, again));
    json_decref(again);
    json_decref(out);
    json_decref(in);
}

static void preset_gets_defaults_and_keeps_unknown_keys(void **state)
{
    (void)state;
    json_t *in = parse("{\"temperature\":0.7,\"custom_url\":\"\",\"prompts\":[{\"identifier\":"
                       "\"main\",\"content\":\"Write.\"},{\"identifier\":\"chatHistory\","
                       "\"marker\":true}],\"prompt_order\":[{\"character_id\":100001,\"order\":[{"
                       "\"identifier\":\"main\",\"enabled\":true}]}],\"regexScripts\":[{"
                       "\"findRegex\":\"a\"}]}");
    cdsh_error err = {0};
    json_t *p = cdsh_tavern_preset_normalize_dup(in, "Mine", &err);
    assert_non_null(p);
    assert_string_equal(json_string_value(json_object_get(p, "name")), "Mine");
    assert_true(json_real_value(json_object_get(p, "temperature")) == 0.7);
    assert_int_equal(json_integer_value(json_object_get(p, "openai_max_tokens")), 300);
    assert_int_equal(json_integer_value(json_object_get(p, "openai_max_context")), 4095);
    assert_non_null(json_object_get(p, "custom_url"));
    json_t *p0 = json_array_get(json_object_get(p, "prompts"), 0);
    assert_string_equal(json_string_value(json_object_get(p0, "role")), "system");
    assert_int_equal(json_integer_value(json_object_get(p0, "injection_depth")), 4);
    assert_int_equal(json_integer_value(json_object_get(p0, "injection_order")), 100);
    json_t *p1 = json_array_get(json_object_get(p, "prompts"), 1);
    assert_true(json_is_true(json_object_get(p1, "marker")));
    assert_string_equal(json_string_value(json_object_get(p1, "content")), "");
    assert_int_equal(json_array_size(json_object_get(p, "regexScripts")), 1);
    json_t *again = cdsh_tavern_preset_normalize_dup(p, "Other", &err);
    assert_true(cdsh_json_equal(p, again));
    json_decref(again);
    json_decref(p);
    json_decref(in);

    const char *bad[] = {"[]",
                         "{\"temperature\":\"hot\"}",
                         "{\"prompts\":[{\"name\":\"x\"}]}",
                         "{\"prompts\":[{\"identifier\":\"m\",\"role\":\"god\"}]}",
                         "{\"prompt_order\":[{\"character_id\":1}]}",
                         "{\"regexScripts\":{}}"};
    const char *codes[] = {"PRESET_BAD_SHAPE", "PRESET_BAD_FIELD", "PRESET_BAD_FIELD",
                           "PRESET_BAD_FIELD", "PRESET_BAD_FIELD", "PRESET_BAD_FIELD"};
    for (size_t i = 0; i < 6; i++) {
        json_t *b = parse(bad[i]);
        cdsh_error e2 = {0};
        assert_null(cdsh_tavern_preset_normalize_dup(b, NULL, &e2));
        assert_string_equal(e2.code, codes[i]);
        json_decref(b);
    }
}

static void persona_needs_a_name(void **state)
{
    (void)state;
    json_t *in = parse("{\"name\":\"Me\",\"pronouns\":\"they\"}");
    cdsh_error err = {0};
    json_t *p = cdsh_tavern_persona_normalize_dup(in, &err);
    assert_string_equal(json_string_value(json_object_get(p, "description")), "");
    assert_true(json_is_null(json_object_get(p, "avatar")));
    assert_true(json_is_null(json_object_get(p, "lorebook")));
    assert_string_equal(json_string_value(json_object_get(p, "pronouns")), "they");
    json_decref(p);
    json_decref(in);
    in = parse("{\"description\":\"x\"}");
    assert_null(cdsh_tavern_persona_normalize_dup(in, &err));
    assert_string_equal(err.code, "PERSONA_NO_NAME");
    json_decref(in);
    in = parse("{\"name\":\"a\",\"lorebook\":3}");
    assert_null(cdsh_tavern_persona_normalize_dup(in, &err));
    assert_string_equal(err.code, "PERSONA_BAD_SHAPE");
    json_decref(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(placements_map_to_scopes_timing_and_roles),
        cmocka_unit_test(markdown_and_prompt_only_flags_restrict_placement),
        cmocka_unit_test(card_rules_follow_the_enable_policy),
        cmocka_unit_test(bad_scripts_and_rules_are_refused),
        cmocka_unit_test(import_accepts_scripts_and_rules_mixed),
        cmocka_unit_test(preset_gets_defaults_and_keeps_unknown_keys),
        cmocka_unit_test(persona_needs_a_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
