/* test_tavern_assemble.c — prompt assembly and the per-turn freeze
 * (liketavern §10 and the §16 pipelineCache cases): standing vs turn
 * channels, card overrides, budgets and truncation notes, the simulated
 * message order with depth injections, synthetic texts, plan replay within
 * a turn, standing pin reuse and re-pin, the story state stores, world-info
 * entry templates (after the scan, budgeted, frozen, failing alone), the
 * author's note in the scan, and the simulation trimmed to the context. */
#include "support/testkit.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/tavern/card.h"
#include "plugins/tavern/lorebook.h"
#include "plugins/tavern/pipeline.h"
#include "plugins/tavern/preset.h"
#include "plugins/tavern/tokens.h"

static const char CARD[] =
    "{\"spec\":\"chara_card_v3\",\"spec_version\":\"3.0\",\"data\":{"
    "\"name\":\"Seraphina Display\",\"nickname\":\"Sera\","
    "\"description\":\"{{char}} guards the glade for {{user}}.\","
    "\"personality\":\"kind\",\"scenario\":\"A glade at {{time}}.\","
    "\"first_mes\":\"Hello.\",\"mes_example\":\"<START>\\n{{char}}: Hi {{user}}\","
    "\"system_prompt\":\"CARD MAIN ({{original}})\",\"post_history_instructions\":\"\","
    "\"extensions\":{\"depth_prompt\":{\"prompt\":\"Stay "
    "gentle.\",\"depth\":2,\"role\":\"system\"}},"
    "\"character_book\":{\"name\":\"Glade\",\"entries\":["
    "{\"keys\":[],\"content\":\"The glade is "
    "ancient.\",\"constant\":true,\"position\":\"before_char\",\"enabled\":true,\"insertion_"
    "order\":10,\"extensions\":{}},"
    "{\"keys\":[\"wolf\"],\"content\":\"Wolves roam at "
    "night.\",\"enabled\":true,\"insertion_order\":20,\"extensions\":{}},"
    "{\"keys\":[\"deep\"],\"content\":\"Deep "
    "lore.\",\"enabled\":true,\"insertion_order\":5,\"extensions\":{\"position\":4,\"depth\":1,"
    "\"role\":1}}"
    "]}}}";

static json_t *card_record(const char *text)
{
    json_t *root = json_loads(text, 0, NULL);
    assert_non_null(root);
    cdsh_tavern_card *card = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_card_from_json(root, false, NULL, 0, &card, &err), 0);
    json_t *rec = json_deep_copy(cdsh_tavern_card_record_get(card));
    cdsh_tavern_card_free(card);
    json_decref(root);
    return rec;
}

static json_t *preset(void)
{
    json_t *in = json_loads(
        "{\"name\":\"P\",\"prompts\":["
        "{\"identifier\":\"main\",\"name\":\"Main\",\"system_prompt\":true,\"content\":\"PRESET "
        "MAIN\"},"
        "{\"identifier\":\"jailbreak\",\"content\":\"PHI {{char}}\",\"role\":\"system\"},"
        "{\"identifier\":\"mood\",\"content\":\"Mood: "
        "{{random::calm::calm}}\",\"role\":\"system\"},"
        "{\"identifier\":\"inchat\",\"content\":\"IN-CHAT "
        "NOTE\",\"role\":\"user\",\"injection_position\":1,\"injection_depth\":0},"
        "{\"identifier\":\"charDescription\",\"marker\":true},{\"identifier\":\"chatHistory\","
        "\"marker\":true},"
        "{\"identifier\":\"worldInfoBefore\",\"marker\":true},{\"identifier\":\"dialogueExamples\","
        "\"marker\":true}],"
        "\"prompt_order\":[{\"character_id\":100001,\"order\":["
        "{\"identifier\":\"main\",\"enabled\":true},{\"identifier\":\"worldInfoBefore\","
        "\"enabled\":true},"
        "{\"identifier\":\"charDescription\",\"enabled\":true},{\"identifier\":\"mood\","
        "\"enabled\":true},"
        "{\"identifier\":\"dialogueExamples\",\"enabled\":true},{\"identifier\":\"inchat\","
        "\"enabled\":true},"
        "{\"identifier\":\"chatHistory\",\"enabled\":true},{\"identifier\":\"jailbreak\","
        "\"enabled\":true}]}]}",
        0, NULL);
    cdsh_error err = {0};
    json_t *p = cdsh_tavern_preset_normalize_dup(in, NULL, &err);
    assert_non_null(p);
    json_decref(in);
    return p;
}

typedef struct fx {
    cdsh_tavern_assemble_input in;
    cdsh_tavern_chat_msg chat[16];
    json_t *card, *preset, *persona, *timed;
} fx;

static void fx_init(fx *f)
{
    memset(f, 0, sizeof *f);
    f->card = card_record(CARD);
    f->preset = preset();
    f->persona = json_pack("{s:s, s:s}", "name", "Ann", "description", "A traveller.");
    f->timed = json_object();
    f->in.card = f->card;
    f->in.preset = f->preset;
    f->in.persona = f->persona;
    f->in.chat = f->chat;
    f->in.timed = f->timed;
    f->in.now_ms = 1767225600000LL;
    f->in.seed = 9;
    f->in.chat_id = "chat";
    cdsh_tavern_wi_settings_default(&f->in.wi);
}

static void msg(fx *f, const char *role, const char *text, bool synthetic)
{
    f->chat[f->in.n_chat++] = (cdsh_tavern_chat_msg){role, NULL, text, synthetic};
}

