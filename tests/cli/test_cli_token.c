/* test_cli_token.c — access tokens stay out of the command line: `cdsh web`
 * and `cdsh mcp --http` take them from --token-file (a file or stdin) or the
 * environment, and a --token given anyway is overwritten in the process's
 * own argv, so /proc/PID/cmdline (what ps shows) no longer holds it. */
#include "support/testkit.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/json.h"

#define SECRET "tok-5f3a9c1e77d2"

typedef struct proc {
    pid_t pid;
    FILE *out;
    unsigned port;
} proc;

/* Starts cdsh with args (NULL-terminated), stdin_text on its stdin, and
 * reads the JSON line it prints once listening. */
static void start(proc *p, const char *stdin_text, const char *const *args)
{
    int in[2], out[2];
    assert_int_equal(pipe(in), 0);
    assert_int_equal(pipe(out), 0);
    p->pid = fork();
    assert_true(p->pid >= 0);
    if (p->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        const char *argv[16] = {CDSH_BINARY};
        for (int i = 0; args[i] && i < 14; i++)
            argv[i + 1] = args[i];
        execv(CDSH_BINARY, (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    if (stdin_text)
        assert_true(write(in[1], stdin_text, strlen(stdin_text)) == (ssize_t)strlen(stdin_text));
    close(in[1]);
    p->out = fdopen(out[0], "r");
    char line[1024];
    assert_non_null(fgets(line, sizeof line, p->out));
    json_t *v = json_loads(line, 0, NULL);
    assert_non_null(v);
    p->port = (unsigned)json_integer_value(json_object_get(v, "port"));
    json_decref(v);
    assert_true(p->port > 0);
}

static void stop(proc *p)
{
    kill(p->pid, SIGTERM);
    int st;
    waitpid(p->pid, &st, 0);
    fclose(p->out);
}

static char *cmdline_dup(pid_t pid, size_t *len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    char *raw = cdsh_test_read_file(path, len);
    assert_non_null(raw);
    return raw;
}

static bool contains(const char *buf, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(buf + i, needle, n) == 0)
            return true;
    return false;
}

static size_t discard(char *ptr, size_t size, size_t n, void *ud)
{
    (void)ptr, (void)ud;
    return size * n;
}

static long get_status(unsigned port, const char *path, const char *auth)
{
    CURL *c = curl_easy_init();
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, path);
    struct curl_slist *h = auth ? curl_slist_append(NULL, auth) : NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return status;
}

static void web_token_given_with_token_is_hidden_from_the_command_line(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    proc p;
    start(&p, NULL,
          (const char *const[]){"web", "--no-open", "--json", "--port", "0", "--token", SECRET,
                                NULL});
    size_t len = 0;
    char *cmd = cmdline_dup(p.pid, &len);
    assert_true(contains(cmd, len, "--token"));
    assert_false(contains(cmd, len, SECRET));
    assert_false(contains(cmd, len, "tok-"));
    free(cmd);
    /* ... and it is still the token the server wants. */
    assert_int_equal(get_status(p.port, "/api/sessions", "Authorization: Bearer " SECRET), 200);
    assert_int_equal(get_status(p.port, "/api/sessions", "Authorization: Bearer ***"), 401);
    stop(&p);
    cdsh_test_home_free(home);
}

static void web_token_comes_from_a_file_stdin_or_the_environment(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char file[512];
    snprintf(file, sizeof file, "%s/token", home);
    cdsh_test_write_file(file, SECRET "\n");
    proc p;
    start(&p, NULL,
          (const char *const[]){"web", "--no-open", "--json", "--port", "0", "--token-file", file,
                                NULL});
    assert_int_equal(get_status(p.port, "/api/sessions", "Authorization: Bearer " SECRET), 200);
    stop(&p);
    start(&p, SECRET "\n",
          (const char *const[]){"web", "--no-open", "--json", "--port", "0", "--token-file", "-",
                                NULL});
    assert_int_equal(get_status(p.port, "/api/sessions", "Authorization: Bearer " SECRET), 200);
    stop(&p);
    setenv("CDSH_WEB_TOKEN", SECRET, 1);
    start(&p, NULL, (const char *const[]){"web", "--no-open", "--json", "--port", "0", NULL});
    unsetenv("CDSH_WEB_TOKEN");
    assert_int_equal(get_status(p.port, "/api/sessions", "Authorization: Bearer " SECRET), 200);
    stop(&p);
    /* Both at once, or an empty file, is an error before anything starts. */
    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "web", "--no-open", "--token", "a",
                                        "--token-file", file, NULL),
                     2);
    assert_non_null(strstr(err, "not both"));
    free(err);
    cdsh_test_write_file(file, "\n");
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, NULL, &err, "web", "--no-open", "--token-file", file, NULL), 2);
    assert_non_null(strstr(err, "printable characters"));
    free(err);
    cdsh_test_home_free(home);
}

