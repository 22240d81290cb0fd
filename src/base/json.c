/* json.c — jansson helpers: typed getters, deterministic output (our own
 * serializer, for shortest round-trip reals), bounded parsing, the lossless
 * check, sanitising copy and structural equality. Schema validation lives in
 * schema.c; this file knows nothing about tools. */
#include "base/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/utf8.h"

#define LOSSLESS_MAX_DEPTH 512
/* Output and comparison refuse deeper values (and thus reference cycles)
 * instead of overflowing the stack. */
#define WALK_MAX_DEPTH 2048

/* ---- typed getters ---------------------------------------------------- */

/* Finds obj[key]. required: a missing key is MISSING_FIELD. Optional: a
 * missing key or JSON null gives *out = NULL and 0. */
static int lookup(const json_t *obj, const char *key, bool required, json_t **out, cdsh_error *err)
{
    if (!key)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_FIELD", "field name is NULL");
    if (!obj || !json_is_object(obj))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_FIELD",
                              "cannot read field \"%s\": the value is not a JSON object", key);
    *out = json_object_get(obj, key);
    if (!*out && required)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "MISSING_FIELD", "missing field \"%s\"", key);
    if (!required && json_is_null(*out))
        *out = NULL;
    return 0;
}

static int wrong_type(const char *key, const char *what, cdsh_error *err)
{
    return cdsh_error_set(err, CDSH_EINVAL, "BAD_FIELD", "field \"%s\" must be %s", key, what);
}

static int as_string(const json_t *v, const char *key, const char **out, cdsh_error *err)
{
    if (!json_is_string(v))
        return wrong_type(key, "a string", err);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return wrong_type(key, "a string without NUL characters", err);
    *out = json_string_value(v);
    return 0;
}

static int as_int(const json_t *v, const char *key, int64_t *out, cdsh_error *err)
{
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return 0;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        /* 2^63 is exactly representable; anything at or above it overflows. */
        if (d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
            *out = (int64_t)d;
            return 0;
        }
    }
    return wrong_type(key, "an integer", err);
}

static int as_number(const json_t *v, const char *key, double *out, cdsh_error *err)
{
    if (!json_is_number(v))
        return wrong_type(key, "a number", err);
    *out = json_number_value(v);
    return 0;
}

static int as_bool(const json_t *v, const char *key, bool *out, cdsh_error *err)
{
    if (!json_is_boolean(v))
        return wrong_type(key, "a boolean", err);
    *out = json_is_true(v);
    return 0;
}

static int as_object(const json_t *v, const char *key, json_t **out, cdsh_error *err)
{
    if (!json_is_object(v))
        return wrong_type(key, "an object", err);
    *out = (json_t *)v;
    return 0;
}

static int as_array(const json_t *v, const char *key, json_t **out, cdsh_error *err)
{
    if (!json_is_array(v))
        return wrong_type(key, "an array", err);
    *out = (json_t *)v;
    return 0;
}

const char *cdsh_json_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

const char *cdsh_json_str_or(const json_t *obj, const char *key, const char *dflt)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : dflt;
}

/* The getters differ only in type, so macros write them: cdsh_json_get_string,
 * _get_int, _get_number, _get_bool, _get_object, _get_array and cdsh_json_opt_string,
 * _opt_int, _opt_number, _opt_bool are defined by the lines below. */
#define REQUIRED_GETTER(name, type, as)                                                            \
    int cdsh_json_get_##name(const json_t *obj, const char *key, type *out, cdsh_error *err)       \
    {                                                                                              \
        json_t *v = NULL;                                                                          \
        int rc = lookup(obj, key, true, &v, err);                                                  \
        return rc ? rc : as(v, key, out, err);                                                     \
    }
#define OPTIONAL_GETTER(name, type, as)                                                            \
    int cdsh_json_opt_##name(const json_t *obj, const char *key, type dflt, type *out,             \
                             cdsh_error *err)                                                      \
    {                                                                                              \
        json_t *v = NULL;                                                                          \
        int rc = lookup(obj, key, false, &v, err);                                                 \
        if (rc == 0 && !v)                                                                         \
            *out = dflt;                                                                           \
        return rc || !v ? rc : as(v, key, out, err);                                               \
    }

