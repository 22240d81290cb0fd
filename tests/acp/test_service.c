/* test_service.c — external agents as cdsh sessions (plugins/acp/service.c):
 * bind, prompt, stream, permission bridge, cancel, resume after restart,
 * the engine lock, classified failures and idle disposal of processes. */
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp_fixture.h"
#include "base/clock.h"
#include "plugins/acp/service.h"
#include "plugins/acp/state.h"

typedef struct sink_rec {
    pthread_mutex_t mu;
    char text[4096];
    int updates;
    cdsh_approval_outcome outcome; /* what the "person" answers */
    char labels[512];
} sink_rec;

static void s_update(void *ud, const char *sid, cdsh_acp_update_kind kind, const char *name,
                     const json_t *u)
{
    (void)sid;
    (void)name;
    sink_rec *r = ud;
    pthread_mutex_lock(&r->mu);
    r->updates++;
    if (kind == CDSH_ACP_UPDATE_AGENT_MESSAGE_CHUNK) {
        const char *t = json_string_value(json_object_get(json_object_get(u, "content"), "text"));
        if (t)
            strncat(r->text, t, sizeof r->text - strlen(r->text) - 1);
    }
    pthread_mutex_unlock(&r->mu);
}

/* The "person": a channel that answers every request at once. */
typedef struct person {
    cdsh_approvals *ap;
    sink_rec *r;
} person;

static int s_perm(void *ud, const json_t *params)
{
    person *who = ud;
    sink_rec *r = who->r;
    size_t i;
    json_t *o;
    r->labels[0] = '\0';
    json_array_foreach(json_object_get(params, "options"), i, o) {
        strncat(r->labels, json_string_value(json_object_get(o, "name")),
                sizeof r->labels - strlen(r->labels) - 2);
        strcat(r->labels, "|");
    }
    char *id = cdsh_acp_permission_option_dup(params, r->outcome);
    cdsh_approvals_answer(who->ap, json_string_value(json_object_get(params, "id")), "c", id, NULL);
    free(id);
    return 0;
}

typedef struct fx {
    char *home;
    cdsh_acp_service *svc;
    sink_rec r;
    cdsh_acp_turn_sink sink;
    cdsh_approvals *ap;
    person who;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    pthread_mutex_init(&f->r.mu, NULL);
    f->sink = (cdsh_acp_turn_sink){s_update, &f->r};
    f->ap = cdsh_approvals_new(0);
    f->who = (person){f->ap, &f->r};
    cdsh_approval_channel ch = {s_perm, NULL, &f->who};
    cdsh_approvals_set_channel(f->ap, &ch);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cdsh_acp_service_free(f->svc);
    cdsh_approvals_free(f->ap);
    pthread_mutex_destroy(&f->r.mu);
    cdsh_test_home_free(f->home);
    free(f);
    return 0;
}

static json_t *send(fx *f, const char *sid, const char *text)
{
    f->r.text[0] = '\0';
    return cdsh_acp_service_prompt(f->svc, sid, text, &f->sink, NULL);
}

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void a_bound_session_talks_to_its_engine_and_resumes_after_restart(void **state)
{
    fx *f = *state;
    acp_write_fixture_engine(f->home, "[]", "");
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_service_bind(f->svc, "chat-1", "fixture", f->home, &err), 0);
    json_t *res = send(f, "chat-1", "hello");
    assert_true(json_is_true(json_object_get(res, "ok")));
    assert_string_equal(str(res, "stopReason"), "end_turn");
    assert_string_equal(str(res, "opened"), "new");
    assert_string_equal(f->r.text, "PONG");
    char *acp = strdup(str(res, "acpSessionId"));
    json_decref(res);
    res = send(f, "chat-1", "hello");
    assert_string_equal(str(res, "opened"), "live");
    json_decref(res);
    assert_int_equal(cdsh_acp_service_process_count(f->svc), 1);
    /* "Restart": a new service resumes through session/load. */
    cdsh_acp_service_free(f->svc);
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    res = send(f, "chat-1", "hello");
    assert_true(json_is_true(json_object_get(res, "ok")));
    assert_string_equal(str(res, "opened"), "load");
    assert_string_equal(str(res, "acpSessionId"), acp);
    assert_int_equal(json_array_size(json_object_get(res, "warnings")), 0);
    char want[256];
    snprintf(want, sizeof want, "restored %sPONG", acp);
    assert_string_equal(f->r.text, want);
    json_decref(res);
    free(acp);
}

