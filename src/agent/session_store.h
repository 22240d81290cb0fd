/* session_store.h — durable agent sessions in SQLite ($CDSH_HOME/sessions.db):
 * session records, an append-only per-session event log, replay of the log
 * into chat messages for the model client, crash repair, list/show/delete/
 * fork/rename (a fork also runs the participants that carry other layers'
 * state over). It does not run turns or tools — the agent loop does, and
 * records what happened here. Schema, event types and repair: docs/sessions.md.
 *
 * Thread-safety: a store owns one SQLite connection guarded by a mutex, so
 * every function may be called from several threads at once (calls are
 * serialised). Several processes may open the same file at once: WAL mode and
 * a busy timeout make them wait for each other instead of failing; every
 * write is one IMMEDIATE transaction, so seq numbers never collide.
 * Lock order: the store mutex, then SQLite's own locks; a lease (flock) is
 * never waited for while the mutex is held. A call may wait up to the busy
 * timeout for another process's write (not cancellable; writes are short). */
#ifndef CDSH_AGENT_SESSION_STORE_H
#define CDSH_AGENT_SESSION_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/model_client.h"
#include "base/cancel.h"
#include "base/err.h"
#include "base/home.h"

typedef struct cdsh_session_store cdsh_session_store;
typedef struct cdsh_session_lease cdsh_session_lease;

/* The schema version this build writes (PRAGMA user_version). Older files are
 * migrated on open; newer ones are refused (SCHEMA_TOO_NEW). */
#define CDSH_SESSION_SCHEMA_VERSION 2

/* Busy timeout for waiting on another process's write transaction. */
#define CDSH_SESSION_BUSY_TIMEOUT_MS 10000

/* Error codes (cdsh_error.code) used by this module:
 *   NO_SESSION      CDSH_ENOTFOUND  no session with that id
 *   BAD_SESSION_ID  CDSH_EINVAL     id is not "s-" + 1..64 of [A-Za-z0-9_-]
 *   BAD_EVENT       CDSH_EINVAL     unknown/malformed type or payload (message names the field)
 *   CORRUPT_EVENT   CDSH_EPROTO     a stored payload is not valid JSON (message names id and seq)
 *   SESSION_LIVE    CDSH_EBUSY      another holder has the session's lease (repair refused)
 *   SCHEMA_TOO_NEW  CDSH_EUNSUPPORTED  the file was written by a newer cdsh
 *   DB_ERROR        CDSH_EIO / CDSH_EBUSY (still locked after the busy timeout)
 *   NO_HOME         CDSH_ENOTFOUND  (from base/home) */

/* ---- open / close ------------------------------------------------------- */

/* Opens (creating if needed) the database at path, or at
 * <home>/sessions.db when path is NULL (creating the home, mode 0700).
 * Sets WAL, foreign keys and the busy timeout, and migrates the schema. */
int cdsh_session_store_open(const cdsh_home *home, const char *path, cdsh_session_store **out,
                            cdsh_error *err);

/* Closes the connection and frees the store. NULL-safe. Leases taken from it
 * must be released first. */
void cdsh_session_store_close(cdsh_session_store *s);

/* ---- sessions ------------------------------------------------------------
 * A session is returned as an owned JSON object:
 *   {"id","title","createdAt","updatedAt","provider","model","baseUrl",
 *    "agent","parentId","forkSeq","metadata","eventCount","lastSeq","lastTurn",
 *    "openTurn"}
 * Strings that were never set are null; forkSeq is null unless forked;
 * times are ISO-8601 UTC with milliseconds; openTurn is the number of a turn
 * with turn/start but no turn/end (a turn running now, or one a crash left
 * open), else null. */

typedef struct cdsh_session_spec {
    const char *title;      /* may be NULL: "" */
    const char *provider;   /* e.g. "deepseek"; NULL allowed */
    const char *model;      /* NULL allowed */
    const char *base_url;   /* NULL allowed */
    const char *agent;      /* agent preset name; NULL allowed */
    const json_t *metadata; /* object or NULL ({}); borrowed */
} cdsh_session_spec;

