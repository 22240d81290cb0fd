/* frontmatter.c — `---` YAML front matter of Markdown files: split, parse
 * strictly with libyaml, fall back to `key: value` lines with a warning.
 * Front matter made only of `key: plain text` lines (the common case) is
 * read without libyaml, whose parser set-up costs more than the whole
 * rest of a small file's scan; the result is the same.
 * Interpreting the keys is commands.c's job. */
#include "plugins/mcpimport/frontmatter.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/err.h"
#include "host/profile.h"

/* Length of the line at p (without its terminator) and where the next starts. */
static size_t line_at(const char *p, const char *end, const char **next)
{
    const char *e = memchr(p, '\n', (size_t)(end - p));
    const char *stop = e ? e : end;
    *next = e ? e + 1 : end;
    size_t n = (size_t)(stop - p);
    if (n && p[n - 1] == '\r')
        n--;
    return n;
}

static bool is_fence(const char *p, size_t n, bool closing)
{
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    return (n == 3 && memcmp(p, "---", 3) == 0) || (closing && n == 3 && memcmp(p, "...", 3) == 0);
}

/* Lenient reading: `key: value` per line; quotes around the value removed. */
static json_t *loose_parse(const char *p, const char *end)
{
    json_t *o = json_object();
    while (o && p < end) {
        const char *next;
        size_t n = line_at(p, end, &next);
        const char *colon = memchr(p, ':', n);
        if (colon && colon > p && p[0] != ' ' && p[0] != '#' && p[0] != '-') {
            const char *v = colon + 1;
            const char *ve = p + n;
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            if (ve - v >= 2 && (*v == '"' || *v == '\'') && ve[-1] == *v) {
                v++;
                ve--;
            }
            char key[128];
            size_t kl = (size_t)(colon - p);
            if (kl < sizeof key) {
                memcpy(key, p, kl);
                key[kl] = '\0';
                json_object_set_new(o, key, json_stringn(v, (size_t)(ve - v)));
            }
        }
        p = next;
    }
    return o;
}

static bool simple_key(const char *p, size_t n)
{
    if (!n || !((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return false;
    }
    return true;
}

/* A value YAML reads as exactly this string: starts with a letter (or a
 * non-ASCII byte, `/`, `(`, `$`), holds no comment, no `: `, no tab or
 * control byte, does not end in `:`, and is not a word YAML gives another
 * type (true, no, null...). Anything else goes to libyaml. */
static bool simple_value(const char *v, size_t n)
{
    static const char *const words[] = {"true", "false", "yes", "no", "on", "off",
                                        "null", "y", "n", NULL};
    if (!n)
        return false;
    unsigned char c0 = (unsigned char)v[0];
    if (!((c0 >= 'a' && c0 <= 'z') || (c0 >= 'A' && c0 <= 'Z') || c0 >= 0x80 || c0 == '/' ||
          c0 == '(' || c0 == '$'))
        return false;
    if (v[n - 1] == ':')
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c < 0x20 || c == 0x7f || c == '#' || (c == ':' && i + 1 < n && v[i + 1] == ' '))
            return false;
    }
    for (const char *const *w = words; *w; w++)
        if (strlen(*w) == n && strncasecmp(*w, v, n) == 0)
            return false;
    return true;
}

/* The mapping of front matter made only of blank lines and `key: value`
 * lines with simple keys and values (distinct keys), else NULL. */
static json_t *simple_parse(const char *p, const char *end)
{
    json_t *o = json_object();
    while (o && p < end) {
        const char *next;
        size_t n = line_at(p, end, &next);
        while (n && p[n - 1] == ' ')
            n--;
        if (n == 0) {
            p = next;
            continue;
        }
        const char *colon = memchr(p, ':', n);
        if (!colon || colon + 1 >= p + n || colon[1] != ' ' || !simple_key(p, (size_t)(colon - p)))
            goto no;
        const char *v = colon + 1;
        while (v < p + n && *v == ' ')
            v++;
        size_t vl = (size_t)(p + n - v);
        char key[128];
        size_t kl = (size_t)(colon - p);
        if (kl >= sizeof key || !simple_value(v, vl))
            goto no;
        memcpy(key, p, kl);
        key[kl] = '\0';
        if (json_object_get(o, key))
            goto no;
        json_object_set_new(o, key, json_stringn(v, vl));
        p = next;
    }
    return o;
no:
    json_decref(o);
    return NULL;
}

int cdsh_mcpimport_frontmatter_parse(const char *text, size_t len, json_t **meta, size_t *body_off,
                                     json_t *warnings)
{
    *meta = NULL;
    *body_off = 0;
    const char *start = text, *end = text + len;
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        start += 3;
    *body_off = (size_t)(start - text);
    const char *next;
    size_t n = start < end ? line_at(start, end, &next) : 0;
    if (start >= end || !is_fence(start, n, false)) {
        *meta = json_object();
        return *meta ? 0 : CDSH_ENOMEM;
    }
    const char *yaml = next, *p = next, *yaml_end = NULL;
    while (p < end) {
        const char *nx;
        size_t ln = line_at(p, end, &nx);
        if (is_fence(p, ln, true)) {
            yaml_end = p;
            *body_off = (size_t)(nx - text);
            break;
        }
        p = nx;
    }
    if (!yaml_end) {
        json_array_append_new(warnings, json_string("front matter is not closed (no \"---\" "
                                                    "line); the whole file is the body"));
        *meta = json_object();
        return *meta ? 0 : CDSH_ENOMEM;
    }
    if (memchr(yaml, '\0', (size_t)(yaml_end - yaml))) {
        json_array_append_new(warnings, json_string("front matter contains a NUL byte; ignored"));
        *meta = json_object();
        return *meta ? 0 : CDSH_ENOMEM;
    }
    cdsh_error e = {0};
    json_t *v = simple_parse(yaml, yaml_end);
    if (!v)
        v = yaml_end > yaml ? cdsh_profile_yaml_parse(yaml, (size_t)(yaml_end - yaml), &e)
                            : json_object();
    if (!v) {
        char msg[CDSH_ERROR_MESSAGE_MAX + 128];
        snprintf(msg, sizeof msg, "front matter is not valid YAML (%s); read as key: value lines",
                 e.message);
        json_array_append_new(warnings, json_string(msg));
        v = loose_parse(yaml, yaml_end);
    } else if (json_is_null(v)) {
        json_decref(v);
        v = json_object();
    } else if (!json_is_object(v)) {
        json_array_append_new(warnings, json_string("front matter is not a mapping; ignored"));
        json_decref(v);
        v = json_object();
    }
    *meta = v;
    return v ? 0 : CDSH_ENOMEM;
}
