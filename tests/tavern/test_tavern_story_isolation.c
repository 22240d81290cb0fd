/* test_tavern_story_isolation.c — bindings and branches (liketavern §16
 * storyIsolation): each binding gets its own story from the card's initial
 * state, a session cannot open another's story, a branch undoes only the
 * draft, failures leave nothing behind, siblings are navigable. */
#include "support/testkit.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/tavern/binding.h"
#include "plugins/tavern/branch.h"
#include "plugins/tavern/memory.h"
#include "plugins/tavern/store.h"

#define SAMPLE_V2 CDSH_TEST_DATA("tavern-samples/st-card-v2-seraphina.json")

typedef struct fx {
    char *home;
    cdsh_tavern_store *store;
    cdsh_tavern_bindings *b;
    char *card;
    int children;
    bool fail_create;
    char discarded[64];
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_store_open(cdsh_test_home(), NULL, &f->store, &err), 0);
    size_t len = 0;
    char *bytes = cdsh_test_read_file(SAMPLE_V2, &len);
    assert_non_null(bytes);
    json_t *res = NULL;
    assert_int_equal(cdsh_tavern_store_import_card(f->store, (const uint8_t *)bytes, len,
                                                   CDSH_TAVERN_BOOK_IMPORT, &res, &err),
                     0);
    f->card = strdup(json_string_value(json_object_get(res, "cardId")));
    json_decref(res);
    free(bytes);
    assert_int_equal(cdsh_tavern_bindings_open(f->store, &f->b, &err), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cdsh__tavern_fault_set(NULL);
    cdsh_tavern_bindings_free(f->b);
    cdsh_tavern_store_free(f->store);
    cdsh_test_home_free(f->home);
    free(f->card);
    free(f);
    return 0;
}

static void bind(fx *f, const char *session)
{
    cdsh_error err = {0};
    json_t *spec = json_pack("{s:s,s:s}", "sessionId", session, "cardId", f->card);
    assert_int_equal(cdsh_tavern_binding_set(f->b, spec, NULL, &err), 0);
    json_decref(spec);
}

static int create_child(void *ud, char **child, cdsh_error *err)
{
    fx *f = ud;
    if (f->fail_create)
        return cdsh_error_set(err, CDSH_EIO, "HOST_FAILED", "host refused");
    assert_true(asprintf(child, "s-child%d", ++f->children) > 0);
    return 0;
}

static void discard_child(void *ud, const char *child)
{
    fx *f = ud;
    snprintf(f->discarded, sizeof f->discarded, "%s", child);
}

static size_t count_stories(fx *f)
{
    char *dir = NULL;
    assert_true(asprintf(&dir, "%s/tavern/stories", f->home) > 0);
    DIR *d = opendir(dir);
    size_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    free(dir);
    return n;
}

static void write_fact(cdsh_tavern_story *s, const char *session, int turn, const char *body)
{
    cdsh_error err = {0};
    char *floor = cdsh_tavern_floor_name_dup(session, turn);
    assert_int_equal(cdsh_tavern_story_floor_begin(s, session, turn, &err), 0);
    json_t *res = NULL;
    assert_int_equal(cdsh_tavern_memory_write(s, floor, body, NULL, NULL, NULL, false, &res, &err),
                     0);
    assert_true(json_is_true(json_object_get(res, "ok")));
    json_decref(res);
    assert_int_equal(cdsh_tavern_story_floor_commit(s, floor, &err), 0);
    free(floor);
}

static size_t fact_count(fx *f, const char *session)
{
    cdsh_tavern_story *s = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_binding_open_story(f->b, session, &s, &err), 0);
    json_t *list = NULL;
    assert_int_equal(cdsh_tavern_memory_list(s, false, &list, &err), 0);
    size_t n = json_array_size(list);
    json_decref(list);
    cdsh_tavern_story_free(s);
    return n;
}

