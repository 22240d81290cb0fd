/* tavern_world.c — the tavern test world (see tavern_world.h). */
#include "support/testkit.h"

#include "support/tavern_world.h"

#include <stdlib.h>
#include <string.h>

#include "host/rpc.h"
#include "plugins/tavern/b64.h"
#include "plugins/tavern/plugin.h"

void cdsh_test_tavern_world_open(cdsh_test_tavern_world *w)
{
    cdsh_error err = {0};
    w->host = cdsh_host_new();
    json_t *cfg = json_pack("{s:b}", "branches", 1);
    assert_int_equal(cdsh_plugin_load(w->host, &cdsh_tavern_plugin, cfg, NULL, &err), 0);
    json_decref(cfg);
    assert_int_equal(cdsh_session_store_open(cdsh_test_home(), NULL, &w->store, &err), 0);
    w->scope = cdsh_scope_new("role-play", NULL);
    cdsh_agent_options o = {.host = w->host,
                            .store = w->store,
                            .scope = w->scope,
                            .base_prompt = "You are the narrator."};
    assert_int_equal(cdsh_agent_new(&o, &w->agent, &err), 0);
}

void cdsh_test_tavern_world_close(cdsh_test_tavern_world *w)
{
    cdsh_agent_free(w->agent);
    cdsh_session_store_close(w->store);
    cdsh_host_free(w->host);
    cdsh_scope_unref(w->scope);
}

json_t *cdsh_test_tavern_rpc(cdsh_test_tavern_world *w, const char *method, json_t *payload_take)
{
    json_t *res = cdsh_rpc_call(cdsh_host_rpc(w->host), "/tavern", method, payload_take, NULL);
    json_decref(payload_take);
    if (!json_is_true(json_object_get(res, "ok"))) {
        char *t = json_dumps(res, 0);
        fail_msg("%s failed: %s", method, t);
    }
    json_t *v = json_incref(json_object_get(res, "value"));
    json_decref(res);
    return v;
}

void cdsh_test_tavern_turn(cdsh_test_tavern_world *w, const char *sid, const char *text)
{
    cdsh_agent_outcome out;
    cdsh_error err = {0};
    assert_int_equal(cdsh_agent_run_turn(w->agent, sid, text, NULL, NULL, NULL, &out, &err), 0);
    assert_string_equal(out.reason, "done");
    cdsh_agent_outcome_deinit(&out);
}

char *cdsh_test_tavern_bound_session(cdsh_test_tavern_world *w, const char *book, const char *title,
                                     char **card)
{
    size_t len = 0;
    char *bytes = cdsh_test_read_file(CDSH_TEST_TAVERN_SAMPLE_V2, &len);
    char *sid = cdsh_test_tavern_bound_session_bytes(w, bytes, len, book, title, card);
    free(bytes);
    return sid;
}

char *cdsh_test_tavern_bound_session_bytes(cdsh_test_tavern_world *w, const char *bytes, size_t len,
                                           const char *book, const char *title, char **card)
{
    char *b64 = cdsh_tavern_b64_encode_dup((const uint8_t *)bytes, len);
    json_t *imp = cdsh_test_tavern_rpc(w, "importCharacter",
                                       json_pack("{s:s,s:s}", "fileBase64", b64, "book", book));
    cdsh_session_spec spec = {.title = title};
    char *sid = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_session_store_create(w->store, &spec, &sid, &err), 0);
    json_decref(cdsh_test_tavern_rpc(
        w, "setSessionBinding",
        json_pack("{s:s,s:O}", "sessionId", sid, "cardId", json_object_get(imp, "cardId"))));
    if (card)
        *card = strdup(json_string_value(json_object_get(imp, "cardId")));
    json_decref(imp);
    free(b64);
    return sid;
}

char *cdsh_test_tavern_import_sample(cdsh_tavern_store *store)
{
    size_t len = 0;
    char *bytes = cdsh_test_read_file(CDSH_TEST_TAVERN_SAMPLE_V2, &len);
    assert_non_null(bytes);
    json_t *res = NULL;
    cdsh_error err = {0};
    if (cdsh_tavern_store_import_card(store, (const uint8_t *)bytes, len, CDSH_TAVERN_BOOK_IMPORT,
                                      &res, &err) != 0)
        fail_msg("import of the sample card: %s %s", err.code, err.message);
    free(bytes);
    char *card = strdup(json_string_value(json_object_get(res, "cardId")));
    json_decref(res);
    return card;
}
