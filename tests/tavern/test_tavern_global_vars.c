/* test_tavern_global_vars.c — the home-wide global variables file
 * (globals.h): commits merge a turn's own changes under a cross-process
 * lock, so forked children incrementing at once lose nothing; a damaged
 * file is an error. The live-turn behaviour (shared by stories, surviving a
 * restart, never written by previews) is in test_tavern_timed_persist.c. */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fs.h"
#include "plugins/tavern/globals.h"
#include "plugins/tavern/macros.h"

static char *globals_dir(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tavern/state", getenv("CDSH_HOME"));
    return strdup(path);
}

static json_t *globals_now(void)
{
    char *dir = globals_dir();
    json_t *g = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_globals_load(dir, &g, &err), 0);
    free(dir);
    return g;
}

/* One "turn" the way the wire runs it: a frozen load, the macros, a commit. */
static void macro_turn(const char *dir, const char *text)
{
    json_t *g = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_globals_load(dir, &g, &err), 0);
    json_t *before = json_deep_copy(g);
    cdsh_tavern_macro_env env = {.vars_global = g, .last_message_id = -1};
    free(cdsh_tavern_macros_expand_dup(text, &env));
    assert_int_equal(cdsh_tavern_globals_commit(dir, before, g, NULL, &err), 0);
    json_decref(before);
    json_decref(g);
}

static void two_processes_incrementing_lose_no_update(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *dir = globals_dir();
    enum { CHILDREN = 2, TURNS = 40 };
    pid_t kids[CHILDREN];
    for (int c = 0; c < CHILDREN; c++) {
        kids[c] = fork();
        assert_true(kids[c] >= 0);
        if (kids[c] == 0) {
            for (int t = 0; t < TURNS; t++)
                macro_turn(dir, "{{incglobalvar::n}}{{addglobalvar::sum::2}}");
            _exit(0);
        }
    }
    for (int c = 0; c < CHILDREN; c++) {
        int st = 0;
        assert_int_equal(waitpid(kids[c], &st, 0), kids[c]);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
    }
    json_t *g = globals_now();
    assert_int_equal(json_integer_value(json_object_get(g, "n")), CHILDREN * TURNS);
    assert_int_equal(json_integer_value(json_object_get(g, "sum")), 2 * CHILDREN * TURNS);
    json_decref(g);
    free(dir);
    cdsh_test_home_free(home);
}

static void commit_merges_only_the_turns_own_changes(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *dir = globals_dir();
    cdsh_error err = {0};
    /* Another process wrote meanwhile: {n:5, mood:"calm", gone:1, other:"x"}. */
    json_t *disk =
        json_pack("{s:i, s:s, s:i, s:s}", "n", 5, "mood", "calm", "gone", 1, "other", "x");
    json_t *merged = NULL, *empty = json_object();
    assert_int_equal(cdsh_tavern_globals_commit(dir, empty, disk, NULL, &err), 0);
    json_decref(empty);
    /* This turn started from {n:"2", mood:"calm", gone:1}: it incremented n,
     * set mood, deleted gone and never saw other. */
    json_t *before = json_pack("{s:s, s:s, s:i}", "n", "2", "mood", "calm", "gone", 1);
    json_t *after = json_pack("{s:i, s:s}", "n", 3, "mood", "stormy");
    assert_int_equal(cdsh_tavern_globals_commit(dir, before, after, &merged, &err), 0);
    json_t *want = json_pack("{s:i, s:s, s:s}", "n", 6, "mood", "stormy", "other", "x");
    assert_true(json_equal(merged, want));
    json_t *g = globals_now();
    assert_true(json_equal(g, want));
    /* Unchanged turn: nothing is written (the file keeps its bytes). */
    assert_int_equal(cdsh_tavern_globals_commit(dir, want, want, NULL, &err), 0);
    json_decref(g);
    json_decref(want);
    json_decref(merged);
    json_decref(before);
    json_decref(after);
    json_decref(disk);
    /* A damaged file is an error, not an empty store. */
    char path[4096];
    snprintf(path, sizeof path, "%s/" CDSH_TAVERN_GLOBALS_FILE, dir);
    assert_int_equal(cdsh_fs_write_atomic(path, "[1]", 3, 0600, NULL), 0);
    g = NULL;
    assert_int_equal(cdsh_tavern_globals_load(dir, &g, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "GLOBALS_CORRUPT");
    assert_null(g);
    free(dir);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_processes_incrementing_lose_no_update),
        cmocka_unit_test(commit_merges_only_the_turns_own_changes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
