/* rpc.c — the /tavern channel's envelope without a host (tests, CLI): the
 * same answer the channel the host builds from the operations table gives.
 * The rows are methods.c's; this file has no logic. */
#include "plugins/tavern/rpc.h"

#include "host/ops.h"

json_t *cdsh_tavern_rpc_envelope(cdsh_tavern_service *svc, const char *method,
                                 const json_t *payload)
{
    return cdsh_ops_rpc_envelope(cdsh_tavern_service_ops(svc), method, payload, NULL);
}
