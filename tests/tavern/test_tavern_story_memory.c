/* test_tavern_story_memory.c — memory entries and world state of a story:
 * BM25 search with CJK bigrams and decay, dedupe against active entries,
 * summaries only from a normal stop (liketavern §16 robustBoundaries),
 * archived sources reachable from summaries, undo expanding summaries, and
 * world deltas with keys and expiry. */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "plugins/tavern/memory.h"
#include "plugins/tavern/story.h"
#include "plugins/tavern/worldstate.h"

typedef struct fx {
    char *home, *path;
    cdsh_tavern_story *s;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    assert_true(asprintf(&f->path, "%s/m.db", f->home) > 0);
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_story_create(f->path, "story-m", "card", "s-A", NULL, &err), 0);
    assert_int_equal(cdsh_tavern_story_open(f->path, &f->s, &err), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cdsh_tavern_story_free(f->s);
    cdsh_test_home_free(f->home);
    free(f->path);
    free(f);
    return 0;
}

static char *write(cdsh_tavern_story *s, const char *floor, const char *body, const char *key)
{
    cdsh_error err = {0};
    json_t *keys = key ? json_pack("[s]", key) : NULL;
    json_t *res = NULL;
    assert_int_equal(cdsh_tavern_memory_write(s, floor, body, NULL, keys, NULL, true, &res, &err),
                     0);
    assert_true(json_is_true(json_object_get(res, "ok")));
    char *id = strdup(json_string_value(json_object_get(res, "id")));
    json_decref(res);
    json_decref(keys);
    return id;
}

static void tokens_split_words_and_cjk_bigrams(void **state)
{
    (void)state;
    char *t = cdsh__tavern_memory_tokens_dup("Elara 在森林里, the Forest!");
    assert_string_equal(t, "elara 在森 森林 林里 the forest ");
    free(t);
    t = cdsh__tavern_memory_tokens_dup("猫");
    assert_string_equal(t, "猫");
    free(t);
}

static void search_ranks_by_bm25_and_key_weight(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    char *a = write(f->s, NULL, "Seraphina guards the glade at night.", NULL);
    char *b = write(f->s, NULL, "The merchant sells apples in town.", "Seraphina");
    char *c = write(f->s, NULL, "银月森林里有一座古老的神殿。", NULL);
    json_t *hits = NULL;
    assert_int_equal(cdsh_tavern_memory_search(f->s, "seraphina", 0, NULL, 0, &hits, &err), 0);
    assert_int_equal(json_array_size(hits), 2);
    /* the key hit counts double */
    assert_string_equal(json_string_value(json_object_get(json_array_get(hits, 0), "id")), b);
    json_decref(hits);
    assert_int_equal(cdsh_tavern_memory_search(f->s, "古老神殿", 0, NULL, 0, &hits, &err), 0);
    assert_int_equal(json_array_size(hits), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(hits, 0), "id")), c);
    json_decref(hits);
    assert_int_equal(cdsh_tavern_memory_search(f->s, "dragon", 0, NULL, 0, &hits, &err), 0);
    assert_int_equal(json_array_size(hits), 0);
    json_decref(hits);
    free(a);
    free(b);
    free(c);
}

static void decay_prefers_recent_entries(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    char *a = write(f->s, NULL, "the lantern is lit", NULL);
    char *b = write(f->s, NULL, "a storm blew the lantern out over the bay", NULL);
    /* age entry a by a year */
    json_t *v = NULL;
    assert_int_equal(cdsh_tavern_story_load(f->s, "memory", a, &v, &err), 0);
    json_object_set_new(v, "updated", json_string("2020-01-01T00:00:00.000Z"));
    assert_int_equal(cdsh_tavern_story_put(f->s, NULL, "memory", a, v, NULL, &err), 0);
    json_decref(v);
    json_t *hits = NULL;
    assert_int_equal(cdsh_tavern_memory_search(f->s, "lantern", 0, NULL, 0, &hits, &err), 0);
    assert_string_equal(json_string_value(json_object_get(json_array_get(hits, 0), "id")), b);
    double s0 = json_real_value(json_object_get(json_array_get(hits, 0), "score"));
    double s1 = json_real_value(json_object_get(json_array_get(hits, 1), "score"));
    assert_true(s1 < s0 / 100);
    json_decref(hits);
    free(a);
    free(b);
}

