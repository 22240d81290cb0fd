/* test_terminal.c — the ACP terminal calls (proto/acp/terminal.c through
 * conn.c) driven by the fixture agent on the official SDK
 * (tests/acp-fixture-agent.mjs): output and exit status, truncation at a
 * character boundary, kill, confinement, the capability switch, a wait that
 * does not block other calls, a background writer that does not hold the
 * exit, and no command left running after release,
 * session close or dispose. */
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp_fixture.h"
#include "proto/acp/conn.h"

typedef struct fx {
    char *home;
    cdsh_acp_conn *c;
    char *sid;
    pthread_mutex_t mu;
    char text[65536];
} fx;

static void on_upd(void *ud, cdsh_acp_update_kind kind, const char *name, const json_t *u)
{
    (void)name;
    fx *f = ud;
    if (kind != CDSH_ACP_UPDATE_AGENT_MESSAGE_CHUNK)
        return;
    const char *t = json_string_value(json_object_get(json_object_get(u, "content"), "text"));
    pthread_mutex_lock(&f->mu);
    if (t)
        strncat(f->text, t, sizeof f->text - strlen(f->text) - 1);
    pthread_mutex_unlock(&f->mu);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    pthread_mutex_init(&f->mu, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cdsh_acp_conn_free(f->c);
    free(f->sid);
    pthread_mutex_destroy(&f->mu);
    cdsh_test_home_free(f->home);
    free(f);
    return 0;
}

static void open_agent(fx *f, bool terminal)
{
    /* The fixture agent runs on the ACP SDK from tests/node_modules (npm ci,
     * scripts/bootstrap.sh): without it the test fails saying so. */
    if (access(CDSH_SOURCE_DIR "/tests/node_modules/@agentclientprotocol/sdk", R_OK) != 0)
        fail_msg("%s is missing: run scripts/bootstrap.sh (npm ci in tests/)",
                 CDSH_SOURCE_DIR "/tests/node_modules/@agentclientprotocol/sdk");
    const char *argv[] = {"/usr/bin/node", CDSH_SOURCE_DIR "/tests/acp-fixture-agent.mjs", NULL};
    cdsh_acp_conn_opts o = {.name = "sdk",
                            .argv = argv,
                            .cwd = f->home,
                            .init_timeout_ms = cdsh_test_scale_ms(30000),
                            .request_timeout_ms = cdsh_test_scale_ms(60000),
                            .dispose_grace_ms = 2000,
                            .fs_read = true,
                            .fs_write = true,
                            .terminal = terminal};
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_conn_open(&o, &f->c, &err), 0);
    cdsh_acp_session_handlers h = {on_upd, NULL, f};
    assert_int_equal(
        cdsh_acp_conn_session_open(f->c, CDSH_ACP_OPEN_NEW, NULL, f->home, NULL, &h, &f->sid, &err),
        0);
}

/* Sends one prompt and returns the agent's reply text (borrowed, in f). */
static const char *ask(fx *f, const char *text)
{
    f->text[0] = '\0';
    json_t *p = json_pack("[{s:s,s:s}]", "type", "text", "text", text);
    cdsh_acp_prompt_result res;
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_conn_prompt(f->c, f->sid, p, NULL, NULL, &res, &err), 0);
    assert_string_equal(res.stop_reason, "end_turn");
    cdsh_acp_prompt_result_deinit(&res);
    json_decref(p);
    return f->text;
}

/* "terminal {...}" with a spec built by json_pack (stolen). */
static const char *run_terminal(fx *f, json_t *spec)
{
    char *js = json_dumps(spec, JSON_COMPACT);
    json_decref(spec);
    char *cmd = malloc(strlen(js) + 16);
    sprintf(cmd, "terminal %s", js);
    const char *out = ask(f, cmd);
    free(cmd);
    free(js);
    return out;
}

/* A /bin/sh command that writes its pid to <home>/<name> and then runs rest. */
static json_t *sh_spec(const char *script)
{
    return json_pack("{s:s,s:[s,s]}", "command", "/bin/sh", "args", "-c", script);
}

static int read_pid(fx *f, const char *name)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", f->home, name);
    for (int i = 0; i < 200; i++) {
        char *text = cdsh_test_read_file(path, NULL);
        int pid = text ? atoi(text) : 0;
        free(text);
        if (pid > 0)
            return pid;
        usleep(20 * 1000);
    }
    return 0;
}

