/* test_session_store.c — agent/session_store against real SQLite in a temp
 * CDSH_HOME: sessions CRUD and paging, event validation, replay into chat
 * messages, crash repair (a child that dies mid-turn), leases, fork,
 * threads and processes writing at once, migration and corrupt payloads. */
#include "support/testkit.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/session_store.h"
#include "base/fs.h"
#include "base/json.h"

static char *home;
static cdsh_session_store *store;

static int setup(void **state)
{
    (void)state;
    home = cdsh_test_home_new();
    cdsh_error e = {0};
    if (cdsh_session_store_open(cdsh_test_home(), NULL, &store, &e) != 0) {
        fprintf(stderr, "open: %s\n", e.message);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cdsh_session_store_close(store);
    store = NULL;
    cdsh_test_home_free(home);
    return 0;
}

/* ---- helpers -------------------------------------------------------------- */

static char *db_path(void)
{
    return cdsh_fs_path_join_dup(home, "sessions.db");
}

static char *new_session(const char *title)
{
    cdsh_session_spec spec = {.title = title, .provider = "deepseek", .model = "deepseek-chat"};
    char *id = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_session_store_create(store, &spec, &id, &e), 0);
    return id;
}

static int64_t add(cdsh_session_store *s, const char *id, const char *type, int64_t turn,
                   int64_t step, const char *payload)
{
    cdsh_error e = {0};
    json_t *p = cdsh_json_parse(payload, strlen(payload), 0, &e);
    assert_non_null(p);
    int64_t seq = 0;
    int rc = cdsh_session_store_append(s, id, type, turn, step, p, &seq, &e);
    if (rc)
        fprintf(stderr, "append %s: %s %s\n", type, e.code, e.message);
    assert_int_equal(rc, 0);
    json_decref(p);
    return seq;
}

static int try_add(const char *id, const char *type, int64_t turn, const char *payload,
                   cdsh_error *e)
{
    json_t *p = cdsh_json_parse(payload, strlen(payload), 0, NULL);
    assert_non_null(p);
    int rc = cdsh_session_store_append(store, id, type, turn, 1, p, NULL, e);
    json_decref(p);
    return rc;
}

static void assert_json(const json_t *got, const char *want_text)
{
    json_t *want = cdsh_json_parse(want_text, strlen(want_text), 0, NULL);
    assert_non_null(want);
    if (!cdsh_json_equal(got, want)) {
        char *g = cdsh_json_dump_pretty_dup(got);
        fprintf(stderr, "got:\n%s\nwant:\n%s\n", g, want_text);
        free(g);
    }
    assert_true(cdsh_json_equal(got, want));
    json_decref(want);
}

static int64_t jint(const json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

static const char *jstr(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static int64_t sql_int(const char *sql)
{
    char *path = db_path();
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(path);
    return v;
}

static void sql_exec(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("sql: %s", msg);
    sqlite3_close(db);
}

/* The events' types in order, as one comma-separated string. */
static char *types_of(const char *id)
{
    json_t *evs = cdsh_session_store_events(store, id, 0, 10000, NULL, NULL);
    assert_non_null(evs);
    char *out = calloc(1, 4096);
    size_t i;
    json_t *ev;
    json_array_foreach(evs, i, ev) {
        if (i)
            strcat(out, ",");
        strcat(out, jstr(ev, "type"));
    }
    json_decref(evs);
    return out;
}

/* ---- open / schema -------------------------------------------------------- */

static void open_creates_wal_database_with_current_schema(void **state)
{
    (void)state;
    char *path = db_path();
    assert_int_equal(sql_int("PRAGMA user_version"), CDSH_SESSION_SCHEMA_VERSION);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(path);
}

/* Issue 23 found sessions.db created 0644: the database and its WAL files
 * are the owner's only, whatever the umask lets through. */
static void the_database_and_its_wal_files_are_private(void **state)
{
    (void)state;
    char *path = db_path();
    cdsh_session_spec spec = {"t", NULL, NULL, NULL, NULL, NULL};
    char *id = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_session_store_create(store, &spec, &id, &e), 0); /* the WAL exists */
    const char *suffix[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        char f[1024];
        snprintf(f, sizeof f, "%s%s", path, suffix[i]);
        struct stat st;
        assert_int_equal(stat(f, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
    }
    free(id);
    free(path);
}

static void sessions_survive_reopening_the_store(void **state)
{
    (void)state;
    char *id = new_session("keep me");
    add(store, id, "user/message", 1, 0, "{\"text\":\"hello\"}");
    cdsh_session_store_close(store);
    cdsh_error e = {0};
    assert_int_equal(cdsh_session_store_open(cdsh_test_home(), NULL, &store, &e), 0);
    json_t *s = cdsh_session_store_info_dup(store, id, &e);
    assert_non_null(s);
    assert_string_equal(jstr(s, "title"), "keep me");
    assert_int_equal(jint(s, "eventCount"), 1);
    json_decref(s);
    free(id);
}

static void migrates_a_version_1_file(void **state)
{
    (void)state;
    char *path = cdsh_fs_path_join_dup(home, "old.db");
    sql_exec(path,
             "CREATE TABLE sessions (id TEXT PRIMARY KEY, title TEXT NOT NULL DEFAULT '',"
             " created_at TEXT NOT NULL, updated_at TEXT NOT NULL, provider TEXT, model TEXT,"
             " agent TEXT);"
             "CREATE TABLE events (session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE"
             " CASCADE, seq INTEGER NOT NULL, turn INTEGER NOT NULL DEFAULT 0, step INTEGER NOT"
             " NULL DEFAULT 0, type TEXT NOT NULL, payload TEXT NOT NULL, created_at TEXT NOT"
             " NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID;"
             "INSERT INTO sessions VALUES ('s-old', 'from v1', '2025-01-01T00:00:00.000Z',"
             " '2025-01-01T00:00:00.000Z', 'deepseek', 'deepseek-chat', 'coder');"
             "INSERT INTO events VALUES ('s-old', 1, 1, 0, 'user/message', '{\"text\":\"hi\"}',"
             " '2025-01-01T00:00:00.000Z');"
             "PRAGMA user_version = 1;");
    cdsh_session_store *old = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_session_store_open(cdsh_test_home(), path, &old, &e), 0);
    json_t *s = cdsh_session_store_info_dup(old, "s-old", &e);
    assert_non_null(s);
    assert_string_equal(jstr(s, "title"), "from v1");
    assert_string_equal(jstr(s, "agent"), "coder");
    assert_true(json_is_null(json_object_get(s, "baseUrl")));
    assert_true(json_is_null(json_object_get(s, "parentId")));
    assert_json(json_object_get(s, "metadata"), "{}");
    assert_int_equal(jint(s, "eventCount"), 1);
    json_decref(s);
    /* The new columns work: fork sets parent_id and fork_seq. */
    char *fork = NULL;
    assert_int_equal(cdsh_session_store_fork(old, "s-old", 0, NULL, &fork, &e), 0);
    s = cdsh_session_store_info_dup(old, fork, &e);
    assert_string_equal(jstr(s, "parentId"), "s-old");
    assert_string_equal(jstr(s, "title"), "from v1 (fork)");
    json_decref(s);
    free(fork);
    cdsh_session_store_close(old);
    sqlite3 *db = NULL;
    sqlite3_open(path, &db);
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
    sqlite3_step(st);
    assert_int_equal(sqlite3_column_int(st, 0), CDSH_SESSION_SCHEMA_VERSION);
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(path);
}

static void refuses_a_file_from_a_newer_cdsh(void **state)
{
    (void)state;
    char *path = cdsh_fs_path_join_dup(home, "new.db");
    sql_exec(path, "CREATE TABLE x(a); PRAGMA user_version = 99;");
    cdsh_session_store *s = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_session_store_open(cdsh_test_home(), path, &s, &e), CDSH_EUNSUPPORTED);
    assert_null(s);
    assert_string_equal(e.code, "SCHEMA_TOO_NEW");
    assert_non_null(strstr(e.message, "schema version 99"));
    free(path);
}

/* ---- sessions ------------------------------------------------------------- */

static void create_and_get_report_every_field(void **state)
{
    (void)state;
    json_t *meta = json_pack("{s:s}", "origin", "test");
    cdsh_session_spec spec = {.title = "First",
                              .provider = "deepseek",
                              .model = "deepseek-reasoner",
                              .base_url = "http://127.0.0.1:9/v1",
                              .agent = "coder",
                              .metadata = meta};
    char *id = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_session_store_create(store, &spec, &id, &e), 0);
    json_decref(meta);
    assert_true(cdsh_session_id_valid(id));
    assert_int_equal(strlen(id), 24);
    json_t *s = cdsh_session_store_info_dup(store, id, &e);
    assert_non_null(s);
    assert_string_equal(jstr(s, "id"), id);
    assert_string_equal(jstr(s, "title"), "First");
    assert_string_equal(jstr(s, "provider"), "deepseek");
    assert_string_equal(jstr(s, "model"), "deepseek-reasoner");
    assert_string_equal(jstr(s, "baseUrl"), "http://127.0.0.1:9/v1");
    assert_string_equal(jstr(s, "agent"), "coder");
    assert_json(json_object_get(s, "metadata"), "{\"origin\":\"test\"}");
    assert_int_equal(strlen(jstr(s, "createdAt")), 24);
    assert_string_equal(jstr(s, "createdAt"), jstr(s, "updatedAt"));
    assert_int_equal(jint(s, "eventCount"), 0);
    assert_int_equal(jint(s, "lastSeq"), 0);
    assert_true(json_is_null(json_object_get(s, "openTurn")));
    assert_true(json_is_null(json_object_get(s, "forkSeq")));
    json_decref(s);
    free(id);
}

