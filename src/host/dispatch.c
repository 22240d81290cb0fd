/* dispatch.c — the tool-call pipeline (§7): snapshot and validate args,
 * pre-execute, approval, guards, around-dispatch wrappers, the timeout
 * policy, the body, output validation and render, post-execute, finalize,
 * freeze and publish; nested calls and the batch scheduler. The registry's
 * state (layers, resolver, hooks) is tools.c; this file only reads snapshots. */
#include "host/dispatch.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/schema.h"
#include "host/tools_priv.h"
#include "host/toolresult_priv.h"

struct cdsh__exec_priv {
    atomic_int refs;
    cdsh_tool_exec *origin; /* clones (timed bodies): the referenced original */
    cdsh__tool *tool;       /* resolved at creation (referenced; may be NULL) */
    cdsh_cancel *caller;    /* the caller's own token */
    cdsh__hookset *hooks;   /* referenced */
    pthread_mutex_t lock;   /* deferred, concludes, fail_* */
    json_t *deferred;
    bool concludes;
    bool body_invoked;
    atomic_uint nested_seq;
    char *fail_name, *fail_code, *fail_msg;
    int64_t grace_ms;
    unsigned max_depth;
};

typedef struct exec_box {
    cdsh_tool_exec pub;
    struct cdsh__exec_priv priv;
    char strings[];
} exec_box;

struct cdsh_dispatch_next {
    cdsh_tool_exec *exec;
    size_t pos;
    bool used;
};

/* ---- exec objects ------------------------------------------------------------ */

static void exec_unref(cdsh_tool_exec *exec);

static void exec_ref(const cdsh_tool_exec *exec)
{
    atomic_fetch_add(&exec->priv->refs, 1);
}

static void exec_unref(cdsh_tool_exec *exec)
{
    while (exec && atomic_fetch_sub(&exec->priv->refs, 1) == 1) {
        struct cdsh__exec_priv *p = exec->priv;
        cdsh_tool_exec *parent = (cdsh_tool_exec *)exec->parent;
        if (p->origin)
            exec_unref(p->origin);
        cdsh__tool_unref(p->tool);
        cdsh__hookset_unref(p->hooks);
        json_decref((json_t *)exec->args);
        json_decref(p->deferred);
        free(p->fail_name);
        free(p->fail_code);
        free(p->fail_msg);
        pthread_mutex_destroy(&p->lock);
        cdsh_scope_unref(exec->agent);
        free((exec_box *)exec);
        exec = parent; /* an exec references its parent: release iteratively */
    }
}

static cdsh_tool_exec *exec_alloc(const char *call_id, const char *root_call_id, const char *name)
{
    size_t a = strlen(call_id) + 1, b = strlen(root_call_id) + 1, c = strlen(name) + 1;
    exec_box *box = calloc(1, sizeof *box + a + b + c);
    if (!box)
        return NULL;
    memcpy(box->strings, call_id, a);
    memcpy(box->strings + a, root_call_id, b);
    memcpy(box->strings + a + b, name, c);
    box->pub.call_id = box->strings;
    box->pub.root_call_id = box->strings + a;
    box->pub.name = box->strings + a + b;
    box->pub.priv = &box->priv;
    atomic_init(&box->priv.refs, 1);
    atomic_init(&box->priv.nested_seq, 0);
    pthread_mutex_init(&box->priv.lock, NULL);
    return &box->pub;
}

/* The exec a timed body runs with: same identity, its own token. */
static cdsh_tool_exec *exec_clone(cdsh_tool_exec *exec, cdsh_cancel *tok)
{
    cdsh_tool_exec *c = exec_alloc(exec->call_id, exec->root_call_id, exec->name);
    if (!c)
        return NULL;
    c->agent = cdsh_scope_ref(exec->agent);
    c->parent = exec->parent;
    if (c->parent)
        exec_ref(c->parent);
    c->depth = exec->depth;
    c->cancel = tok;
    c->args = json_incref((json_t *)exec->args);
    c->tools = exec->tools;
    exec_ref(exec);
    c->priv->origin = exec;
    c->priv->caller = tok;
    c->priv->grace_ms = exec->priv->grace_ms;
    c->priv->max_depth = exec->priv->max_depth;
    return c;
}

/* The exec that owns deferred contexts and the conclude flag. */
static cdsh_tool_exec *exec_origin(const cdsh_tool_exec *exec)
{
    return exec->priv->origin ? exec->priv->origin : (cdsh_tool_exec *)exec;
}

int cdsh_dispatch_fail(const cdsh_tool_exec *exec, const char *name, const char *code,
                       const char *fmt, ...)
{
    if (!exec)
        return CDSH_EPERM;
    va_list ap;
    va_start(ap, fmt);
    char *msg = cdsh__vformat_dup(fmt, ap);
    va_end(ap);
    struct cdsh__exec_priv *p = exec->priv;
    pthread_mutex_lock(&p->lock);
    free(p->fail_msg);
    free(p->fail_name);
    free(p->fail_code);
    p->fail_msg = msg;
    p->fail_name = name && code ? strdup(name) : NULL;
    p->fail_code = name && code ? strdup(code) : NULL;
    pthread_mutex_unlock(&p->lock);
    return CDSH_EPERM;
}

