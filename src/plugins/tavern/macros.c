/* macros.c — SillyTavern 1.19's macro engine (see macros.h): a parser that
 * follows ST's lexer modes (plaintext, macro, arguments, variable
 * shorthand), the CST walker's single left-to-right pass with scoped-macro
 * pairing, ST's pre-processors (legacy <USER>… markers, {{time_UTC±N}}) and
 * post-processors (\{ \} unescapes, legacy {{trim}}), and the variable
 * shorthand operators. The macros themselves are the rows of
 * macros_registry.c. Knows nothing about where the text goes. */
#include "plugins/tavern/macros.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugins/tavern/macros_priv.h"

enum { FL_CLOSE = 1u, FL_PRESERVE = 2u };

enum {
    OP_GET,
    OP_INC,
    OP_DEC,
    OP_NCA, /* ??= */
    OP_NC,  /* ?? */
    OP_ORA, /* ||= */
    OP_OR,  /* || */
    OP_SUB, /* -= */
    OP_EQ,
    OP_NE,
    OP_GE,
    OP_GT,
    OP_LE,
    OP_LT,
    OP_ADD, /* += */
    OP_SET, /* = */
};

typedef struct rng_ {
    size_t s, e; /* [s, e); s == e: an empty argument */
} rng_;

typedef struct node {
    size_t start, end;  /* "{{" .. one past "}}" */
    size_t in_s, in_e;  /* between the braces */
    unsigned flags;
    bool is_var, var_global, keep_raw, removed, scoped;
    int op;
    size_t name_s, name_e;
    size_t val_s, val_e; /* variable value */
    size_t nargs;
    rng_ *args;
    size_t sc_s, sc_e, sc_end; /* scoped content and the end of its closing tag */
} node;

typedef struct nodes {
    node *v;
    size_t n, cap;
} nodes;

static void nodes_free(nodes *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        free(ns->v[i].args);
    free(ns->v);
}

static bool at(const char *t, size_t n, size_t i, const char *lit)
{
    size_t l = strlen(lit);
    return i + l <= n && !memcmp(t + i, lit, l);
}

static bool is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_word(char c)
{
    return is_ident_start(c) || (c >= '0' && c <= '9') || c == '_';
}

static size_t skip_ws(const char *t, size_t n, size_t i)
{
    size_t l;
    while ((l = cdsh__js_space(t + i, t + n)))
        i += l;
    return i;
}

static bool parse_macro(const char *t, size_t n, size_t p, int depth, node *out);

/* Scans from i to the "}}" that closes the current macro, skipping nested
 * macros. With split, "::" separates arguments (appended to *args).
 * Returns the offset of the closing "}}" or n when there is none. */
static size_t scan_to_end(const char *t, size_t n, size_t i, int depth, bool split, rng_ **args,
                          size_t *nargs)
{
    size_t arg_s = i;
    while (i < n) {
        if (at(t, n, i, "}}"))
            break;
        if (at(t, n, i, "{{")) {
            node sub;
            if (parse_macro(t, n, i, depth + 1, &sub)) {
                free(sub.args);
                i = sub.end;
                continue;
            }
            i += 2;
            continue;
        }
        if (split && at(t, n, i, "::")) {
            rng_ *a = realloc(*args, (*nargs + 1) * sizeof **args);
            if (!a)
                return n;
            *args = a;
            a[(*nargs)++] = (rng_){arg_s, i};
            i += 2;
            arg_s = i;
            continue;
        }
        i++;
    }
    if (split && i < n) {
        rng_ *a = realloc(*args, (*nargs + 1) * sizeof **args);
        if (!a)
            return n;
        *args = a;
        a[(*nargs)++] = (rng_){arg_s, i};
    }
    return i;
}

static void trim_range(const char *t, rng_ *r)
{
    const char *s = t + r->s;
    size_t l = r->e - r->s;
    cdsh__js_trim(&s, &l);
    r->s = (size_t)(s - t);
    r->e = r->s + l;
}

static bool parse_var(const char *t, size_t n, size_t i, int depth, node *out)
{
    out->is_var = true;
    out->var_global = t[i] == '$';
    i = skip_ws(t, n, i + 1);
    if (at(t, n, i, "}}")) {
        /* {{.}}: ST's parser inserts the missing name and reads variable "" */
        out->name_s = out->name_e = i;
        out->op = OP_GET;
        out->in_e = i;
        out->end = i + 2;
        return true;
    }
    if (i >= n || !is_ident_start(t[i]))
        return false;
    size_t s = i;
    while (i < n && (is_word(t[i]) || t[i] == '-'))
        i++;
    while (i > s + 1 && t[i - 1] == '-')
        i--;
    out->name_s = s;
    out->name_e = i;
    i = skip_ws(t, n, i);
    static const struct {
        const char *lit;
        int op;
    } OPS[] = {{"++", OP_INC}, {"--", OP_DEC}, {"?\?=", OP_NCA}, {"??", OP_NC}, {"||=", OP_ORA},
               {"||", OP_OR},  {"-=", OP_SUB}, {"==", OP_EQ},    {"!=", OP_NE}, {">=", OP_GE},
               {">", OP_GT},   {"<=", OP_LE},  {"<", OP_LT},     {"+=", OP_ADD}, {"=", OP_SET}};
    out->op = OP_GET;
    if (!at(t, n, i, "}}")) {
        size_t k;
        for (k = 0; k < sizeof OPS / sizeof OPS[0]; k++)
            if (at(t, n, i, OPS[k].lit))
                break;
        if (k == sizeof OPS / sizeof OPS[0])
            return false;
        out->op = OPS[k].op;
        i += strlen(OPS[k].lit);
        if (out->op == OP_INC || out->op == OP_DEC) {
            i = skip_ws(t, n, i);
        } else {
            size_t e = scan_to_end(t, n, i, depth, false, NULL, NULL);
            rng_ v = {i, e};
            trim_range(t, &v);
            out->val_s = v.s;
            out->val_e = v.e;
            i = e;
        }
    }
    if (!at(t, n, i, "}}"))
        return false;
    out->in_e = i;
    out->end = i + 2;
    return true;
}

