/* schema.c — compiles the enforced JSON Schema subset (schema.h) into an
 * immutable node tree and validates values against it with DSH's messages.
 * It does not parse JSON text or decide what is lossless; see json.h. */
#include "base/schema.h"

#include "base/json.h"
#include "base/strbuf.h"
#include "base/utf8.h"

#define PCRE2_CODE_UNIT_WIDTH 8

#include <math.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 256                /* schema nesting; validation recursion is bounded by it */
#define PATTERN_MATCH_LIMIT 1000000u /* PCRE2 backtracking budget per match */

/* A zero-initialised cdsh_strbuf has data == NULL until its first append. */
static const char *sb_str(const cdsh_strbuf *b)
{
    return b->data ? b->data : "";
}

/* ---- JavaScript-compatible printing (JSON.stringify of scalars) ---------- */

/* Number::toString as JavaScript prints a double (-0 prints as 0). */
static void js_put_double(cdsh_strbuf *b, double d)
{
    char tmp[CDSH_JSON_DOUBLE_MAX];
    size_t n = cdsh_json_format_double(d, false, tmp);
    cdsh_strbuf_append(b, tmp, n);
}

static void js_put_number(cdsh_strbuf *b, const json_t *v)
{
    if (json_is_integer(v))
        cdsh_strbuf_appendf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else
        js_put_double(b, json_real_value(v));
}

/* JSON.stringify of a scalar or an array of scalars (all enum/const can be). */
static void js_put_json(cdsh_strbuf *b, const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        cdsh_strbuf_append_json_string(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
    case JSON_REAL: js_put_number(b, v); break;
    case JSON_TRUE: cdsh_strbuf_append_str(b, "true"); break;
    case JSON_FALSE: cdsh_strbuf_append_str(b, "false"); break;
    case JSON_ARRAY:
        cdsh_strbuf_append_str(b, "[");
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                cdsh_strbuf_append_str(b, ",");
            js_put_json(b, json_array_get(v, i));
        }
        cdsh_strbuf_append_str(b, "]");
        break;
    default: cdsh_strbuf_append_str(b, "null"); break;
    }
}

/* ---- compiled tree -------------------------------------------------------- */

enum kind { K_ANY, K_ONEOF, K_OBJECT, K_ARRAY, K_STRING, K_NUMBER, K_INTEGER, K_BOOLEAN, K_NULL };

enum {
    HAS_MINIMUM = 1u << 0,
    HAS_MAXIMUM = 1u << 1,
    HAS_XMINIMUM = 1u << 2,
    HAS_XMAXIMUM = 1u << 3,
    HAS_MINLENGTH = 1u << 4,
    HAS_MAXLENGTH = 1u << 5,
    HAS_MINITEMS = 1u << 6,
    HAS_MAXITEMS = 1u << 7,
};

typedef struct node node;

typedef struct prop {
    const char *key; /* borrowed from the schema copy */
    node *schema;
} prop;

struct node {
    enum kind kind;
    unsigned flags;
    node **branches; /* oneOf */
    size_t nbranches;
    prop *props;
    size_t nprops;
    const json_t *props_json; /* for additionalProperties: false lookups */
    const char **required;
    size_t nrequired;
    bool closed;
    node *items;
    const json_t *enum_values; /* borrowed; scalars of the node's type */
    const json_t *const_value;
    double minimum, maximum, xminimum, xmaximum;
    size_t min_length, max_length, min_items, max_items;
    pcre2_code *re;
    const json_t *pattern; /* the JSON string, for messages */
};

struct cdsh_schema {
    json_t *json; /* the private deep copy every borrowed pointer refers to */
    node *root;
    pcre2_match_context *mctx; /* read-only after compile */
};

static void node_free(node *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->nbranches; i++)
        node_free(n->branches[i]);
    free(n->branches);
    for (size_t i = 0; i < n->nprops; i++)
        node_free(n->props[i].schema);
    free(n->props);
    free(n->required);
    node_free(n->items);
    if (n->re)
        pcre2_code_free(n->re);
    free(n);
}

/* ---- schema check + build ------------------------------------------------- */

typedef struct cctx {
    cdsh_strbuf path;
    json_t *violations;
    bool oom;
} cctx;

/* Appends a message as a JSON string; invalid UTF-8 (from keys inserted with
 * jansson's _nocheck setters) is replaced by '?' so the array stays valid. */
