/* test_cmd_tavern_preview.c — `cdsh tavern preview` through the built
 * binary: text and JSON output with a chat, the trigger log, SillyTavern
 * JSONL chats, the author's note in the scan, the simulation trimmed to
 * --context, usage and unknown-card errors, and that it writes nothing. */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/json.h"

static const char CARD[] =
    "{\"spec\":\"chara_card_v2\",\"spec_version\":\"2.0\",\"data\":{\"name\":\"Sera\","
    "\"description\":\"{{char}} guards {{user}}.\",\"personality\":\"kind\",\"scenario\":\"glade\","
    "\"first_mes\":\"Hi\",\"mes_example\":\"\",\"character_book\":{\"name\":\"Glade\",\"entries\":["
    "{\"keys\":[\"wolf\"],\"content\":\"Wolves "
    "roam.\",\"enabled\":true,\"insertion_order\":1,\"extensions\":{}},"
    "{\"keys\":[],\"constant\":true,\"content\":\"Old "
    "glade.\",\"enabled\":true,\"insertion_order\":2,\"extensions\":{}},"
    "{\"keys\":[\"dragon\"],\"content\":\"Dragons.\",\"enabled\":true,\"insertion_order\":3,"
    "\"extensions\":{}}]}}}";

static char *import_card(const char *home)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/card.json", home);
    cdsh_test_write_file(path, CARD);
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "import", path, "--with-book",
                                        "--json", NULL),
                     0);
    json_t *j = json_loads(out, 0, NULL);
    char *id = strdup(json_string_value(json_object_get(j, "cardId")));
    json_decref(j);
    free(out);
    return id;
}

static void preview_prints_channels_messages_budgets_and_log(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *id = import_card(home);
    char chat[4096];
    snprintf(chat, sizeof chat, "%s/chat.json", home);
    cdsh_test_write_file(chat, "[{\"role\":\"user\",\"text\":\"A wolf appears.\"}]");
    char *out = NULL, *err = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "tavern", "preview", id, "--chat", chat, NULL), 0);
    assert_non_null(strstr(out, "== Standing segment (agent system prompt) ==\n"));
    assert_non_null(strstr(out, "Sera guards User."));
    assert_non_null(strstr(out, "【世界书·常驻】\nOld glade."));
    assert_non_null(strstr(out, "== Turn context ==\n"));
    assert_non_null(strstr(out, "【世界书·本轮触发】\nWolves roam."));
    assert_non_null(strstr(out, "user (chatHistory)\nA wolf appears."));
    assert_non_null(strstr(out, "worldInfo      4 / 8192"));
    assert_non_null(strstr(out, "+ Glade.0 : primary key 'wolf'"));
    assert_non_null(strstr(out, "- Glade.2 : no primary key matched"));
    free(out);
    free(err);
    /* JSON form. */
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "preview", id, "--chat", chat,
                                        "--json", NULL),
                     0);
    json_t *j = json_loads(out, 0, NULL);
    assert_true(json_is_true(json_object_get(j, "ok")));
    assert_string_equal(json_string_value(json_object_get(j, "cardId")), id);
    assert_int_equal(json_array_size(json_object_get(json_object_get(j, "worldInfo"), "log")), 3);
    assert_non_null(json_object_get(json_object_get(j, "budgets"), "journal"));
    json_decref(j);
    free(out);
    /* Preview wrote no story state. */
    char state_dir[4096];
    snprintf(state_dir, sizeof state_dir, "%s/tavern/state", home);
    FILE *f = fopen(state_dir, "r");
    assert_null(f);
    free(id);
    cdsh_test_home_free(home);
}

static void preview_reads_sillytavern_jsonl_chats(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *id = import_card(home);
    char chat[4096];
    snprintf(chat, sizeof chat, "%s/chat.jsonl", home);
    cdsh_test_write_file(chat, "{\"user_name\":\"Ann\",\"character_name\":\"Sera\"}\n"
                               "{\"name\":\"Ann\",\"is_user\":true,\"mes\":\"Here be dragon\"}\n");
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "preview", id, "--chat", chat,
                                        "--json", NULL),
                     0);
    json_t *j = json_loads(out, 0, NULL);
    assert_non_null(strstr(json_string_value(json_object_get(j, "turn")), "Dragons."));
    json_decref(j);
    free(out);
    cdsh_test_write_file(chat, "not json\n");
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "preview", id, "--chat", chat,
                                        "--json", NULL),
                     1);
    j = json_loads(out, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "code")), "BAD_CHAT");
    json_decref(j);
    free(out);
    free(id);
    cdsh_test_home_free(home);
}

