/* service_priv.h — the service state shared by service.c (turns, RPC
 * methods, maintenance) and service_tools.c (the seven tool bodies and the
 * readable-path whitelist). Not part of the plugin's public surface. */
#ifndef CDSH_TAVERN_SERVICE_PRIV_H
#define CDSH_TAVERN_SERVICE_PRIV_H

#include <pthread.h>

#include "host/ops.h"
#include "plugins/tavern/binding.h"
#include "plugins/tavern/pipeline.h"
#include "plugins/tavern/service.h"

/* A turn of a bound session, from turn start to the maintenance after its
 * end, found by session id. Its story handle is opened once at turn start
 * and shared (by reference) with the plan, the memories, every tool call and
 * the maintenance of that turn. */
typedef struct cdsh__tavern_open_turn {
    const cdsh_scope *scope; /* the agent's scope for this turn: identity only, never
                                dereferenced; tells two agents' turns on one session apart */
    char *session, *card, *story, *floor;
    int64_t turn;
    cdsh_tavern_story *handle; /* the turn's story; its floor is committed at turn end */
    bool ended;                /* committed; the handle waits for the maintenance */
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
    json_t *gen_types; /* session → generation type of its next turn (guarded by mu) */
};

/* The generation type (SillyTavern's: continue, regenerate, swipe, ...) of
 * the session's next live turn, set by the method that asks for that turn
 * (continueFloor, regenerate) and taken once by the wire when the turn
 * starts (service_wi.c). take returns an owned string or NULL ("normal"). */
void cdsh__tavern_gen_type_set(cdsh_tavern_service *svc, const char *sid, const char *type);
char *cdsh__tavern_gen_type_take_dup(cdsh_tavern_service *svc, const char *sid);

/* The story session_id is bound to, as cdsh_tavern_binding_open_story
 * (same errors), but the handle of the session's open (or just ended) turn
 * when it is still bound to that turn's story: one open per turn. Release
 * with cdsh_tavern_story_free. */
int cdsh__tavern_session_story(cdsh_tavern_service *svc, const char *session_id,
                               cdsh_tavern_story **out, cdsh_error *err);
/* The session id a tool call runs for: the nearest scope on the chain whose
 * id is a session id (the agent names each session's scope so), or NULL. */
const char *cdsh__tavern_scope_session(const cdsh_scope *scope);

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

/* clang-format off */
#define CDSH__TAVERN_OPS(X) \
    X(listCharacters) \
    X(listArchivedCharacters) \
    X(inspectCharacter) \
    X(importCharacter) \
    X(getCharacterDetail) \
    X(saveCharacter) \
    X(archiveCharacter) \
    X(restoreCharacter) \
    X(deleteCharacter) \
    X(exportCharacter) \
    X(listLorebooks) \
    X(getLorebook) \
    X(importLorebook) \
    X(listPresets) \
    X(getPreset) \
    X(importPreset) \
    X(listPersonas) \
    X(getPersona) \
    X(importPersona) \
    X(saveLorebook) \
    X(deleteLorebook) \
    X(getCharacterLorebook) \
    X(saveCharacterLorebook) \
    X(deleteEmbeddedLorebook) \
    X(savePreset) \
    X(deletePreset) \
    X(savePersona) \
    X(deletePersona) \
    X(listRegexRules) \
    X(saveRegexRules) \
    X(createCharacter) \
    X(listStories) \
    X(ensureGreeting) \
    X(renderOutputText) \
    X(getFloorUserMessage) \
    X(getFloorAssistantMessage) \
    X(getSessionBinding) \
    X(setSessionBinding) \
    X(clearSessionBinding) \
    X(getGreetingSwipe) \
    X(swipeGreeting) \
    X(frameGreeting) \
    X(getFloorSiblings) \
    X(regenerate) \
    X(rollbackToFloor) \
    X(editUserMessage) \
    X(editAssistantMessage) \
    X(continueFloor) \
    X(listFloors) \
    X(getMemories) \
    X(saveMemory) \
    X(deleteMemory) \
    X(compressMemories) \
    X(getWorldDeltas) \
    X(addWorldDelta) \
    X(revokeWorldDelta) \
    X(getJournal) \
    X(saveJournal) \
    X(getChatLorebook) \
    X(saveChatLorebook) \
    X(getWorldInfoSettings) \
    X(saveStoryWorldInfoSettings) \
    X(previewPrompt) \
    X(getTriggerLog) \
    X(getSettings) \
    X(updateSettings) \
    X(impersonate) \
    X(memory_search) \
    X(memory_write) \
    X(memory_update) \
    X(lore_read) \
    X(worldstate_update) \
    X(asset_list) \
    X(asset_read)
