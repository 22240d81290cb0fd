/* test_child_env.c — every spawner applies base/env_policy.h: an MCP stdio
 * server (`cdsh mcp tools --server`), an ACP agent (conn.c), an ACP terminal
 * command (terminal.c) and the browser `cdsh web` opens each print their
 * environment, and none of them sees the credentials of the parent (the
 * leaks issue 23 measured: GITHUB_PAT, DATABASE_URL, *_AUTH, *CREDENTIALS,
 * URL userinfo) or CDSH_* settings — while values their configuration sets
 * explicitly do reach them. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/testkit.h"

#include "proto/acp/conn.h"
#include "proto/acp/terminal.h"
#include "proto/jsonrpc.h"

static const char *const leaks[][2] = {
    {"GITHUB_PAT", "leak-pat"},
    {"DATABASE_URL", "postgres://db.example/leak-db"},
    {"NPM_X_AUTH", "leak-auth"},
    {"AWS_CREDENTIALS", "leak-cred"},
    {"OPENAI_API_KEY", "leak-key"},
    {"T23_MIRROR", "https://user:leak-userinfo@mirror.example/"},
    {"CDSH_T23_SETTING", "leak-own"},
};

static void set_leaks(void)
{
    for (size_t i = 0; i < sizeof leaks / sizeof *leaks; i++)
        setenv(leaks[i][0], leaks[i][1], 1);
    setenv("T23_PLAIN", "plain-passes", 1);
}

static void unset_leaks(void)
{
    for (size_t i = 0; i < sizeof leaks / sizeof *leaks; i++)
        unsetenv(leaks[i][0]);
    unsetenv("T23_PLAIN");
}

/* The child's env dump holds the plain variable and none of the leaks. */
static void check_env_text(const char *who, const char *text)
{
    if (!text)
        fail_msg("%s: no environment captured", who);
    if (!strstr(text, "T23_PLAIN=plain-passes"))
        fail_msg("%s: the plain variable did not reach the child:\n%s", who, text);
    /* "leak-": every value above; plain "leak" would match ASAN_OPTIONS's detect_leaks. */
    if (strstr(text, "leak-"))
        fail_msg("%s: a credential reached the child:\n%s", who, text);
    for (size_t i = 0; i < sizeof leaks / sizeof *leaks; i++) {
        char name[64];
        snprintf(name, sizeof name, "\n%s=", leaks[i][0]);
        if (strstr(text, name) || strncmp(text, name + 1, strlen(name + 1)) == 0)
            fail_msg("%s: %s reached the child", who, leaks[i][0]);
    }
}

