/* test_plugin.c — the "import" plugin on a host: enabled commands run with
 * their placeholders, enabled servers' tools appear as mcp__<server>__<tool>
 * with the enabledTools filter and are callable, blocked servers are
 * skipped, and unloading leaves nothing registered. Servers connect lazily:
 * a spawn counter (a wrapper script) shows that loading spawns nothing, a
 * tool listing connects a server without a cached list, a cached list
 * registers tools without a spawn and the first call re-validates it. */
#include "support/testkit.h"
#include "support/timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "host/dispatch.h"
#include "host/host.h"
#include "host/prompt.h"
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
    /* never connected, no cached list: the tools come with the first listing */
    assert_int_equal(cdsh_tools_count(tools), before);
    cdsh_prompt_tools_materialize(cdsh_host_prompt(host), NULL);
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
    cdsh_prompt_tools_materialize(cdsh_host_prompt(host), NULL);
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


/* ---- lazy connection ------------------------------------------------------------ */

typedef struct lazy {
    fx f;
    char count[1100], script[1100], cache[1200];
} lazy;

static int spawns(const lazy *z)
{
    char *text = NULL;
    size_t len = 0;
    if (cdsh_fs_read_file(z->count, 1 << 20, &text, &len, NULL) != 0)
        return 0;
    int n = 0;
    for (size_t i = 0; i < len; i++)
        n += text[i] == '\n';
    free(text);
    return n;
}

/* A Codex config with `n` servers s0..s<n-1> (or "peer" for n == 0), each
 * started through a wrapper that counts its spawns before running the peer. */
