/* test_random.c — random bytes, hex tokens and prefixed ids: lengths,
 * alphabet, argument checks and uniqueness. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/random.h"

static void bytes_fill_the_buffer(void **state)
{
    (void)state;
    unsigned char a[64] = {0}, b[64] = {0};
    assert_int_equal(cdsh_random_bytes(a, sizeof a), 0);
    assert_int_equal(cdsh_random_bytes(b, sizeof b), 0);
    assert_memory_not_equal(a, b, sizeof a);
    assert_int_equal(cdsh_random_bytes(NULL, 0), 0);
}

static void hex_has_requested_length_and_alphabet(void **state)
{
    (void)state;
    char out[65];
    assert_int_equal(cdsh_random_hex(out, sizeof out, 32), 0);
    assert_int_equal(strlen(out), 64);
    assert_int_equal(strspn(out, "0123456789abcdef"), 64);
    assert_int_equal(cdsh_random_hex(out, 3, 1), 0);
    assert_int_equal(strlen(out), 2);
    assert_int_equal(cdsh_random_hex(out, sizeof out, 0), 0);
    assert_string_equal(out, "");
}

static void hex_refuses_small_buffers(void **state)
{
    (void)state;
    char out[8] = "keep";
    assert_int_equal(cdsh_random_hex(out, 8, 4), CDSH_EINVAL);
    assert_string_equal(out, "keep");
    assert_int_equal(cdsh_random_hex(NULL, 0, 1), CDSH_EINVAL);
    char big[1024];
    assert_int_equal(cdsh_random_hex(big, sizeof big, 257), CDSH_EINVAL);
    assert_int_equal(cdsh_random_hex(big, sizeof big, 256), 0);
    assert_int_equal(strlen(big), 512);
}

static void ids_have_prefix_and_22_base32_chars(void **state)
{
    (void)state;
    char *id = cdsh_random_id_dup("sess_");
    assert_non_null(id);
    assert_int_equal(strlen(id), 5 + 22);
    assert_int_equal(strncmp(id, "sess_", 5), 0);
    assert_int_equal(strspn(id + 5, "0123456789abcdefghjkmnpqrstvwxyz"), 22);
    free(id);
    id = cdsh_random_id_dup(NULL);
    assert_int_equal(strlen(id), 22);
    free(id);
    id = cdsh_random_id_dup("");
    assert_int_equal(strlen(id), 22);
    free(id);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void ids_are_unique_and_use_the_whole_alphabet(void **state)
{
    (void)state;
    enum { N = 5000 };
    char **ids = calloc(N, sizeof *ids);
    int seen[256] = {0};
    for (int i = 0; i < N; i++) {
        ids[i] = cdsh_random_id_dup("t");
        assert_non_null(ids[i]);
        for (const char *p = ids[i] + 1; *p; p++)
            seen[(unsigned char)*p]++;
    }
    qsort(ids, N, sizeof *ids, cmp_str);
    for (int i = 1; i < N; i++)
        assert_string_not_equal(ids[i - 1], ids[i]);
    /* 110000 characters over 32 symbols: every symbol appears (expected ~3400) */
    for (const char *a = "0123456789abcdefghjkmnpqrstvwxyz"; *a; a++)
        assert_true(seen[(unsigned char)*a] > 2000);
    for (int i = 0; i < N; i++)
        free(ids[i]);
    free(ids);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bytes_fill_the_buffer),
        cmocka_unit_test(hex_has_requested_length_and_alphabet),
        cmocka_unit_test(hex_refuses_small_buffers),
        cmocka_unit_test(ids_have_prefix_and_22_base32_chars),
        cmocka_unit_test(ids_are_unique_and_use_the_whole_alphabet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
