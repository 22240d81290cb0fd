/* test_xq_plugin_tools.c — the xiangqi plugin in a host: the six tools
 * (schemas, single text block, refusal card, concurrency flags), the
 * /xiangqi command, resign for people only, the skill, and unload/reload. */
#include "support/testkit.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/dispatch.h"
#include "host/host.h"
#include "plugins/xiangqi/pgn.h"
#include "plugins/xiangqi/plugin.h"

typedef struct fixture {
    char *home;
    cdsh_host *host;
    cdsh_plugin *plugin;
    json_t *config;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    char dir[600];
    snprintf(dir, sizeof dir, "%s/xq", f->home);
    f->config =
        json_pack("{s:s,s:{s:i,s:i,s:i},s:{s:i},s:{s:i}}", "storageDir", dir, "engine", "depth", 2,
                  "movetimeMs", 200, "hashMb", 1, "hint", "depth", 3, "review", "depth", 1);
    f->host = cdsh_host_new();
    cdsh_error err;
    assert_int_equal(cdsh_plugin_load(f->host, &cdsh_xq_plugin, f->config, &f->plugin, &err), 0);
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

static cdsh_toolresult *call(fixture *f, const char *name, const char *args)
{
    json_t *a = json_loads(args, 0, NULL);
    assert_non_null(a);
    cdsh_dispatch_input in = {.call_id = "call_1", .name = name, .args = a};
    cdsh_toolresult *r = cdsh_dispatch_execute(cdsh_host_tools(f->host), &in);
    json_decref(a);
    assert_non_null(r);
    return r;
}

/* The value of a successful call (borrowed from r); fails on a tool error. */
static const json_t *value_of(cdsh_toolresult *r)
{
    json_t *j = cdsh_toolresult_to_json(r);
    if (json_is_true(json_object_get(j, "isError")))
        fail_msg("tool failed: %s", json_dumps(j, 0));
    json_t *content = json_object_get(j, "content");
    assert_int_equal(json_array_size(content), 1); /* one text block */
    assert_string_equal(json_string_value(json_object_get(json_array_get(content, 0), "type")),
                        "text");
    json_decref(j);
    return r->value;
}

static char *command(fixture *f, const char *line, int *kind)
{
    cdsh_command_outcome out;
    cdsh_error err;
    assert_int_equal(
        cdsh_commands_execute(cdsh_host_commands(f->host), NULL, line, NULL, NULL, &out, &err), 1);
    *kind = out.kind;
    char *text = strdup(out.text ? out.text : "");
    cdsh_commands_outcome_clear(&out);
    return text;
}

static const char *str(const json_t *v, const char *k)
{
    return json_string_value(json_object_get(v, k));
}

static void every_tool_returns_its_declared_shape(void **state)
{
    fixture *f = *state;
    struct {
        const char *name, *args, *extra;
    } calls[] = {
        {"xiangqi_new", "{\"side\":\"b\",\"opponent\":\"model\",\"maxPlies\":200}", NULL},
        {"xiangqi_board", "{\"includeEval\":true}", "ascii"},
        {"xiangqi_move", "{\"move\":\"h2e2\",\"reason\":\"central cannon\"}", "played"},
        {"xiangqi_hint", "{\"count\":2,\"depth\":2}", "candidates"},
        {"xiangqi_review", "{\"highlight\":\"all\"}", "curve"},
        {"xiangqi_undo", "{}", "undone"},
    };
    int64_t last = 0;
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        cdsh_toolresult *r = call(f, calls[i].name, calls[i].args);
        const json_t *v = value_of(r);
        assert_true(json_is_true(json_object_get(v, "ok")));
        assert_int_equal(json_array_size(json_object_get(v, "board")), 90);
        assert_true(json_integer_value(json_object_get(v, "revision")) >= last);
        last = json_integer_value(json_object_get(v, "revision"));
        if (calls[i].extra)
            assert_non_null(json_object_get(v, calls[i].extra));
        cdsh_toolresult_free(r);
    }
    /* the model opened as red with the central cannon, then took it back (2 plies = 1 here) */
    cdsh_toolresult *r = call(f, "xiangqi_board", "{\"includeMoves\":false,\"ascii\":false}");
    const json_t *v = value_of(r);
    assert_null(json_object_get(v, "legalMoves"));
    assert_null(json_object_get(v, "ascii"));
    assert_string_equal(str(v, "hero"), "b");
    assert_int_equal(json_array_size(json_object_get(v, "history")), 0);
    cdsh_toolresult_free(r);
}

