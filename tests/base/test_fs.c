/* test_fs.c — base/fs: atomic writes that fail safely, bounded reads, lock
 * contention across threads and processes, mkdir -p, the normalise table,
 * containment against ".." and symlink escapes, tree removal, listings. */
#include "support/testkit.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"

static char *tmpdir;

static int setup(void **state)
{
    (void)state;
    tmpdir = cdsh_test_home_new();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cdsh_test_home_free(tmpdir);
    tmpdir = NULL;
    return 0;
}

/* Owned "<tmpdir>/<rel>", normalised. */
static char *tpath(const char *rel)
{
    char *p = cdsh_fs_path_join_dup(tmpdir, rel);
    assert_non_null(p);
    return p;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t count_entries(const char *dir)
{
    char **names = NULL;
    size_t n = 0;
    assert_int_equal(cdsh_fs_list_dir(dir, &names, &n, NULL), 0);
    cdsh_fs_list_free(names);
    return n;
}

/* ---- atomic write ---- */

static void write_atomic_creates_file_with_given_mode(void **state)
{
    (void)state;
    char *p = tpath("a.txt");
    cdsh_error err = {0};
    assert_int_equal(cdsh_fs_write_atomic(p, "hello", 5, 0640, &err), 0);
    size_t len = 0;
    char *got = cdsh_test_read_file(p, &len);
    assert_string_equal(got, "hello");
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    assert_int_equal(count_entries(tmpdir), 1); /* no temp file left */
    free(got);
    free(p);
}

static void write_atomic_new_file_defaults_to_private_mode(void **state)
{
    (void)state;
    char *p = tpath("new.txt");
    assert_int_equal(cdsh_fs_write_atomic(p, "", 0, CDSH_FS_MODE_KEEP, NULL), 0);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_size, 0);
    free(p);
}

static void write_atomic_keeps_existing_mode_and_replaces_content(void **state)
{
    (void)state;
    char *p = tpath("keep.txt");
    cdsh_test_write_file(p, "old old old");
    assert_int_equal(chmod(p, 0604), 0);
    assert_int_equal(cdsh_fs_write_atomic(p, "new", 3, CDSH_FS_MODE_KEEP, NULL), 0);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0604);
    char *got = cdsh_test_read_file(p, NULL);
    assert_string_equal(got, "new");
    free(got);
    free(p);
}