static void preview_scans_the_note_when_asked_and_trims_to_the_context(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *id = import_card(home);
    char *out = NULL;
    /* The key "dragon" appears only in the author's note. */
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "preview", id, "--note",
                                        "A dragon circles.", "--json", NULL),
                     0);
    json_t *j = json_loads(out, 0, NULL);
    assert_null(strstr(json_string_value(json_object_get(j, "turn")), "Dragons."));
    json_decref(j);
    free(out);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "preview", id, "--note",
                                        "A dragon circles.", "--note-scan", "--note-position", "2",
                                        "--json", NULL),
                     0);
    j = json_loads(out, 0, NULL);
    assert_non_null(strstr(json_string_value(json_object_get(j, "turn")), "Dragons."));
    json_t *first = json_array_get(json_object_get(j, "messages"), 0);
    assert_string_equal(json_string_value(json_object_get(first, "source")), "authorsNote");
    json_decref(j);
    free(out);
    /* Forty messages into a 120-token context: the oldest are dropped. */
    char chat[4096], *text = malloc(1 << 16);
    snprintf(chat, sizeof chat, "%s/chat.json", home);
    strcpy(text, "[");
    for (int i = 0; i < 40; i++)
        snprintf(text + strlen(text), 256, "%s{\"role\":\"%s\",\"text\":\"line %d of the chat\"}",
                 i ? "," : "", i % 2 ? "assistant" : "user", i);
    strcat(text, "]");
    cdsh_test_write_file(chat, text);
    free(text);
    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "tavern", "preview", id, "--chat", chat,
                                        "--context", "120", NULL),
                     0);
    assert_non_null(strstr(out, "note: simulated messages trimmed to the 120-token context"));
    assert_non_null(strstr(out, "line 39 of the chat"));
    assert_null(strstr(out, "line 0 of the chat"));
    assert_non_null(strstr(out, "simulation "));
    free(out);
    free(err);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "tavern", "preview", id, "--context", "x", NULL), 2);
    assert_non_null(strstr(err, "bad number 'x' for --context"));
    free(out);
    free(err);
    free(id);
    cdsh_test_home_free(home);
}

static void preview_usage_and_unknown_card(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "tavern", "preview", NULL), 2);
    assert_non_null(strstr(err, "Usage: cdsh tavern preview CARD_ID"));
    free(out);
    free(err);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "tavern", "preview", "nosuch-1", "--json", NULL), 1);
    json_t *j = json_loads(out, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "code")), "CARD_NOT_FOUND");
    json_decref(j);
    free(out);
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "tavern", "--help", NULL), 0);
    assert_non_null(strstr(out, "preview CARD_ID"));
    free(out);
    free(err);
    cdsh_test_home_free(home);
}

/* World-info settings from a SillyTavern settings.json and flags, ST's
 * default whole words, hidden (is_system) messages, the seed replay and
 * the refusals of bad values. */
