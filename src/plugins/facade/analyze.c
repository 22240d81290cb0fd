/* analyze.c — tokenizer and walker for DSH plugin sources, the directory
 * walk, grouping and candidates, and the same report for a live registry.
 * Rendering is report.c. */
#include "plugins/facade/analyze.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/strbuf.h"
#include "base/utf8.h"
#include "host/tools.h"
#include "plugins/facade/service.h"

/* Why a hand-written tokenizer: no packaged JS/TS parser fits (Duktape parses
 * JavaScript but not TypeScript, and nothing here should execute plugin
 * code), and the original's regex scan mis-reads braces inside comments and
 * regex literals. This tokenizer knows strings, template literals (with nested
 * ${...}), comments, regex literals and numbers; the walker then reads object
 * literals member by member, which is all the digest's patterns need. */

typedef enum tkind { T_IDENT, T_STR, T_TPL, T_PUNCT, T_NUM, T_REGEX } tkind;

typedef struct tok {
    tkind kind;
    size_t off, len; /* raw text, quotes included for strings and templates */
    unsigned line;
} tok;

typedef struct lexer {
    const char *s;
    size_t n, pos;
    unsigned line;
    tok *toks;
    size_t ntoks, cap;
} lexer;

static bool ident_start(unsigned char c)
{
    return isalpha(c) || c == '_' || c == '$' || c >= 0x80;
}

static bool ident_char(unsigned char c)
{
    return ident_start(c) || isdigit(c);
}

static int push(lexer *lx, tkind kind, size_t off, size_t end, unsigned line)
{
    if (lx->ntoks == lx->cap) {
        size_t cap = lx->cap ? lx->cap * 2 : 256;
        tok *t = realloc(lx->toks, cap * sizeof *t);
        if (!t)
            return -1;
        lx->toks = t, lx->cap = cap;
    }
    lx->toks[lx->ntoks++] = (tok){kind, off, end - off, line};
    return 0;
}

static void advance(lexer *lx)
{
    if (lx->s[lx->pos] == '\n')
        lx->line++;
    lx->pos++;
}

static void skip_template(lexer *lx);

/* Skips a quoted string starting at the quote; stops at an unescaped newline. */
static void skip_string(lexer *lx)
{
    char q = lx->s[lx->pos];
    advance(lx);
    while (lx->pos < lx->n && lx->s[lx->pos] != q) {
        if (lx->s[lx->pos] == '\n')
            return; /* unterminated: JS strings do not span lines */
        if (lx->s[lx->pos] == '\\' && lx->pos + 1 < lx->n)
            advance(lx);
        advance(lx);
    }
    if (lx->pos < lx->n)
        advance(lx);
}

static bool skip_comment(lexer *lx)
{
    if (lx->s[lx->pos] != '/' || lx->pos + 1 >= lx->n)
        return false;
    if (lx->s[lx->pos + 1] == '/') {
        while (lx->pos < lx->n && lx->s[lx->pos] != '\n')
            lx->pos++;
        return true;
    }
    if (lx->s[lx->pos + 1] == '*') {
        lx->pos += 2;
        while (lx->pos < lx->n &&
               !(lx->s[lx->pos] == '*' && lx->pos + 1 < lx->n && lx->s[lx->pos + 1] == '/'))
            advance(lx);
        lx->pos = lx->pos + 2 <= lx->n ? lx->pos + 2 : lx->n;
        return true;
    }
    return false;
}

/* Skips the expression inside ${ ... } up to its closing brace. */
static void skip_substitution(lexer *lx)
{
    int depth = 1;
    while (lx->pos < lx->n) {
        char c = lx->s[lx->pos];
        if (skip_comment(lx))
            continue;
        if (c == '"' || c == '\'')
            skip_string(lx);
        else if (c == '`')
            skip_template(lx);
        else if (c == '{')
            depth++, advance(lx);
        else if (c == '}') {
            advance(lx);
            if (--depth == 0)
                return;
        } else
            advance(lx);
    }
}