/* A killed process may take a moment to be reaped by its parent. */
static bool gone_soon(int pid)
{
    for (int i = 0; i < 250 && acp_pid_alive(pid); i++)
        usleep(20 * 1000);
    return !acp_pid_alive(pid);
}

static void terminal_reports_output_and_exit_code(void **state)
{
    fx *f = *state;
    open_agent(f, true);
    assert_non_null(strstr(ask(f, "caps"), "\"terminal\":true,"));
    const char *out = run_terminal(f, sh_spec("echo out; echo err >&2; exit 3"));
    assert_non_null(strstr(out, "created: term-1\n"));
    assert_non_null(strstr(out, "\nwait: {\"exitCode\":3,\"signal\":null}\n"));
    assert_non_null(
        strstr(out, "\"truncated\":false,\"exitStatus\":{\"exitCode\":3,\"signal\":null}"));
    /* stdout and stderr both reach the output (in arrival order). */
    assert_true(strstr(out, "out\\n") && strstr(out, "err\\n"));
    assert_non_null(strstr(out, "\nrelease: {}"));
    assert_int_equal(cdsh_acp_conn_terminal_count(f->c), 0);
    json_t *cb = cdsh_acp_conn_callbacks_dup(f->c);
    assert_int_equal(json_integer_value(json_object_get(cb, "terminal/create")), 1);
    assert_int_equal(json_integer_value(json_object_get(cb, "terminal/wait_for_exit")), 1);
    assert_int_equal(json_integer_value(json_object_get(cb, "terminal/output")), 1);
    assert_int_equal(json_integer_value(json_object_get(cb, "terminal/release")), 1);
    json_decref(cb);
    /* After release the id is gone; an id never issued is unknown too. */
    out = run_terminal(f, json_pack("{s:s,s:[s],s:[s,s,s]}", "command", "true", "args", "x",
                                    "steps", "release", "output", "kill@term-99"));
    assert_non_null(strstr(out, "release: {}\noutput: error -32002 Resource not found: unknown "
                                "terminal term-2\nkill: error -32002 Resource not found: unknown "
                                "terminal term-99"));
}

static void terminal_env_is_scrubbed_plus_requested_and_cwd_defaults_to_the_session(void **state)
{
    fx *f = *state;
    setenv("CDSH_TEST_TERMINAL_TOKEN", "must-not-leak", 1);
    open_agent(f, true);
    json_t *spec = sh_spec("echo \"$ACP_TERM_X/${CDSH_TEST_TERMINAL_TOKEN:-scrubbed}\"; pwd");
    json_object_set_new(spec, "env", json_pack("[{s:s,s:s}]", "name", "ACP_TERM_X", "value", "42"));
    const char *out = run_terminal(f, spec);
    char want[4400];
    snprintf(want, sizeof want, "\"output\":\"42/scrubbed\\n%s\\n\"", f->home);
    assert_non_null(strstr(out, want));
    unsetenv("CDSH_TEST_TERMINAL_TOKEN");
    /* A sub-directory of the session directory is fine. */
    char sub[4300];
    snprintf(sub, sizeof sub, "%s/sub", f->home);
    assert_int_equal(mkdir(sub, 0700), 0);
    out = run_terminal(f, json_pack("{s:s,s:s}", "command", "pwd", "cwd", "sub"));
    snprintf(want, sizeof want, "\"output\":\"%s\\n\"", sub);
    assert_non_null(strstr(out, want));
    /* Without args the command is a shell command line (Claude Code ACP
     * sends them so): redirection, ';' and variables work, in the session
     * directory. */
    out = run_terminal(f, json_pack("{s:s}", "command",
                                    "echo hi > made.txt; echo \"$((6*7))\"; cat made.txt; exit 4"));
    assert_non_null(strstr(out, "\"output\":\"42\\nhi\\n\""));
    assert_non_null(strstr(out, "\"exitCode\":4"));
    char made[4300];
    snprintf(made, sizeof made, "%s/made.txt", f->home);
    char *text = cdsh_test_read_file(made, NULL);
    assert_non_null(text);
    assert_string_equal(text, "hi\n");
    free(text);
    /* With args it is a program and its argv: no shell re-parses them, and
     * a program that does not exist is "not found". */
    out = run_terminal(f, json_pack("{s:s,s:[s]}", "command", "echo", "args", "$HOME; x"));
    assert_non_null(strstr(out, "\"output\":\"$HOME; x\\n\""));
    out = run_terminal(f, json_pack("{s:s,s:[s]}", "command", "echo hi; true", "args", "x"));
    assert_non_null(strstr(out, "create: error -32002"));
    assert_non_null(strstr(out, "echo hi; true"));
}

