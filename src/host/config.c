/* config.c — config schema check, default-filling validation and field lists.
 * This is a config-specific walker rather than base/schema.h because it must
 * build the completed value (defaults) and report `(at path)` separately from
 * each message, in schemastery's `expected X but got Y` wording. */
#include "host/config.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const KEYWORDS[] = {
    "type",      "properties", "items",   "additionalProperties",
    "required",  "default",    "title",   "description",
    "examples",  "enum",       "minimum", "maximum",
    "minLength", "maxLength",  NULL,
};

static const char *const TYPES[] = {"string", "integer", "number", "boolean",
                                    "array",  "object",  NULL};

static bool in_list(const char *const *list, const char *s)
{
    for (; *list; list++)
        if (strcmp(*list, s) == 0)
            return true;
    return false;
}

static const char *type_of(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    default: return "null";
    }
}

static bool type_matches(const char *type, const json_t *v)
{
    if (strcmp(type, "number") == 0)
        return json_is_number(v);
    if (strcmp(type, "integer") == 0) /* an integral real must also fit in 64 bits */
        return json_is_integer(v) ||
               (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v) &&
                fabs(json_real_value(v)) < 9.0e18);
    return strcmp(type, type_of(v)) == 0;
}

/* path + "." + key (or "[i]"); owned. */
static char *join_path(const char *path, const char *key, long index)
{
    char *out = NULL;
    int n;
    if (key)
        n = *path ? asprintf(&out, "%s.%s", path, key) : asprintf(&out, "%s", key);
    else
        n = asprintf(&out, "%s[%ld]", path, index);
    return n < 0 ? NULL : out;
}

static int check_node(const json_t *node, const char *path, cdsh_error *err);

static int refuse(cdsh_error *err, const char *what, const char *path)
{
    return cdsh_error_set(err, CDSH_EUNSUPPORTED, "UNSUPPORTED_SCHEMA", "config schema: %s at %s",
                          what, *path ? path : "(root)");
}

static int check_node(const json_t *node, const char *path, cdsh_error *err)
{
    if (!json_is_object(node))
        return refuse(err, "a schema node must be an object", path);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)node, k, v) {
        if (!in_list(KEYWORDS, k)) {
            char what[128];
            snprintf(what, sizeof what, "unsupported keyword \"%.64s\"", k);
            return refuse(err, what, path);
        }
    }
    json_t *type = json_object_get(node, "type");
    if (!json_is_string(type) || !in_list(TYPES, json_string_value(type)))
        return refuse(err,
                      "\"type\" must be one of string, integer, number, boolean, array, "
                      "object",
                      path);
    const char *t = json_string_value(type);
    json_t *props = json_object_get(node, "properties");
    json_t *items = json_object_get(node, "items");
    json_t *addl = json_object_get(node, "additionalProperties");
    json_t *req = json_object_get(node, "required");
    json_t *en = json_object_get(node, "enum");
    if ((props || addl || req) && strcmp(t, "object") != 0)
        return refuse(err, "object keywords on a non-object", path);
    if (items && strcmp(t, "array") != 0)
        return refuse(err, "\"items\" on a non-array", path);
    if (props && !json_is_object(props))
        return refuse(err, "\"properties\" must be an object", path);
    if (addl && !json_is_boolean(addl))
        return refuse(err, "\"additionalProperties\" must be a boolean", path);
    if (en && (!json_is_array(en) || json_array_size(en) == 0))
        return refuse(err, "\"enum\" must be a non-empty array", path);
    for (const char *const *num = (const char *const[]){"minimum", "maximum", NULL}; *num; num++)
        if (json_object_get(node, *num) && !json_is_number(json_object_get(node, *num)))
            return refuse(err, "bounds must be numbers", path);
    for (const char *const *len = (const char *const[]){"minLength", "maxLength", NULL}; *len;
         len++)
        if (json_object_get(node, *len) && !json_is_integer(json_object_get(node, *len)))
            return refuse(err, "length bounds must be integers", path);
    if (req) {
        if (!json_is_array(req))
            return refuse(err, "\"required\" must be an array", path);
        size_t i;
        json_t *r;
        json_array_foreach(req, i, r) {
            if (!json_is_string(r) || !json_object_get(props, json_string_value(r)))
                return refuse(err, "\"required\" must name declared properties", path);
        }
    }
    json_object_foreach(props, k, v) {
        char *sub = join_path(path, k, 0);
        if (!sub)
            return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        int rc = check_node(v, sub, err);
        free(sub);
        if (rc)
            return rc;
    }
    if (items) {
        char *sub = join_path(path, NULL, 0);
        int rc = sub ? check_node(items, sub, err) : CDSH_ENOMEM;
        free(sub);
        if (rc)
            return rc;
    }
    json_t *dflt = json_object_get(node, "default");
    if (dflt) {
        json_t *out = NULL, *issues = NULL;
        int rc = cdsh_config_resolve(node, dflt, &out, &issues, NULL);
        json_decref(out);
        if (rc) {
            const char *m =
                json_string_value(json_object_get(json_array_get(issues, 0), "message"));
            char what[300];
            snprintf(what, sizeof what, "default does not satisfy the schema (%s)",
                     m ? m : "invalid");
            json_decref(issues);
            return refuse(err, what, path);
        }
    }
    return 0;
}

