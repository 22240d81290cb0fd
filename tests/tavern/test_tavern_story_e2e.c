/* test_tavern_story_e2e.c — the tavern plugin with the real agent loop and
 * the scripted fake model: import a card with its lorebook, bind, play turns
 * in which the model calls the memory, world-state and lore tools, branch
 * (regenerate), edit, restart everything and find it all as it was. */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/session_store.h"
#include "host/events.h"
#include "host/host.h"
#include "host/rpc.h"
#include "base/base64.h"
#include "plugins/tavern/plugin.h"
#include "support/model_env.h"
#include "support/tavern_world.h"

typedef cdsh_test_tavern_world world;

static size_t count(json_t *v_take, const char *field)
{
    size_t n = json_array_size(field ? json_object_get(v_take, field) : v_take);
    json_decref(v_take);
    return n;
}

/* Fake-model scripts, one reply per request in order (docs/fake-model.md). */
#define CALL(id, name, args)                                                                       \
    "{\"tool_calls\":[{\"index\":0,\"id\":\"" id "\",\"name\":\"" name "\",\"arguments\":\"" args  \
    "\"}],\"finish_reason\":\"tool_calls\"}"
#define SAY(text, finish) "{\"chunks\":[{\"text\":\"" text "\"}],\"finish_reason\":\"" finish "\"}"

// clang-format off
static const char PLAY_SCRIPT[] = "["
    CALL("c1", "tavern_lore_read", "{}") ","
    CALL("c2", "tavern_memory_write", "{\\\"body\\\":\\\"Seraphina healed the traveller.\\\"}") ","
    CALL("c3", "tavern_worldstate_update",
         "{\\\"type\\\":\\\"add\\\",\\\"content\\\":\\\"Night falls over Eldoria.\\\"}") ","
    SAY("You wake in the glade.", "stop") ","
    CALL("c4", "tavern_memory_write", "{\\\"body\\\":\\\"The traveller owes Seraphina a favour.\\\"}") ","
    SAY("She smiles.", "stop") ","
    CALL("c5", "tavern_memory_search", "{\\\"query\\\":\\\"traveller\\\"}") ","
    SAY("A different smile.", "stop") "]";

static const char IDLE_SCRIPT[] = "["
    CALL("c1", "tavern_memory_write", "{\\\"body\\\":\\\"The bell tolls at noon.\\\"}") ","
    CALL("c2", "tavern_memory_write", "{\\\"body\\\":\\\"A stranger rides in from the east.\\\"}") ","
    SAY("Noon.", "stop") ","
    SAY("The bell", "length") ","           /* the summary of turn 1: truncated */
    SAY("Later.", "stop") ","
    SAY("At noon a stranger came from the east.", "stop") "]"; /* the summary of turn 2 */

static const char FLOOR_SCRIPT[] = "[" SAY("The glade is quiet.", "stop") "]";
// clang-format on

