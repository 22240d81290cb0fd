/* session_store.c — the SQLite session store: schema and migrations, session
 * records, the append-only event log with per-type payload checks, replay
 * into chat messages, crash repair and per-session leases. It never runs a
 * turn; see session_store.h for the contract and docs/sessions.md. */
#include "agent/session_store.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/db.h"
#include "base/fs.h"
#include "base/home.h"
#include "base/json.h"
#include "base/random.h"
#include "base/strbuf.h"

struct cdsh_session_store {
    sqlite3 *db;
    pthread_mutex_t mu; /* serialises every use of db */
    char *path;
    char *lock_dir;
};

struct cdsh_session_lease {
    cdsh_session_store *store;
    cdsh_fs_lock *lock;
    char id[72];
};

static void remove_lock_file(cdsh_session_store *s, const char *id);
static void sweep_lock_files(cdsh_session_store *s);

/* ---- small helpers ------------------------------------------------------ */

bool cdsh_session_id_valid(const char *id)
{
    if (!id || strncmp(id, "s-", 2) != 0)
        return false;
    size_t n = 0;
    for (const char *p = id + 2; *p; p++, n++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-';
        if (!ok || n >= 64)
            return false;
    }
    return n >= 1;
}

static int check_id(const char *id, cdsh_error *err)
{
    if (cdsh_session_id_valid(id))
        return 0;
    return cdsh_error_set(err, CDSH_EINVAL, "BAD_SESSION_ID",
                          "\"%s\" is not a session id (expected s- followed by 1 to 64 letters, "
                          "digits, '_' or '-')",
                          id ? id : "(null)");
}

static void now_iso(char out[CDSH_ISO8601_MAX])
{
    if (cdsh_clock_format_iso8601(cdsh_clock_wall_ms(), out, CDSH_ISO8601_MAX) == 0)
        snprintf(out, CDSH_ISO8601_MAX, "1970-01-01T00:00:00.000Z");
}

static int db_fail(cdsh_session_store *s, int src, cdsh_error *err, const char *what)
{
    /* Mapped from the step's own result: the connection's error code may
     * already describe a later call. */
    cdsh_db_fail(s->db, err, what);
    int rc = (src == SQLITE_BUSY || src == SQLITE_LOCKED) ? CDSH_EBUSY : CDSH_EIO;
    if (err)
        err->rc = rc;
    return rc;
}

static int exec_sql(cdsh_session_store *s, const char *sql, cdsh_error *err)
{
    return cdsh_db_exec(s->db, sql, err);
}

static int prepare(cdsh_session_store *s, const char *sql, sqlite3_stmt **st, cdsh_error *err)
{
    return cdsh_db_prepare(s->db, sql, st, err);
}

#define bind_text_or_null cdsh_db_bind_text_or_null

static json_t *column_string_or_null(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return json_null();
    return json_string((const char *)sqlite3_column_text(st, i));
}

static void rollback(cdsh_session_store *s)
{
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

/* ---- schema ---------------------------------------------------------------
 * Each entry upgrades user_version i to i+1. Never edit a shipped step; add
 * one. Version 1 is the first layout (kept so old files migrate). */
static const char *const migrations[CDSH_SESSION_SCHEMA_VERSION] = {
    "CREATE TABLE sessions ("
    "  id TEXT PRIMARY KEY,"
    "  title TEXT NOT NULL DEFAULT '',"
    "  created_at TEXT NOT NULL,"
    "  updated_at TEXT NOT NULL,"
    "  provider TEXT,"
    "  model TEXT,"
    "  agent TEXT);"
    "CREATE TABLE events ("
    "  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
    "  seq INTEGER NOT NULL,"
    "  turn INTEGER NOT NULL DEFAULT 0,"
    "  step INTEGER NOT NULL DEFAULT 0,"
    "  type TEXT NOT NULL,"
    "  payload TEXT NOT NULL,"
    "  created_at TEXT NOT NULL,"
    "  PRIMARY KEY (session_id, seq)) WITHOUT ROWID;",

    "ALTER TABLE sessions ADD COLUMN base_url TEXT;"
    "ALTER TABLE sessions ADD COLUMN parent_id TEXT REFERENCES sessions(id) ON DELETE SET NULL;"
    "ALTER TABLE sessions ADD COLUMN fork_seq INTEGER;"
    "ALTER TABLE sessions ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';"
    "CREATE INDEX sessions_by_update ON sessions(updated_at DESC, id DESC);"
    "CREATE INDEX sessions_by_parent ON sessions(parent_id);"
    "CREATE INDEX events_by_type ON events(session_id, type, seq);",
};

/* ---- open / close -------------------------------------------------------- */

int cdsh_session_store_open(const cdsh_home *home_h, const char *path, cdsh_session_store **out,
                            cdsh_error *err)
{
    if (!out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "session_store_open needs out");
    *out = NULL;
    int rc = 0;
    char *home = NULL;
    cdsh_session_store *s = calloc(1, sizeof *s);
    if (!s)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    pthread_mutex_init(&s->mu, NULL);
    if (path) {
        s->path = strdup(path);
    } else {
        rc = cdsh_home_ensure(home_h, &home, err);
        if (rc)
            goto cleanup;
        s->path = cdsh_fs_path_join_dup(home, "sessions.db");
    }
    /* Lexical: "<dir>/sessions.db/../sessions.locks" is "<dir>/sessions.locks". */
    s->lock_dir = s->path ? cdsh_fs_path_join_dup(s->path, "../sessions.locks") : NULL;
    if (!s->path || !s->lock_dir) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto cleanup;
    }
    /* synchronous=FULL: an event is on disk when append returns, even across power loss. */
    const cdsh_db_opts opts = {.create = true,
                               .journal = CDSH_DB_JOURNAL_WAL,
                               .sync = CDSH_DB_SYNC_FULL,
                               .foreign_keys = true,
                               .busy_timeout_ms = CDSH_SESSION_BUSY_TIMEOUT_MS};
    if ((rc = cdsh_db_open(s->path, &opts, &s->db, err)) < 0 ||
        (rc = cdsh_db_migrate(s->db, migrations, CDSH_SESSION_SCHEMA_VERSION, err)) < 0)
        goto cleanup;
    sweep_lock_files(s); /* what crashes and older versions left behind */
    *out = s;
    s = NULL;
cleanup:
    free(home);
    cdsh_session_store_close(s);
    return rc;
}

void cdsh_session_store_close(cdsh_session_store *s)
{
    if (!s)
        return;
    cdsh_db_close(s->db);
    pthread_mutex_destroy(&s->mu);
    free(s->path);
    free(s->lock_dir);
    free(s);
}

/* ---- sessions ------------------------------------------------------------ */

#define SESSION_COLUMNS                                                                            \
    "s.id, s.title, s.created_at, s.updated_at, s.provider, s.model, s.base_url, s.agent,"         \
    " s.parent_id, s.fork_seq, s.metadata,"                                                        \
    " (SELECT count(*) FROM events e WHERE e.session_id = s.id),"                                  \
    " (SELECT coalesce(max(seq), 0) FROM events e WHERE e.session_id = s.id),"                     \
    " (SELECT coalesce(max(turn), 0) FROM events e WHERE e.session_id = s.id),"                    \
    " (SELECT e.turn FROM events e WHERE e.session_id = s.id AND e.type = 'turn/start'"            \
    "    AND e.seq > (SELECT coalesce(max(seq), 0) FROM events x"                                  \
    "                 WHERE x.session_id = s.id AND x.type = 'turn/end')"                          \
    "  ORDER BY e.seq DESC LIMIT 1)"

