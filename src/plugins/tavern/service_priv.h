/* service_priv.h — the service state shared by service.c (turns, RPC
 * methods, maintenance) and service_tools.c (the seven tool bodies and the
 * readable-path whitelist). Not part of the plugin's public surface. */
#ifndef CDSH_TAVERN_SERVICE_PRIV_H
#define CDSH_TAVERN_SERVICE_PRIV_H

#include <pthread.h>

#include "plugins/tavern/binding.h"
#include "plugins/tavern/service.h"

typedef struct cdsh__tavern_open_turn {
    const cdsh_scope *scope; /* identity only; never dereferenced */
    char *session, *card, *story, *floor;
    int64_t turn;
} cdsh__tavern_open_turn;

struct cdsh_tavern_service {
    cdsh_tavern_store *store;
    cdsh_tavern_bindings *bindings;
    cdsh_session_store *sessions; /* borrowed, may be NULL */
    pthread_mutex_t mu;           /* guards turns, current, log, maint */
    cdsh__tavern_open_turn *turns;
    size_t n_turns;
    json_t *current; /* session → current turn number */
    json_t *log;     /* trigger log ring (array) */
    json_t *maint;   /* story → "<session>#t<turn>" of the last maintenance attempt */
    cdsh_tavern_helper_fn helper; /* impersonation; may be NULL */
    void *helper_ud;
};

/* Settings with defaults filled (owned). */
json_t *cdsh__tavern_settings_dup(cdsh_tavern_service *svc);
cdsh_tavern_memory_cfg cdsh__tavern_memory_cfg(const json_t *settings);
/* Appends {ts, kind, ...detail} to the trigger log (detail taken). */
void cdsh__tavern_log(cdsh_tavern_service *svc, const char *kind, json_t *detail);

#endif
