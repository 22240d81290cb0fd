/* test_conn.c — the ACP client (proto/acp/conn.c) against the C fixture
 * agent: handshake, streaming, multiplexing, permissions, confined fs,
 * config options vs modes, idle gate, cancel, crashes, rejected lines,
 * and no process left behind. */
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acp_fixture.h"
#include "base/clock.h"
#include "proto/acp/classify.h"
#include "proto/acp/conn.h"
#include "support/timing.h"

typedef struct rec {
    pthread_mutex_t mu;
    json_t *kinds; /* kind name → count */
    char text[8192];
    int unknown;
    const char *answer; /* permission answer (optionId) or NULL */
    json_t *last_perm;
} rec;

static void rec_init(rec *r)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    r->kinds = json_object();
}

static void rec_deinit(rec *r)
{
    json_decref(r->kinds);
    json_decref(r->last_perm);
    pthread_mutex_destroy(&r->mu);
}

static void on_upd(void *ud, cdsh_acp_update_kind kind, const char *name, const json_t *u)
{
    rec *r = ud;
    pthread_mutex_lock(&r->mu);
    json_t *n = json_object_get(r->kinds, name);
    json_object_set_new(r->kinds, name, json_integer(n ? json_integer_value(n) + 1 : 1));
    if (kind == CDSH_ACP_UPDATE_UNKNOWN)
        r->unknown++;
    if (kind == CDSH_ACP_UPDATE_AGENT_MESSAGE_CHUNK) {
        const char *t = json_string_value(json_object_get(json_object_get(u, "content"), "text"));
        if (t)
            strncat(r->text, t, sizeof r->text - strlen(r->text) - 1);
    }
    pthread_mutex_unlock(&r->mu);
}

static char *on_perm(void *ud, const json_t *params, cdsh_cancel *cancel)
{
    (void)cancel;
    rec *r = ud;
    json_decref(r->last_perm);
    r->last_perm = json_deep_copy(params);
    return r->answer ? strdup(r->answer) : NULL;
}

typedef struct fx {
    char *home;
    char *peer;
    cdsh_acp_conn *c;
    rec r;
    char *sid;
} fx;

static int open_fixture(fx *f, const char *const *extra, bool fs, cdsh_error *err)
{
    const char *argv[16] = {f->peer};
    int n = 1;
    for (; extra && *extra && n < 15; extra++)
        argv[n++] = *extra;
    argv[n] = NULL;
    cdsh_acp_conn_opts o = {.name = "fixture",
                            .argv = argv,
                            .cwd = f->home,
                            .init_timeout_ms = cdsh_test_scale_ms(5000),
                            .request_timeout_ms = cdsh_test_scale_ms(10000),
                            .dispose_grace_ms = 1000,
                            .fs_read = fs,
                            .fs_write = fs,
                            .record = true};
    return cdsh_acp_conn_open(&o, &f->c, err);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    f->peer = cdsh_test_peer_path_dup("acp_agent");
    rec_init(&f->r);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cdsh_acp_conn_free(f->c);
    free(f->sid);
    rec_deinit(&f->r);
    free(f->peer);
    cdsh_test_home_free(f->home);
    free(f);
    return 0;
}

static void open_session(fx *f)
{
    cdsh_acp_session_handlers h = {on_upd, on_perm, &f->r};
    cdsh_error err = {0};
    assert_int_equal(
        cdsh_acp_conn_session_open(f->c, CDSH_ACP_OPEN_NEW, NULL, f->home, NULL, &h, &f->sid, &err),
        0);
}

static int prompt(fx *f, const char *text, const cdsh_acp_prompt_opts *po, cdsh_cancel *cancel,
                  cdsh_acp_prompt_result *res, cdsh_error *err)
{
    json_t *p = json_pack("[{s:s,s:s}]", "type", "text", "text", text);
    int rc = cdsh_acp_conn_prompt(f->c, f->sid, p, po, cancel, res, err);
    json_decref(p);
    return rc;
}

static void initialize_reports_agent_info_and_capabilities(void **state)
{
    fx *f = *state;
    cdsh_error err = {0};
    const char *args[] = {"--no-load", NULL};
    assert_int_equal(open_fixture(f, args, true, &err), 0);
    const json_t *init = cdsh_acp_conn_init_result_get(f->c);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(init, "agentInfo"), "name")),
        "fixture-agent");
    assert_false(cdsh_acp_conn_supports(f->c, "session/load"));
    assert_true(cdsh_acp_conn_supports(f->c, "session/resume"));
    assert_true(cdsh_acp_conn_supports(f->c, "session/fork"));
    assert_false(cdsh_acp_conn_supports(f->c, "session/delete"));
    assert_true(cdsh_acp_conn_pid(f->c) > 0);
}

