/* ops.c — operations tables: the check at registration, and the three
 * surfaces built from a checked table (one tool per tool row, one RPC channel
 * and one slash command dispatching by row name). The rows' handlers are the
 * plugin's; this file only routes calls and shapes what the surfaces return. */
#include "host/ops.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/schema.h"
#include "host/dispatch.h"
#include "host/rpc.h"

#define OPS_ENDPOINT "$ops" /* reserved RPC endpoint: the table as data */
#define TOOL_NAME_MAX 64

struct cdsh_ops {
    atomic_int refs;
    const cdsh_ops_table *table;
    void *ud;
    void (*release)(void *ud);
    json_t **args;         /* parsed args schema per row */
    cdsh_schema **results; /* compiled result shape per row, made at its first call */
    json_t **result_json;  /* parsed result shape per row */
    pthread_mutex_t mu;    /* guards results[] */
};

/* ---- lifecycle and the check ------------------------------------------------ */

cdsh_ops *cdsh_ops_ref(cdsh_ops *ops)
{
    if (ops)
        atomic_fetch_add(&ops->refs, 1);
    return ops;
}

void cdsh_ops_free(cdsh_ops *ops)
{
    if (!ops || atomic_fetch_sub(&ops->refs, 1) != 1)
        return;
    for (size_t i = 0; i < ops->table->n_ops; i++) {
        if (ops->args)
            json_decref(ops->args[i]);
        if (ops->results)
            cdsh_schema_free(ops->results[i]);
        if (ops->result_json)
            json_decref(ops->result_json[i]);
    }
    free(ops->args);
    free(ops->results);
    free(ops->result_json);
    pthread_mutex_destroy(&ops->mu);
    if (ops->release)
        ops->release(ops->ud);
    free(ops);
}

const cdsh_ops_table *cdsh_ops_table_get(const cdsh_ops *ops)
{
    return ops ? ops->table : NULL;
}

static bool name_valid(const char *name)
{
    if (!name || !isalpha((unsigned char)name[0]))
        return false;
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_')
            return false;
    return true;
}

static const char *plugin_of(const cdsh_ops_table *t)
{
    return t && t->plugin ? t->plugin : "?";
}

static int table_refusal(const cdsh_ops_table *t, cdsh_error *err, const char *problem)
{
    return cdsh_error_set(err, CDSH_EINVAL, "INVALID_OPS_TABLE", "operations table of \"%s\": %s",
                          plugin_of(t), problem);
}

static int row_refusal(const cdsh_ops_table *t, size_t i, cdsh_error *err, const char *problem)
{
    const char *name = t->ops[i].name ? t->ops[i].name : "";
    return cdsh_error_set(err, CDSH_EINVAL, "INVALID_OPS_TABLE",
                          "operations table of \"%s\": row %zu (\"%.64s\"): %s", plugin_of(t), i,
                          name, problem);
}

/* Parses and compiles one schema of row i; *json receives the parsed text. */
static int row_schema(const cdsh_ops_table *t, size_t i, const char *what, const char *text,
                      bool object, json_t **json, cdsh_schema **compiled, cdsh_error *err)
{
    char problem[CDSH_ERROR_MESSAGE_MAX];
    if (!text) {
        snprintf(problem, sizeof problem, "no %s schema", what);
        return row_refusal(t, i, err, problem);
    }
    json_error_t jerr;
    *json = json_loads(text, 0, &jerr);
    if (!json_is_object(*json)) {
        if (*json)
            snprintf(problem, sizeof problem, "%s schema is not a JSON object", what);
        else
            snprintf(problem, sizeof problem, "%s schema is not valid JSON (%s)", what, jerr.text);
        return row_refusal(t, i, err, problem);
    }
    if (object) {
        const char *type = json_string_value(json_object_get(*json, "type"));
        if (!type || strcmp(type, "object") != 0) {
            snprintf(problem, sizeof problem, "%s schema must have type \"object\"", what);
            return row_refusal(t, i, err, problem);
        }
    }
    cdsh_error serr = {0};
    cdsh_schema *s = NULL;
    if (cdsh_schema_compile_at(*json, what, &s, NULL, &serr) < 0) {
        snprintf(problem, sizeof problem, "%s schema: %.900s", what, serr.message);
        return row_refusal(t, i, err, problem);
    }
    if (compiled)
        *compiled = s;
    else
        cdsh_schema_free(s);
    return 0;
}

