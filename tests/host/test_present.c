/* test_present.c — render intents (host-contracts.md §1: presentCall /
 * presentResult): the registry asks a tool's presenters softly (invalid
 * args or a missing presenter give the generic card and the presenter is
 * not called), checks every card's fields, never shows intents to the
 * model, and forgets them with the tool. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "host/dispatch.h"
#include "host/host.h"
#include "host/tools.h"

static int calls_seen;

static int echo_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    *value = json_pack("{s:s, s:i}", "output", "hello\n", "exitCode", 0);
    (void)exec;
    return 0;
}

static json_t *term_call(void *ud, const json_t *args)
{
    (void)ud;
    calls_seen++;
    return json_pack("{s:s, s:s, s:s}", "card", "terminal", "command",
                     json_string_value(json_object_get(args, "cmd")), "output", "");
}

static json_t *term_result(void *ud, const json_t *args, const json_t *result)
{
    (void)ud;
    calls_seen++;
    const json_t *v = json_object_get(result, "value");
    if (json_is_true(json_object_get(result, "isError")))
        return NULL;
    return json_pack("{s:s, s:s, s:O, s:O}", "card", "terminal", "command",
                     json_string_value(json_object_get(args, "cmd")), "output",
                     json_object_get(v, "output"), "exitCode", json_object_get(v, "exitCode"));
}

/* Returns whatever the test put in *ud. */
static json_t *raw_call(void *ud, const json_t *args)
{
    (void)args;
    calls_seen++;
    return json_loads(ud, 0, NULL);
}

static cdsh_tools *tools;
static cdsh_events *bus;

static int setup(void **state)
{
    (void)state;
    calls_seen = 0;
    bus = cdsh_events_new();
    tools = cdsh_tools_new(bus);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cdsh_tools_free(tools);
    cdsh_events_free(bus);
    return 0;
}

static void add(const char *name, cdsh_tool_present_call_fn pc, cdsh_tool_present_result_fn pr,
                void *ud, cdsh_disposer_t *d)
{
    json_t *params = json_pack("{s:s, s:{s:{s:s}}, s:[s]}", "type", "object", "properties", "cmd",
                               "type", "string", "required", "cmd");
    json_t *out = json_pack("{s:s}", "type", "object");
    cdsh_tool_def def = {.name = name,
                         .description = "runs a command",
                         .parameters = params,
                         .output_schema = out,
                         .execute = echo_body,
                         .present_call = pc,
                         .present_result = pr,
                         .ud = ud};
    assert_int_equal(cdsh_tools_register(tools, NULL, &def, d, NULL), 0);
    json_decref(params);
    json_decref(out);
}

static char *dump(json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(v);
    return s;
}

#define assert_json(v, want)                                                                       \
    do {                                                                                           \
        char *s_ = dump(v);                                                                        \
        assert_string_equal(s_, want);                                                             \
        free(s_);                                                                                  \
    } while (0)

static void a_presenter_gives_the_card_for_call_and_result(void **state)
{
    (void)state;
    cdsh_disposer_t d;
    add("sh", term_call, term_result, NULL, &d);
    json_t *args = json_pack("{s:s}", "cmd", "echo hello");
    assert_json(cdsh_tools_present_call_dup(tools, NULL, "sh", args),
                "{\"card\":\"terminal\",\"command\":\"echo hello\",\"output\":\"\"}");
    cdsh_dispatch_input in = {.call_id = "c1", .name = "sh", .args = args};
    cdsh_toolresult *r = cdsh_dispatch_execute(tools, &in);
    json_t *rj = cdsh_toolresult_to_json(r);
    assert_json(cdsh_tools_present_result_dup(tools, NULL, "sh", args, rj),
                "{\"card\":\"terminal\",\"command\":\"echo hello\",\"exitCode\":0,"
                "\"output\":\"hello\\n\"}");
    /* the model sees name, description, parameters only */
    json_t *schemas = cdsh_tools_schemas(tools, NULL);
    assert_int_equal(json_object_size(json_array_get(schemas, 0)), 3);
    json_decref(schemas);
    json_decref(rj);
    cdsh_toolresult_free(r);
    json_decref(args);
    /* gone with the tool */
    cdsh_disposer_run(&d);
    args = json_pack("{s:s}", "cmd", "x");
    assert_json(cdsh_tools_present_call_dup(tools, NULL, "sh", args), "{\"card\":\"generic\"}");
    json_decref(args);
}

