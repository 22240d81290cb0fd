/* test_process.c — base/process with real children: pipes, megabytes of
 * output, environment scrubbing, cwd, fd hygiene, process groups, grace then
 * kill, wait timeouts and cancellation, exec failures, PATH lookup and
 * concurrent spawns. Children are /bin tools and tests/peers/proc_peer. */
#include "support/testkit.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/process.h"

static char *tmpdir;
static char *peer;

static int setup(void **state)
{
    (void)state;
    tmpdir = cdsh_test_home_new();
    peer = cdsh_test_peer_path_dup("proc_peer");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cdsh_test_home_free(tmpdir);
    free(peer);
    return 0;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Owned "<tmpdir>/<rel>", normalised. */
static char *tpath(const char *rel)
{
    char *p = cdsh_fs_path_join_dup(tmpdir, rel);
    assert_non_null(p);
    return p;
}

/* Runs argv with default options (plus stdin text) and returns rc. */
static int run(const char *const *argv, const char *in, cdsh_process_result *res, cdsh_error *err)
{
    cdsh_process_run_opts o = {.stdin_data = in, .timeout_ms = cdsh_test_scale_ms(20000)};
    return cdsh_process_run(argv, &o, res, err);
}

/* Reads fd until EOF into an owned string. */
static char *slurp(int fd)
{
    size_t len = 0, cap = 256;
    char *buf = malloc(cap);
    assert_non_null(buf);
    for (;;) {
        if (len + 1 == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    return buf;
}

/* ---- pipes and capture ---- */

static void spawn_echoes_through_cat_pipes(void **state)
{
    (void)state;
    const char *argv[] = {"/bin/cat", NULL};
    cdsh_process_opts o = {.stdin_mode = CDSH_PROCESS_PIPE,
                           .stdout_mode = CDSH_PROCESS_PIPE,
                           .stderr_mode = CDSH_PROCESS_NULL};
    cdsh_process *p = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_process_spawn(argv, &o, &p, &err), 0);
    assert_true(cdsh_process_pid(p) > 0);
    assert_int_equal(cdsh_process_stderr_fd(p), -1);
    assert_int_equal(write(cdsh_process_stdin_fd(p), "hello\n", 6), 6);
    cdsh_process_close_stdin(p);
    assert_int_equal(cdsh_process_stdin_fd(p), -1);
    char *out = slurp(cdsh_process_stdout_fd(p));
    assert_string_equal(out, "hello\n");
    cdsh_process_status st;
    assert_int_equal(cdsh_process_wait(p, 30000, NULL, &st, &err), 0);
    assert_true(st.exited);
    assert_int_equal(st.exit_code, 0);
    /* A second wait returns the same status at once. */
    cdsh_process_status again;
    assert_int_equal(cdsh_process_wait(p, 0, NULL, &again, &err), 0);
    assert_true(again.exited);
    free(out);
    cdsh_process_free(p);
}

static void run_captures_both_streams_and_the_exit_code(void **state)
{
    (void)state;
    const char *argv[] = {"/bin/sh", "-c", "read x; echo out:$x; echo err >&2; exit 3", NULL};
    cdsh_process_result r;
    cdsh_error err = {0};
    assert_int_equal(run(argv, "line\n", &r, &err), 0);
    assert_string_equal(r.out, "out:line\n");
    assert_int_equal(r.out_len, 9);
    assert_string_equal(r.err, "err\n");
    assert_true(r.status.exited);
    assert_int_equal(r.status.exit_code, 3);
    cdsh_process_result_deinit(&r);
}

static void run_moves_megabytes_both_ways_without_deadlock(void **state)
{
    (void)state;
    size_t n = 6u << 20;
    char *big = malloc(n + 1);
    assert_non_null(big);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + i % 26);
    big[n] = '\0';
    const char *cat[] = {"/bin/cat", NULL};
    cdsh_process_result r;
    assert_int_equal(run(cat, big, &r, NULL), 0);
    assert_int_equal(r.out_len, n);
    assert_memory_equal(r.out, big, n);
    cdsh_process_result_deinit(&r);

    const char *both[] = {"/bin/sh", "-c",
                          "head -c 4000000 /dev/zero; head -c 3000000 /dev/zero >&2", NULL};
    assert_int_equal(run(both, NULL, &r, NULL), 0);
    assert_int_equal(r.out_len, 4000000);
    assert_int_equal(r.err_len, 3000000);
    assert_true(r.status.exited && r.status.exit_code == 0);
    cdsh_process_result_deinit(&r);
    free(big);
}

static void run_survives_a_child_that_ignores_its_stdin(void **state)
{
    (void)state;
    void (*old)(int) = signal(SIGPIPE, SIG_DFL); /* a SIGPIPE would kill the test */
    size_t n = 4u << 20;
    char *big = malloc(n + 1);
    assert_non_null(big);
    memset(big, 'x', n);
    big[n] = '\0';
    const char *argv[] = {"/bin/true", NULL};
    cdsh_process_result r;
    assert_int_equal(run(argv, big, &r, NULL), 0);
    assert_true(r.status.exited && r.status.exit_code == 0);
    sigset_t pending;
    sigpending(&pending);
    assert_false(sigismember(&pending, SIGPIPE));
    cdsh_process_result_deinit(&r);
    free(big);
    signal(SIGPIPE, old);
}

static void run_stops_a_child_that_writes_too_much(void **state)
{
    (void)state;
    const char *argv[] = {"/bin/sh", "-c", "exec head -c 1000000 /dev/zero", NULL};
    cdsh_process_run_opts o = {.timeout_ms = cdsh_test_scale_ms(20000), .max_output = 1000};
    cdsh_process_result r;
    cdsh_error err = {0};
    assert_int_equal(cdsh_process_run(argv, &o, &r, &err), CDSH_ETOOBIG);
    assert_string_equal(err.code, "OUTPUT_TOO_BIG");
    assert_non_null(strstr(err.message, "/bin/sh wrote more than 1000 bytes to stdout"));
    assert_true(r.out_len <= 1000);
    cdsh_process_result_deinit(&r);
}

static void run_times_out_and_terminates(void **state)
{
    (void)state;
    const char *argv[] = {"/bin/sleep", "60", NULL};
    cdsh_process_run_opts o = {.timeout_ms = 200};
    cdsh_process_result r;
    cdsh_error err = {0};
    int64_t t0 = mono_ms();
    assert_int_equal(cdsh_process_run(argv, &o, &r, &err), CDSH_ETIMEDOUT);
    int64_t took = mono_ms() - t0;
    assert_true(took >= 190 && took < 30000); /* the sleep alone would take 60 s */
    assert_string_equal(err.code, "TIMEOUT");
    assert_string_equal(err.message, "/bin/sleep timed out after 200 ms and was terminated");
    assert_false(r.status.exited);
    assert_int_equal(r.status.term_signal, SIGTERM);
    assert_non_null(r.out);
    cdsh_process_result_deinit(&r);
}

/* ---- environment ---- */

static bool has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return true;
    return false;
}

