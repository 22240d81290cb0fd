/* test_skills.c — runtime skills: kebab-case names, first-wins duplicates
 * with a warning, layers, listing, lookup and the model-facing text. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "host/skills.h"

typedef struct fixture {
    cdsh_events *bus;
    cdsh_skills *skills;
    json_t *warnings;
    int changes;
    cdsh_disposer_t l1, l2;
} fixture;

static void on_warning(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    (void)name, (void)scope;
    json_array_append(((fixture *)arg)->warnings, (json_t *)payload);
}

static void on_change(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    (void)name, (void)scope, (void)payload;
    ((fixture *)arg)->changes++;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->bus = cdsh_events_new();
    f->skills = cdsh_skills_new(f->bus);
    f->warnings = json_array();
    cdsh_events_on(f->bus, "log/warning", NULL, on_warning, f, &f->l1, NULL);
    cdsh_events_on(f->bus, "skills/change", NULL, on_change, f, &f->l2, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    cdsh_disposer_run(&f->l1);
    cdsh_disposer_run(&f->l2);
    cdsh_skills_free(f->skills);
    cdsh_events_free(f->bus);
    json_decref(f->warnings);
    free(f);
    return 0;
}

static cdsh_skill_def skill(const char *name, const char *content)
{
    return (cdsh_skill_def){.name = name, .description = "how to do ", .content = content};
}

static void names_are_kebab_case(void **state)
{
    (void)state;
    assert_true(cdsh_skills_name_valid("xiangqi"));
    assert_true(cdsh_skills_name_valid("read-pdf-2"));
    assert_true(cdsh_skills_name_valid("9"));
    assert_false(cdsh_skills_name_valid("Read"));
    assert_false(cdsh_skills_name_valid("read_pdf"));
    assert_false(cdsh_skills_name_valid("-read"));
    assert_false(cdsh_skills_name_valid("read-"));
    assert_false(cdsh_skills_name_valid("read--pdf"));
    assert_false(cdsh_skills_name_valid(""));
    assert_false(cdsh_skills_name_valid(NULL));
}

static void register_refuses_invalid_definitions(void **state)
{
    fixture *f = *state;
    cdsh_disposer_t d;
    cdsh_error err = {0};
    cdsh_skill_def s = skill("Bad_Name", "x");
    assert_int_equal(cdsh_skills_register(f->skills, NULL, &s, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_SKILL");
    assert_string_equal(err.message,
                        "skill name \"Bad_Name\" must be kebab-case (^[a-z0-9]+(?:-[a-z0-9]+)*$)");
    s = skill("ok", "x");
    s.description = "";
    assert_int_equal(cdsh_skills_register(f->skills, NULL, &s, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "skill \"ok\" needs a non-empty description");
    s = skill("ok", NULL);
    assert_int_equal(cdsh_skills_register(f->skills, NULL, &s, &d, &err), CDSH_EINVAL);
    assert_int_equal(cdsh_skills_count(f->skills), 0);
}

static void duplicate_warns_and_returns_noop_disposer_first_wins(void **state)
{
    fixture *f = *state;
    cdsh_disposer_t d1, d2;
    cdsh_skill_def a = skill("review", "first body"), b = skill("review", "second body");
    assert_int_equal(cdsh_skills_register(f->skills, NULL, &a, &d1, NULL), 0);
    assert_int_equal(cdsh_skills_register(f->skills, NULL, &b, &d2, NULL), 0);
    assert_null(d2.fn); /* no-op disposer */
    assert_int_equal(json_array_size(f->warnings), 1);
    json_t *w = json_array_get(f->warnings, 0);
    assert_string_equal(json_string_value(json_object_get(w, "source")), "skills");
    assert_string_equal(json_string_value(json_object_get(w, "message")),
                        "skill \"review\" is already registered; keeping the first registration");
    json_t *got = cdsh_skills_info_dup(f->skills, NULL, "review");
    assert_string_equal(json_string_value(json_object_get(got, "content")), "first body");
    json_decref(got);
    cdsh_disposer_run(&d2); /* harmless */
    assert_int_equal(cdsh_skills_count(f->skills), 1);
    cdsh_disposer_run(&d1);
    assert_int_equal(cdsh_skills_count(f->skills), 0);
}

