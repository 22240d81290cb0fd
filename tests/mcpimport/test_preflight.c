/* test_preflight.c — verdicts and reasons on hand-built IR with a fake
 * probe: PATH, runtimes, Docker, URLs, secrets, collisions, duplicates. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "plugins/mcpimport/preflight.h"

typedef struct fake {
    const char *const *on_path;
    bool docker;
} fake;

static bool found(void *ud, const char *cmd)
{
    const fake *f = ud;
    for (const char *const *p = f->on_path; *p; p++)
        if (strcmp(*p, cmd) == 0)
            return true;
    return false;
}

static bool docker(void *ud)
{
    return ((const fake *)ud)->docker;
}

static json_t *server(const char *name, const char *orig, const char *file, const char *transport,
                      const char *command, const char *url)
{
    json_t *prov = json_pack("{s:s, s:s, s:s}", "source", "claude", "file", file, "scope", "user");
    if (orig)
        json_object_set_new(prov, "originalName", json_string(orig));
    return json_pack("{s:s, s:s?, s:s?, s:s?, s:[], s:[], s:o}", "name", name, "transport",
                     transport, "command", command, "url", url, "unresolved", "warnings",
                     "provenance", prov);
}

static const char *verdict(const json_t *ir)
{
    return cdsh_mcpimport_verdict(ir);
}

static const json_t *reason(const json_t *ir, size_t i)
{
    return json_array_get(json_object_get(ir, "reasons"), i);
}

static void assert_reason(const json_t *ir, size_t i, const char *level, const char *code,
                          const char *message)
{
    const json_t *r = reason(ir, i);
    assert_non_null(r);
    assert_string_equal(json_string_value(json_object_get(r, "level")), level);
    assert_string_equal(json_string_value(json_object_get(r, "code")), code);
    assert_string_equal(json_string_value(json_object_get(r, "message")), message);
}

static void machine_checks_block_with_the_reason(void **state)
{
    (void)state;
    static const char *const path[] = {"node", "docker", NULL};
    fake f = {path, false};
    cdsh_mcpimport_probe probe = {found, docker, &f};
    json_t *servers = json_pack("[o, o, o, o, o]", server("ok", NULL, "/a", "stdio", "node", NULL),
                                server("gone", NULL, "/a", "stdio", "nope", NULL),
                                server("npxsrv", NULL, "/a", "stdio", "npx", NULL),
                                server("dock", NULL, "/a", "stdio", "docker", NULL),
                                server("abs", NULL, "/a", "stdio", "/opt/x/bin/srv", NULL));
    cdsh_mcpimport_preflight(servers, NULL, &probe);
    assert_string_equal(verdict(json_array_get(servers, 0)), "ok");
    assert_int_equal(json_array_size(json_object_get(json_array_get(servers, 0), "reasons")), 0);
    assert_reason(json_array_get(servers, 1), 0, "blocked", "COMMAND_NOT_FOUND",
                  "command \"nope\" is not on PATH");
    assert_reason(json_array_get(servers, 2), 0, "blocked", "RUNTIME_MISSING",
                  "npx is not installed (not on PATH): install Node.js");
    assert_reason(json_array_get(servers, 3), 0, "blocked", "DOCKER_UNREACHABLE",
                  "the Docker daemon is not reachable (docker info failed); start Docker first");
    assert_reason(json_array_get(servers, 4), 0, "blocked", "COMMAND_NOT_FOUND",
                  "command \"/opt/x/bin/srv\" does not exist or is not executable");
    for (size_t i = 1; i < 5; i++)
        assert_string_equal(verdict(json_array_get(servers, i)), "blocked");
    json_decref(servers);
}

static void transports_and_urls_are_checked(void **state)
{
    (void)state;
    json_t *servers = json_pack(
        "[o, o, o, o]", server("sse", NULL, "/a", NULL, NULL, NULL),
        server("bad", NULL, "/a", "streamable-http", NULL, "ftp://x/y"),
        server("good", NULL, "/a", "streamable-http", NULL, "https://mcp.example.com/mcp"),
        server("ref", NULL, "/a", "streamable-http", NULL, "${MCP_URL}"));
    cdsh_mcpimport_preflight(servers, NULL, NULL);
    assert_reason(json_array_get(servers, 0), 0, "blocked", "UNSUPPORTED_TRANSPORT",
                  "no supported transport (DSH's client speaks stdio and streamable-http)");
    assert_reason(json_array_get(servers, 1), 0, "blocked", "INVALID_URL",
                  "url \"ftp://x/y\" is not an http(s) URL");
    assert_string_equal(verdict(json_array_get(servers, 2)), "ok");
    assert_string_equal(verdict(json_array_get(servers, 3)), "ok");
    json_decref(servers);
}

static void secrets_are_judged_by_where_they_came_from(void **state)
{
    (void)state;
    json_t *ir = server("s", NULL, "/a", "streamable-http", NULL, "https://h/mcp");
    json_t *un = json_object_get(ir, "unresolved");
    json_array_append_new(un, json_pack("{s:s, s:s, s:n, s:s, s:s}", "kind", "env", "envVar", "A",
                                        "fallback", "field", "env.A", "resolvedFrom", "env"));
    json_array_append_new(un, json_pack("{s:s, s:s, s:n, s:s, s:n}", "kind", "header", "envVar",
                                        "B", "fallback", "field", "headers.X", "resolvedFrom"));
    json_array_append_new(un,
                          json_pack("{s:s, s:s, s:s, s:s, s:s}", "kind", "env", "envVar", "C",
                                    "fallback", "d", "field", "env.C", "resolvedFrom", "default"));
    json_array_append_new(un, json_pack("{s:s, s:s, s:n, s:s, s:b}", "kind", "header", "envVar",
                                        "D", "fallback", "field", "headers.Y", "optional", 1));
    json_t *servers = json_pack("[o]", ir);
    cdsh_mcpimport_preflight(servers, NULL, NULL);
    assert_int_equal(json_array_size(json_object_get(ir, "reasons")), 3);
    assert_reason(ir, 0, "blocked", "UNRESOLVED_SECRET",
                  "${B} (headers.X) is not set: export B, or store it in the keyring and allow it "
                  "(keyringAllow)");
    /* what the source tool itself would do: info */
    assert_reason(ir, 1, "info", "DEFAULT_USED",
                  "${C} (env.C) is not set; its default is used, as Claude Code does");
    assert_reason(ir, 2, "info", "OPTIONAL_UNSET",
                  "${D} (headers.Y) is not set; headers.Y is left out, as Codex does");
    assert_string_equal(verdict(ir), "blocked");
    json_decref(servers);
}

