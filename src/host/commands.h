/* commands.h — slash commands for the person in a session (`/name rest`):
 * registration per scope layer (an agent's layer shadows the global one),
 * parsing, execution with `command/run` / `command/done` events, listing.
 * Not here: the model-facing tools (tools.h). Thread-safe; no lock is held
 * while a handler runs (a command disposed meanwhile finishes that run). */
#ifndef CDSH_HOST_COMMANDS_H
#define CDSH_HOST_COMMANDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/cancel.h"
#include "base/err.h"
#include "host/disposer.h"
#include "host/events.h"
#include "host/scope.h"

typedef struct cdsh_commands cdsh_commands;

typedef enum cdsh_command_kind {
    CDSH_COMMAND_SUCCESS = 0,
    CDSH_COMMAND_ERROR = 1,
} cdsh_command_kind;

/* What a handler receives. Every pointer is borrowed for the call. */
typedef struct cdsh_command_invocation {
    const char *command_id;    /* "cmd-<8 hex>-<n>" */
    const char *name;          /* without the slash */
    const cdsh_scope *agent;   /* NULL: global */
    const char *raw_input;     /* text after the name, separator included ("" if none) */
    const json_t *attachments; /* array of image blocks; empty unless input.images */
    cdsh_cancel *cancel;       /* may be NULL */
} cdsh_command_invocation;

/* What a handler fills: kind, and text (owned by the result, malloc'd; may
 * be NULL for success, must be non-blank for an error). */
typedef struct cdsh_command_result {
    cdsh_command_kind kind;
    char *text;
    /* DSH's sourceEventSeq: the session event (its seq, > 0) the command's
     * success stands for, e.g. the event it appended; 0 = none. Ignored on
     * an error. Passed on in the outcome and in `command/done`. */
    long long source_event_seq;
} cdsh_command_result;

/* Returns 0 with *out filled, or a negative CDSH_E* (a thrown handler: the
 * run is reported as an error in `command/done` and the error is returned to
 * the caller of cdsh_commands_execute). */
typedef int (*cdsh_command_fn)(void *arg, const cdsh_command_invocation *inv,
                               cdsh_command_result *out, cdsh_error *err);

typedef struct cdsh_command_def {
    const char *name;        /* ^[a-z][a-z0-9_-]*$, no leading slash */
    const char *description; /* non-blank */
    const char *input_hint;  /* optional; non-blank when given */
    bool accepts_images;     /* input.images */
    bool hide_input;         /* recordInput:false — command/run omits args */
    cdsh_command_fn handler;
    void *arg;
} cdsh_command_def;

/* The outcome of a handled line. text is owned (may be NULL). */
typedef struct cdsh_command_outcome {
    char command_id[32];
    cdsh_command_kind kind;
    char *text;
    long long source_event_seq; /* the handler's, on success; else 0 */
} cdsh_command_outcome;

/* bus is borrowed and must outlive the registry (events go there). */
cdsh_commands *cdsh_commands_new(cdsh_events *bus);
void cdsh_commands_free(cdsh_commands *cmds);

/* True if name matches ^[a-z][a-z0-9_-]*$. */
bool cdsh_commands_name_valid(const char *name);

/* Registers def in `scope`'s layer (NULL: global); strings are copied.
 * Errors (CDSH_EINVAL, code "INVALID_COMMAND"): bad name
 * `command name "X" must match ^[a-z][a-z0-9_-]*$`, blank description,
 * blank input hint, missing handler. Duplicate in the same layer
 * (CDSH_EEXIST, "DUPLICATE_COMMAND"): `command "x" is already registered`
 * (scoped: `... in this scope`). Emits `commands/change` (unfiltered). */
int cdsh_commands_register(cdsh_commands *cmds, cdsh_scope *scope, const cdsh_command_def *def,
                           cdsh_disposer_t *out, cdsh_error *err);

/* Descriptors visible to `agent` (its chain, nearest shadows farthest, then
 * global), sorted by name: [{name, description, input?:{hint, images?}}].
 * Owned; NULL on ENOMEM. */
json_t *cdsh_commands_list(cdsh_commands *cmds, const cdsh_scope *agent);

/* The descriptor of `name` as `agent` sees it, or NULL. Owned.
 * keep-public: registry lookup; plugin tests find their commands with it. */
json_t *cdsh_commands_find(cdsh_commands *cmds, const cdsh_scope *agent, const char *name);

/* Parses `/name` followed by end of text or whitespace. On success copies
 * the name into name_out (cap bytes) and points *raw_input at the text after
 * the name (separator included) and returns true. */
bool cdsh_commands_parse(const char *line, char *name_out, size_t cap, const char **raw_input);

/* Runs a line typed by the person. Returns 0 and leaves *out zeroed when the
 * line is not a command or names no command visible to `agent` (nothing is
 * emitted; front ends then say which commands exist); returns 1 when handled
 * with *out filled (free with cdsh_commands_outcome_clear). Handled runs emit
 * `command/run {commandId, name, args?, source:{kind:"user"}}` then
 * `command/done {commandId, kind, text?}` scope-filtered by `agent`.
 * images: NULL or an array; non-empty for a command without accepts_images
 * gives an error result `/<name> does not accept image attachments`.
 * Negative: the handler failed (CDSH_E* it returned, or CDSH_EINVAL with code
 * "INVALID_COMMAND_RESULT" for an error result without text) or the cancel
 * token fired (CDSH_ECANCELED, code "cancelled"); `command/done` reports an
 * error in both cases. */
int cdsh_commands_execute(cdsh_commands *cmds, const cdsh_scope *agent, const char *line,
                          const json_t *images, cdsh_cancel *cancel, cdsh_command_outcome *out,
                          cdsh_error *err);

void cdsh_commands_outcome_clear(cdsh_command_outcome *out);

/* For front ends after an unhandled line: NULL when `line` is not a slash
 * command at all (send it to the model), else an owned message naming the
 * commands `agent` can use:
 *   unknown command "/x"; available commands: /a, /b
 *   unknown command "/x"; no commands are available */
char *cdsh_commands_unknown_message_dup(cdsh_commands *cmds, const cdsh_scope *agent,
                                        const char *line);

/* Total registrations across layers (for reload leak checks).
 * keep-public: registry introspection; tests count registrations. */
size_t cdsh_commands_count(cdsh_commands *cmds);

/* Sets a result: kind plus a copy of text (NULL allowed). 0 or CDSH_ENOMEM. */
int cdsh_command_result_set(cdsh_command_result *out, cdsh_command_kind kind, const char *text);

#endif
