/* test_events.c — the notification bus: patterns, scope filters, disposal,
 * re-entrancy and concurrent use. */
#include "support/testkit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "host/events.h"

typedef struct rec {
    char log[1024];
    int count;
} rec;

static void record(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    rec *r = arg;
    r->count++;
    size_t n = strlen(r->log);
    snprintf(r->log + n, sizeof r->log - n, "%s%s@%s", n ? "," : "", name, cdsh_scope_id(scope));
    if (json_is_integer(json_object_get(payload, "v")))
        snprintf(r->log + strlen(r->log), sizeof r->log - strlen(r->log), "=%lld",
                 (long long)json_integer_value(json_object_get(payload, "v")));
}

static void exact_pattern_matches_only_that_name(void **state)
{
    (void)state;
    cdsh_events *bus = cdsh_events_new();
    rec r = {0};
    cdsh_disposer_t d;
    assert_int_equal(cdsh_events_on(bus, "tools/change", NULL, record, &r, &d, NULL), 0);
    cdsh_events_emit(bus, "tools/change", NULL, false, NULL);
    cdsh_events_emit(bus, "tools/changed", NULL, false, NULL);
    cdsh_events_emit(bus, "tools/chang", NULL, false, NULL);
    assert_string_equal(r.log, "tools/change@");
    cdsh_disposer_run(&d);
    cdsh_events_free(bus);
}

static void prefix_and_star_patterns(void **state)
{
    (void)state;
    cdsh_events *bus = cdsh_events_new();
    rec pre = {0}, all = {0};
    cdsh_disposer_t d1, d2;
    cdsh_events_on(bus, "tools/*", NULL, record, &pre, &d1, NULL);
    cdsh_events_on(bus, "*", NULL, record, &all, &d2, NULL);
    cdsh_events_emit(bus, "tools/result", NULL, false, NULL);
    cdsh_events_emit(bus, "toolsx/result", NULL, false, NULL);
    cdsh_events_emit(bus, "commands/change", NULL, false, NULL);
    assert_string_equal(pre.log, "tools/result@");
    assert_int_equal(all.count, 3);
    cdsh_disposer_run(&d1);
    cdsh_disposer_run(&d2);
    cdsh_events_free(bus);
}

static void star_inside_a_name_is_literal(void **state)
{
    (void)state;
    cdsh_events *bus = cdsh_events_new();
    rec r = {0};
    cdsh_disposer_t d;
    cdsh_events_on(bus, "tools*", NULL, record, &r, &d, NULL);
    cdsh_events_emit(bus, "tools/change", NULL, false, NULL);
    cdsh_events_emit(bus, "tools*", NULL, false, NULL);
    assert_string_equal(r.log, "tools*@");
    cdsh_disposer_run(&d);
    cdsh_events_free(bus);
}

