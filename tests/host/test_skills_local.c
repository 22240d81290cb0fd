/* test_skills_local.c — the built-in on-disk skill provider ("skills-local"
 * plugin, provider "local"): SKILL.md bundles and flat .md files found in
 * the project's .cdsh/skills and .agents/skills, customSkillDirs and
 * $CDSH_HOME/skills; ranks against each other and against runtime skills
 * (250); invocation flags from the front matter honoured by the index and
 * the `skill` tool; the invalid ones failing closed with a warning;
 * resources listed and readable; every load rereading the file; the
 * provider gone with the plugin. */
#include "support/testkit.h"

#include "support/timing.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "host/dispatch.h"
#include "host/host.h"
#include "host/skills.h"
#include "host/skilltool.h"

typedef struct fx {
    char *home;
    char project[700], work[760], custom[700];
    cdsh_host *host;
    cdsh_plugin *plugin;
    json_t *warnings;
    cdsh_disposer_t listener;
    cdsh_skill_lookup lookup;
} fx;

static void on_warning(void *arg, const char *name, const cdsh_scope *scope, const json_t *p)
{
    (void)name, (void)scope;
    fx *f = arg;
    if (strcmp(json_string_value(json_object_get(p, "source")), "skills-local") == 0)
        json_array_append_new(f->warnings, json_string(json_string_value(json_object_get(p, "message"))));
}

/* Writes text to dir/rel, creating directories. */
static void put(const char *dir, const char *rel, const char *text)
{
    char *path = cdsh_fs_path_join_dup(dir, rel);
    char *parent = cdsh_fs_dirname_dup(path);
    assert_int_equal(cdsh_fs_mkdir_p(parent, 0755, NULL), 0);
    cdsh_test_write_file(path, text);
    free(parent);
    free(path);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    snprintf(f->project, sizeof f->project, "%s/project", f->home);
    snprintf(f->work, sizeof f->work, "%s/src/deep", f->project);
    snprintf(f->custom, sizeof f->custom, "%s/custom", f->home);
    put(f->project, ".git/HEAD", "ref: refs/heads/main\n");
    assert_int_equal(cdsh_fs_mkdir_p(f->work, 0755, NULL), 0);
    f->lookup.cwd = f->work; /* below the project root: found through .git */
    f->warnings = json_array();
    f->host = cdsh_host_new();
    assert_int_equal(cdsh_events_on(cdsh_host_events(f->host), "log/warning", NULL, on_warning, f,
                                    &f->listener, NULL),
                     0);
    *state = f;
    return 0;
}

static void load(fx *f)
{
    json_t *cfg = json_pack("{s:[s]}", "customSkillDirs", f->custom);
    cdsh_error err = {0};
    assert_int_equal(cdsh_plugin_load(f->host, &cdsh_skills_local_plugin, cfg, &f->plugin, &err),
                     0);
    json_decref(cfg);
}

static int teardown(void **state)
{
    fx *f = *state;
    cdsh_host_free(f->host);
    json_decref(f->warnings);
    cdsh_test_home_free(f->home);
    free(f);
    return 0;
}

static json_t *skill_named(json_t *snap, const char *name)
{
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(snap, "skills"), i, s) {
        if (strcmp(json_string_value(json_object_get(s, "name")), name) == 0)
            return s;
    }
    return NULL;
}

static json_t *snapshot(fx *f)
{
    cdsh_error err = {0};
    json_t *snap = cdsh_skills_snapshot(cdsh_host_skills(f->host), NULL, &f->lookup, &err);
    assert_non_null(snap);
    return snap;
}

#define SKILL(name, desc, extra) "---\nname: " name "\ndescription: " desc "\n" extra "---\n"

/* ---- cases ---------------------------------------------------------------------- */

