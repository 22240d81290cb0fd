/* jobs.c — the background job service: records, ids per kind, limits per
 * owner and per host, one thread per running job, the output ring, owner
 * authorization, disposal per starting context. The model-facing tools and
 * the `/jobs` channel are jobs_tools.c; this file never formats for a model.
 *
 * One mutex guards the service and every record; one condition variable
 * (CLOCK_MONOTONIC) is broadcast on every change a waiter may care about
 * (a job ended, a thread finished, a caller's token fired). Job threads are
 * detached: a record is freed only after its thread marked `thread_done`,
 * the last thing the thread does under the lock. */
#include "host/jobs.h"

#include <pthread.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "host/host.h"

#define DEF_PER_OWNER 10
#define DEF_RUNNING 32
#define DEF_OUTPUT (64 * 1024)
#define DEF_KEEP 64

typedef struct source source;

struct cdsh_job {
    cdsh_jobs *svc;
    char *id, *kind, *label, *owner, *plugin;
    source *src;
    cdsh_job_status status;
    char *detail;
    cdsh_cancel *cancel;
    /* output ring: `len` bytes ending at `head` (exclusive) in buf[cap] */
    char *buf;
    size_t cap, len, head;
    uint64_t written; /* bytes ever written */
    uint64_t cursor;  /* absolute offset the owner's reads consumed */
    double done, total;
    char *message;
    int64_t started_ms, ended_ms;
    bool ended, thread_done;
    bool reported; /* the owner has learnt how it ended (a read, its own kill, a notice) */
    cdsh_job_run_fn run;
    void *ud;
    void (*free_ud)(void *);
};

/* What one context started: disposing it kills and removes its jobs. */
struct source {
    cdsh_jobs *svc;
    const void *ctx;
    size_t users; /* jobs pointing at it */
    bool disposed;
};

typedef struct kind_counter {
    char *kind;
    unsigned long next;
} kind_counter;

struct cdsh_jobs {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    cdsh_events *bus;
    cdsh_jobs_limits limits;
    cdsh_job **v; /* oldest first */
    size_t n, cap;
    source **srcs;
    size_t nsrc;
    kind_counter *kinds;
    size_t nkinds;
    unsigned surfaces;
    unsigned running;
    bool closing;
};

const char *cdsh_job_status_name(cdsh_job_status s)
{
    static const char *const names[] = {"running", "stopping", "completed", "killed", "failed"};
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "unknown";
}

static void fill_limits(cdsh_jobs_limits *l)
{
    if (!l->max_per_owner)
        l->max_per_owner = DEF_PER_OWNER;
    if (!l->max_running)
        l->max_running = DEF_RUNNING;
    if (!l->output_limit)
        l->output_limit = DEF_OUTPUT;
    if (!l->keep_ended)
        l->keep_ended = DEF_KEEP;
}

cdsh_jobs *cdsh_jobs_new(cdsh_events *bus)
{
    cdsh_jobs *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&j->lock, NULL);
    j->bus = bus;
    fill_limits(&j->limits);
    return j;
}

static void job_free(cdsh_job *job)
{
    free(job->id);
    free(job->kind);
    free(job->label);
    free(job->owner);
    free(job->plugin);
    free(job->detail);
    free(job->message);
    free(job->buf);
    cdsh_cancel_free(job->cancel);
    free(job);
}

/* Under the lock. Drops `src` when nobody refers to it any more. */
static void source_release(cdsh_jobs *j, source *src)
{
    if (!src || --src->users || !src->disposed)
        return;
    free(src);
    (void)j;
}

/* Under the lock: removes job i (its thread is done). */
static void remove_at(cdsh_jobs *j, size_t i)
{
    cdsh_job *job = j->v[i];
    memmove(j->v + i, j->v + i + 1, (j->n - i - 1) * sizeof *j->v);
    j->n--;
    source_release(j, job->src);
    job_free(job);
}

