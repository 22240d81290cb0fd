/* test_cmd_tavern.c — `cdsh tavern` end to end through the built binary:
 * inspect writes nothing, the book choice, list/export output, bad input
 * leaving nothing behind, the library commands' round trips, and save /
 * delete through the service with their failure codes and exit status. */
#include "support/testkit.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/json.h"

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
                                        CDSH_TEST_DATA("tavern-samples/st-card-v2-seraphina.json"),
                                        NULL),
                     0);
    assert_non_null(strstr(out, "name:              Seraphina"));
    assert_non_null(strstr(out, "embedded lorebook: Eldoria (4 entries)"));
    free(out);
    json_t *j = run_json(0, "inspect", CDSH_TEST_DATA("tavern-samples/st-card-v2-seraphina.json"),
                         "--json", NULL, NULL);
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
                                        CDSH_TEST_DATA("tavern-samples/st-card-v2-seraphina.json"),
                                        NULL),
                     1);
    assert_non_null(strstr(err, "BOOK_CHOICE_REQUIRED"));
    assert_non_null(strstr(err, "--with-book or --without-book"));
    free(err);
    json_t *imp = run_json(0, "import", CDSH_TEST_DATA("tavern-samples/st-card-v2-seraphina.json"),
                           "--with-book", "--json", NULL);
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
    /* "-o -" is stdout: the card's bytes and nothing else (issue 23); no
     * file named "-" appears. */
    char *raw = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &raw, NULL, "tavern", "export", id, "--json", "-o", "-", NULL), 0);
    json_t *piped = json_loads(raw, 0, NULL);
    assert_non_null(piped);
    assert_true(json_equal(piped, exported));
    json_decref(piped);
    free(raw);
    struct stat dash;
    assert_int_not_equal(stat("-", &dash), 0);
    size_t file_len = 0;
    char *file_png = cdsh_test_read_file(png, &file_len);
    char *piped_png = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &piped_png, NULL, "tavern", "export", id, "--png", "-o", "-", NULL),
        0);
    assert_memory_equal(piped_png, "\x89PNG", 4);
    assert_memory_equal(piped_png, file_png, 8);
    free(piped_png);
    free(file_png);
    char book_id[128];
    snprintf(book_id, sizeof book_id, "card:%s", id); /* the card's own book */
    char *book_out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &book_out, NULL, "tavern", "lorebook", "export",
                                        book_id, "-o", "-", "--json", NULL),
                     0);
    json_t *bj = json_loads(book_out, 0, NULL);
    assert_non_null(bj); /* the book alone, no {"ok":true} after it */
    assert_non_null(json_object_get(bj, "entries"));
    json_decref(bj);
    free(book_out);
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
        run_json(0, "lorebook", "import",
                 CDSH_TEST_DATA("tavern-samples/st-worldinfo-eldoria.json"), "--json", NULL);
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

/* Runs `cdsh tavern a...` (up to 8 words, NULL-terminated early) wanting
 * exit want_rc; returns its stdout as JSON (owned). *err_out (may be NULL)
 * gets stderr (owned). */
static json_t *tavern_json(int want_rc, char **err_out, const char *a1, const char *a2,
                           const char *a3, const char *a4, const char *a5, const char *a6,
                           const char *a7, const char *a8)
{
    char *out = NULL, *err = NULL;
    int rc = cdsh_test_run_cdsh(NULL, &out, &err, "tavern", a1, a2, a3, a4, a5, a6, a7, a8, NULL);
    if (rc != want_rc)
        fail_msg("exit %d (want %d): %s %s", rc, want_rc, out, err);
    json_t *j = json_loads(out, 0, NULL);
    if (!j)
        fail_msg("not JSON: %s", out);
    free(out);
    if (err_out)
        *err_out = err;
    else
        free(err);
    return j;
}