static bool push_message(json_t *arr, cdsh_strbuf *msg)
{
    if (msg->failed || !arr)
        return false;
    json_t *s = json_stringn(sb_str(msg), msg->len);
    if (!s) {
        for (size_t i = 0; i < msg->len; i++)
            if ((unsigned char)msg->data[i] >= 0x80 || msg->data[i] == '\0')
                msg->data[i] = '?';
        s = json_stringn(sb_str(msg), msg->len);
    }
    return s && json_array_append_new(arr, s) == 0;
}

__attribute__((format(printf, 2, 3))) static void refuse(cctx *c, const char *fmt, ...)
{
    cdsh_strbuf msg = {0};
    va_list ap;
    va_start(ap, fmt);
    cdsh_strbuf_vappendf(&msg, fmt, ap);
    va_end(ap);
    if (!push_message(c->violations, &msg))
        c->oom = true;
    cdsh_strbuf_deinit(&msg);
}

typedef struct keyword {
    const char *name;
    unsigned types; /* bit per kind the keyword may sit on */
} keyword;

#define T(k) (1u << (k))
#define T_SCALAR (T(K_STRING) | T(K_NUMBER) | T(K_INTEGER) | T(K_BOOLEAN) | T(K_NULL))
#define T_NUMERIC (T(K_NUMBER) | T(K_INTEGER))

/* Constraint keywords other than type/oneOf, in DSH's reporting order. */
static const keyword CONSTRAINTS[] = {
    {"properties", T(K_OBJECT)},
    {"required", T(K_OBJECT)},
    {"additionalProperties", T(K_OBJECT)},
    {"items", T(K_ARRAY)},
    {"enum", T_SCALAR},
    {"const", T_SCALAR},
    {"minimum", T_NUMERIC},
    {"maximum", T_NUMERIC},
    {"exclusiveMinimum", T_NUMERIC},
    {"exclusiveMaximum", T_NUMERIC},
    {"minLength", T(K_STRING)},
    {"maxLength", T(K_STRING)},
    {"pattern", T(K_STRING)},
    {"minItems", T(K_ARRAY)},
    {"maxItems", T(K_ARRAY)},
};
#define NCONSTRAINTS (sizeof CONSTRAINTS / sizeof CONSTRAINTS[0])

static const char *const ANNOTATIONS[] = {"description", "title", "default", "examples"};

static const char *const TYPE_NAMES[] = {
    [K_OBJECT] = "object",   [K_ARRAY] = "array",     [K_STRING] = "string", [K_NUMBER] = "number",
    [K_INTEGER] = "integer", [K_BOOLEAN] = "boolean", [K_NULL] = "null",
};

static bool is_constraint(const char *key)
{
    if (!strcmp(key, "type") || !strcmp(key, "oneOf"))
        return true;
    for (size_t i = 0; i < NCONSTRAINTS; i++)
        if (!strcmp(key, CONSTRAINTS[i].name))
            return true;
    return false;
}

static bool is_annotation(const char *key)
{
    for (size_t i = 0; i < sizeof ANNOTATIONS / sizeof ANNOTATIONS[0]; i++)
        if (!strcmp(key, ANNOTATIONS[i]))
            return true;
    return false;
}

/* DSH's isJsonNumber: finite and not negative zero. */
static bool json_number_ok(const json_t *v)
{
    if (json_is_integer(v))
        return true;
    if (!json_is_real(v))
        return false;
    double d = json_real_value(v);
    return isfinite(d) && !(d == 0 && signbit(d));
}

static bool is_integral(const json_t *v)
{
    if (json_is_integer(v))
        return true;
    double d = json_real_value(v);
    return json_number_ok(v) && floor(d) == d; /* Number.isInteger: 1.0 and 1e300 count */
}

static bool scalar_matches(enum kind k, const json_t *v)
{
    switch (k) {
    case K_STRING: return json_is_string(v);
    case K_NUMBER: return json_number_ok(v);
    case K_INTEGER: return json_number_ok(v) && is_integral(v);
    case K_BOOLEAN: return json_is_boolean(v);
    case K_NULL: return json_is_null(v);
    default: return false;
    }
}

