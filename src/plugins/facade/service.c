/* service.c — the capability facade's logic: validating declarations (the 16
 * checks of capability-facade.md §2), registering one tool per operation in
 * the caller's layer, running an operation's steps as nested dispatches and
 * shaping the result value (§4-§5), the listing and disposal (§6).
 * Not here: the plugin descriptor and profile declarations (plugin.c). */
#include "plugins/facade/service.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/strbuf.h"
#include "base/utf8.h"
#include "host/dispatch.h"
#include "host/host.h"

#define ID_PATTERN "/^[a-z][a-z0-9_]*$/"

typedef struct entry entry;

struct cdsh_facade {
    pthread_mutex_t lock;
    entry *head, *tail; /* listed capabilities, registration order */
    json_t *problems;   /* {"<index>": problem} for profile declarations */
};

/* One declared capability. Lives until the declaring context disposes it
 * (the adopted disposer frees it); the disposer handed to the declarer only
 * withdraws it, so running that one late or twice is harmless. */
struct entry {
    cdsh_facade *facade;
    char *id;
    char *description;
    json_t *tools; /* names, operation order */
    cdsh_disposer_t *undo;
    size_t nundo;
    bool live;   /* registered and listed */
    bool listed; /* linked into facade's list */
    entry *prev, *next;
};

/* What an operation tool's body needs; freed by the registry (free_ud). */
typedef struct op_ud {
    char *id;
    char *op;
    json_t *steps; /* [{tool, from?}] */
} op_ud;

cdsh_facade *cdsh_facade_new(void)
{
    cdsh_facade *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->problems = json_object();
    if (!f->problems) {
        free(f);
        return NULL;
    }
    pthread_mutex_init(&f->lock, NULL);
    return f;
}

void cdsh_facade_free(cdsh_facade *facade)
{
    if (!facade)
        return;
    /* Declarers unload before their provider, so the list is empty here; an
     * entry still linked belongs to a context that will free it. */
    pthread_mutex_lock(&facade->lock);
    for (entry *e = facade->head; e; e = e->next)
        e->facade = NULL, e->listed = false;
    pthread_mutex_unlock(&facade->lock);
    pthread_mutex_destroy(&facade->lock);
    json_decref(facade->problems);
    free(facade);
}

/* ---- validation ------------------------------------------------------------ */

static bool match_id(const char *s)
{
    if (!s || !(*s >= 'a' && *s <= 'z'))
        return false;
    for (s++; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

static bool match_tool(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 1 || n > 64)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '-'))
            return false;
    return true;
}

static bool blank(const char *s)
{
    for (; s && *s; s++)
        if (!strchr(" \t\r\n\f\v", *s))
            return false;
    return true;
}

/* String(x) of the original, for messages. */
static char *show(const json_t *v)
{
    if (!v)
        return strdup("undefined");
    if (json_is_string(v))
        return strdup(json_string_value(v));
    if (json_is_array(v) || json_is_object(v))
        return strdup(json_is_array(v) ? "[array]" : "[object Object]");
    return cdsh_json_dump_compact_dup(v);
}

