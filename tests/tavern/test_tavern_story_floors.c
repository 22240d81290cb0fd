/* test_tavern_story_floors.c — the story database's floors, write log and
 * undo (liketavern §16 transactionRecovery, WAL integrity, floorConcurrency
 * at the story level): manual edits survive, faults leave bodies intact,
 * corrupt logs and forged cursors are refused before anything changes, an
 * interrupted undo resumes on open. */
#include "support/testkit.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/tavern/memory.h"
#include "plugins/tavern/story.h"
#include "plugins/tavern/worldstate.h"

typedef struct fx {
    char *home;
    char *path;
    cdsh_tavern_story *s;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    assert_true(asprintf(&f->path, "%s/story.db", f->home) > 0);
    cdsh_error err = {0};
    json_t *docs = json_pack("{s:s}", "journal.md", "start");
    assert_int_equal(cdsh_tavern_story_create(f->path, "story-a", "card-1", "s-A", docs, &err), 0);
    json_decref(docs);
    assert_int_equal(cdsh_tavern_story_open(f->path, &f->s, &err), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cdsh__tavern_fault_set(NULL);
    cdsh_tavern_story_free(f->s);
    cdsh_test_home_free(f->home);
    free(f->path);
    free(f);
    return 0;
}

static void put_str(cdsh_tavern_story *s, const char *floor, const char *key, const char *v)
{
    cdsh_error err = {0};
    json_t *j = v ? json_string(v) : NULL;
    assert_int_equal(cdsh_tavern_story_put(s, floor, CDSH_TAVERN_KIND_DOC, key, j, NULL, &err), 0);
    json_decref(j);
}

static char *get_str(cdsh_tavern_story *s, const char *key)
{
    json_t *v = NULL;
    if (cdsh_tavern_story_load(s, CDSH_TAVERN_KIND_DOC, key, &v, NULL) < 0)
        return NULL;
    char *out = strdup(json_string_value(v));
    json_decref(v);
    return out;
}

static void assert_doc(cdsh_tavern_story *s, const char *key, const char *want)
{
    char *got = get_str(s, key);
    if (!want) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void raw_sql(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static void undo_one(cdsh_tavern_story *s, const char *floor, int want_rc, const char *code)
{
    cdsh_error err = {0};
    const char *names[] = {floor};
    int rc = cdsh_tavern_story_undo(s, names, 1, NULL, &err);
    assert_int_equal(rc, want_rc);
    if (code)
        assert_string_equal(err.code, code);
}

static void writes_outside_an_open_floor_are_refused(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    json_t *v = json_string("x");
    assert_int_equal(cdsh_tavern_story_put(f->s, "s-A#t1", "doc", "k", v, NULL, &err), CDSH_EPERM);
    assert_string_equal(err.code, "FLOOR_NOT_OPEN");
    assert_int_equal(cdsh_tavern_story_floor_begin(f->s, "s-A", 1, &err), 0);
    assert_int_equal(cdsh_tavern_story_floor_begin(f->s, "s-A", 1, &err), CDSH_EEXIST);
    assert_string_equal(err.code, "FLOOR_EXISTS");
    assert_int_equal(cdsh_tavern_story_floor_commit(f->s, "s-A#t1", &err), 0);
    assert_int_equal(cdsh_tavern_story_put(f->s, "s-A#t1", "doc", "k", v, NULL, &err), CDSH_EPERM);
    assert_string_equal(err.code, "FLOOR_NOT_OPEN");
    /* a host reusing a completed turn number is refused */
    assert_int_equal(cdsh_tavern_story_floor_begin(f->s, "s-A", 1, &err), CDSH_EEXIST);
    assert_string_equal(err.code, "FLOOR_COMMITTED");
    json_decref(v);
}

static void undo_restores_model_writes_and_keeps_manual_edits(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_story_floor_begin(f->s, "s-A", 1, &err), 0);
    put_str(f->s, "s-A#t1", "journal.md", "model one");
    put_str(f->s, NULL, "notes", "manual between"); /* manual, unlogged */
    put_str(f->s, "s-A#t1", "fact-a", "model A");
    put_str(f->s, NULL, "fact-a", "manual edit of A"); /* edited after the model */
    put_str(f->s, "s-A#t1", "fact-b", "model B");
    put_str(f->s, NULL, "fact-b", NULL); /* manual delete */
    put_str(f->s, "s-A#t1", "fact-c", "model C");
    assert_int_equal(cdsh_tavern_story_floor_commit(f->s, "s-A#t1", &err), 0);
    json_t *pres = NULL;
    const char *names[] = {"s-A#t1"};
    assert_int_equal(cdsh_tavern_story_undo(f->s, names, 1, &pres, &err), 0);
    assert_doc(f->s, "journal.md", "start");
    assert_doc(f->s, "notes", "manual between");
    assert_doc(f->s, "fact-a", "manual edit of A");
    assert_doc(f->s, "fact-b", NULL); /* not resurrected */
    assert_doc(f->s, "fact-c", NULL);
    assert_int_equal(json_array_size(pres), 2);
    assert_string_equal(json_string_value(json_array_get(pres, 0)), "doc:fact-b");
    assert_string_equal(json_string_value(json_array_get(pres, 1)), "doc:fact-a");
    json_decref(pres);
    /* the turn number is free again after a rollback */
    assert_int_equal(cdsh_tavern_story_floor_begin(f->s, "s-A", 1, &err), 0);
}

static void model_then_manual_then_model_undoes_to_the_manual_value(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_story_floor_begin(f->s, "s-A", 1, &err), 0);
    put_str(f->s, "s-A#t1", "delta", "A");
    put_str(f->s, NULL, "delta", "B");
    put_str(f->s, "s-A#t1", "delta", "C");
    undo_one(f->s, "s-A#t1", 0, NULL);
    assert_doc(f->s, "delta", "B");
}

static void fault_after_log_leaves_body_and_log_usable(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_story_floor_begin(f->s, "s-A", 1, &err), 0);
    put_str(f->s, "s-A#t1", "journal.md", "one");
    cdsh__tavern_fault_set("after-log");
    json_t *v = json_string("two");
    assert_int_equal(cdsh_tavern_story_put(f->s, "s-A#t1", "doc", "journal.md", v, NULL, &err),
                     CDSH_EIO);
    assert_string_equal(err.code, "FAULT_INJECTED");
    assert_doc(f->s, "journal.md", "one");
    cdsh__tavern_fault_set("after-body");
    assert_int_equal(cdsh_tavern_story_put(f->s, "s-A#t1", "doc", "journal.md", v, NULL, &err),
                     CDSH_EIO);
    assert_doc(f->s, "journal.md", "one");
    json_decref(v);
    json_t *floors = NULL;
    assert_int_equal(cdsh_tavern_story_floors(f->s, &floors, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(floors, 0), "records")), 1);
    json_decref(floors);
    assert_int_equal(cdsh_tavern_story_floor_commit(f->s, "s-A#t1", &err), 0);
    undo_one(f->s, "s-A#t1", 0, NULL);
    assert_doc(f->s, "journal.md", "start");
}