REQUIRED_GETTER(string, const char *, as_string)
REQUIRED_GETTER(int, int64_t, as_int)
REQUIRED_GETTER(number, double, as_number)
REQUIRED_GETTER(bool, bool, as_bool)
REQUIRED_GETTER(object, json_t *, as_object)
REQUIRED_GETTER(array, json_t *, as_array)
OPTIONAL_GETTER(string, const char *, as_string)
OPTIONAL_GETTER(int, int64_t, as_int)
OPTIONAL_GETTER(number, double, as_number)
OPTIONAL_GETTER(bool, bool, as_bool)

/* ---- output ------------------------------------------------------------ */

size_t cdsh_json_format_double(double d, bool keep_real, char out[CDSH_JSON_DOUBLE_MAX])
{
    if (!isfinite(d)) {
        out[0] = '\0';
        return 0;
    }
    if (d == 0 && !keep_real) {
        strcpy(out, "0"); /* JavaScript prints -0 as 0 */
        return 1;
    }
    char sci[40];
    for (int prec = 0; prec < 17; prec++) {
        snprintf(sci, sizeof sci, "%.*e", prec, d);
        if (strtod(sci, NULL) == d)
            break;
    }
    /* sci is "[-]D[.DDD]e[+-]XX": collect the digits and the exponent. */
    char digs[20] = {0};
    size_t nd = 0;
    const char *p = sci;
    if (*p == '-')
        p++;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9' && nd < sizeof digs - 1)
            digs[nd++] = *p;
    int exp10 = *p == 'e' ? atoi(p + 1) : 0;
    while (nd > 1 && digs[nd - 1] == '0')
        nd--;
    digs[nd] = '\0';
    char *o = out;
    if (signbit(d))
        *o++ = '-';
    int n = exp10 + 1; /* digits before the decimal point */
    if (exp10 >= -6 && exp10 < 21) {
        if (n <= 0) {
            *o++ = '0';
            *o++ = '.';
            for (int i = 0; i < -n; i++)
                *o++ = '0';
            o += sprintf(o, "%s", digs);
        } else if ((size_t)n >= nd) {
            o += sprintf(o, "%s", digs);
            for (size_t i = nd; i < (size_t)n; i++)
                *o++ = '0';
            if (keep_real)
                o += sprintf(o, ".0");
        } else {
            o += sprintf(o, "%.*s.%s", n, digs, digs + n);
        }
    } else {
        *o++ = digs[0];
        if (nd > 1)
            o += sprintf(o, ".%s", digs + 1);
        o += sprintf(o, "e%c%d", exp10 < 0 ? '-' : '+', abs(exp10));
    }
    *o = '\0';
    return (size_t)(o - out);
}

