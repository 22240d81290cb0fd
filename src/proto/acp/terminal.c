/* terminal.c — ACP terminals: spawn through base/process, a reader thread
 * per command (output ring, reaping, held wait_for_exit answers), kill and
 * release. Capability and cwd confinement are checked by conn.c first. */
#include "proto/acp/terminal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base/process.h"
#include "base/utf8.h"

#define READ_POLL_MS 50
#define ERR_NOT_FOUND (-32002)
#define ERR_CANCELLED (-32800)

typedef struct waiter {
    cdsh_jsonrpc_request *req; /* held */
    struct waiter *next;
} waiter;

typedef struct term {
    char *id, *session_id;
    cdsh_process *proc;
    pthread_t reader;
    bool reader_started;
    /* Retained output: linear until it reaches limit, then a ring of
     * exactly limit bytes starting at start. */
    char *buf;
    size_t alloc, start, len, limit;
    bool truncated;
    bool exited; /* reaped and drained: st is final */
    cdsh_process_status st;
    waiter *waiters;
    struct cdsh_acp_terminals *t;
    struct term *next;
} term;

struct cdsh_acp_terminals {
    pthread_mutex_t mu; /* guards the list, every term's fields and its proc */
    term *list;
    size_t count; /* created or being created */
    uint64_t seq;
};

cdsh_acp_terminals *cdsh_acp_terminals_new(void)
{
    cdsh_acp_terminals *t = calloc(1, sizeof *t);
    if (t)
        pthread_mutex_init(&t->mu, NULL);
    return t;
}

/* ---- output ------------------------------------------------------------------ */

/* Appends n bytes, dropping the oldest once limit is reached (mu held). */
static void output_add(term *tm, const char *p, size_t n)
{
    if (tm->limit == 0) {
        tm->truncated = tm->truncated || n > 0;
        return;
    }
    if (tm->alloc < tm->limit && tm->len + n > tm->alloc) {
        size_t want = tm->alloc ? tm->alloc : 4096;
        while (want < tm->len + n && want < tm->limit)
            want *= 2;
        if (want > tm->limit)
            want = tm->limit;
        char *grown = realloc(tm->buf, want);
        if (!grown) {
            tm->truncated = true; /* out of memory: keep what we have */
            return;
        }
        tm->buf = grown;
        tm->alloc = want;
    }
    if (tm->len + n <= tm->alloc) { /* still linear (start is 0) */
        memcpy(tm->buf + tm->len, p, n);
        tm->len += n;
        return;
    }
    /* The ring is full-size now (alloc == limit). */
    tm->truncated = true;
    if (n >= tm->limit) {
        memcpy(tm->buf, p + (n - tm->limit), tm->limit);
        tm->start = 0;
        tm->len = tm->limit;
        return;
    }
    size_t pos = (tm->start + tm->len) % tm->limit;
    size_t first = tm->limit - pos < n ? tm->limit - pos : n;
    memcpy(tm->buf + pos, p, first);
    memcpy(tm->buf, p + first, n - first);
    size_t over = tm->len + n > tm->limit ? tm->len + n - tm->limit : 0;
    tm->start = (tm->start + over) % tm->limit;
    tm->len = tm->len + n - over;
}

/* Owned UTF-8 text of the retained output (mu held). Truncation happened
 * at the front, so a leading partial character is dropped; while the
 * command runs, a trailing partial character waits for its other bytes. */
static char *output_text_dup(const term *tm, size_t *out_len)
{
    char *lin = malloc(tm->len + 1);
    if (!lin)
        return NULL;
    size_t first = tm->alloc - tm->start < tm->len ? tm->alloc - tm->start : tm->len;
    if (tm->len > 0) {
        memcpy(lin, tm->buf + tm->start, first);
        memcpy(lin + first, tm->buf, tm->len - first);
    }
    size_t b = 0, e = tm->len;
    if (tm->truncated)
        while (b < e && b < 3 && ((unsigned char)lin[b] & 0xC0) == 0x80)
            b++;
    if (!tm->exited) {
        for (size_t k = 1; k <= 3 && k <= e - b; k++) {
            unsigned char c = (unsigned char)lin[e - k];
            if ((c & 0xC0) == 0x80)
                continue;
            size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
            if (need > k)
                e -= k;
            break;
        }
    }
    char *text = cdsh_utf8_sanitize_dup(lin + b, e - b, out_len);
    free(lin);
    /* Replacement characters can outgrow the limit: cut again at the front. */
    if (text && *out_len > tm->limit) {
        size_t cut = *out_len - tm->limit;
        while (cut < *out_len && ((unsigned char)text[cut] & 0xC0) == 0x80)
            cut++;
        memmove(text, text + cut, *out_len - cut + 1);
        *out_len -= cut;
    }
    return text;
}

