/* binding.c — session bindings and the sibling index in bindings.db, story
 * creation from a card's initial state, ownership checks when a session
 * opens its story, and the sweep of drafts and unbound stories. Branch
 * preparation and publication are branch.c's. */
#include "plugins/tavern/binding.h"

#include <ctype.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/db.h"
#include "base/fs.h"
#include "base/random.h"

#define SWEEP_AGE_S 3600

/* Schema steps by user_version (db.h); IF NOT EXISTS lets files made before
 * versioning (user_version 0) adopt step 1 unchanged. */
static const char *const MIGRATIONS[] = {
    "CREATE TABLE IF NOT EXISTS bindings(session TEXT PRIMARY KEY,"
    " card TEXT NOT NULL, story TEXT NOT NULL, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS siblings(parent TEXT NOT NULL, turn INTEGER"
    " NOT NULL, child TEXT NOT NULL PRIMARY KEY, created INTEGER NOT NULL);",
};
#define SCHEMA_VERSION ((int)(sizeof MIGRATIONS / sizeof *MIGRATIONS))

struct cdsh_tavern_bindings {
    cdsh_tavern_store *store;
    sqlite3 *db;
    pthread_mutex_t mu;
    char *stories_dir;
};

bool cdsh_tavern_story_id_valid(const char *id)
{
    if (!id || strncmp(id, "story-", 6) != 0 || strlen(id) != 38)
        return false;
    for (const char *p = id + 6; *p; p++)
        if (!isxdigit((unsigned char)*p) || isupper((unsigned char)*p))
            return false;
    return true;
}

char *cdsh_tavern_story_id_new(void)
{
    char hex[33], *id = NULL;
    if (cdsh_random_hex(hex, sizeof hex, 16) < 0 || asprintf(&id, "story-%s", hex) < 0)
        return NULL;
    return id;
}

char *cdsh_tavern_story_path_dup(cdsh_tavern_bindings *b, const char *story_id)
{
    char *p = NULL;
    if (!b || !cdsh_tavern_story_id_valid(story_id) ||
        asprintf(&p, "%s/%s.db", b->stories_dir, story_id) < 0)
        return NULL;
    return p;
}

cdsh_tavern_store *cdsh_tavern_bindings_store_get(cdsh_tavern_bindings *b)
{
    return b ? b->store : NULL;
}

static bool story_bound(cdsh_tavern_bindings *b, const char *story_id)
{
    int64_t one = 0;
    /* on error, keep the file */
    return cdsh_db_read_int64(b->db, "SELECT 1 FROM bindings WHERE story=?", story_id, &one,
                              NULL) != CDSH_ENOTFOUND;
}

/* Drafts and unbound stories older than an hour: an hour is far longer than
 * any branch takes, so another process's branch in flight is never swept. */
static void sweep(cdsh_tavern_bindings *b)
{
    char **names = NULL;
    size_t n = 0;
    if (cdsh_fs_list_dir(b->stories_dir, &names, &n, NULL) < 0)
        return;
    time_t now = time(NULL);
    for (size_t i = 0; i < n; i++) {
        char *path = cdsh_fs_path_join_dup(b->stories_dir, names[i]);
        struct stat st;
        if (!path || lstat(path, &st) != 0 || now - st.st_mtime < SWEEP_AGE_S) {
            free(path);
            continue;
        }
        size_t len = strlen(names[i]);
        bool draft = strncmp(names[i], ".preparing-", 11) == 0;
        bool story = len > 3 && strcmp(names[i] + len - 3, ".db") == 0;
        if (story && !draft) {
            char *id = strndup(names[i], len - 3);
            story = cdsh_tavern_story_id_valid(id) && !story_bound(b, id);
            free(id);
        }
        if (draft || story)
            unlink(path);
        free(path);
    }
    cdsh_fs_list_free(names);
}

int cdsh_tavern_bindings_open(cdsh_tavern_store *store, cdsh_tavern_bindings **out, cdsh_error *err)
{
    if (!store || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "bindings_open: missing argument");
    *out = NULL;
    cdsh_tavern_bindings *b = calloc(1, sizeof *b);
    char *path = NULL;
    int rc = 0;
    if (!b)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    pthread_mutex_init(&b->mu, NULL);
    b->store = store;
    b->stories_dir = cdsh_fs_path_join_dup(cdsh_tavern_store_root_get(store), "stories");
    path = cdsh_fs_path_join_dup(cdsh_tavern_store_root_get(store), "bindings.db");
    if (!b->stories_dir || !path) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto fail;
    }
    if ((rc = cdsh_fs_mkdir_p(b->stories_dir, 0700, err)) < 0)
        goto fail;
    const cdsh_db_opts opts = {.create = true,
                               .journal = CDSH_DB_JOURNAL_WAL,
                               .sync = CDSH_DB_SYNC_FULL,
                               .serialized = true,
                               .busy_timeout_ms = CDSH_TAVERN_STORY_BUSY_MS};
    if ((rc = cdsh_db_open(path, &opts, &b->db, err)) < 0 ||
        (rc = cdsh_db_migrate(b->db, MIGRATIONS, SCHEMA_VERSION, err)) < 0)
        goto fail;
    free(path);
    sweep(b);
    *out = b;
    return 0;