static void fx_free(fx *f)
{
    json_decref(f->card);
    json_decref(f->preset);
    json_decref(f->persona);
    json_decref(f->timed);
}

static json_t *assemble(fx *f)
{
    json_t *plan = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_assemble(&f->in, &plan, &err), 0);
    return plan;
}

static const char *S(const json_t *plan, const char *k)
{
    return json_string_value(json_object_get(plan, k));
}

static void standing_and_turn_channels_split_content(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    msg(&f, "assistant", "Hello.", false);
    msg(&f, "user", "A wolf howls.", false);
    json_t *plan = assemble(&f);
    const char *st = S(plan, "standing"), *tu = S(plan, "turn");
    /* V3 nickname drives {{char}}; persona name drives {{user}}. */
    assert_non_null(strstr(st, "Sera guards the glade for Ann."));
    assert_null(strstr(st, "Seraphina Display"));
    /* Card system prompt overrides main, {{original}} = the preset's. */
    assert_non_null(strstr(st, "CARD MAIN (PRESET MAIN)"));
    /* Constant probability-100 entry in standing; keyword entry only in turn. */
    assert_non_null(strstr(st, "【世界书·常驻】\nThe glade is ancient."));
    assert_null(strstr(st, "Wolves roam"));
    assert_non_null(strstr(tu, "【世界书·本轮触发】\nWolves roam at night."));
    assert_null(strstr(tu, "The glade is ancient."));
    /* Turn-local macros (random) move a preset prompt into the turn. */
    assert_non_null(strstr(tu, "Mood: calm"));
    assert_null(strstr(st, "Mood:"));
    /* Static depth prompt in standing; examples split on <START>. */
    assert_non_null(strstr(st, "[depth 2, system]\nStay gentle."));
    assert_non_null(strstr(st, "[Example Chat]\nSera: Hi Ann"));
    json_decref(plan);
    fx_free(&f);
}

static void standing_freezes_clock_and_neutralizes_residual_macros(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    json_object_set_new(json_object_get(f.card, "data"), "personality",
                        json_string("odd {{unknownmacro}}"));
    json_t *prom = json_array_get(json_object_get(f.preset, "prompts"), 0);
    json_object_set_new(prom, "forbid_overrides", json_true());
    json_object_set_new(prom, "content", json_string("Now: [{{time}}]"));
    json_t *order =
        json_object_get(json_array_get(json_object_get(f.preset, "prompt_order"), 0), "order");
    json_array_append_new(order,
                          json_pack("{s:s, s:b}", "identifier", "charPersonality", "enabled", 1));
    json_t *plan = assemble(&f);
    const char *st = S(plan, "standing");
    /* forbid_overrides keeps the preset main; {{time}} is turn-local so the
     * piece goes to the turn with the real clock. */
    assert_null(strstr(st, "CARD MAIN"));
    assert_non_null(strstr(S(plan, "turn"), "Now: [12:00 AM]"));
    assert_non_null(strstr(st, "odd ｛｛unknownmacro｝｝"));
    assert_int_equal(json_array_size(json_object_get(plan, "unknownMacros")), 1);
    json_decref(plan);
    fx_free(&f);
}

static void simulation_orders_messages_and_injections(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    f.in.author_note = "AN text";
    f.in.author_note_depth = 1;
    msg(&f, "assistant", "m1", false);
    msg(&f, "user", "m2 deep", false);
    msg(&f, "user", "(runtime snapshot)", true);
    msg(&f, "assistant", "m3", false);
    json_t *plan = assemble(&f);
    json_t *m = json_object_get(plan, "messages");
    char seq[1024] = "";
    size_t i;
    json_t *x;
    json_array_foreach(m, i, x) {
        snprintf(seq + strlen(seq), sizeof seq - strlen(seq), "%s%s:%s", i ? "|" : "",
                 json_string_value(json_object_get(x, "role")),
                 json_string_value(json_object_get(x, "source")));
    }
    /* main, WI before, description, mood, examples, then history with
     * injections (depth 2 depth_prompt, depth 1: AN (system) + WI @1 (user),
     * depth 0: in-chat note (user)), then the post-history prompt. The
     * synthetic snapshot never appears. */
    assert_string_equal(seq, "system:main|system:worldInfoBefore|system:charDescription|"
                             "system:mood|system:dialogueExamples|"
                             "assistant:chatHistory|system:injection|user:chatHistory|"
                             "system:injection|user:injection|assistant:chatHistory|"
                             "user:injection|system:jailbreak");
    json_t *an = json_array_get(m, 8);
    assert_string_equal(json_string_value(json_object_get(an, "content")), "AN text");
    assert_string_equal(json_string_value(json_object_get(json_array_get(m, 9), "content")),
                        "Deep lore.");
    assert_string_equal(json_string_value(json_object_get(json_array_get(m, 12), "content")),
                        "PHI Sera");
    assert_null(strstr(S(plan, "turn"), "runtime snapshot"));
    assert_non_null(strstr(S(plan, "turn"), "【作者注释】\nAN text"));
    json_decref(plan);
    fx_free(&f);
}

