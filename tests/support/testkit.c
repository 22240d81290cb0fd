/* testkit.c — temp homes, child processes with captured output, file
 * helpers for tests. Written on plain POSIX so tests of base/process do not
 * depend on the module they test. */
#include "support/testkit.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/home.h"

/* The handle on the current test home (tests are single-threaded here). */
static cdsh_home *test_home;

char *cdsh_test_home_new(void)
{
    char tmpl[] = "/tmp/cdsh-test-XXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    setenv("CDSH_HOME", dir, 1);
    cdsh_home_free(test_home);
    test_home = NULL;
    assert_int_equal(cdsh_home_new(dir, &test_home, NULL), 0);
    return strdup(dir);
}

const cdsh_home *cdsh_test_home(void)
{
    return test_home;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void cdsh_test_home_free(char *path)
{
    if (!path)
        return;
    if (test_home && strcmp(cdsh_home_dir_get(test_home), path) == 0) {
        cdsh_home_free(test_home);
        test_home = NULL;
    }
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(path);
}

char *cdsh_test_peer_path_dup(const char *name)
{
    size_t n = strlen(CDSH_TEST_PEER_DIR) + strlen(name) + 2;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/%s", CDSH_TEST_PEER_DIR, name);
    return p;
}

typedef struct sink {
    char *data;
    size_t len, cap;
} sink;

static void sink_add(sink *s, const char *buf, size_t n)
{
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + n + 1)
            cap *= 2;
        s->data = realloc(s->data, cap);
        assert_non_null(s->data);
        s->cap = cap;
    }
    memcpy(s->data + s->len, buf, n);
    s->len += n;
    s->data[s->len] = '\0';
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cdsh_test_run(char *const argv[], const char *stdin_text, char **out, char **err,
                  int timeout_ms)
{
    int in_p[2], out_p[2], err_p[2];
    if (pipe2(in_p, O_CLOEXEC) || pipe2(out_p, O_CLOEXEC) || pipe2(err_p, O_CLOEXEC))
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(in_p[0], 0);
        dup2(out_p[1], 1);
        dup2(err_p[1], 2);
        execv(argv[0], argv);
        _exit(127);
    }
    close(in_p[0]);
    close(out_p[1]);
    close(err_p[1]);
    signal(SIGPIPE, SIG_IGN);
    if (stdin_text) {
        size_t left = strlen(stdin_text);
        const char *p = stdin_text;
        while (left > 0) {
            ssize_t w = write(in_p[1], p, left);
            if (w <= 0)
                break;
            p += w;
            left -= (size_t)w;
        }
    }
    close(in_p[1]);

    sink so = {0}, se = {0};
    sink_add(&so, "", 0);
    sink_add(&se, "", 0);
    struct pollfd fds[2] = {{out_p[0], POLLIN, 0}, {err_p[0], POLLIN, 0}};
    int open_fds = 2;
    int budget = cdsh_test_scale_ms(timeout_ms);
    long long deadline = now_ms() + budget;
    while (open_fds > 0) {
        long long left = deadline - now_ms();
        if (left <= 0) {
            fprintf(stderr,
                    "cdsh_test_run: %s did not finish within its budget of %d ms (%d ms x "
                    "CDSH_TEST_TIMEOUT_SCALE %g); killed\n",
                    argv[0], budget, timeout_ms, cdsh_test_timeout_scale());
            kill(pid, SIGKILL);
            break;
        }
        if (poll(fds, 2, (int)left) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP)))
                continue;
            char buf[4096];
            ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            } else {
                sink_add(i == 0 ? &so : &se, buf, (size_t)n);
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    int status = 0;
    waitpid(pid, &status, 0);
    if (out)
        *out = so.data;
    else
        free(so.data);
    if (err)
        *err = se.data;
    else
        free(se.data);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

int cdsh_test_run_cdsh(const char *stdin_text, char **out, char **err, const char *arg, ...)
{
    char *argv[64];
    int n = 0;
    argv[n++] = CDSH_BINARY;
    va_list ap;
    va_start(ap, arg);
    for (const char *a = arg; a && n < 63; a = va_arg(ap, const char *))
        argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    return cdsh_test_run(argv, stdin_text, out, err, 60000);
}

const char *cdsh_test_data_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || access(path, R_OK) != 0)
        fail_msg("test data missing: %s (%s); tests/data/README.md lists what the suite reads",
                 path, strerror(errno ? errno : ENOENT));
    return path;
}

char *cdsh_test_read_file(const char *path, size_t *len)
{
    static const char data_dir[] = CDSH_TEST_DATA_DIR "/";
    if (strncmp(path, data_dir, sizeof data_dir - 1) == 0)
        cdsh_test_data_path(path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    sink s = {0};
    sink_add(&s, "", 0);
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        sink_add(&s, buf, n);
    fclose(f);
    if (len)
        *len = s.len;
    return s.data;
}

void cdsh_test_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}
