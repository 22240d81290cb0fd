/* test_ptrs.c — the pointer array under the host registries. */
#include "support/testkit.h"

#include "host/ptrs.h"

static void push_keeps_insertion_order_across_growth(void **state)
{
    (void)state;
    cdsh__ptrs v = {0};
    static int cells[100];
    for (int i = 0; i < 100; i++)
        assert_int_equal(cdsh__ptrs_push(&v, &cells[i]), 0);
    assert_int_equal(v.n, 100);
    for (int i = 0; i < 100; i++)
        assert_ptr_equal(v.items[i], &cells[i]);
    cdsh__ptrs_deinit(&v);
    assert_null(v.items);
    assert_int_equal(v.n, 0);
}

static void remove_takes_the_first_match_and_keeps_order(void **state)
{
    (void)state;
    cdsh__ptrs v = {0};
    int a, b, c;
    cdsh__ptrs_push(&v, &a);
    cdsh__ptrs_push(&v, &b);
    cdsh__ptrs_push(&v, &c);
    cdsh__ptrs_push(&v, &b);
    assert_true(cdsh__ptrs_remove(&v, &b));
    assert_int_equal(v.n, 3);
    assert_ptr_equal(v.items[0], &a);
    assert_ptr_equal(v.items[1], &c);
    assert_ptr_equal(v.items[2], &b);
    assert_false(cdsh__ptrs_remove(&v, &v)); /* not there */
    assert_true(cdsh__ptrs_remove(&v, &b));
    assert_true(cdsh__ptrs_remove(&v, &a));
    assert_true(cdsh__ptrs_remove(&v, &c));
    assert_int_equal(v.n, 0);
    assert_false(cdsh__ptrs_remove(&v, &a));
    cdsh__ptrs_deinit(&v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(push_keeps_insertion_order_across_growth),
        cmocka_unit_test(remove_takes_the_first_match_and_keeps_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
