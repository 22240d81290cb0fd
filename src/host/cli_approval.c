/* cli_approval.c — the terminal approval channel: a queue of shown
 * requests and one reader thread that asks for each in turn. Reads stdin
 * with poll() on a terminal (so a withdrawn request stops the read) and
 * from the shared line queue otherwise (the one the chat loop reads). */
#include "host/cli_approval.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/json.h"
#include "host/approval.h"

typedef struct item {
    struct item *next;
    json_t *request;
} item;

struct cdsh_cli_approver {
    cdsh_approvals *ap;
    cdsh_cli_approver_opts o;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    bool stop;
    item *queue;        /* oldest first */
    char current[64];   /* id of the request being asked, "" when none */
    bool current_ended; /* it ended elsewhere (cancel, timeout) */
};

static void emit(cdsh_cli_approver *a, const char *type, const json_t *body)
{
    if (!a->o.on_event)
        return;
    json_t *ev = json_pack("{s:s}", "type", type);
    if (!ev)
        return;
    json_object_update(ev, (json_t *)body);
    a->o.on_event(a->o.event_arg, ev);
    json_decref(ev);
}

static int present(void *ud, const json_t *request)
{
    cdsh_cli_approver *a = ud;
    emit(a, "approval/request", request);
    if (a->o.auto_answer) {
        char *id = cdsh_approvals_option_for_dup(request, strcmp(a->o.auto_answer, "allow") == 0
                                                               ? CDSH_APPROVAL_ALLOWED_ONCE
                                                               : CDSH_APPROVAL_REJECTED);
        fprintf(a->o.out, "\n[approval] %s: answered %s by --approve %s\n",
                cdsh_json_str_or(request, "title", ""), id ? id : "cancelled", a->o.auto_answer);
        fflush(a->o.out);
        cdsh_approvals_answer(a->ap, cdsh_json_str_or(request, "id", ""), NULL, id, NULL);
        free(id);
        return 0;
    }
    if (!isatty(STDIN_FILENO) && !a->o.lines) {
        fprintf(a->o.out, "\n[approval] %s: %s\n", cdsh_json_str_or(request, "title", ""),
                a->o.hint ? a->o.hint : "no terminal to ask: cancelled");
        fflush(a->o.out);
        return -1;
    }
    item *it = calloc(1, sizeof *it);
    if (!it)
        return -1;
    it->request = json_deep_copy(request);
    pthread_mutex_lock(&a->mu);
    item **pp = &a->queue;
    while (*pp)
        pp = &(*pp)->next;
    *pp = it;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    return 0;
}

static void resolved(void *ud, const json_t *res)
{
    cdsh_cli_approver *a = ud;
    emit(a, "approval/resolved", res);
    const char *id = cdsh_json_str_or(res, "id", "");
    pthread_mutex_lock(&a->mu);
    if (strcmp(a->current, id) == 0)
        a->current_ended = true;
    for (item **pp = &a->queue; *pp; pp = &(*pp)->next)
        if (strcmp(cdsh_json_str_or((*pp)->request, "id", ""), id) == 0) {
            item *gone = *pp;
            *pp = gone->next;
            json_decref(gone->request);
            free(gone);
            break;
        }
    pthread_mutex_unlock(&a->mu);
}

static bool ended(cdsh_cli_approver *a)
{
    pthread_mutex_lock(&a->mu);
    bool e = a->current_ended || a->stop;
    pthread_mutex_unlock(&a->mu);
    return e;
}

/* One line of the answer from the terminal into buf. 1: got one; 0:
 * EOF/stop; -1: the request ended. */
static int read_answer(cdsh_cli_approver *a, char *buf, size_t n)
{
    size_t len = 0;
    for (;;) {
        if (ended(a))
            return -1;
        struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
        int r = poll(&p, 1, 100);
        if (r < 0 && errno != EINTR)
            return 0;
        if (r <= 0)
            continue;
        char c;
        ssize_t got = read(STDIN_FILENO, &c, 1);
        if (got <= 0)
            return 0;
        if (c == '\n') {
            buf[len] = '\0';
            return 1;
        }
        if (len + 1 < n)
            buf[len++] = c;
    }
}

