/* cmd_tavern.h — `cdsh tavern`: inspect, import, list and export character
 * cards, lorebooks, presets, personas and global regex rules. */
#ifndef CDSH_PLUGINS_TAVERN_CMD_TAVERN_H
#define CDSH_PLUGINS_TAVERN_CMD_TAVERN_H

#include "host/subcommand.h"

int cdsh_cmd_tavern(int argc, char **argv);

/* The plugin's `cdsh <name>` rows for its descriptor (NULL-terminated). */
extern const cdsh_subcommand cdsh_tavern_subcommands[];

#endif
