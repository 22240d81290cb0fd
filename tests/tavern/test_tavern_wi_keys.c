/* test_tavern_wi_keys.c — plugins/tavern/wi_keys: SillyTavern's matchKeys
 * on its own: substring and whole-word matching with JavaScript's ASCII \W
 * boundaries, JavaScript's toLowerCase() case folding (utf8proc), /regex/flags keys (compiled once,
 * bad ones never matching), macros in keys, trimming and empty keys. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "plugins/tavern/wi_keys.h"

typedef struct fx {
    cdsh_tavern_wi_matcher *m;
    char *low;
    cdsh_tavern_wi_hay h;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->m = cdsh_tavern_wi_matcher_new();
    *state = f;
    return f->m ? 0 : -1;
}

static int teardown(void **state)
{
    fx *f = *state;
    cdsh_tavern_wi_matcher_free(f->m);
    free(f->low);
    free(f);
    return 0;
}

static void text(fx *f, const char *t)
{
    free(f->low);
    f->low = cdsh_tavern_wi_lower_dup(t, strlen(t));
    assert_non_null(f->low);
    f->h = (cdsh_tavern_wi_hay){t, f->low, strlen(t), strlen(f->low)};
}

static bool hit(fx *f, const char *key, bool cs, bool whole)
{
    cdsh_tavern_wi_key k;
    assert_int_equal(cdsh_tavern_wi_key_init(key, NULL, &k), 0);
    bool r = cdsh_tavern_wi_key_match(f->m, &k, &f->h, cs, whole);
    cdsh_tavern_wi_key_deinit(&k);
    return r;
}

static void substring_and_case(void **state)
{
    fx *f = *state;
    text(f, "The Dragon sleeps under Mount Ash.");
    assert_true(hit(f, "dragon", false, false));
    assert_false(hit(f, "dragon", true, false));
    assert_true(hit(f, "Dragon", true, false));
    assert_true(hit(f, "rag", false, false)); /* substring, not a word */
    assert_false(hit(f, "wyvern", false, false));
}

static void whole_words_use_javascript_boundaries(void **state)
{
    fx *f = *state;
    text(f, "dragonfly, the_dragon and (dragon)!");
    assert_true(hit(f, "dragon", false, true)); /* "(dragon)" */
    text(f, "dragonfly and the_dragon");
    assert_false(hit(f, "dragon", false, true)); /* '_' is a word character */
    assert_true(hit(f, "dragon", false, false));
    /* a key with a space falls back to a substring, as ST's does */
    text(f, "mount ashen");
    assert_true(hit(f, "mount ash", false, true));
    assert_false(hit(f, "ash", false, true));
    /* non-ASCII letters are \W in JavaScript: "é" is a boundary */
    text(f, "écho");
    assert_true(hit(f, "cho", false, true));
}

static void folding_covers_common_alphabets(void **state)
{
    fx *f = *state;
    text(f, "ΔΡΆΚΩΝ, ДРАКОН и Ÿ ÉLAN Łódź");
    assert_true(hit(f, "дракон", false, false));
    assert_true(hit(f, "élan", false, false));
    assert_true(hit(f, "łódź", false, false));
    assert_false(hit(f, "дракон", true, false));
    char *low = cdsh_tavern_wi_lower_dup("AÀΣЖ\xff", 9);
    assert_string_equal(low, "aàσж\xff"); /* an invalid byte is kept */
    free(low);
}

/* JavaScript's toLowerCase() (the expected strings are what Node 20 and
 * Chromium print): the simple mappings of every script, U+0130's expansion
 * and the final sigma. */