static void board_lists_legal_moves_and_an_ascii_board(void **state)
{
    fixture *f = *state;
    cdsh_toolresult *r = call(f, "xiangqi_board", "{}");
    const json_t *v = value_of(r);
    assert_int_equal(json_array_size(json_object_get(v, "legalMoves")), 44);
    assert_non_null(strstr(str(v, "ascii"), "9 r n b a k a b n r"));
    char *text = cdsh_toolresult_text_dup(r);
    assert_non_null(strstr(text, "FEN: rnbakabnr/9/1c5c1"));
    assert_non_null(strstr(text, "h2e2 炮二平五"));
    free(text);
    cdsh_toolresult_free(r);
}

static void wrong_side_gets_the_legal_moves_in_value_and_card(void **state)
{
    fixture *f = *state;
    cdsh_toolresult_free(call(f, "xiangqi_new", "{\"side\":\"r\",\"opponent\":\"local\"}"));
    cdsh_toolresult *r = call(f, "xiangqi_move", "{\"move\":\"h9g7\"}");
    const json_t *v = value_of(r);
    assert_false(json_is_true(json_object_get(v, "ok")));
    assert_string_equal(str(v, "error"), "NOT_YOUR_TURN");
    assert_string_equal(str(v, "errorZh"), "现在不是对手的回合，不得替人类方走子");
    assert_int_equal(json_array_size(json_object_get(v, "legalMoves")), 44);
    char *text = cdsh_toolresult_text_dup(r);
    assert_non_null(strstr(text, "NOT_YOUR_TURN"));
    assert_non_null(strstr(text, "（44）"));
    assert_non_null(strstr(text, "a3a4 兵九进一"));
    free(text);
    cdsh_toolresult_free(r);
}

static void tools_move_in_three_notations_for_the_model(void **state)
{
    fixture *f = *state;
    const char *moves[] = {"{\"move\":\"h2e2\"}", "{\"move\":\"炮二平五\"}",
                           "{\"move\":{\"from\":70,\"to\":67}}"};
    for (int i = 0; i < 3; i++) {
        /* the person is black and the model red: the model moves first */
        cdsh_toolresult_free(call(f, "xiangqi_new", "{\"side\":\"b\",\"opponent\":\"model\"}"));
        cdsh_toolresult *r = call(f, "xiangqi_move", moves[i]);
        const json_t *v = value_of(r);
        assert_true(json_is_true(json_object_get(v, "ok")));
        assert_string_equal(str(v, "played"), "炮二平五");
        assert_string_equal(str(v, "turn"), "b");
        cdsh_toolresult_free(r);
    }
    cdsh_toolresult *r = call(f, "xiangqi_move", "{\"move\":\"resign\"}");
    assert_string_equal(str(value_of(r), "error"), "NOT_YOUR_TURN");
    cdsh_toolresult_free(r);
}