static void invalid_args_give_the_generic_card_without_asking(void **state)
{
    (void)state;
    cdsh_disposer_t d;
    add("sh", term_call, term_result, NULL, &d);
    json_t *bad = json_pack("{s:i}", "cmd", 3);
    assert_json(cdsh_tools_present_call_dup(tools, NULL, "sh", bad), "{\"card\":\"generic\"}");
    json_t *rj = json_pack("{s:b, s:{}, s:[]}", "isError", 0, "value", "content");
    assert_json(cdsh_tools_present_result_dup(tools, NULL, "sh", bad, rj),
                "{\"card\":\"generic\"}");
    assert_int_equal(calls_seen, 0);
    assert_json(cdsh_tools_present_call_dup(tools, NULL, "sh", NULL), "{\"card\":\"generic\"}");
    assert_json(cdsh_tools_present_call_dup(tools, NULL, "nope", bad), "{\"card\":\"generic\"}");
    assert_int_equal(calls_seen, 0);
    json_decref(rj);
    json_decref(bad);
    cdsh_disposer_run(&d);
}

static void a_tool_without_presenters_is_generic(void **state)
{
    (void)state;
    cdsh_disposer_t d;
    add("plain", NULL, NULL, NULL, &d);
    json_t *args = json_pack("{s:s}", "cmd", "x");
    assert_json(cdsh_tools_present_call_dup(tools, NULL, "plain", args), "{\"card\":\"generic\"}");
    json_decref(args);
    cdsh_disposer_run(&d);
}

/* Each text is what the presenter returns; want is what the page gets. */
static void check(const char *intent, const char *want)
{
    cdsh_disposer_t d;
    add("p", raw_call, NULL, (void *)intent, &d);
    json_t *args = json_pack("{s:s}", "cmd", "x");
    json_t *got = cdsh_tools_present_call_dup(tools, NULL, "p", args);
    char *s = dump(got);
    if (strcmp(s, want) != 0)
        fail_msg("intent %s: got %s, want %s", intent, s, want);
    free(s);
    json_decref(args);
    cdsh_disposer_run(&d);
}

#define GENERIC "{\"card\":\"generic\"}"

static void every_card_is_checked_field_by_field(void **state)
{
    (void)state;
    /* valid, passed through */
    const char *ok[] = {
        "{\"card\":\"diff\",\"newText\":\"b\",\"oldText\":\"a\",\"path\":\"/w/f.c\"}",
        "{\"card\":\"diff\",\"newText\":\"b\",\"oldText\":null,\"path\":\"/w/new.c\"}",
        "{\"card\":\"generic\",\"fen\":\"9/9 w\",\"view\":\"xiangqi-board\"}",
        "{\"card\":\"read\",\"path\":\"/w/a.txt\",\"text\":\"abc\"}",
        "{\"card\":\"search\",\"query\":\"sword\",\"results\":[{\"ref\":\"m1\",\"snippet\":"
        "\"the sword\",\"title\":\"Chapter 1\"}]}",
        "{\"card\":\"terminal\",\"exitCode\":null,\"output\":\"\"}",
        "{\"card\":\"web\",\"title\":\"x\",\"url\":\"https://example.invalid/\"}",
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        check(ok[i], ok[i]);
    /* invalid: the generic card */
    const char *bad[] = {
        "{\"card\":\"board\"}",                                       /* not a card */
        "{\"card\":\"terminal\"}",                                    /* output missing */
        "{\"card\":\"terminal\",\"output\":\"\",\"exitCode\":\"1\"}", /* exitCode a string */
        "{\"card\":\"diff\",\"path\":\"/a\"}",                        /* newText missing */
        "{\"card\":\"search\",\"results\":[{\"snippet\":\"x\"}]}",    /* a result without title */
        "{\"card\":\"search\",\"results\":{}}",
        "{\"card\":\"read\"}",
        "{\"card\":\"web\",\"url\":3}",
        "{\"card\":\"generic\",\"text\":[]}",
        "[\"terminal\"]",
        "\"terminal\"",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        check(bad[i], GENERIC);
    check("{}", GENERIC);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_presenter_gives_the_card_for_call_and_result, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(invalid_args_give_the_generic_card_without_asking, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_tool_without_presenters_is_generic, setup, teardown),
        cmocka_unit_test_setup_teardown(every_card_is_checked_field_by_field, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
