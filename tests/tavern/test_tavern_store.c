/* test_tavern_store.c — the asset store on a real temporary CDSH_HOME: card
 * directory layout, same-name imports, the book choice, nothing written on
 * failure, revision tags and conflicts, path safety, the library and global
 * regex rules, and concurrent imports. */
#include "support/testkit.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "plugins/tavern/card.h"
#include "plugins/tavern/store.h"

#define SAMPLE_V2 CDSH_TEST_DATA("tavern-samples/st-card-v2-seraphina.json")
#define SAMPLE_WI CDSH_TEST_DATA("tavern-samples/st-worldinfo-eldoria.json")

typedef struct fixture {
    char *home;
    cdsh_tavern_store *store;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_store_open(cdsh_test_home(), NULL, &f->store, &err), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    cdsh_tavern_store_free(f->store);
    cdsh_test_home_free(f->home);
    free(f);
    return 0;
}

static char *path_in(const fixture *f, const char *rel)
{
    return cdsh_fs_path_join_dup(cdsh_tavern_store_root_get(f->store), rel);
}

static bool exists(const fixture *f, const char *rel)
{
    char *p = path_in(f, rel);
    struct stat st;
    bool r = stat(p, &st) == 0;
    free(p);
    return r;
}

static json_t *import_text(fixture *f, const char *text, cdsh_tavern_book_choice choice)
{
    json_t *res = NULL;
    cdsh_error err = {0};
    if (cdsh_tavern_store_import_card(f->store, (const uint8_t *)text, strlen(text), choice, &res,
                                      &err) < 0)
        fail_msg("%s: %s", err.code, err.message);
    return res;
}

static size_t count_entries(const fixture *f, const char *rel)
{
    char *p = path_in(f, rel);
    char **names = NULL;
    size_t n = 0;
    if (cdsh_fs_list_dir(p, &names, &n, NULL) < 0)
        n = 0;
    cdsh_fs_list_free(names);
    free(p);
    return n;
}

static void import_writes_the_card_directory_layout(void **state)
{
    fixture *f = *state;
    char *sample = cdsh_test_read_file(SAMPLE_V2, NULL);
    json_t *res = import_text(f, sample, CDSH_TAVERN_BOOK_IMPORT);
    const char *id = json_string_value(json_object_get(res, "cardId"));
    assert_memory_equal(id, "seraphina-", 10);
    assert_true(json_is_true(json_object_get(res, "bookImported")));
    assert_int_equal(json_integer_value(json_object_get(res, "bookEntries")), 4);
    char rel[256];
    snprintf(rel, sizeof rel, "characters/%s/card.json", id);
    assert_true(exists(f, rel));
    snprintf(rel, sizeof rel, "characters/%s/card.png", id);
    assert_false(exists(f, rel)); /* JSON card: no avatar */
    snprintf(rel, sizeof rel, "characters/%s/assets/regex-scripts.json", id);
    json_t *rules = NULL;
    assert_int_equal(cdsh_tavern_store_load(f->store, rel, &rules, NULL, NULL), 0);
    assert_int_equal(json_array_size(rules), 0);
    json_decref(rules);
    json_t *book = NULL;
    char lid[128];
    snprintf(lid, sizeof lid, "card:%s", id);
    assert_int_equal(cdsh_tavern_store_asset_load(f->store, CDSH_TAVERN_LOREBOOK, lid, &book, NULL),
                     0);
    assert_string_equal(json_string_value(json_object_get(book, "name")), "Eldoria");
    assert_int_equal(json_object_size(json_object_get(book, "entries")), 4);
    json_decref(book);
    json_t *rec = NULL;
    char *tag = NULL;
    assert_int_equal(cdsh_tavern_store_card_load(f->store, id, &rec, &tag, NULL), 0);
    assert_string_equal(tag, json_string_value(json_object_get(res, "tag")));
    assert_memory_equal(tag, "1-", 2);
    assert_string_equal(json_string_value(json_object_get(rec, "name")), "Seraphina");
    free(tag);
    json_decref(rec);
    json_decref(res);
    free(sample);
}

