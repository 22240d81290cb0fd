/* test_jsonrpc.c — the JSON-RPC peer against a real child process
 * (tests/peers/jsonrpc_peer.c over pipes) and against a second in-process
 * peer or a raw socket over socketpair(). */
#include "support/testkit.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "proto/jsonrpc.h"

/* ---- fixtures ----------------------------------------------------------- */

typedef struct diag_log {
    pthread_mutex_t lock;
    int counts[5];
} diag_log;

typedef struct hook_log {
    pthread_mutex_t lock;
    int calls;
    int rc;
    char method[64];
    json_t *id;
} hook_log;

typedef struct child {
    pid_t pid;
    cdsh_jsonrpc *peer;
    diag_log diags;
    hook_log hooks;
} child;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* Waits (polling, no time budget: CTest's timeout catches a hang) until the
 * peer has written at least n frames, i.e. n calls are sent and pending. */
static void wait_frames_out(cdsh_jsonrpc *p, uint64_t n)
{
    for (;;) {
        cdsh_jsonrpc_stats st;
        cdsh_jsonrpc_stats_get(p, &st);
        if (st.frames_out >= n)
            return;
        sleep_ms(2);
    }
}

static void on_diag(void *arg, cdsh_jsonrpc_diag kind, const char *message)
{
    diag_log *d = arg;
    assert_non_null(message);
    pthread_mutex_lock(&d->lock);
    d->counts[kind]++;
    pthread_mutex_unlock(&d->lock);
}

static int diag_count(diag_log *d, cdsh_jsonrpc_diag kind)
{
    pthread_mutex_lock(&d->lock);
    int n = d->counts[kind];
    pthread_mutex_unlock(&d->lock);
    return n;
}

static void on_cancel_hook(void *arg, cdsh_jsonrpc *peer, const json_t *id, const char *method,
                           int rc, const char *reason)
{
    (void)peer;
    (void)reason;
    hook_log *h = arg;
    pthread_mutex_lock(&h->lock);
    h->calls++;
    h->rc = rc;
    snprintf(h->method, sizeof h->method, "%s", method);
    json_decref(h->id);
    h->id = json_deep_copy(id);
    pthread_mutex_unlock(&h->lock);
}

/* Starts tests/peers/jsonrpc_peer as a child on two pipes and a peer on them. */
static void child_start(child *c, size_t max_frame, bool string_ids)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->diags.lock, NULL);
    pthread_mutex_init(&c->hooks.lock, NULL);
    char *path = cdsh_test_peer_path_dup("jsonrpc_peer");
    int to[2], from[2];
    assert_int_equal(pipe2(to, O_CLOEXEC), 0);
    assert_int_equal(pipe2(from, O_CLOEXEC), 0);
    c->pid = fork();
    assert_true(c->pid >= 0);
    if (c->pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        char *argv[] = {path, NULL};
        execv(path, argv);
        _exit(127);
    }
    free(path);
    close(to[0]);
    close(from[1]);
    cdsh_jsonrpc_config cfg = {.name = "peer",
                               .max_frame = max_frame,
                               .close_fds = true,
                               .string_ids = string_ids,
                               .on_diag = on_diag,
                               .diag_arg = &c->diags,
                               .on_cancel = on_cancel_hook,
                               .cancel_arg = &c->hooks};
    cdsh_error err = {0};
    c->peer = cdsh_jsonrpc_new(from[0], to[1], &cfg, &err);
    assert_non_null(c->peer);
}

static void child_go(child *c)
{
    cdsh_error err = {0};
    assert_int_equal(cdsh_jsonrpc_start(c->peer, &err), 0);
}

static void child_stop(child *c)
{
    cdsh_jsonrpc_free(c->peer);
    c->peer = NULL;
    kill(c->pid, SIGKILL);
    waitpid(c->pid, NULL, 0);
    json_decref(c->hooks.id);
    pthread_mutex_destroy(&c->diags.lock);
    pthread_mutex_destroy(&c->hooks.lock);
}

static int child_setup(void **state)
{
    child *c = malloc(sizeof *c);
    assert_non_null(c);
    child_start(c, 0, false);
    child_go(c);
    *state = c;
    return 0;
}

static int child_teardown(void **state)
{
    child_stop(*state);
    free(*state);
    return 0;
}

static json_t *call_ok(cdsh_jsonrpc *p, const char *method, json_t *params_steal)
{
    json_t *result = NULL;
    cdsh_error err = {0};
    int rc = cdsh_jsonrpc_call(p, method, params_steal, 30000, NULL, &result, NULL, &err);
    if (rc)
        print_error("call %s failed: %s\n", method, err.message);
    assert_int_equal(rc, 0);
    json_decref(params_steal);
    assert_non_null(result);
    return result;
}

static json_int_t int_field(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    assert_true(json_is_integer(v));
    return json_integer_value(v);
}

/* ---- async completion capture ------------------------------------------ */

typedef struct done_box {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    bool done;
    int rc;
    json_t *result;
    char message[CDSH_ERROR_MESSAGE_MAX];
    int64_t rerr_code;
} done_box;

static void box_init(done_box *b)
{
    memset(b, 0, sizeof *b);
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->cv, NULL);
}

static void box_deinit(done_box *b)
{
    json_decref(b->result);
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->cv);
}

static void on_done(void *arg, int rc, json_t *result, const cdsh_jsonrpc_remote_error *rerr,
                    const cdsh_error *err)
{
    done_box *b = arg;
    pthread_mutex_lock(&b->lock);
    assert_false(b->done); /* exactly once */
    b->done = true;
    b->rc = rc;
    b->result = json_deep_copy(result); /* borrowed: copy to keep */
    if (err)
        snprintf(b->message, sizeof b->message, "%s", err->message);
    if (rerr)
        b->rerr_code = rerr->code;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->lock);
}

static bool box_wait(done_box *b, int ms)
{
    int64_t end = cdsh_clock_mono_ms() + ms;
    pthread_mutex_lock(&b->lock);
    while (!b->done && cdsh_clock_mono_ms() < end) {
        pthread_mutex_unlock(&b->lock);
        sleep_ms(5);
        pthread_mutex_lock(&b->lock);
    }
    bool done = b->done;
    pthread_mutex_unlock(&b->lock);
    return done;
}

/* ---- against the child -------------------------------------------------- */

static void call_returns_child_result(void **state)
{
    child *c = *state;
    json_t *r =
        call_ok(c->peer, "echo", json_pack("{s:i, s:s}", "x", 1, "s", "h\xc3\xa9llo\nline"));
    assert_int_equal(int_field(r, "x"), 1);
    assert_string_equal(json_string_value(json_object_get(r, "s")), "h\xc3\xa9llo\nline");
    json_decref(r);
    r = call_ok(c->peer, "add", json_pack("{s:i, s:i}", "a", 2, "b", 3));
    assert_int_equal(json_integer_value(r), 5);
    json_decref(r);
    r = call_ok(c->peer, "crlf", NULL);
    assert_string_equal(json_string_value(r), "crlf");
    json_decref(r);
}

