/* rpc.c — the /tavern channel handler: calls the service and shapes the
 * unified envelope. Validation is the service's; this file has no logic. */
#include "plugins/tavern/rpc.h"

#include "host/rpc.h"

json_t *cdsh_tavern_rpc_envelope(cdsh_tavern_service *svc, const char *method,
                                 const json_t *payload)
{
    json_t *value = NULL;
    cdsh_error err = {0};
    int rc = cdsh_tavern_service_call(svc, method, payload, &value, &err);
    if (rc == 0)
        return cdsh_rpc_ok_new(value);
    return cdsh_rpc_error_new(err.code[0] ? err.code : CDSH_RPC_INTERNAL,
                              err.message[0] ? err.message : "tavern method failed", NULL);
}

static int handle(void *arg, const char *endpoint, const json_t *payload, cdsh_cancel *cancel,
                  json_t **result, cdsh_error *err)
{
    (void)cancel, (void)err;
    *result = cdsh_tavern_rpc_envelope(arg, endpoint, json_is_null(payload) ? NULL : payload);
    return 0;
}

int cdsh_tavern_rpc_register(cdsh_plugin_ctx *ctx, cdsh_tavern_service *svc, cdsh_error *err)
{
    return cdsh_ctx_rpc_handle(ctx, CDSH_TAVERN_RPC_CHANNEL, handle, svc, err);
}
