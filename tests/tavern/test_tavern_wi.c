/* test_tavern_wi.c — world-info activation, one test per rule of formats §3:
 * key matching, selective logics, positions and their order, recursion and
 * its flags, inclusion groups, probability, timed effects across turns and
 * swipes, budget overflow, min activations, source strategy, decorators. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "plugins/tavern/lorebook.h"
#include "plugins/tavern/regex.h"
#include "plugins/tavern/wi_activate.h"

/* A normalised book named `name` from a JSON array of partial entries. */
static json_t *book(const char *name, const char *entries)
{
    json_error_t je;
    json_t *arr = json_loads(entries, 0, &je);
    if (!arr)
        fail_msg("bad fixture: %s", je.text);
    json_t *raw = json_pack("{s:s, s:o}", "name", name, "entries", arr);
    cdsh_error err = {0};
    json_t *b = cdsh_tavern_lorebook_normalize_dup(raw, &err);
    if (!b)
        fail_msg("normalize: %s", err.message);
    json_decref(raw);
    return b;
}

typedef struct fx {
    cdsh_tavern_wi_input in;
    cdsh_tavern_wi_message msgs[16];
    json_t *books;
} fx;

static void fx_init(fx *f, json_t *bk)
{
    memset(f, 0, sizeof *f);
    cdsh_tavern_wi_settings_default(&f->in.settings);
    f->books = json_array();
    if (bk)
        json_array_append_new(f->books, bk);
    f->in.character_books = f->books;
    f->in.messages = f->msgs;
}

static void say(fx *f, const char *name, const char *text)
{
    f->msgs[f->in.n_messages++] = (cdsh_tavern_wi_message){name, text};
}

static json_t *run(fx *f)
{
    json_t *out = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_wi_activate(&f->in, &out, &err), 0);
    return out;
}

static void fx_free(fx *f)
{
    json_decref(f->books);
}

/* Comma-joined uids of the activated entries, sorted ascending. */
static char *fired(const json_t *out)
{
    static char buf[512];
    int ids[64], n = 0;
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(out, "activated"), i, a) {
        if (n < 64)
            ids[n++] = (int)json_integer_value(json_object_get(a, "uid"));
    }
    for (int x = 0; x < n; x++)
        for (int y = x + 1; y < n; y++)
            if (ids[y] < ids[x]) {
                int t = ids[x];
                ids[x] = ids[y];
                ids[y] = t;
            }
    buf[0] = 0;
    for (int x = 0; x < n; x++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%d", x ? "," : "", ids[x]);
    return buf;
}

static const char *log_reason(const json_t *out, int uid)
{
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(out, "log"), i, l) {
        if (json_integer_value(json_object_get(l, "uid")) == uid)
            return json_string_value(json_object_get(l, "reason"));
    }
    return "";
}

static void primary_keys_plain_case_whole_word_and_regex(void **state)
{
    (void)state;
    fx f;
    fx_init(&f,
            book("b",
                 "[{\"uid\":1,\"key\":[\"dragon\"],\"content\":\"D\"},"
                 "{\"uid\":2,\"key\":[\"Cat\"],\"caseSensitive\":true,\"content\":\"C\"},"
                 "{\"uid\":3,\"key\":[\"/ba+r\\\\d/i\"],\"content\":\"R\"},"
                 "{\"uid\":4,\"key\":[\"elf\"],\"matchWholeWords\":true,\"content\":\"E\"},"
                 "{\"uid\":5,\"key\":[\"red moon\"],\"matchWholeWords\":true,\"content\":\"M\"},"
                 "{\"uid\":6,\"key\":[\"sun\"],\"matchWholeWords\":true,\"content\":\"S\"}]"));
    say(&f, "Ann", "A DRAGON, a cat, BAAR7, and herself under the red moon; 太阳sun。");
    json_t *out = run(&f);
    /* 1 case-insensitive; 2 case-sensitive "Cat" ≠ "cat"; 3 regex with i;
     * 4 "elf" inside "herself" is not a whole word; 5 multi-word substring;
     * 6 CJK / punctuation neighbours are \W boundaries. */
    assert_string_equal(fired(out), "1,3,5,6");
    assert_string_equal(log_reason(out, 1), "primary key 'dragon'");
    assert_string_equal(log_reason(out, 4), "no primary key matched");
    json_decref(out);
    fx_free(&f);
}

