/* test_strbuf.c — growable buffer: appends, formatting, JSON escaping,
 * truncation and handing over ownership. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/strbuf.h"

/* Under ASan a huge malloc must return NULL (as libc's does) rather than
 * abort, so the ENOMEM path below is exercised in both builds. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}

static void fresh_buffer_is_empty_string_without_allocation(void **state)
{
    (void)state;
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    assert_string_equal(sb.data, "");
    assert_int_equal(sb.len, 0);
    assert_int_equal(sb.cap, 0);
    cdsh_strbuf_deinit(&sb);
    cdsh_strbuf_deinit(NULL);
}

static void appends_concatenate_bytes_strings_and_chars(void **state)
{
    (void)state;
    cdsh_strbuf *sb = cdsh_strbuf_new();
    assert_non_null(sb);
    assert_int_equal(cdsh_strbuf_append_str(sb, "ab"), 0);
    assert_int_equal(cdsh_strbuf_append(sb, "c\0d", 3), 0);
    assert_int_equal(cdsh_strbuf_append_char(sb, 'e'), 0);
    assert_int_equal(cdsh_strbuf_append_str(sb, NULL), 0);
    assert_int_equal(sb->len, 6);
    assert_memory_equal(sb->data, "abc\0de", 7);
    cdsh_strbuf_free(sb);
    cdsh_strbuf_free(NULL);
}

static void large_appends_grow_the_buffer(void **state)
{
    (void)state;
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    for (int i = 0; i < 10000; i++)
        assert_int_equal(cdsh_strbuf_append_char(&sb, (char)('a' + i % 26)), 0);
    assert_int_equal(sb.len, 10000);
    assert_int_equal(strlen(sb.data), 10000);
    assert_int_equal(sb.data[9999], 'a' + 9999 % 26);
    assert_false(sb.failed);
    cdsh_strbuf_deinit(&sb);
}

static void vappendf(cdsh_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void vappendf(cdsh_strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    assert_int_equal(cdsh_strbuf_vappendf(sb, fmt, ap), 0);
    va_end(ap);
}

static void printf_appends_format_short_and_long_output(void **state)
{
    (void)state;
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    assert_int_equal(cdsh_strbuf_appendf(&sb, "%d-%s", 42, "x"), 0);
    char big[1000];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    vappendf(&sb, "[%s]", big);
    assert_int_equal(sb.len, 4 + 1001);
    assert_int_equal(strncmp(sb.data, "42-x[zzz", 8), 0);
    assert_int_equal(sb.data[sb.len - 1], ']');
    cdsh_strbuf_deinit(&sb);
}

static void json_string_escapes_quotes_controls_not_slash_or_utf8(void **state)
{
    (void)state;
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    const char in[] = "a\"b\\c/\n\r\t\b\f\x01\x1f\0é";
    assert_int_equal(cdsh_strbuf_append_json_string(&sb, in, sizeof in - 1), 0);
    assert_string_equal(sb.data, "\"a\\\"b\\\\c/\\n\\r\\t\\b\\f\\u0001\\u001f\\u0000é\"");
    cdsh_strbuf_reset(&sb);
    assert_int_equal(cdsh_strbuf_append_json_string(&sb, "", 0), 0);
    assert_string_equal(sb.data, "\"\"");
    cdsh_strbuf_deinit(&sb);
}

static void truncate_and_reset_keep_allocation(void **state)
{
    (void)state;
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    cdsh_strbuf_append_str(&sb, "hello world");
    size_t cap = sb.cap;
    cdsh_strbuf_truncate(&sb, 5);
    assert_string_equal(sb.data, "hello");
    cdsh_strbuf_truncate(&sb, 50);
    assert_string_equal(sb.data, "hello");
    cdsh_strbuf_reset(&sb);
    assert_string_equal(sb.data, "");
    assert_int_equal(sb.cap, cap);
    cdsh_strbuf_deinit(&sb);
}

static void take_hands_over_contents_and_empties(void **state)
{
    (void)state;
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    size_t len = 99;
    char *empty = cdsh_strbuf_take(&sb, &len);
    assert_non_null(empty);
    assert_string_equal(empty, "");
    assert_int_equal(len, 0);
    free(empty);
    cdsh_strbuf_append_str(&sb, "abc");
    char *s = cdsh_strbuf_take(&sb, &len);
    assert_string_equal(s, "abc");
    assert_int_equal(len, 3);
    assert_int_equal(sb.len, 0);
    assert_string_equal(sb.data, "");
    free(s);
    cdsh_strbuf_deinit(&sb);
}

static void impossible_size_fails_without_changing_contents(void **state)
{
    (void)state;
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    cdsh_strbuf_append_str(&sb, "keep");
    assert_int_equal(cdsh_strbuf_reserve(&sb, SIZE_MAX - 2), CDSH_ETOOBIG);
    assert_int_equal(cdsh_strbuf_reserve(&sb, SIZE_MAX / 2), CDSH_ENOMEM);
    assert_true(sb.failed);
    assert_string_equal(sb.data, "keep");
    /* a failed buffer refuses to hand over partial contents */
    size_t len = 5;
    assert_null(cdsh_strbuf_take(&sb, &len));
    assert_int_equal(len, 0);
    assert_false(sb.failed);
    cdsh_strbuf_deinit(&sb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fresh_buffer_is_empty_string_without_allocation),
        cmocka_unit_test(appends_concatenate_bytes_strings_and_chars),
        cmocka_unit_test(large_appends_grow_the_buffer),
        cmocka_unit_test(printf_appends_format_short_and_long_output),
        cmocka_unit_test(json_string_escapes_quotes_controls_not_slash_or_utf8),
        cmocka_unit_test(truncate_and_reset_keep_allocation),
        cmocka_unit_test(take_hands_over_contents_and_empties),
        cmocka_unit_test(impossible_size_fails_without_changing_contents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
