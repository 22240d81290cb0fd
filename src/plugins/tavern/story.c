/* story.c — the story database: schema, objects, floors, the write log and
 * undo with its persisted cursor (see story.h for the protocol). Memory
 * search and world-state rules are memory.c / worldstate.c; this file only
 * tells its change listeners (memory.c's full-text index) what changed. */
#include "plugins/tavern/story.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/db.h"
#include "base/fs.h"
#include "base/hash.h"
#include "base/random.h"

struct cdsh_tavern_story {
    sqlite3 *db;
    pthread_mutex_t mu;
    atomic_int refs; /* cdsh__tavern_story_ref; the last cdsh_tavern_story_free closes */
    char *path, *id, *card, *session;
};

/* ---- fault injection (tests only; documented global, atomic) ------------- */

static _Atomic(const char *) g_fault = NULL;

void cdsh__tavern_fault_set(const char *point)
{
    atomic_store(&g_fault, point);
}

bool cdsh__tavern_fault_hit(const char *point)
{
    const char *cur = atomic_load(&g_fault);
    if (!cur || strcmp(cur, point) != 0)
        return false;
    return atomic_compare_exchange_strong(&g_fault, &cur, NULL);
}

/* ---- change listeners (documented global: registered once, read lock-free) -- */

#define MAX_LISTENERS 4
static const cdsh__tavern_story_listener *g_listeners[MAX_LISTENERS];
static atomic_int g_n_listeners;
static pthread_mutex_t g_listen_mu = PTHREAD_MUTEX_INITIALIZER;

int cdsh__tavern_story_listen(const cdsh__tavern_story_listener *l)
{
    int rc = 0;
    pthread_mutex_lock(&g_listen_mu);
    int n = atomic_load(&g_n_listeners);
    bool known = false;
    for (int i = 0; i < n; i++)
        known = known || g_listeners[i] == l;
    if (!known && n == MAX_LISTENERS)
        rc = CDSH_ETOOBIG;
    else if (!known) {
        g_listeners[n] = l;
        atomic_store(&g_n_listeners, n + 1); /* publishes the slot written above */
    }
    pthread_mutex_unlock(&g_listen_mu);
    return rc;
}

