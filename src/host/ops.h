/* ops.h — one operations table per plugin, after Redis's command table: a
 * row names an operation, its argument schema, its handler, its result shape
 * and the surfaces that expose it (model tool, RPC endpoint, slash
 * subcommand, `cdsh <group>` command-line subcommand). The host checks the
 * whole table, then builds every flagged surface through the plugin context
 * (the command line runs in-process: cdsh_ops_cli_run), so unloading the
 * plugin removes them all. Adding an operation is adding a row. Not here: what a plugin does in
 * its handlers (its service) and how a surface runs a call (tools.h,
 * rpc.h, commands.h). Thread-safe: a checked table is immutable. */
#ifndef CDSH_HOST_OPS_H
#define CDSH_HOST_OPS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "base/cancel.h"
#include "base/err.h"
#include "host/commands.h"
#include "host/plugins.h"
#include "host/scope.h"
#include "host/tools.h"

/* Surfaces, OR'ed in a row's `surfaces`. */
#define CDSH_OP_TOOL 0x1u    /* model tool "<tool_prefix><name>" */
#define CDSH_OP_RPC 0x2u     /* endpoint "<name>" on the table's RPC channel */
#define CDSH_OP_COMMAND 0x4u /* "/<command> <name> ..." */
#define CDSH_OP_CLI 0x8u     /* "cdsh <cli_group> <name> ..." (cdsh_ops_cli_run) */
#define CDSH_OP_SURFACES (CDSH_OP_TOOL | CDSH_OP_RPC | CDSH_OP_COMMAND | CDSH_OP_CLI)

/* Row flags. */
#define CDSH_OP_READ 0x1u /* changes nothing: its tool runs in parallel */

typedef struct cdsh_op cdsh_op;

/* One call as a handler sees it; every pointer is borrowed for the call. */
typedef struct cdsh_op_call {
    const cdsh_op *op;
    unsigned surface;           /* exactly one CDSH_OP_* */
    const json_t *args;         /* an object: tool arguments (validated against the
                                   row's schema by the registry), the RPC payload or
                                   what the row's parse made of the command line */
    const cdsh_scope *agent;    /* tool and command: the caller's agent (NULL: global);
                                   RPC: NULL */
    cdsh_cancel *cancel;        /* may be NULL */
    const cdsh_tool_exec *exec; /* tool surface inside a dispatch, else NULL */
    void *frame;                /* set by the table's invoke hook for its handlers */
} cdsh_op_call;

/* A handler: 0 with an owned *value (NULL means JSON null), or a negative
 * CDSH_E* with err filled (code, message): the surface turns it into its
 * failure (tool error, RPC error result, command error). Expected refusals
 * of an operation are values, as everywhere (CONVENTIONS). */
typedef int (*cdsh_op_fn)(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err);

/* CLI surface: argv of `cdsh <group> <name> ...` (argv[0] is the row's
 * name) → an owned args object and -1; or an exit status (>= 0) when the
 * command ends here (--help printed, a usage error printed on stderr). */
typedef int (*cdsh_op_cli_parse_fn)(void *ud, int argc, char **argv, json_t **args);

/* Command surface: the text after the subcommand word (trimmed; NULL when
 * absent) → an owned args object. A negative return makes the command
 * an error result whose text is err->message (the usage). */
typedef int (*cdsh_op_parse_fn)(void *ud, const char *rest, json_t **args, cdsh_error *err);

struct cdsh_op {
    const char *name;          /* ^[A-Za-z][A-Za-z0-9_]*$, unique in the table */
    const char *description;   /* the tool's description; required for tool rows */
    const char *args_schema;   /* JSON Schema text of an object (tools.h subset) */
    const char *result_schema; /* JSON Schema text of every successful value */
    cdsh_op_fn handler;
    unsigned surfaces;              /* CDSH_OP_* (tool, RPC, command, CLI), at least one */
    unsigned flags;                 /* CDSH_OP_READ */
    cdsh_op_parse_fn parse;         /* command rows: NULL gives {} */
    cdsh_op_cli_parse_fn cli_parse; /* CLI rows: NULL gives {} */
    /* CLI rows (required): rc/value/err of the call → printed output and the
     * exit status (takes value). */
    int (*cli_print)(void *ud, const cdsh_op_call *call, int rc, json_t *value,
                     const cdsh_error *err);
    /* Tool rows: the result's render intent (tools.h, §1 presentResult);
     * NULL: the table's present_result. Pure; NULL answer = generic card. */
    json_t *(*present_result)(const json_t *args, const json_t *result);
};

