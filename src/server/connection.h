/* connection.h — the "connection" service: present only while a front end
 * serves the host's RPC channels to browsers (`cdsh web`). Plugins list it as
 * an optional service and register their panel channels only when it exists
 * (xiangqi seed §4.2); the service value is the host's cdsh_rpc registry. */
#ifndef CDSH_SERVER_CONNECTION_H
#define CDSH_SERVER_CONNECTION_H

#include "host/plugins.h"

#define CDSH_CONNECTION_SERVICE "connection"

/* Load it into a host whose RPC channels a web server exposes. */
extern const cdsh_plugin_def cdsh_web_connection_plugin;

#endif
