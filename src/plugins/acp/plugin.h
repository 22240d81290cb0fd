/* plugin.h — the "acp" plugin descriptor: provides the "acp" service (a
 * cdsh_acp_service, service.h), the "/acp" RPC channel, a session-fork
 * participant and a session runner; its `cdsh acp` subcommands are in
 * cmd_acp*.c. plugin.c holds no business logic. */
#ifndef CDSH_PLUGINS_ACP_PLUGIN_H
#define CDSH_PLUGINS_ACP_PLUGIN_H

#include "agent/session_store.h"
#include "host/plugins.h"

#define CDSH_ACP_PLUGIN "acp"
#define CDSH_ACP_SERVICE "acp" /* a cdsh_acp_service * */

/* Enabled by default (it spawns an engine only when a session bound to one
 * is messaged). Config: {fs: bool (default true: serve the confined fs
 * read/write calls), terminal: bool, mcpServers: [ACP McpServer] offered to
 * engines whose mcp is "inherit", cdshTools: a glob — cdsh's own tools
 * (`cdsh mcp --tools GLOB`) offered the same way; "*" (default) all, ""
 * none}. Permission requests go to the approval broker the front end
 * installed on the host's tools (cdsh_approvals_installed).
 *
 * The "/acp" RPC channel is the one engines surface (the web page's picker
 * uses it; docs/acp.md), built from the plugin's operations table (ops.c,
 * host/ops.h: a row per operation with its argument and result shapes;
 * "$ops" lists them):
 *   engines → {engines: [rows with resolved], diagnostics}
 *   probe {engine, prompt?, cwd?} → the evidence record
 *   sessions → the sessions map
 *   session {session} → STATE
 *   bind {session, engine, cwd?} → STATE (cwd: the current directory for a
 *     new binding)
 *   unbind {session} → STATE (refused once locked: conflict/ENGINE_LOCKED)
 *   open {session} → STATE (opens the ACP session so its options show)
 *   config {session, configId?, value?} → STATE (+ via when it set one)
 * where STATE = {binding: entry|null, locked, config: {configOptions,
 * modes}|null}. Errors: bad-request, not-found, conflict (ENGINE_LOCKED,
 * busy), internal; error.details.code is the precise code. bind and unbind
 * emit "sessions/change" {reason:"engine", id} on the host bus.
 *
 * Through its context it also registers a fork participant
 * (CDSH_SESSION_FORK_HOOKS: a fork of an engine-bound session is bound too,
 * on the live service) and the session runner "engine"
 * (CDSH_SESSION_RUNNERS: turns of bound sessions go to the engine; bind for
 * `cdsh chat --engine`; a deleted session's binding is dropped). */
extern const cdsh_plugin_def cdsh_acp_plugin;

/* The same fork participant without a loaded plugin (arg NULL), for
 * callers that fork outside a host: a fork of an engine-bound session is
 * bound too (cdsh_acp_service_fork) on the fork env's CDSH_ACP_SERVICE, or
 * without one on a service made for the call — its engine process is
 * disposed when the fork is done; cdsh's own tools are offered. The
 * registered one's arg is the plugin's live service, so a fork runs on the
 * engine process already serving the parent. Unbound sessions cost nothing
 * (no process). */
extern const cdsh_session_fork_hook cdsh_acp_fork_hook;

#endif
