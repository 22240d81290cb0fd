/* register.h — enabled command IR → cdsh slash commands through the plugin
 * context (so unloading removes them). Running one expands its placeholders
 * (commands.h) and answers with the prompt text. Thread-safe as the host's
 * command registry is; the IR must outlive the registration. */
#ifndef CDSH_MCPIMPORT_REGISTER_H
#define CDSH_MCPIMPORT_REGISTER_H

#include <jansson.h>

#include "base/err.h"
#include "host/plugins.h"

/* Registers command IR `cmd` (borrowed; keep it alive until ctx unloads).
 * Errors are the command registry's. */
int cdsh_mcpimport_register_command(cdsh_plugin_ctx *ctx, const json_t *cmd, cdsh_error *err);

#endif
