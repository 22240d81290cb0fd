/* cmd_import.h — `cdsh import scan|enable|disable|list`: the Claude Code /
 * Codex importer's front end (src/plugins/mcpimport does the work). */
#ifndef CDSH_CLI_CMD_IMPORT_H
#define CDSH_CLI_CMD_IMPORT_H

int cdsh_cmd_import(int argc, char **argv);

#endif
