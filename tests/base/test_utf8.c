/* test_utf8.c — strict decoding, counting, display width and truncation. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/utf8.h"

#define S(lit) lit, sizeof lit - 1

static void valid_text_of_all_lengths_decodes(void **state)
{
    (void)state;
    uint32_t cp;
    size_t len;
    assert_int_equal(cdsh_utf8_decode(S("A"), &cp, &len), 0);
    assert_int_equal(cp, 'A');
    assert_int_equal(len, 1);
    assert_int_equal(cdsh_utf8_decode(S("é"), &cp, &len), 0);
    assert_int_equal(cp, 0xE9);
    assert_int_equal(len, 2);
    assert_int_equal(cdsh_utf8_decode(S("中"), &cp, &len), 0);
    assert_int_equal(cp, 0x4E2D);
    assert_int_equal(len, 3);
    assert_int_equal(cdsh_utf8_decode(S("\xf0\x9f\x98\x80"), &cp, &len), 0);
    assert_int_equal(cp, 0x1F600);
    assert_int_equal(len, 4);
    assert_int_equal(cdsh_utf8_decode(S("\xf4\x8f\xbf\xbf"), &cp, &len), 0);
    assert_int_equal(cp, 0x10FFFF);
    assert_true(cdsh_utf8_valid(S("a\0b")));
    assert_true(cdsh_utf8_valid("", 0));
}

static void overlongs_surrogates_and_out_of_range_are_rejected(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "\xc0\xaf",         "\xc1\xbf",         "\xe0\x80\xaf", "\xe0\x9f\xbf",
        "\xf0\x80\x80\xaf", "\xf0\x8f\xbf\xbf", "\xed\xa0\x80", "\xed\xbf\xbf",
        "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff",         "\x80",
        "\xe4\xb8",         "\xf0\x9f\x98",     "\xc3",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint32_t cp = 0;
        size_t len = 0;
        assert_false(cdsh_utf8_valid(bad[i], strlen(bad[i])));
        assert_int_equal(cdsh_utf8_decode(bad[i], strlen(bad[i]), &cp, &len), CDSH_EINVAL);
        assert_int_equal(cp, CDSH_UTF8_REPLACEMENT);
        assert_true(len >= 1);
    }
}

static void invalid_sequences_skip_their_maximal_subpart(void **state)
{
    (void)state;
    uint32_t cp;
    size_t len;
    /* truncated 3-byte sequence followed by ASCII: skip the two good bytes */
    assert_int_equal(cdsh_utf8_decode(S("\xe4\xb8X"), &cp, &len), CDSH_EINVAL);
    assert_int_equal(len, 2);
    /* surrogate lead: ED A0 is not a valid prefix, so only ED is skipped */
    assert_int_equal(cdsh_utf8_decode(S("\xed\xa0\x80"), &cp, &len), CDSH_EINVAL);
    assert_int_equal(len, 1);
    assert_int_equal(cdsh_utf8_decode("", 0, &cp, &len), CDSH_EINVAL);
    assert_int_equal(len, 0);
    assert_int_equal(cdsh_utf8_valid_prefix(S("ab\xe4\xb8X")), 2);
}

static void count_treats_each_invalid_subpart_as_one(void **state)
{
    (void)state;
    assert_int_equal(cdsh_utf8_count(S("a中\xf0\x9f\x98\x80")), 3);
    assert_int_equal(cdsh_utf8_count(S("a\xff\xe4\xb8z")), 4);
    assert_int_equal(cdsh_utf8_count("", 0), 0);
}

static void encode_round_trips_and_refuses_surrogates(void **state)
{
    (void)state;
    static const uint32_t cps[] = {0, 0x7F, 0x80, 0x7FF, 0x800, 0xFFFD, 0x10000, 0x10FFFF};
    for (size_t i = 0; i < sizeof cps / sizeof *cps; i++) {
        char buf[4];
        size_t n = cdsh_utf8_encode(cps[i], buf);
        uint32_t cp;
        size_t len;
        assert_int_equal(cdsh_utf8_decode(buf, n, &cp, &len), 0);
        assert_int_equal(cp, cps[i]);
        assert_int_equal(len, n);
    }
    char buf[4];
    assert_int_equal(cdsh_utf8_encode(0xD800, buf), 0);
    assert_int_equal(cdsh_utf8_encode(0x110000, buf), 0);
}