static json_t *session_from_row(sqlite3_stmt *st)
{
    json_t *metadata = NULL;
    if (sqlite3_column_type(st, 10) != SQLITE_NULL) {
        const char *m = (const char *)sqlite3_column_text(st, 10);
        metadata = cdsh_json_parse(m, strlen(m), 0, NULL);
    }
    json_t *open_turn = sqlite3_column_type(st, 14) == SQLITE_NULL
                            ? json_null()
                            : json_integer(sqlite3_column_int64(st, 14));
    json_t *fork_seq = sqlite3_column_type(st, 9) == SQLITE_NULL
                           ? json_null()
                           : json_integer(sqlite3_column_int64(st, 9));
    return json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:o}", "id",
        column_string_or_null(st, 0), "title", column_string_or_null(st, 1), "createdAt",
        column_string_or_null(st, 2), "updatedAt", column_string_or_null(st, 3), "provider",
        column_string_or_null(st, 4), "model", column_string_or_null(st, 5), "baseUrl",
        column_string_or_null(st, 6), "agent", column_string_or_null(st, 7), "parentId",
        column_string_or_null(st, 8), "forkSeq", fork_seq, "metadata",
        metadata ? metadata : json_object(), "eventCount", (json_int_t)sqlite3_column_int64(st, 11),
        "lastSeq", (json_int_t)sqlite3_column_int64(st, 12), "lastTurn",
        (json_int_t)sqlite3_column_int64(st, 13), "openTurn", open_turn);
}

static int no_session(const char *id, cdsh_error *err)
{
    return cdsh_error_set(err, CDSH_ENOTFOUND, "NO_SESSION", "no session \"%s\"", id);
}

/* Caller holds the mutex. */
static int get_locked(cdsh_session_store *s, const char *id, json_t **out, cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    *out = NULL;
    int rc = prepare(s, "SELECT " SESSION_COLUMNS " FROM sessions s WHERE s.id = ?", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW) {
        *out = session_from_row(st);
        if (!*out)
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    } else if (src == SQLITE_DONE) {
        rc = no_session(id, err);
    } else {
        rc = db_fail(s, src, err, "reading a session");
    }
    sqlite3_finalize(st);
    return rc;
}

/* 1 if the session exists, 0 if not, negative on error. Caller holds the mutex. */
static int exists_locked(cdsh_session_store *s, const char *id, cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare(s, "SELECT 1 FROM sessions WHERE id = ?", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    int src = sqlite3_step(st);
    rc = src == SQLITE_ROW    ? 1
         : src == SQLITE_DONE ? 0
                              : db_fail(s, src, err, "looking up a session");
    sqlite3_finalize(st);
    return rc;
}

json_t *cdsh_session_store_info_dup(cdsh_session_store *s, const char *id, cdsh_error *err)
{
    if (!s || check_id(id, err))
        return NULL;
    pthread_mutex_lock(&s->mu);
    json_t *out = NULL;
    get_locked(s, id, &out, err);
    pthread_mutex_unlock(&s->mu);
    return out;
}

int cdsh_session_store_create(cdsh_session_store *s, const cdsh_session_spec *spec, char **id_out,
                              cdsh_error *err)
{
    if (!s || !id_out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "session create needs a store and id_out");
    *id_out = NULL;
    cdsh_session_spec empty = {0};
    if (!spec)
        spec = &empty;
    if (spec->metadata && !json_is_object(spec->metadata))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_EVENT",
                              "session metadata must be a JSON object");
    if (spec->metadata && cdsh_json_check_lossless(spec->metadata, "metadata", err))
        return CDSH_EINVAL;
    int rc = 0;
    sqlite3_stmt *st = NULL;
    char *meta = spec->metadata ? cdsh_json_dump_compact_dup(spec->metadata) : strdup("{}");
    char *id = cdsh_random_id_dup("s-");
    if (!meta || !id) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto cleanup;
    }
    char now[CDSH_ISO8601_MAX];
    now_iso(now);
    pthread_mutex_lock(&s->mu);
    rc = prepare(s,
                 "INSERT INTO sessions (id, title, created_at, updated_at, provider, model,"
                 " base_url, agent, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 &st, err);
    if (rc == 0) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, spec->title ? spec->title : "", -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, now, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, now, -1, SQLITE_TRANSIENT);
        bind_text_or_null(st, 5, spec->provider);
        bind_text_or_null(st, 6, spec->model);
        bind_text_or_null(st, 7, spec->base_url);
        bind_text_or_null(st, 8, spec->agent);
        sqlite3_bind_text(st, 9, meta, -1, SQLITE_TRANSIENT);
        int src = sqlite3_step(st);
        if (src != SQLITE_DONE)
            rc = db_fail(s, src, err, "creating a session");
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->mu);
    if (rc == 0) {
        *id_out = id;
        id = NULL;
    }
cleanup:
    free(meta);
    free(id);
    return rc;
}

json_t *cdsh_session_store_list(cdsh_session_store *s, int64_t offset, int64_t limit,
                                int64_t *total, cdsh_error *err)
{
    if (!s || offset < 0 || limit < 1 || limit > 1000) {
        cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                       "session list needs offset >= 0 and limit 1..1000");
        return NULL;
    }
    json_t *arr = json_array();
    sqlite3_stmt *st = NULL;
    int rc = 0;
    if (!arr) {
        cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        return NULL;
    }
    pthread_mutex_lock(&s->mu);
    /* One read transaction so the page and the total agree. */
    rc = exec_sql(s, "BEGIN", err);
    if (rc)
        goto cleanup;
    rc = prepare(s,
                 "SELECT " SESSION_COLUMNS " FROM sessions s"
                 " ORDER BY s.updated_at DESC, s.id DESC LIMIT ? OFFSET ?",
                 &st, err);
    if (rc)
        goto cleanup;
    sqlite3_bind_int64(st, 1, limit);
    sqlite3_bind_int64(st, 2, offset);
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        if (json_array_append_new(arr, session_from_row(st))) {
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
            goto cleanup;
        }
    }
    if (src != SQLITE_DONE) {
        rc = db_fail(s, src, err, "listing sessions");
        goto cleanup;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (total) {
        rc = prepare(s, "SELECT count(*) FROM sessions", &st, err);
        if (rc)
            goto cleanup;
        src = sqlite3_step(st);
        if (src != SQLITE_ROW) {
            rc = db_fail(s, src, err, "counting sessions");
            goto cleanup;
        }
        *total = sqlite3_column_int64(st, 0);
    }
cleanup:
    sqlite3_finalize(st);
    sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
    pthread_mutex_unlock(&s->mu);
    if (rc) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

/* Runs one UPDATE/DELETE on a session by id; NO_SESSION when no row changed. */
static int change_session(cdsh_session_store *s, const char *id, const char *sql, const char *a,
                          const char *b, const char *c, cdsh_error *err)
{
    if (!s)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "needs a store");
    int rc = check_id(id, err);
    if (rc)
        return rc;
    sqlite3_stmt *st = NULL;
    pthread_mutex_lock(&s->mu);
    rc = prepare(s, sql, &st, err);
    if (rc == 0) {
        /* The last parameter is the id; the ones before it take a, b, c in order. */
        int n = sqlite3_bind_parameter_count(st);
        const char *args[3] = {a, b, c};
        for (int i = 1; i < n && i <= 3; i++)
            bind_text_or_null(st, i, args[i - 1]);
        sqlite3_bind_text(st, sqlite3_bind_parameter_count(st), id, -1, SQLITE_TRANSIENT);
        int src = sqlite3_step(st);
        if (src != SQLITE_DONE)
            rc = db_fail(s, src, err, "updating a session");
        else if (sqlite3_changes(s->db) == 0)
            rc = no_session(id, err);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int cdsh_session_store_delete(cdsh_session_store *s, const char *id, cdsh_error *err)
{
    int rc = change_session(s, id, "DELETE FROM sessions WHERE id = ?", NULL, NULL, NULL, err);
    if (rc == 0)
        remove_lock_file(s, id);
    return rc;
}

int cdsh_session_store_rename(cdsh_session_store *s, const char *id, const char *title,
                              cdsh_error *err)
{
    if (!title)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "rename needs a title");
    char now[CDSH_ISO8601_MAX];
    now_iso(now);
    return change_session(s, id, "UPDATE sessions SET title = ?, updated_at = ? WHERE id = ?",
                          title, now, NULL, err);
}

/* ---- event validation ------------------------------------------------------ */

static int bad_event(cdsh_error *err, const char *type, const char *what)
{
    return cdsh_error_set(err, CDSH_EINVAL, "BAD_EVENT", "%s event: %s", type, what);
}

static int need_string(const json_t *p, const char *type, const char *key, bool nonempty,
                       cdsh_error *err)
{
    const json_t *v = json_object_get(p, key);
    char msg[160];
    if (!json_is_string(v) || (nonempty && json_string_length(v) == 0)) {
        snprintf(msg, sizeof msg, "field \"%s\" must be a%s string", key,
                 nonempty ? " non-empty" : "");
        return bad_event(err, type, msg);
    }
    return 0;
}

static int opt_type(const json_t *p, const char *type, const char *key, json_type jtype,
                    bool null_ok, const char *tname, cdsh_error *err)
{
    const json_t *v = json_object_get(p, key);
    if (!v || (null_ok && json_is_null(v)) || json_typeof(v) == jtype)
        return 0;
    char msg[160];
    snprintf(msg, sizeof msg, "field \"%s\" must be %s", key, tname);
    return bad_event(err, type, msg);
}

static bool one_of(const char *v, const char *const *names)
{
    for (; *names; names++)
        if (strcmp(v, *names) == 0)
            return true;
    return false;
}

static bool generic_type_ok(const char *t)
{
    const char *slash = strchr(t, '/');
    if (!slash || slash == t || !slash[1] || strchr(slash + 1, '/') || strlen(t) > 64)
        return false;
    for (const char *p = t; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '/'))
            return false;
    return true;
}

