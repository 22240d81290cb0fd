/* test_tavern_library.c — the /tavern library-edit methods on a real home
 * through the host's RPC channel: lorebooks (library and embedded) with
 * revisions, presets and personas with reference-protected deletes, regex
 * rules saved all-or-nothing, createCharacter / listStories, ensureGreeting,
 * renderOutputText, the floor texts the edit dialogs prefill, and an edit
 * that shows in the next turn's preview but never inside a frozen turn. */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/prompt.h"
#include "host/rpc.h"
#include "host/scope.h"
#include "support/model_env.h"
#include "support/tavern_world.h"

typedef struct fx {
    char *home;
    cdsh_test_tavern_world w;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    cdsh_test_tavern_world_open(&f->w);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cdsh_test_tavern_world_close(&f->w);
    cdsh_test_home_free(f->home);
    free(f);
    return 0;
}

/* The envelope (owned). */
static json_t *call(fx *f, const char *method, json_t *payload_take)
{
    json_t *env = cdsh_rpc_call(cdsh_host_rpc(f->w.host), "/tavern", method, payload_take, NULL);
    json_decref(payload_take);
    assert_non_null(env);
    return env;
}

/* The value (owned); fails on an error. */
static json_t *ok(fx *f, const char *method, json_t *payload_take)
{
    return cdsh_test_tavern_rpc(&f->w, method, payload_take);
}

/* Asserts the call fails with `code` and returns its message (static copy). */
static const char *fails(fx *f, const char *method, json_t *payload_take, const char *code)
{
    static char msg[512];
    json_t *env = call(f, method, payload_take);
    if (json_is_true(json_object_get(env, "ok"))) {
        char *t = json_dumps(env, 0);
        fail_msg("%s succeeded, expected %s: %s", method, code, t);
    }
    json_t *e = json_object_get(env, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), code);
    snprintf(msg, sizeof msg, "%s", json_string_value(json_object_get(e, "message")));
    json_decref(env);
    return msg;
}

static const char *s_of(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static char *new_session(fx *f, const char *card)
{
    cdsh_session_spec spec = {.title = "play"};
    char *sid = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_session_store_create(f->w.store, &spec, &sid, &err), 0);
    json_decref(
        ok(f, "setSessionBinding", json_pack("{s:s,s:s}", "sessionId", sid, "cardId", card)));
    return sid;
}

static json_t *book_with(const char *content)
{
    return json_pack("{s:s,s:{s:{s:i,s:[s],s:[],s:s,s:s,s:b,s:b,s:i,s:i,s:i,s:i,s:b}}}", "name",
                     "Harbor", "entries", "0", "uid", 0, "key", "harbor", "keysecondary", "comment",
                     "the harbor", "content", content, "constant", 1, "selective", 0, "position", 0,
                     "depth", 4, "order", 100, "probability", 100, "disable", 0);
}

static char *create_card(fx *f, const char *name)
{
    json_t *v = ok(f, "createCharacter",
                   json_pack("{s:s,s:s,s:s,s:[s]}", "name", name, "description",
                             "A lighthouse keeper.", "first_mes", "Hello {{user}}, I am {{char}}.",
                             "alternate_greetings", "Second greeting from {{char}}."));
    char *id = strdup(s_of(v, "cardId"));
    assert_non_null(s_of(v, "revision"));
    json_decref(v);
    return id;
}