static void width_counts_wide_zero_and_narrow(void **state)
{
    (void)state;
    assert_int_equal(cdsh_utf8_cp_width('a'), 1);
    assert_int_equal(cdsh_utf8_cp_width(0x4E2D), 2);  /* CJK */
    assert_int_equal(cdsh_utf8_cp_width(0xAC00), 2);  /* Hangul syllable */
    assert_int_equal(cdsh_utf8_cp_width(0x3042), 2);  /* Hiragana */
    assert_int_equal(cdsh_utf8_cp_width(0xFF21), 2);  /* fullwidth A */
    assert_int_equal(cdsh_utf8_cp_width(0x1F600), 2); /* emoji */
    assert_int_equal(cdsh_utf8_cp_width(0x20000), 2); /* CJK ext B */
    assert_int_equal(cdsh_utf8_cp_width(0x0301), 0);  /* combining acute */
    assert_int_equal(cdsh_utf8_cp_width(0x200B), 0);  /* zero width space */
    assert_int_equal(cdsh_utf8_cp_width(0xFE0F), 0);  /* variation selector */
    assert_int_equal(cdsh_utf8_cp_width(0x1B), 0);    /* ESC */
    assert_int_equal(cdsh_utf8_cp_width(0x85), 0);    /* C1 */
    assert_int_equal(cdsh_utf8_cp_width(0xE9), 1);
    assert_int_equal(cdsh_utf8_cp_width(0xFF61), 1); /* halfwidth katakana punctuation */
    assert_int_equal(cdsh_utf8_width(S("a中e\xcc\x81\xf0\x9f\x98\x80")), 1 + 2 + 1 + 0 + 2);
    assert_int_equal(cdsh_utf8_width(S("\xff")), 1);
}

static void truncate_never_cuts_a_code_point(void **state)
{
    (void)state;
    size_t w;
    const char text[] = "中文ab";
    assert_int_equal(cdsh_utf8_truncate_width(S(text), 3, &w), 3); /* "中" only */
    assert_int_equal(w, 2);
    assert_int_equal(cdsh_utf8_truncate_width(S(text), 4, &w), 6);
    assert_int_equal(w, 4);
    assert_int_equal(cdsh_utf8_truncate_width(S(text), 100, &w), sizeof text - 1);
    assert_int_equal(w, 6);
    assert_int_equal(cdsh_utf8_truncate_width(S(text), 0, &w), 0);
    assert_int_equal(w, 0);
    assert_int_equal(cdsh_utf8_truncate_width(S(text), 1, NULL), 0);
}

static void truncate_keeps_combining_marks_with_their_letter(void **state)
{
    (void)state;
    size_t w;
    /* "e" + U+0301, then "x": width 1 keeps the accent */
    assert_int_equal(cdsh_utf8_truncate_width(S("e\xcc\x81x"), 1, &w), 3);
    assert_int_equal(w, 1);
}

static void sanitize_replaces_invalid_subparts(void **state)
{
    (void)state;
    size_t n;
    char *s = cdsh_utf8_sanitize_dup(S("a\xff\xe4\xb8z中"), &n);
    assert_string_equal(s, "a\xef\xbf\xbd\xef\xbf\xbdz中");
    assert_int_equal(n, strlen(s));
    assert_true(cdsh_utf8_valid(s, n));
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(valid_text_of_all_lengths_decodes),
        cmocka_unit_test(overlongs_surrogates_and_out_of_range_are_rejected),
        cmocka_unit_test(invalid_sequences_skip_their_maximal_subpart),
        cmocka_unit_test(count_treats_each_invalid_subpart_as_one),
        cmocka_unit_test(encode_round_trips_and_refuses_surrogates),
        cmocka_unit_test(width_counts_wide_zero_and_narrow),
        cmocka_unit_test(truncate_never_cuts_a_code_point),
        cmocka_unit_test(truncate_keeps_combining_marks_with_their_letter),
        cmocka_unit_test(sanitize_replaces_invalid_subparts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