static void prompt_streams_every_kind_and_ignores_unknown_ones(void **state)
{
    fx *f = *state;
    assert_int_equal(open_fixture(f, NULL, true, NULL), 0);
    open_session(f);
    cdsh_acp_prompt_result res;
    cdsh_error err = {0};
    assert_int_equal(prompt(f, "all-updates", NULL, NULL, &res, &err), 0);
    assert_string_equal(res.stop_reason, "end_turn");
    /* Every update sent before the answer was delivered before the call returned. */
    const char *kinds[] = {"agent_thought_chunk", "plan",
                           "tool_call",           "tool_call_update",
                           "current_mode_update", "session_info_update",
                           "usage_update",        "notice",
                           "mystery_update",      "agent_message_chunk"};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        assert_non_null(json_object_get(f->r.kinds, kinds[i]));
    assert_int_equal(f->r.unknown, 1);
    assert_string_equal(f->r.text, "all done");
    assert_true(res.updates >= 10);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(res.response, "usage"), "inputTokens")),
        3);
    cdsh_acp_prompt_result_deinit(&res);
    json_t *cb = cdsh_acp_conn_callbacks_dup(f->c);
    assert_int_equal(json_integer_value(json_object_get(cb, "sessionUpdate:mystery_update")), 1);
    json_decref(cb);
}

static void two_sessions_share_one_process(void **state)
{
    fx *f = *state;
    assert_int_equal(open_fixture(f, NULL, true, NULL), 0);
    open_session(f);
    char *first = f->sid;
    f->sid = NULL;
    open_session(f);
    assert_string_not_equal(first, f->sid);
    assert_int_equal(cdsh_acp_conn_session_count(f->c), 2);
    cdsh_acp_prompt_result res;
    assert_int_equal(prompt(f, "sessions", NULL, NULL, &res, NULL), 0);
    assert_string_equal(f->r.text, "sessions: 2");
    cdsh_acp_prompt_result_deinit(&res);
    assert_int_equal(cdsh_acp_conn_session_release(f->c, first, true, NULL), 0);
    assert_int_equal(cdsh_acp_conn_session_count(f->c), 1);
    free(first);
}

static void permission_answers_reach_the_agent_and_fail_closed(void **state)
{
    fx *f = *state;
    assert_int_equal(open_fixture(f, NULL, true, NULL), 0);
    open_session(f);
    cdsh_acp_prompt_result res;
    f->r.answer = "once";
    assert_int_equal(prompt(f, "permission", NULL, NULL, &res, NULL), 0);
    assert_string_equal(f->r.text, "permission: selected/once");
    /* The agent's own labels reach the person unchanged. */
    json_t *opt = json_array_get(json_object_get(f->r.last_perm, "options"), 1);
    assert_string_equal(json_string_value(json_object_get(opt, "name")), "Always allow");
    cdsh_acp_prompt_result_deinit(&res);
    f->r.text[0] = '\0';
    f->r.answer = "not-an-option";
    assert_int_equal(prompt(f, "permission", NULL, NULL, &res, NULL), 0);
    assert_string_equal(f->r.text, "permission: cancelled/-");
    cdsh_acp_prompt_result_deinit(&res);
    f->r.text[0] = '\0';
    f->r.answer = NULL;
    assert_int_equal(prompt(f, "permission", NULL, NULL, &res, NULL), 0);
    assert_string_equal(f->r.text, "permission: cancelled/-");
    cdsh_acp_prompt_result_deinit(&res);
}

