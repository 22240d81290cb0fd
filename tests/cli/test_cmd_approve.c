/* test_cmd_approve.c — the approval channel of `cdsh run`, `cdsh exec` and
 * `cdsh chat` in child processes (tests/peers/cdsh_asking.c: cdsh plus a
 * tool that always asks): --approve answers, a terminal (a pty) is asked,
 * a pipe fails closed naming the flag, --json shows approval events, and a
 * chat line typed after a request ended is the next chat message; and the
 * line queue the chat and the approval reader share (cli_lines.c). */
#include "support/testkit.h"

#include "support/model_env.h"

#include "host/cli_lines.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <pty.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DANGER_SCRIPT                                                                              \
    "[{\"chunks\":[{\"tool_call\":{\"index\":0,\"id\":\"c1\",\"name\":\"danger\","                 \
    "\"arguments\":\"{}\"}}],\"finish_reason\":\"tool_calls\"},"                                   \
    "{\"chunks\":[{\"text\":\"after\"}],\"finish_reason\":\"stop\"}]"

/* Runs the asking cdsh with args (NULL-terminated), stdin a pipe fed `in`. */
static int run_asking(const char *in, char **out, char **err, const char *const *args)
{
    char *peer = cdsh_test_peer_path_dup("cdsh_asking");
    char *argv[16] = {peer};
    int n = 1;
    for (; args[n - 1] && n < 15; n++)
        argv[n] = (char *)args[n - 1];
    argv[n] = NULL;
    int rc = cdsh_test_run(argv, in, out, err, 60000);
    free(peer);
    return rc;
}

/* The tool message the model got after its call (from the second request). */
static char *tool_result_sent(const cdsh_test_fake_model *f)
{
    json_t *bodies = cdsh_test_model_env_bodies(f);
    assert_int_equal(json_array_size(bodies), 2);
    json_t *msgs = json_object_get(json_array_get(bodies, 1), "messages");
    json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
    assert_string_equal(json_string_value(json_object_get(last, "role")), "tool");
    char *text = json_dumps(json_object_get(last, "content"), JSON_ENCODE_ANY);
    json_decref(bodies);
    return text;
}

static void run_with_approve_allow_runs_the_tool(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, DANGER_SCRIPT);
    char *out = NULL, *err = NULL;
    const char *args[] = {"run", "--approve", "allow", "go", NULL};
    assert_int_equal(run_asking(NULL, &out, &err, args), 0);
    assert_non_null(strstr(err, "[approval] danger: answered allow_once by --approve allow"));
    assert_non_null(strstr(out, "after"));
    char *sent = tool_result_sent(&f);
    assert_non_null(strstr(sent, "boom done"));
    free(sent);
    free(out);
    free(err);
    cdsh_test_model_env_stop(&f);
    cdsh_test_home_free(home);
}

static void run_without_a_terminal_fails_closed_and_names_the_flag(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, DANGER_SCRIPT);
    char *out = NULL, *err = NULL;
    const char *args[] = {"run", "go", NULL};
    assert_int_equal(run_asking("1\n", &out, &err, args), 0);
    assert_non_null(strstr(err, "stdin is not a terminal"));
    assert_non_null(strstr(err, "--approve allow"));
    char *sent = tool_result_sent(&f);
    assert_null(strstr(sent, "boom done"));
    assert_non_null(strstr(sent, "requires approval, but no approval channel"));
    free(sent);
    free(out);
    free(err);
    cdsh_test_model_env_stop(&f);
    cdsh_test_home_free(home);
}

/* The JSON lines of `out` with this type, in order (owned array). */
static json_t *events_of(const char *out, const char *type)
{
    json_t *list = json_array();
    char *copy = strdup(out);
    for (char *l = strtok(copy, "\n"); l; l = strtok(NULL, "\n")) {
        json_t *ev = json_loads(l, 0, NULL);
        assert_non_null(ev);
        if (strcmp(json_string_value(json_object_get(ev, "type")), type) == 0)
            json_array_append(list, ev);
        json_decref(ev);
    }
    free(copy);
    return list;
}