static void roots_rank_project_then_custom_then_home(void **state)
{
    fx *f = *state;
    char user[720];
    snprintf(user, sizeof user, "%s/skills", f->home);
    put(f->project, ".cdsh/skills/review/SKILL.md", SKILL("review", "project review", "") "P\n");
    put(f->project, ".agents/skills/review.md", SKILL("review", "agents review", "") "A\n");
    put(f->project, ".agents/skills/lint.md", SKILL("lint", "agents lint", "") "L\n");
    put(f->custom, "lint/SKILL.md", SKILL("lint", "custom lint", "") "C\n");
    put(f->custom, "deploy.md", SKILL("deploy", "custom deploy", "") "D\n");
    put(user, "deploy/SKILL.md", SKILL("deploy", "home deploy", "") "H\n");
    put(user, "notes/SKILL.md", SKILL("notes", "home notes", "whenToUse: when taking notes\n")
                                    "N\n");
    load(f);
    json_t *snap = snapshot(f);
    assert_true(json_is_true(json_object_get(snap, "complete")));
    assert_int_equal(json_array_size(json_object_get(snap, "skills")), 4);
    struct {
        const char *name, *desc, *source;
    } want[] = {{"review", "project review", "project-cdsh"},
                {"lint", "agents lint", "project-agents"},
                {"deploy", "custom deploy", "custom"},
                {"notes", "home notes", "user-cdsh"}};
    for (size_t i = 0; i < 4; i++) {
        json_t *s = skill_named(snap, want[i].name);
        assert_non_null(s);
        assert_string_equal(json_string_value(json_object_get(s, "description")), want[i].desc);
        assert_string_equal(json_string_value(json_object_get(s, "source")), want[i].source);
        assert_string_equal(json_string_value(json_object_get(s, "provider")), "local");
    }
    assert_string_equal(json_string_value(json_object_get(skill_named(snap, "notes"), "whenToUse")),
                        "when taking notes");
    json_decref(snap);
    /* a runtime skill (250) beats the home directory (400), not the project (100) */
    cdsh_skill_def rt = {.name = "notes", .description = "runtime notes", .content = "R"};
    cdsh_skill_def rt2 = {.name = "review", .description = "runtime review", .content = "R"};
    cdsh_disposer_t d1, d2;
    assert_int_equal(cdsh_skills_register(cdsh_host_skills(f->host), NULL, &rt, &d1, NULL), 0);
    assert_int_equal(cdsh_skills_register(cdsh_host_skills(f->host), NULL, &rt2, &d2, NULL), 0);
    snap = snapshot(f);
    assert_string_equal(
        json_string_value(json_object_get(skill_named(snap, "notes"), "description")),
        "runtime notes");
    assert_string_equal(
        json_string_value(json_object_get(skill_named(snap, "review"), "description")),
        "project review");
    json_decref(snap);
    /* the full definition: the body, the file, the bundle as resource base */
    json_t *def = NULL;
    assert_int_equal(
        cdsh_skills_get_dup(cdsh_host_skills(f->host), NULL, "review", &f->lookup, &def, NULL), 0);
    assert_non_null(def);
    assert_string_equal(json_string_value(json_object_get(def, "content")), "P\n");
    char want_path[800];
    snprintf(want_path, sizeof want_path, "%s/.cdsh/skills/review/SKILL.md", f->project);
    assert_string_equal(json_string_value(json_object_get(def, "path")), want_path);
    json_decref(def);
    cdsh_disposer_run(&d1);
    cdsh_disposer_run(&d2);
}

