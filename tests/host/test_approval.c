/* test_approval.c — the approval broker (host/approval.c): every ending of a
 * request (selected, cancelled by the person, the token, the session or
 * closing, timeout, unavailable), the answer's checks and the tool bridge. */
#include "support/testkit.h"

#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/approval.h"

typedef struct seen {
    cdsh_approvals *ap;
    json_t *last;       /* the last request presented */
    json_t *resolved;   /* the last resolution */
    const char *answer; /* answered from inside present; NULL: leave it pending */
    int refuse;
} seen;

static int present(void *ud, const json_t *request)
{
    seen *s = ud;
    json_decref(s->last);
    s->last = json_deep_copy(request);
    if (s->refuse)
        return -1;
    if (s->answer)
        cdsh_approvals_answer(s->ap, json_string_value(json_object_get(request, "id")), NULL,
                              s->answer, NULL);
    return 0;
}

static void resolved(void *ud, const json_t *res)
{
    seen *s = ud;
    json_decref(s->resolved);
    s->resolved = json_deep_copy(res);
}

static json_t *two_options(void)
{
    return json_pack("[{s:s, s:s, s:s}, {s:s, s:s, s:s}]", "optionId", "yes", "name", "Do it",
                     "kind", "allow_once", "optionId", "no", "name", "Don't", "kind",
                     "reject_once");
}

static void a_selection_is_returned_and_reported(void **state)
{
    (void)state;
    cdsh_approvals *ap = cdsh_approvals_new(0);
    seen s = {.ap = ap, .answer = "yes"};
    cdsh_approval_channel ch = {present, resolved, &s};
    cdsh_approvals_set_channel(ap, &ch);
    json_t *opts = two_options();
    const char *outcome = NULL;
    char *id = cdsh_approvals_ask(ap, "s-1", "acp", "rm it", "details", NULL, opts, NULL, &outcome);
    assert_string_equal(id, "yes");
    assert_string_equal(outcome, "selected");
    assert_string_equal(json_string_value(json_object_get(s.last, "title")), "rm it");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(s.last, "options"), 1), "name")),
                        "Don't");
    assert_string_equal(json_string_value(json_object_get(s.resolved, "outcome")), "selected");
    free(id);
    /* Refused by the channel, or no channel: unavailable, fail closed. */
    s.refuse = 1;
    assert_null(cdsh_approvals_ask(ap, "s-1", "acp", "t", NULL, NULL, opts, NULL, &outcome));
    assert_string_equal(outcome, "unavailable");
    cdsh_approvals_set_channel(ap, NULL);
    assert_null(cdsh_approvals_ask(ap, "s-1", "acp", "t", NULL, NULL, opts, NULL, &outcome));
    assert_string_equal(outcome, "unavailable");
    json_decref(opts);
    json_decref(s.last);
    json_decref(s.resolved);
    cdsh_approvals_free(ap);
}

static void unanswered_requests_time_out(void **state)
{
    (void)state;
    cdsh_approvals *ap = cdsh_approvals_new(100);
    seen s = {.ap = ap};
    cdsh_approval_channel ch = {present, resolved, &s};
    cdsh_approvals_set_channel(ap, &ch);
    json_t *opts = two_options();
    const char *outcome = NULL;
    assert_null(cdsh_approvals_ask(ap, "s-1", "tool", "t", NULL, NULL, opts, NULL, &outcome));
    assert_string_equal(outcome, "timeout");
    assert_string_equal(json_string_value(json_object_get(s.resolved, "outcome")), "timeout");
    json_decref(opts);
    json_decref(s.last);
    json_decref(s.resolved);
    cdsh_approvals_free(ap);
}

typedef struct asker {
    cdsh_approvals *ap;
    cdsh_cancel *cancel;
    char *id;
    const char *outcome;
} asker;

