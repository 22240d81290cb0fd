/* test_normalise.c — server IR from every .mcp.json dialect and Codex TOML:
 * the real samples compared exactly, plugin variables, header references,
 * and every loss named in a warning. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/toml.h"
#include "plugins/mcpimport/normalise.h"

#define SAMPLES CDSH_TEST_DATA_DIR "/import-samples/"

static json_t *load_json(const char *path)
{
    size_t len = 0;
    char *text = cdsh_test_read_file(path, &len);
    assert_non_null(text);
    json_t *v = cdsh_json_parse(text, len, SIZE_MAX, NULL);
    free(text);
    assert_non_null(v);
    return v;
}

static json_t *cand(json_t *doc, const char *format, const char *source, const char *root)
{
    return json_pack("{s:s, s:o, s:{s:s, s:s, s:s}, s:s?}", "format", format, "document", doc,
                     "provenance", "source", source, "file", "/f", "scope", "user", "pluginRoot",
                     root);
}

static json_t *run(json_t *c, json_t **notes)
{
    json_t *servers = json_array();
    *notes = json_array();
    cdsh_mcpimport_normalise(c, servers, *notes);
    json_decref(c);
    return servers;
}

static void assert_json_eq(const json_t *got, const char *want_text)
{
    json_t *want = json_loads(want_text, 0, NULL);
    assert_non_null(want);
    if (!json_equal((json_t *)got, want)) {
        char *g = json_dumps(got, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        fprintf(stderr, "got: %s\nwant: %s\n", g, want_text);
        free(g);
    }
    assert_true(json_equal((json_t *)got, want));
    json_decref(want);
}

static void flat_stdio_sample_gives_exact_ir(void **state)
{
    (void)state;
    json_t *notes;
    json_t *s = run(
        cand(load_json(SAMPLES "claude-mcp.flat-stdio.context7.json"), "json", "claude", "/plug"),
        &notes);
    assert_int_equal(json_array_size(s), 1);
    assert_json_eq(json_array_get(s, 0),
                   "{\"name\":\"context7\",\"transport\":\"stdio\",\"url\":null,\"headers\":{},"
                   "\"command\":\"npx\",\"args\":[\"--force\",\"-y\",\"@upstash/context7-mcp\"],"
                   "\"env\":{},\"cwd\":null,\"toolCallTimeoutMs\":null,\"startupTimeoutMs\":null,"
                   "\"enabledTools\":null,\"disabledTools\":null,\"unresolved\":[],\"warnings\":[],\"info\":[],"
                   "\"provenance\":{\"source\":\"claude\",\"file\":\"/f\",\"scope\":\"user\"}}");
    assert_int_equal(json_array_size(notes), 0);
    json_decref(s), json_decref(notes);
}

static void wrapped_http_sample_maps_names_and_warns_on_unknown_keys(void **state)
{
    (void)state;
    json_t *notes;
    json_t *s = run(cand(load_json(SAMPLES "claude-mcp.wrapped-http.employment-legal.json"), "json",
                         "claude", NULL),
                    &notes);
    assert_int_equal(json_array_size(s), 2);
    json_t *gd = json_array_get(s, 1);
    assert_string_equal(json_string_value(json_object_get(gd, "name")), "Google-Drive");
    assert_string_equal(json_string_value(json_object_get(gd, "transport")), "streamable-http");
    assert_string_equal(json_string_value(json_object_get(gd, "url")),
                        "https://drivemcp.googleapis.com/mcp/v1");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(gd, "provenance"), "originalName")),
        "Google Drive");
    /* the name mapping is faithful: info, not a warning */
    assert_json_eq(json_object_get(gd, "info"),
                   "[\"server name \\\"Google Drive\\\" is not a valid DSH server name; mapped to "
                   "\\\"Google-Drive\\\"\"]");
    assert_json_eq(json_object_get(gd, "warnings"),
                   "[\"unknown key \\\"title\\\" ignored\",\"unknown key "
                   "\\\"description\\\" ignored\"]");
    assert_json_eq(notes, "[\"top-level key \\\"recommendedCategories\\\" ignored\"]");
    json_decref(s), json_decref(notes);
}