static int validate_event(const char *type, int64_t turn, int64_t step, const json_t *p,
                          cdsh_error *err)
{
    if (!type)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_EVENT", "event type is missing");
    if (!json_is_object(p))
        return bad_event(err, type, "payload must be a JSON object");
    if (turn < 0 || step < 0)
        return bad_event(err, type, "turn and step must be >= 0");
    if (cdsh_json_check_lossless(p, "payload", err))
        return CDSH_EINVAL;
    int rc = 0;
    if (strcmp(type, "user/message") == 0)
        return need_string(p, type, "text", false, err);
    if (strcmp(type, "assistant/message") == 0) {
        if ((rc = need_string(p, type, "text", false, err)) ||
            (rc = opt_type(p, type, "reasoning", JSON_STRING, true, "a string or null", err)) ||
            (rc = opt_type(p, type, "usage", JSON_OBJECT, true, "an object", err)) ||
            (rc = opt_type(p, type, "finishReason", JSON_STRING, true, "a string", err)) ||
            (rc = opt_type(p, type, "toolCalls", JSON_ARRAY, false, "an array", err)))
            return rc;
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(p, "toolCalls"), i, c) {
            if (!json_is_object(c) || !json_is_string(json_object_get(c, "id")) ||
                json_string_length(json_object_get(c, "id")) == 0 ||
                !json_is_string(json_object_get(c, "name")) ||
                !json_is_string(json_object_get(c, "arguments"))) {
                char msg[160];
                snprintf(msg, sizeof msg,
                         "toolCalls[%zu] must be {\"id\": non-empty string, \"name\": string, "
                         "\"arguments\": string}",
                         i);
                return bad_event(err, type, msg);
            }
            for (size_t j = 0; j < i; j++) {
                if (strcmp(json_string_value(json_object_get(
                               json_array_get(json_object_get(p, "toolCalls"), j), "id")),
                           json_string_value(json_object_get(c, "id"))) == 0) {
                    char msg[160];
                    snprintf(msg, sizeof msg, "toolCalls[%zu] repeats the id of toolCalls[%zu]", i,
                             j);
                    return bad_event(err, type, msg);
                }
            }
        }
        return 0;
    }
    if (strcmp(type, "tool/call") == 0) {
        if ((rc = need_string(p, type, "callId", true, err)) ||
            (rc = need_string(p, type, "name", false, err)))
            return rc;
        return need_string(p, type, "arguments", false, err);
    }
    if (strcmp(type, "tool/result") == 0) {
        if ((rc = need_string(p, type, "callId", true, err)))
            return rc;
        if (!json_is_boolean(json_object_get(p, "isError")))
            return bad_event(err, type, "field \"isError\" must be a boolean");
        if (!json_is_array(json_object_get(p, "content")))
            return bad_event(err, type, "field \"content\" must be an array of content blocks");
        size_t i;
        json_t *b;
        json_array_foreach(json_object_get(p, "content"), i, b) {
            if (!json_is_object(b) || !json_is_string(json_object_get(b, "type")))
                return bad_event(err, type, "every content block needs a string \"type\"");
        }
        return opt_type(p, type, "error", JSON_OBJECT, true, "an object", err);
    }
    if (strcmp(type, "command/run") == 0) {
        if ((rc = need_string(p, type, "commandId", true, err)))
            return rc;
        return need_string(p, type, "name", true, err);
    }
    if (strcmp(type, "command/done") == 0) {
        static const char *const kinds[] = {"success", "error", NULL};
        if ((rc = need_string(p, type, "commandId", true, err)) ||
            (rc = need_string(p, type, "kind", true, err)))
            return rc;
        if (!one_of(json_string_value(json_object_get(p, "kind")), kinds))
            return bad_event(err, type, "field \"kind\" must be \"success\" or \"error\"");
        return opt_type(p, type, "text", JSON_STRING, false, "a string", err);
    }
    if (strcmp(type, "notice") == 0) {
        static const char *const levels[] = {"info", "warning", "error", NULL};
        if ((rc = need_string(p, type, "level", true, err)) ||
            (rc = need_string(p, type, "text", false, err)))
            return rc;
        if (!one_of(json_string_value(json_object_get(p, "level")), levels))
            return bad_event(err, type,
                             "field \"level\" must be \"info\", \"warning\" or \"error\"");
        return opt_type(p, type, "code", JSON_STRING, false, "a string", err);
    }
    if (strcmp(type, "turn/start") == 0)
        return turn >= 1 ? 0 : bad_event(err, type, "turn must be >= 1");
    if (strcmp(type, "turn/end") == 0) {
        static const char *const reasons[] = {"done",  "cancelled",   "step-limit", "token-limit",
                                              "error", "interrupted", NULL};
        if (turn < 1)
            return bad_event(err, type, "turn must be >= 1");
        if ((rc = need_string(p, type, "reason", true, err)))
            return rc;
        if (!one_of(json_string_value(json_object_get(p, "reason")), reasons))
            return bad_event(err, type,
                             "field \"reason\" must be done, cancelled, step-limit, token-limit, "
                             "error or interrupted");
        return 0;
    }
    if (generic_type_ok(type))
        return 0;
    return cdsh_error_set(err, CDSH_EINVAL, "BAD_EVENT",
                          "unknown event type \"%s\" (custom types look like \"word/word\" in "
                          "lowercase letters, digits and '-')",
                          type);
}

/* ---- append ---------------------------------------------------------------- */

/* Inserts one event; caller holds the mutex and an open write transaction.
 * *seq_io: 0 = next seq; otherwise used as given and advanced. */