static void env_is_scrubbed_of_credentials_except_allowed(void **state)
{
    (void)state;
    setenv("FOO_TOKEN", "t0ken", 1);
    setenv("my_api_key", "k3y", 1);
    setenv("GH_Auth_X", "a", 1);
    setenv("ALLOWED_SECRET", "kept", 1);
    setenv("PLAIN_VALUE", "plain", 1);
    /* The leaks issue 23 measured, and cdsh's own settings. */
    setenv("GITHUB_PAT", "pat-leak", 1);
    setenv("DATABASE_URL", "postgres://db/x", 1);
    setenv("NPM_X_AUTH", "auth-leak", 1);
    setenv("AWS_CREDENTIALS", "cred-leak", 1);
    setenv("T23_MIRROR", "https://u:userinfo-leak@mirror.example/", 1);
    setenv("CDSH_T23_SETTING", "own-leak", 1);
    const char *allow[] = {"ALLOWED_SECRET", NULL};
    const char *argv[] = {"/usr/bin/env", NULL};
    cdsh_process_run_opts o = {.timeout_ms = cdsh_test_scale_ms(10000),
                               .spawn = {.env_allow = allow}};
    cdsh_process_result r;
    assert_int_equal(cdsh_process_run(argv, &o, &r, NULL), 0);
    assert_true(has_line(r.out, "PLAIN_VALUE=plain"));
    assert_true(has_line(r.out, "ALLOWED_SECRET=kept"));
    assert_null(strstr(r.out, "FOO_TOKEN"));
    assert_null(strstr(r.out, "t0ken"));
    assert_null(strstr(r.out, "my_api_key"));
    assert_null(strstr(r.out, "GH_Auth_X"));
    assert_null(strstr(r.out, "-leak")); /* every value above; not ASAN_OPTIONS's detect_leaks */
    assert_null(strstr(r.out, "DATABASE_URL"));
    cdsh_process_result_deinit(&r);
    unsetenv("GITHUB_PAT");
    unsetenv("DATABASE_URL");
    unsetenv("NPM_X_AUTH");
    unsetenv("AWS_CREDENTIALS");
    unsetenv("T23_MIRROR");
    unsetenv("CDSH_T23_SETTING");
    unsetenv("FOO_TOKEN");
    unsetenv("my_api_key");
    unsetenv("GH_Auth_X");
    unsetenv("ALLOWED_SECRET");
    unsetenv("PLAIN_VALUE");
}