static void unknown_and_malformed_ids_are_refused(void **state)
{
    (void)state;
    cdsh_error e = {0};
    assert_null(cdsh_session_store_info_dup(store, "s-nosuch", &e));
    assert_int_equal(e.rc, CDSH_ENOTFOUND);
    assert_string_equal(e.code, "NO_SESSION");
    assert_string_equal(e.message, "no session \"s-nosuch\"");
    assert_null(cdsh_session_store_info_dup(store, "../etc", &e));
    assert_string_equal(e.code, "BAD_SESSION_ID");
    assert_false(cdsh_session_id_valid("s-"));
    assert_false(cdsh_session_id_valid("s-a/b"));
    assert_false(cdsh_session_id_valid("x-abc"));
    assert_true(cdsh_session_id_valid("s-Abc_9-z"));
    assert_int_equal(cdsh_session_store_delete(store, "s-nosuch", &e), CDSH_ENOTFOUND);
    assert_string_equal(e.code, "NO_SESSION");
    assert_int_equal(cdsh_session_store_rename(store, "s-nosuch", "x", &e), CDSH_ENOTFOUND);
}

static void create_refuses_non_object_metadata(void **state)
{
    (void)state;
    json_t *meta = json_integer(3);
    cdsh_session_spec spec = {.metadata = meta};
    char *id = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_session_store_create(store, &spec, &id, &e), CDSH_EINVAL);
    assert_null(id);
    assert_string_equal(e.message, "session metadata must be a JSON object");
    json_decref(meta);
}

static void list_is_newest_first_with_counts_and_total(void **state)
{
    (void)state;
    char *a = new_session("a"), *b = new_session("b"), *c = new_session("c");
    usleep(3000);
    add(store, a, "user/message", 1, 0, "{\"text\":\"bump a\"}"); /* a is now the newest */
    int64_t total = 0;
    cdsh_error e = {0};
    json_t *list = cdsh_session_store_list(store, 0, 10, &total, &e);
    assert_non_null(list);
    assert_int_equal(total, 3);
    assert_int_equal(json_array_size(list), 3);
    assert_string_equal(jstr(json_array_get(list, 0), "id"), a);
    assert_int_equal(jint(json_array_get(list, 0), "eventCount"), 1);
    assert_int_equal(jint(json_array_get(list, 1), "eventCount"), 0);
    json_decref(list);
    free(a), free(b), free(c);
}

static void list_pages_with_offset_and_limit(void **state)
{
    (void)state;
    char *ids[5];
    for (int i = 0; i < 5; i++)
        ids[i] = new_session("p");
    cdsh_error e = {0};
    int64_t total = 0;
    json_t *p1 = cdsh_session_store_list(store, 0, 2, &total, &e);
    json_t *p2 = cdsh_session_store_list(store, 2, 2, NULL, &e);
    json_t *p3 = cdsh_session_store_list(store, 4, 2, NULL, &e);
    json_t *p4 = cdsh_session_store_list(store, 10, 2, NULL, &e);
    assert_int_equal(total, 5);
    assert_int_equal(json_array_size(p1), 2);
    assert_int_equal(json_array_size(p2), 2);
    assert_int_equal(json_array_size(p3), 1);
    assert_int_equal(json_array_size(p4), 0);
    /* Every session exactly once across the pages. */
    for (int i = 0; i < 5; i++) {
        int seen = 0;
        json_t *pages[] = {p1, p2, p3};
        for (int k = 0; k < 3; k++) {
            size_t j;
            json_t *s;
            json_array_foreach(pages[k], j, s)
                seen += strcmp(jstr(s, "id"), ids[i]) == 0;
        }
        assert_int_equal(seen, 1);
        free(ids[i]);
    }
    json_decref(p1), json_decref(p2), json_decref(p3), json_decref(p4);
    assert_null(cdsh_session_store_list(store, -1, 2, NULL, &e));
    assert_string_equal(e.code, "INVALID_ARGS");
    assert_null(cdsh_session_store_list(store, 0, 0, NULL, &e));
    assert_null(cdsh_session_store_list(store, 0, 1001, NULL, &e));
}

static void delete_removes_the_session_and_its_events(void **state)
{
    (void)state;
    char *id = new_session("doomed");
    char *other = new_session("stays");
    add(store, id, "user/message", 1, 0, "{\"text\":\"x\"}");
    add(store, id, "user/message", 1, 0, "{\"text\":\"y\"}");
    add(store, other, "user/message", 1, 0, "{\"text\":\"z\"}");
    cdsh_error e = {0};
    assert_int_equal(cdsh_session_store_delete(store, id, &e), 0);
    assert_null(cdsh_session_store_info_dup(store, id, &e));
    assert_string_equal(e.code, "NO_SESSION");
    assert_int_equal(sql_int("SELECT count(*) FROM events"), 1);
    assert_null(cdsh_session_store_events(store, id, 0, 10, NULL, &e));
    assert_string_equal(e.code, "NO_SESSION");
    free(id);
    free(other);
}

static void rename_changes_the_title_only(void **state)
{
    (void)state;
    char *id = new_session("old title");
    cdsh_error e = {0};
    assert_int_equal(cdsh_session_store_rename(store, id, "new title", &e), 0);
    json_t *s = cdsh_session_store_info_dup(store, id, &e);
    assert_string_equal(jstr(s, "title"), "new title");
    assert_string_equal(jstr(s, "provider"), "deepseek");
    json_decref(s);
    free(id);
}

/* ---- append / events -------------------------------------------------------- */

static void append_numbers_events_per_session_and_touches_updated_at(void **state)
{
    (void)state;
    char *a = new_session("a"), *b = new_session("b");
    json_t *before = cdsh_session_store_info_dup(store, a, NULL);
    usleep(3000);
    assert_int_equal(add(store, a, "turn/start", 1, 0, "{}"), 1);
    assert_int_equal(add(store, b, "turn/start", 1, 0, "{}"), 1);
    assert_int_equal(add(store, a, "user/message", 1, 0, "{\"text\":\"hi\"}"), 2);
    assert_int_equal(add(store, a, "turn/end", 1, 0, "{\"reason\":\"done\"}"), 3);
    json_t *after = cdsh_session_store_info_dup(store, a, NULL);
    assert_true(strcmp(jstr(after, "updatedAt"), jstr(before, "updatedAt")) > 0);
    assert_int_equal(jint(after, "lastSeq"), 3);
    assert_int_equal(jint(after, "lastTurn"), 1);
    assert_true(json_is_null(json_object_get(after, "openTurn")));
    json_decref(before);
    json_decref(after);
    free(a), free(b);
}

