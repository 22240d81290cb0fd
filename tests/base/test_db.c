/* test_db.c — base/db against real SQLite files in a temp directory: the
 * pragmas and 0600 file modes a connection gets, user_version migrations
 * (each step committed on its own, a failing step rolled back, a newer file
 * refused), transactions, statement helpers and single-value reads. */
#include "support/testkit.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/db.h"
#include "base/fs.h"

static char *home;

static int setup(void **state)
{
    (void)state;
    home = cdsh_test_home_new();
    return home ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    cdsh_test_home_free(home);
    home = NULL;
    return 0;
}

static char *path_in_home(const char *name)
{
    return cdsh_fs_path_join_dup(home, name);
}

static char *pragma_text(sqlite3 *db, const char *sql)
{
    char *v = NULL;
    assert_int_equal(cdsh_db_read_text_dup(db, sql, NULL, &v, NULL), 0);
    return v;
}

static int64_t pragma_int(sqlite3 *db, const char *sql)
{
    int64_t v = -1;
    assert_int_equal(cdsh_db_read_int64(db, sql, NULL, &v, NULL), 0);
    return v;
}

static int mode_of(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    return (int)(st.st_mode & 0777);
}

static void default_open_is_wal_full_and_private(void **state)
{
    (void)state;
    char *path = path_in_home("a.db");
    umask(022); /* what SQLite alone would turn into 0644 */
    sqlite3 *db = NULL;
    cdsh_error e = {0};
    uint64_t before = cdsh_db_open_count();
    assert_int_equal(cdsh_db_open(path, NULL, &db, &e), 0);
    assert_int_equal(cdsh_db_open_count(), before + 1);
    char *jm = pragma_text(db, "PRAGMA journal_mode");
    assert_string_equal(jm, "wal");
    free(jm);
    assert_int_equal(pragma_int(db, "PRAGMA synchronous"), 2); /* FULL */
    assert_int_equal(pragma_int(db, "PRAGMA foreign_keys"), 0);
    assert_int_equal(pragma_int(db, "PRAGMA busy_timeout"), CDSH_DB_BUSY_TIMEOUT_MS);
    assert_int_equal(cdsh_db_exec(db, "CREATE TABLE t(a); INSERT INTO t VALUES(1);", &e), 0);
    /* the WAL and its index exist now (the connection is open) */
    char wal[512], shm[512];
    snprintf(wal, sizeof wal, "%s-wal", path);
    snprintf(shm, sizeof shm, "%s-shm", path);
    assert_int_equal(mode_of(path), 0600);
    assert_int_equal(mode_of(wal), 0600);
    assert_int_equal(mode_of(shm), 0600);
    cdsh_db_close(db);
    free(path);
}

static void options_select_journal_sync_keys_and_timeout(void **state)
{
    (void)state;
    char *path = path_in_home("b.db");
    const cdsh_db_opts o = {.create = true,
                            .journal = CDSH_DB_JOURNAL_DELETE,
                            .sync = CDSH_DB_SYNC_NORMAL,
                            .foreign_keys = true,
                            .serialized = true,
                            .busy_timeout_ms = 1234};
    sqlite3 *db = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_db_open(path, &o, &db, &e), 0);
    char *jm = pragma_text(db, "PRAGMA journal_mode");
    assert_string_equal(jm, "delete");
    free(jm);
    assert_int_equal(pragma_int(db, "PRAGMA synchronous"), 1); /* NORMAL */
    assert_int_equal(pragma_int(db, "PRAGMA foreign_keys"), 1);
    assert_int_equal(pragma_int(db, "PRAGMA busy_timeout"), 1234);
    cdsh_db_close(db);
    free(path);
}

