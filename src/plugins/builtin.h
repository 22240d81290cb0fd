/* builtin.h — the table of plugins compiled into cdsh. Each plugin adds one
 * line to builtin.c; the profile decides which of them a host loads
 * (cdsh_host_load_plugins). Everything else a plugin brings — its `cdsh`
 * subcommands, load order, RPC channels, fork participants, session runners —
 * hangs off its descriptor or is registered through its context, so only
 * main (src/cli/main.c) refers to this table outside src/plugins/.
 * Read-only; thread-safe. */
#ifndef CDSH_PLUGINS_BUILTIN_H
#define CDSH_PLUGINS_BUILTIN_H

#include "host/plugins.h"

/* NULL-terminated. Load order is the table's except where a descriptor's
 * `after` says otherwise (the facade loads after the others). */
extern const cdsh_plugin_def *const cdsh_builtin_plugins[];

#endif