static int dump_value(cdsh_strbuf *sb, const json_t *v, int indent, int depth)
{
    if (depth > WALK_MAX_DEPTH)
        return -1;
    char num[CDSH_JSON_DOUBLE_MAX];
    switch (json_typeof(v)) {
    case JSON_NULL: return cdsh_strbuf_append_str(sb, "null");
    case JSON_TRUE: return cdsh_strbuf_append_str(sb, "true");
    case JSON_FALSE: return cdsh_strbuf_append_str(sb, "false");
    case JSON_INTEGER: return cdsh_strbuf_appendf(sb, "%lld", (long long)json_integer_value(v));
    case JSON_REAL: {
        size_t n = cdsh_json_format_double(json_real_value(v), true, num);
        return n ? cdsh_strbuf_append(sb, num, n) : -1;
    }
    case JSON_STRING: {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (!cdsh_utf8_valid(s, n))
            return -1;
        return cdsh_strbuf_append_json_string(sb, s, n);
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        if (n == 0)
            return cdsh_strbuf_append_str(sb, "[]");
        cdsh_strbuf_append_char(sb, '[');
        for (size_t i = 0; i < n; i++) {
            if (i)
                cdsh_strbuf_append_char(sb, ',');
            if (indent)
                cdsh_strbuf_appendf(sb, "\n%*s", indent * (depth + 1), "");
            if (dump_value(sb, json_array_get(v, i), indent, depth + 1) < 0)
                return -1;
        }
        if (indent)
            cdsh_strbuf_appendf(sb, "\n%*s", indent * depth, "");
        return cdsh_strbuf_append_char(sb, ']');
    }
    case JSON_OBJECT: {
        if (json_object_size(v) == 0)
            return cdsh_strbuf_append_str(sb, "{}");
        cdsh_strbuf_append_char(sb, '{');
        bool first = true;
        for (void *it = json_object_iter((json_t *)v); it;
             it = json_object_iter_next((json_t *)v, it)) {
            const char *k = json_object_iter_key(it);
            size_t klen = json_object_iter_key_len(it);
            if (!cdsh_utf8_valid(k, klen))
                return -1;
            if (!first)
                cdsh_strbuf_append_char(sb, ',');
            first = false;
            if (indent)
                cdsh_strbuf_appendf(sb, "\n%*s", indent * (depth + 1), "");
            cdsh_strbuf_append_json_string(sb, k, klen);
            cdsh_strbuf_append_str(sb, indent ? ": " : ":");
            if (dump_value(sb, json_object_iter_value(it), indent, depth + 1) < 0)
                return -1;
        }
        if (indent)
            cdsh_strbuf_appendf(sb, "\n%*s", indent * depth, "");
        return cdsh_strbuf_append_char(sb, '}');
    }
    }
    return -1;
}

static char *dump(const json_t *value, int indent)
{
    if (!value)
        return NULL;
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    if (dump_value(&sb, value, indent, 0) < 0 || (indent && cdsh_strbuf_append_char(&sb, '\n'))) {
        cdsh_strbuf_deinit(&sb);
        return NULL;
    }
    return cdsh_strbuf_take(&sb, NULL);
}

char *cdsh_json_dump_compact_dup(const json_t *value)
{
    return dump(value, 0);
}

char *cdsh_json_dump_pretty_dup(const json_t *value)
{
    return dump(value, 2);
}

/* ---- input ------------------------------------------------------------- */

/* Finds the first bracket that opens level max_depth+1, outside strings.
 * jansson's own limit (2048) is compiled in, so ours is checked here. */
static bool too_deep(const char *text, size_t len, int max_depth, int *line, int *col)
{
    int depth = 0, l = 1, c = 0;
    bool in_string = false, escaped = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)text[i];
        if (ch == '\n') {
            l++;
            c = 0;
        } else if ((ch & 0xC0) != 0x80) {
            c++; /* columns count code points, like jansson's */
        }
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (ch == '\\')
                escaped = true;
            else if (ch == '"')
                in_string = false;
            continue;
        }
        if (ch == '"') {
            in_string = true;
        } else if (ch == '[' || ch == '{') {
            if (++depth > max_depth) {
                *line = l;
                *col = c;
                return true;
            }
        } else if (ch == ']' || ch == '}') {
            depth--;
        }
    }
    return false;
}

json_t *cdsh_json_parse(const char *text, size_t len, size_t max_bytes, cdsh_error *err)
{
    if (!text) {
        cdsh_error_set(err, CDSH_EINVAL, "BAD_JSON", "no JSON text given");
        return NULL;
    }
    if (max_bytes && len > max_bytes) {
        cdsh_error_set(err, CDSH_ETOOBIG, "BAD_JSON",
                       "JSON text is %zu bytes, over the limit of %zu bytes", len, max_bytes);
        return NULL;
    }
    int line, col;
    if (too_deep(text, len, LOSSLESS_MAX_DEPTH, &line, &col)) {
        cdsh_error_set(err, CDSH_EINVAL, "BAD_JSON",
                       "invalid JSON at line %d, column %d: nesting deeper than %d levels", line,
                       col, LOSSLESS_MAX_DEPTH);
        return NULL;
    }
    json_error_t jerr;
    json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!v) {
        if (json_error_code(&jerr) == json_error_out_of_memory) {
            cdsh_error_set(err, CDSH_ENOMEM, "BAD_JSON", "out of memory while parsing JSON");
            return NULL;
        }
        /* jansson quotes the offending input ("near '\xff'"): keep the message
         * valid UTF-8 without controls, since it may travel inside JSON. */
        char *reason = cdsh_utf8_sanitize_dup(jerr.text, strlen(jerr.text), NULL);
        for (char *c = reason; c && *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7F)
                *c = '?';
        cdsh_error_set(err, CDSH_EINVAL, "BAD_JSON", "invalid JSON at line %d, column %d: %s",
                       jerr.line, jerr.column, reason ? reason : "syntax error");
        free(reason);
    }
    return v;
}