static void skip_template(lexer *lx)
{
    advance(lx); /* the backtick */
    while (lx->pos < lx->n && lx->s[lx->pos] != '`') {
        if (lx->s[lx->pos] == '\\' && lx->pos + 1 < lx->n) {
            advance(lx);
            advance(lx);
        } else if (lx->s[lx->pos] == '$' && lx->pos + 1 < lx->n && lx->s[lx->pos + 1] == '{') {
            lx->pos += 2;
            skip_substitution(lx);
        } else
            advance(lx);
    }
    if (lx->pos < lx->n)
        advance(lx);
}

static bool tok_is(const lexer *lx, const tok *t, const char *text)
{
    return t->len == strlen(text) && memcmp(lx->s + t->off, text, t->len) == 0;
}

/* Whether a '/' here starts a regex literal, judged by the previous token. */
static bool regex_allowed(const lexer *lx)
{
    if (lx->ntoks == 0)
        return true;
    const tok *p = &lx->toks[lx->ntoks - 1];
    if (p->kind == T_NUM || p->kind == T_STR || p->kind == T_TPL || p->kind == T_REGEX)
        return false;
    if (p->kind == T_PUNCT)
        return !strchr(")]}", lx->s[p->off]);
    static const char *const kw[] = {"return", "typeof", "instanceof", "in",    "of",
                                     "new",    "delete", "void",       "throw", "case",
                                     "do",     "else",   "yield",      "await", NULL};
    for (const char *const *k = kw; *k; k++)
        if (tok_is(lx, p, *k))
            return true;
    return false;
}

/* Scans a regex literal; false (nothing consumed) if it is not one. */
static bool skip_regex(lexer *lx)
{
    size_t p = lx->pos + 1;
    bool cls = false;
    while (p < lx->n && lx->s[p] != '\n') {
        char c = lx->s[p];
        if (c == '\\' && p + 1 < lx->n && lx->s[p + 1] != '\n')
            p += 2;
        else if (c == '[')
            cls = true, p++;
        else if (c == ']')
            cls = false, p++;
        else if (c == '/' && !cls)
            break;
        else
            p++;
    }
    if (p >= lx->n || lx->s[p] != '/')
        return false;
    p++;
    while (p < lx->n && ident_char((unsigned char)lx->s[p]))
        p++;
    lx->pos = p;
    return true;
}

static int lex(lexer *lx)
{
    while (lx->pos < lx->n) {
        unsigned char c = (unsigned char)lx->s[lx->pos];
        size_t start = lx->pos;
        unsigned line = lx->line;
        if (isspace(c)) {
            advance(lx);
            continue;
        }
        if (skip_comment(lx))
            continue;
        tkind kind;
        if (c == '"' || c == '\'') {
            skip_string(lx);
            kind = T_STR;
        } else if (c == '`') {
            skip_template(lx);
            kind = T_TPL;
        } else if (ident_start(c)) {
            while (lx->pos < lx->n && ident_char((unsigned char)lx->s[lx->pos]))
                lx->pos++;
            kind = T_IDENT;
        } else if (isdigit(c) || (c == '.' && lx->pos + 1 < lx->n &&
                                  isdigit((unsigned char)lx->s[lx->pos + 1]))) {
            while (lx->pos < lx->n && (isalnum((unsigned char)lx->s[lx->pos]) ||
                                       lx->s[lx->pos] == '.' || lx->s[lx->pos] == '_'))
                lx->pos++;
            kind = T_NUM;
        } else if (c == '/' && regex_allowed(lx) && skip_regex(lx)) {
            kind = T_REGEX;
        } else {
            lx->pos++;
            kind = T_PUNCT;
        }
        if (push(lx, kind, start, lx->pos, line))
            return -1;
    }
    return 0;
}

/* ---- walker ------------------------------------------------------------------ */

typedef struct member {
    size_t key_off, key_len; /* key text without quotes */
    bool bare;               /* key is a plain identifier */
    size_t v0, v1;           /* value tokens [v0, v1) */
} member;

typedef struct object {
    member *m;
    size_t n;
    size_t end; /* index of the closing brace (or ntoks) */
} object;

static bool punct(const lexer *lx, size_t i, char c)
{
    return i < lx->ntoks && lx->toks[i].kind == T_PUNCT && lx->s[lx->toks[i].off] == c;
}

static bool opener(const lexer *lx, size_t i)
{
    return punct(lx, i, '{') || punct(lx, i, '(') || punct(lx, i, '[');
}

