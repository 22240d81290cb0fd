/* xq_client.h — a UCI/UCCI engine driven over pipes for the xiangqi
 * benches (bench_xq_match, bench_xq_search): start, send a line, read
 * lines with a timeout, wait for a reply, quit; and where Debian's
 * fairy-stockfish lives. Header-only (static functions) because each
 * bench is one executable. Not thread-safe: one engine per thread. */
#ifndef CDSH_BENCH_XQ_CLIENT_H
#define CDSH_BENCH_XQ_CLIENT_H

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/process.h"

typedef struct opp {
    cdsh_process *proc;
    int in, out;
    char buf[1 << 16];
    size_t len;
    char name[128];
    int ranks1;
} opp;

static inline int opp_send(opp *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int opp_send(opp *o, const char *fmt, ...)
{
    char line[65536];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= (int)sizeof line - 1)
        return -1;
    line[n++] = '\n';
    for (int off = 0; off < n;) {
        ssize_t w = write(o->in, line + off, (size_t)(n - off));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        off += (int)w;
    }
    return 0;
}

/* Next line (without newline) into out; -1 on EOF or after timeout_ms. */
static inline int opp_line(opp *o, char *out, size_t cap, int timeout_ms)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        char *nl = memchr(o->buf, '\n', o->len);
        if (nl) {
            size_t l = (size_t)(nl - o->buf);
            snprintf(out, cap, "%.*s", (int)l, o->buf);
            memmove(o->buf, nl + 1, o->len - l - 1);
            o->len -= l + 1;
            size_t ol = strlen(out);
            if (ol && out[ol - 1] == '\r')
                out[ol - 1] = '\0';
            return 0;
        }
        struct timespec t1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        int left = timeout_ms -
                   (int)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0 || o->len >= sizeof o->buf)
            return -1;
        struct pollfd p = {.fd = o->out, .events = POLLIN};
        if (poll(&p, 1, left) <= 0)
            continue;
        ssize_t n = read(o->out, o->buf + o->len, sizeof o->buf - o->len);
        if (n <= 0)
            return -1;
        o->len += (size_t)n;
    }
}

static inline int opp_expect(opp *o, const char *prefix, int timeout_ms)
{
    char line[8192];
    while (opp_line(o, line, sizeof line, timeout_ms) == 0) {
        if (strncmp(line, "id name ", 8) == 0)
            snprintf(o->name, sizeof o->name, "%.100s", line + 8);
        if (strncmp(line, prefix, strlen(prefix)) == 0)
            return 0;
    }
    return -1;
}

static inline int opp_start(opp *o, const char *engine, int ucci, int ranks1)
{
    /* "path arg..." (split on spaces), e.g. "build/cdsh xiangqi uci" */
    char cmd[1024];
    const char *argv[16];
    int argc = 0;
    snprintf(cmd, sizeof cmd, "%s", engine);
    for (char *save = NULL, *t = strtok_r(cmd, " ", &save); t && argc < 15;
         t = strtok_r(NULL, " ", &save))
        argv[argc++] = t;
    argv[argc] = NULL;
    if (argc == 0)
        return -1;
    cdsh_process_opts po = {.stdin_mode = CDSH_PROCESS_PIPE,
                            .stdout_mode = CDSH_PROCESS_PIPE,
                            .stderr_mode = CDSH_PROCESS_NULL};
    cdsh_error err = {0};
    memset(o, 0, sizeof *o);
    if (cdsh_process_spawn(argv, &po, &o->proc, &err) != 0) {
        fprintf(stderr, "cannot start %s: %s\n", engine, err.message);
        return -1;
    }
    o->in = cdsh_process_stdin_fd(o->proc);
    o->out = cdsh_process_stdout_fd(o->proc);
    snprintf(o->name, sizeof o->name, "%.100s", engine);
    if (ucci) {
        opp_send(o, "ucci");
        if (opp_expect(o, "ucciok", 10000))
            return -1;
        opp_send(o, "setoption usemillisec true");
    } else {
        opp_send(o, "uci");
        if (opp_expect(o, "uciok", 10000))
            return -1;
        opp_send(o, "setoption name UCI_Variant value xiangqi");
        /* the in-process cdsh searches with 1 ms of overhead; the runner
         * never flags a slow move, so the opponent gets the same */
        opp_send(o, "setoption name Move Overhead value 1");
    }
    o->ranks1 = ranks1 >= 0 ? ranks1 : (!ucci && strstr(o->name, "Fairy-Stockfish") != NULL);
    opp_send(o, "isready");
    return opp_expect(o, "readyok", 10000);
}

static inline void opp_stop(opp *o)
{
    if (!o->proc)
        return;
    opp_send(o, "quit");
    cdsh_process_status st;
    if (cdsh_process_wait(o->proc, 2000, NULL, &st, NULL) != 0)
        cdsh_process_terminate(o->proc, 500, NULL, NULL);
    cdsh_process_free(o->proc);
    o->proc = NULL;
}

static inline const char *find_fsf(void)
{
    const char *env = getenv("CDSH_FAIRY_STOCKFISH");
    if (env && access(env, X_OK) == 0)
        return env;
    static const char *paths[] = {"/usr/games/fairy-stockfish", "/usr/bin/fairy-stockfish",
                                  "/usr/local/bin/fairy-stockfish"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (access(paths[i], X_OK) == 0)
            return paths[i];
    return NULL;
}

#endif
