/* test_tavern_story_service.c — the tavern service end to end on a real
 * home and session store: RPC envelopes and validation, every method
 * served, the seven tools with their error codes (floorConcurrency), the
 * readable-path whitelist (robustBoundaries), branches through host
 * sessions, idle maintenance only from a normal stop, and a restart. */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/session_store.h"
#include "base/db.h"
#include "host/dispatch.h"
#include "host/host.h"
#include "host/ops.h"
#include "host/rpc.h"
#include "host/scope.h"
#include "plugins/tavern/plugin.h"
#include "base/base64.h"
#include "plugins/tavern/rpc.h"
#include "plugins/tavern/service.h"
#include "plugins/tavern/service_priv.h"
#include "plugins/tavern/story.h"
#include "plugins/tavern/wire.h"

#define SAMPLE_V2 CDSH_TEST_DATA("tavern-samples/st-card-v2-seraphina.json")

typedef struct fx {
    char *home;
    cdsh_session_store *sessions;
    cdsh_tavern_service *svc;
    char *card;
    cdsh_scope *scope_a, *scope_b;
    cdsh_scope *kids[16]; /* session scopes under the agents, as the agent loop makes them */
    size_t n_kids;
} fx;

/* The scope an agent's turn on session sid runs in: a child of the agent's
 * scope named after the session (agent.c's session_scope_new), one per pair. */
static cdsh_scope *in_session(fx *f, cdsh_scope *agent, const char *sid)
{
    for (size_t i = 0; i < f->n_kids; i++)
        if (cdsh_scope_parent(f->kids[i]) == agent && !strcmp(cdsh_scope_id(f->kids[i]), sid))
            return f->kids[i];
    assert_true(f->n_kids < 16);
    return f->kids[f->n_kids++] = cdsh_scope_new(sid, agent);
}

static json_t *call(fx *f, const char *method, json_t *payload_take)
{
    json_t *env = cdsh_tavern_rpc_envelope(f->svc, method, payload_take);
    json_decref(payload_take);
    assert_non_null(env);
    return env;
}

static json_t *ok_value(json_t *env)
{
    if (!json_is_true(json_object_get(env, "ok"))) {
        char *t = json_dumps(env, 0);
        fail_msg("expected ok: %s", t);
    }
    return json_object_get(env, "value");
}

static const char *err_code(json_t *env)
{
    assert_false(json_is_true(json_object_get(env, "ok")));
    return json_string_value(json_object_get(json_object_get(env, "error"), "code"));
}

static char *import_card(fx *f)
{
    size_t len = 0;
    char *bytes = cdsh_test_read_file(SAMPLE_V2, &len);
    char *b64 = cdsh_base64_encode_dup((const uint8_t *)bytes, len);
    json_t *env = call(f, "importCharacter", json_pack("{s:s}", "fileBase64", b64));
    assert_string_equal(err_code(env), "book-choice-required");
    json_decref(env);
    env = call(f, "importCharacter", json_pack("{s:s,s:s}", "fileBase64", b64, "book", "import"));
    char *id = strdup(json_string_value(json_object_get(ok_value(env), "cardId")));
    json_decref(env);
    free(b64);
    free(bytes);
    return id;
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    cdsh_error err = {0};
    assert_int_equal(cdsh_session_store_open(cdsh_test_home(), NULL, &f->sessions, &err), 0);
    assert_int_equal(cdsh_tavern_service_new(cdsh_test_home(), NULL, f->sessions, &f->svc, &err),
                     0);
    f->card = import_card(f);
    f->scope_a = cdsh_scope_new("agent-a", NULL);
    f->scope_b = cdsh_scope_new("agent-b", NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cdsh_tavern_service_free(f->svc);
    cdsh_session_store_close(f->sessions);
    for (size_t i = 0; i < f->n_kids; i++)
        cdsh_scope_unref(f->kids[i]);
    cdsh_scope_unref(f->scope_a);
    cdsh_scope_unref(f->scope_b);
    cdsh_test_home_free(f->home);
    free(f->card);
    free(f);
    return 0;
}

static char *new_session(fx *f)
{
    cdsh_session_spec spec = {"play", "fake", "fake-model", NULL, "tavern", NULL};
    char *id = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_session_store_create(f->sessions, &spec, &id, &err), 0);
    json_t *env =
        call(f, "setSessionBinding", json_pack("{s:s,s:s}", "sessionId", id, "cardId", f->card));
    ok_value(env);
    json_decref(env);
    return id;
}

static json_t *tool(fx *f, cdsh_scope *scope, const char *name, json_t *args_take, char **notice)
{
    json_t *v = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_service_tool(f->svc, scope, name, args_take, &v, notice, &err), 0);
    json_decref(args_take);
    assert_non_null(v);
    return v;
}

static const char *tool_code(json_t *v)
{
    assert_false(json_is_true(json_object_get(v, "ok")));
    return json_string_value(json_object_get(v, "code"));
}

