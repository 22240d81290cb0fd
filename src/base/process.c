/* process.c — spawning children with fork + exec (the child only makes
 * async-signal-safe calls and reports exec failures over a CLOEXEC pipe),
 * waiting through pidfds, group termination, PATH lookup, run-and-capture.
 * It never interprets a command line: no shell is ever involved. */
#include "base/process.h"

#include "base/env_policy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

struct cdsh_process {
    pid_t pid;
    int pidfd; /* -1 where pidfd_open is unavailable: waits then poll waitpid */
    int in_fd, out_fd, err_fd;
    bool own_group;
    bool reaped;
    cdsh_process_status status;
    char *name; /* argv[0], for messages */
};

/* What the child reports on the status pipe when it cannot exec. */
enum { STEP_SETPGID = 1, STEP_DUP, STEP_CHDIR, STEP_EXEC };
typedef struct child_report {
    int step;
    int err;
} child_report;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

bool cdsh_process_env_name_is_secret(const char *name)
{
    return cdsh_env_policy_name_is_secret(name);
}

static size_t name_len(const char *entry)
{
    return strcspn(entry, "=");
}

static bool list_has_name(const char *const *list, const char *entry, bool list_is_entries)
{
    if (!list)
        return false;
    size_t n = name_len(entry);
    for (size_t i = 0; list[i]; i++) {
        size_t ln = list_is_entries ? name_len(list[i]) : strlen(list[i]);
        if (ln == n && strncmp(list[i], entry, n) == 0)
            return true;
    }
    return false;
}

/* Builds the child's environment as an array of borrowed strings. */
static const char **build_env(const cdsh_process_opts *o)
{
    const char *const *src = o->env ? o->env : (const char *const *)environ;
    size_t n = 0, m = 0;
    while (src && src[n])
        n++;
    while (o->env_set && o->env_set[m])
        m++;
    const char **env = calloc(n + m + 1, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = src[i];
        if (!strchr(e, '='))
            continue;
        if (!o->env && cdsh_env_policy_judge(e) != CDSH_ENV_PASS &&
            !list_has_name(o->env_allow, e, false))
            continue;
        if (list_has_name(o->env_set, e, true))
            continue;
        env[k++] = e;
    }
    for (size_t i = 0; i < m; i++) {
        /* A later env_set entry with the same name wins. */
        bool later = false;
        for (size_t j = i + 1; j < m && !later; j++)
            later = name_len(o->env_set[j]) == name_len(o->env_set[i]) &&
                    strncmp(o->env_set[j], o->env_set[i], name_len(o->env_set[i])) == 0;
        if (!later && strchr(o->env_set[i], '='))
            env[k++] = o->env_set[i];
    }
    env[k] = NULL;
    return env;
}