static void fs_calls_are_confined_to_the_session_directory(void **state)
{
    fx *f = *state;
    assert_int_equal(open_fixture(f, NULL, true, NULL), 0);
    open_session(f);
    char path[4300], cmd[9000];
    snprintf(path, sizeof path, "%s/inside.txt", f->home);
    cdsh_test_write_file(path, "one\ntwo\nthree\n");
    cdsh_acp_prompt_result res;
    snprintf(cmd, sizeof cmd, "read %s", path);
    assert_int_equal(prompt(f, cmd, NULL, NULL, &res, NULL), 0);
    assert_string_equal(f->r.text, "read: one\ntwo\nthree\n");
    cdsh_acp_prompt_result_deinit(&res);
    const char *outside[] = {"/etc/hostname", "../escape.txt", "sub/../../escape.txt"};
    for (size_t i = 0; i < 3; i++) {
        f->r.text[0] = '\0';
        snprintf(cmd, sizeof cmd, "read %s", outside[i]);
        assert_int_equal(prompt(f, cmd, NULL, NULL, &res, NULL), 0);
        assert_non_null(strstr(f->r.text, "read-error: -32602 Permission denied"));
        cdsh_acp_prompt_result_deinit(&res);
    }
    /* A symlink pointing out of the directory does not help. */
    char link[4300];
    snprintf(link, sizeof link, "%s/link", f->home);
    assert_int_equal(symlink("/etc", link), 0);
    f->r.text[0] = '\0';
    snprintf(cmd, sizeof cmd, "read %s/link/hostname", f->home);
    assert_int_equal(prompt(f, cmd, NULL, NULL, &res, NULL), 0);
    assert_non_null(strstr(f->r.text, "Permission denied"));
    cdsh_acp_prompt_result_deinit(&res);
    f->r.text[0] = '\0';
    snprintf(cmd, sizeof cmd, "write %s/new.txt hello world", f->home);
    assert_int_equal(prompt(f, cmd, NULL, NULL, &res, NULL), 0);
    assert_string_equal(f->r.text, "write: ok");
    snprintf(path, sizeof path, "%s/new.txt", f->home);
    char *got = cdsh_test_read_file(path, NULL);
    assert_string_equal(got, "hello world");
    free(got);
    cdsh_acp_prompt_result_deinit(&res);
    f->r.text[0] = '\0';
    snprintf(cmd, sizeof cmd, "write %s/../acp-escape.txt x", f->home);
    assert_int_equal(prompt(f, cmd, NULL, NULL, &res, NULL), 0);
    assert_non_null(strstr(f->r.text, "write-error: -32602 Permission denied"));
    snprintf(path, sizeof path, "%s/../acp-escape.txt", f->home);
    assert_int_not_equal(access(path, F_OK), 0);
    cdsh_acp_prompt_result_deinit(&res);
    f->r.text[0] = '\0';
    /* A missing file reads as empty (as in Zed, where it opens as a new
     * buffer): Gemini CLI reads before it creates a file and cannot tell an
     * error apart. Writing it then creates it, directories included. */
    assert_int_equal(prompt(f, "read missing.txt", NULL, NULL, &res, NULL), 0);
    assert_string_equal(f->r.text, "read: ");
    cdsh_acp_prompt_result_deinit(&res);
    f->r.text[0] = '\0';
    assert_int_equal(prompt(f, "write new-dir/made.txt created", NULL, NULL, &res, NULL), 0);
    assert_string_equal(f->r.text, "write: ok");
    cdsh_acp_prompt_result_deinit(&res);
    snprintf(path, sizeof path, "%s/new-dir/made.txt", f->home);
    got = cdsh_test_read_file(path, NULL);
    assert_string_equal(got, "created");
    free(got);
    /* Bytes that are not UTF-8 are answered as U+FFFD (the reply used to
     * fail to serialise and the agent waited forever). */
    snprintf(path, sizeof path, "%s/latin1.txt", f->home);
    cdsh_test_write_file(path, "caf\xe9 ok");
    f->r.text[0] = '\0';
    assert_int_equal(prompt(f, "read latin1.txt", NULL, NULL, &res, NULL), 0);
    assert_string_equal(f->r.text, "read: caf\xef\xbf\xbd ok");
    cdsh_acp_prompt_result_deinit(&res);
    /* A FIFO is answered at once (it used to block open() forever). */
    snprintf(path, sizeof path, "%s/pipe", f->home);
    assert_int_equal(mkfifo(path, 0600), 0);
    f->r.text[0] = '\0';
    assert_int_equal(prompt(f, "read pipe", NULL, NULL, &res, NULL), 0);
    assert_non_null(strstr(f->r.text, "read-error: -32602 Invalid params: pipe is not a regular file"));
    cdsh_acp_prompt_result_deinit(&res);
    /* The session directory itself cannot be written over. */
    f->r.text[0] = '\0';
    snprintf(cmd, sizeof cmd, "write %s x", f->home);
    assert_int_equal(prompt(f, cmd, NULL, NULL, &res, NULL), 0);
    assert_non_null(strstr(f->r.text, "write-error: -32602"));
    cdsh_acp_prompt_result_deinit(&res);
}

/* An agent that fails session/new and says why only on stderr (Claude Code
 * ACP as root): the error carries that cause, redacted, on one line. */
static void a_failed_session_new_carries_the_agents_stderr_cause(void **state)
{
    fx *f = *state;
    const char *extra[] = {"--fail-new",
                           "Error: --dangerously-skip-permissions cannot be used with root/sudo "
                           "privileges for security reasons\nAuthorization: Bearer "
                           "sk-fixtureSECRET1234567890abcdef",
                           NULL};
    assert_int_equal(open_fixture(f, extra, false, NULL), 0);
    cdsh_acp_session_handlers h = {on_upd, on_perm, &f->r};
    cdsh_error err = {0};
    assert_true(cdsh_acp_conn_session_open(f->c, CDSH_ACP_OPEN_NEW, NULL, f->home, NULL, &h,
                                           &f->sid, &err) < 0);
    assert_non_null(strstr(err.message, "session/new failed: Internal error: Query closed before "
                                        "response received (-32603); agent stderr: Error: "
                                        "--dangerously-skip-permissions cannot be used with "
                                        "root/sudo privileges for security reasons | "));
    assert_null(strstr(err.message, "fixtureSECRET"));
    assert_null(strchr(err.message, '\n'));
    /* and says what to do about it */
    size_t n = strlen(err.message);
    const char *hint = "; as root, set IS_SANDBOX=1 (exactly) in the engine's env";
    assert_true(n > strlen(hint));
    assert_string_equal(err.message + n - strlen(hint), hint);
}