static bool closer(const lexer *lx, size_t i)
{
    return punct(lx, i, '}') || punct(lx, i, ')') || punct(lx, i, ']');
}

/* Reads the members of the object literal whose '{' is token `open`. */
static int parse_object(const lexer *lx, size_t open, object *o)
{
    memset(o, 0, sizeof *o);
    size_t cap = 0;
    size_t i = open + 1;
    while (i < lx->ntoks && !punct(lx, i, '}')) {
        size_t start = i;
        /* find the end of this member: ',' or '}' at depth 0 */
        int depth = 0;
        size_t colon = 0;
        while (i < lx->ntoks) {
            if (opener(lx, i))
                depth++;
            else if (closer(lx, i)) {
                if (depth == 0)
                    break;
                depth--;
            } else if (depth == 0 && punct(lx, i, ','))
                break;
            else if (depth == 0 && !colon && punct(lx, i, ':'))
                colon = i;
            i++;
        }
        const tok *k = &lx->toks[start];
        if (colon == start + 1 &&
            (k->kind == T_IDENT || k->kind == T_STR || k->kind == T_TPL || k->kind == T_NUM)) {
            if (o->n == cap) {
                cap = cap ? cap * 2 : 8;
                member *m = realloc(o->m, cap * sizeof *m);
                if (!m)
                    return -1;
                o->m = m;
            }
            bool quoted = k->kind == T_STR || k->kind == T_TPL;
            size_t klen = k->len;
            if (quoted)
                klen = klen >= 2 ? klen - 2 : 0;
            o->m[o->n++] =
                (member){quoted ? k->off + 1 : k->off, klen, k->kind == T_IDENT, colon + 1, i};
        }
        if (punct(lx, i, ','))
            i++;
        else if (!punct(lx, i, '}'))
            break; /* an unbalanced closer: stop here */
    }
    o->end = i;
    return 0;
}

static const member *find_member(const lexer *lx, const object *o, const char *key)
{
    for (size_t i = 0; i < o->n; i++)
        if (o->m[i].key_len == strlen(key) &&
            memcmp(lx->s + o->m[i].key_off, key, o->m[i].key_len) == 0)
            return &o->m[i];
    return NULL;
}

/* JSON string of s[0..n), invalid UTF-8 replaced. */
static json_t *jstr(const char *s, size_t n)
{
    char *clean = cdsh_utf8_sanitize_dup(s, n, &n);
    json_t *v = clean ? json_stringn(clean, n) : NULL;
    free(clean);
    return v;
}

/* A string-literal value's contents (raw, without quotes), or NULL. */
static json_t *string_value(const lexer *lx, const member *m)
{
    if (!m || m->v0 >= m->v1)
        return NULL;
    const tok *t = &lx->toks[m->v0];
    if ((t->kind != T_STR && t->kind != T_TPL) || t->len < 2 ||
        lx->s[t->off + t->len - 1] != lx->s[t->off])
        return NULL;
    return jstr(lx->s + t->off + 1, t->len - 2);
}

/* Whitespace collapsed to single spaces, trimmed, at most 300 code points
 * (never cutting one): the analyzer's description form. */
static json_t *flatten(const char *raw, size_t len)
{
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    size_t o = 0, cps = 0;
    bool space = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (isspace(c)) {
            space = o > 0;
            continue;
        }
        if (space && ++cps > 300)
            break;
        if (space)
            out[o++] = ' ', space = false;
        if ((c & 0xC0) != 0x80 && ++cps > 300)
            break;
        out[o++] = (char)c;
    }
    json_t *v = jstr(out, o);
    free(out);
    return v;
}

static json_t *description_of(const lexer *lx, const member *m)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    bool any = false;
    for (size_t i = m ? m->v0 : 0; m && i < m->v1; i++) {
        const tok *t = &lx->toks[i];
        if ((t->kind == T_STR || t->kind == T_TPL) && t->len >= 2) {
            if (any)
                cdsh_strbuf_append_char(&sb, ' ');
            cdsh_strbuf_append(&sb, lx->s + t->off + 1, t->len - 2);
            any = true;
        }
    }
    if (!any && m && m->v0 < m->v1) {
        size_t a = lx->toks[m->v0].off, b = lx->toks[m->v1 - 1].off + lx->toks[m->v1 - 1].len;
        cdsh_strbuf_append(&sb, lx->s + a, b - a);
    }
    size_t len = 0;
    char *raw = cdsh_strbuf_take(&sb, &len);
    json_t *v = raw ? flatten(raw, len) : NULL;
    free(raw);
    return v;
}

