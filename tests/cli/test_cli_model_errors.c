/* test_cli_model_errors.c — a model failure in the terminal (`cdsh run`,
 * `cdsh chat`) says what happened and what to do: the error code, the HTTP
 * status with the endpoint's own message, and one line of advice, for a
 * refused key (401), a context that is too long (400 with the provider's
 * wording), a timeout (408) and no configured model at all. */
#include "support/testkit.h"

#include "agent/model_fix.h"
#include "support/model_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `cdsh run hi` against a fake model playing script; returns its stderr
 * (owned) and checks the exit status 1. */
static char *run_failing(const char *script)
{
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, script);
    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "run", "hi", NULL), 1);
    cdsh_test_model_env_stop(&f);
    return err;
}

static void a_refused_key_names_the_status_and_the_fix(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *err = run_failing("[{\"status\":401,\"error\":{\"message\":\"Authentication Fails, "
                            "Your api key is invalid\",\"type\":\"authentication_error\"}}]");
    assert_non_null(strstr(err, "[INVALID_CREDENTIAL] HTTP 401: Authentication Fails, Your api key "
                                "is invalid"));
    assert_non_null(strstr(err, "  What to do: the endpoint refused the key: check "
                                "DEEPSEEK_API_KEY / CDSH_API_KEY"));
    free(err);
    cdsh_test_home_free(home);
}

static void a_long_context_says_to_roll_back(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *err = run_failing(
        "[{\"status\":400,\"error\":{\"message\":\"This model's maximum context length is 8192 "
        "tokens, your messages resulted in 9000 tokens.\"}}]");
    assert_non_null(strstr(err, "[CONTEXT_WINDOW_EXCEEDED] HTTP 400: This model's maximum context "
                                "length is 8192 tokens"));
    assert_non_null(strstr(err, "What to do: the conversation is too long for the model: roll "
                                "back a few turns"));
    /* the advice follows its own cause, once */
    assert_true(strstr(err, "[CONTEXT_WINDOW_EXCEEDED]") < strstr(err, "What to do:"));
    assert_null(strstr(strstr(err, "What to do:") + 1, "What to do:"));
    free(err);
    cdsh_test_home_free(home);
}

static void a_timeout_says_to_check_the_endpoint(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *err = run_failing("[{\"status\":408,\"repeat\":true,\"headers\":{\"Retry-After\":\"0.01\"},"
                            "\"error\":{\"message\":\"request timed out upstream\"}}]");
    assert_non_null(strstr(err, "[TIMEOUT] HTTP 408: request timed out upstream"));
    assert_non_null(strstr(err, "What to do: the endpoint did not answer in time"));
    free(err);
    cdsh_test_home_free(home);
}

static void no_model_says_how_to_set_one(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    unsetenv("CDSH_BASE_URL");
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "run", "hi", NULL), 1);
    assert_non_null(strstr(err, "[MISSING_CREDENTIAL]"));
    assert_non_null(strstr(err, "What to do: set DEEPSEEK_API_KEY"));
    free(err);
    cdsh_test_home_free(home);
}

/* `cdsh chat` prints the same, and the next line still reaches the model. */
static void chat_reports_the_failure_and_goes_on(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, "[{\"status\":401,\"error\":{\"message\":\"bad key\"}},"
                                  "{\"text\":\"pong\",\"finish_reason\":\"stop\"}]");
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh("ping\nping again\n/exit\n", &out, &err, "chat", NULL), 0);
    /* an interactive chat prints its notices with the conversation */
    char both[16384];
    snprintf(both, sizeof both, "%s\n%s", out, err);
    char *cause = strstr(both, "[INVALID_CREDENTIAL] HTTP 401: bad key");
    assert_non_null(cause);
    assert_non_null(strstr(cause, "What to do: the endpoint refused the key"));
    assert_non_null(strstr(out, "pong"));
    free(out);
    free(err);
    cdsh_test_model_env_stop(&f);
    cdsh_test_home_free(home);
}

/* Every code the web page explains has its sentence in both languages here;
 * anything else has none. */
static void every_model_code_has_advice_in_both_languages(void **state)
{
    (void)state;
    const char *codes[] = {"MISSING_CREDENTIAL", "INVALID_CREDENTIAL", "QUOTA", "RATE_LIMIT",
                           "CONTEXT_WINDOW_EXCEEDED", "TIMEOUT", "LLM_STREAM_IDLE_TIMEOUT",
                           "TRANSPORT", "SERVER", "INVALID_REQUEST", "BAD_RESPONSE",
                           "EMPTY_RESPONSE", "REPLY_TOO_LARGE", "INVALID_CONFIG"};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        const char *en = cdsh_model_fix_get(codes[i], "en");
        const char *zh = cdsh_model_fix_get(codes[i], "zh");
        assert_non_null(en);
        assert_non_null(zh);
        assert_string_not_equal(en, zh);
    }
    assert_null(cdsh_model_fix_get("ABORTED", "en"));
    assert_null(cdsh_model_fix_get("TURN_CANCELLED", "zh"));
    assert_null(cdsh_model_fix_get(NULL, "en"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_refused_key_names_the_status_and_the_fix),
        cmocka_unit_test(a_long_context_says_to_roll_back),
        cmocka_unit_test(a_timeout_says_to_check_the_endpoint),
        cmocka_unit_test(no_model_says_how_to_set_one),
        cmocka_unit_test(chat_reports_the_failure_and_goes_on),
        cmocka_unit_test(every_model_code_has_advice_in_both_languages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