/* SameValueZero on scalars as JavaScript's includes() compares them. */
static bool scalar_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        return json_number_value(a) == json_number_value(b);
    }
    if (json_is_string(a) && json_is_string(b))
        return json_string_length(a) == json_string_length(b) &&
               !memcmp(json_string_value(a), json_string_value(b), json_string_length(a));
    return json_typeof(a) == json_typeof(b) && !json_is_string(a) && !json_is_number(a) &&
           !json_is_array(a) && !json_is_object(a);
}

static bool enum_contains(const json_t *values, const json_t *v)
{
    for (size_t i = 0; i < json_array_size(values); i++)
        if (scalar_equal(json_array_get(values, i), v))
            return true;
    return false;
}

static node *check_node(cctx *c, const json_t *js, int depth, bool root);

static void check_annotations(cctx *c, const json_t *js, bool root)
{
    const char *p = sb_str(&c->path);
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)js, key, val) {
        if (is_constraint(key))
            continue;
        if (is_annotation(key)) {
            if (cdsh_json_check_lossless(val, NULL, NULL) != 0)
                refuse(c, "%s.%s annotation must be lossless JSON data", p, key);
            continue;
        }
        /* Tolerated at the root only; see schema.h. */
        if (root && !strcmp(key, "$schema")) {
            if (!json_is_string(val))
                refuse(c, "%s.$schema must be a string", p);
            continue;
        }
        refuse(c,
               "%s.%s is not a supported keyword (subset: type/oneOf/properties/required/"
               "additionalProperties/items/enum/const/minimum/maximum/exclusiveMinimum/"
               "exclusiveMaximum/minLength/maxLength/pattern/minItems/maxItems + annotations)",
               p, key);
    }
    json_t *d = json_object_get(js, "description");
    if (d && !json_is_string(d))
        refuse(c, "%s.description must be a string", p);
    json_t *t = json_object_get(js, "title");
    if (t && !json_is_string(t))
        refuse(c, "%s.title must be a string", p);
}

static void check_oneof(cctx *c, const json_t *js, node *n, int depth)
{
    const char *p = sb_str(&c->path);
    json_t *branches = json_object_get(js, "oneOf");
    n->kind = K_ONEOF;
    if (!json_is_array(branches) || json_array_size(branches) < 2) {
        refuse(c, "%s.oneOf must be an array of at least two schemas", p);
    } else {
        n->branches = calloc(json_array_size(branches), sizeof *n->branches);
        if (!n->branches) {
            c->oom = true;
            return;
        }
        size_t mark = c->path.len;
        for (size_t i = 0; i < json_array_size(branches); i++) {
            cdsh_strbuf_appendf(&c->path, ".oneOf[%zu]", i);
            n->branches[n->nbranches++] =
                check_node(c, json_array_get(branches, i), depth + 1, false);
            cdsh_strbuf_truncate(&c->path, mark);
        }
    }
    p = sb_str(&c->path);
    for (size_t i = 0; i < NCONSTRAINTS; i++)
        if (json_object_get(js, CONSTRAINTS[i].name))
            refuse(c, "%s.%s is not supported beside oneOf", p, CONSTRAINTS[i].name);
}

static void check_object(cctx *c, const json_t *js, node *n, int depth)
{
    json_t *props = json_object_get(js, "properties");
    if (props && !json_is_object(props)) {
        refuse(c, "%s.properties must be an object of schemas", sb_str(&c->path));
    } else if (props) {
        n->props_json = props;
        n->props = calloc(json_object_size(props) + 1, sizeof *n->props);
        if (!n->props) {
            c->oom = true;
            return;
        }
        size_t mark = c->path.len;
        const char *key;
        json_t *val;
        json_object_foreach(props, key, val) {
            cdsh_strbuf_appendf(&c->path, ".properties.%s", key);
            n->props[n->nprops].key = key;
            n->props[n->nprops++].schema = check_node(c, val, depth + 1, false);
            cdsh_strbuf_truncate(&c->path, mark);
        }
    }
    const char *p = sb_str(&c->path);
    json_t *req = json_object_get(js, "required");
    if (req) {
        bool strings = json_is_array(req);
        for (size_t i = 0; strings && i < json_array_size(req); i++)
            strings = json_is_string(json_array_get(req, i));
        if (!strings) {
            refuse(c, "%s.required must be an array of strings", p);
        } else {
            n->required = calloc(json_array_size(req) + 1, sizeof *n->required);
            if (!n->required) {
                c->oom = true;
                return;
            }
            for (size_t i = 0; i < json_array_size(req); i++) {
                const char *name = json_string_value(json_array_get(req, i));
                if (!json_is_object(props) || !json_object_get(props, name))
                    refuse(c, "%s.required names \"%s\" which is not in properties", p, name);
                n->required[n->nrequired++] = name;
            }
        }
    }
    json_t *ap = json_object_get(js, "additionalProperties");
    if (ap && !json_is_boolean(ap))
        refuse(c, "%s.additionalProperties must be a boolean", p);
    n->closed = json_is_false(ap);
}

