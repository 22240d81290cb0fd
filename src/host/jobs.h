/* jobs.h — background jobs (host-contracts.md §16, DSH's `ctx.tasks`): long
 * work a plugin starts with cdsh_ctx_job_start and that runs on its own
 * thread beside the turn, with an id `<kind>-N`, an owner, a cancellation
 * token, an output ring buffer with a byte cap and progress. The model
 * reaches jobs through the tools job_output, job_list and job_kill (plugin
 * "jobs", jobs_tools.c), the web page through the RPC channel `/jobs`.
 *
 * Lifetimes: a job belongs to the context that started it; unloading that
 * plugin (or freeing that scoped context) cancels its jobs, waits for them
 * to end and removes them. An owned job also ends with its owner's session
 * (CDSH_EVENT_SESSION_END, through the "jobs" plugin). cdsh_jobs_free (from cdsh_host_free) does
 * the same for whatever is left.
 *
 * Bounds: at most `max_per_owner` (default 10) running jobs per owner — the
 * next start fails with JOB_LIMIT — and at most `max_running` (default 32)
 * in the whole host (JOBS_BUSY): one thread per running job, never more.
 * Every wait is on a condition variable and observes the caller's token.
 *
 * Events on the host bus (unfiltered): `jobs/start` {id, kind, label,
 * owner, plugin}, `jobs/progress` {id, done, total, message?}, `jobs/end`
 * {id, status, detail?}.
 *
 * Thread-safety: every function is thread-safe. No service lock is held
 * while a job's run function, an event listener or a cancellation callback
 * runs. */
#ifndef CDSH_HOST_JOBS_H
#define CDSH_HOST_JOBS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/cancel.h"
#include "base/err.h"
#include "host/events.h"
#include "host/plugins.h"

typedef struct cdsh_jobs cdsh_jobs; /* the service (one per host) */
typedef struct cdsh_job cdsh_job;   /* one job, as its run function sees it */

/* Statuses, in DSH's words. `stopping`: a kill was requested and the run
 * function has not returned yet. */
typedef enum cdsh_job_status {
    CDSH_JOB_RUNNING = 0,
    CDSH_JOB_STOPPING,
    CDSH_JOB_COMPLETED,
    CDSH_JOB_KILLED,
    CDSH_JOB_FAILED,
} cdsh_job_status;

const char *cdsh_job_status_name(cdsh_job_status status); /* "running", ... */

/* The work. Runs once on the job's own thread; returns 0 (completed) or a
 * negative CDSH_E* (failed; say why with cdsh_job_set_detail). Must observe
 * cdsh_job_cancel(job) and return promptly once it fires: the job then ends
 * `killed` whatever it returns. */
typedef int (*cdsh_job_run_fn)(void *ud, cdsh_job *job);

typedef struct cdsh_job_spec {
    const char *kind;  /* ^[a-z][a-z0-9_-]{0,31}$; the id is <kind>-N, N counted per kind */
    const char *label; /* required, one line for listings */
    const char *owner; /* optional: the owning agent's id (a scope id); NULL = unowned */
    cdsh_job_run_fn run;
    void *ud;                  /* passed to run */
    void (*free_ud)(void *ud); /* optional; runs on the job's thread after run, or in
                                  cdsh_ctx_job_start when the start fails */
    size_t output_limit;       /* bytes the ring keeps; 0 = the service's default */
} cdsh_job_spec;

/* ---- the service ----------------------------------------------------------- */

typedef struct cdsh_jobs_limits {
    unsigned max_per_owner; /* running jobs per owner (unowned counts as one owner); 0 = 10 */
    unsigned max_running;   /* running jobs in the host; 0 = 32 */
    size_t output_limit;    /* default ring size in bytes; 0 = 65536 */
    unsigned keep_ended;    /* ended jobs kept for listing; 0 = 64 (oldest go first) */
} cdsh_jobs_limits;

/* New service; bus (borrowed, may be NULL) must outlive it. NULL on ENOMEM. */
cdsh_jobs *cdsh_jobs_new(cdsh_events *bus);
/* Cancels every job, waits for all of them to end, frees. NULL-safe. */
void cdsh_jobs_free(cdsh_jobs *jobs);
/* Replaces the limits (zero fields take their defaults). */
void cdsh_jobs_set_limits(cdsh_jobs *jobs, const cdsh_jobs_limits *limits);
/* keep-public: the read side of set_limits, for whoever shows the bounds in force. */
void cdsh_jobs_limits_get(cdsh_jobs *jobs, cdsh_jobs_limits *out);

