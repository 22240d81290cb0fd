/* service_priv.h — the service state shared by service.c (turns, RPC
 * methods, maintenance) and service_tools.c (the seven tool bodies and the
 * readable-path whitelist). Not part of the plugin's public surface. */
#ifndef CDSH_TAVERN_SERVICE_PRIV_H
#define CDSH_TAVERN_SERVICE_PRIV_H

#include <pthread.h>

#include "host/ops.h"
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
    cdsh_ops *ops; /* the checked operations table (methods.c), ud = this service */
};

/* ---- the operations table (methods.c) -------------------------------------------
 * Every RPC method and tool is one row; its handler is one of the functions
 * below (ud: the service, call->args: the payload or the tool arguments).
 * Method handlers return kebab-case failure codes; tool handlers run inside
 * cdsh__tavern_tool_run, which resolves the turn they write to. */
extern const cdsh_ops_table cdsh__tavern_ops_table;

#define CDSH__TAVERN_OP(fn)                                                                        \
    int fn(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err)

/* Maps module codes (CARD_NOT_FOUND, ...) onto the kebab-case RPC codes. */
int cdsh__tavern_kebab(int rc, cdsh_error *err);

/* Runs a tool row for call->agent: resolves the open turn (a write row needs
 * it), runs the handler with the turn as call->frame, maps a floor that
 * closed meanwhile to a floor-not-open result. *notice (may be NULL; owned)
 * receives the same-turn write notice. */
int cdsh__tavern_tool_run(cdsh_tavern_service *svc, const cdsh_op_call *call, json_t **value,
                          char **notice, cdsh_error *err);

#define CDSH__TAVERN_OPS(X)                                                                        \
    X(listCharacters)                                                                              \
    X(listArchivedCharacters) X(inspectCharacter) X(importCharacter) X(getCharacterDetail) X(      \
        saveCharacter) X(archiveCharacter) X(restoreCharacter) X(deleteCharacter)                  \
        X(exportCharacter) X(listLorebooks) X(getLorebook) X(importLorebook) X(listPresets) X(     \
            getPreset) X(importPreset) X(listPersonas) X(getPersona) X(importPersona)              \
            X(saveLorebook) X(deleteLorebook) X(getCharacterLorebook) X(saveCharacterLorebook) X(  \
                deleteEmbeddedLorebook) X(savePreset) X(deletePreset) X(savePersona)               \
                X(deletePersona) X(listRegexRules) X(saveRegexRules) X(createCharacter) X(         \
                    listStories) X(ensureGreeting) X(renderOutputText) X(getFloorUserMessage)      \
                    X(getFloorAssistantMessage) X(getSessionBinding) X(setSessionBinding) X(       \
                        clearSessionBinding) X(getGreetingSwipe) X(swipeGreeting) X(frameGreeting) \
                        X(getFloorSiblings) X(regenerate) X(rollbackToFloor) X(editUserMessage)    \
                            X(editAssistantMessage) X(continueFloor) X(listFloors) X(getMemories)  \
                                X(saveMemory) X(deleteMemory) X(compressMemories)                  \
                                    X(getWorldDeltas) X(addWorldDelta) X(revokeWorldDelta)         \
                                        X(getJournal) X(saveJournal) X(getChatLorebook)            \
                                            X(saveChatLorebook) X(previewPrompt) X(getTriggerLog)  \
                                                X(getSettings) X(updateSettings) X(impersonate)    \
                                                    X(memory_search) X(memory_write)               \
                                                        X(memory_update) X(lore_read)              \
                                                            X(worldstate_update) X(asset_list)     \
                                                                X(asset_read)

#define CDSH__TAVERN_OP_DECL(name) CDSH__TAVERN_OP(cdsh__tavern_op_##name);
CDSH__TAVERN_OPS(CDSH__TAVERN_OP_DECL)
#undef CDSH__TAVERN_OP_DECL

/* Settings with defaults filled (owned). */
json_t *cdsh__tavern_settings_dup(cdsh_tavern_service *svc);
cdsh_tavern_memory_cfg cdsh__tavern_memory_cfg(const json_t *settings);
/* Appends {ts, kind, ...detail} to the trigger log (detail taken), keeping
 * the newest `max` records (0: the settings default, triggerLogMax 200; at
 * least 10, as the setting's minimum). */
void cdsh__tavern_log(cdsh_tavern_service *svc, const char *kind, json_t *detail);
void cdsh__tavern_log_bounded(cdsh_tavern_service *svc, const char *kind, json_t *detail,
                              size_t max);

/* The assets a prompt plan is built from for a binding, read once: the card,
 * preset, persona, global rules, the bound library books and the persona's
 * book (NULL / empty when unset; a missing bound book is skipped), and the
 * revision fingerprint joining every tag, so an edit re-pins the standing
 * segment on the next turn. All owned; deinit releases them. */
typedef struct cdsh__tavern_assets {
    json_t *card, *preset, *persona, *rules, *books, *persona_book;
    char *revision;
} cdsh__tavern_assets;
int cdsh__tavern_assets_load(cdsh_tavern_service *svc, const json_t *binding,
                             cdsh__tavern_assets *a, cdsh_error *err);
void cdsh__tavern_assets_deinit(cdsh__tavern_assets *a);
/* The greeting ensureGreeting pinned in the story (owned), or NULL. */
char *cdsh__tavern_greeting_dup(cdsh_tavern_story *story);

#endif