static int notify_changed(sqlite3 *db, const char *kind, const char *key, const char *canon,
                          cdsh_error *err)
{
    int n = atomic_load(&g_n_listeners);
    for (int i = 0; i < n; i++) {
        int rc = g_listeners[i]->changed ? g_listeners[i]->changed(db, kind, key, canon, err) : 0;
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int notify_undoing(sqlite3 *db, const char *kind, const char *key, cdsh_error *err)
{
    int n = atomic_load(&g_n_listeners);
    for (int i = 0; i < n; i++) {
        int rc = g_listeners[i]->undoing ? g_listeners[i]->undoing(db, kind, key, err) : 0;
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ---- helpers -------------------------------------------------------------- */

static const char SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS objects(kind TEXT NOT NULL, key TEXT NOT NULL,"
    " value TEXT NOT NULL, updated INTEGER NOT NULL, PRIMARY KEY(kind, key));"
    "CREATE TABLE IF NOT EXISTS floors(pos INTEGER PRIMARY KEY AUTOINCREMENT,"
    " name TEXT NOT NULL UNIQUE, session TEXT NOT NULL, turn INTEGER NOT NULL,"
    " started INTEGER NOT NULL, committed INTEGER NOT NULL DEFAULT 0, committed_at INTEGER,"
    " rolled_back_at INTEGER, preserved TEXT NOT NULL DEFAULT '[]');"
    "CREATE TABLE IF NOT EXISTS log(floor TEXT NOT NULL, seq INTEGER NOT NULL,"
    " kind TEXT NOT NULL, key TEXT NOT NULL, before TEXT, after TEXT, sum TEXT NOT NULL,"
    " PRIMARY KEY(floor, seq));"
    "CREATE TABLE IF NOT EXISTS undo(floor TEXT PRIMARY KEY, batch_pos INTEGER NOT NULL,"
    " hash TEXT NOT NULL, next INTEGER NOT NULL, preserved TEXT NOT NULL DEFAULT '[]');"
    "CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(id UNINDEXED, body, keys,"
    " tokenize='unicode61 remove_diacritics 0');";

char *cdsh_tavern_story_canon_dup(const json_t *value)
{
    return value ? json_dumps(value, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
}

/* Schema steps by user_version (db.h). Step 1 is the first layout; its
 * IF NOT EXISTS lets stories made before versioning (user_version 0, tables
 * present) adopt it unchanged. */
static const char *const MIGRATIONS[] = {SCHEMA};
#define SCHEMA_VERSION ((int)(sizeof MIGRATIONS / sizeof *MIGRATIONS))

/* Rollback journal, not WAL: a story is one file, so a branch snapshot can be
 * published with a single rename. FULL sync: durable at commit. */
static int open_db(const char *path, bool create, sqlite3 **out, cdsh_error *err)
{
    const cdsh_db_opts opts = {.create = create,
                               .journal = CDSH_DB_JOURNAL_DELETE,
                               .sync = CDSH_DB_SYNC_FULL,
                               .serialized = true,
                               .busy_timeout_ms = CDSH_TAVERN_STORY_BUSY_MS};
    int rc = cdsh_db_open(path, &opts, out, err);
    if (rc == CDSH_ENOTFOUND)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "STORY_NOT_FOUND",
                              "story database %s cannot be opened", path);
    return rc;
}

static int fsync_path(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

static int set_meta(sqlite3 *db, const char *k, const char *v, cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = 0;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta(k,v) VALUES(?,?)", -1, &st, NULL) !=
        SQLITE_OK)
        return cdsh_db_fail(db, err, "meta");
    sqlite3_bind_text(st, 1, k, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, v, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = cdsh_db_fail(db, err, "meta");
    sqlite3_finalize(st);
    return rc;
}

static char *get_meta_dup(sqlite3 *db, const char *k)
{
    char *v = NULL;
    cdsh_db_read_text_dup(db, "SELECT v FROM meta WHERE k=?", k, &v, NULL);
    return v;
}

/* Raw object write inside a transaction; also keeps memory_fts in step. */
int cdsh__tavern_story_raw_put(sqlite3 *db, const char *kind, const char *key, const char *canon,
                               cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    const char *sql = canon
                          ? "INSERT OR REPLACE INTO objects(kind,key,value,updated) VALUES(?,?,?,?)"
                          : "DELETE FROM objects WHERE kind=? AND key=?";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return cdsh_db_fail(db, err, "write");
    sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    if (canon) {
        sqlite3_bind_text(st, 3, canon, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, cdsh_clock_wall_ms());
    }
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : cdsh_db_fail(db, err, "write");
    sqlite3_finalize(st);
    if (rc < 0)
        return rc;
    return notify_changed(db, kind, key, canon, err);
}

/* Current canonical value (owned) or NULL when absent; *rc < 0 on error. */
char *cdsh__tavern_story_raw_load(sqlite3 *db, const char *kind, const char *key, int *rc,
                                  cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    char *v = NULL;
    *rc = 0;
    if (sqlite3_prepare_v2(db, "SELECT value FROM objects WHERE kind=? AND key=?", -1, &st, NULL) !=
        SQLITE_OK) {
        *rc = cdsh_db_fail(db, err, "read");
        return NULL;
    }
    sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW)
        v = cdsh_db_column_text_dup(st, 0);
    else if (s != SQLITE_DONE)
        *rc = cdsh_db_fail(db, err, "read");
    sqlite3_finalize(st);
    return v;
}

/* ---- create / open -------------------------------------------------------- */

int cdsh_tavern_story_create(const char *path, const char *story_id, const char *card_id,
                             const char *session_id, const json_t *docs, cdsh_error *err)
{
    if (!path || !story_id || !card_id || !session_id)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "story_create: missing argument");
    if (access(path, F_OK) == 0)
        return cdsh_error_set(err, CDSH_EEXIST, "STORY_EXISTS", "story %s already exists",
                              story_id);
    char *dir = cdsh_fs_dirname_dup(path);
    char hex[17];
    char *tmp = NULL;
    sqlite3 *db = NULL;
    int rc = cdsh_random_hex(hex, sizeof hex, 8);
    if (rc < 0 || !dir)
        goto oom;
    if (asprintf(&tmp, "%s/.preparing-%s.db", dir, hex) < 0) {
        tmp = NULL;
        goto oom;
    }
    if ((rc = cdsh_fs_mkdir_p(dir, 0700, err)) < 0 || (rc = open_db(tmp, true, &db, err)) < 0 ||
        (rc = cdsh_db_migrate(db, MIGRATIONS, SCHEMA_VERSION, err)) < 0 ||
        (rc = cdsh_db_begin(db, err)) < 0)
        goto cleanup;
    char created[40];
    cdsh_clock_format_iso8601(cdsh_clock_wall_ms(), created, sizeof created);
    if ((rc = set_meta(db, "version", "1", err)) < 0 ||
        (rc = set_meta(db, "id", story_id, err)) < 0 ||
        (rc = set_meta(db, "card", card_id, err)) < 0 ||
        (rc = set_meta(db, "session", session_id, err)) < 0 ||
        (rc = set_meta(db, "created", created, err)) < 0)
        goto cleanup;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)docs, k, v) {
        char *canon = cdsh_tavern_story_canon_dup(v);
        rc = canon ? cdsh__tavern_story_raw_put(db, CDSH_TAVERN_KIND_DOC, k, canon, err)
                   : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        free(canon);
        if (rc < 0)
            goto cleanup;
    }
    if ((rc = cdsh_db_commit(db, err)) < 0)
        goto cleanup;
    cdsh_db_close(db);
    db = NULL;
    if (fsync_path(tmp) != 0 || rename(tmp, path) != 0) {
        rc = cdsh_error_set(err, CDSH_EIO, "DB_ERROR", "cannot publish story %s: %s", story_id,
                            strerror(errno));
        goto cleanup;
    }
    fsync_path(dir);
    goto cleanup;
oom:
    rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
cleanup:
    if (db) {
        cdsh_db_rollback(db);
        cdsh_db_close(db);
    }
    if (tmp && rc < 0)
        unlink(tmp);
    free(tmp);
    free(dir);
    return rc;
}

static int resume_undo(cdsh_tavern_story *s, cdsh_error *err);

int cdsh_tavern_story_open(const char *path, cdsh_tavern_story **out, cdsh_error *err)
{
    if (!path || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "story_open: missing argument");
    *out = NULL;
    if (access(path, F_OK) != 0)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "STORY_NOT_FOUND", "no story at %s", path);
    cdsh_tavern_story *s = calloc(1, sizeof *s);
    if (!s)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    pthread_mutex_init(&s->mu, NULL);
    atomic_init(&s->refs, 1);
    int rc = open_db(path, false, &s->db, err);
    if (rc < 0)
        goto fail;
    s->path = strdup(path);
    s->id = get_meta_dup(s->db, "id");
    s->card = get_meta_dup(s->db, "card");
    s->session = get_meta_dup(s->db, "session");
    if (!s->id || !s->card || !s->session) {
        rc = cdsh_error_set(err, CDSH_EPROTO, "BAD_STORY", "%s is not a story database", path);
        goto fail;
    }
    /* After the meta check: a file that is not a story is never written to. */
    if ((rc = cdsh_db_migrate(s->db, MIGRATIONS, SCHEMA_VERSION, err)) < 0 ||
        (rc = resume_undo(s, err)) < 0)
        goto fail;
    *out = s;
    return 0;
fail:
    cdsh_tavern_story_free(s);
    return rc;
}

cdsh_tavern_story *cdsh__tavern_story_ref(cdsh_tavern_story *s)
{
    if (s)
        atomic_fetch_add(&s->refs, 1);
    return s;
}

void cdsh_tavern_story_free(cdsh_tavern_story *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) > 1)
        return;
    cdsh_db_close(s->db);
    pthread_mutex_destroy(&s->mu);
    free(s->path);
    free(s->id);
    free(s->card);
    free(s->session);
    free(s);
}