static void global_case_sensitivity_and_include_names(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, book("b", "[{\"uid\":1,\"key\":[\"ann:\"],\"content\":\"N\"},"
                          "{\"uid\":2,\"key\":[\"Hello\"],\"content\":\"H\"}]"));
    say(&f, "Ann", "hello");
    f.in.settings.case_sensitive = true;
    json_t *out = run(&f);
    assert_string_equal(fired(out), "");
    json_decref(out);
    f.in.settings.case_sensitive = false;
    out = run(&f);
    assert_string_equal(fired(out), "1,2"); /* "Ann: hello" is scanned */
    json_decref(out);
    f.in.settings.include_names = false;
    out = run(&f);
    assert_string_equal(fired(out), "2");
    json_decref(out);
    fx_free(&f);
}

static void secondary_keys_follow_the_four_logics(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, book("b", "[{\"uid\":0,\"key\":[\"k\"],\"keysecondary\":[\"a\",\"z\"],"
                          "\"selectiveLogic\":0,\"content\":\"x\"},"
                          "{\"uid\":1,\"key\":[\"k\"],\"keysecondary\":[\"a\",\"z\"],"
                          "\"selectiveLogic\":1,\"content\":\"x\"},"
                          "{\"uid\":2,\"key\":[\"k\"],\"keysecondary\":[\"a\",\"z\"],"
                          "\"selectiveLogic\":2,\"content\":\"x\"},"
                          "{\"uid\":3,\"key\":[\"k\"],\"keysecondary\":[\"a\",\"z\"],"
                          "\"selectiveLogic\":3,\"content\":\"x\"},"
                          "{\"uid\":4,\"key\":[\"k\"],\"keysecondary\":[\"a\",\"b\"],"
                          "\"selectiveLogic\":3,\"content\":\"x\"},"
                          "{\"uid\":5,\"key\":[\"k\"],\"keysecondary\":[\"y\",\"z\"],"
                          "\"selectiveLogic\":2,\"content\":\"x\"},"
                          "{\"uid\":6,\"key\":[\"k\"],\"keysecondary\":[\"a\",\"b\"],"
                          "\"selectiveLogic\":1,\"content\":\"x\"},"
                          "{\"uid\":7,\"key\":[\"k\"],\"keysecondary\":[\"a\"],\"selective\":false,"
                          "\"selectiveLogic\":2,\"content\":\"x\"}]"));
    f.in.settings.recursive = false;
    say(&f, NULL, "k a b");
    json_t *out = run(&f);
    /* AND_ANY(a|z)=yes; NOT_ALL(a,z)=yes (z missing); NOT_ANY(a,z)=no;
     * AND_ALL(a,z)=no; AND_ALL(a,b)=yes; NOT_ANY(y,z)=yes; NOT_ALL(a,b)=no;
     * not selective: secondary ignored. */
    assert_string_equal(fired(out), "0,1,4,5,7");
    assert_string_equal(log_reason(out, 2),
                        "primary key 'k' matched but secondary keys failed NOT_ANY");
    json_decref(out);
    fx_free(&f);
}