typedef struct worker {
    cdsh_jsonrpc *peer;
    int index;
    int wrong;
} worker;

static void *add_many(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < 60; i++) {
        json_t *params = json_pack("{s:i, s:i}", "a", w->index * 1000, "b", i);
        json_t *result = NULL;
        int rc = cdsh_jsonrpc_call(w->peer, i % 10 == 0 ? "sleep" : "add",
                                   i % 10 == 0 ? NULL : params, 5000, NULL, &result, NULL, NULL);
        if (i % 10 == 0) {
            /* "sleep" without params: ms 0, exercises the child's threads */
            if (rc != 0 || json_integer_value(json_object_get(result, "slept")) != 0)
                w->wrong++;
        } else if (rc != 0 || json_integer_value(result) != w->index * 1000 + i) {
            w->wrong++;
        }
        json_decref(result);
        json_decref(params);
    }
    return NULL;
}

static void concurrent_calls_from_eight_threads_get_their_own_results(void **state)
{
    child *c = *state;
    pthread_t threads[8];
    worker workers[8];
    for (int i = 0; i < 8; i++) {
        workers[i] = (worker){c->peer, i + 1, 0};
        pthread_create(&threads[i], NULL, add_many, &workers[i]);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(workers[i].wrong, 0);
    }
    cdsh_jsonrpc_stats st;
    cdsh_jsonrpc_stats_get(c->peer, &st);
    assert_int_equal(st.frames_out, 480);
    assert_int_equal(st.frames_in, 480);
    assert_int_equal(st.unmatched + st.malformed + st.invalid, 0);
}

static void call_times_out_and_late_response_is_dropped(void **state)
{
    child *c = *state;
    /* the peer sleeps a minute: returning at all (well before that) proves
     * the 50 ms budget woke the caller, not the answer */
    json_t *params = json_pack("{s:i}", "ms", 60000);
    json_t *result = (json_t *)1;
    cdsh_error err = {0};
    int64_t t0 = cdsh_clock_mono_ms();
    assert_int_equal(cdsh_jsonrpc_call(c->peer, "sleep", params, 50, NULL, &result, NULL, &err),
                     CDSH_ETIMEDOUT);
    assert_true(cdsh_clock_mono_ms() - t0 < 30000);
    assert_null(result);
    assert_string_equal(err.code, "TIMEOUT");
    assert_string_equal(err.message, "peer did not answer sleep within 50 ms");
    assert_int_equal(c->hooks.calls, 1);
    assert_int_equal(c->hooks.rc, CDSH_ETIMEDOUT);
    assert_string_equal(c->hooks.method, "sleep");
    assert_true(json_is_integer(c->hooks.id));
    /* a second call whose answer comes 300 ms late: the answer is dropped */
    json_t *late = json_pack("{s:i}", "ms", 300);
    assert_int_equal(cdsh_jsonrpc_call(c->peer, "sleep", late, 50, NULL, &result, NULL, &err),
                     CDSH_ETIMEDOUT);
    json_decref(late);
    assert_null(result);
    assert_int_equal(c->hooks.calls, 2);
    while (diag_count(&c->diags, CDSH_JSONRPC_DIAG_UNMATCHED) == 0)
        sleep_ms(10);
    assert_int_equal(diag_count(&c->diags, CDSH_JSONRPC_DIAG_UNMATCHED), 1);
    json_t *r = call_ok(c->peer, "add", json_pack("{s:i, s:i}", "a", 1, "b", 1));
    assert_int_equal(json_integer_value(r), 2);
    json_decref(r);
    json_decref(params);
}

static void async_calls_complete_or_time_out(void **state)
{
    child *c = *state;
    done_box ok, late;
    box_init(&ok);
    box_init(&late);
    json_t *add = json_pack("{s:i, s:i}", "a", 3, "b", 4);
    json_t *slow = json_pack("{s:i}", "ms", 60000);
    uint64_t id1 = 0, id2 = 0;
    assert_int_equal(
        cdsh_jsonrpc_call_async(c->peer, "sleep", slow, 60, NULL, on_done, &late, &id2, NULL), 0);
    assert_int_equal(
        cdsh_jsonrpc_call_async(c->peer, "add", add, 5000, NULL, on_done, &ok, &id1, NULL), 0);
    assert_true(id1 != id2);
    assert_true(box_wait(&ok, 30000));
    assert_int_equal(ok.rc, 0);
    assert_int_equal(json_integer_value(ok.result), 7);
    /* the answer would take a minute: done well before that means timed out */
    assert_true(box_wait(&late, 30000));
    assert_int_equal(late.rc, CDSH_ETIMEDOUT);
    assert_string_equal(late.message, "peer did not answer sleep within 60 ms");
    assert_int_equal(cdsh_jsonrpc_cancel_call(c->peer, id2, NULL), CDSH_ENOTFOUND);
    json_decref(add);
    json_decref(slow);
    box_deinit(&ok);
    box_deinit(&late);
}

static void *fire_later(void *arg)
{
    sleep_ms(100);
    cdsh_cancel_fire(arg, "user pressed stop");
    return NULL;
}

typedef struct fire_when_sent {
    cdsh_jsonrpc *peer;
    cdsh_cancel *tok;
    uint64_t frames; /* fire once this many frames are out */
} fire_when_sent;

static void *fire_after_send(void *arg)
{
    fire_when_sent *f = arg;
    wait_frames_out(f->peer, f->frames);
    cdsh_cancel_fire(f->tok, "user pressed stop");
    return NULL;
}

