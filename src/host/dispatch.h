/* dispatch.h — running tool calls through the pipeline of host-contracts.md
 * §7: argument snapshot and validation → pre-execute hooks → approval →
 * guards → around-dispatch wrappers (built-in timeout policy innermost) →
 * body → output validation and render → post-execute hooks → finalize
 * content → frozen result → "tools/result". Also nested dispatch from a body,
 * the exec context bodies see, and the agent loop's batch scheduler.
 * The registry itself (layers, resolver, hooks) is tools.h.
 *
 * Cancellation: every call takes the caller's token (may be NULL = never
 * cancelled). A token fired before the body starts gives
 * ABORTED_BEFORE_DISPATCH `tool call aborted before dispatch`; fired while
 * the body runs (and the body still succeeded) gives ABORTED `tool call
 * aborted`. Nested calls share their caller's token.
 *
 * Timeouts: a tool with timeout_ms > 0 runs its body on a worker thread with
 * its own token, which follows the caller's token and also fires with reason
 * "timeout" at the deadline. The call then yields TOOL_TIMEOUT `tool call
 * timed out after <ms>ms`. The caller waits for the body at most the grace
 * period (cdsh_tools_set_timeout_grace); a body still running after that is
 * detached: its late value is dropped, and it keeps references to its exec
 * (args, ids, token), its tool's ud (free_ud waits for it) and the registry
 * core, so everything it can reach through exec stays valid (exec->parent
 * included: an exec holds a reference on its parent). It must not touch
 * memory its caller owned by other means. Nested calls it starts after the
 * deadline see the fired token and get ABORTED_BEFORE_DISPATCH.
 *
 * Thread-safety: all functions are thread-safe; any number of calls may run
 * concurrently. No registry lock is held while user code runs. */
#ifndef CDSH_HOST_DISPATCH_H
#define CDSH_HOST_DISPATCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/cancel.h"
#include "host/scope.h"
#include "host/toolresult.h"
#include "host/tools.h"

/* The frozen identity of one call, as bodies, hooks, guards, wrappers and
 * approval services see it. Read-only; valid for the duration of the callback
 * it is passed to (a body's exec also for the whole body, detached or not).
 * Reference-counted internally; never free it. */
struct cdsh_tool_exec {
    const char *call_id;          /* as given, or derived for nested calls */
    const char *root_call_id;     /* top-level call's id (defaults to call_id) */
    const char *name;             /* tool name as requested */
    cdsh_scope *agent;            /* view / routing scope; NULL = global view */
    const cdsh_tool_exec *parent; /* the calling exec for nested calls, else NULL */
    unsigned depth;               /* 0 for top-level calls */
    cdsh_cancel *cancel;          /* the token to observe; NULL when the caller gave
                                     none (every cdsh_cancel_* call accepts NULL) */
    const json_t *args;           /* validated, lossless snapshot; never mutate. NULL
                                     only where finalize_content sees a call whose
                                     arguments could not be snapshotted, or one
                                     refused by the nesting limit */
    cdsh_tools *tools;            /* the registry running the call */
    struct cdsh__exec_priv *priv; /* pipeline state: deferred contexts, flags */
};

/* A top-level call, e.g. one tool call from the model. */
typedef struct cdsh_dispatch_input {
    const char *call_id;      /* required, non-empty */
    const char *root_call_id; /* NULL = call_id */
    const char *name;         /* required */
    const json_t *args;       /* borrowed; NULL = {}; must be a JSON object */
    cdsh_scope *agent;        /* NULL = global view; no approval routing */
    cdsh_cancel *cancel;      /* caller's token; NULL = never cancelled */
} cdsh_dispatch_input;

