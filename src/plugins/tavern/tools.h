/* tools.h — registers the seven tavern model tools (liketavern §9) through
 * a plugin context; each body is a thin wrapper over
 * cdsh_tavern_service_tool. Thread-safety: as the host registry. */
#ifndef CDSH_TAVERN_TOOLS_H
#define CDSH_TAVERN_TOOLS_H

#include "base/err.h"
#include "host/plugins.h"
#include "plugins/tavern/service.h"

/* svc is borrowed and must outlive the registrations (the plugin disposes
 * the tools before it frees the service). */
int cdsh_tavern_tools_register(cdsh_plugin_ctx *ctx, cdsh_tavern_service *svc, cdsh_error *err);

/* The JSON Schema of a tool's parameters (owned), NULL for unknown names. */
json_t *cdsh_tavern_tool_parameters_dup(const char *name);

#endif
