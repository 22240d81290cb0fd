/* test_xq_play_causes.c — `cdsh xiangqi play --opponent model` on a real
 * pseudo-terminal (forkpty: libedit, colours, screen redraws, as a person
 * sees it) when the model fails: the scripted fake model answers HTTP 400 or
 * 401, never answers in time, or no key is set for a remote endpoint. The
 * terminal must print the cause (HTTP status and the endpoint's message, the
 * missing key, the move clock) and what to do, and `fallback` must let the
 * local engine move and drop the stale cause. */
#include "support/testkit.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "support/model_env.h"

static char *home;

static int setup(void **state)
{
    (void)state;
    home = cdsh_test_home_new();
    char *out = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, NULL, "config", "set", "xiangqi.engine.depth", "1", NULL),
        0);
    free(out);
    unsetenv("CDSH_API_KEY");
    unsetenv("DEEPSEEK_API_KEY");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unsetenv("CDSH_BASE_URL");
    cdsh_test_home_free(home);
    return 0;
}

/* cdsh xiangqi play on a pty: its pid, the master side and all it printed. */
typedef struct term {
    pid_t pid;
    int fd;
    char buf[1 << 17];
    size_t len;
} term;

static void term_start(term *t)
{
    struct winsize ws = {.ws_row = 40, .ws_col = 100};
    memset(t, 0, sizeof *t);
    t->pid = forkpty(&t->fd, NULL, NULL, &ws);
    assert_true(t->pid >= 0);
    if (t->pid == 0) {
        setenv("TERM", "xterm", 1);
        unsetenv("NO_COLOR");
        execl(CDSH_BINARY, CDSH_BINARY, "xiangqi", "play", "--opponent", "model", "--side", "r",
              (char *)NULL);
        _exit(127);
    }
}

/* Reads until `want` was printed (after byte `from`); fails after 60 s
 * (scaled), showing the tail of the screen. Returns where `want` starts. */
static const char *term_wait(term *t, size_t from, const char *want)
{
    int64_t until = cdsh_clock_mono_ms() + cdsh_test_scale_ms(60000);
    for (;;) {
        t->buf[t->len] = 0;
        const char *at = strstr(t->buf + from, want);
        if (at)
            return at;
        int64_t left = until - cdsh_clock_mono_ms();
        if (left <= 0)
            break;
        struct pollfd p = {.fd = t->fd, .events = POLLIN};
        if (poll(&p, 1, (int)(left > 1000 ? 1000 : left)) <= 0)
            continue;
        ssize_t n = read(t->fd, t->buf + t->len, sizeof t->buf - 1 - t->len);
        if (n <= 0)
            break; /* EIO: the child closed the terminal */
        t->len += (size_t)n;
    }
    size_t tail = t->len > 1500 ? t->len - 1500 : 0;
    fail_msg("the terminal never printed \"%s\"; its last output:\n%s", want, t->buf + tail);
    return NULL;
}

static void term_type(term *t, const char *line)
{
    size_t n = strlen(line);
    assert_int_equal(write(t->fd, line, n), (ssize_t)n);
    assert_int_equal(write(t->fd, "\r", 1), 1);
}

