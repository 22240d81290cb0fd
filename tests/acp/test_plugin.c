/* test_plugin.c — the "acp" plugin on a host: provides the service, answers
 * the "/acp" RPC channel (thin wrappers), and leaves no agent process
 * behind when unloaded. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "acp_fixture.h"
#include "host/host.h"
#include "host/rpc.h"
#include "plugins/acp/plugin.h"
#include "plugins/acp/service.h"

static json_t *call(cdsh_host *h, const char *ep, const char *payload)
{
    json_t *p = payload ? json_loads(payload, 0, NULL) : NULL;
    json_t *r = cdsh_rpc_call(cdsh_host_rpc(h), "/acp", ep, p, NULL);
    json_decref(p);
    return r;
}

static void plugin_serves_rpc_and_the_service(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char pidfile[4300], args[4400];
    snprintf(pidfile, sizeof pidfile, "%s/pids", home);
    snprintf(args, sizeof args, "[\"--pid-file\",\"%s\"]", pidfile);
    acp_write_fixture_engine(home, args, "");
    cdsh_host *h = cdsh_host_new();
    cdsh_plugin *pl = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_plugin_load(h, &cdsh_acp_plugin, NULL, &pl, &err), 0);
    json_t *r = call(h, "engines", NULL);
    assert_true(json_is_true(json_object_get(r, "ok")));
    assert_int_equal(json_array_size(json_object_get(json_object_get(r, "value"), "engines")), 8);
    json_decref(r);
    char payload[4400];
    snprintf(payload, sizeof payload, "{\"session\":\"w1\",\"engine\":\"fixture\",\"cwd\":\"%s\"}",
             home);
    r = call(h, "bind", payload);
    assert_true(json_is_true(json_object_get(r, "ok")));
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(r, "value"), "binding"), "engineId")),
                        "fixture");
    json_decref(r);
    r = call(h, "bind", "{\"session\":\"w1\"}");
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "code")),
                        "bad-request");
    json_decref(r);
    r = call(h, "bind", "{\"session\":\"w2\",\"engine\":\"nope\"}");
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "code")),
                        "not-found");
    json_decref(r);
    cdsh_acp_service *svc = cdsh_host_service(h, CDSH_ACP_SERVICE);
    assert_non_null(svc);
    json_t *res = cdsh_acp_service_prompt(svc, "w1", "hello", NULL, NULL);
    assert_true(json_is_true(json_object_get(res, "ok")));
    json_decref(res);
    r = call(h, "config", "{\"session\":\"w1\"}");
    assert_true(json_is_array(json_object_get(
        json_object_get(json_object_get(r, "value"), "config"), "configOptions")));
    json_decref(r);
    r = call(h, "session", "{\"session\":\"w2\"}"); /* never bound */
    assert_true(json_is_null(json_object_get(json_object_get(r, "value"), "binding")));
    json_decref(r);
    r = call(h, "unbind", "{\"session\":\"w1\"}"); /* locked by the prompt */
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "code")),
                        "conflict");
    json_decref(r);
    r = call(h, "sessions", NULL);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(r, "value"), "w1"), "engineId")),
                        "fixture");
    json_decref(r);
    r = call(h, "nope", NULL);
    assert_false(json_is_true(json_object_get(r, "ok")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "code")),
                        "not-found");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(r, "error"), "message")),
        "unknown /acp endpoint \"nope\"");
    json_decref(r);
    /* The channel is the plugin's operations table (issue 24): "$ops" lists
     * its rows with their shapes. */
    r = call(h, "$ops", NULL);
    json_t *rows = json_object_get(r, "value");
    const char *names[] = {"engines", "probe", "sessions", "session",
                           "bind",    "unbind", "open",    "config"};
    assert_int_equal(json_array_size(rows), 8);
    for (size_t i = 0; i < 8; i++) {
        json_t *row = json_array_get(rows, i);
        assert_string_equal(json_string_value(json_object_get(row, "name")), names[i]);
        assert_true(json_is_object(json_object_get(row, "args")));
        assert_true(json_is_object(json_object_get(row, "result")));
    }
    json_decref(r);
    r = call(h, "open", "{}");
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "message")),
                        "a \"session\" id is required");
    json_decref(r);
    char *pids = cdsh_test_read_file(pidfile, NULL);
    int pid = atoi(pids);
    free(pids);
    assert_true(acp_pid_alive(pid));
    cdsh_plugin_unload(pl);
    assert_false(acp_pid_alive(pid));
    assert_null(cdsh_host_service(h, CDSH_ACP_SERVICE));
    cdsh_host_free(h);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plugin_serves_rpc_and_the_service),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
