/* state.h — the ACP plugin's files under <home>/multi-acp/ (every function
 * takes the home, normally the host's: cdsh_host_home):
 * engines.json (user layer {version:1, engines:[...]}, whole-row override of
 * builtins), runtime.json (probed capabilities and health, written by cdsh
 * only) and sessions.json ({version:1, sessions:{<cdshSessionId>:{engineId,
 * acpSessionId, cwd, createdAt, lastUsedAt, firstMessageAt, lockedEngineId,
 * forkedFrom?}}}).
 * Every change is read-modify-write under <file>.lock with an atomic write;
 * a corrupt file is reported (CDSH_EPROTO, code "STATE_CORRUPT", naming the
 * file) and never overwritten. Thread- and process-safe. */
#ifndef CDSH_PLUGINS_ACP_STATE_H
#define CDSH_PLUGINS_ACP_STATE_H

#include <jansson.h>
#include <stdbool.h>

#include "base/err.h"
#include "base/home.h"

/* Owned path of <home>/multi-acp, created 0700 if missing. */
int cdsh_acp_state_dir_dup(const cdsh_home *home, char **out, cdsh_error *err);

/* Effective engines: builtins, then engines.json rows (whole-row override
 * by id), each with capabilities/health from runtime.json; sorted by
 * sortOrder then id. A corrupt engines.json, a row that fails validation or
 * a row that sets a read-only field becomes a diagnostic
 * {level:"error", source, message} and is ignored. Both outputs owned;
 * diagnostics may be NULL.
 * keep-public: test_state reads the user rows with it. */
int cdsh_acp_state_engines_load(const cdsh_home *home, json_t **engines, json_t **diagnostics,
                                cdsh_error *err);

/* As cdsh_acp_state_engines_load, each row with "resolved": {found:true,
 * path, via} or {found:false, error} (PATH resolution of its command) —
 * the listing `cdsh acp engines` and the web picker show. Env values are
 * "[REDACTED]" and secret-bearing args masked (cdsh_acp_engine_public_dup). */
int cdsh_acp_state_engines_listing(const cdsh_home *home, json_t **engines, json_t **diagnostics,
                                   cdsh_error *err);

/* The effective row of one engine (owned). CDSH_ENOTFOUND, code
 * "UNKNOWN_ENGINE". */
int cdsh_acp_state_engine_find(const cdsh_home *home, const char *id, json_t **row,
                               cdsh_error *err);

/* Saves a full user row (validated as a user row: capabilities/health are
 * refused) into engines.json, replacing the row with the same id.
 * keep-public: test_state writes rows with it. */
int cdsh_acp_state_engine_save(const cdsh_home *home, const json_t *row, cdsh_error *err);

/* Patches the effective row of id (engine.h patch semantics) and saves the
 * merged full row. *merged (may be NULL) receives it, owned.
 * keep-public: test_state patches rows with it. */
int cdsh_acp_state_engine_update(const cdsh_home *home, const char *id, const json_t *patch,
                                 json_t **merged, cdsh_error *err);

/* Records probed capabilities (may be NULL: unchanged) and health (may be
 * NULL) for an engine in runtime.json. */
int cdsh_acp_state_runtime_record(const cdsh_home *home, const char *id, const json_t *capabilities,
                                  const json_t *health, cdsh_error *err);

/* Records that an initialize of the engine's resolved executable succeeded
 * (its warm marker in runtime.json, cdsh_acp_engine_warm_marker_dup): the
 * next start is not a first start (coldProbe "first-start"). */
int cdsh_acp_state_runtime_warm(const cdsh_home *home, const char *id, const char *resolved,
                                cdsh_error *err);

/* The entry of a cdsh session (owned copy). CDSH_ENOTFOUND, code
 * "UNBOUND_SESSION". An entry whose engineId differs from the engine it was
 * locked to at its first message is refused: CDSH_EPERM, code
 * "ENGINE_LOCKED" (the invariant is checked on read as well as on write). */
int cdsh_acp_state_session_get(const cdsh_home *home, const char *cdsh_session_id, json_t **entry,
                               cdsh_error *err);

/* Binds a cdsh session to an engine (creating the entry with cwd) or
 * rebinds it. Rebinding to another engine after the first message fails
 * with CDSH_EPERM, code "ENGINE_LOCKED"; rebinding before it drops the old
 * acpSessionId. Same engine: only cwd is updated when given. */
int cdsh_acp_state_session_bind(const cdsh_home *home, const char *cdsh_session_id,
                                const char *engine_id, const char *cwd, cdsh_error *err);

/* Records the ACP session id (NULL clears it) and refreshes lastUsedAt. */
int cdsh_acp_state_session_set_acp(const cdsh_home *home, const char *cdsh_session_id,
                                   const char *acp_session_id, cdsh_error *err);

/* Marks the first message (sets firstMessageAt and lockedEngineId once) and
 * refreshes lastUsedAt. *locked_now (may be NULL) says whether this call
 * set the lock. */
int cdsh_acp_state_session_mark_message(const cdsh_home *home, const char *cdsh_session_id,
                                        bool *locked_now, cdsh_error *err);

/* Undoes the lock of a first message that failed (the engine did not take
 * the session on): clears firstMessageAt and lockedEngineId. */
int cdsh_acp_state_session_unlock(const cdsh_home *home, const char *cdsh_session_id,
                                  cdsh_error *err);

/* Binds child_id (a fork of parent_id) like its parent: same engineId and
 * cwd, acpSessionId = acp_session_id (NULL: none yet, a fresh ACP session
 * on the first prompt), firstMessageAt / lockedEngineId copied (locked
 * exactly when the parent is), forkedFrom = parent_id; the parent's entry
 * is not touched. Errors: UNBOUND_SESSION (parent), SESSION_BOUND
 * (CDSH_EEXIST: the child already has an entry), ENGINE_LOCKED. */
int cdsh_acp_state_session_fork(const cdsh_home *home, const char *parent_id, const char *child_id,
                                const char *acp_session_id, cdsh_error *err);

/* Removes an entry (unbinding is allowed at any time). CDSH_ENOTFOUND if absent. */
int cdsh_acp_state_session_remove(const cdsh_home *home, const char *cdsh_session_id,
                                  cdsh_error *err);

/* Owned copy of the whole sessions map (validated). */
int cdsh_acp_state_sessions_dup(const cdsh_home *home, json_t **sessions, cdsh_error *err);

#endif