/* Parses the macro whose "{{" is at p. false: not a macro (the braces are
 * plain text, as ST's parser recovers). */
static bool parse_macro(const char *t, size_t n, size_t p, int depth, node *out)
{
    memset(out, 0, sizeof *out);
    if (depth > CDSH_TAVERN_MACRO_MAX_DEPTH)
        return false;
    out->start = p;
    out->in_s = p + 2;
    size_t i = p + 2;
    bool comment = false;
    for (;;) {
        if (i >= n || at(t, n, i, "}}"))
            return false;
        if (at(t, n, i, "//")) {
            comment = true;
            out->name_s = i;
            out->name_e = i + 2;
            i += 2;
            break;
        }
        if (t[i] == '.' || t[i] == '$')
            return parse_var(t, n, i, depth, out);
        if (strchr("!?~#/", t[i])) {
            out->flags |= t[i] == '/' ? FL_CLOSE : t[i] == '#' ? FL_PRESERVE : 0;
            i++;
            continue;
        }
        if (t[i] == '>') {
            i++;
            continue;
        }
        size_t w = cdsh__js_space(t + i, t + n);
        if (w) {
            i += w;
            continue;
        }
        if (!is_ident_start(t[i]))
            return false;
        out->name_s = i;
        while (i < n && (is_word(t[i]) || t[i] == '-'))
            i++;
        out->name_e = i;
        break;
    }
    if (!comment) {
        /* After the name: whitespace, ':', '|', '}' or the end; anything
         * else is dropped by ST's lexer (an error it recovers from). */
        while (i < n && !at(t, n, i, "}}") && !cdsh__js_space(t + i, t + n) && t[i] != ':' &&
               t[i] != '|' && t[i] != '}')
            i++;
    }
    i = skip_ws(t, n, i);
    if (at(t, n, i, "}}")) {
        out->in_e = i;
        out->end = i + 2;
        return true;
    }
    size_t e;
    if (at(t, n, i, "::")) {
        e = scan_to_end(t, n, i + 2, depth, true, &out->args, &out->nargs);
    } else {
        if (t[i] == ':')
            i++;
        e = scan_to_end(t, n, i, depth, false, NULL, NULL);
        rng_ one = {i, e};
        trim_range(t, &one);
        if (e < n && one.s == one.e) {
            free(out->args);
            out->args = NULL;
            return false; /* "{{name:}}": the argument is missing */
        }
        if (e < n && !(out->args = malloc(sizeof *out->args))) {
            return false;
        }
        if (e < n) {
            out->args[0] = one;
            out->nargs = 1;
        }
    }
    if (e >= n) {
        free(out->args);
        out->args = NULL;
        out->nargs = 0;
        return false;
    }
    for (size_t k = 0; k < out->nargs; k++)
        trim_range(t, &out->args[k]);
    out->in_e = e;
    out->end = e + 2;
    return true;
}

static int parse_doc(const char *t, size_t n, int depth, nodes *ns)
{
    for (size_t i = 0; i + 1 < n;) {
        const char *b = memchr(t + i, '{', n - i);
        if (!b)
            break;
        i = (size_t)(b - t);
        if (i + 1 >= n || t[i + 1] != '{') {
            i++;
            continue;
        }
        if (i + 2 < n && t[i + 2] == '{') {
            i++; /* "{{{": the first brace is text */
            continue;
        }
        node nd;
        if (!parse_macro(t, n, i, depth, &nd)) {
            i += 2;
            continue;
        }
        if (ns->n == ns->cap) {
            size_t cap = ns->cap ? ns->cap * 2 : 8;
            node *v = realloc(ns->v, cap * sizeof *v);
            if (!v) {
                free(nd.args);
                return -1;
            }
            ns->v = v;
            ns->cap = cap;
        }
        ns->v[ns->n++] = nd;
        i = nd.end;
    }
    return 0;
}

/* ---- scoped pairs (MacroCstWalker#processScopedMacros) -------------------- */

static bool node_closing(const char *t, const node *nd)
{
    if (nd->flags & FL_CLOSE)
        return true;
    /* {{///}} lexes as {{// /}}: a comment whose first argument starts with '/' */
    return nd->name_e - nd->name_s == 2 && !memcmp(t + nd->name_s, "//", 2) && nd->nargs &&
           nd->args[0].e > nd->args[0].s && t[nd->args[0].s] == '/';
}

static bool can_scope(const char *t, const node *nd)
{
    const macro_def *d = cdsh__macro_find(t + nd->name_s, nd->name_e - nd->name_s);
    if (!d)
        return true;
    if (d->flags & MF_LIST)
        return false;
    size_t k = nd->nargs + 1;
    return k >= d->min_args && k <= d->max_args;
}