int cdsh_process_find_program(const char *name, const char *path_list, char **out, cdsh_error *err)
{
    if (out)
        *out = NULL;
    if (!name || !*name || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "find_program needs a non-empty command name");
    struct stat st;
    if (strchr(name, '/')) {
        if (stat(name, &st) != 0)
            return cdsh_error_set(err, CDSH_ENOTFOUND, "COMMAND_NOT_FOUND",
                                  "command %s not found: %s", name, strerror(errno));
        if (!S_ISREG(st.st_mode) || access(name, X_OK) != 0)
            return cdsh_error_set(err, CDSH_EPERM, "NOT_EXECUTABLE",
                                  "command %s is not an executable file", name);
        *out = strdup(name);
        return *out ? 0 : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    if (!path_list)
        path_list = getenv("PATH");
    if (!path_list)
        path_list = DEFAULT_PATH;
    char *not_exec = NULL;
    size_t nl = strlen(name);
    const char *p = path_list;
    while (*p) {
        size_t dl = strcspn(p, ":");
        if (dl > 0) {
            char *cand = malloc(dl + nl + 2);
            if (!cand) {
                free(not_exec);
                return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
            }
            memcpy(cand, p, dl);
            cand[dl] = '/';
            memcpy(cand + dl + 1, name, nl + 1);
            if (stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
                if (access(cand, X_OK) == 0) {
                    free(not_exec);
                    *out = cand;
                    return 0;
                }
                if (!not_exec) {
                    not_exec = cand;
                    cand = NULL;
                }
            }
            free(cand);
        }
        p += dl;
        if (*p == ':')
            p++;
    }
    int rc;
    if (not_exec)
        rc = cdsh_error_set(err, CDSH_ENOTFOUND, "COMMAND_NOT_FOUND",
                            "command '%s' not found on PATH (%s); %s exists but is not executable",
                            name, path_list, not_exec);
    else
        rc = cdsh_error_set(err, CDSH_ENOTFOUND, "COMMAND_NOT_FOUND",
                            "command '%s' not found on PATH (%s)", name, path_list);
    free(not_exec);
    return rc;
}

/* Everything the child needs, prepared before fork so the child allocates
 * nothing and touches no lock. */
typedef struct child_plan {
    const char *prog;
    char *const *argv;
    char *const *envp;
    const char *cwd;
    int src[3]; /* descriptor for fd 0/1/2, or -1 to inherit */
    int status_fd;
    bool own_group;
    int max_fd;
} child_plan;

__attribute__((noreturn)) static void child_report_and_exit(int fd, int step, int e)
{
    child_report r = {step, e};
    ssize_t ignored = write(fd, &r, sizeof r);
    (void)ignored;
    _exit(127);
}

/* Runs in the child between fork and exec: async-signal-safe calls only. */
__attribute__((noreturn)) static void child_exec(child_plan *p)
{
    if (p->own_group && setpgid(0, 0) != 0)
        child_report_and_exit(p->status_fd, STEP_SETPGID, errno);
    /* Ignored signals stay ignored across exec; reset them (SIGPIPE above all)
     * before unblocking, so no parent handler ever runs in the child. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &sa, NULL); /* fails harmlessly for KILL, STOP, libc-internal ones */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    /* Move sources and the status pipe above 2 first, so the dup2 calls
     * below cannot overwrite a descriptor still needed. */
    if (p->status_fd < 3) {
        int moved = fcntl(p->status_fd, F_DUPFD_CLOEXEC, 3);
        if (moved < 0)
            child_report_and_exit(p->status_fd, STEP_DUP, errno);
        p->status_fd = moved;
    }
    for (int i = 0; i < 3; i++) {
        if (p->src[i] >= 0 && p->src[i] < 3) {
            int moved = fcntl(p->src[i], F_DUPFD_CLOEXEC, 3);
            if (moved < 0)
                child_report_and_exit(p->status_fd, STEP_DUP, errno);
            p->src[i] = moved;
        }
    }
    for (int i = 0; i < 3; i++)
        if (p->src[i] >= 0 && dup2(p->src[i], i) < 0)
            child_report_and_exit(p->status_fd, STEP_DUP, errno);
    if (p->cwd && chdir(p->cwd) != 0)
        child_report_and_exit(p->status_fd, STEP_CHDIR, errno);

    /* No descriptor but 0/1/2 may reach the program, whoever opened it. */
    int sfd = p->status_fd;
    bool closed = true;
    if (sfd > 3 && syscall(SYS_close_range, 3u, (unsigned)sfd - 1, 0u) != 0)
        closed = false;
    if (closed && syscall(SYS_close_range, (unsigned)sfd + 1, ~0u, 0u) != 0)
        closed = false;
    if (!closed)
        for (int fd = 3; fd < p->max_fd; fd++)
            if (fd != sfd)
                close(fd);

    execve(p->prog, p->argv, p->envp);
    child_report_and_exit(sfd, STEP_EXEC, errno);
}

static int report_error(const child_report *r, const char *prog, const char *cwd, cdsh_error *err)
{
    const char *why = strerror(r->err);
    switch (r->step) {
    case STEP_EXEC:
        if (r->err == ENOENT)
            return cdsh_error_set(err, CDSH_ENOTFOUND, "COMMAND_NOT_FOUND",
                                  "cannot execute %s: %s (if the file exists, its #! interpreter "
                                  "does not)",
                                  prog, why);
        if (r->err == EACCES || r->err == EPERM || r->err == ENOEXEC)
            return cdsh_error_set(err, CDSH_EPERM, "EXEC_FAILED", "cannot execute %s: %s", prog,
                                  why);
        return cdsh_error_set(err, CDSH_EIO, "EXEC_FAILED", "cannot execute %s: %s", prog, why);
    case STEP_CHDIR:
        return cdsh_error_set(err, r->err == ENOENT ? CDSH_ENOTFOUND : CDSH_EIO, "CWD_NOT_FOUND",
                              "cannot start %s: cannot change to working directory %s: %s", prog,
                              cwd, why);
    case STEP_SETPGID:
        return cdsh_error_set(err, CDSH_EIO, "SPAWN_FAILED",
                              "cannot start %s: setpgid failed in the child: %s", prog, why);
    default:
        return cdsh_error_set(err, CDSH_EIO, "SPAWN_FAILED",
                              "cannot start %s: setting up descriptors failed: %s", prog, why);
    }
}

static int open_stdio(cdsh_process_stdio mode, bool child_reads, int *child_end, int *parent_end,
                      int devnull)
{
    *child_end = -1;
    *parent_end = -1;
    if (mode == CDSH_PROCESS_NULL) {
        *child_end = devnull;
        return 0;
    }
    if (mode != CDSH_PROCESS_PIPE)
        return 0;
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    *child_end = child_reads ? p[0] : p[1];
    *parent_end = child_reads ? p[1] : p[0];
    return 0;
}

int cdsh_process_spawn(const char *const *argv, const cdsh_process_opts *opts, cdsh_process **out,
                       cdsh_error *err)
{
    if (out)
        *out = NULL;
    if (!argv || !argv[0] || !argv[0][0] || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "spawn needs an argv with a non-empty program name");
    static const cdsh_process_opts defaults;
    const cdsh_process_opts *o = opts ? opts : &defaults;
    const char *name = argv[0];
    int rc = 0;
    const char **env = NULL;
    char *prog = NULL;
    cdsh_process *proc = NULL;
    int devnull = -1, status_p[2] = {-1, -1};
    int child_end[3] = {-1, -1, -1}, parent_end[3] = {-1, -1, -1};
    struct stat st;

    if (o->cwd) {
        if (stat(o->cwd, &st) != 0)
            return cdsh_error_set(err, errno == ENOENT ? CDSH_ENOTFOUND : CDSH_EIO, "CWD_NOT_FOUND",
                                  "cannot start %s: working directory %s: %s", name, o->cwd,
                                  errno == ENOENT ? "does not exist" : strerror(errno));
        if (!S_ISDIR(st.st_mode))
            return cdsh_error_set(err, CDSH_ENOTFOUND, "CWD_NOT_FOUND",
                                  "cannot start %s: working directory %s is not a directory", name,
                                  o->cwd);
    }
    env = build_env(o);
    if (!env)
        goto nomem;
    if (strchr(name, '/')) {
        /* Checked by exec itself, after the chdir, so relative paths work. */
        prog = strdup(name);
        if (!prog)
            goto nomem;
    } else {
        const char *path_list = DEFAULT_PATH;
        for (size_t i = 0; env[i]; i++)
            if (strncmp(env[i], "PATH=", 5) == 0)
                path_list = env[i] + 5;
        rc = cdsh_process_find_program(name, path_list, &prog, err);
        if (rc != 0)
            goto cleanup;
    }
    proc = calloc(1, sizeof *proc);
    if (!proc || !(proc->name = strdup(name)))
        goto nomem;
    proc->pidfd = proc->in_fd = proc->out_fd = proc->err_fd = -1;
    proc->own_group = !o->keep_process_group;

    if (o->stdin_mode == CDSH_PROCESS_NULL || o->stdout_mode == CDSH_PROCESS_NULL ||
        o->stderr_mode == CDSH_PROCESS_NULL) {
        devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull < 0) {
            rc = cdsh_error_set(err, CDSH_EIO, "SPAWN_FAILED", "cannot start %s: /dev/null: %s",
                                name, strerror(errno));
            goto cleanup;
        }
    }
    cdsh_process_stdio modes[3] = {o->stdin_mode, o->stdout_mode, o->stderr_mode};
    for (int i = 0; i <= 3; i++) {
        int r = i < 3 ? open_stdio(modes[i], i == 0, &child_end[i], &parent_end[i], devnull)
                      : pipe2(status_p, O_CLOEXEC);
        if (r != 0) {
            rc = cdsh_error_set(err, CDSH_EIO, "SPAWN_FAILED", "cannot start %s: pipe: %s", name,
                                strerror(errno));
            goto cleanup;
        }
    }

    struct rlimit rl;
    child_plan plan = {
        .prog = prog,
        .argv = (char *const *)argv,
        .envp = (char *const *)env,
        .cwd = o->cwd,
        .src = {child_end[0], child_end[1], child_end[2]},
        .status_fd = status_p[1],
        .own_group = proc->own_group,
        .max_fd =
            getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (int)rl.rlim_cur : 65536,
    };
    /* Block signals across fork so no handler runs in the child before it
     * resets dispositions. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = fork();
    if (pid == 0)
        child_exec(&plan);
    int fork_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        rc = cdsh_error_set(err, CDSH_EIO, "SPAWN_FAILED", "cannot start %s: fork: %s", name,
                            strerror(fork_errno));
        goto cleanup;
    }
    proc->pid = pid;
    /* Also from the parent, so the group exists before anyone signals it. */
    if (proc->own_group)
        setpgid(pid, pid);
    close_fd(&status_p[1]);
    for (int i = 0; i < 3; i++)
        if (child_end[i] != devnull)
            close_fd(&child_end[i]);

    child_report rep;
    ssize_t n;
    do
        n = read(status_p[0], &rep, sizeof rep);
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof rep) {
        int wst;
        while (waitpid(pid, &wst, 0) < 0 && errno == EINTR)
            ;
        proc->reaped = true;
        rc = report_error(&rep, prog, o->cwd, err);
        goto cleanup;
    }
    proc->pidfd = (int)syscall(SYS_pidfd_open, pid, 0u);
    if (proc->pidfd >= 0)
        fcntl(proc->pidfd, F_SETFD, FD_CLOEXEC);
    proc->in_fd = parent_end[0];
    proc->out_fd = parent_end[1];
    proc->err_fd = parent_end[2];
    parent_end[0] = parent_end[1] = parent_end[2] = -1;
    *out = proc;
    proc = NULL;
    goto cleanup;