fail:
    free(path);
    cdsh_tavern_bindings_free(b);
    return rc;
}

void cdsh_tavern_bindings_free(cdsh_tavern_bindings *b)
{
    if (!b)
        return;
    cdsh_db_close(b->db);
    pthread_mutex_destroy(&b->mu);
    free(b->stories_dir);
    free(b);
}

static json_t *get_locked(cdsh_tavern_bindings *b, const char *session, int *rc, cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    json_t *v = NULL;
    *rc = 0;
    if (sqlite3_prepare_v2(b->db, "SELECT value FROM bindings WHERE session=?", -1, &st, NULL) !=
        SQLITE_OK) {
        *rc = cdsh_db_fail(b->db, err, "read");
        return NULL;
    }
    sqlite3_bind_text(st, 1, session, -1, SQLITE_STATIC);
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW)
        v = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
    else if (r != SQLITE_DONE)
        *rc = cdsh_db_fail(b->db, err, "read");
    sqlite3_finalize(st);
    return v;
}

int cdsh_tavern_binding_load(cdsh_tavern_bindings *b, const char *session_id, json_t **out,
                             cdsh_error *err)
{
    if (!b || !session_id || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "binding_load: missing argument");
    int rc;
    pthread_mutex_lock(&b->mu);
    *out = get_locked(b, session_id, &rc, err);
    pthread_mutex_unlock(&b->mu);
    if (rc == 0 && !*out)
        rc = cdsh_error_set(err, CDSH_ENOTFOUND, "NOT_BOUND", "session %s is not bound to a card",
                            session_id);
    return rc;
}

static int put_row(cdsh_tavern_bindings *b, const json_t *binding, bool insert_only,
                   cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    char *text = json_dumps(binding, JSON_COMPACT | JSON_SORT_KEYS);
    const char *sql =
        insert_only ? "INSERT INTO bindings(session,card,story,value) VALUES(?,?,?,?)"
                    : "INSERT OR REPLACE INTO bindings(session,card,story,value) VALUES(?,?,?,?)";
    int rc = 0;
    if (!text || sqlite3_prepare_v2(b->db, sql, -1, &st, NULL) != SQLITE_OK) {
        free(text);
        return cdsh_db_fail(b->db, err, "write");
    }
    sqlite3_bind_text(st, 1, json_string_value(json_object_get(binding, "sessionId")), -1,
                      SQLITE_STATIC);
    sqlite3_bind_text(st, 2, json_string_value(json_object_get(binding, "cardId")), -1,
                      SQLITE_STATIC);
    sqlite3_bind_text(st, 3, json_string_value(json_object_get(binding, "storyId")), -1,
                      SQLITE_STATIC);
    sqlite3_bind_text(st, 4, text, -1, SQLITE_STATIC);
    int r = sqlite3_step(st);
    if (r == SQLITE_CONSTRAINT)
        rc = cdsh_error_set(err, CDSH_EEXIST, "SESSION_BOUND", "session is already bound");
    else if (r != SQLITE_DONE)
        rc = cdsh_db_fail(b->db, err, "write");
    sqlite3_finalize(st);
    free(text);
    return rc;
}

/* The card's initial state for a new story. */
static json_t *initial_docs(cdsh_tavern_bindings *b, const char *card_id)
{
    json_t *docs =
        json_pack("{s:s,s:{s:{}}}", "journal.md", "", "assets/chat-lorebook.json", "entries");
    const char *files[] = {"assets/chat-lorebook.json", "journal.md"};
    for (size_t i = 0; i < 2; i++) {
        char *rel = NULL;
        json_t *v = NULL;
        if (asprintf(&rel, "characters/%s/%s", card_id, files[i]) < 0)
            continue;
        if (cdsh_tavern_store_load(b->store, rel, &v, NULL, NULL) == 0)
            json_object_set_new(docs, files[i], v);
        free(rel);
    }
    return docs;
}

static bool opt_string(const json_t *spec, const char *k)
{
    json_t *v = json_object_get(spec, k);
    return !v || json_is_null(v) || json_is_string(v);
}

