/* test_cmd_chat_engine.c — `cdsh chat --engine` end to end in child
 * processes with scripted stdin: the reply printed, a permission request
 * answered with the agent's label, the engine turn in the session store,
 * resume after a new process, fail-closed approvals, no agent left running. */
#include "support/testkit.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp/acp_fixture.h"
#include "agent/session_store.h"
#include "plugins/acp/state.h"

typedef struct fx {
    char *home;
    char pidfile[4300];
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    snprintf(f->pidfile, sizeof f->pidfile, "%s/pids", f->home);
    char args[4400];
    snprintf(args, sizeof args, "[\"--pid-file\",\"%s\"]", f->pidfile);
    acp_write_fixture_engine(f->home, args, "");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cdsh_test_home_free(f->home);
    free(f);
    return 0;
}

/* The session id the chat banner names ("— session s-... ."). */
static char *banner_session(const char *out)
{
    const char *p = strstr(out, "session s-");
    assert_non_null(p);
    p += 8;
    return strndup(p, strcspn(p, ". \n"));
}

/* Every agent process this test started has gone. */
static void assert_no_agent_left(const fx *f)
{
    char *pids = cdsh_test_read_file(f->pidfile, NULL);
    assert_non_null(pids);
    for (char *line = strtok(pids, "\n"); line; line = strtok(NULL, "\n"))
        assert_false(acp_pid_alive(atoi(line)));
    free(pids);
}

/* The payloads of the session's events of one type, in order (owned). */
static json_t *events_of(const char *sid, const char *type)
{
    cdsh_session_store *st = NULL;
    assert_int_equal(cdsh_session_store_open(cdsh_test_home(), NULL, &st, NULL), 0);
    json_t *evs = cdsh_session_store_events(st, sid, 0, 10000, NULL, NULL);
    cdsh_session_store_close(st);
    json_t *out = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(evs, i, e) {
        if (strcmp(json_string_value(json_object_get(e, "type")), type) == 0)
            json_array_append(out, json_object_get(e, "payload"));
    }
    json_decref(evs);
    return out;
}

static const char *text_at(const json_t *arr, size_t i, const char *key)
{
    return json_string_value(json_object_get(json_array_get(arr, i), key));
}

