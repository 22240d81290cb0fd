/* cmd_facade.h — `cdsh facade analyze|list`: the read-only tool-surface
 * analyzer over plugin sources or the live registry, and the capabilities a
 * profile declares. */
#ifndef CDSH_PLUGINS_FACADE_CMD_FACADE_H
#define CDSH_PLUGINS_FACADE_CMD_FACADE_H

#include "host/subcommand.h"

/* The plugin's `cdsh <name>` rows for its descriptor (NULL-terminated). */
extern const cdsh_subcommand cdsh_facade_subcommands[];

#endif
