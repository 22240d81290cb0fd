/* jsonrpc.c — JSON-RPC 2.0 peer: line framing, the reader thread (parse,
 * route responses, expire async calls), the dispatcher thread (run handlers
 * in order), pending-call bookkeeping and serialised writes.
 * It does not spawn processes or know any protocol's method names. */
#include "proto/jsonrpc.h"

#include "base/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define READ_CHUNK 65536
#define KEY_MAX 48
/* After a huge frame the line buffer shrinks back so one big message does
 * not pin memory for the life of the peer. */
#define LINE_KEEP (1024 * 1024)

typedef struct pending {
    struct pending *next;
    uint64_t num;
    char key[KEY_MAX];
    json_t *id;
    char *method;
    int64_t timeout_ms;
    int64_t deadline_ns; /* 0: none */
    cdsh_cancel *cancel;
    uint64_t sub;
    /* async */
    cdsh_jsonrpc_done_fn done_fn;
    void *done_arg;
    /* sync */
    bool sync;
    pthread_cond_t cv;
    /* outcome, set by whoever removes it from the table */
    bool done;
    int rc;
    json_t *result;
    bool has_rerr;
    cdsh_jsonrpc_remote_error rerr;
    cdsh_error err;
} pending;

struct cdsh_jsonrpc_request {
    cdsh_jsonrpc *peer;
    atomic_int refs;
    struct cdsh_jsonrpc_request *qnext;         /* dispatcher queue */
    struct cdsh_jsonrpc_request *iprev, *inext; /* in-flight list */
    bool in_flight;
    json_t *msg;
    const char *method; /* borrowed from msg */
    json_t *params;     /* borrowed from msg */
    json_t *id;         /* borrowed from msg; NULL for notifications */
    char key[KEY_MAX];
    cdsh_cancel *cancel;
    bool answered, held; /* under peer->lock */
    /* a canned error reply queued by the reader (parse/shape errors) */
    bool canned;
    int64_t canned_code;
    char *canned_message;
};

typedef struct handler {
    struct handler *next;
    char *method;
    cdsh_jsonrpc_handler_fn fn;
    void *arg;
} handler;

struct cdsh_jsonrpc {
    atomic_int refs;
    atomic_uint_fast64_t next_id; /* last outgoing id */
    char *name;
    int rfd, wfd;
    bool close_fds, string_ids;
    size_t max_frame;
    cdsh_jsonrpc_diag_fn on_diag;
    void *diag_arg;
    cdsh_jsonrpc_cancel_hook_fn on_cancel;
    void *cancel_arg;
    int stop_pipe[2]; /* readable once stopping; never drained */
    int kick_pipe[2]; /* wakes the reader to re-check async deadlines/tokens */

    pthread_mutex_t lock; /* everything below except the write side */
    pthread_cond_t qcv;
    bool started, stopping, read_closed;
    pending *pending;
    cdsh_jsonrpc_request *qhead, *qtail;
    cdsh_jsonrpc_request *inflight;
    handler *handlers;
    cdsh_jsonrpc_handler_fn fallback;
    void *fallback_arg;
    cdsh_jsonrpc_stats stats;
    pthread_t reader, dispatcher;

    pthread_mutex_t wlock; /* leaf: serialises frames */
    bool wclosed;          /* freed: fds may be closed */
    bool wbroken;          /* a frame was cut short */
};

/* ---- small helpers ------------------------------------------------------ */

static void ns_to_timespec(int64_t ns, struct timespec *ts)
{
    ts->tv_sec = (time_t)(ns / 1000000000);
    ts->tv_nsec = (long)(ns % 1000000000);
}

static void id_key(const json_t *id, char *out)
{
    if (json_is_integer(id))
        snprintf(out, KEY_MAX, "i:%" JSON_INTEGER_FORMAT, json_integer_value(id));
    else if (json_is_string(id))
        snprintf(out, KEY_MAX, "s:%.*s", KEY_MAX - 3, json_string_value(id));
    else
        snprintf(out, KEY_MAX, "n:");
}

static void peer_ref(cdsh_jsonrpc *p)
{
    atomic_fetch_add(&p->refs, 1);
}

static void peer_unref(cdsh_jsonrpc *p)
{
    if (atomic_fetch_sub(&p->refs, 1) != 1)
        return;
    for (handler *h = p->handlers, *n; h; h = n) {
        n = h->next;
        free(h->method);
        free(h);
    }
    for (int i = 0; i < 2; i++) {
        close(p->stop_pipe[i]);
        close(p->kick_pipe[i]);
    }
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->wlock);
    pthread_cond_destroy(&p->qcv);
    free(p->name);
    free(p);
}