const char *cdsh_tavern_story_id_get(const cdsh_tavern_story *s)
{
    return s ? s->id : NULL;
}
const char *cdsh_tavern_story_card_get(const cdsh_tavern_story *s)
{
    return s ? s->card : NULL;
}
const char *cdsh_tavern_story_session_get(const cdsh_tavern_story *s)
{
    return s ? s->session : NULL;
}
const char *cdsh_tavern_story_path_get(const cdsh_tavern_story *s)
{
    return s ? s->path : NULL;
}
struct sqlite3 *cdsh__tavern_story_db(cdsh_tavern_story *s)
{
    return s->db;
}
void cdsh__tavern_story_lock(cdsh_tavern_story *s)
{
    pthread_mutex_lock(&s->mu);
}
void cdsh__tavern_story_unlock(cdsh_tavern_story *s)
{
    pthread_mutex_unlock(&s->mu);
}

int cdsh__tavern_story_rebind(cdsh_tavern_story *s, const char *story_id, const char *session_id,
                              cdsh_error *err)
{
    pthread_mutex_lock(&s->mu);
    int rc = cdsh_db_begin(s->db, err);
    if (rc == 0 && (rc = set_meta(s->db, "id", story_id, err)) == 0 &&
        (rc = set_meta(s->db, "session", session_id, err)) == 0)
        rc = cdsh_db_commit(s->db, err);
    cdsh_db_rollback(s->db);
    if (rc == 0) {
        char *a = strdup(story_id), *b = strdup(session_id);
        if (a && b) {
            free(s->id);
            free(s->session);
            s->id = a;
            s->session = b;
        } else {
            free(a);
            free(b);
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        }
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int cdsh__tavern_story_snapshot(cdsh_tavern_story *s, const char *dest, cdsh_error *err)
{
    if (access(dest, F_OK) == 0)
        return cdsh_error_set(err, CDSH_EEXIST, "STORY_EXISTS", "%s already exists", dest);
    sqlite3 *d = NULL, *reader = NULL;
    pthread_mutex_lock(&s->mu);
    /* The write lock keeps every other handle and process from writing while a
     * second connection (a writer cannot be a backup source) copies. */
    int rc = cdsh_db_begin(s->db, err);
    if (rc < 0)
        goto cleanup;
    if ((rc = open_db(s->path, false, &reader, err)) < 0 || (rc = open_db(dest, true, &d, err)) < 0)
        goto cleanup;
    sqlite3_backup *b = sqlite3_backup_init(d, "main", reader, "main");
    if (!b) {
        rc = cdsh_db_fail(d, err, "snapshot");
        goto cleanup;
    }
    int step = sqlite3_backup_step(b, -1);
    sqlite3_backup_finish(b);
    if (step != SQLITE_DONE) {
        rc = cdsh_db_fail(d, err, "snapshot");
        goto cleanup;
    }
cleanup:
    cdsh_db_rollback(s->db);
    pthread_mutex_unlock(&s->mu);
    if (reader)
        cdsh_db_close(reader);
    if (d)
        cdsh_db_close(d);
    if (rc < 0)
        unlink(dest);
    return rc;
}

/* ---- objects -------------------------------------------------------------- */

int cdsh_tavern_story_load(cdsh_tavern_story *s, const char *kind, const char *key, json_t **value,
                           cdsh_error *err)
{
    if (!s || !kind || !key || !value)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "story_load: missing argument");
    *value = NULL;
    int rc;
    pthread_mutex_lock(&s->mu);
    char *canon = cdsh__tavern_story_raw_load(s->db, kind, key, &rc, err);
    pthread_mutex_unlock(&s->mu);
    if (rc < 0)
        return rc;
    if (!canon)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "NOT_FOUND", "no %s \"%s\"", kind, key);
    *value = json_loads(canon, JSON_DECODE_ANY, NULL);
    free(canon);
    return *value ? 0
                  : cdsh_error_set(err, CDSH_EPROTO, "BAD_STORY", "stored %s is not JSON", kind);
}

int cdsh_tavern_story_list(cdsh_tavern_story *s, const char *kind, json_t **out, cdsh_error *err)
{
    if (!s || !kind || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "story_list: missing argument");
    sqlite3_stmt *st = NULL;
    json_t *arr = json_array();
    int rc = 0;
    pthread_mutex_lock(&s->mu);
    if (sqlite3_prepare_v2(s->db, "SELECT key, value FROM objects WHERE kind=? ORDER BY key", -1,
                           &st, NULL) != SQLITE_OK) {
        rc = cdsh_db_fail(s->db, err, "list");
        goto cleanup;
    }
    sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *v = json_loads((const char *)sqlite3_column_text(st, 1), JSON_DECODE_ANY, NULL);
        if (!v)
            continue;
        json_array_append_new(
            arr, json_pack("{s:s,s:o}", "key", sqlite3_column_text(st, 0), "value", v));
    }
    if (r != SQLITE_DONE)
        rc = cdsh_db_fail(s->db, err, "list");
cleanup:
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->mu);
    if (rc < 0)
        json_decref(arr);
    else
        *out = arr;
    return rc;
}

