/* test_plugin.c — the "import" plugin on a host: enabled commands run with
 * their placeholders, enabled servers' tools appear as mcp__<server>__<tool>
 * with the enabledTools filter and are callable, blocked servers are
 * skipped, and unloading leaves nothing registered. */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "host/dispatch.h"
#include "host/host.h"
#include "plugins/mcpimport/plugin.h"

typedef struct fx {
    char *home;
    char *peer;
    char codex[1024], claude[1024], proj[1024];
} fx;

static void build(fx *f)
{
    f->home = cdsh_test_home_new();
    f->peer = cdsh_test_peer_path_dup("mcp_peer");
    snprintf(f->codex, sizeof f->codex, "%s/codex", f->home);
    snprintf(f->claude, sizeof f->claude, "%s/claude", f->home);
    snprintf(f->proj, sizeof f->proj, "%s/proj", f->home);
    char path[1200], text[2048];
    snprintf(path, sizeof path, "%s/.claude/commands", f->proj);
    assert_int_equal(cdsh_fs_mkdir_p(path, 0700, NULL), 0);
    assert_int_equal(cdsh_fs_mkdir_p(f->codex, 0700, NULL), 0);
    snprintf(path, sizeof path, "%s/.claude/commands/greet.md", f->proj);
    cdsh_test_write_file(path, "---\ndescription: Greets\nargument-hint: NAME\n---\nGreet $0 "
                               "warmly.\n");
    snprintf(path, sizeof path, "%s/config.toml", f->codex);
    snprintf(text, sizeof text,
             "[mcp_servers.peer]\ncommand = \"%s\"\nenabled_tools = [\"echo\", \"env\"]\n"
             "tool_timeout_sec = 5\n[mcp_servers.peer.env]\nPEER_MARK = \"from-codex\"\n"
             "[mcp_servers.gone]\ncommand = \"/nonexistent/server\"\n",
             f->peer);
    cdsh_test_write_file(path, text);
}

static void destroy(fx *f)
{
    free(f->peer);
    cdsh_test_home_free(f->home);
}

static json_t *config(fx *f)
{
    return json_pack("{s:[s, s, s], s:[s], s:[s], s:s, s:s}", "servers", "peer", "gone", "missing",
                     "commands", "greet", "projects", f->proj, "claudeDir", f->claude, "codexHome",
                     f->codex);
}

static void enabled_command_runs_with_placeholders_and_unloads(void **state)
{
    (void)state;
    fx f;
    build(&f);
    cdsh_host *host = cdsh_host_new();
    json_t *cfg = json_pack("{s:[s], s:[s], s:s, s:s}", "commands", "greet", "projects", f.proj,
                            "claudeDir", f.claude, "codexHome", f.codex);
    cdsh_plugin *pl = NULL;
    assert_int_equal(cdsh_plugin_load(host, &cdsh_mcpimport_plugin, cfg, &pl, NULL), 0);
    assert_int_equal(cdsh_plugin_state_get(pl), CDSH_PLUGIN_ACTIVE);
    cdsh_command_outcome out = {0};
    assert_int_equal(
        cdsh_commands_execute(cdsh_host_commands(host), NULL, "/greet Ann", NULL, NULL, &out, NULL),
        1);
    assert_int_equal(out.kind, CDSH_COMMAND_SUCCESS);
    assert_string_equal(out.text, "Greet Ann warmly.\n");
    cdsh_commands_outcome_clear(&out);
    json_t *d = cdsh_commands_find(cdsh_host_commands(host), NULL, "greet");
    assert_string_equal(json_string_value(json_object_get(d, "description")), "Greets");
    json_decref(d);
    cdsh_plugin_unload(pl);
    assert_int_equal(cdsh_commands_count(cdsh_host_commands(host)), 0);
    cdsh_host_free(host);
    json_decref(cfg);
    destroy(&f);
}