static void positions_are_ordered_like_sillytavern(void **state)
{
    (void)state;
    fx f;
    fx_init(&f,
            book("b",
                 "[{\"uid\":1,\"constant\":true,\"order\":10,\"position\":0,\"content\":\"B10\"},"
                 "{\"uid\":2,\"constant\":true,\"order\":30,\"position\":0,\"content\":\"B30\"},"
                 "{\"uid\":3,\"constant\":true,\"order\":20,\"position\":1,\"content\":\"A20\"},"
                 "{\"uid\":4,\"constant\":true,\"order\":5,\"position\":2,\"content\":\"ANT\"},"
                 "{\"uid\":5,\"constant\":true,\"order\":5,\"position\":3,\"content\":\"ANB\"},"
                 "{\"uid\":6,\"constant\":true,\"order\":1,\"position\":5,\"content\":\"EMT\"},"
                 "{\"uid\":7,\"constant\":true,\"order\":2,\"position\":6,\"content\":\"EMB\"},"
                 "{\"uid\":8,\"constant\":true,\"order\":1,\"position\":4,\"depth\":2,\"role\":0,"
                 "\"content\":\"D2a\"},"
                 "{\"uid\":9,\"constant\":true,\"order\":9,\"position\":4,\"depth\":2,\"role\":0,"
                 "\"content\":\"D2b\"},"
                 "{\"uid\":10,\"constant\":true,\"order\":3,\"position\":4,\"depth\":2,\"role\":1,"
                 "\"content\":\"D2u\"},"
                 "{\"uid\":11,\"constant\":true,\"order\":3,\"position\":4,\"depth\":0,\"role\":2,"
                 "\"content\":\"D0\"},"
                 "{\"uid\":12,\"constant\":true,\"order\":3,\"position\":7,\"outletName\":\"o\","
                 "\"content\":\"O1\"},"
                 "{\"uid\":13,\"constant\":true,\"order\":4,\"position\":7,\"outletName\":\"o\","
                 "\"content\":\"O2\"},"
                 "{\"uid\":14,\"constant\":true,\"order\":50,\"position\":0,\"content\":\"\"}]"));
    json_t *out = run(&f);
    /* Ascending order: higher order ends up later (closer to the chat). */
    assert_string_equal(json_string_value(json_object_get(out, "before")), "B10\nB30");
    assert_string_equal(json_string_value(json_object_get(out, "after")), "A20");
    assert_string_equal(json_string_value(json_array_get(json_object_get(out, "anTop"), 0)), "ANT");
    assert_string_equal(json_string_value(json_array_get(json_object_get(out, "anBottom"), 0)),
                        "ANB");
    json_t *ex = json_object_get(out, "examples");
    assert_int_equal(json_array_size(ex), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ex, 0), "content")),
                        "EMT");
    assert_string_equal(json_string_value(json_object_get(json_array_get(ex, 0), "position")),
                        "before");
    assert_string_equal(json_string_value(json_object_get(json_array_get(ex, 1), "position")),
                        "after");
    json_t *d = json_object_get(out, "depth");
    assert_int_equal(json_array_size(d), 3);
    /* Groups appear in order-descending discovery: (2,sys) first. */
    json_t *g0 = json_array_get(d, 0);
    assert_int_equal(json_integer_value(json_object_get(g0, "depth")), 2);
    assert_int_equal(json_integer_value(json_object_get(g0, "role")), 0);
    assert_string_equal(json_string_value(json_object_get(g0, "content")), "D2a\nD2b");
    /* Outlets are pushed in the order-descending walk (SillyTavern 1.19). */
    assert_string_equal(json_string_value(json_object_get(json_object_get(out, "outlets"), "o")),
                        "O2\nO1");
    json_decref(out);
    fx_free(&f);
}

static void recursion_prevent_exclude_and_delay_levels(void **state)
{
    (void)state;
    fx f;
    fx_init(&f,
            book("b",
                 "[{\"uid\":1,\"key\":[\"start\"],\"content\":\"mentions alpha\"},"
                 "{\"uid\":2,\"key\":[\"alpha\"],\"content\":\"mentions beta\"},"
                 "{\"uid\":3,\"key\":[\"beta\"],\"content\":\"end\"},"
                 "{\"uid\":4,\"key\":[\"alpha\"],\"excludeRecursion\":true,\"content\":\"ex\"},"
                 "{\"uid\":5,\"key\":[\"start\"],\"preventRecursion\":true,\"content\":\"gamma\"},"
                 "{\"uid\":6,\"key\":[\"gamma\"],\"content\":\"never\"},"
                 "{\"uid\":7,\"key\":[\"start\"],\"delayUntilRecursion\":true,\"content\":\"d1\"},"
                 "{\"uid\":8,\"key\":[\"start\"],\"delayUntilRecursion\":2,\"content\":\"d2\"}]"));
    say(&f, NULL, "start");
    json_t *out = run(&f);
    assert_string_equal(fired(out), "1,2,3,5,7,8");
    assert_string_equal(log_reason(out, 4), "excluded from recursion");
    assert_string_equal(log_reason(out, 6), "no primary key matched");
    json_decref(out);
    f.in.settings.recursive = false;
    out = run(&f);
    /* Recursion off: delayed levels still open a RECURSION pass each, and
     * (as in SillyTavern) the recursion buffer is still filled for them,
     * while excludeRecursion only applies when recursion is on. */
    assert_string_equal(fired(out), "1,2,4,5,7,8");
    json_decref(out);
    f.in.settings.recursive = true;
    f.in.settings.max_recursion_steps = 1;
    out = run(&f);
    assert_string_equal(fired(out), "1,5");
    assert_string_equal(log_reason(out, 7), "delayed until recursion");
    json_decref(out);
    fx_free(&f);
}

