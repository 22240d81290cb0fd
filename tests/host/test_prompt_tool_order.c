/* test_prompt_tool_order.c — the order of the model's tool list: names
 * compared by UTF-16 code units as JavaScript's default sort does, the
 * systemPrompt plugin's toolOrder with its "<unlisted-tools>" rest entry,
 * every refusal with its code and message, and the order going away with
 * the plugin that set it. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "host/host.h"
#include "host/plugins.h"
#include "host/prompt.h"

static json_t *schemas_of(const char *const *names)
{
    json_t *a = json_array();
    for (; *names; names++)
        json_array_append_new(a, json_pack("{s:s, s:s}", "name", *names, "description", "d"));
    return a;
}

/* "a,b,c" from an array of tool schemas (or of names). */
static char *names_csv(const json_t *arr)
{
    size_t i, len = 1;
    json_t *v;
    json_array_foreach(arr, i, v) {
        const char *s = json_is_string(v) ? json_string_value(v)
                                          : json_string_value(json_object_get(v, "name"));
        len += strlen(s) + 1;
    }
    char *out = calloc(1, len);
    json_array_foreach(arr, i, v) {
        const char *s = json_is_string(v) ? json_string_value(v)
                                          : json_string_value(json_object_get(v, "name"));
        if (i)
            strcat(out, ",");
        strcat(out, s);
    }
    return out;
}

static void names_compare_by_utf16_code_units(void **state)
{
    (void)state;
    assert_int_equal(cdsh_prompt_utf16_cmp("abc", "abc"), 0);
    assert_int_equal(cdsh_prompt_utf16_cmp("", ""), 0);
    assert_true(cdsh_prompt_utf16_cmp("", "a") < 0);
    assert_true(cdsh_prompt_utf16_cmp("a", "ab") < 0);
    assert_true(cdsh_prompt_utf16_cmp("Z", "a") < 0); /* upper case first, as in JS */
    assert_true(cdsh_prompt_utf16_cmp("b_x", "b-x") > 0); /* '_' 0x5F > '-' 0x2D */
    assert_true(cdsh_prompt_utf16_cmp("z", "\xc3\xa9") < 0);  /* U+00E9 after ASCII */
    /* An astral character (U+1F600, surrogates D83D DE00) sorts before U+FF5E
     * in UTF-16, though its code point is larger: code-point or UTF-8 byte
     * order would put it after. */
    assert_true(cdsh_prompt_utf16_cmp("\xf0\x9f\x98\x80", "\xef\xbd\x9e") < 0);
    assert_true(cdsh_prompt_utf16_cmp("\xef\xbd\x9e", "\xf0\x9f\x98\x80") > 0);
    assert_true(strcmp("\xf0\x9f\x98\x80", "\xef\xbd\x9e") > 0); /* bytes disagree */
    /* Two astral characters compare by their surrogate pairs. */
    assert_true(cdsh_prompt_utf16_cmp("\xf0\x9f\x98\x80", "\xf0\x9f\x98\x81") < 0);
}

static void without_an_order_tools_sort_by_name(void **state)
{
    (void)state;
    const char *names[] = {"xiangqi_move", "skill", "Zeta", "alpha_b", "alpha-b", NULL};
    json_t *schemas = schemas_of(names);
    cdsh_error err = {0};
    json_t *out = cdsh_prompt_order_tools(schemas, NULL, NULL, &err);
    assert_non_null(out);
    char *csv = names_csv(out);
    assert_string_equal(csv, "Zeta,alpha-b,alpha_b,skill,xiangqi_move");
    free(csv);
    json_decref(out);
    json_decref(schemas);
}

static void the_rest_entry_places_every_unlisted_tool(void **state)
{
    (void)state;
    const char *names[] = {"d", "b", "a", "e", "c", NULL};
    json_t *schemas = schemas_of(names);
    cdsh_error err = {0};
    json_t *order = json_pack("[s,s,s]", "e", CDSH_PROMPT_TOOL_ORDER_REST, "a");
    json_t *out = cdsh_prompt_order_tools(schemas, order, NULL, &err);
    assert_non_null(out);
    char *csv = names_csv(out);
    assert_string_equal(csv, "e,b,c,d,a"); /* listed ones where listed, the rest sorted */
    free(csv);
    json_decref(out);
    json_decref(order);
    /* A name the order lists that is known (restrictable) but not in this
     * view's schemas is skipped, not refused. */
    order = json_pack("[s,s]", "hidden", CDSH_PROMPT_TOOL_ORDER_REST);
    json_t *known = json_pack("[s,s,s,s,s,s]", "a", "b", "c", "d", "e", "hidden");
    out = cdsh_prompt_order_tools(schemas, order, known, &err);
    assert_non_null(out);
    csv = names_csv(out);
    assert_string_equal(csv, "a,b,c,d,e");
    free(csv);
    json_decref(out);
    json_decref(order);
    json_decref(known);
    json_decref(schemas);
}

