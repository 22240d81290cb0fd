/* test_tavern_story_crash.c — SIGKILL at random points during floor writes,
 * undo and branch publication (peer tavern_crash), then every story must
 * open and be either before or after each interrupted operation: the write
 * log and the bodies agree, no undo is left half done, published branches
 * carry no floor they were meant to undo, the source is never rolled back.
 * CDSH_TAVERN_CRASH_KILLS sets the number of kills (default 100). */
#include "support/testkit.h"

#include "support/tavern_world.h"

#include <dirent.h>
#include <sqlite3.h>
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

/* Write log and bodies agree: a key's value is the after of its newest live
 * record, or the before of its oldest record when all its floors were undone. */
static void check_log_matches_bodies(sqlite3 *db, const char *story)
{
    sqlite3_stmt *st = NULL;
    const char *sql =
        "SELECT l.kind, l.key,"
        " (SELECT l2.after FROM log l2 JOIN floors f2 ON f2.name=l2.floor"
        "   WHERE l2.kind=l.kind AND l2.key=l.key AND f2.rolled_back_at IS NULL"
        "   ORDER BY f2.pos DESC, l2.seq DESC LIMIT 1),"
        " (SELECT COUNT(*) FROM log l2 JOIN floors f2 ON f2.name=l2.floor"
        "   WHERE l2.kind=l.kind AND l2.key=l.key AND f2.rolled_back_at IS NULL),"
        " (SELECT l2.before FROM log l2 JOIN floors f2 ON f2.name=l2.floor"
        "   WHERE l2.kind=l.kind AND l2.key=l.key ORDER BY f2.pos ASC, l2.seq ASC LIMIT 1),"
        " (SELECT value FROM objects o WHERE o.kind=l.kind AND o.key=l.key)"
        " FROM log l GROUP BY l.kind, l.key";
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 1);
        const char *want = sqlite3_column_int64(st, 3) > 0
                               ? (const char *)sqlite3_column_text(st, 2)
                               : (const char *)sqlite3_column_text(st, 4);
        const char *have = (const char *)sqlite3_column_text(st, 5);
        if ((want == NULL) != (have == NULL) || (want && strcmp(want, have) != 0))
            fail_msg("story %s key %s: log says %s, body is %s", story, key,
                     want ? want : "(absent)", have ? have : "(absent)");
    }
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
    int kills = 100;
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