/* Under the lock: keeps at most keep_ended ended jobs (oldest go first). */
static void prune(cdsh_jobs *j)
{
    size_t ended = 0;
    for (size_t i = 0; i < j->n; i++)
        ended += j->v[i]->thread_done;
    for (size_t i = 0; i < j->n && ended > j->limits.keep_ended;) {
        if (j->v[i]->thread_done) {
            remove_at(j, i);
            ended--;
        } else {
            i++;
        }
    }
}

/* Fires the tokens of every job `match` selects, then waits for their
 * threads and removes them. Tokens fire outside the lock (a producer's
 * subscribers may take their own locks). */
static void kill_and_reap(cdsh_jobs *j, bool (*match)(const cdsh_job *, const void *),
                          const void *arg)
{
    pthread_mutex_lock(&j->lock);
    size_t k = 0;
    cdsh_cancel **toks = calloc(j->n + 1, sizeof *toks);
    for (size_t i = 0; i < j->n; i++) {
        cdsh_job *job = j->v[i];
        if (!match(job, arg) || job->ended)
            continue;
        if (job->status == CDSH_JOB_RUNNING)
            job->status = CDSH_JOB_STOPPING;
        if (toks)
            toks[k++] = job->cancel; /* freed only with the record, which waits for us */
    }
    pthread_mutex_unlock(&j->lock);
    for (size_t i = 0; i < k; i++)
        cdsh_cancel_fire(toks[i], "disposed");
    free(toks);
    pthread_mutex_lock(&j->lock);
    for (;;) {
        bool busy = false;
        for (size_t i = 0; i < j->n; i++)
            if (match(j->v[i], arg) && !j->v[i]->thread_done) {
                busy = true;
                if (!toks) /* no memory for the list above: fire here, rarely */
                    cdsh_cancel_fire(j->v[i]->cancel, "disposed");
            }
        if (!busy)
            break;
        pthread_cond_wait(&j->cond, &j->lock);
    }
    for (size_t i = 0; i < j->n;) {
        if (match(j->v[i], arg))
            remove_at(j, i);
        else
            i++;
    }
    pthread_mutex_unlock(&j->lock);
}

static bool match_any(const cdsh_job *job, const void *arg)
{
    (void)job;
    (void)arg;
    return true;
}

void cdsh_jobs_free(cdsh_jobs *j)
{
    if (!j)
        return;
    pthread_mutex_lock(&j->lock);
    j->closing = true;
    pthread_mutex_unlock(&j->lock);
    kill_and_reap(j, match_any, NULL);
    for (size_t i = 0; i < j->nsrc; i++)
        free(j->srcs[i]); /* every disposer ran already, or never will */
    free(j->srcs);
    for (size_t i = 0; i < j->nkinds; i++)
        free(j->kinds[i].kind);
    free(j->kinds);
    free(j->v);
    pthread_cond_destroy(&j->cond);
    pthread_mutex_destroy(&j->lock);
    free(j);
}

void cdsh_jobs_set_limits(cdsh_jobs *j, const cdsh_jobs_limits *limits)
{
    pthread_mutex_lock(&j->lock);
    j->limits = *limits;
    fill_limits(&j->limits);
    pthread_mutex_unlock(&j->lock);
}

void cdsh_jobs_limits_get(cdsh_jobs *j, cdsh_jobs_limits *out)
{
    pthread_mutex_lock(&j->lock);
    *out = j->limits;
    pthread_mutex_unlock(&j->lock);
}

static void detach_surface(void *arg)
{
    cdsh_jobs *j = arg;
    pthread_mutex_lock(&j->lock);
    j->surfaces--;
    pthread_mutex_unlock(&j->lock);
}

int cdsh_jobs_attach_surface(cdsh_jobs *j, const char *name, cdsh_disposer_t *out, cdsh_error *err)
{
    if (!j || !name || !*name || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "a surface needs a name");
    pthread_mutex_lock(&j->lock);
    j->surfaces++;
    pthread_mutex_unlock(&j->lock);
    *out = (cdsh_disposer_t){detach_surface, j};
    return 0;
}