int cdsh_dispatch_defer_context(const cdsh_tool_exec *exec, const char *user_message)
{
    if (!exec || !user_message)
        return CDSH_EINVAL;
    struct cdsh__exec_priv *p = exec_origin(exec)->priv;
    int rc = 0;
    pthread_mutex_lock(&p->lock);
    if (!p->deferred)
        p->deferred = json_array();
    json_t *s = json_string(user_message);
    if (!s)
        rc = CDSH_EINVAL; /* not valid UTF-8 */
    else if (!p->deferred || json_array_append_new(p->deferred, s) != 0)
        rc = CDSH_ENOMEM;
    pthread_mutex_unlock(&p->lock);
    return rc;
}

void cdsh_dispatch_conclude_turn(const cdsh_tool_exec *exec)
{
    if (!exec)
        return;
    struct cdsh__exec_priv *p = exec_origin(exec)->priv;
    pthread_mutex_lock(&p->lock);
    p->concludes = true;
    pthread_mutex_unlock(&p->lock);
}

/* ---- result helpers ------------------------------------------------------------ */

static cdsh_toolresult *oom_result(void)
{
    return cdsh_toolresult_new_error(NULL, NULL, "out of memory");
}

static cdsh_toolresult *aborted_before(void)
{
    return cdsh_toolresult_new_error("AbortError", CDSH_TOOL_ABORTED_BEFORE_DISPATCH,
                                     "tool call aborted before dispatch");
}

static cdsh_toolresult *aborted_after(void)
{
    return cdsh_toolresult_new_error("AbortError", CDSH_TOOL_ABORTED, "tool call aborted");
}

/* A private, mutable copy when res is shared or frozen; res itself otherwise.
 * Consumes the caller's reference to res. */
static cdsh_toolresult *result_own(cdsh_toolresult *res)
{
    if (!res->priv->frozen && atomic_load(&res->priv->refs) == 1)
        return res;
    cdsh_toolresult *c = cdsh__toolresult_alloc();
    if (c) {
        c->is_error = res->is_error;
        c->concludes_turn = res->concludes_turn;
        c->value = json_incref(res->value);
        c->content = json_incref(res->content);
        c->meta = json_incref(res->meta);
        c->additional_contexts = json_incref(res->additional_contexts);
        c->error_message = res->error_message ? strdup(res->error_message) : NULL;
        c->error_name = res->error_name ? strdup(res->error_name) : NULL;
        c->error_code = res->error_code ? strdup(res->error_code) : NULL;
        c->priv->canonical_for = res->priv->canonical_for;
    }
    cdsh_toolresult_free(res);
    return c ? c : oom_result();
}

/* Replaces res by `next`, keeping res's additional contexts (cancellation
 * and denial results keep what the body deferred). */
static cdsh_toolresult *result_replace_keep_contexts(cdsh_toolresult *res, cdsh_toolresult *next)
{
    if (!next) {
        cdsh_toolresult_free(res);
        return oom_result();
    }
    if (res && res->additional_contexts && json_array_size(res->additional_contexts))
        next->additional_contexts = json_incref(res->additional_contexts);
    cdsh_toolresult_free(res);
    return next;
}

static json_t *default_render(const json_t *value)
{
    if (json_is_string(value))
        return cdsh_toolresult_text_content(json_string_value(value));
    char *text = cdsh_json_dump_compact_dup(value);
    json_t *content = text ? cdsh_toolresult_text_content(text) : NULL;
    free(text);
    return content;
}

static cdsh_toolresult *invalid_output(const char *tool, const char *detail)
{
    return cdsh_toolresult_new_errorf("ToolOutputError", CDSH_TOOL_INVALID_OUTPUT,
                                      "tool \"%s\" returned invalid output: %s", tool, detail);
}

