/* story.h — one story = one SQLite database (<root>/stories/<storyId>.db):
 * the story's objects (memory entries, world deltas, documents such as the
 * journal, chat lorebook and timers), its floors, the per-floor write log and
 * the persisted undo cursor. Binding sessions to stories is binding.h's job;
 * memory and world-state semantics live in memory.h and worldstate.h.
 *
 * Every object is a JSON value under (kind, key). A write made inside an open
 * floor appends a checksummed log record {seq, kind, key, before, after} in
 * the same IMMEDIATE transaction, before the body row changes; a write with
 * floor NULL (panels, maintenance) is not logged and survives undo. Undo
 * validates every record, cursor and successor dependency of the whole batch
 * before the first change, then restores newest-first one record per
 * transaction, the cursor advancing in the same transaction; an interrupted
 * batch is finished when the story is next opened.
 *
 * Thread-safety: a handle serialises its calls with a mutex; several handles
 * and several processes may open one story at once (SQLite locks, busy
 * timeout CDSH_TAVERN_STORY_BUSY_MS). */
#ifndef CDSH_TAVERN_STORY_H
#define CDSH_TAVERN_STORY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct cdsh_tavern_story cdsh_tavern_story;
struct sqlite3;

#define CDSH_TAVERN_STORY_BUSY_MS 15000

/* Object kinds. */
#define CDSH_TAVERN_KIND_MEMORY "memory" /* key = entry id; see memory.h */
#define CDSH_TAVERN_KIND_DELTA "delta"   /* key = delta id; see worldstate.h */
#define CDSH_TAVERN_KIND_DOC "doc"       /* key = "journal.md", "assets/chat-lorebook.json", ... */

/* Error codes: STORY_NOT_FOUND (ENOTFOUND), BAD_STORY (EPROTO: not a story
 * database or wrong meta), DB_ERROR (EIO/EBUSY), FLOOR_NOT_OPEN (EPERM),
 * FLOOR_EXISTS (EEXIST: an open floor of that name), FLOOR_COMMITTED
 * (EEXIST: the turn was completed before; reusing it is refused),
 * FLOOR_NOT_FOUND (ENOTFOUND), FLOOR_RECOVERING (EBUSY: an undo cursor
 * exists), WAL_CORRUPT (EPROTO: a record, its checksum, its sequence or a
 * cursor is invalid; nothing was changed), FLOOR_SUCCESSOR (EBUSY: a later
 * floor builds on this one; undo it first), INVALID_ARGS (EINVAL). */

/* Creates a story database at path (must not exist), atomically: built as a
 * hidden sibling, fsynced and renamed into place. docs (object key → JSON
 * value, borrowed, may be NULL) become unlogged doc objects: the card's
 * initial state. */
int cdsh_tavern_story_create(const char *path, const char *story_id, const char *card_id,
                             const char *session_id, const json_t *docs, cdsh_error *err);

/* Opens an existing story and finishes an interrupted undo batch. */
int cdsh_tavern_story_open(const char *path, cdsh_tavern_story **out, cdsh_error *err);
/* Releases one reference; the last closes the database. NULL-safe. */
void cdsh_tavern_story_free(cdsh_tavern_story *story);

const char *cdsh_tavern_story_id_get(const cdsh_tavern_story *story);
const char *cdsh_tavern_story_card_get(const cdsh_tavern_story *story);
const char *cdsh_tavern_story_session_get(const cdsh_tavern_story *story);
const char *cdsh_tavern_story_path_get(const cdsh_tavern_story *story);

/* ---- objects --------------------------------------------------------------- */

/* *value owned; CDSH_ENOTFOUND (NOT_FOUND) when absent. */
int cdsh_tavern_story_load(cdsh_tavern_story *story, const char *kind, const char *key,
                           json_t **value, cdsh_error *err);
/* Writes (value borrowed) or deletes (value NULL) an object. floor NULL:
 * unlogged manual write. Otherwise the floor must be open (FLOOR_NOT_OPEN)
 * and the record is logged first. Writing an unchanged value is a no-op and
 * logs nothing. expect_canon (may be NULL) must equal the current value's
 * canonical text ("" = absent) or the write fails with REVISION_CONFLICT. */
int cdsh_tavern_story_put(cdsh_tavern_story *story, const char *floor, const char *kind,
                          const char *key, const json_t *value, const char *expect_canon,
                          cdsh_error *err);
/* All objects of kind as [{key, value}], ordered by key. Owned. */
int cdsh_tavern_story_list(cdsh_tavern_story *story, const char *kind, json_t **out,
                           cdsh_error *err);

/* Canonical text of a JSON value (sorted keys, compact). Owned. */
char *cdsh_tavern_story_canon_dup(const json_t *value);

/* ---- floors ---------------------------------------------------------------- */