static void same_named_cards_never_overwrite(void **state)
{
    fixture *f = *state;
    const char *a = "{\"name\":\"Twin\",\"description\":\"first\"}";
    const char *b = "{\"name\":\"Twin\",\"description\":\"second\"}";
    json_t *ra = import_text(f, a, CDSH_TAVERN_BOOK_ASK);
    json_t *rb = import_text(f, b, CDSH_TAVERN_BOOK_ASK);
    const char *ia = json_string_value(json_object_get(ra, "cardId"));
    const char *ib = json_string_value(json_object_get(rb, "cardId"));
    assert_string_not_equal(ia, ib);
    json_t *list = NULL;
    assert_int_equal(cdsh_tavern_store_list_cards(f->store, &list, NULL), 0);
    assert_int_equal(json_array_size(list), 2);
    for (size_t i = 0; i < 2; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(list, i), "name")),
                            "Twin");
    json_t *rec = NULL;
    assert_int_equal(cdsh_tavern_store_card_load(f->store, ia, &rec, NULL, NULL), 0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(rec, "data"), "description")), "first");
    json_decref(rec);
    /* delete, then re-import gets a new id */
    assert_int_equal(cdsh_tavern_store_delete_card(f->store, ia, NULL), 0);
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_store_card_load(f->store, ia, &rec, NULL, &err), CDSH_ENOTFOUND);
    assert_string_equal(err.code, "CARD_NOT_FOUND");
    json_t *rc2 = import_text(f, a, CDSH_TAVERN_BOOK_ASK);
    assert_string_not_equal(json_string_value(json_object_get(rc2, "cardId")), ia);
    json_decref(rc2);
    json_decref(list);
    json_decref(ra);
    json_decref(rb);
}

static void book_choice_is_required_and_respected(void **state)
{
    fixture *f = *state;
    char *sample = cdsh_test_read_file(SAMPLE_V2, NULL);
    json_t *res = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_store_import_card(f->store, (const uint8_t *)sample,
                                                   strlen(sample), CDSH_TAVERN_BOOK_ASK, &res,
                                                   &err),
                     CDSH_EINVAL);
    assert_string_equal(err.code, "BOOK_CHOICE_REQUIRED");
    assert_non_null(strstr(err.message, "\"Eldoria\" with 4 entries"));
    assert_int_equal(count_entries(f, "characters"), 0);

    res = import_text(f, sample, CDSH_TAVERN_BOOK_DISCARD);
    const char *id = json_string_value(json_object_get(res, "cardId"));
    assert_false(json_is_true(json_object_get(res, "bookImported")));
    char rel[256];
    snprintf(rel, sizeof rel, "characters/%s/assets/character-book.json", id);
    assert_false(exists(f, rel));
    json_t *rec = NULL;
    assert_int_equal(cdsh_tavern_store_card_load(f->store, id, &rec, NULL, NULL), 0);
    assert_null(json_object_get(json_object_get(rec, "data"), "character_book"));
    json_decref(rec);
    json_decref(res);
    free(sample);
}

static void failed_imports_write_nothing(void **state)
{
    fixture *f = *state;
    const char *bad[] = {"{\"description\":\"no name\"}", "{\"name\":\"x\xff\"}", "not json",
                         "\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR"};
    const char *codes[] = {"CARD_NO_NAME", "CARD_NOT_UTF8", "CARD_BAD_JSON", "PNG_TRUNCATED"};
    size_t lens[] = {0, 0, 0, 16};
    for (size_t i = 0; i < 4; i++) {
        json_t *res = NULL;
        cdsh_error err = {0};
        size_t n = lens[i] ? lens[i] : strlen(bad[i]);
        assert_true(cdsh_tavern_store_import_card(f->store, (const uint8_t *)bad[i], n,
                                                  CDSH_TAVERN_BOOK_IMPORT, &res, &err) < 0);
        assert_string_equal(err.code, codes[i]);
        assert_null(res);
    }
    assert_int_equal(count_entries(f, "characters"), 0);
}