static void append_to_a_missing_session_fails(void **state)
{
    (void)state;
    cdsh_error e = {0};
    assert_int_equal(try_add("s-missing", "user/message", 1, "{\"text\":\"x\"}", &e),
                     CDSH_ENOTFOUND);
    assert_string_equal(e.code, "NO_SESSION");
}

static void append_checks_types_and_payload_fields(void **state)
{
    (void)state;
    char *id = new_session("v");
    cdsh_error e = {0};
    assert_int_equal(try_add(id, "chat/shout", 1, "{}", &e), 0); /* custom types are stored */
    assert_int_equal(try_add(id, "Bogus", 1, "{}", &e), CDSH_EINVAL);
    assert_string_equal(e.code, "BAD_EVENT");
    assert_non_null(strstr(e.message, "unknown event type \"Bogus\""));
    assert_int_equal(try_add(id, "user/message", 1, "{}", &e), CDSH_EINVAL);
    assert_string_equal(e.message, "user/message event: field \"text\" must be a string");
    assert_int_equal(try_add(id, "tool/result", 1, "{\"callId\":\"c\",\"content\":[]}", &e),
                     CDSH_EINVAL);
    assert_string_equal(e.message, "tool/result event: field \"isError\" must be a boolean");
    assert_int_equal(
        try_add(id, "tool/call", 1, "{\"callId\":\"\",\"name\":\"n\",\"arguments\":\"{}\"}", &e),
        CDSH_EINVAL);
    assert_string_equal(e.message, "tool/call event: field \"callId\" must be a non-empty string");
    assert_int_equal(try_add(id, "turn/end", 1, "{\"reason\":\"bored\"}", &e), CDSH_EINVAL);
    assert_non_null(strstr(e.message, "field \"reason\" must be done, cancelled"));
    assert_int_equal(try_add(id, "turn/start", 0, "{}", &e), CDSH_EINVAL);
    assert_string_equal(e.message, "turn/start event: turn must be >= 1");
    assert_int_equal(try_add(id, "notice", 0, "{\"level\":\"loud\",\"text\":\"x\"}", &e),
                     CDSH_EINVAL);
    assert_int_equal(try_add(id, "command/done", 0, "{\"commandId\":\"c\",\"kind\":\"maybe\"}", &e),
                     CDSH_EINVAL);
    assert_string_equal(e.message,
                        "command/done event: field \"kind\" must be \"success\" or \"error\"");
    assert_int_equal(try_add(id, "assistant/message", 1,
                             "{\"text\":\"\",\"toolCalls\":[{\"id\":\"c1\",\"name\":\"x\"}]}", &e),
                     CDSH_EINVAL);
    assert_non_null(strstr(e.message, "toolCalls[0] must be"));
    assert_int_equal(cdsh_session_store_append(store, id, "user/message", 1, 0, NULL, NULL, &e),
                     CDSH_EINVAL);
    assert_string_equal(e.message, "user/message event: payload must be a JSON object");
    assert_int_equal(
        try_add(id, "command/run", 0, "{\"commandId\":\"cmd-1\",\"name\":\"goal\"}", &e), 0);
    assert_int_equal(
        try_add(id, "command/done", 0, "{\"commandId\":\"cmd-1\",\"kind\":\"success\"}", &e), 0);
    json_t *s = cdsh_session_store_info_dup(store, id, NULL);
    assert_int_equal(jint(s, "eventCount"), 3); /* only the valid ones */
    json_decref(s);
    free(id);
}

static void append_refuses_payloads_that_are_not_lossless(void **state)
{
    (void)state;
    char *id = new_session("l");
    json_t *p = json_object();
    json_object_set_new(p, "text", json_stringn_nocheck("bad \xff byte", 10));
    cdsh_error e = {0};
    assert_int_equal(cdsh_session_store_append(store, id, "user/message", 1, 0, p, NULL, &e),
                     CDSH_EINVAL);
    assert_string_equal(e.code, "NOT_LOSSLESS");
    assert_string_equal(e.message, "payload.text is not valid UTF-8");
    json_decref(p);
    free(id);
}

static void events_page_with_after_seq_and_has_more(void **state)
{
    (void)state;
    char *id = new_session("paged");
    for (int i = 0; i < 7; i++)
        add(store, id, "notice", 0, 0, "{\"level\":\"info\",\"text\":\"n\"}");
    bool more = false;
    cdsh_error e = {0};
    json_t *p1 = cdsh_session_store_events(store, id, 0, 3, &more, &e);
    assert_int_equal(json_array_size(p1), 3);
    assert_true(more);
    assert_int_equal(jint(json_array_get(p1, 0), "seq"), 1);
    json_t *p3 = cdsh_session_store_events(store, id, 6, 3, &more, &e);
    assert_int_equal(json_array_size(p3), 1);
    assert_false(more);
    json_t *ev = json_array_get(p3, 0);
    assert_int_equal(jint(ev, "seq"), 7);
    assert_string_equal(jstr(ev, "type"), "notice");
    assert_json(json_object_get(ev, "payload"), "{\"level\":\"info\",\"text\":\"n\"}");
    assert_int_equal(strlen(jstr(ev, "createdAt")), 24);
    json_t *p2 = cdsh_session_store_events(store, id, 3, 3, &more, &e);
    assert_true(more);
    assert_int_equal(jint(json_array_get(p2, 2), "seq"), 6);
    assert_null(cdsh_session_store_events(store, id, 0, 0, NULL, &e));
    assert_string_equal(e.code, "INVALID_ARGS");
    json_decref(p1), json_decref(p2), json_decref(p3);
    free(id);
}

static void turn_rules_keep_turns_balanced(void **state)
{
    (void)state;
    char *id = new_session("rules");
    cdsh_error e = {0};
    assert_int_equal(try_add(id, "assistant/message", 1, "{\"text\":\"x\"}", &e), CDSH_EINVAL);
    assert_string_equal(
        e.message, "assistant/message names turn 1 but no turn is open (log turn/start first)");
    assert_int_equal(try_add(id, "turn/start", 2, "{}", &e), CDSH_EINVAL);
    assert_string_equal(e.message, "turn/start expected turn 1, got 2");
    assert_int_equal(try_add(id, "turn/start", 1, "{}", &e), 0);
    assert_int_equal(try_add(id, "turn/start", 2, "{}", &e), CDSH_EINVAL);
    assert_string_equal(e.message, "turn/start 2 while turn 1 is still open");
    assert_int_equal(
        try_add(id, "tool/call", 2, "{\"callId\":\"c\",\"name\":\"x\",\"arguments\":\"{}\"}", &e),
        CDSH_EINVAL);
    assert_string_equal(e.message, "tool/call names turn 2 but turn 1 is open");
    assert_int_equal(
        try_add(id, "tool/call", 1, "{\"callId\":\"c\",\"name\":\"x\",\"arguments\":\"{}\"}", &e),
        0);
    assert_int_equal(try_add(id, "turn/end", 1, "{\"reason\":\"cancelled\"}", &e), CDSH_EINVAL);
    assert_string_equal(e.message, "turn/end in turn 1 while tool call c has no tool/result "
                                   "(log its result, e.g. an ABORTED error, first)");
    assert_int_equal(try_add(id, "assistant/message", 1, "{\"text\":\"next step\"}", &e),
                     CDSH_EINVAL);
    assert_string_equal(e.message, "assistant/message in turn 1 while tool call c has no "
                                   "tool/result (log its result, e.g. an ABORTED error, first)");
    assert_int_equal(
        try_add(id, "assistant/message", 1,
                "{\"text\":\"\",\"toolCalls\":[{\"id\":\"d\",\"name\":\"x\",\"arguments\":\"\"},"
                "{\"id\":\"d\",\"name\":\"y\",\"arguments\":\"\"}]}",
                &e),
        CDSH_EINVAL);
    assert_string_equal(e.message,
                        "assistant/message event: toolCalls[1] repeats the id of toolCalls[0]");
    assert_int_equal(
        try_add(
            id, "tool/result", 1,
            "{\"callId\":\"c\",\"isError\":true,\"content\":[],\"error\":{\"code\":\"ABORTED\"}}",
            &e),
        0);
    assert_int_equal(try_add(id, "turn/end", 2, "{\"reason\":\"cancelled\"}", &e), CDSH_EINVAL);
    assert_int_equal(try_add(id, "turn/end", 1, "{\"reason\":\"cancelled\"}", &e), 0);
    assert_int_equal(try_add(id, "turn/end", 1, "{\"reason\":\"done\"}", &e), CDSH_EINVAL);
    assert_string_equal(e.message,
                        "turn/end names turn 1 but no turn is open (log turn/start first)");
    assert_int_equal(try_add(id, "turn/start", 2, "{}", &e), 0);
    free(id);
}

