/* test_base64.c — base/base64: RFC 4648 vectors both ways, the lenient
 * reading (whitespace, missing padding, URL-safe symbols) and the exact
 * refusals (bad character with its offset, symbol after padding, truncation). */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "base/base64.h"

static const char *const VECTORS[][2] = {{"", ""},
                                         {"f", "Zg=="},
                                         {"fo", "Zm8="},
                                         {"foo", "Zm9v"},
                                         {"foob", "Zm9vYg=="},
                                         {"fooba", "Zm9vYmE="},
                                         {"foobar", "Zm9vYmFy"}};

static void rfc4648_vectors_round_trip(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof VECTORS / sizeof *VECTORS; i++) {
        const char *plain = VECTORS[i][0], *enc = VECTORS[i][1];
        char *e = cdsh_base64_encode_dup((const uint8_t *)plain, strlen(plain));
        assert_string_equal(e, enc);
        free(e);
        uint8_t *d = NULL;
        size_t n = 99;
        assert_int_equal(cdsh_base64_decode(enc, strlen(enc), &d, &n, NULL), 0);
        assert_int_equal(n, strlen(plain));
        assert_memory_equal(d, plain, n);
        assert_int_equal(d[n], 0);
        free(d);
    }
}

static void decode_is_lenient_where_cards_need_it(void **state)
{
    (void)state;
    const char *const ok[][2] = {
        {"Zm9v\nYmFy\r\n", "foobar"}, {" Zm 9v Yg ", "foob"}, {"Zm9vYg", "foob"},
        {"Zm9vYmE", "fooba"},         {"Zg=", "f"},           {"-_8", "\xfb\xff"}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        uint8_t *d = NULL;
        size_t n = 0;
        assert_int_equal(cdsh_base64_decode(ok[i][0], strlen(ok[i][0]), &d, &n, NULL), 0);
        assert_int_equal(n, strlen(ok[i][1]));
        assert_memory_equal(d, ok[i][1], n);
        free(d);
    }
}

static void decode_refuses_with_exact_errors(void **state)
{
    (void)state;
    cdsh_error err = {0};
    uint8_t *d = (uint8_t *)"untouched";
    assert_int_equal(cdsh_base64_decode("Zm9!v", 5, &d, NULL, &err), CDSH_EINVAL);
    assert_null(d);
    assert_string_equal(err.code, "BAD_BASE64");
    assert_string_equal(err.message, "not valid base64 (bad character at offset 3)");
    assert_int_equal(cdsh_base64_decode("Zg==Zg", 6, &d, NULL, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "not valid base64 (bad character at offset 4)");
    assert_int_equal(cdsh_base64_decode("Zm9vY", 5, &d, NULL, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "not valid base64 (truncated)");
    assert_int_equal(cdsh_base64_decode("Zg===", 5, &d, NULL, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "not valid base64 (truncated)");
    assert_int_equal(cdsh_base64_decode(NULL, 3, &d, NULL, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_ARGS");
}

static void every_length_round_trips(void **state)
{
    (void)state;
    for (size_t len = 0; len < 200; len++) {
        uint8_t buf[200];
        for (size_t i = 0; i < len; i++)
            buf[i] = (uint8_t)(i * 37 + len * 11); /* every byte value shows up */
        char *e = cdsh_base64_encode_dup(buf, len);
        assert_non_null(e);
        assert_int_equal(strlen(e), (len + 2) / 3 * 4);
        uint8_t *d = NULL;
        size_t n = 0;
        assert_int_equal(cdsh_base64_decode(e, strlen(e), &d, &n, NULL), 0);
        assert_int_equal(n, len);
        if (len)
            assert_memory_equal(d, buf, len);
        free(d);
        free(e);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rfc4648_vectors_round_trip),
        cmocka_unit_test(decode_is_lenient_where_cards_need_it),
        cmocka_unit_test(decode_refuses_with_exact_errors),
        cmocka_unit_test(every_length_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