static void invocation_flags_come_from_the_front_matter(void **state)
{
    fx *f = *state;
    put(f->custom, "manual.md",
        SKILL("manual", "for people only", "disable-model-invocation: true\n") "M\n");
    put(f->custom, "auto.md", SKILL("auto", "for the model only", "user-invocable: \"No\"\n") "A\n");
    put(f->custom, "both.md", SKILL("both", "for everyone", "user-invocable: on\n") "B\n");
    put(f->custom, "bad.md", SKILL("bad", "a bad flag", "disable-model-invocation: maybe\n") "X\n");
    put(f->custom, "camel.md", SKILL("camel", "camel case", "disableModelInvocation: true\n") "C\n");
    load(f);
    json_t *snap = snapshot(f);
    json_t *s = skill_named(snap, "manual");
    assert_false(json_is_true(json_object_get(json_object_get(s, "invocation"), "modelInvocable")));
    assert_true(json_is_true(json_object_get(json_object_get(s, "invocation"), "userInvocable")));
    s = skill_named(snap, "auto");
    assert_true(json_is_true(json_object_get(json_object_get(s, "invocation"), "modelInvocable")));
    assert_false(json_is_true(json_object_get(json_object_get(s, "invocation"), "userInvocable")));
    s = skill_named(snap, "both");
    assert_true(json_is_true(json_object_get(json_object_get(s, "invocation"), "userInvocable")));
    /* invalid policy fails closed: the skill is left out, with the reason */
    assert_null(skill_named(snap, "bad"));
    assert_null(skill_named(snap, "camel"));
    json_decref(snap);
    char w1[900], w2[900];
    snprintf(w1, sizeof w1,
             "skill file %s/bad.md skipped: skill \"bad\": disable-model-invocation must be a "
             "boolean (true/false, yes/no, on/off, 1/0); the skill is left out rather than "
             "exposed",
             f->custom);
    snprintf(w2, sizeof w2,
             "skill file %s/camel.md skipped: skill \"camel\": \"disableModelInvocation\" is not "
             "a recognised key; write disable-model-invocation (the skill is left out rather "
             "than exposed)",
             f->custom);
    assert_int_equal(json_array_size(f->warnings), 2);
    assert_string_equal(json_string_value(json_array_get(f->warnings, 0)), w1);
    assert_string_equal(json_string_value(json_array_get(f->warnings, 1)), w2);
    /* the model's index leaves the people-only skill out */
    char *index = cdsh_skills_index_dup(cdsh_host_skills(f->host), NULL);
    assert_non_null(index);
    assert_null(strstr(index, "manual"));
    assert_non_null(strstr(index, "- auto: for the model only"));
    free(index);
}

static void the_skill_tool_refuses_a_people_only_skill(void **state)
{
    fx *f = *state;
    put(f->custom, "manual.md",
        SKILL("manual", "for people only", "disable-model-invocation: yes\n") "M\n");
    load(f);
    assert_int_equal(cdsh_plugin_load(f->host, &cdsh_skilltool_plugin, NULL, NULL, NULL), 0);
    json_t *args = json_pack("{s:s}", "name", "manual");
    cdsh_dispatch_input in = {.call_id = "c1", .name = "skill", .args = args};
    cdsh_toolresult *r = cdsh_dispatch_execute(cdsh_host_tools(f->host), &in);
    json_decref(args);
    assert_non_null(r);
    assert_true(r->is_error);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(r->content, 0), "text")),
        "Error: skill \"manual\" can only be run by the user (its invocation policy keeps it "
        "from the model); do not load it");
    cdsh_toolresult_free(r);
    /* the person may still run it: /skills shows it */
    cdsh_command_outcome out;
    assert_int_equal(cdsh_commands_execute(cdsh_host_commands(f->host), NULL, "/skills manual",
                                           NULL, NULL, &out, NULL),
                     1);
    assert_int_equal(out.kind, CDSH_COMMAND_SUCCESS);
    assert_non_null(strstr(out.text, "M\n"));
    cdsh_commands_outcome_clear(&out);
}