static void env_set_overrides_and_explicit_env_is_exact(void **state)
{
    (void)state;
    const char *env[] = {"A=1", "B=2", "SOME_TOKEN=explicit-is-kept", NULL};
    const char *set[] = {"B=3", "C=4", "C=5", NULL};
    const char *argv[] = {"/usr/bin/env", NULL};
    cdsh_process_run_opts o = {.timeout_ms = cdsh_test_scale_ms(10000),
                               .spawn = {.env = env, .env_set = set}};
    cdsh_process_result r;
    assert_int_equal(cdsh_process_run(argv, &o, &r, NULL), 0);
    assert_string_equal(r.out, "A=1\nSOME_TOKEN=explicit-is-kept\nB=3\nC=5\n");
    cdsh_process_result_deinit(&r);

    setenv("PLAIN_VALUE", "parent", 1);
    const char *over[] = {"PLAIN_VALUE=child", "API_TOKEN=set-explicitly", NULL};
    cdsh_process_run_opts d = {.timeout_ms = cdsh_test_scale_ms(10000), .spawn = {.env_set = over}};
    assert_int_equal(cdsh_process_run(argv, &d, &r, NULL), 0);
    assert_true(has_line(r.out, "PLAIN_VALUE=child"));
    assert_false(has_line(r.out, "PLAIN_VALUE=parent"));
    assert_true(has_line(r.out, "API_TOKEN=set-explicitly"));
    cdsh_process_result_deinit(&r);
    unsetenv("PLAIN_VALUE");
}

static void env_name_classification(void **state)
{
    (void)state;
    const char *secret[] = {"OPENAI_API_KEY",
                            "GITHUB_TOKEN",
                            "aws_secret_access_key",
                            "DB_PASSWORD",
                            "MYSQL_PASSWD",
                            "GOOGLE_APPLICATION_CREDENTIALS",
                            "SESSION_COOKIE",
                            "GITHUB_PAT",
                            "X_AUTH",
                            "DATABASE_URL",
                            "token=abc",
                            "Key"};
    /* XAUTHORITY and SSH_AUTH_SOCK name a file or socket (base/env_policy.h). */
    const char *plain[] = {"PATH",  "HOME",       "LANG",          "TERM",
                           "PWD",   "USER",       "SHELL",         "K_E_Y",
                           "PATH=/token/key",     "XAUTHORITY",    "SSH_AUTH_SOCK",
                           "GIT_AUTHOR_NAME"};
    for (size_t i = 0; i < sizeof secret / sizeof *secret; i++)
        if (!cdsh_process_env_name_is_secret(secret[i]))
            fail_msg("%s should look like a credential", secret[i]);
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        if (cdsh_process_env_name_is_secret(plain[i]))
            fail_msg("%s should not look like a credential", plain[i]);
    assert_false(cdsh_process_env_name_is_secret(NULL));
}

/* ---- cwd, exec failures, PATH ---- */