/* One closed turn in the host log with a memory written by the tool. */
static void play_turn(fx *f, const char *sid, int64_t turn, const char *user, const char *fact)
{
    cdsh_error err = {0};
    json_t *p = json_object();
    assert_int_equal(
        cdsh_session_store_append(f->sessions, sid, "turn/start", turn, 0, p, NULL, &err), 0);
    json_decref(p);
    p = json_pack("{s:s}", "text", user);
    assert_int_equal(
        cdsh_session_store_append(f->sessions, sid, "user/message", turn, 0, p, NULL, &err), 0);
    json_decref(p);
    assert_int_equal(
        cdsh_tavern_service_turn_begin(f->svc, in_session(f, f->scope_a, sid), sid, turn, &err), 0);
    char *notice = NULL;
    json_t *v = tool(f, in_session(f, f->scope_a, sid), "tavern_memory_write",
                     json_pack("{s:s}", "body", fact), &notice);
    assert_true(json_is_true(json_object_get(v, "ok")));
    assert_non_null(notice);
    assert_non_null(strstr(notice, "【Tavern 同轮写入】"));
    free(notice);
    json_decref(v);
    p = json_pack("{s:s}", "text", "reply");
    assert_int_equal(
        cdsh_session_store_append(f->sessions, sid, "assistant/message", turn, 1, p, NULL, &err),
        0);
    json_decref(p);
    p = json_pack("{s:s}", "reason", "done");
    assert_int_equal(
        cdsh_session_store_append(f->sessions, sid, "turn/end", turn, 0, p, NULL, &err), 0);
    json_decref(p);
    assert_int_equal(cdsh_tavern_service_turn_end(f->svc, sid, turn, &err), 0);
}

static size_t memory_count(fx *f, const char *sid)
{
    json_t *env = call(f, "getMemories", json_pack("{s:s}", "sessionId", sid));
    size_t n = json_array_size(json_object_get(ok_value(env), "active"));
    json_decref(env);
    return n;
}

static void every_method_is_served_and_validates_input(void **state)
{
    fx *f = *state;
    json_t *methods = cdsh_ops_names(cdsh_tavern_service_ops(f->svc), CDSH_OP_RPC);
    size_t n = 0;
    json_t *m;
    json_array_foreach(methods, n, m) {
        json_t *env = call(f, json_string_value(m), json_object());
        if (!json_is_true(json_object_get(env, "ok")))
            assert_string_not_equal(err_code(env), "unknown-method");
        json_decref(env);
    }
    assert_int_equal(json_array_size(methods), 67);
    json_decref(methods);
    json_t *env = call(f, "noSuchMethod", NULL);
    assert_string_equal(err_code(env), "unknown-method");
    json_decref(env);
    env = call(f, "getMemories", json_pack("{s:i}", "sessionId", 3));
    assert_string_equal(err_code(env), "bad-request");
    json_decref(env);
    env = call(f, "getMemories", json_pack("{s:s}", "sessionId", "s-unbound"));
    assert_string_equal(err_code(env), "not-bound");
    json_decref(env);
    env = call(f, "updateSettings", json_pack("{s:{s:s}}", "patch", "memory", "x"));
    assert_string_equal(err_code(env), "settings-rejected");
    json_decref(env);
    env = call(f, "updateSettings",
               json_pack("{s:{s:{s:i}}}", "patch", "memory", "retrievalTopK", 3));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(ok_value(env), "memory"),
                                                        "retrievalTopK")),
                     3);
    json_decref(env);
}

static void ui_calls_only_served_methods(void **state)
{
    fx *f = *state;
    json_t *methods = cdsh_ops_names(cdsh_tavern_service_ops(f->svc), CDSH_OP_RPC);
    /* the panel and the editor modules it hands its rpc() wrapper to */
    static const char *const files[] = {"tavern.js", "library.js", "lore-editor.js"};
    size_t calls = 0, editor_calls = 0;
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/web/tavern/%s", CDSH_SOURCE_DIR, files[i]);
        char *src = cdsh_test_read_file(path, NULL);
        assert_non_null(src);
        for (char *p = strstr(src, "rpc('"); p; p = strstr(p + 1, "rpc('")) {
            char name[64] = {0};
            if (p[5] == '/')
                continue; /* host.rpc('/tavern', method, ...) inside the wrapper */
            sscanf(p + 5, "%63[A-Za-z]", name);
            bool served = false;
            size_t k;
            json_t *m;
            json_array_foreach(methods, k, m)
                served = served || strcmp(json_string_value(m), name) == 0;
            if (!served)
                fail_msg("%s calls %s, which the service does not serve", files[i], name);
            calls++;
            editor_calls += i > 0;
        }
        free(src);
    }
    json_decref(methods);
    assert_true(calls >= 40);
    assert_true(editor_calls >= 15);
}

