/* template.c — the host side of card templates (see template.h): finds the
 * runtime, starts the worker (a fork that runs template_worker.c), sends
 * one request at a time under a mutex, enforces the wall clock and the
 * reply bound, and turns the worker's reply into a result or an error.
 * The worker's socket is close-on-exec and the worker exits when it reads
 * end-of-file, so it never outlives the host. Globals: the one worker and
 * the configured runtime directory, both under g_lock. */
#include "plugins/tavern/template.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/strbuf.h"
#include "plugins/tavern/template_jsc.h"
#include "plugins/tavern/template_priv.h"

#ifndef CDSH_RUNTIME_JS_SOURCE_DIR
#define CDSH_RUNTIME_JS_SOURCE_DIR "runtime/js"
#endif

#define START_MS 30000 /* the worker's start-up (library load) deadline */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char *g_dir;          /* configured runtime directory, or NULL */
static pid_t g_pid = -1;     /* the worker */
static int g_fd = -1;        /* its socket */
static size_t g_mem;         /* the memory limit it was started with */
static size_t g_rss_cap;     /* the worker's resident set at ready + its allowance */
static uint32_t g_start_cpu_us; /* the worker's start-up CPU time */
static int64_t g_cpu_us = -1; /* the worker's CPU time for the last evaluation */

void cdsh_tavern_template_limits_default(cdsh_tavern_template_limits *lim)
{
    lim->mem_bytes = 512u << 20;
    lim->wall_ms = 1000;
    lim->max_input = 16u << 20;
    lim->max_output = 1u << 20;
}

bool cdsh_tavern_template_has_tags(const char *text)
{
    return text && strstr(text, "<%");
}

void cdsh_tavern_template_set_runtime_dir(const char *dir)
{
    pthread_mutex_lock(&g_lock);
    free(g_dir);
    g_dir = dir ? strdup(dir) : NULL;
    pthread_mutex_unlock(&g_lock);
}

static bool has_file(const char *dir, const char *rel)
{
    char p[PATH_MAX];
    struct stat st;
    return snprintf(p, sizeof p, "%s/%s", dir, rel) < (int)sizeof p && stat(p, &st) == 0;
}

/* The runtime directory (owned): the first candidate holding lib-realm.js. */
static char *find_runtime(void)
{
    if (g_dir)
        return strdup(g_dir);
    const char *env = getenv("CDSH_JS_RUNTIME");
    if (env && *env)
        return strdup(env);
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = 0;
        static const char *const rel[] = {"runtime/js", "share/cdsh/runtime/js",
                                          "../runtime/js", "../share/cdsh/runtime/js"};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            char cand[PATH_MAX + 64];
            snprintf(cand, sizeof cand, "%s/%s", exe, rel[i]);
            if (has_file(cand, cdsh_tavern_template_files[CDSH_TPL_LIB_REALM]))
                return strdup(cand);
        }
    }
    return strdup(CDSH_RUNTIME_JS_SOURCE_DIR);
}