static void budgets_truncate_with_notes(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    char *big = malloc(20001);
    memset(big, 'm', 20000);
    big[20000] = 0;
    f.in.memories = big;
    f.in.world_state = "The bridge fell.";
    f.in.journal = "Sera trusts Ann.";
    json_t *plan = assemble(&f);
    json_t *b = json_object_get(plan, "budgets");
    json_t *mem = json_object_get(b, "memories");
    assert_int_equal(json_integer_value(json_object_get(mem, "limit")), 1200);
    assert_true(json_is_true(json_object_get(mem, "truncated")));
    assert_true(json_integer_value(json_object_get(mem, "used")) <= 1200);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(b, "deltas"), "limit")),
                     1500);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(b, "journal"), "limit")),
                     800);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(b, "worldInfo"), "limit")),
                     8192);
    const char *tu = S(plan, "turn");
    assert_non_null(strstr(tu, "…(truncated to 1200 tokens)"));
    assert_non_null(strstr(tu, "【世界变化】\nThe bridge fell."));
    assert_non_null(strstr(tu, "【角色笔记】\nSera trusts Ann."));
    assert_string_equal(json_string_value(json_array_get(json_object_get(plan, "notes"), 0)),
                        "memories truncated to 1200 tokens");
    json_decref(plan);
    free(big);
    fx_free(&f);
}

static void plan_is_frozen_for_the_turn(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    msg(&f, "user", "A wolf!", false);
    cdsh_tavern_pipeline *p = cdsh_tavern_pipeline_new();
    json_t *p1 = NULL, *p2 = NULL, *p3 = NULL, *p4 = NULL;
    bool cached = true;
    cdsh_error err = {0};
    f.in.revision = "card:1|book:1";
    assert_int_equal(cdsh_tavern_pipeline_plan(p, "t1", &f.in, &p1, &cached, &err), 0);
    assert_false(cached);
    /* Step 2 of the same turn: history grew, a synthetic snapshot was added
     * and the card was edited — the plan is replayed byte for byte. */
    msg(&f, "assistant", "(tool call result)", true);
    msg(&f, "user", "more text", false);
    json_object_set_new(json_object_get(f.card, "data"), "description", json_string("EDITED"));
    f.in.revision = "card:2|book:1";
    assert_int_equal(cdsh_tavern_pipeline_plan(p, "t1", &f.in, &p2, &cached, &err), 0);
    assert_true(cached);
    assert_string_equal(S(p1, "turn"), S(p2, "turn"));
    assert_string_equal(S(p1, "standing"), S(p2, "standing"));
    assert_null(strstr(S(p2, "standing"), "EDITED"));
    /* The next turn uses the new text under a new key. */
    cdsh_tavern_pipeline_end_turn(p, "t1");
    assert_int_equal(cdsh_tavern_pipeline_plan(p, "t2", &f.in, &p3, &cached, &err), 0);
    assert_false(cached);
    assert_non_null(strstr(S(p3, "standing"), "EDITED"));
    assert_string_not_equal(S(p1, "standingKey"), S(p3, "standingKey"));
    assert_true(json_is_false(json_object_get(p3, "standingPinned")));
    /* Nothing changed: the standing bytes are reused across turns. */
    assert_int_equal(cdsh_tavern_pipeline_plan(p, "t3", &f.in, &p4, &cached, &err), 0);
    assert_true(json_is_true(json_object_get(p4, "standingPinned")));
    assert_string_equal(S(p3, "standing"), S(p4, "standing"));
    assert_int_equal(cdsh_tavern_pipeline_plan(p, "", &f.in, &p4, &cached, &err), CDSH_EINVAL);
    json_decref(p1);
    json_decref(p2);
    json_decref(p3);
    json_decref(p4);
    cdsh_tavern_pipeline_free(p);
    fx_free(&f);
}

static void lorebook_edit_repins_standing(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    cdsh_tavern_pipeline *p = cdsh_tavern_pipeline_new();
    json_t *a = NULL, *b = NULL, *c = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_pipeline_plan(p, "t1", &f.in, &a, NULL, &err), 0);
    assert_int_equal(cdsh_tavern_pipeline_plan(p, "t2", &f.in, &b, NULL, &err), 0);
    assert_true(json_is_true(json_object_get(b, "standingPinned")));
    json_t *entries = json_object_get(
        json_object_get(json_object_get(f.card, "data"), "character_book"), "entries");
    json_object_set_new(json_array_get(entries, 0), "content", json_string("The glade is new."));
    assert_int_equal(cdsh_tavern_pipeline_plan(p, "t3", &f.in, &c, NULL, &err), 0);
    assert_true(json_is_false(json_object_get(c, "standingPinned")));
    assert_non_null(strstr(S(c, "standing"), "The glade is new."));
    json_decref(a);
    json_decref(b);
    json_decref(c);
    cdsh_tavern_pipeline_free(p);
    fx_free(&f);
}