/* clang-format on */

#define CDSH__TAVERN_OP_DECL(name) CDSH__TAVERN_OP(cdsh__tavern_op_##name);
CDSH__TAVERN_OPS(CDSH__TAVERN_OP_DECL)
#undef CDSH__TAVERN_OP_DECL

/* Settings with defaults filled (owned). */
json_t *cdsh__tavern_settings_dup(cdsh_tavern_service *svc);
/* The world-info settings of a turn (service_wi.c): SillyTavern's defaults,
 * the preset's openai_max_context (preset may be NULL), the profile's
 * settings.worldInfo, then the story's own layer (story may be NULL).
 * CDSH_EINVAL "wi-settings-rejected" when a stored layer is invalid. */
int cdsh__tavern_wi_settings_effective(const json_t *settings, const json_t *preset,
                                       cdsh_tavern_story *story, cdsh_tavern_wi_settings *out,
                                       cdsh_error *err);
cdsh_tavern_memory_cfg cdsh__tavern_memory_cfg(const json_t *settings);
/* Appends {ts, kind, ...detail} to the trigger log (detail taken), keeping
 * the newest `max` records (0: the settings default, triggerLogMax 200; at
 * least 10, as the setting's minimum). */
void cdsh__tavern_log(cdsh_tavern_service *svc, const char *kind, json_t *detail);
/* Story objects of this kind hold a live turn's world-info record under its
 * floor's name ("<session>#t<turn>"), written in that floor: they survive a
 * restart and go when the floor is undone. */
#define CDSH__TAVERN_KIND_TRIGGER "trigger"
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
/* The prompt plan of session_id (service_plan.c) from the story's saved
 * timed effects and variables and the home's global variables. pipe/turn_id
 * NULL: a dry run (preview; nothing written). With a pipeline the turn is
 * live: the story state is saved back once, when the turn's plan is first
 * built, and *g_before / *g_after (owned, may stay NULL) get the globals to
 * commit at turn end. *plan owned; NULL when the session is unbound. */
typedef struct cdsh__tavern_plan_opts {
    bool has_seed;     /* replay: use seed instead of drawing a fresh one */
    uint32_t seed;
    const char *generation_type;   /* NULL: "normal" */
    const json_t *wi_settings;     /* a last layer over the effective settings, or NULL */
} cdsh__tavern_plan_opts;
/* A fresh 32-bit seed from the system's random source. */
uint32_t cdsh__tavern_seed_draw(void);
/* opts may be NULL (a fresh seed, a normal turn). A live turn's seed is
 * stored in its floor with the prompt state (state/prompt-state.json
 * "seed") and is part of the plan ("seed") and of the trigger log. */
int cdsh__tavern_plan_build(cdsh_tavern_service *svc, const char *sid, cdsh_tavern_pipeline *pipe,
                            const char *turn_id, long long turn,
                            const cdsh__tavern_plan_opts *opts, json_t **plan, json_t **g_before,
                            json_t **g_after, cdsh_error *err);
/* <tavern root>/state, where the home-wide global variables live (owned). */
char *cdsh__tavern_globals_dir_dup(cdsh_tavern_service *svc);
/* Logs a failed load or commit of the globals (dir NULL: out of memory). */
void cdsh__tavern_globals_failed(cdsh_tavern_service *svc, const char *sid, const char *dir,
                                 const cdsh_error *err);

/* The greeting ensureGreeting pinned in the story (owned), or NULL. */
char *cdsh__tavern_greeting_dup(cdsh_tavern_story *story);

/* Logs the bound card's chosen greeting (macros expanded) as the session's
 * session/opening event — its first assistant message in the model's
 * history and the chat — unless the conversation started or that opening is
 * already the current one. Unbound sessions and a service without a session
 * store: nothing, 0. */
int cdsh__tavern_write_opening(cdsh_tavern_service *svc, const char *sid, cdsh_error *err);

#endif