static int check_table(const cdsh_ops_table *t, cdsh_error *err)
{
    if (!t || !t->plugin || !*t->plugin)
        return table_refusal(t, err, "the table must name its plugin");
    if (!t->ops || t->n_ops == 0)
        return table_refusal(t, err, "the table has no rows");
    size_t prefix = t->tool_prefix ? strlen(t->tool_prefix) : 0;
    for (size_t i = 0; i < t->n_ops; i++) {
        const cdsh_op *op = &t->ops[i];
        if (!name_valid(op->name))
            return row_refusal(t, i, err, "the name must match ^[A-Za-z][A-Za-z0-9_]*$");
        for (size_t j = 0; j < i; j++)
            if (strcmp(t->ops[j].name, op->name) == 0)
                return row_refusal(t, i, err, "duplicate name");
        if (!op->handler)
            return row_refusal(t, i, err, "no handler");
        if (op->surfaces == 0)
            return row_refusal(t, i, err, "no surface");
        if (op->surfaces & ~CDSH_OP_SURFACES)
            return row_refusal(t, i, err, "unknown surface");
        if ((op->surfaces & CDSH_OP_TOOL) && (!op->description || !*op->description))
            return row_refusal(t, i, err, "a tool row needs a description");
        if ((op->surfaces & CDSH_OP_CLI) && !op->cli_print)
            return row_refusal(t, i, err, "a CLI row needs cli_print");
        if ((op->surfaces & CDSH_OP_TOOL) && prefix + strlen(op->name) > TOOL_NAME_MAX)
            return row_refusal(t, i, err, "the tool name is longer than 64 characters");
    }
    unsigned all = 0;
    for (size_t i = 0; i < t->n_ops; i++)
        all |= t->ops[i].surfaces;
    if ((all & CDSH_OP_RPC) && !cdsh_rpc_channel_valid(t->rpc_channel))
        return table_refusal(t, err, "RPC rows need a valid rpc_channel");
    if ((all & CDSH_OP_COMMAND) &&
        (!cdsh_commands_name_valid(t->command) || !t->command_description ||
         !*t->command_description || !t->command_usage || !*t->command_usage))
        return table_refusal(t, err,
                             "command rows need the table's command, command_description and "
                             "command_usage");
    if ((all & CDSH_OP_CLI) && (!t->cli_group || !*t->cli_group || !t->cli_usage))
        return table_refusal(t, err, "CLI rows need the table's cli_group and cli_usage");
    if (t->command_default) {
        bool found = false;
        for (size_t i = 0; i < t->n_ops && !found; i++)
            found = t->ops[i].name && strcmp(t->ops[i].name, t->command_default) == 0 &&
                    (t->ops[i].surfaces & CDSH_OP_COMMAND);
        if (!found)
            return table_refusal(t, err, "command_default names no command row");
    }
    return 0;
}

int cdsh_ops_new(const cdsh_ops_table *table, void *ud, void (*release)(void *ud), cdsh_ops **out,
                 cdsh_error *err)
{
    if (out)
        *out = NULL;
    int rc = out ? check_table(table, err)
                 : cdsh_error_set(err, CDSH_EINVAL, "INVALID_OPS_TABLE", "ops: missing argument");
    cdsh_ops *ops = rc == 0 ? calloc(1, sizeof *ops) : NULL;
    if (rc == 0 && !ops)
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    if (rc < 0)
        goto fail;
    atomic_init(&ops->refs, 1);
    pthread_mutex_init(&ops->mu, NULL);
    ops->table = table;
    size_t n = table->n_ops;
    ops->args = calloc(n, sizeof *ops->args);
    ops->results = calloc(n, sizeof *ops->results);
    ops->result_json = calloc(n, sizeof *ops->result_json);
    if (!ops->args || !ops->results || !ops->result_json)
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc =
            row_schema(table, i, "args", table->ops[i].args_schema, true, &ops->args[i], NULL, err);
        /* checked (compiled and dropped) here; compiled again at the row's
         * first call, so a process that never calls a row (cdsh tools list)
         * does not keep every compiled shape */
        if (rc == 0)
            rc = row_schema(table, i, "result", table->ops[i].result_schema, false,
                            &ops->result_json[i], NULL, err);
    }
    if (rc < 0)
        goto fail;
    ops->ud = ud;
    ops->release = release;
    *out = ops;
    return 0;
fail:
    cdsh_ops_free(ops); /* release not yet set: runs below exactly once */
    if (release)
        release(ud);
    return rc;
}

/* ---- running a row ----------------------------------------------------------- */