static void run_json_prints_approval_requests_and_their_endings(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    const char *modes[][2] = {{"reject", "selected"}, {NULL, "unavailable"}};
    for (int i = 0; i < 2; i++) {
        cdsh_test_fake_model f;
        cdsh_test_model_env_start(&f, DANGER_SCRIPT);
        char *out = NULL;
        const char *with[] = {"run", "--json", "--approve", modes[i][0], "go", NULL};
        const char *without[] = {"run", "--json", "go", NULL};
        assert_int_equal(run_asking(NULL, &out, NULL, modes[i][0] ? with : without), 0);
        json_t *req = events_of(out, "approval/request");
        json_t *res = events_of(out, "approval/resolved");
        assert_int_equal(json_array_size(req), 1);
        assert_int_equal(json_array_size(res), 1);
        json_t *r = json_array_get(req, 0), *e = json_array_get(res, 0);
        assert_string_equal(json_string_value(json_object_get(r, "toolName")), "danger");
        assert_string_equal(json_string_value(json_object_get(r, "source")), "tool");
        assert_int_equal(json_array_size(json_object_get(r, "options")), 2);
        assert_true(json_equal(json_object_get(r, "id"), json_object_get(e, "id")));
        assert_true(json_equal(json_object_get(r, "sessionId"), json_object_get(e, "sessionId")));
        assert_string_equal(json_string_value(json_object_get(e, "outcome")), modes[i][1]);
        if (modes[i][0])
            assert_string_equal(json_string_value(json_object_get(e, "optionId")), "reject_once");
        /* The request comes before the tool's result event. */
        assert_true(strstr(out, "\"approval/request\"") < strstr(out, "\"approval/resolved\""));
        json_decref(req);
        json_decref(res);
        free(out);
        cdsh_test_model_env_stop(&f);
    }
    cdsh_test_home_free(home);
}

static void exec_asks_through_the_same_channel(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, "[{\"text\":\"hi\",\"finish_reason\":\"stop\"}]");
    char *out = NULL, *err = NULL;
    const char *first[] = {"run", "hello", NULL};
    assert_int_equal(run_asking(NULL, NULL, &err, first), 0);
    char sid[64];
    assert_int_equal(sscanf(strstr(err, "(session ") + 9, "%63[^,]", sid), 1);
    free(err);
    cdsh_test_model_env_stop(&f);

    const char *refused[] = {"exec", "/danger", "--session", sid, NULL};
    assert_int_equal(run_asking(NULL, &out, &err, refused), 1);
    assert_non_null(strstr(err, "--approve allow"));
    assert_non_null(strstr(err, "requires approval, but no approval channel"));
    free(out);
    free(err);
    const char *allowed[] = {"exec", "/danger", "--session", sid, "--approve", "allow", NULL};
    assert_int_equal(run_asking(NULL, &out, &err, allowed), 0);
    assert_string_equal(out, "boom done\n");
    free(out);
    free(err);
    const char *rejected[] = {"exec", "/danger", "--session", sid, "--approve", "reject", NULL};
    assert_int_equal(run_asking(NULL, &out, &err, rejected), 1);
    assert_non_null(strstr(err, "the user rejected tool \"danger\""));
    free(out);
    free(err);
    assert_int_equal(run_asking(NULL, &out, NULL, (const char *[]){"exec", "--help", NULL}), 0);
    assert_non_null(strstr(out, "--approve allow|reject"));
    free(out);
    assert_int_equal(run_asking(NULL, &out, NULL, (const char *[]){"run", "--help", NULL}), 0);
    assert_non_null(strstr(out, "--approve allow|reject"));
    assert_non_null(strstr(out, "approval/request"));
    free(out);
    cdsh_test_home_free(home);
}

