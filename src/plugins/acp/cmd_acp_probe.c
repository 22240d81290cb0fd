/* cmd_acp_probe.c — `cdsh acp probe <engine> [--prompt TEXT] [--cwd DIR]
 * [--json]`: runs plugins/acp/probe.c and prints a summary or the record.
 * `cdsh acp probe --all` probes every engine as one background job of the
 * acp plugin (acp-probe-N), one line per engine. */
#include "plugins/acp/cmd_acp_probe.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json.h"
#include "host/cli.h"
#include "host/host.h"
#include "host/jobs.h"
#include "plugins/acp/probe.h"
#include "plugins/acp/state.h"

/* Handshake progress on stderr: a slow (cold) agent start is visible. */
static void print_wait(void *ud, const char *name, const char *step, int64_t elapsed_ms,
                       int64_t budget_ms)
{
    (void)ud;
    fprintf(stderr, "waiting for %s to %s… %lld s (gives up after %lld s)\n", name,
            strcmp(step, "initialize") == 0 ? "initialize" : step, (long long)(elapsed_ms / 1000),
            (long long)(budget_ms / 1000));
}

static volatile sig_atomic_t probe_signal;

static void on_signal(int sig)
{
    if (!probe_signal)
        probe_signal = sig;
}

typedef struct probe_watch {
    cdsh_cancel *cancel;
    volatile int stop;
} probe_watch;

/* Ctrl-C, SIGTERM or SIGHUP cut the probe short (the handler only sets a
 * flag; the token is fired here, outside the handler). */
static void *probe_watch_main(void *arg)
{
    probe_watch *w = arg;
    while (!w->stop) {
        if (probe_signal) {
            cdsh_cancel_fire(w->cancel, "interrupted");
            break;
        }
        usleep(50 * 1000);
    }
    return NULL;
}

static void usage(FILE *out)
{
    fprintf(out, "Usage: cdsh acp probe <engine> [--prompt TEXT] [--cwd DIR] [--json]\n"
                 "       cdsh acp probe --all [--prompt TEXT] [--cwd DIR]\n"
                 "\n"
                 "Spawns the engine, initializes, opens two sessions, tries the optional methods,\n"
                 "optionally runs one prompt, and writes the evidence record (credentials\n"
                 "redacted) under $CDSH_HOME/multi-acp/evidence/. Exit 0 when every step\n"
                 "succeeded, 1 when one failed. Ctrl-C, SIGTERM or SIGHUP cut it short (also\n"
                 "while the agent starts): the agent is closed, the record says \"cancelled\",\n"
                 "the engine's health is left as it was, exit 1. --all probes every engine\n"
                 "whose command is installed, one after the other, as a background job of the\n"
                 "acp plugin (progress on stderr, one line per engine on stdout).\n");
}

/* ---- --all, as a job ----------------------------------------------------------- */

typedef struct probe_all {
    const cdsh_home *home;
    char *prompt, *cwd;
} probe_all;

static void probe_all_free(void *ud)
{
    probe_all *pa = ud;
    if (pa) {
        free(pa->prompt);
        free(pa->cwd);
    }
    free(pa);
}

/* Probes each installed engine in turn; a kill stops between engines (one
 * probe runs within its own step budgets). */