static void diag(cdsh_jsonrpc *p, cdsh_jsonrpc_diag kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void diag(cdsh_jsonrpc *p, cdsh_jsonrpc_diag kind, const char *fmt, ...)
{
    pthread_mutex_lock(&p->lock);
    switch (kind) {
    case CDSH_JSONRPC_DIAG_MALFORMED: p->stats.malformed++; break;
    case CDSH_JSONRPC_DIAG_OVERSIZE: p->stats.oversize++; break;
    case CDSH_JSONRPC_DIAG_INVALID: p->stats.invalid++; break;
    case CDSH_JSONRPC_DIAG_UNMATCHED: p->stats.unmatched++; break;
    case CDSH_JSONRPC_DIAG_IO: break;
    }
    pthread_mutex_unlock(&p->lock);
    if (!p->on_diag)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->on_diag(p->diag_arg, kind, msg);
}

void cdsh_jsonrpc_remote_error_clear(cdsh_jsonrpc_remote_error *rerr)
{
    if (!rerr)
        return;
    free(rerr->message);
    json_decref(rerr->data);
    memset(rerr, 0, sizeof *rerr);
}

/* ---- writing ------------------------------------------------------------ */

/* How long a call's write may wait: the call's own deadline and token.
 * Notifications and responses write without a limit (until free). */
typedef struct write_limit {
    int64_t deadline_ns; /* 0: none */
    cdsh_cancel *cancel;
    const char *method;
} write_limit;

#define WRITE_SLICE_MS 50 /* how often a blocked writer re-checks its token */

/* 0 while the limit allows waiting, else the give-up code with err filled. */
static int limit_check(cdsh_jsonrpc *p, const write_limit *lim, cdsh_error *err)
{
    if (!lim)
        return 0;
    if (cdsh_cancel_is_fired(lim->cancel)) {
        const char *reason = cdsh_cancel_reason(lim->cancel);
        return cdsh_error_set(err, CDSH_ECANCELED, "CANCELED", "call to %s was cancelled%s%s",
                              lim->method, reason ? ": " : "", reason ? reason : "");
    }
    if (lim->deadline_ns && cdsh_clock_mono_ns() >= lim->deadline_ns)
        return cdsh_error_set(err, CDSH_ETIMEDOUT, "TIMEOUT",
                              "%s did not read the request for %s in time", p->name, lim->method);
    return 0;
}

/* Poll timeout in ms for a writer bounded by lim (-1: none). */
static int limit_slice_ms(const write_limit *lim)
{
    if (!lim)
        return -1;
    int64_t ms = -1;
    if (lim->deadline_ns)
        ms = (lim->deadline_ns - cdsh_clock_mono_ns()) / 1000000 + 1;
    if (ms > 60000)
        ms = 60000; /* re-checked in the caller's loop */
    if (lim->cancel && (ms < 0 || ms > WRITE_SLICE_MS))
        ms = WRITE_SLICE_MS;
    return ms < 0 && lim->deadline_ns ? 0 : (int)ms;
}

/* Writes all of buf, blocking SIGPIPE on this thread so a vanished reader
 * gives EPIPE instead of killing the process. Caller holds wlock. Giving up
 * (lim) after part of the frame went out cuts the stream: the write side is
 * then marked broken, since the other side would misparse anything after. */
static int write_all(cdsh_jsonrpc *p, const char *buf, size_t len, const write_limit *lim,
                     cdsh_error *err)
{
    sigset_t pipe_set, old_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
    int rc = 0;
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(p->wfd, buf + off, len - off);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if ((rc = limit_check(p, lim, err)) != 0) {
                if (off)
                    p->wbroken = true;
                break;
            }
            struct pollfd fds[2] = {{p->wfd, POLLOUT, 0}, {p->stop_pipe[0], POLLIN, 0}};
            if (poll(fds, 2, limit_slice_ms(lim)) < 0 && errno != EINTR) {
                rc = cdsh_error_set(err, CDSH_EIO, "IO", "%s: poll failed: %s", p->name,
                                    strerror(errno));
                break;
            }
            if (fds[1].revents) {
                rc = cdsh_error_set(err, CDSH_ECLOSED, "CLOSED", "%s is closed", p->name);
                break;
            }
            continue;
        }
        if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
            rc = cdsh_error_set(err, CDSH_ECLOSED, "CLOSED", "%s closed its input", p->name);
            /* consume the SIGPIPE raised by this write so it is never delivered */
            struct timespec zero = {0, 0};
            sigtimedwait(&pipe_set, NULL, &zero);
        } else {
            rc = cdsh_error_set(err, CDSH_EIO, "IO", "%s: write failed: %s", p->name,
                                n < 0 ? strerror(errno) : "wrote nothing");
        }
        break;
    }
    pthread_sigmask(SIG_SETMASK, &old_set, NULL);
    return rc;
}

/* Takes wlock, waiting no longer than lim allows. */
static int lock_writer(cdsh_jsonrpc *p, const write_limit *lim, cdsh_error *err)
{
    if (!lim) {
        pthread_mutex_lock(&p->wlock);
        return 0;
    }
    for (;;) {
        int rc = limit_check(p, lim, err);
        if (rc)
            return rc;
        int slice = limit_slice_ms(lim);
        if (slice < 0) {
            pthread_mutex_lock(&p->wlock);
            return 0;
        }
        /* timedlock takes CLOCK_REALTIME; a clock jump only stretches one
         * slice, since the deadline itself is re-checked on the monotonic
         * clock (timedlock, unlike clocklock, is understood by TSan) */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t until = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + (int64_t)slice * 1000000;
        ns_to_timespec(until, &ts);
        if (pthread_mutex_timedlock(&p->wlock, &ts) == 0)
            return 0;
    }
}

/* Serialises msg (borrowed) as one line and writes it atomically with
 * respect to other writers; lim (may be NULL) bounds the wait. */
static int send_msg(cdsh_jsonrpc *p, json_t *msg, const write_limit *lim, cdsh_error *err)
{
    char *text = json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
    if (!text)
        return cdsh_error_set(
            err, CDSH_EINVAL, "BAD_JSON",
            "cannot serialise a message (out of memory or a NaN/infinite number)");
    size_t len = strlen(text);
    char *line = realloc(text, len + 2);
    if (!line) {
        free(text);
        return cdsh_error_set(err, CDSH_ENOMEM, "NOMEM", "cannot serialise a message");
    }
    line[len] = '\n';
    int rc = lock_writer(p, lim, err);
    if (rc == 0) {
        if (p->wclosed)
            rc = cdsh_error_set(err, CDSH_ECLOSED, "CLOSED", "%s is closed", p->name);
        else if (p->wbroken)
            rc = cdsh_error_set(err, CDSH_ECLOSED, "CLOSED",
                                "%s stopped reading mid-frame; nothing more can be sent", p->name);
        else
            rc = write_all(p, line, len + 1, lim, err);
        pthread_mutex_unlock(&p->wlock);
    }
    free(line);
    if (rc == 0) {
        pthread_mutex_lock(&p->lock);
        p->stats.frames_out++;
        pthread_mutex_unlock(&p->lock);
    }
    return rc;
}

static json_t *make_message(const char *method, json_t *params, json_t *id)
{
    json_t *msg = json_object();
    if (!msg)
        return NULL;
    int bad = json_object_set_new(msg, "jsonrpc", json_string("2.0"));
    if (id)
        bad |= json_object_set(msg, "id", id);
    bad |= json_object_set_new(msg, "method", json_string(method));
    if (params)
        bad |= json_object_set(msg, "params", params);
    if (bad) {
        json_decref(msg);
        return NULL;
    }
    return msg;
}

static int check_params(cdsh_jsonrpc *p, const char *method, json_t *params, cdsh_error *err)
{
    if (!p || !method)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "peer and method are required");
    if (params && !json_is_object(params) && !json_is_array(params))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "params for %s must be an object or an array", method);
    return 0;
}

/* ---- pending calls ------------------------------------------------------ */

static void pending_free(pending *pc)
{
    if (!pc)
        return;
    if (pc->sync)
        pthread_cond_destroy(&pc->cv);
    json_decref(pc->id);
    json_decref(pc->result);
    cdsh_jsonrpc_remote_error_clear(&pc->rerr);
    free(pc->method);
    free(pc);
}

/* Unlinks the pending call with this key or number; caller holds lock. */
static pending *pending_take(cdsh_jsonrpc *p, const char *key, uint64_t num)
{
    for (pending **pp = &p->pending; *pp; pp = &(*pp)->next) {
        pending *pc = *pp;
        if ((key && strcmp(pc->key, key) == 0) || (!key && pc->num == num)) {
            *pp = pc->next;
            pc->next = NULL;
            return pc;
        }
    }
    return NULL;
}

