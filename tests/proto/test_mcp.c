/* test_mcp.c — the MCP protocol core: version negotiation, message
 * classification, tool/result checks, DSH public names (test vectors from
 * mcp-import.md §2.2 and computed ones), the scrubbed child environment and
 * the text projection. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "proto/mcp/mcp.h"

static void negotiate_echoes_known_legacy_versions_and_falls_back_to_latest(void **state)
{
    (void)state;
    assert_string_equal(cdsh_mcp_negotiate("2025-06-18"), "2025-06-18");
    assert_string_equal(cdsh_mcp_negotiate("2024-11-05"), "2024-11-05");
    assert_string_equal(cdsh_mcp_negotiate("2025-03-26"), "2025-03-26");
    assert_string_equal(cdsh_mcp_negotiate("2025-11-25"), "2025-11-25");
    assert_string_equal(cdsh_mcp_negotiate("2099-01-01"), "2025-11-25");
    assert_string_equal(cdsh_mcp_negotiate("2026-07-28"), "2025-11-25"); /* not via initialize */
    assert_string_equal(cdsh_mcp_negotiate(NULL), "2025-11-25");
    assert_true(cdsh_mcp_version_known("2026-07-28"));
    assert_true(cdsh_mcp_version_is_modern("2026-07-28"));
    assert_false(cdsh_mcp_version_known("2025-01-01"));
}

static int classify_text(const char *text, cdsh_mcp_msg *m, cdsh_error *err, json_t **v)
{
    return cdsh_mcp_msg_parse(text, strlen(text), v, m, err);
}

static void classify_recognises_the_four_message_kinds(void **state)
{
    (void)state;
    cdsh_mcp_msg m;
    json_t *v = NULL;
    assert_int_equal(
        classify_text("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}", &m, NULL, &v), 0);
    assert_int_equal(m.kind, CDSH_MCP_MSG_REQUEST);
    assert_string_equal(m.method, "tools/list");
    assert_int_equal(json_integer_value(m.id), 7);
    json_decref(v);
    assert_int_equal(classify_text("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
                                   &m, NULL, &v),
                     0);
    assert_int_equal(m.kind, CDSH_MCP_MSG_NOTIFICATION);
    json_decref(v);
    assert_int_equal(
        classify_text("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{}}", &m, NULL, &v), 0);
    assert_int_equal(m.kind, CDSH_MCP_MSG_RESULT);
    json_decref(v);
    assert_int_equal(classify_text("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
                                   "\"message\":\"Parse error\"}}",
                                   &m, NULL, &v),
                     0);
    assert_int_equal(m.kind, CDSH_MCP_MSG_ERROR);
    assert_int_equal(m.error_code, -32700);
    assert_string_equal(m.error_message, "Parse error");
    json_decref(v);
}

static void classify_refuses_malformed_messages_with_reasons(void **state)
{
    (void)state;
    static const struct {
        const char *text, *code, *fragment;
    } cases[] = {
        {"not json", "PARSE_ERROR", "invalid JSON"},
        {"[{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}]", "BATCH", "batches"},
        {"{\"jsonrpc\":\"1.0\",\"method\":\"ping\",\"id\":1}", "INVALID_MESSAGE", "\"2.0\""},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":null}", "INVALID_MESSAGE", "\"id\""},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1.5}", "INVALID_MESSAGE", "\"id\""},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"\",\"id\":1}", "INVALID_MESSAGE", "method"},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":3}", "INVALID_MESSAGE", "params"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1}", "INVALID_MESSAGE", "exactly one"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{}}", "INVALID_MESSAGE",
         "exactly one"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"x\",\"message\":\"m\"}}",
         "INVALID_MESSAGE", "integer code"},
        {"{\"jsonrpc\":\"2.0\"}", "INVALID_MESSAGE", "neither"},
        {"42", "INVALID_MESSAGE", "not a JSON object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cdsh_mcp_msg m;
        json_t *v = (json_t *)1;
        cdsh_error err = {0};
        assert_true(classify_text(cases[i].text, &m, &err, &v) < 0);
        assert_null(v);
        assert_string_equal(err.code, cases[i].code);
        assert_non_null(strstr(err.message, cases[i].fragment));
    }
}

static void oversize_messages_are_refused_as_too_big(void **state)
{
    (void)state;
    size_t n = CDSH_MCP_MAX_MESSAGE + 10;
    char *big = malloc(n + 1);
    memset(big, ' ', n);
    big[0] = '{';
    big[n - 1] = '}';
    big[n] = '\0';
    cdsh_mcp_msg m;
    json_t *v = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_mcp_msg_parse(big, n, &v, &m, &err), CDSH_ETOOBIG);
    assert_string_equal(err.code, "MESSAGE_TOO_BIG");
    free(big);
}