static void bad_orders_are_refused_with_their_reason(void **state)
{
    (void)state;
    cdsh_error err = {0};
    json_t *o = json_string("skill");
    assert_int_not_equal(cdsh_prompt_tool_order_check(o, &err), 0);
    assert_string_equal(err.code, "INVALID_TOOL_ORDER");
    assert_string_equal(err.message, "toolOrder must be an array of tool names");
    json_decref(o);
    o = json_pack("[s,i]", CDSH_PROMPT_TOOL_ORDER_REST, 3);
    assert_int_not_equal(cdsh_prompt_tool_order_check(o, &err), 0);
    assert_string_equal(err.message, "toolOrder entries must be strings");
    json_decref(o);
    o = json_pack("[s,s,s]", "skill", CDSH_PROMPT_TOOL_ORDER_REST, "skill");
    assert_int_not_equal(cdsh_prompt_tool_order_check(o, &err), 0);
    assert_string_equal(err.message, "toolOrder lists \"skill\" more than once");
    json_decref(o);
    o = json_pack("[s]", "skill");
    assert_int_not_equal(cdsh_prompt_tool_order_check(o, &err), 0);
    assert_string_equal(err.message, "toolOrder must contain the \"<unlisted-tools>\" rest entry "
                                     "(where unlisted tools are inserted)");
    json_decref(o);
    /* Unknown entries: all of them named, the known tools sorted. */
    const char *names[] = {"b", "a", NULL};
    json_t *schemas = schemas_of(names);
    o = json_pack("[s,s,s]", "nope", CDSH_PROMPT_TOOL_ORDER_REST, "gone");
    assert_null(cdsh_prompt_order_tools(schemas, o, NULL, &err));
    assert_string_equal(err.code, "UNKNOWN_TOOL_ORDER_ENTRY");
    assert_string_equal(err.message,
                        "toolOrder lists unregistered tools \"nope\", \"gone\"; known tools: a, b");
    json_decref(o);
    json_decref(schemas);
    /* A provider may not use the reserved rest name as a tool name. */
    const char *reserved[] = {"a", CDSH_PROMPT_TOOL_ORDER_REST, NULL};
    schemas = schemas_of(reserved);
    assert_null(cdsh_prompt_order_tools(schemas, NULL, NULL, &err));
    assert_string_equal(err.code, "RESERVED_TOOL_NAME");
    json_decref(schemas);
}

static int changes;
static void on_change(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    (void)arg;
    (void)scope;
    assert_string_equal(name, "prompt/change");
    assert_string_equal(json_string_value(json_object_get(payload, "reason")), "tool-order");
    changes++;
}

static void the_plugin_sets_the_order_and_unload_restores_it(void **state)
{
    (void)state;
    cdsh_host *host = cdsh_host_new();
    cdsh_prompt *p = cdsh_host_prompt(host);
    cdsh_error err = {0};
    cdsh_disposer_t sub;
    assert_int_equal(
        cdsh_events_on(cdsh_host_events(host), "prompt/change", NULL, on_change, NULL, &sub, &err),
        0);
    changes = 0;
    assert_null(cdsh_prompt_tool_order_dup(p));
    json_t *config = json_pack("{s:[s,s]}", "toolOrder", "skill", CDSH_PROMPT_TOOL_ORDER_REST);
    cdsh_plugin *pl;
    assert_int_equal(cdsh_plugin_load(host, &cdsh_prompt_plugin, config, &pl, &err), 0);
    json_t *got = cdsh_prompt_tool_order_dup(p);
    assert_true(json_equal(got, json_object_get(config, "toolOrder")));
    json_decref(got);
    assert_int_equal(changes, 1);
    cdsh_plugin_unload(pl);
    assert_null(cdsh_prompt_tool_order_dup(p));
    assert_int_equal(changes, 2);
    /* A bad order fails the plugin's load and leaves the previous one. */
    json_object_set_new(config, "toolOrder", json_pack("[s]", "skill"));
    assert_int_not_equal(cdsh_plugin_load(host, &cdsh_prompt_plugin, config, &pl, &err), 0);
    assert_string_equal(err.code, "INVALID_TOOL_ORDER");
    assert_null(cdsh_prompt_tool_order_dup(p));
    json_decref(config);
    cdsh_disposer_run(&sub);
    cdsh_host_free(host);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_compare_by_utf16_code_units),
        cmocka_unit_test(without_an_order_tools_sort_by_name),
        cmocka_unit_test(the_rest_entry_places_every_unlisted_tool),
        cmocka_unit_test(bad_orders_are_refused_with_their_reason),
        cmocka_unit_test(the_plugin_sets_the_order_and_unload_restores_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
