/* cli_approval.h — the terminal's approval channel: shows each request of
 * an approval broker (title, description, the numbered options with their
 * labels as given) and reads the person's choice — a number, the label or
 * the option id — from stdin on a thread of its own. EOF, "0", Ctrl-C (the
 * turn's cancel) or the broker's timeout end the request "cancelled". */
#ifndef CDSH_CLI_CLI_APPROVAL_H
#define CDSH_CLI_CLI_APPROVAL_H

#include <stdbool.h>
#include <stdio.h>

#include "host/approval.h"

typedef struct cdsh_cli_approver cdsh_cli_approver;

typedef struct cdsh_cli_approver_opts {
    FILE *out;               /* where requests are shown (stderr when NULL) */
    const char *auto_answer; /* "allow" or "reject": answer every request so, without asking */
    bool read_non_tty;       /* stdin is not a terminal: read the answer from it anyway
                                (a script of answers); false: refuse ("unavailable") */
    const char *hint;        /* printed when a request is refused for want of a terminal */
} cdsh_cli_approver_opts;

/* Installs the channel on ap (borrowed; must outlive the approver). NULL on ENOMEM. */
cdsh_cli_approver *cdsh_cli_approver_new(cdsh_approvals *ap, const cdsh_cli_approver_opts *opts);

/* Removes the channel (pending requests end "cancelled") and frees. NULL-safe. */
void cdsh_cli_approver_free(cdsh_cli_approver *a);

#endif