static void pending_fail(pending *pc, int rc, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void pending_fail(pending *pc, int rc, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pc->rc = cdsh_error_setv(&pc->err, rc, code, fmt, ap);
    va_end(ap);
}

/* Fails pc because we stopped waiting: rc is CDSH_ECANCELED (reason may be
 * NULL) or CDSH_ETIMEDOUT. Returns the reason to give the cancel hook. */
static const char *pending_give_up(cdsh_jsonrpc *p, pending *pc, int rc, const char *reason)
{
    if (rc == CDSH_ECANCELED) {
        pending_fail(pc, CDSH_ECANCELED, "CANCELED", "call to %s was cancelled%s%s", pc->method,
                     reason ? ": " : "", reason ? reason : "");
        return reason;
    }
    pending_fail(pc, CDSH_ETIMEDOUT, "TIMEOUT", "%s did not answer %s within %" PRId64 " ms",
                 p->name, pc->method, pc->timeout_ms);
    return "timed out";
}

/* Delivers the outcome of a call already removed from the table. For a sync
 * call the caller holds lock (the waiter then owns pc); for an async call
 * the caller must not hold it (the callback runs and pc is freed). */
static void pending_finish(pending *pc)
{
    pc->done = true;
    if (pc->sync) {
        pthread_cond_signal(&pc->cv);
        return;
    }
    if (pc->cancel)
        cdsh_cancel_unsubscribe(pc->cancel, pc->sub);
    pc->done_fn(pc->done_arg, pc->rc, pc->rc == 0 ? pc->result : NULL,
                pc->has_rerr ? &pc->rerr : NULL, pc->rc == 0 ? NULL : &pc->err);
    pending_free(pc);
}

/* Fills pc from a response message (borrowed). */
static void pending_resolve(cdsh_jsonrpc *p, pending *pc, json_t *msg)
{
    json_t *error = json_object_get(msg, "error");
    json_t *result = json_object_get(msg, "result");
    if (error && !json_is_null(error)) {
        json_t *code = json_object_get(error, "code");
        json_t *message = json_object_get(error, "message");
        if (!json_is_integer(code) || !json_is_string(message)) {
            pending_fail(pc, CDSH_EPROTO, "BAD_RESPONSE",
                         "%s answered %s with a malformed error object", p->name, pc->method);
            return;
        }
        pc->has_rerr = true;
        pc->rerr.code = json_integer_value(code);
        pc->rerr.message = strdup(json_string_value(message));
        /* Detached from msg so the reader's later free of msg never touches
         * what another thread now owns (jansson refcounts are not
         * acquire/release clean). */
        pc->rerr.data = json_incref(json_object_get(error, "data"));
        if (pc->rerr.data)
            json_object_del(error, "data");
        pending_fail(pc, CDSH_EPROTO, "RPC_ERROR", "%s answered %s with error %" PRId64 ": %s",
                     p->name, pc->method, pc->rerr.code, json_string_value(message));
        return;
    }
    if (!result) {
        pending_fail(pc, CDSH_EPROTO, "BAD_RESPONSE",
                     "%s answered %s with neither result nor error", p->name, pc->method);
        return;
    }
    pc->rc = 0;
    pc->result = json_incref(result);
    json_object_del(msg, "result");
}

static void run_cancel_hook(cdsh_jsonrpc *p, const pending *pc, int rc, const char *reason)
{
    if (p->on_cancel)
        p->on_cancel(p->cancel_arg, p, pc->id, pc->method, rc, reason);
}

/* Finishes async calls already unlinked from the table (chained by next),
 * each after the cancel hook when hook is set. Called with no lock held. */
static void finish_async_list(cdsh_jsonrpc *p, pending *list, bool hook)
{
    while (list) {
        pending *pc = list;
        list = pc->next;
        if (hook)
            run_cancel_hook(p, pc, pc->rc,
                            pc->rc == CDSH_ECANCELED ? cdsh_cancel_reason(pc->cancel)
                                                     : "timed out");
        pending_finish(pc);
    }
}

/* Removes every pending call and fails it with ECLOSED. */
static void fail_all_pending(cdsh_jsonrpc *p, const char *why)
{
    pthread_mutex_lock(&p->lock);
    pending *list = p->pending, *async = NULL;
    p->pending = NULL;
    while (list) {
        pending *pc = list;
        list = pc->next;
        pc->next = NULL;
        pending_fail(pc, CDSH_ECLOSED, "CLOSED", "%s %s while waiting for %s", p->name, why,
                     pc->method);
        if (pc->sync) {
            pending_finish(pc);
        } else {
            pc->next = async;
            async = pc;
        }
    }
    pthread_mutex_unlock(&p->lock);
    finish_async_list(p, async, false);
}

static void kick(void *arg)
{
    cdsh_jsonrpc *p = arg;
    char c = 1;
    ssize_t n = write(p->kick_pipe[1], &c, 1);
    (void)n; /* a full pipe already means "wake up" */
}

static void wake_sync(void *arg)
{
    pending *pc = arg;
    /* token lock → peer lock: the documented order; the waiter rechecks */
    cdsh_jsonrpc *p = (cdsh_jsonrpc *)pc->done_arg;
    pthread_mutex_lock(&p->lock);
    pthread_cond_signal(&pc->cv);
    pthread_mutex_unlock(&p->lock);
}

/* Creates, registers and sends a call. On success *out is in the table
 * (the reader may already have completed it, for async calls). */
static int start_call(cdsh_jsonrpc *p, const char *method, json_t *params, int64_t timeout_ms,
                      cdsh_cancel *cancel, bool sync, cdsh_jsonrpc_done_fn done, void *arg,
                      pending **out, uint64_t *call_id, cdsh_error *err)
{
    int rc = check_params(p, method, params, err);
    if (rc)
        return rc;
    if (cdsh_cancel_is_fired(cancel)) { /* not even sent */
        write_limit lim = {0, cancel, method};
        return limit_check(p, &lim, err);
    }
    json_t *msg = NULL;
    pending *pc = calloc(1, sizeof *pc);
    if (!pc || !(pc->method = strdup(method))) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NOMEM", "out of memory calling %s", method);
        goto fail;
    }
    pc->sync = sync;
    pc->timeout_ms = timeout_ms;
    pc->cancel = cancel;
    pc->done_fn = done;
    pc->done_arg = sync ? (void *)p : arg;
    if (sync) {
        pthread_condattr_t attr;
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&pc->cv, &attr);
        pthread_condattr_destroy(&attr);
    }
    if (timeout_ms >= 0)
        pc->deadline_ns = cdsh_clock_mono_ns() + timeout_ms * 1000000;

    pc->num = atomic_fetch_add(&p->next_id, 1) + 1;
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64, pc->num);
    pc->id = p->string_ids ? json_string(buf) : json_integer((json_int_t)pc->num);
    msg = pc->id ? make_message(method, params, pc->id) : NULL;
    if (!msg) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NOMEM", "out of memory calling %s", method);
        goto fail;
    }
    id_key(pc->id, pc->key);
    if (cancel) {
        pc->sub = cdsh_cancel_subscribe(cancel, sync ? wake_sync : kick, sync ? (void *)pc : p);
        if (!pc->sub) {
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NOMEM", "out of memory calling %s", method);
            goto fail;
        }
    }
    /* Registered before sending, or a fast response could find no caller. */
    pthread_mutex_lock(&p->lock);
    if (p->read_closed || p->stopping) {
        pthread_mutex_unlock(&p->lock);
        rc = cdsh_error_set(err, CDSH_ECLOSED, "CLOSED", "%s is closed; cannot call %s", p->name,
                            method);
        goto fail;
    }
    pc->next = p->pending;
    p->pending = pc;
    pthread_mutex_unlock(&p->lock);
    if (!sync && (pc->deadline_ns || cancel))
        kick(p); /* the reader must learn the new deadline */
    if (call_id)
        *call_id = pc->num;
    uint64_t num = pc->num;
    write_limit lim = {pc->deadline_ns, cancel, method};
    rc = send_msg(p, msg, &lim, err);
    json_decref(msg);
    if (rc) {
        /* If still ours, withdraw it quietly; otherwise it was already
         * completed (e.g. closed) and its waiter/callback reports that. */
        pthread_mutex_lock(&p->lock);
        pending *mine = pending_take(p, NULL, num);
        pthread_mutex_unlock(&p->lock);
        if (!mine) {
            *out = pc; /* already finished (e.g. closed): a sync waiter finds it done */
            return 0;
        }
        pc = mine;
        msg = NULL;
        goto fail;
    }
    *out = pc;
    return 0;