static int invalid(cdsh_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int invalid(cdsh_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = cdsh_error_setv(err, CDSH_EINVAL, "INVALID_CAPABILITY", fmt, ap);
    va_end(ap);
    return rc;
}

static int validate(cdsh_tools *tools, const cdsh_scope *agent, const json_t *cap, cdsh_error *err)
{
    if (!json_is_object(cap))
        return invalid(err, "capability must be an object");
    const json_t *jid = json_object_get(cap, "id");
    const char *id = json_string_value(jid);
    if (!match_id(id)) {
        char *s = show(jid);
        int rc = invalid(err, "capability id \"%s\" must match %s", s ? s : "", ID_PATTERN);
        free(s);
        return rc;
    }
    const char *desc = json_string_value(json_object_get(cap, "description"));
    if (!desc || blank(desc))
        return invalid(err,
                       "capability \"%s\" needs a non-empty description: it is the only text "
                       "the model reads before choosing",
                       id);
    const json_t *ops = json_object_get(cap, "operations");
    if (!json_is_array(ops) || json_array_size(ops) == 0)
        return invalid(err, "capability \"%s\" needs a non-empty operations array", id);

    size_t i;
    const json_t *op;
    json_array_foreach(ops, i, op) {
        if (!json_is_object(op))
            return invalid(err, "capability \"%s\": every operation must be an object", id);
        const json_t *jname = json_object_get(op, "name");
        const char *name = json_string_value(jname);
        if (!match_id(name)) {
            char *s = show(jname);
            int rc = invalid(err, "capability \"%s\": operation name \"%s\" must match %s", id,
                             s ? s : "", ID_PATTERN);
            free(s);
            return rc;
        }
        char tool_name[256];
        snprintf(tool_name, sizeof tool_name, "%s_%s", id, name);
        if (strlen(id) + 1 + strlen(name) >= sizeof tool_name || !match_tool(tool_name))
            return invalid(err, "capability \"%s\": generated tool name \"%s_%s\" is invalid", id,
                           id, name);
        for (size_t j = 0; j < i; j++)
            if (strcmp(json_string_value(json_object_get(json_array_get(ops, j), "name")), name) ==
                0)
                return invalid(err, "capability \"%s\": duplicate operation tool \"%s\"", id,
                               tool_name);
        const char *odesc = json_string_value(json_object_get(op, "description"));
        if (!odesc || blank(odesc))
            return invalid(err, "capability \"%s.%s\" needs a non-empty description", id, name);
        const json_t *params = json_object_get(op, "parameters");
        if (params && !json_is_object(params))
            return invalid(err, "capability \"%s.%s\": parameters must be a parameter-spec object",
                           id, name);
        const json_t *steps = json_object_get(op, "steps");
        if (!json_is_array(steps) || json_array_size(steps) == 0)
            return invalid(err, "capability \"%s.%s\" needs a non-empty steps array", id, name);
        size_t k;
        const json_t *step;
        json_array_foreach(steps, k, step) {
            if (!json_is_object(step))
                return invalid(err, "capability \"%s.%s\" step %zu must be an object", id, name,
                               k + 1);
            const json_t *jtool = json_object_get(step, "tool");
            const char *tool = json_string_value(jtool);
            if (!match_tool(tool)) {
                char *s = show(jtool);
                int rc = invalid(err,
                                 "capability \"%s.%s\" step %zu: tool \"%s\" is not a valid tool "
                                 "name",
                                 id, name, k + 1, s ? s : "");
                free(s);
                return rc;
            }
            const json_t *jfrom = json_object_get(step, "from");
            if (jfrom && !match_id(json_string_value(jfrom))) {
                char *s = show(jfrom);
                int rc =
                    invalid(err, "capability \"%s.%s\" step %zu: from \"%s\" must be a field name",
                            id, name, k + 1, s ? s : "");
                free(s);
                return rc;
            }
            /* Fail loud now: a tool the view cannot see can never be dispatched. */
            if (!cdsh_tools_visible(tools, agent, tool))
                return cdsh_error_set(err, CDSH_ENOTFOUND, "UNKNOWN_STEP_TOOL",
                                      "capability \"%s.%s\" step %zu: tool \"%s\" is not "
                                      "registered (or is restricted away). Register the tool "
                                      "first, then the capability.",
                                      id, name, k + 1, tool);
        }
    }
    return 0;
}

/* ---- parameters ------------------------------------------------------------ */

static json_t *compile_prop(const char *name, const json_t *spec, cdsh_error *err);

static json_t *compile_props(const json_t *props, cdsh_error *err)
{
    json_t *schema = json_pack("{s:s, s:{}}", "type", "object", "properties");
    json_t *required = json_array();
    if (!schema || !required)
        goto fail;
    const char *key;
    json_t *spec;
    json_object_foreach((json_t *)props, key, spec) {
        json_t *p = compile_prop(key, spec, err);
        if (!p)
            goto fail;
        json_object_set_new(json_object_get(schema, "properties"), key, p);
        if (json_is_true(json_object_get(spec, "required")))
            json_array_append_new(required, json_string(key));
    }
    if (json_array_size(required))
        json_object_set(schema, "required", required);
    json_decref(required);
    return schema;
fail:
    json_decref(schema);
    json_decref(required);
    return NULL;
}

static json_t *compile_prop(const char *name, const json_t *spec, cdsh_error *err)
{
    if (!json_is_object(spec)) {
        cdsh_error_set(err, CDSH_EUNSUPPORTED, "UNSUPPORTED_SCHEMA",
                       "parameter \"%s\" must be a property spec object", name);
        return NULL;
    }
    json_t *out = json_deep_copy(spec);
    if (!out)
        return NULL;
    json_object_del(out, "required");
    if (json_is_string(json_object_get(out, "type")) &&
        strcmp(json_string_value(json_object_get(out, "type")), "json") == 0)
        json_object_del(out, "type"); /* "json" = unconstrained */
    const json_t *props = json_object_get(spec, "properties");
    if (json_is_object(props)) {
        json_t *nested = compile_props(props, err);
        if (!nested) {
            json_decref(out);
            return NULL;
        }
        json_object_set(out, "properties", json_object_get(nested, "properties"));
        if (json_object_get(nested, "required"))
            json_object_set(out, "required", json_object_get(nested, "required"));
        json_decref(nested);
    }
    const json_t *items = json_object_get(spec, "items");
    if (json_is_object(items)) {
        json_t *it = compile_prop(name, items, err);
        if (!it) {
            json_decref(out);
            return NULL;
        }
        json_object_set_new(out, "items", it);
    }
    return out;
}

/* Compiles the defineTool parameter DSL ({field: {type, description?, ...,
 * required?: true}}) into an open object JSON Schema. Owned; NULL with err
 * (UNSUPPORTED_SCHEMA) when a property spec is not an object. */
static json_t *cdsh_facade_params_compile(const json_t *spec, cdsh_error *err)
{
    if (spec && !json_is_object(spec)) {
        cdsh_error_set(err, CDSH_EUNSUPPORTED, "UNSUPPORTED_SCHEMA",
                       "parameters must be a parameter-spec object");
        return NULL;
    }
    json_t *empty = json_object();
    json_t *schema = compile_props(spec ? spec : empty, err);
    json_decref(empty);
    return schema;
}

/* ---- description ------------------------------------------------------------ */

/* The generated description of an operation tool (owned), as registered:
 * `<op desc>\n\n[capability <id>] <cap desc>\nSteps (run in this order by the
 * harness, one call): 1. a → 2. b`. */
static char *cdsh_facade_describe_dup(const char *id, const char *cap_description,
                                      const char *op_description, const json_t *steps)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    cdsh_strbuf_appendf(&sb,
                        "%s\n\n[capability %s] %s\nSteps (run in this order by the harness, one "
                        "call): ",
                        op_description, id, cap_description);
    size_t k;
    const json_t *step;
    json_array_foreach(steps, k, step) {
        cdsh_strbuf_appendf(&sb, "%s%zu. %s", k ? " \u2192 " : "", k + 1,
                            json_string_value(json_object_get(step, "tool")));
    }
    return cdsh_strbuf_take(&sb, NULL);
}