/* Validates, renders and projects one successful value (stolen). */
static cdsh_toolresult *create_success(const cdsh_tool_exec *exec, const cdsh__tool *tool,
                                       json_t *value)
{
    if (!value)
        value = json_null();
    cdsh_error err;
    cdsh_error_clear(&err);
    if (cdsh_json_check_lossless(value, "value", &err) != 0) {
        json_decref(value);
        return invalid_output(tool->name, err.message);
    }
    json_t *violations = NULL;
    if (cdsh_schema_validate(tool->output, value, "value", &violations) != 0) {
        char *joined = violations ? cdsh_schema_violations_join_dup(violations) : NULL;
        cdsh_toolresult *res = invalid_output(tool->name, joined ? joined : "invalid value");
        free(joined);
        json_decref(violations);
        json_decref(value);
        return res;
    }
    json_t *content;
    if (tool->render) {
        content = tool->render(tool->ud, exec->args, value, &err);
        if (!content || !json_is_array(content) ||
            cdsh_json_check_lossless(content, "content", &err) != 0) {
            cdsh_toolresult *res = cdsh_toolresult_new_errorf(
                "ToolOutputError", CDSH_TOOL_INVALID_OUTPUT, "tool \"%s\" output.render failed: %s",
                tool->name,
                err.message[0] ? err.message : "render must return an array of content blocks");
            json_decref(content);
            json_decref(value);
            return res;
        }
    } else {
        content = default_render(value);
    }
    json_t *meta = NULL;
    if (!exec->parent && tool->presentation_meta) {
        meta = tool->presentation_meta(tool->ud, exec->args, value);
        if (meta && cdsh_json_check_lossless(meta, "meta", &err) != 0) {
            cdsh_toolresult *res = cdsh_toolresult_new_errorf(
                "ToolOutputError", CDSH_TOOL_INVALID_OUTPUT,
                "tool \"%s\" output.presentationMeta failed: %s", tool->name, err.message);
            json_decref(meta);
            json_decref(content);
            json_decref(value);
            return res;
        }
    }
    cdsh_toolresult *res = cdsh__toolresult_alloc();
    if (!res || !content) {
        json_decref(meta);
        json_decref(content);
        json_decref(value);
        cdsh_toolresult_free(res);
        return oom_result();
    }
    res->value = value;
    res->content = content;
    res->meta = meta;
    struct cdsh__exec_priv *op = exec_origin(exec)->priv;
    pthread_mutex_lock(&op->lock);
    res->concludes_turn = op->concludes;
    pthread_mutex_unlock(&op->lock);
    res->priv->canonical_for = exec_origin(exec);
    return res;
}

/* The failure a body described with cdsh_dispatch_fail (or a generic one). */
static cdsh_toolresult *body_failure(const cdsh_tool_exec *exec, int rc)
{
    struct cdsh__exec_priv *p = exec->priv;
    pthread_mutex_lock(&p->lock);
    cdsh_toolresult *res;
    if (p->fail_msg)
        res = cdsh_toolresult_new_error(p->fail_name, p->fail_code, p->fail_msg);
    else
        res = cdsh_toolresult_new_errorf(NULL, NULL, "tool failed: %s",
                                         cdsh_strerror(rc < 0 ? rc : CDSH_EIO));
    free(p->fail_msg);
    free(p->fail_name);
    free(p->fail_code);
    p->fail_msg = p->fail_name = p->fail_code = NULL;
    pthread_mutex_unlock(&p->lock);
    return res ? res : oom_result();
}

/* ---- cancellation plumbing ----------------------------------------------------- */

typedef struct forward {
    cdsh_cancel *src, *dst;
} forward;

static void forward_fire(void *arg)
{
    forward *f = arg;
    cdsh_cancel_fire(f->dst, cdsh_cancel_reason(f->src));
}

static void deadline_after(struct timespec *ts, int64_t ms)
{
    cdsh_clock_deadline(CLOCK_MONOTONIC, ms, ts);
}

/* ---- the timeout policy: a timed body on its own thread ----------------------- */

typedef struct timed_job {
    atomic_int refs;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done, abandoned;
    int rc;
    json_t *value;
    cdsh_toolresult *failure;
    cdsh_cancel *tok;
    cdsh_tool_exec *clone;
    cdsh__tool *tool;
    cdsh_tools *tools;
    forward fwd;
} timed_job;

static void job_unref(timed_job *job)
{
    if (atomic_fetch_sub(&job->refs, 1) != 1)
        return;
    json_decref(job->value);
    cdsh_toolresult_free(job->failure);
    exec_unref(job->clone);
    cdsh_cancel_free(job->tok);
    cdsh__tool_unref(job->tool);
    pthread_mutex_destroy(&job->lock);
    pthread_cond_destroy(&job->cond);
    cdsh_tools *tools = job->tools;
    free(job);
    cdsh__tools_release(tools);
}

static void *job_main(void *arg)
{
    timed_job *job = arg;
    json_t *value = NULL;
    int rc = job->tool->execute(job->tool->ud, job->clone, &value);
    cdsh_toolresult *failure = rc < 0 ? body_failure(job->clone, rc) : NULL;
    if (rc < 0) {
        json_decref(value);
        value = NULL;
    }
    pthread_mutex_lock(&job->lock);
    if (job->abandoned) {
        /* Late result of a timed-out body: dropped, as documented. */
        json_decref(value);
        cdsh_toolresult_free(failure);
    } else {
        job->rc = rc;
        job->value = value;
        job->failure = failure;
    }
    job->done = true;
    pthread_cond_broadcast(&job->cond);
    pthread_mutex_unlock(&job->lock);
    job_unref(job);
    return NULL;
}

/* Runs the body under the timeout policy. Returns a result, or NULL with
 * *value set for a success that still needs validation. */
