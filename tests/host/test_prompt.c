/* test_prompt.c — prompt segments: ordering, shadowing by a nearer layer,
 * refusals, dynamic segments, and segments disposed with their plugin. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "host/host.h"

static char *render_scope(void *ud, const cdsh_scope *scope)
{
    (void)ud;
    if (!scope)
        return NULL; /* contributes nothing globally */
    char buf[64];
    snprintf(buf, sizeof buf, "agent=%s", cdsh_scope_id(scope));
    return strdup(buf);
}

static int freed;
static void count_free(void *ud)
{
    (void)ud;
    freed++;
}

static void segments_sort_by_order_then_registration(void **state)
{
    (void)state;
    cdsh_prompt *p = cdsh_prompt_new(NULL);
    cdsh_disposer_t d[3];
    cdsh_error err;
    cdsh_prompt_segment_def a = {.id = "a", .order = 200, .text = "A"};
    cdsh_prompt_segment_def b = {.id = "b", .order = 100, .text = "B"};
    cdsh_prompt_segment_def c = {.id = "c", .order = 200, .text = "C"};
    assert_int_equal(cdsh_prompt_register(p, NULL, &a, &d[0], &err), 0);
    assert_int_equal(cdsh_prompt_register(p, NULL, &b, &d[1], &err), 0);
    assert_int_equal(cdsh_prompt_register(p, NULL, &c, &d[2], &err), 0);
    char *text = cdsh_prompt_render_dup(p, NULL);
    assert_string_equal(text, "B\n\nA\n\nC");
    free(text);
    cdsh_disposer_run(&d[0]);
    text = cdsh_prompt_render_dup(p, NULL);
    assert_string_equal(text, "B\n\nC");
    free(text);
    assert_int_equal(cdsh_prompt_count(p), 2);
    cdsh_disposer_run(&d[1]);
    cdsh_disposer_run(&d[2]);
    assert_int_equal(cdsh_prompt_count(p), 0);
    cdsh_prompt_free(p);
}

static void nearer_layer_shadows_and_render_sees_the_scope(void **state)
{
    (void)state;
    cdsh_prompt *p = cdsh_prompt_new(NULL);
    cdsh_scope *agent = cdsh_scope_new("coder", NULL);
    cdsh_disposer_t d[3];
    cdsh_error err;
    cdsh_prompt_segment_def g = {.id = "rules", .order = 1, .text = "global rules"};
    cdsh_prompt_segment_def s = {.id = "rules", .order = 1, .text = "coder rules"};
    cdsh_prompt_segment_def r = {
        .id = "who", .order = 2, .render = render_scope, .free_ud = count_free};
    assert_int_equal(cdsh_prompt_register(p, NULL, &g, &d[0], &err), 0);
    assert_int_equal(cdsh_prompt_register(p, agent, &s, &d[1], &err), 0);
    assert_int_equal(cdsh_prompt_register(p, NULL, &r, &d[2], &err), 0);
    char *text = cdsh_prompt_render_dup(p, agent);
    assert_string_equal(text, "coder rules\n\nagent=coder");
    free(text);
    json_t *segs = cdsh_prompt_segments(p, NULL);
    assert_int_equal(json_array_size(segs), 1); /* "who" renders NULL globally */
    assert_string_equal(json_string_value(json_object_get(json_array_get(segs, 0), "text")),
                        "global rules");
    json_decref(segs);
    freed = 0;
    for (int i = 0; i < 3; i++)
        cdsh_disposer_run(&d[i]);
    assert_int_equal(freed, 1);
    cdsh_scope_unref(agent);
    cdsh_prompt_free(p);
}

static void bad_ids_and_duplicates_are_refused(void **state)
{
    (void)state;
    cdsh_prompt *p = cdsh_prompt_new(NULL);
    cdsh_disposer_t d;
    cdsh_error err;
    cdsh_prompt_segment_def bad = {.id = "has space", .text = "x"};
    assert_int_equal(cdsh_prompt_register(p, NULL, &bad, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_SEGMENT");
    cdsh_prompt_segment_def both = {.id = "x", .text = "x", .render = render_scope};
    assert_int_equal(cdsh_prompt_register(p, NULL, &both, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.message,
                        "prompt segment \"x\" must give exactly one of text or render");
    cdsh_prompt_segment_def ok = {.id = "x", .text = "x"};
    assert_int_equal(cdsh_prompt_register(p, NULL, &ok, &d, &err), 0);
    cdsh_disposer_t d2;
    assert_int_equal(cdsh_prompt_register(p, NULL, &ok, &d2, &err), CDSH_EEXIST);
    assert_string_equal(err.code, "DUPLICATE_SEGMENT");
    assert_string_equal(err.message, "prompt segment \"x\" is already registered");
    cdsh_disposer_run(&d);
    cdsh_prompt_free(p);
}

static int apply_seg(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    cdsh_prompt_segment_def def = {.id = "plug", .order = 150, .text = "from the plugin"};
    return cdsh_prompt_ctx_register(ctx, &def, err);
}

static const cdsh_plugin_def seg_plugin = {.name = "seg", .description = "d", .apply = apply_seg};

static void plugin_segments_go_away_with_the_plugin(void **state)
{
    (void)state;
    cdsh_host *host = cdsh_host_new();
    cdsh_plugin *pl;
    cdsh_error err;
    assert_int_equal(cdsh_plugin_load(host, &seg_plugin, NULL, &pl, &err), 0);
    char *text = cdsh_prompt_render_dup(cdsh_host_prompt(host), NULL);
    assert_string_equal(text, "from the plugin");
    free(text);
    cdsh_plugin_unload(pl);
    assert_int_equal(cdsh_prompt_count(cdsh_host_prompt(host)), 0);
    assert_int_equal(cdsh_plugin_load(host, &seg_plugin, NULL, &pl, &err), 0);
    assert_int_equal(cdsh_prompt_count(cdsh_host_prompt(host)), 1);
    cdsh_host_free(host);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(segments_sort_by_order_then_registration),
        cmocka_unit_test(nearer_layer_shadows_and_render_sees_the_scope),
        cmocka_unit_test(bad_ids_and_duplicates_are_refused),
        cmocka_unit_test(plugin_segments_go_away_with_the_plugin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
