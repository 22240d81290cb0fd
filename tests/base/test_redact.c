/* test_redact.c — secrets in text and JSON become [REDACTED]; ordinary text
 * and non-secret values survive untouched. */
#include "support/testkit.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/redact.h"

static void expect_redacted(const char *in, const char *want)
{
    char *out = cdsh_redact_dup(in);
    assert_non_null(out);
    if (strcmp(out, want) != 0)
        fail_msg("redact(\"%s\")\n  got  \"%s\"\n  want \"%s\"", in, out, want);
    /* redacting twice changes nothing */
    char *again = cdsh_redact_dup(out);
    assert_string_equal(again, out);
    free(again);
    free(out);
}

static void provider_keys_are_redacted(void **state)
{
    (void)state;
    expect_redacted("key sk-proj-abcdefghijklmnop1234 end", "key [REDACTED] end");
    expect_redacted("sk-ant-api03-AbCdEf_GhIjKlMn-OpQrStUv", "[REDACTED]");
    expect_redacted("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "[REDACTED]");
    expect_redacted("gho_ABCDEFGHIJKLMNOPQRSTUV and more", "[REDACTED] and more");
    expect_redacted("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[REDACTED]");
    expect_redacted("slack xoxb-123456789012-abcdefABCDEF!", "slack [REDACTED]!");
    expect_redacted("aws AKIAIOSFODNN7EXAMPLE.", "aws [REDACTED].");
    expect_redacted("AIzaSyA1234567890abcdefghijklmnopqrstuv", "[REDACTED]");
    expect_redacted("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dBjftJeZ4CVPmB92K27uhbUJU1p1r",
                    "jwt [REDACTED]");
}

static void authorization_and_cookie_headers_are_redacted(void **state)
{
    (void)state;
    expect_redacted("Authorization: Bearer abc.def-123", "Authorization: Bearer [REDACTED]");
    expect_redacted("authorization: Basic dXNlcjpwYXNz\r\nHost: x",
                    "authorization: Basic [REDACTED]\r\nHost: x");
    expect_redacted("curl -H 'Authorization: token 0123456789'",
                    "curl -H 'Authorization: token [REDACTED]'");
    expect_redacted("sent Bearer 0123456789abcdef to server", "sent Bearer [REDACTED] to server");
    expect_redacted("Cookie: sid=abc; theme=dark\nAccept: */*", "Cookie: [REDACTED]\nAccept: */*");
    expect_redacted("Set-Cookie: sid=abc; Path=/; HttpOnly", "Set-Cookie: [REDACTED]");
}

static void secret_assignments_are_redacted(void **state)
{
    (void)state;
    expect_redacted("password=hunter2&user=bob", "password=[REDACTED]&user=bob");
    expect_redacted("DB_PASSWORD: s3cr3t", "DB_PASSWORD: [REDACTED]");
    expect_redacted("api_key=0123456789abcdef0123", "api_key=[REDACTED]");
    expect_redacted("apikey: ABCDEF0123456789", "apikey: [REDACTED]");
    expect_redacted("{\"token\": \"a b \\\" c\", \"n\": 1}",
                    "{\"token\": \"[REDACTED]\", \"n\": 1}");
    expect_redacted("{'client_secret': 'xyz'}", "{'client_secret': '[REDACTED]'}");
    expect_redacted("access_token=abc;", "access_token=[REDACTED];");
    expect_redacted("{\"cookie\": \"sid=1; x=2\", \"n\": 1}",
                    "{\"cookie\": \"[REDACTED]\", \"n\": 1}");
    expect_redacted("auth=abc123 next", "auth=[REDACTED] next");
    expect_redacted("oauth: xyz", "oauth: [REDACTED]");
}

static void url_passwords_are_redacted_user_kept(void **state)
{
    (void)state;
    expect_redacted("clone https://bob:pa55word@github.com/x.git",
                    "clone https://bob:[REDACTED]@github.com/x.git");
    expect_redacted("postgres://admin:secret@db:5432/app",
                    "postgres://admin:[REDACTED]@db:5432/app");
}

static void private_key_blocks_are_redacted(void **state)
{
    (void)state;
    expect_redacted(
        "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----\ny",
        "x\n[REDACTED]\ny");
    expect_redacted("key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA (truncated",
                    "key:\n[REDACTED]");
}

static void ordinary_text_is_unchanged(void **state)
{
    (void)state;
    const char *plain[] = {
        "",
        "hello world",
        "max_tokens: 1024 and input_tokens=5",
        "see https://example.com/path?q=1",
        "task-1234 sk-short risk-assessment",
        "中文 text with é and emoji \xf0\x9f\x98\x80",
        "the author wrote a basic test",
    };
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        expect_redacted(plain[i], plain[i]);
}

static void bytes_with_nul_and_invalid_utf8_pass_through(void **state)
{
    (void)state;
    const char in[] = "\xff\0password=abc\0\xfe";
    size_t n = 0;
    char *out = cdsh_redact_dupn(in, sizeof in - 1, &n);
    const char want[] = "\xff\0password=[REDACTED]\0\xfe";
    assert_int_equal(n, sizeof want - 1);
    assert_memory_equal(out, want, n);
    free(out);
    assert_null(cdsh_redact_dup(NULL));
}

static void secret_key_names_are_recognised(void **state)
{
    (void)state;
    static const char *const secret[] = {"apiKey",        "ACCESS_TOKEN", "client_secret",
                                         "Password",      "credentials",  "Cookie",
                                         "Authorization", "x-auth",       "oauth_state"};
    static const char *const plain[] = {"name", "author", "Authors", "count", "path", "model"};
    for (size_t i = 0; i < sizeof secret / sizeof *secret; i++)
        assert_true(cdsh_redact_key_is_secret(secret[i], strlen(secret[i])));
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        assert_false(cdsh_redact_key_is_secret(plain[i], strlen(plain[i])));
}

static void json_redacts_secret_keys_and_scrubs_other_strings(void **state)
{
    (void)state;
    const char *text = "{\"model\":\"m\",\"apiKey\":\"abc\",\"max_tokens\":1024,"
                       "\"headers\":{\"Authorization\":\"Bearer zzzzzzzzzz\",\"Accept\":\"*/*\"},"
                       "\"credentials\":{\"user\":\"bob\",\"list\":[\"p1\",2,null]},"
                       "\"note\":\"use sk-abcdefghijklmnopqrstu please\",\"author\":\"Ann\"}";
    json_t *in = cdsh_json_parse(text, strlen(text), 0, NULL);
    assert_non_null(in);
    json_t *out = cdsh_redact_json_dup(in);
    char *s = cdsh_json_dump_compact_dup(out);
    assert_string_equal(
        s, "{\"model\":\"m\",\"apiKey\":\"[REDACTED]\",\"max_tokens\":1024,"
           "\"headers\":{\"Authorization\":\"[REDACTED]\",\"Accept\":\"*/*\"},"
           "\"credentials\":{\"user\":\"[REDACTED]\",\"list\":[\"[REDACTED]\",2,null]},"
           "\"note\":\"use [REDACTED] please\",\"author\":\"Ann\"}");
    /* input untouched */
    assert_string_equal(json_string_value(json_object_get(in, "apiKey")), "abc");
    free(s);
    json_decref(out);
    json_decref(in);
    assert_null(cdsh_redact_json_dup(NULL));
}

static void *redact_in_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 200; i++) {
        char *out = cdsh_redact_dup("token=abc ghp_abcdefghijklmnopqrstuvwxyz");
        if (!out || strcmp(out, "token=[REDACTED] [REDACTED]") != 0) {
            free(out);
            return (void *)1;
        }
        free(out);
    }
    return NULL;
}

