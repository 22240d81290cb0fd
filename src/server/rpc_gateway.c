/* rpc_gateway.c — POST /rpc/<channel>/<endpoint> → cdsh_rpc_dispatch_envelope,
 * with the HTTP status mapping of host-contracts.md §13. */
#include "server/rpc_gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void handle(void *arg, const cdsh_web_request *req, cdsh_web_response *res)
{
    cdsh_rpc *rpc = arg;
    if (strcmp(req->method, "POST") != 0) {
        cdsh_web_reply_error(res, 404, "NOT_FOUND", "RPC endpoints take POST");
        return;
    }
    /* tail = "<channel>/<endpoint...>" */
    const char *slash = strchr(req->tail, '/');
    char channel[160];
    if (!slash || (size_t)(slash - req->tail) + 2 > sizeof channel) {
        cdsh_web_reply_error(res, 404, "NOT_FOUND", "use POST /rpc/<channel>/<endpoint>");
        return;
    }
    snprintf(channel, sizeof channel, "/%.*s", (int)(slash - req->tail), req->tail);
    const char *endpoint = slash + 1;
    if (!cdsh_rpc_channel_valid(channel) || !cdsh_rpc_endpoint_valid(endpoint)) {
        cdsh_web_reply_error(res, 404, "NOT_FOUND", "invalid RPC channel or endpoint");
        return;
    }
    json_t *body = cdsh_web_body_object(req, res);
    if (!body)
        return;
    json_t *reply = cdsh_rpc_dispatch_envelope(rpc, channel, endpoint, body, NULL);
    json_decref(body);
    if (!reply) {
        cdsh_web_reply_error(res, 500, "INTERNAL", "out of memory");
        return;
    }
    json_t *result = json_object_get(reply, "result");
    const char *code = json_string_value(json_object_get(json_object_get(result, "error"), "code"));
    const char *msg =
        json_string_value(json_object_get(json_object_get(result, "error"), "message"));
    unsigned status = 200;
    if (code && strcmp(code, CDSH_RPC_INTERNAL) == 0 && msg &&
        strncmp(msg, "handler failure", 15) == 0)
        status = 500;
    else if (code && strcmp(code, CDSH_RPC_NOT_FOUND) == 0 && msg &&
             strncmp(msg, "no handler for", 14) == 0)
        status = 404;
    cdsh_web_reply_json(res, status, reply);
}

int cdsh_rpc_gateway_mount(cdsh_web *web, cdsh_rpc *rpc, int *route_id, cdsh_error *err)
{
    return cdsh_web_route(web, NULL, "/rpc/", CDSH_WEB_ROUTE_PREFIX, handle, rpc, route_id, err);
}
