/* cmd_xiangqi.h — `cdsh xiangqi <sub>`: dispatcher for the xiangqi engine's
 * command-line tools. Each sub-command lives in its own cmd_xiangqi_<sub>.c. */
#ifndef CDSH_PLUGINS_XIANGQI_CMD_XIANGQI_H
#define CDSH_PLUGINS_XIANGQI_CMD_XIANGQI_H

#include "host/subcommand.h"

int cdsh_cmd_xiangqi(int argc, char **argv);

/* The plugin's `cdsh <name>` rows for its descriptor (NULL-terminated). */
extern const cdsh_subcommand cdsh_xq_subcommands[];

#endif
