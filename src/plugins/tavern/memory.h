/* memory.h — a story's memory entries: write / update / delete through the
 * story's logged writes, BM25 search (SQLite FTS5 over our own CJK-bigram
 * token stream) with time decay, dedupe against active entries, and
 * summaries that archive their sources (only from a reply that ended with a
 * normal stop). Tool budgets and JSON shaping are tools.c's job.
 *
 * An entry is the object (memory, <id>) with value
 *   {body, tags[], keys[], created, updated (ISO), sourceRange|null, archived}.
 * A summary has sourceRange "compress:<id,id...>"; its sources are archived
 * (archived:true, otherwise unchanged). Thread-safety: as story.h. */
#ifndef CDSH_TAVERN_MEMORY_H
#define CDSH_TAVERN_MEMORY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "plugins/tavern/story.h"

struct sqlite3;

typedef struct cdsh_tavern_memory_cfg {
    int max_entries;         /* 200 */
    int max_tokens;          /* 20000 */
    int retrieval_top_k;     /* 5 */
    int retrieval_budget;    /* 1200 tokens */
    double half_life_days;   /* 30; 0 = no decay */
    double dedup_similarity; /* 0.75; 0 disables */
    int compress_batch;      /* 20 (min 2) */
} cdsh_tavern_memory_cfg;

/* Subscribes memory's search index to the story's changes (story.h
 * listeners): every memory object written or restored, by any path, is
 * re-indexed, and an undo expands the summaries built on what it restores.
 * Idempotent and thread-safe; the service calls it, and so does every
 * memory write and search here, but a caller that writes memory objects
 * through story.h alone must call it first. */
void cdsh_tavern_memory_attach(void);

/* The defaults above. */
cdsh_tavern_memory_cfg cdsh_tavern_memory_cfg_default(void);

#define CDSH_TAVERN_MEMORY_SOFT_LIMIT 200 /* characters; longer bodies get overLength */
#define CDSH_TAVERN_PENDING_DOC "state/memory-pending.json"

/* Writes a new entry (dedupe first). *result (owned):
 *   {ok:true, id, overLength, compressScheduled}
 *   {ok:false, status:"similar-found", similarId, similarBody, similarity, hint}
 * floor NULL = manual (panel) write. */
int cdsh_tavern_memory_write(cdsh_tavern_story *story, const char *floor, const char *body,
                             const json_t *tags, const json_t *keys,
                             const cdsh_tavern_memory_cfg *cfg, bool dedupe, json_t **result,
                             cdsh_error *err);
/* Updates an entry; merge true unions tags/keys (tools), false replaces
 * them (panel; a rewritten summary becomes a manual fact: sourceRange
 * dropped). NOT_FOUND if missing. *result {ok:true, id, updated:true}. */
int cdsh_tavern_memory_update(cdsh_tavern_story *story, const char *floor, const char *id,
                              const char *body, const json_t *tags, const json_t *keys, bool merge,
                              json_t **result, cdsh_error *err);
int cdsh_tavern_memory_delete(cdsh_tavern_story *story, const char *floor, const char *id,
                              cdsh_error *err);

/* Active entries sorted by created then id: [{id, ...value}]. archived
 * true: the archived ones instead. Owned. */
int cdsh_tavern_memory_list(cdsh_tavern_story *story, bool archived, json_t **out, cdsh_error *err);
/* count and token estimate of the active entries. */
int cdsh_tavern_memory_stats(cdsh_tavern_story *story, int *count, int *tokens, cdsh_error *err);

/* BM25 over active entries plus archived sources reachable from active
 * summaries; score × 0.5^(age/halfLife) on `updated` (future not boosted);
 * ties by id. top_k <= 0: cfg->retrieval_top_k; clamped to 20. now_ms 0 =
 * the clock. *hits owned: [{id, archived, sourceRange, score, tags, keys,
 * body}]. */
int cdsh_tavern_memory_search(cdsh_tavern_story *story, const char *query, int top_k,
                              const cdsh_tavern_memory_cfg *cfg, int64_t now_ms, json_t **hits,
                              cdsh_error *err);
/* Similarity in (0,1] of text to each active entry (no decay), best 3 at or
 * above threshold: [{id, body, similarity}]. Owned. */
int cdsh_tavern_memory_similar(cdsh_tavern_story *story, const char *text, double threshold,
                               json_t **out, cdsh_error *err);

/* ---- summaries (idle maintenance) ---------------------------------------- */

/* Boundary 4: true only for a reply that finished with "stop", no error,
 * non-empty trimmed text ≤ 100 000 characters. */
bool cdsh_tavern_memory_reply_acceptable(const char *finish_reason, const char *text,
                                         bool had_error);
/* The oldest cfg->compress_batch active entries as {ids[], canon[], prompt}
 * when compression is due (over capacity or pending flag set), else *out =
 * NULL. Owned. */
int cdsh_tavern_memory_compress_plan(cdsh_tavern_story *story, const cdsh_tavern_memory_cfg *cfg,
                                     json_t **out, cdsh_error *err);
/* Commits a summary for plan (from compress_plan) made from the helper's
 * reply. An unacceptable reply archives nothing, keeps/sets the pending
 * flag and returns CDSH_EPROTO "SUMMARY_REJECTED". A source changed since
 * the plan: nothing written, CDSH_EBUSY "SUMMARY_STALE". Writes the
 * summary first, then archives (a crash leaves redundancy, never loss);
 * one transaction, unlogged. *id (may be NULL) gets the summary id. */
int cdsh_tavern_memory_compress_commit(cdsh_tavern_story *story, const json_t *plan,
                                       const char *finish_reason, const char *text, bool had_error,
                                       char **id, cdsh_error *err);
/* Pending flag (survives restarts). */
bool cdsh_tavern_memory_pending(cdsh_tavern_story *story);

/* ---- shared inside the plugin ---------------------------------------------- */

/* Token estimate: ASCII bytes / 4 (rounded up) + one per other code point. */
int cdsh__tavern_est_tokens(const char *text);
/* Search tokens of text (owned): lowercase words, CJK bigrams (single CJK
 * characters when alone), separated by spaces. */
char *cdsh__tavern_memory_tokens_dup(const char *text);
/* Inside a transaction: re-index entry key from its canonical value (NULL
 * removes it). */
int cdsh__tavern_memory_reindex(struct sqlite3 *db, const char *key, const char *canon,
                                cdsh_error *err);
/* Inside a transaction: expands every active summary whose source chain
 * contains key (restores sources, removes the summary) unless the summary
 * was edited by hand (no compress: sourceRange any more). */
int cdsh__tavern_memory_expand_for(struct sqlite3 *db, const char *key, cdsh_error *err);

#endif
