/* cmd_import.h — `cdsh import scan|enable|disable|list`: the Claude Code /
 * Codex importer's front end (src/plugins/mcpimport does the work). */
#ifndef CDSH_PLUGINS_MCPIMPORT_CMD_IMPORT_H
#define CDSH_PLUGINS_MCPIMPORT_CMD_IMPORT_H

#include "host/subcommand.h"

int cdsh_cmd_import(int argc, char **argv);

/* The plugin's `cdsh <name>` rows for its descriptor (NULL-terminated). */
extern const cdsh_subcommand cdsh_mcpimport_subcommands[];

#endif
