/* cli_agent.c — boot for turn-running front ends, the terminal/JSON event
 * printer and Ctrl-C routing. Global state (documented): the SIGINT
 * watcher's pipe, current token and counters, behind `sig_mu`. */
#include "cli/cli_agent.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <editline/readline.h>

#include "agent/model_fix.h"
#include "host/cli.h"

int cdsh_cli_agent_open(const char *sub, const char *profile, cdsh_cli_agent *out)
{
    memset(out, 0, sizeof *out);
    if (cdsh_cli_host_open(sub, profile, &out->host, &out->profile))
        return 1;
    cdsh_error err = {0};
    if (cdsh_session_store_open(cdsh_cli_home(), NULL, &out->store, &err) != 0)
        goto fail;
    cdsh_agent_options o = {.host = out->host, .store = out->store};
    if (cdsh_agent_new(&o, &out->agent, &err) != 0)
        goto fail;
    return 0;
fail:
    fprintf(stderr, "cdsh %s: %s: %s\n", sub, err.code, err.message);
    cdsh_cli_agent_close(out);
    return 1;
}

void cdsh_cli_agent_close(cdsh_cli_agent *a)
{
    cdsh_agent_free(a->agent);
    cdsh_session_store_close(a->store);
    cdsh_host_free(a->host);
    cdsh_profile_free(a->profile);
    memset(a, 0, sizeof *a);
}

char *cdsh_cli_session_pick(const char *sub, cdsh_cli_agent *a, const char *id,
                            const char *title_hint)
{
    cdsh_error err = {0};
    if (id) {
        json_t *s = cdsh_session_store_info_dup(a->store, id, &err);
        if (!s) {
            fprintf(stderr, "cdsh %s: %s: %s\n", sub, err.code, err.message);
            return NULL;
        }
        json_decref(s);
        return strdup(id);
    }
    char title[80];
    cdsh_cli_summary(title_hint, title, sizeof title, 60);
    cdsh_session_spec spec = {.title = title};
    char *sid = NULL;
    if (cdsh_session_store_create(a->store, &spec, &sid, &err) != 0)
        fprintf(stderr, "cdsh %s: %s: %s\n", sub, err.code, err.message);
    return sid;
}

