/* vars.c — `${VAR}` references: scanning for the IR, expanding for register.
 * Knows nothing about where values come from (secrets.c does). */
#include "plugins/mcpimport/vars.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

/* Parses a reference at s ("${..."). On success fills the name span, the
 * fallback span (flen = -1 when absent) and returns the length consumed. */
static size_t parse_ref(const char *s, const char **name, size_t *nlen, const char **fb, long *flen)
{
    if (s[0] != '$' || s[1] != '{')
        return 0;
    const char *p = s + 2;
    const char *start = p;
    if (strncmp(p, "user_config.", 12) == 0)
        p += 12;
    if (!(isalpha((unsigned char)*p) || *p == '_'))
        return 0;
    while (isalnum((unsigned char)*p) || *p == '_')
        p++;
    *name = start;
    *nlen = (size_t)(p - start);
    *fb = NULL;
    *flen = -1;
    if (*p == '}')
        return (size_t)(p + 1 - s);
    if (p[0] != ':' || p[1] != '-')
        return 0;
    p += 2;
    const char *f = p;
    int depth = 0;
    for (; *p; p++) {
        if (p[0] == '$' && p[1] == '{') {
            depth++;
            p++;
        } else if (*p == '}') {
            if (depth == 0) {
                *fb = f;
                *flen = (long)(p - f);
                return (size_t)(p + 1 - s);
            }
            depth--;
        }
    }
    return 0;
}

int cdsh_mcpimport_vars_scan(const char *s, const char *kind, const char *field, json_t *out)
{
    int n = 0;
    for (const char *p = s ? s : ""; *p;) {
        const char *name, *fb;
        size_t nlen;
        long flen;
        size_t used = parse_ref(p, &name, &nlen, &fb, &flen);
        if (!used) {
            p++;
            continue;
        }
        json_t *ref = json_object();
        json_object_set_new(ref, "kind", json_string(kind));
        json_object_set_new(ref, "envVar", json_stringn(name, nlen));
        json_object_set_new(ref, "fallback",
                            flen >= 0 ? json_stringn(fb, (size_t)flen) : json_null());
        json_object_set_new(ref, "field", json_string(field));
        json_array_append_new(out, ref);
        n++;
        p += used;
    }
    return n;
}

char *cdsh_mcpimport_vars_expand_dup(const char *s, cdsh_mcpimport_lookup_fn lookup, void *ud,
                                     bool *missing)
{
    cdsh_strbuf b;
    cdsh_strbuf_init(&b);
    for (const char *p = s ? s : ""; *p;) {
        const char *name, *fb;
        size_t nlen;
        long flen;
        size_t used = parse_ref(p, &name, &nlen, &fb, &flen);
        if (!used) {
            cdsh_strbuf_append_char(&b, *p);
            p++;
            continue;
        }
        char *key = strndup(name, nlen);
        const char *v = key && lookup ? lookup(ud, key) : NULL;
        free(key);
        if (v)
            cdsh_strbuf_append_str(&b, v);
        else if (flen >= 0)
            cdsh_strbuf_append(&b, fb, (size_t)flen);
        else if (missing)
            *missing = true;
        p += used;
    }
    return cdsh_strbuf_take(&b, NULL);
}

char *cdsh_mcpimport_vars_subst_dup(const char *s, const char *name, const char *value)
{
    cdsh_strbuf b;
    cdsh_strbuf_init(&b);
    size_t nl = strlen(name);
    for (const char *p = s ? s : ""; *p;) {
        if (p[0] == '$' && p[1] == '{' && strncmp(p + 2, name, nl) == 0 && p[2 + nl] == '}') {
            cdsh_strbuf_append_str(&b, value);
            p += nl + 3;
        } else {
            cdsh_strbuf_append_char(&b, *p);
            p++;
        }
    }
    return cdsh_strbuf_take(&b, NULL);
}

void cdsh__mcpimport_warnf(json_t *arr, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_array_append_new(arr, json_string(buf));
}