static void same_name_in_agent_layer_shadows_global(void **state)
{
    fixture *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    cdsh_disposer_t d1, d2;
    cdsh_skill_def g = skill("review", "global"), s = skill("review", "agent");
    cdsh_skills_register(f->skills, NULL, &g, &d1, NULL);
    assert_int_equal(cdsh_skills_register(f->skills, a, &s, &d2, NULL), 0);
    assert_non_null(d2.fn);
    assert_int_equal(json_array_size(f->warnings), 0);
    json_t *ga = cdsh_skills_info_dup(f->skills, a, "review"),
           *gg = cdsh_skills_info_dup(f->skills, NULL, "review");
    assert_string_equal(json_string_value(json_object_get(ga, "content")), "agent");
    assert_string_equal(json_string_value(json_object_get(gg, "content")), "global");
    json_decref(ga);
    json_decref(gg);
    json_t *la = cdsh_skills_list(f->skills, a);
    assert_int_equal(json_array_size(la), 1);
    json_decref(la);
    cdsh_disposer_run(&d2);
    cdsh_disposer_run(&d1);
    cdsh_scope_unref(a);
}

static void list_is_sorted_summaries_without_content(void **state)
{
    fixture *f = *state;
    cdsh_disposer_t d1, d2;
    cdsh_skill_def z = skill("zz-top", "body"), a = skill("aa", "body");
    a.when_to_use = "when asked";
    a.source = "xiangqi";
    cdsh_skills_register(f->skills, NULL, &z, &d1, NULL);
    cdsh_skills_register(f->skills, NULL, &a, &d2, NULL);
    json_t *l = cdsh_skills_list(f->skills, NULL);
    char *s = json_dumps(l, JSON_COMPACT);
    assert_string_equal(s, "[{\"name\":\"aa\",\"description\":\"how to do \",\"whenToUse\":"
                           "\"when asked\",\"source\":\"xiangqi\",\"invocation\":{\"modelInvocable\":true,\"userInvocable\":true}},{\"name\":\"zz-top\","
                           "\"description\":\"how to do \",\"source\":\"runtime\",\"invocation\":{\"modelInvocable\":true,\"userInvocable\":true}}]");
    free(s);
    json_decref(l);
    cdsh_disposer_run(&d1);
    cdsh_disposer_run(&d2);
}

static void get_unknown_or_invalid_name_is_null(void **state)
{
    fixture *f = *state;
    assert_null(cdsh_skills_info_dup(f->skills, NULL, "missing"));
    assert_null(cdsh_skills_info_dup(f->skills, NULL, "Not Valid"));
    assert_null(cdsh_skills_render_dup(f->skills, NULL, "missing"));
}

static void index_lists_visible_skills_and_names_the_tool(void **state)
{
    fixture *f = *state;
    assert_null(cdsh_skills_index_dup(f->skills, NULL));
    cdsh_disposer_t d1, d2;
    cdsh_skill_def a = skill("read-pdf", "b"), b = skill("chess", "b");
    a.when_to_use = "the user sends a PDF";
    cdsh_skills_register(f->skills, NULL, &a, &d1, NULL);
    cdsh_skills_register(f->skills, NULL, &b, &d2, NULL);
    char *idx = cdsh_skills_index_dup(f->skills, NULL);
    assert_string_equal(idx, "<available_skills>\n"
                             "- chess: how to do \n"
                             "- read-pdf: how to do  (when to use: the user sends a PDF)\n"
                             "</available_skills>\n"
                             "To use a skill, call the `skill` tool with its name to load its "
                             "instructions.\n");
    free(idx);
    cdsh_disposer_run(&d1);
    cdsh_disposer_run(&d2);
}

static void render_wraps_content_for_the_model(void **state)
{
    fixture *f = *state;
    cdsh_disposer_t d;
    cdsh_skill_def s = skill("chess", "Play carefully.\nThink first.");
    cdsh_skills_register(f->skills, NULL, &s, &d, NULL);
    char *r = cdsh_skills_render_dup(f->skills, NULL, "chess");
    assert_string_equal(r, "<skill_content name=\"chess\">\nPlay carefully.\nThink first.\n"
                           "</skill_content>");
    free(r);
    cdsh_disposer_run(&d);
}

static void change_events_fire_on_register_and_dispose_not_on_duplicate(void **state)
{
    fixture *f = *state;
    cdsh_disposer_t d1, d2;
    cdsh_skill_def s = skill("x", "b");
    cdsh_skills_register(f->skills, NULL, &s, &d1, NULL);
    cdsh_skills_register(f->skills, NULL, &s, &d2, NULL);
    assert_int_equal(f->changes, 1);
    cdsh_disposer_run(&d1);
    assert_int_equal(f->changes, 2);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_are_kebab_case),
        T(register_refuses_invalid_definitions),
        T(duplicate_warns_and_returns_noop_disposer_first_wins),
        T(same_name_in_agent_layer_shadows_global),
        T(list_is_sorted_summaries_without_content),
        T(get_unknown_or_invalid_name_is_null),
        T(index_lists_visible_skills_and_names_the_tool),
        T(render_wraps_content_for_the_model),
        T(change_events_fire_on_register_and_dispose_not_on_duplicate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