static void collisions_and_duplicates_block_the_later_source(void **state)
{
    (void)state;
    json_t *servers = json_pack(
        "[o, o, o, o]", server("a-b", NULL, "/first", "streamable-http", NULL, "https://h/"),
        server("a-b", "a b", "/second", "streamable-http", NULL, "https://h/"),
        server("ctx", NULL, "/project/.mcp.json", "streamable-http", NULL, "https://h/"),
        server("ctx", NULL, "/home/.claude.json", "streamable-http", NULL, "https://h/"));
    cdsh_mcpimport_preflight(servers, NULL, NULL);
    assert_string_equal(verdict(json_array_get(servers, 0)), "ok");
    assert_reason(json_array_get(servers, 1), 0, "blocked", "NAME_COLLISION",
                  "\"a b\" and \"a-b\" (/first (claude, user)) both become server \"a-b\"");
    assert_reason(json_array_get(servers, 2), 0, "info", "DUPLICATE_SERVER",
                  "server \"ctx\" is also defined in /home/.claude.json (claude, user), which this "
                  "one shadows (as in Claude Code)");
    assert_reason(json_array_get(servers, 3), 0, "blocked", "DUPLICATE_SERVER",
                  "server \"ctx\" is also defined in /project/.mcp.json (claude, user), which "
                  "takes precedence");
    json_decref(servers);
}

static void commands_are_judged(void **state)
{
    (void)state;
    json_t *cmds = json_pack(
        "[{s:s, s:s, s:s, s:[], s:[], s:{s:s, s:s, s:s}},"
        " {s:s, s:s, s:s, s:[{s:s, s:s}], s:[s], s:{s:s, s:s, s:s}},"
        " {s:s, s:s, s:s, s:[], s:[], s:{s:s, s:s, s:s}}]",
        "name", "go", "originalName", "go", "prompt", "Go.", "unsupported", "warnings",
        "provenance", "source", "claude", "file", "/1", "scope", "user", "name", "x-y",
        "originalName", "x:y", "prompt", "Do !`ls`", "unsupported", "feature", "shell", "text",
        "ls", "warnings", "model \"haiku\" is not applied; the session's model is used",
        "provenance", "source", "claude", "file", "/2", "scope", "user", "name", "go",
        "originalName", "Go", "prompt", " \n", "unsupported", "warnings", "provenance", "source",
        "codex", "file", "/3", "scope", "user");
    cdsh_mcpimport_preflight(NULL, cmds, NULL);
    assert_string_equal(verdict(json_array_get(cmds, 0)), "ok");
    assert_reason(json_array_get(cmds, 1), 0, "warn", "UNSUPPORTED_FEATURE",
                  "!`cmd` \"ls\" is not supported");
    assert_reason(json_array_get(cmds, 1), 1, "warn", "SEMANTIC_LOSS",
                  "model \"haiku\" is not applied; the session's model is used");
    assert_string_equal(verdict(json_array_get(cmds, 1)), "warn");
    assert_reason(json_array_get(cmds, 2), 0, "blocked", "EMPTY_PROMPT",
                  "the command has no prompt text");
    assert_reason(json_array_get(cmds, 2), 1, "blocked", "NAME_COLLISION",
                  "\"Go\" and \"go\" (/1 (claude, user)) both become command \"go\"");
    json_decref(cmds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(machine_checks_block_with_the_reason),
        cmocka_unit_test(transports_and_urls_are_checked),
        cmocka_unit_test(secrets_are_judged_by_where_they_came_from),
        cmocka_unit_test(collisions_and_duplicates_block_the_later_source),
        cmocka_unit_test(commands_are_judged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