static void fs_calls_are_refused_when_not_advertised(void **state)
{
    fx *f = *state;
    assert_int_equal(open_fixture(f, NULL, false, NULL), 0);
    open_session(f);
    cdsh_acp_prompt_result res;
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "read %s/x", f->home);
    assert_int_equal(prompt(f, cmd, NULL, NULL, &res, NULL), 0);
    assert_non_null(strstr(f->r.text, "read-error: -32601"));
    cdsh_acp_prompt_result_deinit(&res);
}

static void config_prefers_options_and_falls_back_to_modes(void **state)
{
    fx *f = *state;
    const char *modes_only[] = {"--config", "modes", NULL};
    assert_int_equal(open_fixture(f, modes_only, true, NULL), 0);
    open_session(f);
    json_t *cfg = cdsh_acp_conn_session_config_dup(f->c, f->sid);
    assert_true(json_is_null(json_object_get(cfg, "configOptions")));
    json_t *m = json_array_get(json_object_get(json_object_get(cfg, "modes"), "availableModes"), 1);
    assert_string_equal(json_string_value(json_object_get(m, "description")),
                        "Research and plan only — no edits or commands");
    json_decref(cfg);
    const char *via = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_conn_set_config(f->c, f->sid, "mode", "plan", &via, &err), 0);
    assert_string_equal(via, "set_mode");
    cfg = cdsh_acp_conn_session_config_dup(f->c, f->sid);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(cfg, "modes"), "currentModeId")), "plan");
    json_decref(cfg);
    cdsh_acp_conn_free(f->c);
    f->c = NULL;
    free(f->sid);
    f->sid = NULL;
    const char *both[] = {"--config", "both", NULL};
    assert_int_equal(open_fixture(f, both, true, NULL), 0);
    open_session(f);
    assert_int_equal(cdsh_acp_conn_set_config(f->c, f->sid, "model", "fake/two", &via, &err), 0);
    assert_string_equal(via, "set_config_option");
    cfg = cdsh_acp_conn_session_config_dup(f->c, f->sid);
    json_t *model = json_array_get(json_object_get(cfg, "configOptions"), 1);
    assert_string_equal(json_string_value(json_object_get(model, "currentValue")), "fake/two");
    json_decref(cfg);
    /* Neither path knows this one: the agent's errors are reported. */
    assert_int_equal(cdsh_acp_conn_set_config(f->c, f->sid, "bogus", "x", &via, &err), CDSH_EPROTO);
    assert_non_null(strstr(err.message, "unknown config option"));
}

static void idle_gate_ends_a_stalled_turn_and_the_session_stays_usable(void **state)
{
    fx *f = *state;
    assert_int_equal(open_fixture(f, NULL, true, NULL), 0);
    open_session(f);
    cdsh_acp_prompt_opts po = {.idle_timeout_ms = 300, .cancel_grace_ms = 2000};
    cdsh_acp_prompt_result res;
    cdsh_error err = {0};
    assert_int_equal(prompt(f, "stall", &po, NULL, &res, &err), CDSH_ETIMEDOUT);
    assert_string_equal(err.code, "TIMEOUT");
    assert_string_equal(err.message,
                        "no session/update from the engine for 1s (engine looks stuck)");
    assert_string_equal(cdsh_acp_classify_error(err.rc, err.code, err.message), "TIMEOUT");
    cdsh_acp_prompt_result_deinit(&res);
    /* A chatty engine is not stuck: updates every 100 ms keep the gate open. */
    f->r.text[0] = '\0';
    po.idle_timeout_ms = 600;
    assert_int_equal(prompt(f, "slow 8", &po, NULL, &res, &err), 0);
    assert_string_equal(f->r.text, "........");
    cdsh_acp_prompt_result_deinit(&res);
    po = (cdsh_acp_prompt_opts){.total_timeout_ms = 300, .cancel_grace_ms = 500};
    assert_int_equal(prompt(f, "stall-hard", &po, NULL, &res, &err), CDSH_ETIMEDOUT);
    assert_non_null(strstr(err.message, "(overall cap; last engine update"));
    cdsh_acp_prompt_result_deinit(&res);
}

