/* cli_approval.h — the terminal's approval channel: shows each request of
 * an approval broker (title, description, the numbered options with their
 * labels as given) and reads the person's choice — a number, the label or
 * the option id — from stdin on a thread of its own. EOF, "0" or Ctrl-C
 * (the turn's cancel) end the request "cancelled", the broker's timeout
 * "timeout".
 * Also the whole set-up the turn-running subcommands share (a broker, this
 * channel, the broker installed as the tools' approval service). */
#ifndef CDSH_HOST_CLI_APPROVAL_H
#define CDSH_HOST_CLI_APPROVAL_H

#include <stdbool.h>
#include <stdio.h>

#include "host/approval.h"
#include "host/cli_lines.h"

typedef struct cdsh_cli_approver cdsh_cli_approver;

typedef struct cdsh_cli_approver_opts {
    FILE *out;               /* where requests are shown (stderr when NULL) */
    const char *auto_answer; /* "allow" or "reject": answer every request so, without asking */
    cdsh_cli_lines *lines;   /* stdin is not a terminal: read the answers from these lines
                                (a script; borrowed, shared with the caller's own reading:
                                a request that ends before its line is read leaves the
                                line there). NULL: refuse ("unavailable") without a tty */
    const char *hint;        /* printed when a request is refused for want of a terminal */
    /* Called (from any thread) with {type:"approval/request", ...request} when a
     * request arrives and {type:"approval/resolved", ...resolution} when it ends; NULL:
     * none. For JSON event output. */
    void (*on_event)(void *arg, const json_t *event);
    void *event_arg;
} cdsh_cli_approver_opts;

/* Installs the channel on ap (borrowed; must outlive the approver). NULL on ENOMEM. */
cdsh_cli_approver *cdsh_cli_approver_new(cdsh_approvals *ap, const cdsh_cli_approver_opts *opts);

/* Removes the channel (pending requests end "cancelled") and frees. NULL-safe. */
void cdsh_cli_approver_free(cdsh_cli_approver *a);

/* A broker with this channel installed, serving the tools' ASKs too. */
typedef struct cdsh_cli_approvals {
    cdsh_approvals *broker;
    cdsh_cli_approver *approver;
    cdsh_disposer_t tools;
} cdsh_cli_approvals;

/* Opens it all for `tools` (borrowed; must outlive it). 0, or a negative
 * code with err filled (out is then closed already). */
int cdsh_cli_approvals_open(cdsh_cli_approvals *out, cdsh_tools *tools,
                            const cdsh_cli_approver_opts *opts, cdsh_error *err);

/* The set-up of the one-shot subcommands (run, exec): `approve` ("allow",
 * "reject" or NULL) answers every request; else a terminal on stdin is asked
 * on stderr; else each request is refused with a message that names
 * --approve. on_event as in the options (NULL: none). 0, or exit status 1
 * with the reason on stderr as `cdsh <sub>: ...`. */
int cdsh_cli_approvals_open_oneshot(const char *sub, cdsh_cli_approvals *out, cdsh_tools *tools,
                                    const char *approve, void (*on_event)(void *, const json_t *),
                                    void *event_arg);

/* Undoes it: the tools' service, the channel, the broker. Idempotent. */
void cdsh_cli_approvals_close(cdsh_cli_approvals *c);

#endif
