/* card_frame.c — card HTML → the document the sandboxed frame loads (see
 * card_frame.h). Text handling only; the confinement is the server's CSP. */
#include "plugins/tavern/card_frame.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/strbuf.h"

/* The document part of text: after a ```html fence line up to the closing
 * fence, or text itself; *len its length. */
static const char *unfence(const char *text, size_t *len)
{
    const char *f = strcasestr(text, "```html");
    if (f) {
        const char *p = f + 7;
        while (*p == ' ' || *p == '\t' || *p == '\r')
            p++;
        if (*p == '\n') {
            p++;
            const char *end = strstr(p, "```");
            *len = end ? (size_t)(end - p) : strlen(p);
            return p;
        }
    }
    *len = strlen(text);
    return text;
}

static bool starts_document(const char *p, size_t len)
{
    while (len && isspace((unsigned char)*p))
        p++, len--;
    return (len >= 14 && strncasecmp(p, "<!doctype html", 14) == 0) ||
           (len >= 6 && strncasecmp(p, "<html", 5) == 0 &&
            (p[5] == '>' || isspace((unsigned char)p[5])));
}

bool cdsh_tavern_card_is_html(const char *text)
{
    if (!text)
        return false;
    size_t len;
    const char *doc = unfence(text, &len);
    return starts_document(doc, len);
}

/* End of the opening tag `<name ...>` (case-insensitive) within doc[0..len),
 * or NULL. `<head` must not match `<header`. */
static const char *after_tag(const char *doc, size_t len, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = doc; p + n + 1 < doc + len; p++) {
        if (*p != '<' || strncasecmp(p + 1, name, n) != 0)
            continue;
        char c = p[1 + n];
        if (c != '>' && !isspace((unsigned char)c))
            continue;
        const char *gt = memchr(p, '>', (size_t)(doc + len - p));
        return gt ? gt + 1 : NULL;
    }
    return NULL;
}

char *cdsh_tavern_card_document_dup(const char *text)
{
    if (!text)
        return NULL;
    size_t len;
    const char *doc = unfence(text, &len);
    if (!starts_document(doc, len))
        return NULL;
    const char *at = after_tag(doc, len, "head");
    const char *insert = CDSH_TAVERN_CARD_BRIDGE;
    if (!at) {
        insert = "<head>" CDSH_TAVERN_CARD_BRIDGE "</head>";
        if (!(at = after_tag(doc, len, "html")))
            at = after_tag(doc, len, "!doctype"); /* a bare document: right after the doctype */
    }
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    if (at) {
        cdsh_strbuf_append(&sb, doc, (size_t)(at - doc));
        cdsh_strbuf_append(&sb, insert, strlen(insert));
        cdsh_strbuf_append(&sb, at, (size_t)(doc + len - at));
    } else { /* no opening tag is closed (a bare "<!doctype html"): the bridge first */
        cdsh_strbuf_append(&sb, insert, strlen(insert));
        cdsh_strbuf_append(&sb, doc, len);
    }
    return cdsh_strbuf_take(&sb, NULL);
}