static int insert_event(cdsh_session_store *s, const char *id, int64_t *seq, int64_t turn,
                        int64_t step, const char *type, const char *payload, const char *created_at,
                        cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = 0;
    if (*seq == 0) {
        rc = prepare(s, "SELECT coalesce(max(seq), 0) + 1 FROM events WHERE session_id = ?", &st,
                     err);
        if (rc)
            return rc;
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        int src = sqlite3_step(st);
        if (src != SQLITE_ROW) {
            rc = db_fail(s, src, err, "finding the next seq");
            sqlite3_finalize(st);
            return rc;
        }
        *seq = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        st = NULL;
    }
    rc = prepare(s,
                 "INSERT INTO events (session_id, seq, turn, step, type, payload, created_at)"
                 " VALUES (?, ?, ?, ?, ?, ?, ?)",
                 &st, err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, *seq);
    sqlite3_bind_int64(st, 3, turn);
    sqlite3_bind_int64(st, 4, step);
    sqlite3_bind_text(st, 5, type, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 6, payload, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 7, created_at, -1, SQLITE_TRANSIENT);
    int src = sqlite3_step(st);
    if (src != SQLITE_DONE)
        rc = db_fail(s, src, err, "appending an event");
    sqlite3_finalize(st);
    return rc;
}

static int touch_session(cdsh_session_store *s, const char *id, const char *now, cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare(s, "UPDATE sessions SET updated_at = ? WHERE id = ?", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, now, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, id, -1, SQLITE_TRANSIENT);
    int src = sqlite3_step(st);
    if (src != SQLITE_DONE)
        rc = db_fail(s, src, err, "touching a session");
    sqlite3_finalize(st);
    return rc;
}

typedef struct open_call {
    const char *call_id; /* borrowed from the events array */
    const char *name;
    int64_t step;
    int64_t call_seq; /* seq of its tool/call event; 0 = never started */
} open_call;

static int read_events_locked(cdsh_session_store *s, const char *id, int64_t after_seq,
                              int64_t limit, bool strict, json_t *arr, bool *has_more,
                              cdsh_error *err);
static int pending_calls(const json_t *events, open_call **out, size_t *n_out);
static int open_turn_locked(cdsh_session_store *s, const char *id, int64_t *start_seq,
                            int64_t *turn, cdsh_error *err);

static int scalar_locked(cdsh_session_store *s, const char *sql, const char *id, int64_t *out,
                         cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare(s, sql, &st, err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW)
        *out = sqlite3_column_int64(st, 0);
    else
        rc = db_fail(s, src, err, "reading the log");
    sqlite3_finalize(st);
    return rc;
}

/* The turn structure the agent loop must keep (DSH's session invariants, the
 * part repair and replay rely on): turns are numbered 1, 2, ... and never
 * overlap; assistant messages and tool events belong to the open turn; the
 * next assistant message and the turn's end wait until every call so far has
 * a result. Caller holds the mutex and a
 * write transaction. */
static int check_turn_rules(cdsh_session_store *s, const char *id, const char *type, int64_t turn,
                            cdsh_error *err)
{
    bool is_start = strcmp(type, "turn/start") == 0, is_end = strcmp(type, "turn/end") == 0;
    if (!is_start && !is_end && strcmp(type, "assistant/message") != 0 &&
        strcmp(type, "tool/call") != 0 && strcmp(type, "tool/result") != 0)
        return 0;
    int64_t start = 0, open = 0;
    int rc = open_turn_locked(s, id, &start, &open, err);
    if (rc)
        return rc;
    if (is_start) {
        int64_t last = 0;
        if (start)
            return cdsh_error_set(err, CDSH_EINVAL, "BAD_EVENT",
                                  "turn/start %lld while turn %lld is still open", (long long)turn,
                                  (long long)open);
        rc = scalar_locked(s,
                           "SELECT coalesce(max(turn), 0) FROM events"
                           " WHERE session_id = ? AND type = 'turn/start'",
                           id, &last, err);
        if (rc == 0 && turn != last + 1)
            rc = cdsh_error_set(err, CDSH_EINVAL, "BAD_EVENT",
                                "turn/start expected turn %lld, got %lld", (long long)last + 1,
                                (long long)turn);
        return rc;
    }
    if (!start)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_EVENT",
                              "%s names turn %lld but no turn is open (log turn/start first)", type,
                              (long long)turn);
    if (turn != open)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_EVENT",
                              "%s names turn %lld but turn %lld is open", type, (long long)turn,
                              (long long)open);
    bool is_assistant = strcmp(type, "assistant/message") == 0;
    if (!is_end && !is_assistant)
        return 0;
    json_t *events = json_array();
    open_call *calls = NULL;
    size_t n = 0;
    rc = events ? read_events_locked(s, id, start - 1, -1, true, events, NULL, err)
                : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    if (rc == 0 && pending_calls(events, &calls, &n))
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (calls[i].call_id)
            rc = cdsh_error_set(err, CDSH_EINVAL, "BAD_EVENT",
                                "%s in turn %lld while tool call %s has no tool/result (log its "
                                "result, e.g. an ABORTED error, first)",
                                type, (long long)turn, calls[i].call_id);
    free(calls);
    json_decref(events);
    return rc;
}

int cdsh_session_store_append(cdsh_session_store *s, const char *id, const char *type, int64_t turn,
                              int64_t step, const json_t *payload, int64_t *seq_out,
                              cdsh_error *err)
{
    if (!s)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "append needs a store");
    int rc = check_id(id, err);
    if (rc)
        return rc;
    rc = validate_event(type, turn, step, payload, err);
    if (rc)
        return rc;
    char *text = cdsh_json_dump_compact_dup(payload);
    if (!text)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    char now[CDSH_ISO8601_MAX];
    now_iso(now);
    int64_t seq = 0;
    pthread_mutex_lock(&s->mu);
    rc = exec_sql(s, "BEGIN IMMEDIATE", err);
    if (rc)
        goto unlock;
    rc = exists_locked(s, id, err);
    if (rc == 0)
        rc = no_session(id, err);
    if (rc < 0)
        goto rollback;
    rc = check_turn_rules(s, id, type, turn, err);
    if (rc == 0)
        rc = insert_event(s, id, &seq, turn, step, type, text, now, err);
    if (rc == 0)
        rc = touch_session(s, id, now, err);
    if (rc == 0)
        rc = exec_sql(s, "COMMIT", err);
    if (rc == 0)
        goto unlock;
rollback:
    rollback(s);
unlock:
    pthread_mutex_unlock(&s->mu);
    free(text);
    if (rc == 0 && seq_out)
        *seq_out = seq;
    return rc;
}

static json_t *string_or_null(const char *v)
{
    /* nocheck: invalid UTF-8 is replaced by the sanitiser below, not refused. */
    return v ? json_string_nocheck(v) : json_null();
}

int cdsh_session_store_append_reply(cdsh_session_store *s, const char *id, int64_t turn,
                                    int64_t step, const cdsh_model_reply *reply, int64_t *seq_out,
                                    cdsh_error *err)
{
    if (!reply)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "append_reply needs a reply");
    const cdsh_model_usage *u = &reply->usage;
    json_t *raw = json_pack(
        "{s:o, s:o, s:o, s:{s:I, s:I, s:I, s:I, s:I}}", "text",
        string_or_null(reply->text ? reply->text : ""), "reasoning",
        string_or_null(reply->reasoning), "finishReason", string_or_null(reply->finish_reason),
        "usage", "inputTokens", (json_int_t)u->input_tokens, "outputTokens",
        (json_int_t)u->output_tokens, "totalTokens", (json_int_t)u->total_tokens,
        "cachedInputTokens", (json_int_t)u->cached_input_tokens, "reasoningTokens",
        (json_int_t)u->reasoning_tokens);
    json_t *calls = reply->n_tool_calls ? json_array() : NULL;
    if (raw && calls)
        json_object_set_new(raw, "toolCalls", calls);
    for (size_t i = 0; raw && calls && i < reply->n_tool_calls; i++) {
        const cdsh_model_tool_call *c = &reply->tool_calls[i];
        json_array_append_new(calls,
                              json_pack("{s:o, s:o, s:o}", "id", string_or_null(c->id), "name",
                                        string_or_null(c->name ? c->name : ""), "arguments",
                                        string_or_null(c->arguments ? c->arguments : "")));
    }
    /* A provider that sent bytes that are not UTF-8 still gets its reply logged. */
    json_t *p = raw ? cdsh_json_sanitize_dup(raw) : NULL;
    json_decref(raw);
    if (!p)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    int rc = cdsh_session_store_append(s, id, "assistant/message", turn, step, p, seq_out, err);
    json_decref(p);
    return rc;
}