static void cwd_is_applied_and_missing_cwd_is_reported(void **state)
{
    (void)state;
    const char *argv[] = {"/bin/pwd", "-P", NULL};
    cdsh_process_run_opts o = {.timeout_ms = cdsh_test_scale_ms(10000), .spawn = {.cwd = tmpdir}};
    cdsh_process_result r;
    assert_int_equal(cdsh_process_run(argv, &o, &r, NULL), 0);
    char *real = realpath(tmpdir, NULL);
    char want[4096];
    snprintf(want, sizeof want, "%s\n", real);
    assert_string_equal(r.out, want);
    cdsh_process_result_deinit(&r);
    free(real);

    char *missing = tpath("no-such-dir");
    o.spawn.cwd = missing;
    cdsh_error err = {0};
    assert_int_equal(cdsh_process_run(argv, &o, &r, &err), CDSH_ENOTFOUND);
    assert_string_equal(err.code, "CWD_NOT_FOUND");
    snprintf(want, sizeof want, "cannot start /bin/pwd: working directory %s: does not exist",
             missing);
    assert_string_equal(err.message, want);
    assert_null(r.out);
    free(missing);

    char *file = tpath("file");
    cdsh_test_write_file(file, "x");
    o.spawn.cwd = file;
    assert_int_equal(cdsh_process_run(argv, &o, &r, &err), CDSH_ENOTFOUND);
    assert_non_null(strstr(err.message, file));
    assert_non_null(strstr(err.message, "is not a directory"));
    free(file);
}

static void exec_failures_are_errors_not_exit_127(void **state)
{
    (void)state;
    cdsh_process *p = NULL;
    cdsh_error err = {0};
    const char *missing[] = {"/nonexistent/dir/prog", NULL};
    assert_int_equal(cdsh_process_spawn(missing, NULL, &p, &err), CDSH_ENOTFOUND);
    assert_null(p);
    assert_string_equal(err.code, "COMMAND_NOT_FOUND");
    assert_non_null(strstr(err.message, "cannot execute /nonexistent/dir/prog: No such file"));

    char *noexec = tpath("noexec.sh");
    cdsh_test_write_file(noexec, "#!/bin/sh\necho hi\n");
    assert_int_equal(chmod(noexec, 0644), 0);
    const char *a1[] = {noexec, NULL};
    assert_int_equal(cdsh_process_spawn(a1, NULL, &p, &err), CDSH_EPERM);
    assert_string_equal(err.code, "EXEC_FAILED");
    char want[4096];
    snprintf(want, sizeof want, "cannot execute %s: Permission denied", noexec);
    assert_string_equal(err.message, want);

    char *badinterp = tpath("badinterp.sh");
    cdsh_test_write_file(badinterp, "#!/nonexistent/interpreter\n");
    assert_int_equal(chmod(badinterp, 0755), 0);
    const char *a2[] = {badinterp, NULL};
    assert_int_equal(cdsh_process_spawn(a2, NULL, &p, &err), CDSH_ENOTFOUND);
    assert_non_null(strstr(err.message, badinterp));
    assert_non_null(strstr(err.message, "#! interpreter"));

    const char *a3[] = {"cdsh-definitely-not-a-command", NULL};
    assert_int_equal(cdsh_process_spawn(a3, NULL, &p, &err), CDSH_ENOTFOUND);
    assert_string_equal(err.code, "COMMAND_NOT_FOUND");
    assert_non_null(
        strstr(err.message, "command 'cdsh-definitely-not-a-command' not found on PATH"));

    const char *empty[] = {"", NULL};
    assert_int_equal(cdsh_process_spawn(empty, NULL, &p, &err), CDSH_EINVAL);
    assert_int_equal(cdsh_process_spawn(NULL, NULL, &p, &err), CDSH_EINVAL);
    free(badinterp);
    free(noexec);
}

static void spawn_looks_up_bare_names_on_the_child_path(void **state)
{
    (void)state;
    char *bin = tpath("bin");
    assert_int_equal(mkdir(bin, 0700), 0);
    char *tool = tpath("bin/cdsh-test-tool");
    cdsh_test_write_file(tool, "#!/bin/sh\necho tool ran with $1\n");
    assert_int_equal(chmod(tool, 0755), 0);
    char pathvar[4096];
    snprintf(pathvar, sizeof pathvar, "PATH=/nonexistent:%s:/usr/bin:/bin", bin);
    const char *set[] = {pathvar, NULL};
    const char *argv[] = {"cdsh-test-tool", "arg1", NULL};
    cdsh_process_run_opts o = {.timeout_ms = cdsh_test_scale_ms(10000), .spawn = {.env_set = set}};
    cdsh_process_result r;
    cdsh_error err = {0};
    assert_int_equal(cdsh_process_run(argv, &o, &r, &err), 0);
    assert_string_equal(r.out, "tool ran with arg1\n");
    cdsh_process_result_deinit(&r);
    free(tool);
    free(bin);
}

