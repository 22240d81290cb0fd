/* test_cancel.c — cancellation tokens: fire once with a reason, children,
 * subscriptions, and waits that time out or wake from another thread. */
#include "support/testkit.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cancel.h"
#include "base/clock.h"

static void count_cb(void *arg)
{
    (*(int *)arg)++;
}

static void fires_once_and_keeps_first_reason(void **state)
{
    (void)state;
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    int calls = 0;
    assert_non_null(tok);
    assert_false(cdsh_cancel_is_fired(tok));
    assert_null(cdsh_cancel_reason(tok));
    uint64_t id = cdsh_cancel_subscribe(tok, count_cb, &calls);
    assert_true(id > 0);
    cdsh_cancel_fire(tok, "user pressed stop");
    cdsh_cancel_fire(tok, "second");
    assert_true(cdsh_cancel_is_fired(tok));
    assert_string_equal(cdsh_cancel_reason(tok), "user pressed stop");
    assert_int_equal(calls, 1);
    cdsh_cancel_unsubscribe(tok, id);
    cdsh_cancel_free(tok);
}

static void null_reason_becomes_cancelled_and_null_token_is_safe(void **state)
{
    (void)state;
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    cdsh_cancel_fire(tok, NULL);
    assert_string_equal(cdsh_cancel_reason(tok), "cancelled");
    cdsh_cancel_free(tok);
    assert_false(cdsh_cancel_is_fired(NULL));
    assert_null(cdsh_cancel_reason(NULL));
    cdsh_cancel_fire(NULL, "x");
    assert_int_equal(cdsh_cancel_subscribe(NULL, count_cb, NULL), 0);
    cdsh_cancel_unsubscribe(NULL, 1);
    cdsh_cancel_free(NULL);
}

static void children_fire_with_parent_reason(void **state)
{
    (void)state;
    cdsh_cancel *parent = cdsh_cancel_new(NULL);
    cdsh_cancel *child = cdsh_cancel_new(parent);
    cdsh_cancel *grandchild = cdsh_cancel_new(child);
    int calls = 0;
    uint64_t id = cdsh_cancel_subscribe(grandchild, count_cb, &calls);
    cdsh_cancel_fire(parent, "shutdown");
    assert_true(cdsh_cancel_is_fired(child));
    assert_true(cdsh_cancel_is_fired(grandchild));
    assert_string_equal(cdsh_cancel_reason(child), "shutdown");
    assert_string_equal(cdsh_cancel_reason(grandchild), "shutdown");
    assert_int_equal(calls, 1);
    cdsh_cancel_unsubscribe(grandchild, id);
    cdsh_cancel_free(grandchild);
    cdsh_cancel_free(child);
    cdsh_cancel_free(parent);
}

static void child_fire_does_not_fire_parent(void **state)
{
    (void)state;
    cdsh_cancel *parent = cdsh_cancel_new(NULL);
    cdsh_cancel *child = cdsh_cancel_new(parent);
    cdsh_cancel_fire(child, "tool timeout");
    assert_false(cdsh_cancel_is_fired(parent));
    assert_string_equal(cdsh_cancel_reason(child), "tool timeout");
    /* a freed child no longer hears its parent */
    cdsh_cancel_free(child);
    cdsh_cancel_fire(parent, "later");
    cdsh_cancel_free(parent);
}

static void child_created_after_parent_fired_is_fired(void **state)
{
    (void)state;
    cdsh_cancel *parent = cdsh_cancel_new(NULL);
    cdsh_cancel_fire(parent, "already gone");
    cdsh_cancel *child = cdsh_cancel_new(parent);
    assert_non_null(child);
    assert_true(cdsh_cancel_is_fired(child));
    assert_string_equal(cdsh_cancel_reason(child), "already gone");
    cdsh_cancel_free(child);
    cdsh_cancel_free(parent);
}

static void subscribe_after_fire_runs_callback_now(void **state)
{
    (void)state;
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    cdsh_cancel_fire(tok, NULL);
    int calls = 0;
    uint64_t id = cdsh_cancel_subscribe(tok, count_cb, &calls);
    assert_true(id > 0);
    assert_int_equal(calls, 1);
    cdsh_cancel_unsubscribe(tok, id);
    cdsh_cancel_free(tok);
}