static void dedupe_finds_similar_active_entries(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    char *a = write(f->s, NULL, "The north gate is locked at dusk.", NULL);
    json_t *res = NULL;
    assert_int_equal(cdsh_tavern_memory_write(f->s, NULL, "The north gate is locked at dusk.", NULL,
                                              NULL, NULL, true, &res, &err),
                     0);
    assert_false(json_is_true(json_object_get(res, "ok")));
    assert_string_equal(json_string_value(json_object_get(res, "status")), "similar-found");
    assert_string_equal(json_string_value(json_object_get(res, "similarId")), a);
    json_decref(res);
    char *b = write(f->s, NULL, "A dragon sleeps under the mountain.", NULL);
    free(a);
    free(b);
}

static void summary_only_from_a_normal_stop(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    cdsh_tavern_memory_cfg cfg = cdsh_tavern_memory_cfg_default();
    cfg.max_entries = 2;
    cfg.compress_batch = 2;
    char *a = write(f->s, NULL, "Elara found a silver key.", NULL);
    char *b = write(f->s, NULL, "The silver key opens the crypt.", NULL);
    json_t *res = NULL;
    assert_int_equal(cdsh_tavern_memory_write(f->s, NULL, "Bram owes Elara ten coins.", NULL, NULL,
                                              &cfg, true, &res, &err),
                     0);
    assert_true(json_is_true(json_object_get(res, "compressScheduled")));
    json_decref(res);
    assert_true(cdsh_tavern_memory_pending(f->s));
    json_t *plan = NULL;
    assert_int_equal(cdsh_tavern_memory_compress_plan(f->s, &cfg, &plan, &err), 0);
    assert_non_null(plan);
    const char *bad[][2] = {
        {"length", "Elara's key"}, {NULL, "Elara's key"}, {"tool_calls", "x"}, {"stop", "   "}};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(
            cdsh_tavern_memory_compress_commit(f->s, plan, bad[i][0], bad[i][1], false, NULL, &err),
            CDSH_EPROTO);
        assert_string_equal(err.code, "SUMMARY_REJECTED");
    }
    assert_int_equal(
        cdsh_tavern_memory_compress_commit(f->s, plan, "stop", "text", true, NULL, &err),
        CDSH_EPROTO);
    json_t *arch = NULL;
    assert_int_equal(cdsh_tavern_memory_list(f->s, true, &arch, &err), 0);
    assert_int_equal(json_array_size(arch), 0);
    json_decref(arch);
    assert_true(cdsh_tavern_memory_pending(f->s));
    char *sid = NULL;
    assert_int_equal(cdsh_tavern_memory_compress_commit(f->s, plan, "stop",
                                                        "Elara's silver key opens the crypt.",
                                                        false, &sid, &err),
                     0);
    assert_false(cdsh_tavern_memory_pending(f->s));
    assert_int_equal(cdsh_tavern_memory_list(f->s, true, &arch, &err), 0);
    assert_int_equal(json_array_size(arch), 2);
    json_decref(arch);
    /* archived sources stay searchable through the active summary */
    json_t *hits = NULL;
    assert_int_equal(cdsh_tavern_memory_search(f->s, "crypt", 10, NULL, 0, &hits, &err), 0);
    assert_int_equal(json_array_size(hits), 2);
    json_decref(hits);
    /* but dedupe only looks at active entries */
    json_t *sim = NULL;
    assert_int_equal(
        cdsh_tavern_memory_similar(f->s, "Elara found a silver key.", 0.75, &sim, &err), 0);
    assert_int_equal(json_array_size(sim), 0);
    json_decref(sim);
    /* a stale plan is abandoned */
    assert_int_equal(
        cdsh_tavern_memory_compress_commit(f->s, plan, "stop", "again", false, NULL, &err),
        CDSH_EBUSY);
    assert_string_equal(err.code, "SUMMARY_STALE");
    json_decref(plan);
    free(sid);
    free(a);
    free(b);
}

static void undo_expands_summaries_before_undoing_facts(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_story_floor_begin(f->s, "s-A", 1, &err), 0);
    char *a = write(f->s, "s-A#t1", "The tower fell in the storm.", NULL);
    assert_int_equal(cdsh_tavern_story_floor_commit(f->s, "s-A#t1", &err), 0);
    char *b = write(f->s, NULL, "The queen rides north.", NULL);
    json_t *pend = json_pack("{s:b}", "compress", 1);
    assert_int_equal(
        cdsh_tavern_story_put(f->s, NULL, "doc", CDSH_TAVERN_PENDING_DOC, pend, NULL, &err), 0);
    json_decref(pend);
    json_t *plan = NULL;
    assert_int_equal(cdsh_tavern_memory_compress_plan(f->s, NULL, &plan, &err), 0);
    assert_int_equal(cdsh_tavern_memory_compress_commit(
                         f->s, plan, "stop", "Tower fell; queen north.", false, NULL, &err),
                     0);
    json_decref(plan);
    const char *names[] = {"s-A#t1"};
    assert_int_equal(cdsh_tavern_story_undo(f->s, names, 1, NULL, &err), 0);
    json_t *active = NULL;
    assert_int_equal(cdsh_tavern_memory_list(f->s, false, &active, &err), 0);
    assert_int_equal(json_array_size(active), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(active, 0), "id")), b);
    json_decref(active);
    json_t *hits = NULL;
    assert_int_equal(cdsh_tavern_memory_search(f->s, "tower", 10, NULL, 0, &hits, &err), 0);
    assert_int_equal(json_array_size(hits), 0);
    json_decref(hits);
    free(a);
    free(b);
}