static void find_program_respects_executability(void **state)
{
    (void)state;
    char *out = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_process_find_program("sh", "/nonexistent:/bin:/usr/bin", &out, &err), 0);
    assert_string_equal(out, "/bin/sh");
    free(out);
    assert_int_equal(cdsh_process_find_program("/bin/sh", NULL, &out, &err), 0);
    assert_string_equal(out, "/bin/sh");
    free(out);

    char *d1 = tpath("d1"), *d2 = tpath("d2");
    assert_int_equal(mkdir(d1, 0700), 0);
    assert_int_equal(mkdir(d2, 0700), 0);
    char *plain = tpath("d1/tool"), *exe = tpath("d2/tool"), *sub = tpath("d1/subdir");
    cdsh_test_write_file(plain, "x");
    assert_int_equal(chmod(plain, 0644), 0);
    assert_int_equal(mkdir(sub, 0700), 0);
    char list[4096];
    snprintf(list, sizeof list, "%s", d1);
    assert_int_equal(cdsh_process_find_program("tool", list, &out, &err), CDSH_ENOTFOUND);
    assert_null(out);
    assert_string_equal(err.code, "COMMAND_NOT_FOUND");
    char want[8192];
    snprintf(want, sizeof want,
             "command 'tool' not found on PATH (%s); %s exists but is not executable", d1, plain);
    assert_string_equal(err.message, want);
    assert_int_equal(cdsh_process_find_program("subdir", list, &out, &err), CDSH_ENOTFOUND);

    cdsh_test_write_file(exe, "#!/bin/sh\n");
    assert_int_equal(chmod(exe, 0755), 0);
    snprintf(list, sizeof list, "%s::%s", d1, d2);
    assert_int_equal(cdsh_process_find_program("tool", list, &out, &err), 0);
    assert_string_equal(out, exe);
    free(out);

    /* Empty entries do not mean the current directory. */
    char *cwd = getcwd(NULL, 0);
    assert_int_equal(chdir(d2), 0);
    int rc = cdsh_process_find_program("tool", ":", &out, &err);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rc, CDSH_ENOTFOUND);
    free(cwd);

    assert_int_equal(cdsh_process_find_program(plain, NULL, &out, &err), CDSH_EPERM);
    assert_non_null(strstr(err.message, plain));
    assert_int_equal(cdsh_process_find_program("", NULL, &out, &err), CDSH_EINVAL);
    free(sub);
    free(exe);
    free(plain);
    free(d2);
    free(d1);
}

/* ---- hygiene: descriptors, signals, groups ---- */

static void child_gets_no_descriptor_but_stdio(void **state)
{
    (void)state;
    int leaky = open("/dev/null", O_RDONLY); /* deliberately without O_CLOEXEC */
    int lp[2];
    assert_true(leaky >= 0);
    assert_int_equal(pipe(lp), 0);
    const char *argv[] = {peer, "fds", NULL};
    cdsh_process_result r;
    assert_int_equal(run(argv, "ignored", &r, NULL), 0);
    assert_string_equal(r.out, "");
    assert_true(r.status.exited && r.status.exit_code == 0);
    cdsh_process_result_deinit(&r);
    close(leaky);
    close(lp[0]);
    close(lp[1]);
}

static void child_starts_with_default_sigpipe(void **state)
{
    (void)state;
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    const char *argv[] = {peer, "sigpipe", NULL};
    cdsh_process_result r;
    assert_int_equal(run(argv, NULL, &r, NULL), 0);
    signal(SIGPIPE, old);
    assert_string_equal(r.out, "default\n");
    cdsh_process_result_deinit(&r);
}

static void child_leads_its_own_process_group(void **state)
{
    (void)state;
    const char *argv[] = {peer, "pgid", NULL};
    cdsh_process_result r;
    assert_int_equal(run(argv, NULL, &r, NULL), 0);
    int pid = 0, pgid = 0;
    assert_int_equal(sscanf(r.out, "%d %d", &pid, &pgid), 2);
    assert_int_equal(pid, pgid);
    assert_int_not_equal(pgid, (int)getpgrp());
    cdsh_process_result_deinit(&r);

    cdsh_process_run_opts o = {.timeout_ms = cdsh_test_scale_ms(10000),
                               .spawn = {.keep_process_group = true}};
    assert_int_equal(cdsh_process_run(argv, &o, &r, NULL), 0);
    assert_int_equal(sscanf(r.out, "%d %d", &pid, &pgid), 2);
    assert_int_equal(pgid, (int)getpgrp());
    cdsh_process_result_deinit(&r);
}