static void without_load_the_session_is_resumed(void **state)
{
    fx *f = *state;
    acp_write_fixture_engine(f->home, "[\"--no-load\"]", "");
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "c", "fixture", f->home, NULL), 0);
    json_decref(send(f, "c", "hello"));
    cdsh_acp_service_free(f->svc);
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    json_t *res = send(f, "c", "hello");
    assert_string_equal(str(res, "opened"), "resume");
    json_decref(res);
    /* A mapping the agent no longer knows: a fresh session and a warning. */
    cdsh_acp_service_free(f->svc);
    assert_int_equal(cdsh_acp_state_session_set_acp(cdsh_test_home(), "c", "gone-session", NULL),
                     0);
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    res = send(f, "c", "hello");
    assert_true(json_is_true(json_object_get(res, "ok")));
    assert_string_equal(str(res, "opened"), "new");
    json_t *w = json_object_get(res, "warnings");
    assert_non_null(strstr(json_string_value(json_array_get(w, json_array_size(w) - 1)),
                           "engine context not restored"));
    json_decref(res);
}

static void the_engine_is_locked_after_the_first_message(void **state)
{
    fx *f = *state;
    acp_write_engines(f->home, "[]");
    acp_write_fixture_engine(f->home, "[]", "");
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_service_bind(f->svc, "c", "fixture", f->home, &err), 0);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "c", "gemini", NULL, &err), 0);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "c", "fixture", NULL, &err), 0);
    json_decref(send(f, "c", "hello"));
    /* A successful spawn records the engine's runtime health. */
    json_t *row = NULL;
    assert_int_equal(cdsh_acp_state_engine_find(cdsh_test_home(), "fixture", &row, NULL), 0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(row, "health"), "status")), "ok");
    json_decref(row);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "c", "gemini", NULL, &err), CDSH_EPERM);
    assert_string_equal(err.code, "ENGINE_LOCKED");
    assert_int_equal(cdsh_acp_service_bind(f->svc, "c", "no-such", NULL, &err), CDSH_ENOTFOUND);
    assert_string_equal(err.code, "UNKNOWN_ENGINE");
    json_t *res = send(f, "unbound", "hello");
    assert_false(json_is_true(json_object_get(res, "ok")));
    assert_string_equal(str(res, "code"), "UNBOUND_SESSION");
    json_decref(res);
}

static void a_disabled_engine_is_an_explicit_error(void **state)
{
    fx *f = *state;
    acp_write_fixture_engine(f->home, "[]", "\"enabled\":false");
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "c", "fixture", f->home, NULL), 0);
    json_t *res = send(f, "c", "hello");
    assert_string_equal(str(res, "code"), "ENGINE_DISABLED");
    json_decref(res);
    assert_int_equal(cdsh_acp_service_process_count(f->svc), 0);
}

static void failed_turns_are_classified_with_the_agents_words(void **state)
{
    fx *f = *state;
    acp_write_fixture_engine(f->home, "[]", "");
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "c", "fixture", f->home, NULL), 0);
    json_t *res = send(f, "c", "funds");
    assert_false(json_is_true(json_object_get(res, "ok")));
    assert_string_equal(str(res, "code"), "INSUFFICIENT_FUNDS");
    assert_non_null(strstr(str(res, "message"), "Insufficient account funds"));
    assert_string_equal(str(res, "engineId"), "fixture");
    json_decref(res);
    res = send(f, "c", "die");
    assert_string_equal(str(res, "code"), "PROTOCOL");
    assert_non_null(strstr(str(res, "stderrTail"), "fixture agent ready"));
    json_decref(res);
    /* The next message starts a new process and reopens the session. */
    res = send(f, "c", "hello");
    assert_true(json_is_true(json_object_get(res, "ok")));
    assert_string_equal(str(res, "opened"), "load");
    json_decref(res);
}