/* quit, then the exit status (0 expected). */
static void term_quit(term *t)
{
    term_type(t, "quit");
    int status = 0;
    int64_t until = cdsh_clock_mono_ms() + cdsh_test_scale_ms(30000);
    pid_t r;
    while ((r = waitpid(t->pid, &status, WNOHANG)) == 0 && cdsh_clock_mono_ms() < until) {
        char sink[4096];
        struct pollfd p = {.fd = t->fd, .events = POLLIN};
        if (poll(&p, 1, 100) > 0 && read(t->fd, sink, sizeof sink) < 0 && errno != EIO)
            break;
    }
    if (r == 0) {
        kill(t->pid, SIGKILL);
        waitpid(t->pid, &status, 0);
        fail_msg("cdsh xiangqi play did not quit");
    }
    close(t->fd);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* The line that starts at `at` (up to CR or LF), for exact comparisons. */
static char *line_at(const char *at)
{
    return strndup(at, strcspn(at, "\r\n"));
}

/* Plays 炮二平五, waits for the failure's cause and advice lines and checks
 * them, then `fallback` (when the game waits for it) and checks the engine
 * moved and the cause is gone from the redrawn board. */
static void play_until_cause(const char *label, const char *cause_line, const char *fix_line,
                             int waits_for_fallback)
{
    term t;
    term_start(&t);
    size_t mark = (size_t)(term_wait(&t, 0, "你的着法> ") - t.buf);
    term_type(&t, "炮二平五");
    const char *at = term_wait(&t, mark, label);
    char *line = line_at(at);
    assert_string_equal(line, cause_line);
    free(line);
    at = term_wait(&t, (size_t)(at - t.buf), "怎么办：");
    line = line_at(at);
    assert_string_equal(line, fix_line);
    free(line);
    mark = (size_t)(at - t.buf);
    if (waits_for_fallback) {
        term_wait(&t, mark, "模型未能走子：输入 fallback 由本地引擎代走。");
        mark = (size_t)(term_wait(&t, mark, "你的着法> ") - t.buf);
        term_type(&t, "fallback");
        const char *moved = term_wait(&t, mark, "已由本地引擎代走");
        mark = (size_t)(moved - t.buf);
        term_wait(&t, mark, "你的着法> ");
        t.buf[t.len] = 0;
        assert_null(strstr(t.buf + mark, label));     /* the old cause is not drawn again */
        assert_null(strstr(t.buf + mark, "怎么办："));
    } else {
        /* a timeout: the local engine already moved and said so on the status
         * line above the cause; it is the person's turn again */
        term_wait(&t, 0, "模型超时，已由本地引擎代走");
        term_wait(&t, mark, "你的着法> ");
    }
    term_quit(&t);
}

static void http_400_names_the_status_and_the_endpoints_message(void **state)
{
    (void)state;
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(
        &f, "[{\"status\": 400, \"error\": {\"message\": \"Model Not Exist\", \"type\": "
            "\"invalid_request_error\"}}]");
    play_until_cause("模型出错的原因：",
                     "模型出错的原因：HTTP 400: Model Not Exist（INVALID_REQUEST）",
                     "怎么办：服务拒绝了请求：请检查模型名（CDSH_MODEL）和设置。", 1);
    assert_int_equal(cdsh_test_fake_model_count(&f), 1);
    cdsh_test_model_env_stop(&f);
}

static void http_401_says_the_key_was_refused(void **state)
{
    (void)state;
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(
        &f, "[{\"status\": 401, \"error\": {\"message\": \"Authentication Fails, Your api key: "
            "****abcd is invalid\", \"type\": \"authentication_error\"}}]");
    play_until_cause(
        "模型出错的原因：",
        "模型出错的原因：HTTP 401: Authentication Fails, Your api key: ****abcd is invalid"
        "（INVALID_CREDENTIAL）",
        "怎么办：服务拒绝了密钥：请检查 DEEPSEEK_API_KEY / CDSH_API_KEY，然后重新启动。", 1);
    cdsh_test_model_env_stop(&f);
}

static void a_missing_key_names_the_variable_to_set(void **state)
{
    (void)state;
    /* a remote endpoint without a key: refused before any connection */
    setenv("CDSH_BASE_URL", "https://model.invalid/v1", 1);
    setenv("CDSH_MODEL", "fake", 1);
    play_until_cause("模型出错的原因：",
                     "模型出错的原因：no API key for model.invalid: set DEEPSEEK_API_KEY (DeepSeek) "
                     "or CDSH_API_KEY, or an api key in the profile（MISSING_CREDENTIAL）",
                     "怎么办：请设置 DEEPSEEK_API_KEY（或用 CDSH_BASE_URL 与 CDSH_MODEL "
                     "指定其他服务），然后重新启动。",
                     1);
    unsetenv("CDSH_BASE_URL");
}

static void a_timeout_names_the_move_clock_and_the_engine_moves(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, NULL, "config", "set", "xiangqi.model.timeoutMs", "300", NULL),
        0);
    free(out);
    cdsh_test_fake_model f;
    /* the endpoint holds its answer far past the move clock */
    cdsh_test_model_env_start(&f, "[{\"first_byte_delay_ms\": 5000, \"text\": \"late\"}]");
    play_until_cause("模型超时的原因：",
                     "模型超时的原因：no move within 300 ms (xiangqi.model.timeoutMs)（MOVE_TIMEOUT）",
                     "怎么办：给模型更多时间（cdsh config set xiangqi.model.timeoutMs 120000）"
                     "或换用更快的模型；这一步已由本地引擎代走。",
                     0);
    cdsh_test_model_env_stop(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(http_400_names_the_status_and_the_endpoints_message, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(http_401_says_the_key_was_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(a_missing_key_names_the_variable_to_set, setup, teardown),
        cmocka_unit_test_setup_teardown(a_timeout_names_the_move_clock_and_the_engine_moves, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