int cdsh_config_schema_check(const json_t *schema, cdsh_error *err)
{
    if (!json_is_object(schema) || !json_is_string(json_object_get(schema, "type")) ||
        strcmp(json_string_value(json_object_get(schema, "type")), "object") != 0)
        return cdsh_error_set(err, CDSH_EUNSUPPORTED, "UNSUPPORTED_SCHEMA",
                              "config schema: the root must be {\"type\":\"object\"}");
    return check_node(schema, "", err);
}

static void issue(json_t *issues, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void issue(json_t *issues, const char *path, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_array_append_new(issues, json_pack("{s:s, s:s}", "path", path, "message", msg));
}

/* Compact JSON text of v for messages; owned. */
static char *show(const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    return s ? s : strdup("?");
}

static json_t *walk(const json_t *node, const json_t *value, const char *path, json_t *issues);

/* An absent or null value: the node's default, an object's filled-in
 * defaults, or NULL (the field stays absent). */
static json_t *walk_absent(const json_t *node, const char *type, const char *path, json_t *issues)
{
    json_t *dflt = json_object_get(node, "default");
    if (dflt)
        return walk(node, dflt, path, issues);
    if (type && strcmp(type, "object") == 0 && json_object_get(node, "properties")) {
        json_t *empty = json_object();
        json_t *filled = walk(node, empty, path, issues);
        json_decref(empty);
        return filled;
    }
    return NULL;
}

/* False (with an issue) when the node has an enum that does not hold value. */
static bool enum_holds(const json_t *node, const json_t *value, const char *path, json_t *issues)
{
    json_t *en = json_object_get(node, "enum");
    if (!en)
        return true;
    bool found = false;
    size_t i;
    json_t *opt;
    json_array_foreach(en, i, opt)
        found = found || json_equal(opt, (json_t *)value);
    if (!found) {
        char *want = show(en), *got = show(value);
        issue(issues, path, "expected one of %s but got %s", want, got);
        free(want);
        free(got);
    }
    return found;
}

/* False (with an issue) when a number lies outside minimum/maximum. */
static bool number_in_range(const json_t *node, const json_t *value, const char *path,
                            json_t *issues)
{
    double x = json_number_value(value);
    json_t *mn = json_object_get(node, "minimum"), *mx = json_object_get(node, "maximum");
    char *got = show(value);
    bool bad = false;
    if (mn && x < json_number_value(mn)) {
        char *b = show(mn);
        issue(issues, path, "expected a value >= %s but got %s", b, got);
        free(b);
        bad = true;
    } else if (mx && x > json_number_value(mx)) {
        char *b = show(mx);
        issue(issues, path, "expected a value <= %s but got %s", b, got);
        free(b);
        bad = true;
    }
    free(got);
    return !bad;
}

/* False (with an issue) when a string's length lies outside minLength/maxLength. */
static bool string_in_range(const json_t *node, const json_t *value, const char *path,
                            json_t *issues)
{
    size_t len = json_string_length(value);
    json_t *mn = json_object_get(node, "minLength"), *mx = json_object_get(node, "maxLength");
    if (mn && (json_int_t)len < json_integer_value(mn)) {
        issue(issues, path, "expected at least %lld characters", (long long)json_integer_value(mn));
        return false;
    }
    if (mx && (json_int_t)len > json_integer_value(mx)) {
        issue(issues, path, "expected at most %lld characters", (long long)json_integer_value(mx));
        return false;
    }
    return true;
}

/* Every item through the node's items schema (an invalid item becomes null). */
static json_t *walk_array(const json_t *node, const json_t *value, const char *path, json_t *issues)
{
    json_t *items = json_object_get(node, "items");
    json_t *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(value, i, v) {
        char *sub = join_path(path, NULL, (long)i);
        json_t *r = items ? walk(items, v, sub ? sub : path, issues) : json_deep_copy(v);
        free(sub);
        json_array_append_new(out, r ? r : json_null());
    }
    return out;
}

/* The declared properties (missing required ones are issues), then the
 * undeclared keys: kept when the object is open, issues otherwise. */
static json_t *walk_object(const json_t *node, const json_t *value, const char *path,
                           json_t *issues)
{
    json_t *props = json_object_get(node, "properties");
    json_t *req = json_object_get(node, "required");
    bool open = json_is_true(json_object_get(node, "additionalProperties")) || !props;
    json_t *out = json_object();
    const char *k;
    json_t *sub_node;
    json_object_foreach(props, k, sub_node) {
        char *sub = join_path(path, k, 0);
        const char *p = sub ? sub : path;
        json_t *given = json_object_get(value, k);
        json_t *r = walk(sub_node, given, p, issues);
        if (r) {
            json_object_set_new(out, k, r);
        } else if ((!given || json_is_null(given)) && req) {
            size_t i;
            json_t *name;
            json_array_foreach(req, i, name) {
                if (strcmp(json_string_value(name), k) == 0)
                    issue(issues, p, "missing required property");
            }
        }
        free(sub);
    }
    json_t *v;
    json_object_foreach((json_t *)value, k, v) {
        if (json_object_get(props, k))
            continue;
        if (open) {
            json_object_set_new(out, k, json_deep_copy(v));
        } else {
            char *sub = join_path(path, k, 0);
            issue(issues, sub ? sub : path, "unknown key");
            free(sub);
        }
    }
    return out;
}

/* Resolves one node. Returns the completed value (owned) or NULL when the
 * field stays absent (no value, no default) or is invalid. */
static json_t *walk(const json_t *node, const json_t *value, const char *path, json_t *issues)
{
    const char *type = json_string_value(json_object_get(node, "type"));
    if (!value || json_is_null(value))
        return walk_absent(node, type, path, issues);
    if (!type)
        return json_deep_copy(value);
    if (!type_matches(type, value)) {
        issue(issues, path, "expected %s but got %s", type, type_of(value));
        return NULL;
    }
    if (!enum_holds(node, value, path, issues))
        return NULL;
    if (json_is_number(value)) {
        if (!number_in_range(node, value, path, issues))
            return NULL;
        if (strcmp(type, "integer") == 0 && json_is_real(value))
            return json_integer((json_int_t)json_real_value(value));
    }
    if (json_is_string(value) && !string_in_range(node, value, path, issues))
        return NULL;
    if (json_is_array(value))
        return walk_array(node, value, path, issues);
    if (json_is_object(value))
        return walk_object(node, value, path, issues);
    return json_deep_copy(value);
}

int cdsh_config_resolve(const json_t *schema, const json_t *input, json_t **out, json_t **issues,
                        cdsh_error *err)
{
    if (out)
        *out = NULL;
    if (issues)
        *issues = NULL;
    if (!json_is_object(schema) || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "config: missing schema");
    json_t *list = json_array();
    if (!list)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    json_t *value = walk(schema, input, "", list);
    if (json_array_size(list) == 0) {
        json_decref(list);
        *out = value ? value : json_object();
        return 0;
    }
    json_decref(value);
    if (err) {
        char buf[CDSH_ERROR_MESSAGE_MAX];
        size_t used = (size_t)snprintf(buf, sizeof buf, "invalid config:");
        size_t i;
        json_t *it;
        json_array_foreach(list, i, it) {
            const char *p = json_string_value(json_object_get(it, "path"));
            const char *m = json_string_value(json_object_get(it, "message"));
            if (used < sizeof buf)
                used += (size_t)snprintf(buf + used, sizeof buf - used,
                                         *p ? "\n  - %s (at %s)" : "\n  - %s%s", m, p);
        }
        cdsh_error_set(err, CDSH_EINVAL, "INVALID_CONFIG", "%s", buf);
    }
    if (issues)
        *issues = list;
    else
        json_decref(list);
    return CDSH_EINVAL;
}

static void flatten(const json_t *node, const char *path, json_t *out)
{
    json_t *props = json_object_get(node, "properties");
    const char *type = json_string_value(json_object_get(node, "type"));
    if (type && strcmp(type, "object") == 0 && props && json_object_size(props) > 0 &&
        !json_object_get(node, "default")) {
        const char *k;
        json_t *sub;
        json_object_foreach(props, k, sub) {
            char *p = join_path(path, k, 0);
            if (p)
                flatten(sub, p, out);
            free(p);
        }
        return;
    }
    if (!*path)
        return;
    json_t *f = json_pack("{s:s, s:s}", "key", path, "type", type ? type : "any");
    static const char *const copy[] = {"default", "description", "enum",
                                       "minimum", "maximum",     NULL};
    for (const char *const *c = copy; *c; c++) {
        json_t *v = json_object_get(node, *c);
        if (v)
            json_object_set_new(f, *c, json_deep_copy(v));
    }
    json_array_append_new(out, f);
}

json_t *cdsh_config_fields(const json_t *schema)
{
    json_t *out = json_array();
    if (out && schema)
        flatten(schema, "", out);
    return out;
}

const json_t *cdsh_config_schema_at(const json_t *schema, const char *key)
{
    if (!schema || !key || !*key)
        return NULL;
    char *copy = strdup(key);
    if (!copy)
        return NULL;
    const json_t *node = schema;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ".", &save); tok && node; tok = strtok_r(NULL, ".", &save))
        node = json_object_get(json_object_get(node, "properties"), tok);
    free(copy);
    return node;
}

