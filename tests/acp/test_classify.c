/* test_classify.c — failed-turn classes (proto/acp/classify.c), with the
 * agents' real messages from the evidence as vectors. */
#include <jansson.h>
#include <stdlib.h>

#include "support/testkit.h"
#include "base/err.h"
#include "proto/acp/classify.h"

static void billing_messages_are_insufficient_funds(void **state)
{
    (void)state;
    const char *v[] = {"Internal error: Upstream request failed: Insufficient account funds",
                       "session/prompt failed: Internal error (-32603): Upstream request failed: "
                       "Insufficient account funds",
                       "insufficient_quota",
                       "Insufficient Balance",
                       "余额不足",
                       "HTTP 402",
                       "quota exceeded for this month"};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        assert_string_equal(cdsh_acp_classify_error(CDSH_EPROTO, "RPC_ERROR", v[i]),
                            "INSUFFICIENT_FUNDS");
}

static void the_recorded_opencode_funds_failure_is_not_a_protocol_error(void **state)
{
    (void)state;
    char *text = cdsh_test_read_file(
        CDSH_TEST_DATA(
            "acp-evidence/"
            "probe-C_Users_29096_opencode_bin_opencode_exe-2026-10-07T07-58-20-593Z.json"),
        NULL);
    json_t *doc = json_loads(text, 0, NULL);
    const char *msg = json_string_value(json_object_get(json_object_get(doc, "prompt"), "error"));
    assert_non_null(msg);
    assert_string_equal(cdsh_acp_classify_error(CDSH_EPROTO, "RPC_ERROR", msg),
                        "INSUFFICIENT_FUNDS");
    json_decref(doc);
    free(text);
}

static void rate_auth_and_timeouts(void **state)
{
    (void)state;
    assert_string_equal(cdsh_acp_classify_error(CDSH_EPROTO, "RPC_ERROR", "Rate limit exceeded"),
                        "RATE_LIMITED");
    assert_string_equal(cdsh_acp_classify_error(CDSH_EPROTO, NULL, "status 429"), "RATE_LIMITED");
    assert_string_equal(cdsh_acp_classify_error(CDSH_EPROTO, NULL, "Too Many Requests"),
                        "RATE_LIMITED");
    assert_string_equal(
        cdsh_acp_classify_error(CDSH_EPROTO, "RPC_ERROR",
                                "session/new failed: Authentication required (-32000)"),
        "UNAUTHORIZED");
    assert_string_equal(cdsh_acp_classify_error(CDSH_EPROTO, "RPC_ERROR",
                                                "Gemini API key is missing or not configured."),
                        "UNAUTHORIZED");
    assert_string_equal(cdsh_acp_classify_error(CDSH_EPROTO, NULL, "HTTP 401"), "UNAUTHORIZED");
    assert_string_equal(cdsh_acp_classify_error(CDSH_EPROTO, NULL, "not logged in"),
                        "UNAUTHORIZED");
    assert_string_equal(
        cdsh_acp_classify_error(CDSH_ETIMEDOUT, "TIMEOUT",
                                "no session/update from the engine for 3s (engine looks stuck)"),
        "TIMEOUT");
    assert_string_equal(cdsh_acp_classify_error(CDSH_EIO, NULL, "request timed out"), "TIMEOUT");
}

static void protocol_and_unknown(void **state)
{
    (void)state;
    assert_string_equal(
        cdsh_acp_classify_error(CDSH_ECLOSED, "CLOSED",
                                "fixture closed the connection while waiting for session/prompt"),
        "PROTOCOL");
    assert_string_equal(cdsh_acp_classify_error(CDSH_EPROTO, "BAD_RESPONSE", "no stopReason"),
                        "PROTOCOL");
    assert_string_equal(
        cdsh_acp_classify_error(CDSH_EPROTO, "RPC_ERROR", "Invalid params (-32602)"), "PROTOCOL");
    /* Numbers only count as whole numbers. */
    assert_string_equal(cdsh_acp_classify_error(CDSH_EPROTO, "RPC_ERROR", "used 4021 tokens"),
                        "UNKNOWN");
    assert_string_equal(cdsh_acp_classify_error(CDSH_EPROTO, "RPC_ERROR", "something broke"),
                        "UNKNOWN");
    assert_string_equal(cdsh_acp_classify_error(0, NULL, NULL), "UNKNOWN");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(billing_messages_are_insufficient_funds),
        cmocka_unit_test(the_recorded_opencode_funds_failure_is_not_a_protocol_error),
        cmocka_unit_test(rate_auth_and_timeouts),
        cmocka_unit_test(protocol_and_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