/* Creates a session with a fresh id "s-<random>" (owned in *id_out). */
int cdsh_session_store_create(cdsh_session_store *s, const cdsh_session_spec *spec, char **id_out,
                              cdsh_error *err);

/* The session as JSON (above), owned; NULL with NO_SESSION etc. */
json_t *cdsh_session_store_info_dup(cdsh_session_store *s, const char *id, cdsh_error *err);

/* Sessions newest first (by updatedAt, then id), skipping offset and
 * returning at most limit (1..1000). *total (may be NULL) gets the number of
 * sessions in the store. Owned array of session objects. */
json_t *cdsh_session_store_list(cdsh_session_store *s, int64_t offset, int64_t limit,
                                int64_t *total, cdsh_error *err);

/* Deletes the session and its events (cascade). Forks of it keep their
 * copied events; their parentId becomes null. NO_SESSION if missing. */
int cdsh_session_store_delete(cdsh_session_store *s, const char *id, cdsh_error *err);

/* Sets the title. */
int cdsh_session_store_rename(cdsh_session_store *s, const char *id, const char *title,
                              cdsh_error *err);

/* Copies the events with seq <= upto_seq (upto_seq <= 0: all of them, keeping
 * their seq numbers) into a new session with the same provider/model/agent,
 * parentId = id and forkSeq = the last copied seq. A fork point inside a
 * turn leaves that turn open in the copy; it is closed at once by the repair
 * rules (docs/sessions.md). title NULL: "<parent title> (fork)". upto_seq
 * beyond the last event is BAD_EVENT ("no event with seq N"). */
int cdsh_session_store_fork(cdsh_session_store *s, const char *id, int64_t upto_seq,
                            const char *title, char **new_id_out, cdsh_error *err);

/* ---- fork participants -----------------------------------------------------
 * State other layers keep about a session outside this store (a binding to
 * an external agent, say) is carried over to a fork by a participant: a
 * hook run after the events were copied. Plugins register their
 * participant through their context (cdsh_ctx_hook(ctx,
 * CDSH_SESSION_FORK_HOOKS, &hook)) and front ends fork through
 * cdsh_session_store_fork_with with the host's list of them
 * (cdsh_host_hooks_dup), so they need not know what the participants are. */

/* The hook kind (host/plugins.h) of cdsh_session_fork_hook registrations. */
#define CDSH_SESSION_FORK_HOOKS "session/fork"

/* What the front end running the fork already holds, offered to the
 * participants so that they use it instead of making their own (a live
 * service with its processes, say): `service` returns the front end's
 * service named `name` (the names plugins' headers define; borrowed for the
 * call) or NULL. A NULL env or lookup: the front end holds nothing. */
typedef struct cdsh_session_fork_env {
    void *(*service)(void *arg, const char *name);
    void *arg;
    const cdsh_home *home; /* the front end's home, where participants keep state (may be NULL) */
} cdsh_session_fork_env;

typedef struct cdsh_session_fork_info {
    cdsh_session_store *store;
    const char *parent_id, *child_id; /* borrowed */
    int64_t fork_seq;                 /* the last copied seq */
    bool whole;                       /* every event the parent had was copied */
    const cdsh_session_fork_env *env; /* borrowed; may be NULL */
} cdsh_session_fork_info;

/* info->env's home, or NULL (no env, or none given). */
const cdsh_home *cdsh_session_fork_home(const cdsh_session_fork_info *info);
/* info->env's service named `name`, or NULL (no env, no lookup, none). */
void *cdsh_session_fork_service(const cdsh_session_fork_info *info, const char *name);

/* Appends human-readable notes (strings) for the person to `notes`.
 * Returns 0, or a negative CDSH_E* with err filled when it could not carry
 * its state over (the fork is then undone). */