/* "<session>#t<turn>" (owned). */
char *cdsh_tavern_floor_name_dup(const char *session_id, int64_t turn);
/* Opens floor <session>#t<turn>. FLOOR_EXISTS if open, FLOOR_COMMITTED if
 * it was completed (a host reusing a turn number); a rolled-back floor of
 * that name does not block. */
int cdsh_tavern_story_floor_begin(cdsh_tavern_story *story, const char *session_id, int64_t turn,
                                  cdsh_error *err);
/* Validates the floor's records and marks it committed. */
int cdsh_tavern_story_floor_commit(cdsh_tavern_story *story, const char *floor, cdsh_error *err);
/* Reopens a committed floor for a controlled append. */
int cdsh_tavern_story_floor_reopen(cdsh_tavern_story *story, const char *floor, cdsh_error *err);
/* true if the floor exists, is open and no undo is pending. */
bool cdsh_tavern_story_floor_is_open(cdsh_tavern_story *story, const char *floor);
/* [{name, session, turn, committed, rolledBack, records, preserved[]}] in
 * creation order, rolled-back floors included. Owned. */
int cdsh_tavern_story_floors(cdsh_tavern_story *story, json_t **out, cdsh_error *err);

/* Undoes the named floors (any order given; undone newest-first). The whole
 * batch is validated before anything changes; a record whose object changed
 * since (a manual edit) is preserved, not overwritten. Afterwards each floor
 * is marked rolled back (its name free again). *preserved (may be NULL) gets
 * an owned array of "kind:key" strings that were kept. */
int cdsh_tavern_story_undo(cdsh_tavern_story *story, const char *const *floors, size_t n,
                           json_t **preserved, cdsh_error *err);

/* Undoes every live floor whose owner is session_id (or one of lineage's
 * sessions, each only through its throughTurn) with turn >= from_turn.
 * lineage: [{sessionId, throughTurn}] or NULL. */
int cdsh_tavern_story_undo_from(cdsh_tavern_story *story, const char *session_id,
                                const json_t *lineage, int64_t from_turn, cdsh_error *err);

/* ---- layer-internal -------------------------------------------------------- */

/* Another reference to an open handle (a turn's handle lent to a tool call
 * that may outlive the turn's end); each is released with
 * cdsh_tavern_story_free. Thread-safe. */
cdsh_tavern_story *cdsh__tavern_story_ref(cdsh_tavern_story *story);

/* Change listeners, process-wide (at most 4; registering one twice is a
 * no-op; CDSH_ETOOBIG beyond). Both run inside the writing transaction on
 * its connection and a negative return aborts it. changed: an object row
 * was written (canon NULL: deleted) by any path, undo included. undoing: an
 * undo batch is about to restore (kind, key); called for every record of
 * the batch before the first restore. memory.c keeps its search index with
 * them (cdsh_tavern_memory_attach), so story.c never calls memory.c. */
typedef struct cdsh__tavern_story_listener {
    int (*changed)(struct sqlite3 *db, const char *kind, const char *key, const char *canon,
                   cdsh_error *err);
    int (*undoing)(struct sqlite3 *db, const char *kind, const char *key, cdsh_error *err);
} cdsh__tavern_story_listener;
/* l must stay valid for the life of the process (a static). Thread-safe. */
int cdsh__tavern_story_listen(const cdsh__tavern_story_listener *l);

/* Rewrites meta after a branch copy (story id and owning session). */
int cdsh__tavern_story_rebind(cdsh_tavern_story *story, const char *story_id,
                              const char *session_id, cdsh_error *err);
/* Copies the story into a new database file at dest (must not exist) while
 * holding the story's write lock: a consistent snapshot. */
int cdsh__tavern_story_snapshot(cdsh_tavern_story *story, const char *dest, cdsh_error *err);
/* Raw connection for memory.c / worldstate.c queries (FTS); use only under
 * cdsh__tavern_story_lock. */
struct sqlite3 *cdsh__tavern_story_db(cdsh_tavern_story *story);
void cdsh__tavern_story_lock(cdsh_tavern_story *story);
/* Inside a transaction on db: unlogged object write (canon NULL deletes;
 * keeps memory_fts in step) and read (owned canonical text or NULL; *rc < 0
 * on error). */
int cdsh__tavern_story_raw_put(struct sqlite3 *db, const char *kind, const char *key,
                               const char *canon, cdsh_error *err);
char *cdsh__tavern_story_raw_load(struct sqlite3 *db, const char *kind, const char *key, int *rc,
                                  cdsh_error *err);
void cdsh__tavern_story_unlock(cdsh_tavern_story *story);

/* Test hook (fault injection). Process-global, atomic: the next operation
 * reaching the named point fails with CDSH_EIO "FAULT_INJECTED" once.
 * Points: "after-log" (record logged, body not yet changed), "after-body"
 * (before commit), "undo-step" (after a restored record, before its
 * commit), "publish-rename" (branch.c). NULL clears. */
void cdsh__tavern_fault_set(const char *point);
bool cdsh__tavern_fault_hit(const char *point);

#endif