static void concurrent_redaction_is_consistent(void **state)
{
    (void)state;
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, redact_in_thread, NULL), 0);
    for (int i = 0; i < 4; i++) {
        void *rc;
        pthread_join(t[i], &rc);
        assert_null(rc);
    }
}

static void emails_and_chinese_labels_are_redacted(void **state)
{
    (void)state;
    expect_redacted("mail ops@example.com now", "mail [REDACTED] now");
    expect_redacted("<first.last+tag@mail.example.co.uk>", "<[REDACTED]>");
    expect_redacted("密码：hunter2，下一步", "密码：[REDACTED]，下一步");
    expect_redacted("数据库密码: s3cret 结束", "数据库密码: [REDACTED] 结束");
    expect_redacted("令牌=abc123。", "令牌=[REDACTED]。");
    expect_redacted("Password：hunter2", "Password：[REDACTED]");
    expect_redacted("password: hunter2", "password: [REDACTED]");
    /* Not addresses: npm specs, a URL's user name, a bare @mention. */
    expect_redacted("npx -y @scope/pkg@1.2.3 and pkg@latest", "npx -y @scope/pkg@1.2.3 and pkg@latest");
    expect_redacted("https://bob@github.com/x.git", "https://bob@github.com/x.git");
    expect_redacted("ask @alice", "ask @alice");
    expect_redacted("密码学很有趣", "密码学很有趣");
}

static void literal_secrets_are_redacted_everywhere(void **state)
{
    (void)state;
    const char *const secrets[] = {"abc", "VALUE-1234", "VALUE-1234-longer", NULL};
    size_t n = 0;
    char *r = cdsh_redact_literals_dupn("x=VALUE-1234-longer;y=VALUE-1234 abc", 36, secrets, &n);
    assert_string_equal(r, "x=[REDACTED];y=[REDACTED] abc");
    assert_int_equal(n, strlen(r));
    free(r);
    r = cdsh_redact_literals_dupn("", 0, secrets, &n);
    assert_string_equal(r, "");
    free(r);
    json_t *v = json_pack("{s:[s,{s:s}],s:i}", "a", "said VALUE-1234", "VALUE-1234", "deep VALUE-1234!",
                          "n", 7);
    json_t *c = cdsh_redact_json_literals_dup(v, secrets);
    char *dump = json_dumps(c, JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(dump, "{\"a\":[\"said [REDACTED]\",{\"VALUE-1234\":\"deep [REDACTED]!\"}],"
                              "\"n\":7}");
    free(dump);
    json_decref(c);
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(provider_keys_are_redacted),
        cmocka_unit_test(authorization_and_cookie_headers_are_redacted),
        cmocka_unit_test(secret_assignments_are_redacted),
        cmocka_unit_test(url_passwords_are_redacted_user_kept),
        cmocka_unit_test(private_key_blocks_are_redacted),
        cmocka_unit_test(ordinary_text_is_unchanged),
        cmocka_unit_test(bytes_with_nul_and_invalid_utf8_pass_through),
        cmocka_unit_test(secret_key_names_are_recognised),
        cmocka_unit_test(json_redacts_secret_keys_and_scrubs_other_strings),
        cmocka_unit_test(concurrent_redaction_is_consistent),
        cmocka_unit_test(emails_and_chinese_labels_are_redacted),
        cmocka_unit_test(literal_secrets_are_redacted_everywhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