/* Top-level bare-identifier keys of a `parameters: {...}` value, or NULL. */
static json_t *parameter_names(const lexer *lx, const member *m)
{
    if (!m || m->v0 >= m->v1 || !punct(lx, m->v0, '{'))
        return NULL;
    object o;
    if (parse_object(lx, m->v0, &o))
        return NULL;
    json_t *names = json_array();
    for (size_t i = 0; names && i < o.n; i++) {
        if (!o.m[i].bare)
            continue;
        json_t *k = jstr(lx->s + o.m[i].key_off, o.m[i].key_len);
        bool dup = false;
        size_t j;
        json_t *x;
        json_array_foreach(names, j, x) {
            dup = dup || json_equal(x, k);
        }
        if (dup)
            json_decref(k);
        else
            json_array_append_new(names, k);
    }
    free(o.m);
    return names;
}

static void add_tool(json_t *tools, const lexer *lx, const object *o, json_t *name, size_t at,
                     const char *file, json_t *params)
{
    const char *n = json_string_value(name);
    json_t *t = json_pack("{s:o, s:b, s:o}", "name", name, "dynamic", strstr(n, "${") != NULL,
                          "description", description_of(lx, find_member(lx, o, "description")));
    if (!t)
        return;
    if (params)
        json_object_set_new(t, "parameters", params);
    json_object_set_new(t, "file", json_string(file));
    json_object_set_new(t, "line", json_integer(lx->toks[at].line));
    json_array_append_new(tools, t);
}

/* Every static `name: '<x>'` anywhere in tokens [a, b), templates with ${ excluded. */
static json_t *operation_names(const lexer *lx, size_t a, size_t b)
{
    json_t *names = json_array();
    for (size_t i = a; names && i + 2 < b; i++) {
        const tok *k = &lx->toks[i];
        bool key = (k->kind == T_IDENT && k->len == 4 && memcmp(lx->s + k->off, "name", 4) == 0) ||
                   ((k->kind == T_STR || k->kind == T_TPL) && k->len == 6 &&
                    memcmp(lx->s + k->off + 1, "name", 4) == 0);
        if (!key || !punct(lx, i + 1, ':'))
            continue;
        member m = {0, 0, false, i + 2, i + 3};
        json_t *v = string_value(lx, &m);
        if (v && !strstr(json_string_value(v), "${"))
            json_array_append_new(names, v);
        else
            json_decref(v);
    }
    return names;
}

static bool capability_call(const lexer *lx, size_t i)
{
    if (i < 2 || !punct(lx, i - 1, '.'))
        return false;
    size_t j = i - 2;
    if (punct(lx, j, '?') && j > 0)
        j--;
    const tok *t = &lx->toks[j];
    return t->kind == T_IDENT && t->len == 12 && memcmp(lx->s + t->off, "capabilities", 12) == 0;
}

/* For `ident({` (and TypeScript's `defineTool<T>({`), the index of the
 * brace; 0 when token i does not start such a call. */
static size_t call_object(const lexer *lx, size_t i)
{
    size_t j = i + 1;
    if (tok_is(lx, &lx->toks[i], "defineTool") && punct(lx, j, '<')) {
        int depth = 0;
        for (; j < lx->ntoks && j < i + 64; j++) {
            if (punct(lx, j, '<'))
                depth++;
            else if (punct(lx, j, '>') && --depth == 0)
                break;
        }
        j++;
    }
    return punct(lx, j, '(') && punct(lx, j + 1, '{') ? j + 1 : 0;
}