static void lazy_build(lazy *z, int n)
{
    build(&z->f);
    snprintf(z->count, sizeof z->count, "%s/spawns", z->f.home);
    snprintf(z->script, sizeof z->script, "%s/counted-peer", z->f.home);
    char text[8192];
    snprintf(text, sizeof text, "#!/bin/sh\necho spawn >> '%s'\nexec '%s' \"$@\"\n", z->count,
             z->f.peer);
    cdsh_test_write_file(z->script, text);
    chmod(z->script, 0755);
    size_t used = 0;
    for (int i = 0; i < (n ? n : 1); i++) {
        char name[16];
        snprintf(name, sizeof name, n ? "s%d" : "peer", i);
        used += (size_t)snprintf(text + used, sizeof text - used,
                                 "[mcp_servers.%s]\ncommand = \"%s\"\n"
                                 "enabled_tools = [\"echo\", \"env\"]\n",
                                 name, z->script);
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/config.toml", z->f.codex);
    cdsh_test_write_file(path, text);
    snprintf(z->cache, sizeof z->cache, "%s/cache/import/peer.json", z->f.home);
}

static cdsh_plugin *lazy_load(lazy *z, cdsh_host *host)
{
    json_t *cfg = json_pack("{s:[s], s:[s], s:[s], s:s, s:s}", "servers", "peer", "commands",
                            "greet", "projects", z->f.proj, "claudeDir", z->f.claude, "codexHome",
                            z->f.codex);
    cdsh_plugin *pl = NULL;
    assert_int_equal(cdsh_plugin_load(host, &cdsh_mcpimport_plugin, cfg, &pl, NULL), 0);
    json_decref(cfg);
    return pl;
}

static json_t *call(cdsh_host *host, const char *name, const char *text)
{
    json_t *args = text ? json_pack("{s:s}", "text", text) : NULL;
    cdsh_dispatch_input in = {.call_id = "lz", .name = name, .args = args};
    cdsh_toolresult *res = cdsh_dispatch_execute(cdsh_host_tools(host), &in);
    json_t *j = cdsh_toolresult_to_json(res);
    cdsh_toolresult_free(res);
    json_decref(args);
    return j;
}

static bool has(cdsh_host *host, const char *name)
{
    json_t *t = cdsh_tools_info_dup(cdsh_host_tools(host), NULL, name);
    json_decref(t);
    return t != NULL;
}

static void loading_spawns_nothing_and_the_tool_listing_connects_once(void **state)
{
    (void)state;
    lazy z;
    lazy_build(&z, 0);
    cdsh_host *host = cdsh_host_new();
    cdsh_plugin *pl = lazy_load(&z, host);
    assert_int_equal(cdsh_plugin_state_get(pl), CDSH_PLUGIN_ACTIVE);
    assert_int_equal(spawns(&z), 0);
    assert_false(has(host, "mcp__peer__echo"));
    /* commands need no server */
    json_t *cmds = cdsh_commands_list(cdsh_host_commands(host), NULL);
    assert_int_equal(json_array_size(cmds), 1);
    json_decref(cmds);
    assert_int_equal(spawns(&z), 0);
    json_t *list = cdsh_prompt_tools_dup(cdsh_host_prompt(host), cdsh_host_tools(host), NULL,
                                         NULL, NULL);
    assert_int_equal(spawns(&z), 1);
    size_t i, found = 0;
    json_t *t;
    json_array_foreach(list, i, t) {
        const char *n = json_string_value(json_object_get(t, "name"));
        found += strcmp(n, "mcp__peer__echo") == 0 || strcmp(n, "mcp__peer__env") == 0;
    }
    assert_int_equal(found, 2);
    json_decref(list);
    /* a second listing and a call reuse the connection */
    cdsh_prompt_tools_materialize(cdsh_host_prompt(host), NULL);
    json_t *r = call(host, "mcp__peer__echo", "once");
    assert_false(json_is_true(json_object_get(r, "isError")));
    json_decref(r);
    assert_int_equal(spawns(&z), 1);
    /* the list is cached for the next start */
    assert_int_equal(access(z.cache, F_OK), 0);
    cdsh_plugin_unload(pl);
    assert_false(has(host, "mcp__peer__echo"));
    cdsh_host_free(host);
    destroy(&z.f);
}

static void a_cached_list_registers_tools_without_a_spawn_until_the_first_call(void **state)
{
    (void)state;
    lazy z;
    lazy_build(&z, 0);
    cdsh_host *host = cdsh_host_new();
    cdsh_plugin *pl = lazy_load(&z, host);
    cdsh_prompt_tools_materialize(cdsh_host_prompt(host), NULL);
    assert_int_equal(spawns(&z), 1);
    cdsh_plugin_unload(pl);
    cdsh_host_free(host);

    host = cdsh_host_new();
    pl = lazy_load(&z, host);
    assert_true(has(host, "mcp__peer__echo"));
    assert_true(has(host, "mcp__peer__env"));
    assert_false(has(host, "mcp__peer__slow")); /* the filter applies to the cached list */
    cdsh_prompt_tools_materialize(cdsh_host_prompt(host), NULL);
    assert_int_equal(spawns(&z), 1); /* listing with a cache starts nothing */
    json_t *r = call(host, "mcp__peer__echo", "lazily");
    char *dump = json_dumps(r, 0);
    assert_non_null(strstr(dump, "lazily"));
    free(dump);
    json_decref(r);
    assert_int_equal(spawns(&z), 2);
    cdsh_plugin_unload(pl);
    cdsh_host_free(host);
    destroy(&z.f);
}

static void the_first_call_revalidates_a_stale_cache(void **state)
{
    (void)state;
    lazy z;
    lazy_build(&z, 0);
    cdsh_host *host = cdsh_host_new();
    cdsh_plugin *pl = lazy_load(&z, host);
    cdsh_prompt_tools_materialize(cdsh_host_prompt(host), NULL);
    cdsh_plugin_unload(pl);
    cdsh_host_free(host);
    /* The server changed since: the cache names "env" as "vanished". */
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(cdsh_fs_read_file(z.cache, 1 << 20, &text, &len, NULL), 0);
    json_t *doc = json_loads(text, 0, NULL);
    free(text);
    json_t *tools = json_object_get(doc, "tools");
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        if (strcmp(json_string_value(json_object_get(t, "name")), "env") == 0)
            json_object_set_new(t, "name", json_string("vanished"));
    }
    text = json_dumps(doc, 0);
    cdsh_test_write_file(z.cache, text);
    free(text);
    json_decref(doc);
    json_t *cfg = json_pack("{s:[s], s:s, s:s}", "servers", "peer", "claudeDir", z.f.claude,
                            "codexHome", z.f.codex);
    /* enabled_tools lets "vanished" through only if named: widen the filter */
    char path[1200], conf[2048];
    snprintf(path, sizeof path, "%s/config.toml", z.f.codex);
    snprintf(conf, sizeof conf,
             "[mcp_servers.peer]\ncommand = \"%s\"\nenabled_tools = [\"echo\", \"env\", "
             "\"vanished\"]\n",
             z.script);
    cdsh_test_write_file(path, conf);
    host = cdsh_host_new();
    pl = NULL;
    assert_int_equal(cdsh_plugin_load(host, &cdsh_mcpimport_plugin, cfg, &pl, NULL), 0);
    json_decref(cfg);
    /* the filter is not part of the fingerprint: the cache still applies */
    assert_true(has(host, "mcp__peer__vanished"));
    assert_false(has(host, "mcp__peer__env"));
    assert_int_equal(spawns(&z), 1);
    json_t *r = call(host, "mcp__peer__vanished", NULL);
    assert_true(json_is_true(json_object_get(r, "isError")));
    json_t *info = json_object_get(json_object_get(r, "error"), "info");
    assert_string_equal(json_string_value(json_object_get(info, "code")), "TOOL_GONE");
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "message")),
                        "MCP server \"peer\" no longer offers tool \"vanished\"");
    json_decref(r);
    assert_int_equal(spawns(&z), 2);
    /* re-registered from the live list, and the cache rewritten */
    assert_false(has(host, "mcp__peer__vanished"));
    assert_true(has(host, "mcp__peer__env"));
    assert_int_equal(cdsh_fs_read_file(z.cache, 1 << 20, &text, &len, NULL), 0);
    assert_null(strstr(text, "vanished"));
    free(text);
    cdsh_plugin_unload(pl);
    cdsh_host_free(host);
    destroy(&z.f);
}