static int floor_state(sqlite3 *db, const char *floor, bool *open, cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    *open = false;
    if (sqlite3_prepare_v2(db,
                           "SELECT committed, rolled_back_at,"
                           " (SELECT COUNT(*) FROM undo WHERE undo.floor=floors.name)"
                           " FROM floors WHERE name=?",
                           -1, &st, NULL) != SQLITE_OK)
        return cdsh_db_fail(db, err, "floor");
    sqlite3_bind_text(st, 1, floor, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        *open = sqlite3_column_int(st, 0) == 0 && sqlite3_column_type(st, 1) == SQLITE_NULL &&
                sqlite3_column_int(st, 2) == 0;
    sqlite3_finalize(st);
    return 0;
}

static void record_sum(const char *floor, int64_t seq, const char *kind, const char *key,
                       const char *before, const char *after, char out[CDSH_SHA256_HEX_LEN + 1])
{
    cdsh_hash *h = cdsh_hash_new();
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)seq);
    const char *parts[] = {floor, num, kind, key};
    for (size_t i = 0; i < 4; i++) {
        cdsh_hash_update(h, parts[i], strlen(parts[i]) + 1);
    }
    cdsh_hash_update(h, before ? "v" : "-", 1);
    if (before)
        cdsh_hash_update(h, before, strlen(before) + 1);
    cdsh_hash_update(h, after ? "v" : "-", 1);
    if (after)
        cdsh_hash_update(h, after, strlen(after) + 1);
    cdsh_hash_final(h, out);
    cdsh_hash_free(h);
}

int cdsh_tavern_story_put(cdsh_tavern_story *s, const char *floor, const char *kind,
                          const char *key, const json_t *value, const char *expect_canon,
                          cdsh_error *err)
{
    if (!s || !kind || !key || !*key)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "story_put: missing argument");
    char *after = value ? cdsh_tavern_story_canon_dup(value) : NULL;
    char *before = NULL;
    sqlite3_stmt *st = NULL;
    if (value && !after)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    pthread_mutex_lock(&s->mu);
    int rc = cdsh_db_begin(s->db, err);
    if (rc < 0)
        goto cleanup;
    before = cdsh__tavern_story_raw_load(s->db, kind, key, &rc, err);
    if (rc < 0)
        goto cleanup;
    if (expect_canon && strcmp(expect_canon, before ? before : "") != 0) {
        rc = cdsh_error_set(err, CDSH_EBUSY, "REVISION_CONFLICT",
                            "%s \"%s\" changed since it was read", kind, key);
        goto cleanup;
    }
    if ((!before && !after) || (before && after && strcmp(before, after) == 0))
        goto cleanup; /* unchanged: nothing to log */
    if (floor) {
        bool open;
        if ((rc = floor_state(s->db, floor, &open, err)) < 0)
            goto cleanup;
        if (!open) {
            rc = cdsh_error_set(err, CDSH_EPERM, "FLOOR_NOT_OPEN", "floor %s is not open", floor);
            goto cleanup;
        }
        if (sqlite3_prepare_v2(s->db,
                               "INSERT INTO log(floor,seq,kind,key,before,after,sum) VALUES"
                               "(?1,(SELECT COALESCE(MAX(seq),0)+1 FROM log WHERE floor=?1),"
                               "?2,?3,?4,?5,?6) RETURNING seq",
                               -1, &st, NULL) != SQLITE_OK) {
            rc = cdsh_db_fail(s->db, err, "log");
            goto cleanup;
        }
        /* seq is only known inside the statement, so the sum is fixed up below. */
        sqlite3_bind_text(st, 1, floor, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, key, -1, SQLITE_STATIC);
        if (before)
            sqlite3_bind_text(st, 4, before, -1, SQLITE_STATIC);
        if (after)
            sqlite3_bind_text(st, 5, after, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, "", -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_ROW) {
            rc = cdsh_db_fail(s->db, err, "log");
            goto cleanup;
        }
        int64_t seq = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        st = NULL;
        char sum[CDSH_SHA256_HEX_LEN + 1];
        record_sum(floor, seq, kind, key, before, after, sum);
        if (sqlite3_prepare_v2(s->db, "UPDATE log SET sum=? WHERE floor=? AND seq=?", -1, &st,
                               NULL) != SQLITE_OK) {
            rc = cdsh_db_fail(s->db, err, "log");
            goto cleanup;
        }
        sqlite3_bind_text(st, 1, sum, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, floor, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, seq);
        if (sqlite3_step(st) != SQLITE_DONE) {
            rc = cdsh_db_fail(s->db, err, "log");
            goto cleanup;
        }
        if (cdsh__tavern_fault_hit("after-log")) {
            rc = cdsh_error_set(err, CDSH_EIO, "FAULT_INJECTED", "fault injected after the log");
            goto cleanup;
        }
    }
    if ((rc = cdsh__tavern_story_raw_put(s->db, kind, key, after, err)) < 0)
        goto cleanup;
    if (cdsh__tavern_fault_hit("after-body")) {
        rc = cdsh_error_set(err, CDSH_EIO, "FAULT_INJECTED", "fault injected after the body");
        goto cleanup;
    }
    rc = cdsh_db_commit(s->db, err);
cleanup:
    sqlite3_finalize(st);
    if (rc < 0)
        cdsh_db_rollback(s->db);
    else if (!sqlite3_get_autocommit(s->db))
        rc = cdsh_db_commit(s->db, err);
    pthread_mutex_unlock(&s->mu);
    free(before);
    free(after);
    return rc;
}

/* ---- floors --------------------------------------------------------------- */

char *cdsh_tavern_floor_name_dup(const char *session_id, int64_t turn)
{
    char *out = NULL;
    if (!session_id || asprintf(&out, "%s#t%lld", session_id, (long long)turn) < 0)
        return NULL;
    return out;
}

static int run_floor_sql(cdsh_tavern_story *s, const char *sql, const char *floor, const char *want,
                         cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return cdsh_db_fail(s->db, err, want);
    sqlite3_bind_text(st, 1, floor, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, cdsh_clock_wall_ms());
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : cdsh_db_fail(s->db, err, want);
    if (rc == 0 && sqlite3_changes(s->db) == 0)
        rc = cdsh_error_set(err, CDSH_ENOTFOUND, "FLOOR_NOT_FOUND", "no floor %s to %s", floor,
                            want);
    sqlite3_finalize(st);
    return rc;
}