/* The option the answer names (by number, label or id), or NULL. */
static const char *choice(const json_t *options, const char *answer, bool *cancel)
{
    *cancel = false;
    char *end;
    long k = strtol(answer, &end, 10);
    if (end != answer && *end == '\0') {
        *cancel = k == 0;
        return k >= 1 && (size_t)k <= json_array_size(options)
                   ? cdsh_json_str_or(json_array_get(options, (size_t)k - 1), "optionId", "")
                   : NULL;
    }
    size_t i;
    json_t *o;
    json_array_foreach(options, i, o) {
        if (strcasecmp(cdsh_json_str_or(o, "name", ""), answer) == 0 ||
            strcmp(cdsh_json_str_or(o, "optionId", ""), answer) == 0)
            return cdsh_json_str_or(o, "optionId", "");
    }
    return NULL;
}

/* The answer with blanks around it cut, in place. */
static char *trim(char *line)
{
    line[strcspn(line, "\r\n")] = '\0';
    char *t = line + strspn(line, " \t");
    for (size_t n = strlen(t); n && (t[n - 1] == ' ' || t[n - 1] == '\t'); n--)
        t[n - 1] = '\0';
    return t;
}

typedef struct scripted {
    cdsh_cli_approver *a;
    const json_t *req;
} scripted;

/* Offered the next script line: takes it as the answer unless the request
 * already ended, which leaves the line to the chat. On a script an answer
 * that names no option is a refusal: fail closed. */
static bool take_scripted(void *ud, const char *line)
{
    scripted *sc = ud;
    if (ended(sc->a))
        return false;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", line);
    char *t = trim(buf);
    bool cancel;
    const char *id = choice(json_object_get(sc->req, "options"), t, &cancel);
    if (cdsh_approvals_answer(sc->a->ap, cdsh_json_str_or(sc->req, "id", ""), NULL, id, NULL) != 0)
        return false; /* it ended a moment ago */
    fprintf(sc->a->o.out, "[approval] %s\n", id ? t : "cancelled");
    return true;
}

static void ask_script(cdsh_cli_approver *a, const json_t *req)
{
    scripted sc = {a, req};
    for (;;) {
        if (ended(a))
            break;
        int r = cdsh_cli_lines_offer(a->o.lines, 100, take_scripted, &sc);
        if (r == 1)
            return;
        if (r == 2)
            break;
        if (r == 0 || (r == -1 && errno != EINTR)) {
            fprintf(a->o.out, "\n[approval] no answer: cancelled\n");
            cdsh_approvals_answer(a->ap, cdsh_json_str_or(req, "id", ""), NULL, NULL, NULL);
            return;
        }
    }
    fprintf(a->o.out, "\n[approval] the request ended (cancelled or timed out); "
                      "the next input line is a chat message again\n");
}

static void ask(cdsh_cli_approver *a, const json_t *req)
{
    FILE *out = a->o.out;
    const json_t *options = json_object_get(req, "options");
    fprintf(out, "\n[approval] %s asks: %s\n",
            strcmp(cdsh_json_str_or(req, "source", ""), "acp") == 0 ? "the agent" : "a tool",
            cdsh_json_str_or(req, "title", ""));
    if (*cdsh_json_str_or(req, "description", ""))
        fprintf(out, "  %s\n", cdsh_json_str_or(req, "description", ""));
    size_t i;
    json_t *o;
    json_array_foreach(options, i, o)
        fprintf(out, "  %zu) %s\n", i + 1, cdsh_json_str_or(o, "name", ""));
    fprintf(out, "  0) cancel\n");
    if (a->o.lines) {
        fprintf(out, "choice: ");
        fflush(out);
        ask_script(a, req);
        fflush(out);
        return;
    }
    for (;;) {
        fprintf(out, "choice: ");
        fflush(out);
        char line[512];
        int r = read_answer(a, line, sizeof line);
        if (r < 0) {
            fprintf(out, "\n[approval] the request ended (cancelled or timed out)\n");
            return;
        }
        if (r == 0) {
            fprintf(out, "\n[approval] no answer: cancelled\n");
            cdsh_approvals_answer(a->ap, cdsh_json_str_or(req, "id", ""), NULL, NULL, NULL);
            return;
        }
        char *t = trim(line);
        bool cancel;
        const char *id = choice(options, t, &cancel);
        if (id || cancel) {
            if (cdsh_approvals_answer(a->ap, cdsh_json_str_or(req, "id", ""), NULL, id, NULL) == 0)
                fprintf(out, "[approval] %s\n", id ? t : "cancelled");
            return;
        }
        fprintf(out, "  answer with a number from 0 to %zu\n", json_array_size(options));
    }
}

