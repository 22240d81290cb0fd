/* binding.h — which story a cdsh session plays: <root>/bindings.db holds
 * one binding per session {sessionId, cardId, storyId, presetId,
 * personaId, lorebookIds[], greetingIndex, walLineage[], createdAt} and the
 * branch-sibling index. A new binding (or a new card) gets a fresh story
 * started from the card's initial state; a session only ever opens the
 * story bound to it, and the story's own meta must name that session
 * (seed boundary 1). Branch publication is branch.h's.
 *
 * Thread-safety: every function is thread-safe (one SQLite connection with
 * a mutex); several processes may share the file (IMMEDIATE transactions,
 * busy timeout). */
#ifndef CDSH_TAVERN_BINDING_H
#define CDSH_TAVERN_BINDING_H

#include <jansson.h>
#include <stdint.h>

#include "base/err.h"
#include "plugins/tavern/store.h"
#include "plugins/tavern/story.h"

typedef struct cdsh_tavern_bindings cdsh_tavern_bindings;

/* Opens <store root>/bindings.db (created if missing); store is borrowed
 * and must outlive the handle. Sweeps orphan drafts and unbound stories
 * older than an hour. */
int cdsh_tavern_bindings_open(cdsh_tavern_store *store, cdsh_tavern_bindings **out,
                              cdsh_error *err);
void cdsh_tavern_bindings_free(cdsh_tavern_bindings *b);
cdsh_tavern_store *cdsh_tavern_bindings_store_get(cdsh_tavern_bindings *b);

/* Binds spec.sessionId (required) to spec.cardId (required, must exist:
 * CARD_NOT_FOUND) with the optional presetId, personaId, lorebookIds[] and
 * greetingIndex. A storyId in spec is ignored: a session cannot pick (or
 * take over) a story. Same card as before: the story is kept and only the
 * other fields change; otherwise a new story is created from the card's
 * initial state. *out (may be NULL) gets the stored binding (owned). */
int cdsh_tavern_binding_set(cdsh_tavern_bindings *b, const json_t *spec, json_t **out,
                            cdsh_error *err);
/* The binding (owned); NOT_BOUND (CDSH_ENOTFOUND) when unbound. */
int cdsh_tavern_binding_load(cdsh_tavern_bindings *b, const char *session_id, json_t **out,
                             cdsh_error *err);
/* Unbinds; the story file stays until swept as unbound. */
int cdsh_tavern_binding_clear(cdsh_tavern_bindings *b, const char *session_id, cdsh_error *err);
/* All bindings of a card, or of every card when card_id is NULL (owned array). */
int cdsh_tavern_binding_list(cdsh_tavern_bindings *b, const char *card_id, json_t **out,
                             cdsh_error *err);

/* Opens the story bound to session_id; NOT_BOUND, or STORY_NOT_OWNED
 * (CDSH_EPERM) if the story's meta names another session. */
int cdsh_tavern_binding_open_story(cdsh_tavern_bindings *b, const char *session_id,
                                   cdsh_tavern_story **out, cdsh_error *err);

/* Path of story_id's database (owned); NULL for an invalid id. */
char *cdsh_tavern_story_path_dup(cdsh_tavern_bindings *b, const char *story_id);
/* "story-<32 hex>" (owned). */
char *cdsh_tavern_story_id_new(void);
bool cdsh_tavern_story_id_valid(const char *story_id);

/* ---- layer-internal (branch.c) ---------------------------------------------- */

/* Inserts a binding row for a published story (spec as stored) and, when
 * parent is non-NULL, the sibling record {parent, turn, child}. Fails with
 * SESSION_BOUND if the session already has a binding. */
int cdsh__tavern_binding_insert(cdsh_tavern_bindings *b, const json_t *binding, const char *parent,
                                int64_t turn, cdsh_error *err);
/* Siblings of session at its branch point: {turn, index, total,
 * siblings[]} or JSON null when the session has no branch siblings. */
int cdsh_tavern_binding_siblings(cdsh_tavern_bindings *b, const char *session_id, json_t **out,
                                 cdsh_error *err);

#endif
