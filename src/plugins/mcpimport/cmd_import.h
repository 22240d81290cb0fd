/* cmd_import.h — `cdsh import scan|enable|disable|list`: the Claude Code /
 * Codex importer's front end, built from its operations table (ops.h):
 * argv → arguments, values → printed output and exit status. */
#ifndef CDSH_PLUGINS_MCPIMPORT_CMD_IMPORT_H
#define CDSH_PLUGINS_MCPIMPORT_CMD_IMPORT_H

#include <jansson.h>
#include <stdio.h>

#include "host/ops.h"
#include "host/subcommand.h"

int cdsh_cmd_import(int argc, char **argv);

/* The plugin's `cdsh <name>` rows for its descriptor (NULL-terminated). */
extern const cdsh_subcommand cdsh_mcpimport_subcommands[];

/* The table's CLI hooks (host/ops.h): every row's argv parser, the group's
 * usage, and one printer per row (a failed call prints `cdsh import: <message>`
 * and exits 1). */
int cdsh__mcpimport_cli_parse(void *ud, int argc, char **argv, json_t **args);
void cdsh__mcpimport_cli_usage(FILE *out);
int cdsh__mcpimport_print_scan(void *ud, const cdsh_op_call *call, int rc, json_t *value,
                               const cdsh_error *err);
int cdsh__mcpimport_print_enable(void *ud, const cdsh_op_call *call, int rc, json_t *value,
                                 const cdsh_error *err);
int cdsh__mcpimport_print_disable(void *ud, const cdsh_op_call *call, int rc, json_t *value,
                                  const cdsh_error *err);
int cdsh__mcpimport_print_list(void *ud, const cdsh_op_call *call, int rc, json_t *value,
                               const cdsh_error *err);

#endif
