/* test_fsconfine.c — the ACP fs callbacks' confined file access
 * (proto/acp/fsconfine.c), with openat2 and with the O_NOFOLLOW walk: no
 * symlink is followed, only regular files are read, a FIFO never blocks,
 * writes replace through a temporary file in the target's own directory (also
 * creating new files and directories), and the race from issue 21 — another
 * process swapping paths between a symlink and a real file or directory
 * while 1 500 reads and 1 500 writes run — never reads or writes outside. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/acp/fsconfine.h"
#include "support/rounds.h"
#include "support/testkit.h"

typedef struct fx {
    char *home;
    char root[4200], out[4200];
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    snprintf(f->root, sizeof f->root, "%s/root", f->home);
    snprintf(f->out, sizeof f->out, "%s/outside", f->home);
    mkdir(f->root, 0700);
    mkdir(f->out, 0700);
    char p[4400];
    snprintf(p, sizeof p, "%s/secret", f->out);
    cdsh_test_write_file(p, "OUTSIDE");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cdsh_acp_fs_force_walk(0);
    cdsh_test_home_free(f->home);
    free(f);
    return 0;
}

static void at(fx *f, char *buf, size_t cap, const char *rel)
{
    snprintf(buf, cap, "%s/%s", f->root, rel);
}

static int rd(fx *f, const char *rel, char **text, cdsh_error *e)
{
    size_t len = 0;
    *text = NULL;
    return cdsh_acp_fs_read_beneath(f->root, rel, 1 << 20, text, &len, e);
}

/* The outside directory still holds only "secret" with its content. */
static void outside_untouched(fx *f)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/secret", f->out);
    char *t = cdsh_test_read_file(p, NULL);
    assert_non_null(t);
    assert_string_equal(t, "OUTSIDE");
    free(t);
    char cmd[4500];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", f->out);
    FILE *pf = popen(cmd, "r");
    int n = -1;
    assert_int_equal(fscanf(pf, "%d", &n), 1);
    pclose(pf);
    assert_int_equal(n, 1);
}

static void basics(fx *f)
{
    char p[4400], *t = NULL;
    cdsh_error e = {0};
    at(f, p, sizeof p, "a.txt");
    cdsh_test_write_file(p, "alpha\n");
    assert_int_equal(rd(f, "a.txt", &t, &e), 0);
    assert_string_equal(t, "alpha\n");
    free(t);
    /* Missing: NOT_FOUND (the connection answers "" for a missing file). */
    assert_int_equal(rd(f, "nope/x.txt", &t, &e), CDSH_ENOTFOUND);
    assert_string_equal(e.code, "NOT_FOUND");
    /* A symlink, final or on the way, is refused — even one pointing inside. */
    at(f, p, sizeof p, "in-link");
    assert_int_equal(symlink("a.txt", p), 0);
    assert_int_equal(rd(f, "in-link", &t, &e), CDSH_EPERM);
    assert_string_equal(e.code, "OUTSIDE");
    assert_non_null(strstr(e.message, "symbolic link"));
    at(f, p, sizeof p, "dir-link");
    assert_int_equal(symlink(f->out, p), 0);
    assert_int_equal(rd(f, "dir-link/secret", &t, &e), CDSH_EPERM);
    assert_null(t);
    /* A directory and a FIFO are not regular files; the FIFO returns at once. */
    at(f, p, sizeof p, "sub");
    mkdir(p, 0700);
    assert_int_equal(rd(f, "sub", &t, &e), CDSH_EINVAL);
    assert_string_equal(e.code, "NOT_A_FILE");
    at(f, p, sizeof p, "fifo");
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_int_equal(rd(f, "fifo", &t, &e), CDSH_EINVAL);
    assert_string_equal(e.code, "NOT_A_FILE");
    /* Too big. */
    size_t len = 0;
    assert_int_equal(cdsh_acp_fs_read_beneath(f->root, "a.txt", 3, &t, &len, &e), CDSH_ETOOBIG);
    /* Writes: new file in new directories, replace keeping the mode. */
    assert_int_equal(cdsh_acp_fs_write_beneath(f->root, "new/deeper/n.txt", "N", 1, &e), 0);
    at(f, p, sizeof p, "new/deeper/n.txt");
    t = cdsh_test_read_file(p, NULL);
    assert_string_equal(t, "N");
    free(t);
    at(f, p, sizeof p, "a.txt");
    chmod(p, 0640);
    assert_int_equal(cdsh_acp_fs_write_beneath(f->root, "a.txt", "beta", 4, &e), 0);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    t = cdsh_test_read_file(p, NULL);
    assert_string_equal(t, "beta");
    free(t);
    /* Refused: through a link, onto a link, onto a FIFO or a directory, the
     * session directory itself; nothing is left behind (no temp files, not
     * in the parent either). */
    assert_int_equal(cdsh_acp_fs_write_beneath(f->root, "dir-link/secret", "X", 1, &e), CDSH_EPERM);
    assert_int_equal(cdsh_acp_fs_write_beneath(f->root, "dir-link/fresh", "X", 1, &e), CDSH_EPERM);
    assert_int_equal(cdsh_acp_fs_write_beneath(f->root, "in-link", "X", 1, &e), CDSH_EPERM);
    assert_int_equal(cdsh_acp_fs_write_beneath(f->root, "fifo", "X", 1, &e), CDSH_EINVAL);
    assert_int_equal(cdsh_acp_fs_write_beneath(f->root, "sub", "X", 1, &e), CDSH_EINVAL);
    assert_int_equal(cdsh_acp_fs_write_beneath(f->root, "", "X", 1, &e), CDSH_EINVAL);
    assert_string_equal(e.code, "NOT_A_FILE");
    char cmd[4500];
    snprintf(cmd, sizeof cmd, "find '%s' -name '*.cdsh-*' | wc -l", f->home);
    FILE *pf = popen(cmd, "r");
    int n = -1;
    assert_int_equal(fscanf(pf, "%d", &n), 1);
    pclose(pf);
    assert_int_equal(n, 0);
    outside_untouched(f);
}

