/* test_tavern_wire.c — the tavern's host request boundaries with the real
 * agent loop and the scripted fake model: a bound session's requests carry
 * tavern:standing in the system prompt (after the plugin-rule segments) and
 * the frozen tavern:turn runtime context in every step; previewPrompt returns
 * the same standing text; an unbound session's requests carry no tavern text. */
#include "support/testkit.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "host/prompt.h"
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

static char *new_session(cdsh_test_tavern_world *w, const char *title)
{
    cdsh_session_spec spec = {.title = title};
    char *sid = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_session_store_create(w->store, &spec, &sid, &err), 0);
    return sid;
}

static const char *msg_text(const json_t *body, long idx)
{
    const json_t *m = json_object_get(body, "messages");
    size_t n = json_array_size(m);
    return json_string_value(
        json_object_get(json_array_get(m, idx < 0 ? n + (size_t)idx : (size_t)idx), "content"));
}

#define CALL(id, name, args)                                                                       \
    "{\"tool_calls\":[{\"index\":0,\"id\":\"" id "\",\"name\":\"" name "\",\"arguments\":\"" args  \
    "\"}],\"finish_reason\":\"tool_calls\"}"
#define SAY(text) "{\"chunks\":[{\"text\":\"" text "\"}],\"finish_reason\":\"stop\"}"

static void bound_session_requests_carry_standing_and_turn_context(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, "[" CALL("c1", "tavern_lore_read", "{}") "," SAY("Hello.") "," SAY("Plain.") "]");
    cdsh_test_tavern_world *w = &f.w;
    /* A plugin-rule segment (orders 100-199 sit before the standing). */
    cdsh_prompt_segment_def rules = {.id = "test:rules", .order = 150, .text = "RULES 150"};
    cdsh_disposer_t d;
    cdsh_error err = {0};
    assert_int_equal(cdsh_prompt_register(cdsh_host_prompt(w->host), NULL, &rules, &d, &err), 0);

    char *sid = cdsh_test_tavern_bound_session(w, "import", "bound", NULL);
    char *other = new_session(w, "unbound");
    json_t *preview =
        cdsh_test_tavern_rpc(w, "previewPrompt", json_pack("{s:s}", "sessionId", sid));
    const char *standing = json_string_value(json_object_get(preview, "standing"));
    assert_non_null(standing);
    assert_true(strlen(standing) > 100);
    assert_non_null(strstr(standing, "Seraphina"));

    cdsh_test_tavern_turn(w, sid, "I wake up in the forest.");
    cdsh_test_tavern_turn(w, other, "Hello there.");
    json_t *bodies = cdsh_test_model_env_bodies(&f.model);
    assert_int_equal(json_array_size(bodies), 3);

    /* Bound: both steps carry the standing after the rules and the same
     * runtime context as the last message. */
    for (size_t i = 0; i < 2; i++) {
        const char *sys = msg_text(json_array_get(bodies, i), 0);
        const char *at = strstr(sys, standing);
        assert_non_null(at);
        const char *r = strstr(sys, "RULES 150");
        assert_non_null(r);
        assert_true(r < at);
        assert_non_null(strstr(msg_text(json_array_get(bodies, i), -1),
                               CDSH_AGENT_CONTEXT_HEAD "<runtime_context name=\"tavern:turn\">\n"));
    }
    assert_string_equal(msg_text(json_array_get(bodies, 0), -1),
                        msg_text(json_array_get(bodies, 1), -1));
    /* The bound preset's sampling (as previewPrompt reports it) reaches both steps. */
    json_t *smp = json_object_get(preview, "sampling");
    for (size_t k = 0; k < 2; k++) {
        json_t *b = json_array_get(bodies, k);
        assert_non_null(json_object_get(b, "temperature"));
        assert_float_equal(json_number_value(json_object_get(b, "temperature")),
                           json_number_value(json_object_get(smp, "temperature")), 1e-9);
        if (json_integer_value(json_object_get(smp, "maxTokens")) > 0)
            assert_int_equal(json_integer_value(json_object_get(b, "max_tokens")),
                             json_integer_value(json_object_get(smp, "maxTokens")));
        assert_null(json_object_get(b, "topP"));
    }

    /* Unbound: no standing, no runtime context, no sampling override. */
    const json_t *ub = json_array_get(bodies, 2);
    assert_null(strstr(msg_text(ub, 0), "Seraphina"));
    assert_null(strstr(msg_text(ub, 0), standing));
    assert_non_null(strstr(msg_text(ub, 0), "RULES 150"));
    assert_string_equal(msg_text(ub, -1), "Hello there.");
    json_t *msgs = json_object_get(ub, "messages");
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m)
        assert_null(strstr(json_string_value(json_object_get(m, "content")), "runtime_context"));
    assert_null(json_object_get(ub, "temperature"));
    json_t *unbound_preview =
        cdsh_test_tavern_rpc(w, "previewPrompt", json_pack("{s:s}", "sessionId", other));
    assert_string_equal(json_string_value(json_object_get(unbound_preview, "standing")), "");
    json_decref(unbound_preview);

    json_decref(bodies);
    json_decref(preview);
    cdsh_disposer_run(&d);
    free(sid);
    free(other);
    fx_close(&f);
}