static void update_merges_and_missing_is_not_found(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    char *a = write(f->s, NULL, "Bram is a smith.", "Bram");
    json_t *res = NULL, *keys = json_pack("[s,s]", "Bram", "smithy");
    assert_int_equal(cdsh_tavern_memory_update(f->s, NULL, a, NULL, NULL, keys, true, &res, &err),
                     0);
    json_decref(res);
    json_t *v = NULL;
    assert_int_equal(cdsh_tavern_story_load(f->s, "memory", a, &v, &err), 0);
    assert_int_equal(json_array_size(json_object_get(v, "keys")), 2);
    json_decref(v);
    assert_int_equal(
        cdsh_tavern_memory_update(f->s, NULL, "m-none", "x", NULL, NULL, true, &res, &err),
        CDSH_ENOTFOUND);
    assert_string_equal(err.code, "not-found");
    json_decref(keys);
    free(a);
}

static void world_deltas_validate_expire_and_render(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    json_t *d = NULL;
    assert_int_equal(
        cdsh_tavern_world_add(f->s, NULL, "update", "x", NULL, NULL, -1, NULL, NULL, &d, &err),
        CDSH_EINVAL);
    assert_int_equal(
        cdsh_tavern_world_add(f->s, NULL, "add", "x", NULL, NULL, -1, "2001-01-01", NULL, &d, &err),
        CDSH_EINVAL);
    assert_int_equal(
        cdsh_tavern_world_add(f->s, NULL, "add", "x", NULL, NULL, -1, "tomorrow", NULL, &d, &err),
        CDSH_EINVAL);
    assert_int_equal(cdsh_tavern_world_add(f->s, NULL, "add", "It is raining.", NULL, NULL, -1,
                                           NULL, NULL, &d, &err),
                     0);
    const char *id = json_string_value(json_object_get(d, "id"));
    json_t *d2 = NULL, *d3 = NULL, *keys = json_pack("[s]", "castle");
    assert_int_equal(cdsh_tavern_world_add(f->s, NULL, "update", "The castle gate is open.", id,
                                           keys, -1, "2999-01-01", NULL, &d2, &err),
                     0);
    assert_int_equal(cdsh_tavern_world_add(f->s, NULL, "invalidate", "Rain stopped.", id, NULL, -1,
                                           NULL, NULL, &d3, &err),
                     0);
    char *text = NULL;
    assert_int_equal(cdsh_tavern_world_render(f->s, "we walk to town", 0, 0, &text, &err), 0);
    assert_string_equal(text, "It is raining.\n【当前状态·已失效】Rain stopped.\n");
    free(text);
    assert_int_equal(cdsh_tavern_world_render(f->s, "near the CASTLE", 0, 0, &text, &err), 0);
    assert_non_null(strstr(text, "【当前状态·更新】The castle gate is open."));
    free(text);
    /* after the expiry date the delta is hidden */
    json_t *list = NULL;
    int64_t far = 0;
    assert_int_equal(cdsh_clock_parse_iso8601("3000-01-01T00:00:00Z", &far, NULL), 0);
    assert_int_equal(cdsh_tavern_world_list(f->s, false, far, &list, &err), 0);
    assert_int_equal(json_array_size(list), 2);
    json_decref(list);
    assert_int_equal(cdsh_tavern_world_revoke(f->s, NULL, id, &err), 0);
    assert_int_equal(cdsh_tavern_world_list(f->s, false, 0, &list, &err), 0);
    assert_int_equal(json_array_size(list), 2);
    json_decref(list);
    json_t *entries = NULL;
    assert_int_equal(cdsh_tavern_world_entries(f->s, 0, &entries, &err), 0);
    assert_int_equal(json_array_size(entries), 2);
    assert_true(json_is_false(json_object_get(json_array_get(entries, 0), "constant")));
    json_decref(entries);
    assert_int_equal(cdsh_tavern_world_revoke(f->s, NULL, "d-none", &err), CDSH_ENOTFOUND);
    json_decref(keys);
    json_decref(d);
    json_decref(d2);
    json_decref(d3);
}