/* Reads a number keyword into *out; refuses anything but a finite number. */
static void check_number_kw(cctx *c, const json_t *js, const char *kw, unsigned flag, double *out,
                            node *n)
{
    json_t *v = json_object_get(js, kw);
    if (!v)
        return;
    if (!json_is_number(v) || !isfinite(json_number_value(v))) {
        refuse(c, "%s.%s must be a number", sb_str(&c->path), kw);
        return;
    }
    *out = json_number_value(v);
    n->flags |= flag;
}

static void check_count_kw(cctx *c, const json_t *js, const char *kw, unsigned flag, size_t *out,
                           node *n)
{
    json_t *v = json_object_get(js, kw);
    if (!v)
        return;
    if (!json_is_number(v) || !is_integral(v) || json_number_value(v) < 0) {
        refuse(c, "%s.%s must be a non-negative integer", sb_str(&c->path), kw);
        return;
    }
    double d = json_number_value(v);
    if (json_is_integer(v))
        *out = (size_t)json_integer_value(v);
    else
        *out = d >= (double)SIZE_MAX ? SIZE_MAX : (size_t)d; /* 1e300 means "no limit" */
    n->flags |= flag;
}

static void check_pattern(cctx *c, const json_t *js, node *n)
{
    json_t *pat = json_object_get(js, "pattern");
    if (!pat)
        return;
    if (!json_is_string(pat)) {
        refuse(c, "%s.pattern must be a string", sb_str(&c->path));
        return;
    }
    pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
    if (!cc) {
        c->oom = true;
        return;
    }
    /* ECMAScript flavour: \uHHHH and \u{H..} escapes, `$` only at the end. */
    pcre2_set_compile_extra_options(cc, PCRE2_EXTRA_ALT_BSUX);
    int code;
    PCRE2_SIZE offset;
    n->re = pcre2_compile((PCRE2_SPTR)json_string_value(pat), json_string_length(pat),
                          PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_DOLLAR_ENDONLY, &code, &offset, cc);
    pcre2_compile_context_free(cc);
    if (!n->re) {
        PCRE2_UCHAR msg[256];
        if (pcre2_get_error_message(code, msg, sizeof msg) < 0)
            snprintf((char *)msg, sizeof msg, "PCRE2 error %d", code);
        refuse(c, "%s.pattern is not a supported pattern: %s at offset %zu", sb_str(&c->path),
               (const char *)msg, (size_t)offset);
        return;
    }
    (void)pcre2_jit_compile(n->re, PCRE2_JIT_COMPLETE); /* the interpreter serves if JIT is off */
    n->pattern = pat;
}

static void check_scalar(cctx *c, const json_t *js, node *n)
{
    const char *p = sb_str(&c->path);
    const char *tn = TYPE_NAMES[n->kind];
    json_t *en = json_object_get(js, "enum");
    bool enum_ok = json_is_array(en) && json_array_size(en) > 0;
    for (size_t i = 0; enum_ok && i < json_array_size(en); i++)
        enum_ok = scalar_matches(n->kind, json_array_get(en, i));
    if (en && !enum_ok)
        refuse(c, "%s.enum must be a non-empty array of %s values", p, tn);
    if (enum_ok)
        n->enum_values = en;
    json_t *cv = json_object_get(js, "const");
    if (cv) {
        if (!scalar_matches(n->kind, cv))
            refuse(c, "%s.const must be a %s value", p, tn);
        else if (enum_ok && !enum_contains(en, cv))
            refuse(c, "%s.const must be one of %s.enum when both are declared", p, p);
        else
            n->const_value = cv;
    }
}

