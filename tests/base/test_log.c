/* test_log.c — level filtering, CDSH_LOG, record format, redaction of every
 * message, one-line records and concurrent writers. */
#include "support/testkit.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

typedef struct fixture {
    char *home;
    char path[4096];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    snprintf(f->path, sizeof f->path, "%s/test.log", f->home);
    assert_int_equal(cdsh_log_open_file(f->path, NULL), 0);
    cdsh_log_set_level(CDSH_LOG_INFO);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    cdsh_log_use_stderr();
    cdsh_test_home_free(f->home);
    free(f);
    return 0;
}

static char *read_log(const fixture *f)
{
    char *text = cdsh_test_read_file(f->path, NULL);
    assert_non_null(text);
    return text;
}

/* Checks "YYYY-MM-DDTHH:MM:SS.mmmZ LEVEL module: message" and returns the
 * part after the timestamp. */
static const char *after_timestamp(const char *line)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ ";
    for (size_t i = 0; i < sizeof shape - 1; i++) {
        if (shape[i] == 'd')
            assert_true(line[i] >= '0' && line[i] <= '9');
        else
            assert_int_equal(line[i], shape[i]);
    }
    return line + sizeof shape - 1;
}

static void record_has_time_level_module_message(void **state)
{
    fixture *f = *state;
    cdsh_log_info("host", "started %d plugins", 5);
    cdsh_log_warn(NULL, "careful");
    char *text = read_log(f);
    char *second = strchr(text, '\n') + 1;
    assert_int_equal(strncmp(after_timestamp(text), "INFO  host: started 5 plugins\n", 30), 0);
    assert_string_equal(after_timestamp(second), "WARN  -: careful\n");
    free(text);
}

static void level_filters_records(void **state)
{
    fixture *f = *state;
    cdsh_log_set_level(CDSH_LOG_WARN);
    assert_false(cdsh_log_enabled(CDSH_LOG_INFO));
    assert_true(cdsh_log_enabled(CDSH_LOG_ERROR));
    cdsh_log_info("m", "hidden");
    cdsh_log_debug("m", "hidden");
    cdsh_log_error("m", "shown");
    cdsh_log_set_level(CDSH_LOG_TRACE);
    cdsh_log_trace("m", "trace shown");
    char *text = read_log(f);
    assert_null(strstr(text, "hidden"));
    assert_non_null(strstr(text, "ERROR m: shown\n"));
    assert_non_null(strstr(text, "TRACE m: trace shown\n"));
    free(text);
}

