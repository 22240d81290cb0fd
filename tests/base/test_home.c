/* test_home.c — base/home: CDSH_HOME and $HOME/.cdsh resolution, creation
 * with mode 0700, and building paths below the home without escaping it. */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/home.h"

static char *tmpdir;
static char *saved_home;

static int setup(void **state)
{
    (void)state;
    const char *h = getenv("HOME");
    saved_home = h ? strdup(h) : NULL;
    tmpdir = cdsh_test_home_new(); /* sets CDSH_HOME=tmpdir */
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (saved_home)
        setenv("HOME", saved_home, 1);
    else
        unsetenv("HOME");
    free(saved_home);
    cdsh_test_home_free(tmpdir);
    return 0;
}

/* Owned "<tmpdir>/<rel>", normalised. */
static char *tpath(const char *rel)
{
    char *p = cdsh_fs_path_join_dup(tmpdir, rel);
    assert_non_null(p);
    return p;
}

static void home_dir_comes_from_cdsh_home(void **state)
{
    (void)state;
    char *want = tpath("h");
    char with_slashes[4096];
    snprintf(with_slashes, sizeof with_slashes, "%s//h/./", tmpdir);
    setenv("CDSH_HOME", with_slashes, 1);
    char *got = NULL;
    assert_int_equal(cdsh_home_dir(&got, NULL), 0);
    assert_string_equal(got, want);
    struct stat st;
    assert_int_equal(stat(want, &st), -1); /* resolving creates nothing */
    free(got);
    free(want);
}

static void relative_cdsh_home_is_made_absolute(void **state)
{
    (void)state;
    char *cwd = getcwd(NULL, 0);
    assert_non_null(cwd);
    assert_int_equal(chdir(tmpdir), 0);
    setenv("CDSH_HOME", "rel/./state/", 1);
    char *got = NULL;
    int rc = cdsh_home_dir(&got, NULL);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rc, 0);
    char *real_tmp = realpath(tmpdir, NULL);
    char want[4096];
    snprintf(want, sizeof want, "%s/rel/state", real_tmp);
    assert_string_equal(got, want);
    free(real_tmp);
    free(got);
    free(cwd);
}

static void home_dir_falls_back_to_dot_cdsh_in_home(void **state)
{
    (void)state;
    setenv("HOME", tmpdir, 1);
    char *want = tpath(".cdsh");
    char *got = NULL;
    unsetenv("CDSH_HOME");
    assert_int_equal(cdsh_home_dir(&got, NULL), 0);
    assert_string_equal(got, want);
    free(got);
    setenv("CDSH_HOME", "", 1); /* empty counts as unset */
    assert_int_equal(cdsh_home_dir(&got, NULL), 0);
    assert_string_equal(got, want);
    free(got);
    free(want);
}

static void home_dir_without_home_uses_the_password_database(void **state)
{
    (void)state;
    unsetenv("CDSH_HOME");
    unsetenv("HOME");
    char *got = NULL;
    assert_int_equal(cdsh_home_dir(&got, NULL), 0);
    assert_true(got[0] == '/');
    size_t n = strlen(got);
    assert_true(n >= 6);
    assert_string_equal(got + n - 6, "/.cdsh");
    free(got);
}

static void ensure_creates_the_home_private(void **state)
{
    (void)state;
    char *h = tpath("deep/home");
    setenv("CDSH_HOME", h, 1);
    mode_t old = umask(022);
    char *got = NULL;
    int rc = cdsh_home_ensure(&got, NULL);
    umask(old);
    assert_int_equal(rc, 0);
    assert_string_equal(got, h);
    struct stat st;
    assert_int_equal(stat(h, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);
    /* An existing home keeps the permissions its owner chose. */
    assert_int_equal(chmod(h, 0750), 0);
    assert_int_equal(cdsh_home_ensure(NULL, NULL), 0);
    assert_int_equal(stat(h, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0750);
    free(got);
    free(h);
}

static void ensure_reports_a_file_in_the_way(void **state)
{
    (void)state;
    char *h = tpath("file-home");
    cdsh_test_write_file(h, "not a dir");
    setenv("CDSH_HOME", h, 1);
    cdsh_error err = {0};
    char *got = (char *)"untouched";
    assert_int_equal(cdsh_home_ensure(&got, &err), CDSH_EEXIST);
    assert_null(got);
    assert_string_equal(err.code, "NOT_A_DIRECTORY");
    assert_non_null(strstr(err.message, h));
    free(h);
}

static void path_dup_joins_parts_below_the_home(void **state)
{
    (void)state;
    char *got = cdsh_home_path_dup("profiles", "x.yaml", NULL);
    char *want = tpath("profiles/x.yaml");
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
    free(want);
    got = cdsh_home_path_dup("a/b", "../c", "./d/", NULL);
    want = tpath("a/c/d");
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
    free(want);
    got = cdsh_home_path_dup(".", NULL);
    assert_string_equal(got, tmpdir);
    free(got);
    struct stat st;
    char *profiles = tpath("profiles");
    assert_int_equal(stat(profiles, &st), -1); /* nothing created */
    free(profiles);
}

static void path_dup_refuses_to_leave_the_home(void **state)
{
    (void)state;
    assert_null(cdsh_home_path_dup("..", NULL));
    assert_null(cdsh_home_path_dup("a", "../../etc", NULL));
    assert_null(cdsh_home_path_dup("x/../../y", NULL));
    assert_null(cdsh_home_path_dup("/etc/passwd", NULL));
    assert_null(cdsh_home_path_dup("ok", "/abs", NULL));
    assert_null(cdsh_home_path_dup("a", "..", "..", "x", NULL));
    char *fine = cdsh_home_path_dup("a/..", "b", NULL);
    char *want = tpath("b");
    assert_non_null(fine);
    assert_string_equal(fine, want);
    free(want);
    free(fine);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(home_dir_comes_from_cdsh_home),
        T(relative_cdsh_home_is_made_absolute),
        T(home_dir_falls_back_to_dot_cdsh_in_home),
        T(home_dir_without_home_uses_the_password_database),
        T(ensure_creates_the_home_private),
        T(ensure_reports_a_file_in_the_way),
        T(path_dup_joins_parts_below_the_home),
        T(path_dup_refuses_to_leave_the_home),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
