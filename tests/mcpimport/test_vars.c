/* test_vars.c — the `${VAR}` / `${VAR:-default}` reference syntax: what counts
 * as a reference, and expansion through a lookup with defaults and misses. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "plugins/mcpimport/vars.h"

static const char *lookup(void *ud, const char *name)
{
    (void)ud;
    return strcmp(name, "SET") == 0 ? "value" : NULL;
}

static void references_are_recorded_with_fallbacks(void **state)
{
    (void)state;
    json_t *out = json_array();
    int n = cdsh_mcpimport_vars_scan("a ${SET} b ${X:-d ${Y}} $PLAIN ${1bad} ${user_config.K}",
                                     "env", "env.A", out);
    assert_int_equal(n, 3);
    char *dump = json_dumps(out, JSON_COMPACT);
    assert_string_equal(dump, "[{\"kind\":\"env\",\"envVar\":\"SET\",\"fallback\":null,\"field\":"
                              "\"env.A\"},{\"kind\":\"env\",\"envVar\":\"X\",\"fallback\":\"d "
                              "${Y}\",\"field\":\"env.A\"},{\"kind\":\"env\",\"envVar\":\"user_"
                              "config.K\",\"fallback\":null,\"field\":\"env.A\"}]");
    free(dump);
    json_decref(out);
}

static void expansion_uses_value_then_default_then_reports_missing(void **state)
{
    (void)state;
    bool missing = false;
    char *s = cdsh_mcpimport_vars_expand_dup("[${SET}] [${NO:-dflt}] [${NO}] $SET ${", lookup, NULL,
                                             &missing);
    assert_string_equal(s, "[value] [dflt] [] $SET ${");
    assert_true(missing);
    free(s);
    missing = false;
    s = cdsh_mcpimport_vars_expand_dup("${SET}", lookup, NULL, &missing);
    assert_false(missing);
    free(s);
    s = cdsh_mcpimport_vars_subst_dup("${ROOT}/x ${ROOT:-y} ${ROOTS}", "ROOT", "/p");
    assert_string_equal(s, "/p/x ${ROOT:-y} ${ROOTS}");
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(references_are_recorded_with_fallbacks),
        cmocka_unit_test(expansion_uses_value_then_default_then_reports_missing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