static int probe_all_run(void *ud, cdsh_job *job)
{
    probe_all *pa = ud;
    json_t *engines = NULL;
    cdsh_error err = {0};
    if (cdsh_acp_state_engines_listing(pa->home, &engines, NULL, &err) < 0) {
        cdsh_job_set_detail(job, "%s", err.message);
        return err.rc;
    }
    size_t n = json_array_size(engines), i, ok = 0, failed = 0, missing = 0;
    json_t *row;
    json_array_foreach(engines, i, row) {
        if (cdsh_cancel_is_fired(cdsh_job_cancel(job)))
            break;
        const char *id = json_string_value(json_object_get(row, "id"));
        json_t *res = json_object_get(row, "resolved");
        char msg[160];
        snprintf(msg, sizeof msg, "probing %s", id);
        cdsh_job_progress(job, (double)i, (double)n, msg);
        if (!json_is_true(json_object_get(res, "found"))) {
            missing++;
            cdsh_job_printf(job, "%-16s not installed (%s)\n", id,
                            json_string_value(json_object_get(res, "error"))
                                ? json_string_value(json_object_get(res, "error"))
                                : "command not found");
            continue;
        }
        cdsh_acp_probe_opts o = {.prompt = pa->prompt, .cwd = pa->cwd};
        json_t *rec = NULL;
        char *path = NULL;
        cdsh_error perr = {0};
        if (cdsh_acp_probe_run(pa->home, id, &o, &rec, &path, &perr) < 0) {
            failed++;
            cdsh_job_printf(job, "%-16s error: %s\n", id, perr.message);
            continue;
        }
        json_t *h = json_object_get(rec, "health");
        bool good = json_is_true(json_object_get(rec, "ok"));
        good ? ok++ : failed++;
        cdsh_job_printf(job, "%-16s %s%s%s (evidence: %s)\n", id, good ? "ok" : "failed",
                        json_string_value(json_object_get(h, "error")) ? " — " : "",
                        json_string_value(json_object_get(h, "error"))
                            ? json_string_value(json_object_get(h, "error"))
                            : "",
                        path ? path : "none");
        json_decref(rec);
        free(path);
    }
    json_decref(engines);
    cdsh_job_progress(job, (double)n, (double)n, "done");
    cdsh_job_set_detail(job, "%zu engines: %zu ok, %zu failed, %zu not installed", n, ok, failed,
                        missing);
    return failed ? CDSH_EIO : 0;
}

static int probe_all_start(cdsh_host *host, const json_t *args, char **id, cdsh_error *err)
{
    (void)args;
    cdsh_plugin_ctx *ctx = cdsh_host_service(host, CDSH_ACP_JOBS_SERVICE);
    probe_all *pa = ctx ? calloc(1, sizeof *pa) : NULL;
    if (!pa)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    pa->home = cdsh_ctx_home(ctx);
    cdsh_job_spec spec = {.kind = "acp-probe", .label = "probe every engine", .run = probe_all_run,
                          .ud = pa, .free_ud = probe_all_free};
    return cdsh_ctx_job_start(ctx, &spec, id, err);
}

const cdsh_job_starter cdsh_acp_probe_all_starter = {
    .kind = "acp-probe", .label = "Probe every engine", .start = probe_all_start};

static int probe_all_as_job(const cdsh_acp_probe_opts *opts)
{
    cdsh_host *host = NULL;
    cdsh_profile *profile = NULL;
    if (cdsh_cli_host_open("acp probe", NULL, &host, &profile) != 0)
        return 1;
    int rc = 1;
    cdsh_plugin_ctx *ctx = cdsh_host_service(host, CDSH_ACP_JOBS_SERVICE);
    probe_all *pa = calloc(1, sizeof *pa);
    if (!ctx || !pa) {
        fprintf(stderr, "cdsh acp probe: %s\n",
                pa ? "--all runs as a background job of the acp plugin, which is not enabled in "
                     "this profile"
                   : "out of memory");
        probe_all_free(pa);
        goto cleanup;
    }
    pa->home = cdsh_ctx_home(ctx);
    pa->prompt = opts->prompt ? strdup(opts->prompt) : NULL;
    pa->cwd = opts->cwd ? strdup(opts->cwd) : NULL;
    cdsh_job_spec spec = {.kind = "acp-probe",
                          .label = "probe every engine",
                          .run = probe_all_run,
                          .ud = pa,
                          .free_ud = probe_all_free};
    rc = cdsh_jobs_cli_run(ctx, "cdsh acp probe", &spec, "every engine", stdout, stderr);
cleanup:
    cdsh_host_free(host);
    cdsh_profile_free(profile);
    return rc;
}