static void codex_sample_keeps_types_and_warns_on_each_loss(void **state)
{
    (void)state;
    size_t len;
    char *text = cdsh_test_read_file(SAMPLES "codex-config.codex2dsh-fixture.toml", &len);
    json_t *doc = NULL;
    assert_int_equal(cdsh_toml_parse(text, len, &doc, NULL), 0);
    free(text);
    json_t *notes;
    json_t *s = run(cand(doc, "codex-toml", "codex", NULL), &notes);
    assert_int_equal(json_array_size(s), 4);
    json_t *kb = json_array_get(s, 1);
    assert_string_equal(json_string_value(json_object_get(kb, "name")), "kingbase-demo-db");
    assert_int_equal(json_integer_value(json_object_get(kb, "startupTimeoutMs")), 120000);
    assert_string_equal(json_string_value(json_array_get(json_object_get(kb, "args"), 8)), "54322");
    assert_json_eq(json_object_get(kb, "warnings"),
                   "[\"\\\"type\\\" is not a Codex key (transport follows command/url); "
                   "ignored\",\"args[8] is a number (54322), not a string; passed as the string "
                   "\\\"54322\\\"\"]");
    json_t *ora = json_array_get(s, 2);
    /* Codex does no ${} expansion: the literal stays and nothing is unresolved */
    assert_int_equal(json_array_size(json_object_get(ora, "unresolved")), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(ora, "env"), "PATH")),
                        "D:\\app\\example\\product\\11.2.0\\dbhome_1\\BIN;${PATH}");
    json_t *repl = json_array_get(s, 3);
    assert_string_equal(json_string_value(json_object_get(repl, "transport")), "stdio");
    assert_int_equal(json_array_size(json_object_get(repl, "warnings")), 0);
    json_decref(s), json_decref(notes);
}

static void plugin_root_is_substituted_and_relative_commands_resolved(void **state)
{
    (void)state;
    json_t *doc =
        json_pack("{s:{s:s, s:[s], s:{s:s}}}", "srv", "command", "./bin/server", "args",
                  "${CLAUDE_PLUGIN_ROOT}/cfg.json", "env", "TOKEN", "${MY_TOKEN:-fallback}");
    json_t *notes;
    json_t *s = run(cand(doc, "json", "claude", "/opt/plug"), &notes);
    json_t *ir = json_array_get(s, 0);
    assert_string_equal(json_string_value(json_object_get(ir, "command")), "/opt/plug/bin/server");
    assert_string_equal(json_string_value(json_array_get(json_object_get(ir, "args"), 0)),
                        "/opt/plug/cfg.json");
    assert_json_eq(json_object_get(ir, "unresolved"),
                   "[{\"kind\":\"env\",\"envVar\":\"MY_TOKEN\",\"fallback\":\"fallback\","
                   "\"field\":\"env.TOKEN\"}]");
    json_decref(s), json_decref(notes);
}

static void codex_bearer_and_env_headers_become_header_references(void **state)
{
    (void)state;
    json_t *doc = json_pack("{s:{s:{s:s, s:s, s:{s:s}, s:f, s:[s], s:[s]}}}", "mcp_servers", "api",
                            "url", "https://x.example/mcp", "bearer_token_env_var", "API_TOK",
                            "env_http_headers", "X-Org", "ORG_ID", "tool_timeout_sec", 2.5,
                            "enabled_tools", "a", "disabled_tools", "b");
    json_t *notes;
    json_t *s = run(cand(doc, "codex-toml", "codex", NULL), &notes);
    json_t *ir = json_array_get(s, 0);
    assert_json_eq(json_object_get(ir, "headers"),
                   "{\"Authorization\":\"Bearer ${API_TOK}\",\"X-Org\":\"${ORG_ID}\"}");
    assert_json_eq(json_object_get(ir, "unresolved"),
                   "[{\"kind\":\"header\",\"envVar\":\"API_TOK\",\"fallback\":null,"
                   "\"field\":\"headers.Authorization\"},{\"kind\":\"header\",\"envVar\":"
                   "\"ORG_ID\",\"fallback\":null,\"field\":\"headers.X-Org\",\"optional\":true}]");
    assert_int_equal(json_integer_value(json_object_get(ir, "toolCallTimeoutMs")), 2500);
    assert_json_eq(json_object_get(ir, "enabledTools"), "[\"a\"]");
    assert_json_eq(json_object_get(ir, "disabledTools"), "[\"b\"]");
    json_decref(s), json_decref(notes);
}

