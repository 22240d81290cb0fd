/* test_jobs.c — background jobs (host-contracts.md §16): ids per kind, the
 * tools job_output / job_list / job_kill with their exact texts, owners and
 * their limit, the output ring's cap, kill through the job's token, events
 * in order, the control-surface fence, and disposal when the starting
 * plugin unloads or the host is freed. Jobs here wait on a gate the test
 * opens, so nothing depends on timing. */
#include "support/testkit.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "host/dispatch.h"
#include "host/host.h"
#include "host/jobs.h"

/* ---- a gate the test opens; a job waits on it or on its own token ---------- */

typedef struct gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool open;
    int freed; /* free_ud calls */
    int runs;
} gate;

static gate G;

static void gate_reset(void)
{
    pthread_mutex_init(&G.lock, NULL);
    pthread_cond_init(&G.cond, NULL);
    G.open = false;
    G.freed = 0;
    G.runs = 0;
}

static void gate_open(void)
{
    pthread_mutex_lock(&G.lock);
    G.open = true;
    pthread_cond_broadcast(&G.cond);
    pthread_mutex_unlock(&G.lock);
}

static void gate_wake(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&G.lock);
    pthread_cond_broadcast(&G.cond);
    pthread_mutex_unlock(&G.lock);
}

static void gate_free_ud(void *ud)
{
    (void)ud;
    pthread_mutex_lock(&G.lock);
    G.freed++;
    pthread_mutex_unlock(&G.lock);
}

/* Writes ud (a string) if any, waits for the gate or a kill, writes "bye". */
static int gated_run(void *ud, cdsh_job *job)
{
    if (ud)
        cdsh_job_write(job, ud, strlen(ud));
    cdsh_cancel *tok = cdsh_job_cancel(job);
    uint64_t sub = cdsh_cancel_subscribe(tok, gate_wake, NULL);
    pthread_mutex_lock(&G.lock);
    G.runs++;
    pthread_cond_broadcast(&G.cond);
    while (!G.open && !cdsh_cancel_is_fired(tok))
        pthread_cond_wait(&G.cond, &G.lock);
    pthread_mutex_unlock(&G.lock);
    cdsh_cancel_unsubscribe(tok, sub);
    if (cdsh_cancel_is_fired(tok))
        return CDSH_ECANCELED;
    cdsh_job_write(job, "bye\n", 4);
    return 0;
}

/* Waits until n jobs entered gated_run. */
static void wait_runs(int n)
{
    pthread_mutex_lock(&G.lock);
    while (G.runs < n)
        pthread_cond_wait(&G.cond, &G.lock);
    pthread_mutex_unlock(&G.lock);
}

/* ---- a producer plugin ------------------------------------------------------ */

static cdsh_plugin_ctx *producer_ctx;

static int producer_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    (void)err;
    producer_ctx = ctx;
    return 0;
}

static const cdsh_plugin_def producer = {.name = "producer", .apply = producer_apply};

/* ---- events ---------------------------------------------------------------- */

typedef struct seen {
    pthread_mutex_t lock;
    json_t *events; /* [[name, payload]] */
} seen;

static seen S;

static void on_event(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    (void)arg;
    (void)scope;
    pthread_mutex_lock(&S.lock);
    json_array_append_new(S.events, json_pack("[s, O]", name, payload));
    pthread_mutex_unlock(&S.lock);
}

/* "name id status" lines of the events so far, for exact comparison. */
static char *events_text(void)
{
    pthread_mutex_lock(&S.lock);
    char *buf = strdup("");
    size_t i;
    json_t *ev;
    json_array_foreach(S.events, i, ev) {
        const json_t *p = json_array_get(ev, 1);
        const char *st = json_string_value(json_object_get(p, "status"));
        char *s = NULL;
        assert_true(asprintf(&s, "%s%s %s%s%s;", buf, json_string_value(json_array_get(ev, 0)),
                             json_string_value(json_object_get(p, "id")), st ? " " : "",
                             st ? st : "") >= 0);
        free(buf);
        buf = s;
    }
    pthread_mutex_unlock(&S.lock);
    return buf;
}

