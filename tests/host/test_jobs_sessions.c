/* test_jobs_sessions.c — background jobs and the sessions that own them:
 * completion notices (exactly once per job, none after the owner read the
 * end or killed the job itself, none for another owner), the notice in the
 * next turn's request through the agent loop against the scripted fake
 * model, jobs ending with their session (the session/end host event, an
 * MCP session closing), and the model starting work itself: xiangqi_hint
 * deeper than a turn's budget answers at once with a job owned by the
 * calling session. Jobs here wait on a gate the test opens or on their
 * token, so nothing depends on timing. */
#include "support/testkit.h"

#include "support/model_env.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "host/dispatch.h"
#include "host/host.h"
#include "host/jobs.h"
#include "plugins/xiangqi/plugin.h"
#include "proto/mcp/mcp_bridge.h"

/* ---- a gate the test opens; a job waits on it or on its own token ---------- */

static pthread_mutex_t G_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t G_cond = PTHREAD_COND_INITIALIZER;
static bool G_open;
static int G_runs; /* jobs that have written their text */

static void gate_set(bool open)
{
    pthread_mutex_lock(&G_lock);
    G_open = open;
    if (!open)
        G_runs = 0;
    pthread_cond_broadcast(&G_cond);
    pthread_mutex_unlock(&G_lock);
}

static void gate_wake(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&G_lock);
    pthread_cond_broadcast(&G_cond);
    pthread_mutex_unlock(&G_lock);
}

/* Writes ud (a string), waits for the gate or a kill. */
static int gated_run(void *ud, cdsh_job *job)
{
    cdsh_job_write(job, ud, strlen(ud));
    cdsh_cancel *tok = cdsh_job_cancel(job);
    uint64_t sub = cdsh_cancel_subscribe(tok, gate_wake, NULL);
    pthread_mutex_lock(&G_lock);
    G_runs++;
    pthread_cond_broadcast(&G_cond);
    while (!G_open && !cdsh_cancel_is_fired(tok))
        pthread_cond_wait(&G_cond, &G_lock);
    pthread_mutex_unlock(&G_lock);
    cdsh_cancel_unsubscribe(tok, sub);
    return cdsh_cancel_is_fired(tok) ? CDSH_ECANCELED : 0;
}

/* Waits until n jobs have written their text. */
static void wait_runs(int n)
{
    pthread_mutex_lock(&G_lock);
    while (G_runs < n)
        pthread_cond_wait(&G_cond, &G_lock);
    pthread_mutex_unlock(&G_lock);
}

/* ---- a producer plugin with a tool that starts a job for its caller -------- */

static cdsh_plugin_ctx *producer_ctx;

static char *start_job(const char *owner, const char *text)
{
    cdsh_job_spec spec = {
        .kind = "deep", .label = "a deep search", .owner = owner, .run = gated_run, .ud = (void *)text};
    char *id = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_ctx_job_start(producer_ctx, &spec, &id, &err), 0);
    return id;
}

/* The tool "deep_search": starts a job owned by the calling session. */
static int deep_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    char *id = start_job(exec->agent ? cdsh_scope_id(exec->agent) : NULL, "found: 42\n");
    *value = json_string(id);
    free(id);
    return 0;
}

static int producer_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    producer_ctx = ctx;
    json_t *p = json_pack("{s:s}", "type", "object");
    json_t *o = json_pack("{s:s}", "type", "string");
    cdsh_tool_def def = {.name = "deep_search",
                         .description = "starts a background search",
                         .parameters = p,
                         .output_schema = o,
                         .execute = deep_body};
    int rc = cdsh_ctx_register_tool(ctx, &def, err);
    json_decref(p);
    json_decref(o);
    return rc;
}

static const cdsh_plugin_def producer = {.name = "producer", .apply = producer_apply};

typedef struct fx {
    char *home;
    cdsh_host *host;
    cdsh_jobs *jobs;
} fx;