static void revision_tags_bump_and_detect_concurrent_edits(void **state)
{
    fixture *f = *state;
    json_t *v = json_pack("{s:i}", "a", 1);
    char *t1 = NULL, *t2 = NULL, *t3 = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_store_put(f->store, "x/thing.json", "test", v, "", &t1, &err), 0);
    assert_memory_equal(t1, "1-", 2);
    /* "" means "must not exist yet" */
    assert_int_equal(cdsh_tavern_store_put(f->store, "x/thing.json", "test", v, "", NULL, &err),
                     CDSH_EBUSY);
    assert_string_equal(err.code, "REVISION_CONFLICT");
    /* same content still bumps the revision */
    assert_int_equal(cdsh_tavern_store_put(f->store, "x/thing.json", "test", v, t1, &t2, &err), 0);
    assert_memory_equal(t2, "2-", 2);
    assert_string_not_equal(t1, t2);
    /* a writer holding the old tag loses */
    json_object_set_new(v, "a", json_integer(2));
    assert_int_equal(cdsh_tavern_store_put(f->store, "x/thing.json", "test", v, t1, NULL, &err),
                     CDSH_EBUSY);
    assert_string_equal(err.code, "REVISION_CONFLICT");
    assert_int_equal(cdsh_tavern_store_put(f->store, "x/thing.json", "test", v, NULL, &t3, &err),
                     0);
    assert_memory_equal(t3, "3-", 2);
    json_t *got = NULL;
    char *tag = NULL;
    assert_int_equal(cdsh_tavern_store_load(f->store, "x/thing.json", &got, &tag, NULL), 0);
    assert_string_equal(tag, t3);
    assert_int_equal(json_integer_value(json_object_get(got, "a")), 2);
    json_decref(got);
    free(tag);
    free(t1);
    free(t2);
    free(t3);
    json_decref(v);
}

static void paths_cannot_leave_the_store(void **state)
{
    fixture *f = *state;
    cdsh_error err = {0};
    json_t *v = json_object();
    assert_int_equal(cdsh_tavern_store_put(f->store, "../escape.json", "t", v, NULL, NULL, &err),
                     CDSH_EPERM);
    assert_string_equal(err.code, "PATH_ESCAPE");
    assert_int_equal(cdsh_tavern_store_put(f->store, "/etc/x.json", "t", v, NULL, NULL, &err),
                     CDSH_EPERM);
    /* a symlinked card directory pointing outside is refused and not listed */
    char *outside = cdsh_fs_path_join_dup(f->home, "outside");
    assert_int_equal(cdsh_fs_mkdir_p(outside, 0700, NULL), 0);
    char *chars = path_in(f, "characters");
    assert_int_equal(cdsh_fs_mkdir_p(chars, 0700, NULL), 0);
    char *link = cdsh_fs_path_join_dup(chars, "evil-00000000");
    assert_int_equal(symlink(outside, link), 0);
    char *planted = cdsh_fs_path_join_dup(outside, "card.json");
    cdsh_test_write_file(planted, "{\"cdsh\":{\"kind\":\"card\",\"revision\":1,\"tag\":\"1-x\"},"
                                  "\"value\":{\"name\":\"Evil\",\"data\":{\"name\":\"Evil\"}}}");
    json_t *rec = NULL;
    assert_int_equal(cdsh_tavern_store_card_load(f->store, "evil-00000000", &rec, NULL, &err),
                     CDSH_EPERM);
    assert_string_equal(err.code, "PATH_ESCAPE");
    json_t *list = NULL;
    assert_int_equal(cdsh_tavern_store_list_cards(f->store, &list, NULL), 0);
    assert_int_equal(json_array_size(list), 0);
    assert_int_equal(cdsh_tavern_store_card_load(f->store, "../outside", &rec, NULL, &err),
                     CDSH_EINVAL);
    assert_string_equal(err.code, "BAD_CARD_ID");
    json_decref(list);
    json_decref(v);
    free(planted);
    free(link);
    free(chars);
    free(outside);
}