static node *check_node(cctx *c, const json_t *js, int depth, bool root)
{
    node *n = calloc(1, sizeof *n);
    if (!n) {
        c->oom = true;
        return NULL;
    }
    const char *p = sb_str(&c->path);
    if (!json_is_object(js)) {
        refuse(c, "%s must be a schema object", p);
        return n;
    }
    if (depth > MAX_DEPTH) {
        refuse(c, "%s is nested too deeply (more than %d levels)", p, MAX_DEPTH);
        return n;
    }
    check_annotations(c, js, root);
    p = sb_str(&c->path);
    json_t *type = json_object_get(js, "type");
    bool has_oneof = json_object_get(js, "oneOf") != NULL;
    if (type && has_oneof) {
        refuse(c, "%s cannot declare both type and oneOf", p);
        return n;
    }
    if (!type && !has_oneof) {
        for (size_t i = 0; i < NCONSTRAINTS; i++)
            if (json_object_get(js, CONSTRAINTS[i].name))
                refuse(c, "%s.%s requires type or oneOf", p, CONSTRAINTS[i].name);
        return n;
    }
    if (has_oneof) {
        check_oneof(c, js, n, depth);
        return n;
    }
    enum kind k = K_ANY;
    for (int i = K_OBJECT; i <= K_NULL && json_is_string(type); i++)
        if (!strcmp(json_string_value(type), TYPE_NAMES[i]))
            k = (enum kind)i;
    if (k == K_ANY) {
        if (json_is_array(type))
            refuse(c, "%s.type must be a single type string (type arrays are not supported)", p);
        else
            refuse(c, "%s.type must be one of object/array/string/number/integer/boolean/null", p);
        return n;
    }
    n->kind = k;
    for (size_t i = 0; i < NCONSTRAINTS; i++)
        if (json_object_get(js, CONSTRAINTS[i].name) && !(CONSTRAINTS[i].types & T(k)))
            refuse(c, "%s.%s is not supported on type \"%s\"", p, CONSTRAINTS[i].name,
                   TYPE_NAMES[k]);
    switch (k) {
    case K_OBJECT: check_object(c, js, n, depth); break;
    case K_ARRAY:
        if (json_object_get(js, "items")) {
            size_t mark = c->path.len;
            cdsh_strbuf_append_str(&c->path, ".items");
            n->items = check_node(c, json_object_get(js, "items"), depth + 1, false);
            cdsh_strbuf_truncate(&c->path, mark);
        }
        check_count_kw(c, js, "minItems", HAS_MINITEMS, &n->min_items, n);
        check_count_kw(c, js, "maxItems", HAS_MAXITEMS, &n->max_items, n);
        break;
    default:
        check_scalar(c, js, n);
        if (k == K_NUMBER || k == K_INTEGER) {
            check_number_kw(c, js, "minimum", HAS_MINIMUM, &n->minimum, n);
            check_number_kw(c, js, "maximum", HAS_MAXIMUM, &n->maximum, n);
            check_number_kw(c, js, "exclusiveMinimum", HAS_XMINIMUM, &n->xminimum, n);
            check_number_kw(c, js, "exclusiveMaximum", HAS_XMAXIMUM, &n->xmaximum, n);
        } else if (k == K_STRING) {
            check_count_kw(c, js, "minLength", HAS_MINLENGTH, &n->min_length, n);
            check_count_kw(c, js, "maxLength", HAS_MAXLENGTH, &n->max_length, n);
            check_pattern(c, js, n);
        }
        break;
    }
    return n;
}

int cdsh_schema_compile_at(const json_t *schema, const char *root, cdsh_schema **out,
                           json_t **violations, cdsh_error *err)
{
    if (violations)
        *violations = NULL;
    if (!schema || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGUMENT",
                              "cdsh_schema_compile needs a schema and an output pointer");
    *out = NULL;
    int rc = CDSH_ENOMEM;
    cctx c = {0};
    cdsh_schema *s = calloc(1, sizeof *s);
    if (!s)
        goto fail;
    s->json = json_deep_copy(schema);
    c.violations = json_array();
    s->mctx = pcre2_match_context_create(NULL);
    if (!s->json || !c.violations || !s->mctx)
        goto fail;
    pcre2_set_match_limit(s->mctx, PATTERN_MATCH_LIMIT);
    cdsh_strbuf_append_str(&c.path, root ? root : "schema");
    s->root = check_node(&c, s->json, 0, true);
    if (c.oom || c.path.failed || !s->root)
        goto fail;
    if (json_array_size(c.violations) > 0) {
        char *joined = cdsh_schema_violations_join_dup(c.violations);
        cdsh_error_set(err, CDSH_EUNSUPPORTED, "UNSUPPORTED_SCHEMA", "unsupported JSON schema: %s",
                       joined ? joined : "(out of memory)");
        free(joined);
        if (violations) {
            *violations = c.violations;
            c.violations = NULL;
        }
        rc = CDSH_EUNSUPPORTED;
        goto fail_quiet;
    }
    json_decref(c.violations);
    cdsh_strbuf_deinit(&c.path);
    *out = s;
    return 0;
fail:
    cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory compiling a JSON schema");
fail_quiet:
    json_decref(c.violations);
    cdsh_strbuf_deinit(&c.path);
    cdsh_schema_free(s);
    return rc;
}