static void terminal_cwd_outside_the_session_is_refused(void **state)
{
    fx *f = *state;
    open_agent(f, true);
    const char *outside[] = {"/etc", "..", "sub/../../.."};
    for (size_t i = 0; i < 3; i++) {
        const char *out =
            run_terminal(f, json_pack("{s:s,s:s}", "command", "pwd", "cwd", outside[i]));
        assert_non_null(strstr(out, "create: error -32602 Permission denied"));
        assert_non_null(strstr(out, "is outside the session directory"));
    }
    char link[4300];
    snprintf(link, sizeof link, "%s/link", f->home);
    assert_int_equal(symlink("/etc", link), 0);
    const char *out = run_terminal(f, json_pack("{s:s,s:s}", "command", "pwd", "cwd", "link"));
    assert_non_null(strstr(out, "create: error -32602 Permission denied"));
    assert_int_equal(cdsh_acp_conn_terminal_count(f->c), 0);
}

static void terminal_output_is_truncated_from_the_front_at_a_character_boundary(void **state)
{
    fx *f = *state;
    open_agent(f, true);
    /* a b € c d is 7 bytes; the last 4 start inside the € (E2 82 AC). */
    json_t *spec = sh_spec("printf 'ab\\342\\202\\254cd'");
    json_object_set_new(spec, "outputByteLimit", json_integer(4));
    const char *out = run_terminal(f, spec);
    assert_non_null(strstr(out, "output: {\"output\":\"cd\",\"truncated\":true,"));
    spec = sh_spec("printf 'ab\\342\\202\\254cd'");
    json_object_set_new(spec, "outputByteLimit", json_integer(5));
    out = run_terminal(f, spec);
    assert_non_null(strstr(out, "output: {\"output\":\"€cd\",\"truncated\":true,"));
    /* Many chunks through the ring: only the newest bytes are kept. */
    spec = sh_spec("seq 1 200000");
    json_object_set_new(spec, "outputByteLimit", json_integer(14));
    out = run_terminal(f, spec);
    assert_non_null(strstr(out, "output: {\"output\":\"199999\\n200000\\n\",\"truncated\":true,"));
    spec = sh_spec("printf 'small'");
    json_object_set_new(spec, "outputByteLimit", json_integer(1000));
    out = run_terminal(f, spec);
    assert_non_null(strstr(out, "output: {\"output\":\"small\",\"truncated\":false,"));
    /* Bytes that are not UTF-8 arrive as U+FFFD, never as invalid JSON. */
    out = run_terminal(f, sh_spec("printf 'x\\377y'"));
    assert_non_null(strstr(out, "output: {\"output\":\"x\xef\xbf\xbdy\",\"truncated\":false,"));
}

static void terminal_kill_ends_a_long_runner_and_wait_does_not_block_other_calls(void **state)
{
    fx *f = *state;
    open_agent(f, true);
    json_t *spec = sh_spec("echo $$ > kill.pid; echo started; exec sleep 60");
    /* waitbg is pending while output and kill are answered. */
    json_object_set_new(
        spec, "steps",
        json_pack("[s,s,s,s,s,s]", "waitbg", "sleep:300", "output", "kill", "join", "output"));
    const char *out = run_terminal(f, spec);
    assert_non_null(strstr(out, "output: {\"output\":\"started\\n\",\"truncated\":false,"
                                "\"exitStatus\":null}\nkill: {}\njoin: {\"exitCode\":null,"
                                "\"signal\":\"SIGKILL\"}\noutput: {\"output\":\"started\\n\","
                                "\"truncated\":false,\"exitStatus\":{\"exitCode\":null,"
                                "\"signal\":\"SIGKILL\"}}"));
    int pid = read_pid(f, "kill.pid");
    assert_true(pid > 0);
    assert_true(gone_soon(pid));
    /* Killed but not released: the terminal is still held. */
    assert_int_equal(cdsh_acp_conn_terminal_count(f->c), 1);
}

/* The agent sends $/cancel_request for its pending wait_for_exit: the wait
 * is answered -32800 while the command keeps running (a kill ends it). */