int cdsh_tavern_binding_set(cdsh_tavern_bindings *b, const json_t *spec, json_t **out,
                            cdsh_error *err)
{
    const char *session = json_string_value(json_object_get(spec, "sessionId"));
    const char *card = json_string_value(json_object_get(spec, "cardId"));
    json_t *books = json_object_get(spec, "lorebookIds");
    json_t *greet = json_object_get(spec, "greetingIndex");
    if (!b || !session || !*session || !card)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "binding needs sessionId and cardId");
    if (!opt_string(spec, "presetId") || !opt_string(spec, "personaId") ||
        (books && !json_is_array(books)) ||
        (greet && (!json_is_integer(greet) || json_integer_value(greet) < 0)))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "presetId/personaId must be strings or null, lorebookIds an array, "
                              "greetingIndex an integer >= 0");
    json_t *record = NULL;
    int rc = cdsh_tavern_store_card_load(b->store, card, &record, NULL, err);
    json_decref(record);
    if (rc < 0)
        return rc;
    char *new_story = NULL, *new_path = NULL;
    json_t *binding = NULL, *cur = NULL;
    pthread_mutex_lock(&b->mu);
    if ((rc = cdsh_db_begin(b->db, err)) < 0)
        goto cleanup;
    cur = get_locked(b, session, &rc, err);
    if (rc < 0)
        goto cleanup;
    bool same_card = cur && strcmp(json_string_value(json_object_get(cur, "cardId")), card) == 0;
    binding = same_card ? json_deep_copy(cur) : json_object();
    if (!same_card) {
        char ts[40];
        cdsh_clock_format_iso8601(cdsh_clock_wall_ms(), ts, sizeof ts);
        new_story = cdsh_tavern_story_id_new();
        new_path = cdsh_tavern_story_path_dup(b, new_story);
        json_t *docs = initial_docs(b, card);
        rc = new_path ? cdsh_tavern_story_create(new_path, new_story, card, session, docs, err)
                      : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        json_decref(docs);
        if (rc < 0)
            goto cleanup;
        json_object_set_new(binding, "sessionId", json_string(session));
        json_object_set_new(binding, "cardId", json_string(card));
        json_object_set_new(binding, "storyId", json_string(new_story));
        json_object_set_new(binding, "walLineage", json_array());
        json_object_set_new(binding, "createdAt", json_string(ts));
        json_object_set_new(binding, "greetingIndex", json_integer(0));
    }
    const char *keys[] = {"presetId", "personaId"};
    for (size_t i = 0; i < 2; i++) {
        json_t *v = json_object_get(spec, keys[i]);
        if (v || !same_card)
            json_object_set_new(binding, keys[i], v ? json_incref(v) : json_null());
    }
    if (books || !same_card)
        json_object_set_new(binding, "lorebookIds", books ? json_deep_copy(books) : json_array());
    if (greet)
        json_object_set(binding, "greetingIndex", greet);
    if ((rc = put_row(b, binding, false, err)) < 0)
        goto cleanup;
    rc = cdsh_db_commit(b->db, err);
cleanup:
    cdsh_db_rollback(b->db);
    pthread_mutex_unlock(&b->mu);
    if (rc < 0 && new_path)
        unlink(new_path);
    if (rc == 0 && out)
        *out = json_incref(binding);
    json_decref(binding);
    json_decref(cur);
    free(new_story);
    free(new_path);
    return rc;
}

int cdsh_tavern_binding_clear(cdsh_tavern_bindings *b, const char *session_id, cdsh_error *err)
{
    if (!b || !session_id)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "binding_clear: missing argument");
    sqlite3_stmt *st = NULL;
    int rc = 0;
    pthread_mutex_lock(&b->mu);
    if (sqlite3_prepare_v2(b->db, "DELETE FROM bindings WHERE session=?", -1, &st, NULL) !=
        SQLITE_OK) {
        rc = cdsh_db_fail(b->db, err, "clear");
    } else {
        sqlite3_bind_text(st, 1, session_id, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = cdsh_db_fail(b->db, err, "clear");
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&b->mu);
    return rc;
}

int cdsh_tavern_binding_list(cdsh_tavern_bindings *b, const char *card_id, json_t **out,
                             cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    json_t *arr = json_array();
    int rc = 0;
    pthread_mutex_lock(&b->mu);
    const char *sql = card_id ? "SELECT value FROM bindings WHERE card=? ORDER BY session"
                              : "SELECT value FROM bindings ORDER BY session";
    if (sqlite3_prepare_v2(b->db, sql, -1, &st, NULL) != SQLITE_OK) {
        rc = cdsh_db_fail(b->db, err, "list");
    } else {
        if (card_id)
            sqlite3_bind_text(st, 1, card_id, -1, SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW) {
            json_t *v = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
            if (v)
                json_array_append_new(arr, v);
        }
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&b->mu);
    if (rc < 0)
        json_decref(arr);
    else
        *out = arr;
    return rc;
}