static void an_existing_open_file_is_narrowed_to_the_owner(void **state)
{
    (void)state;
    char *path = path_in_home("old.db");
    sqlite3 *raw = NULL;
    assert_int_equal(sqlite3_open(path, &raw), SQLITE_OK);
    assert_int_equal(sqlite3_exec(raw, "CREATE TABLE t(a)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(raw);
    assert_int_equal(chmod(path, 0644), 0);
    sqlite3 *db = NULL;
    assert_int_equal(cdsh_db_open(path, NULL, &db, NULL), 0);
    assert_int_equal(mode_of(path), 0600);
    cdsh_db_close(db);
    free(path);
}

static void missing_file_without_create_is_not_found(void **state)
{
    (void)state;
    char *path = path_in_home("missing.db");
    const cdsh_db_opts o = {.create = false};
    sqlite3 *db = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_db_open(path, &o, &db, &e), CDSH_ENOTFOUND);
    assert_null(db);
    assert_string_equal(e.code, "NOT_FOUND");
    assert_non_null(strstr(e.message, "missing.db"));
    assert_int_equal(access(path, F_OK), -1); /* nothing was created */
    free(path);
}

static void open_in_a_missing_directory_fails_with_the_path(void **state)
{
    (void)state;
    char *path = path_in_home("no/such/dir/x.db");
    sqlite3 *db = NULL;
    cdsh_error e = {0};
    assert_true(cdsh_db_open(path, NULL, &db, &e) < 0);
    assert_null(db);
    assert_non_null(strstr(e.message, "no/such/dir/x.db"));
    assert_int_equal(cdsh_db_open(NULL, NULL, &db, &e), CDSH_EINVAL);
    free(path);
}

static const char *const steps3[] = {
    "CREATE TABLE a(x);",
    "ALTER TABLE a ADD COLUMN y; CREATE TABLE b(z);",
    "CREATE INDEX a_by_y ON a(y);",
};

static void migrate_runs_each_step_once_and_records_the_version(void **state)
{
    (void)state;
    char *path = path_in_home("m.db");
    sqlite3 *db = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_db_open(path, NULL, &db, &e), 0);
    assert_int_equal(cdsh_db_migrate(db, steps3, 2, &e), 0);
    int v = -1;
    assert_int_equal(cdsh_db_user_version(db, &v, &e), 0);
    assert_int_equal(v, 2);
    /* a newer build with one more step only runs that step */
    assert_int_equal(cdsh_db_migrate(db, steps3, 3, &e), 0);
    assert_int_equal(cdsh_db_user_version(db, &v, &e), 0);
    assert_int_equal(v, 3);
    assert_int_equal(pragma_int(db, "SELECT count(*) FROM sqlite_master WHERE name='a_by_y'"), 1);
    /* already current: nothing runs again (a rerun of step 1 would fail) */
    assert_int_equal(cdsh_db_migrate(db, steps3, 3, &e), 0);
    cdsh_db_close(db);
    free(path);
}

static void a_failing_step_is_rolled_back_and_earlier_steps_stay(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "CREATE TABLE a(x);", "CREATE TABLE c(q); CREATE TABLE a(x);", /* second statement fails */
    };
    char *path = path_in_home("f.db");
    sqlite3 *db = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_db_open(path, NULL, &db, &e), 0);
    assert_int_equal(cdsh_db_migrate(db, bad, 2, &e), CDSH_EIO);
    assert_string_equal(e.code, "DB_ERROR");
    assert_non_null(strstr(e.message, "already exists"));
    int v = -1;
    assert_int_equal(cdsh_db_user_version(db, &v, NULL), 0);
    assert_int_equal(v, 1); /* step 1 committed on its own */
    assert_int_equal(pragma_int(db, "SELECT count(*) FROM sqlite_master WHERE name='c'"), 0);
    assert_true(sqlite3_get_autocommit(db)); /* no transaction left open */
    cdsh_db_close(db);
    free(path);
}

static void a_newer_file_is_refused_untouched(void **state)
{
    (void)state;
    char *path = path_in_home("new.db");
    sqlite3 *db = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_db_open(path, NULL, &db, &e), 0);
    assert_int_equal(cdsh_db_exec(db, "PRAGMA user_version = 7", &e), 0);
    assert_int_equal(cdsh_db_migrate(db, steps3, 3, &e), CDSH_EUNSUPPORTED);
    assert_string_equal(e.code, "SCHEMA_TOO_NEW");
    assert_non_null(strstr(e.message, "schema version 7"));
    assert_non_null(strstr(e.message, "up to 3"));
    assert_non_null(strstr(e.message, "upgrade cdsh"));
    assert_non_null(strstr(e.message, "new.db"));
    assert_int_equal(pragma_int(db, "SELECT count(*) FROM sqlite_master"), 0);
    cdsh_db_close(db);
    free(path);
}