static void permissions_reach_the_sink_with_the_agents_labels(void **state)
{
    fx *f = *state;
    acp_write_fixture_engine(f->home, "[]", "");
    cdsh_acp_service_opts o = {.approvals = f->ap};
    f->svc = cdsh_acp_service_new(cdsh_test_home(), &o, NULL);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "c", "fixture", f->home, NULL), 0);
    f->r.outcome = CDSH_APPROVAL_ALLOWED_ONCE;
    json_t *res = send(f, "c", "permission");
    assert_string_equal(f->r.text, "permission: selected/once");
    assert_string_equal(f->r.labels, "Allow once|Always allow|Reject|");
    json_decref(res);
    f->r.outcome = CDSH_APPROVAL_REJECTED;
    json_decref(send(f, "c", "permission"));
    assert_string_equal(f->r.text, "permission: selected/reject");
    f->r.outcome = CDSH_APPROVAL_CANCELLED;
    json_decref(send(f, "c", "permission"));
    assert_string_equal(f->r.text, "permission: cancelled/-");
    /* Nobody to answer (no channel): fail closed. */
    cdsh_approvals_set_channel(f->ap, NULL);
    json_decref(send(f, "c", "permission"));
    assert_string_equal(f->r.text, "permission: cancelled/-");
    /* A service without a broker: fail closed too. */
    cdsh_acp_service_free(f->svc);
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    json_decref(send(f, "c", "permission"));
    assert_non_null(strstr(f->r.text, "permission: cancelled/-")); /* after session/load's replay */
}

typedef struct late {
    cdsh_approvals *ap;
    char id[64];
} late;

static void *answer_late(void *arg)
{
    late *l = arg;
    usleep(900 * 1000);
    json_t *p = cdsh_approvals_pending_dup(l->ap, "c");
    json_t *opts = json_object_get(json_array_get(p, 0), "options");
    cdsh_approvals_answer(l->ap, l->id, "c",
                          json_string_value(json_object_get(json_array_get(opts, 0), "optionId")),
                          NULL);
    json_decref(p);
    return NULL;
}

static pthread_t late_thread;

static int present_late(void *ud, const json_t *req)
{
    late *l = ud;
    snprintf(l->id, sizeof l->id, "%s", json_string_value(json_object_get(req, "id")));
    return pthread_create(&late_thread, NULL, answer_late, l) == 0 ? 0 : -1;
}

static void a_person_deciding_does_not_trip_the_idle_gate(void **state)
{
    fx *f = *state;
    acp_write_fixture_engine(f->home, "[]", "\"idleTimeoutMs\":300");
    late l = {.ap = f->ap};
    cdsh_approval_channel ch = {present_late, NULL, &l};
    cdsh_approvals_set_channel(f->ap, &ch);
    cdsh_acp_service_opts o = {.approvals = f->ap};
    f->svc = cdsh_acp_service_new(cdsh_test_home(), &o, NULL);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "c", "fixture", f->home, NULL), 0);
    json_t *res = send(f, "c", "permission");
    pthread_join(late_thread, NULL);
    assert_true(json_is_true(json_object_get(res, "ok")));
    assert_string_equal(f->r.text, "permission: selected/once");
    json_decref(res);
}

typedef struct cancel_arg {
    cdsh_acp_service *svc;
    bool refused;
} cancel_arg;

static void *cancel_soon(void *arg)
{
    cancel_arg *a = arg;
    for (int i = 0; i < 100; i++) {
        usleep(50 * 1000);
        /* Only cancel once a second turn has been refused while this one runs. */
        json_t *second = cdsh_acp_service_prompt(a->svc, "c", "hello", NULL, NULL);
        const char *code = json_string_value(json_object_get(second, "code"));
        a->refused = a->refused || (code && strcmp(code, "TURN_RUNNING") == 0);
        json_decref(second);
        if (a->refused && cdsh_acp_service_cancel(a->svc, "c") == 0)
            break;
    }
    return NULL;
}

static void cancel_from_another_thread_ends_the_turn(void **state)
{
    fx *f = *state;
    acp_write_fixture_engine(f->home, "[]", "");
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "c", "fixture", f->home, NULL), 0);
    assert_int_equal(cdsh_acp_service_cancel(f->svc, "c"), CDSH_ENOTFOUND);
    cancel_arg a = {f->svc, false};
    pthread_t t;
    pthread_create(&t, NULL, cancel_soon, &a);
    json_t *res = send(f, "c", "stall");
    pthread_join(t, NULL);
    assert_true(a.refused); /* a second turn while one runs is refused */
    assert_true(json_is_true(json_object_get(res, "ok")));
    assert_string_equal(str(res, "stopReason"), "cancelled");
    json_decref(res);
}

/* An agent that streams on and never answers session/cancel: the turn is
 * given up after the engine's cancelGraceMs (the named setting; the
 * message names it), and the updates that came before the cancel arrived. */