/* The record of `sid`'s turn `turn` in getTriggerLog{sessionId}, borrowed
 * from *log (owned by the caller); fails when there is none. */
static json_t *trigger_record(cdsh_test_tavern_world *w, const char *sid, long turn, json_t **log)
{
    *log = cdsh_test_tavern_rpc(w, "getTriggerLog", json_pack("{s:s}", "sessionId", sid));
    size_t i;
    json_t *rec;
    json_array_foreach(*log, i, rec) {
        assert_string_equal(json_string_value(json_object_get(rec, "sessionId")), sid);
        if (!strcmp(json_string_value(json_object_get(rec, "kind")), "worldInfo") &&
            json_integer_value(json_object_get(rec, "turn")) == turn)
            return rec;
    }
    fail_msg("no worldInfo record for turn %ld of %s", turn, sid);
    return NULL;
}

/* The entry of `rec` whose content was keyed by `uid`, or NULL. */
static json_t *trigger_entry(json_t *rec, json_int_t uid)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(rec, "entries"), i, e) {
        if (json_integer_value(json_object_get(e, "uid")) == uid)
            return e;
    }
    return NULL;
}

static void live_turns_log_why_entries_fired_per_session(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, "[" SAY("The woods are old.") "," SAY("Rest here.") "]");
    cdsh_test_tavern_world *w = &f.w;
    char *a = cdsh_test_tavern_bound_session(w, "import", "a", NULL);
    /* b's card greets without naming the forest: the greeting opens the
     * chat and world info scans it (as SillyTavern does). */
    json_t *quiet = json_load_file(CDSH_TEST_TAVERN_SAMPLE_V2, 0, NULL);
    json_object_set_new(json_object_get(quiet, "data"), "first_mes",
                        json_string("*{{char}} nods.* Welcome, traveller."));
    char *qbytes = json_dumps(quiet, 0);
    char *b = cdsh_test_tavern_bound_session_bytes(w, qbytes, strlen(qbytes), "import", "b", NULL);
    free(qbytes);
    json_decref(quiet);
    /* a's message names the forest (entry 0: eldoria/wood/forest), b's none */
    cdsh_test_tavern_turn(w, a, "Tell me about the forest of Eldoria.");
    cdsh_test_tavern_turn(w, b, "Hello there.");

    json_t *log = NULL;
    json_t *rec = trigger_record(w, a, 1, &log);
    assert_true(json_integer_value(json_object_get(rec, "considered")) >= 4);
    assert_true(json_integer_value(json_object_get(rec, "fired")) >= 1);
    json_t *forest = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(rec, "entries"), i, e) {
        if (json_is_true(json_object_get(e, "fired")) &&
            strstr(json_string_value(json_object_get(e, "reason")), "primary key 'eldoria'"))
            forest = e;
    }
    assert_non_null(forest);
    /* entry 0's content names the others: they fire by recursion */
    assert_int_equal(json_array_size(json_object_get(rec, "entries")),
                     json_integer_value(json_object_get(rec, "considered")) -
                         json_integer_value(json_object_get(rec, "routine")));
    json_decref(log);

    /* b named nothing: every entry was a routine miss, counted, not listed */
    rec = trigger_record(w, b, 1, &log);
    assert_null(trigger_entry(rec, json_integer_value(json_object_get(forest, "uid"))));
    assert_int_equal(json_integer_value(json_object_get(rec, "fired")), 0);
    assert_true(json_integer_value(json_object_get(rec, "considered")) >= 4);
    assert_int_equal(json_integer_value(json_object_get(rec, "routine")),
                     json_integer_value(json_object_get(rec, "considered")));
    assert_int_equal(json_array_size(json_object_get(rec, "entries")), 0);
    json_decref(log);

    /* a preview writes no record */
    json_t *before = cdsh_test_tavern_rpc(w, "getTriggerLog", json_object());
    json_decref(cdsh_test_tavern_rpc(w, "previewPrompt", json_pack("{s:s}", "sessionId", a)));
    json_t *after = cdsh_test_tavern_rpc(w, "getTriggerLog", json_object());
    assert_int_equal(json_array_size(after), json_array_size(before));
    json_decref(before);
    json_decref(after);

    free(a);
    free(b);
    fx_close(&f);
}

/* The world-info records are kept with their floors in the story: after a
 * restart of the host getTriggerLog{sessionId} returns the same records of
 * every turn, newest last, and nothing of another session. */