fail:
    json_decref(msg);
    if (pc && pc->sub)
        cdsh_cancel_unsubscribe(cancel, pc->sub);
    pending_free(pc);
    return rc;
}

int cdsh_jsonrpc_call(cdsh_jsonrpc *peer, const char *method, json_t *params, int64_t timeout_ms,
                      cdsh_cancel *cancel, json_t **result, cdsh_jsonrpc_remote_error *rerr,
                      cdsh_error *err)
{
    if (result)
        *result = NULL;
    if (rerr)
        memset(rerr, 0, sizeof *rerr);
    if (!result)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "result pointer is required");
    if (!peer)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "peer is required");
    peer_ref(peer);
    pending *pc = NULL;
    int rc = start_call(peer, method, params, timeout_ms, cancel, true, NULL, NULL, &pc, NULL, err);
    if (rc) {
        peer_unref(peer);
        return rc;
    }
    int gave_up = 0;
    const char *reason = NULL;
    pthread_mutex_lock(&peer->lock);
    while (!pc->done) {
        if (cdsh_cancel_is_fired(cancel)) {
            gave_up = CDSH_ECANCELED;
        } else if (pc->deadline_ns && cdsh_clock_mono_ns() >= pc->deadline_ns) {
            gave_up = CDSH_ETIMEDOUT;
        } else if (pc->deadline_ns) {
            struct timespec ts;
            ns_to_timespec(pc->deadline_ns, &ts);
            pthread_cond_timedwait(&pc->cv, &peer->lock, &ts);
            continue;
        } else {
            pthread_cond_wait(&pc->cv, &peer->lock);
            continue;
        }
        pending_take(peer, NULL, pc->num); /* still listed: only finishing removes it */
        reason = pending_give_up(peer, pc, gave_up, cdsh_cancel_reason(cancel));
        pc->done = true;
    }
    pthread_mutex_unlock(&peer->lock);
    if (cancel)
        cdsh_cancel_unsubscribe(cancel, pc->sub);
    if (gave_up)
        run_cancel_hook(peer, pc, gave_up, reason);
    rc = pc->rc;
    if (rc == 0) {
        *result = pc->result;
        pc->result = NULL;
    } else {
        if (err)
            *err = pc->err;
        if (pc->has_rerr && rerr) {
            *rerr = pc->rerr;
            memset(&pc->rerr, 0, sizeof pc->rerr);
        }
    }
    pending_free(pc);
    peer_unref(peer);
    return rc;
}

int cdsh_jsonrpc_call_async(cdsh_jsonrpc *peer, const char *method, json_t *params,
                            int64_t timeout_ms, cdsh_cancel *cancel, cdsh_jsonrpc_done_fn done,
                            void *arg, uint64_t *call_id, cdsh_error *err)
{
    if (!done)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "a completion callback is required");
    if (!peer)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "peer is required");
    peer_ref(peer); /* a concurrent free must not pull the peer from under the write */
    pending *pc = NULL;
    int rc =
        start_call(peer, method, params, timeout_ms, cancel, false, done, arg, &pc, call_id, err);
    peer_unref(peer);
    return rc;
}

int cdsh_jsonrpc_cancel_call(cdsh_jsonrpc *peer, uint64_t call_id, const char *reason)
{
    if (!peer)
        return CDSH_EINVAL;
    pthread_mutex_lock(&peer->lock);
    pending *pc = pending_take(peer, NULL, call_id);
    if (!pc) {
        pthread_mutex_unlock(&peer->lock);
        return CDSH_ENOTFOUND;
    }
    pending_give_up(peer, pc, CDSH_ECANCELED, reason);
    /* Copies for the hook: a sync waiter frees pc as soon as it wakes. */
    json_t *id = json_incref(pc->id);
    char *method = strdup(pc->method);
    bool sync = pc->sync;
    if (sync)
        pending_finish(pc);
    pthread_mutex_unlock(&peer->lock);
    if (peer->on_cancel && method)
        peer->on_cancel(peer->cancel_arg, peer, id, method, CDSH_ECANCELED, reason);
    if (!sync)
        pending_finish(pc);
    json_decref(id);
    free(method);
    return 0;
}

int cdsh_jsonrpc_touch(cdsh_jsonrpc *peer, uint64_t call_id)
{
    if (!peer)
        return CDSH_EINVAL;
    int rc = CDSH_ENOTFOUND;
    pthread_mutex_lock(&peer->lock);
    for (pending *pc = peer->pending; pc; pc = pc->next) {
        if (pc->num != call_id)
            continue;
        if (pc->timeout_ms >= 0)
            pc->deadline_ns = cdsh_clock_mono_ns() + pc->timeout_ms * 1000000;
        rc = 0;
        break;
    }
    pthread_mutex_unlock(&peer->lock);
    return rc;
}

int cdsh_jsonrpc_notify(cdsh_jsonrpc *peer, const char *method, json_t *params, cdsh_error *err)
{
    int rc = check_params(peer, method, params, err);
    if (rc)
        return rc;
    json_t *msg = make_message(method, params, NULL);
    if (!msg)
        return cdsh_error_set(err, CDSH_ENOMEM, "NOMEM", "out of memory notifying %s", method);
    peer_ref(peer);
    rc = send_msg(peer, msg, NULL, err);
    peer_unref(peer);
    json_decref(msg);
    return rc;
}

/* ---- incoming requests -------------------------------------------------- */

static void req_ref(cdsh_jsonrpc_request *req)
{
    atomic_fetch_add(&req->refs, 1);
}

/* For walkers of the in-flight list (under p->lock): the list holds no
 * reference, so an entry whose count already reached zero is being destroyed
 * by a thread that waits for p->lock to unlink it. Taking a plain reference
 * would resurrect it and free it under the walker; skip it instead. */
static bool req_ref_if_live(cdsh_jsonrpc_request *req)
{
    int n = atomic_load(&req->refs);
    while (n > 0)
        if (atomic_compare_exchange_weak(&req->refs, &n, n + 1))
            return true;
    return false;
}