int cdsh_tavern_binding_open_story(cdsh_tavern_bindings *b, const char *session_id,
                                   cdsh_tavern_story **out, cdsh_error *err)
{
    json_t *binding = NULL;
    int rc = cdsh_tavern_binding_load(b, session_id, &binding, err);
    if (rc < 0)
        return rc;
    char *path =
        cdsh_tavern_story_path_dup(b, json_string_value(json_object_get(binding, "storyId")));
    cdsh_tavern_story *s = NULL;
    rc = path ? cdsh_tavern_story_open(path, &s, err)
              : cdsh_error_set(err, CDSH_EPROTO, "BAD_STORY", "binding has an invalid story id");
    if (rc == 0 && strcmp(cdsh_tavern_story_session_get(s), session_id) != 0) {
        rc = cdsh_error_set(err, CDSH_EPERM, "STORY_NOT_OWNED",
                            "story %s belongs to another session; inherit it through a branch",
                            cdsh_tavern_story_id_get(s));
        cdsh_tavern_story_free(s);
        s = NULL;
    }
    free(path);
    json_decref(binding);
    if (rc == 0)
        *out = s;
    return rc;
}

int cdsh__tavern_binding_insert(cdsh_tavern_bindings *b, const json_t *binding, const char *parent,
                                int64_t turn, cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    pthread_mutex_lock(&b->mu);
    int rc = 0;
    if ((rc = cdsh_db_begin(b->db, err)) < 0)
        goto cleanup;
    if ((rc = put_row(b, binding, true, err)) < 0)
        goto cleanup;
    if (parent) {
        if (sqlite3_prepare_v2(b->db,
                               "INSERT INTO siblings(parent,turn,child,created) VALUES(?,?,?,?)",
                               -1, &st, NULL) != SQLITE_OK) {
            rc = cdsh_db_fail(b->db, err, "siblings");
            goto cleanup;
        }
        sqlite3_bind_text(st, 1, parent, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, turn);
        sqlite3_bind_text(st, 3, json_string_value(json_object_get(binding, "sessionId")), -1,
                          SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, cdsh_clock_wall_ms());
        if (sqlite3_step(st) != SQLITE_DONE) {
            rc = cdsh_db_fail(b->db, err, "siblings");
            goto cleanup;
        }
    }
    rc = cdsh_db_commit(b->db, err);
cleanup:
    sqlite3_finalize(st);
    cdsh_db_rollback(b->db);
    pthread_mutex_unlock(&b->mu);
    return rc;
}

int cdsh_tavern_binding_siblings(cdsh_tavern_bindings *b, const char *session_id, json_t **out,
                                 cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = 0;
    char *parent = NULL;
    int64_t turn = 0;
    *out = NULL;
    pthread_mutex_lock(&b->mu);
    if (sqlite3_prepare_v2(b->db, "SELECT parent, turn FROM siblings WHERE child=?", -1, &st,
                           NULL) != SQLITE_OK) {
        rc = cdsh_db_fail(b->db, err, "siblings");
        goto cleanup;
    }
    sqlite3_bind_text(st, 1, session_id, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) {
        parent = strdup((const char *)sqlite3_column_text(st, 0));
        turn = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    st = NULL;
    json_t *list = json_array();
    /* the parent first, then its children at that turn in creation order */
    const char *root = parent ? parent : session_id;
    json_array_append_new(list, json_string(root));
    if (sqlite3_prepare_v2(
            b->db, "SELECT child, turn FROM siblings WHERE parent=? ORDER BY created, child", -1,
            &st, NULL) != SQLITE_OK) {
        json_decref(list);
        rc = cdsh_db_fail(b->db, err, "siblings");
        goto cleanup;
    }
    sqlite3_bind_text(st, 1, root, -1, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (parent && sqlite3_column_int64(st, 1) != turn)
            continue;
        if (!parent) /* the session is a root: take the first branch turn */
            turn = turn ? turn : sqlite3_column_int64(st, 1);
        if (sqlite3_column_int64(st, 1) == turn)
            json_array_append_new(list, json_string((const char *)sqlite3_column_text(st, 0)));
    }
    size_t idx = 0, i;
    json_t *v;
    json_array_foreach(list, i, v)
        if (strcmp(json_string_value(v), session_id) == 0)
            idx = i;
    if (json_array_size(list) > 1)
        *out =
            json_pack("{s:I,s:I,s:I,s:o}", "turn", (json_int_t)turn, "index", (json_int_t)idx + 1,
                      "total", (json_int_t)json_array_size(list), "siblings", list);
    else
        json_decref(list);
cleanup:
    sqlite3_finalize(st);
    pthread_mutex_unlock(&b->mu);
    free(parent);
    if (rc == 0 && !*out)
        *out = json_null();
    return rc;
}