static const char *jstr(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void lorebooks_are_saved_replaced_and_deleted_with_revision_checks(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *book = cdsh_fs_path_join_dup(home, "book.json");
    cdsh_test_write_file(book, "{\"name\":\"Eldoria\",\"entries\":{\"0\":{\"uid\":0,"
                               "\"key\":[\"comet\"],\"content\":\"The comet returns.\"}}}");
    json_t *a = tavern_json(0, NULL, "lorebook", "save", book, "--json", NULL, NULL, NULL, NULL);
    assert_true(json_is_true(json_object_get(a, "ok")));
    assert_string_equal(jstr(a, "name"), "Eldoria");
    assert_int_equal(json_integer_value(json_object_get(a, "entries")), 1);
    const char *id = jstr(a, "id");
    /* Replacing at the current revision works and moves the revision on. */
    cdsh_test_write_file(book, "{\"name\":\"Eldoria\",\"entries\":[{\"uid\":0,\"key\":[\"comet\"],"
                               "\"content\":\"a\"},{\"uid\":1,\"key\":[\"moon\"],\"content\":"
                               "\"b\"}]}");
    json_t *b = tavern_json(0, NULL, "lorebook", "save", book, "--id", id, "--expect",
                            jstr(a, "revision"), "--json");
    assert_string_equal(jstr(b, "id"), id);
    assert_int_equal(json_integer_value(json_object_get(b, "entries")), 2);
    assert_string_not_equal(jstr(b, "revision"), jstr(a, "revision"));
    /* The stale revision is refused and says both revisions; nothing changes. */
    char *err = NULL;
    json_t *c = tavern_json(1, NULL, "lorebook", "save", book, "--id", id, "--expect",
                            jstr(a, "revision"), "--json");
    assert_false(json_is_true(json_object_get(c, "ok")));
    assert_string_equal(jstr(c, "code"), "revision-conflict");
    assert_non_null(strstr(jstr(c, "message"), jstr(a, "revision")));
    assert_non_null(strstr(jstr(c, "message"), jstr(b, "revision")));
    json_t *list = tavern_json(0, NULL, "lorebook", "list", "--json", NULL, NULL, NULL, NULL, NULL);
    json_t *item = json_array_get(json_object_get(list, "items"), 0);
    assert_string_equal(jstr(item, "tag"), jstr(b, "revision"));
    /* Human output: the code first, on stderr, exit 1. */
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "tavern", "lorebook", "save", book,
                                        "--id", id, "--expect", jstr(a, "revision"), NULL),
                     1);
    assert_non_null(strstr(err, "cdsh tavern: revision-conflict: "));
    free(out);
    free(err);
    /* Bad content names what is wrong. */
    cdsh_test_write_file(book, "{\"name\":\"x\",\"entries\":[{\"uid\":0,\"depth\":-3}]}");
    json_t *d = tavern_json(1, NULL, "lorebook", "save", book, "--json", NULL, NULL, NULL, NULL);
    assert_string_equal(jstr(d, "code"), "bad-request");
    assert_non_null(strstr(jstr(d, "message"), "depth"));
    cdsh_test_write_file(book, "{\"name\":");
    json_t *e = tavern_json(1, NULL, "lorebook", "save", book, "--json", NULL, NULL, NULL, NULL);
    assert_string_equal(jstr(e, "code"), "bad-json");
    /* Delete, then it is gone. */
    json_t *f = tavern_json(0, NULL, "lorebook", "delete", id, "--json", NULL, NULL, NULL, NULL);
    assert_true(json_is_true(json_object_get(f, "deleted")));
    json_t *g = tavern_json(1, NULL, "lorebook", "delete", id, "--json", NULL, NULL, NULL, NULL);
    assert_string_equal(jstr(g, "code"), "not-found");
    /* Usage errors: exit 2. */
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, NULL, "tavern", "lorebook", "save", NULL), 2);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, NULL, NULL, "tavern", "lorebook", "list", "--id", "x", NULL), 2);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, NULL, NULL, "tavern", "regex", "save", book, "--id", "x", NULL),
        2);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(d);
    json_decref(e);
    json_decref(f);
    json_decref(g);
    json_decref(list);
    free(book);
    cdsh_test_home_free(home);
}