/* ---- reading events -------------------------------------------------------- */

static int event_from_row(const char *id, sqlite3_stmt *st, bool strict, json_t **out,
                          cdsh_error *err)
{
    const char *raw = (const char *)sqlite3_column_text(st, 4);
    int64_t seq = sqlite3_column_int64(st, 0);
    cdsh_error perr = {0};
    json_t *payload = raw ? cdsh_json_parse(raw, strlen(raw), 0, &perr) : NULL;
    if (payload && !json_is_object(payload)) {
        json_decref(payload);
        payload = NULL;
        cdsh_error_set(&perr, CDSH_EINVAL, "BAD_JSON", "payload is not a JSON object");
    }
    if (!payload && strict)
        return cdsh_error_set(err, CDSH_EPROTO, "CORRUPT_EVENT",
                              "session %s event %lld: stored payload is unreadable (%s); the event "
                              "is kept as it is — inspect it with `cdsh sessions show %s --json`",
                              id, (long long)seq, perr.message[0] ? perr.message : "no text", id);
    json_t *ev = json_pack("{s:I, s:I, s:I, s:o, s:o, s:o}", "seq", (json_int_t)seq, "turn",
                           (json_int_t)sqlite3_column_int64(st, 1), "step",
                           (json_int_t)sqlite3_column_int64(st, 2), "type",
                           column_string_or_null(st, 3), "createdAt", column_string_or_null(st, 5),
                           "payload", payload ? payload : json_null());
    if (ev && !payload) {
        json_object_set_new(ev, "payloadError", json_string(perr.message));
        /* The raw text may not be UTF-8; sanitise so the event can still be printed. */
        json_t *rawj = json_stringn_nocheck(raw ? raw : "", raw ? strlen(raw) : 0);
        json_t *clean = cdsh_json_sanitize_dup(rawj);
        json_decref(rawj);
        json_object_set_new(ev, "payloadRaw", clean ? clean : json_null());
    }
    *out = ev;
    return ev ? 0 : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
}

/* Appends the events of id with seq > after_seq (at most limit; limit < 0:
 * all) to arr. Caller holds the mutex. */
static int read_events_locked(cdsh_session_store *s, const char *id, int64_t after_seq,
                              int64_t limit, bool strict, json_t *arr, bool *has_more,
                              cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare(s,
                     "SELECT seq, turn, step, type, payload, created_at FROM events"
                     " WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                     &st, err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, after_seq);
    sqlite3_bind_int64(st, 3, limit < 0 ? -1 : limit + 1);
    int src;
    int64_t n = 0;
    if (has_more)
        *has_more = false;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        if (limit >= 0 && n == limit) {
            if (has_more)
                *has_more = true;
            break;
        }
        json_t *ev = NULL;
        rc = event_from_row(id, st, strict, &ev, err);
        if (rc)
            goto cleanup;
        json_array_append_new(arr, ev);
        n++;
    }
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        rc = db_fail(s, src, err, "reading events");
cleanup:
    sqlite3_finalize(st);
    return rc;
}

json_t *cdsh_session_store_events(cdsh_session_store *s, const char *id, int64_t after_seq,
                                  int64_t limit, bool *has_more, cdsh_error *err)
{
    if (!s || check_id(id, err))
        return NULL;
    if (after_seq < 0 || limit < 1 || limit > 10000) {
        cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                       "events needs after_seq >= 0 and limit 1..10000");
        return NULL;
    }
    json_t *arr = json_array();
    if (!arr) {
        cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        return NULL;
    }
    pthread_mutex_lock(&s->mu);
    int rc = exec_sql(s, "BEGIN", err);
    if (rc == 0) {
        rc = exists_locked(s, id, err);
        if (rc == 0)
            rc = no_session(id, err);
        if (rc > 0)
            rc = read_events_locked(s, id, after_seq, limit, false, arr, has_more, err);
        sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

/* ---- replay ------------------------------------------------------------------ */

static char *content_text_dup(const json_t *content)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    size_t i;
    json_t *b;
    json_array_foreach(content, i, b) {
        if (i > 0)
            cdsh_strbuf_append_char(&sb, '\n');
        const char *type = json_string_value(json_object_get(b, "type"));
        const char *text = json_string_value(json_object_get(b, "text"));
        if (type && strcmp(type, "text") == 0 && text)
            cdsh_strbuf_append_str(&sb, text);
        else
            cdsh_strbuf_appendf(&sb, "[%s]", type ? type : "block");
    }
    if (sb.len == 0 && !sb.failed) {
        cdsh_strbuf_deinit(&sb);
        return strdup("");
    }
    return cdsh_strbuf_take(&sb, NULL);
}

/* An assistant message with tool calls waits here until the next message so
 * its results can be emitted in call order. */
typedef struct pending_group {
    json_t *assistant; /* owned, NULL when no group is open */
    json_t *calls;     /* borrowed toolCalls array of the payload */
    json_t *results;   /* object callId -> tool message */
    json_t *deferred;  /* user messages logged while calls were unanswered */
} pending_group;

static bool group_answered(const pending_group *g)
{
    size_t i;
    json_t *c;
    json_array_foreach(g->calls, i, c) {
        if (!json_object_get(g->results, json_string_value(json_object_get(c, "id"))))
            return false;
    }
    return true;
}

static int flush_group(pending_group *g, json_t *out)
{
    if (!g->assistant)
        return 0;
    int rc = json_array_append_new(out, g->assistant);
    g->assistant = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(g->calls, i, c) {
        json_t *r = json_object_get(g->results, json_string_value(json_object_get(c, "id")));
        if (r)
            rc |= json_array_append(out, r);
    }
    rc |= json_array_extend(out, g->deferred);
    json_array_clear(g->deferred);
    json_decref(g->calls);
    g->calls = NULL;
    json_object_clear(g->results);
    return rc ? CDSH_ENOMEM : 0;
}

static json_t *assistant_message(const json_t *p)
{
    const json_t *calls = json_object_get(p, "toolCalls");
    const json_t *text = json_object_get(p, "text");
    /* As cdsh_model_reply_to_message: content null (not "") next to tool calls. */
    bool null_content = json_string_length(text) == 0 && json_array_size(calls) > 0;
    json_t *m =
        json_pack("{s:s, s:O}", "role", "assistant", "content", null_content ? json_null() : text);
    const json_t *reasoning = json_object_get(p, "reasoning");
    if (m && json_is_string(reasoning))
        json_object_set(m, "reasoning_content", (json_t *)reasoning);
    if (m && json_array_size(calls) > 0) {
        json_t *tc = json_array();
        size_t i;
        json_t *c;
        json_array_foreach(calls, i, c) {
            json_array_append_new(tc, json_pack("{s:O, s:s, s:{s:O, s:O}}", "id",
                                                json_object_get(c, "id"), "type", "function",
                                                "function", "name", json_object_get(c, "name"),
                                                "arguments", json_object_get(c, "arguments")));
        }
        json_object_set_new(m, "tool_calls", tc);
    }
    return m;
}

/* The session's opening (the last session/opening event before the first
 * message) as the first assistant message, once. */
static int flush_opening(const json_t **opening, json_t *out)
{
    if (!*opening)
        return 0;
    json_t *m = json_pack("{s:s, s:O}", "role", "assistant", "content",
                          json_object_get(*opening, "text"));
    *opening = NULL;
    return m && json_array_append_new(out, m) == 0 ? 0 : CDSH_ENOMEM;
}