static void cancel_token_fired_elsewhere_wakes_the_caller(void **state)
{
    child *c = *state;
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    cdsh_jsonrpc_stats st0;
    cdsh_jsonrpc_stats_get(c->peer, &st0);
    /* fire only once the call is on the wire, so it is a pending call that
     * gets woken (not one refused up front) */
    fire_when_sent f = {.peer = c->peer, .tok = tok, .frames = st0.frames_out + 1};
    pthread_t t;
    pthread_create(&t, NULL, fire_after_send, &f);
    json_t *params = json_pack("{s:i}", "ms", 60000);
    json_t *result = NULL;
    cdsh_error err = {0};
    int64_t t0 = cdsh_clock_mono_ms();
    assert_int_equal(cdsh_jsonrpc_call(c->peer, "sleep", params, -1, tok, &result, NULL, &err),
                     CDSH_ECANCELED);
    assert_true(cdsh_clock_mono_ms() - t0 < 30000); /* the answer would take 60 s */
    assert_string_equal(err.code, "CANCELED");
    assert_string_equal(err.message, "call to sleep was cancelled: user pressed stop");
    assert_int_equal(c->hooks.calls, 1);
    assert_int_equal(c->hooks.rc, CDSH_ECANCELED);
    assert_string_equal(c->hooks.method, "sleep");
    pthread_join(t, NULL);
    /* an already-fired token fails the next call at once, without sending it */
    cdsh_jsonrpc_stats before, after;
    cdsh_jsonrpc_stats_get(c->peer, &before);
    t0 = cdsh_clock_mono_ms();
    assert_int_equal(cdsh_jsonrpc_call(c->peer, "sleep", params, -1, tok, &result, NULL, &err),
                     CDSH_ECANCELED);
    cdsh_jsonrpc_stats_get(c->peer, &after);
    assert_int_equal(after.frames_out, before.frames_out);
    assert_int_equal(c->hooks.calls, 1);
    assert_true(cdsh_clock_mono_ms() - t0 < 30000);
    json_t *r = call_ok(c->peer, "echo", json_pack("[i]", 9));
    assert_int_equal(json_integer_value(json_array_get(r, 0)), 9);
    json_decref(r);
    json_decref(params);
    cdsh_cancel_free(tok);
}

typedef struct blocked_call {
    cdsh_jsonrpc *peer;
    const char *method;
    int ms;
    int rc;
    char message[CDSH_ERROR_MESSAGE_MAX];
    uint64_t returned_at;
} blocked_call;

static void *call_and_record(void *arg)
{
    blocked_call *b = arg;
    json_t *params = json_pack("{s:i}", "ms", b->ms);
    json_t *result = NULL;
    cdsh_error err = {0};
    b->rc = cdsh_jsonrpc_call(b->peer, b->method, params, -1, NULL, &result, NULL, &err);
    snprintf(b->message, sizeof b->message, "%s", err.message);
    b->returned_at = (uint64_t)cdsh_clock_mono_ms();
    json_decref(result);
    json_decref(params);
    return NULL;
}

static void cancel_call_by_id_fails_the_async_call(void **state)
{
    child *c = *state;
    done_box b;
    box_init(&b);
    json_t *params = json_pack("{s:i}", "ms", 60000);
    uint64_t id = 0;
    assert_int_equal(
        cdsh_jsonrpc_call_async(c->peer, "sleep", params, -1, NULL, on_done, &b, &id, NULL), 0);
    assert_int_equal(cdsh_jsonrpc_cancel_call(c->peer, id, "no longer needed"), 0);
    assert_true(box_wait(&b, 30000)); /* the answer would take 60 s */
    assert_int_equal(b.rc, CDSH_ECANCELED);
    assert_string_equal(b.message, "call to sleep was cancelled: no longer needed");
    assert_int_equal(c->hooks.calls, 1);
    assert_int_equal(json_integer_value(c->hooks.id), (json_int_t)id);
    assert_int_equal(cdsh_jsonrpc_cancel_call(c->peer, id, NULL), CDSH_ENOTFOUND);
    json_decref(params);
    box_deinit(&b);
}

static void child_death_fails_every_pending_call_at_once(void **state)
{
    child *c = *state;
    blocked_call calls[3];
    pthread_t threads[3];
    cdsh_jsonrpc_stats st0;
    cdsh_jsonrpc_stats_get(c->peer, &st0);
    for (int i = 0; i < 3; i++) {
        calls[i] = (blocked_call){.peer = c->peer, .method = "sleep", .ms = 60000};
        pthread_create(&threads[i], NULL, call_and_record, &calls[i]);
    }
    done_box b;
    box_init(&b);
    json_t *params = json_pack("{s:i}", "ms", 60000);
    assert_int_equal(
        cdsh_jsonrpc_call_async(c->peer, "sleep", params, -1, NULL, on_done, &b, NULL, NULL), 0);
    wait_frames_out(c->peer, st0.frames_out + 4); /* all four calls are pending */
    blocked_call die = {.peer = c->peer, .method = "die"};
    int64_t t0 = cdsh_clock_mono_ms();
    call_and_record(&die);
    assert_int_equal(die.rc, CDSH_ECLOSED);
    assert_string_equal(die.message, "peer closed the connection while waiting for die");
    for (int i = 0; i < 3; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(calls[i].rc, CDSH_ECLOSED);
        assert_string_equal(calls[i].message, "peer closed the connection while waiting for sleep");
    }
    assert_true(box_wait(&b, 30000));
    assert_int_equal(b.rc, CDSH_ECLOSED);
    assert_true(cdsh_clock_mono_ms() - t0 < 30000); /* the answers would take 60 s */
    assert_true(cdsh_jsonrpc_is_closed(c->peer));
    assert_int_equal(diag_count(&c->diags, CDSH_JSONRPC_DIAG_IO), 1);
    /* later calls fail immediately */
    json_t *result = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_jsonrpc_call(c->peer, "echo", NULL, -1, NULL, &result, NULL, &err),
                     CDSH_ECLOSED);
    assert_string_equal(err.message, "peer is closed; cannot call echo");
    json_decref(params);
    box_deinit(&b);
}

static void garbage_lines_are_skipped_and_counted(void **state)
{
    child *c = *state;
    json_t *r = call_ok(c->peer, "garbage", NULL);
    assert_true(json_is_true(json_object_get(r, "ok")));
    json_decref(r);
    cdsh_jsonrpc_stats st;
    cdsh_jsonrpc_stats_get(c->peer, &st);
    assert_int_equal(st.malformed, 4); /* blank and whitespace-only lines are not counted */
    assert_int_equal(diag_count(&c->diags, CDSH_JSONRPC_DIAG_MALFORMED), 4);
    r = call_ok(c->peer, "add", json_pack("{s:i, s:i}", "a", 40, "b", 2));
    assert_int_equal(json_integer_value(r), 42);
    json_decref(r);
}

static void oversize_frame_is_discarded_and_reading_continues(void **state)
{
    (void)state;
    child c;
    child_start(&c, 1024, false);
    child_go(&c);
    json_t *r = call_ok(c.peer, "oversize", json_pack("{s:i}", "bytes", 300000));
    assert_string_equal(json_string_value(json_object_get(r, "data")), "short");
    json_decref(r);
    cdsh_jsonrpc_stats st;
    cdsh_jsonrpc_stats_get(c.peer, &st);
    assert_int_equal(st.oversize, 1);
    assert_int_equal(diag_count(&c.diags, CDSH_JSONRPC_DIAG_OVERSIZE), 1);
    /* a frame exactly below the limit still works */
    r = call_ok(c.peer, "huge", json_pack("{s:i}", "bytes", 900));
    assert_int_equal(int_field(r, "bytes"), 900);
    json_decref(r);
    child_stop(&c);
}

