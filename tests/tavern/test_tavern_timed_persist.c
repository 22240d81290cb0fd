/* test_tavern_timed_persist.c — live tavern turns through the real agent loop
 * and the fake model persist world-info timed effects (sticky, cooldown) and
 * macro variables in the story between turns; previews read that state but
 * never write it; two stories keep separate state; the author's note setting
 * reaches the turn and, with "allow WI scan", the world-info scan. */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sticky_entry_stays_active_without_keyword_then_expires),
        cmocka_unit_test(cooldown_entry_does_not_refire_during_cooldown),
        cmocka_unit_test(preview_between_turns_reads_but_never_writes),
        cmocka_unit_test(two_stories_keep_separate_state),
        cmocka_unit_test(author_note_setting_is_scanned_only_when_allowed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