json_t *cdsh_facade_analyze_source(const char *text, size_t len, const char *file)
{
    lexer lx = {.s = text ? text : "", .n = text ? len : 0, .line = 1};
    json_t *tools = json_array(), *caps = json_array();
    json_t *out = json_pack("{s:o, s:o}", "tools", tools, "capabilities", caps);
    if (!out || lex(&lx)) {
        free(lx.toks);
        json_decref(out);
        return NULL;
    }
    if (!file)
        file = "";
    for (size_t i = 0; i + 2 < lx.ntoks; i++) {
        const tok *t = &lx.toks[i];
        if (t->kind != T_IDENT)
            continue;
        size_t open = call_object(&lx, i);
        if (!open)
            continue;
        object o;
        if (parse_object(&lx, open, &o))
            break;
        json_t *name = string_value(&lx, find_member(&lx, &o, "name"));
        const member *params = find_member(&lx, &o, "parameters");
        if (tok_is(&lx, t, "defineTool")) {
            size_t at = i;
            if (i >= 2 && punct(&lx, i - 1, '.') && tok_is(&lx, &lx.toks[i - 2], "harness"))
                at = i - 2;
            if (name)
                add_tool(tools, &lx, &o, name, at, file, parameter_names(&lx, params));
        } else {
            json_t *pn = name ? parameter_names(&lx, params) : NULL;
            if (pn)
                add_tool(tools, &lx, &o, name, i, file, pn);
            else
                json_decref(name);
            if (tok_is(&lx, t, "register") && capability_call(&lx, i)) {
                json_t *id = string_value(&lx, find_member(&lx, &o, "id"));
                size_t at = punct(&lx, i - 2, '?') ? i - 3 : i - 2;
                if (id)
                    json_array_append_new(caps,
                                          json_pack("{s:o, s:o, s:s, s:i}", "id", id, "operations",
                                                    operation_names(&lx, open + 1, o.end), "file",
                                                    file, "line", (int)lx.toks[at].line));
            }
        }
        free(o.m);
    }
    free(lx.toks);
    return out;
}

/* ---- grouping and classification ------------------------------------------- */

static const char *const primitive_hints[] = {
    "extract",  "parse", "read",  "write",   "render", "layout", "ocr",      "fetch",
    "list",     "get",   "set",   "create",  "update", "delete", "remove",   "insert",
    "append",   "merge", "split", "convert", "encode", "decode", "compress", "upload",
    "download", "open",  "close", "scan",    "probe",  "raw",    NULL};
static const char *const operation_hints[] = {
    "analyze", "analyse",  "inspect", "review",   "summarize", "summarise", "search",
    "find",    "locate",   "modify",  "edit",     "apply",     "transform", "publish",
    "deploy",  "generate", "compose", "diagnose", "compare",   "diff",      "report",
    "explain", "resolve",  "repair",  "migrate",  NULL};

static bool sep(char c)
{
    return c == '.' || c == '_' || c == '-';
}

/* The next part of a name split on . _ - (empty parts skipped): its start,
 * with *len set and *p moved past it; NULL when no part is left. */
static const char *next_part(const char **p, size_t *len)
{
    while (**p && sep(**p))
        (*p)++;
    if (!**p)
        return NULL;
    const char *s = *p;
    while (**p && !sep(**p))
        (*p)++;
    *len = (size_t)(*p - s);
    return s;
}

char *cdsh_facade_group_dup(const char *name)
{
    const char *p = name ? name : "", *first = NULL, *part;
    size_t parts = 0, first_len = 0, len;
    while ((part = next_part(&p, &len)))
        if (parts++ == 0)
            first = part, first_len = len;
    return parts >= 2 ? strndup(first, first_len) : strdup("");
}

const char *cdsh_facade_classify(const char *name)
{
    const char *p = name ? name : "", *last = NULL, *part;
    size_t len = 0, plen;
    while ((part = next_part(&p, &plen)))
        last = part, len = plen;
    char lower[32];
    if (len == 0 || len >= sizeof lower)
        return "unclassified";
    for (size_t i = 0; i < len; i++)
        lower[i] = (char)tolower((unsigned char)last[i]);
    lower[len] = 0;
    for (const char *const *h = operation_hints; *h; h++)
        if (strcmp(lower, *h) == 0)
            return "operation-like";
    for (const char *const *h = primitive_hints; *h; h++)
        if (strcmp(lower, *h) == 0)
            return "primitive-like";
    return "unclassified";
}

