/* db.h — the project's way of using SQLite: opening a database file with
 * cdsh's pragmas (journal mode, synchronous level, foreign keys, busy
 * timeout) and file mode (0600 for the database and its -wal/-shm/-journal
 * siblings), schema migrations by PRAGMA user_version, transactions,
 * prepared statements and single-value reads. It knows no schema; each store
 * (sessions, stories, bindings) keeps its own tables and queries.
 *
 * Thread-safety: the functions keep no shared state except the open counter
 * (atomic). A connection is used as SQLite allows for the open flags chosen
 * (cdsh_db_opts.serialized). */
#ifndef CDSH_BASE_DB_H
#define CDSH_BASE_DB_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

/* Permission bits of every database file cdsh creates: state is private. */
#define CDSH_DB_FILE_MODE 0600
/* How long a statement waits for another connection's lock before SQLITE_BUSY. */
#define CDSH_DB_BUSY_TIMEOUT_MS 15000

typedef enum cdsh_db_journal {
    CDSH_DB_JOURNAL_WAL = 0, /* readers never block the writer; -wal and -shm siblings */
    CDSH_DB_JOURNAL_DELETE,  /* rollback journal: the database is exactly one file */
} cdsh_db_journal;

typedef enum cdsh_db_sync {
    CDSH_DB_SYNC_FULL = 0, /* a commit is on disk when it returns, even across power loss */
    CDSH_DB_SYNC_NORMAL,
} cdsh_db_sync;

typedef struct cdsh_db_opts {
    bool create;             /* create the file (mode CDSH_DB_FILE_MODE) when missing */
    cdsh_db_journal journal; /* default WAL */
    cdsh_db_sync sync;       /* default FULL */
    bool foreign_keys;       /* PRAGMA foreign_keys=ON */
    bool serialized;         /* SQLITE_OPEN_FULLMUTEX instead of NOMUTEX */
    int busy_timeout_ms;     /* 0: CDSH_DB_BUSY_TIMEOUT_MS */
} cdsh_db_opts;

/* Opens path with opts (NULL: create, WAL, FULL, no foreign keys, NOMUTEX).
 * A new file is created with mode CDSH_DB_FILE_MODE before SQLite opens it,
 * so SQLite's -wal/-shm/-journal files get the same bits; an existing file
 * (and its siblings) with group/other bits is narrowed to owner-only.
 * Switching to WAL is retried for as long as the busy timeout allows (SQLite
 * may answer SQLITE_BUSY at once when several processes open a fresh file).
 * Errors: CDSH_ENOTFOUND (code NOT_FOUND) when the file is missing and
 * !opts->create; DB_ERROR (CDSH_EIO, CDSH_EBUSY when locked) otherwise. */
int cdsh_db_open(const char *path, const cdsh_db_opts *opts, sqlite3 **out, cdsh_error *err);
/* Closes a connection (finalizing nothing: statements must be finalized). NULL-safe. */
void cdsh_db_close(sqlite3 *db);
/* Connections opened by cdsh_db_open since the process started (tests count
 * opens per operation with it).
 * keep-public: tests count opens per operation (test_db, the tavern story service test). */
uint64_t cdsh_db_open_count(void);

/* Fills err from the connection's last error: code DB_ERROR, CDSH_EBUSY for
 * SQLITE_BUSY/SQLITE_LOCKED, CDSH_EIO otherwise; the message names the file
 * and what was being done. Returns the error code. */
int cdsh_db_fail(sqlite3 *db, cdsh_error *err, const char *what);

/* Schema migrations: steps[i] upgrades user_version i to i+1 (never edit a
 * shipped step; add one). Each step runs in its own BEGIN IMMEDIATE
 * transaction together with the user_version bump, re-reading the version
 * inside it (another process may have migrated meanwhile). A file whose
 * version is newer than n_steps is refused with CDSH_EUNSUPPORTED, code
 * SCHEMA_TOO_NEW, naming the file, both versions and "upgrade cdsh". A file
 * already at n_steps costs one read and no write lock. */
int cdsh_db_migrate(sqlite3 *db, const char *const *steps, int n_steps, cdsh_error *err);
/* PRAGMA user_version.
 * keep-public: migrate uses it; tests/base/test_db.c reads the version with it. */
int cdsh_db_user_version(sqlite3 *db, int *out, cdsh_error *err);

/* Runs one or more statements without results. */
int cdsh_db_exec(sqlite3 *db, const char *sql, cdsh_error *err);
/* BEGIN IMMEDIATE (the write lock now, so a later upgrade cannot deadlock). */
int cdsh_db_begin(sqlite3 *db, cdsh_error *err);
/* COMMIT; on failure the transaction is rolled back. */
int cdsh_db_commit(sqlite3 *db, cdsh_error *err);
/* ROLLBACK if a transaction is open; otherwise nothing. */
void cdsh_db_rollback(sqlite3 *db);

/* sqlite3_prepare_v2 with errors in cdsh form. *st is NULL on failure. */
int cdsh_db_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, cdsh_error *err);
/* Binds text (copied) or NULL when v is NULL. */
void cdsh_db_bind_text_or_null(sqlite3_stmt *st, int i, const char *v);
/* The column as an owned string, NULL for SQL NULL (or out of memory). */
char *cdsh_db_column_text_dup(sqlite3_stmt *st, int col);

/* Single-value reads: the first column of the first row of sql, with arg (if
 * not NULL) bound to ?1. CDSH_ENOTFOUND (code NOT_FOUND) when there is no
 * row; a SQL NULL reads as 0 / is CDSH_ENOTFOUND for text. *out owned for text. */
int cdsh_db_read_int64(sqlite3 *db, const char *sql, const char *arg, int64_t *out,
                       cdsh_error *err);
int cdsh_db_read_text_dup(sqlite3 *db, const char *sql, const char *arg, char **out,
                          cdsh_error *err);

#endif