static void req_unref(cdsh_jsonrpc_request *req)
{
    if (atomic_fetch_sub(&req->refs, 1) != 1)
        return;
    cdsh_jsonrpc *p = req->peer;
    pthread_mutex_lock(&p->lock);
    if (req->in_flight) {
        if (req->iprev)
            req->iprev->inext = req->inext;
        else
            p->inflight = req->inext;
        if (req->inext)
            req->inext->iprev = req->iprev;
        req->in_flight = false;
    }
    pthread_mutex_unlock(&p->lock);
    json_decref(req->msg);
    json_decref(req->id);
    cdsh_cancel_free(req->cancel);
    free(req->canned_message);
    free(req);
    peer_unref(p);
}

/* A new handle for an incoming message (msg and id borrowed, both may be
 * NULL for canned replies). */
static cdsh_jsonrpc_request *req_new(cdsh_jsonrpc *p, json_t *msg, json_t *id)
{
    cdsh_jsonrpc_request *req = calloc(1, sizeof *req);
    if (!req)
        return NULL;
    req->cancel = cdsh_cancel_new(NULL);
    if (!req->cancel) {
        free(req);
        return NULL;
    }
    atomic_init(&req->refs, 1);
    req->peer = p;
    peer_ref(p);
    req->msg = json_incref(msg);
    req->id = json_incref(id);
    if (id)
        id_key(id, req->key);
    if (msg) {
        req->method = json_string_value(json_object_get(msg, "method"));
        req->params = json_object_get(msg, "params");
    }
    return req;
}

static void enqueue(cdsh_jsonrpc *p, cdsh_jsonrpc_request *req)
{
    pthread_mutex_lock(&p->lock);
    if (req->id && !req->canned) {
        req->in_flight = true;
        req->inext = p->inflight;
        if (p->inflight)
            p->inflight->iprev = req;
        p->inflight = req;
    }
    if (p->qtail)
        p->qtail->qnext = req;
    else
        p->qhead = req;
    p->qtail = req;
    pthread_cond_signal(&p->qcv);
    pthread_mutex_unlock(&p->lock);
}

/* Queues an error reply for the dispatcher to send, so the reader never
 * blocks on a write. Takes ownership of id; NULL means JSON null. */
static void enqueue_canned(cdsh_jsonrpc *p, json_t *id, int64_t code, const char *message)
{
    json_t *reply_id = id ? id : json_null();
    cdsh_jsonrpc_request *req = req_new(p, NULL, reply_id);
    json_decref(reply_id); /* before the hand-off: see handle_message */
    if (!req)
        return;
    req->canned = true;
    req->canned_code = code;
    req->canned_message = strdup(message);
    if (!req->canned_message) {
        req_unref(req);
        return;
    }
    enqueue(p, req);
}

static int send_response(cdsh_jsonrpc *p, json_t *id, json_t *result, int64_t code,
                         const char *message, json_t *data, cdsh_error *err)
{
    json_t *msg = json_object();
    json_t *error = NULL;
    int bad = !msg;
    if (!bad) {
        bad |= json_object_set_new(msg, "jsonrpc", json_string("2.0"));
        bad |= json_object_set(msg, "id", id);
    }
    if (!bad && message) {
        error = json_object();
        bad |= !error;
        if (error) {
            bad |= json_object_set_new(error, "code", json_integer((json_int_t)code));
            bad |= json_object_set_new(error, "message", json_string(message));
            if (data)
                bad |= json_object_set(error, "data", data);
        }
        bad |= json_object_set_new(msg, "error", error);
    } else if (!bad) {
        bad |= result ? json_object_set(msg, "result", result)
                      : json_object_set_new(msg, "result", json_null());
    }
    int rc = bad ? cdsh_error_set(err, CDSH_ENOMEM, "NOMEM", "cannot build a response")
                 : send_msg(p, msg, NULL, err);
    json_decref(msg);
    return rc;
}

static int answer(cdsh_jsonrpc_request *req, json_t *result, int64_t code, const char *message,
                  json_t *data, cdsh_error *err)
{
    if (!req)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "request is required");
    if (!req->id)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "%s is a notification and takes no answer", req->method);
    cdsh_jsonrpc *p = req->peer;
    pthread_mutex_lock(&p->lock);
    if (req->answered) {
        pthread_mutex_unlock(&p->lock);
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "%s was already answered",
                              req->method);
    }
    req->answered = true;
    bool was_held = req->held;
    req->held = false;
    pthread_mutex_unlock(&p->lock);
    int rc = send_response(p, req->id, result, code, message, data, err);
    if (was_held)
        req_unref(req);
    return rc;
}

int cdsh_jsonrpc_respond(cdsh_jsonrpc_request *req, json_t *result, cdsh_error *err)
{
    return answer(req, result, 0, NULL, NULL, err);
}

int cdsh_jsonrpc_respond_error(cdsh_jsonrpc_request *req, int64_t code, const char *message,
                               json_t *data, cdsh_error *err)
{
    return answer(req, NULL, code, message ? message : "error", data, err);
}

cdsh_jsonrpc_request *cdsh_jsonrpc_request_hold(cdsh_jsonrpc_request *req)
{
    if (!req)
        return NULL;
    pthread_mutex_lock(&req->peer->lock);
    if (!req->held && !req->answered && req->id) {
        req->held = true;
        req_ref(req);
    }
    pthread_mutex_unlock(&req->peer->lock);
    return req;
}

const char *cdsh_jsonrpc_request_method(const cdsh_jsonrpc_request *req)
{
    return req ? req->method : NULL;
}

json_t *cdsh_jsonrpc_request_params(const cdsh_jsonrpc_request *req)
{
    return req ? req->params : NULL;
}

const json_t *cdsh_jsonrpc_request_id(const cdsh_jsonrpc_request *req)
{
    return req ? req->id : NULL;
}

bool cdsh_jsonrpc_request_is_notification(const cdsh_jsonrpc_request *req)
{
    return req && !req->id;
}

cdsh_cancel *cdsh_jsonrpc_request_cancel_get(const cdsh_jsonrpc_request *req)
{
    return req ? req->cancel : NULL;
}

int cdsh_jsonrpc_cancel_incoming(cdsh_jsonrpc *peer, const json_t *id, const char *reason)
{
    if (!peer || !id)
        return CDSH_EINVAL;
    char key[KEY_MAX];
    id_key(id, key);
    cdsh_jsonrpc_request *found = NULL;
    pthread_mutex_lock(&peer->lock);
    for (cdsh_jsonrpc_request *r = peer->inflight; r; r = r->inext) {
        if (!r->answered && strcmp(r->key, key) == 0 && req_ref_if_live(r)) {
            found = r;
            break;
        }
    }
    pthread_mutex_unlock(&peer->lock);
    if (!found)
        return CDSH_ENOTFOUND;
    cdsh_cancel_fire(found->cancel, reason);
    req_unref(found);
    return 0;
}