static void huge_result_is_received_whole(void **state)
{
    child *c = *state;
    json_t *r = call_ok(c->peer, "huge", json_pack("{s:i}", "bytes", 4 * 1024 * 1024));
    assert_int_equal(json_string_length(json_object_get(r, "data")), 4 * 1024 * 1024);
    json_decref(r);
}

static void error_responses_surface_code_message_and_data(void **state)
{
    child *c = *state;
    json_t *result = NULL;
    cdsh_jsonrpc_remote_error rerr;
    cdsh_error err = {0};
    assert_int_equal(cdsh_jsonrpc_call(c->peer, "fail", NULL, 30000, NULL, &result, &rerr, &err),
                     CDSH_EPROTO);
    assert_null(result);
    assert_string_equal(err.code, "RPC_ERROR");
    assert_string_equal(err.message, "peer answered fail with error -32001: deliberate failure");
    assert_int_equal(rerr.code, -32001);
    assert_string_equal(rerr.message, "deliberate failure");
    assert_string_equal(json_string_value(json_object_get(rerr.data, "why")), "asked");
    cdsh_jsonrpc_remote_error_clear(&rerr);

    json_t *params = json_pack("{s:i}", "a", 1);
    assert_int_equal(cdsh_jsonrpc_call(c->peer, "add", params, 30000, NULL, &result, &rerr, &err),
                     CDSH_EPROTO);
    assert_int_equal(rerr.code, CDSH_JSONRPC_INVALID_PARAMS);
    cdsh_jsonrpc_remote_error_clear(&rerr);
    json_decref(params);

    assert_int_equal(cdsh_jsonrpc_call(c->peer, "no/such", NULL, 30000, NULL, &result, &rerr, &err),
                     CDSH_EPROTO);
    assert_int_equal(rerr.code, CDSH_JSONRPC_METHOD_NOT_FOUND);
    assert_string_equal(rerr.message, "Method not found: no/such");
    assert_null(rerr.data);
    cdsh_jsonrpc_remote_error_clear(&rerr);
}

/* handlers the child calls back through "callback" */
static void answer_ask(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)arg;
    (void)peer;
    json_t *result = json_pack("{s:O, s:O}", "got", cdsh_jsonrpc_request_params(req), "id",
                               cdsh_jsonrpc_request_id(req));
    assert_int_equal(cdsh_jsonrpc_respond(req, result, NULL), 0);
    cdsh_error err = {0};
    assert_int_equal(cdsh_jsonrpc_respond(req, result, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "ask was already answered");
    json_decref(result);
}

static void *respond_later(void *arg)
{
    cdsh_jsonrpc_request *req = arg;
    sleep_ms(50);
    json_t *r = json_string("from another thread");
    assert_int_equal(cdsh_jsonrpc_respond(req, r, NULL), 0);
    json_decref(r);
    return NULL;
}

static void answer_later(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)peer;
    pthread_t *t = arg;
    pthread_create(t, NULL, respond_later, cdsh_jsonrpc_request_hold(req));
}

static void answer_nested(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)arg;
    json_t *sum = call_ok(peer, "add", json_pack("{s:i, s:i}", "a", 20, "b", 22));
    cdsh_jsonrpc_respond(req, sum, NULL);
    json_decref(sum);
}

static void answer_nothing(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)arg;
    (void)peer;
    (void)req;
}

static json_t *call_back(cdsh_jsonrpc *p, const char *method, bool numeric_id)
{
    return call_ok(p, "callback",
                   json_pack("{s:s, s:{s:i}, s:b}", "method", method, "params", "q", 1,
                             "numeric_id", numeric_id));
}

static void incoming_requests_reach_handlers_and_get_answers(void **state)
{
    (void)state;
    child c;
    child_start(&c, 0, false);
    pthread_t later;
    assert_int_equal(cdsh_jsonrpc_handle(c.peer, "ask", answer_ask, NULL, NULL), 0);
    assert_int_equal(cdsh_jsonrpc_handle(c.peer, "later", answer_later, &later, NULL), 0);
    assert_int_equal(cdsh_jsonrpc_handle(c.peer, "nested", answer_nested, NULL, NULL), 0);
    assert_int_equal(cdsh_jsonrpc_handle(c.peer, "silent", answer_nothing, NULL, NULL), 0);
    cdsh_error err = {0};
    assert_int_equal(cdsh_jsonrpc_handle(c.peer, "ask", answer_nothing, NULL, &err), CDSH_EEXIST);
    child_go(&c);

    json_t *r = call_back(c.peer, "ask", false);
    json_t *answer = json_object_get(r, "answer");
    assert_int_equal(int_field(json_object_get(answer, "got"), "q"), 1);
    assert_string_equal(json_string_value(json_object_get(answer, "id")), "cb-1");
    json_decref(r);

    r = call_back(c.peer, "ask", true);
    assert_int_equal(int_field(json_object_get(r, "answer"), "id"), 9002);
    json_decref(r);

    r = call_back(c.peer, "later", false);
    assert_string_equal(json_string_value(json_object_get(r, "answer")), "from another thread");
    pthread_join(later, NULL);
    json_decref(r);

    r = call_back(c.peer, "nested", false);
    assert_int_equal(json_integer_value(json_object_get(r, "answer")), 42);
    json_decref(r);

    r = call_back(c.peer, "nosuch", false);
    json_t *e = json_object_get(r, "clientError");
    assert_int_equal(int_field(e, "code"), CDSH_JSONRPC_METHOD_NOT_FOUND);
    assert_string_equal(json_string_value(json_object_get(e, "message")),
                        "Method not found: nosuch");
    json_decref(r);

    r = call_back(c.peer, "silent", false);
    e = json_object_get(r, "clientError");
    assert_int_equal(int_field(e, "code"), CDSH_JSONRPC_INTERNAL_ERROR);
    assert_string_equal(json_string_value(json_object_get(e, "message")),
                        "Internal error: the handler for silent returned no answer");
    json_decref(r);
    child_stop(&c);
}

typedef struct progress_log {
    pthread_mutex_t lock;
    int seen[64];
    int n;
} progress_log;

static void on_progress(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)peer;
    progress_log *log = arg;
    assert_true(cdsh_jsonrpc_request_is_notification(req));
    assert_null(cdsh_jsonrpc_request_id(req));
    assert_int_equal(cdsh_jsonrpc_respond(req, NULL, NULL), CDSH_EINVAL);
    pthread_mutex_lock(&log->lock);
    if (log->n < 64)
        log->seen[log->n++] =
            (int)json_integer_value(json_object_get(cdsh_jsonrpc_request_params(req), "i"));
    pthread_mutex_unlock(&log->lock);
}