/* ---- replay --------------------------------------------------------------- */

static void replay_rebuilds_a_multi_step_tool_conversation(void **state)
{
    (void)state;
    char *id = new_session("tools");
    add(store, id, "turn/start", 1, 0, "{}");
    add(store, id, "user/message", 1, 0, "{\"text\":\"read a and b\"}");
    add(store, id, "assistant/message", 1, 1,
        "{\"text\":\"\",\"reasoning\":\"need both files\",\"toolCalls\":["
        "{\"id\":\"c1\",\"name\":\"read\",\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"},"
        "{\"id\":\"c2\",\"name\":\"read\",\"arguments\":\"{\\\"path\\\":\\\"b\\\"}\"}],"
        "\"finishReason\":\"tool_calls\"}");
    add(store, id, "tool/call", 1, 1, "{\"callId\":\"c1\",\"name\":\"read\",\"arguments\":\"{}\"}");
    add(store, id, "tool/call", 1, 1, "{\"callId\":\"c2\",\"name\":\"read\",\"arguments\":\"{}\"}");
    /* Results logged out of call order: replay puts them back in call order. */
    add(store, id, "tool/result", 1, 1,
        "{\"callId\":\"c2\",\"isError\":false,\"content\":[{\"type\":\"text\",\"text\":\"B\"}]}");
    add(store, id, "tool/result", 1, 1,
        "{\"callId\":\"c1\",\"isError\":true,\"content\":[{\"type\":\"text\",\"text\":\"Error: "
        "no a\"}],\"error\":{\"name\":\"ToolError\",\"code\":\"ENOENT\"}}");
    add(store, id, "assistant/message", 1, 2,
        "{\"text\":\"a is missing; b says B\",\"reasoning\":null,\"finishReason\":\"stop\"}");
    add(store, id, "turn/end", 1, 0, "{\"reason\":\"done\"}");
    add(store, id, "turn/start", 2, 0, "{}");
    add(store, id, "user/message", 2, 0, "{\"text\":\"thanks\"}");
    add(store, id, "assistant/message", 2, 1, "{\"text\":\"welcome\",\"reasoning\":\"polite\"}");
    add(store, id, "turn/end", 2, 0, "{\"reason\":\"done\"}");
    cdsh_error e = {0};
    json_t *m = cdsh_session_store_messages(store, id, &e);
    assert_non_null(m);
    assert_json(
        m, "[{\"role\":\"user\",\"content\":\"read a and b\"},"
           "{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"need both files\","
           " \"tool_calls\":["
           "  {\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"read\","
           "   \"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}},"
           "  {\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"read\","
           "   \"arguments\":\"{\\\"path\\\":\\\"b\\\"}\"}}]},"
           "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"Error: no a\"},"
           "{\"role\":\"tool\",\"tool_call_id\":\"c2\",\"content\":\"B\"},"
           "{\"role\":\"assistant\",\"content\":\"a is missing; b says B\"},"
           "{\"role\":\"user\",\"content\":\"thanks\"},"
           "{\"role\":\"assistant\",\"content\":\"welcome\",\"reasoning_content\":\"polite\"}]");
    json_decref(m);
    free(id);
}

static void replay_ignores_commands_notices_and_orphan_results(void **state)
{
    (void)state;
    char *id = new_session("misc");
    add(store, id, "command/run", 0, 0,
        "{\"commandId\":\"cmd-0a1b2c3d-1\",\"name\":\"goal\",\"args\":\" "
        "x\",\"source\":{\"kind\":\"user\"}}");
    add(store, id, "command/done", 0, 0,
        "{\"commandId\":\"cmd-0a1b2c3d-1\",\"kind\":\"success\",\"text\":\"ok\"}");
    add(store, id, "notice", 0, 0, "{\"level\":\"warning\",\"code\":\"X\",\"text\":\"careful\"}");
    add(store, id, "turn/start", 1, 0, "{}");
    add(store, id, "user/message", 1, 0, "{\"text\":\"q\"}");
    add(store, id, "tool/result", 1, 1,
        "{\"callId\":\"ghost\",\"isError\":false,\"content\":[{\"type\":\"text\",\"text\":\"?\"}]"
        "}");
    add(store, id, "chat/custom", 1, 0, "{\"anything\":1}");
    json_t *m = cdsh_session_store_messages(store, id, NULL);
    assert_json(m, "[{\"role\":\"user\",\"content\":\"q\"}]");
    json_decref(m);
    free(id);
}

static void replay_joins_text_blocks_and_names_other_blocks(void **state)
{
    (void)state;
    char *id = new_session("blocks");
    add(store, id, "turn/start", 1, 0, "{}");
    add(store, id, "assistant/message", 1, 1,
        "{\"text\":\"look\",\"toolCalls\":[{\"id\":\"c\",\"name\":\"shot\",\"arguments\":\"{}\"}]"
        "}");
    add(store, id, "tool/result", 1, 1,
        "{\"callId\":\"c\",\"isError\":false,\"content\":[{\"type\":\"text\",\"text\":\"one\"},"
        "{\"type\":\"image\",\"attachment\":{}},{\"type\":\"text\",\"text\":\"two\"}]}");
    json_t *m = cdsh_session_store_messages(store, id, NULL);
    assert_int_equal(json_array_size(m), 2);
    assert_string_equal(jstr(json_array_get(m, 0), "content"), "look");
    assert_string_equal(jstr(json_array_get(m, 1), "content"), "one\n[image]\ntwo");
    json_decref(m);
    free(id);
}

static void replay_puts_a_message_typed_while_tools_ran_after_their_results(void **state)
{
    (void)state;
    char *id = new_session("steer");
    add(store, id, "turn/start", 1, 0, "{}");
    add(store, id, "user/message", 1, 0, "{\"text\":\"build it\"}");
    add(store, id, "assistant/message", 1, 1,
        "{\"text\":\"\",\"toolCalls\":[{\"id\":\"m\",\"name\":\"make\",\"arguments\":\"{}\"}]}");
    add(store, id, "tool/call", 1, 1, "{\"callId\":\"m\",\"name\":\"make\",\"arguments\":\"{}\"}");
    add(store, id, "user/message", 1, 0, "{\"text\":\"and run the tests\"}");
    add(store, id, "tool/result", 1, 1,
        "{\"callId\":\"m\",\"isError\":false,\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}");
    add(store, id, "assistant/message", 1, 2, "{\"text\":\"built; testing\"}");
    json_t *m = cdsh_session_store_messages(store, id, NULL);
    assert_json(m, "[{\"role\":\"user\",\"content\":\"build it\"},"
                   "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"m\","
                   "\"type\":\"function\",\"function\":{\"name\":\"make\",\"arguments\":\"{}\"}}]},"
                   "{\"role\":\"tool\",\"tool_call_id\":\"m\",\"content\":\"ok\"},"
                   "{\"role\":\"user\",\"content\":\"and run the tests\"},"
                   "{\"role\":\"assistant\",\"content\":\"built; testing\"}]");
    json_decref(m);
    free(id);
}