static bool same_name(const char *t, const node *a, const node *b)
{
    size_t la = a->name_e - a->name_s, lb = b->name_e - b->name_s;
    return la == lb && !strncasecmp(t + a->name_s, t + b->name_s, la);
}

static void pair_scopes(const char *t, nodes *ns)
{
    size_t n = ns->n;
    if (!n)
        return;
    bool *matched = calloc(n, sizeof *matched), *inside = calloc(n, sizeof *inside);
    if (!matched || !inside) {
        free(matched);
        free(inside);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        node *o = &ns->v[i];
        if (o->is_var || node_closing(t, o) || matched[i] || inside[i])
            continue;
        size_t close = n;
        int depth = 1;
        for (size_t j = i + 1; j < n; j++) {
            node *c = &ns->v[j];
            if (c->is_var || !same_name(t, o, c) || matched[j])
                continue;
            if (node_closing(t, c)) {
                if (--depth == 0) {
                    close = j;
                    break;
                }
            } else if (can_scope(t, c)) {
                depth++;
            }
        }
        if (close == n)
            continue;
        matched[i] = matched[close] = true;
        if (!can_scope(t, o)) {
            o->keep_raw = ns->v[close].keep_raw = true;
            continue;
        }
        o->scoped = true;
        o->sc_s = o->end;
        o->sc_e = ns->v[close].start;
        o->sc_end = ns->v[close].end;
        ns->v[close].removed = true;
        for (size_t j = i + 1; j < close; j++) {
            inside[j] = true;
            ns->v[j].removed = true;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (!ns->v[i].is_var && node_closing(t, &ns->v[i]) && !matched[i])
            ns->v[i].keep_raw = true;
    free(matched);
    free(inside);
}

/* ---- evaluation ------------------------------------------------------------ */

static void eval_raw(mx *x, const char *t, size_t n, uint64_t ctx_off, cdsh_strbuf *out);

static void note_unknown(mx *x, const char *name, size_t n)
{
    cdsh_tavern_macro_env *e = x->env;
    e->flags |= CDSH_TAVERN_MACRO_UNKNOWN;
    if (!e->unknown)
        return;
    size_t i;
    json_t *v;
    json_array_foreach(e->unknown, i, v) {
        if (json_string_length(v) == n && !memcmp(json_string_value(v), name, n))
            return;
    }
    json_array_append_new(e->unknown, json_stringn(name, n));
}

static bool type_ok(const char *s, uint8_t type)
{
    size_t n = strlen(s);
    cdsh__js_trim(&s, &n);
    if (type == AT_INT) {
        size_t i = n && s[0] == '-';
        if (i == n)
            return false;
        for (; i < n; i++)
            if (s[i] < '0' || s[i] > '9')
                return false;
        return true;
    }
    if (type == AT_NUM) {
        double d;
        return cdsh__js_to_number(s, n, &d) && isfinite(d);
    }
    return true;
}

typedef struct evarg {
    size_t s, e;
    const char *v;
} evarg;

static void append_raw(cdsh_strbuf *out, const char *t, const node *nd, const evarg *ea, size_t nea)
{
    cdsh_strbuf_append(out, "{{", 2);
    size_t cur = nd->in_s;
    for (size_t k = 0; k < nea; k++) {
        if (ea[k].s > cur)
            cdsh_strbuf_append(out, t + cur, ea[k].s - cur);
        cdsh_strbuf_append_str(out, ea[k].v);
        cur = ea[k].e;
    }
    if (cur < nd->in_e)
        cdsh_strbuf_append(out, t + cur, nd->in_e - cur);
    cdsh_strbuf_append(out, "}}", 2);
}

static char *eval_dup(mx *x, const char *t, size_t n, uint64_t off)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    eval_raw(x, t, n, off, &sb);
    char *r = cdsh_strbuf_take(&sb, NULL);
    return r ? r : strdup("");
}

/* ---- variables (ST's variables.js semantics on cdsh's JSON stores) -------- */

json_t *cdsh__tavern_var_number_json(double d)
{
    if (d == floor(d) && fabs(d) < 9e15)
        return json_integer((json_int_t)d);
    return json_real(d);
}

bool cdsh__tavern_var_number(const json_t *v, double *out)
{
    if (!v || json_is_null(v)) {
        *out = 0;
        return true;
    }
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return true;
    }
    if (json_is_string(v))
        return cdsh__js_to_number(json_string_value(v), json_string_length(v), out);
    return false;
}

/* JavaScript's String(value) / the engine's normalize for a stored value. */
void cdsh__macro_js_str(cdsh_strbuf *out, const json_t *v)
{
    char buf[40];
    if (!v || json_is_null(v))
        return;
    if (json_is_string(v)) {
        cdsh_strbuf_append(out, json_string_value(v), json_string_length(v));
    } else if (json_is_number(v)) {
        cdsh__js_number_str(json_number_value(v), buf);
        cdsh_strbuf_append_str(out, buf);
    } else if (json_is_boolean(v)) {
        cdsh_strbuf_append_str(out, json_is_true(v) ? "true" : "false");
    } else {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
        cdsh_strbuf_append_str(out, s);
        free(s);
    }
}