/* ---- execution ------------------------------------------------------------- */

/* Cuts text to max code points, appending "…[+truncated]". Owned. */
static char *clip(const char *text, size_t max)
{
    size_t n = strlen(text);
    if (cdsh_utf8_count(text, n) <= max)
        return strdup(text);
    size_t off = 0;
    for (size_t c = 0; c < max && off < n; c++) {
        uint32_t cp;
        size_t len = 1;
        if (cdsh_utf8_decode(text + off, n - off, &cp, &len) != 0 || len == 0)
            len = 1;
        off += len;
    }
    char *out = malloc(off + sizeof "\u2026[+truncated]");
    if (!out)
        return NULL;
    memcpy(out, text, off);
    strcpy(out + off, "\u2026[+truncated]");
    return out;
}

static char *step_text(const cdsh_toolresult *res)
{
    char *joined = cdsh_toolresult_text_dup(res);
    bool has_text = false;
    size_t i;
    const json_t *b;
    json_array_foreach(res->content, i, b) {
        if (json_is_string(json_object_get(b, "text")) &&
            strcmp(json_string_value(json_object_get(b, "type")), "text") == 0)
            has_text = true;
    }
    if (!has_text) {
        free(joined);
        if (!res->value)
            return strdup("(no value)");
        joined = cdsh_json_dump_compact_dup(res->value);
    }
    if (!joined)
        return NULL;
    char *c = clip(joined, CDSH_FACADE_STEP_TEXT_BUDGET);
    free(joined);
    return c;
}