nomem:
    rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "cannot start %s: out of memory", name);
cleanup:
    for (int i = 0; i < 3; i++) {
        if (child_end[i] != devnull)
            close_fd(&child_end[i]);
        close_fd(&parent_end[i]);
    }
    close_fd(&devnull);
    close_fd(&status_p[0]);
    close_fd(&status_p[1]);
    if (proc) {
        free(proc->name);
        free(proc);
    }
    free(prog);
    free(env);
    return rc;
}

pid_t cdsh_process_pid(const cdsh_process *proc)
{
    return proc ? proc->pid : -1;
}

int cdsh_process_stdin_fd(const cdsh_process *proc)
{
    return proc ? proc->in_fd : -1;
}

int cdsh_process_stdout_fd(const cdsh_process *proc)
{
    return proc ? proc->out_fd : -1;
}

int cdsh_process_stderr_fd(const cdsh_process *proc)
{
    return proc ? proc->err_fd : -1;
}

void cdsh_process_close_stdin(cdsh_process *proc)
{
    if (proc)
        close_fd(&proc->in_fd);
}

static void record_status(cdsh_process *proc, int wst)
{
    proc->reaped = true;
    close_fd(&proc->pidfd);
    proc->status.exited = WIFEXITED(wst);
    proc->status.exit_code = WIFEXITED(wst) ? WEXITSTATUS(wst) : 0;
    proc->status.term_signal = WIFSIGNALED(wst) ? WTERMSIG(wst) : 0;
}