/* {exitCode, signal} of a finished command (ACP TerminalExitStatus). */
static json_t *status_json(const cdsh_process_status *st)
{
    if (st->exited)
        return json_pack("{s:i,s:n}", "exitCode", st->exit_code, "signal");
    const char *abbrev = sigabbrev_np(st->term_signal);
    char name[32];
    if (abbrev)
        snprintf(name, sizeof name, "SIG%s", abbrev);
    else
        snprintf(name, sizeof name, "%d", st->term_signal);
    return json_pack("{s:n,s:s}", "exitCode", "signal", name);
}

/* ---- the reader thread --------------------------------------------------------------- */

static void answer_waiters(waiter *w, const cdsh_process_status *st)
{
    while (w) {
        waiter *next = w->next;
        if (st) {
            json_t *r = status_json(st);
            cdsh_jsonrpc_respond(w->req, r, NULL);
            json_decref(r);
        } else {
            cdsh_jsonrpc_respond_error(w->req, ERR_CANCELLED, "Request cancelled", NULL, NULL);
        }
        free(w);
        w = next;
    }
}

/* Unlinks the waits whose requests were cancelled (mu held). */
static waiter *take_cancelled(term *tm)
{
    waiter *out = NULL;
    for (waiter **pp = &tm->waiters; *pp;) {
        waiter *w = *pp;
        if (cdsh_cancel_is_fired(cdsh_jsonrpc_request_cancel_get(w->req))) {
            *pp = w->next;
            w->next = out;
            out = w;
        } else {
            pp = &w->next;
        }
    }
    return out;
}

