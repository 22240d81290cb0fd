/* tools.h — the tool registry (host-contracts.md §1-§5, §10): tool
 * definitions, the global and scoped registration layers, the single
 * visibility resolver behind listing, lookup and dispatch, restrict(),
 * guards, the pre-execute / around-dispatch / post-execute hooks and the
 * optional approval service. Running a call is dispatch.h's job.
 *
 * Scopes: NULL is the global layer/view; a cdsh_scope is an agent layer whose
 * parent chain (preset → agent) is inherited. Layers are keyed by scope
 * identity (the pointer), so one agent must use one cdsh_scope object.
 *
 * Thread-safety: every function is thread-safe. The registry is guarded by a
 * read-write lock; no lock is held while a tool body, render function, hook,
 * guard, approval callback or event listener runs, so all of those may call
 * back into the registry. Every registration returns an exact disposer;
 * disposing is thread-safe and may race with calls in flight: a call that
 * already resolved a tool or snapshotted the hooks finishes with them, and a
 * registration's `free_ud` runs only when nothing uses it any more (on
 * whichever thread drops the last use: the disposer's, a caller's, or a
 * detached body's). */
#ifndef CDSH_HOST_TOOLS_H
#define CDSH_HOST_TOOLS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cancel.h"
#include "base/err.h"
#include "host/disposer.h"
#include "host/events.h"
#include "host/scope.h"
#include "host/toolresult.h"

typedef struct cdsh_tools cdsh_tools;         /* the registry */
typedef struct cdsh_tool_exec cdsh_tool_exec; /* one call's frozen identity; see dispatch.h */

/* ---- tool definition ------------------------------------------------------ */

/* The body. Runs the tool for exec->args (already snapshotted and validated
 * against `parameters`). On success returns 0 and stores an owned JSON value
 * in *value (the registry takes it: do not keep or mutate it; NULL means JSON
 * null). On failure calls cdsh_dispatch_fail() (dispatch.h) to describe the
 * error and returns its negative result; a negative return without a
 * description yields "tool failed: <cdsh_strerror(rc)>".
 * A body must observe exec->cancel (poll cdsh_cancel_is_fired, or pass it to
 * every blocking wait) and return promptly once it fires. */
typedef int (*cdsh_tool_body_fn)(void *ud, const cdsh_tool_exec *exec, json_t **value);

/* Pure render: canonical value → owned content array. Return NULL (and fill
 * err) on failure, which the pipeline reports as INVALID_TOOL_OUTPUT. */
typedef json_t *(*cdsh_tool_render_fn)(void *ud, const json_t *args, const json_t *value,
                                       cdsh_error *err);

/* Pure presentation metadata for top-level calls (owned JSON or NULL). */
typedef json_t *(*cdsh_tool_meta_fn)(void *ud, const json_t *args, const json_t *value);

/* Concurrency safety for the given (unvalidated) args. Only `true` makes the
 * call parallel; the scheduler calls it with args that passed validation. */
typedef bool (*cdsh_tool_safe_fn)(void *ud, const json_t *args);

/* Final say over content: return an owned replacement content array, or NULL
 * to keep res->content. Runs for every final outcome of the tool, failures
 * included; must not fail. */
typedef json_t *(*cdsh_tool_finalize_fn)(void *ud, const cdsh_tool_exec *exec,
                                         const cdsh_toolresult *res);

/* Pure UI render intents (host-contracts.md §1, DSH's presentCall /
 * presentResult): an owned JSON object {card, ...} for the page's tool card,
 * or NULL for the generic card. Cards and their fields (tools_present.c):
 *   generic  {title?, text?, view?: "xiangqi-board", fen?}
 *   terminal {command?, output, exitCode?}
 *   diff     {path, oldText?, newText}
 *   search   {query?, results: [{title, snippet?, ref?}]}
 *   read     {path, text?}
 *   web      {url, title?}
 * They run with args that passed validation (invalid args: generic card,
 * the functions are not called) and must not fail loudly: anything they
 * return that is not such an object becomes the generic card. */
typedef json_t *(*cdsh_tool_present_call_fn)(void *ud, const json_t *args);
/* result: the tool result JSON (cdsh_toolresult_to_json: isError, value?,
 * content, error?). */
typedef json_t *(*cdsh_tool_present_result_fn)(void *ud, const json_t *args,
                                               const json_t *result);

