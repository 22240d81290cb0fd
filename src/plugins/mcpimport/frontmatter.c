/* frontmatter.c — `---` YAML front matter of Markdown files: split, parse
 * strictly with libyaml, fall back to `key: value` lines with a warning.
 * Interpreting the keys is commands.c's job. */
#include "plugins/mcpimport/frontmatter.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

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
    json_t *v = yaml_end > yaml ? cdsh_profile_yaml_parse(yaml, (size_t)(yaml_end - yaml), &e)
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