static void corrupt_record_is_refused_before_any_change(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_story_floor_begin(f->s, "s-A", 1, &err), 0);
    put_str(f->s, "s-A#t1", "a", "1");
    put_str(f->s, "s-A#t1", "b", "2");
    assert_int_equal(cdsh_tavern_story_floor_begin(f->s, "s-A", 2, &err), 0);
    put_str(f->s, "s-A#t2", "c", "3");
    /* corrupt the OLDER floor: the newer one must not be undone either */
    raw_sql(f->path, "UPDATE log SET after='\"forged\"' WHERE floor='s-A#t1' AND seq=1");
    const char *names[] = {"s-A#t1", "s-A#t2"};
    assert_int_equal(cdsh_tavern_story_undo(f->s, names, 2, NULL, &err), CDSH_EPROTO);
    assert_string_equal(err.code, "WAL_CORRUPT");
    assert_doc(f->s, "c", "3");
    assert_doc(f->s, "b", "2");
    /* a gap in the sequence is corrupt too */
    raw_sql(f->path, "DELETE FROM log WHERE floor='s-A#t2'; UPDATE log SET seq=5 WHERE seq=2");
    undo_one(f->s, "s-A#t1", CDSH_EPROTO, "WAL_CORRUPT");
    /* commit validates as well */
    assert_int_equal(cdsh_tavern_story_floor_commit(f->s, "s-A#t1", &err), CDSH_EPROTO);
}

static void forged_cursor_is_refused(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_story_floor_begin(f->s, "s-A", 1, &err), 0);
    put_str(f->s, "s-A#t1", "a", "1");
    put_str(f->s, "s-A#t1", "b", "2");
    raw_sql(f->path, "INSERT INTO undo(floor,batch_pos,hash,next) VALUES('s-A#t1',1,'00',1)");
    undo_one(f->s, "s-A#t1", CDSH_EPROTO, "WAL_CORRUPT");
    assert_doc(f->s, "a", "1");
    /* the cursor blocks further writes to the floor */
    json_t *v = json_string("x");
    assert_int_equal(cdsh_tavern_story_put(f->s, "s-A#t1", "doc", "a", v, NULL, &err), CDSH_EPERM);
    json_decref(v);
    /* a cursor with the right hash but next out of range is refused too */
    raw_sql(f->path, "UPDATE undo SET next=7");
    undo_one(f->s, "s-A#t1", CDSH_EPROTO, "WAL_CORRUPT");
    /* and the story cannot be opened while its cursor is forged */
    cdsh_tavern_story *again = NULL;
    assert_int_equal(cdsh_tavern_story_open(f->path, &again, &err), CDSH_EPROTO);
    assert_null(again);
}