json_t *cdsh_facade_analyze_build(const char *root, const json_t *scanned, const json_t *tools,
                                  const json_t *capabilities)
{
    json_t *groups = json_object(); /* group -> [tool records], insertion order */
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        char *g = cdsh_facade_group_dup(json_string_value(json_object_get(t, "name")));
        if (!g)
            continue;
        json_t *arr = json_object_get(groups, g);
        if (!arr) {
            arr = json_array();
            json_object_set_new(groups, g, arr);
        }
        json_array_append(arr, t);
        free(g);
    }
    json_t *glist = json_array(), *cands = json_array();
    const char *g;
    json_t *members;
    json_object_foreach(groups, g, members) {
        json_t *names = json_array();
        bool dynamic = false;
        json_array_foreach(members, i, t) {
            json_array_append(names, json_object_get(t, "name"));
            dynamic = dynamic || json_is_true(json_object_get(t, "dynamic"));
        }
        json_array_append_new(glist, json_pack("{s:s, s:o}", "group", g, "tools", names));
        if (!*g || json_array_size(members) < 2 || dynamic)
            continue;
        json_t *ctools = json_array(), *prim = json_array(), *ops = json_array();
        cdsh_strbuf q;
        cdsh_strbuf_init(&q);
        json_array_foreach(members, i, t) {
            const char *name = json_string_value(json_object_get(t, "name"));
            const char *kind = cdsh_facade_classify(name);
            json_t *params = json_object_get(t, "parameters");
            json_array_append_new(ctools, json_pack("{s:s, s:s, s:o}", "name", name, "kind", kind,
                                                    "parameters",
                                                    params ? json_incref(params) : json_array()));
            if (strcmp(kind, "operation-like") == 0) {
                json_array_append_new(ops, json_string(name));
            } else {
                cdsh_strbuf_appendf(&q, "%s\"%s\"", json_array_size(prim) ? ", " : "", name);
                json_array_append_new(prim, json_string(name));
            }
        }
        char *qs = cdsh_strbuf_take(&q, NULL);
        char *question = NULL;
        if (asprintf(&question, "Are %s steps of one %s operation, or independent capabilities?",
                     qs && *qs ? qs : "(none)", g) < 0)
            question = NULL;
        json_array_append_new(cands, json_pack("{s:s, s:o, s:o, s:o, s:s?}", "group", g, "tools",
                                               ctools, "primitiveLike", prim, "operationLike", ops,
                                               "question", question));
        free(qs);
        free(question);
    }
    json_decref(groups);
    json_t *tcopy = json_deep_copy(tools);
    json_t *report = json_pack(
        "{s:s, s:O, s:o, s:O, s:o, s:o, s:{s:I, s:I, s:I, s:I}}", "root", root ? root : "",
        "scannedFiles", scanned, "tools", tcopy ? tcopy : json_array(), "capabilities",
        capabilities, "groups", glist, "candidates", cands, "counts", "files",
        (json_int_t)json_array_size(scanned), "tools", (json_int_t)json_array_size(tools),
        "capabilities", (json_int_t)json_array_size(capabilities), "candidates",
        (json_int_t)json_array_size(cands));
    return report;
}

/* ---- directory walk ------------------------------------------------------------ */

static const char *const skip_dirs[] = {"node_modules", ".git", "dist",  "build", ".turbo",
                                        "coverage",     "test", "tests", NULL};
static const char *const exts[] = {".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", NULL};