static void confined_with_openat2(void **state)
{
    basics(*state);
}

static void confined_with_the_nofollow_walk(void **state)
{
    cdsh_acp_fs_force_walk(1);
    basics(*state);
}

/* Another process exchanges "swap" (a file) with "swapl" (a symlink to the
 * outside secret) and "d" (a directory) with "dl" (a symlink to the outside
 * directory), atomically and endlessly, while this one reads and writes
 * "swap" and "d/f". Nothing may come from or land outside. */
static void race(fx *f)
{
    char p[4400], q[4400];
    at(f, p, sizeof p, "swap");
    cdsh_test_write_file(p, "inside");
    at(f, p, sizeof p, "swapl");
    snprintf(q, sizeof q, "%s/secret", f->out);
    assert_int_equal(symlink(q, p), 0);
    at(f, p, sizeof p, "d");
    mkdir(p, 0700);
    at(f, p, sizeof p, "d/f");
    cdsh_test_write_file(p, "inside");
    at(f, p, sizeof p, "dl");
    assert_int_equal(symlink(f->out, p), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        int rfd = open(f->root, O_RDONLY | O_DIRECTORY);
        for (;;) {
            renameat2(rfd, "swap", rfd, "swapl", RENAME_EXCHANGE);
            renameat2(rfd, "d", rfd, "dl", RENAME_EXCHANGE);
        }
    }
    int reads_ok = 0, reads_refused = 0, writes_ok = 0, writes_refused = 0, outside = 0;
    int rounds = cdsh_test_rounds(300); /* the slow tier runs 5x */
    for (int i = 0; i < rounds; i++) {
        const char *rel = i % 2 ? "swap" : "d/f";
        char *t = NULL;
        cdsh_error e = {0};
        if (rd(f, rel, &t, &e) == 0) {
            reads_ok++;
            if (strstr(t, "OUTSIDE"))
                outside++;
        } else {
            reads_refused++;
        }
        free(t);
        if (cdsh_acp_fs_write_beneath(f->root, rel, "written", 7, &e) == 0)
            writes_ok++;
        else
            writes_refused++;
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    printf("race: %d reads answered, %d refused; %d writes done, %d refused\n", reads_ok,
           reads_refused, writes_ok, writes_refused);
    assert_int_equal(outside, 0);
    assert_int_equal(reads_ok + reads_refused, rounds);
    assert_int_equal(writes_ok + writes_refused, rounds);
    outside_untouched(f);
}

static void the_swap_race_never_escapes_with_openat2(void **state)
{
    race(*state);
}

static void the_swap_race_never_escapes_with_the_walk(void **state)
{
    cdsh_acp_fs_force_walk(1);
    race(*state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(confined_with_openat2, setup, teardown),
        cmocka_unit_test_setup_teardown(confined_with_the_nofollow_walk, setup, teardown),
        cmocka_unit_test_setup_teardown(the_swap_race_never_escapes_with_openat2, setup, teardown),
        cmocka_unit_test_setup_teardown(the_swap_race_never_escapes_with_the_walk, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