static void lorebook_save_checks_input_and_revision(void **state)
{
    fx *f = *state;
    json_t *v = ok(f, "saveLorebook", json_pack("{s:o}", "book", book_with("Boats rock.")));
    char *id = strdup(s_of(v, "id"));
    char *rev = strdup(s_of(v, "revision"));
    assert_string_equal(s_of(v, "name"), "Harbor");
    assert_int_equal(json_integer_value(json_object_get(v, "entries")), 1);
    json_decref(v);

    /* edit with the revision read: accepted, new revision */
    v = ok(f, "saveLorebook",
           json_pack("{s:s,s:o,s:s}", "id", id, "book", book_with("Boats sink."),
                     "expectedRevision", rev));
    assert_string_not_equal(s_of(v, "revision"), rev);
    json_decref(v);
    v = ok(f, "getLorebook", json_pack("{s:s}", "id", id));
    assert_string_equal(s_of(json_object_get(json_object_get(v, "entries"), "0"), "content"),
                        "Boats sink.");
    json_decref(v);
    /* the stale revision is refused and nothing changes */
    fails(f, "saveLorebook",
          json_pack("{s:s,s:o,s:s}", "id", id, "book", book_with("Lost write."), "expectedRevision",
                    rev),
          "revision-conflict");
    v = ok(f, "getLorebook", json_pack("{s:s}", "id", id));
    assert_string_equal(s_of(json_object_get(json_object_get(v, "entries"), "0"), "content"),
                        "Boats sink.");
    json_decref(v);

    /* bad input */
    fails(f, "saveLorebook", json_pack("{s:s}", "book", "x"), "bad-request");
    fails(f, "saveLorebook", json_pack("{s:{s:s}}", "book", "name", "no entries"), "bad-request");
    json_t *b = book_with("x");
    json_object_set_new(json_object_get(json_object_get(b, "entries"), "0"), "probability",
                        json_integer(150));
    const char *m = fails(f, "saveLorebook", json_pack("{s:o}", "book", b), "bad-request");
    assert_non_null(strstr(m, "probability"));
    b = book_with("x");
    json_object_set_new(json_object_get(json_object_get(b, "entries"), "0"), "key",
                        json_string("not a list"));
    fails(f, "saveLorebook", json_pack("{s:o}", "book", b), "bad-request");
    fails(f, "saveLorebook", json_pack("{s:s,s:o}", "id", "no-such-book", "book", book_with("x")),
          "not-found");
    fails(f, "saveLorebook", json_pack("{s:s,s:o}", "id", "../x", "book", book_with("x")),
          "bad-request");
    free(id);
    free(rev);
}

static void deletes_refuse_while_referenced_and_name_the_references(void **state)
{
    fx *f = *state;
    char *card = create_card(f, "Mira");
    json_t *v = ok(f, "saveLorebook", json_pack("{s:o}", "book", book_with("Boats.")));
    char *book = strdup(s_of(v, "id"));
    json_decref(v);
    v = ok(f, "savePreset",
           json_pack("{s:{s:s,s:f}}", "preset", "name", "Warm", "temperature", 0.7));
    char *preset = strdup(s_of(v, "id"));
    json_decref(v);
    v = ok(f, "savePersona",
           json_pack("{s:n,s:s,s:s,s:n,s:s}", "id", "name", "Ash", "description", "A traveller.",
                     "avatar", "lorebookId", book));
    char *persona = strdup(s_of(v, "id"));
    json_decref(v);
    char *sid = new_session(f, card);
    json_decref(ok(f, "setSessionBinding",
                   json_pack("{s:s,s:s,s:s,s:s,s:[s]}", "sessionId", sid, "cardId", card,
                             "presetId", preset, "personaId", persona, "lorebookIds", book)));

    const char *m = fails(f, "deleteLorebook", json_pack("{s:s}", "id", book), "in-use");
    assert_non_null(strstr(m, sid));
    assert_non_null(strstr(m, persona));
    m = fails(f, "deletePreset", json_pack("{s:s}", "id", preset), "in-use");
    assert_non_null(strstr(m, sid));
    m = fails(f, "deletePersona", json_pack("{s:s}", "id", persona), "in-use");
    assert_non_null(strstr(m, sid));
    fails(f, "deletePreset", json_pack("{s:s}", "id", "nope"), "not-found");
    fails(f, "deletePersona", json_pack("{}"), "bad-request");

    /* unbind the assets: the preset and persona go, the book is still the persona's */
    json_decref(ok(f, "setSessionBinding",
                   json_pack("{s:s,s:s,s:n,s:n,s:[]}", "sessionId", sid, "cardId", card, "presetId",
                             "personaId", "lorebookIds")));
    v = ok(f, "deletePreset", json_pack("{s:s}", "id", preset));
    assert_true(json_is_true(json_object_get(v, "deleted")));
    json_decref(v);
    fails(f, "getPreset", json_pack("{s:s}", "id", preset), "not-found");
    m = fails(f, "deleteLorebook", json_pack("{s:s}", "id", book), "in-use");
    assert_non_null(strstr(m, "persona"));
    json_decref(ok(f, "deletePersona", json_pack("{s:s}", "id", persona)));
    json_decref(ok(f, "deleteLorebook", json_pack("{s:s}", "id", book)));
    fails(f, "deleteLorebook", json_pack("{s:s}", "id", book), "not-found");
    free(sid);
    free(card);
    free(book);
    free(preset);
    free(persona);
}