/* ---- events ------------------------------------------------------------------ */

static void emit(cdsh_jobs *j, const char *name, json_t *payload)
{
    if (j->bus && payload)
        cdsh_events_emit(j->bus, name, NULL, false, payload);
    json_decref(payload);
}

/* ---- the job thread ------------------------------------------------------------ */

/* Records how the job ended, emits jobs/end, then marks the thread done. */
static void finish(cdsh_job *job, int rc)
{
    cdsh_jobs *j = job->svc;
    if (job->free_ud)
        job->free_ud(job->ud);
    pthread_mutex_lock(&j->lock);
    if (cdsh_cancel_is_fired(job->cancel))
        job->status = CDSH_JOB_KILLED;
    else
        job->status = rc == 0 ? CDSH_JOB_COMPLETED : CDSH_JOB_FAILED;
    if (job->status == CDSH_JOB_FAILED && !job->detail)
        job->detail = strdup(cdsh_strerror(rc));
    if (job->status == CDSH_JOB_KILLED && !job->detail && cdsh_cancel_reason(job->cancel))
        job->detail = strdup(cdsh_cancel_reason(job->cancel));
    job->ended_ms = cdsh_clock_wall_ms();
    json_t *ev =
        json_pack("{s:s, s:s}", "id", job->id, "status", cdsh_job_status_name(job->status));
    if (ev && job->detail)
        json_object_set_new(ev, "detail", json_string(job->detail));
    pthread_mutex_unlock(&j->lock);
    /* The end event goes out before the job counts as ended, so whoever
     * waited for the end has seen the event too; disposal waits for
     * thread_done, so the bus is still alive here. */
    emit(j, "jobs/end", ev);
    pthread_mutex_lock(&j->lock);
    job->ended = true;
    j->running--;
    job->thread_done = true;
    pthread_cond_broadcast(&j->cond);
    prune(j); /* may free this very record: touch nothing after */
    pthread_mutex_unlock(&j->lock);
}

static void *job_main(void *arg)
{
    cdsh_job *job = arg;
    finish(job, job->run(job->ud, job));
    return NULL;
}

/* ---- starting ---------------------------------------------------------------- */

static bool kind_ok(const char *k)
{
    if (!k || !(*k >= 'a' && *k <= 'z'))
        return false;
    size_t n = strlen(k);
    if (n > 32)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_' ||
              k[i] == '-'))
            return false;
    return true;
}

