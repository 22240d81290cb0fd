/* subcommands.h — `cdsh <subcommand>` lookup: the front end's own table
 * (subcommands.c) plus the `subcommands` tables of the plugin descriptors
 * main handed to cdsh_cli_host_set_plugins (host/cli.h). main.c only parses
 * global flags and dispatches through here. */
#ifndef CDSH_CLI_SUBCOMMANDS_H
#define CDSH_CLI_SUBCOMMANDS_H

#include <stdio.h>

#include "host/subcommand.h"

/* Looks a subcommand up by exact name (own ones first, then the plugins'
 * in descriptor order); NULL if unknown. */
const cdsh_subcommand *cdsh_subcommand_find(const char *name);

/* Prints the full usage text (global flags and one line per subcommand,
 * sorted by name). */
void cdsh_cli_print_usage(FILE *out);

/* The closest subcommand name to `name` (for "did you mean"), or NULL. */
const char *cdsh_subcommand_suggest(const char *name);

#endif