static void state_stores_keep_story_state(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tavern/state", home);
    cdsh_tavern_state_store *stores[2] = {cdsh_tavern_state_store_new_memory(),
                                          cdsh_tavern_state_store_new_file(dir)};
    for (int k = 0; k < 2; k++) {
        json_t *v = NULL;
        cdsh_error err = {0};
        assert_int_equal(cdsh_tavern_state_store_load(stores[k], "story-1", &v, &err), 0);
        assert_int_equal(json_object_size(v), 0);
        json_object_set_new(v, "timed", json_pack("{s:{}}", "sticky"));
        assert_int_equal(cdsh_tavern_state_store_save(stores[k], "story-1", v, &err), 0);
        json_decref(v);
        assert_int_equal(cdsh_tavern_state_store_load(stores[k], "story-1", &v, &err), 0);
        assert_non_null(json_object_get(json_object_get(v, "timed"), "sticky"));
        json_decref(v);
    }
    cdsh_error err = {0};
    json_t *v = NULL;
    assert_int_equal(cdsh_tavern_state_store_load(stores[1], "../escape", &v, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_STORY_ID");
    cdsh_tavern_state_store_free(stores[0]);
    cdsh_tavern_state_store_free(stores[1]);
    cdsh_test_home_free(home);
}

static void templates_render_in_the_worker_and_commit_only_on_success(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    json_t *prompts = json_object_get(f.preset, "prompts");
    json_t *order =
        json_object_get(json_array_get(json_object_get(f.preset, "prompt_order"), 0), "order");
    json_array_append_new(
        prompts, json_pack("{s:s, s:s, s:s}", "identifier", "tpl", "role", "system", "content",
                           "<% incvar('n') %>Count <%= getvar('n') %> for {{user}}"));
    json_array_append_new(order, json_pack("{s:s, s:b}", "identifier", "tpl", "enabled", 1));
    json_t *local = json_object(), *global = json_object();
    f.in.vars_local = local;
    f.in.vars_global = global;
    cdsh_tavern_template_limits lim;
    cdsh_tavern_template_limits_default(&lim);
    lim.wall_ms = cdsh_test_scale_ms(20000);
    f.in.template_limits = &lim;
    /* Off: left out with a note. */
    json_t *plan = assemble(&f);
    assert_null(strstr(S(plan, "turn"), "Count"));
    assert_string_equal(json_string_value(json_array_get(json_object_get(plan, "notes"), 0)),
                        "prompt 'tpl' holds a template and was left out (templates are off)");
    json_decref(plan);
    /* On: rendered once, turn-local, macros expanded after, variables committed. */
    f.in.run_templates = true;
    plan = assemble(&f);
    assert_non_null(strstr(S(plan, "turn"), "Count 1 for Ann"));
    assert_null(strstr(S(plan, "standing"), "Count"));
    size_t i;
    json_t *m;
    int seen = 0;
    json_array_foreach(json_object_get(plan, "messages"), i, m)
        seen += !strcmp(json_string_value(json_object_get(m, "content")), "Count 1 for Ann");
    assert_int_equal(seen, 1);
    assert_int_equal(json_integer_value(json_object_get(local, "n")), 1);
    json_decref(plan);
    /* Dry run (preview): rendered but nothing written. */
    f.in.dry_run = true;
    plan = assemble(&f);
    assert_non_null(strstr(S(plan, "turn"), "Count 2 for Ann"));
    assert_int_equal(json_integer_value(json_object_get(local, "n")), 1);
    json_decref(plan);
    /* A failing template commits nothing and is reported. */
    f.in.dry_run = false;
    json_object_set_new(json_array_get(prompts, json_array_size(prompts) - 1), "content",
                        json_string("<% setvar('n', 99); throw new Error('nope') %>"));
    plan = assemble(&f);
    assert_int_equal(json_integer_value(json_object_get(local, "n")), 1);
    assert_non_null(strstr(json_string_value(json_array_get(json_object_get(plan, "notes"), 0)),
                           "template failed (TEMPLATE_RUNTIME)"));
    json_decref(plan);
    json_decref(local);
    json_decref(global);
    fx_free(&f);
}

static void outlets_fill_outlet_macros_in_the_turn(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    json_t *raw =
        json_loads("{\"name\":\"Sky\",\"entries\":{\"0\":{\"uid\":0,\"key\":[\"moon\"],"
                   "\"content\":\"The moon is red.\",\"position\":7,\"outletName\":\"sky\"}}}",
                   0, NULL);
    json_t *globals = json_array();
    json_array_append_new(globals, cdsh_tavern_lorebook_normalize_dup(raw, NULL));
    json_decref(raw);
    f.in.global_books = globals;
    json_t *prompts = json_object_get(f.preset, "prompts");
    json_t *order =
        json_object_get(json_array_get(json_object_get(f.preset, "prompt_order"), 0), "order");
    json_array_append_new(prompts, json_pack("{s:s, s:s, s:s}", "identifier", "sky", "role",
                                             "system", "content", "Sky: {{outlet::sky}}"));
    json_array_append_new(order, json_pack("{s:s, s:b}", "identifier", "sky", "enabled", 1));
    msg(&f, "user", "Look at the moon.", false);
    json_t *plan = assemble(&f);
    assert_non_null(strstr(S(plan, "turn"), "Sky: The moon is red."));
    assert_null(strstr(S(plan, "standing"), "Sky:"));
    json_decref(plan);
    json_decref(globals);
    fx_free(&f);
}

/* A global book {"name": name, entries} from "uid|key|content" triples
 * (key "" = constant). Owned array of one book. */
static json_t *books_of(const char *name, const char *const *rows, size_t n)
{
    json_t *entries = json_object();
    for (size_t i = 0; i < n; i += 3) {
        char uid[16];
        snprintf(uid, sizeof uid, "%s", rows[i]);
        bool constant = !*rows[i + 1];
        json_t *keys = json_array();
        if (!constant)
            json_array_append_new(keys, json_string(rows[i + 1]));
        json_object_set_new(entries, uid,
                            json_pack("{s:i, s:o, s:s, s:s, s:b, s:i}", "uid", atoi(rows[i]), "key",
                                      keys, "content", rows[i + 2], "comment", rows[i], "constant",
                                      constant, "order", 100));
    }
    json_t *raw = json_pack("{s:s, s:o}", "name", name, "entries", entries);
    json_t *books = json_array();
    json_array_append_new(books, cdsh_tavern_lorebook_normalize_dup(raw, NULL));
    json_decref(raw);
    return books;
}

static const json_t *log_of(const json_t *plan, int uid)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(json_object_get(plan, "worldInfo"), "log"), i, e) {
        if (!strcmp(S(e, "book"), "T") && json_integer_value(json_object_get(e, "uid")) == uid)
            return e;
    }
    return NULL;
}