static void *reader_main(void *arg)
{
    cdsh_cli_approver *a = arg;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (!a->stop && !a->queue)
            pthread_cond_wait(&a->cv, &a->mu);
        if (a->stop)
            break;
        item *it = a->queue;
        a->queue = it->next;
        snprintf(a->current, sizeof a->current, "%s", cdsh_json_str_or(it->request, "id", ""));
        a->current_ended = false;
        pthread_mutex_unlock(&a->mu);
        ask(a, it->request);
        json_decref(it->request);
        free(it);
        pthread_mutex_lock(&a->mu);
        a->current[0] = '\0';
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

cdsh_cli_approver *cdsh_cli_approver_new(cdsh_approvals *ap, const cdsh_cli_approver_opts *opts)
{
    cdsh_cli_approver *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->ap = ap;
    if (opts)
        a->o = *opts;
    if (!a->o.out)
        a->o.out = stderr;
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    if (pthread_create(&a->th, NULL, reader_main, a) != 0) {
        pthread_mutex_destroy(&a->mu);
        pthread_cond_destroy(&a->cv);
        free(a);
        return NULL;
    }
    cdsh_approval_channel ch = {present, resolved, a};
    cdsh_approvals_set_channel(ap, &ch);
    return a;
}

void cdsh_cli_approver_free(cdsh_cli_approver *a)
{
    if (!a)
        return;
    cdsh_approvals_set_channel(a->ap, NULL);
    pthread_mutex_lock(&a->mu);
    a->stop = true;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->th, NULL);
    while (a->queue) {
        item *it = a->queue;
        a->queue = it->next;
        json_decref(it->request);
        free(it);
    }
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    free(a);
}

int cdsh_cli_approvals_open(cdsh_cli_approvals *out, cdsh_tools *tools,
                            const cdsh_cli_approver_opts *opts, cdsh_error *err)
{
    memset(out, 0, sizeof *out);
    out->broker = cdsh_approvals_new(0);
    out->approver = out->broker ? cdsh_cli_approver_new(out->broker, opts) : NULL;
    int rc = out->approver ? cdsh_approvals_install(out->broker, tools, &out->tools, err)
                           : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    if (rc)
        cdsh_cli_approvals_close(out);
    return rc;
}

int cdsh_cli_approvals_open_oneshot(const char *sub, cdsh_cli_approvals *out, cdsh_tools *tools,
                                    const char *approve, void (*on_event)(void *, const json_t *),
                                    void *event_arg)
{
    cdsh_cli_approver_opts ao = {
        .out = stderr,
        .auto_answer = approve,
        .hint = "stdin is not a terminal, so nobody can answer: refused. To allow it, run "
                "again with --approve allow (--approve reject refuses without asking)",
        .on_event = on_event,
        .event_arg = event_arg,
    };
    cdsh_error err = {0};
    if (cdsh_cli_approvals_open(out, tools, &ao, &err) == 0)
        return 0;
    fprintf(stderr, "cdsh %s: %s\n", sub, err.message);
    return 1;
}

void cdsh_cli_approvals_close(cdsh_cli_approvals *c)
{
    cdsh_disposer_run(&c->tools);
    cdsh_cli_approver_free(c->approver);
    cdsh_approvals_free(c->broker);
    memset(c, 0, sizeof *c);
}