typedef int (*cdsh_session_fork_fn)(void *arg, const cdsh_session_fork_info *info, json_t *notes,
                                    cdsh_error *err);

typedef struct cdsh_session_fork_hook {
    const char *name; /* prefixed to its error messages */
    cdsh_session_fork_fn fn;
    void *arg;
} cdsh_session_fork_hook;

/* cdsh_session_store_fork, then every hook of `hooks` (NULL-terminated;
 * NULL: none) in order, with `env` (borrowed, may be NULL) in their info.
 * *notes (may be NULL) gets an owned array of their notes. A hook that
 * fails undoes the fork (the child is deleted) and its error is returned,
 * its message prefixed "<name>: ". */
int cdsh_session_store_fork_with(cdsh_session_store *s, const char *id, int64_t upto_seq,
                                 const char *title, const cdsh_session_fork_hook *const *hooks,
                                 const cdsh_session_fork_env *env, char **new_id_out,
                                 json_t **notes, cdsh_error *err);

/* ---- events --------------------------------------------------------------
 * Types and required payload fields (payloads are JSON objects; names are
 * camelCase as in DSH; extra fields are kept):
 *   user/message       text
 *   assistant/message  text, reasoning?(string|null), toolCalls?[{id,name,arguments}],
 *                      usage?{...}, finishReason?
 *   tool/call          callId, name, arguments(string) — logged when the tool
 *                      body is about to run (the "started" marker for repair)
 *   tool/result        callId, isError(bool), content[ContentBlock], error?{name?,code?,message?}
 *   command/run        commandId, name, args?, source?
 *   command/done       commandId, kind("success"|"error"), text?, sourceEventSeq?
 *   notice             level("info"|"warning"|"error"), text, code?
 *   turn/start         (nothing required) — turn must be >= 1
 *   turn/end           reason: done|cancelled|step-limit|token-limit|error|interrupted
 *   session/opening    text — the session's opening assistant message (a
 *                      character's greeting), logged outside turns; replay
 *                      puts the last one logged before the first message
 *                      first, as an assistant message
 * Other types of the form "<word>/<word>" (lowercase, digits, '-') are stored
 * without checks and ignored by replay, so later layers can add their own. */

/* Appends one event in its own transaction; it is durable when this returns
 * (WAL, synchronous=FULL). turn/step >= 0 (0 = outside a turn). The payload
 * is borrowed, must be lossless JSON, and is stored compact. *seq_out (may be
 * NULL) gets the new seq (1, 2, ... per session). Updates updatedAt.
 * Turn rules (BAD_EVENT otherwise; what repair and replay rely on): turn/start
 * numbers turns 1, 2, ... and needs no turn open; assistant/message, tool/call,
 * tool/result and turn/end must name the open turn; assistant/message and
 * turn/end need a tool/result for every call logged so far in the turn, and
 * the ids in one toolCalls list must differ. Other types may be logged anytime. */
int cdsh_session_store_append(cdsh_session_store *s, const char *id, const char *type, int64_t turn,
                              int64_t step, const json_t *payload, int64_t *seq_out,
                              cdsh_error *err);

/* Appends a model reply as assistant/message (text, reasoning, toolCalls,
 * usage, finishReason). Bytes that are not UTF-8 become U+FFFD rather than
 * failing the append; a call without an id fails with BAD_EVENT. */
int cdsh_session_store_append_reply(cdsh_session_store *s, const char *id, int64_t turn,
                                    int64_t step, const cdsh_model_reply *reply, int64_t *seq_out,
                                    cdsh_error *err);

/* Events with seq > after_seq, in order, at most limit (1..10000). Owned
 * array of {"seq","turn","step","type","createdAt","payload"}. A stored
 * payload that is not valid JSON does not fail the read: its event has
 * "payload": null, "payloadError": "<parser message>" and "payloadRaw": the
 * stored text, so nothing is hidden. *has_more (may be NULL) says whether
 * later events exist. */
json_t *cdsh_session_store_events(cdsh_session_store *s, const char *id, int64_t after_seq,
                                  int64_t limit, bool *has_more, cdsh_error *err);