/* ---- lossless JSON ----------------------------------------------------- */

static bool is_identifier(const char *k, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = k[i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
            return false;
    }
    return true;
}

/* Appends `.key`, or `["key"]` (JSON-escaped, invalid bytes replaced) for keys
 * that are not identifiers, so paths stay readable and unambiguous. */
static void path_push_key(cdsh_strbuf *path, const char *k, size_t n)
{
    if (is_identifier(k, n)) {
        cdsh_strbuf_append_char(path, '.');
        cdsh_strbuf_append(path, k, n);
        return;
    }
    size_t clean_len;
    char *clean = cdsh_utf8_sanitize_dup(k, n, &clean_len);
    cdsh_strbuf_append_char(path, '[');
    if (clean)
        cdsh_strbuf_append_json_string(path, clean, clean_len);
    cdsh_strbuf_append_char(path, ']');
    free(clean);
}

/* Very long paths (deep nesting) are shortened to their two ends so the
 * message stays within cdsh_error and still says where. */
static const char *short_path(const cdsh_strbuf *path, char out[200])
{
    if (path->len < 200)
        return path->data;
    /* Cut on code point boundaries: the path itself is valid UTF-8. */
    size_t head = cdsh_utf8_valid_prefix(path->data, 96);
    const char *tail = path->data + path->len - 96;
    while ((*tail & 0xC0) == 0x80)
        tail++;
    snprintf(out, 200, "%.*s...%s", (int)head, path->data, tail);
    return out;
}

static int check_value(const json_t *v, cdsh_strbuf *path, int depth, cdsh_error *err)
{
    char shortened[200];
    /* depth counts enclosing containers: 512 nested arrays/objects are fine */
    if (depth >= LOSSLESS_MAX_DEPTH && (json_is_array(v) || json_is_object(v)))
        return cdsh_error_set(err, CDSH_EINVAL, "NOT_LOSSLESS",
                              "%s is nested deeper than %d levels", short_path(path, shortened),
                              LOSSLESS_MAX_DEPTH);
    switch (json_typeof(v)) {
    case JSON_REAL:
        if (!isfinite(json_real_value(v)))
            return cdsh_error_set(err, CDSH_EINVAL, "NOT_LOSSLESS", "%s is not a finite number",
                                  short_path(path, shortened));
        return 0;
    case JSON_STRING: {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (!cdsh_utf8_valid(s, n))
            return cdsh_error_set(err, CDSH_EINVAL, "NOT_LOSSLESS", "%s is not valid UTF-8",
                                  short_path(path, shortened));
        if (memchr(s, '\0', n))
            return cdsh_error_set(err, CDSH_EINVAL, "NOT_LOSSLESS", "%s contains a NUL character",
                                  short_path(path, shortened));
        return 0;
    }
    case JSON_ARRAY:
        for (size_t i = 0; i < json_array_size(v); i++) {
            size_t mark = path->len;
            cdsh_strbuf_appendf(path, "[%zu]", i);
            int rc = check_value(json_array_get(v, i), path, depth + 1, err);
            cdsh_strbuf_truncate(path, mark);
            if (rc)
                return rc;
        }
        return 0;
    case JSON_OBJECT:
        for (void *it = json_object_iter((json_t *)v); it;
             it = json_object_iter_next((json_t *)v, it)) {
            const char *k = json_object_iter_key(it);
            size_t klen = json_object_iter_key_len(it);
            if (!cdsh_utf8_valid(k, klen))
                return cdsh_error_set(err, CDSH_EINVAL, "NOT_LOSSLESS",
                                      "%s has a key that is not valid UTF-8",
                                      short_path(path, shortened));
            if (memchr(k, '\0', klen))
                return cdsh_error_set(err, CDSH_EINVAL, "NOT_LOSSLESS",
                                      "%s has a key that contains a NUL character",
                                      short_path(path, shortened));
            size_t mark = path->len;
            path_push_key(path, k, klen);
            int rc = check_value(json_object_iter_value(it), path, depth + 1, err);
            cdsh_strbuf_truncate(path, mark);
            if (rc)
                return rc;
        }
        return 0;
    default: return 0;
    }
}