static void interrupted_undo_resumes_on_open(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_story_floor_begin(f->s, "s-A", 1, &err), 0);
    put_str(f->s, "s-A#t1", "a", "1");
    put_str(f->s, "s-A#t1", "b", "2");
    put_str(f->s, "s-A#t1", "a", "3");
    cdsh__tavern_fault_set("undo-step");
    /* first step (a: 3 -> 1) fails before commit: nothing changed yet */
    undo_one(f->s, "s-A#t1", CDSH_EIO, "FAULT_INJECTED");
    assert_doc(f->s, "a", "3");
    cdsh_tavern_story_free(f->s);
    f->s = NULL;
    assert_int_equal(cdsh_tavern_story_open(f->path, &f->s, &err), 0);
    assert_doc(f->s, "a", NULL);
    assert_doc(f->s, "b", NULL);
    json_t *floors = NULL;
    assert_int_equal(cdsh_tavern_story_floors(f->s, &floors, &err), 0);
    assert_true(json_is_true(json_object_get(json_array_get(floors, 0), "rolledBack")));
    json_decref(floors);
}

static void successor_dependency_requires_newest_first(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_story_floor_begin(f->s, "s-A", 1, &err), 0);
    put_str(f->s, "s-A#t1", "x", "one");
    assert_int_equal(cdsh_tavern_story_floor_commit(f->s, "s-A#t1", &err), 0);
    assert_int_equal(cdsh_tavern_story_floor_begin(f->s, "s-B", 1, &err), 0);
    put_str(f->s, "s-B#t1", "x", "two");
    undo_one(f->s, "s-A#t1", CDSH_EBUSY, "FLOOR_SUCCESSOR");
    assert_doc(f->s, "x", "two");
    const char *both[] = {"s-A#t1", "s-B#t1"};
    assert_int_equal(cdsh_tavern_story_undo(f->s, both, 2, NULL, &err), 0);
    assert_doc(f->s, "x", NULL);
}

static void two_sessions_interleaving_keep_separate_records(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    cdsh_tavern_story *other = NULL;
    assert_int_equal(cdsh_tavern_story_open(f->path, &other, &err), 0);
    assert_int_equal(cdsh_tavern_story_floor_begin(f->s, "s-A", 1, &err), 0);
    assert_int_equal(cdsh_tavern_story_floor_begin(other, "s-B", 1, &err), 0);
    json_t *d1 = NULL, *d2 = NULL;
    assert_int_equal(
        cdsh_tavern_world_add(f->s, "s-A#t1", "add", "rain", NULL, NULL, -1, NULL, "t1", &d1, &err),
        0);
    assert_int_equal(cdsh_tavern_world_add(other, "s-B#t1", "add", "snow", NULL, NULL, -1, NULL,
                                           "t1", &d2, &err),
                     0);
    assert_int_equal(cdsh_tavern_story_floor_commit(other, "s-B#t1", &err), 0);
    assert_int_equal(cdsh_tavern_story_floor_commit(f->s, "s-A#t1", &err), 0);
    undo_one(f->s, "s-A#t1", 0, NULL);
    json_t *list = NULL;
    assert_int_equal(cdsh_tavern_world_list(other, false, 0, &list, &err), 0);
    assert_int_equal(json_array_size(list), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "content")),
                        "snow");
    json_decref(list);
    json_decref(d1);
    json_decref(d2);
    cdsh_tavern_story_free(other);
}

static void revision_conflict_on_stale_expectation(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    json_t *v = json_string("new");
    assert_int_equal(cdsh_tavern_story_put(f->s, NULL, "doc", "journal.md", v, "\"old\"", &err),
                     CDSH_EBUSY);
    assert_string_equal(err.code, "REVISION_CONFLICT");
    assert_int_equal(cdsh_tavern_story_put(f->s, NULL, "doc", "journal.md", v, "\"start\"", &err),
                     0);
    json_decref(v);
}

int main(void)
{
    cdsh_tavern_memory_attach(); /* memory objects written through story.h are indexed */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(writes_outside_an_open_floor_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(undo_restores_model_writes_and_keeps_manual_edits, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(model_then_manual_then_model_undoes_to_the_manual_value,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(fault_after_log_leaves_body_and_log_usable, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(corrupt_record_is_refused_before_any_change, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(forged_cursor_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(interrupted_undo_resumes_on_open, setup, teardown),
        cmocka_unit_test_setup_teardown(successor_dependency_requires_newest_first, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(two_sessions_interleaving_keep_separate_records, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(revision_conflict_on_stale_expectation, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