static void append_reply_replays_as_the_clients_own_message(void **state)
{
    (void)state;
    char *id = new_session("reply");
    cdsh_model_tool_call calls[2] = {{"call_a", "read", "{\"p\":1}"}, {"call_b", "ls", "{}"}};
    cdsh_model_reply reply = {
        .text = "",
        .reasoning = "think",
        .tool_calls = calls,
        .n_tool_calls = 2,
        .finish_reason = "tool_calls",
        .usage = {.input_tokens = 10, .output_tokens = 5, .total_tokens = 15}};
    cdsh_error e = {0};
    int64_t seq = 0;
    add(store, id, "turn/start", 1, 0, "{}");
    assert_int_equal(cdsh_session_store_append_reply(store, id, 1, 1, &reply, &seq, &e), 0);
    assert_int_equal(seq, 2);
    json_t *evs = cdsh_session_store_events(store, id, 1, 10, NULL, NULL);
    json_t *p = json_object_get(json_array_get(evs, 0), "payload");
    assert_string_equal(jstr(p, "finishReason"), "tool_calls");
    assert_int_equal(jint(json_object_get(p, "usage"), "totalTokens"), 15);
    json_t *m = cdsh_session_store_messages(store, id, NULL);
    json_t *want = cdsh_model_reply_to_message(&reply);
    assert_true(cdsh_json_equal(json_array_get(m, 0), want));
    json_decref(want);
    json_decref(m);
    json_decref(evs);
    free(id);
}

static void append_reply_keeps_a_reply_with_invalid_utf8(void **state)
{
    (void)state;
    char *id = new_session("bytes");
    add(store, id, "turn/start", 1, 0, "{}");
    cdsh_model_reply reply = {.text = "caf\xc3 ok", .finish_reason = "stop"};
    cdsh_error e = {0};
    assert_int_equal(cdsh_session_store_append_reply(store, id, 1, 1, &reply, NULL, &e), 0);
    json_t *m = cdsh_session_store_messages(store, id, NULL);
    assert_string_equal(jstr(json_array_get(m, 0), "content"), "caf\xef\xbf\xbd ok");
    json_decref(m);
    cdsh_model_tool_call call = {NULL, "x", "{}"};
    cdsh_model_reply no_id = {.text = "", .tool_calls = &call, .n_tool_calls = 1};
    assert_int_equal(cdsh_session_store_append_reply(store, id, 1, 2, &no_id, NULL, &e),
                     CDSH_EINVAL);
    assert_string_equal(e.code, "BAD_EVENT");
    free(id);
}

/* ---- crash repair ------------------------------------------------------------ */

/* A child process opens its own store, logs a turn up to a started tool
 * call (c1) and a requested-but-unstarted one (c2), then dies without
 * closing anything. */
static void crash_child_mid_turn(const char *id)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cdsh_session_store *s = NULL;
        if (cdsh_session_store_open(cdsh_test_home(), NULL, &s, NULL) != 0)
            _exit(3);
        cdsh_session_lease *lease = NULL;
        if (cdsh_session_store_lease(s, id, 0, NULL, &lease, NULL) != 0)
            _exit(4);
        const char *evs[][2] = {
            {"turn/start", "{}"},
            {"user/message", "{\"text\":\"delete tmp and list\"}"},
            {"assistant/message",
             "{\"text\":\"\",\"toolCalls\":[{\"id\":\"c1\",\"name\":\"rm\",\"arguments\":\"{}\"},"
             "{\"id\":\"c2\",\"name\":\"ls\",\"arguments\":\"{}\"}]}"},
            {"tool/call", "{\"callId\":\"c1\",\"name\":\"rm\",\"arguments\":\"{}\"}"},
        };
        for (size_t i = 0; i < 4; i++) {
            json_t *p = json_loads(evs[i][1], 0, NULL);
            if (cdsh_session_store_append(s, id, evs[i][0], 1, i >= 2 ? 1 : 0, p, NULL, NULL))
                _exit(5);
        }
        _exit(1); /* the crash: no close, no turn/end, lease dropped by the kernel */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 1);
}

static void crash_mid_turn_is_repaired_on_load(void **state)
{
    (void)state;
    char *id = new_session("crash");
    crash_child_mid_turn(id);
    json_t *s = cdsh_session_store_info_dup(store, id, NULL);
    assert_int_equal(jint(s, "openTurn"), 1);
    json_decref(s);

    cdsh_session_loaded l;
    cdsh_error e = {0};
    assert_int_equal(cdsh_session_store_load(store, id, NULL, &l, &e), 0);
    assert_false(l.live);
    assert_int_equal(l.repaired, 4);
    assert_true(json_is_null(json_object_get(l.session, "openTurn")));
    char *types = types_of(id);
    assert_string_equal(types, "turn/start,user/message,assistant/message,tool/call,"
                               "tool/result,tool/result,notice,turn/end");
    free(types);

    json_t *evs = cdsh_session_store_events(store, id, 4, 10, NULL, NULL);
    json_t *r1 = json_object_get(json_array_get(evs, 0), "payload");
    json_t *r2 = json_object_get(json_array_get(evs, 1), "payload");
    assert_string_equal(jstr(r1, "callId"), "c1");
    assert_json(json_object_get(r1, "error"),
                "{\"name\":\"ToolOutcomeUnknownError\",\"code\":\"TOOL_OUTCOME_UNKNOWN\","
                "\"message\":\"The tool call had started, but cdsh stopped before its result was "
                "recorded, so its outcome is unknown. Retry only if the tool is read-only or "
                "idempotent; if it may have side effects, check the current state (or ask the "
                "user) before doing it again.\"}");
    assert_int_equal(jint(r1, "sourceEventSeq"), 4);
    assert_true(json_is_true(json_object_get(r1, "isError")));
    assert_true(json_is_true(json_object_get(r1, "synthetic")));
    assert_string_equal(jstr(r2, "callId"), "c2");
    assert_string_equal(jstr(json_object_get(r2, "error"), "code"), "TOOL_NOT_STARTED");
    assert_null(json_object_get(r2, "sourceEventSeq"));
    json_t *notice = json_array_get(evs, 2);
    assert_string_equal(jstr(json_object_get(notice, "payload"), "code"), "SESSION_REPAIRED");
    json_t *end = json_array_get(evs, 3);
    assert_int_equal(jint(end, "turn"), 1);
    assert_json(json_object_get(end, "payload"), "{\"reason\":\"interrupted\",\"synthetic\":true}");
    /* Repair reuses the last real event's time. */
    assert_string_equal(jstr(end, "createdAt"), jstr(json_array_get(evs, 0), "createdAt"));
    json_decref(evs);

    /* The transcript is provider-valid: each call answered, in call order. */
    json_t *m = l.messages;
    assert_int_equal(json_array_size(m), 4);
    assert_string_equal(jstr(json_array_get(m, 2), "tool_call_id"), "c1");
    assert_true(strncmp(jstr(json_array_get(m, 2), "content"), "Error: The tool call had started",
                        32) == 0);
    assert_string_equal(jstr(json_array_get(m, 3), "content"),
                        "Error: The tool call was requested, but cdsh stopped before it started. "
                        "Call it again if it is still needed.");
    cdsh_session_loaded_deinit(&l);
    free(id);
}

static void repair_is_idempotent(void **state)
{
    (void)state;
    char *id = new_session("twice");
    crash_child_mid_turn(id);
    int n = -1;
    cdsh_error e = {0};
    assert_int_equal(cdsh_session_store_repair(store, id, NULL, &n, &e), 0);
    assert_int_equal(n, 4);
    assert_int_equal(cdsh_session_store_repair(store, id, NULL, &n, &e), 0);
    assert_int_equal(n, 0);
    cdsh_session_loaded l;
    assert_int_equal(cdsh_session_store_load(store, id, NULL, &l, &e), 0);
    assert_int_equal(l.repaired, 0);
    assert_int_equal(jint(l.session, "eventCount"), 8);
    cdsh_session_loaded_deinit(&l);
    free(id);
}