/* ---- fixture --------------------------------------------------------------- */

typedef struct fx {
    cdsh_host *host;
    cdsh_plugin *jobs, *producer;
    cdsh_disposer_t listener;
} fx;

static int setup(void **state)
{
    gate_reset();
    pthread_mutex_init(&S.lock, NULL);
    S.events = json_array();
    fx *f = calloc(1, sizeof *f);
    f->host = cdsh_host_new();
    assert_int_equal(cdsh_events_on(cdsh_host_events(f->host), "jobs/*", NULL, on_event, NULL,
                                    &f->listener, NULL),
                     0);
    assert_int_equal(cdsh_plugin_load(f->host, &cdsh_jobs_plugin, NULL, &f->jobs, NULL), 0);
    assert_int_equal(cdsh_plugin_load(f->host, &producer, NULL, &f->producer, NULL), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    gate_open();
    cdsh_host_free(f->host);
    json_decref(S.events);
    free(f);
    return 0;
}

static char *start(const char *kind, const char *owner, const char *text, int expect_rc,
                   cdsh_error *err)
{
    cdsh_job_spec spec = {.kind = kind,
                          .label = "a test job",
                          .owner = owner,
                          .run = gated_run,
                          .ud = (void *)text,
                          .free_ud = gate_free_ud};
    char *id = NULL;
    assert_int_equal(cdsh_ctx_job_start(producer_ctx, &spec, &id, err), expect_rc);
    return id;
}

/* Calls a jobs tool as `agent` (NULL: no agent) and returns its text. */
static char *call(fx *f, cdsh_scope *agent, const char *tool, json_t *args_take, bool *is_error)
{
    cdsh_dispatch_input in = {.call_id = "c1", .name = tool, .args = args_take, .agent = agent};
    cdsh_toolresult *r = cdsh_dispatch_execute(cdsh_host_tools(f->host), &in);
    json_decref(args_take);
    assert_non_null(r);
    if (is_error)
        *is_error = r->is_error;
    char *text = strdup(json_string_value(json_object_get(json_array_get(r->content, 0), "text")));
    cdsh_toolresult_free(r);
    return text;
}

#define assert_text(got, want)                                                                     \
    do {                                                                                           \
        char *got_ = (got);                                                                        \
        assert_string_equal(got_, want);                                                           \
        free(got_);                                                                                \
    } while (0)

/* ---- cases ------------------------------------------------------------------- */

static void ids_count_per_kind_and_events_come_in_order(void **state)
{
    fx *f = *state;
    char *a = start("demo", NULL, NULL, 0, NULL);
    char *b = start("demo", NULL, NULL, 0, NULL);
    char *c = start("scan-tree", NULL, NULL, 0, NULL);
    assert_string_equal(a, "demo-1");
    assert_string_equal(b, "demo-2");
    assert_string_equal(c, "scan-tree-1");
    wait_runs(3);
    gate_open();
    cdsh_job_status st;
    assert_int_equal(cdsh_jobs_wait(cdsh_host_jobs(f->host), a, -1, NULL, &st, NULL), 0);
    assert_int_equal(st, CDSH_JOB_COMPLETED);
    assert_int_equal(cdsh_jobs_wait(cdsh_host_jobs(f->host), b, -1, NULL, &st, NULL), 0);
    assert_int_equal(cdsh_jobs_wait(cdsh_host_jobs(f->host), c, -1, NULL, &st, NULL), 0);
    /* every start precedes its end; the start payload names kind, label, owner, plugin */
    char *ev = events_text();
    assert_non_null(strstr(ev, "jobs/start demo-1;jobs/start demo-2;jobs/start scan-tree-1;"));
    assert_non_null(strstr(ev, "jobs/end demo-1 completed;"));
    assert_non_null(strstr(ev, "jobs/end demo-2 completed;"));
    assert_non_null(strstr(ev, "jobs/end scan-tree-1 completed;"));
    free(ev);
    json_t *p0 = json_array_get(json_array_get(S.events, 0), 1);
    assert_string_equal(json_string_value(json_object_get(p0, "kind")), "demo");
    assert_string_equal(json_string_value(json_object_get(p0, "label")), "a test job");
    assert_string_equal(json_string_value(json_object_get(p0, "plugin")), "producer");
    assert_true(json_is_null(json_object_get(p0, "owner")));
    /* the ids keep counting after the jobs ended */
    char *d = start("demo", NULL, NULL, 0, NULL);
    assert_string_equal(d, "demo-3");
    free(a);
    free(b);
    free(c);
    free(d);
}

static void job_list_lists_the_callers_jobs_in_dsh_format(void **state)
{
    fx *f = *state;
    assert_text(call(f, NULL, "job_list", json_object(), NULL), "(no background jobs)");
    free(start("demo", NULL, NULL, 0, NULL));
    free(start("demo", NULL, NULL, 0, NULL));
    wait_runs(2);
    assert_int_equal(
        cdsh_jobs_kill(cdsh_host_jobs(f->host), NULL, false, "demo-2", NULL, -1, NULL, NULL), 0);
    assert_text(call(f, NULL, "job_list", json_object(), NULL),
                "demo-1 [demo] running — a test job\ndemo-2 [demo] killed — a test job");
}

static void job_output_reads_what_is_new_then_the_end(void **state)
{
    fx *f = *state;
    free(start("demo", NULL, "hello\n", 0, NULL));
    wait_runs(1);
    assert_text(call(f, NULL, "job_output", json_pack("{s:s}", "job_id", "demo-1"), NULL),
                "hello\n[status: running]");
    /* the cursor is consumed: nothing new */
    assert_text(call(f, NULL, "job_output", json_pack("{s:s}", "job_id", "demo-1"), NULL),
                "[status: running]");
    gate_open();
    assert_text(
        call(f, NULL, "job_output", json_pack("{s:s, s:b}", "job_id", "demo-1", "wait", 1), NULL),
        "bye\n[status: completed]");
}

static void a_wait_that_times_out_reports_running(void **state)
{
    fx *f = *state;
    free(start("demo", NULL, NULL, 0, NULL));
    wait_runs(1);
    bool is_error = true;
    assert_text(call(f, NULL, "job_output",
                     json_pack("{s:s, s:b, s:i}", "job_id", "demo-1", "wait", 1, "timeout_ms", 20),
                     &is_error),
                "[status: running]");
    assert_false(is_error);
    /* a wait whose caller's token fired returns at once */
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    cdsh_cancel_fire(tok, NULL);
    json_t *out = NULL;
    cdsh_error e = {0};
    assert_int_equal(cdsh_jobs_read(cdsh_host_jobs(f->host), NULL, "demo-1", -1, tok, &out, &e),
                     CDSH_ECANCELED);
    assert_string_equal(e.code, "CANCELLED");
    assert_string_equal(e.message, "the wait for job demo-1 was cancelled");
    cdsh_cancel_free(tok);
}

static int progress_run(void *ud, cdsh_job *job)
{
    (void)ud;
    cdsh_job_progress(job, 3, 10, "depth 3");
    cdsh_job_printf(job, "line %d\n", 1);
    return gated_run(NULL, job);
}

static void progress_is_reported(void **state)
{
    fx *f = *state;
    cdsh_job_spec spec = {.kind = "deep", .label = "depth 10", .run = progress_run};
    assert_int_equal(cdsh_ctx_job_start(producer_ctx, &spec, NULL, NULL), 0);
    wait_runs(1);
    assert_text(call(f, NULL, "job_output", json_pack("{s:s}", "job_id", "deep-1"), NULL),
                "line 1\n[progress: 3/10 — depth 3]\n[status: running]");
    json_t *list = cdsh_jobs_list_all(cdsh_host_jobs(f->host));
    json_t *j0 = json_array_get(list, 0);
    assert_true(json_real_value(json_object_get(j0, "done")) == 3.0);
    assert_true(json_real_value(json_object_get(j0, "total")) == 10.0);
    assert_string_equal(json_string_value(json_object_get(j0, "message")), "depth 3");
    json_decref(list);
    char *ev = events_text();
    assert_string_equal(ev, "jobs/start deep-1;jobs/progress deep-1;");
    free(ev);
    json_t *p = json_array_get(json_array_get(S.events, 1), 1);
    assert_string_equal(json_string_value(json_object_get(p, "message")), "depth 3");
}

static int chatty_run(void *ud, cdsh_job *job)
{
    (void)ud;
    for (int i = 0; i < 10; i++)
        cdsh_job_printf(job, "%d123", i); /* 40 bytes */
    return 0;
}

static void the_ring_keeps_the_last_bytes_and_says_what_it_dropped(void **state)
{
    fx *f = *state;
    cdsh_job_spec spec = {
        .kind = "chatty", .label = "40 bytes", .run = chatty_run, .output_limit = 16};
    assert_int_equal(cdsh_ctx_job_start(producer_ctx, &spec, NULL, NULL), 0);
    assert_int_equal(cdsh_jobs_wait(cdsh_host_jobs(f->host), "chatty-1", -1, NULL, NULL, NULL), 0);
    assert_text(call(f, NULL, "job_output", json_pack("{s:s}", "job_id", "chatty-1"), NULL),
                "[… 24 bytes of earlier output dropped: the job keeps its last 16 bytes]\n"
                "6123712381239123\n[status: completed]");
    json_t *snap = cdsh_jobs_get(cdsh_host_jobs(f->host), NULL, false, "chatty-1", NULL);
    assert_int_equal(json_integer_value(json_object_get(snap, "outputBytes")), 40);
    assert_int_equal(json_integer_value(json_object_get(snap, "droppedBytes")), 24);
    json_decref(snap);
}

static void ten_jobs_per_owner_and_the_eleventh_is_refused(void **state)
{
    fx *f = *state;
    for (int i = 0; i < 10; i++)
        free(start("demo", "agent-a", NULL, 0, NULL));
    cdsh_error e = {0};
    assert_null(start("demo", "agent-a", NULL, CDSH_EBUSY, &e));
    assert_string_equal(e.code, "JOB_LIMIT");
    assert_string_equal(e.message,
                        "owner \"agent-a\" already runs 10 background jobs (the limit); collect "
                        "or kill one (job_list, job_kill) before starting another");
    assert_int_equal(G.freed, 1); /* the refused job's ud was released */
    /* other owners and unowned work are counted apart */
    free(start("demo", "agent-b", NULL, 0, NULL));
    free(start("demo", NULL, NULL, 0, NULL));
    /* one ends: a slot is free again */
    assert_int_equal(
        cdsh_jobs_kill(cdsh_host_jobs(f->host), "agent-a", false, "demo-1", NULL, -1, NULL, NULL),
        0);
    char *id = start("demo", "agent-a", NULL, 0, NULL);
    assert_string_equal(id, "demo-13");
    free(id);
}

static void the_host_bounds_running_jobs(void **state)
{
    fx *f = *state;
    cdsh_jobs_limits lim = {.max_running = 2};
    cdsh_jobs_set_limits(cdsh_host_jobs(f->host), &lim);
    free(start("demo", "a", NULL, 0, NULL));
    free(start("demo", "b", NULL, 0, NULL));
    cdsh_error e = {0};
    assert_null(start("demo", "c", NULL, CDSH_EBUSY, &e));
    assert_string_equal(e.code, "JOBS_BUSY");
    assert_string_equal(e.message, "cdsh already runs 2 background jobs (the host's limit); try "
                                   "again when one has ended");
}

static void job_kill_fires_the_token_and_reports_the_status(void **state)
{
    fx *f = *state;
    free(start("demo", NULL, NULL, 0, NULL));
    wait_runs(1);
    assert_text(call(f, NULL, "job_kill",
                     json_pack("{s:s, s:s}", "job_id", "demo-1", "reason", "no longer needed"),
                     NULL),
                "killed job demo-1 [status: killed]");
    assert_text(call(f, NULL, "job_output", json_pack("{s:s}", "job_id", "demo-1"), NULL),
                "[status: killed — no longer needed]");
    assert_text(call(f, NULL, "job_kill", json_pack("{s:s}", "job_id", "demo-1"), NULL),
                "job demo-1 had already ended [status: killed]");
    char *ev = events_text();
    assert_string_equal(ev, "jobs/start demo-1;jobs/end demo-1 killed;");
    free(ev);
}

static int failing_run(void *ud, cdsh_job *job)
{
    (void)ud;
    cdsh_job_set_detail(job, "engine crashed:\nsignal 11");
    return CDSH_EIO;
}

static void a_failing_job_says_why(void **state)
{
    fx *f = *state;
    cdsh_job_spec spec = {.kind = "demo", .label = "will fail", .run = failing_run};
    assert_int_equal(cdsh_ctx_job_start(producer_ctx, &spec, NULL, NULL), 0);
    assert_int_equal(cdsh_jobs_wait(cdsh_host_jobs(f->host), "demo-1", -1, NULL, NULL, NULL), 0);
    assert_text(call(f, NULL, "job_output", json_pack("{s:s}", "job_id", "demo-1"), NULL),
                "[status: failed — engine crashed: signal 11]");
}

static void owned_jobs_are_visible_only_to_their_owner(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("agent-a", NULL);
    cdsh_scope *b = cdsh_scope_new("agent-b", NULL);
    free(start("demo", "agent-a", "mine\n", 0, NULL));
    wait_runs(1);
    assert_text(call(f, a, "job_list", json_object(), NULL), "demo-1 [demo] running — a test job");
    assert_text(call(f, b, "job_list", json_object(), NULL), "(no background jobs)");
    assert_text(call(f, NULL, "job_list", json_object(), NULL), "(no background jobs)");
    bool is_error = false;
    assert_text(call(f, b, "job_output", json_pack("{s:s}", "job_id", "demo-1"), &is_error),
                "Error: unknown background job \"demo-1\"; job_list lists the jobs you can see");
    assert_true(is_error);
    assert_text(call(f, b, "job_kill", json_pack("{s:s}", "job_id", "demo-1"), &is_error),
                "Error: unknown background job \"demo-1\"; job_list lists the jobs you can see");
    assert_text(call(f, a, "job_output", json_pack("{s:s}", "job_id", "demo-1"), NULL),
                "mine\n[status: running]");
    /* the person's surfaces see everything */
    json_t *all = cdsh_jobs_list_all(cdsh_host_jobs(f->host));
    assert_int_equal(json_array_size(all), 1);
    json_decref(all);
    /* the owner's session ends: its jobs go */
    json_t *end = json_pack("{s:s, s:s}", "id", "agent-a", "reason", "deleted");
    cdsh_events_emit(cdsh_host_events(f->host), CDSH_EVENT_SESSION_END, NULL, false, end);
    json_decref(end);
    assert_int_equal(cdsh_jobs_count(cdsh_host_jobs(f->host)), 0);
    cdsh_scope_unref(a);
    cdsh_scope_unref(b);
}

static void unloading_the_plugin_kills_and_removes_its_jobs(void **state)
{
    fx *f = *state;
    for (int i = 0; i < 3; i++)
        free(start("demo", NULL, NULL, 0, NULL));
    wait_runs(3);
    size_t effects = cdsh_plugin_effect_count(f->producer);
    assert_int_equal(effects, 1); /* one disposer for all its jobs */
    cdsh_plugin_unload(f->producer);
    assert_int_equal(cdsh_jobs_count(cdsh_host_jobs(f->host)), 0);
    assert_int_equal(G.freed, 3);
    char *ev = events_text();
    assert_non_null(strstr(ev, "jobs/end demo-1 killed;"));
    assert_non_null(strstr(ev, "jobs/end demo-2 killed;"));
    assert_non_null(strstr(ev, "jobs/end demo-3 killed;"));
    free(ev);
    /* loaded again, it starts afresh; the ids keep counting */
    assert_int_equal(cdsh_plugin_load(f->host, &producer, NULL, &f->producer, NULL), 0);
    char *id = start("demo", NULL, NULL, 0, NULL);
    assert_string_equal(id, "demo-4");
    free(id);
}

static void without_a_surface_nothing_starts(void **state)
{
    fx *f = *state;
    cdsh_plugin_unload(f->jobs);
    cdsh_error e = {0};
    assert_null(start("demo", NULL, NULL, CDSH_EPERM, &e));
    assert_string_equal(e.code, "JOBS_NO_SURFACE");
    assert_string_equal(e.message, "background jobs need a control surface: enable the \"jobs\" "
                                   "plugin (job_output, job_list, job_kill)");
    assert_int_equal(G.runs, 0);
    assert_int_equal(G.freed, 1);
    /* the tools left with the plugin */
    assert_false(cdsh_tools_visible(cdsh_host_tools(f->host), NULL, "job_output"));
}

static void bad_specs_are_refused_with_their_reason(void **state)
{
    (void)state;
    cdsh_error e = {0};
    assert_null(start("Demo", NULL, NULL, CDSH_EINVAL, &e));
    assert_string_equal(e.code, "BAD_JOB_SPEC");
    assert_string_equal(e.message, "job kind \"Demo\" is invalid: use 1-32 of a-z 0-9 _ -, "
                                   "starting with a letter");
    cdsh_job_spec spec = {.kind = "demo", .label = "  ", .run = gated_run};
    assert_int_equal(cdsh_ctx_job_start(producer_ctx, &spec, NULL, &e), CDSH_EINVAL);
    assert_string_equal(e.message, "job \"demo\" needs a label (one non-blank line)");
    spec.label = "x";
    spec.run = NULL;
    assert_int_equal(cdsh_ctx_job_start(producer_ctx, &spec, NULL, &e), CDSH_EINVAL);
    assert_string_equal(e.message, "job \"demo\" needs a run function");
}

static void freeing_the_host_ends_running_jobs(void **state)
{
    fx *f = *state;
    for (int i = 0; i < 4; i++)
        free(start("demo", "x", NULL, 0, NULL));
    wait_runs(4);
    cdsh_host_free(f->host); /* must not hang: every job is cancelled and joined */
    f->host = NULL;
    assert_int_equal(G.freed, 4);
}

static void the_rpc_channel_lists_reads_and_kills(void **state)
{
    fx *f = *state;
    free(start("demo", "agent-a", "out\n", 0, NULL));
    wait_runs(1);
    cdsh_rpc *rpc = cdsh_host_rpc(f->host);
    json_t *r = cdsh_rpc_call(rpc, "/jobs", "list", NULL, NULL);
    json_t *jobs = json_object_get(json_object_get(r, "value"), "jobs");
    assert_int_equal(json_array_size(jobs), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(jobs, 0), "owner")),
                        "agent-a");
    json_decref(r);
    json_t *p = json_pack("{s:s}", "id", "demo-1");
    r = cdsh_rpc_call(rpc, "/jobs", "output", p, NULL);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "value"), "output")),
                        "out\n");
    json_decref(r);
    r = cdsh_rpc_call(rpc, "/jobs", "kill", p, NULL);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "value"), "status")),
                        "killed");
    json_decref(r);
    json_decref(p);
    /* the page's read does not consume the owner's cursor */
    cdsh_scope *a = cdsh_scope_new("agent-a", NULL);
    assert_text(call(f, a, "job_output", json_pack("{s:s}", "job_id", "demo-1"), NULL),
                "out\n[status: killed — killed]");
    cdsh_scope_unref(a);
    p = json_pack("{s:s}", "id", "nope-1");
    r = cdsh_rpc_call(rpc, "/jobs", "kill", p, NULL);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "message")),
                        "unknown background job \"nope-1\"; job_list lists the jobs you can see");
    json_decref(r);
    json_decref(p);
}

