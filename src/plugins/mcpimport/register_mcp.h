/* register_mcp.h — an enabled server IR → tools mcp__<server>__<tool> (with
 * the enabledTools / disabledTools filter and the per-call timeout) backed
 * by an MCP client connection (DSH's scrubbed child environment plus the
 * server's env with `${VAR}` filled from the secrets store) that is made
 * lazily: registering never spawns or reaches the server. The tools come
 * from the list cached at the last connection ($CDSH_HOME/cache/import/
 * <server>.json, valid while the server's start-up config is unchanged);
 * the first call connects and re-validates it (a changed list re-registers
 * the tools and rewrites the cache). Without a valid cache the server
 * connects when the model's tool list is assembled (a host/prompt.h tool
 * source). Unloading removes every tool and closes the connection.
 * Lifecycle calls; serialise them with the plugin's apply. */
#ifndef CDSH_MCPIMPORT_REGISTER_MCP_H
#define CDSH_MCPIMPORT_REGISTER_MCP_H

#include <jansson.h>

#include "base/err.h"
#include "host/plugins.h"
#include "plugins/mcpimport/secrets.h"

/* Registers server IR `ir` (borrowed, copied) as above. Secret values come
 * from `secrets` (may be NULL; must stay valid while the plugin is active)
 * and are used only for the child's env and the request headers, at
 * connect time. Errors: CDSH_EINVAL "NOT_CONNECTABLE" (no transport /
 * command / url), TOOL_EXISTS from the registry (cached tools). A call
 * fails with the client's connect errors (messages name the server, never
 * a value) or "TOOL_GONE" `MCP server "<s>" no longer offers tool "<t>"`. */
int cdsh_mcpimport_register_server(cdsh_plugin_ctx *ctx, const json_t *ir,
                                   cdsh_mcpimport_secrets *secrets, cdsh_error *err);

#endif