static void write_tools_check_floor_turn_and_binding(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    char *sid = new_session(f);
    json_t *v = tool(f, in_session(f, f->scope_a, sid), "tavern_memory_write",
                     json_pack("{s:s}", "body", "x"), NULL);
    assert_string_equal(tool_code(v), "floor-not-open");
    json_decref(v);
    assert_int_equal(
        cdsh_tavern_service_turn_begin(f->svc, in_session(f, f->scope_a, sid), sid, 1, &err), 0);
    /* a second agent on the same session starts turn 2: scope A's floor is stale */
    assert_int_equal(
        cdsh_tavern_service_turn_begin(f->svc, in_session(f, f->scope_b, sid), sid, 2, &err), 0);
    v = tool(f, in_session(f, f->scope_a, sid), "tavern_memory_write",
             json_pack("{s:s}", "body", "stale"), NULL);
    assert_string_equal(tool_code(v), "floor-stale");
    json_decref(v);
    v = tool(f, in_session(f, f->scope_b, sid), "tavern_worldstate_update",
             json_pack("{s:s,s:s}", "type", "update", "content", "no ref"), NULL);
    assert_string_equal(tool_code(v), "invalid-args");
    json_decref(v);
    v = tool(f, in_session(f, f->scope_b, sid), "tavern_worldstate_update",
             json_pack("{s:s,s:s,s:s}", "type", "add", "content", "Fog rolls in.", "expiresAt",
                       "1999-01-01"),
             NULL);
    assert_string_equal(tool_code(v), "invalid-args");
    json_decref(v);
    v = tool(f, in_session(f, f->scope_b, sid), "tavern_worldstate_update",
             json_pack("{s:s,s:s}", "type", "add", "content", "Fog rolls in."), NULL);
    assert_true(json_is_true(json_object_get(v, "ok")));
    json_decref(v);
    v = tool(f, in_session(f, f->scope_b, sid), "tavern_memory_update",
             json_pack("{s:s,s:s}", "id", "m-x", "body", "y"), NULL);
    assert_string_equal(tool_code(v), "not-found");
    json_decref(v);
    /* rebinding to another card: binding-changed, nothing written anywhere */
    size_t len = 0;
    char *bytes = cdsh_test_read_file(SAMPLE_V2, &len);
    char *b64 = cdsh_base64_encode_dup((const uint8_t *)bytes, len);
    json_t *env =
        call(f, "importCharacter", json_pack("{s:s,s:s}", "fileBase64", b64, "book", "discard"));
    const char *card2 = json_string_value(json_object_get(ok_value(env), "cardId"));
    json_t *e2 =
        call(f, "setSessionBinding", json_pack("{s:s,s:s}", "sessionId", sid, "cardId", card2));
    ok_value(e2);
    json_decref(e2);
    v = tool(f, in_session(f, f->scope_b, sid), "tavern_memory_write",
             json_pack("{s:s}", "body", "after rebind"), NULL);
    assert_string_equal(tool_code(v), "binding-changed");
    json_decref(v);
    assert_int_equal(memory_count(f, sid), 0);
    json_decref(env);
    free(b64);
    free(bytes);
    free(sid);
}

static void read_tools_respect_the_path_whitelist(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    const char *refused[] = {
        "state/wal/x.json",   "../card.json", "story.json", "stories/a.md", "state/./wal/x.json",
        "/etc/passwd.txt",    "C:/x.md",      "a//b.md",    "card.png",     ".archive.json",
        "state/template.json"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        char *p = cdsh_tavern_readable_path_dup(refused[i], &err);
        if (p)
            fail_msg("%s should be refused", refused[i]);
        assert_string_equal(err.code, "path-not-readable");
    }
    char *p = cdsh_tavern_readable_path_dup(" ./assets\\character-book.json ", &err);
    assert_string_equal(p, "assets/character-book.json");
    free(p);
    char *sid = new_session(f);
    assert_int_equal(
        cdsh_tavern_service_turn_begin(f->svc, in_session(f, f->scope_a, sid), sid, 1, &err), 0);
    json_t *v = tool(f, in_session(f, f->scope_a, sid), "tavern_worldstate_update",
                     json_pack("{s:s,s:s}", "type", "add", "content", "The inn is full."), NULL);
    json_decref(v);
    v = tool(f, in_session(f, f->scope_a, sid), "tavern_asset_list", json_object(), NULL);
    char *text = json_dumps(v, 0);
    assert_null(strstr(text, "state/wal"));
    assert_null(strstr(text, "memory/archive"));
    assert_non_null(strstr(text, "state/world-delta.jsonl"));
    assert_non_null(strstr(text, "assets/character-book.json"));
    free(text);
    json_decref(v);
    v = tool(f, in_session(f, f->scope_a, sid), "tavern_asset_read",
             json_pack("{s:s}", "path", "state/wal/a.json"), NULL);
    assert_string_equal(tool_code(v), "path-not-readable");
    json_decref(v);
    v = tool(f, in_session(f, f->scope_a, sid), "tavern_asset_read",
             json_pack("{s:s}", "path", "state/world-delta.jsonl"), NULL);
    text = json_dumps(v, 0);
    assert_non_null(strstr(text, "The inn is full."));
    free(text);
    json_decref(v);
    v = tool(f, in_session(f, f->scope_a, sid), "tavern_asset_read",
             json_pack("{s:s,s:s}", "preset", "list", "presetIdentifier", "main"), NULL);
    assert_string_equal(tool_code(v), "invalid-args");
    json_decref(v);
    /* lore: catalog, uid and query modes over the character book and deltas */
    v = tool(f, in_session(f, f->scope_a, sid), "tavern_lore_read", json_object(), NULL);
    assert_string_equal(json_string_value(json_object_get(v, "mode")), "catalog");
    json_t *first = json_array_get(json_object_get(v, "entries"), 0);
    assert_non_null(first);
    char *uid = strdup(json_string_value(json_object_get(first, "uid")));
    assert_true(json_integer_value(json_object_get(v, "tokensUsed")) <= 2500);
    json_decref(v);
    v = tool(f, in_session(f, f->scope_a, sid), "tavern_lore_read", json_pack("{s:s}", "uid", uid),
             NULL);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(v, "entries"), 0), "uid")),
        uid);
    json_decref(v);
    v = tool(f, in_session(f, f->scope_a, sid), "tavern_lore_read",
             json_pack("{s:s}", "uid", "nope:none"), NULL);
    assert_string_equal(tool_code(v), "not-found");
    json_decref(v);
    v = tool(f, in_session(f, f->scope_a, sid), "tavern_lore_read",
             json_pack("{s:s,s:s}", "query", "inn", "source", "delta"), NULL);
    assert_int_equal(json_array_size(json_object_get(v, "entries")), 1);
    json_decref(v);
    free(uid);
    free(sid);
}