static void a_cancelled_wait_is_answered_request_cancelled(void **state)
{
    fx *f = *state;
    open_agent(f, true);
    json_t *spec = sh_spec("echo $$ > wait.pid; exec sleep 60");
    json_object_set_new(
        spec, "steps", json_pack("[s,s,s,s,s]", "waitcancel", "output", "kill", "wait", "release"));
    const char *out = run_terminal(f, spec);
    assert_non_null(strstr(out, "waitcancel: error -32800 Request cancelled\n"
                                "output: {\"output\":\"\",\"truncated\":false,"
                                "\"exitStatus\":null}\nkill: {}\n"
                                "wait: {\"exitCode\":null,\"signal\":\"SIGKILL\"}\nrelease: {}"));
    int pid = read_pid(f, "wait.pid");
    assert_true(pid > 0);
    assert_true(gone_soon(pid));
    assert_int_equal(cdsh_acp_conn_terminal_count(f->c), 0);
}

/* The command exits while a background job it started keeps writing into
 * the same pipe: the wait is still answered with the command's status, and
 * release ends the job (same process group) instead of reading for ever. */
static void a_background_writer_does_not_hold_the_exit_or_the_release(void **state)
{
    fx *f = *state;
    open_agent(f, true);
    json_t *spec = sh_spec("yes spam & echo $! > spam.pid; exit 5");
    json_object_set_new(spec, "outputByteLimit", json_integer(64));
    const char *out = run_terminal(f, spec);
    assert_non_null(strstr(out, "created: term-1\nwait: {\"exitCode\":5,\"signal\":null}\n"));
    assert_non_null(strstr(out, "\"exitStatus\":{\"exitCode\":5,\"signal\":null}}\nrelease: {}"));
    int spam = read_pid(f, "spam.pid");
    assert_true(spam > 0);
    assert_true(gone_soon(spam));
    assert_int_equal(cdsh_acp_conn_terminal_count(f->c), 0);
}

static void terminal_calls_are_refused_when_disabled(void **state)
{
    fx *f = *state;
    open_agent(f, false);
    assert_non_null(strstr(ask(f, "caps"), "\"terminal\":false,"));
    const char *out = run_terminal(f, json_pack("{s:s}", "command", "true"));
    assert_non_null(strstr(out, "create: error -32601 Method not found: terminal/create"));
    assert_int_equal(cdsh_acp_conn_terminal_count(f->c), 0);
}

static void closing_the_session_or_the_connection_leaves_no_command_running(void **state)
{
    fx *f = *state;
    open_agent(f, true);
    json_t *spec = sh_spec("echo $$ > one.pid; sleep 60 & echo $! > bg.pid; exec sleep 60");
    json_object_set_new(spec, "steps", json_pack("[s]", "sleep:100"));
    const char *out = run_terminal(f, spec);
    assert_non_null(strstr(out, "created: term-1"));
    int one = read_pid(f, "one.pid"), bg = read_pid(f, "bg.pid");
    assert_true(one > 0 && bg > 0);
    assert_true(acp_pid_alive(one) && acp_pid_alive(bg));
    assert_int_equal(cdsh_acp_conn_terminal_count(f->c), 1);
    assert_int_equal(cdsh_acp_conn_session_release(f->c, f->sid, true, NULL), 0);
    assert_int_equal(cdsh_acp_conn_terminal_count(f->c), 0);
    /* The command and its background job (same process group) are gone. */
    assert_true(gone_soon(one));
    assert_true(gone_soon(bg));
    /* Disposing the engine kills what a live session still holds. */
    free(f->sid);
    f->sid = NULL;
    cdsh_acp_session_handlers h = {on_upd, NULL, f};
    assert_int_equal(
        cdsh_acp_conn_session_open(f->c, CDSH_ACP_OPEN_NEW, NULL, f->home, NULL, &h, &f->sid, NULL),
        0);
    spec = sh_spec("echo $$ > two.pid; exec sleep 60");
    json_object_set_new(spec, "steps", json_pack("[]"));
    run_terminal(f, spec);
    int two = read_pid(f, "two.pid");
    assert_true(two > 0 && acp_pid_alive(two));
    cdsh_acp_conn_free(f->c);
    f->c = NULL;
    assert_true(gone_soon(two));
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(terminal_reports_output_and_exit_code),
        T(terminal_env_is_scrubbed_plus_requested_and_cwd_defaults_to_the_session),
        T(terminal_cwd_outside_the_session_is_refused),
        T(terminal_output_is_truncated_from_the_front_at_a_character_boundary),
        T(terminal_kill_ends_a_long_runner_and_wait_does_not_block_other_calls),
        T(a_cancelled_wait_is_answered_request_cancelled),
        T(a_background_writer_does_not_hold_the_exit_or_the_release),
        T(terminal_calls_are_refused_when_disabled),
        T(closing_the_session_or_the_connection_leaves_no_command_running),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