static void each_binding_gets_its_own_story(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    bind(f, "s-one");
    bind(f, "s-two");
    json_t *b1 = NULL, *b2 = NULL;
    assert_int_equal(cdsh_tavern_binding_load(f->b, "s-one", &b1, &err), 0);
    assert_int_equal(cdsh_tavern_binding_load(f->b, "s-two", &b2, &err), 0);
    assert_string_not_equal(json_string_value(json_object_get(b1, "storyId")),
                            json_string_value(json_object_get(b2, "storyId")));
    cdsh_tavern_story *s = NULL;
    assert_int_equal(cdsh_tavern_binding_open_story(f->b, "s-one", &s, &err), 0);
    write_fact(s, "s-one", 1, "The bridge is broken.");
    cdsh_tavern_story_free(s);
    assert_int_equal(fact_count(f, "s-one"), 1);
    assert_int_equal(fact_count(f, "s-two"), 0);
    /* rebinding to the same card keeps the story; other fields change */
    json_t *spec =
        json_pack("{s:s,s:s,s:s}", "sessionId", "s-one", "cardId", f->card, "presetId", "p1");
    json_t *out = NULL;
    assert_int_equal(cdsh_tavern_binding_set(f->b, spec, &out, &err), 0);
    assert_string_equal(json_string_value(json_object_get(out, "storyId")),
                        json_string_value(json_object_get(b1, "storyId")));
    assert_string_equal(json_string_value(json_object_get(out, "presetId")), "p1");
    json_decref(out);
    json_decref(spec);
    /* a storyId in the spec cannot take over another session's story */
    spec = json_pack("{s:s,s:s,s:O}", "sessionId", "s-three", "cardId", f->card, "storyId",
                     json_object_get(b1, "storyId"));
    assert_int_equal(cdsh_tavern_binding_set(f->b, spec, &out, &err), 0);
    assert_string_not_equal(json_string_value(json_object_get(out, "storyId")),
                            json_string_value(json_object_get(b1, "storyId")));
    json_decref(out);
    json_decref(spec);
    json_decref(b1);
    json_decref(b2);
}

static void unknown_card_is_refused(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    json_t *spec = json_pack("{s:s,s:s}", "sessionId", "s-x", "cardId", "nobody-00000000");
    assert_int_equal(cdsh_tavern_binding_set(f->b, spec, NULL, &err), CDSH_ENOTFOUND);
    assert_string_equal(err.code, "CARD_NOT_FOUND");
    json_decref(spec);
    json_t *none = NULL;
    assert_int_equal(cdsh_tavern_binding_load(f->b, "s-x", &none, &err), CDSH_ENOTFOUND);
    assert_string_equal(err.code, "NOT_BOUND");
}

static void branch_undoes_only_the_draft(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    bind(f, "s-p");
    cdsh_tavern_story *s = NULL;
    assert_int_equal(cdsh_tavern_binding_open_story(f->b, "s-p", &s, &err), 0);
    write_fact(s, "s-p", 1, "fact one");
    write_fact(s, "s-p", 2, "fact two");
    write_fact(s, "s-p", 3, "fact three");
    cdsh_tavern_story_free(s);
    cdsh_tavern_branch_host host = {create_child, discard_child, f};
    json_t *child = NULL;
    /* regenerate turn 3: undo from 3, inherit through 2 */
    assert_int_equal(cdsh_tavern_branch(f->b, "s-p", 3, 2, &host, NULL, NULL, &child, &err), 0);
    assert_string_equal(json_string_value(json_object_get(child, "sessionId")), "s-child1");
    assert_int_equal(fact_count(f, "s-p"), 3);
    assert_int_equal(fact_count(f, "s-child1"), 2);
    json_t *lin = json_object_get(child, "walLineage");
    assert_int_equal(json_array_size(lin), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(lin, 0), "throughTurn")), 2);
    json_decref(child);
    /* a second regeneration is a sibling; the child's own rollback to turn 1
     * also undoes the inherited parent floor 2 through its lineage */
    assert_int_equal(cdsh_tavern_branch(f->b, "s-p", 3, 2, &host, NULL, NULL, &child, &err), 0);
    json_decref(child);
    assert_int_equal(cdsh_tavern_branch(f->b, "s-child1", 2, 1, &host, NULL, NULL, &child, &err),
                     0);
    json_decref(child);
    assert_int_equal(fact_count(f, "s-child3"), 1);
    assert_int_equal(fact_count(f, "s-child1"), 2);
    json_t *sib = NULL;
    assert_int_equal(cdsh_tavern_binding_siblings(f->b, "s-child2", &sib, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(sib, "index")), 3);
    assert_int_equal(json_integer_value(json_object_get(sib, "total")), 3);
    assert_string_equal(json_string_value(json_array_get(json_object_get(sib, "siblings"), 0)),
                        "s-p");
    json_decref(sib);
    /* the child's story is not the parent's: the parent cannot open it */
    json_t *cb = NULL;
    assert_int_equal(cdsh_tavern_binding_load(f->b, "s-child1", &cb, &err), 0);
    char *path =
        cdsh_tavern_story_path_dup(f->b, json_string_value(json_object_get(cb, "storyId")));
    assert_int_equal(cdsh_tavern_story_open(path, &s, &err), 0);
    assert_string_equal(cdsh_tavern_story_session_get(s), "s-child1");
    cdsh_tavern_story_free(s);
    free(path);
    json_decref(cb);
}

