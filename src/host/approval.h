/* approval.h — the person-facing approval broker: one place where a
 * request for a person's decision waits (a kernel tool whose pre-execute
 * hook said ASK, or an ACP agent's session/request_permission) and where a
 * front end's channel (terminal prompt, web dialog) shows it and answers.
 * It does not decide anything itself and it never invents option wording:
 * the asker passes the options to offer, the person picks one of them.
 *
 * A request is a JSON object {id, sessionId, source:"tool"|"acp", title,
 * description?, toolName?, options:[{optionId, name, kind}], createdAt}.
 * It ends exactly once: an option selected, "cancelled" (the person, the
 * asker's token, the session's turn, the broker shutting down), "timeout",
 * or "unavailable" (no channel, or the channel refused it) — every ending
 * but a selection fails closed.
 *
 * Thread-safety: every function is thread-safe. The broker mutex is never
 * held while a channel callback runs, so callbacks may call back in (a
 * channel may even answer from inside present()). */
#ifndef CDSH_HOST_APPROVAL_H
#define CDSH_HOST_APPROVAL_H

#include <jansson.h>
#include <stdint.h>

#include "base/cancel.h"
#include "base/err.h"
#include "host/disposer.h"
#include "host/tools.h"

typedef struct cdsh_approvals cdsh_approvals;

/* Default wait for an answer before the request fails closed. */
#define CDSH_APPROVAL_DEFAULT_TIMEOUT_MS (10 * 60 * 1000)

/* The option ids offered for a kernel tool's ASK (labels "Allow once" and
 * "Reject"; front ends may translate these two, never an agent's). */
#define CDSH_APPROVAL_TOOL_ALLOW "allow_once"
#define CDSH_APPROVAL_TOOL_REJECT "reject_once"

/* How a front end shows requests. present() gets the request (borrowed)
 * and must not block for long: the answer comes later through
 * cdsh_approvals_answer (possibly from inside present). It returns 0 when
 * the request is shown, negative when nobody can answer it now (the request
 * ends "unavailable"). resolved() (may be NULL) gets {id, sessionId,
 * outcome:"selected"|"cancelled"|"timeout"|"unavailable", optionId?} once
 * the request ended, so a dialog can close. */
typedef struct cdsh_approval_channel {
    int (*present)(void *ud, const json_t *request);
    void (*resolved)(void *ud, const json_t *resolution);
    void *ud;
} cdsh_approval_channel;

/* timeout_ms <= 0: CDSH_APPROVAL_DEFAULT_TIMEOUT_MS. NULL on ENOMEM. */
cdsh_approvals *cdsh_approvals_new(int64_t timeout_ms);

/* Ends every pending request ("cancelled") and frees. No ask may still be
 * running and the tool bridge must be disposed first. NULL-safe. */
void cdsh_approvals_free(cdsh_approvals *ap);

/* Installs (channel non-NULL, copied) or removes (NULL) the front end's
 * channel. Removing it ends every pending request "cancelled" and waits
 * until no callback of the old channel runs any more. */
void cdsh_approvals_set_channel(cdsh_approvals *ap, const cdsh_approval_channel *channel);

/* Asks the person and waits for the answer, the timeout, or `cancel`
 * (may be NULL). options is borrowed: an array of {optionId, name, kind?}
 * shown verbatim. Returns the chosen optionId (owned) or NULL when the
 * request did not end in a selection; *outcome (may be NULL) gets the
 * ending ("selected", "cancelled", "timeout", "unavailable"; static). */
char *cdsh_approvals_ask(cdsh_approvals *ap, const char *session_id, const char *source,
                         const char *title, const char *description, const char *tool_name,
                         const json_t *options, cdsh_cancel *cancel, const char **outcome);

/* Answers a pending request: option_id one of its options, or NULL for
 * "cancelled". Errors: CDSH_ENOTFOUND "NO_APPROVAL" (unknown or already
 * ended), CDSH_EINVAL "BAD_OPTION" (not one of the request's options). A
 * non-NULL session_id must match the request's (else NO_APPROVAL). */
int cdsh_approvals_answer(cdsh_approvals *ap, const char *id, const char *session_id,
                          const char *option_id, cdsh_error *err);

/* Ends the pending requests of one session "cancelled" (its turn was
 * cancelled). Returns how many. */
int cdsh_approvals_cancel_session(cdsh_approvals *ap, const char *session_id);

/* Ends every pending request "cancelled" and makes later asks end
 * "cancelled" at once (the front end is stopping). */
void cdsh_approvals_close(cdsh_approvals *ap);

/* Owned array of the pending requests of a session (NULL: all of them). */
json_t *cdsh_approvals_pending_dup(cdsh_approvals *ap, const char *session_id);

/* Installs the broker as the registry's approval service, so a tool's ASK
 * becomes a request with the options allow once / reject, title = the
 * tool name, description = the ask reason and the call's arguments.
 * The session id is the id of the nearest scope of the call's agent chain
 * named like a session ("s-..."; agent.c names session scopes so), else the
 * innermost scope's id. *out undoes it; run it before freeing the broker. */
int cdsh_approvals_install(cdsh_approvals *ap, cdsh_tools *tools, cdsh_disposer_t *out,
                           cdsh_error *err);

/* The broker that cdsh_approvals_install installed on `tools` (the front
 * end's, which shows requests to the person), or NULL when none is. For
 * plugins that ask the person outside a tool call (an ACP agent's
 * permission request): the front end installs its broker before it runs
 * turns and removes it after they ended, so the pointer is valid for a
 * request made during a turn. */
cdsh_approvals *cdsh_approvals_installed(cdsh_tools *tools);

/* Maps a tool request's answer to the registry's outcome: NULL with
 * `outcome` "unavailable" → UNAVAILABLE, other NULLs → CANCELLED,
 * CDSH_APPROVAL_TOOL_ALLOW → ALLOWED_ONCE, anything else → REJECTED.
 * keep-public: the mapping is pinned by tests/host/test_approval.c. */
cdsh_approval_outcome cdsh_approvals_tool_outcome(const char *option_id, const char *outcome);

/* The option of params.options (an approval request, or an ACP
 * request_permission's params: [{optionId, name, kind}]) that carries out an
 * outcome: ALLOWED_ONCE → kind allow_once, else allow_always, else a kind
 * starting "allow"; REJECTED / UNAVAILABLE → reject_once, reject_always,
 * "reject*"; CANCELLED or no match → NULL. Owned optionId. */
char *cdsh_approvals_option_for_dup(const json_t *params, cdsh_approval_outcome outcome);

#endif