/* ---- a child on a pty or on pipes, driven line by line ----------------------------------- */

typedef struct child {
    pid_t pid;
    int in, out; /* the pty master twice, or two pipes */
    char buf[65536];
    size_t len;
} child;

/* Reads until `needle` shows up after `from` (or EOF); asserts it did. */
static void expect(child *c, size_t from, const char *needle)
{
    for (;;) {
        c->buf[c->len] = '\0';
        if (strstr(c->buf + from, needle))
            return;
        struct pollfd p = {.fd = c->out, .events = POLLIN};
        int r = poll(&p, 1, cdsh_test_scale_ms(60000));
        assert_true(r > 0 || (r < 0 && errno == EINTR));
        if (r < 0)
            continue;
        ssize_t n = read(c->out, c->buf + c->len, sizeof c->buf - 1 - c->len);
        if (n <= 0) {
            fprintf(stderr, "output so far:\n%s\n", c->buf);
            fail_msg("no \"%s\" before the end of output", needle);
        }
        c->len += (size_t)n;
    }
}

/* Reads to EOF and returns the exit status. */
static int finish(child *c)
{
    for (;;) {
        ssize_t n = read(c->out, c->buf + c->len, sizeof c->buf - 1 - c->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        c->len += (size_t)n;
    }
    c->buf[c->len] = '\0';
    int st;
    waitpid(c->pid, &st, 0);
    close(c->out);
    if (c->in != c->out)
        close(c->in);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void say(child *c, const char *line)
{
    assert_int_equal(write(c->in, line, strlen(line)), (ssize_t)strlen(line));
}

static void start(child *c, bool pty, char **argv)
{
    memset(c, 0, sizeof *c);
    if (pty) {
        int master;
        c->pid = forkpty(&master, NULL, NULL, NULL);
        assert_true(c->pid >= 0);
        if (c->pid == 0) {
            execv(argv[0], argv);
            _exit(127);
        }
        c->in = c->out = master;
        return;
    }
    int in_p[2], out_p[2];
    assert_int_equal(pipe2(in_p, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out_p, O_CLOEXEC), 0);
    c->pid = fork();
    assert_true(c->pid >= 0);
    if (c->pid == 0) {
        dup2(in_p[0], 0);
        dup2(out_p[1], 1);
        dup2(out_p[1], 2);
        execv(argv[0], argv);
        _exit(127);
    }
    close(in_p[0]);
    close(out_p[1]);
    c->in = in_p[1];
    c->out = out_p[0];
}

static void run_on_a_terminal_asks_and_takes_the_answer(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, DANGER_SCRIPT);
    char *peer = cdsh_test_peer_path_dup("cdsh_asking");
    char *argv[] = {peer, "run", "go", NULL};
    child c;
    start(&c, true, argv);
    expect(&c, 0, "[approval] a tool asks: danger");
    expect(&c, 0, "1) Allow once");
    expect(&c, 0, "choice: ");
    say(&c, "1\n");
    expect(&c, 0, "[approval] 1");
    assert_int_equal(finish(&c), 0);
    assert_non_null(strstr(c.buf, "after"));
    char *sent = tool_result_sent(&f);
    assert_non_null(strstr(sent, "boom done"));
    free(sent);
    free(peer);
    cdsh_test_model_env_stop(&f);
    cdsh_test_home_free(home);
}

/* A request that ends while chat reads its answer from a pipe (here the
 * turn is cancelled; a timeout ends it the same way) leaves the next line
 * to the chat: it is sent as the next message, never eaten as the answer. */
static void chat_line_after_an_ended_request_is_the_next_message(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, "[{\"chunks\":[{\"tool_call\":{\"index\":0,\"id\":\"c1\","
                                  "\"name\":\"danger\",\"arguments\":\"{}\"}}],"
                                  "\"finish_reason\":\"tool_calls\"},"
                                  "{\"text\":\"second\",\"finish_reason\":\"stop\"}]");
    char *peer = cdsh_test_peer_path_dup("cdsh_asking");
    char *argv[] = {peer, "chat", NULL};
    child c;
    start(&c, false, argv);
    say(&c, "go\n");
    expect(&c, 0, "choice: ");
    kill(c.pid, SIGINT); /* cancels the turn, and so the request */
    expect(&c, 0, "the next input line is a chat message again");
    size_t mark = c.len;
    say(&c, "late line\n");
    expect(&c, mark, "second");
    say(&c, "/exit\n");
    assert_int_equal(finish(&c), 0);
    json_t *bodies = cdsh_test_model_env_bodies(&f);
    assert_int_equal(json_array_size(bodies), 2);
    json_t *msgs = json_object_get(json_array_get(bodies, 1), "messages");
    json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
    assert_string_equal(json_string_value(json_object_get(last, "role")), "user");
    char *content = json_dumps(json_object_get(last, "content"), JSON_ENCODE_ANY);
    assert_non_null(strstr(content, "late line"));
    free(content);
    json_decref(bodies);
    free(peer);
    cdsh_test_model_env_stop(&f);
    cdsh_test_home_free(home);
}