static void *fire_later(void *arg)
{
    usleep(200 * 1000);
    cdsh_cancel_fire(arg, "user pressed stop");
    return NULL;
}

static void cancel_ends_the_turn_with_cancelled(void **state)
{
    fx *f = *state;
    assert_int_equal(open_fixture(f, NULL, true, NULL), 0);
    open_session(f);
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    pthread_t t;
    pthread_create(&t, NULL, fire_later, tok);
    cdsh_acp_prompt_result res;
    cdsh_error err = {0};
    assert_int_equal(prompt(f, "stall", NULL, tok, &res, &err), 0);
    assert_string_equal(res.stop_reason, "cancelled");
    pthread_join(t, NULL);
    cdsh_acp_prompt_result_deinit(&res);
    cdsh_cancel_free(tok);
    /* An agent that ignores session/cancel: the client gives up after the grace. */
    tok = cdsh_cancel_new(NULL);
    pthread_create(&t, NULL, fire_later, tok);
    cdsh_acp_prompt_opts po = {.cancel_grace_ms = 300};
    int64_t t0 = cdsh_clock_mono_ms();
    assert_int_equal(prompt(f, "stall-hard", &po, tok, &res, &err), CDSH_ECANCELED);
    /* stall-hard never answers: only the 300 ms grace can end the wait */
    assert_true(cdsh_clock_mono_ms() - t0 < 30000);
    pthread_join(t, NULL);
    cdsh_acp_prompt_result_deinit(&res);
    cdsh_cancel_free(tok);
    int pid = cdsh_acp_conn_pid(f->c);
    cdsh_acp_conn_free(f->c);
    f->c = NULL;
    assert_false(acp_pid_alive(pid));
}

static void a_crash_mid_prompt_is_a_protocol_failure_with_stderr(void **state)
{
    fx *f = *state;
    assert_int_equal(open_fixture(f, NULL, true, NULL), 0);
    open_session(f);
    cdsh_acp_prompt_result res;
    cdsh_error err = {0};
    assert_int_equal(prompt(f, "die", NULL, NULL, &res, &err), CDSH_ECLOSED);
    assert_string_equal(cdsh_acp_classify_error(err.rc, err.code, err.message), "PROTOCOL");
    assert_string_equal(f->r.text, "about to crash");
    assert_true(cdsh_acp_conn_is_closed(f->c));
    char *tail = cdsh_acp_conn_stderr_tail_dup(f->c);
    assert_non_null(strstr(tail, "fixture agent ready"));
    free(tail);
    cdsh_acp_prompt_result_deinit(&res);
}

static void rejected_lines_are_kept_verbatim_and_do_not_break_the_turn(void **state)
{
    fx *f = *state;
    const char *args[] = {"--garbage-first", NULL};
    assert_int_equal(open_fixture(f, args, true, NULL), 0);
    open_session(f);
    cdsh_acp_prompt_result res;
    assert_int_equal(prompt(f, "garbage", NULL, NULL, &res, NULL), 0);
    assert_string_equal(f->r.text, "PONG");
    json_t *rej = cdsh_acp_conn_rejects_dup(f->c);
    assert_int_equal(json_array_size(rej), 3);
    assert_string_equal(json_string_value(json_array_get(rej, 0)),
                        "fixture agent starting (not json)");
    assert_string_equal(json_string_value(json_array_get(rej, 1)), "this is not json {");
    assert_string_equal(json_string_value(json_array_get(rej, 2)), "[1,2,3]");
    json_decref(rej);
    json_t *raw = cdsh_acp_conn_raw_lines_dup(f->c);
    assert_true(json_array_size(raw) >= 5);
    json_decref(raw);
    cdsh_acp_prompt_result_deinit(&res);
}

static void agent_errors_keep_the_agents_own_words(void **state)
{
    fx *f = *state;
    assert_int_equal(open_fixture(f, NULL, true, NULL), 0);
    open_session(f);
    cdsh_acp_prompt_result res;
    cdsh_error err = {0};
    assert_int_equal(prompt(f, "funds", NULL, NULL, &res, &err), CDSH_EPROTO);
    assert_string_equal(err.message, "session/prompt failed: Internal error (-32603): Upstream "
                                     "request failed: Insufficient account funds");
    assert_string_equal(cdsh_acp_classify_error(err.rc, err.code, err.message),
                        "INSUFFICIENT_FUNDS");
    cdsh_acp_prompt_result_deinit(&res);
    assert_int_equal(prompt(f, "ratelimit", NULL, NULL, &res, &err), CDSH_EPROTO);
    assert_string_equal(cdsh_acp_classify_error(err.rc, err.code, err.message), "RATE_LIMITED");
    cdsh_acp_prompt_result_deinit(&res);
    assert_int_equal(prompt(f, "auth", NULL, NULL, &res, &err), CDSH_EPROTO);
    assert_string_equal(cdsh_acp_classify_error(err.rc, err.code, err.message), "UNAUTHORIZED");
    assert_string_equal(err.code, "UNAUTHORIZED");
    assert_non_null(strstr(err.message, "; the agent's login methods: fixture-login (Fixture login)"));
    cdsh_acp_prompt_result_deinit(&res);
    /* a rejected key reported as an internal error (OpenCode) names them too */
    assert_int_equal(prompt(f, "badkey", NULL, NULL, &res, &err), CDSH_EPROTO);
    assert_string_equal(err.code, "UNAUTHORIZED");
    assert_string_equal(err.message, "session/prompt failed: Internal error: Incorrect API key "
                                     "provided: dummy. (-32603); the agent's login methods: "
                                     "fixture-login (Fixture login)");
    cdsh_acp_prompt_result_deinit(&res);
}

