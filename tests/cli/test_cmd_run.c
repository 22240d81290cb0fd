/* test_cmd_run.c — `cdsh run`, `cdsh chat` (piped input) and `cdsh exec`
 * as processes against the scripted fake model: output, JSON event lines,
 * sessions continued by id, exit statuses and usage errors. */
#include "support/testkit.h"

#include "support/model_env.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void run_streams_the_reply_and_json_lists_events(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(
        &f, "[{\"chunks\":[{\"text\":\"Hel\"},{\"text\":\"lo\"}],\"finish_reason\":\"stop\"},"
            "{\"text\":\"second\",\"finish_reason\":\"stop\"}]");
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "run", "hi", NULL), 0);
    assert_string_equal(out, "Hello\n");
    assert_non_null(strstr(err, "turn 1: done)"));
    char sid[64];
    assert_int_equal(sscanf(strstr(err, "(session ") + 9, "%63[^,]", sid), 1);
    free(out);
    free(err);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "run", "--json", "--session", sid, "more", NULL), 0);
    /* One JSON object per line, ending with turn/end of turn 2. */
    char *last = NULL;
    int lines = 0;
    for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"), lines++) {
        json_t *ev = json_loads(l, 0, NULL);
        assert_non_null(ev);
        assert_string_equal(json_string_value(json_object_get(ev, "sessionId")), sid);
        json_decref(ev);
        last = l;
    }
    assert_true(lines >= 6);
    json_t *end = json_loads(last, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(end, "type")), "turn/end");
    assert_int_equal(json_integer_value(json_object_get(end, "turn")), 2);
    json_decref(end);
    free(out);
    free(err);
    cdsh_test_model_env_stop(&f);
    cdsh_test_home_free(home);
}

static void run_without_a_model_says_how_to_set_one(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    unsetenv("CDSH_BASE_URL");
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "run", "hi", NULL), 1);
    assert_non_null(
        strstr(err, "[MISSING_CREDENTIAL] No model is configured: set DEEPSEEK_API_KEY"));
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "run", NULL), 2);
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "run", "--session", "s-none", "x", NULL),
                     1);
    assert_non_null(strstr(err, "NO_SESSION"));
    free(err);
    cdsh_test_home_free(home);
}

static void chat_reads_lines_and_handles_commands(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, "[{\"text\":\"pong\",\"finish_reason\":\"stop\"}]");
    char *out = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh("ping\n/session\n/bogus\n/exit\nnot sent\n", &out, NULL, "chat", NULL),
        0);
    assert_non_null(strstr(out, "\npong\n"));
    assert_non_null(strstr(out, "unknown command \"/bogus\""));
    char *sid = strstr(out, "session s-");
    assert_non_null(sid);
    assert_non_null(strstr(out, "\ns-")); /* /session printed the id */
    free(out);
    cdsh_test_model_env_stop(&f);
    cdsh_test_home_free(home);
}

static void exec_needs_a_session_and_a_command(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *err = NULL, *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "exec", "/x", NULL), 2);
    assert_non_null(strstr(err, "--session ID is required"));
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "exec", "/x", "--session", "s-zz", NULL),
                     1);
    assert_non_null(strstr(err, "NO_SESSION"));
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "sessions", "list", "--json", NULL), 0);
    free(out);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(run_streams_the_reply_and_json_lists_events),
        cmocka_unit_test(run_without_a_model_says_how_to_set_one),
        cmocka_unit_test(chat_reads_lines_and_handles_commands),
        cmocka_unit_test(exec_needs_a_session_and_a_command),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
