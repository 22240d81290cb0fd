/* test_state.c — engines.json / runtime.json / sessions.json: whole-row
 * overrides, diagnostics, corrupt files left alone, the engine-lock
 * invariant on read and write, and concurrent writers (plugins/acp/state.c). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acp_fixture.h"
#include "base/err.h"
#include "plugins/acp/state.h"

static char *path_in(const char *home, const char *name)
{
    char *p = malloc(strlen(home) + strlen(name) + 16);
    sprintf(p, "%s/multi-acp/%s", home, name);
    return p;
}

static json_t *find(json_t *engines, const char *id)
{
    size_t i;
    json_t *r;
    json_array_foreach(engines, i, r) {
        if (strcmp(json_string_value(json_object_get(r, "id")), id) == 0)
            return r;
    }
    return NULL;
}

static void user_rows_override_builtins_by_whole_row(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    acp_write_engines(home, "[{\"id\":\"opencode\",\"command\":\"my-opencode\",\"sortOrder\":1},"
                            "{\"id\":\"mine\",\"command\":\"mine\",\"sortOrder\":5}]");
    json_t *engines = NULL, *diags = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_state_engines_load(cdsh_test_home(), &engines, &diags, &err), 0);
    assert_int_equal(json_array_size(diags), 0);
    assert_int_equal(json_array_size(engines), 8);
    json_t *oc = json_array_get(engines, 0);
    assert_string_equal(json_string_value(json_object_get(oc, "id")), "opencode");
    /* Whole row: the builtin's args ["acp"] are not merged in. */
    assert_int_equal(json_array_size(json_object_get(oc, "args")), 0);
    assert_string_equal(json_string_value(json_object_get(oc, "source")), "user-file");
    assert_string_equal(json_string_value(json_object_get(json_array_get(engines, 1), "id")),
                        "mine");
    json_decref(engines);
    json_decref(diags);
    cdsh_test_home_free(home);
}

static void bad_user_rows_become_diagnostics(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    acp_write_engines(home, "[{\"id\":\"Bad Id\",\"command\":\"x\"},"
                            "{\"id\":\"sneaky\",\"command\":\"x\",\"health\":{\"status\":\"ok\"}},"
                            "{\"id\":\"fine\",\"command\":\"x\"}]");
    json_t *engines = NULL, *diags = NULL;
    assert_int_equal(cdsh_acp_state_engines_load(cdsh_test_home(), &engines, &diags, NULL), 0);
    assert_int_equal(json_array_size(diags), 2);
    assert_null(find(engines, "sneaky"));
    assert_non_null(find(engines, "fine"));
    const char *m = json_string_value(json_object_get(json_array_get(diags, 1), "message"));
    assert_non_null(strstr(m, "\"health\" is measured by cdsh"));
    json_decref(engines);
    json_decref(diags);
    cdsh_test_home_free(home);
}

static void corrupt_engines_file_is_reported_and_never_overwritten(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    acp_write_engines(home, "[]");
    char *p = path_in(home, "engines.json");
    cdsh_test_write_file(p, "{ this is not json");
    json_t *engines = NULL, *diags = NULL;
    assert_int_equal(cdsh_acp_state_engines_load(cdsh_test_home(), &engines, &diags, NULL), 0);
    assert_int_equal(json_array_size(engines), 7); /* builtins still there */
    assert_int_equal(json_array_size(diags), 1);
    json_t *row = json_pack("{s:s,s:s}", "id", "new", "command", "x");
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_state_engine_save(cdsh_test_home(), row, &err), CDSH_EPROTO);
    assert_string_equal(err.code, "STATE_CORRUPT");
    assert_non_null(strstr(err.message, "engines.json"));
    char *after = cdsh_test_read_file(p, NULL);
    assert_string_equal(after, "{ this is not json");
    free(after);
    json_decref(row);
    json_decref(engines);
    json_decref(diags);
    free(p);
    cdsh_test_home_free(home);
}

