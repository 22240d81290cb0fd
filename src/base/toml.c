/* toml.c — TOML 1.0 parser: checks UTF-8, parses into a private typed tree
 * that carries the table-definition flags TOML's redefinition rules need, then
 * emits plain or typed jansson. Hand-written because Debian packages no C TOML
 * library; reading files and interpreting config keys are the callers' job. */
#include "base/toml.h"

#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

enum kind { K_TABLE, K_ARRAY, K_STRING, K_INT, K_FLOAT, K_BOOL, K_ODT, K_LDT, K_LD, K_LT };

/* How a table or array came to exist; decides what may extend it later. */
enum {
    F_HEADER = 1,   /* defined by a [header] (or is an [[array]] element) */
    F_IMPLICIT = 2, /* created as the parent of a header; a later [header] may define it */
    F_DOTTED = 4,   /* created by a dotted key; only more dotted keys may add to it */
    F_INLINE = 8,   /* an inline table, or a table its dotted keys made: frozen */
    F_AOT = 16,     /* an array of tables (as opposed to a static array value) */
};

typedef struct node node;

typedef struct entry {
    char *key;
    size_t klen;
    node *val;
} entry;

struct node {
    enum kind kind;
    unsigned flags;
    int depth;
    union {
        int64_t i;
        double f;
        bool b;
        struct {
            char *s;
            size_t len;
        } str; /* strings and the canonical text of date-times */
        struct {
            entry *items;
            size_t n, cap;
            uint32_t *index; /* open addressing, slot = entry index + 1; NULL while small */
            size_t icap;
        } tab;
        struct {
            node **items;
            size_t n, cap;
        } arr;
    } u;
};

typedef struct keypart {
    char *s;
    size_t len;
    size_t pos;
} keypart;

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

typedef struct parser {
    const char *src;
    size_t len;
    size_t pos;
    int max_depth;
    int rc;
    cdsh_error *err;
    node *root;
    node *cur;
} parser;

/* ---- errors ------------------------------------------------------------ */

static void where(const parser *P, size_t pos, size_t *line, size_t *col)
{
    size_t l = 1, bol = 0;
    if (pos > P->len)
        pos = P->len;
    for (size_t i = 0; i < pos; i++) {
        if (P->src[i] == '\n') {
            l++;
            bol = i + 1;
        }
    }
    *line = l;
    *col = cdsh_utf8_count(P->src + bol, pos - bol) + 1;
}

__attribute__((format(printf, 4, 5))) static int fail_rc(parser *P, size_t pos, int rc,
                                                         const char *fmt, ...)
{
    if (P->rc)
        return P->rc;
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    size_t line, col;
    where(P, pos, &line, &col);
    P->rc = rc;
    cdsh_error_set(P->err, rc, rc == CDSH_ETOOBIG ? "TOML_TOO_BIG" : "BAD_TOML",
                   "line %zu, column %zu: %s", line, col, what);
    return rc;
}

#define fail(P, pos, ...) fail_rc((P), (pos), CDSH_EINVAL, __VA_ARGS__)

static int oom(parser *P)
{
    if (!P->rc) {
        P->rc = CDSH_ENOMEM;
        cdsh_error_set(P->err, CDSH_ENOMEM, "NO_MEMORY", "out of memory while parsing TOML");
    }
    return P->rc;
}

/* Human description of the character at pos for messages. */
static const char *describe(const parser *P, size_t pos, char *buf, size_t n)
{
    if (pos >= P->len)
        return "end of file";
    unsigned char c = (unsigned char)P->src[pos];
    if (c == '\n' || (c == '\r' && pos + 1 < P->len && P->src[pos + 1] == '\n'))
        return "end of line";
    if (c >= 0x21 && c < 0x7F) {
        snprintf(buf, n, "'%c'", c);
        return buf;
    }
    uint32_t cp;
    size_t len;
    cdsh_utf8_decode(P->src + pos, P->len - pos, &cp, &len); /* the input is valid UTF-8 */
    snprintf(buf, n, "U+%04X", (unsigned)cp);
    return buf;
}

static const char *kind_name(const node *n)
{
    switch (n->kind) {
    case K_TABLE: return (n->flags & F_INLINE) ? "an inline table" : "a table";
    case K_ARRAY: return (n->flags & F_AOT) ? "an array of tables" : "an array";
    case K_STRING: return "a string";
    case K_INT: return "an integer";
    case K_FLOAT: return "a float";
    case K_BOOL: return "a boolean";
    case K_ODT: return "an offset date-time";
    case K_LDT: return "a local date-time";
    case K_LD: return "a local date";
    case K_LT: return "a local time";
    }
    return "a value";
}

/* Quoted key for messages, shortened and with control characters escaped. */
static const char *show_key(const keypart *k, char *buf, size_t n)
{
    size_t o = 0;
    buf[o++] = '\'';
    for (size_t i = 0; i < k->len && o + 8 < n; i++) {
        unsigned char c = (unsigned char)k->s[i];
        if (c < 0x20 || c == 0x7F)
            o += (size_t)snprintf(buf + o, n - o, "\\x%02X", c);
        else
            buf[o++] = (char)c;
    }
    if (o + 8 >= n)
        o += (size_t)snprintf(buf + o, n - o, "...");
    buf[o++] = '\'';
    buf[o] = '\0';
    return buf;
}

/* ---- the tree ---------------------------------------------------------- */