/* Reaps pid (reparented to us as a subreaper) within timeout_ms; its status. */
static int reap_within(pid_t pid, int timeout_ms)
{
    int64_t end = mono_ms() + timeout_ms;
    while (mono_ms() < end) {
        int wst;
        pid_t r = waitpid(pid, &wst, WNOHANG);
        if (r == pid)
            return wst;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    fail_msg("process %d still running after %d ms", (int)pid, timeout_ms);
    return -1;
}

static void terminate_reaches_grandchildren_in_the_group(void **state)
{
    (void)state;
    /* Orphaned grandchildren come to us, so we can see how they died. */
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    const char *argv[] = {"/bin/sh", "-c", "/bin/sleep 60 & echo $!; wait", NULL};
    cdsh_process_opts o = {.stdout_mode = CDSH_PROCESS_PIPE};
    cdsh_process *p = NULL;
    assert_int_equal(cdsh_process_spawn(argv, &o, &p, NULL), 0);
    char line[64] = {0};
    size_t n = 0;
    while (n < sizeof line - 1) {
        ssize_t k = read(cdsh_process_stdout_fd(p), line + n, 1);
        if (k <= 0 || line[n] == '\n')
            break;
        n++;
    }
    pid_t grandchild = (pid_t)atoi(line);
    assert_true(grandchild > 0);
    cdsh_process_status st;
    assert_int_equal(cdsh_process_terminate(p, 5000, &st, NULL), 0);
    assert_false(st.exited);
    assert_int_equal(st.term_signal, SIGTERM);
    int wst = reap_within(grandchild, cdsh_test_scale_ms(30000));
    assert_true(WIFSIGNALED(wst));
    assert_int_equal(WTERMSIG(wst), SIGTERM);
    cdsh_process_free(p);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
}

static void terminate_kills_after_the_grace_period(void **state)
{
    (void)state;
    const char *argv[] = {peer, "ignore-term", NULL};
    cdsh_process_opts o = {.stdout_mode = CDSH_PROCESS_PIPE};
    cdsh_process *p = NULL;
    assert_int_equal(cdsh_process_spawn(argv, &o, &p, NULL), 0);
    char buf[16] = {0};
    assert_true(read(cdsh_process_stdout_fd(p), buf, sizeof buf - 1) > 0);
    assert_string_equal(buf, "ready\n");
    cdsh_process_status st;
    int64_t t0 = mono_ms();
    assert_int_equal(cdsh_process_terminate(p, 300, &st, NULL), 0);
    int64_t took = mono_ms() - t0;
    assert_true(took >= 280);
    assert_true(took < 30000); /* the peer would sleep 60 s */
    assert_false(st.exited);
    assert_int_equal(st.term_signal, SIGKILL);
    char text[128];
    cdsh_process_status_describe(&st, text, sizeof text);
    assert_string_equal(text, "killed by signal 9 (Killed)");
    cdsh_process_free(p);
}

/* ---- waits ---- */

typedef struct firer {
    cdsh_cancel *tok;
    int delay_ms;
} firer;

static void *fire_later(void *arg)
{
    firer *f = arg;
    struct timespec ts = {0, (long)f->delay_ms * 1000000L};
    nanosleep(&ts, NULL);
    cdsh_cancel_fire(f->tok, "shutting down");
    return NULL;
}

static void wait_times_out_and_observes_cancel(void **state)
{
    (void)state;
    const char *argv[] = {"/bin/sleep", "60", NULL};
    cdsh_process *p = NULL;
    assert_int_equal(cdsh_process_spawn(argv, NULL, &p, NULL), 0);
    cdsh_error err = {0};
    int64_t t0 = mono_ms();
    assert_int_equal(cdsh_process_wait(p, 150, NULL, NULL, &err), CDSH_ETIMEDOUT);
    assert_true(mono_ms() - t0 >= 140);
    assert_string_equal(err.code, "TIMEOUT");
    char want[256];
    snprintf(want, sizeof want, "/bin/sleep (pid %d) still running after 150 ms",
             (int)cdsh_process_pid(p));
    assert_string_equal(err.message, want);
    assert_int_equal(cdsh_process_wait(p, 0, NULL, NULL, &err), CDSH_ETIMEDOUT);

    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    firer f = {tok, 100};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fire_later, &f), 0);
    t0 = mono_ms();
    assert_int_equal(cdsh_process_wait(p, -1, tok, NULL, &err), CDSH_ECANCELED);
    assert_true(mono_ms() - t0 < 30000); /* the sleep would take 60 s */
    pthread_join(t, NULL);
    assert_string_equal(err.code, "CANCELLED");
    assert_non_null(strstr(err.message, "shutting down"));
    cdsh_cancel_free(tok);

    cdsh_process_status st;
    assert_int_equal(cdsh_process_signal(p, SIGINT, NULL), 0);
    assert_int_equal(cdsh_process_wait(p, 30000, NULL, &st, NULL), 0);
    assert_false(st.exited);
    assert_int_equal(st.term_signal, SIGINT);
    assert_int_equal(cdsh_process_signal(p, SIGINT, NULL), 0); /* reaped: no-op */
    cdsh_process_free(p);
}