typedef struct cdsh_tool_def {
    const char *name;            /* [A-Za-z0-9_-]{1,64}; "run_code" is reserved */
    const char *description;     /* model-visible; required (may be "") */
    const json_t *parameters;    /* JSON Schema (subset) of an object; NULL = {"type":"object"} */
    const json_t *output_schema; /* required: every successful value must satisfy it */
    cdsh_tool_body_fn execute;   /* required */
    /* NULL: one text block, a string value as is and anything else as compact JSON. */
    cdsh_tool_render_fn render;
    cdsh_tool_meta_fn presentation_meta;    /* optional */
    cdsh_tool_safe_fn is_concurrency_safe;  /* optional; absent = exclusive */
    cdsh_tool_finalize_fn finalize_content; /* optional */
    cdsh_tool_present_call_fn present_call;     /* optional; never sent to the model */
    cdsh_tool_present_result_fn present_result; /* optional; never sent to the model */
    /* 0 = none; otherwise > 0, enforced by the built-in timeout policy (dispatch.h). */
    int64_t timeout_ms;
    void *ud; /* passed to every callback above */
    /* Optional; runs once the tool is disposed AND no call (including a
     * detached timed-out body) uses it any more. */
    void (*free_ud)(void *ud);
} cdsh_tool_def;

/* Handy predicate for tools that are always safe to run in parallel. */
bool cdsh_tools_always_safe(void *ud, const json_t *args);

/* ---- registry lifecycle ---------------------------------------------------- */

/* New registry. `bus` (borrowed, may be NULL) receives "tools/change"
 * (unfiltered; payload {"reason":"register"|"unregister"|"restrict"|"unrestrict",
 * "scope":<id or null>, "names":[...]}) and "tools/result" (filtered by the
 * call's agent; payload = the result JSON plus "callId", "rootCallId",
 * "name", "agent", "parent" (the parent's callId or null) and "depth").
 * The bus must outlive the registry. NULL on ENOMEM. */
cdsh_tools *cdsh_tools_new(cdsh_events *bus);

/* Closes the registry and frees it. Run every disposer first (a plugin host
 * unloads its plugins before freeing the registry); a disposer run after
 * cdsh_tools_free touches freed memory, as with the event bus. No call may
 * be in progress except bodies detached by a timeout: those keep the
 * registry's core alive until they return; cdsh_tools_free waits up to 2 s
 * for them, and afterwards they can no longer emit events or start nested
 * calls (they get ABORTED_BEFORE_DISPATCH). NULL-safe. */
void cdsh_tools_free(cdsh_tools *tools);

/* Nesting limit for cdsh_dispatch_nested (default 8: a top-level call has
 * depth 0, its nested calls depth 1, ...). A call deeper than the limit fails
 * with TOOL_DEPTH_EXCEEDED `nested tool call depth limit (<n>) exceeded`. */
void cdsh_tools_set_max_depth(cdsh_tools *tools, unsigned max_depth);

/* How long the timeout policy waits for a body that ignores its fired token
 * before detaching it (default 50 ms; 0 = do not wait). */
void cdsh_tools_set_timeout_grace(cdsh_tools *tools, int64_t grace_ms);

/* ---- registration ---------------------------------------------------------- */

/* Registers def in the layer of `scope` (NULL = global). The definition is
 * copied (strings duplicated, schemas snapshotted and compiled); def->ud is
 * kept and released with free_ud after disposal. Emits "tools/change".
 * Failures (CDSH_EINVAL unless stated; nothing is registered and free_ud is
 * NOT called):
 *  - name missing or not [A-Za-z0-9_-]{1,64}: code "BAD_TOOL_NAME",
 *    `tool name "x" is invalid: use 1-64 characters from A-Z a-z 0-9 _ -`
 *  - "run_code": code "RESERVED_TOOL", `tool name "run_code" is reserved for
 *    the Code Mode presentation transport and cannot be registered or shadowed`
 *  - duplicate in the same layer (CDSH_EEXIST, code "TOOL_EXISTS"): global
 *    `tool "x" is already registered (register it through agent.ctx to
 *    shadow it for one agent)`, scoped `tool "x" is already registered in
 *    this scope`
 *  - code "BAD_TOOL_DEF": `tool "x" must declare execute`, `... must declare
 *    a description`, `... must declare output { schema, render,
 *    presentationMeta? }` (no output_schema), `tool "x" timeoutMs must be a
 *    positive finite number` (timeout_ms < 0)
 *  - parameters or output_schema outside the subset: CDSH_EUNSUPPORTED,
 *    code "UNSUPPORTED_SCHEMA", the schema compiler's message prefixed with
 *    `tool "x" parameters: ` / `tool "x" output schema: `. */
int cdsh_tools_register(cdsh_tools *tools, cdsh_scope *scope, const cdsh_tool_def *def,
                        cdsh_disposer_t *out, cdsh_error *err);

