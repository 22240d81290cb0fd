/* test_present_users.c — render intents the built-in plugins give the
 * page's tool cards: xiangqi answers that carry a position draw a board
 * (generic card, view "xiangqi-board", the answer's FEN); a refused move
 * does not; the tavern's memory_search hits are a search card; an ACP
 * engine's shell call ("execute") is a terminal card with its output. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "acp/acp_fixture.h"
#include "agent/session_store.h"
#include "host/dispatch.h"
#include "host/host.h"
#include "host/ops.h"
#include "plugins/acp/service.h"
#include "plugins/acp/turn.h"
#include "plugins/tavern/service_priv.h"
#include "plugins/xiangqi/plugin.h"

typedef struct fixture {
    char *home;
    cdsh_host *host;
    json_t *config;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    char dir[600];
    snprintf(dir, sizeof dir, "%s/xq", f->home);
    f->config = json_pack("{s:s,s:{s:i,s:i,s:i}}", "storageDir", dir, "engine", "depth", 1,
                          "movetimeMs", 100, "hashMb", 1);
    f->host = cdsh_host_new();
    assert_int_equal(cdsh_plugin_load(f->host, &cdsh_xq_plugin, f->config, NULL, NULL), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    cdsh_host_free(f->host);
    json_decref(f->config);
    cdsh_test_home_free(f->home);
    free(f);
    return 0;
}

/* Runs the tool and returns its result intent (owned). */
static json_t *present(fixture *f, const char *name, const char *args_text, json_t **value)
{
    json_t *a = json_loads(args_text, 0, NULL);
    cdsh_dispatch_input in = {.call_id = "c1", .name = name, .args = a};
    cdsh_toolresult *r = cdsh_dispatch_execute(cdsh_host_tools(f->host), &in);
    json_t *rj = cdsh_toolresult_to_json(r);
    json_t *intent = cdsh_tools_present_result_dup(cdsh_host_tools(f->host), NULL, name, a, rj);
    if (value)
        *value = json_incref(json_object_get(rj, "value"));
    json_decref(rj);
    cdsh_toolresult_free(r);
    json_decref(a);
    return intent;
}

static void xiangqi_answers_draw_the_board(void **state)
{
    fixture *f = *state;
    json_t *v = NULL;
    json_t *in = present(f, "xiangqi_new", "{\"side\":\"r\",\"opponent\":\"local\"}", &v);
    assert_string_equal(json_string_value(json_object_get(in, "card")), "generic");
    assert_string_equal(json_string_value(json_object_get(in, "view")), "xiangqi-board");
    assert_string_equal(json_string_value(json_object_get(in, "fen")),
                        json_string_value(json_object_get(v, "fen")));
    assert_non_null(strstr(json_string_value(json_object_get(in, "fen")), "rnbakabnr"));
    json_decref(in);
    json_decref(v);
    /* a refused move carries no position: the generic card */
    in = present(f, "xiangqi_move", "{\"move\":\"a0a9\"}", NULL);
    assert_int_equal(json_object_size(in), 1);
    assert_string_equal(json_string_value(json_object_get(in, "card")), "generic");
    json_decref(in);
    /* the call itself has no presenter */
    json_t *a = json_pack("{}");
    in = cdsh_tools_present_call_dup(cdsh_host_tools(f->host), NULL, "xiangqi_board", a);
    assert_int_equal(json_object_size(in), 1);
    json_decref(in);
    json_decref(a);
}

static void tavern_memory_hits_are_a_search_card(void **state)
{
    (void)state;
    const cdsh_op *row = NULL;
    for (size_t i = 0; i < cdsh__tavern_ops_table.n_ops; i++)
        if (strcmp(cdsh__tavern_ops_table.ops[i].name, "memory_search") == 0)
            row = &cdsh__tavern_ops_table.ops[i];
    assert_non_null(row);
    assert_non_null(row->present_result);
    json_t *args = json_pack("{s:s}", "query", "lantern");
    json_t *res = json_loads(
        "{\"isError\":false,\"content\":[],\"value\":{\"ok\":true,\"count\":2,\"results\":["
        "{\"id\":\"m1\",\"path\":\"memory/m1.md\",\"body\":\"the lantern is lit\"},"
        "{\"id\":\"m2\",\"body\":\"a storm blew the lantern out\"}]}}",
        0, NULL);
    json_t *in = row->present_result(args, res);
    char *s = json_dumps(in, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(s, "{\"card\":\"search\",\"query\":\"lantern\",\"results\":["
                           "{\"ref\":\"m1\",\"snippet\":\"the lantern is lit\",\"title\":"
                           "\"memory/m1.md\"},{\"ref\":\"m2\",\"snippet\":\"a storm blew the "
                           "lantern out\",\"title\":\"m2\"}]}");
    assert_true(cdsh_tools_present_valid(in));
    free(s);
    json_decref(in);
    json_decref(res);
    /* a refusal shows the generic card */
    res = json_loads("{\"isError\":false,\"content\":[],\"value\":{\"ok\":false}}", 0, NULL);
    assert_null(row->present_result(args, res));
    json_decref(res);
    json_decref(args);
}

static void an_engine_shell_call_is_a_terminal_card(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    acp_write_fixture_engine(home, "[]", "");
    cdsh_error err = {0};
    cdsh_acp_service *svc = cdsh_acp_service_new(cdsh_test_home(), NULL, &err);
    cdsh_session_store *st = NULL;
    assert_int_equal(cdsh_session_store_open(cdsh_test_home(), NULL, &st, &err), 0);
    char *sid = NULL;
    cdsh_session_spec spec = {.title = "cards"};
    assert_int_equal(cdsh_session_store_create(st, &spec, &sid, &err), 0);
    assert_int_equal(cdsh_acp_service_bind(svc, sid, "fixture", home, &err), 0);
    cdsh_acp_turn_opts o = {.svc = svc, .store = st};
    json_t *res = NULL;
    assert_int_equal(cdsh_acp_turn_run(&o, sid, "all-updates", NULL, &res, &err), 0);
    json_decref(res);
    json_t *evs = cdsh_session_store_events(st, sid, 0, 1000, NULL, &err);
    const json_t *present = NULL;
    size_t i;
    json_t *ev;
    json_array_foreach(evs, i, ev) {
        const json_t *p = json_object_get(ev, "payload");
        if (strcmp(json_string_value(json_object_get(ev, "type")), "tool/result") == 0)
            present = json_object_get(p, "present");
    }
    char *s = json_dumps(present, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(s, "{\"card\":\"terminal\",\"command\":\"ls\",\"output\":\"a.txt b.txt\"}");
    assert_true(cdsh_tools_present_valid(present));
    free(s);
    json_decref(evs);
    free(sid);
    cdsh_session_store_close(st);
    cdsh_acp_service_free(svc);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(xiangqi_answers_draw_the_board, setup, teardown),
        cmocka_unit_test(tavern_memory_hits_are_a_search_card),
        cmocka_unit_test(an_engine_shell_call_is_a_terminal_card),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
