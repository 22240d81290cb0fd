/* cli_approval.c — the terminal approval channel: a queue of shown
 * requests and one reader thread that asks for each in turn. Reads stdin
 * with poll() on a terminal (so a withdrawn request stops the read) and
 * with fgets() otherwise (the same FILE the chat loop reads lines from). */
#include "cli/cli_approval.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "plugins/acp/service.h"

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

static const char *str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static int present(void *ud, const json_t *request)
{
    cdsh_cli_approver *a = ud;
    if (a->o.auto_answer) {
        char *id = cdsh_acp_permission_option_dup(request, strcmp(a->o.auto_answer, "allow") == 0
                                                               ? CDSH_APPROVAL_ALLOWED_ONCE
                                                               : CDSH_APPROVAL_REJECTED);
        fprintf(a->o.out, "\n[approval] %s: answered %s by --approve %s\n", str(request, "title"),
                id ? id : "cancelled", a->o.auto_answer);
        fflush(a->o.out);
        cdsh_approvals_answer(a->ap, str(request, "id"), NULL, id, NULL);
        free(id);
        return 0;
    }
    if (!isatty(STDIN_FILENO) && !a->o.read_non_tty) {
        fprintf(a->o.out, "\n[approval] %s: %s\n", str(request, "title"),
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
    const char *id = str(res, "id");
    pthread_mutex_lock(&a->mu);
    if (strcmp(a->current, id) == 0)
        a->current_ended = true;
    for (item **pp = &a->queue; *pp; pp = &(*pp)->next)
        if (strcmp(str((*pp)->request, "id"), id) == 0) {
            item *gone = *pp;
            *pp = gone->next;
            json_decref(gone->request);
            free(gone);
            break;
        }
    pthread_mutex_unlock(&a->mu);
}

/* One line of the answer into buf. 1: got one; 0: EOF/stop; -1: the request ended. */
static int read_answer(cdsh_cli_approver *a, char *buf, size_t n)
{
    if (!isatty(STDIN_FILENO))
        return fgets(buf, (int)n, stdin) ? 1 : 0;
    size_t len = 0;
    for (;;) {
        pthread_mutex_lock(&a->mu);
        bool ended = a->current_ended, stop = a->stop;
        pthread_mutex_unlock(&a->mu);
        if (ended || stop)
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
                   ? str(json_array_get(options, (size_t)k - 1), "optionId")
                   : NULL;
    }
    size_t i;
    json_t *o;
    json_array_foreach(options, i, o)
    {
        if (strcasecmp(str(o, "name"), answer) == 0 || strcmp(str(o, "optionId"), answer) == 0)
            return str(o, "optionId");
    }
    return NULL;
}

static void ask(cdsh_cli_approver *a, const json_t *req)
{
    FILE *out = a->o.out;
    const json_t *options = json_object_get(req, "options");
    fprintf(out, "\n[approval] %s asks: %s\n",
            strcmp(str(req, "source"), "acp") == 0 ? "the agent" : "a tool", str(req, "title"));
    if (*str(req, "description"))
        fprintf(out, "  %s\n", str(req, "description"));
    size_t i;
    json_t *o;
    json_array_foreach(options, i, o) fprintf(out, "  %zu) %s\n", i + 1, str(o, "name"));
    fprintf(out, "  0) cancel\n");
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
            cdsh_approvals_answer(a->ap, str(req, "id"), NULL, NULL, NULL);
            return;
        }
        line[strcspn(line, "\r\n")] = '\0';
        char *t = line + strspn(line, " \t");
        for (size_t n = strlen(t); n && (t[n - 1] == ' ' || t[n - 1] == '\t'); n--)
            t[n - 1] = '\0';
        bool cancel;
        const char *id = choice(options, t, &cancel);
        if (id || cancel || !isatty(STDIN_FILENO)) {
            /* On a script an answer that names no option is a refusal: fail closed. */
            if (cdsh_approvals_answer(a->ap, str(req, "id"), NULL, id, NULL) == 0)
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
        snprintf(a->current, sizeof a->current, "%s", str(it->request, "id"));
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
    /* A non-terminal reader blocked in fgets finishes when stdin does. */
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