int cdsh_tavern_story_floor_begin(cdsh_tavern_story *s, const char *session_id, int64_t turn,
                                  cdsh_error *err)
{
    if (!s || !session_id || turn < 1)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "floor_begin: bad arguments");
    char *name = cdsh_tavern_floor_name_dup(session_id, turn);
    sqlite3_stmt *st = NULL;
    if (!name)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    pthread_mutex_lock(&s->mu);
    int rc = cdsh_db_begin(s->db, err);
    if (rc < 0)
        goto cleanup;
    if (sqlite3_prepare_v2(s->db, "SELECT committed FROM floors WHERE name=?", -1, &st, NULL) !=
        SQLITE_OK) {
        rc = cdsh_db_fail(s->db, err, "floor");
        goto cleanup;
    }
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) {
        rc = sqlite3_column_int(st, 0)
                 ? cdsh_error_set(err, CDSH_EEXIST, "FLOOR_COMMITTED",
                                  "floor %s was already completed; roll it back before reusing it",
                                  name)
                 : cdsh_error_set(err, CDSH_EEXIST, "FLOOR_EXISTS", "floor %s is already open",
                                  name);
        goto cleanup;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(s->db, "INSERT INTO floors(name,session,turn,started) VALUES(?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = cdsh_db_fail(s->db, err, "floor");
        goto cleanup;
    }
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, session_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, turn);
    sqlite3_bind_int64(st, 4, cdsh_clock_wall_ms());
    if (sqlite3_step(st) != SQLITE_DONE) {
        rc = cdsh_db_fail(s->db, err, "floor");
        goto cleanup;
    }
    sqlite3_finalize(st);
    st = NULL;
    rc = cdsh_db_commit(s->db, err);
cleanup:
    sqlite3_finalize(st);
    cdsh_db_rollback(s->db);
    pthread_mutex_unlock(&s->mu);
    free(name);
    return rc;
}

typedef struct rec {
    int64_t seq;
    char *kind, *key, *before, *after, *sum;
} rec;

typedef struct recs {
    rec *v;
    size_t n;
    char hash[CDSH_SHA256_HEX_LEN + 1];
} recs;

static void recs_free(recs *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].kind);
        free(r->v[i].key);
        free(r->v[i].before);
        free(r->v[i].after);
        free(r->v[i].sum);
    }
    free(r->v);
    memset(r, 0, sizeof *r);
}

static bool json_text_ok(const char *t)
{
    if (!t)
        return true;
    json_t *v = json_loads(t, JSON_DECODE_ANY, NULL);
    bool ok = v != NULL;
    json_decref(v);
    return ok;
}

/* Strict read of a floor's records: checksums, JSON, seq 1..n. */
static int load_recs(sqlite3 *db, const char *floor, recs *out, cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    memset(out, 0, sizeof *out);
    if (sqlite3_prepare_v2(db,
                           "SELECT seq,kind,key,before,after,sum FROM log WHERE floor=?"
                           " ORDER BY seq",
                           -1, &st, NULL) != SQLITE_OK)
        return cdsh_db_fail(db, err, "log");
    sqlite3_bind_text(st, 1, floor, -1, SQLITE_STATIC);
    int rc = 0, r;
    cdsh_hash *h = cdsh_hash_new();
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        rec *nv = realloc(out->v, (out->n + 1) * sizeof *nv);
        if (!nv) {
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
            break;
        }
        out->v = nv;
        rec *x = &out->v[out->n++];
        memset(x, 0, sizeof *x);
        x->seq = sqlite3_column_int64(st, 0);
        x->kind = cdsh_db_column_text_dup(st, 1);
        x->key = cdsh_db_column_text_dup(st, 2);
        x->before = cdsh_db_column_text_dup(st, 3);
        x->after = cdsh_db_column_text_dup(st, 4);
        x->sum = cdsh_db_column_text_dup(st, 5);
        char want[CDSH_SHA256_HEX_LEN + 1] = "";
        if (x->kind && x->key && x->sum)
            record_sum(floor, x->seq, x->kind, x->key, x->before, x->after, want);
        if (x->seq != (int64_t)out->n || !x->kind || !x->key || !x->sum ||
            strcmp(want, x->sum) != 0 || !json_text_ok(x->before) || !json_text_ok(x->after)) {
            rc =
                cdsh_error_set(err, CDSH_EPROTO, "WAL_CORRUPT",
                               "write log of floor %s is corrupt at record %zu; nothing was undone",
                               floor, out->n);
            break;
        }
        cdsh_hash_update(h, x->sum, strlen(x->sum));
    }
    if (rc == 0 && r != SQLITE_DONE)
        rc = cdsh_db_fail(db, err, "log");
    cdsh_hash_final(h, out->hash);
    cdsh_hash_free(h);
    sqlite3_finalize(st);
    if (rc < 0)
        recs_free(out);
    return rc;
}

int cdsh_tavern_story_floor_commit(cdsh_tavern_story *s, const char *floor, cdsh_error *err)
{
    if (!s || !floor)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "floor_commit: missing argument");
    pthread_mutex_lock(&s->mu);
    recs r;
    bool open = false;
    int rc = cdsh_db_begin(s->db, err);
    if (rc == 0 && (rc = floor_state(s->db, floor, &open, err)) == 0 && !open)
        rc = cdsh_error_set(err, CDSH_EPERM, "FLOOR_NOT_OPEN", "floor %s is not open", floor);
    if (rc == 0 && (rc = load_recs(s->db, floor, &r, err)) == 0) {
        recs_free(&r);
        rc = run_floor_sql(s, "UPDATE floors SET committed=1, committed_at=?2 WHERE name=?1", floor,
                           "commit", err);
    }
    if (rc == 0)
        rc = cdsh_db_commit(s->db, err);
    cdsh_db_rollback(s->db);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int cdsh_tavern_story_floor_reopen(cdsh_tavern_story *s, const char *floor, cdsh_error *err)
{
    if (!s || !floor)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "floor_reopen: missing argument");
    pthread_mutex_lock(&s->mu);
    int rc = cdsh_db_begin(s->db, err);
    if (rc == 0)
        rc = run_floor_sql(s,
                           "UPDATE floors SET committed=0 WHERE name=?1 AND committed=1 AND"
                           " rolled_back_at IS NULL AND ?2 > 0",
                           floor, "reopen", err);
    if (rc == 0)
        rc = cdsh_db_commit(s->db, err);
    cdsh_db_rollback(s->db);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