static void presets_and_personas_validate_and_keep_revisions(void **state)
{
    fx *f = *state;
    fails(f, "savePreset", json_pack("{s:s}", "preset", "x"), "bad-request");
    fails(f, "savePreset", json_pack("{s:{s:s}}", "preset", "temperature", "hot"), "bad-request");
    json_t *v = ok(f, "savePreset",
                   json_pack("{s:{s:s,s:f}}", "preset", "name", "Cool", "temperature", 0.2));
    char *id = strdup(s_of(v, "id")), *rev = strdup(s_of(v, "revision"));
    json_decref(v);
    json_decref(ok(f, "savePreset",
                   json_pack("{s:s,s:{s:s,s:f},s:s}", "id", id, "preset", "name", "Cool",
                             "temperature", 0.4, "expectedRevision", rev)));
    fails(
        f, "savePreset",
        json_pack("{s:s,s:{s:s},s:s}", "id", id, "preset", "name", "Cool", "expectedRevision", rev),
        "revision-conflict");
    v = ok(f, "getPreset", json_pack("{s:s}", "id", id));
    assert_float_equal(json_number_value(json_object_get(v, "temperature")), 0.4, 1e-9);
    json_decref(v);

    /* personas: name required, avatar a data URL of an image, lorebook must exist */
    fails(f, "savePersona", json_pack("{s:s}", "description", "no name"), "bad-request");
    fails(f, "savePersona", json_pack("{s:s,s:s}", "name", "A", "avatar", "http://x/a.png"),
          "bad-request");
    fails(f, "savePersona",
          json_pack("{s:s,s:s}", "name", "A", "avatar", "data:image/png;base64,@@@"),
          "bad-request");
    fails(f, "savePersona", json_pack("{s:s,s:s}", "name", "A", "lorebookId", "missing"),
          "not-found");
    fails(f, "savePersona", json_pack("{s:s,s:s}", "id", "ghost", "name", "A"), "not-found");
    v = ok(
        f, "savePersona",
        json_pack("{s:s,s:s,s:s}", "name", "Rin", "avatar",
                  "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42"
                  "mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
                  "description", "Quiet."));
    char *pid = strdup(s_of(v, "id"));
    json_decref(v);
    v = ok(f, "savePersona", json_pack("{s:s,s:s,s:n}", "id", pid, "name", "Rin B", "avatar"));
    json_decref(v);
    v = ok(f, "getPersona", json_pack("{s:s}", "id", pid));
    assert_string_equal(s_of(v, "name"), "Rin B");
    assert_string_equal(s_of(v, "description"), "Quiet.");
    assert_true(json_is_null(json_object_get(v, "avatar")));
    json_decref(v);
    free(pid);
    free(id);
    free(rev);
}