static void mcp_http_token_is_hidden_and_can_come_from_a_file(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    proc p;
    start(&p, NULL,
          (const char *const[]){"mcp", "--fixture", "--http", "0", "--json", "--token", SECRET,
                                NULL});
    size_t len = 0;
    char *cmd = cmdline_dup(p.pid, &len);
    assert_false(contains(cmd, len, SECRET));
    free(cmd);
    assert_int_equal(get_status(p.port, "/mcp", "Authorization: bearer wrong"), 401);
    stop(&p);
    char file[512];
    snprintf(file, sizeof file, "%s/token", home);
    cdsh_test_write_file(file, SECRET);
    start(&p, NULL,
          (const char *const[]){"mcp", "--fixture", "--http", "0", "--json", "--token-file", file,
                                NULL});
    /* A GET with the right token gets past auth (405/406/400 by MCP rules, not 401). */
    long st = get_status(p.port, "/mcp", "Authorization: Bearer " SECRET);
    assert_true(st != 401 && st != 0);
    assert_int_equal(get_status(p.port, "/mcp", "Authorization: Bearer nope"), 401);
    stop(&p);
    cdsh_test_home_free(home);
}

/* ---- the client's --env and --header values (issue 23) ---- */

#define HDR_SECRET "hdr-5e11c0de"
#define ENV_SECRET "env-7c0d3a11"

static bool proc_alive(pid_t pid)
{
    int st;
    return waitpid(pid, &st, WNOHANG) == 0;
}

static void mcp_client_env_and_header_values_are_hidden_from_the_command_line(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    proc srv;
    start(&srv, NULL,
          (const char *const[]){"mcp", "--fixture", "--http", "0", "--json", "--token", SECRET,
                                NULL});
    char url[128], sleep_args[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/mcp", srv.port);
    int sleep_ms = cdsh_test_scale_ms(4000);
    snprintf(sleep_args, sizeof sleep_args, "{\"ms\":%d}", sleep_ms);
    setenv("T23_NAMED_TOKEN", "named-" ENV_SECRET, 1);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open("/dev/null", O_RDWR);
        dup2(fd, 1);
        execl(CDSH_BINARY, "cdsh", "mcp", "call", "--url", url, "--header",
              "Authorization: Bearer " SECRET, "--header", "X-Team: " HDR_SECRET, "--env",
              "API_KEY=" ENV_SECRET, "--env", "T23_NAMED_TOKEN", "sleep", sleep_args, "--json",
              (char *)NULL);
        _exit(127);
    }
    unsetenv("T23_NAMED_TOKEN");
    /* cdsh hides the values as it parses its options, long before the call
     * ends: poll until they are gone while it is still running. */
    bool hidden = false, alive = true;
    size_t len = 0;
    char *cmd = NULL;
    for (int waited = 0; !hidden && alive && waited < sleep_ms; waited += 10) {
        free(cmd);
        cmd = cmdline_dup(pid, &len);
        /* Right after fork the child still shows this test's command line. */
        hidden = contains(cmd, len, "--url") && !contains(cmd, len, SECRET) &&
                 !contains(cmd, len, HDR_SECRET) && !contains(cmd, len, ENV_SECRET);
        alive = proc_alive(pid);
        if (!hidden)
            usleep(10000);
    }
    if (!hidden) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        stop(&srv); /* a server left running would hold ctest's pipes */
        fail_msg("a --header or --env value is still in /proc/%d/cmdline", (int)pid);
    }
    assert_true(alive);
    /* Names stay, so ps still says what was given. */
    assert_true(contains(cmd, len, "Authorization: ***"));
    assert_true(contains(cmd, len, "X-Team: ***"));
    assert_true(contains(cmd, len, "API_KEY=***"));
    assert_true(contains(cmd, len, "T23_NAMED_TOKEN"));
    free(cmd);
    /* ... and the header still carried the real token: the call succeeds. */
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    stop(&srv);
    cdsh_test_home_free(home);
}