bool cdsh_tavern_story_floor_is_open(cdsh_tavern_story *s, const char *floor)
{
    if (!s || !floor)
        return false;
    bool open = false;
    pthread_mutex_lock(&s->mu);
    floor_state(s->db, floor, &open, NULL);
    pthread_mutex_unlock(&s->mu);
    return open;
}

int cdsh_tavern_story_floors(cdsh_tavern_story *s, json_t **out, cdsh_error *err)
{
    if (!s || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "floors: missing argument");
    sqlite3_stmt *st = NULL;
    json_t *arr = json_array();
    int rc = 0;
    pthread_mutex_lock(&s->mu);
    if (sqlite3_prepare_v2(s->db,
                           "SELECT name,session,turn,committed,rolled_back_at IS NOT NULL,"
                           "(SELECT COUNT(*) FROM log WHERE log.floor=floors.name),preserved"
                           " FROM floors ORDER BY pos",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = cdsh_db_fail(s->db, err, "floors");
    } else {
        while (sqlite3_step(st) == SQLITE_ROW) {
            json_t *pres = json_loads((const char *)sqlite3_column_text(st, 6), 0, NULL);
            json_array_append_new(
                arr, json_pack("{s:s,s:s,s:I,s:b,s:b,s:I,s:o}", "name", sqlite3_column_text(st, 0),
                               "session", sqlite3_column_text(st, 1), "turn",
                               (json_int_t)sqlite3_column_int64(st, 2), "committed",
                               sqlite3_column_int(st, 3), "rolledBack", sqlite3_column_int(st, 4),
                               "records", (json_int_t)sqlite3_column_int64(st, 5), "preserved",
                               pres ? pres : json_array()));
        }
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->mu);
    if (rc < 0)
        json_decref(arr);
    else
        *out = arr;
    return rc;
}

/* ---- undo ----------------------------------------------------------------- */

typedef struct batch_item {
    char *floor;
    int64_t pos;
    recs r;
    json_t *preserved; /* borrowed; gets the floor's kept objects when it finishes */
} batch_item;

static void batch_free(batch_item *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(b[i].floor);
        recs_free(&b[i].r);
    }
    free(b);
}

static int cmp_pos_desc(const void *a, const void *b)
{
    const batch_item *x = a, *y = b;
    return x->pos < y->pos ? 1 : x->pos > y->pos ? -1 : 0;
}

/* A later, not selected, live floor whose record starts from what a
 * selected record produced depends on it: refuse (undo newest first). */
static int check_successors(sqlite3 *db, batch_item *b, size_t n, cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT l.floor FROM log l JOIN floors f ON f.name=l.floor"
                           " WHERE f.rolled_back_at IS NULL AND f.pos > ?1 AND l.kind=?2"
                           " AND l.key=?3 AND l.before IS ?4 AND l.before IS NOT l.after",
                           -1, &st, NULL) != SQLITE_OK)
        return cdsh_db_fail(db, err, "successors");
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        for (size_t j = 0; j < b[i].r.n && rc == 0; j++) {
            rec *x = &b[i].r.v[j];
            sqlite3_reset(st);
            sqlite3_bind_int64(st, 1, b[i].pos);
            sqlite3_bind_text(st, 2, x->kind, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 3, x->key, -1, SQLITE_STATIC);
            if (x->after)
                sqlite3_bind_text(st, 4, x->after, -1, SQLITE_STATIC);
            else
                sqlite3_bind_null(st, 4);
            while (sqlite3_step(st) == SQLITE_ROW && rc == 0) {
                const char *other = (const char *)sqlite3_column_text(st, 0);
                bool selected = false;
                for (size_t k = 0; k < n; k++)
                    selected = selected || strcmp(b[k].floor, other) == 0;
                if (!selected)
                    rc = cdsh_error_set(err, CDSH_EBUSY, "FLOOR_SUCCESSOR",
                                        "floor %s builds on %s: undo from the newest floor first",
                                        other, b[i].floor);
            }
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* Loads and validates a batch: floors exist and are live, records intact,
 * any existing cursor matches its records. Nothing is changed. */
static int preflight(sqlite3 *db, const char *const *floors, size_t n, batch_item **out,
                     cdsh_error *err)
{
    batch_item *b = calloc(n ? n : 1, sizeof *b);
    sqlite3_stmt *st = NULL, *cu = NULL;
    int rc = 0;
    if (!b)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    if (sqlite3_prepare_v2(db, "SELECT pos, rolled_back_at FROM floors WHERE name=?", -1, &st,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT hash, next, preserved FROM undo WHERE floor=?", -1, &cu,
                           NULL) != SQLITE_OK) {
        rc = cdsh_db_fail(db, err, "undo");
        goto cleanup;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        b[i].floor = strdup(floors[i]);
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, floors[i], -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_ROW) {
            rc = cdsh_error_set(err, CDSH_ENOTFOUND, "FLOOR_NOT_FOUND", "no floor %s", floors[i]);
            break;
        }
        if (sqlite3_column_type(st, 1) != SQLITE_NULL) {
            rc = cdsh_error_set(err, CDSH_ENOTFOUND, "FLOOR_NOT_FOUND",
                                "floor %s was already rolled back", floors[i]);
            break;
        }
        b[i].pos = sqlite3_column_int64(st, 0);
        for (size_t k = 0; k < i; k++)
            if (strcmp(b[k].floor, floors[i]) == 0)
                rc = cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "floor %s named twice",
                                    floors[i]);
        if (rc == 0)
            rc = load_recs(db, floors[i], &b[i].r, err);
        if (rc < 0)
            break;
        sqlite3_reset(cu);
        sqlite3_bind_text(cu, 1, floors[i], -1, SQLITE_STATIC);
        if (sqlite3_step(cu) == SQLITE_ROW) {
            const char *hash = (const char *)sqlite3_column_text(cu, 0);
            int64_t next = sqlite3_column_int64(cu, 1);
            json_t *pres = json_loads((const char *)sqlite3_column_text(cu, 2), 0, NULL);
            if (!hash || strcmp(hash, b[i].r.hash) != 0 || next < -1 || next >= (int64_t)b[i].r.n ||
                !json_is_array(pres))
                rc = cdsh_error_set(err, CDSH_EPROTO, "WAL_CORRUPT",
                                    "undo cursor of floor %s does not match its records; nothing "
                                    "was undone",
                                    floors[i]);
            json_decref(pres);
        }
    }
    if (rc == 0)
        qsort(b, n, sizeof *b, cmp_pos_desc);
    if (rc == 0)
        rc = check_successors(db, b, n, err);