/* ---- the story's change listeners ------------------------------------------ */

typedef struct seen {
    int changed, undoing, deleted;
    char last_kind[32], last_key[64];
} seen;
static seen g_seen;

static int count_changed(struct sqlite3 *db, const char *kind, const char *key, const char *canon,
                         cdsh_error *err)
{
    (void)db, (void)err;
    g_seen.changed++;
    g_seen.deleted += canon == NULL;
    snprintf(g_seen.last_kind, sizeof g_seen.last_kind, "%s", kind);
    snprintf(g_seen.last_key, sizeof g_seen.last_key, "%s", key);
    return 0;
}

static int count_undoing(struct sqlite3 *db, const char *kind, const char *key, cdsh_error *err)
{
    (void)db, (void)kind, (void)key, (void)err;
    g_seen.undoing++;
    return 0;
}

static const cdsh__tavern_story_listener COUNTER = {count_changed, count_undoing};

static void story_changes_reach_listeners_and_the_memory_index(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    assert_int_equal(cdsh__tavern_story_listen(&COUNTER), 0);
    assert_int_equal(cdsh__tavern_story_listen(&COUNTER), 0); /* twice is once */
    memset(&g_seen, 0, sizeof g_seen);
    assert_int_equal(cdsh_tavern_story_floor_begin(f->s, "s-A", 1, &err), 0);
    json_t *v = json_pack("{s:s}", "x", "y");
    assert_int_equal(
        cdsh_tavern_story_put(f->s, "s-A#t1", CDSH_TAVERN_KIND_DOC, "notes.json", v, NULL, &err),
        0);
    json_decref(v);
    assert_int_equal(g_seen.changed, 1);
    assert_string_equal(g_seen.last_kind, "doc");
    assert_string_equal(g_seen.last_key, "notes.json");
    /* a memory object written through story.h alone is searchable: memory.c
     * indexes it from its own listener (attached in main) */
    v = json_pack("{s:s,s:[],s:[],s:s,s:s,s:n,s:b}", "body", "The ferryman hides a silver key.",
                  "tags", "keys", "created", "2026-01-01T00:00:00.000Z", "updated",
                  "2026-01-01T00:00:00.000Z", "sourceRange", "archived", 0);
    assert_int_equal(
        cdsh_tavern_story_put(f->s, "s-A#t1", CDSH_TAVERN_KIND_MEMORY, "m-ferry", v, NULL, &err),
        0);
    json_decref(v);
    assert_int_equal(g_seen.changed, 2);
    cdsh_tavern_memory_cfg cfg = cdsh_tavern_memory_cfg_default();
    json_t *hits = NULL;
    assert_int_equal(cdsh_tavern_memory_search(f->s, "ferryman", 5, &cfg, 0, &hits, &err), 0);
    assert_int_equal(json_array_size(hits), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(hits, 0), "id")),
                        "m-ferry");
    json_decref(hits);
    assert_int_equal(cdsh_tavern_story_floor_commit(f->s, "s-A#t1", &err), 0);
    /* undo: told about both records first, then each restore is a change */
    const char *floors[] = {"s-A#t1"};
    assert_int_equal(cdsh_tavern_story_undo(f->s, floors, 1, NULL, &err), 0);
    assert_int_equal(g_seen.undoing, 2);
    assert_int_equal(g_seen.changed, 4);
    assert_int_equal(g_seen.deleted, 2);
    assert_int_equal(cdsh_tavern_memory_search(f->s, "ferryman", 5, &cfg, 0, &hits, &err), 0);
    assert_int_equal(json_array_size(hits), 0); /* the index followed the undo */
    json_decref(hits);
}

int main(void)
{
    cdsh_tavern_memory_attach(); /* memory objects written through story.h are indexed */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(story_changes_reach_listeners_and_the_memory_index, setup,
                                        teardown),
        cmocka_unit_test(tokens_split_words_and_cjk_bigrams),
        cmocka_unit_test_setup_teardown(search_ranks_by_bm25_and_key_weight, setup, teardown),
        cmocka_unit_test_setup_teardown(decay_prefers_recent_entries, setup, teardown),
        cmocka_unit_test_setup_teardown(dedupe_finds_similar_active_entries, setup, teardown),
        cmocka_unit_test_setup_teardown(summary_only_from_a_normal_stop, setup, teardown),
        cmocka_unit_test_setup_teardown(undo_expands_summaries_before_undoing_facts, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(update_merges_and_missing_is_not_found, setup, teardown),
        cmocka_unit_test_setup_teardown(world_deltas_validate_expire_and_render, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
