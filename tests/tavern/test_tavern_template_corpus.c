/* test_tavern_template_corpus.c — the compatibility corpus: every
 * tests/data/tavern-templates/NN-name.ejs, in the style real SillyTavern
 * cards use, rendered with ctx.json (write on) must give NN-name.out
 * exactly. With CDSH_REGEN_TEMPLATE_CORPUS=1 the test writes the .out
 * files instead (review them before committing). */
#include "support/testkit.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/tavern/template.h"

#define DIR_ CDSH_TEST_DATA_DIR "/tavern-templates"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *b = malloc((size_t)n + 1);
    size_t r = fread(b, 1, (size_t)n, f);
    b[r] = 0;
    fclose(f);
    return b;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void corpus_renders_as_expected(void **state)
{
    (void)state;
    json_t *ctx = json_load_file(DIR_ "/ctx.json", 0, NULL);
    assert_non_null(ctx);
    DIR *d = opendir(DIR_);
    assert_non_null(d);
    char *names[256];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".ejs"))
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp);
    assert_true(n >= 20);
    bool regen = getenv("CDSH_REGEN_TEMPLATE_CORPUS") != NULL;
    cdsh_tavern_template_limits lim;
    cdsh_tavern_template_limits_default(&lim);
    lim.wall_ms = cdsh_test_scale_ms(20000);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", DIR_, names[i]);
        char *src = slurp(path);
        assert_non_null(src);
        json_t *res = NULL;
        cdsh_error err = {0};
        if (cdsh_tavern_template_render(src, ctx, true, &lim, &res, &err) < 0) {
            print_error("%s: %s %s\n", names[i], err.code, err.message);
            bad++;
            free(src);
            continue;
        }
        const char *out = json_string_value(json_object_get(res, "output"));
        snprintf(path + strlen(path) - 4, 5, ".out");
        if (regen) {
            FILE *f = fopen(path, "wb");
            fputs(out, f);
            fclose(f);
        } else {
            char *want = slurp(path);
            if (!want || strcmp(want, out)) {
                print_error("%s: got [%s]\nwant [%s]\n", names[i], out, want ? want : "(no .out)");
                bad++;
            }
            free(want);
        }
        json_decref(res);
        free(src);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    json_decref(ctx);
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(corpus_renders_as_expected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