static void branches_fork_host_sessions_and_keep_the_source(void **state)
{
    fx *f = *state;
    char *sid = new_session(f);
    play_turn(f, sid, 1, "hello", "Elara met the traveller at the gate.");
    play_turn(f, sid, 2, "go on", "The traveller carries a sealed letter.");
    json_t *env = call(f, "regenerate", json_pack("{s:s}", "sessionId", sid));
    json_t *v = ok_value(env);
    const char *child = json_string_value(json_object_get(v, "childSessionId"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "resend"), "text")),
                        "go on");
    assert_int_equal(memory_count(f, sid), 2);
    assert_int_equal(memory_count(f, child), 1);
    json_t *sib = call(f, "getFloorSiblings", json_pack("{s:s}", "sessionId", child));
    json_t *swipe = json_object_get(ok_value(sib), "swipe");
    assert_int_equal(json_integer_value(json_object_get(swipe, "index")), 2);
    assert_int_equal(json_integer_value(json_object_get(swipe, "total")), 2);
    json_decref(sib);
    json_decref(env);
    env = call(f, "editAssistantMessage",
               json_pack("{s:s,s:i,s:s}", "sessionId", sid, "turn", 2, "text", "An edited reply."));
    v = ok_value(env);
    child = json_string_value(json_object_get(v, "childSessionId"));
    assert_int_equal(memory_count(f, child), 1);
    cdsh_error err = {0};
    json_t *msgs = cdsh_session_store_messages(f->sessions, child, &err);
    json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
    assert_string_equal(json_string_value(json_object_get(last, "content")), "An edited reply.");
    json_decref(msgs);
    json_decref(env);
    env = call(f, "rollbackToFloor", json_pack("{s:s,s:i}", "sessionId", sid, "turn", 1));
    v = ok_value(env);
    assert_null(json_object_get(v, "resend"));
    assert_int_equal(memory_count(f, json_string_value(json_object_get(v, "childSessionId"))), 1);
    json_decref(env);
    env = call(f, "editUserMessage",
               json_pack("{s:s,s:i,s:s}", "sessionId", sid, "turn", 1, "text", "hi there"));
    v = ok_value(env);
    assert_int_equal(memory_count(f, json_string_value(json_object_get(v, "childSessionId"))), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "resend"), "text")),
                        "hi there");
    json_decref(env);
    env = call(f, "regenerate", json_pack("{s:s,s:i}", "sessionId", sid, "turn", 9));
    assert_string_equal(err_code(env), "not-found");
    json_decref(env);
    assert_int_equal(memory_count(f, sid), 2);
    /* restart: everything is where it was */
    cdsh_tavern_service_free(f->svc);
    assert_int_equal(cdsh_tavern_service_new(cdsh_test_home(), NULL, f->sessions, &f->svc, &err),
                     0);
    assert_int_equal(memory_count(f, sid), 2);
    json_t *floors = call(f, "listFloors", json_pack("{s:s}", "sessionId", sid));
    assert_int_equal(json_array_size(ok_value(floors)), 2);
    json_decref(floors);
    free(sid);
}

typedef struct fake_helper {
    const char *finish;
    int calls;
} fake_helper;

static int summarize(void *ud, const char *prompt, char **finish, char **text, cdsh_error *err)
{
    fake_helper *h = ud;
    (void)err;
    h->calls++;
    assert_non_null(strstr(prompt, "Output only the body"));
    *finish = h->finish ? strdup(h->finish) : NULL;
    *text = strdup("Elara and the traveller share a secret.");
    return 0;
}