static void items_in_use_are_not_deleted_and_the_users_are_named(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *book = cdsh_fs_path_join_dup(home, "book.json");
    char *persona = cdsh_fs_path_join_dup(home, "me.json");
    char *preset = cdsh_fs_path_join_dup(home, "preset.json");
    cdsh_test_write_file(book, "{\"name\":\"Lore\",\"entries\":{}}");
    json_t *b = tavern_json(0, NULL, "lorebook", "save", book, "--json", NULL, NULL, NULL, NULL);
    char text[512];
    snprintf(text, sizeof text,
             "{\"name\":\"Traveller\",\"description\":\"tired\","
             "\"lorebookId\":\"%s\"}",
             jstr(b, "id"));
    cdsh_test_write_file(persona, text);
    json_t *p = tavern_json(0, NULL, "persona", "save", persona, "--json", NULL, NULL, NULL, NULL);
    assert_string_equal(jstr(p, "name"), "Traveller");
    char *err = NULL;
    json_t *u =
        tavern_json(1, &err, "lorebook", "delete", jstr(b, "id"), "--json", NULL, NULL, NULL, NULL);
    assert_string_equal(jstr(u, "code"), "in-use");
    snprintf(text, sizeof text, "persona %s", jstr(p, "id"));
    assert_non_null(strstr(jstr(u, "message"), text));
    free(err);
    /* A persona naming a book that does not exist is refused. */
    cdsh_test_write_file(persona, "{\"name\":\"Ghost\",\"lorebookId\":\"no-such-book\"}");
    json_t *n = tavern_json(1, NULL, "persona", "save", persona, "--json", NULL, NULL, NULL, NULL);
    assert_string_equal(jstr(n, "code"), "not-found");
    cdsh_test_write_file(persona, "{\"description\":\"no name\"}");
    json_t *m = tavern_json(1, NULL, "persona", "save", persona, "--json", NULL, NULL, NULL, NULL);
    assert_string_equal(jstr(m, "code"), "bad-request");
    assert_non_null(strstr(jstr(m, "message"), "\"name\""));
    /* Edit the persona (export → save --id keeps it), drop it, then the book goes. */
    char *exported = cdsh_fs_path_join_dup(home, "exported.json");
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, NULL, "tavern", "persona", "export",
                                        jstr(p, "id"), "-o", exported, NULL),
                     0);
    json_t *e = tavern_json(0, NULL, "persona", "save", exported, "--id", jstr(p, "id"), "--json",
                            NULL, NULL);
    assert_string_equal(jstr(e, "id"), jstr(p, "id"));
    json_t *pl = tavern_json(0, NULL, "persona", "list", "--json", NULL, NULL, NULL, NULL, NULL);
    assert_string_equal(jstr(json_array_get(json_object_get(pl, "items"), 0), "lorebook"),
                        jstr(b, "id"));
    char *out = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "persona", "delete", jstr(p, "id"), NULL),
        0);
    snprintf(text, sizeof text, "deleted persona %s\n", jstr(p, "id"));
    assert_string_equal(out, text);
    free(out);
    json_t *d =
        tavern_json(0, NULL, "lorebook", "delete", jstr(b, "id"), "--json", NULL, NULL, NULL, NULL);
    assert_true(json_is_true(json_object_get(d, "deleted")));
    /* Presets: save, replace by id, bad shape, delete. */
    cdsh_test_write_file(preset, "{\"name\":\"Vivid\",\"temperature\":1.1}");
    json_t *s1 = tavern_json(0, NULL, "preset", "save", preset, "--json", NULL, NULL, NULL, NULL);
    assert_string_equal(jstr(s1, "name"), "Vivid");
    json_t *s2 = tavern_json(0, NULL, "preset", "save", preset, "--id", jstr(s1, "id"), "--json",
                             NULL, NULL);
    assert_string_equal(jstr(s2, "id"), jstr(s1, "id"));
    cdsh_test_write_file(preset, "[1,2]");
    json_t *s3 = tavern_json(1, NULL, "preset", "save", preset, "--json", NULL, NULL, NULL, NULL);
    assert_string_equal(jstr(s3, "code"), "bad-request");
    assert_non_null(strstr(jstr(s3, "message"), "preset"));
    json_t *s4 =
        tavern_json(0, NULL, "preset", "delete", jstr(s1, "id"), "--json", NULL, NULL, NULL, NULL);
    json_t *left = tavern_json(0, NULL, "preset", "list", "--json", NULL, NULL, NULL, NULL, NULL);
    assert_int_equal(json_array_size(json_object_get(left, "items")), 0);
    json_t *jsons[] = {b, p, u, n, m, e, pl, d, s1, s2, s3, s4, left};
    for (size_t i = 0; i < sizeof jsons / sizeof *jsons; i++)
        json_decref(jsons[i]);
    free(exported);
    free(preset);
    free(persona);
    free(book);
    cdsh_test_home_free(home);
}