/* Runs one call through the whole pipeline and returns the frozen result
 * (owned reference; free with cdsh_toolresult_free). Every failure the model
 * could trigger is a result, never NULL; NULL only on ENOMEM or NULL/invalid
 * input (no call_id or name). The same result object is passed to
 * "tools/result" listeners before this returns.
 * Failures and their info.code (§8):
 *   UNKNOWN_TOOL  `unknown tool "x"` (not visible to input->agent)
 *   INVALID_ARGS  `invalid arguments: <v1>; <v2>` (root path "arguments");
 *                 also non-object or non-lossless arguments. Checked first
 *                 (stage 1): such a call skips every hook and goes straight
 *                 to finalize and "tools/result".
 *   TOOL_DEPTH_EXCEEDED (nested calls only; also final)
 *   INVALID_TOOL_OUTPUT `tool "x" returned invalid output: <violations>`,
 *                 `tool "x" output.render failed: <why>`
 *   ABORTED / ABORTED_BEFORE_DISPATCH / TOOL_TIMEOUT — see above
 *   denials (pre-execute, approval, guard) and post-execute blocks carry no
 *   info; content is `Error: <reason>` with the reason verbatim. */
cdsh_toolresult *cdsh_dispatch_execute(cdsh_tools *tools, const cdsh_dispatch_input *input);

/* Nested call from inside a body (or a wrapper): runs the full pipeline with
 * agent = exec->agent, parent = exec, root_call_id = exec->root_call_id,
 * cancel = exec->cancel. call_id NULL derives "<exec->call_id>:<n>" with n
 * counting this exec's nested calls from 1. Depth limit: see
 * cdsh_tools_set_max_depth. Returns a frozen result as above. */
cdsh_toolresult *cdsh_dispatch_nested(const cdsh_tool_exec *exec, const char *call_id,
                                      const char *name, const json_t *args);

/* Describes a body failure (call from a body, then return the result):
 * name/code become result.error.info when both are non-NULL (HarnessError
 * style). Returns CDSH_EPERM so a body can `return cdsh_dispatch_fail(...)`. */
int cdsh_dispatch_fail(const cdsh_tool_exec *exec, const char *name, const char *code,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Ferries a user-message context to the agent loop: it is appended to the
 * result's additionalContexts (before contexts a wrapper added, in call
 * order). CDSH_EINVAL for NULL or text that is not valid UTF-8, CDSH_ENOMEM
 * on allocation failure. They are kept on failures too (a timed-out call
 * carries what its body deferred before the deadline); what a detached body
 * defers after its caller moved on is lost. Thread-safe. */
int cdsh_dispatch_defer_context(const cdsh_tool_exec *exec, const char *user_message);

/* Marks a successful result as concluding the agent's turn.
 * keep-public: for tool handlers that end the turn (docs/host-tools.md); tests drive it. */
void cdsh_dispatch_conclude_turn(const cdsh_tool_exec *exec);

/* For around-dispatch wrappers: runs the rest of the dispatch (inner
 * wrappers, timeout policy, body, validation, render). cancel NULL keeps the
 * current token; another token is fused with the caller's (the body sees a
 * token that fires when either does). Returns an owned reference; never NULL
 * except on ENOMEM. Call it at most once per wrapper invocation; a second
 * call returns an error result without running the body again. */
cdsh_toolresult *cdsh_dispatch_next_run(cdsh_dispatch_next *next, cdsh_cancel *cancel);

/* ---- scheduling for the agent loop ----------------------------------------- */

/* Runs `n` calls from one model turn. Consecutive calls that are parallel
 * (cdsh_tools_is_parallel for their agent) run together on up to
 * max_parallel threads (0 = 10); every other call is a barrier that runs
 * alone after everything before it has finished. results[i] receives the
 * result of inputs[i] (model order). Returns 0, or CDSH_ENOMEM /
 * CDSH_EINVAL (then results[] holds NULL where nothing ran). Calls that are
 * not concurrency-safe never overlap within one batch; an agent loop runs a
 * session's batches one at a time, which serialises them per session. */
int cdsh_dispatch_batch(cdsh_tools *tools, const cdsh_dispatch_input *inputs, size_t n,
                        size_t max_parallel, cdsh_toolresult **results);

#endif