static void inclusion_groups_override_scoring_prior_and_weights(void **state)
{
    (void)state;
    fx f;
    fx_init(&f,
            book("b", "[{\"uid\":1,\"key\":[\"x\"],\"group\":\"g\",\"order\":1,\"groupOverride\":"
                      "true,\"content\":\"1\"},"
                      "{\"uid\":2,\"key\":[\"x\"],\"group\":\"g\",\"order\":5,\"groupOverride\":"
                      "true,\"content\":\"2\"},"
                      "{\"uid\":3,\"key\":[\"x\"],\"group\":\"g\",\"order\":9,\"content\":\"3\"},"
                      "{\"uid\":4,\"key\":[\"x\",\"y\"],\"group\":\"s\",\"useGroupScoring\":true,"
                      "\"content\":\"4\"},"
                      "{\"uid\":5,\"key\":[\"x\"],\"group\":\"s\",\"useGroupScoring\":true,"
                      "\"content\":\"5\"}]"));
    f.in.settings.recursive = false;
    say(&f, NULL, "x y");
    json_t *out = run(&f);
    /* Override: highest order among overriding members; scoring: 2 keys beat 1. */
    assert_string_equal(fired(out), "2,4");
    assert_string_equal(log_reason(out, 5), "scored 1 < 2 in inclusion group 's'");
    json_decref(out);
    fx_free(&f);

    /* Weighted random under a fixed seed is reproducible; over seeds the
     * heavy member wins most of the time. */
    fx_init(
        &f,
        book("b",
             "[{\"uid\":1,\"key\":[\"x\"],\"group\":\"w\",\"groupWeight\":90,\"content\":\"1\"},"
             "{\"uid\":2,\"key\":[\"x\"],\"group\":\"w\",\"groupWeight\":10,\"content\":\"2\"}]"));
    say(&f, NULL, "x");
    int wins1 = 0;
    for (uint32_t s = 0; s < 200; s++) {
        f.in.seed = s;
        json_t *a = run(&f), *b = run(&f);
        assert_string_equal(fired(a), fired(b) == NULL ? "" : fired(b));
        char one[64];
        snprintf(one, sizeof one, "%s", fired(a));
        json_decref(b);
        b = run(&f);
        assert_string_equal(one, fired(b));
        assert_true(!strcmp(one, "1") || !strcmp(one, "2"));
        wins1 += !strcmp(one, "1");
        json_decref(a);
        json_decref(b);
    }
    assert_true(wins1 > 150 && wins1 < 200);
    fx_free(&f);
}

static void group_with_prior_activation_blocks_later_members(void **state)
{
    (void)state;
    fx f;
    fx_init(&f,
            book("b", "[{\"uid\":1,\"key\":[\"x\"],\"group\":\"g\",\"content\":\"mentions zed\"},"
                      "{\"uid\":2,\"key\":[\"zed\"],\"group\":\"g\",\"content\":\"2\"},"
                      "{\"uid\":3,\"key\":[\"zed\"],\"content\":\"3\"}]"));
    say(&f, NULL, "x");
    json_t *out = run(&f);
    assert_string_equal(fired(out), "1,3");
    assert_string_equal(log_reason(out, 2), "inclusion group 'g' already activated");
    json_decref(out);
    fx_free(&f);
}

/* SillyTavern blocks a group for later loops only when an earlier entry's
 * whole group field is that name (x.group === key): a winner of "g1, g2"
 * does not keep a "g2" member from firing on recursion. */
static void prior_activation_compares_the_whole_group_field(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, book("b", "[{\"uid\":0,\"key\":[\"moon\"],\"group\":\"g1, g2\","
                          "\"groupOverride\":true,\"content\":\"A\"},"
                          "{\"uid\":1,\"key\":[\"moon\"],\"group\":\"g2\",\"content\":\"B\"}]"));
    say(&f, NULL, "moon");
    json_t *out = run(&f);
    /* loop 1: A wins g2 by override; loop 2 (recursion): B alone in g2 */
    assert_string_equal(fired(out), "0,1");
    json_decref(out);
    f.in.settings.recursive = false;
    out = run(&f);
    assert_string_equal(fired(out), "0");
    json_decref(out);
    fx_free(&f);
}

