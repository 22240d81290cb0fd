/* test_tavern_story_crash.c — SIGKILL at random points during floor writes,
 * undo and branch publication (peer tavern_crash), then every story must
 * open and be either before or after each interrupted operation: the write
 * log and the bodies agree, no undo is left half done, published branches
 * carry no floor they were meant to undo, the source is never rolled back.
 * CDSH_TAVERN_CRASH_KILLS sets the number of kills (default 300). */
#include "support/testkit.h"

#include "support/tavern_world.h"

#include <dirent.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/random.h"
#include "plugins/tavern/binding.h"
#include "plugins/tavern/store.h"

static void bind(cdsh_tavern_bindings *b, const char *card, const char *session)
{
    cdsh_error err = {0};
    json_t *spec = json_pack("{s:s,s:s}", "sessionId", session, "cardId", card);
    assert_int_equal(cdsh_tavern_binding_set(b, spec, NULL, &err), 0);
    json_decref(spec);
}

static int64_t scalar(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return v;
}

static char *col_dup(sqlite3_stmt *st, int i)
{
    const char *t = (const char *)sqlite3_column_text(st, i);
    return t ? strdup(t) : NULL;
}

/* One (kind, key) of the log once its records were read: the value its body
 * must have. */
static void check_key(sqlite3_stmt *body, const char *story, const char *kind, const char *key,
                      const char *oldest_before, const char *newest_live_after, bool any_live)
{
    sqlite3_reset(body);
    sqlite3_bind_text(body, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(body, 2, key, -1, SQLITE_STATIC);
    const char *have =
        sqlite3_step(body) == SQLITE_ROW ? (const char *)sqlite3_column_text(body, 0) : NULL;
    const char *want = any_live ? newest_live_after : oldest_before;
    if ((want == NULL) != (have == NULL) || (want && strcmp(want, have) != 0))
        fail_msg("story %s key %s: log says %s, body is %s", story, key, want ? want : "(absent)",
                 have ? have : "(absent)");
}

/* Write log and bodies agree: a key's value is the after of its newest live
 * record, or the before of its oldest record when all its floors were undone.
 * One ordered pass over the log (the test verifies after every kill, so a
 * query per key would make the whole run cubic in the number of kills). */
static void check_log_matches_bodies(sqlite3 *db, const char *story)
{
    sqlite3_stmt *st = NULL, *body = NULL;
    const char *sql = "SELECT l.kind, l.key, l.before, l.after, f.rolled_back_at IS NULL"
                      " FROM log l JOIN floors f ON f.name=l.floor"
                      " ORDER BY l.kind, l.key, f.pos, l.seq";
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT value FROM objects WHERE kind=?1 AND key=?2",
                                        -1, &body, NULL),
                     SQLITE_OK);
    char *kind = NULL, *key = NULL, *oldest_before = NULL, *newest_live_after = NULL;
    bool any_live = false;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(st, 0);
        const char *y = (const char *)sqlite3_column_text(st, 1);
        if (!kind || strcmp(kind, k) != 0 || strcmp(key, y) != 0) {
            if (kind)
                check_key(body, story, kind, key, oldest_before, newest_live_after, any_live);
            free(kind), free(key), free(oldest_before), free(newest_live_after);
            kind = strdup(k), key = strdup(y);
            oldest_before = col_dup(st, 2);
            newest_live_after = NULL;
            any_live = false;
        }
        if (sqlite3_column_int(st, 4)) {
            free(newest_live_after);
            newest_live_after = col_dup(st, 3);
            any_live = true;
        }
    }
    if (kind)
        check_key(body, story, kind, key, oldest_before, newest_live_after, any_live);
    free(kind), free(key), free(oldest_before), free(newest_live_after);
    sqlite3_finalize(body);
    sqlite3_finalize(st);
}

static void verify(const char *home, cdsh_tavern_bindings *b)
{
    char *dir = NULL;
    assert_true(asprintf(&dir, "%s/tavern/stories", home) > 0);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 4 || strcmp(e->d_name + len - 3, ".db") != 0)
            continue;
        char *path = NULL;
        assert_true(asprintf(&path, "%s/%s", dir, e->d_name) > 0);
        cdsh_tavern_story *s = NULL;
        cdsh_error err = {0};
        if (cdsh_tavern_story_open(path, &s, &err) < 0)
            fail_msg("story %s does not open: %s %s", e->d_name, err.code, err.message);
        char *owner = strdup(cdsh_tavern_story_session_get(s));
        char *id = strdup(cdsh_tavern_story_id_get(s));
        cdsh_tavern_story_free(s);
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        sqlite3_busy_timeout(db, 5000);
        assert_int_equal(scalar(db, "SELECT COUNT(*) FROM undo"), 0);
        check_log_matches_bodies(db, e->d_name);
        json_t *binding = NULL;
        bool bound = cdsh_tavern_binding_get(b, owner, &binding, NULL) == 0 &&
                     strcmp(json_string_value(json_object_get(binding, "storyId")), id) == 0;
        if (bound && strcmp(owner, "s-p") == 0)
            assert_int_equal(scalar(db, "SELECT COUNT(*) FROM floors WHERE rolled_back_at IS NOT "
                                        "NULL"),
                             0);
        if (strncmp(owner, "s-c", 3) == 0 || strcmp(owner, id) == 0)
            /* a branch: published only after its undo finished */
            assert_int_equal(scalar(db, "SELECT COUNT(*) FROM floors WHERE session='s-p' AND "
                                        "turn>=2 AND rolled_back_at IS NULL"),
                             0);
        if (!bound)
            assert_true(strcmp(owner, id) == 0 || strncmp(owner, "s-c", 3) == 0);
        json_decref(binding);
        sqlite3_close(db);
        free(owner);
        free(id);
        free(path);
    }
    closedir(d);
    free(dir);
}

static void killed_operations_leave_every_story_before_or_after(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    cdsh_tavern_store *store = NULL;
    cdsh_tavern_bindings *b = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_store_open(NULL, &store, &err), 0);
    char *card = cdsh_test_tavern_import_sample(store);
    assert_int_equal(cdsh_tavern_bindings_open(store, &b, &err), 0);
    bind(b, card, "s-p");
    bind(b, card, "s-u");
    free(card);
    int kills = 300;
    const char *env = getenv("CDSH_TAVERN_CRASH_KILLS");
    if (env && atoi(env) > 0)
        kills = atoi(env);
    char *peer = cdsh_test_peer_path_dup("tavern_crash");
    char *argv[] = {peer, NULL};
    int killed = 0;
    for (int i = 0; i < kills; i++) {
        unsigned char r = 0;
        cdsh_random_bytes(&r, 1);
        int status = cdsh_test_run(argv, NULL, NULL, NULL, 20 + r % 120);
        if (status != 128 + 9)
            fail_msg("peer ended with status %d instead of being killed", status);
        killed++;
        verify(home, b);
    }
    assert_int_equal(killed, kills);
    /* the stories grew: the peer really made progress between kills */
    cdsh_tavern_story *s = NULL;
    assert_int_equal(cdsh_tavern_binding_open_story(b, "s-p", &s, &err), 0);
    json_t *floors = NULL;
    assert_int_equal(cdsh_tavern_story_floors(s, &floors, &err), 0);
    assert_true(json_array_size(floors) >= 5);
    json_decref(floors);
    cdsh_tavern_story_free(s);
    free(peer);
    cdsh_tavern_bindings_free(b);
    cdsh_tavern_store_free(store);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(killed_operations_leave_every_story_before_or_after),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
