/* test_tavern_timed_persist.c — live tavern turns through the real agent loop
 * and the fake model persist world-info timed effects (sticky, cooldown) and
 * macro variables in the story between turns; previews read that state but
 * never write it; two stories keep separate state; the author's note setting
 * reaches the turn and, with "allow WI scan", the world-info scan; global
 * variables are shared by every story, survive a restart and are written at
 * a live turn's end, never by a preview. */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "plugins/tavern/globals.h"
#include "support/model_env.h"
#include "support/tavern_world.h"

/* Sticky 4 and cooldown 4 count chat messages: two turns (user + reply). */
static const char CARD[] =
    "{\"spec\":\"chara_card_v2\",\"spec_version\":\"2.0\",\"data\":{\"name\":\"Tess\","
    "\"description\":\"A quiet tester.\",\"personality\":\"\",\"scenario\":\"\",\"first_mes\":"
    "\"Hi.\",\"mes_example\":\"\",\"creator_notes\":\"\",\"system_prompt\":\"\","
    "\"post_history_instructions\":\"\",\"alternate_greetings\":[],\"tags\":[],\"creator\":\"\","
    "\"character_version\":\"1\",\"extensions\":{},\"character_book\":{\"name\":\"TB\","
    "\"entries\":["
    "{\"id\":1,\"keys\":[\"lantern\"],\"content\":\"STICKYMARK lantern lore\",\"enabled\":true,"
    "\"insertion_order\":100,\"extensions\":{\"sticky\":4}},"
    "{\"id\":2,\"keys\":[\"anvil\"],\"content\":\"COOLMARK anvil lore\",\"enabled\":true,"
    "\"insertion_order\":100,\"extensions\":{\"cooldown\":4}},"
    "{\"id\":3,\"keys\":[],\"constant\":true,\"content\":\"{{incvar::ticks}}TICKS={{getvar::ticks}}"
    ";"
    "\",\"enabled\":true,\"insertion_order\":100,\"extensions\":{}}]}}}";

/* A constant entry that bumps a global counter and shows it. */
static const char GLOBAL_CARD[] =
    "{\"spec\":\"chara_card_v2\",\"spec_version\":\"2.0\",\"data\":{\"name\":\"Gale\","
    "\"description\":\"A wind.\",\"personality\":\"\",\"scenario\":\"\",\"first_mes\":\"Hi.\","
    "\"mes_example\":\"\",\"creator_notes\":\"\",\"system_prompt\":\"\","
    "\"post_history_instructions\":\"\",\"alternate_greetings\":[],\"tags\":[],\"creator\":\"\","
    "\"character_version\":\"1\",\"extensions\":{},\"character_book\":{\"name\":\"GB\","
    "\"entries\":[{\"id\":1,\"keys\":[],\"constant\":true,\"content\":"
    "\"{{incglobalvar::visits}}VISITS={{getglobalvar::visits}};\",\"enabled\":true,"
    "\"insertion_order\":100,\"extensions\":{}}]}}}";

#define SAY(text) "{\"chunks\":[{\"text\":\"" text "\"}],\"finish_reason\":\"stop\"}"

static char *bound_story(cdsh_test_tavern_world *w, const char *title)
{
    return cdsh_test_tavern_bound_session_bytes(w, CARD, strlen(CARD), "import", title, NULL);
}

/* Whether the k-th recorded request mentions `mark` anywhere. */
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

/* The home-wide global counter the GLOBAL_CARD entry bumps. */
static long long visits(void)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tavern/state", getenv("CDSH_HOME"));
    json_t *g = NULL;
    assert_int_equal(cdsh_tavern_globals_load(dir, &g, NULL), 0);
    long long v = json_integer_value(json_object_get(g, "visits"));
    json_decref(g);
    return v;
}

static bool preview_has(cdsh_test_tavern_world *w, const char *sid, const char *mark)
{
    json_t *p = cdsh_test_tavern_rpc(w, "previewPrompt", json_pack("{s:s}", "sessionId", sid));
    char *text = json_dumps(p, 0);
    bool has = text && strstr(text, mark);
    free(text);
    json_decref(p);
    return has;
}

typedef struct env {
    char *home;
    cdsh_test_fake_model f;
    cdsh_test_tavern_world w;
} env;

static void env_open(env *e, const char *script)
{
    e->home = cdsh_test_home_new();
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    cdsh_test_model_env_start(&e->f, script);
    cdsh_test_tavern_world_open(&e->w);
}

static void env_close(env *e)
{
    cdsh_test_tavern_world_close(&e->w);
    cdsh_test_model_env_stop(&e->f);
    cdsh_test_home_free(e->home);
}

static void sticky_entry_stays_active_without_keyword_then_expires(void **state)
{
    (void)state;
    env e;
    env_open(&e, "[" SAY("One.") "," SAY("Two.") "," SAY("Three.") "]");
    char *sid = bound_story(&e.w, "sticky");
    cdsh_test_tavern_turn(&e.w, sid, "I light the lantern.");
    cdsh_test_tavern_turn(&e.w, sid, "I walk on.");
    cdsh_test_tavern_turn(&e.w, sid, "I rest.");
    assert_true(request_has(&e.f, 0, "STICKYMARK"));
    assert_true(request_has(&e.f, 1, "STICKYMARK"));
    assert_false(request_has(&e.f, 2, "STICKYMARK"));
    assert_false(request_has(&e.f, 0, "COOLMARK"));
    free(sid);
    env_close(&e);
}