static void probability_rolls_are_seeded(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, book("b", "[{\"uid\":1,\"key\":[\"x\"],\"probability\":0,\"content\":\"never\"},"
                          "{\"uid\":2,\"key\":[\"x\"],\"probability\":50,\"content\":\"half\"},"
                          "{\"uid\":3,\"key\":[\"x\"],\"probability\":0,\"useProbability\":false,"
                          "\"content\":\"always\"}]"));
    say(&f, NULL, "x");
    int half = 0;
    for (uint32_t s = 0; s < 100; s++) {
        f.in.seed = s;
        json_t *out = run(&f);
        const char *ids = fired(out);
        assert_true(!strcmp(ids, "3") || !strcmp(ids, "2,3"));
        half += !strcmp(ids, "2,3");
        json_decref(out);
    }
    assert_true(half > 25 && half < 75);
    f.in.seed = 7;
    json_t *a = run(&f);
    char first[32];
    snprintf(first, sizeof first, "%s", fired(a));
    json_t *b = run(&f);
    assert_string_equal(first, fired(b));
    assert_true(strstr(log_reason(a, 1), "failed probability 0%") != NULL);
    json_decref(a);
    json_decref(b);
    fx_free(&f);
}

static void sticky_cooldown_and_delay_across_turns_and_swipes(void **state)
{
    (void)state;
    fx f;
    fx_init(&f,
            book("b", "[{\"uid\":1,\"key\":[\"go\"],\"sticky\":2,\"cooldown\":2,\"content\":\"S\"},"
                      "{\"uid\":2,\"key\":[\"go\"],\"delay\":3,\"content\":\"D\"}]"));
    f.in.settings.recursive = false;
    json_t *timed = json_object();
    f.in.timed = timed;
    say(&f, NULL, "go");
    json_t *out = run(&f); /* chat length 1: sticky starts, delay holds uid 2 */
    assert_string_equal(fired(out), "1");
    assert_true(strstr(log_reason(out, 2), "suppressed by delay") != NULL);
    json_t *st = json_object_get(json_object_get(timed, "sticky"), "b.1");
    assert_non_null(st);
    assert_int_equal(json_integer_value(json_object_get(st, "start")), 1);
    assert_int_equal(json_integer_value(json_object_get(st, "end")), 3);
    json_decref(out);
    /* A swipe (same chat length) does not consume the effect: it is dropped
     * and re-created by the new activation. */
    out = run(&f);
    assert_string_equal(fired(out), "1");
    json_decref(out);
    /* Next turn without the key: sticky keeps it active. */
    say(&f, NULL, "nothing");
    out = run(&f);
    assert_string_equal(fired(out), "1");
    assert_string_equal(log_reason(out, 1), "sticky");
    json_decref(out);
    /* Chat length 3 = end: sticky expires, protected cooldown starts. */
    say(&f, NULL, "go");
    out = run(&f);
    assert_string_equal(fired(out), "2"); /* delay 3 reached; uid 1 cooling down */
    assert_string_equal(log_reason(out, 1), "suppressed by cooldown");
    json_t *cd = json_object_get(json_object_get(timed, "cooldown"), "b.1");
    assert_true(json_is_true(json_object_get(cd, "protected")));
    json_decref(out);
    /* Dry run: nothing written. */
    char *before = json_dumps(timed, JSON_SORT_KEYS);
    say(&f, NULL, "go");
    f.in.dry_run = true;
    out = run(&f);
    char *after = json_dumps(timed, JSON_SORT_KEYS);
    assert_string_equal(before, after);
    free(before);
    free(after);
    json_decref(out);
    f.in.dry_run = false;
    say(&f, NULL, "go"); /* length 5 = cooldown end: active again */
    out = run(&f);
    assert_string_equal(fired(out), "1,2");
    json_decref(out);
    json_decref(timed);
    fx_free(&f);
}