static void node_free(node *n)
{
    if (!n)
        return;
    switch (n->kind) {
    case K_TABLE:
        for (size_t i = 0; i < n->u.tab.n; i++) {
            free(n->u.tab.items[i].key);
            node_free(n->u.tab.items[i].val);
        }
        free(n->u.tab.items);
        free(n->u.tab.index);
        break;
    case K_ARRAY:
        for (size_t i = 0; i < n->u.arr.n; i++)
            node_free(n->u.arr.items[i]);
        free(n->u.arr.items);
        break;
    case K_STRING:
    case K_ODT:
    case K_LDT:
    case K_LD:
    case K_LT: free(n->u.str.s); break;
    default: break;
    }
    free(n);
}

static node *node_new(parser *P, enum kind kind, int depth, size_t pos)
{
    if ((kind == K_TABLE || kind == K_ARRAY) && depth > P->max_depth) {
        fail_rc(P, pos, CDSH_ETOOBIG, "nesting deeper than %d levels", P->max_depth);
        return NULL;
    }
    node *n = calloc(1, sizeof *n);
    if (!n)
        oom(P);
    else {
        n->kind = kind;
        n->depth = depth;
    }
    return n;
}

static uint32_t hash_key(const char *k, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)k[i]) * 16777619u;
    return h;
}

static node *tab_get(const node *t, const char *k, size_t kl)
{
    if (t->u.tab.index) {
        size_t mask = t->u.tab.icap - 1;
        for (size_t s = hash_key(k, kl) & mask;; s = (s + 1) & mask) {
            uint32_t slot = t->u.tab.index[s];
            if (!slot)
                return NULL;
            const entry *e = &t->u.tab.items[slot - 1];
            if (e->klen == kl && memcmp(e->key, k, kl) == 0)
                return e->val;
        }
    }
    for (size_t i = 0; i < t->u.tab.n; i++) {
        const entry *e = &t->u.tab.items[i];
        if (e->klen == kl && memcmp(e->key, k, kl) == 0)
            return e->val;
    }
    return NULL;
}

static void index_insert(node *t, size_t i)
{
    const entry *e = &t->u.tab.items[i];
    size_t mask = t->u.tab.icap - 1;
    size_t s = hash_key(e->key, e->klen) & mask;
    while (t->u.tab.index[s])
        s = (s + 1) & mask;
    t->u.tab.index[s] = (uint32_t)(i + 1);
}

/* Adds key -> v (the key must be absent). Takes the part's string and v. */
static int tab_put(parser *P, node *t, keypart *k, node *v)
{
    if (t->u.tab.n == t->u.tab.cap) {
        size_t cap = t->u.tab.cap ? t->u.tab.cap * 2 : 4;
        entry *items = realloc(t->u.tab.items, cap * sizeof *items);
        if (!items) {
            node_free(v);
            return oom(P);
        }
        t->u.tab.items = items;
        t->u.tab.cap = cap;
    }
    entry *e = &t->u.tab.items[t->u.tab.n++];
    e->key = k->s;
    e->klen = k->len;
    e->val = v;
    k->s = NULL;
    size_t n = t->u.tab.n;
    if (n < 8)
        return 0;
    if (n * 2 > t->u.tab.icap) {
        size_t icap = t->u.tab.icap ? t->u.tab.icap * 2 : 32;
        uint32_t *index = calloc(icap, sizeof *index);
        if (!index)
            return oom(P);
        free(t->u.tab.index);
        t->u.tab.index = index;
        t->u.tab.icap = icap;
        for (size_t i = 0; i < n; i++)
            index_insert(t, i);
    } else {
        index_insert(t, n - 1);
    }
    return 0;
}

static int arr_push(parser *P, node *a, node *v)
{
    if (a->u.arr.n == a->u.arr.cap) {
        size_t cap = a->u.arr.cap ? a->u.arr.cap * 2 : 4;
        node **items = realloc(a->u.arr.items, cap * sizeof *items);
        if (!items) {
            node_free(v);
            return oom(P);
        }
        a->u.arr.items = items;
        a->u.arr.cap = cap;
    }
    a->u.arr.items[a->u.arr.n++] = v;
    return 0;
}

/* Freezes a closed inline table and the tables its dotted keys created.
 * Nested inline tables are frozen already, and tables inside arrays need no
 * flag: nothing can reach into a static array. */
static void mark_inline(node *t)
{
    t->flags |= F_INLINE;
    for (size_t i = 0; i < t->u.tab.n; i++) {
        node *v = t->u.tab.items[i].val;
        if (v->kind == K_TABLE && !(v->flags & F_INLINE))
            mark_inline(v);
    }
}

/* ---- lexing helpers ---------------------------------------------------- */

static int peek_at(const parser *P, size_t pos)
{
    return pos < P->len ? (unsigned char)P->src[pos] : -1;
}

static int peek(const parser *P)
{
    return peek_at(P, P->pos);
}

static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static bool is_bare(int c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || is_digit(c) || c == '_' || c == '-';
}

static bool is_control(int c)
{
    return (c >= 0 && c < 0x20 && c != '\t') || c == 0x7F;
}

static bool at_newline(const parser *P)
{
    int c = peek(P);
    return c == '\n' || (c == '\r' && peek_at(P, P->pos + 1) == '\n');
}

static void skip_newline(parser *P)
{
    P->pos += peek(P) == '\r' ? 2 : 1;
}

static void skip_ws(parser *P)
{
    while (P->pos < P->len && (P->src[P->pos] == ' ' || P->src[P->pos] == '\t'))
        P->pos++;
}

/* At '#': skips the comment up to (not including) the newline. */
static int skip_comment(parser *P)
{
    P->pos++;
    while (P->pos < P->len && !at_newline(P)) {
        int c = peek(P);
        if (is_control(c))
            return fail(P, P->pos, "control character U+%04X is not allowed in a comment", c);
        P->pos++;
    }
    return 0;
}

