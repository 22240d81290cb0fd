/* rpc_gateway.c — POST /rpc/<channel>/<endpoint> → cdsh_rpc_dispatch_envelope,
 * with the HTTP status mapping of host-contracts.md §13; GET /frame/... →
 * cdsh_rpc_call, the value's html served under the sandbox CSP. */
#include "server/rpc_gateway.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Splits tail = "<channel>/<endpoint...>" into "/<channel>" and the
 * endpoint; false (res filled with a 404) when either is invalid. */
static bool split_tail(const cdsh_web_request *req, cdsh_web_response *res, char *channel,
                       size_t size, const char **endpoint, const char *usage)
{
    const char *slash = strchr(req->tail, '/');
    if (!slash || (size_t)(slash - req->tail) + 2 > size) {
        cdsh_web_reply_error(res, 404, "NOT_FOUND", "use %s", usage);
        return false;
    }
    snprintf(channel, size, "/%.*s", (int)(slash - req->tail), req->tail);
    *endpoint = slash + 1;
    if (!cdsh_rpc_channel_valid(channel) || !cdsh_rpc_endpoint_valid(*endpoint)) {
        cdsh_web_reply_error(res, 404, "NOT_FOUND", "invalid RPC channel or endpoint");
        return false;
    }
    return true;
}

static void handle(void *arg, const cdsh_web_request *req, cdsh_web_response *res)
{
    cdsh_rpc *rpc = arg;
    if (strcmp(req->method, "POST") != 0) {
        cdsh_web_reply_error(res, 404, "NOT_FOUND", "RPC endpoints take POST");
        return;
    }
    char channel[160];
    const char *endpoint;
    if (!split_tail(req, res, channel, sizeof channel, &endpoint, "POST /rpc/<channel>/<endpoint>"))
        return;
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

/* GET /frame/<channel>/<frameEndpoint>: only endpoints named frame* produce
 * documents, so no other RPC method can be reached by a plain navigation.
 * Errors are JSON (never HTML), so nothing of the request is reflected into
 * a page. */
static void frame(void *arg, const cdsh_web_request *req, cdsh_web_response *res)
{
    cdsh_rpc *rpc = arg;
    char channel[160];
    const char *endpoint;
    if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
        cdsh_web_reply_error(res, 404, "NOT_FOUND", "frame documents take GET");
        return;
    }
    if (!split_tail(req, res, channel, sizeof channel, &endpoint,
                    "GET /frame/<channel>/<frameEndpoint>"))
        return;
    if (strncmp(endpoint, "frame", 5) != 0) {
        cdsh_web_reply_error(res, 404, "NOT_FOUND", "only frame* endpoints serve documents");
        return;
    }
    json_t *payload = cdsh_web_query_object(req);
    json_t *result = cdsh_rpc_call(rpc, channel, endpoint, payload, NULL);
    json_decref(payload);
    json_t *err = json_object_get(result, "error");
    const char *html = json_string_value(json_object_get(json_object_get(result, "value"), "html"));
    if (!result) {
        cdsh_web_reply_error(res, 500, "INTERNAL", "out of memory");
    } else if (!json_is_true(json_object_get(result, "ok"))) {
        const char *code = json_string_value(json_object_get(err, "code"));
        const char *msg = json_string_value(json_object_get(err, "message"));
        bool missing = code && strcmp(code, CDSH_RPC_NOT_FOUND) == 0 && msg &&
                       strncmp(msg, "no handler for", 14) == 0;
        cdsh_web_reply_json(res, missing ? 404 : 422, json_pack("{s:O}", "error", err));
    } else if (!html) {
        cdsh_web_reply_error(res, 502, "BAD_FRAME", "the endpoint did not return {html}");
    } else if (!(res->body = strdup(html))) {
        cdsh_web_reply_error(res, 500, "INTERNAL", "out of memory");
    } else {
        res->body_len = strlen(res->body);
        res->content_type = "text/html; charset=utf-8";
        res->csp = CDSH_WEB_FRAME_CSP;
        res->frameable = true;
        res->status = 200;
    }
    json_decref(result);
}

int cdsh_rpc_gateway_mount(cdsh_web *web, cdsh_rpc *rpc, int *route_id, cdsh_error *err)
{
    return cdsh_web_route(web, NULL, "/rpc/", CDSH_WEB_ROUTE_PREFIX, handle, rpc, route_id, err);
}

int cdsh_rpc_gateway_mount_frames(cdsh_web *web, cdsh_rpc *rpc, int *route_id, cdsh_error *err)
{
    return cdsh_web_route(web, NULL, "/frame/", CDSH_WEB_ROUTE_PREFIX, frame, rpc, route_id, err);
}
