/* rpc_gateway.h — the HTTP binding of the kernel's RPC channels
 * (host-contracts.md §13): POST /rpc/<channel>/<endpoint> with the
 * client-request / server-response envelope, and GET /frame/... for
 * sandboxed documents. Status codes below the includes and in docs/web.md. */
#ifndef CDSH_SERVER_RPC_GATEWAY_H
#define CDSH_SERVER_RPC_GATEWAY_H

#include "base/err.h"
#include "host/rpc.h"
#include "server/web.h"

/* Status codes: 200 (results, envelope problems included as bad-request
 * results), 404 (wrong method, invalid or unclaimed channel/endpoint), 415
 * (not JSON), 400 (bad JSON), 500 (handler failure), 403/401/413 from the
 * web server's guards. */

/* Sandboxed documents (interactive card HTML, boundary 8 of the tavern seed):
 * GET /frame/<channel>/<endpoint>?k=v... calls the endpoint — only one whose
 * name starts with "frame" — with the query arguments as a payload of
 * strings; a result {ok:true, value:{html}} is served as text/html under
 * CDSH_WEB_FRAME_CSP, framable only by this origin; anything else is a JSON
 * error (404 no such endpoint, 422 an RPC error, 502 not {html}). The CSP's
 * sandbox gives the document an opaque origin whatever the iframe says, so it
 * can neither read this origin's cookies and DOM nor call its API. */
#define CDSH_WEB_FRAME_CSP                                                                         \
    "sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline'; "                      \
    "style-src 'unsafe-inline'; img-src data: blob:; font-src data:; media-src data: blob:; "      \
    "connect-src 'none'; form-action 'none'; frame-src 'none'; base-uri 'none'; "                  \
    "frame-ancestors 'self'"

/* Routes /rpc/ on web to rpc (borrowed; must outlive the route). *route_id
 * (may be NULL) is for cdsh_web_unroute. */
int cdsh_rpc_gateway_mount(cdsh_web *web, cdsh_rpc *rpc, int *route_id, cdsh_error *err);

/* Routes /frame/ on web to rpc, the same way. */
int cdsh_rpc_gateway_mount_frames(cdsh_web *web, cdsh_rpc *rpc, int *route_id, cdsh_error *err);

#endif