static int starter_start(cdsh_host *host, const json_t *args, char **id, cdsh_error *err)
{
    (void)host;
    const char *text = json_string_value(json_object_get(args, "text"));
    cdsh_job_spec spec = {.kind = "demo",
                          .label = "started from the page",
                          .run = gated_run,
                          .ud = (void *)(text ? "from args\n" : NULL)};
    return cdsh_ctx_job_start(producer_ctx, &spec, id, err);
}

static const cdsh_job_starter demo_starter = {
    .kind = "demo", .label = "Run the demo", .start = starter_start};

static void the_page_starts_what_plugins_offer(void **state)
{
    fx *f = *state;
    cdsh_rpc *rpc = cdsh_host_rpc(f->host);
    json_t *r = cdsh_rpc_call(rpc, "/jobs", "starters", NULL, NULL);
    assert_int_equal(json_array_size(json_object_get(json_object_get(r, "value"), "starters")), 0);
    json_decref(r);
    assert_int_equal(cdsh_ctx_hook(producer_ctx, CDSH_JOB_STARTERS, &demo_starter, NULL), 0);
    r = cdsh_rpc_call(rpc, "/jobs", "starters", NULL, NULL);
    char *s = json_dumps(json_object_get(r, "value"), JSON_COMPACT);
    assert_string_equal(s, "{\"starters\":[{\"kind\":\"demo\",\"label\":\"Run the demo\"}]}");
    free(s);
    json_decref(r);
    json_t *p = json_pack("{s:s, s:{s:s}}", "kind", "demo", "args", "text", "x");
    r = cdsh_rpc_call(rpc, "/jobs", "start", p, NULL);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "value"), "id")),
                        "demo-1");
    json_decref(r);
    json_decref(p);
    wait_runs(1);
    json_t *all = cdsh_jobs_list_all(cdsh_host_jobs(f->host));
    assert_string_equal(json_string_value(json_object_get(json_array_get(all, 0), "label")),
                        "started from the page");
    json_decref(all);
    p = json_pack("{s:s}", "kind", "nope");
    r = cdsh_rpc_call(rpc, "/jobs", "start", p, NULL);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "message")),
                        "no job starter of kind \"nope\" (see starters)");
    json_decref(r);
    json_decref(p);
    /* the starter leaves with its plugin */
    cdsh_plugin_unload(f->producer);
    r = cdsh_rpc_call(rpc, "/jobs", "starters", NULL, NULL);
    assert_int_equal(json_array_size(json_object_get(json_object_get(r, "value"), "starters")), 0);
    json_decref(r);
}