static void a_changed_server_config_ignores_the_cache(void **state)
{
    (void)state;
    lazy z;
    lazy_build(&z, 0);
    cdsh_host *host = cdsh_host_new();
    cdsh_plugin *pl = lazy_load(&z, host);
    cdsh_prompt_tools_materialize(cdsh_host_prompt(host), NULL);
    cdsh_plugin_unload(pl);
    cdsh_host_free(host);
    char path[1200], conf[2048];
    snprintf(path, sizeof path, "%s/config.toml", z.f.codex);
    snprintf(conf, sizeof conf,
             "[mcp_servers.peer]\ncommand = \"%s\"\nargs = [\"--page\", \"2\"]\n"
             "enabled_tools = [\"echo\", \"env\"]\n",
             z.script);
    cdsh_test_write_file(path, conf);
    host = cdsh_host_new();
    pl = lazy_load(&z, host);
    assert_false(has(host, "mcp__peer__echo")); /* started differently: the old list is not trusted */
    cdsh_prompt_tools_materialize(cdsh_host_prompt(host), NULL);
    assert_true(has(host, "mcp__peer__echo"));
    assert_int_equal(spawns(&z), 2);
    cdsh_plugin_unload(pl);
    cdsh_host_free(host);
    destroy(&z.f);
}

/* A connected server that changes its tools (notifications/tools/list_changed)
 * is re-registered from the new list: the client's TOOLS_CHANGED event is
 * what keeps the registry in step with the server after the first listing
 * (the job cdsh_mcp_import_sync had before the connections became lazy). */
