/* test_profile.c — profiles on disk: YAML reading and writing, the document
 * shape, enabled flags, config keys and atomic saves. */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "host/profile.h"

static char *path_in(const char *home, const char *rel)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/%s", home, rel) > 0);
    return p;
}

static void write_profile(const char *home, const char *name, const char *text)
{
    char *dir = path_in(home, "profiles");
    mkdir(dir, 0700);
    char *file = NULL;
    assert_true(asprintf(&file, "%s/%s.yaml", dir, name) > 0);
    cdsh_test_write_file(file, text);
    free(file);
    free(dir);
}

static void yaml_scalars_resolve_like_yaml_core(void **state)
{
    (void)state;
    const char *y = "a: 1\nb: -2.5\nc: true\nd: ~\ne: hello\nf: \"true\"\ng: '42'\nh: [1, x]\n"
                    "i: {k: v}\nj:\n";
    json_t *v = cdsh_profile_yaml_parse(y, strlen(y), NULL);
    assert_non_null(v);
    char *s = json_dumps(v, JSON_COMPACT);
    assert_string_equal(s, "{\"a\":1,\"b\":-2.5,\"c\":true,\"d\":null,\"e\":\"hello\","
                           "\"f\":\"true\",\"g\":\"42\",\"h\":[1,\"x\"],\"i\":{\"k\":\"v\"},"
                           "\"j\":null}");
    free(s);
    json_decref(v);
}

static void yaml_errors_name_the_line(void **state)
{
    (void)state;
    cdsh_error err = {0};
    const char *bad = "a: 1\nb: [unclosed\n";
    assert_null(cdsh_profile_yaml_parse(bad, strlen(bad), &err));
    assert_string_equal(err.code, "BAD_YAML");
    assert_memory_equal(err.message, "line ", 5);
    const char *dup = "a: 1\na: 2\n";
    assert_null(cdsh_profile_yaml_parse(dup, strlen(dup), &err));
    assert_string_equal(err.message, "line 2: duplicate key");
    const char *alias = "a: &x 1\nb: *x\n";
    assert_null(cdsh_profile_yaml_parse(alias, strlen(alias), &err));
    assert_non_null(strstr(err.message, "not supported"));
    const char *two = "a: 1\n---\nb: 2\n";
    assert_null(cdsh_profile_yaml_parse(two, strlen(two), &err));
    assert_non_null(strstr(err.message, "only one YAML document"));
}

static void yaml_emit_round_trips_ambiguous_strings(void **state)
{
    (void)state;
    json_t *v =
        json_pack("{s:s, s:s, s:s, s:i, s:f, s:b, s:n, s:[s], s:{}}", "s1", "true", "s2", "42",
                  "s3", "plain text", "i", 7, "r", 2.0, "b", 0, "n", "list", "x", "empty");
    char *text = cdsh_profile_yaml_emit_dup(v);
    assert_non_null(text);
    assert_non_null(strstr(text, "s1: \"true\""));
    assert_non_null(strstr(text, "s2: \"42\""));
    json_t *back = cdsh_profile_yaml_parse(text, strlen(text), NULL);
    assert_true(json_equal(v, back));
    assert_true(json_is_real(json_object_get(back, "r")));
    free(text);
    json_decref(back);
    json_decref(v);
}

static void profile_names_are_checked(void **state)
{
    (void)state;
    assert_true(cdsh_profile_name_valid("default"));
    assert_true(cdsh_profile_name_valid("work.v2_x-y"));
    assert_false(cdsh_profile_name_valid("../etc"));
    assert_false(cdsh_profile_name_valid(".hidden"));
    assert_false(cdsh_profile_name_valid("a/b"));
    assert_false(cdsh_profile_name_valid(""));
    cdsh_profile *p = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_profile_load("/tmp", "../x", &p, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "BAD_PROFILE_NAME");
    assert_null(p);
}

static void missing_profile_is_empty_and_default_named(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    cdsh_profile *p = NULL;
    assert_int_equal(cdsh_profile_load(home, NULL, &p, NULL), 0);
    assert_string_equal(cdsh_profile_name(p), "default");
    char *expect = path_in(home, "profiles/default.yaml");
    assert_string_equal(cdsh_profile_path(p), expect);
    assert_int_equal(cdsh_profile_enabled(p, "xiangqi"), -1);
    assert_null(cdsh_profile_config(p, "xiangqi"));
    free(expect);
    cdsh_profile_free(p);
    cdsh_test_home_free(home);
}

static void reads_enabled_flags_and_config(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    write_profile(home, "work",
                  "plugins:\n  xiangqi:\n    enabled: false\n"
                  "  tavern:\n    enabled: true\n    config:\n      depth: 4\n");
    cdsh_profile *p = NULL;
    assert_int_equal(cdsh_profile_load(home, "work", &p, NULL), 0);
    assert_int_equal(cdsh_profile_enabled(p, "xiangqi"), 0);
    assert_int_equal(cdsh_profile_enabled(p, "tavern"), 1);
    assert_int_equal(json_integer_value(json_object_get(cdsh_profile_config(p, "tavern"), "depth")),
                     4);
    cdsh_profile_free(p);
    cdsh_test_home_free(home);
}