static void a_played_story_survives_branches_and_a_restart(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, PLAY_SCRIPT);
    world w;
    cdsh_test_tavern_world_open(&w);
    char *card = NULL;
    char *sid = cdsh_test_tavern_bound_session(&w, "import", "play", &card);
    cdsh_error err = {0};
    cdsh_test_tavern_turn(&w, sid, "Where am I?");
    cdsh_test_tavern_turn(&w, sid, "Thank you.");
    assert_int_equal(
        count(cdsh_test_tavern_rpc(&w, "getMemories", json_pack("{s:s}", "sessionId", sid)),
              "active"),
        2);
    assert_int_equal(
        count(cdsh_test_tavern_rpc(&w, "getWorldDeltas", json_pack("{s:s}", "sessionId", sid)),
              NULL),
        1);
    json_t *floors = cdsh_test_tavern_rpc(&w, "listFloors", json_pack("{s:s}", "sessionId", sid));
    assert_int_equal(json_array_size(floors), 2);
    assert_true(json_is_true(json_object_get(json_array_get(floors, 1), "committed")));
    json_decref(floors);
    /* the tools' results reached the model: the lore catalog lists the card's book */
    json_t *bodies = cdsh_test_model_env_bodies(&f);
    char *second = json_dumps(json_array_get(bodies, 1), 0);
    assert_non_null(strstr(second, "character:"));
    free(second);
    json_decref(bodies);
    /* regenerate turn 2 in a child session, then play it there */
    json_t *br = cdsh_test_tavern_rpc(&w, "regenerate", json_pack("{s:s}", "sessionId", sid));
    char *child = strdup(json_string_value(json_object_get(br, "childSessionId")));
    /* a readable branch name, stored as the child session's title */
    assert_string_equal(json_string_value(json_object_get(br, "title")),
                        "Seraphina — turn 2, variant 2");
    json_t *info = cdsh_session_store_info_dup(w.store, child, &err);
    assert_string_equal(json_string_value(json_object_get(info, "title")),
                        "Seraphina — turn 2, variant 2");
    json_decref(info);
    assert_string_equal(json_string_value(json_object_get(json_object_get(br, "resend"), "text")),
                        "Thank you.");
    json_decref(br);
    assert_int_equal(
        count(cdsh_test_tavern_rpc(&w, "getMemories", json_pack("{s:s}", "sessionId", child)),
              "active"),
        1);
    cdsh_test_tavern_turn(&w, child, "Thank you.");
    /* edit the first reply in another branch: its facts go, nothing re-extracted */
    json_t *ed = cdsh_test_tavern_rpc(
        &w, "editAssistantMessage",
        json_pack("{s:s,s:i,s:s}", "sessionId", sid, "turn", 1, "text", "An edited scene."));
    char *edited = strdup(json_string_value(json_object_get(ed, "childSessionId")));
    json_decref(ed);
    assert_int_equal(
        count(cdsh_test_tavern_rpc(&w, "getMemories", json_pack("{s:s}", "sessionId", edited)),
              "active"),
        0);
    /* restart: a new host, store and agent over the same home */
    cdsh_test_tavern_world_close(&w);
    cdsh_test_tavern_world_open(&w);
    assert_int_equal(
        count(cdsh_test_tavern_rpc(&w, "getMemories", json_pack("{s:s}", "sessionId", sid)),
              "active"),
        2);
    assert_int_equal(
        count(cdsh_test_tavern_rpc(&w, "getMemories", json_pack("{s:s}", "sessionId", child)),
              "active"),
        1);
    json_t *sib =
        cdsh_test_tavern_rpc(&w, "getFloorSiblings", json_pack("{s:s}", "sessionId", child));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(sib, "swipe"), "total")),
                     3);
    json_decref(sib);
    json_t *msgs = cdsh_session_store_messages(w.store, edited, &err);
    /* [the card's greeting (the session's opening), the user, the edit] */
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 0), "role")),
                        "assistant");
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 2), "content")),
                        "An edited scene.");
    json_decref(msgs);
    cdsh_test_tavern_world_close(&w);
    cdsh_test_model_env_stop(&f);
    free(card);
    free(sid);
    free(child);
    free(edited);
    cdsh_test_home_free(home);
}

static void summaries_at_turn_end_only_from_a_normal_stop(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, IDLE_SCRIPT);
    world w;
    cdsh_test_tavern_world_open(&w);
    json_t *patch = json_pack("{s:{s:{s:i}}}", "patch", "memory", "maxEntries", 1);
    json_decref(cdsh_test_tavern_rpc(&w, "updateSettings", patch));
    char *sid = cdsh_test_tavern_bound_session(&w, "discard", "idle", NULL);
    cdsh_test_tavern_turn(&w, sid, "What time is it?");
    /* the summary ended with "length": nothing archived, still pending */
    json_t *m = cdsh_test_tavern_rpc(&w, "getMemories", json_pack("{s:s}", "sessionId", sid));
    assert_int_equal(json_array_size(json_object_get(m, "active")), 2);
    assert_int_equal(json_array_size(json_object_get(m, "archived")), 0);
    assert_true(json_is_true(json_object_get(m, "compressPending")));
    json_decref(m);
    assert_int_equal(cdsh_test_fake_model_count(&f), 4);
    cdsh_test_tavern_turn(&w, sid, "And then?");
    m = cdsh_test_tavern_rpc(&w, "getMemories", json_pack("{s:s}", "sessionId", sid));
    assert_int_equal(json_array_size(json_object_get(m, "active")), 1);
    assert_int_equal(json_array_size(json_object_get(m, "archived")), 2);
    assert_false(json_is_true(json_object_get(m, "compressPending")));
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(m, "active"), 0), "body")),
        "At noon a stranger came from the east.");
    json_decref(m);
    cdsh_test_tavern_world_close(&w);
    cdsh_test_model_env_stop(&f);
    free(sid);
    cdsh_test_home_free(home);
}