int cdsh_schema_compile(const json_t *schema, cdsh_schema **out, cdsh_error *err)
{
    return cdsh_schema_compile_at(schema, NULL, out, NULL, err);
}

void cdsh_schema_free(cdsh_schema *schema)
{
    if (!schema)
        return;
    node_free(schema->root);
    if (schema->mctx)
        pcre2_match_context_free(schema->mctx);
    json_decref(schema->json);
    free(schema);
}

const json_t *cdsh_schema_json(const cdsh_schema *schema)
{
    return schema ? schema->json : NULL;
}

/* ---- validation ----------------------------------------------------------- */

typedef struct vctx {
    const cdsh_schema *schema;
    cdsh_strbuf path;     /* empty only at DSH's implicit root */
    json_t *out;          /* NULL while counting (inside oneOf) */
    pcre2_match_data *md; /* created on the first pattern match of this call */
    bool oom;
} vctx;

static const char *shown_path(const vctx *c)
{
    return c->path.len ? sb_str(&c->path) : "arguments";
}

/* Records one violation `"<path>" <what>` (what is already formatted). In
 * counting mode nothing is formatted. Returns 1, the number recorded. */
static size_t violate(vctx *c, const cdsh_strbuf *what)
{
    if (!c->out)
        return 1;
    cdsh_strbuf msg = {0};
    cdsh_strbuf_append_str(&msg, "\"");
    cdsh_strbuf_append_str(&msg, shown_path(c));
    cdsh_strbuf_append_str(&msg, "\" ");
    cdsh_strbuf_append(&msg, sb_str(what), what->len);
    if (what->failed || !push_message(c->out, &msg))
        c->oom = true;
    cdsh_strbuf_deinit(&msg);
    return 1;
}

__attribute__((format(printf, 2, 3))) static size_t violatef(vctx *c, const char *fmt, ...)
{
    if (!c->out)
        return 1;
    cdsh_strbuf w = {0};
    va_list ap;
    va_start(ap, fmt);
    cdsh_strbuf_vappendf(&w, fmt, ap);
    va_end(ap);
    violate(c, &w);
    cdsh_strbuf_deinit(&w);
    return 1;
}

static void push_key(vctx *c, const char *key)
{
    if (c->path.len)
        cdsh_strbuf_append_str(&c->path, ".");
    cdsh_strbuf_append_str(&c->path, key);
}

static size_t check_value(vctx *c, const node *n, const json_t *v);

static size_t check_oneof_value(vctx *c, const node *n, const json_t *v)
{
    json_t *saved = c->out;
    c->out = NULL;
    size_t matches = 0;
    for (size_t i = 0; i < n->nbranches; i++) {
        if (check_value(c, n->branches[i], v) == 0)
            matches++;
        if (!saved && matches > 1)
            break; /* counting: the verdict is already "no" */
    }
    c->out = saved;
    if (matches == 1)
        return 0;
    return violatef(c, "must match exactly one oneOf branch (matched %zu)", matches);
}

