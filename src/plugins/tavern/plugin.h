/* plugin.h — the "tavern" plugin: opens the tavern service on
 * $CDSH_HOME/tavern (and the host session store for branches), registers the
 * seven model tools and the /tavern RPC channel, and provides the service
 * as "tavern" for the agent preset and the web front end. */
#ifndef CDSH_TAVERN_PLUGIN_H
#define CDSH_TAVERN_PLUGIN_H

#include "host/plugins.h"

#define CDSH_TAVERN_PLUGIN "tavern"
#define CDSH_TAVERN_SERVICE "tavern"

extern const cdsh_plugin_def cdsh_tavern_plugin;

#endif
