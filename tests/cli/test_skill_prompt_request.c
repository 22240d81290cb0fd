/* test_skill_prompt_request.c — the skill list the model really receives:
 * `cdsh run` against the scripted fake model with two imported Claude
 * skills, one marked disable-model-invocation: the recorded request's system
 * prompt offers the other one (next to the built-in plugins' skills), while
 * `cdsh skills list --json` shows both with their invocation policy. */
#include "support/testkit.h"

#include "support/model_env.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"

static void put(const char *home, const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", home, rel);
    char *dir = cdsh_fs_dirname_dup(path);
    assert_int_equal(cdsh_fs_mkdir_p(dir, 0700, NULL), 0);
    free(dir);
    cdsh_test_write_file(path, text);
}

/* The system message of a recorded chat request (OpenAI shape). */
static const char *system_text(const json_t *body)
{
    const json_t *first = json_array_get(json_object_get(body, "messages"), 0);
    assert_string_equal(json_string_value(json_object_get(first, "role")), "system");
    return json_string_value(json_object_get(first, "content"));
}

static void a_user_only_skill_is_not_in_the_request(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    put(home, "claude/skills/release/SKILL.md",
        "---\nname: release\ndescription: Cut a release\ndisable-model-invocation: true\n---\n"
        "Tag and publish.\n");
    put(home, "claude/skills/style/SKILL.md",
        "---\nname: style\ndescription: House style\nuser-invocable: false\n---\nWrite "
        "plainly.\n");
    char codex[900], yaml[2400];
    snprintf(codex, sizeof codex, "%s/codex", home);
    assert_int_equal(cdsh_fs_mkdir_p(codex, 0700, NULL), 0);
    snprintf(yaml, sizeof yaml,
             "plugins:\n  import:\n    enabled: true\n    config:\n      claudeDir: \"%s/claude\"\n"
             "      codexHome: \"%s\"\n      skills: [release, style]\n",
             home, codex);
    put(home, "profiles/default.yaml", yaml);

    cdsh_test_fake_model f;
    cdsh_test_model_env_start(&f, "[{\"text\":\"ok\",\"finish_reason\":\"stop\"}]");
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "run", "hi", NULL), 0);
    assert_string_equal(out, "ok\n");
    free(out), free(err);
    json_t *bodies = cdsh_test_model_env_bodies(&f);
    assert_int_equal(json_array_size(bodies), 1);
    const char *sys = system_text(json_array_get(bodies, 0));
    assert_non_null(sys);
    /* (the xiangqi plugin's skill follows, by name) */
    assert_non_null(strstr(sys, "<available_skills>\n- style: House style\n- xiangqi-"));
    assert_null(strstr(sys, "release"));
    json_decref(bodies);
    cdsh_test_model_env_stop(&f);

    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "skills", "list", "--json", NULL), 0);
    json_t *list = json_loads(out, 0, NULL);
    json_t *release = json_array_get(list, 0), *style = json_array_get(list, 1);
    assert_string_equal(json_string_value(json_object_get(release, "name")), "release");
    assert_string_equal(json_string_value(json_object_get(style, "name")), "style");
    assert_true(json_is_false(
        json_object_get(json_object_get(release, "invocation"), "modelInvocable")));
    assert_true(json_is_false(
        json_object_get(json_object_get(style, "invocation"), "userInvocable")));
    json_decref(list);
    free(out), free(err);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_user_only_skill_is_not_in_the_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
