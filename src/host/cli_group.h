/* cli_group.h — dispatch for subcommand groups (`cdsh xiangqi <sub>`,
 * `cdsh acp <sub>`): a table of cdsh_subcommand rows, help and the
 * unknown-subcommand message, so every group behaves the same way. In the
 * host layer so plugins' own subcommands (in their folders) can use it. */
#ifndef CDSH_HOST_CLI_GROUP_H
#define CDSH_HOST_CLI_GROUP_H

#include <stdio.h>

#include "host/subcommand.h"

typedef struct cdsh_cli_group {
    const char *name;            /* "xiangqi": used in usage and errors */
    const char *about;           /* one or more lines shown under Usage */
    const cdsh_subcommand *subs; /* NULL-terminated; argv[0] is the sub's name */
} cdsh_cli_group;

/* argv[0] is the group's name. No sub: usage on stderr, 2. --help/-h/help:
 * usage on stdout, 0. Unknown sub: a message and usage on stderr, 2. */
int cdsh_cli_group_run(const cdsh_cli_group *group, int argc, char **argv);

#endif