static bool blank(const char *s)
{
    for (; s && *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
            return false;
    return true;
}

static bool same_owner(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Under the lock: the next id of `kind`, owned; NULL on ENOMEM. */
static char *next_id(cdsh_jobs *j, const char *kind)
{
    kind_counter *kc = NULL;
    for (size_t i = 0; i < j->nkinds && !kc; i++)
        if (strcmp(j->kinds[i].kind, kind) == 0)
            kc = &j->kinds[i];
    if (!kc) {
        kind_counter *nk = realloc(j->kinds, (j->nkinds + 1) * sizeof *nk);
        if (!nk)
            return NULL;
        j->kinds = nk;
        kc = &j->kinds[j->nkinds];
        if (!(kc->kind = strdup(kind)))
            return NULL;
        kc->next = 1;
        j->nkinds++;
    }
    char *id = NULL;
    if (asprintf(&id, "%s-%lu", kind, kc->next) < 0)
        return NULL;
    kc->next++;
    return id;
}

static bool match_source(const cdsh_job *job, const void *arg)
{
    return job->src == arg;
}

static void source_dispose(void *arg)
{
    source *src = arg;
    cdsh_jobs *j = src->svc;
    /* Disposed first, so a start racing with the unload is refused instead
     * of adding a job the reap below would wait for; our own hold keeps src
     * alive while its jobs are removed. */
    pthread_mutex_lock(&j->lock);
    src->disposed = true;
    src->users++;
    for (size_t i = 0; i < j->nsrc; i++)
        if (j->srcs[i] == src) {
            j->srcs[i] = j->srcs[--j->nsrc];
            break;
        }
    pthread_mutex_unlock(&j->lock);
    kill_and_reap(j, match_source, src);
    pthread_mutex_lock(&j->lock);
    source_release(j, src);
    pthread_mutex_unlock(&j->lock);
}

/* The source of ctx, recording its disposer in ctx the first time. */
static int source_for(cdsh_jobs *j, cdsh_plugin_ctx *ctx, source **out, cdsh_error *err)
{
    pthread_mutex_lock(&j->lock);
    for (size_t i = 0; i < j->nsrc; i++)
        if (j->srcs[i]->ctx == ctx) {
            *out = j->srcs[i];
            j->srcs[i]->users++; /* held until the job is linked (or the start fails) */
            pthread_mutex_unlock(&j->lock);
            return 0;
        }
    source *src = calloc(1, sizeof *src);
    source **ns = src ? realloc(j->srcs, (j->nsrc + 1) * sizeof *ns) : NULL;
    if (!ns) {
        pthread_mutex_unlock(&j->lock);
        free(src);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    j->srcs = ns;
    src->svc = j;
    src->ctx = ctx;
    src->users = 1;
    j->srcs[j->nsrc++] = src;
    pthread_mutex_unlock(&j->lock);
    /* On an inactive context the disposer runs at once: src is then marked
     * disposed but stays alive through our hold. */
    int rc = cdsh_ctx_adopt(ctx, (cdsh_disposer_t){source_dispose, src}, err);
    *out = src;
    return rc;
}

/* The spec's own fields: kind, label and run function. */
static int spec_check(const cdsh_job_spec *spec, cdsh_error *err)
{
    if (!kind_ok(spec->kind))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_JOB_SPEC",
                              "job kind \"%s\" is invalid: use 1-32 of a-z 0-9 _ -, starting "
                              "with a letter",
                              spec->kind ? spec->kind : "");
    if (blank(spec->label) || strchr(spec->label, '\n'))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_JOB_SPEC",
                              "job \"%s\" needs a label (one non-blank line)", spec->kind);
    if (!spec->run)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_JOB_SPEC", "job \"%s\" needs a run function",
                              spec->kind);
    return 0;
}

/* Whether one more job may start now (j->lock held), and room for it in j->v. */
static int admit_locked(cdsh_jobs *j, cdsh_plugin_ctx *ctx, const source *src, const char *owner,
                        cdsh_error *err)
{
    int rc = 0;
    unsigned mine = 0;
    for (size_t i = 0; i < j->n; i++)
        mine += !j->v[i]->ended && same_owner(j->v[i]->owner, owner);
    if (j->closing || src->disposed)
        rc = cdsh_error_set(err, CDSH_ECLOSED, "INACTIVE_EFFECT",
                            "plugin \"%s\" is not active: jobs cannot be started while it is "
                            "unloading",
                            cdsh_ctx_name(ctx));
    else if (!j->surfaces)
        rc = cdsh_error_set(err, CDSH_EPERM, "JOBS_NO_SURFACE",
                            "background jobs need a control surface: enable the \"jobs\" plugin "
                            "(job_output, job_list, job_kill)");
    else if (mine >= j->limits.max_per_owner)
        rc = cdsh_error_set(err, CDSH_EBUSY, "JOB_LIMIT",
                            "owner \"%s\" already runs %u background jobs (the limit); collect "
                            "or kill one (job_list, job_kill) before starting another",
                            owner ? owner : "(unowned)", j->limits.max_per_owner);
    else if (j->running >= j->limits.max_running)
        rc = cdsh_error_set(err, CDSH_EBUSY, "JOBS_BUSY",
                            "cdsh already runs %u background jobs (the host's limit); try again "
                            "when one has ended",
                            j->limits.max_running);
    else if (j->n == j->cap) {
        size_t nc = j->cap ? 2 * j->cap : 16;
        cdsh_job **nv = realloc(j->v, nc * sizeof *nv);
        if (nv) {
            j->v = nv;
            j->cap = nc;
        } else {
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        }
    }
    return rc;
}