static void write_atomic_onto_directory_fails_and_leaves_no_temp(void **state)
{
    (void)state;
    char *p = tpath("dir");
    assert_int_equal(mkdir(p, 0700), 0);
    char *inner = tpath("dir/keep");
    cdsh_test_write_file(inner, "inside");
    cdsh_error err = {0};
    assert_int_equal(cdsh_fs_write_atomic(p, "x", 1, 0600, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "NOT_REGULAR_FILE");
    assert_non_null(strstr(err.message, p));
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(count_entries(tmpdir), 1); /* only "dir": the temp file is gone */
    char *got = cdsh_test_read_file(inner, NULL);
    assert_string_equal(got, "inside");
    free(got);
    free(inner);
    free(p);
}

static void write_atomic_through_a_file_component_fails_naming_path(void **state)
{
    (void)state;
    char *file = tpath("plain");
    cdsh_test_write_file(file, "plain");
    char *p = tpath("plain/child.txt");
    cdsh_error err = {0};
    int rc = cdsh_fs_write_atomic(p, "x", 1, 0600, &err);
    assert_int_equal(rc, CDSH_EIO);
    assert_string_equal(err.code, "IO_ERROR");
    assert_non_null(strstr(err.message, p));
    assert_non_null(strstr(err.message, "Not a directory"));
    char *got = cdsh_test_read_file(file, NULL);
    assert_string_equal(got, "plain");
    free(got);
    free(p);
    free(file);
}

static void write_atomic_into_missing_directory_is_not_found(void **state)
{
    (void)state;
    char *p = tpath("missing/x.txt");
    cdsh_error err = {0};
    assert_int_equal(cdsh_fs_write_atomic(p, "x", 1, 0600, &err), CDSH_ENOTFOUND);
    assert_non_null(strstr(err.message, p));
    free(p);
}

static void write_atomic_keeps_old_content_when_the_write_fails(void **state)
{
    (void)state;
    char *p = tpath("precious.txt");
    cdsh_test_write_file(p, "precious");
    /* A file-size limit makes write(2) fail midway (works as root too); run in
     * a child so the limit does not leak into other tests. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {1024, 1024};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(10);
        static char big[8192];
        memset(big, 'z', sizeof big);
        cdsh_error err = {0};
        int rc = cdsh_fs_write_atomic(p, big, sizeof big, 0600, &err);
        if (rc != CDSH_EIO)
            _exit(11);
        if (!strstr(err.message, p) || !strstr(err.message, "File too large"))
            _exit(12);
        _exit(0);
    }
    int wst = 0;
    assert_int_equal(waitpid(pid, &wst, 0), pid);
    assert_true(WIFEXITED(wst));
    assert_int_equal(WEXITSTATUS(wst), 0);
    char *got = cdsh_test_read_file(p, NULL);
    assert_string_equal(got, "precious");
    assert_int_equal(count_entries(tmpdir), 1);
    free(got);
    free(p);
}

static void write_atomic_refuses_a_symlink_and_leaves_both_alone(void **state)
{
    (void)state;
    char *target = tpath("target.txt");
    char *link = tpath("link.txt");
    cdsh_test_write_file(target, "target");
    assert_int_equal(symlink(target, link), 0);
    cdsh_error err = {0};
    assert_int_equal(cdsh_fs_write_atomic(link, "replaced", 8, 0600, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "NOT_REGULAR_FILE");
    assert_non_null(strstr(err.message, "symbolic link"));
    assert_non_null(strstr(err.message, target));
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    char *got = cdsh_test_read_file(target, NULL);
    assert_string_equal(got, "target");
    free(got);
    free(link);
    free(target);
}

/* A FIFO, a device node and a directory at the target are refused and left
 * in place; nothing is left behind in the directory. */
static void write_atomic_refuses_fifos_devices_and_directories(void **state)
{
    (void)state;
    char *fifo = tpath("pipe");
    char *dir = tpath("adir");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(mkdir(dir, 0700), 0);
    struct {
        const char *path, *what;
    } cases[] = {{fifo, "a FIFO"}, {dir, "a directory"}, {"/dev/null", "a character device"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cdsh_error err = {0};
        assert_int_equal(cdsh_fs_write_atomic(cases[i].path, "x", 1, 0600, &err), CDSH_EINVAL);
        assert_string_equal(err.code, "NOT_REGULAR_FILE");
        assert_non_null(strstr(err.message, cases[i].what));
    }
    struct stat st;
    assert_int_equal(lstat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(lstat("/dev/null", &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    assert_int_equal(lstat(dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(count_entries(tmpdir), 2); /* the FIFO and the directory: no temp file */
    free(fifo);
    free(dir);
}

static void write_atomic_rejects_bad_arguments(void **state)
{
    (void)state;
    cdsh_error err = {0};
    assert_int_equal(cdsh_fs_write_atomic(NULL, "x", 1, 0600, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_ARGS");
    assert_int_equal(cdsh_fs_write_atomic("", "x", 1, 0600, &err), CDSH_EINVAL);
    char p[4096];
    snprintf(p, sizeof p, "%s/sub/", tmpdir);
    assert_int_equal(cdsh_fs_write_atomic(p, "x", 1, 0600, &err), CDSH_EINVAL);
    assert_non_null(strstr(err.message, p));
}

/* ---- read ---- */

static void read_file_returns_content_and_length(void **state)
{
    (void)state;
    char *p = tpath("r.txt");
    const char bin[] = {'a', '\0', 'b'};
    assert_int_equal(cdsh_fs_write_atomic(p, bin, 3, 0600, NULL), 0);
    char *buf = NULL;
    size_t len = 0;
    assert_int_equal(cdsh_fs_read_file(p, SIZE_MAX, &buf, &len, NULL), 0);
    assert_int_equal(len, 3);
    assert_memory_equal(buf, bin, 3);
    assert_int_equal(buf[3], '\0');
    free(buf);
    free(p);
}

static void read_file_enforces_the_size_limit(void **state)
{
    (void)state;
    char *p = tpath("limit.txt");
    cdsh_test_write_file(p, "0123456789");
    char *buf = NULL;
    size_t len = 99;
    cdsh_error err = {0};
    assert_int_equal(cdsh_fs_read_file(p, 10, &buf, &len, &err), 0);
    assert_string_equal(buf, "0123456789");
    free(buf);
    assert_int_equal(cdsh_fs_read_file(p, 9, &buf, &len, &err), CDSH_ETOOBIG);
    assert_null(buf);
    assert_int_equal(len, 0);
    assert_string_equal(err.code, "TOO_BIG");
    assert_non_null(strstr(err.message, p));
    assert_non_null(strstr(err.message, "9 bytes"));
    assert_int_equal(cdsh_fs_read_file(p, 0, &buf, &len, &err), CDSH_ETOOBIG);
    char *empty = tpath("empty.txt");
    cdsh_test_write_file(empty, "");
    assert_int_equal(cdsh_fs_read_file(empty, 0, &buf, &len, &err), 0);
    assert_string_equal(buf, "");
    assert_int_equal(len, 0);
    free(buf);
    free(empty);
    free(p);
}

static void read_file_handles_files_without_a_size(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    assert_int_equal(cdsh_fs_read_file("/proc/self/status", SIZE_MAX, &buf, &len, NULL), 0);
    assert_true(len > 0);
    assert_non_null(strstr(buf, "Pid:"));
    free(buf);
}

static void read_file_reports_missing_and_directories(void **state)
{
    (void)state;
    char *p = tpath("nope.txt");
    char *buf = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_fs_read_file(p, SIZE_MAX, &buf, NULL, &err), CDSH_ENOTFOUND);
    assert_string_equal(err.code, "NOT_FOUND");
    assert_non_null(strstr(err.message, p));
    assert_int_equal(cdsh_fs_read_file(tmpdir, SIZE_MAX, &buf, NULL, &err), CDSH_EIO);
    assert_non_null(strstr(err.message, "is a directory"));
    assert_non_null(strstr(err.message, tmpdir));
    assert_null(buf);
    free(p);
}

/* ---- locks ---- */

typedef struct lock_job {
    const char *path;
    cdsh_fs_lock_kind kind;
    int64_t timeout_ms;
    cdsh_cancel *cancel;
    int rc;
    cdsh_error err;
    int64_t elapsed_ms;
} lock_job;

static void *lock_thread(void *arg)
{
    lock_job *j = arg;
    cdsh_fs_lock *lock = NULL;
    int64_t t0 = mono_ms();
    j->rc = cdsh_fs_lock_open(j->path, j->kind, j->timeout_ms, j->cancel, &lock, &j->err);
    j->elapsed_ms = mono_ms() - t0;
    cdsh_fs_lock_close(lock);
    return NULL;
}

static int run_lock_job(lock_job *j)
{
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, lock_thread, j), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    return j->rc;
}

static void lock_exclusive_times_out_against_another_thread(void **state)
{
    (void)state;
    char *p = tpath("x.lock");
    cdsh_fs_lock *held = NULL;
    assert_int_equal(cdsh_fs_lock_open(p, CDSH_FS_LOCK_EXCLUSIVE, 0, NULL, &held, NULL), 0);
    lock_job j = {.path = p, .kind = CDSH_FS_LOCK_EXCLUSIVE, .timeout_ms = 150};
    assert_int_equal(run_lock_job(&j), CDSH_ETIMEDOUT);
    assert_string_equal(j.err.code, "LOCK_TIMEOUT");
    assert_non_null(strstr(j.err.message, p));
    assert_non_null(strstr(j.err.message, "150 ms"));
    assert_true(j.elapsed_ms >= 140);
    lock_job s = {.path = p, .kind = CDSH_FS_LOCK_SHARED, .timeout_ms = 0};
    assert_int_equal(run_lock_job(&s), CDSH_ETIMEDOUT);
    cdsh_fs_lock_close(held);
    lock_job again = {.path = p, .kind = CDSH_FS_LOCK_EXCLUSIVE, .timeout_ms = 0};
    assert_int_equal(run_lock_job(&again), 0);
    free(p);
}

static void lock_shared_holders_coexist_but_exclude_writers(void **state)
{
    (void)state;
    char *p = tpath("s.lock");
    cdsh_fs_lock *a = NULL, *b = NULL;
    assert_int_equal(cdsh_fs_lock_open(p, CDSH_FS_LOCK_SHARED, 0, NULL, &a, NULL), 0);
    assert_int_equal(cdsh_fs_lock_open(p, CDSH_FS_LOCK_SHARED, 0, NULL, &b, NULL), 0);
    lock_job w = {.path = p, .kind = CDSH_FS_LOCK_EXCLUSIVE, .timeout_ms = 50};
    assert_int_equal(run_lock_job(&w), CDSH_ETIMEDOUT);
    assert_non_null(strstr(w.err.message, "exclusive lock"));
    cdsh_fs_lock_close(a);
    assert_int_equal(run_lock_job(&w), CDSH_ETIMEDOUT);
    cdsh_fs_lock_close(b);
    assert_int_equal(run_lock_job(&w), 0);
    free(p);
}

typedef struct delayed {
    cdsh_fs_lock *lock;
    cdsh_cancel *cancel;
    int delay_ms;
} delayed;

static void *release_later(void *arg)
{
    delayed *d = arg;
    struct timespec ts = {0, (long)d->delay_ms * 1000000L};
    nanosleep(&ts, NULL);
    if (d->lock)
        cdsh_fs_lock_close(d->lock);
    if (d->cancel)
        cdsh_cancel_fire(d->cancel, "user pressed stop");
    return NULL;
}

static void lock_waiter_gets_the_lock_once_released(void **state)
{
    (void)state;
    char *p = tpath("w.lock");
    delayed d = {.delay_ms = 150};
    assert_int_equal(cdsh_fs_lock_open(p, CDSH_FS_LOCK_EXCLUSIVE, 0, NULL, &d.lock, NULL), 0);
    /* t0 before the releaser starts: the release comes >= 150 ms after t0
     * however the threads are scheduled */
    int64_t t0 = mono_ms();
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, release_later, &d), 0);
    cdsh_fs_lock *mine = NULL;
    assert_int_equal(cdsh_fs_lock_open(p, CDSH_FS_LOCK_EXCLUSIVE, 60000, NULL, &mine, NULL), 0);
    int64_t waited = mono_ms() - t0;
    assert_true(waited >= 140);
    assert_true(waited < 30000); /* woken by the release, not the 60 s budget */
    pthread_join(t, NULL);
    cdsh_fs_lock_close(mine);
    free(p);
}

static void lock_wait_observes_cancellation(void **state)
{
    (void)state;
    char *p = tpath("c.lock");
    cdsh_fs_lock *held = NULL;
    assert_int_equal(cdsh_fs_lock_open(p, CDSH_FS_LOCK_EXCLUSIVE, 0, NULL, &held, NULL), 0);
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    delayed d = {.cancel = tok, .delay_ms = 100};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, release_later, &d), 0);
    lock_job j = {.path = p, .kind = CDSH_FS_LOCK_EXCLUSIVE, .timeout_ms = -1, .cancel = tok};
    assert_int_equal(run_lock_job(&j), CDSH_ECANCELED);
    pthread_join(t, NULL);
    assert_string_equal(j.err.code, "CANCELLED");
    assert_non_null(strstr(j.err.message, p));
    assert_non_null(strstr(j.err.message, "user pressed stop"));
    assert_true(j.elapsed_ms < 30000); /* no timeout: only the cancel wakes it */
    /* An already-fired token refuses at once even if the lock is free. */
    cdsh_fs_lock_close(held);
    lock_job k = {.path = p, .kind = CDSH_FS_LOCK_SHARED, .timeout_ms = 1000, .cancel = tok};
    assert_int_equal(run_lock_job(&k), CDSH_ECANCELED);
    cdsh_cancel_free(tok);
    free(p);
}

static void lock_contends_between_processes(void **state)
{
    (void)state;
    char *p = tpath("proc.lock");
    /* the child holds the lock until told to let go (then 150 ms more), so
     * the parent's attempts never race its release */
    int ready[2], go[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(go[1]);
        cdsh_fs_lock *l = NULL;
        if (cdsh_fs_lock_open(p, CDSH_FS_LOCK_EXCLUSIVE, 0, NULL, &l, NULL) != 0)
            _exit(1);
        if (write(ready[1], "x", 1) != 1)
            _exit(2);
        char g;
        if (read(go[0], &g, 1) != 1)
            _exit(3);
        struct timespec ts = {0, 150 * 1000000L};
        nanosleep(&ts, NULL);
        cdsh_fs_lock_close(l);
        _exit(0);
    }
    close(ready[1]);
    close(go[0]);
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);
    cdsh_fs_lock *mine = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_fs_lock_open(p, CDSH_FS_LOCK_SHARED, 0, NULL, &mine, &err),
                     CDSH_ETIMEDOUT);
    assert_non_null(strstr(err.message, p));
    int64_t t0 = mono_ms();
    assert_int_equal(write(go[1], "g", 1), 1);
    close(go[1]);
    assert_int_equal(cdsh_fs_lock_open(p, CDSH_FS_LOCK_EXCLUSIVE, 60000, NULL, &mine, &err), 0);
    assert_true(mono_ms() - t0 >= 140); /* it did wait for the child's release */
    cdsh_fs_lock_close(mine);
    int wst;
    assert_int_equal(waitpid(pid, &wst, 0), pid);
    assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    free(p);
}

static void lock_in_missing_directory_names_the_file(void **state)
{
    (void)state;
    char *p = tpath("nodir/x.lock");
    cdsh_fs_lock *l = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_fs_lock_open(p, CDSH_FS_LOCK_EXCLUSIVE, 0, NULL, &l, &err),
                     CDSH_ENOTFOUND);
    assert_null(l);
    assert_non_null(strstr(err.message, p));
    assert_int_equal(cdsh_fs_lock_open(p, (cdsh_fs_lock_kind)7, 0, NULL, &l, &err), CDSH_EINVAL);
    free(p);
}

/* ---- mkdir -p ---- */

static void mkdir_p_creates_parents_and_accepts_existing(void **state)
{
    (void)state;
    char p[4096];
    snprintf(p, sizeof p, "%s/a//b/./c/", tmpdir);
    mode_t old = umask(0);
    assert_int_equal(cdsh_fs_mkdir_p(p, 0750, NULL), 0);
    umask(old);
    char *c = tpath("a/b/c");
    struct stat st;
    assert_int_equal(stat(c, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0750);
    assert_int_equal(cdsh_fs_mkdir_p(c, 0700, NULL), 0); /* again: fine */
    assert_int_equal(cdsh_fs_mkdir_p("/", 0700, NULL), 0);
    assert_int_equal(cdsh_fs_mkdir_p(tmpdir, 0700, NULL), 0);
    free(c);
}

static void mkdir_p_reports_the_file_in_the_way(void **state)
{
    (void)state;
    char *file = tpath("blocker");
    cdsh_test_write_file(file, "x");
    char *p = tpath("blocker/sub/dir");
    cdsh_error err = {0};
    assert_int_equal(cdsh_fs_mkdir_p(p, 0700, &err), CDSH_EEXIST);
    assert_string_equal(err.code, "NOT_A_DIRECTORY");
    char want[4096];
    snprintf(want, sizeof want, "%s exists and is not a directory", file);
    assert_non_null(strstr(err.message, want));
    assert_int_equal(cdsh_fs_mkdir_p(file, 0700, &err), CDSH_EEXIST);
    assert_non_null(strstr(err.message, want));
    assert_int_equal(cdsh_fs_mkdir_p("", 0700, &err), CDSH_EINVAL);
    assert_int_equal(cdsh_fs_mkdir_p(p, -1, &err), CDSH_EINVAL);
    free(p);
    free(file);
}

static void mkdir_p_follows_symlinks_to_directories(void **state)
{
    (void)state;
    char *real = tpath("real");
    char *link = tpath("link");
    assert_int_equal(mkdir(real, 0700), 0);
    assert_int_equal(symlink(real, link), 0);
    char *p = tpath("link/deeper");
    assert_int_equal(cdsh_fs_mkdir_p(p, 0700, NULL), 0);
    char *q = tpath("real/deeper");
    struct stat st;
    assert_int_equal(stat(q, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    free(q);
    free(p);
    free(link);
    free(real);
}

/* ---- normalise / join ---- */

static void normalize_follows_the_table(void **state)
{
    (void)state;
    static const char *const table[][2] = {
        {"", "."},
        {".", "."},
        {"./", "."},
        {"/", "/"},
        {"//", "/"},
        {"///a//b///", "/a/b"},
        {"a/./b/.", "a/b"},
        {"a/b/..", "a"},
        {"a/b/../..", "."},
        {"a/../..", ".."},
        {"../a", "../a"},
        {"../../a/../b", "../../b"},
        {"./../.", ".."},
        {"/..", "/"},
        {"/../a/../../b", "/b"},
        {"/a/b/c/../../d", "/a/d"},
        {"a/..b/c", "a/..b/c"},
        {".../x", ".../x"},
        {"a/.hidden/./", "a/.hidden"},
        {"x/../../y/./z/..", "../y"},
    };
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        char *got = cdsh_fs_path_normalize_dup(table[i][0]);
        assert_non_null(got);
        if (strcmp(got, table[i][1]) != 0)
            fail_msg("normalize(\"%s\") = \"%s\", want \"%s\"", table[i][0], got, table[i][1]);
        free(got);
    }
    assert_null(cdsh_fs_path_normalize_dup(NULL));
}

static void join_normalizes_and_lets_absolute_win(void **state)
{
    (void)state;
    static const char *const table[][3] = {
        {"/base", "a/b", "/base/a/b"},
        {"/base/", "../x", "/x"},
        {"/base", "../../..", "/"},
        {"base", "../..", ".."},
        {"/base", "/etc/passwd", "/etc/passwd"},
        {"/base", "", "/base"},
        {"", "a", "a"},
        {".", "./a/", "a"},
    };
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        char *got = cdsh_fs_path_join_dup(table[i][0], table[i][1]);
        assert_non_null(got);
        if (strcmp(got, table[i][2]) != 0)
            fail_msg("join(\"%s\", \"%s\") = \"%s\", want \"%s\"", table[i][0], table[i][1], got,
                     table[i][2]);
        free(got);
    }
    assert_null(cdsh_fs_path_join_dup(NULL, "a"));
}

/* ---- containment ---- */

static void is_inside_accepts_paths_below_root(void **state)
{
    (void)state;
    char *root = tpath("root");
    char *sub = tpath("root/sub");
    assert_int_equal(mkdir(root, 0700), 0);
    assert_int_equal(mkdir(sub, 0700), 0);
    assert_true(cdsh_fs_path_is_inside(root, "sub"));
    assert_true(cdsh_fs_path_is_inside(root, "sub/not-yet/file.txt"));
    assert_true(cdsh_fs_path_is_inside(root, "sub/../other"));
    assert_true(cdsh_fs_path_is_inside(root, sub));
    assert_true(cdsh_fs_path_is_inside(root, "."));
    assert_true(cdsh_fs_path_is_inside(root, "")); /* root itself counts as inside */
    assert_true(cdsh_fs_path_is_inside(root, root));
    free(sub);
    free(root);
}

static void is_inside_rejects_dotdot_escapes(void **state)
{
    (void)state;
    char *root = tpath("root");
    char *sibling = tpath("rootsibling");
    assert_int_equal(mkdir(root, 0700), 0);
    assert_int_equal(mkdir(sibling, 0700), 0);
    assert_false(cdsh_fs_path_is_inside(root, ".."));
    assert_false(cdsh_fs_path_is_inside(root, "../rootsibling/x"));
    assert_false(cdsh_fs_path_is_inside(root, "a/../../x"));
    assert_false(cdsh_fs_path_is_inside(root, "missing/../../x"));
    assert_false(cdsh_fs_path_is_inside(root, sibling)); /* shares the prefix, not inside */
    assert_false(cdsh_fs_path_is_inside(root, "/etc/passwd"));
    assert_false(cdsh_fs_path_is_inside(root, tmpdir));
    free(sibling);
    free(root);
}

static void is_inside_rejects_symlink_escapes(void **state)
{
    (void)state;
    char *root = tpath("root");
    char *outside = tpath("outside");
    assert_int_equal(mkdir(root, 0700), 0);
    assert_int_equal(mkdir(outside, 0700), 0);
    char *esc = tpath("root/escape");
    char *dangling = tpath("root/dangling");
    char *rel = tpath("root/rel");
    char *ok = tpath("root/ok");
    char *loop = tpath("root/loop");
    assert_int_equal(symlink(outside, esc), 0);
    assert_int_equal(symlink("../outside/new-file", dangling), 0);
    assert_int_equal(symlink("../outside", rel), 0);
    assert_int_equal(symlink("sub", ok), 0);
    assert_int_equal(symlink("loop", loop), 0);
    assert_false(cdsh_fs_path_is_inside(root, "escape"));
    assert_false(cdsh_fs_path_is_inside(root, "escape/new.txt"));
    assert_false(cdsh_fs_path_is_inside(root, "dangling"));
    assert_false(cdsh_fs_path_is_inside(root, "rel/x"));
    assert_false(cdsh_fs_path_is_inside(root, "loop/x"));
    /* A missing component followed by ".." must not hide a later symlink. */
    assert_false(cdsh_fs_path_is_inside(root, "missing/../escape/x"));
    /* escape/.. is the parent of the link's target (lexically it would be root). */
    assert_false(cdsh_fs_path_is_inside(root, "escape/.."));
    assert_true(cdsh_fs_path_is_inside(root, "ok/x")); /* points inside, not yet existing */
    free(loop);
    free(ok);
    free(rel);
    free(dangling);
    free(esc);
    free(outside);
    free(root);
}

static void is_inside_resolves_a_symlinked_root(void **state)
{
    (void)state;
    char *root = tpath("realroot");
    char *alias = tpath("alias");
    assert_int_equal(mkdir(root, 0700), 0);
    assert_int_equal(symlink(root, alias), 0);
    char *via_alias = tpath("alias/file");
    char *via_real = tpath("realroot/file");
    assert_true(cdsh_fs_path_is_inside(alias, via_real));
    assert_true(cdsh_fs_path_is_inside(root, via_alias));
    free(via_real);
    free(via_alias);
    free(alias);
    free(root);
}

static void is_inside_fails_closed_without_a_root(void **state)
{
    (void)state;
    char *missing = tpath("missing-root");
    assert_false(cdsh_fs_path_is_inside(missing, "x"));
    assert_false(cdsh_fs_path_is_inside(NULL, "x"));
    assert_false(cdsh_fs_path_is_inside(tmpdir, NULL));
    assert_true(cdsh_fs_path_is_inside("/", "/etc"));
    free(missing);
}

/* ---- remove tree / list ---- */

static void remove_tree_removes_everything_but_symlink_targets(void **state)
{
    (void)state;
    char *outside = tpath("outside");
    char *keep = tpath("outside/keep.txt");
    char *tree = tpath("tree/a/b/c");
    assert_int_equal(mkdir(outside, 0700), 0);
    cdsh_test_write_file(keep, "keep");
    assert_int_equal(cdsh_fs_mkdir_p(tree, 0700, NULL), 0);
    char *f1 = tpath("tree/a/file");
    char *f2 = tpath("tree/a/b/c/deep");
    char *ln = tpath("tree/a/b/link-out");
    cdsh_test_write_file(f1, "1");
    cdsh_test_write_file(f2, "2");
    assert_int_equal(symlink(outside, ln), 0);
    char *top = tpath("tree");
    assert_int_equal(cdsh_fs_remove_tree(top, NULL), 0);
    struct stat st;
    assert_int_equal(lstat(top, &st), -1);
    char *got = cdsh_test_read_file(keep, NULL);
    assert_string_equal(got, "keep");
    assert_int_equal(cdsh_fs_remove_tree(top, NULL), 0); /* missing: fine */
    free(got);
    free(top);
    free(ln);
    free(f2);
    free(f1);
    free(tree);
    free(keep);
    free(outside);
}

static void remove_tree_on_a_symlink_removes_only_the_link(void **state)
{
    (void)state;
    char *dir = tpath("dir");
    char *file = tpath("dir/f");
    char *link = tpath("link");
    assert_int_equal(mkdir(dir, 0700), 0);
    cdsh_test_write_file(file, "f");
    assert_int_equal(symlink(dir, link), 0);
    assert_int_equal(cdsh_fs_remove_tree(link, NULL), 0);
    struct stat st;
    assert_int_equal(lstat(link, &st), -1);
    assert_int_equal(stat(file, &st), 0);
    free(link);
    free(file);
    free(dir);
}

static void list_dir_is_sorted_and_complete(void **state)
{
    (void)state;
    const char *names[] = {"b", "a", ".hidden", "B", "a2", "z"};
    for (size_t i = 0; i < 6; i++) {
        char *p = tpath(names[i]);
        cdsh_test_write_file(p, "x");
        free(p);
    }
    char **got = NULL;
    size_t n = 0;
    assert_int_equal(cdsh_fs_list_dir(tmpdir, &got, &n, NULL), 0);
    assert_int_equal(n, 6);
    const char *want[] = {".hidden", "B", "a", "a2", "b", "z"};
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(got[i], want[i]);
    assert_null(got[6]);
    cdsh_fs_list_free(got);
}

static void list_dir_reports_missing_and_files(void **state)
{
    (void)state;
    char *missing = tpath("missing");
    char *file = tpath("file");
    cdsh_test_write_file(file, "x");
    char **got = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_fs_list_dir(missing, &got, NULL, &err), CDSH_ENOTFOUND);
    assert_non_null(strstr(err.message, missing));
    assert_int_equal(cdsh_fs_list_dir(file, &got, NULL, &err), CDSH_EIO);
    assert_non_null(strstr(err.message, file));
    assert_null(got);
    char *empty = tpath("empty");
    assert_int_equal(mkdir(empty, 0700), 0);
    size_t n = 9;
    assert_int_equal(cdsh_fs_list_dir(empty, &got, &n, NULL), 0);
    assert_int_equal(n, 0);
    assert_null(got[0]);
    cdsh_fs_list_free(got);
    free(empty);
    free(file);
    free(missing);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)


typedef struct waiter {
    const char *path;
    cdsh_fs_lock *lock;
    int rc;
} waiter;

static void *wait_for_lock(void *arg)
{
    waiter *w = arg;
    w->rc = cdsh_fs_lock_open(w->path, CDSH_FS_LOCK_EXCLUSIVE, -1, NULL, &w->lock, NULL);
    return NULL;
}

/* Removing a held lock file never lets two holders in: a waiter that wakes
 * on the unlinked file locks the new one, which then excludes everyone. */
static void a_removed_lock_file_is_recreated_for_the_waiter(void **state)
{
    (void)state;
    char *p = tpath("x.lock");
    cdsh_fs_lock *held = NULL;
    assert_int_equal(cdsh_fs_lock_open(p, CDSH_FS_LOCK_EXCLUSIVE, 0, NULL, &held, NULL), 0);
    waiter w = {.path = p};
    pthread_t th;
    pthread_create(&th, NULL, wait_for_lock, &w);
    usleep(50000); /* let it block on the old file (if it is slower, it opens the new one) */
    assert_int_equal(cdsh_fs_lock_remove(held, NULL), 0);
    pthread_join(th, NULL);
    assert_int_equal(w.rc, 0);
    assert_int_equal(access(p, F_OK), 0); /* the waiter's file */
    cdsh_fs_lock *third = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_fs_lock_open(p, CDSH_FS_LOCK_EXCLUSIVE, 0, NULL, &third, &err),
                     CDSH_ETIMEDOUT);
    assert_string_equal(err.code, "LOCK_TIMEOUT");
    assert_int_equal(cdsh_fs_lock_remove(w.lock, NULL), 0);
    assert_int_equal(access(p, F_OK), -1);
    assert_int_equal(cdsh_fs_lock_remove(NULL, NULL), 0);
    free(p);
}