static void a_server_that_changes_its_tools_is_re_registered(void **state)
{
    (void)state;
    fx f;
    build(&f);
    char path[1200], text[2048];
    snprintf(path, sizeof path, "%s/config.toml", f.codex);
    snprintf(text, sizeof text,
             "[mcp_servers.live]\ncommand = \"%s\"\nenabled_tools = [\"echo\", \"change\", "
             "\"added\"]\n",
             f.peer);
    cdsh_test_write_file(path, text);
    cdsh_host *host = cdsh_host_new();
    cdsh_tools *tools = cdsh_host_tools(host);
    json_t *cfg = json_pack("{s:[s], s:s, s:s}", "servers", "live", "claudeDir", f.claude,
                            "codexHome", f.codex);
    cdsh_plugin *pl = NULL;
    assert_int_equal(cdsh_plugin_load(host, &cdsh_mcpimport_plugin, cfg, &pl, NULL), 0);
    cdsh_prompt_tools_materialize(cdsh_host_prompt(host), NULL);
    assert_true(has(host, "mcp__live__echo"));
    assert_true(has(host, "mcp__live__change"));
    assert_false(has(host, "mcp__live__added"));
    size_t before = cdsh_tools_count(tools);
    cdsh_dispatch_input in = {.call_id = "c1", .name = "mcp__live__change"};
    cdsh_toolresult *res = cdsh_dispatch_execute(tools, &in);
    assert_false(res->is_error);
    cdsh_toolresult_free(res);
    /* the event arrives on the client's thread: wait for it (bounded) */
    int budget = cdsh_test_scale_ms(15000) / 10;
    for (int i = 0; i < budget && !has(host, "mcp__live__added"); i++)
        usleep(10000);
    assert_true(has(host, "mcp__live__added"));
    assert_int_equal(cdsh_tools_count(tools), before + 1);
    /* the old tools still work */
    json_t *args = json_pack("{s:s}", "text", "still here");
    in = (cdsh_dispatch_input){.call_id = "c2", .name = "mcp__live__echo", .args = args};
    res = cdsh_dispatch_execute(tools, &in);
    assert_false(res->is_error);
    cdsh_toolresult_free(res);
    json_decref(args);
    /* the new tool is offered, so the call reaches the server (the peer
     * lists "added" but has no handler for it: its own error comes back) */
    in = (cdsh_dispatch_input){.call_id = "c3", .name = "mcp__live__added"};
    res = cdsh_dispatch_execute(tools, &in);
    char *t = cdsh_toolresult_text_dup(res);
    assert_true(res->is_error);
    assert_null(strstr(t, "no longer offers"));
    assert_non_null(strstr(t, "Unknown tool"));
    free(t);
    cdsh_toolresult_free(res);
    cdsh_plugin_unload(pl);
    assert_false(has(host, "mcp__live__added"));
    cdsh_host_free(host);
    json_decref(cfg);
    destroy(&f);
}

static void commands_list_with_ten_enabled_servers_spawns_none(void **state)
{
    (void)state;
    lazy z;
    lazy_build(&z, 10);
    char path[1200], text[4096];
    snprintf(path, sizeof path, "%s/profiles", z.f.home);
    assert_int_equal(cdsh_fs_mkdir_p(path, 0700, NULL), 0);
    snprintf(path, sizeof path, "%s/profiles/default.yaml", z.f.home);
    snprintf(text, sizeof text,
             "plugins:\n  import:\n    enabled: true\n    config:\n"
             "      servers: [s0, s1, s2, s3, s4, s5, s6, s7, s8, s9]\n"
             "      commands: [greet]\n      projects: ['%s']\n      claudeDir: '%s'\n"
             "      codexHome: '%s'\n",
             z.f.proj, z.f.claude, z.f.codex);
    cdsh_test_write_file(path, text);
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "commands", "list", "--json", NULL), 0);
    json_t *doc = json_loads(out, 0, NULL);
    size_t i, greet = 0;
    json_t *c;
    json_array_foreach(doc, i, c) {
        greet += strcmp(json_string_value(json_object_get(c, "name")), "greet") == 0;
    }
    assert_int_equal(greet, 1);
    json_decref(doc);
    free(out), free(err);
    assert_int_equal(spawns(&z), 0);
    /* `cdsh tools list` needs their tools: each connects once */
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "tools", "list", "--json", NULL), 0);
    doc = json_loads(out, 0, NULL);
    size_t mcp = 0;
    json_array_foreach(json_object_get(doc, "tools"), i, c) {
        mcp += strncmp(json_string_value(json_object_get(c, "name")), "mcp__s", 6) == 0;
    }
    assert_int_equal(mcp, 20);
    json_decref(doc);
    free(out), free(err);
    assert_int_equal(spawns(&z), 10);
    /* and from now on they come from the cache */
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "tools", "list", "--json", NULL), 0);
    free(out), free(err);
    assert_int_equal(spawns(&z), 10);
    destroy(&z.f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(enabled_command_runs_with_placeholders_and_unloads),
        cmocka_unit_test(enabled_server_tools_are_filtered_called_and_removed_on_unload),
        cmocka_unit_test(per_call_timeout_comes_from_the_imported_config),
        cmocka_unit_test(nothing_enabled_registers_nothing),
        cmocka_unit_test(loading_spawns_nothing_and_the_tool_listing_connects_once),
        cmocka_unit_test(a_cached_list_registers_tools_without_a_spawn_until_the_first_call),
        cmocka_unit_test(the_first_call_revalidates_a_stale_cache),
        cmocka_unit_test(a_changed_server_config_ignores_the_cache),
        cmocka_unit_test(commands_list_with_ten_enabled_servers_spawns_none),
        cmocka_unit_test(a_server_that_changes_its_tools_is_re_registered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