static void library_assets_round_trip_and_get_unique_ids(void **state)
{
    fixture *f = *state;
    size_t len = 0;
    char *wi = cdsh_test_read_file(SAMPLE_WI, &len);
    json_t *r1 = NULL, *r2 = NULL, *r3 = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_store_import_asset(f->store, CDSH_TAVERN_LOREBOOK, wi, len,
                                                    "Eldoria", &r1, &err),
                     0);
    assert_string_equal(json_string_value(json_object_get(r1, "id")), "eldoria");
    assert_int_equal(cdsh_tavern_store_import_asset(f->store, CDSH_TAVERN_LOREBOOK, wi, len,
                                                    "Eldoria", &r2, &err),
                     0);
    assert_string_equal(json_string_value(json_object_get(r2, "id")), "eldoria-2");
    /* export → import gives the same book */
    json_t *v1 = NULL;
    assert_int_equal(
        cdsh_tavern_store_asset_load(f->store, CDSH_TAVERN_LOREBOOK, "eldoria", &v1, &err), 0);
    char *text = cdsh_json_dump_pretty_dup(v1);
    assert_int_equal(cdsh_tavern_store_import_asset(f->store, CDSH_TAVERN_LOREBOOK, text,
                                                    strlen(text), "other", &r3, &err),
                     0);
    json_t *v3 = NULL;
    assert_int_equal(cdsh_tavern_store_asset_load(f->store, CDSH_TAVERN_LOREBOOK,
                                                  json_string_value(json_object_get(r3, "id")), &v3,
                                                  &err),
                     0);
    assert_true(cdsh_json_equal(v1, v3));
    json_t *list = NULL;
    assert_int_equal(cdsh_tavern_store_list_assets(f->store, CDSH_TAVERN_LOREBOOK, &list, &err), 0);
    assert_int_equal(json_array_size(list), 3);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(list, 0), "entries")), 4);

    /* persona with a known and an unknown lorebook */
    const char *p_ok = "{\"name\":\"Me\",\"description\":\"a traveller\",\"lorebook\":\"eldoria\"}";
    const char *p_bad = "{\"name\":\"Me\",\"lorebook\":\"nope\"}";
    json_t *pr = NULL;
    assert_int_equal(cdsh_tavern_store_import_asset(f->store, CDSH_TAVERN_PERSONA, p_ok,
                                                    strlen(p_ok), NULL, &pr, &err),
                     0);
    json_decref(pr);
    assert_int_equal(cdsh_tavern_store_import_asset(f->store, CDSH_TAVERN_PERSONA, p_bad,
                                                    strlen(p_bad), NULL, &pr, &err),
                     CDSH_ENOTFOUND);
    assert_string_equal(err.code, "PERSONA_UNKNOWN_LOREBOOK");
    /* preset and bad input */
    const char *preset = "{\"temperature\":0.5,\"prompts\":[{\"identifier\":\"main\"}]}";
    assert_int_equal(cdsh_tavern_store_import_asset(f->store, CDSH_TAVERN_PRESET, preset,
                                                    strlen(preset), "My Preset", &pr, &err),
                     0);
    assert_string_equal(json_string_value(json_object_get(pr, "id")), "my-preset");
    json_decref(pr);
    assert_true(cdsh_tavern_store_import_asset(f->store, CDSH_TAVERN_PRESET, "\xff", 1, "x", &pr,
                                               &err) < 0);
    assert_string_equal(err.code, "JSON_NOT_UTF8");
    assert_int_equal(count_entries(f, "library/presets"), 1);
    json_decref(list);
    json_decref(v1);
    json_decref(v3);
    free(text);
    json_decref(r1);
    json_decref(r2);
    json_decref(r3);
    free(wi);
}

static void global_regex_rules_accumulate(void **state)
{
    fixture *f = *state;
    const char *a = "[{\"findRegex\":\"/a/g\",\"scriptName\":\"one\",\"placement\":[2]}]";
    const char *b = "{\"find\":\"b\",\"name\":\"two\"}";
    json_t *res = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_store_import_regex(f->store, a, strlen(a), &res, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(res, "total")), 1);
    json_decref(res);
    assert_int_equal(cdsh_tavern_store_import_regex(f->store, b, strlen(b), &res, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(res, "total")), 2);
    assert_memory_equal(json_string_value(json_object_get(res, "tag")), "2-", 2);
    json_decref(res);
    json_t *rules = NULL;
    assert_int_equal(cdsh_tavern_store_regex_load(f->store, &rules, &err), 0);
    assert_string_equal(json_string_value(json_object_get(json_array_get(rules, 1), "name")),
                        "two");
    json_decref(rules);
    assert_true(cdsh_tavern_store_import_regex(f->store, "[{\"find\":5}]", 12, &res, &err) < 0);
    assert_string_equal(err.code, "REGEX_BAD_RULE");
}