static int setup(void **state)
{
    gate_set(false);
    fx *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    f->host = cdsh_host_new();
    f->jobs = cdsh_host_jobs(f->host);
    assert_int_equal(cdsh_plugin_load(f->host, &cdsh_jobs_plugin, NULL, NULL, NULL), 0);
    assert_int_equal(cdsh_plugin_load(f->host, &producer, NULL, NULL, NULL), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    gate_set(true);
    cdsh_host_free(f->host);
    cdsh_test_home_free(f->home);
    free(f);
    return 0;
}

static void wait_end(fx *f, const char *id, const char *status)
{
    cdsh_job_status st;
    assert_int_equal(cdsh_jobs_wait(f->jobs, id, -1, NULL, &st, NULL), 0);
    assert_string_equal(cdsh_job_status_name(st), status);
}

/* The notice text for owner now (owned; NULL when there is none). */
static char *notices(fx *f, const char *owner)
{
    json_t *n = cdsh_jobs_take_notices(f->jobs, owner);
    assert_non_null(n);
    char *text = cdsh_jobs_notice_text(n);
    json_decref(n);
    return text;
}

static char *call_text(fx *f, cdsh_scope *agent, const char *tool, json_t *args_take)
{
    cdsh_dispatch_input in = {.call_id = "c1", .name = tool, .args = args_take, .agent = agent};
    cdsh_toolresult *r = cdsh_dispatch_execute(cdsh_host_tools(f->host), &in);
    json_decref(args_take);
    assert_non_null(r);
    char *text = strdup(json_string_value(json_object_get(json_array_get(r->content, 0), "text")));
    cdsh_toolresult_free(r);
    return text;
}

/* ---- notices ------------------------------------------------------------------ */

static void an_ended_job_is_noticed_exactly_once_by_its_owner(void **state)
{
    fx *f = *state;
    char *id = start_job("sess-a", "found: 42\n");
    assert_string_equal(id, "deep-1");
    assert_null(notices(f, "sess-a")); /* still running: nothing to say */
    gate_set(true);
    wait_end(f, id, "completed");
    assert_null(notices(f, "sess-b")); /* not theirs */
    char *text = notices(f, "sess-a");
    assert_string_equal(text, "background job deep-1 completed — a deep search; 10 bytes of "
                              "output not read yet: call job_output with job_id \"deep-1\" to "
                              "collect it.");
    free(text);
    assert_null(notices(f, "sess-a")); /* exactly once */
    /* the output is still there to collect */
    cdsh_scope *a = cdsh_scope_new("sess-a", NULL);
    text = call_text(f, a, "job_output", json_pack("{s:s}", "job_id", id));
    assert_string_equal(text, "found: 42\n[status: completed]");
    free(text);
    cdsh_scope_unref(a);
    free(id);
}

static void a_read_or_a_kill_by_the_owner_needs_no_notice(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("sess-a", NULL);
    char *read_id = start_job("sess-a", "x");
    char *kill_id = start_job("sess-a", "y");
    char *page_id = start_job("sess-a", "zz");
    wait_runs(3);
    /* a read while it runs does not count: the end is news */
    free(call_text(f, a, "job_output", json_pack("{s:s}", "job_id", read_id)));
    /* the owner kills one itself; the person kills another from the page */
    free(call_text(f, a, "job_kill", json_pack("{s:s}", "job_id", kill_id)));
    assert_int_equal(cdsh_jobs_kill(f->jobs, NULL, true, page_id, "from the page", -1, NULL, NULL),
                     0);
    gate_set(true);
    wait_end(f, read_id, "completed");
    char *text = notices(f, "sess-a");
    /* deep-1 (read while running) and deep-3 (killed by the person) */
    assert_string_equal(text, "background job deep-1 completed — a deep search; no output left "
                              "to read: call job_output with job_id \"deep-1\" to collect it.\n"
                              "background job deep-3 killed (from the page) — a deep search; 2 "
                              "bytes of output not read yet: call job_output with job_id "
                              "\"deep-3\" to collect it.");
    free(text);
    /* a read after the end is the owner learning it: no notice */
    char *late = start_job("sess-a", "late");
    wait_end(f, late, "completed");
    free(call_text(f, a, "job_output", json_pack("{s:s}", "job_id", late)));
    assert_null(notices(f, "sess-a"));
    free(late);
    free(read_id);
    free(kill_id);
    free(page_id);
    cdsh_scope_unref(a);
}

/* ---- the notice in the next turn's request ------------------------------------ */

#define CALL_THEN_STOP                                                                             \
    "{\"chunks\":[{\"tool_call\":{\"index\":0,\"id\":\"c1\",\"name\":\"deep_search\","             \
    "\"arguments\":\"{}\"}}],\"finish_reason\":\"tool_calls\"},"                                   \
    "{\"chunks\":[{\"text\":\"started\"}],\"finish_reason\":\"stop\"}"
#define STOP "{\"chunks\":[{\"text\":\"ok\"}],\"finish_reason\":\"stop\"}"

static const char *last_content(const json_t *body)
{
    const json_t *m = json_object_get(body, "messages");
    return json_string_value(json_object_get(json_array_get(m, json_array_size(m) - 1), "content"));
}

static void the_next_turn_carries_the_notice_once(void **state)
{
    fx *f = *state;
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    cdsh_test_fake_model fm;
    cdsh_test_model_env_start(&fm, "[" CALL_THEN_STOP "," STOP "," STOP "]");
    cdsh_session_store *store = NULL;
    cdsh_agent *agent = NULL;
    char *sid = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_session_store_open(cdsh_test_home(), NULL, &store, &err), 0);
    cdsh_agent_options o = {.host = f->host, .store = store, .base_prompt = "BASE"};
    assert_int_equal(cdsh_agent_new(&o, &agent, &err), 0);
    cdsh_session_spec spec = {.title = "t"};
    assert_int_equal(cdsh_session_store_create(store, &spec, &sid, &err), 0);

    cdsh_agent_outcome out;
    assert_int_equal(cdsh_agent_run_turn(agent, sid, "search deeply", NULL, NULL, NULL, &out, &err),
                     0);
    assert_string_equal(out.reason, "done");
    cdsh_agent_outcome_deinit(&out);
    /* the job the model started belongs to this session */
    json_t *mine = cdsh_jobs_list(f->jobs, sid);
    assert_int_equal(json_array_size(mine), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(mine, 0), "owner")), sid);
    json_decref(mine);
    gate_set(true);
    wait_end(f, "deep-1", "completed");
    for (int turn = 2; turn <= 3; turn++) {
        assert_int_equal(cdsh_agent_run_turn(agent, sid, "and now?", NULL, NULL, NULL, &out, &err),
                         0);
        assert_string_equal(out.reason, "done");
        cdsh_agent_outcome_deinit(&out);
    }
    json_t *bodies = cdsh_test_model_env_bodies(&fm);
    assert_int_equal(json_array_size(bodies), 4);
    /* turn 1 (two steps): no notice; turn 2: the notice; turn 3: none */
    for (size_t i = 0; i < 4; i++) {
        const char *c = last_content(json_array_get(bodies, i));
        if (i == 2)
            assert_string_equal(c, CDSH_AGENT_CONTEXT_HEAD
                                "<runtime_context name=\"jobs\">\nbackground job deep-1 completed "
                                "— a deep search; 10 bytes of output not read yet: call "
                                "job_output with job_id \"deep-1\" to collect it.\n"
                                "</runtime_context>");
        else
            assert_null(c ? strstr(c, "background job") : NULL);
    }
    /* the system prompt carries the guidance only once the session has a job */
    for (size_t i = 0; i < 4; i++) {
        const json_t *m = json_object_get(json_array_get(bodies, i), "messages");
        const char *sys = json_string_value(json_object_get(json_array_get(m, 0), "content"));
        assert_string_equal(json_string_value(json_object_get(json_array_get(m, 0), "role")),
                            "system");
        if (i == 0)
            assert_null(strstr(sys, "Background jobs:"));
        else
            assert_non_null(strstr(sys, "Background jobs: you have work running or finished in "
                                        "the background (job_list shows it). Keep the job ids."));
    }
    json_decref(bodies);
    cdsh_agent_free(agent);
    cdsh_session_store_close(store);
    free(sid);
    cdsh_test_model_env_stop(&fm);
}