static int replay(const json_t *events, json_t *out)
{
    pending_group g = {.results = json_object(), .deferred = json_array()};
    int rc = g.results && g.deferred ? 0 : CDSH_ENOMEM;
    const json_t *opening = NULL;
    bool opened = false;
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) {
        if (rc)
            break;
        const char *type = json_string_value(json_object_get(ev, "type"));
        json_t *p = json_object_get(ev, "payload");
        if (strcmp(type, "session/opening") == 0) {
            if (!opened && json_is_string(json_object_get(p, "text")))
                opening = p; /* a later one replaces it until the talk starts */
            continue;
        }
        if (!opened && (strcmp(type, "user/message") == 0 || strcmp(type, "assistant/message") == 0)) {
            opened = true;
            if ((rc = flush_opening(&opening, out)) != 0)
                break;
        }
        if (strcmp(type, "user/message") == 0) {
            /* A message typed while tools ran goes after their results: providers
             * want the results right after the assistant message. */
            json_t *m =
                json_pack("{s:s, s:O}", "role", "user", "content", json_object_get(p, "text"));
            if (g.assistant && !group_answered(&g)) {
                rc = json_array_append_new(g.deferred, m) ? CDSH_ENOMEM : 0;
            } else {
                rc = flush_group(&g, out);
                if (json_array_append_new(out, m))
                    rc = CDSH_ENOMEM;
            }
        } else if (strcmp(type, "assistant/message") == 0) {
            rc = flush_group(&g, out);
            json_t *m = assistant_message(p);
            if (!m) {
                rc = CDSH_ENOMEM;
            } else if (json_array_size(json_object_get(p, "toolCalls")) > 0) {
                g.assistant = m;
                g.calls = json_incref(json_object_get(p, "toolCalls"));
            } else {
                json_array_append_new(out, m);
            }
        } else if (strcmp(type, "tool/result") == 0 && g.assistant) {
            const char *call_id = json_string_value(json_object_get(p, "callId"));
            char *text = content_text_dup(json_object_get(p, "content"));
            json_t *m = text ? json_pack("{s:s, s:s, s:s}", "role", "tool", "tool_call_id", call_id,
                                         "content", text)
                             : NULL;
            free(text);
            if (!m)
                rc = CDSH_ENOMEM;
            else
                json_object_set_new(g.results, call_id, m);
        }
    }
    if (rc == 0)
        rc = flush_group(&g, out);
    if (rc == 0)
        rc = flush_opening(&opening, out);
    json_decref(g.assistant);
    json_decref(g.calls);
    json_decref(g.results);
    json_decref(g.deferred);
    return rc;
}

json_t *cdsh_session_store_messages(cdsh_session_store *s, const char *id, cdsh_error *err)
{
    if (!s || check_id(id, err))
        return NULL;
    json_t *events = json_array(), *out = json_array();
    int rc = events && out ? 0 : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    if (rc == 0) {
        pthread_mutex_lock(&s->mu);
        rc = exec_sql(s, "BEGIN", err);
        if (rc == 0) {
            rc = exists_locked(s, id, err);
            if (rc == 0)
                rc = no_session(id, err);
            if (rc > 0)
                rc = read_events_locked(s, id, 0, -1, true, events, NULL, err);
            sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
        }
        pthread_mutex_unlock(&s->mu);
    }
    if (rc == 0 && replay(events, out))
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    json_decref(events);
    if (rc) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* ---- leases ---------------------------------------------------------------- */

static int lease_open(cdsh_session_store *s, const char *id, int64_t timeout_ms,
                      cdsh_cancel *cancel, cdsh_fs_lock **out, cdsh_error *err)
{
    int rc = cdsh_fs_mkdir_p(s->lock_dir, 0700, err);
    if (rc)
        return rc;
    char name[96];
    snprintf(name, sizeof name, "%s.lock", id);
    char *path = cdsh_fs_path_join_dup(s->lock_dir, name);
    if (!path)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    rc = cdsh_fs_lock_open(path, CDSH_FS_LOCK_EXCLUSIVE, timeout_ms, cancel, out, err);
    free(path);
    return rc;
}

int cdsh_session_store_lease(cdsh_session_store *s, const char *id, int64_t timeout_ms,
                             cdsh_cancel *cancel, cdsh_session_lease **out, cdsh_error *err)
{
    if (!s || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "lease needs a store and out");
    *out = NULL;
    int rc = check_id(id, err);
    if (rc)
        return rc;
    cdsh_session_lease *l = calloc(1, sizeof *l);
    if (!l)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    snprintf(l->id, sizeof l->id, "%s", id);
    l->store = s;
    rc = lease_open(s, id, timeout_ms, cancel, &l->lock, err);
    if (rc) {
        free(l);
        return rc;
    }
    *out = l;
    return 0;
}

void cdsh_session_lease_release(cdsh_session_lease *lease)
{
    if (!lease)
        return;
    /* Deleted while we held it (by another process, say): its lock file goes too. */
    cdsh_session_store *s = lease->store;
    pthread_mutex_lock(&s->mu);
    bool gone = exists_locked(s, lease->id, NULL) == 0;
    pthread_mutex_unlock(&s->mu);
    if (gone)
        cdsh_fs_lock_remove(lease->lock, NULL);
    else
        cdsh_fs_lock_close(lease->lock);
    free(lease);
}

/* Removes a deleted session's lock file, unless someone holds it (then that
 * holder's lease release removes it). Failures only leave a stray file. */
static void remove_lock_file(cdsh_session_store *s, const char *id)
{
    char name[96];
    snprintf(name, sizeof name, "%s.lock", id);
    char *path = cdsh_fs_path_join_dup(s->lock_dir, name);
    cdsh_fs_lock *l = NULL;
    if (path && access(path, F_OK) == 0 &&
        cdsh_fs_lock_open(path, CDSH_FS_LOCK_EXCLUSIVE, 0, NULL, &l, NULL) == 0) {
        pthread_mutex_lock(&s->mu);
        bool gone = exists_locked(s, id, NULL) == 0;
        pthread_mutex_unlock(&s->mu);
        if (gone)
            cdsh_fs_lock_remove(l, NULL);
        else
            cdsh_fs_lock_close(l); /* a session with this id exists (again) */
    }
    free(path);
}

/* Lock files of sessions that no longer exist (a crash between the delete
 * and the removal, or versions that never removed them). */
static void sweep_lock_files(cdsh_session_store *s)
{
    char **names = NULL;
    if (cdsh_fs_list_dir(s->lock_dir, &names, NULL, NULL) != 0)
        return;
    for (size_t i = 0; names[i]; i++) {
        size_t n = strlen(names[i]);
        if (n <= 5 || strcmp(names[i] + n - 5, ".lock") != 0)
            continue;
        char id[96];
        snprintf(id, sizeof id, "%.*s", (int)(n - 5), names[i]);
        if (!cdsh_session_id_valid(id))
            continue;
        pthread_mutex_lock(&s->mu);
        bool gone = exists_locked(s, id, NULL) == 0;
        pthread_mutex_unlock(&s->mu);
        if (gone)
            remove_lock_file(s, id);
    }
    cdsh_fs_list_free(names);
}

/* ---- repair ------------------------------------------------------------------ */

static const char unknown_text[] =
    "The tool call had started, but cdsh stopped before its result was recorded, so its "
    "outcome is unknown. Retry only if the tool is read-only or idempotent; if it may have "
    "side effects, check the current state (or ask the user) before doing it again.";
static const char not_started_text[] =
    "The tool call was requested, but cdsh stopped before it started. Call it again if it is "
    "still needed.";

static open_call *find_call(open_call *calls, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (calls[i].call_id && strcmp(calls[i].call_id, id) == 0)
            return &calls[i];
    return NULL;
}

/* Finds the calls of the open tail turn that have no result. The turn's
 * events are in `events` (from its turn/start on). */
static int pending_calls(const json_t *events, open_call **out, size_t *n_out)
{
    size_t cap = 8, n = 0;
    open_call *calls = calloc(cap, sizeof *calls);
    if (!calls)
        return CDSH_ENOMEM;
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) {
        const char *type = json_string_value(json_object_get(ev, "type"));
        json_t *p = json_object_get(ev, "payload");
        int64_t step = json_integer_value(json_object_get(ev, "step"));
        int64_t seq = json_integer_value(json_object_get(ev, "seq"));
        const json_t *list = NULL;
        json_t *single = NULL;
        if (strcmp(type, "assistant/message") == 0) {
            list = json_object_get(p, "toolCalls");
        } else if (strcmp(type, "tool/call") == 0) {
            const char *cid = json_string_value(json_object_get(p, "callId"));
            open_call *c = find_call(calls, n, cid);
            if (c) {
                c->call_seq = seq;
                continue;
            }
            single = p; /* a call the assistant message did not list: started anyway */
        } else if (strcmp(type, "tool/result") == 0) {
            open_call *c = find_call(calls, n, json_string_value(json_object_get(p, "callId")));
            if (c)
                c->call_id = NULL; /* answered */
            continue;
        } else {
            continue;
        }
        size_t k;
        json_t *c;
        size_t count = single ? 1 : json_array_size(list);
        for (k = 0; k < count; k++) {
            c = single ? single : json_array_get(list, k);
            const char *cid = json_string_value(json_object_get(c, single ? "callId" : "id"));
            if (!cid || find_call(calls, n, cid))
                continue;
            if (n == cap) {
                open_call *bigger = realloc(calls, 2 * cap * sizeof *calls);
                if (!bigger) {
                    free(calls);
                    return CDSH_ENOMEM;
                }
                calls = bigger;
                cap *= 2;
            }
            calls[n++] = (open_call){cid, json_string_value(json_object_get(c, "name")), step,
                                     single ? seq : 0};
        }
    }
    *out = calls;
    *n_out = n;
    return 0;
}