static void stop_locked(void)
{
    if (g_fd >= 0)
        close(g_fd);
    g_fd = -1;
    if (g_pid > 0) {
        kill(g_pid, SIGKILL);
        while (waitpid(g_pid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    g_pid = -1;
}

void cdsh_tavern_template_worker_stop(void)
{
    pthread_mutex_lock(&g_lock);
    stop_locked();
    pthread_mutex_unlock(&g_lock);
}

int64_t cdsh_tavern_template_last_cpu_us(void)
{
    pthread_mutex_lock(&g_lock);
    int64_t v = g_cpu_us;
    pthread_mutex_unlock(&g_lock);
    return v;
}

int64_t cdsh_tavern_template_start_cpu_us(void)
{
    pthread_mutex_lock(&g_lock);
    int64_t v = g_start_cpu_us;
    pthread_mutex_unlock(&g_lock);
    return v;
}

int cdsh_tavern_template_worker_pid(void)
{
    pthread_mutex_lock(&g_lock);
    int pid = g_pid;
    pthread_mutex_unlock(&g_lock);
    return pid;
}

/* Resident set of pid in bytes (0 if unknown). */
static size_t rss_of(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[128];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    unsigned long size = 0, res = 0;
    if (sscanf(buf, "%lu %lu", &size, &res) != 2)
        return 0;
    return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

static int64_t left_ms(int64_t deadline)
{
    int64_t l = deadline - cdsh_clock_mono_ms();
    return l < 0 ? 0 : l;
}

/* Reads one frame before the deadline: 0, 1 on timeout, 2 when the
 * worker's resident set passed rss_cap (if not 0; checked every 20 ms), -1
 * on end of file, -2 for a frame larger than cap. */
static int read_frame(int fd, int64_t deadline, size_t cap, cdsh_strbuf *out, uint32_t *word2,
                      size_t rss_cap)
{
    unsigned char h[CDSH_TPL_HEADER];
    size_t got = 0, want = sizeof h, len = 0;
    bool header = true;
    char buf[65536];
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        int64_t left = left_ms(deadline);
        int pr = poll(&p, 1, (int)(rss_cap && left > 20 ? 20 : left));
        if (pr == 0 && left_ms(deadline) == 0)
            return 1;
        if (pr == 0 && rss_cap && rss_of(g_pid) > rss_cap)
            return 2;
        if (pr == 0 || (pr < 0 && errno == EINTR))
            continue;
        if (pr < 0)
            return -1;
        size_t ask = header ? want - got : (len - out->len < sizeof buf ? len - out->len : sizeof buf);
        ssize_t r = recv(fd, header ? (char *)h + got : buf, ask, 0);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0)
            return -1;
        if (header) {
            got += (size_t)r;
            if (got < want)
                continue;
            len = (size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16 | (size_t)h[3] << 24;
            if (word2)
                *word2 = (uint32_t)h[4] | (uint32_t)h[5] << 8 | (uint32_t)h[6] << 16 |
                         (uint32_t)h[7] << 24;
            if (len > cap)
                return -2;
            header = false;
            if (!len)
                return 0;
            continue;
        }
        cdsh_strbuf_append(out, buf, (size_t)r);
        if (out->len >= len)
            return 0;
    }
}

/* Starts the worker under g_lock; on failure err says why. */
static int start_locked(size_t mem, cdsh_error *err)
{
    char *dir = find_runtime();
    if (!dir)
        return cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
    for (int i = 0; i < CDSH_TPL_NFILES; i++)
        if (!has_file(dir, cdsh_tavern_template_files[i])) {
            int rc = cdsh_error_set(err, CDSH_ENOTFOUND, "TEMPLATE_RUNTIME_MISSING",
                                    "the template runtime file %s/%s is missing: run "
                                    "scripts/bootstrap.sh (npm ci and npm run build in "
                                    "runtime/js) or set CDSH_JS_RUNTIME",
                                    dir, cdsh_tavern_template_files[i]);
            free(dir);
            return rc;
        }
    /* Before the fork, so the worker inherits JavaScriptCore relocated
     * and a process that never renders a template never maps it. */
    int loaded = cdsh_tavern_jsc_load(err);
    if (loaded != 0) {
        free(dir);
        return loaded;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        free(dir);
        return cdsh_error_set(err, CDSH_EIO, "TEMPLATE_WORKER_FAILED", "socketpair: %s",
                              strerror(errno));
    }
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        free(dir);
        return cdsh_error_set(err, CDSH_EIO, "TEMPLATE_WORKER_FAILED", "fork: %s", strerror(e));
    }
    if (pid == 0) {
        close(sv[0]);
        cdsh_tavern_template_worker_main(sv[1], dir, mem);
    }
    free(dir);
    close(sv[1]);
    g_pid = pid;
    g_fd = sv[0];
    g_mem = mem;
    cdsh_strbuf rep;
    cdsh_strbuf_init(&rep);
    int r = read_frame(g_fd, cdsh_clock_mono_ms() + START_MS, 1u << 16, &rep, &g_start_cpu_us, 0);
    json_t *j = r == 0 && rep.len ? json_loadb(rep.data, rep.len, 0, NULL) : NULL;
    cdsh_strbuf_deinit(&rep);
    int rc = 0;
    /* A second watch from here, a little above the worker's own. */
    g_rss_cap = mem ? rss_of(pid) + mem + mem / 4 : 0;
    if (!json_is_true(json_object_get(j, "ok"))) {
        const char *code = json_string_value(json_object_get(j, "code"));
        const char *msg = json_string_value(json_object_get(j, "message"));
        rc = cdsh_error_set(err, CDSH_EIO, code ? code : "TEMPLATE_WORKER_FAILED",
                            "the template worker did not start: %s",
                            msg ? msg : r == 1 ? "timed out" : "it exited");
        stop_locked();
    }
    json_decref(j);
    return rc;
}

static int code_rc(const char *code)
{
    if (!strcmp(code, "TEMPLATE_TIMEOUT"))
        return CDSH_ETIMEDOUT;
    if (!strcmp(code, "TEMPLATE_MEMORY") || !strcmp(code, "TEMPLATE_OUTPUT_TOO_LARGE"))
        return CDSH_ETOOBIG;
    if (!strcmp(code, "TEMPLATE_CRASHED") || !strcmp(code, "TEMPLATE_WORKER_FAILED"))
        return CDSH_EIO;
    return CDSH_EINVAL;
}

/* Fills err and *detail from an error reply. */
static int reply_error(const json_t *reply, json_t **detail, cdsh_error *err)
{
    const char *code = json_string_value(json_object_get(reply, "code"));
    const char *msg = json_string_value(json_object_get(reply, "message"));
    const char *expr = json_string_value(json_object_get(reply, "expression"));
    json_int_t line = json_integer_value(json_object_get(reply, "line"));
    json_int_t col = json_integer_value(json_object_get(reply, "column"));
    if (!code)
        code = "TEMPLATE_CRASHED";
    if (!msg)
        msg = "template failed";
    int rc;
    if (line > 0 && expr && *expr)
        rc = cdsh_error_set(err, code_rc(code), code, "line %lld, column %lld: %s (in `%.160s`)",
                            (long long)line, (long long)col, msg, expr);
    else if (line > 0)
        rc = cdsh_error_set(err, code_rc(code), code, "line %lld: %s", (long long)line, msg);
    else
        rc = cdsh_error_set(err, code_rc(code), code, "%s", msg);
    if (detail)
        *detail = json_pack("{s:s, s:s, s:I, s:I, s:s}", "code", code, "message", msg, "line",
                            line, "column", col, "expression", expr ? expr : "");
    return rc;
}

/* Long by design: one request's life under the lock (start if needed,
 * send, wait under the wall clock, classify every way the worker can end);
 * the worker must be stopped on each failure path, which a split would
 * have to thread through. */
int cdsh_tavern_template_render_ex(const char *src, const json_t *ctx, bool write,
                                   const cdsh_tavern_template_limits *lim, json_t **result,
                                   json_t **detail, cdsh_error *err)
{
    if (detail)
        *detail = NULL;
    if (!src || !result)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "template_render: no source");
    *result = NULL;
    cdsh_tavern_template_limits L;
    if (lim)
        L = *lim;
    else
        cdsh_tavern_template_limits_default(&L);
    if (strlen(src) > CDSH_TAVERN_TEMPLATE_MAX_SOURCE)
        return cdsh_error_set(err, CDSH_ETOOBIG, "TEMPLATE_TOO_BIG",
                              "template is larger than %u bytes", CDSH_TAVERN_TEMPLATE_MAX_SOURCE);
    json_t *reqj = json_pack("{s:s, s:O?, s:b, s:I}", "src", src, "ctx", ctx, "write", write,
                             "max_output", (json_int_t)L.max_output);
    char *req = reqj ? json_dumps(reqj, JSON_COMPACT) : NULL;
    json_decref(reqj);
    if (!req)
        return cdsh_error_set(err, CDSH_EINVAL, "TEMPLATE_INPUT_TOO_LARGE",
                              "template input cannot be encoded (invalid UTF-8?)");
    size_t rl = strlen(req);
    if (rl > L.max_input || rl > CDSH_TPL_MAX_FRAME) {
        free(req);
        return cdsh_error_set(err, CDSH_ETOOBIG, "TEMPLATE_INPUT_TOO_LARGE",
                              "template input is larger than %zu bytes", L.max_input);
    }
    cdsh_strbuf rep;
    cdsh_strbuf_init(&rep);
    json_t *reply = NULL;
    int rc = 0;
    pthread_mutex_lock(&g_lock);
    if (g_pid > 0 && g_mem != L.mem_bytes)
        stop_locked(); /* another memory limit: a worker started with it */
    if (g_pid > 0 && waitpid(g_pid, NULL, WNOHANG) == g_pid) {
        g_pid = -1; /* died while idle */
        stop_locked();
    }
    if (g_pid < 0 && (rc = start_locked(L.mem_bytes, err)) < 0)
        goto cleanup;
    uint32_t time_ms = L.wall_ms > 0 ? (uint32_t)L.wall_ms : 1000;
    if (cdsh_tavern_template_frame_write(g_fd, req, rl, time_ms, (uint32_t)L.max_output) < 0) {
        stop_locked();
        rc = cdsh_error_set(err, CDSH_EIO, "TEMPLATE_CRASHED", "the template worker is gone");
        goto cleanup;
    }
    /* JSC stops the script at time_ms of its own time; the wall clock here
     * is the backstop for a worker that stops answering. */
    int64_t deadline = cdsh_clock_mono_ms() + time_ms + (time_ms / 2 > 500 ? time_ms / 2 : 500);
    uint32_t cpu_us = 0;
    int r = read_frame(g_fd, deadline, L.max_output * 6 + 65536, &rep, &cpu_us, g_rss_cap);
    g_cpu_us = r == 0 ? (int64_t)cpu_us : -1;
    if (r == 1) {
        stop_locked();
        rc = cdsh_error_set(err, CDSH_ETIMEDOUT, "TEMPLATE_TIMEOUT",
                            "template ran longer than %u ms and was stopped", time_ms);
        goto cleanup;
    }
    if (r == 2) {
        /* The worker's own watch missed it (stuck in native code). */
        stop_locked();
        rc = cdsh_error_set(err, CDSH_ETOOBIG, "TEMPLATE_MEMORY",
                            "template used more than its %zu MiB of memory and was stopped",
                            L.mem_bytes >> 20);
        goto cleanup;
    }
    if (r == -2) {
        stop_locked();
        rc = cdsh_error_set(err, CDSH_ETOOBIG, "TEMPLATE_OUTPUT_TOO_LARGE",
                            "template output is larger than %zu bytes", L.max_output);
        goto cleanup;
    }
    if (r < 0) {
        /* The worker died mid-evaluation: out of memory (RLIMIT_DATA makes
         * JavaScriptCore abort) or a crash. */
        int status = 0;
        struct rusage ru = {0};
        close(g_fd);
        g_fd = -1;
        kill(g_pid, SIGKILL);
        while (wait4(g_pid, &status, 0, &ru) < 0 && errno == EINTR) {
        }
        g_pid = -1;
        bool mem = (size_t)ru.ru_maxrss * 1024 >= L.mem_bytes / 2;
        rc = cdsh_error_set(err, mem ? CDSH_ETOOBIG : CDSH_EIO,
                            mem ? "TEMPLATE_MEMORY" : "TEMPLATE_CRASHED",
                            mem ? "template exceeded its memory limit (%zu MiB) and was stopped"
                                : "template worker ended without a reply",
                            L.mem_bytes >> 20);
        goto cleanup;
    }
    reply = json_loadb(rep.data ? rep.data : "", rep.len, 0, NULL);
    if (!json_is_object(reply)) {
        stop_locked();
        rc = cdsh_error_set(err, CDSH_EPROTO, "TEMPLATE_CRASHED",
                            "template worker sent an unreadable reply");
        goto cleanup;
    }
    if (!json_is_true(json_object_get(reply, "ok"))) {
        rc = reply_error(reply, detail, err);
        const char *code = json_string_value(json_object_get(reply, "code"));
        if (code && (!strcmp(code, "TEMPLATE_MEMORY") || !strcmp(code, "TEMPLATE_CRASHED")))
            stop_locked(); /* start the next evaluation from a clean heap */
        goto cleanup;
    }
    json_t *res = json_pack("{s:O}", "output", json_object_get(reply, "output"));
    if (write && res) {
        json_object_set(res, "vars", json_object_get(reply, "vars"));
        json_object_set(res, "changed", json_object_get(reply, "changed"));
    }
    *result = res;
    rc = res ? 0 : cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
cleanup:
    pthread_mutex_unlock(&g_lock);
    if (rc < 0 && detail && !*detail)
        *detail = json_pack("{s:s, s:s, s:i, s:i, s:s}", "code", err ? err->code : "",
                            "message", err ? err->message : "", "line", 0, "column", 0,
                            "expression", "");
    json_decref(reply);
    cdsh_strbuf_deinit(&rep);
    free(req);
    return rc;
}

int cdsh_tavern_template_render(const char *src, const json_t *ctx, bool write,
                                const cdsh_tavern_template_limits *lim, json_t **result,
                                cdsh_error *err)
{
    return cdsh_tavern_template_render_ex(src, ctx, write, lim, result, NULL, err);
}
