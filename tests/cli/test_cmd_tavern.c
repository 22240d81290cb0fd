/* test_cmd_tavern.c — `cdsh tavern` end to end through the built binary:
 * inspect writes nothing, the book choice, list/export output, bad input
 * leaving nothing behind, and the library commands' round trips. */
#include "support/testkit.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/json.h"

#define SAMPLES CDSH_SHARED_DIR "/reference/tavern-samples/"

static char *g_snapshot;
static size_t g_snap_len;

static int snap_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)flag;
    (void)ftw;
    char line[4200];
    int n = snprintf(line, sizeof line, "%s %lld %lld\n", path, (long long)st->st_size,
                     (long long)st->st_mtim.tv_nsec + (long long)st->st_mtime * 1000000000LL);
    g_snapshot = realloc(g_snapshot, g_snap_len + (size_t)n + 1);
    memcpy(g_snapshot + g_snap_len, line, (size_t)n + 1);
    g_snap_len += (size_t)n;
    return 0;
}

/* Every path under dir with its size and mtime. */
static char *snapshot(const char *dir)
{
    g_snapshot = strdup("");
    g_snap_len = 0;
    nftw(dir, snap_entry, 16, FTW_PHYS);
    char *s = g_snapshot;
    g_snapshot = NULL;
    return s;
}

static json_t *run_json(int want_rc, const char *a1, const char *a2, const char *a3, const char *a4,
                        const char *a5)
{
    char *out = NULL, *err = NULL;
    int rc = cdsh_test_run_cdsh(NULL, &out, &err, "tavern", a1, a2, a3, a4, a5, NULL);
    if (rc != want_rc)
        fail_msg("exit %d (want %d): %s %s", rc, want_rc, out, err);
    json_t *j = json_loads(out, 0, NULL);
    if (!j)
        fail_msg("not JSON: %s", out);
    free(out);
    free(err);
    return j;
}

static void inspect_shows_the_card_and_writes_nothing(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *before = snapshot(home);
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "inspect",
                                        SAMPLES "st-card-v2-seraphina.json", NULL),
                     0);
    assert_non_null(strstr(out, "name:              Seraphina"));
    assert_non_null(strstr(out, "embedded lorebook: Eldoria (4 entries)"));
    free(out);
    json_t *j = run_json(0, "inspect", SAMPLES "st-card-v2-seraphina.json", "--json", NULL, NULL);
    assert_true(json_is_true(json_object_get(j, "ok")));
    assert_int_equal(json_integer_value(json_object_get(j, "entryCount")), 4);
    assert_false(json_is_true(json_object_get(j, "hasAvatar")));
    json_decref(j);
    char *after = snapshot(home);
    assert_string_equal(before, after);
    free(before);
    free(after);
    cdsh_test_home_free(home);
}

static void import_needs_a_book_choice_then_lists_and_exports(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "tavern", "import",
                                        SAMPLES "st-card-v2-seraphina.json", NULL),
                     1);
    assert_non_null(strstr(err, "BOOK_CHOICE_REQUIRED"));
    assert_non_null(strstr(err, "--with-book or --without-book"));
    free(err);
    json_t *imp =
        run_json(0, "import", SAMPLES "st-card-v2-seraphina.json", "--with-book", "--json", NULL);
    const char *id = json_string_value(json_object_get(imp, "cardId"));
    assert_true(json_is_true(json_object_get(imp, "bookImported")));
    json_t *list = run_json(0, "list", "--json", NULL, NULL, NULL);
    json_t *cards = json_object_get(list, "cards");
    assert_int_equal(json_array_size(cards), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(cards, 0), "name")),
                        "Seraphina");
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "list", NULL), 0);
    assert_non_null(strstr(out, id));
    assert_non_null(strstr(out, "Seraphina  [lorebook: 4 entries]"));
    free(out);

    char *png = cdsh_fs_path_join_dup(home, "out.png");
    char *js = cdsh_fs_path_join_dup(home, "out.json");
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, NULL, NULL, "tavern", "export", id, "--png", "-o", png, NULL), 0);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, NULL, NULL, "tavern", "export", id, "--json", "-o", js, NULL), 0);
    json_t *exported = json_load_file(js, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(exported, "spec")), "chara_card_v2");
    assert_string_equal(json_string_value(json_object_get(exported, "name")), "Seraphina");
    json_t *insp = run_json(0, "inspect", png, "--json", NULL, NULL);
    assert_true(json_is_true(json_object_get(insp, "hasAvatar")));
    assert_int_equal(json_integer_value(json_object_get(insp, "entryCount")), 4);
    /* usage errors */
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, NULL, "tavern", "export", id, "-o", js, NULL),
                     2);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, NULL, "tavern", "import", js, "--with-book",
                                        "--without-book", NULL),
                     2);
    json_t *missing = run_json(1, "delete", "nope-00000000", "--json", NULL, NULL);
    assert_string_equal(json_string_value(json_object_get(missing, "code")), "CARD_NOT_FOUND");
    json_decref(missing);
    json_decref(insp);
    json_decref(exported);
    free(png);
    free(js);
    json_decref(list);
    json_decref(imp);
    cdsh_test_home_free(home);
}