/* ---- jobs end with their session -------------------------------------------------- */

static void a_session_end_event_disposes_its_jobs_only(void **state)
{
    fx *f = *state;
    char *a = start_job("sess-a", "a");
    char *b = start_job("sess-b", "b");
    json_t *p = json_pack("{s:s, s:s}", "id", "sess-a", "reason", "deleted");
    cdsh_events_emit(cdsh_host_events(f->host), CDSH_EVENT_SESSION_END, NULL, false, p);
    json_decref(p);
    /* gone when the emission returns: cancelled, awaited, removed */
    json_t *all = cdsh_jobs_list_all(f->jobs);
    assert_int_equal(json_array_size(all), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(all, 0), "id")), b);
    assert_string_equal(json_string_value(json_object_get(json_array_get(all, 0), "status")),
                        "running");
    json_decref(all);
    assert_null(notices(f, "sess-a")); /* nobody left to tell */
    free(a);
    free(b);
}

static void closing_an_mcp_session_ends_its_jobs(void **state)
{
    fx *f = *state;
    cdsh_mcp_export *ex =
        cdsh_mcp_export_new(cdsh_host_tools(f->host), cdsh_host_events(f->host), NULL, NULL);
    assert_non_null(ex);
    cdsh_mcp_provider p;
    cdsh_mcp_export_provider(ex, &p);
    void *s1 = p.session_open(p.ud, "http");
    void *s2 = p.session_open(p.ud, "stdio");
    /* the MCP client's calls run in its session's scope: deep_search owns it there */
    char *t1 = call_text(f, s1, "deep_search", json_object());
    char *t2 = call_text(f, s2, "deep_search", json_object());
    json_t *mine = cdsh_jobs_list(f->jobs, cdsh_scope_id(s1));
    assert_int_equal(json_array_size(mine), 1);
    json_decref(mine);
    p.session_close(p.ud, s1);
    json_t *all = cdsh_jobs_list_all(f->jobs);
    assert_int_equal(json_array_size(all), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(all, 0), "owner")),
                        cdsh_scope_id(s2));
    json_decref(all);
    p.session_close(p.ud, s2);
    assert_int_equal(cdsh_jobs_count(f->jobs), 0);
    cdsh_mcp_export_free(ex);
    free(t1);
    free(t2);
}

