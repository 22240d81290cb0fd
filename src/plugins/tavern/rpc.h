/* rpc.h — the /tavern RPC channel: endpoint = method name (service.h's
 * cdsh_tavern_methods), payload = the method's object, result = the unified
 * envelope {ok:true,value} | {ok:false,error:{code,message,details}}. The
 * HTTP binding is the web front end's gateway. Thread-safe. */
#ifndef CDSH_TAVERN_RPC_H
#define CDSH_TAVERN_RPC_H

#include "base/err.h"
#include "host/plugins.h"
#include "plugins/tavern/service.h"

#define CDSH_TAVERN_RPC_CHANNEL "/tavern"

/* svc borrowed; must outlive the channel. */
int cdsh_tavern_rpc_register(cdsh_plugin_ctx *ctx, cdsh_tavern_service *svc, cdsh_error *err);

/* The envelope for one call (owned); usable without a host (tests, CLI). */
json_t *cdsh_tavern_rpc_envelope(cdsh_tavern_service *svc, const char *method,
                                 const json_t *payload);

#endif