static bool has_note(const json_t *plan, const char *part)
{
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(plan, "notes"), i, n)
        if (strstr(json_string_value(n), part))
            return true;
    return false;
}

static void templates_on(fx *f, cdsh_tavern_template_limits *lim)
{
    cdsh_tavern_template_limits_default(lim);
    lim->wall_ms =
        cdsh_test_scale_ms(20000); /* sanitizer builds are slow; never a timing assertion */
    f->in.template_limits = lim;
    f->in.run_templates = true;
    f->in.trigger_log = true;
}

static void world_info_templates_run_after_the_scan_on_the_raw_text(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    cdsh_tavern_template_limits lim;
    templates_on(&f, &lim);
    /* Entry 0's evaluated text says "tower" (its raw text does not); its raw
     * text says "bell" inside a comment tag (its output does not). Recursion
     * scans the raw text, as SillyTavern's template extension runs after
     * activation: the bell entry fires, the tower entry does not. */
    const char *rows[] = {"0",
                          "gate",
                          "Gate <%- entry.comment %>:<%= 6*7 %> near the <%= 'to' + 'wer' %>"
                          "<%# bell %><% setvar('opened', 'yes', {scope: 'global'}) %>",
                          "1",
                          "tower",
                          "TOWERLORE",
                          "2",
                          "bell",
                          "BELLLORE <%= activewi().length %> active"};
    json_t *books = books_of("T", rows, 9);
    f.in.global_books = books;
    json_t *global = json_object(), *local = json_object();
    f.in.vars_global = global;
    f.in.vars_local = local;
    msg(&f, "user", "I open the gate.", false);
    json_t *plan = assemble(&f);
    const char *turn = S(plan, "turn");
    assert_non_null(strstr(turn, "Gate 0:42 near the tower"));
    assert_null(strstr(turn, "<%"));
    assert_null(strstr(turn, "TOWERLORE"));
    assert_non_null(strstr(turn, "BELLLORE 3 active"));
    assert_false(json_is_true(json_object_get(log_of(plan, 1), "fired")));
    /* Evaluated output is what is counted and placed; it is turn-local. */
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(json_object_get(plan, "worldInfo"), "activated"), i, e) {
        assert_int_equal(json_integer_value(json_object_get(e, "tokens")),
                         cdsh_tavern_tokens_count_str(S(e, "content")));
        assert_null(strstr(S(e, "content"), "<%"));
        if (json_integer_value(json_object_get(e, "uid")) == 0 && !strcmp(S(e, "book"), "T"))
            assert_true(json_is_true(json_object_get(e, "turnLocal")));
    }
    assert_null(strstr(S(plan, "standing"), "Gate"));
    /* The template's global write is applied (live), and a dry run writes nothing. */
    assert_string_equal(json_string_value(json_object_get(global, "opened")), "yes");
    json_object_clear(global);
    f.in.dry_run = true;
    json_t *plan2 = assemble(&f);
    assert_non_null(strstr(S(plan2, "turn"), "Gate 0:42 near the tower"));
    assert_null(json_object_get(global, "opened"));
    json_decref(plan2);
    json_decref(plan);
    json_decref(global);
    json_decref(local);
    json_decref(books);
    fx_free(&f);
}

static void a_failing_world_info_template_drops_only_that_entry(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    cdsh_tavern_template_limits lim;
    templates_on(&f, &lim);
    const char *rows[] = {"5",
                          "gate",
                          "<% setvar('broke', 1, {scope: 'global'}); "
                          "throw new Error('bad gate') %>",
                          "6",
                          "gate",
                          "GATELORE <%= 1+1 %>"};
    json_t *books = books_of("T", rows, 6);
    f.in.global_books = books;
    json_t *global = json_object();
    f.in.vars_global = global;
    msg(&f, "user", "The gate.", false);
    json_t *plan = assemble(&f);
    assert_non_null(strstr(S(plan, "turn"), "GATELORE 2"));
    assert_null(strstr(S(plan, "turn"), "bad gate"));
    assert_true(has_note(plan, "world-info entry T.5 template failed (TEMPLATE_RUNTIME)"));
    const json_t *lg = log_of(plan, 5);
    assert_false(json_is_true(json_object_get(lg, "fired")));
    assert_non_null(strstr(S(lg, "reason"), "template failed (TEMPLATE_RUNTIME)"));
    json_t *fails = json_object_get(json_object_get(plan, "worldInfo"), "templateFailures");
    assert_int_equal(json_array_size(fails), 1);
    assert_null(json_object_get(global, "broke")); /* a failing template commits nothing */
    json_decref(plan);
    /* Templates off: the entry is left out with a note, the others stay. */
    f.in.run_templates = false;
    plan = assemble(&f);
    assert_true(has_note(plan, "world-info entry T.6 template failed (TEMPLATES_OFF)"));
    assert_null(strstr(S(plan, "turn"), "GATELORE"));
    json_decref(plan);
    json_decref(global);
    json_decref(books);
    fx_free(&f);
}