static void embedded_lorebook_edits_go_through_the_card_revision(void **state)
{
    fx *f = *state;
    char *card = NULL;
    char *sid = cdsh_test_tavern_bound_session(&f->w, "import", "embedded", &card);
    json_t *v = ok(f, "getCharacterLorebook", json_pack("{s:s}", "cardId", card));
    json_t *book = json_deep_copy(json_object_get(v, "book"));
    char *rev = strdup(s_of(v, "revision"));
    assert_true(json_integer_value(json_object_get(v, "entries")) > 0);
    json_decref(v);
    void *it = json_object_iter(json_object_get(book, "entries"));
    assert_non_null(it);
    json_t *e = json_object_iter_value(it);
    json_object_set_new(e, "content", json_string("The Eldoria woods glow blue."));

    v = ok(f, "saveCharacterLorebook",
           json_pack("{s:s,s:O,s:s}", "cardId", card, "book", book, "expectedRevision", rev));
    char *rev2 = strdup(s_of(v, "revision"));
    json_decref(v);
    /* the card (its data.character_book) and the tools' copy both changed */
    v = ok(f, "getCharacterDetail", json_pack("{s:s}", "cardId", card));
    assert_string_equal(s_of(v, "revision"), rev2);
    char *dump = json_dumps(json_object_get(v, "record"), 0);
    assert_non_null(strstr(dump, "glow blue"));
    free(dump);
    json_decref(v);
    char lib_id[200];
    snprintf(lib_id, sizeof lib_id, "card:%s", card);
    v = ok(f, "getLorebook", json_pack("{s:s}", "id", lib_id));
    dump = json_dumps(v, 0);
    assert_non_null(strstr(dump, "glow blue"));
    free(dump);
    json_decref(v);
    /* a saveCharacter with the old revision conflicts: one revision for both */
    fails(f, "saveCharacter",
          json_pack("{s:s,s:{s:s},s:s}", "cardId", card, "patch", "scenario", "x",
                    "expectedRevision", rev),
          "revision-conflict");
    fails(f, "saveCharacterLorebook",
          json_pack("{s:s,s:O,s:s}", "cardId", card, "book", book, "expectedRevision", rev),
          "revision-conflict");
    fails(f, "getCharacterLorebook", json_pack("{s:s}", "cardId", "no-card-00000000"), "not-found");
    fails(f, "saveCharacterLorebook", json_pack("{s:s,s:i}", "cardId", card, "book", 3),
          "bad-request");

    /* delete with salvage: the book moves into the library, the card has none */
    v = ok(f, "deleteEmbeddedLorebook",
           json_pack("{s:s,s:s,s:b}", "cardId", card, "expectedRevision", rev2, "salvage", 1));
    char *salvaged = strdup(s_of(v, "libraryId"));
    json_decref(v);
    v = ok(f, "getCharacterLorebook", json_pack("{s:s}", "cardId", card));
    assert_true(json_is_null(json_object_get(v, "book")));
    json_decref(v);
    fails(f, "getLorebook", json_pack("{s:s}", "id", lib_id), "not-found");
    v = ok(f, "getLorebook", json_pack("{s:s}", "id", salvaged));
    dump = json_dumps(v, 0);
    assert_non_null(strstr(dump, "glow blue"));
    free(dump);
    json_decref(v);
    fails(f, "deleteEmbeddedLorebook", json_pack("{s:s}", "cardId", card), "not-found");
    json_decref(book);
    free(salvaged);
    free(rev);
    free(rev2);
    free(card);
    free(sid);
}