static size_t check_object_value(vctx *c, const node *n, const json_t *v)
{
    if (!json_is_object(v))
        return violatef(c, "must be an object");
    size_t count = 0, mark = c->path.len;
    for (size_t i = 0; i < n->nrequired; i++) {
        if (json_object_get(v, n->required[i]))
            continue;
        if (!c->out)
            return 1;
        cdsh_strbuf msg = {0};
        push_key(c, n->required[i]);
        cdsh_strbuf_appendf(&msg, "missing required property \"%s\"", sb_str(&c->path));
        cdsh_strbuf_truncate(&c->path, mark);
        if (!push_message(c->out, &msg))
            c->oom = true;
        cdsh_strbuf_deinit(&msg);
        count++;
    }
    for (size_t i = 0; i < n->nprops; i++) {
        const json_t *child = json_object_get(v, n->props[i].key);
        if (!child)
            continue;
        push_key(c, n->props[i].key);
        count += check_value(c, n->props[i].schema, child);
        cdsh_strbuf_truncate(&c->path, mark);
        if (count && !c->out)
            return count;
    }
    if (n->closed) {
        const char *key;
        const json_t *val;
        json_object_foreach((json_t *)v, key, val) {
            if (n->props_json && json_object_get(n->props_json, key))
                continue;
            if (!c->out)
                return 1;
            push_key(c, key);
            count += violatef(c, "is not a declared property (additionalProperties: false)");
            cdsh_strbuf_truncate(&c->path, mark);
        }
    }
    return count;
}

static size_t check_array_value(vctx *c, const node *n, const json_t *v)
{
    if (!json_is_array(v))
        return violatef(c, "must be an array");
    size_t count = 0, size = json_array_size(v);
    if ((n->flags & HAS_MINITEMS) && size < n->min_items)
        count += violatef(c, "must have at least %zu item%s", n->min_items,
                          n->min_items == 1 ? "" : "s");
    else if ((n->flags & HAS_MAXITEMS) && size > n->max_items)
        count +=
            violatef(c, "must have at most %zu item%s", n->max_items, n->max_items == 1 ? "" : "s");
    if (count && !c->out)
        return count;
    if (!n->items)
        return count;
    size_t mark = c->path.len;
    for (size_t i = 0; i < size; i++) {
        cdsh_strbuf_appendf(&c->path, "[%zu]", i);
        count += check_value(c, n->items, json_array_get(v, i));
        cdsh_strbuf_truncate(&c->path, mark);
        if (count && !c->out)
            return count;
    }
    return count;
}

/* enum, then const: the first failure is the only one reported (as DSH). */
static size_t check_literal(vctx *c, const node *n, const json_t *v)
{
    cdsh_strbuf w = {0};
    if (n->enum_values && !enum_contains(n->enum_values, v)) {
        cdsh_strbuf_append_str(&w, "must be one of ");
        js_put_json(&w, n->enum_values);
    } else if (n->const_value && !scalar_equal(n->const_value, v)) {
        cdsh_strbuf_append_str(&w, "must be ");
        js_put_json(&w, n->const_value);
    }
    size_t r = (w.len || w.failed) ? violate(c, &w) : 0;
    cdsh_strbuf_deinit(&w);
    return r;
}

static size_t bound(vctx *c, const char *op, double limit)
{
    if (!c->out)
        return 1;
    cdsh_strbuf w = {0};
    cdsh_strbuf_appendf(&w, "must be %s ", op);
    js_put_double(&w, limit);
    violate(c, &w);
    cdsh_strbuf_deinit(&w);
    return 1;
}

static size_t check_numeric_value(vctx *c, const node *n, const json_t *v)
{
    if (n->kind == K_NUMBER && !json_is_number(v))
        return violatef(c, "must be a number");
    if (n->kind == K_NUMBER && !json_number_ok(v))
        return violatef(c, "must be a finite JSON number");
    if (n->kind == K_INTEGER && !scalar_matches(K_INTEGER, v))
        return violatef(c, "must be an integer");
    size_t count = check_literal(c, n, v);
    if (count)
        return count;
    double d = json_number_value(v);
    if ((n->flags & HAS_MINIMUM) && d < n->minimum)
        count += bound(c, ">=", n->minimum);
    if ((n->flags & HAS_XMINIMUM) && d <= n->xminimum)
        count += bound(c, ">", n->xminimum);
    if ((n->flags & HAS_MAXIMUM) && d > n->maximum)
        count += bound(c, "<=", n->maximum);
    if ((n->flags & HAS_XMAXIMUM) && d >= n->xmaximum)
        count += bound(c, "<", n->xmaximum);
    return count;
}

static size_t pattern_violation(vctx *c, const node *n, const char *detail)
{
    if (!c->out)
        return 1;
    cdsh_strbuf w = {0};
    cdsh_strbuf_append_str(&w, "must match pattern ");
    js_put_json(&w, n->pattern);
    if (detail)
        cdsh_strbuf_appendf(&w, " (pattern match failed: %s)", detail);
    violate(c, &w);
    cdsh_strbuf_deinit(&w);
    return 1;
}