static void authenticate_unlocks_session_new(void **state)
{
    fx *f = *state;
    const char *args[] = {"--auth", NULL};
    assert_int_equal(open_fixture(f, args, true, NULL), 0);
    cdsh_acp_session_handlers h = {on_upd, on_perm, &f->r};
    cdsh_error err = {0};
    assert_int_equal(
        cdsh_acp_conn_session_open(f->c, CDSH_ACP_OPEN_NEW, NULL, f->home, NULL, &h, &f->sid, &err),
        CDSH_EPROTO);
    /* UNAUTHORIZED, naming the login methods of initialize's authMethods. */
    assert_string_equal(err.code, "UNAUTHORIZED");
    assert_string_equal(err.message, "session/new failed: Authentication required (-32000); the "
                                     "agent's login methods: fixture-login (Fixture login)");
    assert_int_equal(cdsh_acp_conn_authenticate(f->c, "nope", &err), CDSH_EPROTO);
    assert_int_equal(cdsh_acp_conn_authenticate(f->c, "fixture-login", &err), 0);
    open_session(f);
}

static void load_replays_history_through_the_handlers(void **state)
{
    fx *f = *state;
    assert_int_equal(open_fixture(f, NULL, true, NULL), 0);
    cdsh_acp_session_handlers h = {on_upd, on_perm, &f->r};
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_conn_session_open(f->c, CDSH_ACP_OPEN_LOAD, "fx-1-1", f->home, NULL,
                                                &h, &f->sid, &err),
                     0);
    assert_string_equal(f->sid, "fx-1-1");
    /* The replayed updates arrive before the next prompt ends. */
    cdsh_acp_prompt_result res;
    assert_int_equal(prompt(f, "hello", NULL, NULL, &res, NULL), 0);
    assert_string_equal(f->r.text, "restored fx-1-1PONG");
    assert_non_null(json_object_get(f->r.kinds, "user_message_chunk"));
    cdsh_acp_prompt_result_deinit(&res);
    char *other = NULL;
    assert_int_equal(cdsh_acp_conn_session_open(f->c, CDSH_ACP_OPEN_RESUME, "unknown", f->home,
                                                NULL, &h, &other, &err),
                     CDSH_EPROTO);
    assert_null(other);
    assert_int_equal(cdsh_acp_conn_session_count(f->c), 1);
}

static void init_failures_leave_no_process(void **state)
{
    fx *f = *state;
    char pidfile[4300];
    snprintf(pidfile, sizeof pidfile, "%s/pids", f->home);
    /* The agent would answer after 60 s; the 300 ms init budget must end the
     * wait long before that (CTest's timeout catches a hang). */
    const char *slow[] = {"--init-delay", "60000", "--pid-file", pidfile, NULL};
    const char *argv[8] = {f->peer};
    for (int i = 0; slow[i]; i++)
        argv[i + 1] = slow[i];
    cdsh_acp_conn_opts o = {.argv = argv, .init_timeout_ms = 300, .dispose_grace_ms = 500};
    cdsh_error err = {0};
    int64_t t0 = cdsh_clock_mono_ms();
    assert_int_equal(cdsh_acp_conn_open(&o, &f->c, &err), CDSH_ETIMEDOUT);
    assert_true(cdsh_clock_mono_ms() - t0 < 30000);
    char *pids = cdsh_test_read_file(pidfile, NULL);
    assert_non_null(pids);
    assert_false(acp_pid_alive(atoi(pids)));
    free(pids);
    /* An agent that exits at once is reported as closed, not as a timeout:
     * a budget the slowest start fits in (the fixture may start slowly on a
     * busy machine under the sanitizers). */
    const char *dead[] = {f->peer, "--exit-at-once", NULL};
    o.argv = dead;
    o.init_timeout_ms = cdsh_test_scale_ms(30000);
    assert_int_equal(cdsh_acp_conn_open(&o, &f->c, &err), CDSH_ECLOSED);
    assert_non_null(strstr(err.message, "fixture: refusing to start (asked to)"));
    const char *missing[] = {"/nonexistent/agent", NULL};
    o.argv = missing;
    assert_int_equal(cdsh_acp_conn_open(&o, &f->c, &err), CDSH_ENOTFOUND);
    assert_null(f->c);
}