static void budget_overflow_stops_and_ignore_budget_passes(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, book("b", "[{\"uid\":1,\"key\":[\"x\"],\"order\":30,\"content\":"
                          "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"},"
                          "{\"uid\":2,\"key\":[\"x\"],\"order\":20,\"content\":"
                          "\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\"},"
                          "{\"uid\":3,\"key\":[\"x\"],\"order\":10,\"ignoreBudget\":true,"
                          "\"content\":\"cccccccccccccccccccccccccccccccccccccccccccccccccc\"},"
                          "{\"uid\":4,\"key\":[\"x\"],\"order\":5,\"content\":\"dddd\"}]"));
    f.in.settings.recursive = false;
    f.in.settings.token_budget = 20; /* one 51-char entry ≈ 16 tokens */
    say(&f, NULL, "x");
    json_t *out = run(&f);
    assert_string_equal(fired(out), "1,3");
    assert_true(json_is_true(json_object_get(out, "overflow")));
    assert_int_equal(json_array_size(json_object_get(out, "truncated")), 2);
    assert_string_equal(log_reason(out, 2), "budget overflow (20 tokens)");
    json_decref(out);
    /* Percent path with cap. */
    f.in.settings.token_budget = 0;
    f.in.settings.context_percent = 25;
    f.in.settings.max_context = 1000;
    f.in.settings.budget_cap = 100;
    out = run(&f);
    assert_int_equal(json_integer_value(json_object_get(out, "budget")), 100);
    assert_string_equal(fired(out), "1,2,3,4");
    json_decref(out);
    f.in.settings.budget_cap = 0;
    out = run(&f);
    assert_int_equal(json_integer_value(json_object_get(out, "budget")), 250);
    json_decref(out);
    fx_free(&f);
}

static void min_activations_skew_the_scan_depth(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, book("b", "[{\"uid\":1,\"key\":[\"old\"],\"content\":\"O\"}]"));
    f.in.settings.recursive = false;
    f.in.settings.scan_depth = 1;
    say(&f, NULL, "old");
    say(&f, NULL, "mid");
    say(&f, NULL, "new");
    json_t *out = run(&f);
    assert_string_equal(fired(out), "");
    json_decref(out);
    f.in.settings.min_activations = 1;
    out = run(&f);
    assert_string_equal(fired(out), "1");
    assert_int_equal(json_integer_value(json_object_get(out, "loops")), 3);
    json_decref(out);
    /* The depth may grow while it is not above the maximum: 1 → 2, then stop. */
    f.in.settings.min_activations_depth_max = 1;
    out = run(&f);
    assert_string_equal(fired(out), "");
    json_decref(out);
    fx_free(&f);
}

/* An entry's scanDepth 0 scans nothing at all in ST (WorldInfoBuffer.get
 * returns '' for a depth at or below its start): not the chat, not the card
 * fields its match flags select, not the recursion buffer. Found by the ST
 * differential (e2e/st_wi). */
static void entry_scan_depth_zero_scans_nothing(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, book("b", "[{\"uid\":1,\"key\":[\"seoul\"],\"content\":\"S\",\"scanDepth\":0,"
                          "\"matchCharacterDescription\":true},"
                          "{\"uid\":2,\"key\":[\"seoul\"],\"content\":\"T\","
                          "\"matchCharacterDescription\":true},"
                          "{\"uid\":3,\"key\":[\"tower\"],\"content\":\"seoul\"}]"));
    json_t *scan = json_pack("{s:s}", "characterDescription", "born in seoul");
    f.in.scan_data = scan;
    say(&f, NULL, "a tower of seoul");
    json_t *out = run(&f);
    assert_string_equal(fired(out), "2,3"); /* 1 sees neither chat, card nor recursion */
    json_decref(out);
    json_decref(scan);
    fx_free(&f);
}

static void strategy_orders_character_and_global_books(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, book("char", "[{\"uid\":1,\"key\":[\"x\"],\"order\":1,\"content\":"
                             "\"cccccccccccccccccccccccccccccccccccccccc\"}]"));
    json_t *globals = json_array();
    json_array_append_new(globals,
                          book("glob", "[{\"uid\":1,\"key\":[\"x\"],\"order\":99,\"content\":"
                                       "\"gggggggggggggggggggggggggggggggggggggggg\"}]"));
    f.in.global_books = globals;
    f.in.settings.token_budget = 16; /* only the first candidate fits */
    say(&f, NULL, "x");
    f.in.settings.character_strategy = CDSH_TAVERN_WI_CHARACTER_FIRST;
    json_t *out = run(&f);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(out, "activated"), 0), "book")),
                        "char");
    json_decref(out);
    f.in.settings.character_strategy = CDSH_TAVERN_WI_GLOBAL_FIRST;
    out = run(&f);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(out, "activated"), 0), "book")),
                        "glob");
    json_decref(out);
    f.in.settings.character_strategy = CDSH_TAVERN_WI_EVENLY; /* merged by order */
    out = run(&f);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(out, "activated"), 0), "book")),
                        "glob");
    json_decref(out);
    /* The same book name is never loaded twice. */
    json_array_append_new(f.books,
                          book("glob", "[{\"uid\":5,\"constant\":true,\"content\":\"dup\"}]"));
    f.in.settings.token_budget = 0;
    out = run(&f);
    assert_int_equal(json_array_size(json_object_get(out, "log")), 2);
    json_decref(out);
    json_decref(globals);
    fx_free(&f);
}