/* 1 if reaped now, 0 if still running, negative on error. */
static int try_reap(cdsh_process *proc, cdsh_error *err)
{
    int wst;
    pid_t r;
    do
        r = waitpid(proc->pid, &wst, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == proc->pid) {
        record_status(proc, wst);
        return 1;
    }
    if (r == 0)
        return 0;
    return cdsh_error_set(err, CDSH_EIO, "WAIT_FAILED",
                          "cannot wait for %s (pid %d): %s (is SIGCHLD ignored?)", proc->name,
                          (int)proc->pid, strerror(errno));
}

static void wake_eventfd(void *arg)
{
    uint64_t one = 1;
    ssize_t ignored = write(*(int *)arg, &one, sizeof one);
    (void)ignored;
}

int cdsh_process_wait(cdsh_process *proc, int64_t timeout_ms, cdsh_cancel *cancel,
                      cdsh_process_status *status, cdsh_error *err)
{
    if (!proc)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "wait needs a process");
    int rc = 0, evfd = -1;
    uint64_t sub = 0;
    int64_t deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : INT64_MAX;
    if (!proc->reaped && cancel && proc->pidfd >= 0) {
        evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (evfd >= 0)
            sub = cdsh_cancel_subscribe(cancel, wake_eventfd, &evfd);
    }
    while (!proc->reaped) {
        rc = try_reap(proc, err);
        if (rc != 0)
            break;
        if (cdsh_cancel_is_fired(cancel)) {
            rc = cdsh_error_set(err, CDSH_ECANCELED, "CANCELLED",
                                "waiting for %s (pid %d) was cancelled: %s", proc->name,
                                (int)proc->pid, cdsh_cancel_reason(cancel));
            break;
        }
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            rc = cdsh_error_set(err, CDSH_ETIMEDOUT, "TIMEOUT",
                                "%s (pid %d) still running after %lld ms", proc->name,
                                (int)proc->pid, (long long)timeout_ms);
            break;
        }
        if (proc->pidfd >= 0) {
            struct pollfd fds[2] = {{proc->pidfd, POLLIN, 0}, {evfd, POLLIN, 0}};
            int slice = left > 60000 ? 60000 : (int)left;
            /* Without an eventfd, cancellation is noticed within 50 ms. */
            if (cancel && evfd < 0 && slice > 50)
                slice = 50;
            poll(fds, evfd >= 0 ? 2 : 1, slice);
        } else {
            cdsh_cancel_wait(cancel, left > 10 ? 10 : left);
        }
    }
    if (proc->reaped) {
        rc = 0;
        if (status)
            *status = proc->status;
    }
    if (sub)
        cdsh_cancel_unsubscribe(cancel, sub);
    close_fd(&evfd);
    return rc;
}