int cdsh_ctx_job_start(cdsh_plugin_ctx *ctx, const cdsh_job_spec *spec, char **id_out,
                       cdsh_error *err)
{
    if (id_out)
        *id_out = NULL;
    cdsh_jobs *j = ctx ? cdsh_host_jobs(cdsh_ctx_host(ctx)) : NULL;
    source *src = NULL;
    cdsh_job *job = NULL;
    int rc = 0;
    if (!j || !spec) {
        rc = cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "a job needs a context and a spec");
        goto fail;
    }
    if ((rc = spec_check(spec, err)) < 0)
        goto fail;
    if ((rc = source_for(j, ctx, &src, err)) < 0)
        goto fail;

    job = calloc(1, sizeof *job);
    if (!job || !(job->kind = strdup(spec->kind)) || !(job->label = strdup(spec->label)) ||
        (spec->owner && !(job->owner = strdup(spec->owner))) ||
        !(job->plugin = strdup(cdsh_ctx_name(ctx))) || !(job->cancel = cdsh_cancel_new(NULL))) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto fail;
    }
    job->svc = j;
    job->run = spec->run;
    job->ud = spec->ud;
    job->free_ud = spec->free_ud;
    job->status = CDSH_JOB_RUNNING;

    pthread_mutex_lock(&j->lock);
    rc = admit_locked(j, ctx, src, spec->owner, err);
    if (rc == 0) {
        job->cap = spec->output_limit ? spec->output_limit : j->limits.output_limit;
        if (!(job->buf = malloc(job->cap)) || !(job->id = next_id(j, spec->kind)))
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    json_t *ev = NULL;
    if (rc == 0) {
        job->started_ms = cdsh_clock_wall_ms();
        job->src = src; /* takes over our hold on src */
        j->v[j->n++] = job;
        j->running++;
        ev = json_pack("{s:s, s:s, s:s, s:o, s:s}", "id", job->id, "kind", job->kind, "label",
                       job->label, "owner", job->owner ? json_string(job->owner) : json_null(),
                       "plugin", job->plugin);
        if (id_out)
            *id_out = strdup(job->id);
    }
    pthread_mutex_unlock(&j->lock);
    if (rc < 0)
        goto fail;
    /* The start event goes out before the thread exists, so it always
     * precedes the job's progress and end events. */
    emit(j, "jobs/start", ev);
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int prc = pthread_create(&t, &attr, job_main, job);
    pthread_attr_destroy(&attr);
    if (prc != 0) {
        /* Listed as a failed job; free_ud runs in finish. */
        cdsh_job_set_detail(job, "could not start a thread");
        finish(job, CDSH_EIO);
        if (id_out) {
            free(*id_out);
            *id_out = NULL;
        }
        return cdsh_error_set(err, CDSH_EIO, "JOB_THREAD", "could not start a thread for a job");
    }
    return 0;
fail:
    if (src) {
        pthread_mutex_lock(&j->lock);
        source_release(j, src);
        pthread_mutex_unlock(&j->lock);
    }
    if (job)
        job_free(job);
    if (spec && spec->free_ud)
        spec->free_ud(spec->ud);
    return rc;
}

/* ---- inside a run function -------------------------------------------------------- */

const char *cdsh_job_id(const cdsh_job *job)
{
    return job->id;
}

cdsh_cancel *cdsh_job_cancel(cdsh_job *job)
{
    return job->cancel;
}

void cdsh_job_write(cdsh_job *job, const char *data, size_t len)
{
    if (!job || !data || !len)
        return;
    cdsh_jobs *j = job->svc;
    pthread_mutex_lock(&j->lock);
    job->written += len;
    if (len >= job->cap) { /* only the last cap bytes can stay */
        data += len - job->cap;
        len = job->cap;
    }
    for (size_t i = 0; i < len; i++) {
        job->buf[job->head] = data[i];
        job->head = (job->head + 1) % job->cap;
    }
    job->len = job->len + len > job->cap ? job->cap : job->len + len;
    pthread_mutex_unlock(&j->lock);
}