static void notifications_flow_both_ways_in_order(void **state)
{
    (void)state;
    child c;
    child_start(&c, 0, false);
    progress_log log = {.n = 0};
    pthread_mutex_init(&log.lock, NULL);
    assert_int_equal(cdsh_jsonrpc_handle(c.peer, "progress", on_progress, &log, NULL), 0);
    child_go(&c);
    json_t *r = call_ok(c.peer, "notify", json_pack("{s:i}", "count", 20));
    assert_int_equal(int_field(r, "sent"), 20);
    json_decref(r);
    for (;;) { /* no time budget: CTest's timeout catches a hang */
        pthread_mutex_lock(&log.lock);
        int n = log.n;
        pthread_mutex_unlock(&log.lock);
        if (n >= 20)
            break;
        sleep_ms(10);
    }
    assert_int_equal(log.n, 20);
    for (int i = 0; i < 20; i++)
        assert_int_equal(log.seen[i], i);

    const char *texts[] = {"first", "second", "third"};
    for (int i = 0; i < 3; i++) {
        json_t *p = json_pack("{s:s}", "text", texts[i]);
        assert_int_equal(cdsh_jsonrpc_notify(c.peer, "note", p, NULL), 0);
        json_decref(p);
    }
    r = call_ok(c.peer, "notes", NULL);
    assert_int_equal(json_array_size(r), 3);
    for (int i = 0; i < 3; i++)
        assert_string_equal(json_string_value(json_array_get(r, (size_t)i)), texts[i]);
    json_decref(r);
    cdsh_error err = {0};
    json_t *bad = json_string("scalar");
    assert_int_equal(cdsh_jsonrpc_notify(c.peer, "note", bad, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "params for note must be an object or an array");
    json_decref(bad);
    pthread_mutex_destroy(&log.lock);
    child_stop(&c);
}

static void string_ids_round_trip(void **state)
{
    (void)state;
    child c;
    child_start(&c, 0, true);
    child_go(&c);
    for (int i = 0; i < 3; i++) {
        json_t *r = call_ok(c.peer, "add", json_pack("{s:i, s:i}", "a", i, "b", 10));
        assert_int_equal(json_integer_value(r), i + 10);
        json_decref(r);
    }
    child_stop(&c);
}

static void free_while_calls_pending_fails_them_with_closed(void **state)
{
    child *c = *state;
    done_box boxes[3];
    json_t *params = json_pack("{s:i}", "ms", 60000);
    cdsh_jsonrpc_stats st0;
    cdsh_jsonrpc_stats_get(c->peer, &st0);
    for (int i = 0; i < 3; i++) {
        box_init(&boxes[i]);
        assert_int_equal(cdsh_jsonrpc_call_async(c->peer, "sleep", params, -1, NULL, on_done,
                                                 &boxes[i], NULL, NULL),
                         0);
    }
    blocked_call blocked = {.peer = c->peer, .method = "sleep", .ms = 60000};
    pthread_t t;
    pthread_create(&t, NULL, call_and_record, &blocked);
    wait_frames_out(c->peer, st0.frames_out + 4); /* the blocked call is pending too */
    int64_t t0 = cdsh_clock_mono_ms();
    cdsh_jsonrpc_free(c->peer);
    c->peer = NULL;
    pthread_join(t, NULL);
    assert_true(cdsh_clock_mono_ms() - t0 < 30000); /* the answers would take 60 s */
    assert_int_equal(blocked.rc, CDSH_ECLOSED);
    assert_string_equal(blocked.message, "peer was shut down while waiting for sleep");
    for (int i = 0; i < 3; i++) {
        assert_true(boxes[i].done);
        assert_int_equal(boxes[i].rc, CDSH_ECLOSED);
        box_deinit(&boxes[i]);
    }
    json_decref(params);
}

/* ---- two in-process peers over socketpair ------------------------------- */

typedef struct pair {
    cdsh_jsonrpc *a, *b;
    hook_log hooks;
} pair;

static void times_factor(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)peer;
    json_int_t f = (json_int_t)(intptr_t)arg;
    json_t *n = json_array_get(cdsh_jsonrpc_request_params(req), 0);
    if (!json_is_integer(n)) {
        cdsh_jsonrpc_respond_error(req, CDSH_JSONRPC_INVALID_PARAMS, "need [n]",
                                   cdsh_jsonrpc_request_params(req), NULL);
        return;
    }
    json_t *r = json_integer(json_integer_value(n) * f);
    cdsh_jsonrpc_respond(req, r, NULL);
    json_decref(r);
}

/* The protocol layer's part: A tells B about a cancel with a notification
 * (method chosen here, not in base). */
static void send_cancel_note(void *arg, cdsh_jsonrpc *peer, const json_t *id, const char *method,
                             int rc, const char *reason)
{
    on_cancel_hook(arg, peer, id, method, rc, reason);
    json_t *p = json_pack("{s:O}", "requestId", id);
    cdsh_jsonrpc_notify(peer, "test/cancelled", p, NULL);
    json_decref(p);
}

static void on_cancel_note(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)arg;
    json_t *id = json_object_get(cdsh_jsonrpc_request_params(req), "requestId");
    assert_int_equal(cdsh_jsonrpc_cancel_incoming(peer, id, "asked by the caller"), 0);
    assert_int_equal(cdsh_jsonrpc_cancel_incoming(peer, NULL, NULL), CDSH_EINVAL);
}

static atomic_int wait_saw_cancel;
static atomic_int wait_started; /* B's "wait" handler has started its waiter */

static void *wait_for_cancel(void *arg)
{
    cdsh_jsonrpc_request *req = arg;
    bool fired = cdsh_cancel_wait(cdsh_jsonrpc_request_cancel_get(req), 60000);
    atomic_store(&wait_saw_cancel, fired ? 1 : -1);
    cdsh_jsonrpc_respond_error(req, -32800, "request cancelled", NULL, NULL);
    return NULL;
}

static void on_wait(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)peer;
    pthread_create((pthread_t *)arg, NULL, wait_for_cancel, cdsh_jsonrpc_request_hold(req));
    atomic_store(&wait_started, 1);
}

static void *fire_when_wait_started(void *arg)
{
    while (!atomic_load(&wait_started))
        sleep_ms(2);
    cdsh_cancel_fire(arg, "user pressed stop");
    return NULL;
}