static void update_persists_the_merged_row_and_refuses_read_only_fields(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    json_t *patch = json_pack("{s:b,s:{s:s}}", "enabled", 0, "env", "OPENCODE_X", "1");
    json_t *merged = NULL;
    cdsh_error err = {0};
    assert_int_equal(
        cdsh_acp_state_engine_update(cdsh_test_home(), "opencode", patch, &merged, &err), 0);
    json_decref(patch);
    char *p = path_in(home, "engines.json");
    char *text = cdsh_test_read_file(p, NULL);
    json_t *doc = json_loads(text, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(doc, "version")), 1);
    json_t *row = json_array_get(json_object_get(doc, "engines"), 0);
    assert_true(json_is_false(json_object_get(row, "enabled")));
    /* The full row is stored (the loader does no deep merge), without runtime fields. */
    assert_string_equal(json_string_value(json_array_get(json_object_get(row, "args"), 0)), "acp");
    assert_null(json_object_get(row, "health"));
    assert_null(json_object_get(row, "capabilities"));
    json_decref(doc);
    json_decref(merged);
    patch = json_pack("{s:{s:b}}", "capabilities", "fs", 1);
    assert_int_equal(cdsh_acp_state_engine_update(cdsh_test_home(), "opencode", patch, NULL, &err),
                     CDSH_EPERM);
    assert_string_equal(err.code, "READ_ONLY_FIELD");
    char *after = cdsh_test_read_file(p, NULL);
    assert_string_equal(after, text);
    json_decref(patch);
    /* A full row with health is refused too. */
    row = json_pack("{s:s,s:s,s:{s:s}}", "id", "x", "command", "x", "health", "status", "ok");
    assert_int_equal(cdsh_acp_state_engine_save(cdsh_test_home(), row, &err), CDSH_EPERM);
    json_decref(row);
    json_t *empty = json_object();
    assert_int_equal(cdsh_acp_state_engine_update(cdsh_test_home(), "nope", empty, NULL, &err),
                     CDSH_ENOTFOUND);
    json_decref(empty);
    assert_string_equal(err.code, "UNKNOWN_ENGINE");
    free(after);
    free(text);
    free(p);
    cdsh_test_home_free(home);
}

static void runtime_health_shows_in_the_effective_rows(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    json_t *h = json_pack("{s:s,s:s,s:i,s:n}", "lastCheckAt", "2026-11-29T00:00:00.000Z", "status",
                          "ok", "latencyMs", 12, "error");
    assert_int_equal(cdsh_acp_state_runtime_record(cdsh_test_home(), "gemini", NULL, h, NULL), 0);
    json_t *row = NULL;
    assert_int_equal(cdsh_acp_state_engine_find(cdsh_test_home(), "gemini", &row, NULL), 0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(row, "health"), "status")), "ok");
    json_decref(row);
    json_decref(h);
    cdsh_test_home_free(home);
}

static void sessions_bind_with_the_spec_shape(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_state_session_bind(cdsh_test_home(), "s1", "opencode", "/tmp", &err),
                     0);
    assert_int_equal(cdsh_acp_state_session_set_acp(cdsh_test_home(), "s1", "acp-1", &err), 0);
    char *p = path_in(home, "sessions.json");
    char *text = cdsh_test_read_file(p, NULL);
    json_t *doc = json_loads(text, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(doc, "version")), 1);
    json_t *e = json_object_get(json_object_get(doc, "sessions"), "s1");
    assert_string_equal(json_string_value(json_object_get(e, "engineId")), "opencode");
    assert_string_equal(json_string_value(json_object_get(e, "acpSessionId")), "acp-1");
    assert_string_equal(json_string_value(json_object_get(e, "cwd")), "/tmp");
    assert_true(json_is_string(json_object_get(e, "createdAt")));
    assert_true(json_is_string(json_object_get(e, "lastUsedAt")));
    json_decref(doc);
    free(text);
    assert_int_equal(cdsh_acp_state_session_get(cdsh_test_home(), "nope", &doc, &err),
                     CDSH_ENOTFOUND);
    assert_string_equal(err.code, "UNBOUND_SESSION");
    free(p);
    cdsh_test_home_free(home);
}