static size_t row_index(const cdsh_ops *ops, const cdsh_op *op)
{
    return (size_t)(op - ops->table->ops);
}

const cdsh_op *cdsh_ops_find(const cdsh_ops *ops, const char *name)
{
    if (!ops || !name)
        return NULL;
    for (size_t i = 0; i < ops->table->n_ops; i++)
        if (strcmp(ops->table->ops[i].name, name) == 0)
            return &ops->table->ops[i];
    return NULL;
}

static const cdsh_op *find_on(const cdsh_ops *ops, const char *name, unsigned surface)
{
    const cdsh_op *op = cdsh_ops_find(ops, name);
    return op && (op->surfaces & surface) ? op : NULL;
}

/* The handler through the table's invoke hook; *value is never left NULL on success. */
static int run(cdsh_ops *ops, const cdsh_op_call *call, json_t **value, cdsh_error *err)
{
    *value = NULL;
    int rc = ops->table->invoke ? ops->table->invoke(ops->ud, call, value, err)
                                : call->op->handler(ops->ud, call, value, err);
    if (rc < 0) {
        json_decref(*value);
        *value = NULL;
        if (!err->code[0] && !err->message[0])
            cdsh_error_set(err, rc, "internal", "%s failed", call->op->name);
        return rc;
    }
    if (!*value)
        *value = json_null();
    return 0;
}

/* Checks a successful value against the row's result shape. */
static int check_result(cdsh_ops *ops, const cdsh_op *op, const json_t *value, cdsh_error *err)
{
    json_t *violations = NULL;
    size_t i = row_index(ops, op);
    pthread_mutex_lock(&ops->mu);
    if (!ops->results[i])
        cdsh_schema_compile_at(ops->result_json[i], "result", &ops->results[i], NULL, NULL);
    cdsh_schema *shape = ops->results[i];
    pthread_mutex_unlock(&ops->mu);
    if (!shape)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    int rc = cdsh_schema_validate(shape, value, "value", &violations);
    if (rc == 0)
        return 0;
    char *why = cdsh_schema_violations_join_dup(violations);
    json_decref(violations);
    rc = cdsh_error_set(err, CDSH_EPROTO, "invalid-result",
                        "result of \"%s\" does not match its shape: %s", op->name,
                        why ? why : "out of memory");
    free(why);
    return rc;
}

/* run + check_result for the RPC and command surfaces (the registry checks tools). */
static int run_checked(cdsh_ops *ops, const cdsh_op_call *call, json_t **value, cdsh_error *err)
{
    int rc = run(ops, call, value, err);
    if (rc == 0 && (rc = check_result(ops, call->op, *value, err)) < 0) {
        json_decref(*value);
        *value = NULL;
    }
    return rc;
}

static int unknown(const cdsh_ops *ops, const char *name, cdsh_error *err)
{
    const cdsh_ops_table *t = ops->table;
    char msg[CDSH_ERROR_MESSAGE_MAX];
    if (t->unknown_format)
        snprintf(msg, sizeof msg, t->unknown_format, name);
    else
        snprintf(msg, sizeof msg, "no operation \"%.80s\" on %s", name,
                 t->rpc_channel ? t->rpc_channel : t->plugin);
    return cdsh_error_set(err, CDSH_ENOTFOUND, t->unknown_code ? t->unknown_code : "not-found",
                          "%s", msg);
}

int cdsh_ops_call(cdsh_ops *ops, const char *name, unsigned surface, const json_t *args,
                  const cdsh_scope *agent, json_t **value, cdsh_error *err)
{
    cdsh_error local = {0};
    if (!err)
        err = &local;
    if (!ops || !name || !value)
        return cdsh_error_set(err, CDSH_EINVAL, "bad-request", "call: missing argument");
    *value = NULL;
    if (args && !json_is_object(args))
        return cdsh_error_set(err, CDSH_EINVAL, CDSH_RPC_BAD_REQUEST, "payload must be an object");
    const cdsh_op *op = find_on(ops, name, surface);
    if (!op)
        return unknown(ops, name, err);
    json_t *empty = args ? NULL : json_object();
    cdsh_op_call call = {.op = op, .surface = surface, .args = args ? args : empty, .agent = agent};
    int rc = run_checked(ops, &call, value, err);
    json_decref(empty);
    return rc;
}

/* ---- CLI surface ------------------------------------------------------------------ */