/* getLocalVariable's read: numeric strings become numbers, missing is "". */
static json_t *var_read(const json_t *raw)
{
    double d;
    if (!raw)
        return json_string("");
    if (json_is_string(raw)) {
        const char *s = json_string_value(raw);
        size_t n = json_string_length(raw);
        const char *ts = s;
        size_t tn = n;
        cdsh__js_trim(&ts, &tn);
        if (!tn || !cdsh__js_to_number(s, n, &d))
            return json_incref((json_t *)raw);
        return json_real(d);
    }
    if (json_is_number(raw))
        return json_real(json_number_value(raw));
    if (json_is_null(raw))
        return json_real(0);
    if (json_is_boolean(raw))
        return json_real(json_is_true(raw) ? 1 : 0);
    return json_incref((json_t *)raw);
}

static bool js_falsy(const json_t *v)
{
    if (!v || json_is_null(v) || json_is_false(v))
        return true;
    if (json_is_string(v))
        return json_string_length(v) == 0;
    if (json_is_number(v))
        return json_number_value(v) == 0 || isnan(json_number_value(v));
    return false;
}

json_t *cdsh__macro_var_dup(json_t *store, const char *name)
{
    return var_read(json_object_get(store, name));
}

/* addLocalVariable: array push, numeric sum, else string append. Returns the
 * new value (owned). value is a string or a number. */
json_t *cdsh__macro_var_add(json_t *store, const char *name, const json_t *value)
{
    json_t *cur = cdsh__macro_var_dup(store, name);
    if (js_falsy(cur)) {
        json_decref(cur);
        cur = json_real(0);
    }
    if (json_is_string(cur)) {
        json_t *parsed = json_loads(json_string_value(cur), JSON_DECODE_ANY, NULL);
        if (json_is_array(parsed)) {
            if (json_is_number(value)) /* JSON.stringify prints integral numbers bare */
                json_array_append_new(parsed, cdsh__tavern_var_number_json(json_number_value(value)));
            else
                json_array_append(parsed, (json_t *)value);
            char *s = json_dumps(parsed, JSON_COMPACT | JSON_PRESERVE_ORDER);
            json_object_set_new(store, name, json_string(s ? s : "[]"));
            free(s);
            json_decref(cur);
            return parsed;
        }
        json_decref(parsed);
    }
    double inc, c;
    bool inc_ok = json_is_number(value) ? (inc = json_number_value(value), true)
                                        : cdsh__js_to_number(json_string_value(value),
                                                             json_string_length(value), &inc);
    bool cur_ok = json_is_number(cur)   ? (c = json_number_value(cur), !isnan(c))
                  : json_is_string(cur) ? cdsh__js_to_number(json_string_value(cur),
                                                             json_string_length(cur), &c)
                                        : false;
    if (!inc_ok || !cur_ok || isnan(inc)) {
        cdsh_strbuf sb;
        cdsh_strbuf_init(&sb);
        if (!js_falsy(cur)) /* String(currentValue || '') */
            cdsh__macro_js_str(&sb, cur);
        cdsh__macro_js_str(&sb, value);
        json_t *s = json_stringn(sb.data ? sb.data : "", sb.len);
        cdsh_strbuf_deinit(&sb);
        json_object_set(store, name, s);
        json_decref(cur);
        return s;
    }
    json_decref(cur);
    double nv = c + inc;
    if (isnan(nv))
        return json_string("");
    json_t *num = isfinite(nv) ? cdsh__tavern_var_number_json(nv) : json_real(nv);
    if (!num) /* jansson refuses infinities: keep ST's value as text */
        num = json_string(nv > 0 ? "Infinity" : "-Infinity");
    json_object_set_new(store, name, num);
    return json_real(nv);
}

static void var_set(mx *x, json_t *store, const char *name, const char *v)
{
    if (!*name)
        return; /* ST: "Variable name cannot be empty" */
    json_object_set_new(store, name, json_string(v));
    (void)x;
}


bool cdsh__macro_split_else(const char *s, size_t n, size_t *then_len, size_t *else_at)
{
    nodes ns = {0};
    bool found = false;
    *then_len = n;
    *else_at = n;
    if (parse_doc(s, n, 0, &ns) == 0) {
        int depth = 0;
        for (size_t i = 0; i < ns.n && !found; i++) {
            const node *nd = &ns.v[i];
            if (nd->is_var)
                continue;
            size_t l = nd->name_e - nd->name_s;
            bool is_if = l == 2 && !memcmp(s + nd->name_s, "if", 2);
            bool closing = node_closing(s, nd);
            if (is_if && !closing && nd->nargs == 1) {
                depth++;
            } else if (is_if && closing) {
                depth--;
            } else if (l == 4 && !memcmp(s + nd->name_s, "else", 4) && depth == 0) {
                *then_len = nd->start;
                *else_at = nd->end;
                found = true;
            }
        }
    }
    nodes_free(&ns);
    return found;
}

/* JSON.parse of a stored value: strings are parsed, numbers stay; NULL
 * when JSON.parse would throw. */
static json_t *js_parse(const json_t *raw)
{
    if (!raw)
        return NULL;
    if (json_is_string(raw))
        return json_loads(json_string_value(raw), JSON_DECODE_ANY, NULL);
    return json_deep_copy(raw);
}

static bool js_index(const char *key, double *num)
{
    return cdsh__js_to_number(key, strlen(key), num);
}

/* The property name JavaScript uses for obj[Number(key)]. */
static void js_key(const char *key, char *buf)
{
    double d;
    if (js_index(key, &d))
        cdsh__js_number_str(d, buf);
    else
        snprintf(buf, 40, "%s", key);
}