/* Masks the names `scope` inherits (§5). allow / deny are NULL-terminated
 * arrays of names; a NULL array means "absent", an array holding only NULL
 * means the empty list. Masks intersect along the chain and within a scope;
 * allow keeps only the listed names (later registrations are excluded), deny
 * removes them; the scope's own registrations are never masked. Names are
 * checked against the scope's restrictable names at call time. Emits
 * "tools/change". Refusals (CDSH_EINVAL, code "BAD_RESTRICTION"), DSH's texts:
 *  - scope NULL: `tools.restrict() requires a scoped context (agent.ctx): a
 *    context-global restriction would mask every agent — deny the tool for
 *    the intended agent instead`
 *  - both absent: `tools.restrict({}) is a no-op: pass `allow` and/or `deny`
 *    (an empty filter is almost always a materialized-empty-config bug)`
 *  - names run_code: `tools.restrict() cannot name reserved Code Mode
 *    presentation transport "run_code"; restrict end-capability tools instead`
 *  - unknown names (including own-layer names): `tools.restrict() names
 *    unknown global tool "x"; known global tools: a, b` ("tools" and a comma
 *    list for several; known list sorted; "(none)" when empty). */
int cdsh_tools_restrict(cdsh_tools *tools, cdsh_scope *scope, const char *const *allow,
                        const char *const *deny, cdsh_disposer_t *out, cdsh_error *err);

/* Guard: returns NULL to pass or an owned malloc'd reason to deny (final).
 * Runs only when pre-execute and approval allowed the call. */
typedef char *(*cdsh_tools_guard_fn)(void *ud, const cdsh_tool_exec *exec);

/* Adds a guard for calls whose agent is `scope` or a descendant (NULL =
 * every call). Evaluation: global guards, then chain layers farthest-first,
 * in registration order within a layer; the first reason wins. Does not emit
 * "tools/change". */
int cdsh_tools_guard(cdsh_tools *tools, cdsh_scope *scope, cdsh_tools_guard_fn fn, void *ud,
                     void (*free_ud)(void *), cdsh_disposer_t *out, cdsh_error *err);

/* ---- hooks (scope-filtered: a hook tagged with scope S sees calls whose
 * agent is S or a descendant; NULL sees every call; run in registration
 * order) --------------------------------------------------------------------- */

typedef enum cdsh_tools_verdict {
    CDSH_TOOLS_ALLOW = 0,
    CDSH_TOOLS_DENY, /* reason required (NULL => "tool call denied by policy") */
    CDSH_TOOLS_ASK,  /* reason optional; routed to the approval service */
} cdsh_tools_verdict;

/* Pre-execute: the first hook returning DENY or ASK decides; *reason may be
 * set to an owned malloc'd string (also freed when ALLOW is returned).
 * Arguments cannot be rewritten. Pre-execute hooks also see calls of names
 * that are not visible (those fail with UNKNOWN_TOOL at the body stage). */
typedef cdsh_tools_verdict (*cdsh_tools_pre_fn)(void *ud, const cdsh_tool_exec *exec,
                                                char **reason);

int cdsh_tools_on_pre_execute(cdsh_tools *tools, cdsh_scope *scope, cdsh_tools_pre_fn fn, void *ud,
                              void (*free_ud)(void *), cdsh_disposer_t *out, cdsh_error *err);

/* Post-execute decision, filled by the hook (all pointers owned by the
 * decision and consumed by the registry). Default: accept unchanged. */
typedef struct cdsh_tools_post {
    bool block;       /* block the result: it becomes an error whose message is
                         the joined text of `feedback` (or "tool result blocked
                         by post-execute policy") */
    json_t *feedback; /* block: content array, may be NULL */
    json_t *content;  /* accept: replace the content */
    json_t *value;    /* accept: replace the value (successes only; re-validated
                         against the output schema and re-rendered) */
} cdsh_tools_post;

/* Post-execute: hooks run in order, each seeing the result as rewritten by
 * the previous ones; a block ends the chain. Setting both content and value,
 * or a value on a failure, turns the result into an error. */
typedef void (*cdsh_tools_post_fn)(void *ud, const cdsh_tool_exec *exec, const cdsh_toolresult *res,
                                   cdsh_tools_post *decision);

int cdsh_tools_on_post_execute(cdsh_tools *tools, cdsh_scope *scope, cdsh_tools_post_fn fn,
                               void *ud, void (*free_ud)(void *), cdsh_disposer_t *out,
                               cdsh_error *err);

/* Around-dispatch wrapper (retry, metrics, ...). Runs the rest of the
 * dispatch with cdsh_dispatch_next_run() (dispatch.h), possibly with another
 * cancellation token, and returns a result it owns a reference to: usually
 * the one next() returned, or one made with cdsh_toolresult_new_* (a success
 * authored by the wrapper is validated and rendered). Returning NULL is a
 * final error `around-dispatch wrapper failed`. Wrappers nest in registration
 * order (the first registered is outermost); the built-in timeout policy is
 * innermost, right around the body. */