int cdsh_ops_cli_run(cdsh_ops *ops, int argc, char **argv)
{
    const cdsh_ops_table *t = ops->table;
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        t->cli_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const cdsh_op *op = find_on(ops, argv[1], CDSH_OP_CLI);
    if (!op) {
        fprintf(stderr, "cdsh %s: unknown action '%s' (try `cdsh %s --help`)\n", t->cli_group,
                argv[1], t->cli_group);
        return 2;
    }
    json_t *args = NULL;
    int status = op->cli_parse ? op->cli_parse(ops->ud, argc - 1, argv + 1, &args) : -1;
    if (status >= 0)
        return status;
    if (!args && !(args = json_object())) {
        fprintf(stderr, "cdsh %s: out of memory\n", t->cli_group);
        return 1;
    }
    json_t *value = NULL;
    cdsh_error err = {0};
    cdsh_op_call call = {.op = op, .surface = CDSH_OP_CLI, .args = args};
    int rc = run_checked(ops, &call, &value, &err);
    status = op->cli_print(ops->ud, &call, rc, value, &err);
    json_decref(args);
    return status;
}

/* ---- the table as data ---------------------------------------------------------- */

static json_t *surface_names(unsigned s)
{
    json_t *a = json_array();
    if (s & CDSH_OP_TOOL)
        json_array_append_new(a, json_string("tool"));
    if (s & CDSH_OP_RPC)
        json_array_append_new(a, json_string("rpc"));
    if (s & CDSH_OP_COMMAND)
        json_array_append_new(a, json_string("command"));
    if (s & CDSH_OP_CLI)
        json_array_append_new(a, json_string("cli"));
    return a;
}

static char *surface_name_dup(const cdsh_ops *ops, const cdsh_op *op, unsigned surface)
{
    char *out = NULL;
    const char *prefix =
        surface == CDSH_OP_TOOL && ops->table->tool_prefix ? ops->table->tool_prefix : "";
    if (asprintf(&out, "%s%s", prefix, op->name) < 0)
        return NULL;
    return out;
}

json_t *cdsh_ops_names(const cdsh_ops *ops, unsigned surface)
{
    json_t *out = json_array();
    for (size_t i = 0; ops && out && i < ops->table->n_ops; i++) {
        if (!(ops->table->ops[i].surfaces & surface))
            continue;
        char *n = surface_name_dup(ops, &ops->table->ops[i], surface);
        json_array_append_new(out, json_string(n ? n : ""));
        free(n);
    }
    return out;
}

json_t *cdsh_ops_describe(const cdsh_ops *ops, unsigned surfaces)
{
    json_t *out = json_array();
    for (size_t i = 0; ops && out && i < ops->table->n_ops; i++) {
        const cdsh_op *op = &ops->table->ops[i];
        if (!(op->surfaces & surfaces))
            continue;
        json_t *row = json_pack("{s:s,s:o,s:O,s:O}", "name", op->name, "surfaces",
                                surface_names(op->surfaces), "args", ops->args[i], "result",
                                ops->result_json[i]);
        if (row && op->description)
            json_object_set_new(row, "description", json_string(op->description));
        if (row && (op->flags & CDSH_OP_READ))
            json_object_set_new(row, "read", json_true());
        json_array_append_new(out, row);
    }
    return out;
}

/* ---- tool surface -------------------------------------------------------------- */

typedef struct tool_ud {
    cdsh_ops *ops;
    const cdsh_op *op;
} tool_ud;

static void tool_ud_free(void *ud)
{
    tool_ud *t = ud;
    cdsh_ops_free(t->ops);
    free(t);
}

static int tool_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    tool_ud *t = ud;
    cdsh_error err = {0};
    cdsh_op_call call = {.op = t->op,
                         .surface = CDSH_OP_TOOL,
                         .args = exec->args,
                         .agent = exec->agent,
                         .cancel = exec->cancel,
                         .exec = exec};
    int rc = run(t->ops, &call, value, &err);
    if (rc == 0)
        return 0;
    const cdsh_ops_table *tb = t->ops->table;
    char dflt[96];
    snprintf(dflt, sizeof dflt, "%s tool failed", tb->plugin);
    return cdsh_dispatch_fail(exec, tb->tool_error ? tb->tool_error : "OperationError",
                              err.code[0] ? err.code : "internal", "%s",
                              err.message[0] ? err.message : dflt);
}

/* The row's presenter, else the table's (tools.h §1). */
static json_t *tool_present_result(void *arg, const json_t *args, const json_t *result)
{
    tool_ud *ud = arg;
    if (ud->op->present_result)
        return ud->op->present_result(args, result);
    return ud->ops->table->present_result ? ud->ops->table->present_result(args, result) : NULL;
}