static void idle_summarizes_only_after_a_normal_stop(void **state)
{
    fx *f = *state;
    json_t *env = call(
        f, "updateSettings",
        json_pack("{s:{s:{s:i,s:i}}}", "patch", "memory", "maxEntries", 1, "compressBatch", 2));
    ok_value(env);
    json_decref(env);
    char *sid = new_session(f);
    play_turn(f, sid, 1, "a", "Elara keeps a secret about the north road.");
    play_turn(f, sid, 2, "b", "The traveller knows the secret password.");
    fake_helper h = {"length", 0};
    bool did = true;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_service_idle(f->svc, sid, summarize, &h, &did, &err), CDSH_EPROTO);
    assert_false(did);
    assert_int_equal(memory_count(f, sid), 2);
    /* at most one attempt per closed turn */
    h.finish = "stop";
    assert_int_equal(cdsh_tavern_service_idle(f->svc, sid, summarize, &h, &did, &err), 0);
    assert_int_equal(h.calls, 1);
    play_turn(f, sid, 3, "c", "The gate opens at dawn for those who know it.");
    assert_int_equal(cdsh_tavern_service_idle(f->svc, sid, summarize, &h, &did, &err), 0);
    assert_true(did);
    assert_int_equal(h.calls, 2);
    env = call(f, "getMemories", json_pack("{s:s}", "sessionId", sid));
    assert_int_equal(json_array_size(json_object_get(ok_value(env), "archived")), 2);
    json_decref(env);
    char *ctx = NULL;
    assert_int_equal(cdsh_tavern_service_turn_context(f->svc, sid, "secret", &ctx, &err), 0);
    assert_non_null(strstr(ctx, "[Memories]"));
    free(ctx);
    free(sid);
}

typedef struct fake_reply {
    const char *finish;
    int calls;
    size_t seen;
    char *system; /* the system message of the last call (owned) */
} fake_reply;

static int helper(void *ud, const json_t *messages, char **finish, char **text, cdsh_error *err)
{
    fake_reply *r = ud;
    (void)err;
    r->calls++;
    r->seen = json_array_size(messages);
    assert_string_equal(json_string_value(json_object_get(json_array_get(messages, 0), "role")),
                        "system");
    free(r->system);
    r->system =
        strdup(json_string_value(json_object_get(json_array_get(messages, 0), "content")));
    *finish = r->finish ? strdup(r->finish) : NULL;
    *text = strdup("I draw my sword and step forward.");
    return 0;
}

/* One story handle per turn: the turn's begin opens the story once; the plan,
 * the memories, every tool call, the end and the maintenance all use it. */
static void a_turn_opens_its_story_once(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    char *sid = new_session(f);
    cdsh_scope *sc = in_session(f, f->scope_a, sid);
    uint64_t before = cdsh_db_open_count();
    assert_int_equal(cdsh_tavern_service_turn_begin(f->svc, sc, sid, 1, &err), 0);
    json_t *plan = NULL;
    assert_int_equal(cdsh_tavern_wire_plan(f->svc, sid, &plan, &err), 0);
    assert_non_null(plan);
    json_decref(plan);
    json_t *v = tool(f, sc, "tavern_memory_write",
                     json_pack("{s:s}", "body", "The lantern was lit at the old mill."), NULL);
    assert_true(json_is_true(json_object_get(v, "ok")));
    json_decref(v);
    v = tool(f, sc, "tavern_worldstate_update",
             json_pack("{s:s,s:s}", "type", "add", "content", "Rain over the mill."), NULL);
    assert_true(json_is_true(json_object_get(v, "ok")));
    json_decref(v);
    v = tool(f, sc, "tavern_memory_search", json_pack("{s:s}", "query", "lantern mill"), NULL);
    assert_int_equal(json_integer_value(json_object_get(v, "count")), 1);
    json_decref(v);
    v = tool(f, sc, "tavern_asset_list", json_object(), NULL);
    json_decref(v);
    char *text = NULL;
    assert_int_equal(cdsh_tavern_service_turn_context(f->svc, sid, "lantern", &text, &err), 0);
    assert_non_null(strstr(text, "The lantern was lit at the old mill."));
    assert_non_null(strstr(text, "Rain over the mill."));
    free(text);
    assert_int_equal(cdsh_tavern_service_turn_end(f->svc, sid, 1, &err), 0);
    fake_helper h = {"stop", 0};
    assert_int_equal(cdsh_tavern_service_idle(f->svc, sid, summarize, &h, NULL, &err), 0);
    assert_int_equal(cdsh_db_open_count() - before, 1);
    /* the turn's writes were logged in its floor, and the floor was committed */
    json_t *env = call(f, "listFloors", json_pack("{s:s}", "sessionId", sid));
    json_t *floors = ok_value(env);
    json_t *fl = json_array_get(floors, 0);
    assert_true(json_is_true(json_object_get(fl, "committed")));
    assert_true(json_integer_value(json_object_get(fl, "records")) >= 2);
    json_decref(env);
    /* after the maintenance the turn is gone: tools find no floor, and the
     * next maintenance opens the story itself */
    v = tool(f, sc, "tavern_memory_write", json_pack("{s:s}", "body", "late"), NULL);
    assert_string_equal(tool_code(v), "floor-not-open");
    json_decref(v);
    before = cdsh_db_open_count();
    assert_int_equal(cdsh_tavern_service_idle(f->svc, sid, summarize, &h, NULL, &err), 0);
    assert_int_equal(cdsh_db_open_count() - before, 1);
    free(sid);
}

/* A tool call lent the turn's handle keeps it valid after the turn ends and
 * the maintenance drops it; the story is closed only when the last user is done. */