/* Step args per `from` (§4): NULL plus *error (owned) when the mapping fails. */
static const json_t *step_args(const json_t *step, const json_t *args, char **error)
{
    const char *tool = json_string_value(json_object_get(step, "tool"));
    const char *from = json_string_value(json_object_get(step, "from"));
    if (!from)
        return args;
    char buf[512];
    const json_t *v = json_object_get(args, from);
    if (!json_is_object(args))
        snprintf(buf, sizeof buf,
                 "operation input is not an object; step \"%s\" needs field \"%s\"", tool, from);
    else if (!v)
        snprintf(buf, sizeof buf, "operation input has no field \"%s\" required by step \"%s\"",
                 from, tool);
    else if (!json_is_object(v))
        snprintf(buf, sizeof buf, "operation input field \"%s\" must be an object for step \"%s\"",
                 from, tool);
    else
        return v;
    *error = strdup(buf);
    return NULL;
}

static int op_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    op_ud *o = ud;
    json_t *results = json_array();
    json_t *failed = NULL;
    size_t k;
    const json_t *step;
    json_array_foreach(o->steps, k, step) {
        const char *tool = json_string_value(json_object_get(step, "tool"));
        char *ferr = NULL;
        const json_t *args = step_args(step, exec->args, &ferr);
        if (!args) {
            failed = json_pack("{s:s, s:b, s:s}", "tool", tool, "ok", 0, "error",
                               ferr ? ferr : "out of memory");
            free(ferr);
            break;
        }
        char *call_id = NULL;
        cdsh_toolresult *res = NULL;
        if (asprintf(&call_id, "%s:%s.%s:%zu", exec->call_id, o->id, o->op, k + 1) >= 0)
            res = cdsh_dispatch_nested(exec, call_id, tool, args);
        free(call_id);
        if (!res) {
            failed = json_pack("{s:s, s:b, s:s}", "tool", tool, "ok", 0, "error", "out of memory");
            break;
        }
        if (res->is_error) {
            char *msg =
                clip(res->error_message ? res->error_message : "", CDSH_FACADE_ERROR_TEXT_BUDGET);
            failed = json_pack("{s:s, s:b, s:s}", "tool", tool, "ok", 0, "error", msg ? msg : "");
            if (res->error_code)
                json_object_set_new(failed, "code", json_string(res->error_code));
            free(msg);
            cdsh_toolresult_free(res);
            break;
        }
        char *text = step_text(res);
        /* a copy: the step's frozen value stays the step's */
        json_t *copy = res->value ? json_deep_copy(res->value) : json_null();
        json_array_append_new(results, json_pack("{s:s, s:b, s:s, s:o}", "tool", tool, "ok", 1,
                                                 "text", text ? text : "", "value", copy));
        free(text);
        cdsh_toolresult_free(res);
    }
    json_t *v = json_pack("{s:b, s:s, s:s, s:O}", "ok", failed == NULL, "capability", o->id,
                          "operation", o->op, "steps", results);
    if (failed) {
        json_array_append(json_object_get(v, "steps"), failed);
        json_object_set(v, "failedStep", json_object_get(failed, "tool"));
        json_object_set(v, "error", json_object_get(failed, "error"));
        json_decref(failed);
    }
    json_decref(results);
    *value = v;
    return v ? 0 : CDSH_ENOMEM;
}

static json_t *op_render(void *ud, const json_t *args, const json_t *value, cdsh_error *err)
{
    (void)ud, (void)args, (void)err;
    const json_t *text = json_object_get(value, "text");
    if (json_is_string(text))
        return cdsh_toolresult_text_content(json_string_value(text));
    char *s = cdsh_json_dump_compact_dup(value);
    json_t *c = cdsh_toolresult_text_content(s ? s : "null");
    free(s);
    return c;
}

static void op_free(void *ud)
{
    op_ud *o = ud;
    if (!o)
        return;
    free(o->id);
    free(o->op);
    json_decref(o->steps);
    free(o);
}

/* ---- entries ----------------------------------------------------------------- */