static void world_info_template_output_counts_against_the_budget(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    cdsh_tavern_template_limits lim;
    templates_on(&f, &lim);
    /* 40 000 ASCII characters ≈ 11 941 tokens: over the 8 192 turn budget
     * although the raw entry is a few tokens. */
    const char *rows[] = {"7", "flood", "<%= new Array(40001).join('x') %>", "8", "flood", "SMALL"};
    json_t *books = books_of("T", rows, 6);
    f.in.global_books = books;
    msg(&f, "user", "A flood.", false);
    json_t *plan = assemble(&f);
    const char *turn = S(plan, "turn");
    assert_non_null(strstr(turn, "SMALL"));
    assert_null(strstr(turn, "xxxxxxxxxx"));
    assert_non_null(strstr(turn, "【世界书·未收录】T.7"));
    json_t *wib = json_object_get(json_object_get(plan, "budgets"), "worldInfo");
    assert_true(json_is_true(json_object_get(wib, "truncated")));
    assert_true(json_integer_value(json_object_get(wib, "used")) <= 8192);
    json_decref(plan);
    json_decref(books);
    fx_free(&f);
}

/* A book handed to assembly as it is (not normalised): a constant entry
 * with no "key" field still renders, and its template sees keys as []. */
static void a_keyless_world_info_entry_template_sees_no_keys(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    cdsh_tavern_template_limits lim;
    templates_on(&f, &lim);
    json_t *books = json_pack("[{s:s, s:{s:{s:i, s:s, s:s, s:b, s:i}}}]", "name", "T", "entries",
                              "4", "uid", 4, "content", "KEYLESS <%= entry.keys.length %> keys",
                              "comment", "4", "constant", 1, "order", 100);
    f.in.global_books = books;
    msg(&f, "user", "Anything.", false);
    json_t *plan = assemble(&f);
    assert_non_null(strstr(S(plan, "turn"), "KEYLESS 0 keys"));
    json_decref(plan);
    json_decref(books);
    fx_free(&f);
}

static void world_info_templates_are_frozen_for_the_turn(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    cdsh_tavern_template_limits lim;
    templates_on(&f, &lim);
    const char *rows[] = {"9", "", "R=<%= Math.random() %> T=<%= Date.now() %>"};
    json_t *books = books_of("T", rows, 3);
    f.in.global_books = books;
    cdsh_tavern_pipeline *p = cdsh_tavern_pipeline_new();
    json_t *p1 = NULL, *p2 = NULL, *p3 = NULL;
    bool cached = false;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_pipeline_plan(p, "t1", &f.in, &p1, &cached, &err), 0);
    assert_non_null(strstr(S(p1, "turn"), "T=1767225600000"));
    /* A later step of the turn (the clock moved, the seed is another one). */
    f.in.now_ms += 5000;
    f.in.seed = 10;
    assert_int_equal(cdsh_tavern_pipeline_plan(p, "t1", &f.in, &p2, &cached, &err), 0);
    assert_true(cached);
    assert_string_equal(S(p1, "turn"), S(p2, "turn"));
    /* The same turn inputs evaluate to the same bytes even without the cache. */
    f.in.now_ms -= 5000;
    f.in.seed = 9;
    json_t *again = assemble(&f);
    assert_string_equal(S(p1, "turn"), S(again, "turn"));
    /* The next turn draws anew. */
    cdsh_tavern_pipeline_end_turn(p, "t1");
    f.in.seed = 10;
    assert_int_equal(cdsh_tavern_pipeline_plan(p, "t2", &f.in, &p3, &cached, &err), 0);
    assert_string_not_equal(S(p1, "turn"), S(p3, "turn"));
    json_decref(again);
    json_decref(p1);
    json_decref(p2);
    json_decref(p3);
    cdsh_tavern_pipeline_free(p);
    json_decref(books);
    fx_free(&f);
}

static size_t index_of(const json_t *msgs, const char *source)
{
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m)
        if (!strcmp(S(m, "source"), source))
            return i;
    return SIZE_MAX;
}

static void author_note_feeds_the_scan_only_when_allowed(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    f.in.trigger_log = true;
    const char *rows[] = {"3", "comet", "COMETLORE"};
    json_t *books = books_of("T", rows, 3);
    f.in.global_books = books;
    f.in.author_note = "Keep the {{random::comet::comet}} in view.";
    f.in.author_note_depth = 1;
    msg(&f, "user", "We look at the sky.", false);
    json_t *plan = assemble(&f);
    assert_null(strstr(S(plan, "turn"), "COMETLORE"));
    assert_false(json_is_true(json_object_get(log_of(plan, 3), "fired")));
    json_decref(plan);
    f.in.author_note_scan = true;
    plan = assemble(&f);
    assert_non_null(strstr(S(plan, "turn"), "COMETLORE"));
    assert_true(json_is_true(json_object_get(log_of(plan, 3), "fired")));
    /* Default position: in chat at its depth (here 1, system). */
    json_t *m = json_object_get(plan, "messages");
    size_t an = SIZE_MAX, k;
    json_t *x;
    json_array_foreach(m, k, x)
        if (strstr(S(x, "content"), "Keep the comet"))
            an = k;
    assert_true(an != SIZE_MAX);
    assert_string_equal(S(json_array_get(m, an), "source"), "injection");
    assert_string_equal(S(json_array_get(m, an), "role"), "system");
    json_decref(plan);
    /* Scanned whatever the position; placed where the position says. */
    f.in.author_note_position = cdsh_tavern_an_position_from_st(2);
    plan = assemble(&f);
    m = json_object_get(plan, "messages");
    assert_non_null(strstr(S(plan, "turn"), "COMETLORE"));
    assert_int_equal(index_of(m, "authorsNote") + 1, index_of(m, "main"));
    json_decref(plan);
    f.in.author_note_position = cdsh_tavern_an_position_from_st(0);
    plan = assemble(&f);
    m = json_object_get(plan, "messages");
    assert_int_equal(index_of(m, "authorsNote"), index_of(m, "main") + 1);
    json_decref(plan);
    f.in.author_note_position = cdsh_tavern_an_position_from_st(1);
    f.in.author_note_role = 1;
    plan = assemble(&f);
    m = json_object_get(plan, "messages");
    assert_int_equal(index_of(m, "authorsNote"), SIZE_MAX);
    json_array_foreach(m, k, x)
        if (strstr(S(x, "content"), "Keep the comet"))
            an = k;
    assert_string_equal(S(json_array_get(m, an), "role"), "user");
    json_decref(plan);
    json_decref(books);
    fx_free(&f);
}