static cdsh_toolresult *run_timed(cdsh_tool_exec *exec, cdsh__tool *tool, json_t **value, int *rc)
{
    timed_job *job = calloc(1, sizeof *job);
    if (!job)
        return oom_result();
    atomic_init(&job->refs, 2);
    pthread_mutex_init(&job->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&job->cond, &attr);
    pthread_condattr_destroy(&attr);
    job->tok = cdsh_cancel_new(NULL);
    job->clone = job->tok ? exec_clone(exec, job->tok) : NULL;
    job->tools = exec->tools;
    cdsh__tools_hold(exec->tools);
    cdsh__tool_ref(tool);
    job->tool = tool;
    if (!job->clone) {
        atomic_store(&job->refs, 1);
        job_unref(job);
        return oom_result();
    }
    job->fwd = (forward){exec->cancel, job->tok};
    uint64_t sub = exec->cancel ? cdsh_cancel_subscribe(exec->cancel, forward_fire, &job->fwd) : 0;

    pthread_t th;
    pthread_attr_t tattr;
    pthread_attr_init(&tattr);
    pthread_attr_setdetachstate(&tattr, PTHREAD_CREATE_DETACHED);
    int started = pthread_create(&th, &tattr, job_main, job);
    pthread_attr_destroy(&tattr);
    if (started != 0) {
        if (sub)
            cdsh_cancel_unsubscribe(exec->cancel, sub);
        atomic_store(&job->refs, 1);
        job_unref(job);
        return cdsh_toolresult_new_errorf(NULL, NULL, "tool \"%s\" could not start: %s", tool->name,
                                          strerror(started));
    }

    struct timespec deadline;
    deadline_after(&deadline, tool->timeout_ms);
    bool timed_out = false;
    pthread_mutex_lock(&job->lock);
    while (!job->done)
        if (pthread_cond_timedwait(&job->cond, &job->lock, &deadline) == ETIMEDOUT)
            break;
    if (!job->done) {
        timed_out = true;
        pthread_mutex_unlock(&job->lock);
        cdsh_cancel_fire(job->tok, "timeout");
        deadline_after(&deadline, exec->priv->grace_ms);
        pthread_mutex_lock(&job->lock);
        while (!job->done)
            if (pthread_cond_timedwait(&job->cond, &job->lock, &deadline) == ETIMEDOUT)
                break;
        job->abandoned = true;
    }
    cdsh_toolresult *res = NULL;
    if (!timed_out) {
        *rc = job->rc;
        *value = job->value;
        res = job->failure;
        job->value = NULL;
        job->failure = NULL;
    }
    pthread_mutex_unlock(&job->lock);
    if (sub)
        cdsh_cancel_unsubscribe(exec->cancel, sub);
    job_unref(job);
    if (timed_out)
        return cdsh_toolresult_new_errorf("ToolTimeoutError", CDSH_TOOL_TIMEOUT,
                                          "tool call timed out after %lldms",
                                          (long long)tool->timeout_ms);
    return res;
}

/* ---- stage 8: the body ---------------------------------------------------------- */

static cdsh_toolresult *dispatch_body(cdsh_tool_exec *exec)
{
    if (cdsh_cancel_is_fired(exec->cancel))
        return aborted_before();
    /* Re-resolve: a tool restricted or disposed since the call started is gone. */
    cdsh__tool *tool = cdsh__tools_resolve(exec->tools, exec->agent, exec->name);
    if (!tool)
        return cdsh_toolresult_new_errorf("ToolNotFoundError", CDSH_TOOL_UNKNOWN_TOOL,
                                          "unknown tool \"%s\"", exec->name);
    exec->priv->body_invoked = true;
    json_t *value = NULL;
    int rc = 0;
    cdsh_toolresult *res = NULL;
    if (tool->timeout_ms > 0) {
        res = run_timed(exec, tool, &value, &rc);
    } else {
        rc = tool->execute(tool->ud, exec, &value);
        if (rc < 0) {
            json_decref(value);
            value = NULL;
            res = body_failure(exec, rc);
        }
    }
    if (!res) {
        res = create_success(exec, tool, value);
        if (!res->is_error && cdsh_cancel_is_fired(exec->cancel))
            res = result_replace_keep_contexts(res, aborted_after());
    }
    cdsh__tool_unref(tool);
    return res;
}

/* ---- stage 7: around-dispatch wrappers ------------------------------------------ */

static cdsh_toolresult *around_from(cdsh_tool_exec *exec, size_t pos)
{
    cdsh__hookset *hs = exec->priv->hooks;
    for (size_t i = pos; i < hs->n[CDSH__HOOK_AROUND]; i++) {
        cdsh__hook *h = hs->list[CDSH__HOOK_AROUND][i];
        if (!h->fn.around || (h->scope && !cdsh_scope_contains(h->scope, exec->agent)))
            continue;
        cdsh_dispatch_next next = {exec, i + 1, false};
        cdsh_toolresult *res = h->fn.around(h->ud, exec, &next);
        if (!res) {
            /* Like a throwing wrapper in DSH: final, skips post-execute. */
            res = cdsh_toolresult_new_error(NULL, NULL, "around-dispatch wrapper failed");
            if (res)
                res->priv->final = true;
        }
        /* The result is heap-owned; `next` only lived for the wrapper call. */
        // cppcheck-suppress returnDanglingLifetime
        return res;
    }
    return dispatch_body(exec);
}