static void engine_is_immutable_after_the_first_message_on_write(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_state_session_bind(cdsh_test_home(), "s1", "opencode", "/tmp", NULL),
                     0);
    assert_int_equal(cdsh_acp_state_session_set_acp(cdsh_test_home(), "s1", "acp-1", NULL), 0);
    /* Before the first message a rebind is fine and drops the old ACP id. */
    assert_int_equal(cdsh_acp_state_session_bind(cdsh_test_home(), "s1", "gemini", NULL, &err), 0);
    json_t *e = NULL;
    assert_int_equal(cdsh_acp_state_session_get(cdsh_test_home(), "s1", &e, NULL), 0);
    assert_true(json_is_null(json_object_get(e, "acpSessionId")));
    json_decref(e);
    assert_int_equal(cdsh_acp_state_session_mark_message(cdsh_test_home(), "s1", NULL, NULL), 0);
    assert_int_equal(cdsh_acp_state_session_bind(cdsh_test_home(), "s1", "opencode", NULL, &err),
                     CDSH_EPERM);
    assert_string_equal(err.code, "ENGINE_LOCKED");
    assert_int_equal(cdsh_acp_state_session_get(cdsh_test_home(), "s1", &e, NULL), 0);
    assert_string_equal(json_string_value(json_object_get(e, "engineId")), "gemini");
    assert_string_equal(json_string_value(json_object_get(e, "lockedEngineId")), "gemini");
    json_decref(e);
    /* Same engine again is fine; unbinding is always allowed. */
    assert_int_equal(cdsh_acp_state_session_bind(cdsh_test_home(), "s1", "gemini", "/var", &err),
                     0);
    assert_int_equal(cdsh_acp_state_session_remove(cdsh_test_home(), "s1", &err), 0);
    assert_int_equal(cdsh_acp_state_session_remove(cdsh_test_home(), "s1", &err), CDSH_ENOTFOUND);
    cdsh_test_home_free(home);
}

static void engine_lock_is_checked_on_read(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    assert_int_equal(cdsh_acp_state_session_bind(cdsh_test_home(), "s1", "opencode", "/tmp", NULL),
                     0);
    assert_int_equal(cdsh_acp_state_session_mark_message(cdsh_test_home(), "s1", NULL, NULL), 0);
    char *p = path_in(home, "sessions.json");
    char *text = cdsh_test_read_file(p, NULL);
    json_t *doc = json_loads(text, 0, NULL);
    json_object_set_new(json_object_get(json_object_get(doc, "sessions"), "s1"), "engineId",
                        json_string("gemini"));
    char *edited = json_dumps(doc, 0);
    cdsh_test_write_file(p, edited);
    json_t *e = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_state_session_get(cdsh_test_home(), "s1", &e, &err), CDSH_EPERM);
    assert_string_equal(err.code, "ENGINE_LOCKED");
    assert_non_null(strstr(err.message, "\"opencode\""));
    /* Writes touching that entry are refused and leave the file as it is. */
    assert_int_equal(cdsh_acp_state_session_set_acp(cdsh_test_home(), "s1", "x", &err), CDSH_EPERM);
    char *after = cdsh_test_read_file(p, NULL);
    assert_string_equal(after, edited);
    free(after);
    free(edited);
    /* Issue 21 item 11: editing both engineId and lockedEngineId is seen too
     * (the lock's seal no longer matches), on read and on write. */
    json_t *s1 = json_object_get(json_object_get(doc, "sessions"), "s1");
    assert_true(json_is_string(json_object_get(s1, "lockSeal")));
    json_object_set_new(s1, "lockedEngineId", json_string("gemini"));
    edited = json_dumps(doc, 0);
    cdsh_test_write_file(p, edited);
    assert_int_equal(cdsh_acp_state_session_get(cdsh_test_home(), "s1", &e, &err), CDSH_EPERM);
    assert_string_equal(err.code, "ENGINE_LOCKED");
    assert_non_null(strstr(err.message, "was edited"));
    assert_int_equal(cdsh_acp_state_session_bind(cdsh_test_home(), "s1", "gemini", NULL, &err),
                     CDSH_EPERM);
    free(edited);
    /* Restored by hand, it is accepted again; a fork is sealed for itself. */
    json_object_set_new(s1, "engineId", json_string("opencode"));
    json_object_set_new(s1, "lockedEngineId", json_string("opencode"));
    edited = json_dumps(doc, 0);
    cdsh_test_write_file(p, edited);
    assert_int_equal(cdsh_acp_state_session_get(cdsh_test_home(), "s1", &e, &err), 0);
    json_decref(e);
    assert_int_equal(cdsh_acp_state_session_fork(cdsh_test_home(), "s1", "s2", NULL, &err), 0);
    assert_int_equal(cdsh_acp_state_session_get(cdsh_test_home(), "s2", &e, &err), 0);
    assert_string_not_equal(json_string_value(json_object_get(e, "lockSeal")),
                            json_string_value(json_object_get(s1, "lockSeal")));
    json_decref(e);
    free(edited);
    free(text);
    json_decref(doc);
    free(p);
    cdsh_test_home_free(home);
}