static void public_names_follow_dsh_rule(void **state)
{
    (void)state;
    static const char *const vectors[][3] = {
        {"srv", "echo", "mcp__srv__echo"},
        {"srv", "a.b", "mcp__srv__a_b_df0974cd1f1e"},
        {"github", "create_pull_request_review_comment_with_suggestions_v2",
         "mcp__github__create_pull_request_review_comment_wit_c3801f526fcb"},
        {"Google Drive", "search", "mcp__Google_Drive__search_d60de79dd11b"},
        {"srv", "h\xc3\xa9llo", "mcp__srv__h_llo_69aafb962afa"},
        {"srv", "smile\xf0\x9f\x98\x80", "mcp__srv__smile___34c9385eb30f"},
        {"a", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
         "mcp__a__bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"},
        {"a", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
         "mcp__a__bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb_f21797aac54f"},
        {"x", "tool/with:illegal chars!", "mcp__x__tool_with_illegal_chars__f0f06a8c1e2b"},
    };
    for (size_t i = 0; i < sizeof vectors / sizeof *vectors; i++) {
        char out[CDSH_MCP_PUBLIC_NAME_MAX + 1];
        assert_int_equal(cdsh_mcp_public_tool_name(vectors[i][0], vectors[i][1], out), 0);
        assert_string_equal(out, vectors[i][2]);
        assert_true(strlen(out) <= 64);
    }
}

static void public_names_of_colliding_raw_names_differ(void **state)
{
    (void)state;
    char a[65], b[65], c[65];
    cdsh_mcp_public_tool_name("srv", "a.b", a);
    cdsh_mcp_public_tool_name("srv", "a/b", b);
    cdsh_mcp_public_tool_name("srv", "a_b", c);
    assert_string_equal(c, "mcp__srv__a_b");
    assert_string_not_equal(a, b);
    assert_string_not_equal(a, c);
    /* The hash separates server and tool with NUL: ("ab","c") != ("a","bc"). */
    char d[65], e[65];
    cdsh_mcp_public_tool_name("a.b", "c", d);
    cdsh_mcp_public_tool_name("a", "b.c", e);
    assert_string_not_equal(d, e);
}

static void env_scrub_drops_credential_and_harness_names(void **state)
{
    (void)state;
    assert_true(cdsh_mcp_env_name_scrubbed("OPENAI_API_KEY"));
    assert_true(cdsh_mcp_env_name_scrubbed("monkey"));
    assert_true(cdsh_mcp_env_name_scrubbed("TOKENIZERS_PARALLELISM"));
    assert_true(cdsh_mcp_env_name_scrubbed("db_password=x"));
    assert_true(cdsh_mcp_env_name_scrubbed("MY_SECRET"));
    assert_true(cdsh_mcp_env_name_scrubbed("GIT_CONFIG_KEY_0"));
    assert_true(cdsh_mcp_env_name_scrubbed("dsh_home"));
    assert_true(cdsh_mcp_env_name_scrubbed("CDSH_HOME"));
    assert_false(cdsh_mcp_env_name_scrubbed("PATH"));
    assert_false(cdsh_mcp_env_name_scrubbed("HOME"));
    assert_false(cdsh_mcp_env_name_scrubbed("SSH_AUTH_SOCK"));
    assert_false(cdsh_mcp_env_name_scrubbed("XDSH_X")); /* prefix, not substring */
    assert_false(cdsh_mcp_env_name_scrubbed("LANG"));
}

static void child_env_merges_server_env_on_top_of_the_scrubbed_parent(void **state)
{
    (void)state;
    const char *parent[] = {"PATH=/bin", "API_KEY=leak", "DSH_X=1", "LANG=C", "KEEP=old", NULL};
    json_t *server = json_pack("{s:s,s:s}", "KEEP", "new", "API_KEY", "configured");
    char **env = cdsh_mcp_child_env_new(parent, server, NULL);
    assert_non_null(env);
    size_t n = 0;
    while (env[n])
        n++;
    assert_int_equal(n, 4);
    assert_string_equal(env[0], "PATH=/bin");
    assert_string_equal(env[1], "LANG=C");
    assert_string_equal(env[2], "KEEP=new");
    assert_string_equal(env[3], "API_KEY=configured"); /* explicit env survives */
    cdsh_mcp_env_free(env);
    json_decref(server);

    json_t *bad = json_pack("{s:i}", "N", 1);
    cdsh_error err = {0};
    assert_null(cdsh_mcp_child_env_new(parent, bad, &err));
    assert_string_equal(err.code, "BAD_ENV");
    json_decref(bad);
}