/* A plugin's table and the hooks that shape its surfaces. Only `plugin`,
 * `ops` and `n_ops` are required; a hook left NULL has the behaviour noted. */
typedef struct cdsh_ops_table {
    const char *plugin; /* names the table in messages */
    const cdsh_op *ops;
    size_t n_ops;

    /* Wraps every handler call on every surface (Redis's call()): it may
     * prepare call->frame (copy the call), map error codes, normalise
     * values, and must call op->handler. NULL: op->handler directly. */
    int (*invoke)(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err);

    /* ---- tool surface ---- */
    const char *tool_prefix;    /* prepended to tool rows' names; NULL: "" */
    const char *tool_error;     /* info.name of a failed tool; NULL: "OperationError" */
    cdsh_tool_render_fn render; /* NULL: the registry's default */
    /* Render intent of every tool row's result without one of its own
     * (tools.h, §1 presentResult); NULL: the generic card. */
    json_t *(*present_result)(const json_t *args, const json_t *result);

    /* ---- RPC surface ---- */
    const char *rpc_channel; /* required when a row has CDSH_OP_RPC */
    /* Runs before the endpoint is looked up; non-zero refuses the call with
     * the owned *result. NULL: everything is admitted. */
    int (*rpc_admit)(void *ud, const char *endpoint, const json_t *payload, json_t **result);
    /* rc/value/err → the owned RpcResult (takes value). NULL: ok → {ok:true,
     * value}; failure → {ok:false, error:{code: err->code or "internal",
     * message: err->message or "<plugin> method failed"}}. */
    json_t *(*rpc_result)(void *ud, const cdsh_op_call *call, int rc, json_t *value,
                          const cdsh_error *err);
    /* Unknown endpoint: code (NULL: "not-found") and message, a format with
     * one %s for the endpoint (NULL: `no operation "%s" on <channel>`). */
    const char *unknown_code;
    const char *unknown_format;

    /* ---- command surface ---- */
    const char *command;             /* the slash command; required with command rows */
    const char *command_description; /* required with command rows */
    const char *command_hint;        /* optional input hint */
    const char *command_default;     /* the row run for an empty line (NULL: usage) */
    const char *command_usage;       /* error text for an unknown subcommand (required) */
    /* rc/value/err → the command result (takes value). NULL: success with the
     * compact JSON of value, or an error with err->message. */
    int (*command_result)(void *ud, const cdsh_op_call *call, int rc, json_t *value,
                          const cdsh_error *call_err, cdsh_command_result *out, cdsh_error *err);

    /* ---- CLI surface (`cdsh <cli_group> <row> ...`, run in-process) ---- */
    const char *cli_group;     /* required with CLI rows */
    void (*cli_usage)(FILE *); /* required with CLI rows: the group's help */
} cdsh_ops_table;

/* A checked table bound to its handlers' ud; reference-counted (every
 * surface registered from it holds a reference). */
typedef struct cdsh_ops cdsh_ops;

/* Checks `table` (borrowed: it must outlive the result; normally static
 * const) and compiles its schemas. Refusals (CDSH_EINVAL, code
 * "INVALID_OPS_TABLE", nothing is created) read
 * `operations table of "<plugin>": row <i> ("<name>"): <problem>` or, for
 * the table itself, `operations table of "<plugin>": <problem>`; problems:
 * a name outside ^[A-Za-z][A-Za-z0-9_]*$, a duplicate name, no handler, no
 * surface or an unknown surface bit, a tool row without description, a tool
 * name longer than 64 characters, args or result schema missing / not JSON /
 * refused by the schema compiler (args must describe an object), a command
 * row without the table's command, description and usage, an RPC row without
 * a valid channel, a command_default that is no command row.
 * `release` (may be NULL) runs on ud once the last reference is gone. If
 * this call fails, release(ud) runs before it returns. */