static void unlink_entry(entry *e)
{
    cdsh_facade *f = e->facade;
    if (!e->listed)
        return;
    if (e->prev)
        e->prev->next = e->next;
    else
        f->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        f->tail = e->prev;
    e->prev = e->next = NULL;
    e->listed = false;
}

/* The declarer's disposer: withdraws the capability once. As in the
 * original, the tools go first and the id is released last, so the id cannot
 * be declared again while its old tools are still registered. */
static void entry_withdraw(void *arg)
{
    entry *e = arg;
    cdsh_facade *f = e->facade;
    if (f)
        pthread_mutex_lock(&f->lock);
    bool was_live = e->live;
    e->live = false; /* hidden from list() from now on */
    if (f)
        pthread_mutex_unlock(&f->lock);
    if (!was_live)
        return;
    for (size_t i = e->nundo; i-- > 0;)
        cdsh_disposer_run(&e->undo[i]);
    if (f) {
        pthread_mutex_lock(&f->lock);
        unlink_entry(e);
        pthread_mutex_unlock(&f->lock);
    }
}

static void entry_free(entry *e)
{
    free(e->id);
    free(e->description);
    json_decref(e->tools);
    free(e->undo);
    free(e);
}

/* Adopted by the declaring context: withdraw (if still live) and free. */
static void entry_dispose(void *arg)
{
    entry_withdraw(arg);
    entry_free(arg);
}

static op_ud *op_ud_new(const char *id, const json_t *op)
{
    op_ud *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->id = strdup(id);
    o->op = strdup(json_string_value(json_object_get(op, "name")));
    o->steps = json_array();
    size_t k;
    const json_t *s;
    json_array_foreach(json_object_get(op, "steps"), k, s) {
        json_t *copy = json_pack("{s:s}", "tool", json_string_value(json_object_get(s, "tool")));
        if (json_object_get(s, "from"))
            json_object_set(copy, "from", json_object_get(s, "from"));
        json_array_append_new(o->steps, copy);
    }
    if (!o->id || !o->op || !o->steps) {
        op_free(o);
        return NULL;
    }
    return o;
}

/* Registers one operation tool into e->undo. */
static int register_op(entry *e, cdsh_tools *tools, cdsh_scope *layer, const char *cap_desc,
                       const json_t *op, cdsh_error *err)
{
    const char *name = json_string_value(json_object_get(op, "name"));
    char tool_name[70];
    snprintf(tool_name, sizeof tool_name, "%s_%s", e->id, name);
    json_t *params = cdsh_facade_params_compile(json_object_get(op, "parameters"), err);
    json_t *output = json_pack("{s:s, s:b}", "type", "object", "additionalProperties", 1);
    char *desc = cdsh_facade_describe_dup(e->id, cap_desc,
                                          json_string_value(json_object_get(op, "description")),
                                          json_object_get(op, "steps"));
    op_ud *o = op_ud_new(e->id, op);
    int rc = CDSH_ENOMEM;
    if (!params) {
        rc = err && err->rc ? err->rc : CDSH_ENOMEM;
        goto done;
    }
    if (!output || !desc || !o) {
        cdsh_error_set(err, CDSH_ENOMEM, "ENOMEM", "out of memory");
        goto done;
    }
    cdsh_tool_def def = {
        .name = tool_name,
        .description = desc,
        .parameters = params,
        .output_schema = output,
        .execute = op_body,
        .render = op_render,
        .ud = o,
        .free_ud = op_free,
    };
    rc = cdsh_tools_register(tools, layer, &def, &e->undo[e->nundo], err);
    if (rc == 0) {
        e->nundo++;
        o = NULL; /* the registry owns it now */
    }
done:
    op_free(o);
    json_decref(params);
    json_decref(output);
    free(desc);
    return rc;
}