/* What a panel listening to "plugin/state" saw: each tavern event and
 * whether listFloors already showed that floor committed at that moment. */
typedef struct floor_news {
    world *w;
    json_t *events;
    bool committed_when_told;
} floor_news;

static void on_state(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    (void)name;
    (void)scope;
    floor_news *n = arg;
    if (strcmp(json_string_value(json_object_get(payload, "plugin")), "tavern") != 0)
        return;
    json_array_append(n->events, (json_t *)payload);
    json_t *floors = cdsh_test_tavern_rpc(
        n->w, "listFloors", json_pack("{s:O}", "sessionId", json_object_get(payload, "sessionId")));
    json_t *last = json_array_get(floors, json_array_size(floors) - 1);
    n->committed_when_told = json_integer_value(json_object_get(last, "turn")) ==
                                 json_integer_value(json_object_get(payload, "turn")) &&
                             json_is_true(json_object_get(last, "committed"));
    json_decref(floors);
}

static void a_closed_floor_is_announced_to_the_panel_after_its_commit(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, FLOOR_SCRIPT);
    world w;
    cdsh_test_tavern_world_open(&w);
    char *sid = cdsh_test_tavern_bound_session(&w, "discard", "floors", NULL);
    floor_news news = {.w = &w, .events = json_array()};
    cdsh_disposer_t off = {0};
    cdsh_error err = {0};
    assert_int_equal(
        cdsh_events_on(cdsh_host_events(w.host), "plugin/state", NULL, on_state, &news, &off, &err),
        0);
    cdsh_test_tavern_turn(&w, sid, "Where am I?");
    cdsh_disposer_run(&off);
    assert_int_equal(json_array_size(news.events), 1);
    json_t *ev = json_array_get(news.events, 0);
    assert_string_equal(json_string_value(json_object_get(ev, "sessionId")), sid);
    assert_string_equal(json_string_value(json_object_get(ev, "kind")), "floor");
    assert_int_equal(json_integer_value(json_object_get(ev, "turn")), 1);
    assert_true(json_is_true(json_object_get(ev, "committed")));
    assert_true(news.committed_when_told);
    json_decref(news.events);
    cdsh_test_tavern_world_close(&w);
    cdsh_test_model_env_stop(&f);
    free(sid);
    cdsh_test_home_free(home);
}

/* Names of the tools offered in one recorded model request. */
static bool offers_tavern_tool(const json_t *body)
{
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(body, "tools"), i, t) {
        const char *name =
            json_string_value(json_object_get(json_object_get(t, "function"), "name"));
        if (name && strncmp(name, "tavern_", 7) == 0)
            return true;
    }
    return false;
}

/* The plugin is on by default, but a session with no card bound is an
 * ordinary chat: its turns offer no tavern tools; a bound session's do, and
 * the plain one's next turn is still unmasked-free (the mask is per turn). */
static void an_unbound_session_is_offered_no_tavern_tools(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, "[" SAY("Hello.", "stop") "," SAY("Welcome.", "stop") ","
                                      SAY("Hi again.", "stop") "]");
    world w;
    cdsh_test_tavern_world_open(&w);
    cdsh_error err = {0};
    char *plain = NULL;
    cdsh_session_spec spec = {.title = "plain"};
    assert_int_equal(cdsh_session_store_create(w.store, &spec, &plain, &err), 0);
    cdsh_test_tavern_turn(&w, plain, "Hello?");
    char *sid = cdsh_test_tavern_bound_session(&w, "import", "story", NULL);
    cdsh_test_tavern_turn(&w, sid, "Where am I?");
    cdsh_test_tavern_turn(&w, plain, "Hello again?");
    json_t *bodies = cdsh_test_model_env_bodies(&f);
    assert_int_equal(json_array_size(bodies), 3);
    assert_false(offers_tavern_tool(json_array_get(bodies, 0)));
    assert_true(offers_tavern_tool(json_array_get(bodies, 1)));
    assert_false(offers_tavern_tool(json_array_get(bodies, 2)));
    json_decref(bodies);
    cdsh_test_tavern_world_close(&w);
    cdsh_test_model_env_stop(&f);
    free(plain);
    free(sid);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_played_story_survives_branches_and_a_restart),
        cmocka_unit_test(summaries_at_turn_end_only_from_a_normal_stop),
        cmocka_unit_test(a_closed_floor_is_announced_to_the_panel_after_its_commit),
        cmocka_unit_test(an_unbound_session_is_offered_no_tavern_tools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