static void the_turn_handle_outlives_its_turn_for_its_borrowers(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    char *sid = new_session(f);
    cdsh_scope *sc = in_session(f, f->scope_a, sid);
    assert_int_equal(cdsh_tavern_service_turn_begin(f->svc, sc, sid, 1, &err), 0);
    cdsh_tavern_story *borrowed = NULL;
    uint64_t before = cdsh_db_open_count();
    assert_int_equal(cdsh__tavern_session_story(f->svc, sid, &borrowed, &err), 0);
    assert_int_equal(cdsh_db_open_count(), before); /* the turn's handle, not a new one */
    assert_int_equal(cdsh_tavern_service_turn_end(f->svc, sid, 1, &err), 0);
    fake_helper h = {"stop", 0};
    assert_int_equal(cdsh_tavern_service_idle(f->svc, sid, summarize, &h, NULL, &err), 0);
    json_t *floors = NULL;
    assert_int_equal(cdsh_tavern_story_floors(borrowed, &floors, &err), 0);
    assert_true(json_is_true(json_object_get(json_array_get(floors, 0), "committed")));
    json_decref(floors);
    cdsh_tavern_story_free(borrowed);
    free(sid);
}

/* The open turn is found by the session id on the call's scope chain: any
 * agent's scope for that session reaches it; another session's does not. */
static void tools_find_the_turn_by_session_id(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    char *sid = new_session(f), *other = new_session(f);
    assert_int_equal(
        cdsh_tavern_service_turn_begin(f->svc, in_session(f, f->scope_a, sid), sid, 1, &err), 0);
    /* a nested scope below the session scope (a sub-agent's view) */
    cdsh_scope *nested = cdsh_scope_new("helper", in_session(f, f->scope_b, sid));
    json_t *v = NULL, *args = json_pack("{s:s}", "body", "via nested");
    assert_int_equal(
        cdsh_tavern_service_tool(f->svc, nested, "tavern_memory_write", args, &v, NULL, &err), 0);
    json_decref(args); /* the service borrows its arguments */
    assert_true(json_is_true(json_object_get(v, "ok")));
    json_decref(v);
    cdsh_scope_unref(nested);
    v = tool(f, in_session(f, f->scope_a, other), "tavern_memory_write",
             json_pack("{s:s}", "body", "wrong session"), NULL);
    assert_string_equal(tool_code(v), "floor-not-open");
    json_decref(v);
    v = tool(f, f->scope_a, "tavern_memory_write", json_pack("{s:s}", "body", "no session"), NULL);
    assert_string_equal(tool_code(v), "floor-not-open");
    json_decref(v);
    assert_int_equal(cdsh_tavern_service_turn_end(f->svc, sid, 1, &err), 0);
    assert_int_equal(memory_count(f, sid), 1);
    assert_int_equal(memory_count(f, other), 0);
    free(sid);
    free(other);
}

static void impersonation_is_an_explicit_helper_call(void **state)
{
    fx *f = *state;
    char *sid = new_session(f);
    play_turn(f, sid, 1, "hello", "Elara waits at the gate.");
    json_t *env = call(f, "impersonate", json_pack("{s:s}", "sessionId", sid));
    assert_string_equal(err_code(env), "helper-unavailable");
    json_decref(env);
    fake_reply r = {"length", 0, 0, NULL};
    cdsh_tavern_service_set_helper(f->svc, helper, &r);
    env = call(f, "impersonate", json_pack("{s:s}", "sessionId", sid));
    assert_string_equal(err_code(env), "helper-failed");
    json_decref(env);
    r.finish = "stop";
    cdsh_error err = {0};
    json_t *before = cdsh_session_store_info_dup(f->sessions, sid, &err);
    env = call(f, "impersonate", json_pack("{s:s}", "sessionId", sid));
    assert_string_equal(json_string_value(json_object_get(ok_value(env), "text")),
                        "I draw my sword and step forward.");
    json_decref(env);
    /* system + the greeting (the session's opening) + the two logged messages
     * + the request: history went to the model */
    assert_int_equal(r.seen, 5);
    json_t *after = cdsh_session_store_info_dup(f->sessions, sid, &err);
    /* out of band: nothing was logged in the session */
    assert_int_equal(json_integer_value(json_object_get(after, "eventCount")),
                     json_integer_value(json_object_get(before, "eventCount")));
    json_decref(before);
    json_decref(after);
    free(r.system);
    free(sid);
}

/* Impersonation is SillyTavern's `impersonate` generation: the helper sees
 * the story's standing text built for that type, so world-info entries with
 * triggers ["impersonate"] are in and ["normal"] ones are not, and
 * {{lastGenerationType}} reads "impersonate". Nothing of the story changes. */
