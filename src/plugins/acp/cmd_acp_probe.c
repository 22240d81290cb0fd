/* cmd_acp_probe.c — `cdsh acp probe <engine> [--prompt TEXT] [--cwd DIR]
 * [--json]`: runs plugins/acp/probe.c and prints a summary or the record. */
#include "plugins/acp/cmd_acp_probe.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json.h"
#include "host/cli.h"
#include "plugins/acp/probe.h"

/* Handshake progress on stderr: a slow (cold) agent start is visible. */
static void print_wait(void *ud, const char *name, const char *step, int64_t elapsed_ms,
                       int64_t budget_ms)
{
    (void)ud;
    fprintf(stderr, "waiting for %s to %s… %lld s (gives up after %lld s)\n", name,
            strcmp(step, "initialize") == 0 ? "initialize" : step,
            (long long)(elapsed_ms / 1000), (long long)(budget_ms / 1000));
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
                 "\n"
                 "Spawns the engine, initializes, opens two sessions, tries the optional methods,\n"
                 "optionally runs one prompt, and writes the evidence record (credentials\n"
                 "redacted) under $CDSH_HOME/multi-acp/evidence/. Exit 0 when every step\n"
                 "succeeded, 1 when one failed. Ctrl-C, SIGTERM or SIGHUP cut it short (also\n"
                 "while the agent starts): the agent is closed, the record says \"cancelled\",\n"
                 "the engine's health is left as it was, exit 1.\n");
}

int cdsh_cmd_acp_probe(int argc, char **argv)
{
    const char *engine = NULL;
    cdsh_acp_probe_opts opts = {.on_wait = print_wait};
    bool as_json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            as_json = true;
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
    if (!engine) {
        usage(stderr);
        return 2;
    }
    if (opts.cwd && opts.cwd[0] != '/') {
        fprintf(stderr, "cdsh acp probe: --cwd must be an absolute path\n");
        return 2;
    }
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