/* ---- replay --------------------------------------------------------------
 * Rebuilds the conversation as the `messages` array cdsh_model_client_complete
 * takes (without a system prompt, which is not stored): user messages
 * {role:"user",content}, assistant messages {role:"assistant",content,
 * reasoning_content?,tool_calls?:[{id,type:"function",function:{name,arguments}}]}
 * and each call's result {role:"tool",tool_call_id,content} directly after
 * its assistant message, in call order, whatever order they were logged in.
 * A user message logged while calls were still unanswered follows their
 * results. Result content is the text of its text blocks joined by "\n"
 * (other blocks as "[<type>]"). Reasoning is kept: the client's reasoning policy decides.
 * The last session/opening logged before the first user or assistant message
 * opens the array as {role:"assistant",content}; later ones are ignored.
 * Other event types do not produce messages; results whose call is unknown are
 * skipped. A corrupt payload fails with CORRUPT_EVENT. Owned array. */
json_t *cdsh_session_store_messages(cdsh_session_store *s, const char *id, cdsh_error *err);

/* ---- repair and leases ---------------------------------------------------
 * The process running turns on a session holds its lease (an exclusive
 * flock on <db dir>/sessions.locks/<id>.lock), so other processes and
 * threads know the open turn is live and must not be repaired. The lock
 * vanishes with its process, so a crash frees it. */

/* Takes the lease, waiting up to timeout_ms (0: try once) and observing
 * cancel (may be NULL). CDSH_ETIMEDOUT ("LOCK_TIMEOUT") if someone else holds
 * it; CDSH_ECANCELED if cancel fired. */
int cdsh_session_store_lease(cdsh_session_store *s, const char *id, int64_t timeout_ms,
                             cdsh_cancel *cancel, cdsh_session_lease **out, cdsh_error *err);

/* Releases the lease. NULL-safe. */
void cdsh_session_lease_release(cdsh_session_lease *lease);

/* Closes a turn that a crash left open, as DSH's session repair does: every
 * call of that turn without a tool/result gets a synthetic error result —
 * TOOL_OUTCOME_UNKNOWN if its tool/call (started) event was logged,
 * TOOL_NOT_STARTED if only the assistant message asked for it — then a
 * notice SESSION_REPAIRED, then turn/end {reason:"interrupted"}. Synthetic
 * events carry "synthetic": true. Idempotent: a balanced log gets nothing.
 * Refuses with SESSION_LIVE (CDSH_EBUSY) while anyone holds the lease; the
 * caller may pass its own lease as `held` to repair while holding it. The
 * check and the appends are one transaction. *appended (may be NULL) gets
 * the number of events added.
 * keep-public: fuzz/fuzz_session_repair.c drives it; _repair_report wraps it. */
int cdsh_session_store_repair(cdsh_session_store *s, const char *id, const cdsh_session_lease *held,
                              int *appended, cdsh_error *err);

/* What an agent loop or front end needs to resume a session. */
typedef struct cdsh_session_loaded {
    json_t *session;  /* as cdsh_session_store_info_dup, after repair */
    json_t *messages; /* as cdsh_session_store_messages */
    int repaired;     /* events the repair appended (0 if none or skipped) */
    bool live;        /* the lease was held elsewhere, so no repair ran */
} cdsh_session_loaded;

/* Repairs (unless the session is live elsewhere; `held` as for repair) and
 * replays. On failure *out is zeroed. */
int cdsh_session_store_load(cdsh_session_store *s, const char *id, const cdsh_session_lease *held,
                            cdsh_session_loaded *out, cdsh_error *err);

/* Frees the contents and zeroes. NULL-safe. */
void cdsh_session_loaded_deinit(cdsh_session_loaded *l);

/* True if id has the shape of a session id ("s-" + 1..64 of [A-Za-z0-9_-]). */
bool cdsh_session_id_valid(const char *id);

#endif