static int kill_group(cdsh_process *proc, int sig)
{
    if (proc->own_group && kill(-proc->pid, sig) == 0)
        return 0;
    if (proc->reaped)
        return 0; /* never signal a pid that may have been reused */
    if (kill(proc->pid, sig) == 0 || errno == ESRCH)
        return 0;
    return -1;
}

int cdsh_process_signal(cdsh_process *proc, int sig, cdsh_error *err)
{
    if (!proc)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "signal needs a process");
    if (proc->reaped)
        return 0;
    if (kill_group(proc, sig) != 0)
        return cdsh_error_set(err, CDSH_EIO, "SIGNAL_FAILED", "cannot signal %s (pid %d): %s",
                              proc->name, (int)proc->pid, strerror(errno));
    return 0;
}

int cdsh_process_terminate(cdsh_process *proc, int64_t grace_ms, cdsh_process_status *status,
                           cdsh_error *err)
{
    if (!proc)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "terminate needs a process");
    kill_group(proc, SIGTERM);
    int rc = cdsh_process_wait(proc, grace_ms < 0 ? 0 : grace_ms, NULL, status, NULL);
    /* Also reaches group members that outlived the child or ignored SIGTERM. */
    kill_group(proc, SIGKILL);
    if (rc == CDSH_ETIMEDOUT)
        rc = cdsh_process_wait(proc, 30000, NULL, status, err);
    else if (rc != 0)
        rc = cdsh_process_wait(proc, 0, NULL, status, err);
    return rc;
}