static void unsubscribed_callback_does_not_run(void **state)
{
    (void)state;
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    int a = 0, b = 0;
    uint64_t ida = cdsh_cancel_subscribe(tok, count_cb, &a);
    uint64_t idb = cdsh_cancel_subscribe(tok, count_cb, &b);
    assert_int_not_equal(ida, idb);
    cdsh_cancel_unsubscribe(tok, ida);
    cdsh_cancel_unsubscribe(tok, 9999); /* unknown: ignored */
    cdsh_cancel_fire(tok, NULL);
    assert_int_equal(a, 0);
    assert_int_equal(b, 1);
    cdsh_cancel_unsubscribe(tok, idb);
    cdsh_cancel_free(tok);
}

static void many_subscriptions_all_run(void **state)
{
    (void)state;
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    int calls = 0;
    uint64_t ids[50];
    for (int i = 0; i < 50; i++)
        ids[i] = cdsh_cancel_subscribe(tok, count_cb, &calls);
    cdsh_cancel_fire(tok, NULL);
    assert_int_equal(calls, 50);
    for (int i = 0; i < 50; i++)
        cdsh_cancel_unsubscribe(tok, ids[i]);
    cdsh_cancel_free(tok);
}

static void wait_times_out_when_not_fired(void **state)
{
    (void)state;
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    int64_t t0 = cdsh_clock_mono_ms();
    assert_false(cdsh_cancel_wait(tok, 50));
    int64_t elapsed = cdsh_clock_mono_ms() - t0;
    assert_true(elapsed >= 50);
    assert_true(elapsed < 30000); /* returned at all: nothing else would wake it */
    assert_false(cdsh_cancel_wait(tok, 0));
    cdsh_cancel_free(tok);
}

static void wait_returns_at_once_when_already_fired(void **state)
{
    (void)state;
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    cdsh_cancel_fire(tok, NULL);
    int64_t t0 = cdsh_clock_mono_ms();
    assert_true(cdsh_cancel_wait(tok, 60000));
    assert_true(cdsh_clock_mono_ms() - t0 < 30000); /* did not sit out the 60 s */
    cdsh_cancel_free(tok);
}

static void *fire_later(void *arg)
{
    struct timespec ts = {0, 30 * 1000000L};
    nanosleep(&ts, NULL);
    cdsh_cancel_fire(arg, "from thread");
    return NULL;
}

static void wait_wakes_when_another_thread_fires(void **state)
{
    (void)state;
    cdsh_cancel *parent = cdsh_cancel_new(NULL);
    cdsh_cancel *child = cdsh_cancel_new(parent);
    pthread_t t;
    int64_t t0 = cdsh_clock_mono_ms();
    assert_int_equal(pthread_create(&t, NULL, fire_later, parent), 0);
    assert_true(cdsh_cancel_wait(child, -1));
    int64_t elapsed = cdsh_clock_mono_ms() - t0;
    pthread_join(t, NULL);
    assert_true(elapsed < 30000); /* the wait has no timeout: only the fire wakes it */
    assert_string_equal(cdsh_cancel_reason(child), "from thread");
    cdsh_cancel_free(child);
    cdsh_cancel_free(parent);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fires_once_and_keeps_first_reason),
        cmocka_unit_test(null_reason_becomes_cancelled_and_null_token_is_safe),
        cmocka_unit_test(children_fire_with_parent_reason),
        cmocka_unit_test(child_fire_does_not_fire_parent),
        cmocka_unit_test(child_created_after_parent_fired_is_fired),
        cmocka_unit_test(subscribe_after_fire_runs_callback_now),
        cmocka_unit_test(unsubscribed_callback_does_not_run),
        cmocka_unit_test(many_subscriptions_all_run),
        cmocka_unit_test(wait_times_out_when_not_fired),
        cmocka_unit_test(wait_returns_at_once_when_already_fired),
        cmocka_unit_test(wait_wakes_when_another_thread_fires),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
