/* plugin.h — the xiangqi plugin (`xiangqi`): its descriptor for the built-in
 * table, and the state its thin wrappers (tools.c, commands.c, rpc.c,
 * opponent.c) share. Tools act for the opponent, the command and the RPC
 * channel for the person; all of them call service.h. Guide: docs/xiangqi.md. */
#ifndef CDSH_XQ_PLUGIN_H
#define CDSH_XQ_PLUGIN_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>

#include "host/plugins.h"
#include "plugins/xiangqi/game.h"
#include "plugins/xiangqi/service.h"

extern const cdsh_plugin_def cdsh_xq_plugin;

/* The RPC channel (registered only when the "connection" service exists). */
#define CDSH_XQ_RPC_CHANNEL "/xiangqi-mate"
/* The playbook skill's name. */
#define CDSH_XQ_SKILL "xiangqi-mate-playbook"
/* Event emitted (unfiltered) after every change, {plugin:"xiangqi", sessionId,
 * revision, state: the projection}; the web server forwards "plugin/state" to
 * the session's server-sent events, so a panel sees each move at once. */
#define CDSH_XQ_EVENT "plugin/state"

typedef struct cdsh__xq_opponent cdsh__xq_opponent;

/* Shared, reference-counted: tools keep it alive while a call may run. */
typedef struct cdsh__xq_plugin {
    atomic_int refs;
    cdsh_host *host;
    cdsh_xq_service *svc;
    json_t *config;     /* the complete config (own copy) */
    pthread_mutex_t mu; /* session store handle */
    void *sessions;     /* cdsh_session_store * (<home>/sessions.db), opened on first use */
    char last_key[CDSH__XQ_KEY_MAX + 1]; /* under mu; "" = none */
    cdsh__xq_opponent *opponent;
} cdsh__xq_plugin;

cdsh__xq_plugin *cdsh__xq_plugin_ref(cdsh__xq_plugin *p);
void cdsh__xq_plugin_unref(void *p); /* void * so it can be a free_ud */

/* The game key for a scope: the nearest id on the chain that is a valid
 * key (session scopes are named by their session id). For the global scope
 * (front ends whose tool calls and commands carry no session scope) it is
 * the session a person last reached through the RPC channel, else
 * "default". */
void cdsh__xq_key_from_scope(cdsh__xq_plugin *p, const cdsh_scope *scope,
                             char out[CDSH__XQ_KEY_MAX + 1]);
/* Records the session a person just used (RPC admission). */
void cdsh__xq_plugin_touch(cdsh__xq_plugin *p, const char *key);

/* Registration helpers (each registers through ctx, so unloading undoes it). */
int cdsh__xq_tools_register(cdsh_plugin_ctx *ctx, cdsh__xq_plugin *p, cdsh_error *err);
int cdsh__xq_command_register(cdsh_plugin_ctx *ctx, cdsh__xq_plugin *p, cdsh_error *err);
int cdsh__xq_rpc_register(cdsh_plugin_ctx *ctx, cdsh__xq_plugin *p, cdsh_error *err);

/* The stored session `id` (owned JSON), or NULL when it does not exist or
 * the store cannot be opened (opened on first use, $CDSH_HOME/sessions.db). */
json_t *cdsh__xq_plugin_session_get(cdsh__xq_plugin *p, const char *id);

/* Text of a refusal for people: errorZh, then the legal moves. Owned. */
char *cdsh__xq_refusal_text_dup(const json_t *refusal);

#endif