void cdsh_process_free(cdsh_process *proc)
{
    if (!proc)
        return;
    if (!proc->reaped) {
        kill_group(proc, SIGKILL);
        int wst;
        while (waitpid(proc->pid, &wst, 0) < 0 && errno == EINTR)
            ;
    }
    close_fd(&proc->pidfd);
    close_fd(&proc->in_fd);
    close_fd(&proc->out_fd);
    close_fd(&proc->err_fd);
    free(proc->name);
    free(proc);
}

void cdsh_process_status_describe(const cdsh_process_status *status, char *buf, size_t size)
{
    if (!buf || size == 0)
        return;
    if (!status)
        snprintf(buf, size, "unknown status");
    else if (status->exited)
        snprintf(buf, size, "exited with status %d", status->exit_code);
    else
        snprintf(buf, size, "killed by signal %d (%s)", status->term_signal,
                 strsignal(status->term_signal));
}

typedef struct capture {
    char *data;
    size_t len, cap;
} capture;

static bool capture_add(capture *c, const char *buf, size_t n)
{
    if (c->len + n + 1 > c->cap) {
        size_t cap = c->cap ? c->cap : 4096;
        while (cap < c->len + n + 1)
            cap *= 2;
        char *grown = realloc(c->data, cap);
        if (!grown)
            return false;
        c->data = grown;
        c->cap = cap;
    }
    memcpy(c->data + c->len, buf, n);
    c->len += n;
    c->data[c->len] = '\0';
    return true;
}

void cdsh_process_result_deinit(cdsh_process_result *result)
{
    if (!result)
        return;
    free(result->out);
    free(result->err);
    memset(result, 0, sizeof *result);
}