static void single_value_reads_bind_and_report_missing_rows(void **state)
{
    (void)state;
    char *path = path_in_home("r.db");
    sqlite3 *db = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_db_open(path, NULL, &db, &e), 0);
    assert_int_equal(cdsh_db_exec(db,
                                  "CREATE TABLE kv(k TEXT PRIMARY KEY, v TEXT, n INTEGER);"
                                  "INSERT INTO kv VALUES('a','alpha',9007199254740993),"
                                  "('nul',NULL,NULL);",
                                  &e),
                     0);
    char *t = NULL;
    assert_int_equal(cdsh_db_read_text_dup(db, "SELECT v FROM kv WHERE k=?", "a", &t, &e), 0);
    assert_string_equal(t, "alpha");
    free(t);
    int64_t n = 0;
    assert_int_equal(cdsh_db_read_int64(db, "SELECT n FROM kv WHERE k=?", "a", &n, &e), 0);
    assert_true(n == 9007199254740993LL);
    assert_int_equal(cdsh_db_read_text_dup(db, "SELECT v FROM kv WHERE k=?", "zz", &t, &e),
                     CDSH_ENOTFOUND);
    assert_null(t);
    assert_string_equal(e.code, "NOT_FOUND");
    assert_int_equal(cdsh_db_read_text_dup(db, "SELECT v FROM kv WHERE k=?", "nul", &t, &e),
                     CDSH_ENOTFOUND);
    assert_int_equal(cdsh_db_read_int64(db, "SELECT n FROM kv WHERE k=?", "zz", &n, &e),
                     CDSH_ENOTFOUND);
    /* a bad query is an error, not a missing row */
    assert_int_equal(cdsh_db_read_int64(db, "SELECT nope FROM kv", NULL, &n, &e), CDSH_EIO);
    assert_string_equal(e.code, "DB_ERROR");
    assert_non_null(strstr(e.message, "no such column"));
    cdsh_db_close(db);
    free(path);
}

static void statements_and_transactions(void **state)
{
    (void)state;
    char *path = path_in_home("s.db");
    sqlite3 *db = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_db_open(path, NULL, &db, &e), 0);
    assert_int_equal(cdsh_db_exec(db, "CREATE TABLE t(a TEXT)", &e), 0);
    sqlite3_stmt *st = NULL;
    assert_int_equal(cdsh_db_prepare(db, "INSERT INTO nowhere VALUES(1)", &st, &e), CDSH_EIO);
    assert_null(st);
    assert_non_null(strstr(e.message, "no such table"));
    assert_int_equal(cdsh_db_begin(db, &e), 0);
    assert_int_equal(cdsh_db_prepare(db, "INSERT INTO t VALUES(?)", &st, &e), 0);
    cdsh_db_bind_text_or_null(st, 1, NULL);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_reset(st);
    cdsh_db_bind_text_or_null(st, 1, "x");
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    cdsh_db_rollback(db);
    assert_int_equal(pragma_int(db, "SELECT count(*) FROM t"), 0);
    cdsh_db_rollback(db); /* no transaction: harmless */
    assert_int_equal(cdsh_db_begin(db, &e), 0);
    assert_int_equal(cdsh_db_exec(db, "INSERT INTO t VALUES(NULL),('y')", &e), 0);
    assert_int_equal(cdsh_db_commit(db, &e), 0);
    assert_int_equal(cdsh_db_prepare(db, "SELECT a FROM t ORDER BY rowid", &st, &e), 0);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_null(cdsh_db_column_text_dup(st, 0));
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    char *y = cdsh_db_column_text_dup(st, 0);
    assert_string_equal(y, "y");
    free(y);
    sqlite3_finalize(st);
    /* COMMIT without a transaction fails and leaves none open */
    assert_int_equal(cdsh_db_commit(db, &e), CDSH_EIO);
    assert_true(sqlite3_get_autocommit(db));
    cdsh_db_close(db);
    cdsh_db_close(NULL);
    free(path);
}

static void a_held_write_lock_is_busy_after_the_timeout(void **state)
{
    (void)state;
    char *path = path_in_home("busy.db");
    const cdsh_db_opts o = {.create = true, .busy_timeout_ms = 50};
    sqlite3 *a = NULL, *b = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_db_open(path, &o, &a, &e), 0);
    assert_int_equal(cdsh_db_open(path, &o, &b, &e), 0);
    assert_int_equal(cdsh_db_begin(a, &e), 0);
    assert_int_equal(cdsh_db_begin(b, &e), CDSH_EBUSY);
    assert_string_equal(e.code, "DB_ERROR");
    cdsh_db_rollback(a);
    assert_int_equal(cdsh_db_begin(b, &e), 0);
    cdsh_db_rollback(b);
    cdsh_db_close(a);
    cdsh_db_close(b);
    free(path);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(default_open_is_wal_full_and_private),
        T(options_select_journal_sync_keys_and_timeout),
        T(an_existing_open_file_is_narrowed_to_the_owner),
        T(missing_file_without_create_is_not_found),
        T(open_in_a_missing_directory_fails_with_the_path),
        T(migrate_runs_each_step_once_and_records_the_version),
        T(a_failing_step_is_rolled_back_and_earlier_steps_stay),
        T(a_newer_file_is_refused_untouched),
        T(single_value_reads_bind_and_report_missing_rows),
        T(statements_and_transactions),
        T(a_held_write_lock_is_busy_after_the_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