static void bad_tool_arguments_are_refused_by_the_schema(void **state)
{
    fixture *f = *state;
    const char *bad[][2] = {{"xiangqi_move", "{}"},
                            {"xiangqi_move", "{\"move\":{\"from\":70,\"to\":90}}"},
                            {"xiangqi_undo", "{\"plies\":0}"},
                            {"xiangqi_new", "{\"side\":\"x\"}"},
                            {"xiangqi_review", "{\"highlight\":\"some\"}"},
                            {"xiangqi_hint", "{\"count\":17}"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cdsh_toolresult *r = call(f, bad[i][0], bad[i][1]);
        json_t *j = cdsh_toolresult_to_json(r);
        assert_string_equal(json_string_value(json_object_get(
                                json_object_get(json_object_get(j, "error"), "info"), "code")),
                            "INVALID_ARGS");
        json_decref(j);
        cdsh_toolresult_free(r);
    }
}

static void only_board_is_concurrency_safe(void **state)
{
    fixture *f = *state;
    cdsh_tools *t = cdsh_host_tools(f->host);
    json_t *empty = json_object();
    const char *names[] = {"xiangqi_new", "xiangqi_move", "xiangqi_undo", "xiangqi_hint",
                           "xiangqi_review"};
    assert_true(cdsh_tools_is_parallel(t, NULL, "xiangqi_board", empty));
    for (size_t i = 0; i < 5; i++)
        assert_false(cdsh_tools_is_parallel(t, NULL, names[i], empty));
    /* a batch of board reads runs side by side and agrees */
    cdsh_dispatch_input in[8];
    cdsh_toolresult *res[8];
    char ids[8][8];
    for (int i = 0; i < 8; i++) {
        snprintf(ids[i], sizeof ids[i], "b%d", i);
        in[i] = (cdsh_dispatch_input){.call_id = ids[i], .name = "xiangqi_board", .args = empty};
    }
    assert_int_equal(cdsh_dispatch_batch(t, in, 8, 8, res), 0);
    long long rev = json_integer_value(json_object_get(res[0]->value, "revision"));
    assert_true(rev >= 1);
    for (int i = 0; i < 8; i++) {
        assert_false(res[i]->is_error);
        assert_int_equal(json_integer_value(json_object_get(res[i]->value, "revision")), rev);
    }
    for (int i = 0; i < 8; i++)
        cdsh_toolresult_free(res[i]);
    json_decref(empty);
}

static void command_plays_for_the_person(void **state)
{
    fixture *f = *state;
    int kind;
    char *text = command(f, "/xiangqi new r local", &kind);
    assert_int_equal(kind, CDSH_COMMAND_SUCCESS);
    json_t *v = json_loads(text, 0, NULL);
    assert_string_equal(str(v, "hero"), "r");
    json_decref(v);
    free(text);
    text = command(f, "/xiangqi move 炮二平五", &kind);
    assert_int_equal(kind, CDSH_COMMAND_SUCCESS);
    v = json_loads(text, 0, NULL);
    assert_string_equal(str(v, "played"), "炮二平五");
    assert_int_equal(json_array_size(json_object_get(v, "history")), 2);
    json_decref(v);
    free(text);
    text = command(f, "/xiangqi move h2h8", &kind);
    assert_int_equal(kind, CDSH_COMMAND_ERROR);
    assert_non_null(strstr(text, "ILLEGAL_MOVE"));
    free(text);
    text = command(f, "/xiangqi hint", &kind);
    v = json_loads(text, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(v, "candidates")), 3);
    json_decref(v);
    free(text);
    text = command(f, "/xiangqi review", &kind);
    v = json_loads(text, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(v, "curve")), 3);
    json_decref(v);
    free(text);
    text = command(f, "/xiangqi export", &kind);
    assert_int_equal(kind, CDSH_COMMAND_SUCCESS);
    assert_non_null(strstr(text, "FEN: "));
    assert_non_null(strstr(text, "1. H2-E2 {炮二平五}"));
    char *pgn = strstr(text, "[Game");
    char *start, *fin;
    json_t *moves;
    cdsh_error err;
    assert_int_equal(cdsh_xq_pgn_load(pgn, &start, &fin, &moves, &err), 0);
    assert_int_equal(json_array_size(moves), 2);
    assert_int_equal(strncmp(text + 5, fin, strlen(fin)), 0);
    free(start);
    free(fin);
    json_decref(moves);
    free(text);
    text = command(f, "/xiangqi undo", &kind);
    v = json_loads(text, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(v, "undone")), 2);
    json_decref(v);
    free(text);
    text = command(f, "/xiangqi resign", &kind);
    v = json_loads(text, 0, NULL);
    assert_string_equal(str(json_object_get(v, "status"), "state"), "resigned");
    json_decref(v);
    free(text);
    text = command(f, "/xiangqi dance", &kind);
    assert_int_equal(kind, CDSH_COMMAND_ERROR);
    assert_non_null(strstr(text, "用法"));
    free(text);
}