static int register_tool(cdsh_plugin_ctx *ctx, cdsh_ops *ops, size_t i, cdsh_error *err)
{
    const cdsh_op *op = &ops->table->ops[i];
    char *name = surface_name_dup(ops, op, CDSH_OP_TOOL);
    tool_ud *ud = calloc(1, sizeof *ud);
    if (!name || !ud) {
        free(name);
        free(ud);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    ud->ops = cdsh_ops_ref(ops);
    ud->op = op;
    cdsh_tool_def def = {
        .name = name,
        .description = op->description,
        .parameters = ops->args[i],
        .output_schema = ops->result_json[i],
        .execute = tool_body,
        .render = ops->table->render,
        .present_result =
            op->present_result || ops->table->present_result ? tool_present_result : NULL,
        .is_concurrency_safe = (op->flags & CDSH_OP_READ) ? cdsh_tools_always_safe : NULL,
        .ud = ud,
        .free_ud = tool_ud_free,
    };
    int rc = cdsh_ctx_register_tool(ctx, &def, err); /* frees ud on failure */
    free(name);
    return rc;
}

/* ---- RPC surface ---------------------------------------------------------------- */

static json_t *default_rpc_result(const cdsh_ops *ops, int rc, json_t *value, const cdsh_error *err)
{
    if (rc == 0)
        return cdsh_rpc_ok_new(value);
    char dflt[96];
    snprintf(dflt, sizeof dflt, "%s method failed", ops->table->plugin);
    return cdsh_rpc_error_new(err->code[0] ? err->code : CDSH_RPC_INTERNAL,
                              err->message[0] ? err->message : dflt, NULL);
}

json_t *cdsh_ops_rpc_envelope(cdsh_ops *ops, const char *endpoint, const json_t *payload,
                              cdsh_cancel *cancel)
{
    const cdsh_ops_table *t = ops->table;
    if (endpoint && strcmp(endpoint, OPS_ENDPOINT) == 0)
        return cdsh_rpc_ok_new(cdsh_ops_describe(ops, CDSH_OP_RPC));
    json_t *result = NULL;
    if (t->rpc_admit && t->rpc_admit(ops->ud, endpoint, payload, &result) != 0)
        return result ? result : cdsh_rpc_error_new(CDSH_RPC_BAD_REQUEST, "request refused", NULL);
    if (json_is_null(payload))
        payload = NULL;
    if (payload && !json_is_object(payload))
        return cdsh_rpc_error_new(CDSH_RPC_BAD_REQUEST, "payload must be an object", NULL);
    cdsh_error err = {0};
    const cdsh_op *op = find_on(ops, endpoint, CDSH_OP_RPC);
    if (!op) {
        unknown(ops, endpoint ? endpoint : "", &err);
        return cdsh_rpc_error_new(err.code, err.message, NULL);
    }
    json_t *empty = payload ? NULL : json_object();
    cdsh_op_call call = {
        .op = op, .surface = CDSH_OP_RPC, .args = payload ? payload : empty, .cancel = cancel};
    json_t *value = NULL;
    int rc = run_checked(ops, &call, &value, &err);
    json_decref(empty);
    if (t->rpc_result)
        return t->rpc_result(ops->ud, &call, rc, value, &err);
    return default_rpc_result(ops, rc, value, &err);
}

static int rpc_handler(void *arg, const char *endpoint, const json_t *payload, cdsh_cancel *cancel,
                       json_t **result, cdsh_error *err)
{
    (void)err;
    *result = cdsh_ops_rpc_envelope(arg, endpoint, payload, cancel);
    return *result ? 0 : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
}

static void ops_release(void *arg)
{
    cdsh_ops_free(arg);
}

/* ---- command surface -------------------------------------------------------------- */

static int set_text(cdsh_command_result *out, cdsh_command_kind kind, const char *text,
                    cdsh_error *err)
{
    if (cdsh_command_result_set(out, kind, text) != 0)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    return 0;
}

static int default_command_result(int rc, json_t *value, const cdsh_error *call_err,
                                  cdsh_command_result *out, cdsh_error *err)
{
    if (rc < 0)
        return set_text(out, CDSH_COMMAND_ERROR, call_err->message, err);
    char *text = cdsh_json_dump_compact_dup(value);
    json_decref(value);
    rc = text ? set_text(out, CDSH_COMMAND_SUCCESS, text, err)
              : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    free(text);
    return rc;
}

#define SUB_DELIMS " \t\r\n"

/* "/cmd <sub> <rest>": the first word picks the row; rest is trimmed. */
static int command_handler(void *arg, const cdsh_command_invocation *inv, cdsh_command_result *out,
                           cdsh_error *err)
{
    cdsh_ops *ops = arg;
    const cdsh_ops_table *t = ops->table;
    const char *line = inv->raw_input ? inv->raw_input : "";
    line += strspn(line, SUB_DELIMS);
    size_t sub_len = strcspn(line, SUB_DELIMS);
    char *sub = strndup(line, sub_len);
    char *rest = NULL;
    if (line[sub_len]) {
        const char *r = line + sub_len + 1;
        rest = strdup(r + strspn(r, " \t"));
        size_t n = rest ? strlen(rest) : 0;
        while (n && isspace((unsigned char)rest[n - 1]))
            rest[--n] = 0;
    }
    int rc = 0;
    json_t *args = NULL, *value = NULL;
    const cdsh_op *op = NULL;
    cdsh_error call_err = {0};
    if (!sub || (line[sub_len] && !rest)) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto done;
    }
    op = find_on(ops, *sub ? sub : (t->command_default ? t->command_default : ""), CDSH_OP_COMMAND);
    if (!op) {
        rc = set_text(out, CDSH_COMMAND_ERROR, t->command_usage, err);
        goto done;
    }
    int crc = op->parse ? op->parse(ops->ud, *sub ? rest : NULL, &args, &call_err) : 0;
    if (crc < 0) {
        rc = set_text(out, CDSH_COMMAND_ERROR,
                      call_err.message[0] ? call_err.message : t->command_usage, err);
        goto done;
    }
    if (!args)
        args = json_object();
    cdsh_op_call call = {.op = op,
                         .surface = CDSH_OP_COMMAND,
                         .args = args,
                         .agent = inv->agent,
                         .cancel = inv->cancel};
    crc = run_checked(ops, &call, &value, &call_err);
    if (t->command_result)
        rc = t->command_result(ops->ud, &call, crc, value, &call_err, out, err);
    else
        rc = default_command_result(crc, value, &call_err, out, err);
done:
    json_decref(args);
    free(sub);
    free(rest);
    return rc;
}

