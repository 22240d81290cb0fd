/* test_tool_order_request.c — the tool order the model really receives:
 * `cdsh run` against the scripted fake model, the request it recorded, and
 * `cdsh tools list --json` printing the same order; by default sorted by
 * name, with a profile's systemPrompt.toolOrder as that profile says, and a
 * bad toolOrder refused before any request is made. */
#include "support/testkit.h"

#include "support/model_env.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void write_profile(const char *home, const char *yaml)
{
    char path[512];
    snprintf(path, sizeof path, "%s/profiles", home);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/profiles/default.yaml", home);
    cdsh_test_write_file(path, yaml);
}

/* "a,b,c" of the "name"s in arr (tool schemas of a request, or list rows). */
static char *names_csv(const json_t *arr, int function_wrapped)
{
    char *out = calloc(1, 4096);
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        const json_t *o = function_wrapped ? json_object_get(v, "function") : v;
        const char *s = json_string_value(json_object_get(o, "name"));
        assert_non_null(s);
        if (i)
            strcat(out, ",");
        strcat(out, s);
    }
    return out;
}

/* The tool names of the first request `cdsh run hi` sends, and of
 * `cdsh tools list --json`, asserted equal; returns them. */
static char *request_order(void)
{
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, "[{\"text\":\"ok\",\"finish_reason\":\"stop\"}]");
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "run", "hi", NULL), 0);
    assert_string_equal(out, "ok\n");
    free(out);
    free(err);
    json_t *bodies = cdsh_test_model_env_bodies(&f);
    assert_int_equal(json_array_size(bodies), 1);
    char *sent = names_csv(json_object_get(json_array_get(bodies, 0), "tools"), 1);
    json_decref(bodies);
    cdsh_test_model_env_stop(&f);

    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "tools", "list", "--json", NULL), 0);
    json_t *doc = json_loads(out, 0, NULL);
    assert_non_null(doc);
    char *listed = names_csv(json_object_get(doc, "tools"), 0);
    assert_string_equal(listed, sent);
    free(listed);
    json_decref(doc);
    free(out);
    free(err);
    return sent;
}

/* Under a fresh home with `profile`, the model and `tools list` see `expected`. */
static void assert_request_order(const char *profile, const char *expected)
{
    char *home = cdsh_test_home_new();
    write_profile(home, profile);
    char *sent = request_order();
    assert_string_equal(sent, expected);
    free(sent);
    cdsh_test_home_free(home);
}

static void by_default_the_model_sees_tools_sorted_by_name(void **state)
{
    (void)state;
    assert_request_order("plugins:\n  xiangqi:\n    enabled: true\n  tavern:\n    enabled: false\n",
                         "job_kill,job_list,job_output,skill,xiangqi_board,xiangqi_hint,"
                         "xiangqi_move,xiangqi_new,xiangqi_review,xiangqi_undo");
}

static void a_profiles_tool_order_is_what_the_model_sees(void **state)
{
    (void)state;
    assert_request_order(
        "plugins:\n"
        "  xiangqi:\n    enabled: true\n"
        "  tavern:\n    enabled: false\n" /* its tools are masked in unbound turns */
        "  systemPrompt:\n    config:\n"
        "      toolOrder: [xiangqi_move, xiangqi_board, \"<unlisted-tools>\", skill]\n",
        "xiangqi_move,xiangqi_board,job_kill,job_list,job_output,xiangqi_hint,xiangqi_new,"
        "xiangqi_review,xiangqi_undo,skill");
}

static void a_bad_tool_order_is_refused_before_any_request(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    write_profile(home, "plugins:\n"
                        "  xiangqi:\n    enabled: true\n"
                        "  tavern:\n    enabled: false\n" /* its tools are masked in unbound turns */
                        "  systemPrompt:\n    config:\n"
                        "      toolOrder: [xiangqi_move, no_such_tool, \"<unlisted-tools>\"]\n");
    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, "[{\"text\":\"never\",\"finish_reason\":\"stop\"}]");
    char *out = NULL, *err = NULL;
    assert_int_not_equal(cdsh_test_run_cdsh(NULL, &out, &err, "run", "hi", NULL), 0);
    assert_non_null(strstr(err, "[UNKNOWN_TOOL_ORDER_ENTRY] toolOrder lists unregistered tool "
                                "\"no_such_tool\"; known tools: job_kill, job_list, "
                                "job_output, skill, xiangqi_board,"));
    assert_int_equal(cdsh_test_fake_model_count(&f), 0);
    free(out);
    free(err);
    assert_int_not_equal(cdsh_test_run_cdsh(NULL, &out, &err, "tools", "list", NULL), 0);
    assert_non_null(strstr(err, "cdsh tools: toolOrder lists unregistered tool \"no_such_tool\""));
    free(out);
    free(err);
    cdsh_test_model_env_stop(&f);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(by_default_the_model_sees_tools_sorted_by_name),
        cmocka_unit_test(a_profiles_tool_order_is_what_the_model_sees),
        cmocka_unit_test(a_bad_tool_order_is_refused_before_any_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