typedef struct cdsh_dispatch_next cdsh_dispatch_next;
typedef cdsh_toolresult *(*cdsh_tools_around_fn)(void *ud, const cdsh_tool_exec *exec,
                                                 cdsh_dispatch_next *next);

int cdsh_tools_on_execute(cdsh_tools *tools, cdsh_scope *scope, cdsh_tools_around_fn fn, void *ud,
                          void (*free_ud)(void *), cdsh_disposer_t *out, cdsh_error *err);

/* ---- approval service (optional) ------------------------------------------- */

typedef enum cdsh_approval_outcome {
    CDSH_APPROVAL_ALLOWED_ONCE = 0,
    CDSH_APPROVAL_REJECTED,    /* denial: `the user rejected tool "x"` */
    CDSH_APPROVAL_CANCELLED,   /* denial: `approval for tool "x" was cancelled`
                                  (ABORTED_BEFORE_DISPATCH if the caller aborted) */
    CDSH_APPROVAL_UNAVAILABLE, /* denial: `tool "x" requires approval, but no
                                  approval channel is available` */
} cdsh_approval_outcome;

/* request() blocks until the person answers or exec->cancel fires (it must
 * observe the token). `reason` is the ask reason (may be NULL). */
typedef struct cdsh_approval_service {
    cdsh_approval_outcome (*request)(void *ud, const cdsh_tool_exec *exec, const char *reason);
    void *ud;
} cdsh_approval_service;

/* Installs (service non-NULL, copied) or removes (NULL) the approval service;
 * *out undoes exactly this installation (a no-op once another service has
 * replaced it). Without a service, ASK becomes a denial with the ask reason,
 * or `tool "x" requires approval (not yet supported)`; with a service but a
 * call without an agent: `tool "x" requires approval, but the call has no
 * agent to route it through`. The service's ud must stay valid until the
 * disposer ran and every call that may be asking has returned. */
int cdsh_tools_set_approval(cdsh_tools *tools, const cdsh_approval_service *service,
                            cdsh_disposer_t *out, cdsh_error *err);

/* Copies the installed approval service into *out (may be NULL); false when
 * none is installed. */
bool cdsh_tools_approval_current(cdsh_tools *tools, cdsh_approval_service *out);

/* ---- the visibility resolver (§4) ----------------------------------------- */

/* Model-facing list for `scope`: owned array of {name, description,
 * parameters} (deep copies), inherited names first in registration order (a
 * shadowed name keeps its original position), own-layer names last. NULL on
 * ENOMEM. */
json_t *cdsh_tools_schemas(cdsh_tools *tools, const cdsh_scope *scope);

/* Owned array of the visible names in the same order. */
json_t *cdsh_tools_names(cdsh_tools *tools, const cdsh_scope *scope);

/* Owned sorted array of the names `scope` may restrict (everything it
 * inherits, masked or not; never its own layer). */
json_t *cdsh_tools_restrictable_names(cdsh_tools *tools, const cdsh_scope *scope);

/* True if `name` is visible to `scope` (the same answer dispatch uses). */
bool cdsh_tools_visible(cdsh_tools *tools, const cdsh_scope *scope, const char *name);

/* Lookup: owned {name, description, parameters, outputSchema, timeoutMs?,
 * layer:<scope id or null>} for a visible tool, NULL otherwise. */
json_t *cdsh_tools_info_dup(cdsh_tools *tools, const cdsh_scope *scope, const char *name);

/* Scheduling class of a call as seen by `scope`: true ("parallel") only when
 * the tool is visible, args validate and is_concurrency_safe says true. */
bool cdsh_tools_is_parallel(cdsh_tools *tools, const cdsh_scope *scope, const char *name,
                            const json_t *args);

/* ---- presentation (§1) -------------------------------------------------------- */

/* The render intent of a call of `name` as `scope` sees it: an owned
 * {card, ...} (see cdsh_tool_present_call_fn), {"card":"generic"} when the
 * tool has no presenter, is not visible, the args do not validate or the
 * presenter's answer is not a valid intent. Never NULL but on ENOMEM. */
json_t *cdsh_tools_present_call_dup(cdsh_tools *tools, const cdsh_scope *scope, const char *name,
                                    const json_t *args);
/* Same for the result (result as cdsh_tool_present_result_fn takes it). */
json_t *cdsh_tools_present_result_dup(cdsh_tools *tools, const cdsh_scope *scope,
                                      const char *name, const json_t *args, const json_t *result);
/* True if `intent` is a valid render intent (the card's required fields
 * with their types). */
bool cdsh_tools_present_valid(const json_t *intent);

/* Number of registrations of every kind (tools, masks, guards, hooks, the
 * approval service), for leak checks after a plugin unloads.
 * keep-public: registry introspection; tests count registrations. */
size_t cdsh_tools_count(cdsh_tools *tools);

#endif