/* ---- registration -------------------------------------------------------------------- */

int cdsh_ops_register(cdsh_plugin_ctx *ctx, cdsh_ops *ops, cdsh_error *err)
{
    return cdsh_ops_register_surfaces(ctx, ops, CDSH_OP_SURFACES, err);
}

int cdsh_ops_register_surfaces(cdsh_plugin_ctx *ctx, cdsh_ops *ops, unsigned surfaces,
                               cdsh_error *err)
{
    if (!ctx || !ops)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_OPS_TABLE", "ops: missing argument");
    const cdsh_ops_table *t = ops->table;
    unsigned all = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < t->n_ops; i++) {
        all |= t->ops[i].surfaces & surfaces;
        if (t->ops[i].surfaces & surfaces & CDSH_OP_TOOL)
            rc = register_tool(ctx, ops, i, err);
    }
    if (rc == 0 && (all & CDSH_OP_RPC)) {
        /* the channel's reference: recorded first, so it drops after the channel is gone */
        rc = cdsh_ctx_adopt(ctx, (cdsh_disposer_t){ops_release, cdsh_ops_ref(ops)}, err);
        if (rc == 0)
            rc = cdsh_ctx_rpc_handle(ctx, t->rpc_channel, rpc_handler, ops, err);
    }
    if (rc == 0 && (all & CDSH_OP_COMMAND)) {
        cdsh_command_def def = {
            .name = t->command,
            .description = t->command_description,
            .input_hint = t->command_hint,
            .handler = command_handler,
            .arg = ops,
        };
        rc = cdsh_ctx_adopt(ctx, (cdsh_disposer_t){ops_release, cdsh_ops_ref(ops)}, err);
        if (rc == 0)
            rc = cdsh_ctx_register_command(ctx, &def, err);
    }
    return rc;
}

int cdsh_ops_register_table(cdsh_plugin_ctx *ctx, const cdsh_ops_table *table, void *ud,
                            void (*release)(void *ud), cdsh_error *err)
{
    cdsh_ops *ops = NULL;
    int rc = cdsh_ops_new(table, ud, release, &ops, err);
    if (rc == 0)
        rc = cdsh_ops_register(ctx, ops, err);
    cdsh_ops_free(ops);
    return rc;
}
