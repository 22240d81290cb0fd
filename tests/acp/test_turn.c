/* test_turn.c — an engine turn recorded in the session store (turn.c)
 * against the scripted C agent: overlapping tool calls are advertised in
 * assistant/message before their tool/call (the digest's advertisement
 * rule), so the replayed message list is a valid OpenAI-style sequence. */
#include "support/testkit.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "acp/acp_fixture.h"
#include "agent/session_store.h"
#include "plugins/acp/turn.h"

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* Every tool message follows (through tool messages only) an assistant
 * message whose tool_calls name its id, and every advertised call gets
 * exactly one result before the next non-tool message. */
static void assert_valid_openai_sequence(const json_t *msgs)
{
    const json_t *open = NULL; /* tool_calls of the assistant message being answered */
    json_t *answered = json_object();
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        const char *role = str(m, "role");
        if (strcmp(role, "tool") == 0) {
            assert_non_null(open);
            const char *id = str(m, "tool_call_id");
            bool found = false;
            size_t j;
            json_t *c;
            json_array_foreach(open, j, c)
                found |= strcmp(str(c, "id"), id) == 0;
            assert_true(found);
            assert_null(json_object_get(answered, id));
            json_object_set_new(answered, id, json_true());
            continue;
        }
        if (open)
            assert_int_equal(json_object_size(answered), json_array_size(open));
        open = strcmp(role, "assistant") == 0 ? json_object_get(m, "tool_calls") : NULL;
        if (open && !json_array_size(open))
            open = NULL;
        json_object_clear(answered);
    }
    if (open)
        assert_int_equal(json_object_size(answered), json_array_size(open));
    json_decref(answered);
}

/* A fixture engine bound to a new session; one turn with `prompt` has run
 * and ended ok. */
typedef struct turn_fx {
    char *home;
    cdsh_acp_service *svc;
    cdsh_session_store *st;
    char *sid;
} turn_fx;

static void turn_fx_run(turn_fx *f, const char *title, const char *prompt)
{
    f->home = cdsh_test_home_new();
    acp_write_fixture_engine(f->home, "[]", "");
    cdsh_error err = {0};
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, &err);
    assert_non_null(f->svc);
    f->st = NULL;
    assert_int_equal(cdsh_session_store_open(cdsh_test_home(), NULL, &f->st, &err), 0);
    f->sid = NULL;
    cdsh_session_spec spec = {.title = title};
    assert_int_equal(cdsh_session_store_create(f->st, &spec, &f->sid, &err), 0);
    assert_int_equal(cdsh_acp_service_bind(f->svc, f->sid, "fixture", f->home, &err), 0);
    cdsh_acp_turn_opts o = {.svc = f->svc, .store = f->st};
    json_t *res = NULL;
    assert_int_equal(cdsh_acp_turn_run(&o, f->sid, prompt, NULL, &res, &err), 0);
    assert_true(json_is_true(json_object_get(res, "ok")));
    json_decref(res);
}

static void turn_fx_free(turn_fx *f)
{
    free(f->sid);
    cdsh_session_store_close(f->st);
    cdsh_acp_service_free(f->svc);
    cdsh_test_home_free(f->home);
}

static void overlapping_engine_tool_calls_replay_as_a_valid_sequence(void **state)
{
    (void)state;
    turn_fx f;
    turn_fx_run(&f, "tools", "overlapping-tools");
    cdsh_session_store *st = f.st;
    const char *sid = f.sid;
    cdsh_error err = {0};

    /* The log: each tool/call comes after exactly one advertisement naming it
     * with the same name and arguments. */
    json_t *evs = cdsh_session_store_events(st, sid, 0, 1000, NULL, &err);
    assert_non_null(evs);
    json_t *advertised = json_object();
    const char *order[16];
    int n = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(evs, i, ev) {
        const char *type = str(ev, "type");
        json_t *p = json_object_get(ev, "payload");
        if (strcmp(type, "assistant/message") == 0) {
            size_t j;
            json_t *c;
            json_array_foreach(json_object_get(p, "toolCalls"), j, c) {
                assert_null(json_object_get(advertised, str(c, "id")));
                json_object_set(advertised, str(c, "id"), c);
            }
        } else if (strcmp(type, "tool/call") == 0) {
            json_t *ad = json_object_get(advertised, str(p, "callId"));
            assert_non_null(ad);
            assert_string_equal(str(ad, "name"), str(p, "name"));
            assert_string_equal(str(ad, "arguments"), str(p, "arguments"));
            order[n++] = str(p, "callId");
        }
    }
    assert_int_equal(n, 3);
    assert_string_equal(order[0], "call-a");
    assert_string_equal(order[1], "call-b");
    assert_string_equal(order[2], "call-c");
    json_decref(advertised);

    json_t *msgs = cdsh_session_store_messages(st, sid, &err);
    assert_non_null(msgs);
    assert_valid_openai_sequence(msgs);
    /* user, (assistant a, tool a), (assistant b, tool b), (assistant c, tool c), the reply. */
    assert_int_equal(json_array_size(msgs), 8);
    const char *roles[] = {"user", "assistant", "tool", "assistant",
                           "tool", "assistant", "tool", "assistant"};
    for (size_t k = 0; k < 8; k++)
        assert_string_equal(str(json_array_get(msgs, k), "role"), roles[k]);
    assert_string_equal(str(json_array_get(msgs, 2), "content"), "A");
    assert_string_equal(str(json_array_get(msgs, 4), "content"), "B");
    assert_non_null(strstr(str(json_array_get(msgs, 6), "content"), "gave no result"));
    assert_string_equal(str(json_array_get(msgs, 7), "content"), "looking done");
    json_t *tc = json_object_get(json_array_get(msgs, 1), "tool_calls");
    assert_string_equal(str(json_object_get(json_array_get(tc, 0), "function"), "arguments"),
                        "{\"path\":\"a.txt\"}");
    json_decref(msgs);
    json_decref(evs);
    turn_fx_free(&f);
}

/* Claude Code ACP sends rawInput {} first and the input in a second pending
 * tool_call: the stored call carries the real arguments and title. */
static void late_tool_arguments_are_stored(void **state)
{
    (void)state;
    turn_fx f;
    turn_fx_run(&f, "late", "late-args");
    cdsh_session_store *st = f.st;
    const char *sid = f.sid;
    cdsh_error err = {0};
    json_t *evs = cdsh_session_store_events(st, sid, 0, 1000, NULL, &err);
    int calls = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(evs, i, ev) {
        if (strcmp(str(ev, "type"), "tool/call") != 0)
            continue;
        json_t *p = json_object_get(ev, "payload");
        assert_string_equal(str(p, "callId"), "call-late");
        assert_string_equal(str(p, "arguments"), "{\"command\":\"echo hi\"}");
        assert_string_equal(str(p, "title"), "`echo hi`");
        calls++;
    }
    assert_int_equal(calls, 1);
    json_decref(evs);
    turn_fx_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(overlapping_engine_tool_calls_replay_as_a_valid_sequence),
        cmocka_unit_test(late_tool_arguments_are_stored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