cdsh_toolresult *cdsh_dispatch_next_run(cdsh_dispatch_next *next, cdsh_cancel *cancel)
{
    if (!next)
        return NULL;
    if (next->used)
        return cdsh_toolresult_new_error(NULL, NULL, "around-dispatch wrapper called next() twice");
    next->used = true;
    cdsh_tool_exec *exec = next->exec;
    if (!cancel || cancel == exec->cancel)
        return around_from(exec, next->pos);
    /* Fuse: the body sees a token that fires with the wrapper's or the
     * current one. It is a child of the wrapper's token, which outlives it. */
    cdsh_cancel *fused = cdsh_cancel_new(cancel);
    if (!fused)
        return oom_result();
    cdsh_cancel *outer = exec->cancel;
    forward fwd = {outer, fused};
    uint64_t sub = outer ? cdsh_cancel_subscribe(outer, forward_fire, &fwd) : 0;
    exec->cancel = fused;
    cdsh_toolresult *res = around_from(exec, next->pos);
    exec->cancel = outer;
    if (sub)
        cdsh_cancel_unsubscribe(outer, sub);
    cdsh_cancel_free(fused);
    return res;
}

/* ---- stages 3-6: policy -------------------------------------------------------- */

static bool hook_applies(const cdsh__hook *h, const cdsh_tool_exec *exec)
{
    return !h->scope || cdsh_scope_contains(h->scope, exec->agent);
}

static char *dup_reason(const char *fmt, const char *name)
{
    size_t n = strlen(fmt) + strlen(name) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, fmt, name);
    return s;
}

/* Guards: global first, then the chain farthest-first; first reason wins. */
static char *guard_reason(const cdsh_tool_exec *exec)
{
    cdsh__hookset *hs = exec->priv->hooks;
    size_t n = hs->n[CDSH__HOOK_GUARD];
    if (!n)
        return NULL;
    const cdsh_scope *chain[64] = {0};
    size_t depth = 0;
    for (const cdsh_scope *s = exec->agent; s && depth < 64; s = cdsh_scope_parent(s))
        chain[depth++] = s;
    for (size_t level = 0; level <= depth; level++) {
        const cdsh_scope *want = level == 0 ? NULL : chain[depth - level];
        for (size_t i = 0; i < n; i++) {
            cdsh__hook *h = hs->list[CDSH__HOOK_GUARD][i];
            if (h->scope != want || !h->fn.guard)
                continue;
            char *reason = h->fn.guard(h->ud, exec);
            if (reason)
                return reason;
        }
    }
    return NULL;
}

typedef enum { NEXT_DISPATCH, NEXT_POST, NEXT_FINAL } next_stage;

/* Pre-execute, approval and guards. Returns the stage to continue with and,
 * for NEXT_POST, the denial or cancellation result in *out. */
static next_stage run_policy(cdsh_tool_exec *exec, const cdsh__snapshot *snap,
                             cdsh_toolresult **out)
{
    cdsh__hookset *hs = exec->priv->hooks;
    cdsh_tools_verdict verdict = CDSH_TOOLS_ALLOW;
    char *reason = NULL;
    for (size_t i = 0; i < hs->n[CDSH__HOOK_PRE] && verdict == CDSH_TOOLS_ALLOW; i++) {
        cdsh__hook *h = hs->list[CDSH__HOOK_PRE][i];
        if (!h->fn.pre || !hook_applies(h, exec))
            continue;
        char *r = NULL;
        verdict = h->fn.pre(h->ud, exec, &r);
        if (verdict == CDSH_TOOLS_ALLOW)
            free(r);
        else
            reason = r;
    }
    bool approval_cancelled = false;
    if (verdict == CDSH_TOOLS_ASK) {
        /* A refusal stays a refusal even if its message cannot be allocated. */
        bool denied = true;
        char *denial = NULL;
        if (!snap->has_approval) {
            denial = reason ? reason
                            : dup_reason("tool \"%s\" requires approval (not yet supported)",
                                         exec->name);
            reason = NULL;
        } else if (!exec->agent) {
            denial = dup_reason("tool \"%s\" requires approval, but the call has no agent to "
                                "route it through",
                                exec->name);
        } else {
            switch (snap->approval.request(snap->approval.ud, exec, reason)) {
            case CDSH_APPROVAL_ALLOWED_ONCE: denied = false; break;
            case CDSH_APPROVAL_REJECTED:
                denial = dup_reason("the user rejected tool \"%s\"", exec->name);
                break;
            case CDSH_APPROVAL_CANCELLED:
                denial = dup_reason("approval for tool \"%s\" was cancelled", exec->name);
                approval_cancelled = true;
                break;
            default:
                denial = dup_reason("tool \"%s\" requires approval, but no approval channel is "
                                    "available",
                                    exec->name);
                break;
            }
        }
        free(reason);
        reason = denial;
        verdict = denied ? CDSH_TOOLS_DENY : CDSH_TOOLS_ALLOW;
    }
    if (approval_cancelled && cdsh_cancel_is_fired(exec->priv->caller)) {
        free(reason);
        *out = aborted_before();
        return NEXT_POST;
    }
    if (verdict == CDSH_TOOLS_ALLOW)
        reason = guard_reason(exec);
    else if (!reason)
        reason = strdup("tool call denied by policy");
    if (verdict != CDSH_TOOLS_ALLOW || reason) {
        *out = cdsh_toolresult_new_error(NULL, NULL, reason ? reason : "out of memory");
        free(reason);
        return NEXT_POST;
    }
    if (cdsh_cancel_is_fired(exec->priv->caller)) {
        *out = aborted_before();
        return NEXT_POST;
    }
    return NEXT_DISPATCH;
}