/* Returns the seq of the open tail turn's turn/start (0 if every turn is
 * closed) and its turn number. Caller holds the mutex. */
static int open_turn_locked(cdsh_session_store *s, const char *id, int64_t *start_seq,
                            int64_t *turn, cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare(s,
                     "SELECT seq, turn FROM events WHERE session_id = ?1 AND type = 'turn/start'"
                     " AND seq > (SELECT coalesce(max(seq), 0) FROM events"
                     "            WHERE session_id = ?1 AND type = 'turn/end')"
                     " ORDER BY seq DESC LIMIT 1",
                     &st, err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    int src = sqlite3_step(st);
    *start_seq = 0;
    if (src == SQLITE_ROW) {
        *start_seq = sqlite3_column_int64(st, 0);
        *turn = sqlite3_column_int64(st, 1);
    } else if (src != SQLITE_DONE) {
        rc = db_fail(s, src, err, "finding an open turn");
    }
    sqlite3_finalize(st);
    return rc;
}

static int append_synthetic(cdsh_session_store *s, const char *id, int64_t *seq, int64_t turn,
                            int64_t step, const char *type, json_t *payload, const char *time,
                            cdsh_error *err)
{
    int rc;
    char *text = payload ? cdsh_json_dump_compact_dup(payload) : NULL;
    json_decref(payload);
    if (!text)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    (*seq)++;
    rc = insert_event(s, id, seq, turn, step, type, text, time, err);
    free(text);
    return rc;
}

/* Caller holds the mutex; runs its own transaction. `cause` completes the
 * notice: "turn N <cause>; closed K unfinished tool calls". */
static int repair_locked(cdsh_session_store *s, const char *id, const char *cause, int *appended,
                         cdsh_error *err)
{
    json_t *events = json_array();
    open_call *calls = NULL;
    size_t n_calls = 0;
    int added = 0;
    if (!events)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    int rc = exec_sql(s, "BEGIN IMMEDIATE", err);
    if (rc)
        goto cleanup;
    rc = exists_locked(s, id, err);
    if (rc == 0)
        rc = no_session(id, err);
    if (rc < 0)
        goto rollback;
    int64_t start = 0, turn = 0;
    rc = open_turn_locked(s, id, &start, &turn, err);
    if (rc || start == 0)
        goto rollback; /* nothing to do (rc 0) or an error */
    rc = read_events_locked(s, id, start - 1, -1, true, events, NULL, err);
    if (rc)
        goto rollback;
    if (pending_calls(events, &calls, &n_calls)) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto rollback;
    }
    json_t *last = json_array_get(events, json_array_size(events) - 1);
    int64_t seq = json_integer_value(json_object_get(last, "seq"));
    char time[CDSH_ISO8601_MAX];
    /* Synthetic events reuse the last real event's time, as DSH does: repair is not activity. */
    snprintf(time, sizeof time, "%s", json_string_value(json_object_get(last, "createdAt")));
    int closed = 0;
    for (size_t i = 0; i < n_calls && rc == 0; i++) {
        const open_call *c = &calls[i];
        if (!c->call_id)
            continue;
        bool started = c->call_seq > 0;
        const char *msg = started ? unknown_text : not_started_text;
        char block[600];
        snprintf(block, sizeof block, "Error: %s", msg);
        json_t *p = json_pack(
            "{s:s, s:s?, s:b, s:[{s:s, s:s}], s:{s:s, s:s, s:s}, s:b}", "callId", c->call_id,
            "name", c->name, "isError", 1, "content", "type", "text", "text", block, "error",
            "name", started ? "ToolOutcomeUnknownError" : "ToolNotStartedError", "code",
            started ? "TOOL_OUTCOME_UNKNOWN" : "TOOL_NOT_STARTED", "message", msg, "synthetic", 1);
        if (p && started)
            json_object_set_new(p, "sourceEventSeq", json_integer(c->call_seq));
        rc = append_synthetic(s, id, &seq, turn, c->step, "tool/result", p, time, err);
        closed++;
    }
    if (rc)
        goto rollback;
    char text[200];
    snprintf(text, sizeof text, "turn %lld %s; closed %d unfinished tool call%s", (long long)turn,
             cause, closed, closed == 1 ? "" : "s");
    rc = append_synthetic(s, id, &seq, turn, 0, "notice",
                          json_pack("{s:s, s:s, s:s, s:b}", "level", "warning", "code",
                                    "SESSION_REPAIRED", "text", text, "synthetic", 1),
                          time, err);
    if (rc == 0)
        rc = append_synthetic(s, id, &seq, turn, 0, "turn/end",
                              json_pack("{s:s, s:b}", "reason", "interrupted", "synthetic", 1),
                              time, err);
    if (rc == 0)
        rc = exec_sql(s, "COMMIT", err);
    if (rc)
        goto rollback;
    added = closed + 2;
    goto cleanup;
rollback:
    rollback(s);
cleanup:
    free(calls);
    json_decref(events);
    if (appended)
        *appended = rc ? 0 : added;
    return rc;
}

/* Checks that nobody else holds the lease (taking it for the duration of
 * fn), then runs repair. */
int cdsh_session_store_repair(cdsh_session_store *s, const char *id, const cdsh_session_lease *held,
                              int *appended, cdsh_error *err)
{
    if (appended)
        *appended = 0;
    if (!s)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "repair needs a store");
    int rc = check_id(id, err);
    if (rc)
        return rc;
    if (held && strcmp(held->id, id) != 0)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "the lease passed to repair is for %s, not %s", held->id, id);
    cdsh_fs_lock *probe = NULL;
    if (!held) {
        cdsh_error lerr = {0};
        rc = lease_open(s, id, 0, NULL, &probe, &lerr);
        if (rc == CDSH_ETIMEDOUT)
            return cdsh_error_set(err, CDSH_EBUSY, "SESSION_LIVE",
                                  "session %s is in use by another cdsh process or thread; its "
                                  "open turn is not repaired",
                                  id);
        if (rc) {
            if (err)
                *err = lerr;
            return rc;
        }
    }
    pthread_mutex_lock(&s->mu);
    rc = repair_locked(s, id, "was interrupted (cdsh stopped mid-turn)", appended, err);
    pthread_mutex_unlock(&s->mu);
    cdsh_fs_lock_close(probe);
    return rc;
}