void cdsh_job_printf(cdsh_job *job, const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n > 0)
        cdsh_job_write(job, s, (size_t)n);
    free(s);
}

void cdsh_job_progress(cdsh_job *job, double done, double total, const char *message)
{
    cdsh_jobs *j = job->svc;
    pthread_mutex_lock(&j->lock);
    job->done = done;
    job->total = total;
    free(job->message);
    job->message = message ? strdup(message) : NULL;
    json_t *ev = json_pack("{s:s, s:f, s:f}", "id", job->id, "done", done, "total", total);
    if (ev && message)
        json_object_set_new(ev, "message", json_string(message));
    pthread_mutex_unlock(&j->lock);
    emit(j, "jobs/progress", ev);
}

void cdsh_job_set_detail(cdsh_job *job, const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    for (char *p = s; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    pthread_mutex_lock(&job->svc->lock);
    free(job->detail);
    job->detail = s;
    pthread_mutex_unlock(&job->svc->lock);
}

/* ---- observing ------------------------------------------------------------------------ */

static bool visible(const cdsh_job *job, const char *caller, bool all)
{
    return all || same_owner(job->owner, caller);
}

/* Under the lock. */
static cdsh_job *find(cdsh_jobs *j, const char *caller, bool all, const char *id, cdsh_error *err)
{
    for (size_t i = 0; id && i < j->n; i++)
        if (strcmp(j->v[i]->id, id) == 0 && visible(j->v[i], caller, all))
            return j->v[i];
    cdsh_error_set(err, CDSH_ENOTFOUND, "UNKNOWN_JOB",
                   "unknown background job \"%s\"; job_list lists the jobs you can see",
                   id ? id : "");
    return NULL;
}

static uint64_t ring_start(const cdsh_job *job)
{
    return job->written - job->len;
}

/* Under the lock: bytes [from, written) of the ring (from >= ring_start). */
static json_t *ring_string(const cdsh_job *job, uint64_t from)
{
    size_t n = (size_t)(job->written - from);
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    size_t first = (job->head + job->cap - n) % job->cap;
    for (size_t i = 0; i < n; i++)
        s[i] = job->buf[(first + i) % job->cap];
    s[n] = 0;
    /* The cut may split a UTF-8 sequence at the front: skip its tail bytes. */
    size_t skip = 0;
    if (from > 0)
        while (skip < n && ((unsigned char)s[skip] & 0xC0) == 0x80)
            skip++;
    json_t *v = json_stringn_nocheck(s + skip, n - skip);
    free(s);
    return v;
}

/* Under the lock. */
static json_t *snapshot(const cdsh_job *job)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:s, s:s, s:f, s:f, s:I, s:I, s:I}", "id", job->id,
                          "kind", job->kind, "label", job->label, "owner",
                          job->owner ? json_string(job->owner) : json_null(), "plugin", job->plugin,
                          "status", cdsh_job_status_name(job->status), "done", job->done, "total",
                          job->total, "outputBytes", (json_int_t)job->written, "droppedBytes",
                          (json_int_t)ring_start(job), "startedMs", (json_int_t)job->started_ms);
    if (o && job->detail)
        json_object_set_new(o, "detail", json_string(job->detail));
    if (o && job->message)
        json_object_set_new(o, "message", json_string(job->message));
    if (o && job->ended)
        json_object_set_new(o, "endedMs", json_integer(job->ended_ms));
    if (o)
        json_object_set_new(o, "outputLimit", json_integer((json_int_t)job->cap));
    return o;
}

static json_t *list(cdsh_jobs *j, const char *caller, bool all)
{
    json_t *arr = json_array();
    pthread_mutex_lock(&j->lock);
    for (size_t i = 0; arr && i < j->n; i++)
        if (visible(j->v[i], caller, all))
            json_array_append_new(arr, snapshot(j->v[i]));
    pthread_mutex_unlock(&j->lock);
    return arr;
}