typedef struct waits {
    int n;
    char step[32];
    int64_t budget;
} waits;

static void count_wait(void *ud, const char *name, const char *step, int64_t elapsed_ms,
                       int64_t budget_ms)
{
    waits *w = ud;
    (void)elapsed_ms;
    assert_string_equal(name, "fixture");
    snprintf(w->step, sizeof w->step, "%s", step);
    w->budget = budget_ms;
    w->n++;
}

/* Issue 21 item 5: a slow handshake shows progress, and its timeout names
 * the step, how long it waited and what the agent wrote on stderr. */
static void a_slow_initialize_shows_progress_and_times_out_with_stderr(void **state)
{
    fx *f = *state;
    const char *argv[] = {f->peer, "--init-delay", "60000", NULL};
    waits w = {0};
    cdsh_acp_conn_opts o = {.name = "fixture",
                            .argv = argv,
                            .init_timeout_ms = 1500,
                            .dispose_grace_ms = 500,
                            .on_wait = count_wait,
                            .wait_ud = &w,
                            .wait_notice_ms = 100};
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_conn_open(&o, &f->c, &err), CDSH_ETIMEDOUT);
    assert_true(w.n >= 2);
    assert_string_equal(w.step, "initialize");
    assert_int_equal(w.budget, 1500);
    assert_non_null(strstr(err.message, "did not answer initialize within 1500 ms"));
    assert_non_null(strstr(err.message, "agent stderr: fixture agent ready"));
    /* A quick start gets no notice at all. */
    const char *quick[] = {f->peer, NULL};
    o.argv = quick;
    o.init_timeout_ms = cdsh_test_scale_ms(30000);
    o.wait_notice_ms = 60000;
    w.n = 0;
    assert_int_equal(cdsh_acp_conn_open(&o, &f->c, &err), 0);
    assert_int_equal(w.n, 0);
}

/* The text of one prompt on a session (f->r.text reset first). */
static void say_on(fx *f, const char *sid, const char *text)
{
    f->r.text[0] = '\0';
    json_t *p = json_pack("[{s:s,s:s}]", "type", "text", "text", text);
    cdsh_acp_prompt_result res;
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_conn_prompt(f->c, sid, p, NULL, NULL, &res, &err), 0);
    cdsh_acp_prompt_result_deinit(&res);
    json_decref(p);
}

static void fork_carries_the_context_and_leaves_the_source_alone(void **state)
{
    fx *f = *state;
    assert_int_equal(open_fixture(f, NULL, true, NULL), 0);
    open_session(f);
    say_on(f, f->sid, "the parent's last words");
    cdsh_acp_session_handlers h = {on_upd, on_perm, &f->r};
    char *child = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_conn_fork(f->c, f->sid, f->home, NULL, &h, &child, &err), 0);
    assert_string_not_equal(child, f->sid);
    assert_int_equal(cdsh_acp_conn_session_count(f->c), 2);
    /* The fork answered with the agent's config, kept like session/new's. */
    json_t *cfg = cdsh_acp_conn_session_config_dup(f->c, child);
    assert_true(json_is_array(json_object_get(cfg, "configOptions")));
    json_decref(cfg);
    say_on(f, child, "recall");
    assert_string_equal(f->r.text, "recall: the parent's last words");
    say_on(f, child, "only the child heard this");
    say_on(f, f->sid, "recall");
    assert_string_equal(f->r.text, "recall: the parent's last words");
    free(child);
    assert_int_equal(cdsh_acp_conn_fork(f->c, "fx-unknown", f->home, NULL, &h, &child, &err),
                     CDSH_EPROTO);
    assert_non_null(strstr(err.message, "Resource not found"));
    assert_null(child);
}

