/* api.h — the web UI's HTTP API on top of web.h: sessions, turns started
 * on background threads, cancel, commands, status, panels, and server-sent
 * events per session and global (turn progress, streamed text, tool calls
 * and results, plugin state). Routes and events: docs/web.md. Thread-safe. */
#ifndef CDSH_SERVER_API_H
#define CDSH_SERVER_API_H

#include "agent/agent.h"
#include "server/hub.h"
#include "server/web.h"

typedef struct cdsh_api cdsh_api;

/* Registers the /api routes on web and listens on the agent's host bus for
 * "plugin/state" and "plugins/change". agent and web are borrowed and must
 * outlive the api. */
int cdsh_api_start(cdsh_web *web, cdsh_agent *agent, cdsh_api **out, cdsh_error *err);

/* Cancels running turns and ends every SSE stream, so the web server can
 * stop. Call before cdsh_web_stop. */
void cdsh_api_shutdown(cdsh_api *api);

/* After cdsh_web_stop: waits for the turn threads and frees. NULL-safe. */
void cdsh_api_free(cdsh_api *api);

/* The SSE hub (borrowed), e.g. for other modules' events. */
cdsh_hub *cdsh_api_hub(cdsh_api *api);

#endif
