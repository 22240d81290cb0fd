/* test_cli.c — the cdsh binary's global flags and subcommand dispatch. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

static void version_prints_name_and_version(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "--version", NULL), 0);
    assert_string_equal(out, "cdsh " CDSH_VERSION "\n");
    free(out);
}

static void help_lists_every_subcommand(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "--help", NULL), 0);
    assert_non_null(strstr(out, "Usage: cdsh"));
    assert_non_null(strstr(out, "  web "));
    assert_non_null(strstr(out, "  help "));
    free(out);
}

static void unknown_subcommand_fails_with_hint(void **state)
{
    (void)state;
    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "wbe", NULL), 2);
    assert_non_null(strstr(err, "unknown subcommand 'wbe'"));
    assert_non_null(strstr(err, "Did you mean `cdsh web`?"));
    free(err);
}

static void unknown_option_fails(void **state)
{
    (void)state;
    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "--frobnicate", NULL), 2);
    assert_non_null(strstr(err, "unknown option '--frobnicate'"));
    free(err);
}

static void no_arguments_prints_usage_and_fails(void **state)
{
    (void)state;
    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, NULL), 2);
    assert_non_null(strstr(err, "Usage: cdsh"));
    free(err);
}

static void help_subcommand_shows_its_options(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "help", "web", NULL), 0);
    assert_non_null(strstr(out, "Usage: cdsh web"));
    assert_non_null(strstr(out, "--port"));
    free(out);
}

static void web_rejects_bad_port(void **state)
{
    (void)state;
    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "web", "--port", "http", NULL), 2);
    assert_non_null(strstr(err, "--port wants a number"));
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(version_prints_name_and_version),
        cmocka_unit_test(help_lists_every_subcommand),
        cmocka_unit_test(unknown_subcommand_fails_with_hint),
        cmocka_unit_test(unknown_option_fails),
        cmocka_unit_test(no_arguments_prints_usage_and_fails),
        cmocka_unit_test(help_subcommand_shows_its_options),
        cmocka_unit_test(web_rejects_bad_port),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