static void regex_rules_save_all_or_nothing(void **state)
{
    fx *f = *state;
    json_t *l = ok(f, "listRegexRules", json_pack("{s:b}", "withRevision", 1));
    char *rev = strdup(s_of(l, "revision"));
    assert_int_equal(json_array_size(json_object_get(l, "rules")), 0);
    json_decref(l);
    json_t *good =
        json_pack("{s:s,s:s,s:s,s:s,s:[s],s:[s]}", "id", "rx-a", "name", "stars", "find",
                  "/\\*(.+?)\\*/g", "replace", "<$1>", "scopes", "output", "timing", "render");
    /* a bad pattern in the second rule: nothing saved */
    const char *m = fails(f, "saveRegexRules",
                          json_pack("{s:[O,{s:s,s:s}],s:s}", "rules", good, "name", "broken",
                                    "find", "/(unclosed/", "expectedRevision", rev),
                          "bad-request");
    if (!strstr(m, "rule 1"))
        fail_msg("message: %s", m);
    assert_non_null(strstr(m, "broken"));
    fails(f, "saveRegexRules",
          json_pack("{s:[{s:s,s:[s]}]}", "rules", "find", "x", "scopes", "sideways"),
          "bad-request");
    fails(f, "saveRegexRules",
          json_pack("{s:[{s:s,s:i,s:i}]}", "rules", "find", "x", "minDepth", 5, "maxDepth", 2),
          "bad-request");
    fails(f, "saveRegexRules", json_pack("{s:[{s:s,s:i}]}", "rules", "find", "x", "minDepth", -1),
          "bad-request");
    fails(f, "saveRegexRules", json_pack("{s:[O,O]}", "rules", good, good), "bad-request");
    fails(f, "saveRegexRules", json_pack("{s:s}", "rules", "x"), "bad-request");
    json_t *list = ok(f, "listRegexRules", NULL);
    assert_int_equal(json_array_size(list), 0);
    json_decref(list);

    json_t *v = ok(f, "saveRegexRules",
                   json_pack("{s:[O,{s:s,s:s,s:i}],s:s}", "rules", good, "find", "{{char}}+",
                             "replace", "C", "substituteRegex", 1, "expectedRevision", rev));
    assert_int_equal(json_integer_value(json_object_get(v, "total")), 2);
    json_decref(v);
    fails(f, "saveRegexRules", json_pack("{s:[],s:s}", "rules", "expectedRevision", rev),
          "revision-conflict");
    list = ok(f, "listRegexRules", NULL);
    assert_int_equal(json_array_size(list), 2);
    assert_string_equal(s_of(json_array_get(list, 0), "id"), "rx-a");
    json_decref(list);
    json_decref(good);
    free(rev);
}

static void create_character_list_stories_greeting_and_render(void **state)
{
    fx *f = *state;
    fails(f, "createCharacter", json_pack("{s:s}", "description", "nameless"), "bad-request");
    fails(f, "createCharacter", json_pack("{s:s,s:s}", "name", "X", "avatar", "y"), "bad-request");
    char *card = create_card(f, "Mira");
    json_t *v = ok(f, "listStories", json_pack("{s:s}", "cardId", card));
    assert_int_equal(json_array_size(v), 0);
    json_decref(v);
    fails(f, "listStories", json_pack("{s:s}", "cardId", "ghost-00000000"), "not-found");
    char *sid = new_session(f, card);
    v = ok(f, "listStories", json_pack("{s:s}", "cardId", card));
    assert_int_equal(json_array_size(v), 1);
    assert_string_equal(s_of(json_array_get(v, 0), "sessionId"), sid);
    assert_non_null(strstr(s_of(json_array_get(v, 0), "storyId"), "story-"));
    json_decref(v);

    /* the greeting: macros expanded, pinned once, follows swipes before the start */
    v = ok(f, "ensureGreeting", json_pack("{s:s}", "sessionId", sid));
    assert_string_equal(s_of(v, "text"), "Hello User, I am Mira.");
    assert_true(json_is_true(json_object_get(v, "written")));
    assert_int_equal(json_integer_value(json_object_get(v, "total")), 2);
    json_decref(v);
    v = ok(f, "ensureGreeting", json_pack("{s:s}", "sessionId", sid));
    assert_false(json_is_true(json_object_get(v, "written")));
    json_decref(v);
    json_decref(ok(f, "swipeGreeting", json_pack("{s:s,s:i}", "sessionId", sid, "index", 1)));
    v = ok(f, "ensureGreeting", json_pack("{s:s}", "sessionId", sid));
    assert_string_equal(s_of(v, "text"), "Second greeting from Mira.");
    assert_true(json_is_true(json_object_get(v, "written")));
    json_decref(v);
    fails(f, "ensureGreeting", json_pack("{s:s}", "sessionId", "s-unbound"), "not-bound");

    /* rendering: display regex (global rules) with macros, in the session's identity */
    json_decref(
        ok(f, "saveRegexRules",
           json_pack("{s:[{s:s,s:s}]}", "rules", "find", "/lamp/g", "replace", "{{char}}'s lamp")));
    v = ok(f, "renderOutputText",
           json_pack("{s:s,s:s}", "sessionId", sid, "text", "A lamp, {{user}}."));
    assert_string_equal(s_of(v, "text"), "A Mira's lamp, User.");
    json_decref(v);
    fails(f, "renderOutputText", json_pack("{s:s,s:i}", "sessionId", sid, "text", 4),
          "bad-request");
    fails(f, "renderOutputText",
          json_pack("{s:s,s:s,s:i}", "sessionId", sid, "text", "x", "messageId", 999), "not-found");
    free(sid);
    free(card);
}

