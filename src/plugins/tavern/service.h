/* service.h — the tavern plugin's business logic behind its tools, RPC
 * channel and agent preset: open turns (one floor per turn), the seven model
 * tools, the RPC methods the role-play UI calls, branch operations on host
 * sessions, idle maintenance and the turn context. Tools and methods are
 * the rows of one operations table (methods.c) the host builds them from; prompt assembly (macros, world info, regex,
 * templates) is the prompt engine's and only consumes what this returns.
 *
 * Thread-safety: every function is thread-safe. The service mutex guards
 * the open-turn table, the trigger log and the settings cache; it is never
 * held while a story, binding or session-store call runs. Several
 * processes may share one home (SQLite locks in story.h / binding.h). */
#ifndef CDSH_TAVERN_SERVICE_H
#define CDSH_TAVERN_SERVICE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/session_store.h"
#include "base/err.h"
#include "host/ops.h"
#include "host/scope.h"
#include "plugins/tavern/memory.h"
#include "plugins/tavern/store.h"

typedef struct cdsh_tavern_service cdsh_tavern_service;

/* Opens the service on the asset store at root (NULL: <home>/tavern).
 * sessions (borrowed, may be NULL) is the host session store used for
 * branches; without it branch methods fail with sessions-unavailable. */
int cdsh_tavern_service_new(const cdsh_home *home, const char *root, cdsh_session_store *sessions,
                            cdsh_tavern_service **out, cdsh_error *err);
void cdsh_tavern_service_free(cdsh_tavern_service *svc);
cdsh_tavern_store *cdsh_tavern_service_store_get(cdsh_tavern_service *svc);

/* ---- turns ------------------------------------------------------------------
 * The agent preset calls turn_begin at the host's turn/start and turn_end at
 * turn/end. turn_begin opens floor <session>#t<turn> in the bound story and
 * records scope → {session, turn, card, story} so the tools (which only see
 * their exec's scope) find the floor. turn_end commits the floor opened by
 * turn_begin (even if the binding changed since). An unbound session opens
 * no floor (returns 0). */
int cdsh_tavern_service_turn_begin(cdsh_tavern_service *svc, const cdsh_scope *scope,
                                   const char *session_id, int64_t turn, cdsh_error *err);
int cdsh_tavern_service_turn_end(cdsh_tavern_service *svc, const char *session_id, int64_t turn,
                                 cdsh_error *err);

/* ---- tools and RPC methods ---------------------------------------------------
 * Both are rows of one operations table (host/ops.h; the rows are methods.c):
 * tools "tavern_<name>", RPC endpoints "<name>" on /tavern. */

/* The checked table (borrowed, lives as long as the service): its names
 * (cdsh_ops_names), its rows as data (cdsh_ops_describe), its registration. */
cdsh_ops *cdsh_tavern_service_ops(cdsh_tavern_service *svc);

/* Runs tool `name` ("tavern_memory_search", ...) for the agent `scope` with
 * validated args. Expected failures are results {ok:false, code, message}
 * (floor-not-open, floor-stale, binding-changed, not-found, invalid-args,
 * similar-found is a status...). *notice (may be NULL; owned) receives the
 * same-turn write notice after a successful write. Returns < 0 only for
 * internal errors (NOT_FOUND for a name that is no tool). */
int cdsh_tavern_service_tool(cdsh_tavern_service *svc, const cdsh_scope *scope, const char *name,
                             const json_t *args, json_t **value, char **notice, cdsh_error *err);

/* Readable-path whitelist (liketavern §9 resolveReadableAssetPath): the
 * normalised path (owned) or NULL with code path-not-readable. */
char *cdsh_tavern_readable_path_dup(const char *path, cdsh_error *err);

/* Runs one RPC method in-process (CLI, tests): 0 with *value (owned,
 * checked against the row's result shape) or < 0 with err->code a
 * kebab-case result code (bad-request, not-found, revision-conflict,
 * unknown-method, ...). */
int cdsh_tavern_service_call(cdsh_tavern_service *svc, const char *method, const json_t *payload,
                             json_t **value, cdsh_error *err);

/* ---- agent preset ------------------------------------------------------------ */

/* The turn context this plugin contributes for session (runtime context
 * tavern:turn): retrieved memories (query = scan_text, budget from
 * settings), the world-state block and the journal. Owned text, "" when
 * unbound. */
int cdsh_tavern_service_turn_context(cdsh_tavern_service *svc, const char *session_id,
                                     const char *scan_text, char **text, cdsh_error *err);
/* Sampling from the bound preset: {temperature, maxTokens, stop[],
 * reasoningEffort?} for the model; {topP, presencePenalty,
 * frequencyPenalty} under "recorded". Owned. */
int cdsh_tavern_service_sampling(cdsh_tavern_service *svc, const char *session_id, json_t **out,
                                 cdsh_error *err);

/* Idle maintenance: if compression is due, asks `summarize` (the caller's
 * model call through the session's route; it fills finish reason and text)
 * and commits the summary only from a normal stop. At most one attempt per
 * closed turn. *did (may be NULL) says whether a summary was written. */
typedef int (*cdsh_tavern_summarize_fn)(void *ud, const char *prompt, char **finish_reason,
                                        char **text, cdsh_error *err);

/* A one-shot helper model call outside any role-play turn: messages
 * (borrowed chat array) in, finish reason and text (owned) out. */
typedef int (*cdsh_tavern_helper_fn)(void *ud, const json_t *messages, char **finish_reason,
                                     char **text, cdsh_error *err);
/* Installs the helper used by the impersonate method (fn NULL removes it).
 * ud is borrowed and must outlive the service or the next call. */
void cdsh_tavern_service_set_helper(cdsh_tavern_service *svc, cdsh_tavern_helper_fn fn, void *ud);
int cdsh_tavern_service_idle(cdsh_tavern_service *svc, const char *session_id,
                             cdsh_tavern_summarize_fn summarize, void *ud, bool *did,
                             cdsh_error *err);

#endif
