/* plugin.h — the "acp" plugin descriptor: provides the "acp" service (a
 * cdsh_acp_service, service.h) and the "/acp" RPC channel for panels
 * (engines, probe, bind, sessions, config). Chat and the web engine picker
 * use the service; this file holds no business logic. */
#ifndef CDSH_PLUGINS_ACP_PLUGIN_H
#define CDSH_PLUGINS_ACP_PLUGIN_H

#include "agent/session_store.h"
#include "host/plugins.h"

#define CDSH_ACP_PLUGIN "acp"
#define CDSH_ACP_SERVICE "acp" /* a cdsh_acp_service * */

/* Not enabled by default (it spawns external programs only when asked, but
 * a profile opts in). Config: {fs: bool (default true: serve the
 * confined fs read/write calls), mcpServers: [ACP McpServer] offered to engines whose mcp
 * is "inherit", cdshTools: a glob — cdsh's own tools (`cdsh mcp --tools GLOB`) offered
 * the same way; "" for none}. RPC endpoints of "/acp": engines → {engines, diagnostics};
 * probe {engine, prompt?, cwd?} → the evidence record; bind {session,
 * engine, cwd?}; sessions → the sessions map; config {session} → the live
 * session's {configOptions, modes}. */
extern const cdsh_plugin_def cdsh_acp_plugin;

/* The fork participant (plugins/builtin.h): a fork of an engine-bound
 * session is bound too (cdsh_acp_service_fork). arg: a cdsh_acp_service to
 * use, or NULL (the builtin row): then the front end's live service, the
 * fork env's CDSH_ACP_SERVICE (cdsh web passes its own, so the fork runs
 * on the engine process already serving the parent), and without one a
 * service made for the call — its engine process is disposed when the fork
 * is done; cdsh's own tools are offered as in `cdsh chat`. Unbound
 * sessions cost nothing (no process). */
extern const cdsh_session_fork_hook cdsh_acp_fork_hook;

#endif