int cdsh_ops_new(const cdsh_ops_table *table, void *ud, void (*release)(void *ud), cdsh_ops **out,
                 cdsh_error *err);
/* keep-public: the handle's reference pair; plugins that keep a table past a call take one. */
cdsh_ops *cdsh_ops_ref(cdsh_ops *ops);
void cdsh_ops_free(cdsh_ops *ops); /* drops one reference; NULL-safe */

const cdsh_ops_table *cdsh_ops_table_get(const cdsh_ops *ops);

/* Builds every flagged surface through ctx: one tool per tool row, one RPC
 * channel serving the RPC rows, one slash command dispatching to the command
 * rows. Each registration is recorded in ctx, so unloading the plugin (or
 * freeing a scoped context) removes it; on failure what was registered so
 * far stays recorded in ctx and goes away with the failed apply. */
int cdsh_ops_register(cdsh_plugin_ctx *ctx, cdsh_ops *ops, cdsh_error *err);
/* The same for the surfaces in `surfaces` only (a plugin whose RPC channel
 * exists only beside a web connection registers the rest first). Calling it
 * again for other surfaces adds them; a surface registered twice fails as
 * the registry does for a duplicate name. */
int cdsh_ops_register_surfaces(cdsh_plugin_ctx *ctx, cdsh_ops *ops, unsigned surfaces,
                               cdsh_error *err);

/* cdsh_ops_new + cdsh_ops_register + cdsh_ops_free in one call. */
int cdsh_ops_register_table(cdsh_plugin_ctx *ctx, const cdsh_ops_table *table, void *ud,
                            void (*release)(void *ud), cdsh_error *err);

/* The row named `name` (without the tool prefix), or NULL. Borrowed. */
const cdsh_op *cdsh_ops_find(const cdsh_ops *ops, const char *name);

/* Owned array of the surface names of the rows exposed on `surface` (tool
 * names carry the prefix), in table order. */
json_t *cdsh_ops_names(const cdsh_ops *ops, unsigned surface);

/* Owned [{name, description?, surfaces:[...], args, result, read?}] for
 * every row on any of `surfaces`: the table as data (the RPC channel serves
 * it for its rows at the reserved endpoint "$ops"). */
json_t *cdsh_ops_describe(const cdsh_ops *ops, unsigned surfaces);

/* Runs row `name` on `surface` in-process, as that surface would (without
 * a host: CLI, tests): through the invoke hook, with the result checked
 * against the row's result shape. args borrowed (NULL: {}); the RPC
 * surface refuses a non-object with code "bad-request" `payload must be an
 * object`. Errors: unknown row or row not on `surface` (CDSH_ENOTFOUND,
 * the unknown code and message above); the handler's error; a value
 * outside the result shape (CDSH_EPROTO, code "invalid-result", `result of
 * "<name>" does not match its shape: <violations>`). */
int cdsh_ops_call(cdsh_ops *ops, const char *name, unsigned surface, const json_t *args,
                  const cdsh_scope *agent, json_t **value, cdsh_error *err);

/* Runs `cdsh <cli_group> ...` from the CLI rows: argv[0] is the group. No
 * row word, --help or -h: the usage (stderr and 2, stdout and 0); an
 * unknown word: `cdsh <group>: unknown action '<w>' (try `cdsh <group>
 * --help`)` and 2 (as cdsh_cli_action); else the row's cli_parse, the
 * call on the CLI surface (as cdsh_ops_call) and the row's cli_print, whose
 * status is returned. */
int cdsh_ops_cli_run(cdsh_ops *ops, int argc, char **argv);

/* The RPC envelope for one call, as the channel answers it (owned). */
json_t *cdsh_ops_rpc_envelope(cdsh_ops *ops, const char *endpoint, const json_t *payload,
                              cdsh_cancel *cancel);

#endif