static void impersonation_plans_an_impersonate_generation(void **state)
{
    fx *f = *state;
    json_t *book = json_pack(
        "{s:s,s:{s:{s:i,s:b,s:s,s:[s]},s:{s:i,s:b,s:s,s:[s]},s:{s:i,s:b,s:s}}}", "name", "Lore",
        "entries", "0", "uid", 0, "constant", 1, "content", "IMPERSONATE-LORE", "triggers",
        "impersonate", "1", "uid", 1, "constant", 1, "content", "NORMAL-LORE", "triggers",
        "normal", "2", "uid", 2, "constant", 1, "content", "GEN={{lastGenerationType}}");
    json_t *env =
        call(f, "saveCharacterLorebook", json_pack("{s:s,s:o}", "cardId", f->card, "book", book));
    ok_value(env);
    json_decref(env);
    char *sid = new_session(f);
    play_turn(f, sid, 1, "hello", "Elara waits at the gate.");
    json_t *pv = call(f, "previewPrompt", json_pack("{s:s}", "sessionId", sid));
    const char *standing = json_string_value(json_object_get(ok_value(pv), "standing"));
    assert_non_null(strstr(standing, "NORMAL-LORE"));
    /* a turn-local macro's entry goes to the turn context, not the standing */
    assert_non_null(
        strstr(json_string_value(json_object_get(ok_value(pv), "engineTurn")), "GEN=normal"));
    assert_null(strstr(standing, "IMPERSONATE-LORE"));
    json_decref(pv);
    /* a quiet generation (RPC and `cdsh tavern preview --type quiet`) */
    pv = call(f, "previewPrompt",
              json_pack("{s:s,s:s}", "sessionId", sid, "generationType", "quiet"));
    assert_null(strstr(json_string_value(json_object_get(ok_value(pv), "standing")), "LORE"));
    assert_non_null(
        strstr(json_string_value(json_object_get(ok_value(pv), "engineTurn")), "GEN=quiet"));
    json_decref(pv);
    pv = call(f, "previewPrompt",
              json_pack("{s:s,s:s}", "sessionId", sid, "generationType", "dream"));
    assert_string_equal(err_code(pv), "bad-request");
    json_decref(pv);
    fake_reply r = {"stop", 0, 0, NULL};
    cdsh_tavern_service_set_helper(f->svc, helper, &r);
    env = call(f, "impersonate", json_pack("{s:s}", "sessionId", sid));
    assert_string_equal(json_string_value(json_object_get(ok_value(env), "generationType")),
                        "impersonate");
    json_decref(env);
    assert_non_null(r.system);
    assert_non_null(strstr(r.system, "IMPERSONATE-LORE"));
    assert_non_null(strstr(r.system, "GEN=impersonate"));
    assert_null(strstr(r.system, "NORMAL-LORE"));
    assert_non_null(strstr(r.system, "Write the person's next line"));
    free(r.system);
    free(sid);
}

static void the_plugin_registers_tools_channel_and_service(void **state)
{
    fx *f = *state;
    cdsh_host *host = cdsh_host_new();
    cdsh_error err = {0};
    json_t *cfg = json_pack("{s:b}", "branches", 0);
    cdsh_plugin *pl = NULL;
    assert_int_equal(cdsh_plugin_load(host, &cdsh_tavern_plugin, cfg, &pl, &err), 0);
    assert_int_equal(cdsh_plugin_state_get(pl), CDSH_PLUGIN_ACTIVE);
    /* every row is reachable on its surfaces, and nothing else is there */
    cdsh_ops *ops = cdsh_tavern_service_ops(cdsh_host_service(host, CDSH_TAVERN_SERVICE));
    json_t *names = cdsh_tools_names(cdsh_host_tools(host), NULL);
    json_t *tool_rows = cdsh_ops_names(ops, CDSH_OP_TOOL);
    assert_int_equal(json_array_size(tool_rows), 7);
    assert_true(json_equal(names, tool_rows));
    json_decref(tool_rows);
    json_decref(names);
    json_t *listed = cdsh_rpc_call(cdsh_host_rpc(host), "/tavern", "$ops", NULL, NULL);
    json_t *method_rows = cdsh_ops_names(ops, CDSH_OP_RPC);
    size_t k;
    json_t *row;
    assert_int_equal(json_array_size(json_object_get(listed, "value")), 67);
    json_array_foreach(json_object_get(listed, "value"), k, row)
        assert_string_equal(json_string_value(json_object_get(row, "name")),
                            json_string_value(json_array_get(method_rows, k)));
    json_decref(method_rows);
    json_decref(listed);
    json_t *res = cdsh_rpc_call(cdsh_host_rpc(host), "/tavern", "listCharacters", NULL, NULL);
    assert_true(json_is_true(json_object_get(res, "ok")));
    assert_int_equal(json_array_size(json_object_get(res, "value")), 1); /* the fixture's card */
    json_decref(res);
    cdsh_tavern_service *svc = cdsh_host_service(host, CDSH_TAVERN_SERVICE);
    assert_non_null(svc);
    /* a write tool dispatched for an agent with an open turn: the notice rides along */
    json_t *env = call(f, "setSessionBinding",
                       json_pack("{s:s,s:s}", "sessionId", "s-host", "cardId", f->card));
    ok_value(env);
    json_decref(env);
    assert_int_equal(
        cdsh_tavern_service_turn_begin(svc, in_session(f, f->scope_a, "s-host"), "s-host", 1, &err),
        0);
    json_t *args = json_pack("{s:s}", "body", "The host wrote this.");
    cdsh_dispatch_input in = {.call_id = "c1",
                              .name = "tavern_memory_write",
                              .args = args,
                              .agent = in_session(f, f->scope_a, "s-host")};
    cdsh_toolresult *tr = cdsh_dispatch_execute(cdsh_host_tools(host), &in);
    assert_non_null(tr);
    json_t *j = cdsh_toolresult_to_json(tr);
    char *text = json_dumps(j, 0);
    assert_non_null(strstr(text, "Tavern 同轮写入"));
    assert_non_null(strstr(text, "\"ok\": true"));
    free(text);
    json_decref(j);
    cdsh_toolresult_free(tr);
    json_decref(args);
    assert_int_equal(cdsh_tavern_service_turn_end(svc, "s-host", 1, &err), 0);
    cdsh_plugin_unload(pl);
    assert_int_equal(cdsh_rpc_count(cdsh_host_rpc(host)), 0);
    cdsh_host_free(host);
    json_decref(cfg);
}