int cdsh_session_store_load(cdsh_session_store *s, const char *id, const cdsh_session_lease *held,
                            cdsh_session_loaded *out, cdsh_error *err)
{
    if (!out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "load needs out");
    memset(out, 0, sizeof *out);
    cdsh_error rerr = {0};
    int rc = cdsh_session_store_repair(s, id, held, &out->repaired, &rerr);
    if (rc == CDSH_EBUSY && strcmp(rerr.code, "SESSION_LIVE") == 0) {
        out->live = true;
    } else if (rc) {
        if (err)
            *err = rerr;
        return rc;
    }
    cdsh_error lerr = {0};
    out->messages = cdsh_session_store_messages(s, id, &lerr);
    out->session = out->messages ? cdsh_session_store_info_dup(s, id, &lerr) : NULL;
    if (!out->session) {
        cdsh_session_loaded_deinit(out);
        if (err)
            *err = lerr;
        return lerr.rc ? lerr.rc : CDSH_EIO;
    }
    return 0;
}

void cdsh_session_loaded_deinit(cdsh_session_loaded *l)
{
    if (!l)
        return;
    json_decref(l->session);
    json_decref(l->messages);
    memset(l, 0, sizeof *l);
}

/* ---- fork ---------------------------------------------------------------------- */

int cdsh_session_store_fork(cdsh_session_store *s, const char *id, int64_t upto_seq,
                            const char *title, char **new_id_out, cdsh_error *err)
{
    if (!s || !new_id_out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "fork needs a store and new_id_out");
    *new_id_out = NULL;
    int rc = check_id(id, err);
    if (rc)
        return rc;
    char *new_id = cdsh_random_id_dup("s-");
    if (!new_id)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    char now[CDSH_ISO8601_MAX];
    now_iso(now);
    sqlite3_stmt *st = NULL;
    json_t *parent = NULL;
    pthread_mutex_lock(&s->mu);
    rc = exec_sql(s, "BEGIN IMMEDIATE", err);
    if (rc)
        goto unlock;
    rc = get_locked(s, id, &parent, err);
    if (rc)
        goto rollback;
    int64_t last = json_integer_value(json_object_get(parent, "lastSeq"));
    if (upto_seq > last) {
        rc = cdsh_error_set(err, CDSH_EINVAL, "BAD_EVENT",
                            "session %s has no event with seq %lld (its last is %lld)", id,
                            (long long)upto_seq, (long long)last);
        goto rollback;
    }
    int64_t point = upto_seq > 0 ? upto_seq : last;
    char *dflt = NULL;
    if (!title) {
        const char *pt = json_string_value(json_object_get(parent, "title"));
        size_t n = strlen(pt ? pt : "") + 16;
        dflt = malloc(n);
        if (dflt)
            snprintf(dflt, n, "%s%s(fork)", pt ? pt : "", pt && *pt ? " " : "");
    }
    rc = prepare(s,
                 "INSERT INTO sessions (id, title, created_at, updated_at, provider, model,"
                 " base_url, agent, parent_id, fork_seq, metadata)"
                 " SELECT ?, ?, ?, ?, provider, model, base_url, agent, id, ?, metadata"
                 " FROM sessions WHERE id = ?",
                 &st, err);
    if (rc == 0) {
        sqlite3_bind_text(st, 1, new_id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, title ? title : dflt ? dflt : "(fork)", -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, now, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, now, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 5, point);
        sqlite3_bind_text(st, 6, id, -1, SQLITE_TRANSIENT);
        int src = sqlite3_step(st);
        if (src != SQLITE_DONE)
            rc = db_fail(s, src, err, "creating the fork");
    }
    free(dflt);
    sqlite3_finalize(st);
    st = NULL;
    if (rc)
        goto rollback;
    rc = prepare(s,
                 "INSERT INTO events (session_id, seq, turn, step, type, payload, created_at)"
                 " SELECT ?, seq, turn, step, type, payload, created_at FROM events"
                 " WHERE session_id = ? AND seq <= ?",
                 &st, err);
    if (rc == 0) {
        sqlite3_bind_text(st, 1, new_id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 3, point);
        int src = sqlite3_step(st);
        if (src != SQLITE_DONE)
            rc = db_fail(s, src, err, "copying events");
    }
    sqlite3_finalize(st);
    if (rc == 0)
        rc = exec_sql(s, "COMMIT", err);
    if (rc)
        goto rollback;
    /* Nobody can hold the new session's lease yet, so close a copied open turn now. */
    rc = repair_locked(s, new_id, "was cut short by the fork point", NULL, err);
    if (rc) {
        /* Do not leave a half-made fork behind (its events stay in the parent). */
        sqlite3_stmt *del = NULL;
        if (prepare(s, "DELETE FROM sessions WHERE id = ?", &del, NULL) == 0) {
            sqlite3_bind_text(del, 1, new_id, -1, SQLITE_TRANSIENT);
            sqlite3_step(del);
        }
        sqlite3_finalize(del);
    } else {
        *new_id_out = new_id;
        new_id = NULL;
    }
    goto unlock;
rollback:
    rollback(s);
unlock:
    pthread_mutex_unlock(&s->mu);
    json_decref(parent);
    free(new_id);
    return rc;
}

const cdsh_home *cdsh_session_fork_home(const cdsh_session_fork_info *info)
{
    return info && info->env ? info->env->home : NULL;
}

void *cdsh_session_fork_service(const cdsh_session_fork_info *info, const char *name)
{
    const cdsh_session_fork_env *env = info ? info->env : NULL;
    return env && env->service && name ? env->service(env->arg, name) : NULL;
}

int cdsh_session_store_fork_with(cdsh_session_store *s, const char *id, int64_t upto_seq,
                                 const char *title, const cdsh_session_fork_hook *const *hooks,
                                 const cdsh_session_fork_env *env, char **new_id_out,
                                 json_t **notes, cdsh_error *err)
{
    if (notes)
        *notes = NULL;
    int rc = cdsh_session_store_fork(s, id, upto_seq, title, new_id_out, err);
    if (rc)
        return rc;
    json_t *parent = cdsh_session_store_info_dup(s, id, NULL);
    json_t *child = cdsh_session_store_info_dup(s, *new_id_out, NULL);
    json_t *list = json_array();
    int64_t point = json_integer_value(json_object_get(child, "forkSeq"));
    cdsh_session_fork_info info = {
        .store = s,
        .parent_id = id,
        .child_id = *new_id_out,
        .fork_seq = point,
        /* An event appended to the parent meanwhile makes the fork partial. */
        .whole = parent && point == json_integer_value(json_object_get(parent, "lastSeq")),
        .env = env,
    };
    for (const cdsh_session_fork_hook *const *h = hooks; rc == 0 && h && *h; h++) {
        cdsh_error he = {0};
        rc = (*h)->fn((*h)->arg, &info, list, &he);
        if (rc < 0) {
            cdsh_error_set(err, rc, he.code[0] ? he.code : "FORK_HOOK_FAILED", "%s: %s", (*h)->name,
                           he.message);
            cdsh_session_store_delete(s, *new_id_out, NULL);
            free(*new_id_out);
            *new_id_out = NULL;
        }
    }
    json_decref(parent);
    json_decref(child);
    if (rc == 0 && notes)
        *notes = list;
    else
        json_decref(list);
    return rc;
}
