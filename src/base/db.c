/* db.c — opening SQLite databases the cdsh way (pragmas, 0600 files),
 * user_version migrations, transactions and small statement helpers. The
 * stores above (agent/session_store.c, the tavern's story.c and binding.c)
 * own their schemas and queries; this file owns how a connection is made. */
#include "base/db.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

/* Documented global: connections opened so far (tests count opens with it). */
static atomic_uint_fast64_t g_opens;

uint64_t cdsh_db_open_count(void)
{
    return (uint64_t)atomic_load(&g_opens);
}

static const char *db_name(sqlite3 *db)
{
    const char *f = db ? sqlite3_db_filename(db, "main") : NULL;
    return f && *f ? f : "(memory)";
}

int cdsh_db_fail(sqlite3 *db, cdsh_error *err, const char *what)
{
    int code = db ? sqlite3_errcode(db) : SQLITE_ERROR;
    int rc = (code == SQLITE_BUSY || code == SQLITE_LOCKED) ? CDSH_EBUSY : CDSH_EIO;
    return cdsh_error_set(err, rc, "DB_ERROR", "database %s: %s: %s", db_name(db), what,
                          db ? sqlite3_errmsg(db) : "not open");
}

int cdsh_db_exec(sqlite3 *db, const char *sql, cdsh_error *err)
{
    char *msg = NULL;
    int src = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (src == SQLITE_OK)
        return 0;
    int rc = (src == SQLITE_BUSY || src == SQLITE_LOCKED) ? CDSH_EBUSY : CDSH_EIO;
    rc = cdsh_error_set(err, rc, "DB_ERROR", "database %s: %.80s: %s", db_name(db), sql,
                        msg ? msg : sqlite3_errstr(src));
    sqlite3_free(msg);
    return rc;
}

int cdsh_db_begin(sqlite3 *db, cdsh_error *err)
{
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK)
        return 0;
    return cdsh_db_fail(db, err, "begin");
}

int cdsh_db_commit(sqlite3 *db, cdsh_error *err)
{
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
        return 0;
    int rc = cdsh_db_fail(db, err, "commit");
    cdsh_db_rollback(db);
    return rc;
}

void cdsh_db_rollback(sqlite3 *db)
{
    if (db && !sqlite3_get_autocommit(db))
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

int cdsh_db_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, cdsh_error *err)
{
    *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, st, NULL) == SQLITE_OK)
        return 0;
    sqlite3_finalize(*st);
    *st = NULL;
    return cdsh_db_fail(db, err, "prepare");
}

void cdsh_db_bind_text_or_null(sqlite3_stmt *st, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

char *cdsh_db_column_text_dup(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? strdup((const char *)t) : NULL;
}

/* Steps a one-value query; *row tells whether a row came back. */
static int read_one(sqlite3 *db, const char *sql, const char *arg, sqlite3_stmt **st, bool *row,
                    cdsh_error *err)
{
    int rc = cdsh_db_prepare(db, sql, st, err);
    if (rc < 0)
        return rc;
    if (arg)
        sqlite3_bind_text(*st, 1, arg, -1, SQLITE_STATIC);
    int src = sqlite3_step(*st);
    *row = src == SQLITE_ROW;
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        return cdsh_db_fail(db, err, "read");
    return 0;
}

int cdsh_db_read_int64(sqlite3 *db, const char *sql, const char *arg, int64_t *out, cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    bool row = false;
    int rc = read_one(db, sql, arg, &st, &row, err);
    if (rc == 0 && row)
        *out = sqlite3_column_int64(st, 0);
    else if (rc == 0)
        rc = cdsh_error_set(err, CDSH_ENOTFOUND, "NOT_FOUND", "database %s: no row", db_name(db));
    sqlite3_finalize(st);
    return rc;
}

int cdsh_db_read_text_dup(sqlite3 *db, const char *sql, const char *arg, char **out,
                          cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    bool row = false;
    *out = NULL;
    int rc = read_one(db, sql, arg, &st, &row, err);
    if (rc == 0 && row && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        *out = cdsh_db_column_text_dup(st, 0);
        if (!*out)
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    } else if (rc == 0) {
        rc = cdsh_error_set(err, CDSH_ENOTFOUND, "NOT_FOUND", "database %s: no row", db_name(db));
    }
    sqlite3_finalize(st);
    return rc;
}

int cdsh_db_user_version(sqlite3 *db, int *out, cdsh_error *err)
{
    int64_t v = 0;
    int rc = cdsh_db_read_int64(db, "PRAGMA user_version", NULL, &v, err);
    if (rc == 0)
        *out = (int)v;
    return rc;
}

/* One step: inside its own write transaction, and only if the file is still
 * at version `from` (another process may have run it meanwhile). */
static int migrate_step(sqlite3 *db, const char *step, int from, int n_steps, cdsh_error *err)
{
    int rc = cdsh_db_begin(db, err);
    if (rc < 0)
        return rc;
    int v = 0;
    if ((rc = cdsh_db_user_version(db, &v, err)) < 0)
        goto cleanup;
    if (v > n_steps) {
        rc = cdsh_error_set(err, CDSH_EUNSUPPORTED, "SCHEMA_TOO_NEW",
                            "database %s has schema version %d; this cdsh understands up to %d — "
                            "upgrade cdsh",
                            db_name(db), v, n_steps);
        goto cleanup;
    }
    if (v == from) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", from + 1);
        if ((rc = cdsh_db_exec(db, step, err)) < 0 || (rc = cdsh_db_exec(db, sql, err)) < 0)
            goto cleanup;
    }
    return cdsh_db_commit(db, err);
cleanup:
    cdsh_db_rollback(db);
    return rc;
}

