/* pipeline.h — the per-turn freeze of prompt plans (liketavern §10,
 * seed invariant 7) and the story state store used for timed world-info
 * effects and variables.
 *
 * A pipeline belongs to one session. The first plan of a turn is built and
 * cached; every later step of the same turn gets the same plan (identical
 * bytes) even if assets or history changed in between. A new turn builds a
 * new plan; its standing segment reuses the pinned bytes when the standing
 * key (pin version, generation type, identities, revisions, settings) is
 * unchanged and re-pins otherwise. Thread-safe (one mutex per pipeline).
 *
 * The state store keeps one JSON object per story id ({timed, vars});
 * stories (issue 13) may plug in their own store through the vtable. */
#ifndef CDSH_TAVERN_PIPELINE_H
#define CDSH_TAVERN_PIPELINE_H

#include <jansson.h>
#include <stdbool.h>

#include "base/err.h"
#include "plugins/tavern/assemble.h"

typedef struct cdsh_tavern_pipeline cdsh_tavern_pipeline;

cdsh_tavern_pipeline *cdsh_tavern_pipeline_new(void);
void cdsh_tavern_pipeline_free(cdsh_tavern_pipeline *p);

/* The plan for turn_id (non-empty). *plan is a new reference to the frozen
 * plan (treat as read-only). *cached (may be NULL) tells whether it was
 * replayed. Errors from cdsh_tavern_assemble pass through; a failed build
 * caches nothing. */
int cdsh_tavern_pipeline_plan(cdsh_tavern_pipeline *p, const char *turn_id,
                              const cdsh_tavern_assemble_input *in, json_t **plan, bool *cached,
                              cdsh_error *err);

/* The frozen plan of turn_id (a new reference, read-only) if it was built
 * already, else NULL: lets a caller skip gathering the inputs of a step
 * whose plan is fixed. */
json_t *cdsh_tavern_pipeline_frozen_dup(cdsh_tavern_pipeline *p, const char *turn_id);

/* Ends a turn: drops its cached plan (the standing pin stays). */
void cdsh_tavern_pipeline_end_turn(cdsh_tavern_pipeline *p, const char *turn_id);

/* ---- story state ---- */

typedef struct cdsh_tavern_state_ops {
    /* *state owned; a story without state yields an empty object. */
    int (*load)(void *ud, const char *story_id, json_t **state, cdsh_error *err);
    int (*save)(void *ud, const char *story_id, const json_t *state, cdsh_error *err);
    void (*destroy)(void *ud);
} cdsh_tavern_state_ops;

typedef struct cdsh_tavern_state_store cdsh_tavern_state_store;

/* A store on caller-provided operations (ud is passed back; destroy may be NULL). */
cdsh_tavern_state_store *cdsh_tavern_state_store_new(const cdsh_tavern_state_ops *ops, void *ud);
/* In memory: values are deep-copied in and out. Thread-safe. */
cdsh_tavern_state_store *cdsh_tavern_state_store_new_memory(void);
/* Files: <dir>/<storyId>.json written atomically (dir created 0700). Story
 * ids must be valid card-style ids (INVALID_STORY_ID otherwise). */
cdsh_tavern_state_store *cdsh_tavern_state_store_new_file(const char *dir);
void cdsh_tavern_state_store_free(cdsh_tavern_state_store *s);

int cdsh_tavern_state_store_load(cdsh_tavern_state_store *s, const char *story_id, json_t **state,
                                 cdsh_error *err);
int cdsh_tavern_state_store_save(cdsh_tavern_state_store *s, const char *story_id,
                                 const json_t *state, cdsh_error *err);

#endif
