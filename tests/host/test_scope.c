/* test_scope.c — agent scopes: ids, parent chains, containment, refcounts. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "host/scope.h"

static void new_refuses_empty_or_null_id(void **state)
{
    (void)state;
    assert_null(cdsh_scope_new(NULL, NULL));
    assert_null(cdsh_scope_new("", NULL));
}

static void id_is_copied_and_global_is_empty(void **state)
{
    (void)state;
    char buf[8];
    strcpy(buf, "agent");
    cdsh_scope *s = cdsh_scope_new(buf, NULL);
    buf[0] = 'X';
    assert_string_equal(cdsh_scope_id(s), "agent");
    assert_string_equal(cdsh_scope_id(NULL), "");
    assert_null(cdsh_scope_parent(s));
    assert_null(cdsh_scope_parent(NULL));
    cdsh_scope_unref(s);
}

static void depth_counts_the_chain(void **state)
{
    (void)state;
    cdsh_scope *preset = cdsh_scope_new("preset", NULL);
    cdsh_scope *agent = cdsh_scope_new("agent", preset);
    cdsh_scope *sub = cdsh_scope_new("sub", agent);
    assert_int_equal(cdsh_scope_depth(NULL), 0);
    assert_int_equal(cdsh_scope_depth(preset), 1);
    assert_int_equal(cdsh_scope_depth(sub), 3);
    assert_ptr_equal(cdsh_scope_parent(sub), agent);
    cdsh_scope_unref(sub);
    cdsh_scope_unref(agent);
    cdsh_scope_unref(preset);
}

static void contains_follows_ancestors_only(void **state)
{
    (void)state;
    cdsh_scope *preset = cdsh_scope_new("preset", NULL);
    cdsh_scope *a = cdsh_scope_new("a", preset);
    cdsh_scope *b = cdsh_scope_new("b", preset);
    assert_true(cdsh_scope_contains(NULL, a)); /* global contains everyone */
    assert_true(cdsh_scope_contains(NULL, NULL));
    assert_true(cdsh_scope_contains(a, a));       /* itself */
    assert_true(cdsh_scope_contains(preset, a));  /* ancestor */
    assert_false(cdsh_scope_contains(a, preset)); /* not descendants */
    assert_false(cdsh_scope_contains(a, b));      /* not siblings */
    assert_false(cdsh_scope_contains(a, NULL));   /* a scope does not contain global */
    cdsh_scope_unref(a);
    cdsh_scope_unref(b);
    cdsh_scope_unref(preset);
}

static void identity_is_by_object_not_by_id(void **state)
{
    (void)state;
    cdsh_scope *x = cdsh_scope_new("same", NULL);
    cdsh_scope *y = cdsh_scope_new("same", NULL);
    assert_false(cdsh_scope_contains(x, y));
    cdsh_scope_unref(x);
    cdsh_scope_unref(y);
}

static void child_keeps_parent_alive(void **state)
{
    (void)state;
    cdsh_scope *preset = cdsh_scope_new("preset", NULL);
    cdsh_scope *agent = cdsh_scope_new("agent", preset);
    cdsh_scope_unref(preset); /* the child still holds it */
    assert_string_equal(cdsh_scope_id(cdsh_scope_parent(agent)), "preset");
    assert_ptr_equal(cdsh_scope_ref(agent), agent);
    cdsh_scope_unref(agent);
    cdsh_scope_unref(agent); /* frees the whole chain (ASan checks) */
    cdsh_scope_unref(NULL);
    assert_null(cdsh_scope_ref(NULL));
}

static void long_chain_frees_without_recursion(void **state)
{
    (void)state;
    cdsh_scope *s = NULL;
    for (int i = 0; i < 100000; i++) {
        cdsh_scope *next = cdsh_scope_new("x", s);
        cdsh_scope_unref(s);
        s = next;
    }
    assert_int_equal(cdsh_scope_depth(s), 100000);
    cdsh_scope_unref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(new_refuses_empty_or_null_id),
        cmocka_unit_test(id_is_copied_and_global_is_empty),
        cmocka_unit_test(depth_counts_the_chain),
        cmocka_unit_test(contains_follows_ancestors_only),
        cmocka_unit_test(identity_is_by_object_not_by_id),
        cmocka_unit_test(child_keeps_parent_alive),
        cmocka_unit_test(long_chain_frees_without_recursion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