int cdsh_db_migrate(sqlite3 *db, const char *const *steps, int n_steps, cdsh_error *err)
{
    int v = 0;
    int rc = cdsh_db_user_version(db, &v, err);
    if (rc < 0)
        return rc;
    if (v > n_steps)
        return cdsh_error_set(err, CDSH_EUNSUPPORTED, "SCHEMA_TOO_NEW",
                              "database %s has schema version %d; this cdsh understands up to %d "
                              "— upgrade cdsh",
                              db_name(db), v, n_steps);
    for (; v < n_steps; v++)
        if ((rc = migrate_step(db, steps[v], v, n_steps, err)) < 0)
            return rc;
    return 0;
}

/* ---- open ------------------------------------------------------------------ */

/* Narrows an existing file to owner-only bits; a missing one is fine. */
static void narrow_mode(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 077))
        chmod(path, st.st_mode & 0700);
}

static void narrow_siblings(const char *path)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    char buf[4096];
    for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++)
        if (snprintf(buf, sizeof buf, "%s%s", path, suffix[i]) < (int)sizeof buf)
            narrow_mode(buf);
}

/* Creates the file with CDSH_DB_FILE_MODE (SQLite would use 0644) so every
 * sibling SQLite makes later copies these bits. */
static int ensure_file(const char *path, bool create, cdsh_error *err)
{
    if (access(path, F_OK) == 0) {
        narrow_siblings(path);
        return 0;
    }
    if (!create)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "NOT_FOUND", "no database at %s", path);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, CDSH_DB_FILE_MODE);
    if (fd < 0)
        return cdsh_error_set(err, errno == ENOENT ? CDSH_ENOTFOUND : CDSH_EIO, "DB_ERROR",
                              "cannot create database %s: %s", path, strerror(errno));
    close(fd);
    return 0;
}

/* Switching a file to WAL needs an exclusive lock, and SQLite may answer
 * SQLITE_BUSY at once instead of calling the busy handler (several
 * processes opening a fresh file together do hit this). SQLite offers
 * nothing to wait on here, so this retries with a short pause for as long
 * as the busy timeout allows; it runs once per open, never per statement. */
static int set_journal(sqlite3 *db, cdsh_db_journal j, int timeout_ms, cdsh_error *err)
{
    const char *sql =
        j == CDSH_DB_JOURNAL_WAL ? "PRAGMA journal_mode=WAL" : "PRAGMA journal_mode=DELETE";
    int64_t deadline = cdsh_clock_mono_ms() + timeout_ms;
    for (;;) {
        int src = sqlite3_exec(db, sql, NULL, NULL, NULL);
        if (src == SQLITE_OK)
            return 0;
        if ((src != SQLITE_BUSY && src != SQLITE_LOCKED) || cdsh_clock_mono_ms() >= deadline)
            break;
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    return cdsh_db_exec(db, sql, err); /* reports the error in the usual form */
}

int cdsh_db_open(const char *path, const cdsh_db_opts *opts, sqlite3 **out, cdsh_error *err)
{
    static const cdsh_db_opts defaults = {.create = true};
    if (!path || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "db_open: missing argument");
    *out = NULL;
    if (!opts)
        opts = &defaults;
    int timeout = opts->busy_timeout_ms > 0 ? opts->busy_timeout_ms : CDSH_DB_BUSY_TIMEOUT_MS;
    int rc = ensure_file(path, opts->create, err);
    if (rc < 0)
        return rc;
    sqlite3 *db = NULL;
    int flags = SQLITE_OPEN_READWRITE | (opts->create ? SQLITE_OPEN_CREATE : 0) |
                (opts->serialized ? SQLITE_OPEN_FULLMUTEX : SQLITE_OPEN_NOMUTEX);
    int src = sqlite3_open_v2(path, &db, flags, NULL);
    atomic_fetch_add(&g_opens, 1);
    if (src != SQLITE_OK) {
        rc = cdsh_error_set(err, CDSH_EIO, "DB_ERROR", "cannot open database %s: %s", path,
                            db ? sqlite3_errmsg(db) : sqlite3_errstr(src));
        goto cleanup;
    }
    sqlite3_busy_timeout(db, timeout);
    sqlite3_extended_result_codes(db, 0);
    if ((rc = set_journal(db, opts->journal, timeout, err)) < 0)
        goto cleanup;
    const char *sync =
        opts->sync == CDSH_DB_SYNC_FULL ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL";
    if ((rc = cdsh_db_exec(db, sync, err)) < 0 ||
        (opts->foreign_keys && (rc = cdsh_db_exec(db, "PRAGMA foreign_keys=ON", err)) < 0))
        goto cleanup;
    *out = db;
    db = NULL;
cleanup:
    if (db)
        sqlite3_close_v2(db);
    return rc;
}

void cdsh_db_close(sqlite3 *db)
{
    if (db)
        sqlite3_close_v2(db);
}