static void a_symlink_is_not_a_lock_file(void **state)
{
    (void)state;
    char *target = tpath("elsewhere");
    char *p = tpath("y.lock");
    assert_int_equal(symlink(target, p), 0);
    cdsh_fs_lock *l = NULL;
    cdsh_error err = {0};
    assert_true(cdsh_fs_lock_open(p, CDSH_FS_LOCK_EXCLUSIVE, 0, NULL, &l, &err) < 0);
    assert_null(l);
    assert_int_equal(access(target, F_OK), -1); /* nothing created through the link */
    free(p);
    free(target);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(write_atomic_creates_file_with_given_mode),
        T(write_atomic_new_file_defaults_to_private_mode),
        T(write_atomic_keeps_existing_mode_and_replaces_content),
        T(write_atomic_onto_directory_fails_and_leaves_no_temp),
        T(write_atomic_through_a_file_component_fails_naming_path),
        T(write_atomic_into_missing_directory_is_not_found),
        T(write_atomic_keeps_old_content_when_the_write_fails),
        T(write_atomic_refuses_a_symlink_and_leaves_both_alone),
        T(write_atomic_refuses_fifos_devices_and_directories),
        T(write_atomic_rejects_bad_arguments),
        T(a_removed_lock_file_is_recreated_for_the_waiter),
        T(a_symlink_is_not_a_lock_file),
        T(read_file_returns_content_and_length),
        T(read_file_enforces_the_size_limit),
        T(read_file_handles_files_without_a_size),
        T(read_file_reports_missing_and_directories),
        T(lock_exclusive_times_out_against_another_thread),
        T(lock_shared_holders_coexist_but_exclude_writers),
        T(lock_waiter_gets_the_lock_once_released),
        T(lock_wait_observes_cancellation),
        T(lock_contends_between_processes),
        T(lock_in_missing_directory_names_the_file),
        T(mkdir_p_creates_parents_and_accepts_existing),
        T(mkdir_p_reports_the_file_in_the_way),
        T(mkdir_p_follows_symlinks_to_directories),
        T(normalize_follows_the_table),
        T(join_normalizes_and_lets_absolute_win),
        T(is_inside_accepts_paths_below_root),
        T(is_inside_rejects_dotdot_escapes),
        T(is_inside_rejects_symlink_escapes),
        T(is_inside_resolves_a_symlinked_root),
        T(is_inside_fails_closed_without_a_root),
        T(remove_tree_removes_everything_but_symlink_targets),
        T(remove_tree_on_a_symlink_removes_only_the_link),
        T(list_dir_is_sorted_and_complete),
        T(list_dir_reports_missing_and_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
