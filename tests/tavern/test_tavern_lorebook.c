/* test_tavern_lorebook.c — world-info normalisation (every §2.2 field with
 * SillyTavern's defaults), character-book conversion both ways, idempotence
 * and the import limits. */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "plugins/tavern/lorebook.h"

#define SAMPLE_WI CDSH_TEST_DATA("tavern-samples/st-worldinfo-eldoria.json")

static json_t *parse(const char *text)
{
    json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
    assert_non_null(j);
    return j;
}

static json_t *norm_ok(const json_t *in)
{
    cdsh_error err = {0};
    json_t *out = cdsh_tavern_lorebook_normalize_dup(in, &err);
    if (!out)
        fail_msg("%s: %s", err.code, err.message);
    return out;
}

static void expect_norm_error(const json_t *in, const char *code)
{
    cdsh_error err = {0};
    json_t *out = cdsh_tavern_lorebook_normalize_dup(in, &err);
    assert_null(out);
    assert_string_equal(err.code, code);
    json_t *cb = cdsh_tavern_character_book_normalize_dup(in, &err);
    assert_null(cb);
    assert_string_equal(err.code, code);
}

static void sample_gets_every_field_with_defaults(void **state)
{
    (void)state;
    json_t *in = json_load_file(SAMPLE_WI, 0, NULL);
    json_t *out = norm_ok(in);
    json_t *entries = json_object_get(out, "entries");
    assert_int_equal(json_object_size(entries), 4);
    json_t *e0 = json_object_get(entries, "0");
    json_t *src0 = json_object_get(json_object_get(in, "entries"), "0");
    /* kept values */
    const char *k;
    json_t *v;
    json_object_foreach(src0, k, v) {
        if (!cdsh_json_equal(v, json_object_get(e0, k)))
            fail_msg("field %s changed", k);
    }
    /* defaults of fields the old file lacks */
    assert_int_equal(json_integer_value(json_object_get(e0, "groupWeight")), 100);
    assert_true(json_is_null(json_object_get(e0, "sticky")));
    assert_true(json_is_null(json_object_get(e0, "scanDepth")));
    assert_false(json_is_true(json_object_get(e0, "ignoreBudget")));
    assert_int_equal(json_array_size(json_object_get(e0, "triggers")), 0);
    assert_string_equal(json_string_value(json_object_get(e0, "outletName")), "");
    assert_false(json_is_true(json_object_get(e0, "matchScenario")));
    assert_int_equal(json_object_size(e0) >= 40, 1);
    json_decref(out);
    json_decref(in);
}

static void array_entries_become_a_uid_map(void **state)
{
    (void)state;
    json_t *in = parse("{\"name\":\"B\",\"entries\":[{\"key\":[\"a\"],\"content\":\"x\"},"
                       "{\"uid\":7,\"key\":\"solo\",\"content\":\"y\",\"custom\":true}]}");
    json_t *out = norm_ok(in);
    json_t *entries = json_object_get(out, "entries");
    assert_non_null(json_object_get(entries, "0"));
    json_t *e7 = json_object_get(entries, "7");
    assert_non_null(e7);
    assert_string_equal(json_string_value(json_array_get(json_object_get(e7, "key"), 0)), "solo");
    assert_true(json_is_true(json_object_get(e7, "custom")));
    json_t *e0 = json_object_get(entries, "0");
    assert_int_equal(json_integer_value(json_object_get(e0, "order")), 100);
    assert_int_equal(json_integer_value(json_object_get(e0, "depth")), 4);
    assert_int_equal(json_integer_value(json_object_get(e0, "probability")), 100);
    assert_true(json_is_true(json_object_get(e0, "selective")));
    assert_string_equal(json_string_value(json_object_get(out, "name")), "B");
    json_decref(out);
    json_decref(in);
}