static void decorators_depth_zero_inject_and_macros_in_keys(void **state)
{
    (void)state;
    fx f;
    fx_init(&f,
            book("b", "[{\"uid\":1,\"content\":\"@@activate\\nforced on\"},"
                      "{\"uid\":2,\"constant\":true,\"content\":\"@@dont_activate\\nnope\"},"
                      "{\"uid\":3,\"key\":[\"{{char}}\"],\"content\":\"about {{char}}\"},"
                      "{\"uid\":4,\"key\":[\"note\"],\"content\":\"from inject\"},"
                      "{\"uid\":5,\"key\":[\"hidden\"],\"scanDepth\":0,\"content\":\"no\"},"
                      "{\"uid\":6,\"key\":[\"note\"],\"scanDepth\":0,\"content\":\"no\"}]"));
    cdsh_tavern_macro_env env = {.chr = "Seraphina", .user = "Ann"};
    f.in.macros = &env;
    f.in.settings.recursive = false;
    const char *inject[] = {"a note from the author"};
    f.in.inject = inject;
    f.in.n_inject = 1;
    say(&f, NULL, "hidden Seraphina");
    json_t *out = run(&f);
    /* 4 matches the author's note in the scan; at scanDepth 0 (5, 6) ST scans
     * nothing at all, the note included. */
    assert_string_equal(fired(out), "1,3,4");
    json_t *act = json_object_get(out, "activated");
    size_t i;
    json_t *a;
    json_array_foreach(act, i, a) {
        if (json_integer_value(json_object_get(a, "uid")) == 1)
            assert_string_equal(json_string_value(json_object_get(a, "content")), "forced on");
        if (json_integer_value(json_object_get(a, "uid")) == 3)
            assert_string_equal(json_string_value(json_object_get(a, "content")),
                                "about Seraphina");
    }
    assert_string_equal(log_reason(out, 2), "suppressed by @@dont_activate");
    json_decref(out);
    fx_free(&f);
}

static void world_info_regex_placement_rewrites_contents(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, book("b", "[{\"uid\":1,\"constant\":true,\"content\":\"the Dragon\"},"
                          "{\"uid\":2,\"constant\":true,\"position\":4,\"depth\":1,\"content\":"
                          "\"deep Dragon\"}]"));
    json_t *scripts = json_loads("[{\"scriptName\":\"wi\",\"findRegex\":\"/dragon/gi\","
                                 "\"replaceString\":\"wyrm\",\"placement\":[5],\"maxDepth\":0}]",
                                 0, NULL);
    cdsh_error err = {0};
    json_t *rules = cdsh_tavern_regex_rules_from_st_dup(scripts, CDSH_TAVERN_REGEX_USER, &err);
    assert_non_null(rules);
    cdsh_tavern_rxset *set = NULL;
    assert_int_equal(cdsh_tavern_rxset_new(rules, &set, &err), 0);
    f.in.regex = set;
    json_t *out = run(&f);
    /* No depth for position 0; depth 1 exceeds maxDepth 0 for the @depth entry. */
    assert_string_equal(json_string_value(json_object_get(out, "before")), "the wyrm");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(out, "depth"), 0), "content")),
                        "deep Dragon");
    json_decref(out);
    cdsh_tavern_rxset_free(set);
    json_decref(rules);
    json_decref(scripts);
    fx_free(&f);
}

