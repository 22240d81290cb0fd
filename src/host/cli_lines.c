/* cli_lines.c — a line queue over a file descriptor: bytes read with
 * poll()+read() into one growing buffer, complete lines handed out under a
 * mutex, so two threads reading one stdin never race for a line. */
#include "host/cli_lines.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"

struct cdsh_cli_lines {
    int fd;
    pthread_mutex_t mu;
    char *buf; /* unread bytes */
    size_t len, cap;
    bool eof;
};

cdsh_cli_lines *cdsh_cli_lines_new(int fd)
{
    cdsh_cli_lines *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->fd = fd;
    pthread_mutex_init(&l->mu, NULL);
    return l;
}

void cdsh_cli_lines_free(cdsh_cli_lines *l)
{
    if (!l)
        return;
    pthread_mutex_destroy(&l->mu);
    free(l->buf);
    free(l);
}

/* Length of the first complete line (newline excluded) or (size_t)-1. */
static size_t line_len_locked(const cdsh_cli_lines *l, bool *has_nl)
{
    const char *nl = l->len ? memchr(l->buf, '\n', l->len) : NULL;
    *has_nl = nl != NULL;
    if (nl)
        return (size_t)(nl - l->buf);
    return l->eof && l->len ? l->len : (size_t)-1;
}

static int grow_locked(cdsh_cli_lines *l, size_t more)
{
    if (l->cap - l->len >= more)
        return 0;
    size_t cap = l->cap ? l->cap : 8192;
    while (cap - l->len < more)
        cap *= 2;
    char *b = realloc(l->buf, cap);
    if (!b)
        return -1;
    l->buf = b;
    l->cap = cap;
    return 0;
}

/* Reads what fd has into the buffer (after poll said so). The other
 * reader may have drained it since, so it asks again without waiting:
 * read() never blocks under the lock (past the caller's timeout). 0, or -1. */
static int fill_locked(cdsh_cli_lines *l)
{
    struct pollfd p = {.fd = l->fd, .events = POLLIN};
    if (poll(&p, 1, 0) <= 0)
        return 0;
    if (grow_locked(l, 4096) < 0)
        return -1;
    ssize_t n = read(l->fd, l->buf + l->len, l->cap - l->len);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : -1;
    if (n == 0)
        l->eof = true;
    l->len += (size_t)n;
    return 0;
}

int cdsh_cli_lines_offer(cdsh_cli_lines *l, int timeout_ms, cdsh_cli_lines_offer_fn fn, void *ud)
{
    int64_t deadline = timeout_ms < 0 ? -1 : cdsh_clock_mono_ms() + timeout_ms;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        bool nl;
        size_t n = line_len_locked(l, &nl);
        if (n != (size_t)-1) {
            /* A last line without newline is terminated in spare capacity. */
            if (!nl && l->len == l->cap && grow_locked(l, 1) < 0) {
                pthread_mutex_unlock(&l->mu);
                return -1;
            }
            l->buf[n] = '\0';
            bool taken = fn(ud, l->buf);
            if (nl)
                l->buf[n] = '\n';
            if (taken) {
                size_t used = nl ? n + 1 : n;
                memmove(l->buf, l->buf + used, l->len - used);
                l->len -= used;
            }
            pthread_mutex_unlock(&l->mu);
            return taken ? 1 : 2;
        }
        if (l->eof) {
            pthread_mutex_unlock(&l->mu);
            return 0;
        }
        /* Wait outside the lock so the other reader can take buffered lines. */
        pthread_mutex_unlock(&l->mu);
        int wait = 100;
        if (deadline >= 0) {
            int64_t left = deadline - cdsh_clock_mono_ms();
            if (left <= 0)
                return -2;
            wait = left < wait ? (int)left : wait;
        }
        struct pollfd p = {.fd = l->fd, .events = POLLIN};
        int r = poll(&p, 1, wait);
        if (r < 0)
            return -1; /* EINTR included: the caller's Ctrl-C */
        pthread_mutex_lock(&l->mu);
        if (r > 0 && line_len_locked(l, &nl) == (size_t)-1 && !l->eof && fill_locked(l) < 0) {
            pthread_mutex_unlock(&l->mu);
            return -1;
        }
    }
}

static bool take_dup(void *ud, const char *line)
{
    char **out = ud;
    *out = strdup(line);
    return *out != NULL;
}

char *cdsh_cli_lines_next_dup(cdsh_cli_lines *l, bool *interrupted)
{
    char *line = NULL;
    int r = cdsh_cli_lines_offer(l, -1, take_dup, &line); /* 2: no memory for the copy */
    *interrupted = r == -1 && errno == EINTR;
    return r == 1 ? line : NULL;
}