static void pair_open(pair *pr, pthread_t *waiter)
{
    memset(pr, 0, sizeof *pr);
    pthread_mutex_init(&pr->hooks.lock, NULL);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    cdsh_jsonrpc_config ca = {
        .name = "B", .close_fds = true, .on_cancel = send_cancel_note, .cancel_arg = &pr->hooks};
    cdsh_jsonrpc_config cb = {.name = "A", .close_fds = true, .string_ids = true};
    pr->a = cdsh_jsonrpc_new(sv[0], sv[0], &ca, NULL);
    pr->b = cdsh_jsonrpc_new(sv[1], sv[1], &cb, NULL);
    assert_non_null(pr->a);
    assert_non_null(pr->b);
    assert_int_equal(cdsh_jsonrpc_handle(pr->a, "double", times_factor, (void *)2, NULL), 0);
    assert_int_equal(cdsh_jsonrpc_handle(pr->b, "triple", times_factor, (void *)3, NULL), 0);
    assert_int_equal(cdsh_jsonrpc_handle(pr->b, "wait", on_wait, waiter, NULL), 0);
    assert_int_equal(cdsh_jsonrpc_handle(pr->b, "test/cancelled", on_cancel_note, NULL, NULL), 0);
    assert_int_equal(cdsh_jsonrpc_start(pr->a, NULL), 0);
    assert_int_equal(cdsh_jsonrpc_start(pr->b, NULL), 0);
    assert_int_equal(cdsh_jsonrpc_start(pr->a, NULL), CDSH_EINVAL);
}

static void pair_close(pair *pr)
{
    cdsh_jsonrpc_free(pr->a);
    cdsh_jsonrpc_free(pr->b);
    json_decref(pr->hooks.id);
    pthread_mutex_destroy(&pr->hooks.lock);
}

static void paired_peers_call_each_other(void **state)
{
    (void)state;
    pair pr;
    pair_open(&pr, NULL);
    json_t *r = call_ok(pr.a, "triple", json_pack("[i]", 7));
    assert_int_equal(json_integer_value(r), 21);
    json_decref(r);
    r = call_ok(pr.b, "double", json_pack("[i]", 7));
    assert_int_equal(json_integer_value(r), 14);
    json_decref(r);
    json_t *bad = json_pack("[s]", "x");
    cdsh_jsonrpc_remote_error rerr;
    assert_int_equal(cdsh_jsonrpc_call(pr.a, "triple", bad, 30000, NULL, &r, &rerr, NULL),
                     CDSH_EPROTO);
    assert_int_equal(rerr.code, CDSH_JSONRPC_INVALID_PARAMS);
    assert_string_equal(rerr.message, "need [n]");
    assert_true(json_equal(rerr.data, bad));
    cdsh_jsonrpc_remote_error_clear(&rerr);
    json_decref(bad);
    pair_close(&pr);
}

static void cancel_reaches_the_other_sides_handler(void **state)
{
    (void)state;
    pair pr;
    pthread_t waiter;
    atomic_store(&wait_saw_cancel, 0);
    atomic_store(&wait_started, 0);
    pair_open(&pr, &waiter);
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    /* fire once B's handler runs (not a guessed delay): B then surely has
     * the request to cancel, and `waiter` is set before we join it */
    pthread_t t;
    pthread_create(&t, NULL, fire_when_wait_started, tok);
    json_t *result = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_jsonrpc_call(pr.a, "wait", NULL, 60000, tok, &result, NULL, &err),
                     CDSH_ECANCELED);
    pthread_join(t, NULL);
    pthread_join(waiter, NULL);
    assert_int_equal(atomic_load(&wait_saw_cancel), 1);
    assert_int_equal(pr.hooks.calls, 1);
    assert_int_equal(pr.hooks.rc, CDSH_ECANCELED);
    /* B answered -32800 after A gave up: dropped as unmatched */
    cdsh_jsonrpc_stats st = {0};
    while (st.unmatched == 0) {
        sleep_ms(5);
        cdsh_jsonrpc_stats_get(pr.a, &st);
    }
    assert_int_equal(st.unmatched, 1);
    cdsh_cancel_free(tok);
    pair_close(&pr);
}

/* ---- a peer against a raw socket ---------------------------------------- */

/* A started peer on sv[0] of a new socketpair; the test talks raw on sv[1]. */
static cdsh_jsonrpc *raw_peer(int sv[2], const cdsh_jsonrpc_config *cfg)
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    cdsh_jsonrpc *p = cdsh_jsonrpc_new(sv[0], sv[0], cfg, NULL);
    assert_non_null(p);
    assert_int_equal(cdsh_jsonrpc_start(p, NULL), 0);
    return p;
}

/* Reads one line (without the newline) within timeout_ms; NULL on timeout. */
static char *read_line_fd(int fd, int timeout_ms)
{
    static char buf[4096];
    size_t len = 0;
    int64_t end = cdsh_clock_mono_ms() + timeout_ms;
    while (len < sizeof buf - 1) {
        struct pollfd pfd = {fd, POLLIN, 0};
        int left = (int)(end - cdsh_clock_mono_ms());
        if (left <= 0 || poll(&pfd, 1, left) <= 0)
            return NULL;
        if (read(fd, buf + len, 1) != 1)
            return NULL;
        if (buf[len] == '\n') {
            buf[len] = '\0';
            return buf;
        }
        len++;
    }
    return NULL;
}

static void write_str(int fd, const char *s)
{
    assert_int_equal(write(fd, s, strlen(s)), (ssize_t)strlen(s));
}

static void expect_error_reply(int fd, const char *line, const char *id_json, int code)
{
    write_str(fd, line);
    char *reply = read_line_fd(fd, cdsh_test_scale_ms(30000));
    assert_non_null(reply);
    json_t *msg = json_loads(reply, 0, NULL);
    assert_non_null(msg);
    json_t *want = json_loads(id_json, JSON_DECODE_ANY, NULL);
    assert_true(json_equal(json_object_get(msg, "id"), want));
    assert_string_equal(json_string_value(json_object_get(msg, "jsonrpc")), "2.0");
    assert_int_equal(int_field(json_object_get(msg, "error"), "code"), code);
    json_decref(want);
    json_decref(msg);
}