/* The six fields SillyTavern's match_* flags add to an entry's scan, as its
 * getCharacterCardFields gives them: trimmed, macros expanded ({{user}} is
 * the persona), "\r" removed — the card's depth prompt and creator notes
 * included. A variable write in a field does not happen twice. */
static void match_flags_scan_the_card_fields_as_sillytavern_gives_them(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    json_t *card = json_loads(CARD, 0, NULL);
    json_t *data = json_object_get(card, "data");
    json_object_set_new(data, "creator_notes", json_string("  Made for\r\n{{user}}.  "));
    json_object_set_new(data, "description",
                        json_string("{{char}} guards the glade for {{user}}.{{incvar::seen}}"));
    f.in.card = NULL;
    json_decref(f.card);
    char *text = json_dumps(card, 0);
    f.card = card_record(text);
    f.in.card = f.card;
    free(text);
    json_decref(card);
    f.in.trigger_log = true;
    json_t *raw = json_loads(
        "{\"name\":\"T\",\"entries\":{"
        "\"1\":{\"uid\":1,\"key\":[\"gentle\"],\"content\":\"DEPTHLORE\","
        "\"matchCharacterDepthPrompt\":true},"
        "\"2\":{\"uid\":2,\"key\":[\"for\\nAnn\"],\"content\":\"NOTESLORE\",\"matchCreatorNotes\":true},"
        "\"3\":{\"uid\":3,\"key\":[\"glade for Ann\"],\"content\":\"DESCLORE\","
        "\"matchCharacterDescription\":true},"
        "\"4\":{\"uid\":4,\"key\":[\"gentle\"],\"content\":\"NOFLAG\"},"
        "\"5\":{\"uid\":5,\"key\":[\"traveller\"],\"content\":\"PERSONALORE\","
        "\"matchPersonaDescription\":true}}}",
        0, NULL);
    assert_non_null(raw);
    json_t *books = json_array();
    json_array_append_new(books, cdsh_tavern_lorebook_normalize_dup(raw, NULL));
    json_decref(raw);
    f.in.global_books = books;
    json_t *vars = json_object();
    f.in.vars_local = vars;
    msg(&f, "user", "Hello there.", false);
    json_t *plan = assemble(&f);
    for (int uid = 1; uid <= 5; uid++)
        if (json_is_true(json_object_get(log_of(plan, uid), "fired")) != (uid != 4))
            fail_msg("entry %d should %sfire", uid, uid != 4 ? "" : "not ");
    json_decref(plan);
    /* "allow WI scan" (the note's) scans the card's depth prompt for every
     * entry, as ST flags that extension prompt too — no note needed */
    f.in.author_note_scan = true;
    json_object_clear(vars);
    plan = assemble(&f);
    assert_true(json_is_true(json_object_get(log_of(plan, 4), "fired")));
    json_decref(plan);
    f.in.author_note_scan = false;
    json_object_clear(vars);
    plan = assemble(&f);
    json_decref(plan);
    /* the description's incvar ran as often as the prompt expands it, not
     * once more for the scan: the same count without any match_* entry */
    json_int_t with_scan = json_integer_value(json_object_get(vars, "seen"));
    json_object_clear(vars);
    f.in.global_books = NULL;
    plan = assemble(&f);
    json_decref(plan);
    assert_true(with_scan > 0);
    assert_int_equal(with_scan, json_integer_value(json_object_get(vars, "seen")));
    json_object_clear(vars);
    json_decref(vars);
    json_decref(books);
    fx_free(&f);
}

static size_t count_source(const json_t *msgs, const char *source)
{
    size_t i, n = 0;
    json_t *m;
    json_array_foreach(msgs, i, m)
        n += !strcmp(S(m, "source"), source);
    return n;
}

