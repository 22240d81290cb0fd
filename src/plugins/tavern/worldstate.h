/* worldstate.h — a story's world-state layer: add / update / invalidate
 * deltas with keys and expiry, written through the story (so floor writes
 * are logged and undone per delta id), listed without revoked or expired
 * ones, and rendered for prompt assembly (the worldState block) and as
 * world-info entries. Thread-safety: as story.h.
 *
 * A delta is the object (delta, <id>) with value
 *   {id, ts, type, ref|null, content, keys[], order, sourceRange, expires|null, revoked}. */
#ifndef CDSH_TAVERN_WORLDSTATE_H
#define CDSH_TAVERN_WORLDSTATE_H

#include <jansson.h>
#include <stdint.h>

#include "base/err.h"
#include "plugins/tavern/story.h"

#define CDSH_TAVERN_WORLD_TURN_BUDGET 1500 /* tokens of deltas rendered per turn */

/* Appends a delta. type: add|update|invalidate; ref required for update and
 * invalidate; keys string array or NULL; expires NULL or an ISO date /
 * date-time in the future (else INVALID_ARGS, CDSH_EINVAL); order 100 when
 * < 0. *out (may be NULL) gets the stored delta (owned). floor NULL: manual. */
int cdsh_tavern_world_add(cdsh_tavern_story *story, const char *floor, const char *type,
                          const char *content, const char *ref, const json_t *keys, double order,
                          const char *expires, const char *source_range, json_t **out,
                          cdsh_error *err);
/* Marks a delta revoked (manual; not-found if unknown). */
int cdsh_tavern_world_revoke(cdsh_tavern_story *story, const char *floor, const char *id,
                             cdsh_error *err);
/* Deltas oldest first; all true includes revoked and expired ones. now_ms 0
 * = the clock. Owned. */
int cdsh_tavern_world_list(cdsh_tavern_story *story, bool all, int64_t now_ms, json_t **out,
                           cdsh_error *err);
/* World-info entries for the prompt engine: [{uid:"delta:world-delta:<id>",
 * source:"delta", content (prefixed 【当前状态·更新】/【当前状态·已失效】 for
 * update/invalidate), key[], order, constant (no keys)}]. Owned. */
int cdsh_tavern_world_entries(cdsh_tavern_story *story, int64_t now_ms, json_t **out,
                              cdsh_error *err);
/* The worldState block: live deltas without keys, plus keyed ones whose key
 * occurs in scan_text (case-insensitive), newest first within budget tokens
 * (<= 0: CDSH_TAVERN_WORLD_TURN_BUDGET), printed oldest first, one per
 * line. *text owned ("" when nothing applies). */
int cdsh_tavern_world_render(cdsh_tavern_story *story, const char *scan_text, int budget,
                             int64_t now_ms, char **text, cdsh_error *err);

#endif
