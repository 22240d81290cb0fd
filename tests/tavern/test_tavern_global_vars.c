/* test_tavern_global_vars.c — global variables ({{setglobalvar}} and
 * friends, the template API's global scope) live in one home-wide file:
 * shared by every story, surviving a restart, written once at a live turn's
 * end and never by a preview; commits merge under a cross-process lock, so
 * forked children incrementing at once lose nothing. */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fs.h"
#include "plugins/tavern/globals.h"
#include "plugins/tavern/macros.h"
#include "support/model_env.h"
#include "support/tavern_world.h"

/* A constant entry that bumps a global counter and shows it. */
static const char CARD[] =
    "{\"spec\":\"chara_card_v2\",\"spec_version\":\"2.0\",\"data\":{\"name\":\"Gale\","
    "\"description\":\"A wind.\",\"personality\":\"\",\"scenario\":\"\",\"first_mes\":\"Hi.\","
    "\"mes_example\":\"\",\"creator_notes\":\"\",\"system_prompt\":\"\","
    "\"post_history_instructions\":\"\",\"alternate_greetings\":[],\"tags\":[],\"creator\":\"\","
    "\"character_version\":\"1\",\"extensions\":{},\"character_book\":{\"name\":\"GB\","
    "\"entries\":[{\"id\":1,\"keys\":[],\"constant\":true,\"content\":"
    "\"{{incglobalvar::visits}}VISITS={{getglobalvar::visits}};\",\"enabled\":true,"
    "\"insertion_order\":100,\"extensions\":{}}]}}}";

#define SAY(text) "{\"chunks\":[{\"text\":\"" text "\"}],\"finish_reason\":\"stop\"}"

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

static long long visits(void)
{
    json_t *g = globals_now();
    long long v = json_integer_value(json_object_get(g, "visits"));
    json_decref(g);
    return v;
}

static bool request_has(cdsh_test_fake_model *f, size_t k, const char *mark)
{
    json_t *bodies = cdsh_test_model_env_bodies(f);
    assert_true(k < json_array_size(bodies));
    char *text = json_dumps(json_array_get(bodies, k), 0);
    bool has = text && strstr(text, mark);
    free(text);
    json_decref(bodies);
    return has;
}

static char *bound(cdsh_test_tavern_world *w, const char *title)
{
    return cdsh_test_tavern_bound_session_bytes(w, CARD, strlen(CARD), "import", title, NULL);
}

static void a_global_set_in_one_story_is_read_in_another_and_survives_a_restart(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, "[" SAY("A1.") "," SAY("B1.") "," SAY("A2.") "]");
    cdsh_test_tavern_world w;
    cdsh_test_tavern_world_open(&w);
    char *a = bound(&w, "story a");
    char *b = bound(&w, "story b");
    cdsh_test_tavern_turn(&w, a, "Hello.");
    assert_true(request_has(&f, 0, "VISITS=1;"));
    assert_int_equal(visits(), 1);
    /* Story b is another story (own chat, own floors) but the same globals. */
    cdsh_test_tavern_turn(&w, b, "Hello there.");
    assert_true(request_has(&f, 1, "VISITS=2;"));
    assert_int_equal(visits(), 2);
    free(b);
    cdsh_test_tavern_world_close(&w);
    /* A new host on the same home: the globals are read back from disk. */
    cdsh_test_tavern_world_open(&w);
    cdsh_test_tavern_turn(&w, a, "Back again.");
    assert_true(request_has(&f, 2, "VISITS=3;"));
    assert_int_equal(visits(), 3);
    free(a);
    cdsh_test_tavern_world_close(&w);
    cdsh_test_model_env_stop(&f);
    cdsh_test_home_free(home);
}

static void previews_read_globals_but_never_write_them(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, "[" SAY("One.") "]");
    cdsh_test_tavern_world w;
    cdsh_test_tavern_world_open(&w);
    char *sid = bound(&w, "preview");
    cdsh_test_tavern_turn(&w, sid, "Hello.");
    assert_int_equal(visits(), 1);
    char path[4096];
    snprintf(path, sizeof path, "%s/tavern/state/" CDSH_TAVERN_GLOBALS_FILE, home);
    char *before = NULL;
    assert_int_equal(cdsh_fs_read_file(path, 1 << 20, &before, NULL, NULL), 0);
    for (int i = 0; i < 3; i++) {
        json_t *p = cdsh_test_tavern_rpc(&w, "previewPrompt", json_pack("{s:s}", "sessionId", sid));
        char *text = json_dumps(p, 0);
        /* The preview sees the saved 1 plus its own increment, every time. */
        assert_non_null(strstr(text, "VISITS=2;"));
        free(text);
        json_decref(p);
    }
    char *after = NULL;
    assert_int_equal(cdsh_fs_read_file(path, 1 << 20, &after, NULL, NULL), 0);
    assert_string_equal(before, after);
    assert_int_equal(visits(), 1);
    free(before);
    free(after);
    free(sid);
    cdsh_test_tavern_world_close(&w);
    cdsh_test_model_env_stop(&f);
    cdsh_test_home_free(home);
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
        cmocka_unit_test(a_global_set_in_one_story_is_read_in_another_and_survives_a_restart),
        cmocka_unit_test(previews_read_globals_but_never_write_them),
        cmocka_unit_test(two_processes_incrementing_lose_no_update),
        cmocka_unit_test(commit_merges_only_the_turns_own_changes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