static void character_book_converts_like_sillytavern(void **state)
{
    (void)state;
    json_t *in = parse(
        "{\"name\":\"CB\",\"entries\":[{\"id\":3,\"keys\":[\"k\"],\"secondary_keys\":[\"s\"],"
        "\"content\":\"c\",\"enabled\":false,\"insertion_order\":12,\"position\":\"before_char\","
        "\"extensions\":{\"probability\":null,\"depth\":2,\"group_weight\":5,\"x_tool\":1}},"
        "{\"keys\":[\"z\"],\"content\":\"\",\"enabled\":true,\"insertion_order\":1,"
        "\"position\":\"after_char\",\"extensions\":{}}]}");
    json_t *out = norm_ok(in);
    json_t *e3 = json_object_get(json_object_get(out, "entries"), "3");
    assert_non_null(e3);
    assert_true(json_is_true(json_object_get(e3, "disable")));
    assert_int_equal(json_integer_value(json_object_get(e3, "order")), 12);
    assert_int_equal(json_integer_value(json_object_get(e3, "position")), 0);
    assert_int_equal(json_integer_value(json_object_get(e3, "depth")), 2);
    assert_int_equal(json_integer_value(json_object_get(e3, "groupWeight")), 5);
    assert_int_equal(json_integer_value(json_object_get(e3, "probability")), 100);
    assert_string_equal(json_string_value(json_array_get(json_object_get(e3, "keysecondary"), 0)),
                        "s");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(e3, "extensions"), "x_tool")), 1);
    json_t *e1 = json_object_get(json_object_get(out, "entries"), "1");
    assert_int_equal(json_integer_value(json_object_get(e1, "position")), 1);
    json_decref(out);

    /* and back: world-info entries become a valid character book */
    cdsh_error err = {0};
    json_t *wi = norm_ok(in);
    json_t *cb = cdsh_tavern_character_book_normalize_dup(wi, &err);
    assert_non_null(cb);
    json_t *c0 = json_array_get(json_object_get(cb, "entries"), 0);
    assert_false(json_is_true(json_object_get(c0, "enabled")));
    assert_int_equal(json_integer_value(json_object_get(c0, "insertion_order")), 12);
    assert_string_equal(json_string_value(json_object_get(c0, "position")), "before_char");
    assert_int_equal(json_integer_value(json_object_get(c0, "id")), 3);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(c0, "extensions"), "group_weight")), 5);
    assert_true(json_is_object(json_object_get(cb, "extensions")));
    json_decref(cb);
    json_decref(wi);
    json_decref(in);
}

static void character_book_normalisation_drops_null_optionals(void **state)
{
    (void)state;
    json_t *in = parse("{\"name\":null,\"scan_depth\":null,\"entries\":[{\"keys\":[\"k\"],"
                       "\"content\":\"c\",\"case_sensitive\":null,\"comment\":null,"
                       "\"priority\":3}]}");
    cdsh_error err = {0};
    json_t *cb = cdsh_tavern_character_book_normalize_dup(in, &err);
    assert_non_null(cb);
    assert_null(json_object_get(cb, "name"));
    assert_null(json_object_get(cb, "scan_depth"));
    json_t *e = json_array_get(json_object_get(cb, "entries"), 0);
    assert_null(json_object_get(e, "case_sensitive"));
    assert_null(json_object_get(e, "comment"));
    assert_int_equal(json_integer_value(json_object_get(e, "priority")), 3);
    assert_true(json_is_true(json_object_get(e, "enabled")));
    assert_int_equal(json_integer_value(json_object_get(e, "insertion_order")), 100);
    json_decref(cb);
    json_decref(in);
}

static void normalisation_is_idempotent(void **state)
{
    (void)state;
    json_t *in = json_load_file(SAMPLE_WI, 0, NULL);
    json_t *a = norm_ok(in);
    json_t *b = norm_ok(a);
    assert_true(cdsh_json_equal(a, b));
    cdsh_error err = {0};
    json_t *ca = cdsh_tavern_character_book_normalize_dup(in, &err);
    json_t *cb = cdsh_tavern_character_book_normalize_dup(ca, &err);
    assert_true(cdsh_json_equal(ca, cb));
    json_decref(ca);
    json_decref(cb);
    json_decref(a);
    json_decref(b);
    json_decref(in);
}

static void lorebook_v3_wrapper_and_json_string_are_accepted(void **state)
{
    (void)state;
    json_t *in = parse("{\"spec\":\"lorebook_v3\",\"data\":{\"name\":\"W\",\"entries\":[{"
                       "\"keys\":[\"k\"],\"content\":\"c\"}]}}");
    json_t *out = norm_ok(in);
    assert_string_equal(json_string_value(json_object_get(out, "name")), "W");
    assert_int_equal(cdsh_tavern_lorebook_entry_count(out), 1);
    json_decref(out);
    json_t *s = json_string("{\"entries\":{\"1\":{\"uid\":1,\"key\":[\"q\"]}}}");
    out = norm_ok(s);
    assert_int_equal(cdsh_tavern_lorebook_entry_count(out), 1);
    assert_true(cdsh_tavern_lorebook_is_candidate(s));
    json_t *name = json_string("Eldoria");
    assert_false(cdsh_tavern_lorebook_is_candidate(name));
    json_decref(name);
    json_decref(out);
    json_decref(s);
    json_decref(in);
}