/* The control surface fence (DSH's attachSurface): a start without any
 * attached surface fails with JOBS_NO_SURFACE, because nobody could collect
 * or stop the job. *out detaches. The "jobs" plugin attaches itself. */
int cdsh_jobs_attach_surface(cdsh_jobs *jobs, const char *name, cdsh_disposer_t *out,
                             cdsh_error *err);

/* Starts a job owned by `ctx` (its plugin, or its scoped context). On
 * success *id_out (may be NULL) receives the owned id. Failures (nothing
 * started, free_ud has run):
 *  - CDSH_EINVAL "BAD_JOB_SPEC": `job kind "x" is invalid: use 1-32 of a-z 0-9 _ -,
 *    starting with a letter`, `job "<kind>" needs a label`, `job "<kind>" needs
 *    a run function`
 *  - CDSH_EPERM "JOBS_NO_SURFACE": `background jobs need a control surface: enable
 *    the "jobs" plugin (job_output, job_list, job_kill)`
 *  - CDSH_EBUSY "JOB_LIMIT": `owner "<owner>" already runs 10 background jobs (the
 *    limit); collect or kill one (job_list, job_kill) before starting another`
 *    (`(unowned)` for no owner)
 *  - CDSH_EBUSY "JOBS_BUSY": `cdsh already runs 32 background jobs (the host's
 *    limit); try again when one has ended`
 *  - CDSH_ECLOSED "INACTIVE_EFFECT": the context is unloading. */
int cdsh_ctx_job_start(cdsh_plugin_ctx *ctx, const cdsh_job_spec *spec, char **id_out,
                       cdsh_error *err);

/* The host's service (created with the host). */
cdsh_jobs *cdsh_host_jobs(cdsh_host *host);

/* ---- inside a run function (job is valid until run returns) ---------------- */