static void every_message_is_redacted(void **state)
{
    fixture *f = *state;
    cdsh_log_info("http", "Authorization: Bearer %s", "abcdefghijklmnop");
    cdsh_log_error("cfg", "loaded key %s", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz");
    char *text = read_log(f);
    assert_null(strstr(text, "abcdefghijklmnop"));
    assert_non_null(strstr(text, "INFO  http: Authorization: Bearer [REDACTED]\n"));
    assert_non_null(strstr(text, "ERROR cfg: loaded key [REDACTED]\n"));
    free(text);
}

static void newlines_and_controls_cannot_forge_records(void **state)
{
    fixture *f = *state;
    cdsh_log_info("m\n2", "a\nb\r\tc\x1b[31m\xff");
    char *text = read_log(f);
    assert_string_equal(after_timestamp(text),
                        "INFO  m\\n2: a\\nb\\r\\tc\\u001b[31m\xef\xbf\xbd\n");
    free(text);
}

static void level_names_parse_case_insensitively(void **state)
{
    (void)state;
    cdsh_log_level lv;
    cdsh_error err = {0};
    assert_int_equal(cdsh_log_level_parse("DEBUG", &lv, NULL), 0);
    assert_int_equal(lv, CDSH_LOG_DEBUG);
    assert_int_equal(cdsh_log_level_parse("warning", &lv, NULL), 0);
    assert_int_equal(lv, CDSH_LOG_WARN);
    assert_int_equal(cdsh_log_level_parse("loud", &lv, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "BAD_LOG_LEVEL");
    assert_string_equal(err.message,
                        "\"loud\" is not a log level (use error, warn, info, debug or trace)");
    assert_string_equal(cdsh_log_level_name(CDSH_LOG_TRACE), "TRACE");
    assert_string_equal(cdsh_log_level_name((cdsh_log_level)9), "?");
}

static void env_sets_level_and_bad_value_warns(void **state)
{
    fixture *f = *state;
    setenv("CDSH_LOG", "debug", 1);
    assert_int_equal(cdsh_log_init_from_env(), 0);
    assert_int_equal(cdsh_log_get_level(), CDSH_LOG_DEBUG);
    setenv("CDSH_LOG", "verbose", 1);
    assert_int_equal(cdsh_log_init_from_env(), CDSH_EINVAL);
    assert_int_equal(cdsh_log_get_level(), CDSH_LOG_DEFAULT_LEVEL);
    unsetenv("CDSH_LOG");
    assert_int_equal(cdsh_log_init_from_env(), 0);
    assert_int_equal(cdsh_log_get_level(), CDSH_LOG_DEFAULT_LEVEL);
    char *text = read_log(f);
    assert_non_null(strstr(text, "WARN  log: CDSH_LOG: \"verbose\" is not a log level"));
    free(text);
}

static void open_file_failure_names_path(void **state)
{
    fixture *f = *state;
    char bad[4200];
    snprintf(bad, sizeof bad, "%s/missing/dir/x.log", f->home);
    cdsh_error err = {0};
    assert_int_equal(cdsh_log_open_file(bad, &err), CDSH_ENOTFOUND);
    assert_string_equal(err.code, "LOG_OPEN_FAILED");
    assert_non_null(strstr(err.message, bad));
    /* the old sink keeps working */
    cdsh_log_info("m", "still here");
    char *text = read_log(f);
    assert_non_null(strstr(text, "still here"));
    free(text);
}

static void stderr_sink_receives_records(void **state)
{
    fixture *f = *state;
    char path[4200];
    snprintf(path, sizeof path, "%s/stderr.txt", f->home);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    cdsh_log_use_stderr();
    cdsh_log_warn("cli", "to stderr");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *text = cdsh_test_read_file(path, NULL);
    assert_string_equal(after_timestamp(text), "WARN  cli: to stderr\n");
    free(text);
}

static void *writer(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < 200; i++)
        cdsh_log_info("thread", "writer %ld record %d with some padding text", id, i);
    return NULL;
}

static void concurrent_records_never_interleave(void **state)
{
    fixture *f = *state;
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, writer, (void *)i), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    char *text = read_log(f);
    int lines = 0;
    for (char *line = text; *line; lines++) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        *nl = '\0';
        const char *rest = after_timestamp(line);
        assert_int_equal(strncmp(rest, "INFO  thread: writer ", 21), 0);
        assert_non_null(strstr(rest, " with some padding text"));
        assert_int_equal(strlen(strstr(rest, " with some padding text")), 23);
        line = nl + 1;
    }
    assert_int_equal(lines, 800);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(record_has_time_level_module_message, setup, teardown),
        cmocka_unit_test_setup_teardown(level_filters_records, setup, teardown),
        cmocka_unit_test_setup_teardown(every_message_is_redacted, setup, teardown),
        cmocka_unit_test_setup_teardown(newlines_and_controls_cannot_forge_records, setup,
                                        teardown),
        cmocka_unit_test(level_names_parse_case_insensitively),
        cmocka_unit_test_setup_teardown(env_sets_level_and_bad_value_warns, setup, teardown),
        cmocka_unit_test_setup_teardown(open_file_failure_names_path, setup, teardown),
        cmocka_unit_test_setup_teardown(stderr_sink_receives_records, setup, teardown),
        cmocka_unit_test_setup_teardown(concurrent_records_never_interleave, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