int cdsh_cmd_acp_probe(int argc, char **argv)
{
    const char *engine = NULL;
    cdsh_acp_probe_opts opts = {.on_wait = print_wait};
    bool as_json = false, all = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            as_json = true;
        } else if (strcmp(argv[i], "--all") == 0) {
            all = true;
        } else if (strcmp(argv[i], "--prompt") == 0 && i + 1 < argc) {
            opts.prompt = argv[++i];
        } else if (strcmp(argv[i], "--cwd") == 0 && i + 1 < argc) {
            opts.cwd = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] != '-' && !engine) {
            engine = argv[i];
        } else {
            fprintf(stderr, "cdsh acp probe: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!engine == !all || (all && as_json)) {
        usage(stderr);
        return 2;
    }
    if (opts.cwd && opts.cwd[0] != '/') {
        fprintf(stderr, "cdsh acp probe: --cwd must be an absolute path\n");
        return 2;
    }
    if (all)
        return probe_all_as_job(&opts);
    json_t *rec = NULL;
    char *path = NULL;
    cdsh_error err = {0};
    cdsh_cancel *cancel = cdsh_cancel_new(NULL);
    opts.cancel = cancel;
    struct sigaction sa = {0}, old_int, old_term, old_hup;
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);
    probe_watch w = {cancel, 0};
    pthread_t wt;
    bool watching = cancel && pthread_create(&wt, NULL, probe_watch_main, &w) == 0;
    int prc = cdsh_acp_probe_run(cdsh_cli_home(), engine, &opts, &rec, &path, &err);
    w.stop = 1;
    if (watching)
        pthread_join(wt, NULL);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    cdsh_cancel_free(cancel);
    if (prc < 0) {
        fprintf(stderr, "cdsh acp probe: %s\n", err.message);
        return err.rc == CDSH_ENOTFOUND ? 2 : 1;
    }
    if (probe_signal)
        fprintf(stderr, "cdsh acp probe: cut short by %s; the agent was closed\n",
                strsignal(probe_signal));
    bool ok = json_is_true(json_object_get(rec, "ok"));
    if (as_json) {
        char *text = cdsh_json_dump_pretty_dup(rec);
        fputs(text ? text : "{}\n", stdout);
        free(text);
    } else {
        json_t *init = json_object_get(rec, "initialize");
        json_t *info = json_object_get(init, "agentInfo");
        printf("engine:     %s (%s)\n", engine,
               json_string_value(json_object_get(rec, "resolved"))
                   ? json_string_value(json_object_get(rec, "resolved"))
                   : "command not found");
        if (json_is_true(json_object_get(init, "ok")))
            printf("initialize: ok in %lldms — %s %s\n",
                   (long long)json_integer_value(json_object_get(init, "latencyMs")),
                   json_string_value(json_object_get(info, "name"))
                       ? json_string_value(json_object_get(info, "name"))
                       : "?",
                   json_string_value(json_object_get(info, "version"))
                       ? json_string_value(json_object_get(info, "version"))
                       : "");
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(rec, "methods"), k, v) {
            printf("  %-28s %s\n", k, json_string_value(v));
        }
        json_t *pr = json_object_get(rec, "prompt");
        if (pr) {
            if (json_is_true(json_object_get(pr, "ok")))
                printf("prompt:     %s in %lldms: %s\n",
                       json_string_value(json_object_get(pr, "stopReason")),
                       (long long)json_integer_value(json_object_get(pr, "latencyMs")),
                       json_string_value(json_object_get(pr, "text")));
            else
                printf("prompt:     failed [%s]: %s\n",
                       json_string_value(json_object_get(pr, "class")),
                       json_string_value(json_object_get(pr, "error")));
        }
        size_t rejects = json_array_size(json_object_get(rec, "dialectRejects"));
        printf("rejected lines: %zu\n", rejects);
        json_t *h = json_object_get(rec, "health");
        printf("health:     %s%s%s\n", json_string_value(json_object_get(h, "status")),
               json_string_value(json_object_get(h, "error")) ? " — " : "",
               json_string_value(json_object_get(h, "error"))
                   ? json_string_value(json_object_get(h, "error"))
                   : "");
        printf("evidence:   %s\n", path);
    }
    free(path);
    json_decref(rec);
    return ok ? 0 : 1;
}