static void tool_check_names_what_is_wrong(void **state)
{
    (void)state;
    json_t *ok = json_pack("{s:s,s:{s:s}}", "name", "echo", "inputSchema", "type", "object");
    assert_int_equal(cdsh_mcp_tool_check(ok, NULL), 0);
    json_t *noschema = json_pack("{s:s}", "name", "echo");
    cdsh_error err = {0};
    assert_int_equal(cdsh_mcp_tool_check(noschema, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "tool \"echo\" has no inputSchema object");
    json_t *noname = json_pack("{s:{}}", "inputSchema");
    assert_int_equal(cdsh_mcp_tool_check(noname, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "a listed tool has no name");
    json_t *task = json_pack("{s:s,s:{},s:{s:s}}", "name", "t", "inputSchema", "execution",
                             "taskSupport", "required");
    assert_true(cdsh_mcp_tool_requires_task(task));
    assert_false(cdsh_mcp_tool_requires_task(ok));
    json_decref(ok);
    json_decref(noschema);
    json_decref(noname);
    json_decref(task);
}

static void call_results_are_checked_and_legacy_ones_flagged(void **state)
{
    (void)state;
    bool legacy = true;
    json_t *r = cdsh_mcp_text_result_new("hi", NULL, false);
    assert_int_equal(cdsh_mcp_call_result_check(r, &legacy, NULL), 0);
    assert_false(legacy);
    json_decref(r);
    json_t *old = json_pack("{s:{s:i}}", "toolResult", "x", 1);
    assert_int_equal(cdsh_mcp_call_result_check(old, &legacy, NULL), 0);
    assert_true(legacy);
    json_decref(old);
    json_t *bad = json_pack("{s:[i]}", "content", 1);
    cdsh_error err = {0};
    assert_int_equal(cdsh_mcp_call_result_check(bad, NULL, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "content[0] is not an object with a string type");
    json_decref(bad);
    json_t *badflag = json_pack("{s:[],s:s}", "content", "isError", "yes");
    assert_int_equal(cdsh_mcp_call_result_check(badflag, NULL, &err), CDSH_EINVAL);
    json_decref(badflag);
}

static void content_projection_matches_dsh(void **state)
{
    (void)state;
    json_t *c = json_pack("[{s:s,s:s},{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s},{s:s}]", "type", "text",
                          "text", "hello", "type", "resource_link", "name", "doc", "uri",
                          "file:///doc", "type", "image", "mimeType", "image/png", "data",
                          "AA==", "type", "resource_link", "uri", "x:", "type", "weird");
    char *t = cdsh_mcp_content_text_dup(c, "tool");
    assert_string_equal(t, "hello\nResource link: doc (file:///doc)\n[image unavailable: "
                           "image/png; raw image data remains available to programmatic "
                           "callers]\n[resource link is missing its name or URI]\n[unsupported "
                           "MCP content type: weird]");
    free(t);
    json_decref(c);
    json_t *empty = json_array();
    t = cdsh_mcp_content_text_dup(empty, "mcp__s__t");
    assert_string_equal(t, "(mcp__s__t returned no model-visible content)");
    free(t);
    json_decref(empty);
}

static void progress_params_omit_absent_fields(void **state)
{
    (void)state;
    json_t *tok = json_string("tk");
    json_t *p = cdsh_mcp_progress_params_new(tok, 2, -1, NULL);
    assert_string_equal(json_string_value(json_object_get(p, "progressToken")), "tk");
    assert_true(json_number_value(json_object_get(p, "progress")) == 2.0);
    assert_null(json_object_get(p, "total"));
    assert_null(json_object_get(p, "message"));
    json_decref(p);
    json_decref(tok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(negotiate_echoes_known_legacy_versions_and_falls_back_to_latest),
        cmocka_unit_test(classify_recognises_the_four_message_kinds),
        cmocka_unit_test(classify_refuses_malformed_messages_with_reasons),
        cmocka_unit_test(oversize_messages_are_refused_as_too_big),
        cmocka_unit_test(public_names_follow_dsh_rule),
        cmocka_unit_test(public_names_of_colliding_raw_names_differ),
        cmocka_unit_test(env_scrub_drops_credential_and_harness_names),
        cmocka_unit_test(child_env_merges_server_env_on_top_of_the_scrubbed_parent),
        cmocka_unit_test(tool_check_names_what_is_wrong),
        cmocka_unit_test(call_results_are_checked_and_legacy_ones_flagged),
        cmocka_unit_test(content_projection_matches_dsh),
        cmocka_unit_test(progress_params_omit_absent_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