static void folding_is_javascripts_to_lower_case(void **state)
{
    (void)state;
    static const char *const CASES[][2] = {
        {"ΆΛΦΑ", "άλφα"},
        {"ὈΔΥΣΣΕΎΣ", "ὀδυσσεύς"},
        {"ΣΑ Σ", "σα σ"},
        {"İstanbul", "i̇stanbul"},
        {"Tiếng Việt ĐẠI", "tiếng việt đại"},
        {"STRAẞE", "straße"},
        {"ǅemal ǄǅǆǇ", "ǆemal ǆǆǆǉ"},
        {"ＡＢＣ", "ａｂｃ"},
        {"ԱՐՄԵՆԻԱ", "արմենիա"},
        {"ᲑᲐᲢᲝᲜᲘ", "ბატონი"},
        {"ᎠᎡᎢ", "ꭰꭱꭲ"},
        {"Ω K Å", "ω k å"},
        {"ΑΣ.", "ας."},
        {"ΑΣ\xcc\x81Β", "ασ\xcc\x81β"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char *low = cdsh_tavern_wi_lower_dup(CASES[i][0], strlen(CASES[i][0]));
        assert_non_null(low);
        assert_string_equal(low, CASES[i][1]);
        free(low);
    }
}

static void accented_greek_keys_match_and_whole_words_stay_words(void **state)
{
    fx *f = *state;
    text(f, "Η Άλφα μιλά.");
    assert_true(hit(f, "άλφα", false, true));
    assert_true(hit(f, "ΆΛΦΑ", false, true));
    /* ST's default whole words: "art" is not in "heart" */
    text(f, "I love my heart");
    assert_false(hit(f, "art", false, true));
    assert_true(hit(f, "art", false, false));
    /* JavaScript's \s splits keys: a no-break space makes a phrase */
    text(f, "the old\xc2\xa0" "city gate");
    assert_true(hit(f, "old\xc2\xa0" "city", false, true));
    /* String.prototype.trim() removes the ideographic space */
    text(f, "龍が来た");
    assert_true(hit(f, "\xe3\x80\x80龍\xe3\x80\x80", false, false));
}

static void regex_keys_follow_javascript(void **state)
{
    fx *f = *state;
    text(f, "The Dragon sleeps.");
    assert_true(hit(f, "/drag(on|oon)/i", false, false));
    assert_false(hit(f, "/drag(on|oon)/", false, false)); /* case from the flags only */
    assert_true(hit(f, "/^The/", false, true));
    assert_false(hit(f, "/(unclosed/", false, false)); /* bad regex: never matches */
    assert_false(hit(f, "/(unclosed/", false, false)); /* and stays bad (cached) */
    text(f, "a/b path");
    assert_true(hit(f, "/b", false, false)); /* no literal: plain text */
}

static void keys_are_trimmed_and_empty_keys_never_match(void **state)
{
    fx *f = *state;
    text(f, "moonlight");
    assert_true(hit(f, "  moon \t", false, false));
    assert_false(hit(f, "   ", false, false));
    assert_false(hit(f, "", false, false));
    cdsh_tavern_wi_key k;
    assert_int_equal(cdsh_tavern_wi_key_init(" a b ", NULL, &k), 0);
    assert_string_equal(k.key, "a b");
    assert_true(k.multi);
    cdsh_tavern_wi_key_deinit(&k);
}

static void macros_in_keys_are_expanded(void **state)
{
    fx *f = *state;
    cdsh_tavern_macro_env env = {.user = "Aria", .chr = "Seraphina"};
    assert_true(cdsh_tavern_wi_key_has_macro("{{char}}"));
    assert_false(cdsh_tavern_wi_key_has_macro("plain"));
    text(f, "Seraphina smiles at Aria.");
    cdsh_tavern_wi_key k;
    assert_int_equal(cdsh_tavern_wi_key_init("{{char}}", &env, &k), 0);
    assert_string_equal(k.key, "Seraphina");
    assert_true(cdsh_tavern_wi_key_match(f->m, &k, &f->h, true, true));
    cdsh_tavern_wi_key_deinit(&k);
    /* without an environment the key is literal text */
    assert_int_equal(cdsh_tavern_wi_key_init("{{user}}", NULL, &k), 0);
    assert_false(cdsh_tavern_wi_key_match(f->m, &k, &f->h, false, false));
    cdsh_tavern_wi_key_deinit(&k);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(substring_and_case),
        T(whole_words_use_javascript_boundaries),
        T(folding_covers_common_alphabets),
        T(folding_is_javascripts_to_lower_case),
        T(accented_greek_keys_match_and_whole_words_stay_words),
        T(regex_keys_follow_javascript),
        T(keys_are_trimmed_and_empty_keys_never_match),
        T(macros_in_keys_are_expanded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