static void fork_and_list_are_never_sent_when_not_advertised(void **state)
{
    fx *f = *state;
    const char *args[] = {"--no-fork", "--no-list", "--no-load", NULL};
    assert_int_equal(open_fixture(f, args, true, NULL), 0);
    open_session(f);
    cdsh_acp_session_handlers h = {on_upd, on_perm, &f->r};
    char *child = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_conn_fork(f->c, f->sid, f->home, NULL, &h, &child, &err),
                     CDSH_EUNSUPPORTED);
    assert_string_equal(err.code, "METHOD_NOT_ADVERTISED");
    assert_string_equal(err.message, "fixture does not advertise session/fork");
    assert_null(child);
    assert_int_equal(cdsh_acp_conn_session_open(f->c, CDSH_ACP_OPEN_LOAD, f->sid, f->home, NULL, &h,
                                                &child, &err),
                     CDSH_EUNSUPPORTED);
    assert_string_equal(err.message, "fixture does not advertise session/load");
    json_t *list = NULL;
    assert_int_equal(cdsh_acp_conn_list_sessions(f->c, NULL, 0, NULL, &list, NULL, &err),
                     CDSH_EUNSUPPORTED);
    assert_string_equal(err.message, "fixture does not advertise session/list");
    assert_null(list);
    /* Nothing went out: the agent saw neither call. */
    json_t *raw = cdsh_acp_conn_raw_lines_dup(f->c);
    size_t i;
    json_t *line;
    json_array_foreach(raw, i, line) {
        assert_null(strstr(json_string_value(line), "Method not found"));
    }
    json_decref(raw);
    assert_int_equal(cdsh_acp_conn_session_count(f->c), 1);
}

static void list_follows_every_page_filtered_by_cwd(void **state)
{
    fx *f = *state;
    const char *args[] = {"--page-size", "2", NULL};
    assert_int_equal(open_fixture(f, args, true, NULL), 0);
    char other[4200];
    snprintf(other, sizeof other, "%s/elsewhere", f->home);
    mkdir(other, 0700);
    cdsh_acp_session_handlers h = {on_upd, on_perm, &f->r};
    char *ids[5] = {0};
    cdsh_error err = {0};
    for (int i = 0; i < 5; i++)
        assert_int_equal(cdsh_acp_conn_session_open(f->c, CDSH_ACP_OPEN_NEW, NULL,
                                                    i == 4 ? other : f->home, NULL, &h, &ids[i],
                                                    &err),
                         0);
    say_on(f, ids[1], "name me");
    json_t *list = NULL;
    bool more = true;
    assert_int_equal(cdsh_acp_conn_list_sessions(f->c, f->home, 0, NULL, &list, &more, &err), 0);
    assert_false(more);
    assert_int_equal(json_array_size(list), 4); /* two pages of 2 */
    size_t i;
    json_t *info;
    int titled = 0;
    json_array_foreach(list, i, info) {
        assert_string_equal(json_string_value(json_object_get(info, "cwd")), f->home);
        assert_string_not_equal(json_string_value(json_object_get(info, "sessionId")), ids[4]);
        if (strcmp(json_string_value(json_object_get(info, "sessionId")), ids[1]) == 0) {
            assert_string_equal(json_string_value(json_object_get(info, "title")), "name me");
            assert_true(json_is_string(json_object_get(info, "updatedAt")));
            titled++;
        }
    }
    assert_int_equal(titled, 1);
    json_decref(list);
    assert_int_equal(cdsh_acp_conn_list_sessions(f->c, NULL, 0, NULL, &list, NULL, &err), 0);
    assert_int_equal(json_array_size(list), 5);
    json_decref(list);
    /* A bound of one page stops early and says so. */
    assert_int_equal(cdsh_acp_conn_list_sessions(f->c, NULL, 1, NULL, &list, &more, &err), 0);
    assert_int_equal(json_array_size(list), 2);
    assert_true(more);
    json_decref(list);
    assert_int_equal(cdsh_acp_conn_list_sessions(f->c, "relative", 0, NULL, &list, NULL, &err),
                     CDSH_EINVAL);
    for (int k = 0; k < 5; k++)
        free(ids[k]);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(initialize_reports_agent_info_and_capabilities),
        T(prompt_streams_every_kind_and_ignores_unknown_ones),
        T(two_sessions_share_one_process),
        T(permission_answers_reach_the_agent_and_fail_closed),
        T(fs_calls_are_confined_to_the_session_directory),
        T(fs_calls_are_refused_when_not_advertised),
        T(config_prefers_options_and_falls_back_to_modes),
        T(idle_gate_ends_a_stalled_turn_and_the_session_stays_usable),
        T(cancel_ends_the_turn_with_cancelled),
        T(a_crash_mid_prompt_is_a_protocol_failure_with_stderr),
        T(a_failed_session_new_carries_the_agents_stderr_cause),
        T(rejected_lines_are_kept_verbatim_and_do_not_break_the_turn),
        T(agent_errors_keep_the_agents_own_words),
        T(authenticate_unlocks_session_new),
        T(load_replays_history_through_the_handlers),
        T(init_failures_leave_no_process),
        T(a_slow_initialize_shows_progress_and_times_out_with_stderr),
        T(fork_carries_the_context_and_leaves_the_source_alone),
        T(fork_and_list_are_never_sent_when_not_advertised),
        T(list_follows_every_page_filtered_by_cwd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