static void preview_takes_world_info_settings_and_a_seed(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *id = import_card(home);
    char chat[4096], st[4096];
    snprintf(chat, sizeof chat, "%s/chat.jsonl", home);
    snprintf(st, sizeof st, "%s/settings.json", home);
    cdsh_test_write_file(chat, "{\"user_name\":\"Ann\"}\n"
                               "{\"name\":\"Ann\",\"is_user\":true,\"mes\":\"a dragonfly\"}\n"
                               "{\"name\":\"Ann\",\"is_user\":true,\"is_system\":true,"
                               "\"mes\":\"wolf\"}\n");
    char *out = NULL, *err = NULL;
    /* whole words on by default: "dragon" is not in "dragonfly"; the hidden wolf is not scanned */
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "preview", id, "--chat", chat,
                                        "--seed", "7", "--json", NULL),
                     0);
    json_t *j = json_loads(out, 0, NULL);
    assert_null(strstr(json_string_value(json_object_get(j, "turn")), "Dragons."));
    assert_null(strstr(json_string_value(json_object_get(j, "turn")), "Wolves"));
    assert_int_equal(json_integer_value(json_object_get(j, "seed")), 7);
    json_decref(j);
    /* the same seed gives the same plan */
    char *again = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &again, NULL, "tavern", "preview", id, "--chat", chat,
                                        "--seed", "7", "--json", NULL),
                     0);
    assert_string_equal(out, again);
    free(again);
    free(out);
    cdsh_test_write_file(st, "{\"world_info_settings\":{\"world_info_match_whole_words\":false,"
                             "\"world_info_depth\":4}}");
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "preview", id, "--chat", chat,
                                        "--wi-settings", st, "--wi", "maxRecursionSteps=1",
                                        "--budget-cap", "500", "--json", NULL),
                     0);
    j = json_loads(out, 0, NULL);
    assert_non_null(strstr(json_string_value(json_object_get(j, "turn")), "Dragons."));
    json_t *ws = json_object_get(j, "worldInfoSettings");
    assert_int_equal(json_integer_value(json_object_get(ws, "scanDepth")), 4);
    assert_int_equal(json_integer_value(json_object_get(ws, "maxRecursionSteps")), 1);
    assert_int_equal(json_integer_value(json_object_get(ws, "budgetCap")), 500);
    assert_false(json_is_true(json_object_get(ws, "matchWholeWords")));
    assert_true(json_is_integer(json_object_get(j, "seed")));
    json_decref(j);
    free(out);
    /* --whole-words after the file wins again */
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "preview", id, "--chat", chat,
                                        "--wi-settings", st, "--whole-words", "--json", NULL),
                     0);
    j = json_loads(out, 0, NULL);
    assert_null(strstr(json_string_value(json_object_get(j, "turn")), "Dragons."));
    json_decref(j);
    free(out);
    /* refusals */
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "preview", id, "--wi",
                                        "scanDepth=5000", "--json", NULL),
                     1);
    j = json_loads(out, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "code")), "wi-settings-rejected");
    assert_non_null(strstr(json_string_value(json_object_get(j, "message")), "scanDepth"));
    json_decref(j);
    free(out);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "tavern", "preview", id, "--seed", "-1", NULL), 2);
    assert_non_null(strstr(err, "--seed"));
    free(out);
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "tavern", "preview", id,
                                        "--generation-type", "retry", NULL),
                     2);
    assert_non_null(strstr(err, "--generation-type"));
    free(out);
    free(err);
    /* --type is short for --generation-type (ST's generation types) */
    const char *types[] = {"impersonate", "swipe", "quiet"};
    for (size_t k = 0; k < 3; k++) {
        assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "preview", id, "--type",
                                            types[k], "--json", NULL),
                         0);
        j = json_loads(out, 0, NULL);
        assert_string_equal(json_string_value(json_object_get(j, "generationType")), types[k]);
        json_decref(j);
        free(out);
    }
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "tavern", "preview", id, "--type", "dream", NULL), 2);
    assert_non_null(strstr(err, "'dream'"));
    free(out);
    free(err);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "tavern", "preview", id, "--wi", "noequals", NULL), 2);
    free(out);
    free(err);
    free(id);
    cdsh_test_home_free(home);
}

/* --book adds a world-info file as a global book (named by its "name" or
 * the file name); a dry run reports the timed-effect state it would leave
 * (worldInfo.timedAfter), which a later preview reads from the story state;
 * a bad book names the file. */