/* Fires the tokens of every incoming request still being handled. */
static void cancel_all_incoming(cdsh_jsonrpc *p, const char *reason)
{
    pthread_mutex_lock(&p->lock);
    size_t n = 0;
    for (cdsh_jsonrpc_request *r = p->inflight; r; r = r->inext)
        n++;
    cdsh_jsonrpc_request **all = n ? calloc(n, sizeof *all) : NULL;
    size_t i = 0;
    for (cdsh_jsonrpc_request *r = p->inflight; r && all; r = r->inext)
        if (req_ref_if_live(r))
            all[i++] = r;
    pthread_mutex_unlock(&p->lock);
    for (size_t k = 0; k < i; k++) {
        cdsh_cancel_fire(all[k]->cancel, reason);
        req_unref(all[k]);
    }
    free(all);
}

int cdsh_jsonrpc_handle(cdsh_jsonrpc *peer, const char *method, cdsh_jsonrpc_handler_fn fn,
                        void *arg, cdsh_error *err)
{
    if (!peer || !method || !fn)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "peer, method and handler are required");
    handler *h = calloc(1, sizeof *h);
    if (!h || !(h->method = strdup(method))) {
        free(h);
        return cdsh_error_set(err, CDSH_ENOMEM, "NOMEM", "out of memory");
    }
    h->fn = fn;
    h->arg = arg;
    pthread_mutex_lock(&peer->lock);
    for (handler *o = peer->handlers; o; o = o->next) {
        if (strcmp(o->method, method) == 0) {
            pthread_mutex_unlock(&peer->lock);
            free(h->method);
            free(h);
            return cdsh_error_set(err, CDSH_EEXIST, "EXISTS",
                                  "a handler for %s is already registered", method);
        }
    }
    h->next = peer->handlers;
    peer->handlers = h;
    pthread_mutex_unlock(&peer->lock);
    return 0;
}

void cdsh_jsonrpc_handle_fallback(cdsh_jsonrpc *peer, cdsh_jsonrpc_handler_fn fn, void *arg)
{
    if (!peer)
        return;
    pthread_mutex_lock(&peer->lock);
    peer->fallback = fn;
    peer->fallback_arg = arg;
    pthread_mutex_unlock(&peer->lock);
}

/* ---- dispatcher thread -------------------------------------------------- */

static void dispatch_one(cdsh_jsonrpc *p, cdsh_jsonrpc_request *req)
{
    if (req->canned) {
        send_response(p, req->id, NULL, req->canned_code, req->canned_message, NULL, NULL);
        req_unref(req);
        return;
    }
    cdsh_jsonrpc_handler_fn fn = NULL;
    void *arg = NULL;
    pthread_mutex_lock(&p->lock);
    for (handler *h = p->handlers; h; h = h->next) {
        if (strcmp(h->method, req->method) == 0) {
            fn = h->fn;
            arg = h->arg;
            break;
        }
    }
    if (!fn) {
        fn = p->fallback;
        arg = p->fallback_arg;
    }
    if (!fn && !req->id)
        p->stats.notifications_unhandled++;
    pthread_mutex_unlock(&p->lock);
    if (!fn) {
        if (req->id) {
            char msg[256];
            snprintf(msg, sizeof msg, "Method not found: %s", req->method);
            answer(req, NULL, CDSH_JSONRPC_METHOD_NOT_FOUND, msg, NULL, NULL);
        }
        req_unref(req);
        return;
    }
    fn(arg, p, req);
    if (req->id) {
        pthread_mutex_lock(&p->lock);
        bool unanswered = !req->answered && !req->held;
        pthread_mutex_unlock(&p->lock);
        if (unanswered) {
            char msg[256];
            snprintf(msg, sizeof msg, "Internal error: the handler for %s returned no answer",
                     req->method);
            answer(req, NULL, CDSH_JSONRPC_INTERNAL_ERROR, msg, NULL, NULL);
        }
    }
    req_unref(req);
}

static void *dispatcher_main(void *arg)
{
    cdsh_jsonrpc *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        while (!p->qhead && !p->stopping)
            pthread_cond_wait(&p->qcv, &p->lock);
        if (p->stopping) {
            pthread_mutex_unlock(&p->lock);
            break;
        }
        cdsh_jsonrpc_request *req = p->qhead;
        p->qhead = req->qnext;
        if (!p->qhead)
            p->qtail = NULL;
        req->qnext = NULL;
        pthread_mutex_unlock(&p->lock);
        dispatch_one(p, req);
    }
    /* Stopping: queued messages are dropped unanswered. */
    pthread_mutex_lock(&p->lock);
    cdsh_jsonrpc_request *rest = p->qhead;
    p->qhead = p->qtail = NULL;
    pthread_mutex_unlock(&p->lock);
    while (rest) {
        cdsh_jsonrpc_request *next = rest->qnext;
        req_unref(rest);
        rest = next;
    }
    peer_unref(p);
    return NULL;
}

/* ---- reader thread ------------------------------------------------------ */

static bool valid_id(const json_t *id)
{
    return json_is_string(id) || json_is_integer(id) || json_is_null(id);
}

static void handle_response(cdsh_jsonrpc *p, json_t *msg, json_t *id)
{
    if (!json_is_string(id) && !json_is_integer(id)) {
        json_t *error = json_object_get(msg, "error");
        const char *m = json_string_value(json_object_get(error, "message"));
        diag(p, CDSH_JSONRPC_DIAG_INVALID, "%s sent a response without a usable id: %s", p->name,
             m ? m : "(no error message)");
        return;
    }
    char key[KEY_MAX];
    id_key(id, key);
    pthread_mutex_lock(&p->lock);
    pending *pc = pending_take(p, key, 0);
    /* A finished sync call belongs to its waiter from the moment we unlock. */
    bool sync = pc && pc->sync;
    if (sync) {
        pending_resolve(p, pc, msg);
        pending_finish(pc);
    }
    pthread_mutex_unlock(&p->lock);
    if (!pc) {
        diag(p, CDSH_JSONRPC_DIAG_UNMATCHED, "%s sent a response for no pending call (id %s)",
             p->name, key + 2);
        return;
    }
    if (!sync) {
        pending_resolve(p, pc, msg);
        pending_finish(pc);
    }
}