static void regex_save_replaces_every_rule_or_none(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *rx = cdsh_fs_path_join_dup(home, "rx.json");
    cdsh_test_write_file(rx, "[{\"id\":\"stars\",\"name\":\"stars\",\"find\":\"/\\\\*/g\","
                             "\"replace\":\"\"},{\"id\":\"caps\",\"name\":\"caps\",\"find\":"
                             "\"/x/g\",\"replace\":\"X\"}]");
    json_t *a = tavern_json(0, NULL, "regex", "save", rx, "--json", NULL, NULL, NULL, NULL);
    assert_int_equal(json_integer_value(json_object_get(a, "total")), 2);
    /* One rule that does not compile: nothing is written, the rule is named. */
    cdsh_test_write_file(rx, "{\"rules\":[{\"id\":\"ok\",\"name\":\"ok\",\"find\":\"/a/\"},"
                             "{\"id\":\"broken\",\"name\":\"broken\",\"find\":\"/(/\"}]}");
    json_t *b = tavern_json(1, NULL, "regex", "save", rx, "--json", NULL, NULL, NULL, NULL);
    assert_string_equal(jstr(b, "code"), "bad-request");
    assert_non_null(strstr(jstr(b, "message"), "rule 1 (broken)"));
    json_t *l = tavern_json(0, NULL, "regex", "list", "--json", NULL, NULL, NULL, NULL, NULL);
    assert_int_equal(json_array_size(json_object_get(l, "rules")), 2);
    /* A stale revision is refused. */
    cdsh_test_write_file(rx, "{\"rules\":[]}");
    json_t *c =
        tavern_json(1, NULL, "regex", "save", rx, "--expect", "0-stale", "--json", NULL, NULL);
    assert_string_equal(jstr(c, "code"), "revision-conflict");
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "regex", "save", rx, "--expect",
                                        jstr(a, "revision"), NULL),
                     0);
    assert_non_null(strstr(out, "saved 0 regex rules (revision "));
    free(out);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(l);
    free(rx);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(inspect_shows_the_card_and_writes_nothing),
        cmocka_unit_test(import_needs_a_book_choice_then_lists_and_exports),
        cmocka_unit_test(bad_files_fail_clearly_and_leave_nothing),
        cmocka_unit_test(library_commands_round_trip),
        cmocka_unit_test(lorebooks_are_saved_replaced_and_deleted_with_revision_checks),
        cmocka_unit_test(items_in_use_are_not_deleted_and_the_users_are_named),
        cmocka_unit_test(regex_save_replaces_every_rule_or_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