static void free_kills_a_running_child(void **state)
{
    (void)state;
    const char *argv[] = {"/bin/sleep", "30", NULL};
    cdsh_process *p = NULL;
    assert_int_equal(cdsh_process_spawn(argv, NULL, &p, NULL), 0);
    pid_t pid = cdsh_process_pid(p);
    cdsh_process_free(p);
    assert_int_equal(kill(pid, 0), -1); /* reaped, gone */
    assert_int_equal(errno, ESRCH);
}

static void status_describe_wording(void **state)
{
    (void)state;
    char buf[64];
    cdsh_process_status ok = {.exited = true, .exit_code = 3};
    cdsh_process_status_describe(&ok, buf, sizeof buf);
    assert_string_equal(buf, "exited with status 3");
    cdsh_process_status sig = {.exited = false, .term_signal = SIGTERM};
    cdsh_process_status_describe(&sig, buf, sizeof buf);
    assert_string_equal(buf, "killed by signal 15 (Terminated)");
}

/* ---- concurrency ---- */

typedef struct spawner {
    const char *peer;
    int index;
    int failures;
} spawner;

static void *spawn_many(void *arg)
{
    spawner *s = arg;
    for (int j = 0; j < 12; j++) {
        char word[32];
        snprintf(word, sizeof word, "t%d-%d", s->index, j);
        const char *echo[] = {"/bin/echo", word, NULL};
        cdsh_process_result r;
        cdsh_process_run_opts o = {.timeout_ms = cdsh_test_scale_ms(20000)};
        char want[40];
        snprintf(want, sizeof want, "%s\n", word);
        if (cdsh_process_run(echo, &o, &r, NULL) != 0 || strcmp(r.out, want) != 0)
            s->failures++;
        cdsh_process_result_deinit(&r);
        /* While other threads hold pipes open, none may leak into this child. */
        const char *fds[] = {s->peer, "fds", NULL};
        if (cdsh_process_run(fds, &o, &r, NULL) != 0 || r.out_len != 0)
            s->failures++;
        cdsh_process_result_deinit(&r);
    }
    return NULL;
}

static void concurrent_spawns_from_four_threads(void **state)
{
    (void)state;
    pthread_t t[4];
    spawner s[4];
    for (int i = 0; i < 4; i++) {
        s[i] = (spawner){peer, i, 0};
        assert_int_equal(pthread_create(&t[i], NULL, spawn_many, &s[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(s[i].failures, 0);
    }
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(spawn_echoes_through_cat_pipes),
        T(run_captures_both_streams_and_the_exit_code),
        T(run_moves_megabytes_both_ways_without_deadlock),
        T(run_survives_a_child_that_ignores_its_stdin),
        T(run_stops_a_child_that_writes_too_much),
        T(run_times_out_and_terminates),
        T(env_is_scrubbed_of_credentials_except_allowed),
        T(env_set_overrides_and_explicit_env_is_exact),
        T(env_name_classification),
        T(cwd_is_applied_and_missing_cwd_is_reported),
        T(exec_failures_are_errors_not_exit_127),
        T(spawn_looks_up_bare_names_on_the_child_path),
        T(find_program_respects_executability),
        T(child_gets_no_descriptor_but_stdio),
        T(child_starts_with_default_sigpipe),
        T(child_leads_its_own_process_group),
        T(terminate_reaches_grandchildren_in_the_group),
        T(terminate_kills_after_the_grace_period),
        T(wait_times_out_and_observes_cancel),
        T(free_kills_a_running_child),
        T(status_describe_wording),
        T(concurrent_spawns_from_four_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