cleanup:
    sqlite3_finalize(st);
    sqlite3_finalize(cu);
    if (rc < 0)
        batch_free(b, n);
    else
        *out = b;
    return rc;
}

/* Long by design: one transaction whose checks (record, checksum, cursor,
 * successor) must stay in order beside the writes they guard. */
/* One transaction: restore record `next` of floor, advance the cursor; at
 * -1 mark the floor rolled back and free its name. */
static int undo_step(sqlite3 *db, batch_item *it, cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    int64_t next = 0;
    json_t *pres = NULL;
    char *cur = NULL;
    int rc = cdsh_db_begin(db, err);
    if (rc < 0)
        return rc;
    if (sqlite3_prepare_v2(db, "SELECT next, preserved FROM undo WHERE floor=?", -1, &st, NULL) !=
        SQLITE_OK) {
        rc = cdsh_db_fail(db, err, "undo");
        goto cleanup;
    }
    sqlite3_bind_text(st, 1, it->floor, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW) {
        rc = 1; /* finished by someone else */
        goto cleanup;
    }
    next = sqlite3_column_int64(st, 0);
    pres = json_loads((const char *)sqlite3_column_text(st, 1), 0, NULL);
    sqlite3_finalize(st);
    st = NULL;
    if (!pres || next >= (int64_t)it->r.n) {
        rc = cdsh_error_set(err, CDSH_EPROTO, "WAL_CORRUPT", "undo cursor of %s is invalid",
                            it->floor);
        goto cleanup;
    }
    if (next >= 0) {
        rec *x = &it->r.v[next];
        cur = cdsh__tavern_story_raw_load(db, x->kind, x->key, &rc, err);
        if (rc < 0)
            goto cleanup;
        bool same = (!cur && !x->after) || (cur && x->after && strcmp(cur, x->after) == 0);
        if (same) {
            if ((rc = cdsh__tavern_story_raw_put(db, x->kind, x->key, x->before, err)) < 0)
                goto cleanup;
        } else {
            /* Changed since the model wrote it (a manual edit): keep it. */
            char *tag = NULL;
            if (asprintf(&tag, "%s:%s", x->kind, x->key) >= 0) {
                json_array_append_new(pres, json_string(tag));
                free(tag);
            }
        }
        if (cdsh__tavern_fault_hit("undo-step")) {
            rc = cdsh_error_set(err, CDSH_EIO, "FAULT_INJECTED", "fault injected during undo");
            goto cleanup;
        }
        char *ptext = json_dumps(pres, JSON_COMPACT);
        if (sqlite3_prepare_v2(db, "UPDATE undo SET next=?, preserved=? WHERE floor=?", -1, &st,
                               NULL) != SQLITE_OK) {
            free(ptext);
            rc = cdsh_db_fail(db, err, "undo");
            goto cleanup;
        }
        sqlite3_bind_int64(st, 1, next - 1);
        sqlite3_bind_text(st, 2, ptext, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, it->floor, -1, SQLITE_STATIC);
        free(ptext);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : cdsh_db_fail(db, err, "undo");
    } else {
        if (it->preserved)
            json_array_extend(it->preserved, pres);
        char *ptext = json_dumps(pres, JSON_COMPACT);
        char *renamed = NULL;
        if (asprintf(&renamed, "%s.rolled-back-%lld", it->floor, (long long)cdsh_clock_wall_ms()) <
            0)
            renamed = NULL;
        const char *sqls[] = {
            "UPDATE floors SET rolled_back_at=?3, preserved=?4, name=?2 WHERE name=?1",
            "UPDATE log SET floor=?2 WHERE floor=?1",
            "DELETE FROM undo WHERE floor=?1",
        };
        for (size_t i = 0; i < 3 && rc == 0; i++) {
            if (sqlite3_prepare_v2(db, sqls[i], -1, &st, NULL) != SQLITE_OK) {
                rc = cdsh_db_fail(db, err, "undo");
                break;
            }
            sqlite3_bind_text(st, 1, it->floor, -1, SQLITE_STATIC);
            if (sqlite3_bind_parameter_count(st) >= 2)
                sqlite3_bind_text(st, 2, renamed ? renamed : it->floor, -1, SQLITE_STATIC);
            if (sqlite3_bind_parameter_count(st) >= 3) {
                sqlite3_bind_int64(st, 3, cdsh_clock_wall_ms());
                sqlite3_bind_text(st, 4, ptext ? ptext : "[]", -1, SQLITE_STATIC);
            }
            if (sqlite3_step(st) != SQLITE_DONE)
                rc = cdsh_db_fail(db, err, "undo");
            sqlite3_finalize(st);
            st = NULL;
        }
        /* Records keep their checksums under the old name: re-sum them. */
        if (rc == 0 && renamed) {
            for (size_t j = 0; j < it->r.n && rc == 0; j++) {
                rec *x = &it->r.v[j];
                char sum[CDSH_SHA256_HEX_LEN + 1];
                record_sum(renamed, x->seq, x->kind, x->key, x->before, x->after, sum);
                if (sqlite3_prepare_v2(db, "UPDATE log SET sum=? WHERE floor=? AND seq=?", -1, &st,
                                       NULL) != SQLITE_OK) {
                    rc = cdsh_db_fail(db, err, "undo");
                    break;
                }
                sqlite3_bind_text(st, 1, sum, -1, SQLITE_STATIC);
                sqlite3_bind_text(st, 2, renamed, -1, SQLITE_STATIC);
                sqlite3_bind_int64(st, 3, x->seq);
                if (sqlite3_step(st) != SQLITE_DONE)
                    rc = cdsh_db_fail(db, err, "undo");
                sqlite3_finalize(st);
                st = NULL;
            }
        }
        free(renamed);
        free(ptext);
        if (rc == 0)
            rc = 1;
    }
    if (rc >= 0) {
        int crc = cdsh_db_commit(db, err);
        if (crc < 0)
            rc = crc;
    }
cleanup:
    sqlite3_finalize(st);
    if (rc < 0)
        cdsh_db_rollback(db);
    else if (!sqlite3_get_autocommit(db))
        cdsh_db_rollback(db);
    json_decref(pres);
    free(cur);
    return rc;
}