static void failed_branch_leaves_nothing(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    bind(f, "s-p");
    cdsh_tavern_story *s = NULL;
    assert_int_equal(cdsh_tavern_binding_open_story(f->b, "s-p", &s, &err), 0);
    write_fact(s, "s-p", 1, "fact one");
    cdsh_tavern_story_free(s);
    size_t before = count_stories(f);
    cdsh_tavern_branch_host host = {create_child, discard_child, f};
    json_t *child = NULL;
    f->fail_create = true;
    assert_int_equal(cdsh_tavern_branch(f->b, "s-p", 1, 0, &host, NULL, NULL, &child, &err),
                     CDSH_EIO);
    assert_string_equal(err.code, "HOST_FAILED");
    assert_int_equal(count_stories(f), before);
    f->fail_create = false;
    cdsh__tavern_fault_set("publish-rename");
    assert_int_equal(cdsh_tavern_branch(f->b, "s-p", 1, 0, &host, NULL, NULL, &child, &err),
                     CDSH_EIO);
    assert_int_equal(count_stories(f), before);
    /* a child bound already: binding fails, the created child is discarded */
    json_t *spec = json_pack("{s:s,s:s}", "sessionId", "s-child1", "cardId", f->card);
    assert_int_equal(cdsh_tavern_binding_set(f->b, spec, NULL, &err), 0);
    json_decref(spec);
    before = count_stories(f);
    assert_int_equal(cdsh_tavern_branch(f->b, "s-p", 1, 0, &host, NULL, NULL, &child, &err),
                     CDSH_EEXIST);
    assert_string_equal(err.code, "SESSION_BOUND");
    assert_string_equal(f->discarded, "s-child1");
    assert_int_equal(count_stories(f), before);
    assert_int_equal(fact_count(f, "s-p"), 1);
}

static void corrupt_source_log_aborts_the_branch_before_the_child(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    bind(f, "s-p");
    cdsh_tavern_story *s = NULL;
    assert_int_equal(cdsh_tavern_binding_open_story(f->b, "s-p", &s, &err), 0);
    write_fact(s, "s-p", 1, "fact one");
    char *path = strdup(cdsh_tavern_story_path_get(s));
    cdsh_tavern_story_free(s);
    char *cmd = NULL;
    assert_true(asprintf(&cmd,
                         "sqlite3 '%s' \"UPDATE log SET sum='x'\" 2>/dev/null || "
                         "python3 -c \"import sqlite3;c=sqlite3.connect('%s');"
                         "c.execute(\\\"UPDATE log SET sum='x'\\\");c.commit()\"",
                         path, path) > 0);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    cdsh_tavern_branch_host host = {create_child, discard_child, f};
    json_t *child = NULL;
    assert_int_equal(cdsh_tavern_branch(f->b, "s-p", 1, 0, &host, NULL, NULL, &child, &err),
                     CDSH_EPROTO);
    assert_string_equal(err.code, "WAL_CORRUPT");
    assert_int_equal(f->children, 0);
    free(path);
}

int main(void)
{
    cdsh_tavern_memory_attach(); /* memory objects written through story.h are indexed */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(each_binding_gets_its_own_story, setup, teardown),
        cmocka_unit_test_setup_teardown(unknown_card_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(branch_undoes_only_the_draft, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_branch_leaves_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(corrupt_source_log_aborts_the_branch_before_the_child,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