static void balanced_log_needs_no_repair(void **state)
{
    (void)state;
    char *id = new_session("fine");
    add(store, id, "turn/start", 1, 0, "{}");
    add(store, id, "user/message", 1, 0, "{\"text\":\"hi\"}");
    add(store, id, "turn/end", 1, 0, "{\"reason\":\"cancelled\"}");
    int n = -1;
    assert_int_equal(cdsh_session_store_repair(store, id, NULL, &n, NULL), 0);
    assert_int_equal(n, 0);
    json_t *s = cdsh_session_store_info_dup(store, id, NULL);
    assert_int_equal(jint(s, "eventCount"), 3);
    json_decref(s);
    free(id);
}

static void open_turn_without_calls_gets_only_notice_and_turn_end(void **state)
{
    (void)state;
    char *id = new_session("streaming");
    /* An earlier, closed turn with a call is not touched. */
    add(store, id, "turn/start", 1, 0, "{}");
    add(store, id, "assistant/message", 1, 1,
        "{\"text\":\"\",\"toolCalls\":[{\"id\":\"old\",\"name\":\"x\",\"arguments\":\"{}\"}]}");
    add(store, id, "tool/result", 1, 1, "{\"callId\":\"old\",\"isError\":false,\"content\":[]}");
    add(store, id, "turn/end", 1, 0, "{\"reason\":\"error\"}");
    add(store, id, "turn/start", 2, 0, "{}");
    add(store, id, "user/message", 2, 0, "{\"text\":\"go\"}");
    int n = -1;
    assert_int_equal(cdsh_session_store_repair(store, id, NULL, &n, NULL), 0);
    assert_int_equal(n, 2);
    char *types = types_of(id);
    assert_string_equal(types, "turn/start,assistant/message,tool/result,turn/end,turn/start,"
                               "user/message,notice,turn/end");
    free(types);
    json_t *evs = cdsh_session_store_events(store, id, 6, 10, NULL, NULL);
    assert_int_equal(jint(json_array_get(evs, 1), "turn"), 2);
    assert_string_equal(
        jstr(json_object_get(json_array_get(evs, 0), "payload"), "text"),
        "turn 2 was interrupted (cdsh stopped mid-turn); closed 0 unfinished tool calls");
    json_decref(evs);
    free(id);
}

static void tool_call_not_listed_by_the_assistant_counts_as_started(void **state)
{
    (void)state;
    char *id = new_session("direct");
    add(store, id, "turn/start", 1, 0, "{}");
    add(store, id, "tool/call", 1, 1, "{\"callId\":\"d1\",\"name\":\"x\",\"arguments\":\"{}\"}");
    add(store, id, "tool/call", 1, 1, "{\"callId\":\"d2\",\"name\":\"y\",\"arguments\":\"{}\"}");
    add(store, id, "tool/result", 1, 1, "{\"callId\":\"d2\",\"isError\":false,\"content\":[]}");
    int n = 0;
    assert_int_equal(cdsh_session_store_repair(store, id, NULL, &n, NULL), 0);
    assert_int_equal(n, 3);
    json_t *evs = cdsh_session_store_events(store, id, 4, 1, NULL, NULL);
    json_t *p = json_object_get(json_array_get(evs, 0), "payload");
    assert_string_equal(jstr(p, "callId"), "d1");
    assert_string_equal(jstr(p, "name"), "x");
    assert_string_equal(jstr(json_object_get(p, "error"), "code"), "TOOL_OUTCOME_UNKNOWN");
    assert_int_equal(jint(p, "sourceEventSeq"), 2);
    json_decref(evs);
    free(id);
}

static void repair_waits_for_the_lease_holder(void **state)
{
    (void)state;
    char *id = new_session("live");
    add(store, id, "turn/start", 1, 0, "{}");
    cdsh_session_lease *lease = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_session_store_lease(store, id, 0, NULL, &lease, &e), 0);
    char rel[96];
    snprintf(rel, sizeof rel, "sessions.locks/%s.lock", id);
    char *lock_path = cdsh_fs_path_join_dup(home, rel);
    assert_int_equal(access(lock_path, F_OK), 0);
    free(lock_path);
    /* A second holder (another thread or process) cannot take it. */
    cdsh_session_lease *second = NULL;
    assert_int_equal(cdsh_session_store_lease(store, id, 0, NULL, &second, &e), CDSH_ETIMEDOUT);
    assert_null(second);
    assert_string_equal(e.code, "LOCK_TIMEOUT");
    /* A waiter gives up when its cancellation token fires. */
    cdsh_cancel *cancel = cdsh_cancel_new(NULL);
    cdsh_cancel_fire(cancel, "user pressed stop");
    assert_int_equal(cdsh_session_store_lease(store, id, 5000, cancel, &second, &e),
                     CDSH_ECANCELED);
    assert_non_null(strstr(e.message, "user pressed stop"));
    cdsh_cancel_free(cancel);
    assert_int_equal(cdsh_session_store_repair(store, id, NULL, NULL, &e), CDSH_EBUSY);
    assert_string_equal(e.code, "SESSION_LIVE");
    cdsh_session_loaded l;
    assert_int_equal(cdsh_session_store_load(store, id, NULL, &l, &e), 0);
    assert_true(l.live);
    assert_int_equal(l.repaired, 0);
    assert_int_equal(jint(l.session, "openTurn"), 1);
    cdsh_session_loaded_deinit(&l);
    /* The holder itself may repair (it is resuming after its own restart). */
    int n = 0;
    assert_int_equal(cdsh_session_store_repair(store, id, lease, &n, &e), 0);
    assert_int_equal(n, 2);
    cdsh_session_lease_release(lease);
    assert_int_equal(cdsh_session_store_lease(store, id, 0, NULL, &second, &e), 0);
    cdsh_session_lease_release(second);
    free(id);
}

/* ---- fork ------------------------------------------------------------------ */

static void fork_copies_events_up_to_a_seq_with_a_parent_link(void **state)
{
    (void)state;
    char *id = new_session("base");
    add(store, id, "turn/start", 1, 0, "{}");
    add(store, id, "user/message", 1, 0, "{\"text\":\"one\"}");
    add(store, id, "assistant/message", 1, 1, "{\"text\":\"1\"}");
    add(store, id, "turn/end", 1, 0, "{\"reason\":\"done\"}");
    add(store, id, "turn/start", 2, 0, "{}");
    add(store, id, "user/message", 2, 0, "{\"text\":\"two\"}");
    add(store, id, "assistant/message", 2, 1, "{\"text\":\"2\"}");
    add(store, id, "turn/end", 2, 0, "{\"reason\":\"done\"}");
    char *f = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_session_store_fork(store, id, 4, "branch", &f, &e), 0);
    json_t *s = cdsh_session_store_info_dup(store, f, &e);
    assert_string_equal(jstr(s, "parentId"), id);
    assert_int_equal(jint(s, "forkSeq"), 4);
    assert_string_equal(jstr(s, "title"), "branch");
    assert_string_equal(jstr(s, "model"), "deepseek-chat");
    assert_int_equal(jint(s, "eventCount"), 4);
    json_decref(s);
    json_t *m = cdsh_session_store_messages(store, f, &e);
    assert_json(m, "[{\"role\":\"user\",\"content\":\"one\"},"
                   "{\"role\":\"assistant\",\"content\":\"1\"}]");
    json_decref(m);
    /* The fork continues on its own; the parent is untouched. */
    assert_int_equal(add(store, f, "user/message", 2, 0, "{\"text\":\"other\"}"), 5);
    s = cdsh_session_store_info_dup(store, id, &e);
    assert_int_equal(jint(s, "eventCount"), 8);
    json_decref(s);
    /* Deleting the parent keeps the fork, now without a parent. */
    assert_int_equal(cdsh_session_store_delete(store, id, &e), 0);
    s = cdsh_session_store_info_dup(store, f, &e);
    assert_true(json_is_null(json_object_get(s, "parentId")));
    assert_int_equal(jint(s, "eventCount"), 5);
    json_decref(s);
    free(f);
    free(id);
}

