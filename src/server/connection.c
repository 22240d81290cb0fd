/* connection.c — the plugin that provides the "connection" service. */
#include "server/connection.h"

#include "host/host.h"

static int connection_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    return cdsh_ctx_provide(ctx, CDSH_CONNECTION_SERVICE, cdsh_host_rpc(cdsh_ctx_host(ctx)), err);
}

const cdsh_plugin_def cdsh_web_connection_plugin = {
    .name = "web-connection",
    .description = "marks that a web front end serves this host's RPC channels",
    .enabled_by_default = true,
    .apply = connection_apply,
};