int cdsh_process_run(const char *const *argv, const cdsh_process_run_opts *opts,
                     cdsh_process_result *result, cdsh_error *err)
{
    if (!result)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "run needs a result");
    memset(result, 0, sizeof *result);
    static const cdsh_process_run_opts defaults;
    const cdsh_process_run_opts *o = opts ? opts : &defaults;
    cdsh_process_opts so = o->spawn;
    so.stdin_mode = o->stdin_data ? CDSH_PROCESS_PIPE : CDSH_PROCESS_NULL;
    so.stdout_mode = so.stderr_mode = CDSH_PROCESS_PIPE;
    size_t max_output = o->max_output ? o->max_output : (size_t)64 << 20;
    int64_t grace = o->kill_grace_ms > 0 ? o->kill_grace_ms : 1000;
    const char *in = o->stdin_data;
    size_t in_left = in ? (o->stdin_len ? o->stdin_len : strlen(in)) : 0;

    cdsh_process *proc = NULL;
    int rc = cdsh_process_spawn(argv, &so, &proc, err);
    if (rc != 0)
        return rc;

    capture cout = {0}, cerr = {0};
    int evfd = -1;
    uint64_t sub = 0;
    bool got_epipe = false;
    /* A child that exits without reading its stdin must not kill us with
     * SIGPIPE: block it in this thread and discard one we caused. */
    sigset_t pipe_set, old_mask, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pending);
    bool pipe_was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask);

    if (!capture_add(&cout, "", 0) || !capture_add(&cerr, "", 0))
        goto nomem;
    if (o->cancel) {
        evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (evfd >= 0)
            sub = cdsh_cancel_subscribe(o->cancel, wake_eventfd, &evfd);
    }
    if (proc->in_fd >= 0) {
        fcntl(proc->in_fd, F_SETFL, fcntl(proc->in_fd, F_GETFL) | O_NONBLOCK);
        if (in_left == 0)
            cdsh_process_close_stdin(proc);
    }
    int64_t deadline = o->timeout_ms > 0 ? now_ms() + o->timeout_ms : INT64_MAX;
    while (proc->out_fd >= 0 || proc->err_fd >= 0 || proc->in_fd >= 0) {
        if (cdsh_cancel_is_fired(o->cancel)) {
            rc = cdsh_error_set(err, CDSH_ECANCELED, "CANCELLED", "%s was cancelled: %s", argv[0],
                                cdsh_cancel_reason(o->cancel));
            goto kill;
        }
        int64_t left = deadline - now_ms();
        if (left <= 0)
            goto timeout;
        struct pollfd fds[4] = {{proc->in_fd, POLLOUT, 0},
                                {proc->out_fd, POLLIN, 0},
                                {proc->err_fd, POLLIN, 0},
                                {evfd, POLLIN, 0}};
        int slice = left > 60000 ? 60000 : (int)left;
        if (o->cancel && evfd < 0 && slice > 50)
            slice = 50;
        if (poll(fds, 4, slice) < 0 && errno != EINTR) {
            rc = cdsh_error_set(err, CDSH_EIO, "IO_ERROR", "poll on the pipes of %s failed: %s",
                                argv[0], strerror(errno));
            goto kill;
        }
        if (fds[0].revents) {
            ssize_t w = write(proc->in_fd, in, in_left);
            if (w > 0) {
                in += w;
                in_left -= (size_t)w;
            } else if (w < 0 && errno == EPIPE) {
                got_epipe = true;
                in_left = 0; /* the child stopped reading; not an error */
            } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                in_left = 0;
            }
            if (in_left == 0)
                cdsh_process_close_stdin(proc);
        }
        for (int i = 1; i <= 2; i++) {
            if (!fds[i].revents)
                continue;
            int *fd = i == 1 ? &proc->out_fd : &proc->err_fd;
            capture *c = i == 1 ? &cout : &cerr;
            char buf[65536];
            ssize_t n = read(*fd, buf, sizeof buf);
            if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
                close_fd(fd);
            } else if (n > 0) {
                if (c->len + (size_t)n > max_output) {
                    rc = cdsh_error_set(err, CDSH_ETOOBIG, "OUTPUT_TOO_BIG",
                                        "%s wrote more than %zu bytes to %s; it was terminated",
                                        argv[0], max_output, i == 1 ? "stdout" : "stderr");
                    goto kill;
                }
                if (!capture_add(c, buf, (size_t)n))
                    goto nomem;
            }
        }
    }
    /* Both pipes are closed; the child may still be running. */
    int64_t wait_ms = -1;
    if (deadline != INT64_MAX)
        wait_ms = deadline - now_ms() > 0 ? deadline - now_ms() : 0;
    rc = cdsh_process_wait(proc, wait_ms, o->cancel, &result->status, err);
    if (rc == CDSH_ETIMEDOUT)
        goto timeout;
    if (rc == CDSH_ECANCELED)
        goto kill;
    goto cleanup;

timeout:
    rc = cdsh_error_set(err, CDSH_ETIMEDOUT, "TIMEOUT",
                        "%s timed out after %lld ms and was terminated", argv[0],
                        (long long)o->timeout_ms);
    goto kill;
nomem:
    rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "capturing the output of %s: out of memory",
                        argv[0]);
kill:
    cdsh_process_terminate(proc, grace, &result->status, NULL);
cleanup:
    if (sub)
        cdsh_cancel_unsubscribe(o->cancel, sub);
    close_fd(&evfd);
    cdsh_process_free(proc);
    if (got_epipe && !pipe_was_pending) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    result->out = cout.data;
    result->out_len = cout.len;
    result->err = cerr.data;
    result->err_len = cerr.len;
    return rc;
}