/* ---- the model starts work: xiangqi_hint beyond the turn's budget ------------------ */

static void a_deep_hint_answers_at_once_with_a_job_of_the_session(void **state)
{
    fx *f = *state;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/xq", f->home);
    json_t *cfg = json_pack("{s:s, s:{s:i}}", "storageDir", dir, "hint", "depth", 2);
    cdsh_error err = {0};
    assert_int_equal(cdsh_plugin_load(f->host, &cdsh_xq_plugin, cfg, NULL, &err), 0);
    json_decref(cfg);
    cdsh_scope *me = cdsh_scope_new("sess-xq", NULL);
    cdsh_scope *other = cdsh_scope_new("sess-other", NULL);
    json_t *args = json_pack("{s:i, s:i}", "count", 2, "depth", 24);
    cdsh_dispatch_input in = {.call_id = "c1", .name = "xiangqi_hint", .args = args, .agent = me};
    cdsh_toolresult *r = cdsh_dispatch_execute(cdsh_host_tools(f->host), &in);
    json_decref(args);
    assert_non_null(r);
    assert_false(r->is_error);
    /* candidates now, at the configured depth; the deep search as a job */
    const json_t *v = r->value;
    assert_int_equal(json_array_size(json_object_get(v, "candidates")), 2);
    assert_int_equal(json_integer_value(json_object_get(
                         json_array_get(json_object_get(v, "candidates"), 0), "depth")),
                     2);
    const json_t *job = json_object_get(v, "job");
    assert_string_equal(json_string_value(json_object_get(job, "id")), "xiangqi-analyze-1");
    assert_int_equal(json_integer_value(json_object_get(job, "depth")), 24);
    assert_int_equal(json_integer_value(json_object_get(job, "turnDepth")), 12);
    assert_string_equal(json_string_value(json_object_get(job, "collectWith")), "job_output");
    const char *text = json_string_value(json_object_get(json_array_get(r->content, 0), "text"));
    assert_non_null(strstr(text, "background job xiangqi-analyze-1 is searching it; collect it "
                                 "with job_output (job_id \"xiangqi-analyze-1\")"));
    cdsh_toolresult_free(r);
    /* owned by the calling session: listed for it, unknown to another */
    char *list = call_text(f, me, "job_list", json_object());
    assert_string_equal(list, "xiangqi-analyze-1 [xiangqi-analyze] running — xiangqi_hint to "
                              "depth 24: rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/"
                              "RNBAKABNR w - - 0 1");
    free(list);
    list = call_text(f, other, "job_list", json_object());
    assert_string_equal(list, "(no background jobs)");
    free(list);
    /* the model stops it; it ends killed, with no notice to follow */
    char *k = call_text(f, me, "job_kill", json_pack("{s:s}", "job_id", "xiangqi-analyze-1"));
    assert_string_equal(k, "killed job xiangqi-analyze-1 [status: killed]");
    free(k);
    assert_null(notices(f, "sess-xq"));
    /* within the budget the hint stays in the turn: no job */
    args = json_pack("{s:i}", "depth", 3);
    in.args = args;
    r = cdsh_dispatch_execute(cdsh_host_tools(f->host), &in);
    json_decref(args);
    assert_false(r->is_error);
    assert_null(json_object_get(r->value, "job"));
    cdsh_toolresult_free(r);
    assert_int_equal(cdsh_jobs_count(f->jobs), 1);
    cdsh_scope_unref(me);
    cdsh_scope_unref(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(an_ended_job_is_noticed_exactly_once_by_its_owner, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_read_or_a_kill_by_the_owner_needs_no_notice, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_next_turn_carries_the_notice_once, setup, teardown),
        cmocka_unit_test_setup_teardown(a_session_end_event_disposes_its_jobs_only, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(closing_an_mcp_session_ends_its_jobs, setup, teardown),
        cmocka_unit_test_setup_teardown(a_deep_hint_answers_at_once_with_a_job_of_the_session,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