void cdsh__macro_var_key_get(json_t *store, const char *name, const char *key, cdsh_strbuf *out)
{
    json_t *raw = json_object_get(store, name);
    json_t *parsed = js_parse(raw);
    json_t *v = NULL;
    bool keep_raw = !parsed;
    if (parsed) {
        double num;
        bool numeric = js_index(key, &num);
        char kb[40];
        if (json_is_object(parsed)) {
            if (numeric)
                js_key(key, kb);
            v = json_object_get(parsed, numeric ? kb : key);
        } else if (json_is_array(parsed)) {
            if (numeric && num >= 0 && num == floor(num))
                v = json_array_get(parsed, (size_t)num);
        } else if (json_is_string(parsed)) {
            /* "abc"[1]: one UTF-16 unit; cdsh indexes code points */
            if (numeric && num >= 0 && num == floor(num)) {
                const char *p = json_string_value(parsed);
                size_t i = 0, want = (size_t)num, len = json_string_length(parsed), at = 0;
                while (at < len && i < want) {
                    at++;
                    while (at < len && ((unsigned char)p[at] & 0xC0) == 0x80)
                        at++;
                    i++;
                }
                if (at < len) {
                    size_t e = at + 1;
                    while (e < len && ((unsigned char)p[e] & 0xC0) == 0x80)
                        e++;
                    cdsh_strbuf tmp;
                    cdsh_strbuf_init(&tmp);
                    cdsh_strbuf_append(&tmp, p + at, e - at);
                    json_t *ch = json_stringn(tmp.data, tmp.len);
                    cdsh_strbuf_deinit(&tmp);
                    json_t *rd = json_object();
                    json_object_set_new(rd, "v", ch);
                    json_t *g = cdsh__macro_var_dup(rd, "v");
                    cdsh__macro_js_str(out, g);
                    json_decref(g);
                    json_decref(rd);
                }
                json_decref(parsed);
                return;
            }
        } else if (json_is_null(parsed)) {
            cdsh_strbuf_append_char(out, '0'); /* null[key] throws; the parsed null reads as 0 */
            json_decref(parsed);
            return;
        }
    }
    json_t *tmp = json_object();
    if (keep_raw) {
        if (raw)
            json_object_set(tmp, "v", raw);
    } else if (v) {
        if (json_is_object(v) || json_is_array(v) || json_is_null(v)) {
            char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
            json_object_set_new(tmp, "v", json_string(d ? d : ""));
            free(d);
        } else {
            json_object_set(tmp, "v", v);
        }
    }
    json_t *g = cdsh__macro_var_dup(tmp, "v");
    cdsh__macro_js_str(out, g);
    json_decref(g);
    json_decref(tmp);
    json_decref(parsed);
}