static void chat_with_an_engine_prints_asks_records_and_resumes(void **state)
{
    fx *f = *state;
    char *out = NULL, *err = NULL;
    int rc = cdsh_test_run_cdsh("hello\npermission\nAlways allow\nall-updates\n", &out, &err,
                                "chat", "--engine", "fixture", "--cwd", f->home, NULL);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "Engine fixture in "));
    assert_non_null(strstr(out, "PONG"));
    /* The request shows the agent's title and option labels as given. */
    assert_non_null(strstr(out, "[approval] the agent asks: rm -rf build"));
    assert_non_null(strstr(out, "  1) Allow once\n  2) Always allow\n  3) Reject\n"));
    assert_non_null(strstr(out, "permission: selected/always"));
    assert_non_null(strstr(out, "(thinking) thinking about it"));
    assert_non_null(strstr(out, "[ACP_PLAN] Plan:"));
    assert_non_null(strstr(out, "→ ls {\"command\":\"ls\"}"));
    assert_non_null(strstr(out, "all done"));
    char *sid = banner_session(out);
    free(out);
    free(err);

    /* The turns are in the cdsh session store. */
    json_t *users = events_of(sid, "user/message");
    assert_int_equal(json_array_size(users), 3);
    assert_string_equal(text_at(users, 0, "text"), "hello");
    json_decref(users);
    /* Replies, and before each tool call the message that advertises it. */
    json_t *replies = events_of(sid, "assistant/message");
    assert_int_equal(json_array_size(replies), 5);
    assert_string_equal(text_at(replies, 0, "text"), "PONG");
    assert_string_equal(text_at(replies, 0, "finishReason"), "end_turn");
    json_t *ad = json_object_get(json_array_get(replies, 1), "toolCalls");
    assert_string_equal(json_string_value(json_object_get(json_array_get(ad, 0), "id")), "call-p");
    assert_string_equal(text_at(replies, 2, "text"), "permission: selected/always");
    ad = json_object_get(json_array_get(replies, 3), "toolCalls");
    assert_string_equal(json_string_value(json_object_get(json_array_get(ad, 0), "id")), "call-1");
    assert_string_equal(text_at(replies, 4, "reasoning"), "thinking about it");
    json_decref(replies);
    json_t *calls = events_of(sid, "tool/call");
    json_t *results = events_of(sid, "tool/result");
    size_t i;
    json_t *c;
    bool ls_ok = false;
    json_array_foreach(calls, i, c) {
        if (strcmp(json_string_value(json_object_get(c, "callId")), "call-1") == 0) {
            assert_string_equal(json_string_value(json_object_get(c, "name")), "ls");
            assert_string_equal(json_string_value(json_object_get(c, "arguments")),
                                "{\"command\":\"ls\"}");
        }
    }
    json_array_foreach(results, i, c) {
        if (strcmp(json_string_value(json_object_get(c, "callId")), "call-1") == 0) {
            assert_false(json_is_true(json_object_get(c, "isError")));
            ls_ok = true;
        }
    }
    assert_true(ls_ok);
    json_decref(calls);
    json_decref(results);
    json_t *ends = events_of(sid, "turn/end");
    assert_int_equal(json_array_size(ends), 3);
    assert_string_equal(text_at(ends, 0, "reason"), "done");
    json_decref(ends);
    json_t *entry = NULL;
    assert_int_equal(cdsh_acp_state_session_get(cdsh_test_home(), sid, &entry, NULL), 0);
    char *acp = strdup(json_string_value(json_object_get(entry, "acpSessionId")));
    json_decref(entry);
    assert_no_agent_left(f);

    /* A new process resumes the bound session (session/load); what the load
     * replays is not part of the new turn. Nobody answers: fail closed. */
    rc = cdsh_test_run_cdsh("hello\npermission\n", &out, &err, "chat", "--session", sid, NULL);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "Engine fixture in "));
    assert_non_null(strstr(out, "(locked)"));
    assert_non_null(strstr(out, "permission: cancelled/-"));
    free(out);
    free(err);
    replies = events_of(sid, "assistant/message");
    assert_int_equal(json_array_size(replies), 8); /* PONG, the advertisement, permission */
    assert_string_equal(text_at(replies, 5, "text"), "PONG");
    json_decref(replies);
    assert_int_equal(cdsh_acp_state_session_get(cdsh_test_home(), sid, &entry, NULL), 0);
    assert_string_equal(json_string_value(json_object_get(entry, "acpSessionId")), acp);
    json_decref(entry);
    assert_no_agent_left(f);
    free(acp);
    free(sid);
}

static void failures_show_the_class_and_the_agents_words(void **state)
{
    fx *f = *state;
    char *out = NULL, *err = NULL;
    int rc = cdsh_test_run_cdsh("funds\npermission\n", &out, &err, "chat", "--engine", "fixture",
                                "--cwd", f->home, "--approve", "reject", NULL);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "[INSUFFICIENT_FUNDS] "));
    assert_non_null(strstr(out, "Insufficient account funds"));
    assert_non_null(strstr(out, "permission: selected/reject"));
    char *sid = banner_session(out);
    json_t *notices = events_of(sid, "notice");
    bool found = false;
    size_t i;
    json_t *n;
    json_array_foreach(notices, i, n) {
        const char *code = json_string_value(json_object_get(n, "code"));
        found = found || (code && strcmp(code, "INSUFFICIENT_FUNDS") == 0 &&
                          strstr(json_string_value(json_object_get(n, "text")),
                                 "Insufficient account funds"));
    }
    assert_true(found);
    json_decref(notices);
    free(sid);
    free(out);
    free(err);
    /* An unknown engine is refused before any turn. */
    rc = cdsh_test_run_cdsh("", &out, &err, "chat", "--engine", "no-such", NULL);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "UNKNOWN_ENGINE"));
    free(out);
    free(err);
    assert_no_agent_left(f);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(chat_with_an_engine_prints_asks_records_and_resumes),
        T(failures_show_the_class_and_the_agents_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
