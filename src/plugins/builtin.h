/* builtin.h — the table of plugins compiled into cdsh, and of their
 * session-fork participants. Each plugin adds one line to builtin.c; the
 * profile decides which of them a host loads (cdsh_host_load_plugins).
 * Front ends (cli, server) pass these tables on; the host layer never
 * refers to them. Read-only; thread-safe. */
#ifndef CDSH_PLUGINS_BUILTIN_H
#define CDSH_PLUGINS_BUILTIN_H

#include "agent/session_store.h"
#include "host/plugins.h"

/* NULL-terminated, in load order (providers before their consumers). */
extern const cdsh_plugin_def *const cdsh_builtin_plugins[];

/* NULL-terminated: the plugins' participants in session forks (state they
 * keep about a session outside the store), for cdsh_session_store_fork_with.
 * They need no loaded host: front ends pass this table as it is. */
extern const cdsh_session_fork_hook *const cdsh_builtin_fork_hooks[];

/* The built-in descriptor named `name`, or NULL. */
const cdsh_plugin_def *cdsh_builtin_plugin_find(const char *name);

#endif