/* keep-public: part of the run-function API a plugin's job body uses. */
const char *cdsh_job_id(const cdsh_job *job);
/* Fires when the job is killed, its plugin unloads or the host is freed. */
cdsh_cancel *cdsh_job_cancel(cdsh_job *job);
/* Appends output; when the ring is full the oldest bytes go (counted). */
void cdsh_job_write(cdsh_job *job, const char *data, size_t len);
void cdsh_job_printf(cdsh_job *job, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Progress: `done` of `total` (total 0 = unknown) and an optional message;
 * emits jobs/progress. */
void cdsh_job_progress(cdsh_job *job, double done, double total, const char *message);
/* One line saying how it ended (an error, a summary); shown with the status. */
void cdsh_job_set_detail(cdsh_job *job, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- observing and controlling ----------------------------------------------
 * `caller` is who asks: an owner id (the calling agent's scope id), or NULL
 * for a non-agent caller. An owned job is visible only to its owner; an
 * unowned one only to non-agent callers. The `all` variants are for the
 * person's own surfaces (the web page, the CLI) and see every job.
 * Unknown or invisible ids fail alike: CDSH_ENOTFOUND "UNKNOWN_JOB",
 * `unknown background job "x"; job_list lists the jobs you can see`. */

/* Snapshots: [{id, kind, label, owner|null, plugin, status, detail?, done,
 * total, message?, outputBytes, droppedBytes, startedMs, endedMs?}], oldest
 * first. Owned. */
json_t *cdsh_jobs_list(cdsh_jobs *jobs, const char *caller);
json_t *cdsh_jobs_list_all(cdsh_jobs *jobs);
/* One snapshot (as above) or NULL with err. */
json_t *cdsh_jobs_get(cdsh_jobs *jobs, const char *caller, bool all, const char *id,
                      cdsh_error *err);

/* Consuming read (the owner's one cursor): the output written since the
 * previous read. When wait_ms != 0 it first waits until the job ends, wait_ms
 * passes (negative: no limit) or `cancel` fires (CDSH_ECANCELED). *out:
 * {id, status, detail?, output, dropped (bytes lost before this read),
 * done, total, message?}. */
int cdsh_jobs_read(cdsh_jobs *jobs, const char *caller, const char *id, int64_t wait_ms,
                   cdsh_cancel *cancel, json_t **out, cdsh_error *err);
/* Non-consuming: the last `max` bytes the ring holds (for the page). */
int cdsh_jobs_tail(cdsh_jobs *jobs, const char *id, size_t max, json_t **out, cdsh_error *err);

/* Requests cancellation (fires the job's token with `reason`, NULL =
 * "killed") and waits up to wait_ms for the job to end. *status_out gets the
 * status afterwards (an ended job keeps its status: nothing is fired). */
int cdsh_jobs_kill(cdsh_jobs *jobs, const char *caller, bool all, const char *id,
                   const char *reason, int64_t wait_ms, cdsh_job_status *status_out,
                   cdsh_error *err);

/* Waits until the job ends (or wait_ms / cancel); *status_out its status then. */
int cdsh_jobs_wait(cdsh_jobs *jobs, const char *id, int64_t wait_ms, cdsh_cancel *cancel,
                   cdsh_job_status *status_out, cdsh_error *err);

/* Cancels the jobs of `owner`, waits for them and removes them: its
 * session is over. The "jobs" plugin calls it for every
 * CDSH_EVENT_SESSION_END (host/events.h) with the payload's id, on the
 * emitting thread, so the emitter returns once they are gone. */
void cdsh_jobs_dispose_owner(cdsh_jobs *jobs, const char *owner);

/* Completion notices (DSH's long-running-tool runtime): the owned jobs of
 * `owner` that have ended and whose end the owner has not learnt yet, each
 * returned exactly once: [{id, kind, label, status, detail?, unreadBytes}],
 * oldest first. The owner learns an end also by a job_output read made
 * after the end or by killing the job itself (caller == owner); such jobs
 * never come back here. Owned; [] when none. */
json_t *cdsh_jobs_take_notices(cdsh_jobs *jobs, const char *owner);

/* Jobs known (running or kept), for leak checks.
 * keep-public: the tests' leak check. */
size_t cdsh_jobs_count(cdsh_jobs *jobs);

/* ---- starters: jobs the person may start from the page ----------------------
 * A plugin registers a starter under CDSH_JOB_STARTERS with cdsh_ctx_hook
 * (a static struct); the `/jobs` channel lists them (`starters`) and runs
 * one (`start` {kind, args}). start() begins the job (unowned) and returns
 * its owned id in *id. */
#define CDSH_JOB_STARTERS "jobs/starters"
typedef struct cdsh_job_starter {
    const char *kind;  /* the kind of job it starts */
    const char *label; /* English, for the page's button */
    int (*start)(cdsh_host *host, const json_t *args, char **id, cdsh_error *err);
} cdsh_job_starter;

/* For a subcommand (jobs_cli.c): starts spec as a job of ctx, prints
 * `<sub>: <why>: running as background job <id>` and each progress
 * (`<id>: [done/total] message`) on `progress`, waits for the end, writes the
 * job's output to `out` and `<id>: <status>[: detail]` on `progress`.
 * Returns the exit status: 0 when the job completed, else 1 (a refused
 * start is printed as `<sub>: <message>`). */
int cdsh_jobs_cli_run(cdsh_plugin_ctx *ctx, const char *sub, const cdsh_job_spec *spec,
                      const char *why, FILE *out, FILE *progress);

/* The "jobs" plugin: the tools job_output, job_list, job_kill, the RPC
 * channel `/jobs` (list, output, kill), the session/end listener
 * (cdsh_jobs_dispose_owner), the prompt segment "jobs:guidance" (while the
 * session has jobs) and the turn's runtime context
 * "jobs", which carries the completion notices of the session's jobs
 * (cdsh_jobs_take_notices; see cdsh_jobs_notice_text). Enabled by default. Config:
 * maxPerOwner (10), maxRunning (32), outputLimitBytes (65536), maxWaitMs
 * (30000: the longest job_output wait). */
extern const cdsh_plugin_def cdsh_jobs_plugin;

/* The notice text for take_notices' array, one line per job (owned; NULL
 * for an empty array):
 *   background job <id> <status>[ (<detail>)] — <label>; <N> bytes of output
 *   not read yet: call job_output with job_id "<id>" to collect it.
 * (`no output` instead of the byte count when there is nothing to read.) */
char *cdsh_jobs_notice_text(const json_t *notices);

#endif
