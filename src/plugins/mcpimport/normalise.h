/* normalise.h — every `.mcp.json` dialect (wrapped, flat, inline map, array,
 * VS Code "servers") and Codex `[mcp_servers.*]` TOML to the server IR of
 * docs/import.md: {name, transport, url, headers, command, args, env, cwd,
 * toolCallTimeoutMs, startupTimeoutMs, enabledTools, disabledTools,
 * unresolved, warnings, provenance}. Pure: the candidate carries the parsed
 * document; nothing here touches files, the environment or PATH.
 * Thread-safe; json_t arguments are borrowed unless stated. */
#ifndef CDSH_MCPIMPORT_NORMALISE_H
#define CDSH_MCPIMPORT_NORMALISE_H

#include <jansson.h>

/* candidate: {format: "json" | "codex-toml", document, provenance: {source:
 * "claude"|"codex", file, scope, plugin?}, pluginRoot?, pluginData?}.
 * Appends one IR object per server to `servers` and one message string per
 * file-level loss (ignored top-level keys, values that are not servers) to
 * `notes`. Returns the number of servers appended. Every key that is not
 * mapped is named in a warning; nothing is dropped silently. */
int cdsh_mcpimport_normalise(const json_t *candidate, json_t *servers, json_t *notes);

/* DSH's serverName (^[A-Za-z0-9_-]{1,32}$) for a raw name: every other
 * character becomes '-', the result is cut to 32 bytes; "" maps to "server".
 * Owned; NULL on ENOMEM. */
char *cdsh_mcpimport_server_name_dup(const char *raw);

#endif