static void the_trigger_log_survives_a_restart(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, "[" SAY("The woods are old.") "," SAY("Rest here.") "," SAY("Hm.") "]");
    cdsh_test_tavern_world *w = &f.w;
    char *a = cdsh_test_tavern_bound_session(w, "import", "a", NULL);
    char *b = cdsh_test_tavern_bound_session(w, "import", "b", NULL);
    cdsh_test_tavern_turn(w, a, "Tell me about the forest of Eldoria.");
    cdsh_test_tavern_turn(w, a, "Thank you.");
    cdsh_test_tavern_turn(w, b, "Hello there.");
    json_t *log = NULL;
    json_t *rec = trigger_record(w, a, 1, &log);
    char *t1 = json_dumps(rec, JSON_SORT_KEYS);
    json_decref(log);
    rec = trigger_record(w, a, 2, &log);
    char *t2 = json_dumps(rec, JSON_SORT_KEYS);
    json_decref(log);

    cdsh_test_tavern_world_close(w);
    cdsh_test_tavern_world_open(w);
    rec = trigger_record(w, a, 1, &log);
    char *r1 = json_dumps(rec, JSON_SORT_KEYS);
    assert_string_equal(r1, t1);
    /* oldest first, one record per turn, all of this session (trigger_record checks) */
    size_t n = 0, i;
    long last = 0;
    json_t *x;
    json_array_foreach(log, i, x) {
        if (strcmp(json_string_value(json_object_get(x, "kind")), "worldInfo"))
            continue;
        long t = (long)json_integer_value(json_object_get(x, "turn"));
        assert_true(t > last);
        last = t;
        n++;
    }
    assert_int_equal(n, 2);
    json_decref(log);
    rec = trigger_record(w, a, 2, &log);
    char *r2 = json_dumps(rec, JSON_SORT_KEYS);
    assert_string_equal(r2, t2);
    json_decref(log);
    rec = trigger_record(w, b, 1, &log);
    json_decref(log);
    free(t1);
    free(t2);
    free(r1);
    free(r2);
    free(a);
    free(b);
    fx_close(&f);
}

/* The turn after continueFloor is a `continue` turn (its plan and trigger
 * record say so), the next one is normal again. */
static void continue_gives_the_next_turn_its_generation_type(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, "[" SAY("The woods are old.") "," SAY("And older still.") "," SAY("Rest.") "]");
    cdsh_test_tavern_world *w = &f.w;
    char *a = cdsh_test_tavern_bound_session(w, "import", "a", NULL);
    cdsh_test_tavern_turn(w, a, "Tell me about the forest of Eldoria.");
    json_t *r = cdsh_test_tavern_rpc(w, "continueFloor", json_pack("{s:s}", "sessionId", a));
    const char *resend = json_string_value(json_object_get(json_object_get(r, "resend"), "text"));
    assert_non_null(resend);
    cdsh_test_tavern_turn(w, a, resend);
    json_decref(r);
    cdsh_test_tavern_turn(w, a, "Thank you.");
    const char *want[] = {"normal", "continue", "normal"};
    for (long t = 1; t <= 3; t++) {
        json_t *log = NULL;
        json_t *rec = trigger_record(w, a, t, &log);
        assert_string_equal(json_string_value(json_object_get(rec, "generationType")), want[t - 1]);
        json_decref(log);
    }
    free(a);
    fx_close(&f);
}

/* true if any message of the request body contains needle. */
static bool body_mentions(const json_t *body, const char *needle)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(body, "messages"), i, m) {
        const char *t = json_string_value(json_object_get(m, "content"));
        if (t && strstr(t, needle))
            return true;
    }
    return false;
}

static void the_authors_note_follows_its_insertion_interval(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, "[" SAY("One.") "," SAY("Two.") "," SAY("Three.") "," SAY("Four.") "]");
    cdsh_test_tavern_world *w = &f.w;
    char *sid = cdsh_test_tavern_bound_session(w, "import", "note", NULL);
    /* every second message of the person's (SillyTavern's frequency rule) */
    json_decref(cdsh_test_tavern_rpc(w, "updateSettings",
                                     json_pack("{s:{s:{s:s,s:i}}}", "patch", "authorNote", "text",
                                               "NOTE-EVERY-SECOND", "interval", 2)));
    const char *lines[] = {"First.", "Second.", "Third.", "Fourth."};
    for (size_t i = 0; i < 4; i++)
        cdsh_test_tavern_turn(w, sid, lines[i]);
    json_t *bodies = cdsh_test_model_env_bodies(&f.model);
    assert_int_equal(json_array_size(bodies), 4);
    for (size_t i = 0; i < 4; i++)
        if (body_mentions(json_array_get(bodies, i), "NOTE-EVERY-SECOND") != (i % 2 == 1))
            fail_msg("turn %zu: the note should %sbe in the request", i + 1,
                     i % 2 == 1 ? "" : "not ");
    json_decref(bodies);
    free(sid);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bound_session_requests_carry_standing_and_turn_context),
        cmocka_unit_test(live_turns_log_why_entries_fired_per_session),
        cmocka_unit_test(the_trigger_log_survives_a_restart),
        cmocka_unit_test(the_authors_note_follows_its_insertion_interval),
        cmocka_unit_test(continue_gives_the_next_turn_its_generation_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
