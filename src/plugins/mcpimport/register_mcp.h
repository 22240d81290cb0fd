/* register_mcp.h — an enabled server IR → an MCP client connection (DSH's
 * scrubbed child environment plus the server's env with `${VAR}` filled from
 * the secrets store) whose tools are registered as mcp__<server>__<tool>
 * (with the enabledTools / disabledTools filter and the per-call timeout)
 * through the plugin context: unloading closes the connection and removes
 * every tool. Lifecycle calls; serialise them with the plugin's apply. */
#ifndef CDSH_MCPIMPORT_REGISTER_MCP_H
#define CDSH_MCPIMPORT_REGISTER_MCP_H

#include <jansson.h>

#include "base/err.h"
#include "host/plugins.h"
#include "plugins/mcpimport/secrets.h"

/* Connects server IR `ir` (borrowed) and registers its tools. Secret values
 * come from `secrets` (may be NULL) and are used only for the child's env
 * and the request headers. Errors: CDSH_EINVAL "NOT_CONNECTABLE" (no
 * transport / command / url), the client's connect errors (messages name
 * the server, never a value), the bridge's TOOL_EXISTS. */
int cdsh_mcpimport_register_server(cdsh_plugin_ctx *ctx, const json_t *ir,
                                   cdsh_mcpimport_secrets *secrets, cdsh_error *err);

#endif