static void mcp_client_env_and_headers_come_from_files(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *peer = cdsh_test_peer_path_dup("mcp_peer");
    char envf[512], hdrf[512], dump[512], server[4096];
    snprintf(envf, sizeof envf, "%s/server.env", home);
    snprintf(hdrf, sizeof hdrf, "%s/headers", home);
    snprintf(dump, sizeof dump, "%s/env.txt", home);
    cdsh_test_write_file(envf, "# the server's credentials\r\nFILE_TOKEN=from-file\r\n\r\n"
                               "T23_NAMED_TOKEN\nPLAIN=a=b\n");
    snprintf(server, sizeof server, "/bin/sh -c 'env > %s; exec %s'", dump, peer);
    setenv("T23_NAMED_TOKEN", "named-in-env", 1);
    setenv("T23_UNNAMED_TOKEN", "not-named", 1);
    int rc = cdsh_test_run_cdsh(NULL, NULL, NULL, "mcp", "tools", "--server", server,
                                "--env-file", envf, NULL);
    unsetenv("T23_NAMED_TOKEN");
    unsetenv("T23_UNNAMED_TOKEN");
    assert_int_equal(rc, 0);
    char *text = cdsh_test_read_file(dump, NULL);
    assert_non_null(text);
    assert_non_null(strstr(text, "\nFILE_TOKEN=from-file\n"));
    assert_non_null(strstr(text, "\nT23_NAMED_TOKEN=named-in-env\n"));
    assert_non_null(strstr(text, "\nPLAIN=a=b\n"));
    assert_null(strstr(text, "not-named"));
    assert_null(strstr(text, "\r"));
    free(text);

    /* Headers from a file and from stdin reach an HTTP server. */
    proc srv;
    start(&srv, NULL,
          (const char *const[]){"mcp", "--fixture", "--http", "0", "--json", "--token", SECRET,
                                NULL});
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/mcp", srv.port);
    cdsh_test_write_file(hdrf, "Authorization: Bearer " SECRET "\n");
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "mcp", "tools", "--url", url,
                                        "--header-file", hdrf, NULL),
                     0);
    assert_non_null(strstr(out, "sleep"));
    free(out);
    assert_int_equal(cdsh_test_run_cdsh("Authorization: Bearer " SECRET "\n", NULL, NULL, "mcp",
                                        "tools", "--url", url, "--header-file", "-", NULL),
                     0);
    cdsh_test_write_file(hdrf, "Authorization: Bearer wrong\n");
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, NULL, NULL, "mcp", "tools", "--url", url, "--header-file", hdrf,
                           NULL),
        1);
    stop(&srv);

    /* Mistakes are usage errors that never echo a value. */
    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "mcp", "tools", "--server", server,
                                        "--env", "T23_NOT_SET_ANYWHERE", NULL),
                     2);
    assert_string_equal(err, "cdsh mcp: --env T23_NOT_SET_ANYWHERE: T23_NOT_SET_ANYWHERE is not "
                             "set in the environment\n");
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "mcp", "tools", "--server", server,
                                        "--env", "=" ENV_SECRET, NULL),
                     2);
    assert_null(strstr(err, ENV_SECRET));
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "mcp", "tools", "--server", server,
                                        "--env-file", "-", "--header-file", "-", NULL),
                     2);
    assert_non_null(strstr(err, "can read stdin"));
    free(err);
    cdsh_test_write_file(envf, "=nameless\n");
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "mcp", "tools", "--server", server,
                                        "--env-file", envf, NULL),
                     2);
    assert_null(strstr(err, "nameless"));
    free(err);
    free(peer);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(web_token_given_with_token_is_hidden_from_the_command_line),
        cmocka_unit_test(web_token_comes_from_a_file_stdin_or_the_environment),
        cmocka_unit_test(mcp_http_token_is_hidden_and_can_come_from_a_file),
        cmocka_unit_test(mcp_client_env_and_header_values_are_hidden_from_the_command_line),
        cmocka_unit_test(mcp_client_env_and_headers_come_from_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