static void a_deaf_agent_is_given_up_after_cancel_grace_ms(void **state)
{
    fx *f = *state;
    acp_write_fixture_engine(f->home, "[]", "\"cancelGraceMs\":1000");
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "c", "fixture", f->home, NULL), 0);
    cancel_arg a = {f->svc, false};
    pthread_t t;
    pthread_create(&t, NULL, cancel_soon, &a);
    json_t *res = send(f, "c", "stream-forever-hard");
    pthread_join(t, NULL);
    assert_true(a.refused);
    assert_false(json_is_true(json_object_get(res, "ok")));
    assert_string_equal(str(res, "code"), "CANCELLED");
    assert_non_null(strstr(str(res, "message"), "the engine did not confirm within 1s"));
    assert_non_null(strstr(f->r.text, "tick0 "));
    json_decref(res);
    /* a cooperative stream ends cancelled as soon as the agent answers */
    cancel_arg b = {f->svc, false};
    pthread_create(&t, NULL, cancel_soon, &b);
    res = send(f, "c", "stream-forever");
    pthread_join(t, NULL);
    assert_true(json_is_true(json_object_get(res, "ok")));
    assert_string_equal(str(res, "stopReason"), "cancelled");
    json_decref(res);
}

static void initial_config_options_are_applied_and_shown_verbatim(void **state)
{
    fx *f = *state;
    acp_write_fixture_engine(f->home, "[]",
                             "\"initialConfigOptions\":[{\"configId\":\"model\",\"value\":"
                             "\"fake/two\"},{\"configId\":\"nope\",\"value\":\"x\"}]");
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "c", "fixture", f->home, NULL), 0);
    json_t *warnings = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_service_open(f->svc, "c", &f->sink, &warnings, &err), 0);
    assert_int_equal(json_array_size(warnings), 1);
    assert_non_null(strstr(json_string_value(json_array_get(warnings, 0)), "nope=x not applied"));
    json_decref(warnings);
    json_t *cfg = cdsh_acp_service_config_dup(f->svc, "c");
    json_t *model = json_array_get(json_object_get(cfg, "configOptions"), 1);
    assert_string_equal(str(model, "currentValue"), "fake/two");
    json_t *mode = json_array_get(json_object_get(cfg, "configOptions"), 0);
    assert_string_equal(str(mode, "description"), "Controls how much the agent may do on its own");
    json_decref(cfg);
    const char *via = NULL;
    assert_int_equal(cdsh_acp_service_set_config(f->svc, "c", "mode", "plan", &via, &err), 0);
    assert_string_equal(via, "set_config_option");
}

static void idle_engines_are_disposed_and_leave_no_process(void **state)
{
    fx *f = *state;
    char pidfile[4300], extra[4400];
    snprintf(pidfile, sizeof pidfile, "%s/pids", f->home);
    snprintf(extra, sizeof extra, "\"idleDisposeMs\":200");
    char args[4400];
    snprintf(args, sizeof args, "[\"--pid-file\",\"%s\"]", pidfile);
    acp_write_fixture_engine(f->home, args, extra);
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "a", "fixture", f->home, NULL), 0);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "b", "fixture", f->home, NULL), 0);
    json_decref(send(f, "a", "hello"));
    json_decref(send(f, "b", "hello"));
    assert_int_equal(cdsh_acp_service_process_count(f->svc), 1); /* shared by both */
    char *pids = cdsh_test_read_file(pidfile, NULL);
    int pid = atoi(pids);
    free(pids);
    assert_true(acp_pid_alive(pid));
    assert_int_equal(cdsh_acp_service_release(f->svc, "a", NULL), 0);
    usleep(500 * 1000);
    assert_int_equal(cdsh_acp_service_process_count(f->svc), 1); /* b still open */
    assert_int_equal(cdsh_acp_service_release(f->svc, "b", NULL), 0);
    int64_t until = cdsh_clock_mono_ms() + cdsh_test_scale_ms(30000);
    while (cdsh_acp_service_process_count(f->svc) > 0 && cdsh_clock_mono_ms() < until)
        usleep(50 * 1000);
    assert_int_equal(cdsh_acp_service_process_count(f->svc), 0);
    /* Disposal (stdin closed, SIGTERM, SIGKILL after the grace) ends it. */
    until = cdsh_clock_mono_ms() + cdsh_test_scale_ms(30000);
    while (acp_pid_alive(pid) && cdsh_clock_mono_ms() < until)
        usleep(20 * 1000);
    assert_false(acp_pid_alive(pid));
}