static void *ask_main(void *arg)
{
    asker *a = arg;
    json_t *opts = two_options();
    a->id = cdsh_approvals_ask(a->ap, "s-2", "acp", "t", NULL, NULL, opts, a->cancel, &a->outcome);
    json_decref(opts);
    return NULL;
}

/* The id of the one pending request of s-2, waiting for it to appear. */
static char *pending_id(cdsh_approvals *ap)
{
    for (int i = 0; i < 1000; i++) {
        json_t *p = cdsh_approvals_pending_dup(ap, "s-2");
        if (json_array_size(p)) {
            char *id = strdup(json_string_value(json_object_get(json_array_get(p, 0), "id")));
            json_decref(p);
            return id;
        }
        json_decref(p);
        usleep(5000);
    }
    fail_msg("no pending request");
    return NULL;
}

static void answers_are_checked_and_every_cancel_path_ends_the_request(void **state)
{
    (void)state;
    cdsh_approvals *ap = cdsh_approvals_new(0);
    seen s = {.ap = ap};
    cdsh_approval_channel ch = {present, resolved, &s};
    cdsh_approvals_set_channel(ap, &ch);
    for (int round = 0; round < 4; round++) {
        asker a = {.ap = ap, .cancel = cdsh_cancel_new(NULL)};
        pthread_t t;
        pthread_create(&t, NULL, ask_main, &a);
        char *id = pending_id(ap);
        cdsh_error err = {0};
        assert_int_equal(cdsh_approvals_answer(ap, id, NULL, "maybe", &err), CDSH_EINVAL);
        assert_string_equal(err.code, "BAD_OPTION");
        assert_int_equal(cdsh_approvals_answer(ap, id, "s-other", "yes", &err), CDSH_ENOTFOUND);
        assert_string_equal(err.code, "NO_APPROVAL");
        if (round == 0)
            assert_int_equal(cdsh_approvals_answer(ap, id, "s-2", NULL, NULL), 0);
        else if (round == 1)
            cdsh_cancel_fire(a.cancel, "turn cancelled");
        else if (round == 2)
            assert_int_equal(cdsh_approvals_cancel_session(ap, "s-2"), 1);
        else
            cdsh_approvals_close(ap);
        pthread_join(t, NULL);
        assert_null(a.id);
        assert_string_equal(a.outcome, "cancelled");
        assert_int_equal(cdsh_approvals_answer(ap, id, NULL, "yes", &err), CDSH_ENOTFOUND);
        free(id);
        cdsh_cancel_free(a.cancel);
    }
    /* Closed: later asks end at once. */
    json_t *opts = two_options();
    const char *outcome = NULL;
    assert_null(cdsh_approvals_ask(ap, "s-3", "acp", "t", NULL, NULL, opts, NULL, &outcome));
    assert_string_equal(outcome, "cancelled");
    json_decref(opts);
    json_decref(s.last);
    json_decref(s.resolved);
    cdsh_approvals_free(ap);
}

static void tool_outcomes_map_the_answers(void **state)
{
    (void)state;
    assert_int_equal(cdsh_approvals_tool_outcome(CDSH_APPROVAL_TOOL_ALLOW, "selected"),
                     CDSH_APPROVAL_ALLOWED_ONCE);
    assert_int_equal(cdsh_approvals_tool_outcome(CDSH_APPROVAL_TOOL_REJECT, "selected"),
                     CDSH_APPROVAL_REJECTED);
    assert_int_equal(cdsh_approvals_tool_outcome(NULL, "unavailable"), CDSH_APPROVAL_UNAVAILABLE);
    assert_int_equal(cdsh_approvals_tool_outcome(NULL, "timeout"), CDSH_APPROVAL_CANCELLED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_selection_is_returned_and_reported),
        cmocka_unit_test(unanswered_requests_time_out),
        cmocka_unit_test(answers_are_checked_and_every_cancel_path_ends_the_request),
        cmocka_unit_test(tool_outcomes_map_the_answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