static void invalid_messages_get_standard_error_replies(void **state)
{
    (void)state;
    int sv[2];
    diag_log d = {.counts = {0}};
    pthread_mutex_init(&d.lock, NULL);
    cdsh_jsonrpc_config cfg = {.close_fds = true, .on_diag = on_diag, .diag_arg = &d};
    cdsh_jsonrpc *p = raw_peer(sv, &cfg);
    int fd = sv[1];
    expect_error_reply(fd, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":7}\n", "5", -32600);
    expect_error_reply(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"\n", "null", -32700);
    expect_error_reply(fd, "[]\n", "null", -32600);
    expect_error_reply(fd, "{\"jsonrpc\":\"1.0\",\"id\":2,\"method\":\"x\"}\n", "2", -32600);
    expect_error_reply(fd, "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"x\"}\n", "null", -32600);
    expect_error_reply(fd, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"x\",\"params\":1}\n", "3",
                       -32600);
    expect_error_reply(fd, "  {\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"nope\"}\r\n",
                       "\"abc\"", -32601);
    /* no reply for: plain garbage, a stray response, an unknown notification */
    write_str(fd, "hello there\n{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":1}\n"
                  "{\"jsonrpc\":\"2.0\",\"method\":\"ignored\"}\n");
    expect_error_reply(fd, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"nope\"}\n", "4", -32601);
    cdsh_jsonrpc_stats st;
    cdsh_jsonrpc_stats_get(p, &st);
    assert_int_equal(st.malformed, 2);
    assert_int_equal(st.invalid, 5);
    assert_int_equal(st.unmatched, 1);
    assert_int_equal(st.notifications_unhandled, 1);
    assert_int_equal(diag_count(&d, CDSH_JSONRPC_DIAG_INVALID), 5);
    cdsh_jsonrpc_free(p);
    close(fd);
    pthread_mutex_destroy(&d.lock);
}

static void free_returns_while_other_side_stays_open(void **state)
{
    (void)state;
    int sv[2];
    cdsh_jsonrpc *p = raw_peer(sv, NULL);
    done_box b;
    box_init(&b);
    assert_int_equal(cdsh_jsonrpc_call_async(p, "never", NULL, -1, NULL, on_done, &b, NULL, NULL),
                     0);
    assert_non_null(read_line_fd(sv[1], cdsh_test_scale_ms(30000)));
    int64_t t0 = cdsh_clock_mono_ms();
    cdsh_jsonrpc_free(p); /* the other side never answers nor closes */
    assert_true(cdsh_clock_mono_ms() - t0 < 30000);
    assert_true(b.done);
    assert_int_equal(b.rc, CDSH_ECLOSED);
    assert_string_equal(b.message, "peer was shut down while waiting for never");
    /* close_fds was false: our end is still open and usable */
    assert_int_equal(write(sv[0], "x", 1), 1);
    close(sv[0]);
    close(sv[1]);
    box_deinit(&b);
}

static void other_side_closing_fails_async_calls(void **state)
{
    (void)state;
    int sv[2];
    cdsh_jsonrpc_config cfg = {.name = "agent", .close_fds = true};
    cdsh_jsonrpc *p = raw_peer(sv, &cfg);
    done_box b;
    box_init(&b);
    assert_int_equal(
        cdsh_jsonrpc_call_async(p, "session/prompt", NULL, -1, NULL, on_done, &b, NULL, NULL), 0);
    assert_non_null(read_line_fd(sv[1], cdsh_test_scale_ms(30000)));
    close(sv[1]);
    assert_true(box_wait(&b, 30000));
    assert_int_equal(b.rc, CDSH_ECLOSED);
    assert_string_equal(b.message, "agent closed the connection while waiting for session/prompt");
    /* writing to a vanished reader fails cleanly, without SIGPIPE */
    cdsh_error err = {0};
    int rc = cdsh_jsonrpc_notify(p, "late", NULL, &err);
    assert_int_equal(rc, CDSH_ECLOSED);
    box_deinit(&b);
    cdsh_jsonrpc_free(p);
}

static void bad_arguments_are_rejected(void **state)
{
    (void)state;
    cdsh_error err = {0};
    assert_null(cdsh_jsonrpc_new(-1, 1, NULL, &err));
    assert_int_equal(err.rc, CDSH_EINVAL);
    int sv[2];
    cdsh_jsonrpc *p = raw_peer(sv, NULL);
    json_t *result = NULL, *scalar = json_integer(1);
    assert_int_equal(cdsh_jsonrpc_call(p, "x", scalar, 100, NULL, &result, NULL, &err),
                     CDSH_EINVAL);
    assert_int_equal(cdsh_jsonrpc_call(p, NULL, NULL, 100, NULL, &result, NULL, &err), CDSH_EINVAL);
    assert_int_equal(cdsh_jsonrpc_call_async(p, "x", NULL, 100, NULL, NULL, NULL, NULL, &err),
                     CDSH_EINVAL);
    assert_int_equal(cdsh_jsonrpc_touch(p, 12345), CDSH_ENOTFOUND);
    assert_int_equal(cdsh_jsonrpc_handle(p, "x", NULL, NULL, &err), CDSH_EINVAL);
    json_decref(scalar);
    cdsh_jsonrpc_free(p);
    close(sv[1]);
}

static void touch_extends_a_pending_calls_timeout(void **state)
{
    (void)state;
    int sv[2];
    cdsh_jsonrpc *p = raw_peer(sv, NULL);
    done_box b;
    box_init(&b);
    uint64_t id = 0;
    int64_t t0 = cdsh_clock_mono_ms();
    assert_int_equal(cdsh_jsonrpc_call_async(p, "slow", NULL, 1000, NULL, on_done, &b, &id, NULL),
                     0);
    char *line = read_line_fd(sv[1], cdsh_test_scale_ms(30000));
    assert_non_null(line);
    /* touch every 50 ms until well past the 1000 ms budget (a lower bound:
     * only a single gap of 1000 ms between touches could make it expire) */
    while (cdsh_clock_mono_ms() - t0 < 1500) {
        sleep_ms(50);
        assert_int_equal(cdsh_jsonrpc_touch(p, id), 0);
    }
    assert_false(b.done); /* past 1000 ms, kept alive by touch */
    char reply[128];
    snprintf(reply, sizeof reply, "{\"jsonrpc\":\"2.0\",\"id\":%llu,\"result\":\"done\"}\n",
             (unsigned long long)id);
    write_str(sv[1], reply);
    assert_true(box_wait(&b, 30000));
    assert_int_equal(b.rc, 0);
    assert_string_equal(json_string_value(b.result), "done");
    box_deinit(&b);
    cdsh_jsonrpc_free(p);
    close(sv[1]);
}

static void hold_request(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)peer;
    atomic_store((_Atomic(cdsh_jsonrpc_request *) *)arg, cdsh_jsonrpc_request_hold(req));
}

static void held_request_outlives_free_and_is_cancelled(void **state)
{
    (void)state;
    int sv[2];
    _Atomic(cdsh_jsonrpc_request *) held = NULL;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    cdsh_jsonrpc *p = cdsh_jsonrpc_new(sv[0], sv[0], NULL, NULL);
    assert_int_equal(cdsh_jsonrpc_handle(p, "hold", hold_request, &held, NULL), 0);
    assert_int_equal(cdsh_jsonrpc_start(p, NULL), 0);
    write_str(sv[1], "{\"jsonrpc\":\"2.0\",\"id\":\"h1\",\"method\":\"hold\",\"params\":[1]}\n");
    while (!atomic_load(&held))
        sleep_ms(5);
    cdsh_jsonrpc_request *req = atomic_load(&held);
    assert_non_null(req);
    assert_false(cdsh_cancel_is_fired(cdsh_jsonrpc_request_cancel_get(req)));
    cdsh_jsonrpc_free(p);
    /* the handle is still valid: its token fired and answering fails cleanly */
    assert_true(cdsh_cancel_is_fired(cdsh_jsonrpc_request_cancel_get(req)));
    assert_string_equal(cdsh_jsonrpc_request_method(req), "hold");
    assert_string_equal(json_string_value(cdsh_jsonrpc_request_id(req)), "h1");
    cdsh_error err = {0};
    assert_int_equal(cdsh_jsonrpc_respond(req, NULL, &err), CDSH_ECLOSED);
    close(sv[0]);
    close(sv[1]);
}

