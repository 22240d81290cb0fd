/* test_tavern_story_processes.c — two processes sharing one CDSH_HOME on
 * one story (say `cdsh web`'s panel and a `cdsh run` turn): one writes
 * model floors, the other manual edits and new bindings, at the same time.
 * Nothing is lost or corrupted, and an undo afterwards takes back exactly
 * the model floors while the other process's manual edits survive. */
#include "support/testkit.h"

#include "support/tavern_world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plugins/tavern/binding.h"
#include "plugins/tavern/store.h"

#define ROUNDS 40

static int bind(cdsh_tavern_bindings *b, const char *card, const char *session)
{
    cdsh_error err = {0};
    json_t *spec = json_pack("{s:s,s:s}", "sessionId", session, "cardId", card);
    int rc = cdsh_tavern_binding_set(b, spec, NULL, &err);
    json_decref(spec);
    return rc;
}

/* The child's whole life: its own store, bindings and story handles (never
 * the parent's SQLite connections across fork). Exit status 0 = all done. */
static int child_main(const char *card, bool model, int start_fd)
{
    /* both children start together: EOF on the pipe once the parent closes it */
    char c;
    while (read(start_fd, &c, 1) > 0)
        ;
    close(start_fd);
    cdsh_tavern_store *store = NULL;
    cdsh_tavern_bindings *b = NULL;
    cdsh_tavern_story *s = NULL;
    cdsh_error err = {0};
    int failures = 0;
    if (cdsh_tavern_store_open(cdsh_test_home(), NULL, &store, &err) ||
        cdsh_tavern_bindings_open(store, &b, &err) ||
        cdsh_tavern_binding_open_story(b, "s-shared", &s, &err)) {
        fprintf(stderr, "child open: %s %s\n", err.code, err.message);
        return 10;
    }
    for (int i = 1; i <= ROUNDS; i++) {
        char key[32];
        json_t *v = json_pack("{s:s,s:i}", "body", model ? "model fact" : "manual note", "i", i);
        if (model) {
            snprintf(key, sizeof key, "model-%02d", i);
            char *floor = cdsh_tavern_floor_name_dup("s-shared", i);
            if (cdsh_tavern_story_floor_begin(s, "s-shared", i, &err) ||
                cdsh_tavern_story_put(s, floor, CDSH_TAVERN_KIND_MEMORY, key, v, NULL, &err) ||
                cdsh_tavern_story_floor_commit(s, floor, &err)) {
                fprintf(stderr, "model round %d: %s %s\n", i, err.code, err.message);
                failures++;
            }
            free(floor);
        } else {
            snprintf(key, sizeof key, "manual-%02d", i);
            char session[32];
            snprintf(session, sizeof session, "s-extra-%02d", i);
            if (cdsh_tavern_story_put(s, NULL, CDSH_TAVERN_KIND_MEMORY, key, v, NULL, &err) ||
                bind(b, card, session)) {
                fprintf(stderr, "manual round %d: %s %s\n", i, err.code, err.message);
                failures++;
            }
        }
        json_decref(v);
    }
    cdsh_tavern_story_free(s);
    cdsh_tavern_bindings_free(b);
    cdsh_tavern_store_free(store);
    return failures ? 1 : 0;
}

static void two_processes_share_one_story_without_losing_writes(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    cdsh_tavern_store *store = NULL;
    cdsh_tavern_bindings *b = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_store_open(cdsh_test_home(), NULL, &store, &err), 0);
    char *card = cdsh_test_tavern_import_sample(store);
    assert_int_equal(cdsh_tavern_bindings_open(store, &b, &err), 0);
    assert_int_equal(bind(b, card, "s-shared"), 0);
    /* the parent lets go of its connections before the children start */
    cdsh_tavern_bindings_free(b);
    cdsh_tavern_store_free(store);

    fflush(NULL);
    int start[2];
    assert_int_equal(pipe(start), 0);
    pid_t pids[2];
    for (int k = 0; k < 2; k++) {
        pids[k] = fork();
        assert_true(pids[k] >= 0);
        if (pids[k] == 0) {
            close(start[1]);
            _exit(child_main(card, k == 0, start[0]));
        }
    }
    close(start[0]);
    close(start[1]);
    for (int k = 0; k < 2; k++) {
        int status = 0;
        assert_int_equal(waitpid(pids[k], &status, 0), pids[k]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }

    assert_int_equal(cdsh_tavern_store_open(cdsh_test_home(), NULL, &store, &err), 0);
    assert_int_equal(cdsh_tavern_bindings_open(store, &b, &err), 0);
    json_t *list = NULL;
    assert_int_equal(cdsh_tavern_binding_list(b, card, &list, &err), 0);
    assert_int_equal(json_array_size(list), 1 + ROUNDS);
    json_decref(list);

    cdsh_tavern_story *s = NULL;
    assert_int_equal(cdsh_tavern_binding_open_story(b, "s-shared", &s, &err), 0);
    json_t *objects = NULL;
    assert_int_equal(cdsh_tavern_story_list(s, CDSH_TAVERN_KIND_MEMORY, &objects, &err), 0);
    assert_int_equal(json_array_size(objects), 2 * ROUNDS);
    json_decref(objects);
    json_t *floors = NULL;
    assert_int_equal(cdsh_tavern_story_floors(s, &floors, &err), 0);
    assert_int_equal(json_array_size(floors), ROUNDS);
    size_t i;
    json_t *f;
    json_array_foreach(floors, i, f) {
        assert_true(json_is_true(json_object_get(f, "committed")));
        assert_int_equal(json_integer_value(json_object_get(f, "records")), 1);
    }
    json_decref(floors);

    /* undo every model floor: the model's facts go, the manual notes stay */
    assert_int_equal(cdsh_tavern_story_undo_from(s, "s-shared", NULL, 1, &err), 0);
    assert_int_equal(cdsh_tavern_story_list(s, CDSH_TAVERN_KIND_MEMORY, &objects, &err), 0);
    assert_int_equal(json_array_size(objects), ROUNDS);
    json_t *o;
    json_array_foreach(objects, i, o)
        assert_int_equal(strncmp(json_string_value(json_object_get(o, "key")), "manual-", 7), 0);
    json_decref(objects);

    cdsh_tavern_story_free(s);
    cdsh_tavern_bindings_free(b);
    cdsh_tavern_store_free(store);
    free(card);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_processes_share_one_story_without_losing_writes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