/* ---- stages 8-12: normalisation, post-execute, finalize ------------------------ */

/* Makes a wrapper-authored result canonical: errors are copied, successes
 * validated and rendered through the tool's output contract. */
static cdsh_toolresult *normalize(cdsh_tool_exec *exec, cdsh_toolresult *res)
{
    if (res->priv->canonical_for == exec)
        return res;
    if (res->is_error) {
        res = result_own(res);
        res->priv->canonical_for = exec;
        return res;
    }
    cdsh__tool *tool = cdsh__tools_resolve(exec->tools, exec->agent, exec->name);
    cdsh_toolresult *next;
    if (!tool)
        next = cdsh_toolresult_new_errorf("ToolNotFoundError", CDSH_TOOL_UNKNOWN_TOOL,
                                          "unknown tool \"%s\"", exec->name);
    else
        next = create_success(exec, tool, json_incref(res->value));
    cdsh__tool_unref(tool);
    if (next && res->additional_contexts)
        next->additional_contexts = json_incref(res->additional_contexts);
    cdsh_toolresult_free(res);
    return next ? next : oom_result();
}

/* Stage 9: contexts the body deferred go before the result's own. */
static cdsh_toolresult *attach_deferred(cdsh_tool_exec *exec, cdsh_toolresult *res)
{
    struct cdsh__exec_priv *p = exec->priv;
    pthread_mutex_lock(&p->lock);
    json_t *deferred = p->deferred && json_array_size(p->deferred) ? json_copy(p->deferred) : NULL;
    pthread_mutex_unlock(&p->lock);
    if (!deferred)
        return res;
    res = result_own(res);
    if (res->additional_contexts)
        json_array_extend(deferred, res->additional_contexts);
    json_decref(res->additional_contexts);
    res->additional_contexts = deferred;
    return res;
}

static cdsh_toolresult *cancellation(cdsh_tool_exec *exec, cdsh_toolresult *res)
{
    return result_replace_keep_contexts(res, exec->priv->body_invoked ? aborted_after()
                                                                      : aborted_before());
}

static cdsh_toolresult *run_post(cdsh_tool_exec *exec, cdsh_toolresult *res)
{
    cdsh__hookset *hs = exec->priv->hooks;
    for (size_t i = 0; i < hs->n[CDSH__HOOK_POST]; i++) {
        cdsh__hook *h = hs->list[CDSH__HOOK_POST][i];
        if (!h->fn.post || !hook_applies(h, exec))
            continue;
        cdsh_tools_post d = {0};
        h->fn.post(h->ud, exec, res, &d);
        if (d.block) {
            cdsh_toolresult probe = {.content = d.feedback};
            char *text = d.feedback ? cdsh_toolresult_text_dup(&probe) : NULL;
            const char *msg = text && *text ? text : "tool result blocked by post-execute policy";
            cdsh_toolresult *blocked = cdsh_toolresult_new_error(NULL, NULL, msg);
            free(text);
            if (blocked && d.feedback && json_is_array(d.feedback)) {
                json_decref(blocked->content);
                blocked->content = json_incref(d.feedback);
            }
            json_decref(d.feedback);
            json_decref(d.content);
            json_decref(d.value);
            cdsh_toolresult_free(res);
            return blocked ? blocked : oom_result();
        }
        json_decref(d.feedback);
        if (d.content && d.value) {
            json_decref(d.content);
            json_decref(d.value);
            return result_replace_keep_contexts(
                res, cdsh_toolresult_new_error(NULL, NULL,
                                               "tools/post-execute accept decision cannot replace "
                                               "both value and content"));
        }
        if (d.value) {
            if (res->is_error) {
                json_decref(d.value);
                return result_replace_keep_contexts(
                    res, cdsh_toolresult_new_error(NULL, NULL,
                                                   "tools/post-execute cannot replace the value of "
                                                   "a failed result"));
            }
            cdsh__tool *tool = cdsh__tools_resolve(exec->tools, exec->agent, exec->name);
            cdsh_toolresult *next =
                tool ? create_success(exec, tool, d.value)
                     : cdsh_toolresult_new_errorf("ToolNotFoundError", CDSH_TOOL_UNKNOWN_TOOL,
                                                  "unknown tool \"%s\"", exec->name);
            if (!tool)
                json_decref(d.value);
            cdsh__tool_unref(tool);
            res = result_replace_keep_contexts(res, next);
            if (res->is_error)
                return res;
            continue;
        }
        if (d.content) {
            if (!json_is_array(d.content) || cdsh_json_check_lossless(d.content, "content", NULL)) {
                json_decref(d.content);
                return result_replace_keep_contexts(
                    res, cdsh_toolresult_new_error(NULL, NULL,
                                                   "tools/post-execute content must be an array "
                                                   "of content blocks"));
            }
            res = result_own(res);
            json_decref(res->content);
            res->content = d.content;
        }
    }
    return res;
}