static int teardown_maybe_freed(void **state)
{
    fx *f = *state;
    if (!f->host) {
        json_decref(S.events);
        free(f);
        return 0;
    }
    return teardown(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(ids_count_per_kind_and_events_come_in_order, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(job_list_lists_the_callers_jobs_in_dsh_format, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(job_output_reads_what_is_new_then_the_end, setup, teardown),
        cmocka_unit_test_setup_teardown(a_wait_that_times_out_reports_running, setup, teardown),
        cmocka_unit_test_setup_teardown(progress_is_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(the_ring_keeps_the_last_bytes_and_says_what_it_dropped,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(ten_jobs_per_owner_and_the_eleventh_is_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_host_bounds_running_jobs, setup, teardown),
        cmocka_unit_test_setup_teardown(job_kill_fires_the_token_and_reports_the_status, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_failing_job_says_why, setup, teardown),
        cmocka_unit_test_setup_teardown(owned_jobs_are_visible_only_to_their_owner, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(unloading_the_plugin_kills_and_removes_its_jobs, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(without_a_surface_nothing_starts, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_specs_are_refused_with_their_reason, setup, teardown),
        cmocka_unit_test_setup_teardown(freeing_the_host_ends_running_jobs, setup,
                                        teardown_maybe_freed),
        cmocka_unit_test_setup_teardown(the_rpc_channel_lists_reads_and_kills, setup, teardown),
        cmocka_unit_test_setup_teardown(the_page_starts_what_plugins_offer, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
