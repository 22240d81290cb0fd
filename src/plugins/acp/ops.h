/* ops.h — the acp plugin's operations table (host/ops.h): the rows of the
 * "/acp" RPC channel, the one engines surface (the web page's picker calls
 * it through the RPC gateway, POST /rpc/acp/<row>). Private to the plugin:
 * plugin.c registers it with a cdsh__acp_ops_ud that outlives the channel. */
#ifndef CDSH_PLUGINS_ACP_OPS_H
#define CDSH_PLUGINS_ACP_OPS_H

#include "host/host.h"
#include "host/ops.h"
#include "plugins/acp/service.h"

#define CDSH_ACP_RPC_CHANNEL "/acp"

/* What the handlers work on (borrowed; owned by the plugin). */
typedef struct cdsh__acp_ops_ud {
    cdsh_acp_service *svc;
    cdsh_host *host; /* bind / unbind announce "sessions/change" on its bus */
} cdsh__acp_ops_ud;

extern const cdsh_ops_table cdsh__acp_ops_table;

#endif