static void resign_is_not_a_tool(void **state)
{
    fixture *f = *state;
    cdsh_toolresult *r = call(f, "xiangqi_resign", "{}");
    json_t *j = cdsh_toolresult_to_json(r);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(j, "error"), "info"), "code")),
                        "UNKNOWN_TOOL");
    json_decref(j);
    cdsh_toolresult_free(r);
    json_t *names = cdsh_tools_names(cdsh_host_tools(f->host), NULL);
    assert_int_equal(json_array_size(names), 6);
    for (size_t i = 0; i < 6; i++)
        assert_null(strstr(json_string_value(json_array_get(names, i)), "resign"));
    json_decref(names);
}

static void the_playbook_skill_is_registered(void **state)
{
    fixture *f = *state;
    json_t *sk = cdsh_skills_info_dup(cdsh_host_skills(f->host), NULL, "xiangqi-mate-playbook");
    assert_non_null(sk);
    assert_string_equal(str(sk, "source"), "xiangqi");
    assert_non_null(strstr(str(sk, "content"), "xiangqi_hint"));
    assert_non_null(strstr(str(sk, "content"), "炮二平五"));
    json_decref(sk);
}

static int stub_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    static int token;
    return cdsh_ctx_provide(ctx, "connection", &token, err);
}
static const cdsh_plugin_def connection_stub = {.name = "connection-stub", .apply = stub_apply};

static void reload_leaves_one_of_everything(void **state)
{
    fixture *f = *state;
    cdsh_rpc *rpc = cdsh_host_rpc(f->host);
    assert_int_equal(cdsh_rpc_count(rpc), 0); /* no web connection: no channel */
    cdsh_plugin *conn = NULL;
    cdsh_error err;
    assert_int_equal(cdsh_plugin_load(f->host, &connection_stub, NULL, &conn, &err), 0);
    for (int round = 0; round < 3; round++) {
        assert_int_equal(cdsh_tools_count(cdsh_host_tools(f->host)), 6);
        assert_int_equal(cdsh_commands_count(cdsh_host_commands(f->host)), 1);
        assert_int_equal(cdsh_rpc_count(rpc), 1);
        assert_int_equal(cdsh_skills_count(cdsh_host_skills(f->host)), 1);
        cdsh_plugin_unload(f->plugin);
        assert_int_equal(cdsh_tools_count(cdsh_host_tools(f->host)), 0);
        assert_int_equal(cdsh_commands_count(cdsh_host_commands(f->host)), 0);
        assert_int_equal(cdsh_rpc_count(rpc), 0);
        assert_int_equal(cdsh_skills_count(cdsh_host_skills(f->host)), 0);
        assert_int_equal(cdsh_plugin_load(f->host, &cdsh_xq_plugin, f->config, &f->plugin, &err),
                         0);
    }
    /* the connection going away takes the channel with it */
    cdsh_plugin_unload(conn);
    assert_int_equal(cdsh_rpc_count(rpc), 0);
    assert_int_equal(cdsh_tools_count(cdsh_host_tools(f->host)), 6);
}

static void config_is_validated(void **state)
{
    fixture *f = *state;
    cdsh_plugin_unload(f->plugin);
    json_t *bad = json_pack("{s:s,s:{s:i}}", "defaultSide", "x", "engine", "depth", 0);
    cdsh_error err;
    assert_int_not_equal(cdsh_plugin_load(f->host, &cdsh_xq_plugin, bad, NULL, &err), 0);
    assert_string_equal(err.code, "INVALID_CONFIG");
    assert_non_null(strstr(err.message, "(at defaultSide)"));
    assert_non_null(strstr(err.message, "(at engine.depth)"));
    json_decref(bad);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(every_tool_returns_its_declared_shape),
        T(board_lists_legal_moves_and_an_ascii_board),
        T(wrong_side_gets_the_legal_moves_in_value_and_card),
        T(tools_move_in_three_notations_for_the_model),
        T(bad_tool_arguments_are_refused_by_the_schema),
        T(only_board_is_concurrency_safe),
        T(command_plays_for_the_person),
        T(resign_is_not_a_tool),
        T(the_playbook_skill_is_registered),
        T(reload_leaves_one_of_everything),
        T(config_is_validated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