static void a_bundle_lists_and_reads_its_resources(void **state)
{
    fx *f = *state;
    put(f->custom, "guide/SKILL.md", SKILL("guide", "a guide", "") "See references/a.md.\n");
    put(f->custom, "guide/references/a.md", "alpha\n");
    put(f->custom, "guide/scripts/run.sh", "echo hi\n");
    put(f->custom, "guide/.hidden", "no\n");
    put(f->custom, "flat.md", SKILL("flat", "a flat one", "") "F\n");
    load(f);
    json_t *def = NULL;
    cdsh_skills *sk = cdsh_host_skills(f->host);
    assert_int_equal(cdsh_skills_get_dup(sk, NULL, "guide", &f->lookup, &def, NULL), 0);
    const json_t *base = json_object_get(def, "resourceBase");
    char dir[800];
    snprintf(dir, sizeof dir, "%s/guide", f->custom);
    assert_string_equal(json_string_value(json_object_get(base, "kind")), "directory");
    assert_string_equal(json_string_value(json_object_get(base, "path")), dir);
    bool trunc = true;
    json_t *files = cdsh_skills_resources_dup(def, 200, &trunc);
    assert_false(trunc);
    assert_int_equal(json_array_size(files), 2);
    assert_string_equal(json_string_value(json_array_get(files, 0)), "references/a.md");
    assert_string_equal(json_string_value(json_array_get(files, 1)), "scripts/run.sh");
    json_decref(files);
    char *text = NULL;
    assert_int_equal(cdsh_skills_resource_read_dup(def, "references/a.md", 1024, &text, NULL), 0);
    assert_string_equal(text, "alpha\n");
    free(text);
    char *rendered = cdsh_skills_render_def_dup(def);
    assert_non_null(strstr(rendered, "<skill_resources>"));
    assert_non_null(strstr(rendered, "references/a.md"));
    free(rendered);
    json_decref(def);
    /* a flat file has no resources */
    assert_int_equal(cdsh_skills_get_dup(sk, NULL, "flat", &f->lookup, &def, NULL), 0);
    assert_null(json_object_get(def, "resourceBase"));
    json_decref(def);
}

static void broken_files_are_skipped_with_their_reason(void **state)
{
    fx *f = *state;
    put(f->custom, "a.md", "---\ndescription: no name\n---\nx\n");
    put(f->custom, "b.md", SKILL("Bad_Name", "upper case", "") "x\n");
    put(f->custom, "c.md", "---\nname: c\n---\nx\n");
    put(f->custom, "d.md", "---\nname: d\ndescription: never closed\n");
    put(f->custom, "e.md", "no front matter at all\n");
    put(f->custom, "notes.txt", SKILL("txt", "not markdown", "") "x\n");
    put(f->custom, "ok.md", SKILL("ok", "fine", "") "x\n");
    load(f);
    json_t *snap = snapshot(f);
    assert_int_equal(json_array_size(json_object_get(snap, "skills")), 1);
    assert_non_null(skill_named(snap, "ok"));
    json_decref(snap);
    const char *why[] = {"a.md skipped: front matter has no name",
                         "b.md skipped: its name is not kebab-case (a-z 0-9 and single '-')",
                         "c.md skipped: skill \"c\" has no description",
                         "d.md skipped: front matter is not closed (no \"---\" line)",
                         "e.md skipped: front matter has no name"};
    assert_int_equal(json_array_size(f->warnings), 5);
    for (size_t i = 0; i < 5; i++) {
        char want[900];
        snprintf(want, sizeof want, "skill file %s/%s", f->custom, why[i]);
        assert_string_equal(json_string_value(json_array_get(f->warnings, i)), want);
    }
}

static void every_load_rereads_the_file(void **state)
{
    fx *f = *state;
    put(f->custom, "live.md", SKILL("live", "changes", "") "v1\n");
    load(f);
    cdsh_skills *sk = cdsh_host_skills(f->host);
    json_t *def = NULL;
    assert_int_equal(cdsh_skills_get_dup(sk, NULL, "live", &f->lookup, &def, NULL), 0);
    assert_string_equal(json_string_value(json_object_get(def, "content")), "v1\n");
    json_decref(def);
    put(f->custom, "live.md", SKILL("live", "changes", "") "v2\n");
    assert_int_equal(cdsh_skills_get_dup(sk, NULL, "live", &f->lookup, &def, NULL), 0);
    assert_string_equal(json_string_value(json_object_get(def, "content")), "v2\n");
    json_decref(def);
    /* renamed since the listing: no longer loadable; the next listing has the new name */
    put(f->custom, "live.md", SKILL("lively", "renamed", "") "v3\n");
    assert_int_equal(cdsh_skills_get_dup(sk, NULL, "live", &f->lookup, &def, NULL), 0);
    assert_null(def);
    json_t *snap = snapshot(f);
    assert_null(skill_named(snap, "live"));
    assert_non_null(skill_named(snap, "lively"));
    json_decref(snap);
}