/* Takes ownership of msg. */
static void handle_message(cdsh_jsonrpc *p, json_t *msg)
{
    if (json_is_array(msg)) {
        json_decref(msg);
        diag(p, CDSH_JSONRPC_DIAG_INVALID, "%s sent a batch; batches are not supported", p->name);
        enqueue_canned(p, NULL, CDSH_JSONRPC_INVALID_REQUEST,
                       "Invalid Request: batches are not supported");
        return;
    }
    if (!json_is_object(msg)) {
        json_decref(msg);
        diag(p, CDSH_JSONRPC_DIAG_INVALID, "%s sent a JSON value that is not an object", p->name);
        return;
    }
    json_t *id = json_object_get(msg, "id");
    json_t *method = json_object_get(msg, "method");
    json_t *params = json_object_get(msg, "params");
    const char *version = json_string_value(json_object_get(msg, "jsonrpc"));
    bool version_ok = version && strcmp(version, "2.0") == 0;
    const char *problem = NULL;
    if (method) {
        if (!json_is_string(method))
            problem = "method must be a string";
        else if (!version_ok)
            problem = "jsonrpc must be \"2.0\"";
        else if (id && !valid_id(id))
            problem = "id must be a string, an integer or null";
        else if (params && !json_is_object(params) && !json_is_array(params))
            problem = "params must be an object or an array";
        if (!problem) {
            cdsh_jsonrpc_request *req = req_new(p, msg, id);
            /* Drop the reader's reference before the hand-off, so only one
             * thread at a time ever touches this message's refcounts. */
            json_decref(msg);
            if (req)
                enqueue(p, req);
            return;
        }
    } else if (id && (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
        handle_response(p, msg, id);
        json_decref(msg);
        return;
    } else {
        problem = "neither a request nor a response";
    }
    diag(p, CDSH_JSONRPC_DIAG_INVALID, "%s sent an invalid message: %s", p->name, problem);
    if (id) {
        char text[128];
        snprintf(text, sizeof text, "Invalid Request: %s", problem);
        enqueue_canned(p, valid_id(id) ? json_deep_copy(id) : NULL, CDSH_JSONRPC_INVALID_REQUEST,
                       text);
    }
    json_decref(msg);
}

static void handle_line(cdsh_jsonrpc *p, char *line, size_t len)
{
    while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
        len--;
    size_t start = 0;
    while (start < len && (line[start] == ' ' || line[start] == '\t'))
        start++;
    if (start == len)
        return;
    pthread_mutex_lock(&p->lock);
    p->stats.frames_in++;
    pthread_mutex_unlock(&p->lock);
    json_error_t je;
    json_t *msg = json_loadb(line + start, len - start, JSON_DECODE_ANY, &je);
    if (!msg) {
        diag(p, CDSH_JSONRPC_DIAG_MALFORMED, "%s sent a line that is not JSON (%s at column %d)",
             p->name, je.text, je.column);
        /* Only something that looks like an object could have been a request. */
        if (line[start] == '{')
            enqueue_canned(p, NULL, CDSH_JSONRPC_PARSE_ERROR, "Parse error");
        return;
    }
    handle_message(p, msg);
}

/* Fails async calls whose deadline passed or whose token fired; returns the
 * earliest remaining async deadline (0: none). */
static int64_t expire_async(cdsh_jsonrpc *p)
{
    int64_t now = cdsh_clock_mono_ns(), next = 0;
    pending *expired = NULL;
    pthread_mutex_lock(&p->lock);
    for (pending **pp = &p->pending; *pp;) {
        pending *pc = *pp;
        bool fired = !pc->sync && cdsh_cancel_is_fired(pc->cancel);
        bool late = !pc->sync && pc->deadline_ns && now >= pc->deadline_ns;
        if (!fired && !late) {
            if (!pc->sync && pc->deadline_ns && (!next || pc->deadline_ns < next))
                next = pc->deadline_ns;
            pp = &pc->next;
            continue;
        }
        *pp = pc->next;
        pending_give_up(p, pc, fired ? CDSH_ECANCELED : CDSH_ETIMEDOUT,
                        cdsh_cancel_reason(pc->cancel));
        pc->next = expired;
        expired = pc;
    }
    pthread_mutex_unlock(&p->lock);
    finish_async_list(p, expired, true);
    return next;
}

typedef struct line_buf {
    char *data;
    size_t len, cap;
    bool discarding;
} line_buf;

static void line_reset(line_buf *lb)
{
    lb->len = 0;
    if (lb->cap > LINE_KEEP) {
        free(lb->data);
        lb->data = NULL;
        lb->cap = 0;
    }
}

/* Appends seg to the current line, or starts discarding if it would exceed
 * max_frame. Returns false on ENOMEM (the line is then discarded too). */
static void line_append(cdsh_jsonrpc *p, line_buf *lb, const char *seg, size_t n)
{
    if (lb->discarding || n == 0)
        return;
    if (lb->len + n > p->max_frame) {
        diag(p, CDSH_JSONRPC_DIAG_OVERSIZE, "%s sent a line longer than %zu bytes; discarded",
             p->name, p->max_frame);
        lb->discarding = true;
        line_reset(lb);
        return;
    }
    if (lb->len + n + 1 > lb->cap) {
        size_t cap = lb->cap ? lb->cap : 4096;
        while (cap < lb->len + n + 1)
            cap *= 2;
        if (cap > p->max_frame + 1)
            cap = p->max_frame + 1;
        char *data = realloc(lb->data, cap);
        if (!data) {
            diag(p, CDSH_JSONRPC_DIAG_OVERSIZE, "%s: out of memory for a %zu-byte line; discarded",
                 p->name, lb->len + n);
            lb->discarding = true;
            line_reset(lb);
            return;
        }
        lb->data = data;
        lb->cap = cap;
    }
    memcpy(lb->data + lb->len, seg, n);
    lb->len += n;
}

static void feed(cdsh_jsonrpc *p, line_buf *lb, const char *buf, size_t n)
{
    size_t i = 0;
    while (i < n) {
        const char *nl = memchr(buf + i, '\n', n - i);
        size_t seg = nl ? (size_t)(nl - (buf + i)) : n - i;
        line_append(p, lb, buf + i, seg);
        i += seg;
        if (!nl)
            break;
        i++;
        if (lb->discarding)
            lb->discarding = false;
        else if (lb->len)
            handle_line(p, lb->data, lb->len);
        line_reset(lb);
    }
}

static void *reader_main(void *arg)
{
    cdsh_jsonrpc *p = arg;
    line_buf lb = {0};
    char *chunk = malloc(READ_CHUNK);
    const char *why = chunk ? "closed the connection" : "reader ran out of memory";
    while (chunk) {
        int64_t next = expire_async(p);
        int timeout = -1;
        if (next) {
            int64_t ms = (next - cdsh_clock_mono_ns()) / 1000000 + 1;
            timeout = ms < 0 ? 0 : ms > 60000 ? 60000 : (int)ms;
        }
        struct pollfd fds[3] = {
            {p->stop_pipe[0], POLLIN, 0}, {p->kick_pipe[0], POLLIN, 0}, {p->rfd, POLLIN, 0}};
        if (poll(fds, 3, timeout) < 0) {
            if (errno == EINTR)
                continue;
            why = "could not be polled";
            break;
        }
        if (fds[0].revents) {
            why = NULL; /* stopping: cdsh_jsonrpc_free fails what is left */
            break;
        }
        if (fds[1].revents) {
            char drain[64];
            while (read(p->kick_pipe[0], drain, sizeof drain) > 0) {
            }
        }
        if (!fds[2].revents)
            continue;
        ssize_t n = read(p->rfd, chunk, READ_CHUNK);
        if (n > 0) {
            feed(p, &lb, chunk, (size_t)n);
            continue;
        }
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (n < 0)
            why = "failed while reading";
        /* A last line without a newline still counts. */
        if (!lb.discarding && lb.len)
            handle_line(p, lb.data, lb.len);
        break;
    }
    free(chunk);
    free(lb.data);
    if (why) {
        pthread_mutex_lock(&p->lock);
        p->read_closed = true;
        pthread_mutex_unlock(&p->lock);
        diag(p, CDSH_JSONRPC_DIAG_IO, "%s %s", p->name, why);
        fail_all_pending(p, why);
        cancel_all_incoming(p, "peer closed the connection");
    }
    peer_unref(p);
    return NULL;
}

/* ---- lifecycle ---------------------------------------------------------- */

cdsh_jsonrpc *cdsh_jsonrpc_new(int rfd, int wfd, const cdsh_jsonrpc_config *cfg, cdsh_error *err)
{
    if (rfd < 0 || wfd < 0) {
        cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "jsonrpc needs two open fds");
        return NULL;
    }
    cdsh_jsonrpc *p = calloc(1, sizeof *p);
    if (!p)
        goto nomem;
    p->stop_pipe[0] = p->stop_pipe[1] = p->kick_pipe[0] = p->kick_pipe[1] = -1;
    p->name = strdup(cfg && cfg->name ? cfg->name : "peer");
    if (!p->name)
        goto nomem;
    if (pipe2(p->stop_pipe, O_CLOEXEC | O_NONBLOCK) ||
        pipe2(p->kick_pipe, O_CLOEXEC | O_NONBLOCK)) {
        cdsh_error_set(err, CDSH_EIO, "IO", "cannot create a pipe: %s", strerror(errno));
        goto fail;
    }
    atomic_init(&p->refs, 1);
    atomic_init(&p->next_id, 0);
    p->rfd = rfd;
    p->wfd = wfd;
    if (cfg) {
        p->close_fds = cfg->close_fds;
        p->string_ids = cfg->string_ids;
        p->max_frame = cfg->max_frame;
        p->on_diag = cfg->on_diag;
        p->diag_arg = cfg->diag_arg;
        p->on_cancel = cfg->on_cancel;
        p->cancel_arg = cfg->cancel_arg;
    }
    if (!p->max_frame)
        p->max_frame = CDSH_JSONRPC_DEFAULT_MAX_FRAME;
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->wlock, NULL);
    pthread_cond_init(&p->qcv, NULL);
    /* Non-blocking so the reader and writers can also watch the stop pipe. */
    fcntl(rfd, F_SETFL, fcntl(rfd, F_GETFL) | O_NONBLOCK);
    fcntl(wfd, F_SETFL, fcntl(wfd, F_GETFL) | O_NONBLOCK);
    return p;
