/* test_example_plugin.c — builds the example plugin of docs/host.md and checks
 * that it does what the document says: defaults, tool, command, RPC, skill,
 * the caller-owned service, and a clean reload. */
#include "support/testkit.h"

#include "../../docs/examples/counter_plugin.c"

#include "host/dispatch.h"

static int setup(void **state)
{
    *state = cdsh_host_new();
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    cdsh_host_free(*state);
    return 0;
}

static long long call_add(cdsh_host *h, int times)
{
    json_t *args = json_pack("{s:i}", "times", times);
    cdsh_dispatch_input in = {.call_id = "c", .name = "counter_add", .args = args};
    cdsh_toolresult *r = cdsh_dispatch_execute(cdsh_host_tools(h), &in);
    json_decref(args);
    long long v = r->is_error ? -1 : json_integer_value(json_object_get(r->value, "value"));
    cdsh_toolresult_free(r);
    return v;
}

static void tool_command_and_rpc_share_one_counter(void **state)
{
    cdsh_host *h = *state;
    json_t *cfg = json_pack("{s:i}", "step", 5);
    assert_int_equal(cdsh_plugin_load(h, &counter_plugin, cfg, NULL, NULL), 0);
    json_decref(cfg);
    assert_int_equal(call_add(h, 2), 10); /* start defaults to 0 */
    cdsh_command_outcome out;
    assert_int_equal(
        cdsh_commands_execute(cdsh_host_commands(h), NULL, "/count", NULL, NULL, &out, NULL), 1);
    assert_string_equal(out.text, "count is 10");
    cdsh_commands_outcome_clear(&out);
    json_t *r = cdsh_rpc_call(cdsh_host_rpc(h), "/counter", "get", NULL, NULL);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "value"), "value")), 10);
    json_decref(r);
    json_t *sk = cdsh_skills_info_dup(cdsh_host_skills(h), NULL, "counting");
    assert_string_equal(json_string_value(json_object_get(sk, "source")), "counter");
    json_decref(sk);
}

static void tool_arguments_are_validated_by_the_registry(void **state)
{
    cdsh_host *h = *state;
    cdsh_plugin_load(h, &counter_plugin, NULL, NULL, NULL);
    assert_int_equal(call_add(h, 0), -1); /* minimum 1 */
    assert_int_equal(call_add(h, 3), 3);
}

static cdsh_plugin_ctx *USER_CTX;

static int user_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    USER_CTX = ctx;
    return counter_service_add_command(cdsh_ctx_get(ctx, "counter"), ctx, "peek", err);
}

static void service_registrations_belong_to_the_caller(void **state)
{
    cdsh_host *h = *state;
    static const char *const needs[] = {"counter", NULL};
    static const cdsh_plugin_def user = {.name = "user", .requires = needs, .apply = user_apply};
    cdsh_plugin *c = NULL, *u = NULL;
    cdsh_plugin_load(h, &counter_plugin, NULL, &c, NULL);
    cdsh_plugin_load(h, &user, NULL, &u, NULL);
    assert_int_equal(cdsh_commands_count(cdsh_host_commands(h)), 2);
    cdsh_plugin_unload(u);
    assert_int_equal(cdsh_commands_count(cdsh_host_commands(h)), 1); /* "peek" left with user */
    assert_int_equal(cdsh_plugin_load(h, &user, NULL, &u, NULL), 0);
    cdsh_plugin_unload(c); /* the provider goes: its dependent waits */
    assert_int_equal(cdsh_plugin_state_get(u), CDSH_PLUGIN_PENDING);
    assert_int_equal(cdsh_commands_count(cdsh_host_commands(h)), 0);
}

static void reload_leaves_nothing_behind(void **state)
{
    cdsh_host *h = *state;
    cdsh_plugin *p = NULL;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(cdsh_plugin_load(h, &counter_plugin, NULL, &p, NULL), 0);
        assert_int_equal(call_add(h, 1), 1); /* fresh state each time */
        cdsh_plugin_unload(p);
        assert_int_equal(cdsh_tools_count(cdsh_host_tools(h)), 0);
        assert_int_equal(cdsh_commands_count(cdsh_host_commands(h)), 0);
        assert_int_equal(cdsh_skills_count(cdsh_host_skills(h)), 0);
        assert_int_equal(cdsh_rpc_count(cdsh_host_rpc(h)), 0);
        assert_null(cdsh_host_service(h, "counter"));
    }
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(tool_command_and_rpc_share_one_counter),
        T(tool_arguments_are_validated_by_the_registry),
        T(service_registrations_belong_to_the_caller),
        T(reload_leaves_nothing_behind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