static void publish(cdsh_tool_exec *exec, const cdsh_toolresult *res)
{
    if (!cdsh__tools_has_listeners(exec->tools))
        return;
    json_t *payload = cdsh_toolresult_to_json(res);
    if (!payload)
        return;
    json_object_set_new(payload, "callId", json_string(exec->call_id));
    json_object_set_new(payload, "rootCallId", json_string(exec->root_call_id));
    json_object_set_new(payload, "name", json_string(exec->name));
    json_object_set_new(payload, "agent",
                        exec->agent ? json_string(cdsh_scope_id(exec->agent)) : json_null());
    json_object_set_new(payload, "parent",
                        exec->parent ? json_string(exec->parent->call_id) : json_null());
    json_object_set_new(payload, "depth", json_integer(exec->depth));
    cdsh__tools_emit(exec->tools, "tools/result", exec->agent, true, payload);
    json_decref(payload);
}

/* Stage 12-14: finalize content, freeze, publish. */
static cdsh_toolresult *finish(cdsh_tool_exec *exec, cdsh_toolresult *res)
{
    if (!res)
        res = oom_result();
    if (!res)
        return NULL;
    res = result_own(res);
    cdsh__tool *tool = exec->priv->tool; /* captured when the call started */
    if (tool && tool->finalize_content) {
        json_t *content = tool->finalize_content(tool->ud, exec, res);
        if (content && json_is_array(content) &&
            cdsh_json_check_lossless(content, "content", NULL) == 0) {
            json_decref(res->content);
            res->content = content;
        } else if (content) {
            json_decref(content);
            res = result_replace_keep_contexts(
                res, cdsh_toolresult_new_errorf(NULL, NULL,
                                                "tool \"%s\" finalizeContent must return an array "
                                                "of content blocks",
                                                exec->name));
        }
    }
    if (!res)
        return NULL;
    res->priv->canonical_for = exec;
    res->priv->frozen = true;
    publish(exec, res);
    return res;
}

/* ---- the pipeline ------------------------------------------------------------------- */

static cdsh_toolresult *pipeline(cdsh_tools *t, const cdsh_dispatch_input *in,
                                 const cdsh_tool_exec *parent)
{
    cdsh__snapshot snap;
    if (cdsh__tools_snapshot(t, in->agent, in->name, &snap) != 0)
        return aborted_before(); /* closed registry: nothing to publish to */
    cdsh_tool_exec *exec =
        exec_alloc(in->call_id, in->root_call_id ? in->root_call_id : in->call_id, in->name);
    if (!exec) {
        cdsh__snapshot_release(&snap);
        return NULL;
    }
    struct cdsh__exec_priv *p = exec->priv;
    exec->agent = cdsh_scope_ref(in->agent);
    exec->parent = parent;
    if (parent)
        exec_ref(parent);
    exec->depth = parent ? parent->depth + 1 : 0;
    exec->cancel = in->cancel;
    exec->tools = t;
    p->caller = in->cancel;
    p->tool = snap.tool; /* references move into the exec */
    p->hooks = snap.hooks;
    p->grace_ms = snap.grace_ms;
    p->max_depth = snap.max_depth;
    snap.tool = NULL;
    snap.hooks = NULL;

    cdsh_toolresult *res = NULL;
    if (exec->depth > snap.max_depth) {
        res = cdsh_toolresult_new_errorf("ToolDepthError", CDSH_TOOL_DEPTH_EXCEEDED,
                                         "nested tool call depth limit (%u) exceeded",
                                         snap.max_depth);
        goto final;
    }
    /* Stage 1: lossless snapshot, then validation against the parameters. */
    json_t *empty = in->args ? NULL : json_object();
    cdsh_error e;
    cdsh_error_clear(&e);
    json_t *args = cdsh_json_snapshot_dup(in->args ? in->args : empty, "arguments", &e);
    json_decref(empty);
    if (!args) {
        res = cdsh_toolresult_new_errorf("ToolArgsError", CDSH_TOOL_INVALID_ARGS,
                                         "invalid arguments: %s",
                                         e.message[0] ? e.message : "out of memory");
        goto final;
    }
    exec->args = args;
    if (!json_is_object(args)) {
        res = cdsh_toolresult_new_error("ToolArgsError", CDSH_TOOL_INVALID_ARGS,
                                        "invalid arguments: arguments must be an object");
        goto final;
    }
    json_t *violations = NULL;
    if (p->tool && cdsh_schema_validate(p->tool->params, args, "arguments", &violations) != 0) {
        char *joined = violations ? cdsh_schema_violations_join_dup(violations) : NULL;
        res = cdsh_toolresult_new_errorf("ToolArgsError", CDSH_TOOL_INVALID_ARGS,
                                         "invalid arguments: %s", joined ? joined : "invalid");
        free(joined);
        json_decref(violations);
        goto final;
    }
    /* Stage 2. */
    if (cdsh_cancel_is_fired(p->caller)) {
        res = aborted_before();
        goto final;
    }
    /* Stages 3-6. */
    if (run_policy(exec, &snap, &res) == NEXT_DISPATCH) {
        /* Stages 7-8. */
        res = around_from(exec, 0);
        if (!res)
            res = oom_result();
        if (!res || res->priv->final)
            goto final;
        res = normalize(exec, res);
        /* Stage 9. */
        res = attach_deferred(exec, res);
        if (!res->is_error && cdsh_cancel_is_fired(p->caller))
            res = cancellation(exec, res);
    }
    if (!res)
        res = oom_result();
    /* Stages 10-11. */
    if (res)
        res = run_post(exec, res);
    if (res && !res->is_error && cdsh_cancel_is_fired(p->caller))
        res = cancellation(exec, res);
final:
    res = finish(exec, res);
    cdsh__snapshot_release(&snap);
    exec_unref(exec);
    return res;
}