static void exported_png_reimports_with_the_same_fields(void **state)
{
    fixture *f = *state;
    const char *card = "{\"spec\":\"chara_card_v3\",\"spec_version\":\"3.0\",\"data\":{\"name\":"
                       "\"Round\",\"nickname\":\"R\",\"extensions\":{\"depth_prompt\":{\"prompt\":"
                       "\"p\",\"depth\":2,\"role\":\"user\"},\"regex_scripts\":[{\"findRegex\":"
                       "\"x\",\"placement\":[2]}]}}}";
    json_t *res = import_text(f, card, CDSH_TAVERN_BOOK_ASK);
    assert_int_equal(json_integer_value(json_object_get(res, "regexRules")), 1);
    const char *id = json_string_value(json_object_get(res, "cardId"));
    char rxrel[256];
    snprintf(rxrel, sizeof rxrel, "characters/%s/assets/regex-scripts.json", id);
    json_t *rules = NULL;
    assert_int_equal(cdsh_tavern_store_load(f->store, rxrel, &rules, NULL, NULL), 0);
    json_t *r0 = json_array_get(rules, 0);
    assert_string_equal(json_string_value(json_object_get(r0, "source")), "card");
    assert_true(json_is_true(json_object_get(r0, "enabled"))); /* display rule stays on */
    json_decref(rules);
    uint8_t *png = NULL;
    size_t n = 0;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_store_export_card(f->store, id, true, &png, &n, &err), 0);
    json_t *res2 = NULL;
    assert_int_equal(
        cdsh_tavern_store_import_card(f->store, png, n, CDSH_TAVERN_BOOK_ASK, &res2, &err), 0);
    const char *id2 = json_string_value(json_object_get(res2, "cardId"));
    json_t *a = NULL, *b = NULL;
    assert_int_equal(cdsh_tavern_store_card_load(f->store, id, &a, NULL, NULL), 0);
    assert_int_equal(cdsh_tavern_store_card_load(f->store, id2, &b, NULL, NULL), 0);
    assert_true(cdsh_json_equal(json_object_get(a, "data"), json_object_get(b, "data")));
    assert_true(
        cdsh_json_equal(json_object_get(a, "depth_prompt"), json_object_get(b, "depth_prompt")));
    char rel[256];
    snprintf(rel, sizeof rel, "characters/%s/card.png", id2);
    assert_true(exists(f, rel)); /* the exported placeholder became the avatar */
    uint8_t *js = NULL;
    assert_int_equal(cdsh_tavern_store_export_card(f->store, id2, false, &js, &n, &err), 0);
    assert_non_null(strstr((char *)js, "\"chara_card_v3\""));
    free(js);
    assert_int_equal(
        cdsh_tavern_store_export_card(f->store, "missing-00000000", false, &js, &n, &err),
        CDSH_ENOTFOUND);
    assert_string_equal(err.code, "CARD_NOT_FOUND");
    json_decref(a);
    json_decref(b);
    free(png);
    json_decref(res);
    json_decref(res2);
}

typedef struct worker {
    cdsh_tavern_store *store;
    int failures;
} worker;

static void *import_many(void *arg)
{
    worker *w = arg;
    const char *card = "{\"name\":\"Crowd\"}";
    for (int i = 0; i < 5; i++) {
        json_t *res = NULL;
        if (cdsh_tavern_store_import_card(w->store, (const uint8_t *)card, strlen(card),
                                          CDSH_TAVERN_BOOK_ASK, &res, NULL) < 0)
            w->failures++;
        json_decref(res);
    }
    return NULL;
}

static void concurrent_imports_all_land_with_distinct_ids(void **state)
{
    fixture *f = *state;
    pthread_t th[3];
    worker w[3];
    for (int i = 0; i < 3; i++) {
        w[i] = (worker){.store = f->store};
        pthread_create(&th[i], NULL, import_many, &w[i]);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].failures, 0);
    }
    json_t *list = NULL;
    assert_int_equal(cdsh_tavern_store_list_cards(f->store, &list, NULL), 0);
    assert_int_equal(json_array_size(list), 15);
    assert_int_equal(count_entries(f, "characters"), 15); /* no staging leftovers */
    json_decref(list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(import_writes_the_card_directory_layout, setup, teardown),
        cmocka_unit_test_setup_teardown(same_named_cards_never_overwrite, setup, teardown),
        cmocka_unit_test_setup_teardown(book_choice_is_required_and_respected, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_imports_write_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(revision_tags_bump_and_detect_concurrent_edits, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(paths_cannot_leave_the_store, setup, teardown),
        cmocka_unit_test_setup_teardown(library_assets_round_trip_and_get_unique_ids, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(global_regex_rules_accumulate, setup, teardown),
        cmocka_unit_test_setup_teardown(exported_png_reimports_with_the_same_fields, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(concurrent_imports_all_land_with_distinct_ids, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