static void cdsh_mcp_servers_are_offered_when_the_agent_supports_them(void **state)
{
    fx *f = *state;
    acp_write_fixture_engine(f->home, "[]", "");
    /* The fixture advertises mcp http but not sse; stdio is always allowed. */
    json_t *mcp = json_loads("[{\"name\":\"cdsh\",\"command\":\"cdsh\",\"args\":[\"mcp\"],"
                             "\"env\":[]},{\"type\":\"http\",\"name\":\"web\",\"url\":"
                             "\"http://127.0.0.1:1/mcp\",\"headers\":[]},{\"type\":\"sse\","
                             "\"name\":\"old\",\"url\":\"http://127.0.0.1:1/sse\",\"headers\":[]}]",
                             0, NULL);
    cdsh_acp_service_opts o = {.mcp_servers = mcp};
    f->svc = cdsh_acp_service_new(cdsh_test_home(), &o, NULL);
    json_decref(mcp);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "c", "fixture", f->home, NULL), 0);
    json_decref(send(f, "c", "mcp"));
    assert_string_equal(f->r.text, "mcp: cdsh:stdio,web:http");
    cdsh_acp_service_free(f->svc);
    /* An engine with "mcp":"none" gets none. */
    acp_write_fixture_engine(f->home, "[]", "\"mcp\":\"none\"");
    mcp = json_loads("[{\"name\":\"cdsh\",\"command\":\"cdsh\",\"args\":[],\"env\":[]}]", 0, NULL);
    o.mcp_servers = mcp;
    f->svc = cdsh_acp_service_new(cdsh_test_home(), &o, NULL);
    json_decref(mcp);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "d", "fixture", f->home, NULL), 0);
    json_decref(send(f, "d", "mcp"));
    assert_string_equal(f->r.text, "mcp: -");
    cdsh_acp_service_free(f->svc);
    /* An agent without mcpCapabilities (DSH) is offered none: it refuses any
     * server with -32602 and the first message would fail. */
    acp_write_fixture_engine(f->home, "[\"--no-mcp\"]", "");
    mcp = json_loads("[{\"name\":\"cdsh\",\"command\":\"cdsh\",\"args\":[],\"env\":[]}]", 0, NULL);
    o.mcp_servers = mcp;
    f->svc = cdsh_acp_service_new(cdsh_test_home(), &o, NULL);
    json_decref(mcp);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "e", "fixture", f->home, NULL), 0);
    json_t *res = send(f, "e", "mcp");
    assert_true(json_is_true(json_object_get(res, "ok")));
    json_decref(res);
    assert_string_equal(f->r.text, "mcp: -");
}

static void permission_option_mapping_follows_the_digest(void **state)
{
    (void)state;
    json_t *p = json_loads("{\"options\":[{\"optionId\":\"a\",\"kind\":\"allow_always\"},"
                           "{\"optionId\":\"r\",\"kind\":\"reject_always\"}]}",
                           0, NULL);
    char *id = cdsh_acp_permission_option_dup(p, CDSH_APPROVAL_ALLOWED_ONCE);
    assert_string_equal(id, "a");
    free(id);
    id = cdsh_acp_permission_option_dup(p, CDSH_APPROVAL_UNAVAILABLE);
    assert_string_equal(id, "r");
    free(id);
    assert_null(cdsh_acp_permission_option_dup(p, CDSH_APPROVAL_CANCELLED));
    json_decref(p);
    p = json_loads("{\"options\":[{\"optionId\":\"x\",\"kind\":\"reject_once\"}]}", 0, NULL);
    assert_null(cdsh_acp_permission_option_dup(p, CDSH_APPROVAL_ALLOWED_ONCE));
    json_decref(p);
}

/* digest §4.5: a process started with a permission mode's arguments is
 * never shared with sessions of the asking (default) mode: the pool is
 * keyed by poolKey. */
static void processes_of_other_permission_modes_are_not_shared(void **state)
{
    fx *f = *state;
    acp_write_fixture_engine(f->home, "[]", "");
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "ask", "fixture", f->home, NULL), 0);
    json_decref(send(f, "ask", "hello"));
    assert_int_equal(cdsh_acp_service_process_count(f->svc), 1);
    acp_write_fixture_engine(f->home, "[]",
                             "\"permissionMode\":\"dont_ask\",\"permissionTemplates\":"
                             "{\"dont_ask\":[\"--page-size\",\"3\"]}");
    assert_int_equal(cdsh_acp_service_bind(f->svc, "unattended", "fixture", f->home, NULL), 0);
    json_decref(send(f, "unattended", "hello"));
    assert_int_equal(cdsh_acp_service_process_count(f->svc), 2);
    json_decref(send(f, "ask", "hello")); /* still live on its own process */
    assert_int_equal(cdsh_acp_service_process_count(f->svc), 2);
}

