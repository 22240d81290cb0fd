/* test_prompt_signals.c — `cdsh acp prompt` ends on a signal while the agent
 * streams: SIGTERM, SIGHUP or a closed stdout mid-stream cancel the turn,
 * cdsh exits 1 and leaves no agent running, even when the agent keeps
 * streaming and never answers session/cancel (the turn is given up after the
 * engine's cancelGraceMs), and SIGTERM while the agent starts ends the
 * handshake at once. The fixture agent's stream-forever[-hard] streams
 * a chunk every 20 ms until cancelled (or forever). Waits are bounded by
 * budgets scaled with CDSH_TEST_TIMEOUT_SCALE; nothing asserts a duration. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "acp/acp_fixture.h"
#include "support/testkit.h"
#include "support/timing.h"

typedef struct run {
    pid_t pid;
    int out, err; /* read ends of the child's stdout / stderr */
    char out_text[65536], err_text[65536];
    size_t out_len, err_len;
} run;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Starts cdsh with args (NULL-terminated, after "cdsh") with pipes on
 * stdout and stderr. */
static void start_argv(run *r, const char *const *args)
{
    int o[2], e[2];
    assert_int_equal(pipe(o), 0);
    assert_int_equal(pipe(e), 0);
    memset(r, 0, sizeof *r);
    r->pid = fork();
    assert_true(r->pid >= 0);
    if (r->pid == 0) {
        dup2(o[1], 1);
        dup2(e[1], 2);
        close(o[0]), close(o[1]), close(e[0]), close(e[1]);
        int devnull = open("/dev/null", O_RDONLY);
        dup2(devnull, 0);
        const char *argv[16] = {CDSH_BINARY};
        for (int i = 0; args[i] && i < 14; i++)
            argv[i + 1] = args[i];
        execv(CDSH_BINARY, (char *const *)argv);
        _exit(127);
    }
    close(o[1]);
    close(e[1]);
    r->out = o[0];
    r->err = e[0];
    fcntl(r->out, F_SETFL, O_NONBLOCK);
    fcntl(r->err, F_SETFL, O_NONBLOCK);
}

/* Reads what is there (up to ms); false once both pipes are at EOF. */
/* `cdsh acp prompt fixture TEXT --session S`. */
static void start(run *r, const char *text, const char *session)
{
    const char *args[] = {"acp", "prompt", "fixture", text, "--session", session, NULL};
    start_argv(r, args);
}

static bool pump(run *r, int ms)
{
    struct pollfd p[2] = {{r->out, POLLIN, 0}, {r->err, POLLIN, 0}};
    int n = 0;
    if (r->out >= 0)
        n++;
    if (r->err >= 0)
        n++;
    if (n == 0)
        return false;
    if (r->out < 0)
        p[0].fd = -1;
    if (r->err < 0)
        p[1].fd = -1;
    poll(p, 2, ms);
    int *fds[2] = {&r->out, &r->err};
    char *bufs[2] = {r->out_text, r->err_text};
    size_t *lens[2] = {&r->out_len, &r->err_len};
    for (int i = 0; i < 2; i++) {
        if (*fds[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP)))
            continue;
        char chunk[4096];
        ssize_t k = read(*fds[i], chunk, sizeof chunk);
        if (k > 0) {
            /* keep the head and the latest tail within the buffer */
            size_t cap = sizeof r->out_text - 1;
            if (*lens[i] + (size_t)k > cap) {
                size_t keep = cap / 2;
                memmove(bufs[i] + keep, bufs[i] + *lens[i] - keep / 2, keep / 2);
                *lens[i] = keep + keep / 2;
            }
            memcpy(bufs[i] + *lens[i], chunk, (size_t)k);
            *lens[i] += (size_t)k;
            bufs[i][*lens[i]] = '\0';
        } else if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
            close(*fds[i]);
            *fds[i] = -1;
        }
    }
    return true;
}

/* Pumps until stdout holds `needle` or the budget runs out. */
static bool wait_out(run *r, const char *needle, int budget_ms)
{
    int64_t end = now_ms() + cdsh_test_scale_ms(budget_ms);
    while (now_ms() < end && !strstr(r->out_text, needle))
        if (!pump(r, 50))
            break;
    return strstr(r->out_text, needle) != NULL;
}

/* Waits for the child's exit within the budget; on a miss, kills it
 * (SIGKILL) and fails with what it printed. Returns the wait status. */