nomem:
    cdsh_error_set(err, CDSH_ENOMEM, "NOMEM", "out of memory creating a jsonrpc peer");
fail:
    if (p) {
        for (int i = 0; i < 2; i++) {
            if (p->stop_pipe[i] >= 0)
                close(p->stop_pipe[i]);
            if (p->kick_pipe[i] >= 0)
                close(p->kick_pipe[i]);
        }
        free(p->name);
        free(p);
    }
    return NULL;
}

int cdsh_jsonrpc_start(cdsh_jsonrpc *peer, cdsh_error *err)
{
    if (!peer)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "peer is required");
    pthread_mutex_lock(&peer->lock);
    bool again = peer->started || peer->stopping;
    peer->started = true;
    pthread_mutex_unlock(&peer->lock);
    if (again)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "%s was already started",
                              peer->name);
    peer_ref(peer);
    peer_ref(peer);
    int e = pthread_create(&peer->dispatcher, NULL, dispatcher_main, peer);
    if (e) {
        atomic_fetch_sub(&peer->refs, 2);
        pthread_mutex_lock(&peer->lock);
        peer->started = false;
        pthread_mutex_unlock(&peer->lock);
        return cdsh_error_set(err, CDSH_EIO, "IO", "cannot start a thread: %s", strerror(e));
    }
    e = pthread_create(&peer->reader, NULL, reader_main, peer);
    if (e) {
        /* The dispatcher is stopped by free; mark the read side closed now. */
        atomic_fetch_sub(&peer->refs, 1);
        pthread_mutex_lock(&peer->lock);
        peer->read_closed = true;
        peer->stopping = true;
        pthread_cond_broadcast(&peer->qcv);
        pthread_mutex_unlock(&peer->lock);
        pthread_join(peer->dispatcher, NULL);
        pthread_mutex_lock(&peer->lock);
        peer->started = false;
        pthread_mutex_unlock(&peer->lock);
        return cdsh_error_set(err, CDSH_EIO, "IO", "cannot start a thread: %s", strerror(e));
    }
    return 0;
}

static void join_or_detach(pthread_t t)
{
    if (pthread_equal(t, pthread_self()))
        pthread_detach(t); /* freed from its own callback: it exits by itself */
    else
        pthread_join(t, NULL);
}

void cdsh_jsonrpc_free(cdsh_jsonrpc *peer)
{
    if (!peer)
        return;
    pthread_mutex_lock(&peer->lock);
    bool started = peer->started;
    peer->stopping = true;
    pthread_cond_broadcast(&peer->qcv);
    pthread_mutex_unlock(&peer->lock);
    char c = 1;
    ssize_t n = write(peer->stop_pipe[1], &c, 1);
    (void)n;
    if (started) {
        join_or_detach(peer->reader);
        join_or_detach(peer->dispatcher);
    }
    /* The two threads stop independently: a message the reader queued after
     * the dispatcher had drained the queue would leak. Drop it here. */
    pthread_mutex_lock(&peer->lock);
    peer->read_closed = true;
    cdsh_jsonrpc_request *rest = peer->qhead;
    peer->qhead = peer->qtail = NULL;
    pthread_mutex_unlock(&peer->lock);
    while (rest) {
        cdsh_jsonrpc_request *next = rest->qnext;
        req_unref(rest);
        rest = next;
    }
    fail_all_pending(peer, "was shut down");
    cancel_all_incoming(peer, "peer was shut down");
    pthread_mutex_lock(&peer->wlock);
    peer->wclosed = true;
    if (peer->close_fds) {
        close(peer->rfd);
        if (peer->wfd != peer->rfd)
            close(peer->wfd);
    }
    pthread_mutex_unlock(&peer->wlock);
    peer_unref(peer);
}

bool cdsh_jsonrpc_is_closed(cdsh_jsonrpc *peer)
{
    if (!peer)
        return true;
    pthread_mutex_lock(&peer->lock);
    bool closed = peer->read_closed;
    pthread_mutex_unlock(&peer->lock);
    return closed;
}

void cdsh_jsonrpc_stats_get(cdsh_jsonrpc *peer, cdsh_jsonrpc_stats *out)
{
    if (!peer || !out)
        return;
    pthread_mutex_lock(&peer->lock);
    *out = peer->stats;
    pthread_mutex_unlock(&peer->lock);
}
