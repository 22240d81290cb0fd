/* test_skills.c — runtime skills: kebab-case names, first-wins duplicates
 * with a warning, layers, listing, lookup and the model-facing text. */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "base/fs.h"
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
                           "\"when asked\",\"invocation\":{\"modelInvocable\":true,"
                           "\"userInvocable\":true},\"source\":\"xiangqi\",\"provider\":"
                           "\"runtime\"},{\"name\":\"zz-top\",\"description\":\"how to do \","
                           "\"invocation\":{\"modelInvocable\":true,\"userInvocable\":true},"
                           "\"source\":\"runtime\",\"provider\":\"runtime\"}]");
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
    assert_string_equal(r, "<skill_content name=\"chess\">\n"
                           "<skill_resources>\n"
                           "Resources for this skill are managed by provider \"runtime\".\n"
                           "Load referenced resources only as needed.\n"
                           "</skill_resources>\n"
                           "\n"
                           "<skill_instructions>\n"
                           "Play carefully.\nThink first.\n"
                           "</skill_instructions>\n"
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

static void register_checks_resource_base_and_metadata(void **state)
{
    fixture *f = *state;
    cdsh_disposer_t d;
    cdsh_error err = {0};
    cdsh_skill_def s = skill("ok", "x");
    json_t *bad = json_pack("{s:s}", "kind", "directory");
    s.resource_base = bad;
    assert_int_equal(cdsh_skills_register(f->skills, NULL, &s, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_SKILL");
    assert_string_equal(err.message, "skill \"ok\" has an invalid resourceBase: a directory base "
                                     "is {kind, path: string}");
    json_decref(bad);
    bad = json_pack("{s:s, s:s}", "kind", "ftp", "url", "x");
    s.resource_base = bad;
    assert_int_equal(cdsh_skills_register(f->skills, NULL, &s, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "skill \"ok\" has an invalid resourceBase: kind must be "
                                     "\"directory\", \"url\" or \"opaque\"");
    json_decref(bad);
    s.resource_base = NULL;
    json_t *meta = json_array();
    s.metadata = meta;
    assert_int_equal(cdsh_skills_register(f->skills, NULL, &s, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "skill \"ok\" metadata must be an object");
    json_decref(meta);
    assert_int_equal(cdsh_skills_count(f->skills), 0);
    /* a full runtime registration keeps whenToUse, path, metadata and its base */
    meta = json_pack("{s:s}", "author", "me");
    json_t *base = json_pack("{s:s, s:s}", "kind", "opaque", "description", "ask <ops> & co");
    s.metadata = meta, s.resource_base = base, s.path = "/skills/ok.md";
    s.provider = "xiangqi-pack";
    assert_int_equal(cdsh_skills_register(f->skills, NULL, &s, &d, NULL), 0);
    json_t *def = cdsh_skills_info_dup(f->skills, NULL, "ok");
    assert_string_equal(json_string_value(json_object_get(def, "path")), "/skills/ok.md");
    assert_true(json_equal(json_object_get(def, "metadata"), meta));
    assert_true(json_equal(json_object_get(def, "resourceBase"), base));
    assert_string_equal(json_string_value(json_object_get(def, "provider")), "xiangqi-pack");
    char *r = cdsh_skills_render_def_dup(def);
    assert_string_equal(r, "<skill_content name=\"ok\">\n<skill_resources>\n"
                           "Resources for this skill: ask &lt;ops&gt; &amp; co\n"
                           "Load referenced resources only as needed.\n"
                           "</skill_resources>\n\n<skill_instructions>\nx\n"
                           "</skill_instructions>\n</skill_content>");
    free(r);
    json_decref(def);
    json_decref(meta), json_decref(base);
    cdsh_disposer_run(&d);
}

static void a_url_base_is_rendered_for_the_model(void **state)
{
    (void)state;
    json_t *def = json_pack("{s:s, s:s, s:s, s:{s:s, s:s}}", "name", "web", "provider", "remote",
                            "content", "Fetch.", "resourceBase", "kind", "url", "url",
                            "https://example.invalid/s/?a=1&b=<2>");
    char *r = cdsh_skills_render_def_dup(def);
    assert_string_equal(r, "<skill_content name=\"web\">\n<skill_resources>\n"
                           "Base URL for this skill: https://example.invalid/s/?a=1&amp;b=&lt;2&gt;\n"
                           "Resolve relative URLs mentioned by this skill against the base URL "
                           "before using them. Load referenced resources only as needed.\n"
                           "</skill_resources>\n\n<skill_instructions>\nFetch.\n"
                           "</skill_instructions>\n</skill_content>");
    free(r);
    json_decref(def);
}

static void put(const char *dir, const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    char *parent = cdsh_fs_dirname_dup(path);
    assert_int_equal(cdsh_fs_mkdir_p(parent, 0700, NULL), 0);
    free(parent);
    cdsh_test_write_file(path, text);
}

/* A directory base: the files are listed in <skill_resources> (sorted, no
 * dot-files, not the skill's own file, no symlink that leaves the folder)
 * and read one by one, confined to the folder. */
static void directory_resources_are_listed_and_read_inside_the_folder(void **state)
{
    fixture *f = *state;
    char *home = cdsh_test_home_new();
    char dir[900], outside[900], link[1000], path[1000];
    snprintf(dir, sizeof dir, "%s/skills/notes", home);
    snprintf(outside, sizeof outside, "%s/secret.txt", home);
    put(dir, "SKILL.md", "---\nname: notes\n---\nbody\n");
    put(dir, "template.md", "# Notes\n");
    put(dir, "scripts/tidy.sh", "#!/bin/sh\n");
    put(dir, ".hidden", "x");
    put(dir, "a/b/c/d/too-deep.md", "x");
    cdsh_test_write_file(outside, "secret");
    snprintf(link, sizeof link, "%s/leak.txt", dir);
    assert_int_equal(symlink(outside, link), 0);
    snprintf(link, sizeof link, "%s/inner.md", dir);
    assert_int_equal(symlink("template.md", link), 0);
    static const char bin[] = {'P', 'K', 0, 1};
    snprintf(path, sizeof path, "%s/blob.bin", dir);
    FILE *fp = fopen(path, "wb");
    fwrite(bin, 1, sizeof bin, fp);
    fclose(fp);
    snprintf(path, sizeof path, "%s/SKILL.md", dir);
    json_t *base = json_pack("{s:s, s:s}", "kind", "directory", "path", dir);
    cdsh_skill_def s = skill("notes", "Write notes.");
    s.resource_base = base, s.path = path;
    cdsh_disposer_t d;
    assert_int_equal(cdsh_skills_register(f->skills, NULL, &s, &d, NULL), 0);
    json_t *def = cdsh_skills_info_dup(f->skills, NULL, "notes");

    bool more = true;
    json_t *files = cdsh_skills_resources_dup(def, 100, &more);
    char *list = json_dumps(files, JSON_COMPACT);
    assert_string_equal(list, "[\"blob.bin\",\"inner.md\",\"scripts/tidy.sh\",\"template.md\"]");
    assert_false(more);
    free(list);
    json_decref(files);
    files = cdsh_skills_resources_dup(def, 2, &more);
    assert_int_equal(json_array_size(files), 2);
    assert_true(more);
    json_decref(files);

    char *r = cdsh_skills_render_def_dup(def);
    char want[3000];
    snprintf(want, sizeof want,
             "<skill_content name=\"notes\">\n<skill_resources>\n"
             "Base directory for this skill: %s\n"
             "Resolve relative paths mentioned by this skill against the base directory before "
             "using them. Load referenced resources only as needed.\n"
             "Files (read one with the `skill` tool: {\"name\", \"resource\": \"<relative "
             "path>\"}):\n- blob.bin\n- inner.md\n- scripts/tidy.sh\n- template.md\n"
             "</skill_resources>\n\n<skill_instructions>\nWrite notes.\n"
             "</skill_instructions>\n</skill_content>",
             dir);
    assert_string_equal(r, want);
    free(r);

    char *text = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_skills_resource_read_dup(def, "scripts/tidy.sh", 1000, &text, NULL), 0);
    assert_string_equal(text, "#!/bin/sh\n");
    free(text);
    assert_int_equal(cdsh_skills_resource_read_dup(def, "inner.md", 1000, &text, NULL), 0);
    assert_string_equal(text, "# Notes\n");
    free(text);
    struct {
        const char *rel;
        int rc;
        const char *code, *message;
    } bad[] = {
        {"../secret.txt", CDSH_EINVAL, "INVALID_RESOURCE",
         "resource \"../secret.txt\" of skill \"notes\" must be a relative path inside its "
         "directory"},
        {"leak.txt", CDSH_EINVAL, "INVALID_RESOURCE",
         "resource \"leak.txt\" of skill \"notes\" must be a relative path inside its directory"},
        {"/etc/passwd", CDSH_EINVAL, "INVALID_RESOURCE",
         "resource \"/etc/passwd\" of skill \"notes\" must be a relative path inside its "
         "directory"},
        {"", CDSH_EINVAL, "INVALID_RESOURCE",
         "resource \"\" of skill \"notes\" must be a relative path inside its directory"},
        {"nope.md", CDSH_ENOTFOUND, "UNKNOWN_RESOURCE", "skill \"notes\" has no resource \"nope.md\""},
        {"scripts", CDSH_ENOTFOUND, "UNKNOWN_RESOURCE", "skill \"notes\" has no resource \"scripts\""},
        {"blob.bin", CDSH_EINVAL, "RESOURCE_NOT_TEXT",
         "resource \"blob.bin\" of skill \"notes\" is not UTF-8 text (4 bytes)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        text = (char *)"unchanged";
        assert_int_equal(cdsh_skills_resource_read_dup(def, bad[i].rel, 1000, &text, &err),
                         bad[i].rc);
        assert_null(text);
        assert_string_equal(err.code, bad[i].code);
        assert_string_equal(err.message, bad[i].message);
    }
    assert_int_equal(cdsh_skills_resource_read_dup(def, "template.md", 3, &text, &err),
                     CDSH_ETOOBIG);
    assert_string_equal(err.code, "RESOURCE_TOO_LARGE");
    assert_string_equal(err.message, "resource \"template.md\" of skill \"notes\" has 8 bytes "
                                     "(at most 3 are read)");
    json_decref(def);
    /* no directory base: nothing to list or read */
    def = json_pack("{s:s, s:s}", "name", "plain", "content", "x");
    files = cdsh_skills_resources_dup(def, 10, NULL);
    assert_int_equal(json_array_size(files), 0);
    json_decref(files);
    assert_int_equal(cdsh_skills_resource_read_dup(def, "a.md", 10, &text, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "NO_SKILL_RESOURCES");
    assert_string_equal(err.message, "skill \"plain\" has no resource directory");
    json_decref(def);
    json_decref(base);
    cdsh_disposer_run(&d);
    cdsh_test_home_free(home);
}

/* snapshot() is list() plus complete; runtime skills alone are complete. */
static void snapshot_of_runtime_skills_is_complete(void **state)
{
    fixture *f = *state;
    cdsh_disposer_t d;
    cdsh_skill_def s = skill("x", "b");
    cdsh_skills_register(f->skills, NULL, &s, &d, NULL);
    json_t *snap = cdsh_skills_snapshot(f->skills, NULL, NULL, NULL);
    assert_true(json_is_true(json_object_get(snap, "complete")));
    json_t *list = cdsh_skills_list(f->skills, NULL);
    assert_true(json_equal(json_object_get(snap, "skills"), list));
    json_decref(list);
    json_decref(snap);
    cdsh_disposer_run(&d);
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
        T(register_checks_resource_base_and_metadata),
        cmocka_unit_test(a_url_base_is_rendered_for_the_model),
        T(directory_resources_are_listed_and_read_inside_the_folder),
        T(snapshot_of_runtime_skills_is_complete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
