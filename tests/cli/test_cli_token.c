/* test_cli_token.c — access tokens stay out of the command line: `cdsh web`
 * and `cdsh mcp --http` take them from --token-file (a file or stdin) or the
 * environment, and a --token given anyway is overwritten in the process's
 * own argv, so /proc/PID/cmdline (what ps shows) no longer holds it. */
#include "support/testkit.h"

#include <curl/curl.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(web_token_given_with_token_is_hidden_from_the_command_line),
        cmocka_unit_test(web_token_comes_from_a_file_stdin_or_the_environment),
        cmocka_unit_test(mcp_http_token_is_hidden_and_can_come_from_a_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