void cdsh__macro_var_key_set(json_t *store, const char *name, const char *key, const char *value)
{
    json_t *raw = json_object_get(store, name);
    json_t *parsed = raw ? js_parse(raw) : json_null();
    if (!parsed)
        return; /* JSON.parse threw: nothing changes */
    double num;
    bool numeric = js_index(key, &num);
    if (json_is_null(parsed)) {
        json_decref(parsed);
        parsed = numeric ? json_array() : json_object();
    }
    if (json_is_object(parsed)) {
        char kb[40];
        if (numeric)
            js_key(key, kb);
        json_object_set_new(parsed, numeric ? kb : key, json_string(value));
    } else if (json_is_array(parsed)) {
        if (numeric && num >= 0 && num == floor(num) && num < 1e6) {
            while (json_array_size(parsed) < (size_t)num)
                json_array_append_new(parsed, json_null());
            if ((size_t)num < json_array_size(parsed))
                json_array_set_new(parsed, (size_t)num, json_string(value));
            else
                json_array_append_new(parsed, json_string(value));
        }
    } else {
        json_decref(parsed); /* a primitive: the assignment throws in strict mode */
        return;
    }
    char *d = json_dumps(parsed, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (d)
        json_object_set_new(store, name, json_string(d));
    free(d);
    json_decref(parsed);
}

static char *eval_trimmed(mx *x, const char *t, size_t n, uint64_t off);

/* The shorthand's value, evaluated on first use only (ST's lazy value). */
static const char *lazy(mx *x, const char *t, const node *nd, uint64_t ctx_off, char **val)
{
    if (!*val)
        *val = eval_trimmed(x, t + nd->val_s, nd->val_e - nd->val_s,
                            ctx_off + cdsh__js_utf16_len(t, nd->val_s));
    return *val ? *val : "";
}

/* ---- variable shorthand ({{.x}}, {{$x += 1}} …) --------------------------- */

static void eval_var(mx *x, const char *t, const node *nd, uint64_t ctx_off, cdsh_strbuf *out)
{
    x->env->flags |= CDSH_TAVERN_MACRO_VARS;
    json_t *store = nd->var_global ? x->global : x->local;
    char *name = strndup(t + nd->name_s, nd->name_e - nd->name_s);
    char *val = NULL;
#define LAZY() lazy(x, t, nd, ctx_off, &val)
    json_t *cur = NULL;
    switch (nd->op) {
    case OP_GET: cur = cdsh__macro_var_dup(store, name); cdsh__macro_js_str(out, cur); break;
    case OP_SET: var_set(x, store, name, LAZY()); break;
    case OP_INC:
    case OP_DEC: {
        json_t *one = json_real(nd->op == OP_INC ? 1 : -1);
        cur = cdsh__macro_var_add(store, name, one);
        json_decref(one);
        cdsh__macro_js_str(out, cur);
        break;
    }
    case OP_ADD: {
        json_t *v = json_string(LAZY());
        json_decref(cdsh__macro_var_add(store, name, v));
        json_decref(v);
        break;
    }
    case OP_SUB: {
        double d;
        const char *lv = LAZY();
        if (cdsh__js_to_number(lv, strlen(lv), &d)) {
            json_t *v = json_real(-d);
            json_decref(cdsh__macro_var_add(store, name, v));
            json_decref(v);
        }
        break;
    }
    case OP_OR:
    case OP_ORA: {
        cur = cdsh__macro_var_dup(store, name);
        cdsh_strbuf s;
        cdsh_strbuf_init(&s);
        cdsh__macro_js_str(&s, cur);
        bool falsy = js_falsy(cur) || cdsh__js_false_bool(s.data ? s.data : "", s.len);
        cdsh_strbuf_deinit(&s);
        if (falsy) {
            if (nd->op == OP_ORA)
                var_set(x, store, name, LAZY());
            cdsh_strbuf_append_str(out, LAZY());
        } else {
            cdsh__macro_js_str(out, cur);
        }
        break;
    }
    case OP_NC:
    case OP_NCA:
        if (json_object_get(store, name)) {
            cur = cdsh__macro_var_dup(store, name);
            cdsh__macro_js_str(out, cur);
        } else {
            if (nd->op == OP_NCA)
                var_set(x, store, name, LAZY());
            cdsh_strbuf_append_str(out, LAZY());
        }
        break;
    case OP_EQ:
    case OP_NE: {
        cur = cdsh__macro_var_dup(store, name);
        cdsh_strbuf s;
        cdsh_strbuf_init(&s);
        cdsh__macro_js_str(&s, cur);
        const char *a = s.data ? s.data : "";
        const char *lv = LAZY();
        bool eq = strlen(lv) == s.len && !memcmp(a, lv, s.len);
        cdsh_strbuf_deinit(&s);
        cdsh_strbuf_append_str(out, eq == (nd->op == OP_EQ) ? "true" : "false");
        break;
    }
    default: { /* numeric comparisons: Number(get()) against Number(value) */
        cur = cdsh__macro_var_dup(store, name);
        double a = NAN, b = NAN;
        if (json_is_number(cur))
            a = json_number_value(cur);
        else if (json_is_string(cur) &&
                 !cdsh__js_to_number(json_string_value(cur), json_string_length(cur), &a))
            a = NAN;
        const char *lv = LAZY();
        if (!cdsh__js_to_number(lv, strlen(lv), &b))
            b = NAN;
        bool r = false;
        if (!isnan(a) && !isnan(b))
            r = nd->op == OP_GT ? a > b : nd->op == OP_GE ? a >= b : nd->op == OP_LT ? a < b : a <= b;
        cdsh_strbuf_append_str(out, r ? "true" : "false");
        break;
    }
    }
#undef LAZY
    json_decref(cur);
    free(val);
    free(name);
}

/* ---- one macro -------------------------------------------------------------- */

static void eval_node(mx *x, const char *t, const node *nd, uint64_t ctx_off, cdsh_strbuf *out);

static char *eval_trimmed(mx *x, const char *t, size_t n, uint64_t off)
{
    char *s = eval_dup(x, t, n, off);
    const char *p = s;
    size_t l = strlen(s);
    cdsh__js_trim(&p, &l);
    memmove(s, p, l);
    s[l] = 0;
    return s;
}

static void eval_node(mx *x, const char *t, const node *nd, uint64_t ctx_off, cdsh_strbuf *out)
{
    if (nd->is_var) {
        eval_var(x, t, nd, ctx_off, out);
        return;
    }
    const char *name = t + nd->name_s;
    size_t nlen = nd->name_e - nd->name_s;
    const macro_def *d = cdsh__macro_find(name, nlen);
    bool delay = d && (d->flags & MF_DELAY);
    size_t argc = nd->nargs + (nd->scoped ? 1 : 0);
    char **args = calloc(argc + 1, sizeof *args);
    evarg *ea = calloc(argc + 1, sizeof *ea);
    size_t nea = 0;
    if (!args || !ea)
        goto done;
    x->depth++;
    for (size_t k = 0; k < nd->nargs; k++) {
        const rng_ *a = &nd->args[k];
        args[k] = delay ? strndup(t + a->s, a->e - a->s)
                        : eval_dup(x, t + a->s, a->e - a->s, ctx_off + cdsh__js_utf16_len(t, a->s));
        if (a->e > a->s)
            ea[nea++] = (evarg){a->s, a->e, args[k]};
    }
    if (nd->scoped) {
        size_t k = nd->nargs;
        if (nd->sc_e <= nd->sc_s) {
            args[k] = strdup("");
        } else if (delay) {
            args[k] = strndup(t + nd->sc_s, nd->sc_e - nd->sc_s);
        } else {
            char *v = eval_dup(x, t + nd->sc_s, nd->sc_e - nd->sc_s,
                               ctx_off + cdsh__js_utf16_len(t, nd->sc_s));
            if (!(nd->flags & FL_PRESERVE)) {
                cdsh_strbuf sb;
                cdsh_strbuf_init(&sb);
                cdsh__macro_trim_scoped(v, strlen(v), &sb);
                free(v);
                v = cdsh_strbuf_take(&sb, NULL);
                if (!v)
                    v = strdup("");
            }
            args[k] = v;
        }
        if (nd->sc_e > nd->sc_s)
            ea[nea++] = (evarg){nd->sc_s, nd->sc_e, args[k]};
    }
    x->depth--;
    for (size_t k = 0; k < argc; k++)
        if (!args[k])
            goto done;
    bool ok = false;
    if (d && !(d->flags & MF_UNSUPPORTED)) {
        bool arity = argc >= d->min_args && ((d->flags & MF_LIST) || argc <= d->max_args);
        bool types = true;
        for (size_t k = 0; arity && k < argc && k < d->max_args && k < 3; k++)
            types = types && type_ok(args[k], d->types[k]);
        if (arity && types) {
            char *nm = strndup(name, nlen);
            macro_call c = {.name = nm,
                            .argc = argc,
                            .args = args,
                            .scoped = nd->scoped,
                            .preserve = nd->flags & FL_PRESERVE,
                            .global_offset = ctx_off + cdsh__js_utf16_len(t, nd->start)};
            size_t mark = out->len;
            ok = nm && d->fn(x, &c, out);
            free(nm);
            if (!ok)
                cdsh_strbuf_truncate(out, mark);
            if (ok && (d->flags & MF_TURN))
                x->env->flags |= CDSH_TAVERN_MACRO_TURN_LOCAL;
            if (ok && (d->flags & MF_VARS))
                x->env->flags |= CDSH_TAVERN_MACRO_VARS;
        }
    }
    if (!ok) {
        note_unknown(x, name, nlen);
        append_raw(out, t, nd, ea, nea);
    }
done:
    for (size_t k = 0; args && k < argc; k++)
        free(args[k]);
    free(args);
    free(ea);
}

/* One pass over t: plain text as is, macros evaluated left to right. */
static void eval_raw(mx *x, const char *t, size_t n, uint64_t ctx_off, cdsh_strbuf *out)
{
    nodes ns = {0};
    if (x->depth > CDSH_TAVERN_MACRO_MAX_DEPTH) {
        x->env->flags |= CDSH_TAVERN_MACRO_TOO_BIG;
        cdsh_strbuf_append(out, t, n);
        return;
    }
    if (parse_doc(t, n, x->depth, &ns) < 0 || !ns.n) {
        cdsh_strbuf_append(out, t, n);
        nodes_free(&ns);
        return;
    }
    pair_scopes(t, &ns);
    size_t cur = 0;
    for (size_t i = 0; i < ns.n; i++) {
        const node *nd = &ns.v[i];
        if (nd->removed)
            continue;
        if (nd->start > cur)
            cdsh_strbuf_append(out, t + cur, nd->start - cur);
        size_t mark = out->len;
        if (nd->keep_raw) {
            cdsh_strbuf_append(out, t + nd->start, nd->end - nd->start);
        } else {
            x->depth++;
            eval_node(x, t, nd, ctx_off, out);
            x->depth--;
        }
        if (out->len > CDSH_TAVERN_MACRO_MAX_BYTES) {
            cdsh_strbuf_truncate(out, mark);
            cdsh_strbuf_append(out, t + nd->start, nd->end - nd->start);
            x->env->flags |= CDSH_TAVERN_MACRO_TOO_BIG;
        }
        cur = nd->scoped && nd->sc_end > nd->end && !nd->keep_raw ? nd->sc_end : nd->end;
    }
    if (cur < n)
        cdsh_strbuf_append(out, t + cur, n - cur);
    nodes_free(&ns);
}

/* ---- pre- and post-processors ------------------------------------------------ */

static void pre_process(const char *t, size_t n, cdsh_strbuf *out)
{
    static const struct {
        const char *tok, *rep;
    } M[] = {{"<USER>", "{{user}}"},   {"<BOT>", "{{char}}"},
             {"<CHAR>", "{{char}}"},   {"<GROUP>", "{{group}}"},
             {"<CHARIFNOTGROUP>", "{{charIfNotGroup}}"}};
    for (size_t i = 0; i < n;) {
        /* {{time_UTC±N}} -> {{time::UTC±N}} */
        if (t[i] == '{' && i + 11 < n && !strncasecmp(t + i, "{{time_utc", 10) &&
            (t[i + 10] == '+' || t[i + 10] == '-')) {
            size_t j = i + 11;
            while (j < n && t[j] >= '0' && t[j] <= '9')
                j++;
            if (j > i + 11 && at(t, n, j, "}}")) {
                cdsh_strbuf_append_str(out, "{{time::");
                cdsh_strbuf_append(out, t + i + 7, j - (i + 7));
                cdsh_strbuf_append_str(out, "}}");
                i = j + 2;
                continue;
            }
        }
        if (t[i] == '<') {
            size_t k;
            for (k = 0; k < sizeof M / sizeof M[0]; k++) {
                size_t l = strlen(M[k].tok);
                if (i + l <= n && !strncasecmp(t + i, M[k].tok, l))
                    break;
            }
            if (k < sizeof M / sizeof M[0]) {
                cdsh_strbuf_append_str(out, M[k].rep);
                i += strlen(M[k].tok);
                continue;
            }
        }
        cdsh_strbuf_append_char(out, t[i++]);
    }
}

static void post_process(const char *t, size_t n, cdsh_strbuf *out)
{
    /* \{ and \} lose their backslash. */
    cdsh_strbuf a;
    cdsh_strbuf_init(&a);
    for (size_t i = 0; i < n; i++) {
        if (t[i] == '\\' && i + 1 < n && (t[i + 1] == '{' || t[i + 1] == '}')) {
            cdsh_strbuf_append_char(&a, t[++i]);
            continue;
        }
        cdsh_strbuf_append_char(&a, t[i]);
    }
    /* (?:\r?\n)*{{trim}}(?:\r?\n)* is removed. */
    const char *s = a.data ? a.data : "";
    size_t len = a.len, cur = 0;
    for (size_t i = 0; i + 8 <= len;) {
        if (strncasecmp(s + i, "{{trim}}", 8)) {
            i++;
            continue;
        }
        size_t b = i;
        while (b > cur && s[b - 1] == '\n') {
            b--;
            if (b > cur && s[b - 1] == '\r')
                b--;
        }
        size_t e = i + 8;
        for (;;) {
            if (e < len && s[e] == '\n')
                e++;
            else if (e + 1 < len && s[e] == '\r' && s[e + 1] == '\n')
                e += 2;
            else
                break;
        }
        cdsh_strbuf_append(out, s + cur, b - cur);
        cur = i = e;
    }
    cdsh_strbuf_append(out, s + cur, len - cur);
    cdsh_strbuf_deinit(&a);
}

void cdsh__macro_evaluate(mx *x, const char *text, size_t n, uint64_t ctx_off, cdsh_strbuf *out)
{
    if (!n)
        return;
    if (x->depth > CDSH_TAVERN_MACRO_MAX_DEPTH) {
        x->env->flags |= CDSH_TAVERN_MACRO_TOO_BIG;
        cdsh_strbuf_append(out, text, n);
        return;
    }
    cdsh_strbuf pre, mid;
    cdsh_strbuf_init(&pre);
    cdsh_strbuf_init(&mid);
    pre_process(text, n, &pre);
    eval_raw(x, pre.data ? pre.data : "", pre.len, ctx_off, &mid);
    post_process(mid.data ? mid.data : "", mid.len, out);
    cdsh_strbuf_deinit(&pre);
    cdsh_strbuf_deinit(&mid);
}

void cdsh__macro_trim_scoped(const char *s, size_t n, cdsh_strbuf *out)
{
    /* The first non-blank line's indentation is removed from every line. */
    size_t base = 0;
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t e = nl ? (size_t)(nl - s) : n;
        const char *ls = s + i;
        size_t ll = e - i;
        cdsh__js_trim(&ls, &ll);
        if (ll) {
            while (i + base < e && (s[i + base] == ' ' || s[i + base] == '\t'))
                base++;
            break;
        }
        i = e + 1;
        if (!nl)
            break;
    }
    cdsh_strbuf d;
    cdsh_strbuf_init(&d);
    if (!base) {
        cdsh_strbuf_append(&d, s, n);
    } else {
        for (size_t i = 0; i <= n;) {
            const char *nl = memchr(s + i, '\n', n - i);
            size_t e = nl ? (size_t)(nl - s) : n;
            size_t ind = 0;
            while (i + ind < e && (s[i + ind] == ' ' || s[i + ind] == '\t'))
                ind++;
            if (ind >= base) {
                cdsh_strbuf_append(&d, s + i + base, e - i - base);
            } else {
                const char *p = s + i;
                size_t l = e - i, w;
                while ((w = cdsh__js_space(p, p + l)))
                    p += w, l -= w;
                cdsh_strbuf_append(&d, p, l);
            }
            if (!nl)
                break;
            cdsh_strbuf_append_char(&d, '\n');
            i = e + 1;
        }
    }
    const char *p = d.data ? d.data : "";
    size_t l = d.len;
    cdsh__js_trim(&p, &l);
    cdsh_strbuf_append(out, p, l);
    cdsh_strbuf_deinit(&d);
}