static void simulation_is_trimmed_to_the_context_budget(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    json_object_set_new(json_object_get(f.card, "data"), "mes_example",
                        json_string("<START>\n{{char}}: first example, rather long words here\n"
                                    "<START>\n{{char}}: second example, rather long words too"));
    static char texts[12][160];
    for (int i = 0; i < 12; i++) {
        snprintf(texts[i], sizeof texts[i], "message %02d with about a dozen words of chat text",
                 i);
        msg(&f, i % 2 ? "assistant" : "user", texts[i], false);
    }
    f.chat[10].text = "message 10 the last user message"; /* index 10 is the last user */
    /* Plenty of room: nothing dropped. */
    json_t *plan = assemble(&f);
    json_t *sim = json_object_get(json_object_get(plan, "budgets"), "simulation");
    assert_int_equal(json_integer_value(json_object_get(sim, "limit")), 128000 - 300);
    assert_int_equal(json_integer_value(json_object_get(sim, "droppedMessages")), 0);
    json_t *msgs = json_object_get(plan, "messages");
    assert_int_equal(count_source(msgs, "chatHistory"), 12);
    assert_int_equal(count_source(msgs, "dialogueExamples"), 2);
    size_t fixed = 0, hist = 0, i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        size_t t = cdsh_tavern_tokens_count_str(S(m, "content"));
        if (!strcmp(S(m, "source"), "chatHistory") || !strcmp(S(m, "source"), "injection"))
            hist += t;
        else if (strcmp(S(m, "source"), "dialogueExamples"))
            fixed += t;
    }
    json_decref(plan);
    /* Room for the fixed parts and about half the history: the oldest go
     * first, examples (filled after history) go entirely, the newest stay. */
    f.in.wi.max_context = (int)(300 + fixed + hist / 2);
    plan = assemble(&f);
    msgs = json_object_get(plan, "messages");
    sim = json_object_get(json_object_get(plan, "budgets"), "simulation");
    size_t kept = count_source(msgs, "chatHistory");
    assert_true(kept > 0 && kept < 12);
    assert_int_equal(json_integer_value(json_object_get(sim, "droppedMessages")), 12 - kept);
    assert_int_equal(count_source(msgs, "dialogueExamples"), 0);
    assert_true(json_integer_value(json_object_get(sim, "used")) <=
                json_integer_value(json_object_get(sim, "limit")));
    assert_true(json_is_true(json_object_get(sim, "truncated")));
    /* The kept history is the newest suffix, in order. */
    size_t want = 12 - kept;
    json_array_foreach(msgs, i, m) {
        if (strcmp(S(m, "source"), "chatHistory"))
            continue;
        assert_string_equal(S(m, "content"), f.in.chat[want].text);
        want++;
    }
    assert_int_equal(want, 12);
    assert_true(index_of(msgs, "main") != SIZE_MAX);
    assert_true(index_of(msgs, "charDescription") != SIZE_MAX);
    assert_true(index_of(msgs, "jailbreak") != SIZE_MAX);
    char note[160];
    snprintf(note, sizeof note, "dropped %zu of 12 chat messages (oldest first) and 2 of 2",
             12 - kept);
    assert_true(has_note(plan, note));
    json_decref(plan);
    /* Room for history but not for both examples: one block stays. */
    size_t ex1 = cdsh_tavern_tokens_count_str("[Example Chat]\nSera: first example, rather long "
                                              "words here");
    f.in.wi.max_context = (int)(300 + fixed + hist + ex1);
    plan = assemble(&f);
    msgs = json_object_get(plan, "messages");
    assert_int_equal(count_source(msgs, "chatHistory"), 12);
    assert_int_equal(count_source(msgs, "dialogueExamples"), 1);
    assert_true(has_note(plan, "dropped 0 of 12 chat messages (oldest first) and 1 of 2"));
    json_decref(plan);
    /* Too small for anything: the fixed parts and the last user message stay. */
    f.in.wi.max_context = 310;
    plan = assemble(&f);
    msgs = json_object_get(plan, "messages");
    assert_int_equal(count_source(msgs, "chatHistory"), 1);
    assert_string_equal(S(json_array_get(msgs, index_of(msgs, "chatHistory")), "content"),
                        "message 10 the last user message");
    assert_true(index_of(msgs, "main") != SIZE_MAX);
    assert_true(has_note(plan, "SillyTavern would refuse to send"));
    json_decref(plan);
    fx_free(&f);
}

static void bad_arguments_are_refused(void **state)
{
    (void)state;
    cdsh_tavern_assemble_input in = {0};
    json_t *plan = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_assemble(&in, &plan, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_ARGS");
    char *n = cdsh_tavern_assemble_neutralize_dup("a {{b}} c");
    assert_string_equal(n, "a ｛｛b｝｝ c");
    free(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(standing_and_turn_channels_split_content),
        cmocka_unit_test(standing_freezes_clock_and_neutralizes_residual_macros),
        cmocka_unit_test(simulation_orders_messages_and_injections),
        cmocka_unit_test(budgets_truncate_with_notes),
        cmocka_unit_test(plan_is_frozen_for_the_turn),
        cmocka_unit_test(lorebook_edit_repins_standing),
        cmocka_unit_test(state_stores_keep_story_state),
        cmocka_unit_test(templates_render_in_the_worker_and_commit_only_on_success),
        cmocka_unit_test(outlets_fill_outlet_macros_in_the_turn),
        cmocka_unit_test(world_info_templates_run_after_the_scan_on_the_raw_text),
        cmocka_unit_test(a_failing_world_info_template_drops_only_that_entry),
        cmocka_unit_test(world_info_template_output_counts_against_the_budget),
        cmocka_unit_test(world_info_templates_are_frozen_for_the_turn),
        cmocka_unit_test(a_keyless_world_info_entry_template_sees_no_keys),
        cmocka_unit_test(author_note_feeds_the_scan_only_when_allowed),
        cmocka_unit_test(match_flags_scan_the_card_fields_as_sillytavern_gives_them),
        cmocka_unit_test(simulation_is_trimmed_to_the_context_budget),
        cmocka_unit_test(bad_arguments_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