static void bad_files_fail_clearly_and_leave_nothing(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *bad = cdsh_fs_path_join_dup(home, "bad.json");
    cdsh_test_write_file(bad, "{\"description\":\"nameless\"}");
    json_t *j = run_json(1, "import", bad, "--without-book", "--json", NULL);
    assert_false(json_is_true(json_object_get(j, "ok")));
    assert_string_equal(json_string_value(json_object_get(j, "code")), "CARD_NO_NAME");
    json_decref(j);
    char *trunc = cdsh_fs_path_join_dup(home, "trunc.png");
    cdsh_test_write_file(trunc, "\x89PNG\r\n\x1a\n");
    char *err = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, NULL, &err, "tavern", "import", trunc, "--with-book", NULL), 1);
    assert_non_null(strstr(err, "PNG_TRUNCATED"));
    free(err);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, NULL, &err, "tavern", "inspect", "/nonexistent/x", NULL), 1);
    free(err);
    json_t *list = run_json(0, "list", "--json", NULL, NULL, NULL);
    assert_int_equal(json_array_size(json_object_get(list, "cards")), 0);
    json_decref(list);
    free(bad);
    free(trunc);
    cdsh_test_home_free(home);
}

static void library_commands_round_trip(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    json_t *imp =
        run_json(0, "lorebook", "import", SAMPLES "st-worldinfo-eldoria.json", "--json", NULL);
    const char *id = json_string_value(json_object_get(imp, "id"));
    assert_string_equal(id, "st-worldinfo-eldoria");
    char *out1 = cdsh_fs_path_join_dup(home, "book1.json");
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, NULL, NULL, "tavern", "lorebook", "export", id, "-o", out1, NULL),
        0);
    json_t *imp2 = run_json(0, "lorebook", "import", out1, "--json", NULL);
    char *out2 = cdsh_fs_path_join_dup(home, "book2.json");
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, NULL, "tavern", "lorebook", "export",
                                        json_string_value(json_object_get(imp2, "id")), "-o", out2,
                                        NULL),
                     0);
    json_t *b1 = json_load_file(out1, 0, NULL), *b2 = json_load_file(out2, 0, NULL);
    assert_true(cdsh_json_equal(b1, b2));
    json_t *list = run_json(0, "lorebook", "list", "--json", NULL, NULL);
    assert_int_equal(json_array_size(json_object_get(list, "items")), 2);

    char *preset = cdsh_fs_path_join_dup(home, "Creative.json");
    cdsh_test_write_file(preset, "{\"temperature\":1.2,\"prompts\":[{\"identifier\":\"main\","
                                 "\"content\":\"Be vivid.\"}]}");
    json_t *pi = run_json(0, "preset", "import", preset, "--json", NULL);
    assert_string_equal(json_string_value(json_object_get(pi, "id")), "creative");
    char *persona = cdsh_fs_path_join_dup(home, "p.json");
    cdsh_test_write_file(persona, "{\"name\":\"Traveller\",\"description\":\"tired\"}");
    json_t *pe = run_json(0, "persona", "import", persona, "--json", NULL);
    assert_string_equal(json_string_value(json_object_get(pe, "name")), "Traveller");
    char *rx = cdsh_fs_path_join_dup(home, "rx.json");
    cdsh_test_write_file(rx, "[{\"scriptName\":\"stars\",\"findRegex\":\"/\\\\*/g\","
                             "\"replaceString\":\"\",\"placement\":[2]}]");
    json_t *ri = run_json(0, "regex", "import", rx, "--json", NULL);
    assert_int_equal(json_integer_value(json_object_get(ri, "added")), 1);
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "regex", "list", NULL), 0);
    assert_non_null(strstr(out, "stars"));
    free(out);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "preset", "--help", NULL), 0);
    assert_non_null(strstr(out, "Usage: cdsh tavern"));
    free(out);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, NULL, "tavern", "preset", "frob", NULL), 2);
    json_decref(ri);
    json_decref(pe);
    json_decref(pi);
    free(rx);
    free(persona);
    free(preset);
    json_decref(list);
    json_decref(b1);
    json_decref(b2);
    json_decref(imp2);
    json_decref(imp);
    free(out1);
    free(out2);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(inspect_shows_the_card_and_writes_nothing),
        cmocka_unit_test(import_needs_a_book_choice_then_lists_and_exports),
        cmocka_unit_test(bad_files_fail_clearly_and_leave_nothing),
        cmocka_unit_test(library_commands_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