/* Waits (scaled) for path to exist; its text (owned) or NULL. */
static char *wait_file(const char *path, int ms)
{
    int64_t budget = cdsh_test_scale_ms(ms);
    for (int64_t waited = 0; waited < budget; waited += 20) {
        struct stat st;
        if (stat(path, &st) == 0 && st.st_size > 0)
            return cdsh_test_read_file(path, NULL);
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void mcp_stdio_server(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *peer = cdsh_test_peer_path_dup("mcp_peer");
    char dump[4200], server[9000];
    snprintf(dump, sizeof dump, "%s/mcp-env.txt", home);
    snprintf(server, sizeof server, "/bin/sh -c 'env > %s; exec %s'", dump, peer);
    set_leaks();
    char *out = NULL, *err = NULL;
    int rc = cdsh_test_run_cdsh(NULL, &out, &err, "mcp", "tools", "--server", server, "--env",
                                "EXPLICIT_TOKEN=named-by-config", NULL);
    unset_leaks();
    if (rc != 0)
        fail_msg("cdsh mcp tools: exit %d\n%s", rc, err ? err : "");
    char *text = cdsh_test_read_file(dump, NULL);
    check_env_text("MCP stdio server", text);
    assert_non_null(strstr(text, "EXPLICIT_TOKEN=named-by-config\n"));
    free(text);
    free(out);
    free(err);
    free(peer);
    cdsh_test_home_free(home);
}

static void acp_agent(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *peer = cdsh_test_peer_path_dup("acp_agent");
    char dump[4200], script[9000];
    snprintf(dump, sizeof dump, "%s/acp-env.txt", home);
    snprintf(script, sizeof script, "env > '%s'; exec '%s'", dump, peer);
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    const char *set[] = {"AGENT_API_KEY=named-by-config", NULL};
    set_leaks();
    cdsh_acp_conn_opts o = {.name = "envdump",
                            .argv = argv,
                            .env_set = set,
                            .cwd = home,
                            .init_timeout_ms = cdsh_test_scale_ms(30000)};
    cdsh_acp_conn *c = NULL;
    cdsh_error err = {0};
    int rc = cdsh_acp_conn_open(&o, &c, &err);
    unset_leaks();
    if (rc != 0)
        fail_msg("acp open: %s", err.message);
    char *text = cdsh_test_read_file(dump, NULL);
    check_env_text("ACP agent", text);
    assert_non_null(strstr(text, "AGENT_API_KEY=named-by-config\n"));
    free(text);
    cdsh_acp_conn_free(c);
    free(peer);
    cdsh_test_home_free(home);
}

/* The terminal side of a connection: terminal.c behind a JSON-RPC peer. */
typedef struct term_side {
    cdsh_acp_terminals *t;
    const char *cwd;
} term_side;

static void on_terminal(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)peer;
    term_side *s = arg;
    cdsh_acp_terminals_handle(s->t, req, "s1", s->cwd);
}

static void acp_terminal(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    int a[2], b[2];
    assert_int_equal(pipe(a), 0);
    assert_int_equal(pipe(b), 0);
    cdsh_jsonrpc_config cfg = {.name = "client", .close_fds = true};
    cdsh_jsonrpc *client = cdsh_jsonrpc_new(a[0], b[1], &cfg, NULL);
    cfg.name = "agent";
    cdsh_jsonrpc *agent = cdsh_jsonrpc_new(b[0], a[1], &cfg, NULL);
    assert_non_null(client);
    assert_non_null(agent);
    term_side side = {.t = cdsh_acp_terminals_new(), .cwd = home};
    const char *methods[] = {"terminal/create", "terminal/wait_for_exit", "terminal/output",
                             "terminal/release"};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(cdsh_jsonrpc_handle(client, methods[i], on_terminal, &side, NULL), 0);
    assert_int_equal(cdsh_jsonrpc_start(client, NULL), 0);
    assert_int_equal(cdsh_jsonrpc_start(agent, NULL), 0);
    set_leaks();
    json_t *res = NULL;
    cdsh_error err = {0};
    int64_t budget = cdsh_test_scale_ms(20000);
    /* The agent names a variable for its command: that one gets through. */
    json_t *create = json_pack("{s:s,s:s,s:[],s:[{s:s,s:s}]}", "sessionId", "s1", "command",
                               "/usr/bin/env", "args", "env", "name", "TERM_TOKEN", "value",
                               "named-by-agent");
    int rc = cdsh_jsonrpc_call(agent, "terminal/create", create, budget, NULL, &res, NULL, &err);
    json_decref(create);
    unset_leaks();
    if (rc != 0)
        fail_msg("terminal/create: %s", err.message);
    char *tid = strdup(json_string_value(json_object_get(res, "terminalId")));
    json_decref(res);
    json_t *which = json_pack("{s:s,s:s}", "sessionId", "s1", "terminalId", tid);
    rc = cdsh_jsonrpc_call(agent, "terminal/wait_for_exit", which, budget, NULL, &res, NULL, &err);
    assert_int_equal(rc, 0);
    json_decref(res);
    rc = cdsh_jsonrpc_call(agent, "terminal/output", which, budget, NULL, &res, NULL, &err);
    json_decref(which);
    assert_int_equal(rc, 0);
    const char *text = json_string_value(json_object_get(res, "output"));
    check_env_text("ACP terminal", text);
    assert_non_null(strstr(text, "TERM_TOKEN=named-by-agent\n"));
    json_decref(res);
    free(tid);
    cdsh_jsonrpc_free(agent);
    cdsh_jsonrpc_free(client);
    cdsh_acp_terminals_free(side.t);
    cdsh_test_home_free(home);
}

static void web_browser_opener(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char bin[4200], fake[4300], dump[4300], path[8192];
    snprintf(bin, sizeof bin, "%s/fakebin", home);
    assert_int_equal(mkdir(bin, 0700), 0);
    snprintf(fake, sizeof fake, "%s/xdg-open", bin);
    snprintf(dump, sizeof dump, "%s/browser-env.txt", home);
    char script[16384];
    snprintf(script, sizeof script, "#!/bin/sh\nenv > '%s.tmp' && mv '%s.tmp' '%s'\n", dump, dump,
             dump);
    cdsh_test_write_file(fake, script);
    assert_int_equal(chmod(fake, 0700), 0);
    const char *old_path = getenv("PATH");
    snprintf(path, sizeof path, "%s:%s", bin, old_path ? old_path : "/usr/bin:/bin");
    set_leaks();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("PATH", path, 1);
        setenv("DISPLAY", ":t23", 1);
        int fd = open("/dev/null", O_RDWR);
        dup2(fd, 0);
        dup2(fd, 1);
        execl(CDSH_BINARY, "cdsh", "web", "--port", "0", (char *)NULL);
        _exit(127);
    }
    unset_leaks();
    char *text = wait_file(dump, 30000);
    kill(pid, SIGTERM);
    int st = 0;
    waitpid(pid, &st, 0);
    check_env_text("browser opener", text);
    free(text);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mcp_stdio_server),
        cmocka_unit_test(acp_agent),
        cmocka_unit_test(acp_terminal),
        cmocka_unit_test(web_browser_opener),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