static void *interrupt_soon(void *arg)
{
    cdsh_acp_service *svc = arg;
    /* Once the turn runs (a second one is refused), Ctrl-C's second press. */
    for (int i = 0; i < 200; i++) {
        usleep(50 * 1000);
        json_t *second = cdsh_acp_service_prompt(svc, "i", "hello", NULL, NULL);
        const char *code = json_string_value(json_object_get(second, "code"));
        bool running = code && strcmp(code, "TURN_RUNNING") == 0;
        json_decref(second);
        if (running && cdsh_acp_service_interrupt(svc, "i", SIGINT, NULL) == 0)
            break;
    }
    return NULL;
}

/* Issue 21 item 12: a terminal's Ctrl-C reaches the agent's process group
 * (it runs in one of its own) through cdsh_acp_service_interrupt. */
static void an_interrupt_reaches_the_agents_process_group(void **state)
{
    fx *f = *state;
    char pidfile[4300], args[4400];
    snprintf(pidfile, sizeof pidfile, "%s/pids", f->home);
    snprintf(args, sizeof args, "[\"--pid-file\",\"%s\"]", pidfile);
    acp_write_fixture_engine(f->home, args, "");
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "i", "fixture", f->home, NULL), 0);
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_service_interrupt(f->svc, "i", SIGINT, &err), CDSH_ENOTFOUND);
    pthread_t t;
    pthread_create(&t, NULL, interrupt_soon, f->svc);
    json_t *res = send(f, "i", "stall-hard"); /* ignores session/cancel */
    pthread_join(t, NULL);
    assert_false(json_is_true(json_object_get(res, "ok")));
    json_decref(res);
    char *pids = cdsh_test_read_file(pidfile, NULL);
    int pid = atoi(pids);
    free(pids);
    for (int i = 0; i < 100 && acp_pid_alive(pid); i++)
        usleep(50 * 1000);
    assert_false(acp_pid_alive(pid)); /* SIGINT's default action ended it */
}

/* Issue 21 item 9: a failure that quotes the agent's stderr does not carry
 * a value cdsh handed the engine (the result is stored in the session), nor
 * does the engine's recorded health. */
static void failures_do_not_echo_what_cdsh_handed_the_engine(void **state)
{
    fx *f = *state;
    acp_write_fixture_engine(f->home, "[\"--echo-env\",\"FIXTURE_UPSTREAM\"]",
                             "\"env\":{\"FIXTURE_UPSTREAM\":\"upstreamVALUEecho42\"}");
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "e", "fixture", f->home, NULL), 0);
    json_t *res = send(f, "e", "die");
    assert_false(json_is_true(json_object_get(res, "ok")));
    char *dump = json_dumps(res, 0);
    assert_non_null(strstr(dump, "stderrTail"));
    assert_null(strstr(dump, "upstreamVALUEecho42"));
    assert_non_null(strstr(dump, "using FIXTURE_UPSTREAM=[REDACTED]"));
    free(dump);
    json_decref(res);
    char path[4300];
    snprintf(path, sizeof path, "%s/multi-acp/runtime.json", f->home);
    char *rt = cdsh_test_read_file(path, NULL);
    assert_null(strstr(rt, "upstreamVALUEecho42"));
    free(rt);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(a_bound_session_talks_to_its_engine_and_resumes_after_restart),
        T(without_load_the_session_is_resumed),
        T(the_engine_is_locked_after_the_first_message),
        T(a_disabled_engine_is_an_explicit_error),
        T(failed_turns_are_classified_with_the_agents_words),
        T(permissions_reach_the_sink_with_the_agents_labels),
        T(cancel_from_another_thread_ends_the_turn),
        T(a_person_deciding_does_not_trip_the_idle_gate),
        T(initial_config_options_are_applied_and_shown_verbatim),
        T(idle_engines_are_disposed_and_leave_no_process),
        T(cdsh_mcp_servers_are_offered_when_the_agent_supports_them),
        T(processes_of_other_permission_modes_are_not_shared),
        T(an_interrupt_reaches_the_agents_process_group),
        T(a_deaf_agent_is_given_up_after_cancel_grace_ms),
        T(failures_do_not_echo_what_cdsh_handed_the_engine),
        cmocka_unit_test(permission_option_mapping_follows_the_digest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