int cdsh_cli_session_opts_parse(int argc, char **argv, unsigned flags, void (*usage)(FILE *),
                                cdsh_cli_session_opts *o)
{
    static const struct option longopts[] = {
        {"session", required_argument, NULL, 's'}, {"json", no_argument, NULL, 'j'},
        {"profile", required_argument, NULL, 'p'}, {"engine", required_argument, NULL, 'e'},
        {"cwd", required_argument, NULL, 'c'},     {"approve", required_argument, NULL, 'a'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 's': o->session = optarg; break;
        case 'p': o->profile = optarg; break;
        case 'j':
            if (!(flags & CDSH_CLI_OPT_JSON)) {
                usage(stderr);
                return 2;
            }
            o->json = 1;
            break;
        case 'e':
        case 'c':
        case 'a':
            if (!(flags & (c == 'a' ? CDSH_CLI_OPT_APPROVE : CDSH_CLI_OPT_ENGINE))) {
                usage(stderr);
                return 2;
            }
            if (c == 'e')
                o->engine = optarg;
            else if (c == 'c')
                o->cwd = optarg;
            else if (strcmp(optarg, "allow") == 0 || strcmp(optarg, "reject") == 0)
                o->approve = optarg;
            else {
                fprintf(stderr, "--approve takes allow or reject\n");
                return 2;
            }
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    return -1;
}

/* ---- printing ------------------------------------------------------------------ */

static const char *str(const json_t *ev, const char *key)
{
    const char *s = json_string_value(json_object_get(ev, key));
    return s ? s : "";
}

static void close_mode(cdsh_cli_printer *p)
{
    if (p->mode == 1)
        fputc('\n', p->out);
    else if (p->mode == 2)
        fputs(p->color ? "\033[0m\n" : "\n", p->info);
    fflush(p->out);
    p->mode = 0;
}

void cdsh_cli_print_event(void *arg, const json_t *ev)
{
    cdsh_cli_printer *p = arg;
    if (p->json) {
        char *line = json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (line) {
            flockfile(p->out); /* approval events may come from another thread */
            fputs(line, p->out);
            fputc('\n', p->out);
            fflush(p->out);
            funlockfile(p->out);
            free(line);
        }
        return;
    }
    const char *type = str(ev, "type");
    const char *dim = p->color ? "\033[2m" : "", *off = p->color ? "\033[0m" : "";
    if (strcmp(type, "text/delta") == 0) {
        if (p->mode != 1)
            close_mode(p);
        p->mode = 1;
        fputs(str(ev, "text"), p->out);
        fflush(p->out);
    } else if (strcmp(type, "reasoning/delta") == 0) {
        if (p->mode != 2) {
            close_mode(p);
            fprintf(p->info, "%s(thinking) ", dim);
        }
        p->mode = 2;
        fputs(str(ev, "text"), p->info);
        fflush(p->info);
    } else if (strcmp(type, "tool/call") == 0) {
        close_mode(p);
        fprintf(p->info, "%s→ %s %s%s\n", dim, str(ev, "name"), str(ev, "arguments"), off);
    } else if (strcmp(type, "tool/result") == 0) {
        close_mode(p);
        json_t *e = json_object_get(ev, "error");
        if (e)
            fprintf(p->info, "%s← %s failed: %s%s\n", dim, str(ev, "name"), str(e, "message"), off);
        else
            fprintf(p->info, "%s← %s ok%s\n", dim, str(ev, "name"), off);
    } else if (strcmp(type, "tool/update") == 0) {
        close_mode(p);
        fprintf(p->info, "%s· %s %s%s\n", dim, str(ev, "name"), str(ev, "status"), off);
    } else if (strcmp(type, "notice") == 0) {
        close_mode(p);
        fprintf(p->info, "%s[%s] %s%s\n", p->color ? "\033[1m" : "", str(ev, "code"),
                str(ev, "text"), off);
        /* a model failure: the cause above, what to do below */
        const char *fix = strcmp(str(ev, "level"), "error") == 0
                              ? cdsh_model_fix_get(str(ev, "code"), "en")
                              : NULL;
        if (fix)
            fprintf(p->info, "  What to do: %s\n", fix);
    } else if (strcmp(type, "retry") == 0) {
        close_mode(p);
        fprintf(p->info, "%s(retrying: %s)%s\n", dim, str(ev, "message"), off);
    } else if (strcmp(type, "turn/end") == 0 || strcmp(type, "assistant/message") == 0) {
        close_mode(p);
    }
    fflush(p->info);
}

int cdsh_cli_turn_status(const cdsh_agent_outcome *out)
{
    if (strcmp(out->reason, "done") == 0)
        return 0;
    if (strcmp(out->reason, "cancelled") == 0)
        return 130;
    if (strcmp(out->reason, "step-limit") == 0 || strcmp(out->reason, "token-limit") == 0)
        return 3;
    return 1;
}

/* ---- Ctrl-C ---------------------------------------------------------------------- */

static pthread_mutex_t sig_mu = PTHREAD_MUTEX_INITIALIZER;
static int sig_pipe[2] = {-1, -1};
static pthread_t sig_thread;
static cdsh_cancel *sig_turn;
static int sig_prompt_count;
static bool sig_interactive;
static struct sigaction sig_old;

static void on_sigint(int signo)
{
    (void)signo;
    int saved = errno;
    char c = 'i';
    if (write(sig_pipe[1], &c, 1) < 0) {
        /* Nothing to do: the pipe is full, a wake-up is already pending. */
    }
    errno = saved;
}

static void *sig_watch(void *arg)
{
    (void)arg;
    char c;
    while (read(sig_pipe[0], &c, 1) == 1 && c == 'i') {
        pthread_mutex_lock(&sig_mu);
        if (sig_turn) {
            cdsh_cancel_fire(sig_turn, "interrupted");
            pthread_mutex_unlock(&sig_mu);
            fputs("\n(cancelling the turn...)\n", stderr);
            continue;
        }
        int n = ++sig_prompt_count;
        bool interactive = sig_interactive;
        pthread_mutex_unlock(&sig_mu);
        if (n >= 2 || !interactive) {
            if (interactive)
                rl_deprep_terminal();
            fputs("\n", stderr);
            _exit(130);
        }
        fputs("\n(press Ctrl-C again to exit, or type /exit)\n", stderr);
    }
    return NULL;
}

int cdsh_cli_sigint_start(bool interactive)
{
    if (pipe(sig_pipe) != 0)
        return CDSH_EIO;
    fcntl(sig_pipe[1], F_SETFL, O_NONBLOCK);
    sig_interactive = interactive;
    if (pthread_create(&sig_thread, NULL, sig_watch, NULL) != 0) {
        close(sig_pipe[0]);
        close(sig_pipe[1]);
        return CDSH_EIO;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: a blocking read at the prompt returns */
    sigaction(SIGINT, &sa, &sig_old);
    return 0;
}

void cdsh_cli_sigint_stop(void)
{
    if (sig_pipe[1] < 0)
        return;
    sigaction(SIGINT, &sig_old, NULL);
    char c = 'q';
    if (write(sig_pipe[1], &c, 1) == 1)
        pthread_join(sig_thread, NULL);
    close(sig_pipe[0]);
    close(sig_pipe[1]);
    sig_pipe[0] = sig_pipe[1] = -1;
}

void cdsh_cli_sigint_set_turn(cdsh_cancel *token)
{
    pthread_mutex_lock(&sig_mu);
    sig_turn = token;
    sig_prompt_count = 0;
    pthread_mutex_unlock(&sig_mu);
}

int cdsh_cli_sigint_take_prompt_count(void)
{
    pthread_mutex_lock(&sig_mu);
    int n = sig_prompt_count;
    pthread_mutex_unlock(&sig_mu);
    return n;
}
