/* rpc.h — the /tavern RPC channel: endpoint = method name (a row of the
 * operations table, methods.c), payload = the method's object, result = the
 * unified envelope {ok:true,value} | {ok:false,error:{code,message,details}};
 * "$ops" lists the rows. The channel itself is registered with the table
 * (cdsh_ops_register); the HTTP binding is the web front end's gateway.
 * Thread-safe. */
#ifndef CDSH_TAVERN_RPC_H
#define CDSH_TAVERN_RPC_H

#include "plugins/tavern/service.h"

#define CDSH_TAVERN_RPC_CHANNEL "/tavern"

/* The envelope for one call (owned); usable without a host (tests, CLI). */
json_t *cdsh_tavern_rpc_envelope(cdsh_tavern_service *svc, const char *method,
                                 const json_t *payload);

#endif
