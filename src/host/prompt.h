/* prompt.h — system-prompt segments that plugins contribute: ordered text
 * pieces (static or rendered per agent scope) registered per scope layer,
 * with exact disposers. The agent loop (agent/agent.h) assembles them with
 * the skills index and the visible tools; this file does no model I/O.
 * Thread-safe: a mutex guards the list; no lock is held while render runs. */
#ifndef CDSH_HOST_PROMPT_H
#define CDSH_HOST_PROMPT_H

#include <jansson.h>
#include <stddef.h>

#include "base/cancel.h"
#include "base/err.h"
#include "host/disposer.h"
#include "host/events.h"
#include "host/scope.h"

typedef struct cdsh_prompt cdsh_prompt;
typedef struct cdsh_plugin_ctx cdsh_plugin_ctx;
typedef struct cdsh_tools cdsh_tools;
typedef struct cdsh_plugin_def cdsh_plugin_def;

/* Renders a dynamic segment for `scope` (the agent the prompt is built for,
 * NULL = global): an owned string, or NULL to contribute nothing this time. */
typedef char *(*cdsh_prompt_render_fn)(void *ud, const cdsh_scope *scope);

/* Segments ordered at or above this come after the skills index and the
 * tool list in the system prompt (context and state); below it, before. */
#define CDSH_PROMPT_AFTER_TOOLS_ORDER 200

typedef struct cdsh_prompt_segment_def {
    const char *id;   /* [A-Za-z0-9_.:/-]{1,64}, unique within its layer */
    int order;        /* smaller first; equal orders keep registration order.
                         Conventions: 0-99 identity, 100-199 plugin rules,
                         200-299 context/state, 300+ late reminders */
    const char *text; /* static text (copied), or NULL when render is given */
    cdsh_prompt_render_fn render;
    void *ud;
    void (*free_ud)(void *ud); /* runs once the segment is disposed and not rendering */
} cdsh_prompt_segment_def;

/* bus (borrowed, may be NULL) receives "prompt/change" {reason, id, scope}. */
cdsh_prompt *cdsh_prompt_new(cdsh_events *bus);
void cdsh_prompt_free(cdsh_prompt *p);

/* Registers a segment in scope's layer (NULL: global). Errors (CDSH_EINVAL,
 * code "INVALID_SEGMENT"): bad id, neither or both of text/render. Duplicate
 * id in the same layer: CDSH_EEXIST, "DUPLICATE_SEGMENT" `prompt segment "x"
 * is already registered`. On failure free_ud is NOT called.
 * keep-public: the registry under the ctx wrapper; tests register segments directly. */
int cdsh_prompt_register(cdsh_prompt *p, cdsh_scope *scope, const cdsh_prompt_segment_def *def,
                         cdsh_disposer_t *out, cdsh_error *err);

/* Same, through a plugin context: the disposer is recorded in ctx (the
 * segment goes away with the plugin or scoped context). On any failure
 * free_ud(ud) runs before the error returns. */
int cdsh_prompt_ctx_register(cdsh_plugin_ctx *ctx, const cdsh_prompt_segment_def *def,
                             cdsh_error *err);

/* Segments visible to scope (its chain plus global; a nearer layer shadows a
 * farther one with the same id), rendered and sorted: owned array of
 * {id, order, scope, text}; segments rendering NULL or "" are left out. */
json_t *cdsh_prompt_segments(cdsh_prompt *p, const cdsh_scope *scope);

/* The segments' texts joined by a blank line (owned; "" when none).
 * keep-public: tests read the rendered prompt. */
char *cdsh_prompt_render_dup(cdsh_prompt *p, const cdsh_scope *scope);

/* keep-public: registry introspection; tests count registrations. */
size_t cdsh_prompt_count(cdsh_prompt *p);

/* ---- per-turn runtime context and sampling --------------------------------
 * Providers the agent loop asks once at the start of every turn (after the
 * "agent/turn" start event); it freezes their answers for every step of that
 * turn (see docs/agent.md "Runtime context"). */

/* Runtime context for `session_id`'s turn `turn` (scope: the session's scope):
 * owned text, or NULL/"" to contribute nothing this turn. */
typedef char *(*cdsh_prompt_context_fn)(void *ud, const cdsh_scope *scope, const char *session_id,
                                        long long turn);
/* Sampling overrides for the turn: an owned JSON object, or NULL. The loop
 * applies "temperature" (number), "maxTokens" (integer > 0), "stop" (string or
 * array of strings) and "reasoningEffort" (string); other fields are recorded
 * in the turn's "turn/context" event only. */
typedef json_t *(*cdsh_prompt_sampling_fn)(void *ud, const cdsh_scope *scope,
                                           const char *session_id, long long turn);

/* Tools that exist only after some work: registers them before the model's
 * tool list is read (an imported MCP server that never connected, so has no
 * cached tool list, connects here). Runs with no lock held; returns 0 or a
 * negative code (logged; the other sources still run). */
typedef int (*cdsh_prompt_tools_fn)(void *ud, cdsh_cancel *cancel);