/* World-info settings: SillyTavern's defaults, the profile (updateSettings
 * worldInfo), the story's layer (saveStoryWorldInfoSettings), validation of
 * both, and a preview that reports and replays them with its seed. */
static void world_info_settings_layer_profile_and_story(void **state)
{
    fx *f = *state;
    char *sid = new_session(f);
    json_t *env = call(f, "getWorldInfoSettings", json_pack("{s:s}", "sessionId", sid));
    json_t *eff = json_object_get(ok_value(env), "effective");
    assert_true(json_is_true(json_object_get(eff, "matchWholeWords")));
    assert_int_equal(json_integer_value(json_object_get(eff, "scanDepth")), 2);
    assert_string_equal(json_string_value(json_object_get(ok_value(env), "revision")), "");
    json_decref(env);
    env = call(f, "updateSettings",
               json_pack("{s:{s:{s:i,s:b}}}", "patch", "worldInfo", "scanDepth", 5, "recursive", 0));
    ok_value(env);
    json_decref(env);
    env = call(f, "updateSettings",
               json_pack("{s:{s:{s:i}}}", "patch", "worldInfo", "budgetPercent", 0));
    assert_string_equal(err_code(env), "settings-rejected");
    json_decref(env);
    env = call(f, "saveStoryWorldInfoSettings",
               json_pack("{s:s,s:{s:i,s:b}}", "sessionId", sid, "settings", "scanDepth", 7,
                         "matchWholeWords", 0));
    eff = json_object_get(ok_value(env), "effective");
    assert_int_equal(json_integer_value(json_object_get(eff, "scanDepth")), 7);
    assert_false(json_is_true(json_object_get(eff, "matchWholeWords")));
    assert_false(json_is_true(json_object_get(eff, "recursive"))); /* from the profile */
    json_decref(env);
    env = call(f, "saveStoryWorldInfoSettings",
               json_pack("{s:s,s:{s:i}}", "sessionId", sid, "settings", "world_info_depth", -1));
    assert_string_equal(err_code(env), "wi-settings-rejected");
    json_decref(env);
    env = call(f, "saveStoryWorldInfoSettings",
               json_pack("{s:s,s:{s:i},s:s}", "sessionId", sid, "settings", "scanDepth", 3,
                         "expectedRevision", ""));
    assert_string_not_equal(json_string_value(json_object_get(json_object_get(env, "error"), "code")),
                            "");
    assert_false(json_is_true(json_object_get(env, "ok"))); /* the layer is no longer absent */
    json_decref(env);
    /* the preview reports the settings and replays its seed */
    env = call(f, "previewPrompt", json_pack("{s:s,s:i}", "sessionId", sid, "seed", 42));
    json_t *v = ok_value(env);
    assert_int_equal(json_integer_value(json_object_get(v, "seed")), 42);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(v, "worldInfoSettings"), "scanDepth")),
        7);
    char *first = json_dumps(v, JSON_SORT_KEYS);
    json_decref(env);
    env = call(f, "previewPrompt", json_pack("{s:s,s:i}", "sessionId", sid, "seed", 42));
    char *second = json_dumps(ok_value(env), JSON_SORT_KEYS);
    assert_string_equal(first, second);
    free(first);
    free(second);
    json_decref(env);
    env = call(f, "previewPrompt", json_pack("{s:s,s:i}", "sessionId", sid, "seed", -3));
    assert_string_equal(err_code(env), "bad-request");
    json_decref(env);
    env = call(f, "previewPrompt",
               json_pack("{s:s,s:{s:i}}", "sessionId", sid, "worldInfoSettings", "scanDepth", 9));
    v = ok_value(env);
    assert_true(json_is_integer(json_object_get(v, "seed")));
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(v, "worldInfoSettings"), "scanDepth")),
        9);
    json_decref(env);
    free(sid);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(every_method_is_served_and_validates_input, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(ui_calls_only_served_methods, setup, teardown),
        cmocka_unit_test_setup_teardown(a_turn_opens_its_story_once, setup, teardown),
        cmocka_unit_test_setup_teardown(the_turn_handle_outlives_its_turn_for_its_borrowers, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(tools_find_the_turn_by_session_id, setup, teardown),
        cmocka_unit_test_setup_teardown(write_tools_check_floor_turn_and_binding, setup, teardown),
        cmocka_unit_test_setup_teardown(world_info_settings_layer_profile_and_story, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(read_tools_respect_the_path_whitelist, setup, teardown),
        cmocka_unit_test_setup_teardown(branches_fork_host_sessions_and_keep_the_source, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(idle_summarizes_only_after_a_normal_stop, setup, teardown),
        cmocka_unit_test_setup_teardown(impersonation_is_an_explicit_helper_call, setup, teardown),
        cmocka_unit_test_setup_teardown(impersonation_plans_an_impersonate_generation, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_plugin_registers_tools_channel_and_service, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