static json_t *big_params(size_t bytes)
{
    char *blob = malloc(bytes + 1);
    memset(blob, 'b', bytes);
    blob[bytes] = '\0';
    json_t *params = json_pack("{s:s}", "blob", blob);
    free(blob);
    return params;
}

static void write_to_a_stalled_reader_gives_up_and_breaks_the_stream(void **state)
{
    (void)state;
    int sv[2];
    cdsh_jsonrpc *p = raw_peer(sv, NULL);
    json_t *params = big_params(4 * 1024 * 1024);
    json_t *result = NULL;
    cdsh_error err = {0};
    /* Nobody reads sv[1], so the frame can never be written whole. The
     * budget is generous because it also covers serialising 4 MiB, which is
     * slow under ASan on a loaded machine: if it ran out before the first
     * byte, the stream would (rightly) not be cut and this test would not be
     * testing what it says. No elapsed-time assertion: CTest's timeout
     * catches a hang. */
    assert_int_equal(cdsh_jsonrpc_call(p, "big", params, 3000, NULL, &result, NULL, &err),
                     CDSH_ETIMEDOUT);
    assert_string_equal(err.message, "peer did not read the request for big in time");
    assert_int_equal(cdsh_jsonrpc_notify(p, "after", NULL, &err), CDSH_ECLOSED);
    assert_string_equal(err.message, "peer stopped reading mid-frame; nothing more can be sent");
    cdsh_jsonrpc_free(p);
    close(sv[1]);
    json_decref(params);
}

static void *call_big_forever(void *arg)
{
    blocked_call *bc = arg;
    json_t *params = big_params(4 * 1024 * 1024);
    json_t *result = NULL;
    cdsh_error err = {0};
    bc->rc = cdsh_jsonrpc_call(bc->peer, "big", params, -1, NULL, &result, NULL, &err);
    json_decref(params);
    return NULL;
}

static void waiting_for_the_writer_observes_timeout_and_cancel(void **state)
{
    (void)state;
    int sv[2];
    cdsh_jsonrpc *p = raw_peer(sv, NULL);
    blocked_call hog = {.peer = p};
    pthread_t t;
    pthread_create(&t, NULL, call_big_forever, &hog);
    /* once bytes arrive the hog holds the writer, stuck mid-frame */
    struct pollfd pfd = {sv[1], POLLIN, 0};
    assert_int_equal(poll(&pfd, 1, cdsh_test_scale_ms(10000)), 1);
    json_t *result = NULL;
    cdsh_error err = {0};
    int64_t t0 = cdsh_clock_mono_ms();
    assert_int_equal(cdsh_jsonrpc_call(p, "small", NULL, 150, NULL, &result, NULL, &err),
                     CDSH_ETIMEDOUT);
    assert_true(cdsh_clock_mono_ms() - t0 < 30000); /* the writer is stuck for good */
    assert_string_equal(err.message, "peer did not read the request for small in time");
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    pthread_t f;
    pthread_create(&f, NULL, fire_later, tok);
    t0 = cdsh_clock_mono_ms();
    assert_int_equal(cdsh_jsonrpc_call(p, "small", NULL, -1, tok, &result, NULL, &err),
                     CDSH_ECANCELED);
    assert_true(cdsh_clock_mono_ms() - t0 < 30000);
    assert_string_equal(err.message, "call to small was cancelled: user pressed stop");
    pthread_join(f, NULL);
    cdsh_jsonrpc_free(p); /* wakes the hog */
    pthread_join(t, NULL);
    assert_int_equal(hog.rc, CDSH_ECLOSED);
    cdsh_cancel_free(tok);
    close(sv[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(call_returns_child_result, child_setup, child_teardown),
        cmocka_unit_test_setup_teardown(concurrent_calls_from_eight_threads_get_their_own_results,
                                        child_setup, child_teardown),
        cmocka_unit_test_setup_teardown(call_times_out_and_late_response_is_dropped, child_setup,
                                        child_teardown),
        cmocka_unit_test_setup_teardown(async_calls_complete_or_time_out, child_setup,
                                        child_teardown),
        cmocka_unit_test_setup_teardown(cancel_token_fired_elsewhere_wakes_the_caller, child_setup,
                                        child_teardown),
        cmocka_unit_test_setup_teardown(cancel_call_by_id_fails_the_async_call, child_setup,
                                        child_teardown),
        cmocka_unit_test_setup_teardown(child_death_fails_every_pending_call_at_once, child_setup,
                                        child_teardown),
        cmocka_unit_test_setup_teardown(garbage_lines_are_skipped_and_counted, child_setup,
                                        child_teardown),
        cmocka_unit_test(oversize_frame_is_discarded_and_reading_continues),
        cmocka_unit_test_setup_teardown(huge_result_is_received_whole, child_setup, child_teardown),
        cmocka_unit_test_setup_teardown(error_responses_surface_code_message_and_data, child_setup,
                                        child_teardown),
        cmocka_unit_test(incoming_requests_reach_handlers_and_get_answers),
        cmocka_unit_test(notifications_flow_both_ways_in_order),
        cmocka_unit_test(string_ids_round_trip),
        cmocka_unit_test_setup_teardown(free_while_calls_pending_fails_them_with_closed,
                                        child_setup, child_teardown),
        cmocka_unit_test(paired_peers_call_each_other),
        cmocka_unit_test(cancel_reaches_the_other_sides_handler),
        cmocka_unit_test(invalid_messages_get_standard_error_replies),
        cmocka_unit_test(free_returns_while_other_side_stays_open),
        cmocka_unit_test(other_side_closing_fails_async_calls),
        cmocka_unit_test(bad_arguments_are_rejected),
        cmocka_unit_test(touch_extends_a_pending_calls_timeout),
        cmocka_unit_test(held_request_outlives_free_and_is_cancelled),
        cmocka_unit_test(write_to_a_stalled_reader_gives_up_and_breaks_the_stream),
        cmocka_unit_test(waiting_for_the_writer_observes_timeout_and_cancel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
