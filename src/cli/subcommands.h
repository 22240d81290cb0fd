/* subcommands.h — the table of `cdsh <subcommand>` entries. Each subsystem
 * adds one line to subcommands.c; main.c only parses global flags and
 * dispatches through this table. */
#ifndef CDSH_CLI_SUBCOMMANDS_H
#define CDSH_CLI_SUBCOMMANDS_H

#include <stdio.h>

typedef struct cdsh_subcommand {
    const char *name;
    const char *summary;               /* one line for `cdsh --help` */
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name; returns exit status */
} cdsh_subcommand;

/* NULL-terminated table, sorted by name. */
extern const cdsh_subcommand cdsh_subcommands[];

/* Looks a subcommand up by exact name; NULL if unknown. */
const cdsh_subcommand *cdsh_subcommand_find(const char *name);

/* Prints the full usage text (global flags and one line per subcommand). */
void cdsh_cli_print_usage(FILE *out);

/* The closest subcommand name to `name` (for "did you mean"), or NULL. */
const char *cdsh_subcommand_suggest(const char *name);

#endif
