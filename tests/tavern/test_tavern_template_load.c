/* test_tavern_template_load.c — JavaScriptCore is mapped only by a process
 * that renders a card template: before the first render /proc/self/maps
 * holds no libjavascriptcoregtk, after it the library is there and the
 * render is right (template_jsc.h). */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/tavern/template.h"

static int jsc_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[4096];
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "libjavascriptcoregtk"))
            found = 1;
    fclose(f);
    return found;
}

static void javascriptcore_is_mapped_by_the_first_render_only(void **state)
{
    (void)state;
    assert_false(jsc_mapped());
    cdsh_tavern_template_limits lim;
    cdsh_tavern_template_limits_default(&lim);
    lim.wall_ms = cdsh_test_scale_ms(20000);
    json_t *res = NULL;
    cdsh_error err = {0};
    int rc = cdsh_tavern_template_render("<%= [1, 2, 3].map((x) => x * 2).join('+') %>", NULL,
                                         false, &lim, &res, &err);
    if (rc != 0)
        fail_msg("render failed: %s %s", err.code, err.message);
    assert_string_equal(json_string_value(json_object_get(res, "output")), "2+4+6");
    json_decref(res);
    assert_true(jsc_mapped());
    /* A second worker reuses the loaded library. */
    cdsh_tavern_template_worker_stop();
    rc = cdsh_tavern_template_render("<%= 'again' %>", NULL, false, &lim, &res, &err);
    assert_int_equal(rc, 0);
    assert_string_equal(json_string_value(json_object_get(res, "output")), "again");
    json_decref(res);
    cdsh_tavern_template_worker_stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(javascriptcore_is_mapped_by_the_first_render_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
