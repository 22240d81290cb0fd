/* test_hash.c — SHA-256 and SHA-512 of buffers and incremental input against
 * FIPS 180-2 test vectors. */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"

static const char abc_hex[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
static const char empty_hex[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

static void buffer_hash_matches_known_vectors(void **state)
{
    (void)state;
    char hex[CDSH_SHA256_HEX_LEN + 1];
    assert_int_equal(cdsh_hash_sha256_hex("abc", 3, hex), 0);
    assert_string_equal(hex, abc_hex);
    assert_int_equal(cdsh_hash_sha256_hex(NULL, 0, hex), 0);
    assert_string_equal(hex, empty_hex);
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    assert_int_equal(cdsh_hash_sha256_hex(two, strlen(two), hex), 0);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void sha512_matches_known_vectors(void **state)
{
    (void)state;
    char hex[CDSH_SHA512_HEX_LEN + 1];
    assert_int_equal(cdsh_hash_sha512_hex("abc", 3, hex), 0);
    assert_string_equal(hex, "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
                             "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f");
    assert_int_equal(cdsh_hash_sha512_hex(NULL, 0, hex), 0);
    assert_string_equal(hex, "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
                             "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e");
}

static void incremental_equals_one_shot(void **state)
{
    (void)state;
    cdsh_hash *h = cdsh_hash_new();
    assert_non_null(h);
    assert_int_equal(cdsh_hash_update(h, "a", 1), 0);
    assert_int_equal(cdsh_hash_update(h, "", 0), 0);
    assert_int_equal(cdsh_hash_update(h, "bc", 2), 0);
    char hex[CDSH_SHA256_HEX_LEN + 1];
    assert_int_equal(cdsh_hash_final(h, hex), 0);
    assert_string_equal(hex, abc_hex);
    /* finished hashes refuse more input */
    assert_int_equal(cdsh_hash_update(h, "x", 1), CDSH_EINVAL);
    assert_int_equal(cdsh_hash_final(h, hex), CDSH_EINVAL);
    cdsh_hash_free(h);
    cdsh_hash_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buffer_hash_matches_known_vectors),
        cmocka_unit_test(sha512_matches_known_vectors),
        cmocka_unit_test(incremental_equals_one_shot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
