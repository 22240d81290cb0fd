/* wire.h — the tavern's host request boundaries (seed boundary 5,
 * liketavern §10): `tavern:standing` prompt segment (order 210), `tavern:turn`
 * runtime context and preset sampling, from the session's bound story via the
 * prompt engine (assemble.h, pipeline.h). Unbound sessions get nothing.
 * Thread-safety: every function is thread-safe (one mutex for the turn cache). */
#ifndef CDSH_TAVERN_WIRE_H
#define CDSH_TAVERN_WIRE_H

#include "base/err.h"
#include "host/plugins.h"
#include "plugins/tavern/service.h"

#define CDSH_TAVERN_STANDING_SEGMENT "tavern:standing"
#define CDSH_TAVERN_STANDING_ORDER 210
#define CDSH_TAVERN_TURN_CONTEXT "tavern:turn"

/* Registers the segment, the runtime-context/sampling provider and the
 * agent/turn listener that ends the per-turn plan cache, through ctx. svc is
 * borrowed and must outlive the registrations. */
int cdsh_tavern_wire_register(cdsh_plugin_ctx *ctx, cdsh_tavern_service *svc, cdsh_error *err);

/* The prompt engine's plan for session_id as a dry run (nothing written):
 * *plan owned, NULL when the session is unbound (returns 0). */
int cdsh_tavern_wire_plan(cdsh_tavern_service *svc, const char *session_id, json_t **plan,
                          cdsh_error *err);

#endif