char *cdsh_tavern_macros_expand_dup(const char *text, cdsh_tavern_macro_env *env)
{
    if (!text || !env)
        return NULL;
    if (!strchr(text, '<') && !strstr(text, "{{") && !strchr(text, '\\'))
        return strdup(text); /* nothing to expand: the common case */
    mx x = {.env = env};
    json_t *scratch_l = NULL, *scratch_g = NULL;
    x.local = env->vars_local ? env->vars_local : (scratch_l = json_object());
    x.global = env->vars_global ? env->vars_global : (scratch_g = json_object());
    size_t n = strlen(text);
    x.content_hash = cdsh__js_string_hash(text, n);
    cdsh_strbuf out;
    cdsh_strbuf_init(&out);
    cdsh__macro_evaluate(&x, text, n, 0, &out);
    json_decref(scratch_l);
    json_decref(scratch_g);
    if (out.failed) {
        cdsh_strbuf_deinit(&out);
        return NULL;
    }
    char *r = cdsh_strbuf_take(&out, NULL);
    return r ? r : strdup("");
}

bool cdsh_tavern_macros_turn_local(const char *text)
{
    if (!text)
        return false;
    for (const char *p = strstr(text, "{{"); p; p = strstr(p + 2, "{{")) {
        const char *q = p + 2;
        while (*q && (strchr("!?~#/> \t\r\n", *q)))
            q++;
        if (*q == '.' || *q == '$')
            return true; /* variable shorthand: depends on the turn's variables */
        size_t l = 0;
        while (is_word(q[l]) || q[l] == '-')
            l++;
        if (q[0] == '/' && q[1] == '/')
            continue;
        const macro_def *d = l ? cdsh__macro_find(q, l) : NULL;
        if (d && (d->flags & MF_TURN))
            return true;
        if (l >= 8 && !strncasecmp(q, "time_utc", 8))
            return true;
    }
    return false;
}