static void sse_oauth_and_helpers_are_warnings_not_silence(void **state)
{
    (void)state;
    json_t *doc = json_pack("{s:{s:{s:s, s:s, s:{}, s:s}}}", "mcpServers", "old", "type", "sse",
                            "url", "https://s.example/sse", "oauth", "headersHelper", "x.sh");
    json_t *notes;
    json_t *s = run(cand(doc, "json", "claude", NULL), &notes);
    json_t *ir = json_array_get(s, 0);
    assert_true(json_is_null(json_object_get(ir, "transport")));
    assert_json_eq(json_object_get(ir, "warnings"),
                   "[\"transport \\\"sse\\\" (deprecated HTTP+SSE) is not supported by DSH's MCP "
                   "client (stdio and streamable-http only)\",\"OAuth (\\\"oauth\\\") is not "
                   "supported: DSH's client sends static headers only\",\"\\\"headersHelper\\\" "
                   "(a command printing headers) is not supported; put the headers in the config "
                   "instead\"]");
    json_decref(s), json_decref(notes);
}

static void array_and_vscode_dialects_are_read(void **state)
{
    (void)state;
    json_t *notes;
    json_t *s = run(cand(json_pack("[{s:s, s:s}, {s:{s:s}}, s]", "name", "a", "command", "x", "b",
                                   "command", "y", "junk"),
                         "json", "claude", NULL),
                    &notes);
    assert_int_equal(json_array_size(s), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(s, 0), "name")), "a");
    assert_string_equal(json_string_value(json_object_get(json_array_get(s, 1), "name")), "b");
    assert_json_eq(notes, "[\"entry 2 of the server array is not an object; ignored\"]");
    json_decref(s), json_decref(notes);
    s = run(
        cand(json_pack("{s:{s:{s:s}}}", "servers", "v", "command", "z"), "json", "claude", NULL),
        &notes);
    assert_int_equal(json_array_size(s), 1);
    assert_json_eq(notes, "[\"VS Code dialect (\\\"servers\\\") read best effort\"]");
    json_decref(s), json_decref(notes);
}

static void server_names_map_to_dsh_pattern(void **state)
{
    (void)state;
    char *n = cdsh_mcpimport_server_name_dup("Google Drive.v2");
    assert_string_equal(n, "Google-Drive-v2");
    free(n);
    n = cdsh_mcpimport_server_name_dup("a-very-long-server-name-that-goes-past-32");
    assert_int_equal(strlen(n), 32);
    free(n);
    n = cdsh_mcpimport_server_name_dup("");
    assert_string_equal(n, "server");
    free(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(flat_stdio_sample_gives_exact_ir),
        cmocka_unit_test(wrapped_http_sample_maps_names_and_warns_on_unknown_keys),
        cmocka_unit_test(codex_sample_keeps_types_and_warns_on_each_loss),
        cmocka_unit_test(plugin_root_is_substituted_and_relative_commands_resolved),
        cmocka_unit_test(codex_bearer_and_env_headers_become_header_references),
        cmocka_unit_test(sse_oauth_and_helpers_are_warnings_not_silence),
        cmocka_unit_test(array_and_vscode_dialects_are_read),
        cmocka_unit_test(server_names_map_to_dsh_pattern),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