static void *reader_main(void *arg)
{
    term *tm = arg;
    cdsh_acp_terminals *t = tm->t;
    int fds[2] = {cdsh_process_stdout_fd(tm->proc), cdsh_process_stderr_fd(tm->proc)};
    char buf[8192];
    bool exited = false;
    /* Once the command is reaped, only the bytes its pipes held at that
     * moment are read: a background child holding a pipe open (or still
     * writing into it) must not keep us here. */
    size_t left[2] = {0, 0};
    cdsh_process_status st = {0};
    for (;;) {
        struct pollfd pf[2];
        int which[2];
        nfds_t n = 0;
        for (int i = 0; i < 2; i++)
            if (fds[i] >= 0) {
                which[n] = i;
                pf[n++] = (struct pollfd){.fd = fds[i], .events = POLLIN};
            }
        int ready = poll(n ? pf : NULL, n, exited ? 0 : READ_POLL_MS);
        if (ready < 0 && errno != EINTR)
            break;
        bool got = false;
        for (nfds_t i = 0; ready > 0 && i < n; i++) {
            int k = which[i];
            if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            size_t want = exited && left[k] < sizeof buf ? left[k] : sizeof buf;
            ssize_t r = want ? read(fds[k], buf, want) : 0;
            if (r < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (r <= 0) {
                fds[k] = -1;
                continue;
            }
            if (exited)
                left[k] -= (size_t)r;
            got = true;
            pthread_mutex_lock(&t->mu);
            output_add(tm, buf, (size_t)r);
            pthread_mutex_unlock(&t->mu);
        }
        if (exited && !got)
            break;
        pthread_mutex_lock(&t->mu);
        if (!exited && cdsh_process_wait(tm->proc, 0, NULL, &st, NULL) == 0) {
            exited = true;
            for (int k = 0; k < 2; k++) {
                int q = 0;
                left[k] = fds[k] >= 0 && ioctl(fds[k], FIONREAD, &q) == 0 && q > 0 ? (size_t)q : 0;
            }
        }
        waiter *gone = take_cancelled(tm);
        pthread_mutex_unlock(&t->mu);
        answer_waiters(gone, NULL);
    }
    pthread_mutex_lock(&t->mu);
    if (!exited && cdsh_process_wait(tm->proc, 0, NULL, &st, NULL) != 0) {
        /* poll failed: nothing more can be read; the status comes from a kill. */
        cdsh_process_terminate(tm->proc, 0, &st, NULL);
    }
    tm->st = st;
    tm->exited = true;
    waiter *w = tm->waiters;
    tm->waiters = NULL;
    pthread_mutex_unlock(&t->mu);
    answer_waiters(w, &st);
    return NULL;
}

/* ---- lifecycle -------------------------------------------------------------------------- */

/* Kills, joins and frees a terminal already unlinked from the table. */
static void term_destroy(cdsh_acp_terminals *t, term *tm)
{
    pthread_mutex_lock(&t->mu);
    if (!tm->exited)
        cdsh_process_signal(tm->proc, SIGKILL, NULL);
    pthread_mutex_unlock(&t->mu);
    if (tm->reader_started)
        pthread_join(tm->reader, NULL);
    /* Group members that outlived the command (background jobs) go too. */
    cdsh_process_terminate(tm->proc, 0, NULL, NULL);
    cdsh_process_free(tm->proc);
    answer_waiters(tm->waiters, &tm->st);
    free(tm->buf);
    free(tm->id);
    free(tm->session_id);
    free(tm);
}

/* Destroys a list of unlinked terminals. */
static void destroy_list(cdsh_acp_terminals *t, term *list)
{
    while (list) {
        term *next = list->next;
        term_destroy(t, list);
        list = next;
    }
}

void cdsh_acp_terminals_free(cdsh_acp_terminals *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    term *list = t->list;
    t->list = NULL;
    pthread_mutex_unlock(&t->mu);
    destroy_list(t, list);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

size_t cdsh_acp_terminals_release_session(cdsh_acp_terminals *t, const char *session_id)
{
    if (!t || !session_id)
        return 0;
    term *gone = NULL;
    size_t n = 0;
    pthread_mutex_lock(&t->mu);
    for (term **pp = &t->list; *pp;) {
        term *tm = *pp;
        if (strcmp(tm->session_id, session_id) == 0) {
            *pp = tm->next;
            tm->next = gone;
            gone = tm;
            t->count--;
            n++;
        } else {
            pp = &tm->next;
        }
    }
    pthread_mutex_unlock(&t->mu);
    destroy_list(t, gone);
    return n;
}

size_t cdsh_acp_terminals_count(cdsh_acp_terminals *t)
{
    if (!t)
        return 0;
    pthread_mutex_lock(&t->mu);
    size_t n = t->count;
    pthread_mutex_unlock(&t->mu);
    return n;
}

/* ---- requests --------------------------------------------------------------------------- */

static void respond_invalid(cdsh_jsonrpc_request *req, const char *what)
{
    char msg[300];
    snprintf(msg, sizeof msg, "Invalid params: %s", what);
    cdsh_jsonrpc_respond_error(req, CDSH_JSONRPC_INVALID_PARAMS, msg, NULL, NULL);
}

static void free_strv(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

/* argv {command, args...} and env {"NAME=value"...} from create's params,
 * or NULL after answering req. */
static bool create_params(cdsh_jsonrpc_request *req, const json_t *params, char ***argv_out,
                          char ***env_out, size_t *limit)
{
    const char *command = json_string_value(json_object_get(params, "command"));
    json_t *args = json_object_get(params, "args"), *env = json_object_get(params, "env");
    json_t *lim = json_object_get(params, "outputByteLimit");
    if (!command || !*command) {
        respond_invalid(req, "command must be a non-empty string");
        return false;
    }
    if (args && !json_is_null(args) && !json_is_array(args)) {
        respond_invalid(req, "args must be an array of strings");
        return false;
    }
    if (env && !json_is_null(env) && !json_is_array(env)) {
        respond_invalid(req, "env must be an array of {name, value}");
        return false;
    }
    if (lim && !json_is_null(lim) && (!json_is_integer(lim) || json_integer_value(lim) < 0)) {
        respond_invalid(req, "outputByteLimit must be a non-negative integer");
        return false;
    }
    *limit = CDSH_ACP_TERMINAL_OUTPUT_DEFAULT;
    if (json_is_integer(lim))
        *limit = (uint64_t)json_integer_value(lim) > CDSH_ACP_TERMINAL_OUTPUT_MAX
                     ? CDSH_ACP_TERMINAL_OUTPUT_MAX
                     : (size_t)json_integer_value(lim);
    size_t na = json_array_size(args), ne = json_array_size(env);
    /* Without args the command is a shell command line, as editors run it
     * (Claude Code sends "echo a > f; cat f" that way): /bin/sh -c command.
     * With args it is a program and its argv, never re-parsed by a shell. */
    bool shell = na == 0;
    char **argv = calloc(shell ? 4 : na + 2, sizeof *argv), **envv = calloc(ne + 1, sizeof *envv);
    bool ok = argv && envv;
    if (ok && shell)
        ok = (argv[0] = strdup("/bin/sh")) && (argv[1] = strdup("-c")) &&
             (argv[2] = strdup(command));
    else if (ok)
        ok = (argv[0] = strdup(command)) != NULL;
    const char *bad = ok ? NULL : "out of memory";
    for (size_t i = 0; ok && i < na; i++) {
        const char *a = json_string_value(json_array_get(args, i));
        ok = a && (argv[i + 1] = strdup(a)) != NULL;
        if (!ok)
            bad = a ? "out of memory" : "args must be an array of strings";
    }
    for (size_t i = 0; ok && i < ne; i++) {
        json_t *v = json_array_get(env, i);
        const char *name = json_string_value(json_object_get(v, "name"));
        const char *value = json_string_value(json_object_get(v, "value"));
        ok = name && *name && !strchr(name, '=') && value;
        if (!ok) {
            bad = "env entries need a name (without '=') and a string value";
            break;
        }
        size_t len = strlen(name) + strlen(value) + 2;
        envv[i] = malloc(len);
        ok = envv[i] != NULL;
        if (ok)
            snprintf(envv[i], len, "%s=%s", name, value);
        else
            bad = "out of memory";
    }
    if (!ok) {
        if (strcmp(bad, "out of memory") == 0)
            cdsh_jsonrpc_respond_error(req, CDSH_JSONRPC_INTERNAL_ERROR,
                                       "Internal error: out of "
                                       "memory",
                                       NULL, NULL);
        else
            respond_invalid(req, bad);
        free_strv(argv);
        free_strv(envv);
        return false;
    }
    *argv_out = argv;
    *env_out = envv;
    return true;
}

static void handle_create(cdsh_acp_terminals *t, cdsh_jsonrpc_request *req, const json_t *params,
                          const char *session_id, const char *cwd)
{
    char **argv = NULL, **env = NULL;
    size_t limit = 0;
    if (!create_params(req, params, &argv, &env, &limit))
        return;
    term *tm = NULL;
    pthread_mutex_lock(&t->mu);
    bool full = t->count >= CDSH_ACP_TERMINALS_MAX;
    if (!full)
        t->count++; /* reserved; given back on failure */
    uint64_t seq = ++t->seq;
    pthread_mutex_unlock(&t->mu);
    if (full) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "Internal error: too many terminals (%d held); release some first",
                 CDSH_ACP_TERMINALS_MAX);
        cdsh_jsonrpc_respond_error(req, CDSH_JSONRPC_INTERNAL_ERROR, msg, NULL, NULL);
        goto done;
    }
    cdsh_process_opts po = {.stdin_mode = CDSH_PROCESS_NULL,
                            .stdout_mode = CDSH_PROCESS_PIPE,
                            .stderr_mode = CDSH_PROCESS_PIPE,
                            .env_set = (const char *const *)env,
                            .cwd = cwd};
    cdsh_process *proc = NULL;
    cdsh_error e = {0};
    int rc = cdsh_process_spawn((const char *const *)argv, &po, &proc, &e);
    if (rc < 0) {
        cdsh_jsonrpc_respond_error(
            req, rc == CDSH_ENOTFOUND ? ERR_NOT_FOUND : CDSH_JSONRPC_INTERNAL_ERROR, e.message,
            NULL, NULL);
        goto fail;
    }
    char id[48];
    snprintf(id, sizeof id, "term-%llu", (unsigned long long)seq);
    tm = calloc(1, sizeof *tm);
    if (!tm || !(tm->id = strdup(id)) || !(tm->session_id = strdup(session_id))) {
        cdsh_process_free(proc);
        cdsh_jsonrpc_respond_error(req, CDSH_JSONRPC_INTERNAL_ERROR,
                                   "Internal error: out of memory", NULL, NULL);
        goto fail;
    }
    tm->proc = proc;
    tm->limit = limit;
    tm->t = t;
    pthread_mutex_lock(&t->mu);
    tm->next = t->list;
    t->list = tm;
    pthread_mutex_unlock(&t->mu);
    /* Linked before the reader starts, so a failed start is cleaned up like
     * any release (the command is killed, never left behind). */
    tm->reader_started = pthread_create(&tm->reader, NULL, reader_main, tm) == 0;
    if (!tm->reader_started) {
        pthread_mutex_lock(&t->mu);
        for (term **pp = &t->list; *pp; pp = &(*pp)->next)
            if (*pp == tm) {
                *pp = tm->next;
                t->count--;
                break;
            }
        pthread_mutex_unlock(&t->mu);
        term_destroy(t, tm);
        cdsh_jsonrpc_respond_error(req, CDSH_JSONRPC_INTERNAL_ERROR,
                                   "Internal error: cannot start the terminal's reader thread",
                                   NULL, NULL);
        goto done;
    }
    json_t *r = json_pack("{s:s}", "terminalId", id);
    cdsh_jsonrpc_respond(req, r, NULL);
    json_decref(r);
    goto done;
fail:
    if (tm) {
        free(tm->id);
        free(tm->session_id);
        free(tm);
    }
    pthread_mutex_lock(&t->mu);
    t->count--;
    pthread_mutex_unlock(&t->mu);
done:
    free_strv(argv);
    free_strv(env);
}

/* The session's terminal named by params (mu held), or NULL. */
static term *find_locked(cdsh_acp_terminals *t, const char *session_id, const char *id,
                         term ***link)
{
    for (term **pp = &t->list; *pp; pp = &(*pp)->next)
        if (id && strcmp((*pp)->id, id) == 0 && strcmp((*pp)->session_id, session_id) == 0) {
            if (link)
                *link = pp;
            return *pp;
        }
    return NULL;
}

void cdsh_acp_terminals_handle(cdsh_acp_terminals *t, cdsh_jsonrpc_request *req,
                               const char *session_id, const char *cwd)
{
    const char *method = cdsh_jsonrpc_request_method(req);
    json_t *params = cdsh_jsonrpc_request_params(req);
    if (!t || !method || !session_id)
        return;
    if (strcmp(method, "terminal/create") == 0) {
        handle_create(t, req, params, session_id, cwd);
        return;
    }
    const char *id = json_string_value(json_object_get(params, "terminalId"));
    if (!id) {
        respond_invalid(req, "terminalId required");
        return;
    }
    json_t *result = NULL;
    term *gone = NULL;
    bool known = true;
    pthread_mutex_lock(&t->mu);
    term **link = NULL;
    term *tm = find_locked(t, session_id, id, &link);
    if (!tm) {
        known = false;
    } else if (strcmp(method, "terminal/output") == 0) {
        size_t len = 0;
        char *text = output_text_dup(tm, &len);
        result =
            json_pack("{s:o,s:b,s:o}", "output",
                      text ? json_stringn_nocheck(text, len) : json_string(""), "truncated",
                      tm->truncated, "exitStatus", tm->exited ? status_json(&tm->st) : json_null());
        free(text);
    } else if (strcmp(method, "terminal/wait_for_exit") == 0) {
        if (tm->exited) {
            result = status_json(&tm->st);
        } else {
            waiter *w = calloc(1, sizeof *w);
            if (w) {
                w->req = cdsh_jsonrpc_request_hold(req);
                w->next = tm->waiters;
                tm->waiters = w;
                pthread_mutex_unlock(&t->mu);
                return; /* the reader answers it */
            }
        }
    } else if (strcmp(method, "terminal/kill") == 0) {
        if (!tm->exited)
            cdsh_process_signal(tm->proc, SIGKILL, NULL);
        result = json_object();
    } else if (strcmp(method, "terminal/release") == 0) {
        *link = tm->next;
        t->count--;
        gone = tm;
        result = json_object();
    } else {
        known = false;
    }
    pthread_mutex_unlock(&t->mu);
    if (gone)
        term_destroy(t, gone);
    if (!known) {
        char msg[300];
        snprintf(msg, sizeof msg, "Resource not found: unknown terminal %.200s", id);
        cdsh_jsonrpc_respond_error(req, ERR_NOT_FOUND, msg, NULL, NULL);
    } else if (!result) {
        cdsh_jsonrpc_respond_error(req, CDSH_JSONRPC_INTERNAL_ERROR,
                                   "Internal error: out of memory", NULL, NULL);
    } else {
        cdsh_jsonrpc_respond(req, result, NULL);
    }
    json_decref(result);
}