static int wait_exit(run *r, int budget_ms, const char *what)
{
    int64_t end = now_ms() + cdsh_test_scale_ms(budget_ms);
    int st = 0;
    for (;;) {
        pid_t w = waitpid(r->pid, &st, WNOHANG);
        if (w == r->pid)
            break;
        if (now_ms() >= end) {
            kill(r->pid, SIGKILL);
            waitpid(r->pid, &st, 0);
            fail_msg("%s: cdsh did not end within %d ms; stderr: %s", what,
                     cdsh_test_scale_ms(budget_ms), r->err_text);
        }
        if (!pump(r, 50))
            usleep(20 * 1000);
    }
    while (pump(r, 0) && (r->out >= 0 || r->err >= 0)) {
    }
    return st;
}

static void close_run(run *r)
{
    if (r->out >= 0)
        close(r->out);
    if (r->err >= 0)
        close(r->err);
}

static int agent_pid(const char *pidfile)
{
    char *t = cdsh_test_read_file(pidfile, NULL);
    int pid = t ? atoi(t) : 0;
    free(t);
    return pid;
}

/* The agent is gone within the budget (cdsh disposed it). */
static void assert_agent_gone(int pid)
{
    assert_true(pid > 0);
    int64_t end = now_ms() + cdsh_test_scale_ms(10000);
    while (acp_pid_alive(pid) && now_ms() < end)
        usleep(20 * 1000);
    if (acp_pid_alive(pid)) {
        kill(pid, SIGKILL);
        fail_msg("the agent (pid %d) outlived cdsh", pid);
    }
}

typedef struct fx {
    char *home;
    char pidfile[4200];
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    snprintf(f->pidfile, sizeof f->pidfile, "%s/agent.pid", f->home);
    char args[4400];
    snprintf(args, sizeof args, "[\"--pid-file\",\"%s\"]", f->pidfile);
    /* A short cancel grace: a deaf agent is given up on soon. */
    acp_write_fixture_engine(f->home, args, "\"cancelGraceMs\":1000");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cdsh_test_home_free(f->home);
    free(f);
    return 0;
}

/* SIGTERM mid-stream: the agent answers session/cancel; cdsh exits 1. */
static void sigterm_mid_stream_cancels_the_turn(void **state)
{
    fx *f = *state;
    run r;
    start(&r, "stream-forever", "t1");
    assert_true(wait_out(&r, "tick3 ", 60000));
    kill(r.pid, SIGTERM);
    int st = wait_exit(&r, 30000, "SIGTERM, cooperative agent");
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 1);
    assert_non_null(strstr(r.err_text, "cancelling (Terminated)"));
    assert_non_null(strstr(r.err_text, "error [CANCELLED]: the turn was interrupted (a signal)"));
    assert_agent_gone(agent_pid(f->pidfile));
    close_run(&r);
}

/* SIGTERM mid-stream to a deaf agent that streams on and never answers
 * session/cancel: the turn is given up after cancelGraceMs (1 s here), the
 * agent is disposed, cdsh exits 1 naming the grace. */
static void sigterm_ends_a_turn_whose_agent_ignores_the_cancel(void **state)
{
    fx *f = *state;
    run r;
    start(&r, "stream-forever-hard", "t2");
    assert_true(wait_out(&r, "tick3 ", 60000));
    kill(r.pid, SIGTERM);
    int st = wait_exit(&r, 60000, "SIGTERM, deaf agent");
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 1);
    assert_non_null(strstr(r.err_text, "the engine did not confirm within 1s"));
    assert_agent_gone(agent_pid(f->pidfile));
    close_run(&r);
}

/* A second SIGTERM does not wait for the grace: the turn is given up at
 * once (the person or the supervisor insists). */
static void a_second_sigterm_gives_up_at_once(void **state)
{
    fx *f = *state;
    /* a long grace, so only the second signal can end the wait early */
    char args[4400];
    snprintf(args, sizeof args, "[\"--pid-file\",\"%s\"]", f->pidfile);
    acp_write_fixture_engine(f->home, args, "\"cancelGraceMs\":3600000");
    run r;
    start(&r, "stream-forever-hard", "t3");
    assert_true(wait_out(&r, "tick3 ", 60000));
    kill(r.pid, SIGTERM);
    assert_true(wait_out(&r, "tick30 ", 60000)); /* still streaming: deaf */
    kill(r.pid, SIGTERM);
    int st = wait_exit(&r, 60000, "second SIGTERM, deaf agent, hour-long grace");
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 1);
    assert_agent_gone(agent_pid(f->pidfile));
    close_run(&r);
}