int cdsh_facade_register(cdsh_facade *facade, cdsh_plugin_ctx *caller, const json_t *capability,
                         const cdsh_facade_opts *opts, cdsh_disposer_t *out, cdsh_error *err)
{
    if (out)
        *out = (cdsh_disposer_t){0};
    if (!facade || !caller)
        return cdsh_error_set(err, CDSH_EINVAL, "EINVAL", "facade and caller are required");
    cdsh_tools *tools = cdsh_host_tools(cdsh_ctx_host(caller));
    int rc = validate(tools, opts ? opts->agent : NULL, capability, err);
    if (rc)
        return rc;
    const char *id = json_string_value(json_object_get(capability, "id"));
    const json_t *ops = json_object_get(capability, "operations");

    entry *e = calloc(1, sizeof *e);
    if (!e)
        return cdsh_error_set(err, CDSH_ENOMEM, "ENOMEM", "out of memory");
    e->facade = facade;
    e->id = strdup(id);
    e->description = strdup(json_string_value(json_object_get(capability, "description")));
    e->tools = json_array();
    e->undo = calloc(json_array_size(ops), sizeof *e->undo);
    if (!e->id || !e->description || !e->tools || !e->undo) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "ENOMEM", "out of memory");
        goto fail;
    }
    /* Check 16 and the reservation of the id happen under one lock, so two
     * concurrent declarations of one id cannot both succeed. */
    pthread_mutex_lock(&facade->lock);
    bool exists = false;
    for (entry *x = facade->head; x; x = x->next)
        exists = exists || strcmp(x->id, id) == 0;
    if (!exists) {
        e->prev = facade->tail;
        if (facade->tail)
            facade->tail->next = e;
        else
            facade->head = e;
        facade->tail = e;
        e->listed = true;
    }
    pthread_mutex_unlock(&facade->lock);
    if (exists) {
        rc = cdsh_error_set(err, CDSH_EEXIST, "CAPABILITY_EXISTS",
                            "capability \"%s\" is already registered", id);
        goto fail;
    }

    size_t i;
    const json_t *op;
    json_array_foreach(ops, i, op) {
        rc = register_op(e, tools, cdsh_ctx_scope(caller), e->description, op, err);
        if (rc)
            goto fail_listed;
        char name[70];
        snprintf(name, sizeof name, "%s_%s", id, json_string_value(json_object_get(op, "name")));
        json_array_append_new(e->tools, json_string(name));
    }
    e->live = true;
    /* The declaring context owns the capability: its unload withdraws and frees it. */
    rc = cdsh_ctx_adopt(caller, (cdsh_disposer_t){entry_dispose, e}, err);
    if (rc)
        return rc; /* an inactive context ran the disposer already */
    if (out)
        *out = (cdsh_disposer_t){entry_withdraw, e};
    return 0;

fail_listed:
    pthread_mutex_lock(&facade->lock);
    unlink_entry(e);
    pthread_mutex_unlock(&facade->lock);
    for (size_t k = e->nundo; k-- > 0;)
        cdsh_disposer_run(&e->undo[k]);
fail:
    entry_free(e);
    return rc;
}

json_t *cdsh_facade_list(cdsh_facade *facade)
{
    json_t *out = json_array();
    if (!facade || !out)
        return out;
    pthread_mutex_lock(&facade->lock);
    for (entry *e = facade->head; e; e = e->next)
        if (e->live)
            json_array_append_new(out, json_pack("{s:s, s:s, s:O}", "id", e->id, "description",
                                                 e->description, "tools", e->tools));
    pthread_mutex_unlock(&facade->lock);
    return out;
}

size_t cdsh_facade_count(cdsh_facade *facade)
{
    size_t n = 0;
    if (!facade)
        return 0;
    pthread_mutex_lock(&facade->lock);
    for (entry *e = facade->head; e; e = e->next)
        n += e->live;
    pthread_mutex_unlock(&facade->lock);
    return n;
}

json_t *cdsh_facade_problems(cdsh_facade *facade)
{
    json_t *out = json_array();
    if (!facade || !out)
        return out;
    pthread_mutex_lock(&facade->lock);
    const char *key;
    json_t *p;
    json_object_foreach(facade->problems, key, p) {
        json_array_append(out, p);
    }
    pthread_mutex_unlock(&facade->lock);
    return out;
}

void cdsh_facade_set_problem(cdsh_facade *facade, size_t index, const json_t *problem)
{
    if (!facade)
        return;
    char key[32];
    snprintf(key, sizeof key, "%zu", index);
    pthread_mutex_lock(&facade->lock);
    if (problem)
        json_object_set_new(facade->problems, key, json_deep_copy(problem));
    else
        json_object_del(facade->problems, key);
    pthread_mutex_unlock(&facade->lock);
}