static bool has_ext(const char *name)
{
    size_t n = strlen(name);
    for (const char *const *e = exts; *e; e++)
        if (n >= strlen(*e) && strcmp(name + n - strlen(*e), *e) == 0)
            return true;
    return false;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Collects relative paths of source files under root/rel (depth-limited). */
static void walk(const char *root, const char *rel, json_t *files, int depth)
{
    if (depth > 64)
        return;
    char *dir = *rel ? cdsh_fs_path_join_dup(root, rel) : strdup(root);
    char **names = NULL;
    if (!dir || cdsh_fs_list_dir(dir, &names, NULL, NULL) != 0) {
        free(dir);
        return;
    }
    for (char **n = names; *n; n++) {
        if ((*n)[0] == '.')
            continue;
        char *relp = NULL;
        if (asprintf(&relp, "%s%s%s", rel, *rel ? "/" : "", *n) < 0)
            continue;
        char *full = cdsh_fs_path_join_dup(dir, *n);
        struct stat st;
        /* lstat: symlinks are neither followed nor read (the original's
         * withFileTypes walk skips them too) */
        if (full && lstat(full, &st) == 0) {
            bool skip = false;
            for (const char *const *s = skip_dirs; *s; s++)
                skip = skip || strcmp(*n, *s) == 0;
            if (S_ISDIR(st.st_mode) && !skip)
                walk(root, relp, files, depth + 1);
            else if (S_ISREG(st.st_mode) && has_ext(*n))
                json_array_append_new(files, jstr(relp, strlen(relp)));
        }
        free(full);
        free(relp);
    }
    cdsh_fs_list_free(names);
    free(dir);
}

int cdsh_facade_analyze_dir(const char *root, json_t **report, cdsh_error *err)
{
    struct stat st;
    *report = NULL;
    if (!root || stat(root, &st) != 0 || !S_ISDIR(st.st_mode))
        return cdsh_error_set(err, CDSH_EINVAL, "NOT_A_DIRECTORY", "analyze: not a directory: %s",
                              root ? root : "");
    json_t *files = json_array();
    walk(root, "", files, 0);
    /* sort the full relative paths, as the original sorts its file list */
    size_t n = json_array_size(files);
    const char **paths = calloc(n ? n : 1, sizeof *paths);
    for (size_t i = 0; paths && i < n; i++)
        paths[i] = json_string_value(json_array_get(files, i));
    if (paths)
        qsort(paths, n, sizeof *paths, cmp_str);
    json_t *scanned = json_array(), *tools = json_array(), *caps = json_array();
    for (size_t i = 0; paths && i < n; i++) {
        json_array_append_new(scanned, json_string(paths[i]));
        char *full = cdsh_fs_path_join_dup(root, paths[i]);
        char *text = NULL;
        size_t len = 0;
        if (full && cdsh_fs_read_file(full, CDSH_FACADE_ANALYZE_MAX_FILE, &text, &len, NULL) == 0) {
            json_t *found = cdsh_facade_analyze_source(text, len, paths[i]);
            json_array_extend(tools, json_object_get(found, "tools"));
            json_array_extend(caps, json_object_get(found, "capabilities"));
            json_decref(found);
        }
        free(text);
        free(full);
    }
    *report = cdsh_facade_analyze_build(root, scanned, tools, caps);
    free(paths);
    json_decref(files);
    json_decref(scanned);
    json_decref(tools);
    json_decref(caps);
    return *report ? 0 : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
}

json_t *cdsh_facade_analyze_registry(cdsh_tools *tools, cdsh_facade *facade, const char *root)
{
    json_t *schemas = cdsh_tools_schemas(tools, NULL);
    json_t *recs = json_array(), *caps = json_array(), *scanned = json_array();
    size_t i;
    json_t *s;
    json_array_foreach(schemas, i, s) {
        const char *desc = json_string_value(json_object_get(s, "description"));
        desc = desc ? desc : "";
        json_t *params = json_array();
        const char *key;
        json_t *v;
        json_object_foreach(json_object_get(json_object_get(s, "parameters"), "properties"), key,
                            v) {
            json_array_append_new(params, json_string(key));
        }
        json_array_append_new(recs, json_pack("{s:O, s:b, s:o, s:o, s:s, s:i}", "name",
                                              json_object_get(s, "name"), "dynamic", 0,
                                              "description", flatten(desc, strlen(desc)),
                                              "parameters", params, "file", "registry", "line", 0));
    }
    json_t *listed = cdsh_facade_list(facade);
    json_t *c;
    json_array_foreach(listed, i, c) {
        const char *id = json_string_value(json_object_get(c, "id"));
        json_t *ops = json_array();
        size_t j;
        json_t *t;
        json_array_foreach(json_object_get(c, "tools"), j, t) {
            json_array_append_new(ops, json_string(json_string_value(t) + strlen(id) + 1));
        }
        json_array_append_new(caps, json_pack("{s:s, s:o, s:s, s:i}", "id", id, "operations", ops,
                                              "file", "facade", "line", 0));
    }
    json_t *report = cdsh_facade_analyze_build(root, scanned, recs, caps);
    json_decref(listed);
    json_decref(schemas);
    json_decref(recs);
    json_decref(caps);
    json_decref(scanned);
    return report;
}