static size_t check_string_value(vctx *c, const node *n, const json_t *v)
{
    if (!json_is_string(v))
        return violatef(c, "must be a string");
    size_t count = check_literal(c, n, v);
    if (count || (!(n->flags & (HAS_MINLENGTH | HAS_MAXLENGTH)) && !n->re))
        return count;
    const char *s = json_string_value(v);
    size_t bytes = json_string_length(v);
    if (!cdsh_utf8_valid(s, bytes))
        return violatef(c, "must be a lossless JSON value");
    size_t cps = cdsh_utf8_count(s, bytes);
    if ((n->flags & HAS_MINLENGTH) && cps < n->min_length)
        count += violatef(c, "must be at least %zu character%s", n->min_length,
                          n->min_length == 1 ? "" : "s");
    if ((n->flags & HAS_MAXLENGTH) && cps > n->max_length)
        count += violatef(c, "must be at most %zu character%s", n->max_length,
                          n->max_length == 1 ? "" : "s");
    if (!n->re || (count && !c->out))
        return count;
    if (!c->md) {
        c->md = pcre2_match_data_create(1, NULL); /* only "did it match" is needed */
        if (!c->md) {
            c->oom = true;
            return count + 1;
        }
    }
    int rc = pcre2_match(n->re, (PCRE2_SPTR)s, bytes, 0, 0, c->md, c->schema->mctx);
    if (rc >= 0)
        return count;
    if (rc == PCRE2_ERROR_NOMATCH)
        return count + pattern_violation(c, n, NULL);
    PCRE2_UCHAR msg[256];
    if (pcre2_get_error_message(rc, msg, sizeof msg) < 0)
        snprintf((char *)msg, sizeof msg, "PCRE2 error %d", rc);
    return count + pattern_violation(c, n, (const char *)msg);
}

static size_t check_value(vctx *c, const node *n, const json_t *v)
{
    switch (n->kind) {
    case K_ANY: return 0;
    case K_ONEOF: return check_oneof_value(c, n, v);
    case K_OBJECT: return check_object_value(c, n, v);
    case K_ARRAY: return check_array_value(c, n, v);
    case K_STRING: return check_string_value(c, n, v);
    case K_NUMBER:
    case K_INTEGER: return check_numeric_value(c, n, v);
    case K_BOOLEAN:
        if (!json_is_boolean(v))
            return violatef(c, "must be a boolean");
        return check_literal(c, n, v);
    case K_NULL:
        if (!json_is_null(v))
            return violatef(c, "must be null");
        return check_literal(c, n, v);
    }
    return 0;
}

int cdsh_schema_validate(const cdsh_schema *schema, const json_t *value, const char *root,
                         json_t **violations)
{
    if (violations)
        *violations = NULL;
    if (!schema)
        return CDSH_EINVAL;
    /* Without a violations array, validate in counting mode: stop at the first
     * violation and format nothing. */
    vctx c = {.schema = schema, .out = violations ? json_array() : NULL};
    if (violations && !c.out)
        return CDSH_ENOMEM;
    cdsh_strbuf_append_str(&c.path, root ? root : "value");
    size_t count = value ? check_value(&c, schema->root, value)
                         : violatef(&c, "must be a lossless JSON value");
    int rc = 0;
    if (c.oom || c.path.failed)
        rc = CDSH_ENOMEM;
    else if (count)
        rc = CDSH_EINVAL;
    if (rc == CDSH_EINVAL && violations) {
        *violations = c.out;
        c.out = NULL;
    }
    json_decref(c.out);
    cdsh_strbuf_deinit(&c.path);
    if (c.md)
        pcre2_match_data_free(c.md);
    return rc;
}

char *cdsh_schema_violations_join_dup(const json_t *violations)
{
    cdsh_strbuf b;
    cdsh_strbuf_init(&b);
    bool first = true;
    for (size_t i = 0; i < json_array_size(violations); i++) {
        const json_t *v = json_array_get(violations, i);
        if (!json_is_string(v))
            continue;
        if (!first)
            cdsh_strbuf_append_str(&b, "; ");
        cdsh_strbuf_append(&b, json_string_value(v), json_string_length(v));
        first = false;
    }
    return cdsh_strbuf_take(&b, NULL); /* NULL if an append ran out of memory */
}