static void enabled_server_tools_are_filtered_called_and_removed_on_unload(void **state)
{
    (void)state;
    fx f;
    build(&f);
    cdsh_host *host = cdsh_host_new();
    cdsh_tools *tools = cdsh_host_tools(host);
    size_t before = cdsh_tools_count(tools);
    json_t *cfg = config(&f);
    cdsh_plugin *pl = NULL;
    assert_int_equal(cdsh_plugin_load(host, &cdsh_mcpimport_plugin, cfg, &pl, NULL), 0);
    /* blocked ("gone") and unknown ("missing") servers are skipped, not fatal */
    assert_int_equal(cdsh_plugin_state_get(pl), CDSH_PLUGIN_ACTIVE);
    assert_int_equal(cdsh_tools_count(tools), before + 2);
    json_t *t = cdsh_tools_info_dup(tools, NULL, "mcp__peer__echo");
    assert_non_null(t);
    json_decref(t);
    assert_null(cdsh_tools_info_dup(tools, NULL, "mcp__peer__slow"));
    json_t *args = json_pack("{s:s}", "text", "through import");
    cdsh_dispatch_input in = {.call_id = "c1", .name = "mcp__peer__echo", .args = args};
    cdsh_toolresult *res = cdsh_dispatch_execute(tools, &in);
    json_t *j = cdsh_toolresult_to_json(res);
    char *dump = json_dumps(j, 0);
    assert_non_null(strstr(dump, "through import"));
    free(dump);
    json_decref(j);
    cdsh_toolresult_free(res);
    json_decref(args);
    in.call_id = "c2";
    in.name = "mcp__peer__env";
    in.args = NULL;
    res = cdsh_dispatch_execute(tools, &in);
    j = cdsh_toolresult_to_json(res);
    dump = json_dumps(j, 0);
    assert_non_null(strstr(dump, "PEER_MARK=from-codex"));
    free(dump);
    json_decref(j);
    cdsh_toolresult_free(res);
    cdsh_plugin_unload(pl);
    assert_int_equal(cdsh_tools_count(tools), before);
    cdsh_host_free(host);
    json_decref(cfg);
    destroy(&f);
}

static void per_call_timeout_comes_from_the_imported_config(void **state)
{
    (void)state;
    fx f;
    build(&f);
    char path[1200], text[1024];
    snprintf(path, sizeof path, "%s/config.toml", f.codex);
    snprintf(text, sizeof text,
             "[mcp_servers.peer]\ncommand = \"%s\"\nenabled_tools = [\"slow\"]\n"
             "tool_timeout_sec = 0.3\n",
             f.peer);
    cdsh_test_write_file(path, text);
    cdsh_host *host = cdsh_host_new();
    json_t *cfg = json_pack("{s:[s], s:s, s:s}", "servers", "peer", "claudeDir", f.claude,
                            "codexHome", f.codex);
    cdsh_plugin *pl = NULL;
    assert_int_equal(cdsh_plugin_load(host, &cdsh_mcpimport_plugin, cfg, &pl, NULL), 0);
    json_t *args = json_pack("{s:i}", "ms", 5000);
    cdsh_dispatch_input in = {.call_id = "t1", .name = "mcp__peer__slow", .args = args};
    cdsh_toolresult *res = cdsh_dispatch_execute(cdsh_host_tools(host), &in);
    json_t *j = cdsh_toolresult_to_json(res);
    char *dump = json_dumps(j, 0);
    assert_non_null(
        strstr(dump, "MCP tool \\\"slow\\\" on server \\\"peer\\\" timed out after 300 ms"));
    free(dump);
    json_decref(j);
    cdsh_toolresult_free(res);
    json_decref(args);
    cdsh_host_free(host);
    json_decref(cfg);
    destroy(&f);
}

static void nothing_enabled_registers_nothing(void **state)
{
    (void)state;
    cdsh_host *host = cdsh_host_new();
    size_t before = cdsh_tools_count(cdsh_host_tools(host));
    cdsh_plugin *pl = NULL;
    assert_int_equal(cdsh_plugin_load(host, &cdsh_mcpimport_plugin, NULL, &pl, NULL), 0);
    assert_int_equal(cdsh_plugin_effect_count(pl), 0);
    assert_int_equal(cdsh_tools_count(cdsh_host_tools(host)), before);
    cdsh_host_free(host);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(enabled_command_runs_with_placeholders_and_unloads),
        cmocka_unit_test(enabled_server_tools_are_filtered_called_and_removed_on_unload),
        cmocka_unit_test(per_call_timeout_comes_from_the_imported_config),
        cmocka_unit_test(nothing_enabled_registers_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