static void limits_and_bad_shapes_are_refused(void **state)
{
    (void)state;
    char *longkey = malloc(600);
    memset(longkey, 'k', 501);
    longkey[501] = 0;
    json_t *in = json_pack("{s:[{s:[s], s:s}]}", "entries", "key", longkey, "content", "c");
    expect_norm_error(in, "LOREBOOK_KEY_TOO_LONG");
    json_decref(in);
    longkey[500] = 0; /* exactly 500 is fine */
    in = json_pack("{s:[{s:[s], s:s}]}", "entries", "key", longkey, "content", "c");
    json_t *ok = norm_ok(in);
    json_decref(ok);
    json_decref(in);
    free(longkey);

    size_t cn = CDSH_TAVERN_LOREBOOK_MAX_CONTENT + 1;
    char *content = malloc(cn + 1);
    memset(content, 'c', cn);
    content[cn] = 0;
    in = json_pack("{s:[{s:[s], s:s}]}", "entries", "key", "k", "content", content);
    expect_norm_error(in, "LOREBOOK_CONTENT_TOO_LONG");
    json_decref(in);
    free(content);

    json_t *many = json_array();
    for (int i = 0; i <= CDSH_TAVERN_LOREBOOK_MAX_ENTRIES; i++)
        json_array_append_new(many, json_pack("{s:[s]}", "key", "k"));
    in = json_pack("{s:o}", "entries", many);
    expect_norm_error(in, "LOREBOOK_TOO_MANY_ENTRIES");
    json_decref(in);

    in = parse("{\"entries\":[{\"uid\":1},{\"uid\":1}]}");
    cdsh_error err = {0};
    assert_null(cdsh_tavern_lorebook_normalize_dup(in, &err));
    assert_string_equal(err.code, "LOREBOOK_DUPLICATE_UID");
    json_decref(in);

    const char *bad[] = {"{\"entries\":5}", "42", "{\"entries\":[7]}",
                         "{\"entries\":[{\"key\":[1]}]}", "{\"entries\":[{\"content\":[]}]}"};
    const char *codes[] = {"LOREBOOK_BAD_SHAPE", "LOREBOOK_BAD_SHAPE", "LOREBOOK_BAD_ENTRY",
                           "LOREBOOK_BAD_ENTRY", "LOREBOOK_BAD_ENTRY"};
    for (size_t i = 0; i < 5; i++) {
        json_t *b = parse(bad[i]);
        cdsh_error e2 = {0};
        assert_null(cdsh_tavern_lorebook_normalize_dup(b, &e2));
        assert_string_equal(e2.code, codes[i]);
        json_decref(b);
    }
}

/* A card's character_book keeps ST 1.19's newer fields under extensions
 * (outlet_name, match_*, triggers, ignore_budget): they map onto the
 * world-info entry and back unchanged. */
static void character_book_extensions_map_both_ways(void **state)
{
    (void)state;
    json_t *cb = json_loads(
        "{\"entries\":[{\"keys\":[\"k\"],\"content\":\"c\",\"enabled\":true,\"insertion_order\":5,"
        "\"extensions\":{\"position\":7,\"outlet_name\":\"sidebar\",\"match_persona_description\":"
        "true,\"match_character_description\":true,\"match_character_personality\":true,"
        "\"match_character_depth_prompt\":true,\"match_scenario\":true,\"match_creator_notes\":"
        "true,\"triggers\":[\"continue\",\"swipe\"],\"ignore_budget\":true,\"x_custom\":1}}]}",
        0, NULL);
    cdsh_error err = {0};
    json_t *wi = cdsh_tavern_lorebook_normalize_dup(cb, &err);
    assert_non_null(wi);
    json_t *e = NULL;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(wi, "entries"), k, v) e = v;
    assert_non_null(e);
    assert_string_equal(json_string_value(json_object_get(e, "outletName")), "sidebar");
    const char *flags[] = {"matchPersonaDescription", "matchCharacterDescription",
                           "matchCharacterPersonality", "matchCharacterDepthPrompt",
                           "matchScenario", "matchCreatorNotes", "ignoreBudget"};
    for (size_t i = 0; i < 7; i++)
        assert_true(json_is_true(json_object_get(e, flags[i])));
    assert_int_equal(json_array_size(json_object_get(e, "triggers")), 2);
    assert_int_equal(json_integer_value(json_object_get(e, "position")), 7);
    json_t *back = cdsh_tavern_character_book_normalize_dup(wi, &err);
    assert_non_null(back);
    json_t *ext = json_object_get(json_array_get(json_object_get(back, "entries"), 0), "extensions");
    json_t *want = json_object_get(json_array_get(json_object_get(cb, "entries"), 0), "extensions");
    json_object_foreach(want, k, v) {
        if (!json_equal(json_object_get(ext, k), v))
            fail_msg("extension %s lost or changed on the way back", k);
    }
    json_decref(back);
    json_decref(wi);
    json_decref(cb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(character_book_extensions_map_both_ways),
        cmocka_unit_test(sample_gets_every_field_with_defaults),
        cmocka_unit_test(array_entries_become_a_uid_map),
        cmocka_unit_test(character_book_converts_like_sillytavern),
        cmocka_unit_test(character_book_normalisation_drops_null_optionals),
        cmocka_unit_test(normalisation_is_idempotent),
        cmocka_unit_test(lorebook_v3_wrapper_and_json_string_are_accepted),
        cmocka_unit_test(limits_and_bad_shapes_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