static void fork_inside_a_turn_closes_the_copied_turn(void **state)
{
    (void)state;
    char *id = new_session("mid");
    add(store, id, "turn/start", 1, 0, "{}");
    add(store, id, "user/message", 1, 0, "{\"text\":\"go\"}");
    add(store, id, "assistant/message", 1, 1,
        "{\"text\":\"\",\"toolCalls\":[{\"id\":\"c\",\"name\":\"x\",\"arguments\":\"{}\"}]}");
    add(store, id, "tool/call", 1, 1, "{\"callId\":\"c\",\"name\":\"x\",\"arguments\":\"{}\"}");
    add(store, id, "tool/result", 1, 1, "{\"callId\":\"c\",\"isError\":false,\"content\":[]}");
    add(store, id, "turn/end", 1, 0, "{\"reason\":\"done\"}");
    char *f = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_session_store_fork(store, id, 3, NULL, &f, &e), 0);
    char *types = types_of(f);
    assert_string_equal(types, "turn/start,user/message,assistant/message,tool/result,notice,"
                               "turn/end");
    free(types);
    json_t *s = cdsh_session_store_info_dup(store, f, &e);
    assert_string_equal(jstr(s, "title"), "mid (fork)");
    assert_true(json_is_null(json_object_get(s, "openTurn")));
    json_decref(s);
    json_t *evs = cdsh_session_store_events(store, f, 3, 1, NULL, NULL);
    assert_string_equal(
        jstr(json_object_get(json_object_get(json_array_get(evs, 0), "payload"), "error"), "code"),
        "TOOL_NOT_STARTED");
    json_decref(evs);
    free(f);
    free(id);
}

static void fork_refuses_a_seq_past_the_end(void **state)
{
    (void)state;
    char *id = new_session("short");
    add(store, id, "user/message", 0, 0, "{\"text\":\"x\"}");
    char *f = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_session_store_fork(store, id, 9, NULL, &f, &e), CDSH_EINVAL);
    assert_null(f);
    assert_string_equal(e.code, "BAD_EVENT");
    char want[200];
    snprintf(want, sizeof want, "session %s has no event with seq 9 (its last is 1)", id);
    assert_string_equal(e.message, want);
    int64_t total = 0;
    json_decref(cdsh_session_store_list(store, 0, 10, &total, NULL));
    assert_int_equal(total, 1);
    assert_int_equal(cdsh_session_store_fork(store, "s-none", 0, NULL, &f, &e), CDSH_ENOTFOUND);
    free(id);
}

/* ---- corrupt payloads --------------------------------------------------------- */

static void corrupt_payload_is_reported_and_kept(void **state)
{
    (void)state;
    char *id = new_session("corrupt");
    add(store, id, "turn/start", 1, 0, "{}");
    add(store, id, "user/message", 1, 0, "{\"text\":\"fine\"}");
    add(store, id, "user/message", 1, 0, "{\"text\":\"soon broken\"}");
    char *path = db_path();
    char sql[256];
    snprintf(sql, sizeof sql,
             "UPDATE events SET payload = '{\"text\": tru' WHERE session_id = '%s' AND seq = 3",
             id);
    sql_exec(path, sql);
    free(path);
    cdsh_error e = {0};
    /* Reading shows the event with its raw text and the parser's complaint. */
    json_t *evs = cdsh_session_store_events(store, id, 0, 10, NULL, &e);
    assert_non_null(evs);
    json_t *bad = json_array_get(evs, 2);
    assert_true(json_is_null(json_object_get(bad, "payload")));
    assert_string_equal(jstr(bad, "payloadRaw"), "{\"text\": tru");
    assert_non_null(strstr(jstr(bad, "payloadError"), "invalid JSON at line 1"));
    json_decref(evs);
    /* Replay refuses with a clear error naming the event. */
    char want[80];
    snprintf(want, sizeof want, "session %s event 3: stored payload is unreadable", id);
    assert_null(cdsh_session_store_messages(store, id, &e));
    assert_int_equal(e.rc, CDSH_EPROTO);
    assert_string_equal(e.code, "CORRUPT_EVENT");
    assert_true(strncmp(e.message, want, strlen(want)) == 0);
    /* So do repair and load (the corrupt event is in the open turn)... */
    cdsh_session_loaded l;
    memset(&e, 0, sizeof e);
    assert_int_equal(cdsh_session_store_load(store, id, NULL, &l, &e), CDSH_EPROTO);
    assert_string_equal(e.code, "CORRUPT_EVENT");
    assert_null(l.session);
    assert_int_equal(cdsh_session_store_load(store, id, NULL, &l, NULL), CDSH_EPROTO);
    /* ...and a fork whose copied turn cannot be closed, which leaves no half-made fork. */
    char *f = NULL;
    assert_int_equal(cdsh_session_store_fork(store, id, 0, NULL, &f, &e), CDSH_EPROTO);
    assert_null(f);
    int64_t total = 0;
    json_decref(cdsh_session_store_list(store, 0, 10, &total, NULL));
    assert_int_equal(total, 1);
    /* Nothing was lost or dropped, and the log still takes events. */
    assert_int_equal(add(store, id, "notice", 0, 0, "{\"level\":\"info\",\"text\":\"after\"}"), 4);
    assert_int_equal(sql_int("SELECT count(*) FROM events"), 4);
    free(id);
}

/* ---- concurrency ------------------------------------------------------------- */

typedef struct writer_arg {
    char *id;
    int failures;
} writer_arg;

#define THREAD_EVENTS 40

static void *thread_writer(void *p)
{
    writer_arg *a = p;
    json_t *payload = json_pack("{s:s}", "text", a->id);
    for (int i = 0; i < THREAD_EVENTS; i++) {
        int64_t seq = 0;
        if (cdsh_session_store_append(store, a->id, "user/message", 1, 0, payload, &seq, NULL) ||
            seq != i + 1)
            a->failures++;
        json_t *list = cdsh_session_store_list(store, 0, 5, NULL, NULL);
        if (!list)
            a->failures++;
        json_decref(list);
    }
    json_decref(payload);
    return NULL;
}

static void threads_append_to_different_sessions(void **state)
{
    (void)state;
    writer_arg args[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (writer_arg){.id = new_session("thread")};
        assert_int_equal(pthread_create(&th[i], NULL, thread_writer, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].failures, 0);
        json_t *s = cdsh_session_store_info_dup(store, args[i].id, NULL);
        assert_int_equal(jint(s, "eventCount"), THREAD_EVENTS);
        assert_int_equal(jint(s, "lastSeq"), THREAD_EVENTS);
        json_decref(s);
        free(args[i].id);
    }
}

#define PROC_EVENTS 60

