/* plugin.h — the "facade" plugin descriptor: provides the "capabilities"
 * service (service.h) and registers the capabilities declared in its profile
 * config, over any tool registered by then (built-in, plugin or MCP). */
#ifndef CDSH_PLUGINS_FACADE_PLUGIN_H
#define CDSH_PLUGINS_FACADE_PLUGIN_H

#include "host/plugins.h"

#define CDSH_FACADE_PLUGIN "facade"

/* Enabled by default; with nothing declared it registers no tool and no
 * prompt text. Config: {capabilities: [<declaration as in service.h>]}.
 * A declaration that fails is reported (log/warning event, the log, and
 * cdsh_facade_problems) and registers nothing; the others still load. One
 * whose only problem is a step tool that is not registered yet is retried
 * whenever tools are registered (a slow MCP server, a plugin loaded later). */
extern const cdsh_plugin_def cdsh_facade_plugin;

#endif