static void cooldown_entry_does_not_refire_during_cooldown(void **state)
{
    (void)state;
    env e;
    env_open(&e, "[" SAY("One.") "," SAY("Two.") "," SAY("Three.") "]");
    char *sid = bound_story(&e.w, "cooldown");
    cdsh_test_tavern_turn(&e.w, sid, "I strike the anvil.");
    cdsh_test_tavern_turn(&e.w, sid, "I strike the anvil again.");
    cdsh_test_tavern_turn(&e.w, sid, "And the anvil once more.");
    assert_true(request_has(&e.f, 0, "COOLMARK"));
    assert_false(request_has(&e.f, 1, "COOLMARK"));
    assert_true(request_has(&e.f, 2, "COOLMARK"));
    free(sid);
    env_close(&e);
}

static void preview_between_turns_reads_but_never_writes(void **state)
{
    (void)state;
    env e;
    env_open(&e, "[" SAY("One.") "," SAY("Two.") "," SAY("Three.") "]");
    char *sid = bound_story(&e.w, "preview");
    cdsh_test_tavern_turn(&e.w, sid, "I light the lantern.");
    assert_true(request_has(&e.f, 0, "TICKS=1;"));
    /* The preview sees the saved state (sticky still on, counter 1 + its own
     * increment) and repeating it changes nothing. */
    for (int i = 0; i < 3; i++) {
        assert_true(preview_has(&e.w, sid, "STICKYMARK"));
        assert_true(preview_has(&e.w, sid, "TICKS=2;"));
    }
    cdsh_test_tavern_turn(&e.w, sid, "I walk on.");
    assert_true(request_has(&e.f, 1, "TICKS=2;"));
    assert_true(request_has(&e.f, 1, "STICKYMARK"));
    assert_true(preview_has(&e.w, sid, "TICKS=3;"));
    cdsh_test_tavern_turn(&e.w, sid, "I rest.");
    assert_true(request_has(&e.f, 2, "TICKS=3;"));
    assert_false(request_has(&e.f, 2, "STICKYMARK"));
    free(sid);
    env_close(&e);
}

static void two_stories_keep_separate_state(void **state)
{
    (void)state;
    env e;
    env_open(&e, "[" SAY("A1.") "," SAY("B1.") "," SAY("A2.") "," SAY("B2.") "]");
    char *a = bound_story(&e.w, "story a");
    char *b = bound_story(&e.w, "story b");
    cdsh_test_tavern_turn(&e.w, a, "I light the lantern.");
    cdsh_test_tavern_turn(&e.w, b, "I walk on.");
    cdsh_test_tavern_turn(&e.w, a, "I walk on.");
    cdsh_test_tavern_turn(&e.w, b, "I walk on again.");
    assert_true(request_has(&e.f, 0, "STICKYMARK"));
    assert_true(request_has(&e.f, 0, "TICKS=1;"));
    assert_false(request_has(&e.f, 1, "STICKYMARK"));
    assert_true(request_has(&e.f, 1, "TICKS=1;"));
    assert_true(request_has(&e.f, 2, "STICKYMARK"));
    assert_true(request_has(&e.f, 2, "TICKS=2;"));
    assert_false(request_has(&e.f, 3, "STICKYMARK"));
    assert_true(request_has(&e.f, 3, "TICKS=2;"));
    free(a);
    free(b);
    env_close(&e);
}

static void author_note_setting_is_scanned_only_when_allowed(void **state)
{
    (void)state;
    env e;
    env_open(&e, "[" SAY("One.") "," SAY("Two.") "]");
    char *sid = bound_story(&e.w, "note");
    /* "lantern" appears only in the author's note. */
    json_decref(cdsh_test_tavern_rpc(&e.w, "updateSettings",
                                     json_pack("{s:{s:{s:s, s:i}}}", "patch", "authorNote", "text",
                                               "NOTEMARK the lantern.", "depth", 2)));
    cdsh_test_tavern_turn(&e.w, sid, "I rest.");
    assert_true(request_has(&e.f, 0, "NOTEMARK the lantern."));
    assert_false(request_has(&e.f, 0, "STICKYMARK"));
    json_decref(
        cdsh_test_tavern_rpc(&e.w, "updateSettings",
                             json_pack("{s:{s:{s:b}}}", "patch", "authorNote", "allowWIScan", 1)));
    cdsh_test_tavern_turn(&e.w, sid, "I rest again.");
    assert_true(request_has(&e.f, 1, "STICKYMARK"));
    free(sid);
    env_close(&e);
}

static char *bound_global(cdsh_test_tavern_world *w, const char *title)
{
    return cdsh_test_tavern_bound_session_bytes(w, GLOBAL_CARD, strlen(GLOBAL_CARD), "import",
                                                title, NULL);
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
    char *a = bound_global(&w, "story a");
    char *b = bound_global(&w, "story b");
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
    char *sid = bound_global(&w, "preview");
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sticky_entry_stays_active_without_keyword_then_expires),
        cmocka_unit_test(cooldown_entry_does_not_refire_during_cooldown),
        cmocka_unit_test(preview_between_turns_reads_but_never_writes),
        cmocka_unit_test(two_stories_keep_separate_state),
        cmocka_unit_test(author_note_setting_is_scanned_only_when_allowed),
        cmocka_unit_test(a_global_set_in_one_story_is_read_in_another_and_survives_a_restart),
        cmocka_unit_test(previews_read_globals_but_never_write_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