static void on_refuses_bad_arguments(void **state)
{
    (void)state;
    cdsh_events *bus = cdsh_events_new();
    cdsh_disposer_t d = {0};
    cdsh_error err = {0};
    assert_int_equal(cdsh_events_on(bus, "", NULL, record, NULL, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "BAD_ARGUMENT");
    assert_int_equal(cdsh_events_on(bus, "x", NULL, NULL, NULL, &d, NULL), CDSH_EINVAL);
    assert_int_equal(cdsh_events_on(bus, NULL, NULL, record, NULL, &d, NULL), CDSH_EINVAL);
    assert_int_equal(cdsh_events_count(bus), 0);
    cdsh_events_free(bus);
}

static void scoped_listener_sees_own_and_descendant_events(void **state)
{
    (void)state;
    cdsh_events *bus = cdsh_events_new();
    cdsh_scope *preset = cdsh_scope_new("preset", NULL);
    cdsh_scope *a = cdsh_scope_new("a", preset);
    cdsh_scope *b = cdsh_scope_new("b", NULL);
    rec on_preset = {0}, on_a = {0}, global = {0};
    cdsh_disposer_t d1, d2, d3;
    cdsh_events_on(bus, "*", preset, record, &on_preset, &d1, NULL);
    cdsh_events_on(bus, "*", a, record, &on_a, &d2, NULL);
    cdsh_events_on(bus, "*", NULL, record, &global, &d3, NULL);
    cdsh_events_emit(bus, "e", a, true, NULL);
    cdsh_events_emit(bus, "e", preset, true, NULL);
    cdsh_events_emit(bus, "e", b, true, NULL);
    cdsh_events_emit(bus, "e", NULL, true, NULL);
    assert_string_equal(on_preset.log, "e@a,e@preset");
    assert_string_equal(on_a.log, "e@a");
    assert_string_equal(global.log, "e@a,e@preset,e@b,e@");
    cdsh_disposer_run(&d1);
    cdsh_disposer_run(&d2);
    cdsh_disposer_run(&d3);
    cdsh_scope_unref(a);
    cdsh_scope_unref(b);
    cdsh_scope_unref(preset);
    cdsh_events_free(bus);
}

static void unfiltered_emission_reaches_every_listener(void **state)
{
    (void)state;
    cdsh_events *bus = cdsh_events_new();
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    cdsh_scope *b = cdsh_scope_new("b", NULL);
    rec r = {0};
    cdsh_disposer_t d;
    cdsh_events_on(bus, "tools/change", a, record, &r, &d, NULL);
    cdsh_events_emit(bus, "tools/change", b, false, NULL);
    cdsh_events_emit(bus, "tools/change", NULL, false, NULL);
    assert_int_equal(r.count, 2);
    cdsh_disposer_run(&d);
    cdsh_scope_unref(a);
    cdsh_scope_unref(b);
    cdsh_events_free(bus);
}

static void delivery_follows_subscription_order_with_payload(void **state)
{
    (void)state;
    cdsh_events *bus = cdsh_events_new();
    rec r = {0};
    cdsh_disposer_t d[3];
    for (int i = 0; i < 3; i++)
        cdsh_events_on(bus, "x", NULL, record, &r, &d[i], NULL);
    json_t *p = json_pack("{s:i}", "v", 7);
    cdsh_events_emit(bus, "x", NULL, false, p);
    json_decref(p);
    assert_string_equal(r.log, "x@=7,x@=7,x@=7");
    for (int i = 0; i < 3; i++)
        cdsh_disposer_run(&d[i]);
    cdsh_events_free(bus);
}

static void disposer_removes_exactly_one_listener(void **state)
{
    (void)state;
    cdsh_events *bus = cdsh_events_new();
    rec r1 = {0}, r2 = {0};
    cdsh_disposer_t d1, d2;
    cdsh_events_on(bus, "x", NULL, record, &r1, &d1, NULL);
    cdsh_events_on(bus, "x", NULL, record, &r2, &d2, NULL);
    assert_int_equal(cdsh_events_count(bus), 2);
    cdsh_disposer_run(&d1);
    assert_null(d1.fn); /* cleared: running again is a no-op */
    cdsh_disposer_run(&d1);
    assert_int_equal(cdsh_events_count(bus), 1);
    cdsh_events_emit(bus, "x", NULL, false, NULL);
    assert_int_equal(r1.count, 0);
    assert_int_equal(r2.count, 1);
    cdsh_disposer_run(&d2);
    assert_int_equal(cdsh_events_count(bus), 0);
    cdsh_events_free(bus);
}

typedef struct selfdisp {
    cdsh_disposer_t self, other;
    int calls;
} selfdisp;

static void dispose_self_and_other(void *arg, const char *name, const cdsh_scope *scope,
                                   const json_t *payload)
{
    (void)name, (void)scope, (void)payload;
    selfdisp *s = arg;
    s->calls++;
    cdsh_disposer_run(&s->self);
    cdsh_disposer_run(&s->other);
}

static void listener_may_dispose_itself_and_later_listeners(void **state)
{
    (void)state;
    cdsh_events *bus = cdsh_events_new();
    selfdisp s = {0};
    rec later = {0};
    cdsh_events_on(bus, "x", NULL, dispose_self_and_other, &s, &s.self, NULL);
    cdsh_events_on(bus, "x", NULL, record, &later, &s.other, NULL);
    cdsh_events_emit(bus, "x", NULL, false, NULL);
    cdsh_events_emit(bus, "x", NULL, false, NULL);
    assert_int_equal(s.calls, 1);
    assert_int_equal(later.count, 0); /* disposed before its turn: not called */
    assert_int_equal(cdsh_events_count(bus), 0);
    cdsh_events_free(bus);
}

typedef struct subscriber {
    cdsh_events *bus;
    rec inner;
    cdsh_disposer_t added;
    bool done;
} subscriber;

static void subscribe_during_emit(void *arg, const char *name, const cdsh_scope *scope,
                                  const json_t *payload)
{
    (void)name, (void)scope, (void)payload;
    subscriber *s = arg;
    if (!s->done) {
        s->done = true;
        cdsh_events_on(s->bus, "x", NULL, record, &s->inner, &s->added, NULL);
    }
}

static void listener_added_during_emission_sees_only_later_events(void **state)
{
    (void)state;
    cdsh_events *bus = cdsh_events_new();
    subscriber s = {.bus = bus};
    cdsh_disposer_t d;
    cdsh_events_on(bus, "x", NULL, subscribe_during_emit, &s, &d, NULL);
    cdsh_events_emit(bus, "x", NULL, false, NULL);
    assert_int_equal(s.inner.count, 0);
    cdsh_events_emit(bus, "x", NULL, false, NULL);
    assert_int_equal(s.inner.count, 1);
    cdsh_disposer_run(&d);
    cdsh_disposer_run(&s.added);
    cdsh_events_free(bus);
}

static void many_listeners_beyond_the_stack_snapshot(void **state)
{
    (void)state;
    cdsh_events *bus = cdsh_events_new();
    rec r = {0};
    cdsh_disposer_t d[40];
    for (int i = 0; i < 40; i++)
        cdsh_events_on(bus, "x", NULL, record, &r, &d[i], NULL);
    cdsh_events_emit(bus, "x", NULL, false, NULL);
    assert_int_equal(r.count, 40);
    for (int i = 0; i < 40; i++)
        cdsh_disposer_run(&d[i]);
    cdsh_events_free(bus);
}

static void free_with_live_listeners_releases_them_and_null_bus_is_safe(void **state)
{
    (void)state;
    cdsh_events *bus = cdsh_events_new();
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    rec r = {0};
    cdsh_disposer_t d;
    cdsh_events_on(bus, "x", a, record, &r, &d, NULL);
    cdsh_scope_unref(a);
    cdsh_events_free(bus); /* ASan: listener and its scope reference freed */
    cdsh_events_free(NULL);
    cdsh_events_emit(NULL, "x", NULL, false, NULL);
    assert_int_equal(cdsh_events_count(NULL), 0);
}

typedef struct stress {
    cdsh_events *bus;
    atomic_int delivered;
} stress;

static void count_event(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    (void)name, (void)scope, (void)payload;
    atomic_fetch_add(&((stress *)arg)->delivered, 1);
}

static void *churn(void *arg)
{
    stress *s = arg;
    for (int i = 0; i < 2000; i++) {
        cdsh_disposer_t d;
        if (cdsh_events_on(s->bus, "x", NULL, count_event, s, &d, NULL) == 0)
            cdsh_disposer_run(&d);
    }
    return NULL;
}

static void *emitter(void *arg)
{
    stress *s = arg;
    for (int i = 0; i < 2000; i++)
        cdsh_events_emit(s->bus, "x", NULL, false, NULL);
    return NULL;
}

static void concurrent_subscribe_dispose_and_emit_are_safe(void **state)
{
    (void)state;
    stress s = {.bus = cdsh_events_new()};
    atomic_init(&s.delivered, 0);
    cdsh_disposer_t steady;
    cdsh_events_on(s.bus, "x", NULL, count_event, &s, &steady, NULL);
    pthread_t t[4];
    pthread_create(&t[0], NULL, churn, &s);
    pthread_create(&t[1], NULL, churn, &s);
    pthread_create(&t[2], NULL, emitter, &s);
    pthread_create(&t[3], NULL, emitter, &s);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_true(atomic_load(&s.delivered) >= 4000); /* the steady listener saw every event */
    assert_int_equal(cdsh_events_count(s.bus), 1);
    cdsh_disposer_run(&steady);
    cdsh_events_free(s.bus);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(exact_pattern_matches_only_that_name),
        cmocka_unit_test(prefix_and_star_patterns),
        cmocka_unit_test(star_inside_a_name_is_literal),
        cmocka_unit_test(on_refuses_bad_arguments),
        cmocka_unit_test(scoped_listener_sees_own_and_descendant_events),
        cmocka_unit_test(unfiltered_emission_reaches_every_listener),
        cmocka_unit_test(delivery_follows_subscription_order_with_payload),
        cmocka_unit_test(disposer_removes_exactly_one_listener),
        cmocka_unit_test(listener_may_dispose_itself_and_later_listeners),
        cmocka_unit_test(listener_added_during_emission_sees_only_later_events),
        cmocka_unit_test(many_listeners_beyond_the_stack_snapshot),
        cmocka_unit_test(free_with_live_listeners_releases_them_and_null_bus_is_safe),
        cmocka_unit_test(concurrent_subscribe_dispose_and_emit_are_safe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