typedef struct cdsh_prompt_provider_def {
    const char *name;               /* same charset as segment ids, unique among providers */
    cdsh_prompt_context_fn context; /* at least one of context / sampling / tools */
    cdsh_prompt_sampling_fn sampling;
    cdsh_prompt_tools_fn tools;     /* see cdsh_prompt_tools_dup */
    void *ud;
    void (*free_ud)(void *ud); /* runs once the provider is disposed and not running */
} cdsh_prompt_provider_def;

/* Registers a provider. Errors: CDSH_EINVAL "INVALID_PROVIDER" (bad name, no
 * function); CDSH_EEXIST "DUPLICATE_PROVIDER" `prompt provider "x" is already
 * registered`. On failure free_ud is NOT called.
 * keep-public: the registry under the ctx wrapper; tests register providers directly. */
int cdsh_prompt_provider_register(cdsh_prompt *p, const cdsh_prompt_provider_def *def,
                                  cdsh_disposer_t *out, cdsh_error *err);
/* Same through a plugin context (disposer recorded; free_ud runs on failure). */
int cdsh_prompt_ctx_provide(cdsh_plugin_ctx *ctx, const cdsh_prompt_provider_def *def,
                            cdsh_error *err);

/* Asks every provider once, in registration order. Returns an owned array of
 * {name, text} for the non-empty contexts; *sampling (when non-NULL) receives an
 * owned object merging the providers' sampling answers (later registrations
 * win per field; {} when none). */
json_t *cdsh_prompt_turn_context(cdsh_prompt *p, const cdsh_scope *scope, const char *session_id,
                                 long long turn, json_t **sampling);

/* keep-public: registry introspection; tests count registrations. */
size_t cdsh_prompt_provider_count(cdsh_prompt *p);

/* ---- the tool list the model sees (DSH systemPrompt §2) ---------------------
 * Without an order the tools are sorted by name in UTF-16 code units
 * (locale-independent; cdsh_tools_schemas itself keeps registration order).
 * With a `toolOrder` (the "systemPrompt" plugin's setting, per profile) the
 * listed names come first in that order and the reserved entry
 * "<unlisted-tools>" (exactly once) stands for every other tool, sorted by
 * name. A listed name the scope knows but cannot see (restricted away) is
 * simply absent.
 * keep-public: the steps of cdsh_prompt_tools_dup, each pinned by
 * tests/host/test_prompt_tool_order.c. */
#define CDSH_PROMPT_TOOL_ORDER_REST "<unlisted-tools>"

/* -1, 0, 1 comparing two UTF-8 strings by their UTF-16 code units
 * (JavaScript's `<`): a supplementary character sorts after U+D7FF and
 * before U+E000. */
int cdsh_prompt_utf16_cmp(const char *a, const char *b);

/* Checks an order (array of strings; NULL = none is fine). Errors
 * (CDSH_EINVAL, code "INVALID_TOOL_ORDER", DSH's messages):
 * `toolOrder lists "x" more than once`, `toolOrder must contain the
 * "<unlisted-tools>" rest entry (where unlisted tools are inserted)`,
 * `toolOrder entries must be strings`. */
int cdsh_prompt_tool_order_check(const json_t *order, cdsh_error *err);

/* Owned copy of the current order, or NULL when none is set. */
json_t *cdsh_prompt_tool_order_dup(cdsh_prompt *p);

/* Orders `schemas` (borrowed array of {name, ...}) by `order` (NULL =
 * sort by name): an owned new array of the same (referenced) objects.
 * `known` (borrowed array of names, may be NULL = the schemas' names) are
 * the names an order may list. Errors: an unknown entry is CDSH_ENOTFOUND,
 * "UNKNOWN_TOOL_ORDER_ENTRY": `toolOrder lists unregistered tool "x"; known
 * tools: a, b` (tools "x", "y" for several; "(none)"); a tool named
 * "<unlisted-tools>" is CDSH_EINVAL "RESERVED_TOOL_NAME" `tool provider
 * returned reserved tool name "<unlisted-tools>" (reserved for toolOrder's
 * rest entry)`. NULL then. */
json_t *cdsh_prompt_order_tools(const json_t *schemas, const json_t *order, const json_t *known,
                                cdsh_error *err);

/* The model's tool list for `scope` in prompt order: first every provider's
 * `tools` function runs (in registration order), then the registry's view
 * (cdsh_tools_schemas) is ordered with the current order, the scope's
 * visible and restrictable names being the known ones. Owned; NULL with
 * err on an order error (see cdsh_prompt_order_tools). */
json_t *cdsh_prompt_tools_dup(cdsh_prompt *p, cdsh_tools *tools, const cdsh_scope *scope,
                              cdsh_cancel *cancel, cdsh_error *err);

/* Runs every provider's `tools` function once (what cdsh_prompt_tools_dup
 * does first), for front ends that list tools some other way. */
void cdsh_prompt_tools_materialize(cdsh_prompt *p, cdsh_cancel *cancel);

/* The built-in "systemPrompt" plugin: its setting `toolOrder` (array of
 * tool names with "<unlisted-tools>" exactly once; absent = sort by name)
 * is checked when the plugin loads and set on the host's prompt while it
 * is active. */
extern const cdsh_plugin_def cdsh_prompt_plugin;

#endif