static pthread_mutex_t ch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ch_cond = PTHREAD_COND_INITIALIZER;
static int changes;

static void on_change(void *arg, const char *name, const cdsh_scope *scope, const json_t *p)
{
    (void)arg, (void)name, (void)scope, (void)p;
    pthread_mutex_lock(&ch_lock);
    changes++;
    pthread_cond_broadcast(&ch_cond);
    pthread_mutex_unlock(&ch_lock);
}

/* Waits for a skills/change after `seen` (the watcher runs on its own thread). */
static void wait_change(int seen)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += cdsh_test_scale_ms(10000) / 1000;
    pthread_mutex_lock(&ch_lock);
    while (changes <= seen)
        if (pthread_cond_timedwait(&ch_cond, &ch_lock, &dl) != 0)
            break;
    int now = changes;
    pthread_mutex_unlock(&ch_lock);
    if (now <= seen)
        fail_msg("no skills/change after a file changed on disk");
}

static int changes_now(void)
{
    pthread_mutex_lock(&ch_lock);
    int n = changes;
    pthread_mutex_unlock(&ch_lock);
    return n;
}

/* A snapshot once it lists `name` (with `desc`): every change the watcher
 * reports makes the next snapshot list again. A write may be seen half
 * done (created, not yet closed), so this waits for the change that
 * completes it rather than for the first one. */
static json_t *snapshot_when(fx *f, const char *name, const char *desc)
{
    for (;;) {
        int seen = changes_now();
        json_t *snap = snapshot(f);
        json_t *s = skill_named(snap, name);
        if (s && strcmp(json_string_value(json_object_get(s, "description")), desc) == 0)
            return snap;
        json_decref(snap);
        wait_change(seen);
    }
}

static void a_change_on_disk_invalidates_the_cached_catalog(void **state)
{
    fx *f = *state;
    put(f->custom, "first.md", SKILL("first", "one", "") "1\n");
    put(f->custom, "kit/SKILL.md", SKILL("kit", "a kit", "") "K\n");
    cdsh_disposer_t d;
    assert_int_equal(cdsh_events_on(cdsh_host_events(f->host), "skills/change", NULL, on_change,
                                    NULL, &d, NULL),
                     0);
    load(f);
    json_t *snap = snapshot(f);
    assert_int_equal(json_array_size(json_object_get(snap, "skills")), 2);
    json_decref(snap);
    /* cached now: a new file shows once the watcher has invalidated it */
    put(f->custom, "second.md", SKILL("second", "two", "") "2\n");
    json_decref(snapshot_when(f, "second", "two"));
    /* an edited bundle's front matter too */
    put(f->custom, "kit/SKILL.md", SKILL("kit", "a better kit", "") "K\n");
    json_decref(snapshot_when(f, "kit", "a better kit"));
    cdsh_disposer_run(&d);
}

static void unloading_the_plugin_removes_the_provider(void **state)
{
    fx *f = *state;
    put(f->custom, "gone.md", SKILL("gone", "soon gone", "") "x\n");
    load(f);
    json_t *snap = snapshot(f);
    assert_non_null(skill_named(snap, "gone"));
    json_decref(snap);
    cdsh_plugin_unload(f->plugin);
    snap = snapshot(f);
    assert_null(skill_named(snap, "gone"));
    json_decref(snap);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(roots_rank_project_then_custom_then_home, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(invocation_flags_come_from_the_front_matter, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_skill_tool_refuses_a_people_only_skill, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_bundle_lists_and_reads_its_resources, setup, teardown),
        cmocka_unit_test_setup_teardown(broken_files_are_skipped_with_their_reason, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(every_load_rereads_the_file, setup, teardown),
        cmocka_unit_test_setup_teardown(a_change_on_disk_invalidates_the_cached_catalog, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(unloading_the_plugin_removes_the_provider, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