static void corrupt_sessions_file_is_reported_and_not_overwritten(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    assert_int_equal(cdsh_acp_state_session_bind(cdsh_test_home(), "s1", "opencode", "/tmp", NULL),
                     0);
    char *p = path_in(home, "sessions.json");
    const char *bad[] = {"[1,2]", "{\"version\":2,\"sessions\":{}}", "{\"sessions\":[]}", "nope"};
    for (size_t i = 0; i < 4; i++) {
        cdsh_test_write_file(p, bad[i]);
        cdsh_error err = {0};
        json_t *e = NULL;
        assert_int_equal(cdsh_acp_state_session_get(cdsh_test_home(), "s1", &e, &err), CDSH_EPROTO);
        assert_string_equal(err.code, "STATE_CORRUPT");
        assert_int_equal(
            cdsh_acp_state_session_bind(cdsh_test_home(), "s2", "opencode", "/tmp", &err),
            CDSH_EPROTO);
        char *after = cdsh_test_read_file(p, NULL);
        assert_string_equal(after, bad[i]);
        free(after);
    }
    free(p);
    cdsh_test_home_free(home);
}

static void concurrent_writers_lose_no_binding(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    enum { PROCS = 4, EACH = 15 };
    pid_t kids[PROCS];
    for (int k = 0; k < PROCS; k++) {
        kids[k] = fork();
        assert_true(kids[k] >= 0);
        if (kids[k] == 0) {
            int bad = 0;
            for (int i = 0; i < EACH; i++) {
                char id[32];
                snprintf(id, sizeof id, "p%d-s%d", k, i);
                bad |= cdsh_acp_state_session_bind(cdsh_test_home(), id, "opencode", "/tmp",
                                                   NULL) != 0;
                bad |= cdsh_acp_state_session_mark_message(cdsh_test_home(), id, NULL, NULL) != 0;
            }
            _exit(bad);
        }
    }
    for (int k = 0; k < PROCS; k++) {
        int st = 0;
        assert_int_equal(waitpid(kids[k], &st, 0), kids[k]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    json_t *all = NULL;
    assert_int_equal(cdsh_acp_state_sessions_dup(cdsh_test_home(), &all, NULL), 0);
    assert_int_equal(json_object_size(all), PROCS * EACH);
    const char *k;
    json_t *v;
    json_object_foreach(all, k, v) {
        assert_string_equal(json_string_value(json_object_get(v, "lockedEngineId")), "opencode");
    }
    json_decref(all);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(user_rows_override_builtins_by_whole_row),
        cmocka_unit_test(bad_user_rows_become_diagnostics),
        cmocka_unit_test(corrupt_engines_file_is_reported_and_never_overwritten),
        cmocka_unit_test(update_persists_the_merged_row_and_refuses_read_only_fields),
        cmocka_unit_test(runtime_health_shows_in_the_effective_rows),
        cmocka_unit_test(sessions_bind_with_the_spec_shape),
        cmocka_unit_test(engine_is_immutable_after_the_first_message_on_write),
        cmocka_unit_test(engine_lock_is_checked_on_read),
        cmocka_unit_test(corrupt_sessions_file_is_reported_and_not_overwritten),
        cmocka_unit_test(concurrent_writers_lose_no_binding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
