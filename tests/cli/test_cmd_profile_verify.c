/* test_cmd_profile_verify.c — `cdsh profile verify` judges a profile with
 * the loader's own checks: every profile the loader refuses (a NUL byte,
 * wrong types, YAML it does not take) is VERIFY-FAILED, by name and by file
 * path, and one it accepts is not failed for parsing. Issue 23: a profile
 * with a NUL byte was VERIFY-OK while `cdsh web` refused to start on it. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "support/testkit.h"

#include "host/profile.h"

typedef struct hostile {
    const char *what;
    const char *bytes;
    size_t len; /* 0: strlen(bytes) */
} hostile;

static const char NUL_PROFILE[] = "plugins:\n  xiangqi:\n    enabled: true\n\0garbage: [\n";
static const char NUL_VALUE[] = "plugins:\n  xiangqi:\n    config:\n      a: \"x\0y\"\n";

static const hostile cases[] = {
    {"a NUL byte", NUL_PROFILE, sizeof NUL_PROFILE - 1},
    {"a NUL byte inside a value", NUL_VALUE, sizeof NUL_VALUE - 1},
    {"plugins as a list", "plugins:\n  - xiangqi\n", 0},
    {"enabled as a string", "plugins:\n  xiangqi:\n    enabled: \"yes\"\n", 0},
    {"config as a number", "plugins:\n  xiangqi:\n    config: 3\n", 0},
    {"a plugin row as a scalar", "plugins:\n  xiangqi: on\n", 0},
    {"a top-level scalar", "just words\n", 0},
    {"an unknown top-level key", "plugins: {}\nplugin:\n  x: 1\n", 0},
    {"an anchor", "plugins: &a\n  xiangqi:\n    enabled: true\n", 0},
    {"invalid UTF-8", "plugins:\n  xiangqi:\n    config:\n      name: \"\xff\xfe\"\n", 0},
    {"an unclosed flow mapping", "plugins: {xiangqi: {enabled: true}\n", 0},
};

static void write_bytes(const char *path, const char *bytes, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void refused_by_the_loader_means_verify_failed(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char dir[4200], path[4300], file[4300];
    snprintf(dir, sizeof dir, "%s/profiles", home);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(path, sizeof path, "%s/hostile.yaml", dir);
    snprintf(file, sizeof file, "%s/elsewhere.yaml", home);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const hostile *h = &cases[i];
        size_t len = h->len ? h->len : strlen(h->bytes);
        write_bytes(path, h->bytes, len);
        write_bytes(file, h->bytes, len);
        /* The loader refuses it (what `cdsh web` and `cdsh chat` run)... */
        cdsh_profile *p = NULL;
        cdsh_error err = {0};
        if (cdsh_profile_load(home, "hostile", &p, &err) == 0)
            fail_msg("%s: the loader accepted it; the case is wrong", h->what);
        assert_int_not_equal(cdsh_profile_load_file(file, "elsewhere", &p, &err), 0);
        /* ... so verify fails it, by name and by path, naming the problem. */
        char *out = NULL;
        int rc = cdsh_test_run_cdsh(NULL, &out, NULL, "profile", "verify", "hostile", NULL);
        if (rc != 1 || !strstr(out, "VERIFY-FAILED") || strstr(out, "VERIFY-OK"))
            fail_msg("%s: verify by name exited %d:\n%s", h->what, rc, out);
        free(out);
        out = NULL;
        rc = cdsh_test_run_cdsh(NULL, &out, NULL, "profile", "verify", file, NULL);
        if (rc != 1 || !strstr(out, "VERIFY-FAILED"))
            fail_msg("%s: verify by path exited %d:\n%s", h->what, rc, out);
        free(out);
        out = NULL;
        rc = cdsh_test_run_cdsh(NULL, &out, NULL, "profile", "verify", "hostile", "--json", NULL);
        json_t *rep = json_loads(out ? out : "", 0, NULL);
        if (!rep || json_is_true(json_object_get(rep, "ok")))
            fail_msg("%s: --json report:\n%s", h->what, out);
        const char *first = json_string_value(json_array_get(json_object_get(rep, "problems"), 0));
        if (!first || !strstr(first, "hostile.yaml"))
            fail_msg("%s: the problem does not name the file: %s", h->what, first);
        json_decref(rep);
        free(out);
    }
    cdsh_test_home_free(home);
}

static void accepted_by_the_loader_parses(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char dir[4200], path[4300];
    snprintf(dir, sizeof dir, "%s/profiles", home);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(path, sizeof path, "%s/good.yaml", dir);
    cdsh_test_write_file(path, "plugins:\n  xiangqi:\n    enabled: true\n");
    char *out = NULL;
    int rc = cdsh_test_run_cdsh(NULL, &out, NULL, "profile", "verify", "good", "--json", NULL);
    json_t *rep = json_loads(out ? out : "", 0, NULL);
    assert_non_null(rep);
    json_t *c;
    size_t i;
    bool parsed = false;
    json_array_foreach(json_object_get(rep, "checks"), i, c) {
        if (strcmp(json_string_value(json_object_get(c, "check")), "parse") == 0)
            parsed = json_is_true(json_object_get(c, "ok"));
    }
    if (!parsed)
        fail_msg("a profile the loader takes was not parsed (exit %d):\n%s", rc, out);
    json_decref(rep);
    free(out);
    /* A missing profile is named as such, not VERIFY-OK for an empty one. */
    out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "profile", "verify", "absent", NULL), 1);
    assert_non_null(strstr(out, "VERIFY-FAILED"));
    free(out);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refused_by_the_loader_means_verify_failed),
        cmocka_unit_test(accepted_by_the_loader_parses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