static void preview_adds_book_files_and_reports_timed_state(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *id = import_card(home);
    char chat[4096], book[4096], named[4096], bad[4096], statef[4096];
    snprintf(chat, sizeof chat, "%s/chat.json", home);
    snprintf(book, sizeof book, "%s/moon-lore.json", home);
    snprintf(named, sizeof named, "%s/other.json", home);
    snprintf(bad, sizeof bad, "%s/bad.json", home);
    cdsh_test_write_file(chat, "[{\"role\":\"user\",\"name\":\"Ann\",\"text\":\"the moon\"}]");
    cdsh_test_write_file(book, "{\"entries\":{\"0\":{\"uid\":0,\"key\":[\"moon\"],"
                               "\"content\":\"Moon lore.\",\"sticky\":2}}}");
    cdsh_test_write_file(named,
                         "{\"name\":\"Sky\",\"entries\":{\"3\":{\"uid\":3,\"key\":[\"moon\"],"
                         "\"content\":\"Sky lore.\",\"position\":1}}}");
    cdsh_test_write_file(bad, "{\"entries\":{\"0\":{\"uid\":0,\"key\":\"moon\"}}");
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "preview", id, "--chat", chat,
                                        "--book", book, "--book", named, "--seed", "1", "--json",
                                        NULL),
                     0);
    json_t *j = json_loads(out, 0, NULL);
    json_t *wi = json_object_get(j, "worldInfo");
    assert_string_equal(json_string_value(json_object_get(wi, "before")), "Moon lore.");
    /* the card's own book is there too ("Old glade."); the files' entries
     * are in their books */
    assert_non_null(strstr(json_string_value(json_object_get(wi, "after")), "Sky lore."));
    json_t *a = json_object_get(wi, "activated"), *e;
    size_t i;
    int seen = 0;
    json_array_foreach(a, i, e) {
        const char *b = json_string_value(json_object_get(e, "book"));
        const char *c = json_string_value(json_object_get(e, "content"));
        if (!strcmp(c, "Moon lore."))
            seen |= !strcmp(b, "moon-lore");
        if (!strcmp(c, "Sky lore."))
            seen |= !strcmp(b, "Sky") << 1;
    }
    assert_int_equal(seen, 3);
    /* the sticky entry would start at the chat's length (1) and last 2 */
    json_t *sticky = json_object_get(json_object_get(json_object_get(wi, "timedAfter"), "sticky"),
                                     "moon-lore.0");
    assert_non_null(sticky);
    assert_int_equal(json_integer_value(json_object_get(sticky, "start")), 1);
    assert_int_equal(json_integer_value(json_object_get(sticky, "end")), 3);
    /* nothing was written: the state file does not exist */
    snprintf(statef, sizeof statef, "%s/tavern/state/%s.json", home, id);
    FILE *f = fopen(statef, "r");
    assert_null(f);
    /* chained: the next turn (chat of 2, no moon) keeps the entry by sticky */
    char *st = NULL;
    json_t *timed = json_pack("{s:O}", "timed", json_object_get(wi, "timedAfter"));
    st = json_dumps(timed, 0);
    json_decref(timed);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tavern/state", home);
    mkdir(dir, 0700);
    cdsh_test_write_file(statef, st);
    free(st);
    json_decref(j);
    free(out);
    cdsh_test_write_file(chat, "[{\"role\":\"user\",\"name\":\"Ann\",\"text\":\"the moon\"},"
                               "{\"role\":\"assistant\",\"name\":\"Sera\",\"text\":\"yes\"}]");
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "preview", id, "--chat", chat,
                                        "--book", book, "--scan-depth", "1", "--seed", "1",
                                        "--json", NULL),
                     0);
    j = json_loads(out, 0, NULL);
    wi = json_object_get(j, "worldInfo");
    assert_string_equal(json_string_value(json_object_get(wi, "before")), "Moon lore.");
    json_decref(j);
    free(out);
    /* a book that is not one is refused, naming the file */
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "tavern", "preview", id, "--book", bad,
                                        "--json", NULL),
                     1);
    j = json_loads(out, 0, NULL);
    assert_false(json_is_true(json_object_get(j, "ok")));
    assert_non_null(strstr(json_string_value(json_object_get(j, "message")), "bad.json"));
    json_decref(j);
    free(out);
    free(id);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(preview_prints_channels_messages_budgets_and_log),
        cmocka_unit_test(preview_reads_sillytavern_jsonl_chats),
        cmocka_unit_test(preview_scans_the_note_when_asked_and_trims_to_the_context),
        cmocka_unit_test(preview_usage_and_unknown_card),
        cmocka_unit_test(preview_takes_world_info_settings_and_a_seed),
        cmocka_unit_test(preview_adds_book_files_and_reports_timed_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