static void bad_shapes_are_refused_with_the_file_path(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    cdsh_profile *p = NULL;
    cdsh_error err = {0};
    write_profile(home, "a", "plugins:\n  x:\n    enabled: yes please\n");
    assert_int_equal(cdsh_profile_load(home, "a", &p, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "BAD_PROFILE");
    assert_non_null(
        strstr(err.message, "profiles/a.yaml: plugins.x.enabled must be true or false"));
    write_profile(home, "b", "plugin:\n  x: {}\n");
    assert_int_equal(cdsh_profile_load(home, "b", &p, &err), CDSH_EINVAL);
    assert_non_null(strstr(err.message, "unknown top-level key \"plugin\""));
    write_profile(home, "c", "plugins:\n  x:\n    config: 3\n");
    assert_int_equal(cdsh_profile_load(home, "c", &p, &err), CDSH_EINVAL);
    assert_non_null(strstr(err.message, "plugins.x.config must be a mapping"));
    write_profile(home, "d", "plugins: [\n");
    assert_int_equal(cdsh_profile_load(home, "d", &p, &err), CDSH_EINVAL);
    assert_non_null(strstr(err.message, "profiles/d.yaml: line "));
    assert_null(p);
    cdsh_test_home_free(home);
}

static void save_then_load_round_trips(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    cdsh_profile *p = NULL;
    assert_int_equal(cdsh_profile_load(home, "dev", &p, NULL), 0);
    assert_int_equal(cdsh_profile_set_enabled(p, "xiangqi", true), 0);
    assert_int_equal(cdsh_profile_set_config(p, "xiangqi", "engine.depth", json_integer(6), NULL),
                     0);
    assert_int_equal(cdsh_profile_set_config(p, "xiangqi", "side", json_string("black"), NULL), 0);
    assert_int_equal(cdsh_profile_save(p, NULL), 0);
    cdsh_profile_free(p);

    char *file = path_in(home, "profiles/dev.yaml");
    char *text = cdsh_test_read_file(file, NULL);
    assert_string_equal(text, "plugins:\n  xiangqi:\n    enabled: true\n    config:\n"
                              "      engine:\n        depth: 6\n      side: black\n");
    free(text);
    assert_int_equal(cdsh_profile_load(home, "dev", &p, NULL), 0);
    assert_int_equal(cdsh_profile_enabled(p, "xiangqi"), 1);
    const json_t *c = cdsh_profile_config(p, "xiangqi");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(c, "engine"), "depth")), 6);
    assert_int_equal(cdsh_profile_set_config(p, "xiangqi", "side", NULL, NULL), 0);
    assert_null(json_object_get(cdsh_profile_config(p, "xiangqi"), "side"));
    cdsh_profile_free(p);
    free(file);
    cdsh_test_home_free(home);
}

static void save_leaves_no_temp_files(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    cdsh_profile *p = NULL;
    cdsh_profile_load(home, NULL, &p, NULL);
    cdsh_profile_set_enabled(p, "x", false);
    assert_int_equal(cdsh_profile_save(p, NULL), 0);
    assert_int_equal(cdsh_profile_save(p, NULL), 0);
    char *cmd = NULL;
    assert_true(asprintf(&cmd, "ls %s/profiles", home) > 0);
    char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    char *out = NULL;
    assert_int_equal(cdsh_test_run(argv, NULL, &out, NULL, 5000), 0);
    assert_string_equal(out, "default.yaml\n"); /* ls hides the dot lock file */
    free(out);
    free(cmd);
    cdsh_profile_free(p);
    cdsh_test_home_free(home);
}

static void lock_excludes_a_second_editor(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    cdsh_fs_lock *a = NULL, *b = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_profile_lock(home, "work", 1000, &a, NULL), 0);
    assert_int_equal(cdsh_profile_lock(home, "work", 0, &b, &err), CDSH_ETIMEDOUT);
    assert_string_equal(err.code, "LOCK_TIMEOUT");
    assert_int_equal(cdsh_profile_lock(home, "other", 0, &b, NULL), 0); /* per profile */
    cdsh_fs_lock_close(b);
    cdsh_fs_lock_close(a);
    assert_int_equal(cdsh_profile_lock(home, "work", 0, &b, NULL), 0);
    cdsh_fs_lock_close(b);
    assert_int_equal(cdsh_profile_lock(home, "../x", 0, &b, NULL), CDSH_EINVAL);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(yaml_scalars_resolve_like_yaml_core),
        cmocka_unit_test(yaml_errors_name_the_line),
        cmocka_unit_test(yaml_emit_round_trips_ambiguous_strings),
        cmocka_unit_test(profile_names_are_checked),
        cmocka_unit_test(missing_profile_is_empty_and_default_named),
        cmocka_unit_test(reads_enabled_flags_and_config),
        cmocka_unit_test(bad_shapes_are_refused_with_the_file_path),
        cmocka_unit_test(save_then_load_round_trips),
        cmocka_unit_test(save_leaves_no_temp_files),
        cmocka_unit_test(lock_excludes_a_second_editor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