#define SAY(text) "{\"chunks\":[{\"text\":\"" text "\"}],\"finish_reason\":\"stop\"}"

static void floor_texts_prefill_the_edit_dialogs(void **state)
{
    fx *f = *state;
    cdsh_test_fake_model fm;
    cdsh_test_model_env_start(&fm, "[" SAY("The tide turns.") "," SAY("Gulls cry.") "]");
    char *sid = cdsh_test_tavern_bound_session(&f->w, "discard", "floors", NULL);
    fails(f, "getFloorUserMessage", json_pack("{s:s}", "sessionId", sid), "not-found");
    cdsh_test_tavern_turn(&f->w, sid, "I walk to the pier.");
    cdsh_test_tavern_turn(&f->w, sid, "I wave.");
    json_t *v = ok(f, "getFloorUserMessage", json_pack("{s:s,s:i}", "sessionId", sid, "turn", 1));
    assert_string_equal(s_of(v, "text"), "I walk to the pier.");
    json_decref(v);
    v = ok(f, "getFloorAssistantMessage", json_pack("{s:s}", "sessionId", sid));
    assert_int_equal(json_integer_value(json_object_get(v, "turn")), 2);
    assert_string_equal(s_of(v, "text"), "Gulls cry.");
    json_decref(v);
    fails(f, "getFloorAssistantMessage", json_pack("{s:s,s:i}", "sessionId", sid, "turn", 7),
          "not-found");
    fails(f, "getFloorUserMessage", json_pack("{s:s,s:i}", "sessionId", sid, "turn", 0),
          "bad-request");
    fails(f, "getFloorUserMessage", json_pack("{s:s}", "sessionId", "s-nobody"), "not-bound");
    /* a message id of this session renders at its depth */
    json_t *ev = cdsh_session_store_events(f->w.store, sid, 0, 1000, NULL, NULL);
    json_int_t first_reply = 0;
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e)
        if (!first_reply && !strcmp(s_of(e, "type"), "assistant/message"))
            first_reply = json_integer_value(json_object_get(e, "seq"));
    json_decref(ev);
    v = ok(f, "renderOutputText",
           json_pack("{s:s,s:s,s:I}", "sessionId", sid, "text", "x", "messageId", first_reply));
    assert_int_equal(json_integer_value(json_object_get(v, "depth")), 2);
    json_decref(v);
    free(sid);
    cdsh_test_model_env_stop(&fm);
}

/* Standing + turn context of the session's (open) turn `turn`, as the agent
 * loop asks for them. Owned. */
static char *turn_prompt(fx *f, const char *sid, long long turn)
{
    cdsh_prompt *p = cdsh_host_prompt(f->w.host);
    json_t *ctx = cdsh_prompt_turn_context(p, f->w.scope, sid, turn, NULL);
    cdsh_scope *ss = cdsh_scope_new(sid, NULL);
    char *standing = cdsh_prompt_render_dup(p, ss);
    cdsh_scope_unref(ss);
    char *c = json_dumps(ctx, 0);
    size_t n = strlen(c) + (standing ? strlen(standing) : 0) + 2;
    char *out = malloc(n);
    snprintf(out, n, "%s\n%s", standing ? standing : "", c);
    free(c);
    free(standing);
    json_decref(ctx);
    return out;
}