int cdsh_json_check_lossless(const json_t *value, const char *root, cdsh_error *err)
{
    if (!value)
        return cdsh_error_set(err, CDSH_EINVAL, "NOT_LOSSLESS", "%s is missing (NULL)",
                              root ? root : "value");
    cdsh_strbuf path;
    cdsh_strbuf_init(&path);
    cdsh_strbuf_append_str(&path, root ? root : "value");
    int rc = check_value(value, &path, 0, err);
    if (rc == 0 && path.failed)
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NOT_LOSSLESS", "out of memory checking JSON");
    cdsh_strbuf_deinit(&path);
    return rc;
}

static json_t *sanitize_string(const char *s, size_t n)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t len;
        char rep[4];
        if (cdsh_utf8_decode(s + i, n - i, &cp, &len) == 0) {
            if (cp != 0)
                cdsh_strbuf_append(&sb, s + i, len);
        } else {
            cdsh_strbuf_append(&sb, rep, cdsh_utf8_encode(CDSH_UTF8_REPLACEMENT, rep));
        }
        i += len;
    }
    json_t *out = sb.failed ? NULL : json_stringn_nocheck(sb.data, sb.len);
    cdsh_strbuf_deinit(&sb);
    return out;
}

static json_t *map_value(const json_t *v, const cdsh__json_map_ops *ops, bool flag, int depth)
{
    bool container = json_is_array(v) || json_is_object(v);
    if (depth >= ops->max_depth && (container || ops->deep_leaves))
        return ops->too_deep(ops->ud, flag);
    if (json_is_array(v)) {
        json_t *out = json_array();
        for (size_t i = 0; out && i < json_array_size(v); i++) {
            json_t *item = map_value(json_array_get(v, i), ops, flag, depth + 1);
            if (json_array_append_new(out, item) != 0) {
                json_decref(out);
                out = NULL;
            }
        }
        return out;
    }
    if (!json_is_object(v))
        return ops->leaf(ops->ud, v, flag);
    json_t *out = json_object();
    for (void *it = json_object_iter((json_t *)v); out && it;
         it = json_object_iter_next((json_t *)v, it)) {
        bool child_flag = flag;
        json_t *key =
            ops->key(json_object_iter_key(it), json_object_iter_key_len(it), flag, &child_flag);
        json_t *item =
            key ? map_value(json_object_iter_value(it), ops, child_flag, depth + 1) : NULL;
        /* Two keys may map to the same text; the later one wins. */
        int rc = key && item ? json_object_setn_new_nocheck(out, json_string_value(key),
                                                            json_string_length(key), item)
                             : -1;
        if (rc != 0 && item && key)
            item = NULL; /* _new consumed it even on failure */
        json_decref(key);
        if (rc != 0) {
            json_decref(item);
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}

json_t *cdsh__json_map_dup(const json_t *value, const cdsh__json_map_ops *ops, bool flag)
{
    return value ? map_value(value, ops, flag, 0) : NULL;
}

static json_t *sanitize_leaf(void *ud, const json_t *v, bool flag)
{
    (void)ud, (void)flag;
    switch (json_typeof(v)) {
    case JSON_REAL:
        return isfinite(json_real_value(v)) ? json_real(json_real_value(v)) : json_null();
    case JSON_INTEGER: return json_integer(json_integer_value(v));
    case JSON_STRING: return sanitize_string(json_string_value(v), json_string_length(v));
    default: return json_incref((json_t *)v); /* true/false/null are singletons */
    }
}

static json_t *sanitize_too_deep(void *ud, bool flag)
{
    (void)ud, (void)flag;
    return json_null();
}

static json_t *sanitize_key(const char *k, size_t n, bool flag, bool *child_flag)
{
    (void)flag, (void)child_flag;
    return sanitize_string(k, n);
}

json_t *cdsh_json_sanitize_dup(const json_t *value)
{
    static const cdsh__json_map_ops ops = {.max_depth = LOSSLESS_MAX_DEPTH,
                                           .leaf = sanitize_leaf,
                                           .too_deep = sanitize_too_deep,
                                           .key = sanitize_key};
    return cdsh__json_map_dup(value, &ops, false);
}

typedef struct strings_map {
    cdsh_json_string_map_fn fn;
    void *ud;
    const char *too_deep;
} strings_map;

static json_t *strings_leaf(void *ud, const json_t *v, bool flag)
{
    (void)flag;
    const strings_map *m = ud;
    switch (json_typeof(v)) {
    case JSON_STRING: {
        size_t n = 0;
        char *t = m->fn(m->ud, json_string_value(v), json_string_length(v), &n);
        json_t *out = t ? json_stringn_nocheck(t, n) : NULL;
        free(t);
        return out;
    }
    case JSON_INTEGER: return json_integer(json_integer_value(v));
    case JSON_REAL: return json_real(json_real_value(v));
    default: return json_incref((json_t *)v); /* true/false/null are singletons */
    }
}

static json_t *strings_too_deep(void *ud, bool flag)
{
    (void)flag;
    return json_string(((const strings_map *)ud)->too_deep);
}

static json_t *strings_key(const char *k, size_t n, bool flag, bool *child_flag)
{
    (void)flag, (void)child_flag;
    return json_stringn_nocheck(k, n);
}

json_t *cdsh_json_map_strings(const json_t *value, cdsh_json_string_map_fn fn, void *ud,
                              int max_depth, const char *too_deep)
{
    strings_map m = {fn, ud, too_deep};
    const cdsh__json_map_ops ops = {.max_depth = max_depth + 1,
                                    .deep_leaves = true,
                                    .leaf = strings_leaf,
                                    .too_deep = strings_too_deep,
                                    .key = strings_key,
                                    .ud = &m};
    return cdsh__json_map_dup(value, &ops, false);
}

json_t *cdsh_json_snapshot_dup(const json_t *value, const char *root, cdsh_error *err)
{
    if (cdsh_json_check_lossless(value, root, err) != 0)
        return NULL;
    json_t *copy = json_deep_copy(value);
    if (!copy)
        cdsh_error_set(err, CDSH_ENOMEM, "NOT_LOSSLESS", "out of memory copying JSON");
    return copy;
}

/* ---- equality ---------------------------------------------------------- */

static bool int_equals_real(json_int_t i, double d)
{
    if (d != floor(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0)
        return false;
    return (json_int_t)d == i;
}

static bool equal_value(const json_t *a, const json_t *b, int depth)
{
    if (depth > WALK_MAX_DEPTH)
        return false;
    if (a == b)
        return true;
    if (json_is_number(a) && json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        if (json_is_real(a) && json_is_real(b))
            return json_real_value(a) == json_real_value(b);
        return json_is_integer(a) ? int_equals_real(json_integer_value(a), json_real_value(b))
                                  : int_equals_real(json_integer_value(b), json_real_value(a));
    }
    if (json_typeof(a) != json_typeof(b))
        return false;
    switch (json_typeof(a)) {
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!equal_value(json_array_get(a, i), json_array_get(b, i), depth + 1))
                return false;
        return true;
    case JSON_OBJECT:
        if (json_object_size(a) != json_object_size(b))
            return false;
        for (void *it = json_object_iter((json_t *)a); it;
             it = json_object_iter_next((json_t *)a, it)) {
            json_t *other =
                json_object_getn(b, json_object_iter_key(it), json_object_iter_key_len(it));
            if (!other || !equal_value(json_object_iter_value(it), other, depth + 1))
                return false;
        }
        return true;
    default: return true; /* same singleton type: true, false or null */
    }
}

bool cdsh_json_equal(const json_t *a, const json_t *b)
{
    if (!a || !b)
        return a == b;
    return equal_value(a, b, 0);
}