json_t *cdsh_jobs_list(cdsh_jobs *j, const char *caller)
{
    return list(j, caller, false);
}

json_t *cdsh_jobs_list_all(cdsh_jobs *j)
{
    return list(j, NULL, true);
}

json_t *cdsh_jobs_get(cdsh_jobs *j, const char *caller, bool all, const char *id, cdsh_error *err)
{
    pthread_mutex_lock(&j->lock);
    cdsh_job *job = find(j, caller, all, id, err);
    json_t *o = job ? snapshot(job) : NULL;
    pthread_mutex_unlock(&j->lock);
    return o;
}

static void wake(void *arg)
{
    cdsh_jobs *j = arg;
    pthread_mutex_lock(&j->lock);
    pthread_cond_broadcast(&j->cond);
    pthread_mutex_unlock(&j->lock);
}

/* Under the lock (and with `cancel` subscribed to wake): waits until `id`
 * ends, the deadline passes or cancel fires. Returns the job (NULL: gone,
 * err filled) and sets *cancelled. */
static cdsh_job *wait_end(cdsh_jobs *j, const char *caller, bool all, const char *id,
                          int64_t wait_ms, cdsh_cancel *cancel, bool *cancelled, cdsh_error *err)
{
    struct timespec dl;
    if (wait_ms > 0)
        cdsh_clock_deadline(CLOCK_MONOTONIC, wait_ms, &dl);
    *cancelled = false;
    for (;;) {
        cdsh_job *job = find(j, caller, all, id, err);
        if (!job || job->ended || wait_ms == 0)
            return job;
        if (cdsh_cancel_is_fired(cancel)) {
            *cancelled = true;
            return job;
        }
        if (wait_ms < 0)
            pthread_cond_wait(&j->cond, &j->lock);
        else if (pthread_cond_timedwait(&j->cond, &j->lock, &dl) != 0)
            return find(j, caller, all, id, err);
    }
}

