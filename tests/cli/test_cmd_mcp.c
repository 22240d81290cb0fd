/* test_cmd_mcp.c — `cdsh mcp tools|call|name` as people use them: output,
 * --json, exit statuses (0 ok, 3 tool error, 1 failure, 2 usage) and
 * messages, against tests/peers/mcp_peer. */
#include "support/testkit.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *home, *server;

static int setup(void **state)
{
    (void)state;
    home = cdsh_test_home_new();
    char *peer = cdsh_test_peer_path_dup("mcp_peer");
    server = malloc(strlen(peer) + 32);
    sprintf(server, "%s --tools 2 --page 3", peer);
    free(peer);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(server);
    cdsh_test_home_free(home);
    return 0;
}

static void name_prints_dsh_public_names(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, NULL, "mcp", "name", "Google Drive", "search", NULL), 0);
    assert_string_equal(out, "mcp__Google_Drive__search_d60de79dd11b\n");
    free(out);
}

static void tools_lists_every_page_as_text_and_json(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "mcp", "tools", "--server", server, NULL),
                     0);
    assert_non_null(strstr(out, "echo — Echoes text\n"));
    assert_non_null(strstr(out, "t1 — numbered tool\n"));
    free(out);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, NULL, "mcp", "tools", "--server", server, "--json", NULL),
        0);
    json_t *v = json_loads(out, 0, NULL);
    assert_int_equal(json_array_size(v), 11);
    json_decref(v);
    free(out);
}

static void call_reports_results_tool_errors_and_failures_by_status(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "mcp", "call", "--server", server, "echo",
                                        "{\"text\":\"hey\"}", NULL),
                     0);
    assert_string_equal(out, "hey\n");
    free(out);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, NULL, "mcp", "call", "--server", server, "structured", NULL),
        0);
    /* Text mode is the model-visible view: no structuredContent line. */
    assert_string_equal(out, "{\"sum\":3}\n");
    free(out);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "mcp", "call", "--server", server,
                                        "structured", "--json", NULL),
                     0);
    assert_non_null(strstr(out, "\"structuredContent\""));
    free(out);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, NULL, "mcp", "call", "--server", server, "fail", NULL), 3);
    assert_string_equal(out, "it failed on purpose\n");
    free(out);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, NULL, &err, "mcp", "call", "--server", server, "die", NULL), 1);
    assert_non_null(strstr(err, "exited with status 3"));
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "mcp", "call", "--server", server, "echo",
                                        "[1]", NULL),
                     2);
    assert_string_equal(err, "cdsh mcp call: arguments must be a JSON object\n");
    free(err);
}

static void usage_errors_exit_2_with_a_hint(void **state)
{
    (void)state;
    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "mcp", "tools", NULL), 2);
    assert_string_equal(err, "cdsh mcp: give exactly one of --server 'CMD ARGS' and --url URL\n");
    free(err);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, NULL, &err, "mcp", "tools", "--server", "'unclosed", NULL), 2);
    assert_string_equal(err, "cdsh mcp: --server needs a command (check the quotes)\n");
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "mcp", "--http", "nope", NULL), 2);
    assert_string_equal(err, "cdsh mcp: --http wants a port from 0 to 65535, got 'nope'\n");
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "mcp", "frobnicate", NULL), 2);
    assert_non_null(strstr(err, "unknown subcommand or argument 'frobnicate'"));
    free(err);
}

static void stdio_server_answers_a_piped_session(void **state)
{
    (void)state;
    const char *in =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n"
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n";
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(in, &out, NULL, "mcp", "--fixture", NULL), 0);
    assert_non_null(strstr(out, "\"protocolVersion\":\"2025-06-18\""));
    assert_non_null(strstr(out, "{\"name\":\"add\",\"description\":\"Adds two numbers a and b "
                                "(fixture).\""));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(name_prints_dsh_public_names),
        cmocka_unit_test(tools_lists_every_page_as_text_and_json),
        cmocka_unit_test(call_reports_results_tool_errors_and_failures_by_status),
        cmocka_unit_test(usage_errors_exit_2_with_a_hint),
        cmocka_unit_test(stdio_server_answers_a_piped_session),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
