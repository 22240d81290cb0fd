/* cmd_acp.h — `cdsh acp`: engines, probe, prompt, sessions (external ACP agents). */
#ifndef CDSH_PLUGINS_ACP_CMD_ACP_H
#define CDSH_PLUGINS_ACP_CMD_ACP_H

#include "host/subcommand.h"

int cdsh_cmd_acp(int argc, char **argv);

/* Sub-commands (argv[0] is the sub-command name). */
int cdsh_cmd_acp_engines(int argc, char **argv);
int cdsh_cmd_acp_sessions(int argc, char **argv);

/* The plugin's `cdsh <name>` rows for its descriptor (NULL-terminated). */
extern const cdsh_subcommand cdsh_acp_subcommands[];

#endif