cdsh_toolresult *cdsh_dispatch_execute(cdsh_tools *tools, const cdsh_dispatch_input *input)
{
    if (!tools || !input || !input->call_id || !*input->call_id || !input->name)
        return NULL;
    return pipeline(tools, input, NULL);
}

cdsh_toolresult *cdsh_dispatch_nested(const cdsh_tool_exec *exec, const char *call_id,
                                      const char *name, const json_t *args)
{
    if (!exec || !name)
        return NULL;
    char derived[256];
    if (!call_id || !*call_id) {
        unsigned n = atomic_fetch_add(&exec_origin(exec)->priv->nested_seq, 1) + 1;
        snprintf(derived, sizeof derived, "%.200s:%u", exec->call_id, n);
        call_id = derived;
    }
    cdsh_dispatch_input in = {
        .call_id = call_id,
        .root_call_id = exec->root_call_id,
        .name = name,
        .args = args,
        .agent = exec->agent,
        .cancel = exec->cancel,
    };
    return pipeline(exec->tools, &in, exec);
}

/* ---- the batch scheduler --------------------------------------------------------------- */

typedef struct batch {
    cdsh_tools *tools;
    const cdsh_dispatch_input *inputs;
    cdsh_toolresult **results;
    atomic_size_t next;
    size_t end;
} batch;

static void *batch_worker(void *arg)
{
    batch *b = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&b->next, 1);
        if (i >= b->end)
            break;
        b->results[i] = cdsh_dispatch_execute(b->tools, &b->inputs[i]);
    }
    return NULL;
}

static bool input_parallel(cdsh_tools *tools, const cdsh_dispatch_input *in)
{
    return in->call_id && in->name && cdsh_tools_is_parallel(tools, in->agent, in->name, in->args);
}

int cdsh_dispatch_batch(cdsh_tools *tools, const cdsh_dispatch_input *inputs, size_t n,
                        size_t max_parallel, cdsh_toolresult **results)
{
    if (!tools || (n && (!inputs || !results)))
        return CDSH_EINVAL;
    if (!max_parallel)
        max_parallel = 10;
    for (size_t i = 0; i < n; i++)
        results[i] = NULL;
    int rc = 0;
    size_t i = 0;
    while (i < n) {
        if (!input_parallel(tools, &inputs[i])) {
            results[i] = cdsh_dispatch_execute(tools, &inputs[i]);
            if (!results[i])
                rc = inputs[i].call_id && inputs[i].name ? CDSH_ENOMEM : CDSH_EINVAL;
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < n && input_parallel(tools, &inputs[j]))
            j++;
        batch b = {tools, inputs, results, i, j};
        size_t workers = j - i < max_parallel ? j - i : max_parallel;
        pthread_t th[64];
        size_t started = 0;
        /* This thread is one of the workers; at most 63 helpers are started. */
        for (size_t w = 1; w < workers && started < 63; w++)
            if (pthread_create(&th[started], NULL, batch_worker, &b) == 0)
                started++;
        batch_worker(&b);
        for (size_t w = 0; w < started; w++)
            pthread_join(th[w], NULL);
        for (size_t k = i; k < j; k++)
            if (!results[k])
                rc = CDSH_ENOMEM;
        i = j;
    }
    return rc;
}
