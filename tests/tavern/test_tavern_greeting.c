/* test_tavern_greeting.c — the greeting opens the story (issue 19, seed
 * 001): binding a card logs its greeting as the session's opening, which is
 * the first assistant message of the model's history on turn 1 and of the
 * stored events (the chat shows it); swipeGreeting swaps it among
 * alternate_greetings before the first user message and is refused after;
 * a fork starts with the same greeting. Real agent loop, fake model. */
#include "support/testkit.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "host/host.h"
#include "host/rpc.h"
#include "support/model_env.h"
#include "support/tavern_world.h"

/* A temp home, the fake model playing `script` and the tavern world. */
typedef struct fx {
    char *home;
    cdsh_test_fake_model model;
    cdsh_test_tavern_world w;
} fx;

static void fx_open(fx *f, const char *script)
{
    f->home = cdsh_test_home_new();
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    cdsh_test_model_env_start(&f->model, script);
    cdsh_test_tavern_world_open(&f->w);
}

static void fx_close(fx *f)
{
    cdsh_test_tavern_world_close(&f->w);
    cdsh_test_model_env_stop(&f->model);
    cdsh_test_home_free(f->home);
}

#define SAY(text) "{\"chunks\":[{\"text\":\"" text "\"}],\"finish_reason\":\"stop\"}"

/* The sample card with two alternate greetings; a bound session. */
static char *bound_with_alternates(cdsh_test_tavern_world *w)
{
    json_t *card = json_load_file(CDSH_TEST_TAVERN_SAMPLE_V2, 0, NULL);
    assert_non_null(card);
    json_t *data = json_object_get(card, "data");
    json_object_set_new(data, "alternate_greetings",
                        json_pack("[s,s]", "ALT ONE: {{char}} waves at {{user}}.",
                                  "ALT TWO: the tavern is loud."));
    char *bytes = json_dumps(card, 0);
    char *sid = cdsh_test_tavern_bound_session_bytes(w, bytes, strlen(bytes), "import", "greet",
                                                     NULL);
    free(bytes);
    json_decref(card);
    return sid;
}

static json_t *openings(cdsh_test_tavern_world *w, const char *sid)
{
    json_t *ev = cdsh_session_store_events(w->store, sid, 0, 10000, NULL, NULL);
    json_t *out = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e)
        if (!strcmp(json_string_value(json_object_get(e, "type")), "session/opening"))
            json_array_append(out, json_object_get(e, "payload"));
    json_decref(ev);
    return out;
}

static void binding_opens_the_session_with_the_greeting(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, "[" SAY("Hello.") "]");
    cdsh_test_tavern_world *w = &f.w;
    char *sid = cdsh_test_tavern_bound_session(w, "import", "bound", NULL);
    json_t *g = cdsh_test_tavern_rpc(w, "ensureGreeting", json_pack("{s:s}", "sessionId", sid));
    const char *greeting = json_string_value(json_object_get(g, "text"));
    assert_non_null(greeting);
    assert_non_null(strstr(greeting, "You wake with a start"));
    /* Logged once, as the session's opening (ensureGreeting adds nothing). */
    json_t *op = openings(w, sid);
    assert_int_equal(json_array_size(op), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(op, 0), "text")),
                        greeting);
    json_decref(op);
    /* Turn 1: the model's history opens with it, before the user message. */
    cdsh_test_tavern_turn(w, sid, "I look around.");
    json_t *bodies = cdsh_test_model_env_bodies(&f.model);
    json_t *msgs = json_object_get(json_array_get(bodies, 0), "messages");
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 0), "role")),
                        "system");
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 1), "role")),
                        "assistant");
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 1), "content")),
                        greeting);
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 2), "role")),
                        "user");
    /* Exactly once: the plan does not add the story's pinned copy again. */
    size_t i, seen = 0;
    json_t *m;
    json_array_foreach(msgs, i, m)
        seen += json_string_value(json_object_get(m, "content")) &&
                strstr(json_string_value(json_object_get(m, "content")), "You wake with a start");
    assert_int_equal(seen, 1);
    /* The stored history (what the chat replays) starts with it too. */
    json_t *hist = cdsh_session_store_messages(w->store, sid, NULL);
    assert_string_equal(json_string_value(json_object_get(json_array_get(hist, 0), "content")),
                        greeting);
    json_decref(hist);
    /* A fork starts with the same greeting. */
    char *child = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_session_store_fork(w->store, sid, 0, NULL, &child, &err), 0);
    json_t *ch = cdsh_session_store_messages(w->store, child, NULL);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ch, 0), "content")),
                        greeting);
    json_decref(ch);
    free(child);
    json_decref(bodies);
    json_decref(g);
    free(sid);
    fx_close(&f);
}

static void alternate_greetings_swap_before_the_first_message_only(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, "[" SAY("Hi.") "]");
    cdsh_test_tavern_world *w = &f.w;
    char *sid = bound_with_alternates(w);
    json_t *sw =
        cdsh_test_tavern_rpc(w, "swipeGreeting", json_pack("{s:s,s:i}", "sessionId", sid, "index", 1));
    assert_int_equal(json_integer_value(json_object_get(sw, "index")), 1);
    assert_int_equal(json_integer_value(json_object_get(sw, "total")), 3);
    json_decref(sw);
    json_t *op = openings(w, sid);
    assert_int_equal(json_array_size(op), 2); /* the first greeting, then the swap */
    const char *alt = json_string_value(json_object_get(json_array_get(op, 1), "text"));
    assert_non_null(strstr(alt, "ALT ONE: Seraphina waves at"));
    assert_int_equal(json_integer_value(json_object_get(json_array_get(op, 1), "index")), 1);
    /* Swiping to the same greeting again logs nothing. */
    json_decref(cdsh_test_tavern_rpc(w, "swipeGreeting",
                                     json_pack("{s:s,s:i}", "sessionId", sid, "index", 1)));
    json_t *op2 = openings(w, sid);
    assert_int_equal(json_array_size(op2), 2);
    json_decref(op2);

    cdsh_test_tavern_turn(w, sid, "Hello!");
    json_t *bodies = cdsh_test_model_env_bodies(&f.model);
    json_t *msgs = json_object_get(json_array_get(bodies, 0), "messages");
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 1), "content")), alt);
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 2), "content")),
                        "Hello!");
    /* Only one greeting in the history: the swapped-out one is gone. */
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m)
        assert_null(strstr(json_string_value(json_object_get(m, "content")) ?: "",
                           "You wake with a start"));
    /* After the first message the greeting stays. */
    json_t *args = json_pack("{s:s,s:i}", "sessionId", sid, "index", 2);
    json_t *res = cdsh_rpc_call(cdsh_host_rpc(w->host), "/tavern", "swipeGreeting", args, NULL);
    json_decref(args);
    assert_false(json_is_true(json_object_get(res, "ok")));
    char *dump = json_dumps(res, 0);
    assert_non_null(strstr(dump, "conversation-started"));
    free(dump);
    json_decref(res);
    json_t *op3 = openings(w, sid);
    assert_int_equal(json_array_size(op3), 2);
    json_decref(op3);
    json_decref(op);
    json_decref(bodies);
    free(sid);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(binding_opens_the_session_with_the_greeting),
        cmocka_unit_test(alternate_greetings_swap_before_the_first_message_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
