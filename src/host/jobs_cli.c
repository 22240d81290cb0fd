/* jobs_cli.c — running a background job from a command-line subcommand:
 * start it as a job of the plugin's context, print its progress as it
 * comes, wait for the end, print its output and how it ended. The command
 * stays the job's only reader; the page (`/jobs`) may watch it meanwhile. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"
#include "host/jobs.h"

typedef struct watch {
    pthread_mutex_t lock;
    char *id;      /* NULL until the start returned */
    json_t *early; /* progress events that came before the id was known */
    FILE *progress;
} watch;

static void print_progress(watch *w, const json_t *payload)
{
    const char *msg = json_string_value(json_object_get(payload, "message"));
    double done = json_real_value(json_object_get(payload, "done"));
    double total = json_real_value(json_object_get(payload, "total"));
    if (total > 0)
        fprintf(w->progress, "%s: [%.0f/%.0f] %s\n", w->id, done, total, msg ? msg : "");
    else
        fprintf(w->progress, "%s: %s\n", w->id, msg ? msg : "");
    fflush(w->progress);
}

static void on_event(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    (void)scope;
    watch *w = arg;
    if (strcmp(name, "jobs/progress") != 0)
        return;
    pthread_mutex_lock(&w->lock);
    const char *id = json_string_value(json_object_get(payload, "id"));
    if (!w->id)
        json_array_append(w->early, (json_t *)payload);
    else if (id && strcmp(id, w->id) == 0)
        print_progress(w, payload);
    pthread_mutex_unlock(&w->lock);
}

int cdsh_jobs_cli_run(cdsh_plugin_ctx *ctx, const char *sub, const cdsh_job_spec *spec,
                      const char *why, FILE *out, FILE *progress)
{
    cdsh_host *host = cdsh_ctx_host(ctx);
    cdsh_jobs *jobs = cdsh_host_jobs(host);
    watch w = {.early = json_array(), .progress = progress};
    pthread_mutex_init(&w.lock, NULL);
    cdsh_disposer_t listener = {0};
    cdsh_error err = {0};
    char *id = NULL;
    json_t *res = NULL;
    int rc = 1;
    /* listen before the start, so no progress is missed */
    if (cdsh_events_on(cdsh_host_events(host), "jobs/progress", NULL, on_event, &w, &listener,
                       &err) != 0 ||
        cdsh_ctx_job_start(ctx, spec, &id, &err) != 0) {
        fprintf(stderr, "%s: %s\n", sub, err.message);
        goto cleanup;
    }
    fprintf(progress, "%s: %s: running as background job %s\n", sub, why ? why : spec->label, id);
    pthread_mutex_lock(&w.lock);
    w.id = id;
    size_t i;
    json_t *ev;
    json_array_foreach(w.early, i, ev) {
        if (strcmp(json_string_value(json_object_get(ev, "id")), id) == 0)
            print_progress(&w, ev);
    }
    pthread_mutex_unlock(&w.lock);
    cdsh_job_status st = CDSH_JOB_FAILED;
    if (cdsh_jobs_wait(jobs, id, -1, NULL, &st, &err) != 0 ||
        cdsh_jobs_read(jobs, spec->owner, id, 0, NULL, &res, &err) != 0) {
        fprintf(stderr, "%s: %s\n", sub, err.message);
        goto cleanup;
    }
    json_int_t dropped = json_integer_value(json_object_get(res, "dropped"));
    if (dropped > 0)
        fprintf(progress,
                "%s: %lld bytes of earlier output dropped (the job keeps its last %lld)\n", id,
                (long long)dropped,
                (long long)json_integer_value(json_object_get(res, "outputLimit")));
    fputs(json_string_value(json_object_get(res, "output")), out);
    fflush(out);
    const char *detail = json_string_value(json_object_get(res, "detail"));
    fprintf(progress, "%s: %s%s%s\n", id, cdsh_job_status_name(st), detail ? ": " : "",
            detail ? detail : "");
    rc = st == CDSH_JOB_COMPLETED ? 0 : 1;
cleanup:
    /* The job emits progress only while it runs, so once it ended no
     * emission for it is in flight and `w` may go. */
    cdsh_disposer_run(&listener);
    json_decref(res);
    json_decref(w.early);
    free(id);
    pthread_mutex_destroy(&w.lock);
    return rc;
}