/* Tells the listeners every object the batch will restore, before the first
 * restore (memory.c expands summaries built on them, so undone facts do not
 * survive inside a summary). */
static int expand_summaries(sqlite3 *db, batch_item *b, size_t n, cdsh_error *err)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < b[i].r.n; j++) {
            int rc = notify_undoing(db, b[i].r.v[j].kind, b[i].r.v[j].key, err);
            if (rc < 0)
                return rc;
        }
    return 0;
}

static int run_batch(cdsh_tavern_story *s, batch_item *b, size_t n, json_t *preserved,
                     cdsh_error *err)
{
    for (size_t i = 0; i < n; i++)
        b[i].preserved = preserved;
    for (size_t i = 0; i < n; i++) {
        int rc;
        do {
            rc = undo_step(s->db, &b[i], err);
        } while (rc == 0);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int cdsh_tavern_story_undo(cdsh_tavern_story *s, const char *const *floors, size_t n,
                           json_t **preserved, cdsh_error *err)
{
    if (!s || (n && !floors))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "undo: missing argument");
    if (preserved)
        *preserved = NULL;
    batch_item *b = NULL;
    sqlite3_stmt *st = NULL;
    pthread_mutex_lock(&s->mu);
    int rc = cdsh_db_begin(s->db, err);
    if (rc < 0)
        goto cleanup;
    if ((rc = preflight(s->db, floors, n, &b, err)) < 0)
        goto cleanup;
    /* Persist the whole batch's cursors (and summary expansion) first. */
    if ((rc = expand_summaries(s->db, b, n, err)) < 0)
        goto cleanup;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT OR IGNORE INTO undo(floor,batch_pos,hash,next) VALUES(?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = cdsh_db_fail(s->db, err, "undo");
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++) {
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, b[i].floor, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, b[i].pos);
        sqlite3_bind_text(st, 3, b[i].r.hash, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, (int64_t)b[i].r.n - 1);
        if (sqlite3_step(st) != SQLITE_DONE) {
            rc = cdsh_db_fail(s->db, err, "undo");
            goto cleanup;
        }
    }
    sqlite3_finalize(st);
    st = NULL;
    if ((rc = cdsh_db_commit(s->db, err)) < 0)
        goto cleanup;
    json_t *pres = json_array();
    rc = run_batch(s, b, n, pres, err);
    if (rc == 0 && preserved)
        *preserved = pres;
    else
        json_decref(pres);
cleanup:
    sqlite3_finalize(st);
    cdsh_db_rollback(s->db);
    if (b)
        batch_free(b, n);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* Finishes a batch a crash interrupted: its cursors are all persisted. */
static int resume_undo(cdsh_tavern_story *s, cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    char **names = NULL;
    size_t n = 0;
    int rc = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT floor FROM undo ORDER BY batch_pos DESC", -1, &st,
                           NULL) != SQLITE_OK)
        return cdsh_db_fail(s->db, err, "undo");
    while (sqlite3_step(st) == SQLITE_ROW) {
        char **nn = realloc(names, (n + 1) * sizeof *nn);
        if (!nn)
            break;
        names = nn;
        names[n++] = cdsh_db_column_text_dup(st, 0);
    }
    sqlite3_finalize(st);
    if (n > 0) {
        batch_item *b = NULL;
        pthread_mutex_lock(&s->mu);
        rc = cdsh_db_begin(s->db, err);
        if (rc == 0)
            rc = preflight(s->db, (const char *const *)names, n, &b, err);
        cdsh_db_rollback(s->db);
        if (rc == 0) {
            rc = run_batch(s, b, n, NULL, err);
            batch_free(b, n);
        }
        pthread_mutex_unlock(&s->mu);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

int cdsh_tavern_story_undo_from(cdsh_tavern_story *s, const char *session_id, const json_t *lineage,
                                int64_t from_turn, cdsh_error *err)
{
    if (!s || !session_id)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "undo_from: missing argument");
    json_t *floors = NULL;
    int rc = cdsh_tavern_story_floors(s, &floors, err);
    if (rc < 0)
        return rc;
    size_t cap = json_array_size(floors), n = 0;
    const char **names = calloc(cap ? cap : 1, sizeof *names);
    size_t i;
    json_t *f;
    json_array_foreach(floors, i, f) {
        if (json_is_true(json_object_get(f, "rolledBack")))
            continue;
        const char *owner = json_string_value(json_object_get(f, "session"));
        int64_t turn = json_integer_value(json_object_get(f, "turn"));
        if (turn < from_turn)
            continue;
        bool take = strcmp(owner, session_id) == 0;
        size_t j;
        json_t *l;
        json_array_foreach(lineage, j, l) {
            const char *ls = json_string_value(json_object_get(l, "sessionId"));
            if (ls && strcmp(ls, owner) == 0 &&
                turn <= json_integer_value(json_object_get(l, "throughTurn")))
                take = true;
        }
        if (take)
            names[n++] = json_string_value(json_object_get(f, "name"));
    }
    rc = cdsh_tavern_story_undo(s, names, n, NULL, err);
    free(names);
    json_decref(floors);
    return rc;
}
