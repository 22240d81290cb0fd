/* test_transcripts.c — the ACP client against real agents' recorded wire
 * traffic (tests/data/acp-evidence/peers), replayed by
 * tests/peers/acp_replay.c: OpenCode, Claude Code ACP, Codex ACP and Gemini
 * CLI handshakes, prompts, tool/permission flows (agent request id 0),
 * auth failures and -32601 for unknown methods. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "acp_fixture.h"
#include "proto/acp/classify.h"
#include "proto/acp/conn.h"

#define PEERS_DIR CDSH_TEST_DATA_DIR "/acp-evidence/peers/"

typedef struct seen {
    char text[4096];
    json_t *kinds;
    int permissions;
    char first_option[64];
} seen;

static void on_upd(void *ud, cdsh_acp_update_kind kind, const char *name, const json_t *u)
{
    seen *s = ud;
    json_t *n = json_object_get(s->kinds, name);
    json_object_set_new(s->kinds, name, json_integer(n ? json_integer_value(n) + 1 : 1));
    const char *t = json_string_value(json_object_get(json_object_get(u, "content"), "text"));
    if (kind == CDSH_ACP_UPDATE_AGENT_MESSAGE_CHUNK && t)
        strncat(s->text, t, sizeof s->text - strlen(s->text) - 1);
}

static char *on_perm(void *ud, const json_t *params, cdsh_cancel *cancel)
{
    (void)cancel;
    seen *s = ud;
    s->permissions++;
    const char *name = json_string_value(
        json_object_get(json_array_get(json_object_get(params, "options"), 0), "name"));
    snprintf(s->first_option, sizeof s->first_option, "%s", name ? name : "");
    return NULL; /* the recording answered "cancelled" */
}

/* Expected agent text: the agent_message_chunk texts of the recording. */
static void recorded_text(const char *file, char *out, size_t size)
{
    char *text = cdsh_test_read_file(file, NULL);
    assert_non_null(text);
    out[0] = '\0';
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *rec = json_loads(line, 0, NULL);
        json_t *msg = json_loads(json_string_value(json_object_get(rec, "line")), 0, NULL);
        json_t *u = json_object_get(json_object_get(msg, "params"), "update");
        const char *kind = json_string_value(json_object_get(u, "sessionUpdate"));
        const char *t = json_string_value(json_object_get(json_object_get(u, "content"), "text"));
        if (kind && strcmp(kind, "agent_message_chunk") == 0 && t)
            strncat(out, t, size - strlen(out) - 1);
        json_decref(msg);
        json_decref(rec);
    }
    free(text);
}

static cdsh_acp_conn *open_replay(const char *file)
{
    char *peer = cdsh_test_peer_path_dup("acp_replay");
    const char *argv[] = {peer, file, NULL};
    cdsh_acp_conn_opts o = {.name = "replay",
                            .argv = argv,
                            .init_timeout_ms = cdsh_test_scale_ms(5000),
                            .request_timeout_ms = cdsh_test_scale_ms(5000),
                            .dispose_grace_ms = 500};
    cdsh_acp_conn *c = NULL;
    cdsh_error err = {0};
    int rc = cdsh_acp_conn_open(&o, &c, &err);
    free(peer);
    if (rc < 0)
        fail_msg("open: %s", err.message);
    return c;
}

static void replay_prompt(const char *name, const char *agent_name, int permissions,
                          const char *first_option)
{
    char file[1024];
    snprintf(file, sizeof file, PEERS_DIR "%s.transcript.ndjson", name);
    cdsh_test_data_path(file);
    char *home = cdsh_test_home_new();
    cdsh_acp_conn *c = open_replay(file);
    const json_t *init = cdsh_acp_conn_init_result_get(c);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(init, "agentInfo"), "name")), agent_name);
    seen s = {.kinds = json_object()};
    cdsh_acp_session_handlers h = {on_upd, on_perm, &s};
    char *sid = NULL;
    cdsh_error err = {0};
    assert_int_equal(
        cdsh_acp_conn_session_open(c, CDSH_ACP_OPEN_NEW, NULL, home, NULL, &h, &sid, &err), 0);
    json_t *p = json_pack("[{s:s,s:s}]", "type", "text", "text", "Reply with exactly: PONG");
    cdsh_acp_prompt_result res;
    assert_int_equal(cdsh_acp_conn_prompt(c, sid, p, NULL, NULL, &res, &err), 0);
    assert_string_equal(res.stop_reason, "end_turn");
    char want[4096];
    recorded_text(file, want, sizeof want);
    assert_string_equal(s.text, want);
    assert_int_equal(s.permissions, permissions);
    if (first_option)
        assert_string_equal(s.first_option, first_option);
    json_t *rej = cdsh_acp_conn_rejects_dup(c);
    assert_int_equal(json_array_size(rej), 0);
    json_decref(rej);
    cdsh_jsonrpc_remote_error rerr = {0};
    assert_int_equal(
        cdsh_acp_conn_request(c, "x/definitely_not_a_method", NULL, 0, NULL, NULL, &rerr, &err),
        CDSH_EPROTO);
    assert_int_equal(rerr.code, -32601);
    cdsh_jsonrpc_remote_error_clear(&rerr);
    cdsh_acp_prompt_result_deinit(&res);
    json_decref(p);
    json_decref(s.kinds);
    free(sid);
    cdsh_acp_conn_free(c);
    cdsh_test_home_free(home);
}

static void opencode_recording_prompts_to_end_turn(void **state)
{
    (void)state;
    replay_prompt("opencode-local", "OpenCode", 0, NULL);
}

static void opencode_tool_flow_with_permission_id_zero(void **state)
{
    (void)state;
    replay_prompt("opencode-tool", "OpenCode", 1, "Allow once");
}

static void claude_code_tool_flow_with_repeated_tool_call(void **state)
{
    (void)state;
    replay_prompt("claude-tool", "@zed-industries/claude-code-acp", 1, NULL);
}

static void claude_codex_and_gemini_recordings_prompt(void **state)
{
    (void)state;
    replay_prompt("claude-local", "@zed-industries/claude-code-acp", 0, NULL);
    replay_prompt("codex-local", "codex-acp", 0, NULL);
    replay_prompt("gemini-local2", "gemini-cli", 0, NULL);
}

static void missing_credentials_are_unauthorized(void **state)
{
    (void)state;
    const char *names[] = {"codex", "gemini"};
    for (int i = 0; i < 2; i++) {
        char file[1024];
        snprintf(file, sizeof file, PEERS_DIR "%s.transcript.ndjson", names[i]);
        cdsh_test_data_path(file);
        char *home = cdsh_test_home_new();
        cdsh_acp_conn *c = open_replay(file);
        cdsh_acp_session_handlers h = {0};
        char *sid = NULL;
        cdsh_error err = {0};
        assert_int_equal(
            cdsh_acp_conn_session_open(c, CDSH_ACP_OPEN_NEW, NULL, home, NULL, &h, &sid, &err),
            CDSH_EPROTO);
        assert_string_equal(cdsh_acp_classify_error(err.rc, err.code, err.message), "UNAUTHORIZED");
        cdsh_acp_conn_free(c);
        cdsh_test_home_free(home);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(opencode_recording_prompts_to_end_turn),
        cmocka_unit_test(opencode_tool_flow_with_permission_id_zero),
        cmocka_unit_test(claude_code_tool_flow_with_repeated_tool_call),
        cmocka_unit_test(claude_codex_and_gemini_recordings_prompt),
        cmocka_unit_test(missing_credentials_are_unauthorized),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