int cdsh_jobs_read(cdsh_jobs *j, const char *caller, const char *id, int64_t wait_ms,
                   cdsh_cancel *cancel, json_t **out, cdsh_error *err)
{
    *out = NULL;
    uint64_t sub = wait_ms ? cdsh_cancel_subscribe(cancel, wake, j) : 0;
    bool cancelled = false;
    int rc = 0;
    pthread_mutex_lock(&j->lock);
    cdsh_job *job = wait_end(j, caller, false, id, wait_ms, cancel, &cancelled, err);
    if (!job) {
        rc = CDSH_ENOTFOUND;
    } else if (cancelled) {
        rc = cdsh_error_set(err, CDSH_ECANCELED, "CANCELLED", "the wait for job %s was cancelled",
                            id);
    } else {
        uint64_t start = ring_start(job), dropped = 0;
        if (job->cursor < start) {
            dropped = start - job->cursor;
            job->cursor = start;
        }
        json_t *text = ring_string(job, job->cursor);
        job->cursor = job->written;
        if (job->ended)
            job->reported = true; /* the owner has seen the end: no notice */
        json_t *o =
            json_pack("{s:s, s:s, s:o, s:I, s:f, s:f}", "id", job->id, "status",
                      cdsh_job_status_name(job->status), "output", text ? text : json_string(""),
                      "dropped", (json_int_t)dropped, "done", job->done, "total", job->total);
        if (o && job->detail)
            json_object_set_new(o, "detail", json_string(job->detail));
        if (o && job->message)
            json_object_set_new(o, "message", json_string(job->message));
        if (o)
            json_object_set_new(o, "outputLimit", json_integer((json_int_t)job->cap));
        if (o)
            *out = o;
        else
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    pthread_mutex_unlock(&j->lock);
    cdsh_cancel_unsubscribe(cancel, sub);
    return rc;
}

int cdsh_jobs_tail(cdsh_jobs *j, const char *id, size_t max, json_t **out, cdsh_error *err)
{
    *out = NULL;
    pthread_mutex_lock(&j->lock);
    cdsh_job *job = find(j, NULL, true, id, err);
    int rc = job ? 0 : CDSH_ENOTFOUND;
    if (job) {
        uint64_t from = ring_start(job);
        if (job->len > max)
            from = job->written - max;
        json_t *o = snapshot(job);
        if (o)
            json_object_set_new(o, "output", ring_string(job, from));
        *out = o;
    }
    pthread_mutex_unlock(&j->lock);
    return rc;
}

int cdsh_jobs_kill(cdsh_jobs *j, const char *caller, bool all, const char *id, const char *reason,
                   int64_t wait_ms, cdsh_job_status *status_out, cdsh_error *err)
{
    pthread_mutex_lock(&j->lock);
    cdsh_job *job = find(j, caller, all, id, err);
    if (!job) {
        pthread_mutex_unlock(&j->lock);
        return CDSH_ENOTFOUND;
    }
    cdsh_cancel *tok = NULL;
    if (!all)
        job->reported = true; /* the owner stopped it itself: no notice */
    if (!job->ended) {
        if (job->status == CDSH_JOB_RUNNING)
            job->status = CDSH_JOB_STOPPING;
        tok = job->cancel; /* the record lives until its thread is done, past our wait */
    }
    pthread_mutex_unlock(&j->lock);
    if (tok)
        cdsh_cancel_fire(tok, reason && *reason ? reason : "killed");
    return cdsh_jobs_wait(j, id, tok ? wait_ms : 0, NULL, status_out, err);
}

int cdsh_jobs_wait(cdsh_jobs *j, const char *id, int64_t wait_ms, cdsh_cancel *cancel,
                   cdsh_job_status *status_out, cdsh_error *err)
{
    uint64_t sub = wait_ms ? cdsh_cancel_subscribe(cancel, wake, j) : 0;
    bool cancelled = false;
    pthread_mutex_lock(&j->lock);
    cdsh_job *job = wait_end(j, NULL, true, id, wait_ms, cancel, &cancelled, err);
    int rc = job ? 0 : CDSH_ENOTFOUND;
    if (job && status_out)
        *status_out = job->status;
    if (cancelled)
        rc = cdsh_error_set(err, CDSH_ECANCELED, "CANCELLED", "the wait for job %s was cancelled",
                            id);
    pthread_mutex_unlock(&j->lock);
    cdsh_cancel_unsubscribe(cancel, sub);
    return rc;
}

static bool match_owner(const cdsh_job *job, const void *arg)
{
    return job->owner && strcmp(job->owner, arg) == 0;
}

void cdsh_jobs_dispose_owner(cdsh_jobs *j, const char *owner)
{
    if (j && owner && *owner)
        kill_and_reap(j, match_owner, owner);
}

json_t *cdsh_jobs_take_notices(cdsh_jobs *j, const char *owner)
{
    json_t *out = json_array();
    if (!j || !owner || !out)
        return out;
    pthread_mutex_lock(&j->lock);
    for (size_t i = 0; i < j->n; i++) {
        cdsh_job *job = j->v[i];
        if (!job->ended || job->reported || !same_owner(job->owner, owner))
            continue;
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:I}", "id", job->id, "kind", job->kind,
                              "label", job->label, "status", cdsh_job_status_name(job->status),
                              "unreadBytes", (json_int_t)(job->written - job->cursor));
        if (o && job->detail)
            json_object_set_new(o, "detail", json_string(job->detail));
        if (o && json_array_append_new(out, o) == 0)
            job->reported = true; /* exactly once */
    }
    pthread_mutex_unlock(&j->lock);
    return out;
}

size_t cdsh_jobs_count(cdsh_jobs *j)
{
    if (!j)
        return 0;
    pthread_mutex_lock(&j->lock);
    size_t n = j->n;
    pthread_mutex_unlock(&j->lock);
    return n;
}