/* Spaces, tabs, newlines and comments, as allowed inside arrays. */
static int skip_ws_nl(parser *P)
{
    for (;;) {
        skip_ws(P);
        if (at_newline(P))
            skip_newline(P);
        else if (peek(P) == '#') {
            if (skip_comment(P))
                return P->rc;
        } else
            return 0;
    }
}

/* After a statement: optional spaces and comment, then a newline or EOF. */
static int end_line(parser *P, const char *after)
{
    skip_ws(P);
    if (peek(P) == '#' && skip_comment(P))
        return P->rc;
    if (P->pos >= P->len)
        return 0;
    if (at_newline(P)) {
        skip_newline(P);
        return 0;
    }
    char b[16];
    if (peek(P) == '\r')
        return fail(P, P->pos, "a carriage return must be followed by a newline");
    return fail(P, P->pos, "expected a newline after %s, found %s", after,
                describe(P, P->pos, b, sizeof b));
}

static int sb_put(parser *P, sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return oom(P);
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

static int hexval(int c)
{
    if (is_digit(c))
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The whole document must be UTF-8 (no overlong forms, surrogates or code
 * points past U+10FFFF) before anything else looks at it. */
static int check_utf8(parser *P)
{
    size_t ok = cdsh_utf8_valid_prefix(P->src, P->len);
    if (ok < P->len)
        return fail(P, ok, "invalid UTF-8 starting at byte 0x%02X", (unsigned char)P->src[ok]);
    return 0;
}

/* ---- strings ----------------------------------------------------------- */

/* At the backslash of an escape in a basic string. */
static int parse_escape(parser *P, sbuf *b)
{
    size_t at = P->pos;
    int c = peek_at(P, at + 1);
    const char *simple = NULL;
    switch (c) {
    case 'b': simple = "\b"; break;
    case 't': simple = "\t"; break;
    case 'n': simple = "\n"; break;
    case 'f': simple = "\f"; break;
    case 'r': simple = "\r"; break;
    case '"': simple = "\""; break;
    case '\\': simple = "\\"; break;
    case 'u':
    case 'U': break;
    default: {
        char d[16];
        return fail(P, at, "invalid escape sequence: backslash followed by %s",
                    describe(P, at + 1, d, sizeof d));
    }
    }
    if (simple) {
        P->pos += 2;
        return sb_put(P, b, simple, 1);
    }
    int digits = c == 'u' ? 4 : 8;
    uint32_t cp = 0;
    for (int i = 0; i < digits; i++) {
        int h = hexval(peek_at(P, at + 2 + (size_t)i));
        if (h < 0)
            return fail(P, at, "\\%c needs %d hexadecimal digits", c, digits);
        cp = (cp << 4) | (uint32_t)h;
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return fail(P, at, "escape \\%c%.*s is not a Unicode scalar value", c, digits,
                    P->src + at + 2);
    char out[4];
    P->pos = at + 2 + (size_t)digits;
    return sb_put(P, b, out, cdsh_utf8_encode(cp, out));
}

/* Closing run of quotes in a multi-line string: up to two quotes may sit
 * before the three that close it. Returns 1 when closed, 0 to go on. */
static int quote_run(parser *P, sbuf *b, char q)
{
    size_t run = 0;
    while (peek_at(P, P->pos + run) == q)
        run++;
    if (run < 3) {
        P->pos += run;
        return sb_put(P, b, P->src + P->pos - run, run) ? -1 : 0;
    }
    if (run > 5)
        return fail(P, P->pos + 5, "too many quotes at the end of a multi-line string"), -1;
    if (sb_put(P, b, P->src + P->pos, run - 3))
        return -1;
    P->pos += run;
    return 1;
}

/* At the opening quote; fills b with the decoded content. */
static int parse_string(parser *P, sbuf *b, bool allow_multi)
{
    size_t start = P->pos;
    char q = P->src[start];
    bool basic = q == '"';
    bool multi = peek_at(P, start + 1) == q && peek_at(P, start + 2) == q;
    if (multi && !allow_multi)
        return fail(P, start, "a multi-line string cannot be a key");
    P->pos += multi ? 3 : 1;
    if (multi && at_newline(P))
        skip_newline(P); /* a newline right after the opening quotes is trimmed */
    for (;;) {
        size_t run = P->pos;
        while (run < P->len) {
            unsigned char c = (unsigned char)P->src[run];
            if (c == (unsigned char)q || (basic && c == '\\') || is_control(c))
                break;
            run++;
        }
        if (sb_put(P, b, P->src + P->pos, run - P->pos))
            return P->rc;
        P->pos = run;
        int c = peek(P);
        if (c < 0)
            return fail(P, P->pos, "unterminated string: no closing %s before the end of file",
                        multi ? "triple quote" : "quote");
        if (c == q) {
            if (!multi) {
                P->pos++;
                return 0;
            }
            int r = quote_run(P, b, q);
            if (r < 0)
                return P->rc;
            if (r == 1)
                return 0;
            continue;
        }
        if (c == '\\') {
            size_t j = P->pos + 1;
            while (multi && (peek_at(P, j) == ' ' || peek_at(P, j) == '\t'))
                j++;
            int nc = peek_at(P, j);
            if (multi && (nc == '\n' || (nc == '\r' && peek_at(P, j + 1) == '\n'))) {
                /* line-ending backslash: drop it and all whitespace after it */
                P->pos = j;
                for (;;) {
                    skip_ws(P);
                    if (!at_newline(P))
                        break;
                    skip_newline(P);
                }
                continue;
            }
            if (parse_escape(P, b))
                return P->rc;
            continue;
        }
        if (multi && c == '\n') {
            P->pos++;
            if (sb_put(P, b, "\n", 1))
                return P->rc;
            continue;
        }
        if (multi && at_newline(P)) { /* CRLF is stored as LF */
            P->pos += 2;
            if (sb_put(P, b, "\n", 1))
                return P->rc;
            continue;
        }
        if (!multi && (c == '\n' || c == '\r'))
            return fail(P, P->pos, "a single-line string must end before the end of the line");
        return fail(P, P->pos,
                    "control character U+%04X is not allowed in a string; write it as an escape",
                    c);
    }
}

/* ---- keys -------------------------------------------------------------- */

typedef struct key {
    keypart *parts;
    size_t n, cap;
} key;

static void key_free(key *k)
{
    for (size_t i = 0; i < k->n; i++)
        free(k->parts[i].s);
    free(k->parts);
    k->parts = NULL;
    k->n = k->cap = 0;
}

static int parse_simple_key(parser *P, keypart *out)
{
    size_t start = P->pos;
    int c = peek(P);
    sbuf b = {0};
    if (c == '"' || c == '\'') {
        if (parse_string(P, &b, false)) {
            free(b.p);
            return P->rc;
        }
    } else {
        while (is_bare(peek(P)))
            P->pos++;
        if (P->pos == start) {
            char d[16];
            return fail(P, start, "expected a key, found %s", describe(P, start, d, sizeof d));
        }
        if (sb_put(P, &b, P->src + start, P->pos - start)) {
            free(b.p);
            return P->rc;
        }
    }
    if (!b.p && sb_put(P, &b, "", 0))
        return P->rc;
    out->s = b.p;
    out->len = b.n;
    out->pos = start;
    return 0;
}

/* A dotted key: simple keys separated by dots, with optional blanks around. */
static int parse_key(parser *P, key *k)
{
    for (;;) {
        if ((int)k->n >= P->max_depth)
            return fail_rc(P, P->pos, CDSH_ETOOBIG, "a key with more than %d parts", P->max_depth);
        if (k->n == k->cap) {
            size_t cap = k->cap ? k->cap * 2 : 4;
            keypart *parts = realloc(k->parts, cap * sizeof *parts);
            if (!parts)
                return oom(P);
            k->parts = parts;
            k->cap = cap;
        }
        if (parse_simple_key(P, &k->parts[k->n]))
            return P->rc;
        k->n++;
        size_t save = P->pos;
        skip_ws(P);
        if (peek(P) != '.') {
            P->pos = save;
            return 0;
        }
        P->pos++;
        skip_ws(P);
    }
}

/* ---- numbers and date-times -------------------------------------------- */

/* Digits of one base with underscores only between digits; [*pos, end). */
static int digits_run(parser *P, size_t *pos, size_t end, int base, sbuf *clean, const char *what)
{
    size_t i = *pos, start = i;
    while (i < end) {
        int c = (unsigned char)P->src[i];
        int v = hexval(c);
        if (c == '_') {
            bool prev_ok = i > start && P->src[i - 1] != '_';
            int nx = peek_at(P, i + 1);
            int nv = hexval(nx);
            if (!prev_ok || i + 1 >= end || nv < 0 || nv >= base)
                return fail(P, i, "an underscore in %s must sit between two digits", what);
            i++;
            continue;
        }
        if (v < 0 || v >= base)
            break;
        if (clean && sb_put(P, clean, P->src + i, 1))
            return P->rc;
        i++;
    }
    if (i == start)
        return fail(P, i, "expected a digit in %s", what);
    *pos = i;
    return 0;
}

static node *make_float(parser *P, double f, int depth, size_t pos)
{
    node *n = node_new(P, K_FLOAT, depth, pos);
    if (n)
        n->u.f = f;
    return n;
}

/* Integers (decimal, 0x, 0o, 0b), floats, inf and nan. */
static node *parse_number(parser *P, int depth)
{
    size_t start = P->pos, end = start;
    while (end < P->len &&
           (is_bare((unsigned char)P->src[end]) || P->src[end] == '.' || P->src[end] == '+'))
        end++;
    size_t i = start;
    bool neg = false, sign = false;
    if (P->src[i] == '+' || P->src[i] == '-') {
        neg = P->src[i] == '-';
        sign = true;
        i++;
    }
    size_t rest = end - i;
    if ((rest == 3 && memcmp(P->src + i, "inf", 3) == 0) ||
        (rest == 3 && memcmp(P->src + i, "nan", 3) == 0)) {
        P->pos = end;
        double v = P->src[i] == 'i' ? INFINITY : NAN;
        return make_float(P, neg ? -v : v, depth, start);
    }
    if (!is_digit(peek_at(P, i))) {
        fail(P, start, "invalid value '%.*s'", (int)(end - start > 40 ? 40 : end - start),
             P->src + start);
        return NULL;
    }
    sbuf clean = {0};
    node *n = NULL;
    int c1 = peek_at(P, i + 1);
    if (P->src[i] == '0' && (c1 == 'x' || c1 == 'o' || c1 == 'b')) {
        int base = c1 == 'x' ? 16 : c1 == 'o' ? 8 : 2;
        const char *what = base == 16  ? "a hexadecimal integer"
                           : base == 8 ? "an octal integer"
                                       : "a binary integer";
        if (sign) {
            fail(P, start, "%s cannot have a sign", what);
            goto out;
        }
        i += 2;
        if (digits_run(P, &i, end, base, &clean, what))
            goto out;
        if (i != end) {
            fail(P, i, "unexpected '%c' in %s", P->src[i], what);
            goto out;
        }
        uint64_t v = 0;
        for (size_t k = 0; k < clean.n; k++) {
            uint64_t d = (uint64_t)hexval((unsigned char)clean.p[k]);
            if (v > ((uint64_t)INT64_MAX - d) / (uint64_t)base) {
                fail(P, start, "integer out of 64-bit range");
                goto out;
            }
            v = v * (uint64_t)base + d;
        }
        n = node_new(P, K_INT, depth, start);
        if (n)
            n->u.i = (int64_t)v;
        P->pos = end;
        goto out;
    }
    if (sign && sb_put(P, &clean, neg ? "-" : "+", 1))
        goto out;
    size_t int_start = i;
    if (digits_run(P, &i, end, 10, &clean, "a number"))
        goto out;
    if (P->src[int_start] == '0' && i - int_start > 1) {
        fail(P, start, "leading zeros are not allowed in a number");
        goto out;
    }
    bool is_float = false;
    if (i < end && P->src[i] == '.') {
        is_float = true;
        if (sb_put(P, &clean, ".", 1))
            goto out;
        i++;
        if (digits_run(P, &i, end, 10, &clean, "the fraction of a float"))
            goto out;
    }
    if (i < end && (P->src[i] == 'e' || P->src[i] == 'E')) {
        is_float = true;
        if (sb_put(P, &clean, "e", 1))
            goto out;
        i++;
        if (i < end && (P->src[i] == '+' || P->src[i] == '-')) {
            if (sb_put(P, &clean, P->src + i, 1))
                goto out;
            i++;
        }
        if (digits_run(P, &i, end, 10, &clean, "the exponent of a float"))
            goto out;
    }
    if (i != end) {
        fail(P, i, "unexpected '%c' in a number", P->src[i]);
        goto out;
    }
    if (is_float) {
        double f = strtod(clean.p, NULL);
        if (isinf(f)) {
            fail(P, start, "float out of range");
            goto out;
        }
        n = make_float(P, f, depth, start);
    } else {
        uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        for (size_t k = sign ? 1 : 0; k < clean.n; k++) {
            uint64_t d = (uint64_t)(clean.p[k] - '0');
            if (v > (limit - d) / 10) {
                fail(P, start, "integer out of 64-bit range");
                goto out;
            }
            v = v * 10 + d;
        }
        n = node_new(P, K_INT, depth, start);
        if (n)
            n->u.i = neg ? (int64_t)(0 - v) : (int64_t)v;
    }
    P->pos = end;
out:
    free(clean.p);
    return n;
}

/* Exactly `count` digits at pos into *v, or -1. */
static int fixed_digits(const parser *P, size_t pos, int count, int *v)
{
    int x = 0;
    for (int k = 0; k < count; k++) {
        int c = peek_at(P, pos + (size_t)k);
        if (!is_digit(c))
            return -1;
        x = x * 10 + (c - '0');
    }
    if (is_digit(peek_at(P, pos + (size_t)count)))
        return -1;
    *v = x;
    return 0;
}

static int days_in_month(int y, int m)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 29;
    return days[m - 1];
}

/* HH:MM:SS[.frac] at P->pos, appended canonically to b. */
static int parse_time(parser *P, sbuf *b)
{
    size_t p = P->pos;
    int h, m, s;
    if (fixed_digits(P, p, 2, &h) || peek_at(P, p + 2) != ':')
        return fail(P, p, "a time must start with a two-digit hour and ':'");
    if (fixed_digits(P, p + 3, 2, &m))
        return fail(P, p + 3, "a time needs two-digit minutes");
    if (peek_at(P, p + 5) != ':' || fixed_digits(P, p + 6, 2, &s))
        return fail(P, p + 5, "a time needs two-digit seconds (TOML 1.0 requires them)");
    if (h > 23)
        return fail(P, p, "hour %02d is out of range (00-23)", h);
    if (m > 59)
        return fail(P, p + 3, "minute %02d is out of range (00-59)", m);
    if (s > 60)
        return fail(P, p + 6, "second %02d is out of range (00-60)", s);
    if (sb_put(P, b, P->src + p, 8))
        return P->rc;
    p += 8;
    if (peek_at(P, p) == '.') {
        size_t f = p + 1;
        while (is_digit(peek_at(P, f)))
            f++;
        if (f == p + 1)
            return fail(P, p, "fractional seconds need at least one digit after '.'");
        if (sb_put(P, b, P->src + p, f - p))
            return P->rc;
        p = f;
    }
    P->pos = p;
    return 0;
}

static node *parse_datetime(parser *P, int depth)
{
    size_t start = P->pos;
    sbuf b = {0};
    enum kind kind;
    node *n = NULL;
    if (peek_at(P, start + 2) == ':') {
        kind = K_LT;
        if (parse_time(P, &b))
            goto out;
    } else {
        int y, mo, d;
        if (fixed_digits(P, start, 4, &y) || peek_at(P, start + 4) != '-' ||
            fixed_digits(P, start + 5, 2, &mo) || peek_at(P, start + 7) != '-' ||
            fixed_digits(P, start + 8, 2, &d)) {
            fail(P, start, "a date must be written YYYY-MM-DD");
            goto out;
        }
        if (mo < 1 || mo > 12) {
            fail(P, start + 5, "month %02d is out of range (01-12)", mo);
            goto out;
        }
        if (d < 1 || d > days_in_month(y, mo)) {
            fail(P, start + 8, "day %02d does not exist in %04d-%02d", d, y, mo);
            goto out;
        }
        if (sb_put(P, &b, P->src + start, 10))
            goto out;
        P->pos = start + 10;
        int c = peek(P);
        bool has_time = c == 'T' || c == 't' ||
                        (c == ' ' && is_digit(peek_at(P, P->pos + 1)) &&
                         is_digit(peek_at(P, P->pos + 2)) && peek_at(P, P->pos + 3) == ':');
        kind = K_LD;
        if (has_time) {
            kind = K_LDT;
            P->pos++;
            if (sb_put(P, &b, "T", 1) || parse_time(P, &b))
                goto out;
            c = peek(P);
            if (c == 'Z' || c == 'z') {
                kind = K_ODT;
                P->pos++;
                if (sb_put(P, &b, "Z", 1))
                    goto out;
            } else if (c == '+' || c == '-') {
                size_t p = P->pos;
                int oh, om;
                if (fixed_digits(P, p + 1, 2, &oh) || peek_at(P, p + 3) != ':' ||
                    fixed_digits(P, p + 4, 2, &om)) {
                    fail(P, p, "a time offset must be written +HH:MM or -HH:MM");
                    goto out;
                }
                if (oh > 23 || om > 59) {
                    fail(P, p, "time offset %.6s is out of range", P->src + p);
                    goto out;
                }
                kind = K_ODT;
                if (sb_put(P, &b, P->src + p, 6))
                    goto out;
                P->pos = p + 6;
            }
        }
    }
    n = node_new(P, kind, depth, start);
    if (n) {
        n->u.str.s = b.p;
        n->u.str.len = b.n;
        b.p = NULL;
    }
out:
    free(b.p);
    return n;
}

/* ---- values, arrays, inline tables ------------------------------------- */

static node *parse_value(parser *P, int depth);
static int parse_keyval(parser *P, node *table);

static node *parse_array(parser *P, int depth)
{
    size_t start = P->pos;
    node *a = node_new(P, K_ARRAY, depth, start);
    if (!a)
        return NULL;
    P->pos++;
    for (;;) {
        if (skip_ws_nl(P))
            goto bad;
        if (peek(P) == ']')
            break;
        node *v = parse_value(P, depth + 1);
        if (!v || arr_push(P, a, v))
            goto bad;
        if (skip_ws_nl(P))
            goto bad;
        int c = peek(P);
        if (c == ',') {
            P->pos++;
            continue;
        }
        if (c == ']')
            break;
        char d[16];
        fail(P, P->pos, "expected ',' or ']' in an array, found %s",
             describe(P, P->pos, d, sizeof d));
        goto bad;
    }
    P->pos++;
    return a;
bad:
    node_free(a);
    return NULL;
}

static node *parse_inline_table(parser *P, int depth)
{
    node *t = node_new(P, K_TABLE, depth, P->pos);
    if (!t)
        return NULL;
    P->pos++;
    skip_ws(P);
    if (peek(P) == '}') {
        P->pos++;
        mark_inline(t);
        return t;
    }
    for (;;) {
        skip_ws(P);
        if (parse_keyval(P, t))
            goto bad;
        skip_ws(P);
        int c = peek(P);
        if (c == ',') {
            P->pos++;
            skip_ws(P);
            if (peek(P) == '}') {
                fail(P, P->pos - 1, "a trailing comma is not allowed in an inline table");
                goto bad;
            }
            continue;
        }
        if (c == '}') {
            P->pos++;
            break;
        }
        char d[16];
        if (at_newline(P) || c == '\r')
            fail(P, P->pos, "an inline table must end on the line where it starts");
        else
            fail(P, P->pos, "expected ',' or '}' in an inline table, found %s",
                 describe(P, P->pos, d, sizeof d));
        goto bad;
    }
    mark_inline(t);
    return t;
bad:
    node_free(t);
    return NULL;
}

static node *make_bool(parser *P, bool v, int depth)
{
    node *n = node_new(P, K_BOOL, depth, P->pos);
    if (n) {
        n->u.b = v;
        P->pos += v ? 4 : 5;
    }
    return n;
}

static node *parse_value(parser *P, int depth)
{
    size_t start = P->pos;
    int c = peek(P);
    if (c == '"' || c == '\'') {
        sbuf b = {0};
        if (parse_string(P, &b, true) || (!b.p && sb_put(P, &b, "", 0))) {
            free(b.p);
            return NULL;
        }
        node *n = node_new(P, K_STRING, depth, start);
        if (!n) {
            free(b.p);
            return NULL;
        }
        n->u.str.s = b.p;
        n->u.str.len = b.n;
        return n;
    }
    if (c == '[')
        return parse_array(P, depth);
    if (c == '{')
        return parse_inline_table(P, depth);
    if (c == 't' && P->len - start >= 4 && memcmp(P->src + start, "true", 4) == 0)
        return make_bool(P, true, depth);
    if (c == 'f' && P->len - start >= 5 && memcmp(P->src + start, "false", 5) == 0)
        return make_bool(P, false, depth);
    if (is_digit(c) && ((is_digit(peek_at(P, start + 1)) && peek_at(P, start + 2) == ':') ||
                        (is_digit(peek_at(P, start + 1)) && is_digit(peek_at(P, start + 2)) &&
                         is_digit(peek_at(P, start + 3)) && peek_at(P, start + 4) == '-')))
        return parse_datetime(P, depth);
    if (is_digit(c) || c == '+' || c == '-' || c == 'i' || c == 'n')
        return parse_number(P, depth);
    char d[16];
    if (is_bare(c)) {
        size_t e = start;
        while (e < P->len && is_bare((unsigned char)P->src[e]) && e - start < 40)
            e++;
        fail(P, start, "invalid value '%.*s'", (int)(e - start), P->src + start);
    } else {
        fail(P, start, "expected a value, found %s", describe(P, start, d, sizeof d));
    }
    return NULL;
}

/* One step along a dotted key or header path: the table named `part` under t,
 * created when absent (implicit for headers, dotted for keys). Headers pass
 * through an array of tables to its last element and may cross any table but
 * an inline one; dotted keys may only add to tables that dotted keys made. */
static node *descend(parser *P, node *t, keypart *part, bool header)
{
    char kb[96];
    node *child = tab_get(t, part->s, part->len);
    if (!child) {
        child = node_new(P, K_TABLE, t->depth + 1, part->pos);
        if (!child || tab_put(P, t, part, child))
            return NULL;
        child->flags = header ? F_IMPLICIT : F_DOTTED;
        return child;
    }
    if (header && child->kind == K_ARRAY && (child->flags & F_AOT))
        return child->u.arr.items[child->u.arr.n - 1];
    if (child->kind != K_TABLE) {
        fail(P, part->pos, "key %s is already %s, not a table", show_key(part, kb, sizeof kb),
             kind_name(child));
        return NULL;
    }
    if (header && (child->flags & F_INLINE)) {
        fail(P, part->pos, "cannot extend inline table %s", show_key(part, kb, sizeof kb));
        return NULL;
    }
    if (!header && ((child->flags & F_INLINE) || !(child->flags & F_DOTTED))) {
        fail(P, part->pos, "cannot add keys to %s %s defined elsewhere", kind_name(child),
             show_key(part, kb, sizeof kb));
        return NULL;
    }
    return child;
}

/* key = value into `table` (the current table or an inline table being built). */
static int parse_keyval(parser *P, node *table)
{
    key k = {0};
    char kb[96], d[16];
    if (parse_key(P, &k))
        goto out;
    skip_ws(P);
    if (peek(P) != '=') {
        fail(P, P->pos, "expected '=' after a key, found %s", describe(P, P->pos, d, sizeof d));
        goto out;
    }
    P->pos++;
    skip_ws(P);
    node *t = table;
    for (size_t i = 0; t && i + 1 < k.n; i++)
        t = descend(P, t, &k.parts[i], false);
    if (!t)
        goto out;
    keypart *last = &k.parts[k.n - 1];
    node *old = tab_get(t, last->s, last->len);
    if (old) {
        fail(P, last->pos, "duplicate key %s (already %s)", show_key(last, kb, sizeof kb),
             kind_name(old));
        goto out;
    }
    node *v = parse_value(P, t->depth + 1);
    if (!v)
        goto out;
    tab_put(P, t, last, v);
out:
    key_free(&k);
    return P->rc;
}

/* [table] or [[array of tables]]. */
static int parse_header(parser *P)
{
    key k = {0};
    char kb[96], d[16];
    size_t start = P->pos;
    bool aot = peek_at(P, start + 1) == '[';
    P->pos += aot ? 2 : 1;
    skip_ws(P);
    if (parse_key(P, &k))
        goto out;
    skip_ws(P);
    if (peek(P) != ']' || (aot && peek_at(P, P->pos + 1) != ']')) {
        fail(P, P->pos, "expected '%s' to close the table header, found %s", aot ? "]]" : "]",
             describe(P, P->pos, d, sizeof d));
        goto out;
    }
    P->pos += aot ? 2 : 1;
    node *t = P->root;
    for (size_t i = 0; t && i + 1 < k.n; i++)
        t = descend(P, t, &k.parts[i], true);
    if (!t)
        goto out;
    keypart *last = &k.parts[k.n - 1];
    node *child = tab_get(t, last->s, last->len);
    if (aot) {
        if (!child) {
            child = node_new(P, K_ARRAY, t->depth + 1, last->pos);
            if (!child || tab_put(P, t, last, child))
                goto out;
            child->flags = F_AOT;
        } else if (child->kind != K_ARRAY || !(child->flags & F_AOT)) {
            fail(P, last->pos, "cannot define array of tables %s: it is already %s",
                 show_key(last, kb, sizeof kb), kind_name(child));
            goto out;
        }
        node *elem = node_new(P, K_TABLE, child->depth + 1, last->pos);
        if (!elem || arr_push(P, child, elem))
            goto out;
        elem->flags = F_HEADER;
        P->cur = elem;
        goto out;
    }
    if (!child) {
        child = node_new(P, K_TABLE, t->depth + 1, last->pos);
        if (!child || tab_put(P, t, last, child))
            goto out;
        child->flags = F_HEADER;
    } else if (child->kind != K_TABLE) {
        fail(P, last->pos, "cannot define table %s: it is already %s",
             show_key(last, kb, sizeof kb), kind_name(child));
        goto out;
    } else if (child->flags & F_INLINE) {
        fail(P, last->pos, "cannot define table %s: it is an inline table",
             show_key(last, kb, sizeof kb));
        goto out;
    } else if (child->flags & F_DOTTED) {
        fail(P, last->pos, "cannot define table %s: it was already defined by dotted keys",
             show_key(last, kb, sizeof kb));
        goto out;
    } else if (child->flags & F_HEADER) {
        fail(P, last->pos, "table %s is defined twice", show_key(last, kb, sizeof kb));
        goto out;
    } else {
        child->flags = F_HEADER;
    }
    P->cur = child;
out:
    key_free(&k);
    return P->rc;
}

static int parse_document(parser *P)
{
    P->cur = P->root;
    for (;;) {
        skip_ws(P);
        int c = peek(P);
        if (c < 0)
            return 0;
        const char *after = "a comment";
        if (c == '\r' && !at_newline(P))
            return fail(P, P->pos, "a carriage return must be followed by a newline");
        if (c == '[') {
            if (parse_header(P))
                return P->rc;
            after = "a table header";
        } else if (c != '#' && !at_newline(P)) {
            if (parse_keyval(P, P->cur))
                return P->rc;
            after = "a key/value pair";
        }
        if (end_line(P, after))
            return P->rc;
    }
}

/* ---- output ------------------------------------------------------------ */

/* Shortest text that reads back as the same double. */
static void format_float(double f, char *buf, size_t n)
{
    if (isnan(f)) {
        snprintf(buf, n, "nan");
        return;
    }
    if (isinf(f)) {
        snprintf(buf, n, "%s", f < 0 ? "-inf" : "inf");
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, f);
        if (strtod(buf, NULL) == f)
            return;
    }
}

static const char *type_name(enum kind k)
{
    switch (k) {
    case K_STRING: return "string";
    case K_INT: return "integer";
    case K_FLOAT: return "float";
    case K_BOOL: return "bool";
    case K_ODT: return "datetime";
    case K_LDT: return "datetime-local";
    case K_LD: return "date-local";
    case K_LT: return "time-local";
    default: return "";
    }
}

static json_t *emit(const node *n, bool typed)
{
    json_t *out = NULL;
    char buf[64];
    switch (n->kind) {
    case K_TABLE:
        out = json_object();
        for (size_t i = 0; out && i < n->u.tab.n; i++) {
            const entry *e = &n->u.tab.items[i];
            json_t *v = emit(e->val, typed);
            /* Keys and strings are valid UTF-8: the input was checked and
             * escapes encode only Unicode scalar values. */
            if (!v || json_object_setn_new_nocheck(out, e->key, e->klen, v) != 0) {
                json_decref(out);
                out = NULL;
            }
        }
        return out;
    case K_ARRAY:
        out = json_array();
        for (size_t i = 0; out && i < n->u.arr.n; i++) {
            json_t *v = emit(n->u.arr.items[i], typed);
            if (!v || json_array_append_new(out, v) != 0) {
                json_decref(out);
                out = NULL;
            }
        }
        return out;
    default: break;
    }
    if (!typed) {
        switch (n->kind) {
        case K_INT: return json_integer((json_int_t)n->u.i);
        case K_BOOL: return json_boolean(n->u.b);
        case K_FLOAT:
            if (isfinite(n->u.f))
                return json_real(n->u.f);
            format_float(n->u.f, buf, sizeof buf);
            return json_string(buf);
        default: return json_stringn_nocheck(n->u.str.s, n->u.str.len);
        }
    }
    json_t *value = NULL;
    switch (n->kind) {
    case K_INT:
        snprintf(buf, sizeof buf, "%" PRId64, n->u.i);
        value = json_string(buf);
        break;
    case K_BOOL: value = json_string(n->u.b ? "true" : "false"); break;
    case K_FLOAT:
        format_float(n->u.f, buf, sizeof buf);
        value = json_string(buf);
        break;
    default: value = json_stringn_nocheck(n->u.str.s, n->u.str.len); break;
    }
    json_t *leaf = json_object();
    if (!leaf) {
        json_decref(value);
        return NULL;
    }
    /* the setters take (and on failure release) the new references */
    if (json_object_set_new_nocheck(leaf, "type", json_string_nocheck(type_name(n->kind))) ||
        json_object_set_new_nocheck(leaf, "value", value)) {
        json_decref(leaf);
        return NULL;
    }
    return leaf;
}

int cdsh_toml_parse_with(const char *text, size_t len, const cdsh_toml_options *opts, json_t **out,
                         cdsh_error *err)
{
    if (!out || (!text && len))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "cdsh_toml_parse: out is required and text may be NULL only "
                              "when len is 0");
    *out = NULL;
    size_t max_bytes = opts && opts->max_bytes ? opts->max_bytes : CDSH_TOML_DEFAULT_MAX_BYTES;
    int max_depth = opts && opts->max_depth > 0 ? opts->max_depth : CDSH_TOML_DEFAULT_MAX_DEPTH;
    if (max_depth > CDSH_TOML_MAX_DEPTH_CAP) /* the parser recurses per level; documented */
        max_depth = CDSH_TOML_MAX_DEPTH_CAP;
    if (len > max_bytes)
        return cdsh_error_set(err, CDSH_ETOOBIG, "TOML_TOO_BIG",
                              "the TOML document is %zu bytes, over the limit of %zu", len,
                              max_bytes);
    if (len > UINT32_MAX - 1) /* table indexes hold entry numbers in 32 bits */
        return cdsh_error_set(err, CDSH_ETOOBIG, "TOML_TOO_BIG", "the TOML document is over 4 GiB");
    parser P = {.src = text ? text : "", .len = len, .max_depth = max_depth, .err = err};
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
        P.src += 3;
        P.len -= 3;
    }
    /* strtod and snprintf must use '.', whatever locale the program set. */
    locale_t c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!c_locale)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "cannot create the C locale");
    locale_t old = uselocale(c_locale);
    P.root = node_new(&P, K_TABLE, 0, 0);
    if (P.root && check_utf8(&P) == 0 && parse_document(&P) == 0) {
        *out = emit(P.root, opts && opts->typed);
        if (!*out)
            oom(&P);
    }
    uselocale(old);
    freelocale(c_locale);
    node_free(P.root);
    return P.rc;
}

int cdsh_toml_parse(const char *text, size_t len, json_t **out, cdsh_error *err)
{
    return cdsh_toml_parse_with(text, len, NULL, out, err);
}

int cdsh_toml_parse_typed(const char *text, size_t len, json_t **out, cdsh_error *err)
{
    cdsh_toml_options opts = {.typed = 1};
    return cdsh_toml_parse_with(text, len, &opts, out, err);
}
