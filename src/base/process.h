/* process.h — child processes from an argv (never through a shell): stdio
 * pipes, a scrubbed or explicit environment, working directory, own process
 * group, exec failures reported as errors, waits with timeouts that observe
 * cancellation, terminate-with-grace, PATH lookup and run-and-capture.
 *
 * Thread-safety: spawning from several threads at once is safe (fork + exec;
 * the child only makes async-signal-safe calls, every descriptor cdsh opens is
 * O_CLOEXEC, and the child closes every fd above 2 before exec). The default
 * environment is read from `environ`, so nobody may setenv concurrently. One
 * cdsh_process handle is used by one thread at a time. */
#ifndef CDSH_BASE_PROCESS_H
#define CDSH_BASE_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/cancel.h"
#include "base/err.h"

typedef enum cdsh_process_stdio {
    CDSH_PROCESS_INHERIT = 0, /* the child shares the parent's descriptor */
    CDSH_PROCESS_PIPE,        /* a pipe the parent reads or writes */
    CDSH_PROCESS_NULL,        /* /dev/null */
} cdsh_process_stdio;

/* Zero-initialised options mean: inherit stdio, scrubbed parent environment,
 * parent's directory, a new process group. */
typedef struct cdsh_process_opts {
    cdsh_process_stdio stdin_mode, stdout_mode, stderr_mode;
    /* NULL: the parent environment minus what base/env_policy.h keeps from
     * children (credentials, CDSH_ and DSH_ settings) except the names in
     * env_allow.
     * Non-NULL: exactly these "NAME=value" strings (NULL-terminated). */
    const char *const *env;
    const char *const *env_allow; /* NULL-terminated names, exact match */
    const char *const *env_set;   /* "NAME=value" applied last, overriding */
    const char *cwd;              /* NULL: the parent's working directory */
    bool keep_process_group;      /* true: stay in the parent's group */
} cdsh_process_opts;

typedef struct cdsh_process_status {
    bool exited; /* true: exit_code is valid; false: killed by term_signal */
    int exit_code;
    int term_signal;
} cdsh_process_status;

typedef struct cdsh_process cdsh_process;

/* Starts argv[0] with arguments argv (NULL-terminated). argv[0] without a
 * '/' is looked up on the PATH of the child's environment (the default
 * search path if it has none). Errors: CDSH_ENOTFOUND (program or cwd
 * missing; code "COMMAND_NOT_FOUND" / "CWD_NOT_FOUND"), CDSH_EPERM (code
 * "EXEC_FAILED": not executable), CDSH_EIO, CDSH_EINVAL, CDSH_ENOMEM. The
 * message names the program or directory and the reason. */
int cdsh_process_spawn(const char *const *argv, const cdsh_process_opts *opts, cdsh_process **out,
                       cdsh_error *err);

/* Frees the handle and closes its pipes. A child still running is killed
 * (SIGKILL to its group) and reaped, so nothing outlives the handle. */
void cdsh_process_free(cdsh_process *proc);

pid_t cdsh_process_pid(const cdsh_process *proc);

/* The parent's ends of the pipes (borrowed; -1 when not piped or closed).
 * They are O_CLOEXEC and blocking. */
int cdsh_process_stdin_fd(const cdsh_process *proc);
int cdsh_process_stdout_fd(const cdsh_process *proc);
int cdsh_process_stderr_fd(const cdsh_process *proc);

/* Closes the parent's end of the stdin pipe so the child sees EOF. */
void cdsh_process_close_stdin(cdsh_process *proc);

/* Waits for the child to exit, up to timeout_ms (0: poll once; negative:
 * forever), observing cancel (may be NULL). Uses pidfd + poll. Errors:
 * CDSH_ETIMEDOUT (still running), CDSH_ECANCELED, CDSH_EIO. Once reaped,
 * later calls return the same status immediately. */
int cdsh_process_wait(cdsh_process *proc, int64_t timeout_ms, cdsh_cancel *cancel,
                      cdsh_process_status *status, cdsh_error *err);

/* Sends sig to the child's process group (to the child alone if it shares
 * the parent's group). 0 if the child is already reaped. */
int cdsh_process_signal(cdsh_process *proc, int sig, cdsh_error *err);

/* SIGTERM to the group, waits up to grace_ms, then SIGKILL to the group and
 * reaps. Members of the group still alive after the child itself exited are
 * sent SIGKILL too, so nothing is left behind. status may be NULL. */
int cdsh_process_terminate(cdsh_process *proc, int64_t grace_ms, cdsh_process_status *status,
                           cdsh_error *err);

/* Writes "exited with status 3" or "killed by signal 9 (Killed)". */
void cdsh_process_status_describe(const cdsh_process_status *status, char *buf, size_t size);

/* True if an environment variable name looks like it holds a credential
 * (cdsh_env_policy_name_is_secret). name may end at '=' ("NAME=value"). */
bool cdsh_process_env_name_is_secret(const char *name);

/* Resolves name like `command -v`: a name containing '/' is checked as is;
 * otherwise each directory of path_list (colon-separated; NULL: $PATH, or
 * /usr/local/bin:/usr/bin:/bin) is tried for an executable regular file.
 * Empty PATH entries are skipped rather than meaning "." (deliberate).
 * *out is owned. CDSH_ENOTFOUND (code "COMMAND_NOT_FOUND", the message names
 * the command, the search path and any non-executable match). */
int cdsh_process_find_program(const char *name, const char *path_list, char **out, cdsh_error *err);

/* Run-and-capture. */
typedef struct cdsh_process_run_opts {
    cdsh_process_opts spawn; /* stdio modes are ignored: stdin is a pipe (or
                                /dev/null without stdin_data), stdout/stderr pipes */
    const char *stdin_data;  /* NULL: the child's stdin is /dev/null */
    size_t stdin_len;        /* 0 with stdin_data: strlen(stdin_data) */
    int64_t timeout_ms;      /* <= 0: no timeout */
    int64_t kill_grace_ms;   /* grace between SIGTERM and SIGKILL; 0: 1000 */
    size_t max_output;       /* per stream; 0: 64 MiB */
    cdsh_cancel *cancel;
} cdsh_process_run_opts;

typedef struct cdsh_process_result {
    char *out, *err; /* owned, NUL-terminated */
    size_t out_len, err_len;
    cdsh_process_status status;
} cdsh_process_result;

/* Spawns argv, feeds stdin_data, captures stdout and stderr and waits. A
 * non-zero exit is not an error (see result->status). On timeout, cancel or
 * output over max_output the child's group is terminated and CDSH_ETIMEDOUT,
 * CDSH_ECANCELED or CDSH_ETOOBIG is returned with the output so far in
 * result. If the child cannot be started, result stays empty (NULL buffers).
 * opts may be NULL. Free result with cdsh_process_result_deinit. */
int cdsh_process_run(const char *const *argv, const cdsh_process_run_opts *opts,
                     cdsh_process_result *result, cdsh_error *err);

void cdsh_process_result_deinit(cdsh_process_result *result);

#endif