static void bad_arguments_and_bad_regex_keys(void **state)
{
    (void)state;
    json_t *out = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_wi_activate(NULL, &out, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_ARGS");
    fx f;
    fx_init(&f, book("b", "[{\"uid\":1,\"key\":[\"/(unclosed/\"],\"content\":\"x\"},"
                          "{\"uid\":2,\"key\":[\"/(a+)+$/\"],\"content\":\"y\"}]"));
    say(&f, NULL, "(unclosed/ aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!");
    out = run(&f);
    /* A bad regex never matches; a catastrophic one times out and does not match. */
    assert_string_equal(fired(out), "");
    json_decref(out);
    fx_free(&f);
}

/* Generation-type triggers and SillyTavern's exact decorators. */
static void triggers_and_strict_decorators(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, book("b", "[{\"uid\":1,\"constant\":true,\"triggers\":[\"continue\"],"
                          "\"content\":\"on continue\"},"
                          "{\"uid\":2,\"constant\":true,\"triggers\":[],\"content\":\"always\"},"
                          "{\"uid\":3,\"content\":\"@@activate \\nspaced\"},"
                          "{\"uid\":4,\"content\":\"@@activate\\r\\ncrlf\"},"
                          "{\"uid\":5,\"content\":\"@@activate\\nexact\"},"
                          "{\"uid\":6,\"constant\":true,\"content\":\"@@dont_activate \\nstays\"},"
                          "{\"uid\":7,\"constant\":true,\"content\":\"@@odd\"}]"));
    say(&f, NULL, "hello");
    json_t *out = run(&f);
    assert_string_equal(fired(out), "2,5,6,7");
    assert_non_null(strstr(log_reason(out, 1), "generation type"));
    json_t *act = json_object_get(out, "activated");
    size_t i;
    json_t *a;
    json_array_foreach(act, i, a) /* decorators only: the content is kept whole */
        if (json_integer_value(json_object_get(a, "uid")) == 7)
            assert_string_equal(json_string_value(json_object_get(a, "content")), "@@odd");
    json_decref(out);
    f.in.generation_type = "continue";
    out = run(&f);
    assert_string_equal(fired(out), "1,2,5,6,7");
    json_decref(out);
    fx_free(&f);
}

/* The log names the key text that matched: a key whose macros draw anew on
 * every use ({{random}}) is named as drawn when it hit, never as an earlier
 * draw the chat does not hold; over 40 seeds both draws occur. */
static void log_names_the_key_text_that_matched(void **state)
{
    (void)state;
    int hits = 0, misses = 0;
    for (uint32_t seed = 1; seed <= 40; seed++) {
        fx f;
        fx_init(&f, book("b", "[{\"uid\":1,\"key\":[\"{{random::dragon::unicorn}}\"],"
                              "\"content\":\"U\"},"
                              "{\"uid\":2,\"key\":[\"griffin\",\"{{random::unicorn::dragon}}\","
                              "\"unicorn\"],\"content\":\"V\"}]"));
        cdsh_tavern_macro_env env = {.chr = "Seraphina", .user = "Ann", .seed = seed};
        f.in.macros = &env;
        f.in.settings.recursive = false;
        say(&f, "Ann", "the unicorn sleeps");
        json_t *out = run(&f);
        const char *r1 = log_reason(out, 1);
        if (strstr(fired(out), "1")) {
            assert_string_equal(r1, "primary key 'unicorn'");
            hits++;
        } else {
            assert_string_equal(r1, "no primary key matched");
            misses++;
        }
        assert_string_equal(log_reason(out, 2), "primary key 'unicorn'");
        json_decref(out);
        fx_free(&f);
    }
    assert_true(hits > 0 && misses > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(primary_keys_plain_case_whole_word_and_regex),
        cmocka_unit_test(global_case_sensitivity_and_include_names),
        cmocka_unit_test(secondary_keys_follow_the_four_logics),
        cmocka_unit_test(positions_are_ordered_like_sillytavern),
        cmocka_unit_test(recursion_prevent_exclude_and_delay_levels),
        cmocka_unit_test(inclusion_groups_override_scoring_prior_and_weights),
        cmocka_unit_test(group_with_prior_activation_blocks_later_members),
        cmocka_unit_test(prior_activation_compares_the_whole_group_field),
        cmocka_unit_test(probability_rolls_are_seeded),
        cmocka_unit_test(sticky_cooldown_and_delay_across_turns_and_swipes),
        cmocka_unit_test(budget_overflow_stops_and_ignore_budget_passes),
        cmocka_unit_test(min_activations_skew_the_scan_depth),
        cmocka_unit_test(entry_scan_depth_zero_scans_nothing),
        cmocka_unit_test(strategy_orders_character_and_global_books),
        cmocka_unit_test(decorators_depth_zero_inject_and_macros_in_keys),
        cmocka_unit_test(world_info_regex_placement_rewrites_contents),
        cmocka_unit_test(bad_arguments_and_bad_regex_keys),
        cmocka_unit_test(triggers_and_strict_decorators),
        cmocka_unit_test(log_names_the_key_text_that_matched),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
