/* test_home.c — base/home: CDSH_HOME and $HOME/.cdsh resolution (once, into
 * a handle), named homes, creation with mode 0700, and building paths below
 * the home without escaping it. */
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

/* cdsh_home_dir_dup of the home the environment names now. */
static int env_dir(char **out, cdsh_error *err)
{
    cdsh_home *h = cdsh_home_from_env();
    assert_non_null(h);
    int rc = cdsh_home_dir_dup(h, out, err);
    cdsh_home_free(h);
    return rc;
}

/* cdsh_home_ensure of the home the environment names now. */
static int env_ensure(char **out, cdsh_error *err)
{
    cdsh_home *h = cdsh_home_from_env();
    assert_non_null(h);
    int rc = cdsh_home_ensure(h, out, err);
    cdsh_home_free(h);
    return rc;
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
    assert_int_equal(env_dir(&got, NULL), 0);
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
    int rc = env_dir(&got, NULL);
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
    assert_int_equal(env_dir(&got, NULL), 0);
    assert_string_equal(got, want);
    free(got);
    setenv("CDSH_HOME", "", 1); /* empty counts as unset */
    assert_int_equal(env_dir(&got, NULL), 0);
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
    assert_int_equal(env_dir(&got, NULL), 0);
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
    int rc = env_ensure(&got, NULL);
    umask(old);
    assert_int_equal(rc, 0);
    assert_string_equal(got, h);
    struct stat st;
    assert_int_equal(stat(h, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);
    /* An existing home keeps the permissions its owner chose. */
    assert_int_equal(chmod(h, 0750), 0);
    assert_int_equal(env_ensure(NULL, NULL), 0);
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
    assert_int_equal(env_ensure(&got, &err), CDSH_EEXIST);
    assert_null(got);
    assert_string_equal(err.code, "NOT_A_DIRECTORY");
    assert_non_null(strstr(err.message, h));
    free(h);
}

static void path_dup_joins_parts_below_the_home(void **state)
{
    (void)state;
    char *got = cdsh_home_path_dup(cdsh_test_home(), "profiles", "x.yaml", NULL);
    char *want = tpath("profiles/x.yaml");
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
    free(want);
    got = cdsh_home_path_dup(cdsh_test_home(), "a/b", "../c", "./d/", NULL);
    want = tpath("a/c/d");
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
    free(want);
    got = cdsh_home_path_dup(cdsh_test_home(), ".", NULL);
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
    assert_null(cdsh_home_path_dup(cdsh_test_home(), "..", NULL));
    assert_null(cdsh_home_path_dup(cdsh_test_home(), "a", "../../etc", NULL));
    assert_null(cdsh_home_path_dup(cdsh_test_home(), "x/../../y", NULL));
    assert_null(cdsh_home_path_dup(cdsh_test_home(), "/etc/passwd", NULL));
    assert_null(cdsh_home_path_dup(cdsh_test_home(), "ok", "/abs", NULL));
    assert_null(cdsh_home_path_dup(cdsh_test_home(), "a", "..", "..", "x", NULL));
    char *fine = cdsh_home_path_dup(cdsh_test_home(), "a/..", "b", NULL);
    char *want = tpath("b");
    assert_non_null(fine);
    assert_string_equal(fine, want);
    free(want);
    free(fine);
}

static void a_handle_keeps_the_home_it_resolved(void **state)
{
    (void)state;
    char *a = tpath("a"), *b = tpath("b");
    setenv("CDSH_HOME", a, 1);
    cdsh_home *h = cdsh_home_from_env();
    assert_non_null(h);
    setenv("CDSH_HOME", b, 1); /* read once: a later change does not move it */
    assert_string_equal(cdsh_home_dir_get(h), a);
    char *got = cdsh_home_path_dup(h, "x", NULL);
    char *want = tpath("a/x");
    assert_string_equal(got, want);
    free(got);
    free(want);
    cdsh_home *copy = cdsh_home_dup(h);
    cdsh_home_free(h);
    assert_string_equal(cdsh_home_dir_get(copy), a);
    cdsh_home_free(copy);
    free(a);
    free(b);
}

static void home_new_names_a_home_without_the_environment(void **state)
{
    (void)state;
    unsetenv("CDSH_HOME");
    unsetenv("HOME");
    char named[4200];
    snprintf(named, sizeof named, "%s//named/./x/", tmpdir);
    cdsh_home *h = NULL;
    assert_int_equal(cdsh_home_new(named, &h, NULL), 0);
    char *want = tpath("named/x");
    assert_string_equal(cdsh_home_dir_get(h), want);
    char *got = NULL;
    assert_int_equal(cdsh_home_ensure(h, &got, NULL), 0);
    assert_string_equal(got, want);
    struct stat st;
    assert_int_equal(stat(want, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    free(got);
    free(want);
    cdsh_home_free(h);
    cdsh_error err = {0};
    h = (cdsh_home *)1;
    assert_int_equal(cdsh_home_new("", &h, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_ARGS");
    assert_int_equal(cdsh_home_new(NULL, &h, &err), CDSH_EINVAL);
}

static void no_home_is_an_error_not_a_crash(void **state)
{
    (void)state;
    cdsh_error err = {0};
    char *got = (char *)"untouched";
    assert_int_equal(cdsh_home_dir_dup(NULL, &got, &err), CDSH_ENOTFOUND);
    assert_string_equal(err.code, "NO_HOME");
    assert_null(got);
    assert_int_equal(cdsh_home_ensure(NULL, NULL, &err), CDSH_ENOTFOUND);
    assert_null(cdsh_home_path_dup(NULL, "x", NULL));
    assert_null(cdsh_home_dir_get(NULL));
    assert_null(cdsh_home_dup(NULL));
    cdsh_home_free(NULL);
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
        T(a_handle_keeps_the_home_it_resolved),
        T(home_new_names_a_home_without_the_environment),
        T(no_home_is_an_error_not_a_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
