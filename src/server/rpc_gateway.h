/* rpc_gateway.h — the HTTP binding of the kernel's RPC channels
 * (host-contracts.md §13): POST /rpc/<channel>/<endpoint> with the
 * client-request / server-response envelope. Status codes below the
 * includes and in docs/web.md. */
#ifndef CDSH_SERVER_RPC_GATEWAY_H
#define CDSH_SERVER_RPC_GATEWAY_H

#include "base/err.h"
#include "host/rpc.h"
#include "server/web.h"

/* Status codes: 200 (results, envelope problems included as bad-request
 * results), 404 (wrong method, invalid or unclaimed channel/endpoint), 415
 * (not JSON), 400 (bad JSON), 500 (handler failure), 403/401/413 from the
 * web server's guards. */

/* Routes /rpc/ on web to rpc (borrowed; must outlive the route). *route_id
 * (may be NULL) is for cdsh_web_unroute. */
int cdsh_rpc_gateway_mount(cdsh_web *web, cdsh_rpc *rpc, int *route_id, cdsh_error *err);

#endif