/* SIGHUP (the terminal went away) is a cancel like SIGTERM. */
static void sighup_mid_stream_cancels_the_turn(void **state)
{
    fx *f = *state;
    run r;
    start(&r, "stream-forever", "t4");
    assert_true(wait_out(&r, "tick3 ", 60000));
    kill(r.pid, SIGHUP);
    int st = wait_exit(&r, 30000, "SIGHUP");
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 1);
    assert_agent_gone(agent_pid(f->pidfile));
    close_run(&r);
}

/* The reader of stdout goes away mid-stream (`cdsh acp prompt … | head`,
 * a killed parent): cdsh is not killed by SIGPIPE with the agent left
 * behind; the turn is cancelled and the agent disposed. */
static void a_closed_stdout_cancels_the_turn_and_disposes_the_agent(void **state)
{
    fx *f = *state;
    run r;
    start(&r, "stream-forever-hard", "t5");
    assert_true(wait_out(&r, "tick3 ", 60000));
    close(r.out);
    r.out = -1;
    int st = wait_exit(&r, 60000, "stdout closed");
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 1);
    assert_agent_gone(agent_pid(f->pidfile));
    close_run(&r);
}

/* SIGTERM while a (cold, slow) agent starts: the handshake is given up at
 * once, nothing is sent and no agent is left running. */
static void sigterm_while_the_agent_starts_leaves_nothing_running(void **state)
{
    fx *f = *state;
    char args[4400];
    snprintf(args, sizeof args, "[\"--pid-file\",\"%s\",\"--init-delay\",\"600000\"]",
             f->pidfile);
    acp_write_fixture_engine(f->home, args, "\"initBudget\":{\"steadySecs\":3600}");
    run r;
    start(&r, "hello", "t6");
    /* the agent has started (its pid file) and cdsh waits for initialize */
    int64_t end = now_ms() + cdsh_test_scale_ms(60000);
    while (agent_pid(f->pidfile) <= 0 && now_ms() < end) {
        pump(&r, 50);
    }
    int pid = agent_pid(f->pidfile);
    assert_true(pid > 0);
    kill(r.pid, SIGTERM);
    int st = wait_exit(&r, 60000, "SIGTERM during initialize");
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 1);
    assert_non_null(strstr(r.err_text, "error [CANCELED]: interrupted while the agent started"));
    assert_agent_gone(pid);
    close_run(&r);
}

/* `cdsh acp probe` gets the same: SIGTERM while the agent starts closes
 * it, the record says cancelled, the engine's health is not marked failed. */
static void sigterm_during_a_probe_leaves_nothing_running(void **state)
{
    fx *f = *state;
    char args[4400];
    snprintf(args, sizeof args, "[\"--pid-file\",\"%s\",\"--init-delay\",\"600000\"]",
             f->pidfile);
    acp_write_fixture_engine(f->home, args, "\"initBudget\":{\"steadySecs\":3600}");
    run r;
    const char *argv[] = {"acp", "probe", "fixture", "--json", "--cwd", f->home, NULL};
    start_argv(&r, argv);
    int64_t end = now_ms() + cdsh_test_scale_ms(60000);
    while (agent_pid(f->pidfile) <= 0 && now_ms() < end)
        pump(&r, 50);
    int pid = agent_pid(f->pidfile);
    assert_true(pid > 0);
    kill(r.pid, SIGTERM);
    int st = wait_exit(&r, 60000, "SIGTERM during a probe");
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 1);
    assert_non_null(strstr(r.err_text, "cdsh acp probe: cut short by Terminated"));
    json_t *rec = json_loads(r.out_text, 0, NULL);
    assert_non_null(rec);
    assert_true(json_is_true(json_object_get(rec, "cancelled")));
    assert_true(json_is_false(json_object_get(rec, "ok")));
    json_decref(rec);
    assert_agent_gone(pid);
    /* the engine's health was not marked failed by the cut */
    char out_path[4300];
    snprintf(out_path, sizeof out_path, "%s/multi-acp/runtime.json", f->home);
    char *runtime = cdsh_test_read_file(out_path, NULL);
    assert_true(!runtime || !strstr(runtime, "\"failed\""));
    free(runtime);
    close_run(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(sigterm_mid_stream_cancels_the_turn, setup, teardown),
        cmocka_unit_test_setup_teardown(sigterm_ends_a_turn_whose_agent_ignores_the_cancel, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_second_sigterm_gives_up_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(sighup_mid_stream_cancels_the_turn, setup, teardown),
        cmocka_unit_test_setup_teardown(a_closed_stdout_cancels_the_turn_and_disposes_the_agent,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(sigterm_while_the_agent_starts_leaves_nothing_running,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(sigterm_during_a_probe_leaves_nothing_running, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