static void two_processes_append_to_the_same_session(void **state)
{
    (void)state;
    char *id = new_session("shared");
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        kids[k] = fork();
        assert_true(kids[k] >= 0);
        if (kids[k] == 0) {
            cdsh_session_store *s = NULL;
            if (cdsh_session_store_open(cdsh_test_home(), NULL, &s, NULL))
                _exit(3);
            json_t *p = json_pack("{s:s, s:i}", "level", "info", "writer", k);
            json_object_set_new(p, "text", json_string(k ? "B" : "A"));
            for (int i = 0; i < PROC_EVENTS; i++)
                if (cdsh_session_store_append(s, id, "notice", 0, 0, p, NULL, NULL))
                    _exit(4);
            json_decref(p);
            cdsh_session_store_close(s);
            _exit(0);
        }
    }
    for (int k = 0; k < 2; k++) {
        int status = 0;
        assert_int_equal(waitpid(kids[k], &status, 0), kids[k]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    json_t *evs = cdsh_session_store_events(store, id, 0, 10000, NULL, NULL);
    assert_int_equal(json_array_size(evs), 2 * PROC_EVENTS);
    int per[2] = {0, 0};
    size_t i;
    json_t *ev;
    json_array_foreach(evs, i, ev) {
        assert_int_equal(jint(ev, "seq"), (int64_t)i + 1); /* contiguous, no duplicates */
        per[jint(json_object_get(ev, "payload"), "writer")]++;
    }
    assert_int_equal(per[0], PROC_EVENTS);
    assert_int_equal(per[1], PROC_EVENTS);
    json_decref(evs);
    free(id);
}

static void processes_opening_a_fresh_file_at_once_migrate_it_once(void **state)
{
    (void)state;
    for (int round = 0; round < 5; round++) {
        char name[32];
        snprintf(name, sizeof name, "fresh-%d.db", round);
        char *path = cdsh_fs_path_join_dup(home, name);
        pid_t kids[3];
        for (int k = 0; k < 3; k++) {
            kids[k] = fork();
            assert_true(kids[k] >= 0);
            if (kids[k] == 0) {
                cdsh_session_store *s = NULL;
                char *id = NULL;
                cdsh_error e = {0};
                if (cdsh_session_store_open(cdsh_test_home(), path, &s, &e)) {
                    fprintf(stderr, "child open: %s\n", e.message);
                    _exit(3);
                }
                if (cdsh_session_store_create(s, NULL, &id, &e))
                    _exit(4);
                cdsh_session_store_close(s);
                _exit(0);
            }
        }
        for (int k = 0; k < 3; k++) {
            int status = 0;
            assert_int_equal(waitpid(kids[k], &status, 0), kids[k]);
            assert_true(WIFEXITED(status));
            assert_int_equal(WEXITSTATUS(status), 0);
        }
        cdsh_session_store *s = NULL;
        assert_int_equal(cdsh_session_store_open(cdsh_test_home(), path, &s, NULL), 0);
        int64_t total = 0;
        json_decref(cdsh_session_store_list(s, 0, 10, &total, NULL));
        assert_int_equal(total, 3);
        cdsh_session_store_close(s);
        free(path);
    }
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)


/* ---- lock files ----------------------------------------------------------------- */

static char *lock_path(const char *id)
{
    char rel[128];
    snprintf(rel, sizeof rel, "sessions.locks/%s.lock", id);
    return cdsh_fs_path_join_dup(home, rel);
}

static void delete_removes_the_lock_file(void **state)
{
    (void)state;
    char *id = new_session("t");
    cdsh_session_lease *l = NULL;
    cdsh_error err;
    assert_int_equal(cdsh_session_store_lease(store, id, 0, NULL, &l, &err), 0);
    cdsh_session_lease_release(l);
    char *p = lock_path(id);
    assert_int_equal(access(p, F_OK), 0);
    assert_int_equal(cdsh_session_store_delete(store, id, &err), 0);
    assert_int_equal(access(p, F_OK), -1);
    free(p);
    free(id);
}

/* Deleted while a turn holds the lease (another process's delete, say):
 * the lock file stays while held and goes with the lease. */
static void a_lease_on_a_deleted_session_removes_its_lock_file(void **state)
{
    (void)state;
    char *id = new_session("t");
    cdsh_session_lease *l = NULL;
    cdsh_error err;
    assert_int_equal(cdsh_session_store_lease(store, id, 0, NULL, &l, &err), 0);
    assert_int_equal(cdsh_session_store_delete(store, id, &err), 0);
    char *p = lock_path(id);
    assert_int_equal(access(p, F_OK), 0);
    cdsh_session_lease_release(l);
    assert_int_equal(access(p, F_OK), -1);
    free(p);
    free(id);
}

/* Lock files of sessions that are gone (a crash, an older cdsh) are swept
 * when a store opens; a live session's lock file stays. */
static void stray_lock_files_are_swept_at_open(void **state)
{
    (void)state;
    char *id = new_session("t");
    cdsh_session_lease *l = NULL;
    cdsh_error err;
    assert_int_equal(cdsh_session_store_lease(store, id, 0, NULL, &l, &err), 0);
    cdsh_session_lease_release(l);
    char *keep = lock_path(id);
    char *stray[20];
    for (int i = 0; i < 20; i++) {
        char sid[32];
        snprintf(sid, sizeof sid, "s-gone%02d", i);
        stray[i] = lock_path(sid);
        cdsh_test_write_file(stray[i], "");
    }
    char *other = cdsh_fs_path_join_dup(home, "sessions.locks/README");
    cdsh_test_write_file(other, "not a lock file");
    cdsh_session_store *again = NULL;
    assert_int_equal(cdsh_session_store_open(cdsh_test_home(), NULL, &again, &err), 0);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(access(stray[i], F_OK), -1);
        free(stray[i]);
    }
    assert_int_equal(access(keep, F_OK), 0);
    assert_int_equal(access(other, F_OK), 0);
    cdsh_session_store_close(again);
    free(keep);
    free(other);
    free(id);
}

/* A thousand sessions created, leased and deleted leave no lock file behind
 * (issue 23 counted 1 659 left over). */
static void many_deleted_sessions_leave_no_lock_files(void **state)
{
    (void)state;
    cdsh_error err;
    for (int i = 0; i < 1000; i++) {
        char *id = new_session("t");
        cdsh_session_lease *l = NULL;
        assert_int_equal(cdsh_session_store_lease(store, id, 0, NULL, &l, &err), 0);
        cdsh_session_lease_release(l);
        assert_int_equal(cdsh_session_store_delete(store, id, &err), 0);
        free(id);
    }
    char *dir = cdsh_fs_path_join_dup(home, "sessions.locks");
    char **names = NULL;
    size_t n = 99;
    assert_int_equal(cdsh_fs_list_dir(dir, &names, &n, &err), 0);
    assert_int_equal(n, 0);
    cdsh_fs_list_free(names);
    free(dir);
}

int main(void)
{
    umask(022); /* what lets SQLite alone create 0644 files */
    const struct CMUnitTest tests[] = {
        T(open_creates_wal_database_with_current_schema),
        T(the_database_and_its_wal_files_are_private),
        T(sessions_survive_reopening_the_store),
        T(migrates_a_version_1_file),
        T(refuses_a_file_from_a_newer_cdsh),
        T(create_and_get_report_every_field),
        T(unknown_and_malformed_ids_are_refused),
        T(create_refuses_non_object_metadata),
        T(list_is_newest_first_with_counts_and_total),
        T(list_pages_with_offset_and_limit),
        T(delete_removes_the_session_and_its_events),
        T(rename_changes_the_title_only),
        T(append_numbers_events_per_session_and_touches_updated_at),
        T(append_to_a_missing_session_fails),
        T(append_checks_types_and_payload_fields),
        T(append_refuses_payloads_that_are_not_lossless),
        T(events_page_with_after_seq_and_has_more),
        T(turn_rules_keep_turns_balanced),
        T(replay_rebuilds_a_multi_step_tool_conversation),
        T(replay_ignores_commands_notices_and_orphan_results),
        T(replay_joins_text_blocks_and_names_other_blocks),
        T(replay_puts_a_message_typed_while_tools_ran_after_their_results),
        T(append_reply_replays_as_the_clients_own_message),
        T(append_reply_keeps_a_reply_with_invalid_utf8),
        T(crash_mid_turn_is_repaired_on_load),
        T(repair_is_idempotent),
        T(balanced_log_needs_no_repair),
        T(open_turn_without_calls_gets_only_notice_and_turn_end),
        T(tool_call_not_listed_by_the_assistant_counts_as_started),
        T(repair_waits_for_the_lease_holder),
        T(fork_copies_events_up_to_a_seq_with_a_parent_link),
        T(fork_inside_a_turn_closes_the_copied_turn),
        T(fork_refuses_a_seq_past_the_end),
        T(corrupt_payload_is_reported_and_kept),
        T(threads_append_to_different_sessions),
        T(two_processes_append_to_the_same_session),
        T(processes_opening_a_fresh_file_at_once_migrate_it_once),
        T(delete_removes_the_lock_file),
        T(a_lease_on_a_deleted_session_removes_its_lock_file),
        T(stray_lock_files_are_swept_at_open),
        T(many_deleted_sessions_leave_no_lock_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