json_t *cdsh_config_path_get(const json_t *obj, const char *key)
{
    if (!obj || !key || !*key)
        return NULL;
    char *copy = strdup(key);
    if (!copy)
        return NULL;
    json_t *node = (json_t *)obj;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ".", &save); tok && node; tok = strtok_r(NULL, ".", &save))
        node = json_object_get(node, tok);
    free(copy);
    return node;
}

int cdsh_config_path_set(json_t *obj, const char *key, json_t *value, cdsh_error *err)
{
    int rc = 0;
    char *copy = key && *key ? strdup(key) : NULL;
    if (!json_is_object(obj) || !copy) {
        rc = cdsh_error_set(err, CDSH_EINVAL, "BAD_KEY", "config: an empty key");
        goto done;
    }
    json_t *node = obj;
    char *save = NULL;
    char *tok = strtok_r(copy, ".", &save);
    for (char *next; tok && (next = strtok_r(NULL, ".", &save)); tok = next) {
        json_t *child = json_object_get(node, tok);
        if (!child) {
            if (!value)
                goto done; /* removing something that is not there */
            child = json_object();
            json_object_set_new(node, tok, child);
        } else if (!json_is_object(child)) {
            rc = cdsh_error_set(err, CDSH_EINVAL, "BAD_KEY",
                                "config: \"%s\" is not an object in \"%s\"", tok, key);
            goto done;
        }
        node = child;
    }
    if (!tok) {
        rc = cdsh_error_set(err, CDSH_EINVAL, "BAD_KEY", "config: an empty key");
    } else if (value) {
        json_object_set(node, tok, value);
    } else {
        json_object_del(node, tok);
    }
done:
    json_decref(value);
    free(copy);
    return rc;
}

int cdsh_config_parse_value(const json_t *schema, const char *key, const char *text, json_t **out,
                            cdsh_error *err)
{
    *out = NULL;
    const json_t *node = cdsh_config_schema_at(schema, key);
    if (!node)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "UNKNOWN_KEY", "unknown config key \"%s\"",
                              key ? key : "");
    const char *type = json_string_value(json_object_get(node, "type"));
    if (type && strcmp(type, "string") == 0) {
        *out = json_string(text);
        return *out ? 0
                    : cdsh_error_set(err, CDSH_EINVAL, "INVALID_CONFIG",
                                     "invalid config:\n  - expected valid UTF-8 (at %s)", key);
    }
    json_error_t jerr;
    *out = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!*out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_CONFIG",
                              "invalid config:\n  - expected %s but got text \"%s\" (at %s)",
                              type ? type : "JSON", text, key);
    return 0;
}