static bool preview_has(fx *f, const char *sid, const char *needle)
{
    json_t *v = ok(f, "previewPrompt", json_pack("{s:s}", "sessionId", sid));
    char *d = json_dumps(v, 0);
    bool has = strstr(d, needle) != NULL;
    free(d);
    json_decref(v);
    return has;
}

static void edits_show_next_turn_never_inside_a_frozen_turn(void **state)
{
    fx *f = *state;
    char *card = create_card(f, "Mira");
    json_t *v = ok(f, "saveLorebook", json_pack("{s:o}", "book", book_with("TIDE-RULE-ONE")));
    char *book = strdup(s_of(v, "id"));
    json_decref(v);
    char *sid = new_session(f, card);
    json_decref(
        ok(f, "setSessionBinding",
           json_pack("{s:s,s:s,s:[s]}", "sessionId", sid, "cardId", card, "lorebookIds", book)));
    assert_true(preview_has(f, sid, "TIDE-RULE-ONE"));

    char *t1 = turn_prompt(f, sid, 1);
    assert_non_null(strstr(t1, "TIDE-RULE-ONE"));
    v = ok(f, "saveLorebook",
           json_pack("{s:s,s:o}", "id", book, "book", book_with("TIDE-RULE-TWO")));
    json_decref(v);
    /* the open turn replays its frozen plan */
    char *t1b = turn_prompt(f, sid, 1);
    assert_string_equal(t1, t1b);
    assert_null(strstr(t1b, "TIDE-RULE-TWO"));
    /* the preview (what the next turn will see) and the next turn have the edit */
    assert_true(preview_has(f, sid, "TIDE-RULE-TWO"));
    assert_false(preview_has(f, sid, "TIDE-RULE-ONE"));
    char *t2 = turn_prompt(f, sid, 2);
    assert_non_null(strstr(t2, "TIDE-RULE-TWO"));
    assert_null(strstr(t2, "TIDE-RULE-ONE"));

    /* a persona edit re-pins the standing the same way */
    v = ok(f, "savePersona", json_pack("{s:s,s:s}", "name", "Ash", "description", "PERSONA-ONE"));
    char *persona = strdup(s_of(v, "id"));
    json_decref(v);
    json_decref(
        ok(f, "setSessionBinding",
           json_pack("{s:s,s:s,s:s}", "sessionId", sid, "cardId", card, "personaId", persona)));
    char *t3 = turn_prompt(f, sid, 3);
    assert_non_null(strstr(t3, "PERSONA-ONE"));
    json_decref(
        ok(f, "savePersona",
           json_pack("{s:s,s:s,s:s}", "id", persona, "name", "Ash", "description", "PERSONA-TWO")));
    char *t3b = turn_prompt(f, sid, 3);
    assert_null(strstr(t3b, "PERSONA-TWO"));
    char *t4 = turn_prompt(f, sid, 4);
    assert_non_null(strstr(t4, "PERSONA-TWO"));
    free(t1);
    free(t1b);
    free(t2);
    free(t3);
    free(t3b);
    free(t4);
    free(persona);
    free(book);
    free(sid);
    free(card);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(lorebook_save_checks_input_and_revision, setup, teardown),
        cmocka_unit_test_setup_teardown(deletes_refuse_while_referenced_and_name_the_references,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(presets_and_personas_validate_and_keep_revisions, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(embedded_lorebook_edits_go_through_the_card_revision, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(regex_rules_save_all_or_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(create_character_list_stories_greeting_and_render, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(floor_texts_prefill_the_edit_dialogs, setup, teardown),
        cmocka_unit_test_setup_teardown(edits_show_next_turn_never_inside_a_frozen_turn, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