typedef struct line_reader {
    cdsh_cli_lines *lines;
    int timeout_ms;
    int rc;
    char got[64];
} line_reader;

static bool take_line(void *ud, const char *line)
{
    line_reader *r = ud;
    snprintf(r->got, sizeof r->got, "%s", line);
    return true;
}

static void *offer_main(void *arg)
{
    line_reader *r = arg;
    r->rc = cdsh_cli_lines_offer(r->lines, r->timeout_ms, take_line, r);
    return NULL;
}

/* Both readers wait on the pipe when one line comes: one takes it, and the
 * other's wait still ends at its timeout (it does not sit in a read of the
 * drained pipe until more input comes). */
static void lines_two_waiting_readers_one_line_the_other_times_out(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    cdsh_cli_lines *l = cdsh_cli_lines_new(p[0]);
    assert_non_null(l);
    line_reader a = {l, 3000, 99, ""}, b = {l, 3000, 99, ""};
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, offer_main, &a), 0);
    assert_int_equal(pthread_create(&tb, NULL, offer_main, &b), 0);
    usleep((useconds_t)cdsh_test_scale_ms(100) * 1000); /* both are waiting in poll() by now */
    assert_int_equal(write(p[1], "one\n", 4), 4);
    /* A reader stuck in read() only comes back with more input: end the
     * input after a generous while, so the check below fails, not hangs. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += cdsh_test_scale_ms(20000) / 1000;
    bool a_back = pthread_timedjoin_np(ta, NULL, &until) == 0;
    bool b_back = pthread_timedjoin_np(tb, NULL, &until) == 0;
    close(p[1]);
    if (!a_back)
        pthread_join(ta, NULL);
    if (!b_back)
        pthread_join(tb, NULL);
    assert_true(a_back && b_back);
    line_reader *took = a.rc == 1 ? &a : &b, *other = a.rc == 1 ? &b : &a;
    assert_int_equal(took->rc, 1);
    assert_string_equal(took->got, "one");
    assert_int_equal(other->rc, -2);
    cdsh_cli_lines_free(l);
    close(p[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(run_with_approve_allow_runs_the_tool),
        cmocka_unit_test(run_without_a_terminal_fails_closed_and_names_the_flag),
        cmocka_unit_test(run_json_prints_approval_requests_and_their_endings),
        cmocka_unit_test(exec_asks_through_the_same_channel),
        cmocka_unit_test(run_on_a_terminal_asks_and_takes_the_answer),
        cmocka_unit_test(chat_line_after_an_ended_request_is_the_next_message),
        cmocka_unit_test(lines_two_waiting_readers_one_line_the_other_times_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
