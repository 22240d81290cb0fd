/* cmd_acp.h — `cdsh acp`: engines, probe, prompt, sessions (external ACP agents). */
#ifndef CDSH_PLUGINS_ACP_CMD_ACP_H
#define CDSH_PLUGINS_ACP_CMD_ACP_H

#include "host/subcommand.h"

/* The plugin's `cdsh <name>` rows for its descriptor (NULL-terminated). */
extern const cdsh_subcommand cdsh_acp_subcommands[];

#endif
