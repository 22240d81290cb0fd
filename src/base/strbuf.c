/* strbuf.c — growable string buffer: doubling growth, sticky failure flag.
 * Formatting beyond printf and JSON string escaping belongs to callers. */
#include "base/strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"

static char empty_string[1] = "";

void cdsh_strbuf_init(cdsh_strbuf *sb)
{
    sb->data = empty_string;
    sb->len = 0;
    sb->cap = 0;
    sb->failed = false;
}

void cdsh_strbuf_deinit(cdsh_strbuf *sb)
{
    if (!sb)
        return;
    if (sb->cap)
        free(sb->data);
    cdsh_strbuf_init(sb);
}

cdsh_strbuf *cdsh_strbuf_new(void)
{
    cdsh_strbuf *sb = malloc(sizeof *sb);
    if (sb)
        cdsh_strbuf_init(sb);
    return sb;
}

void cdsh_strbuf_free(cdsh_strbuf *sb)
{
    if (!sb)
        return;
    cdsh_strbuf_deinit(sb);
    free(sb);
}

int cdsh_strbuf_reserve(cdsh_strbuf *sb, size_t extra)
{
    if (extra > SIZE_MAX - sb->len - 1) {
        sb->failed = true;
        return CDSH_ETOOBIG;
    }
    size_t need = sb->len + extra + 1;
    if (need <= sb->cap)
        return 0;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *grown = sb->cap ? realloc(sb->data, cap) : malloc(cap);
    if (!grown) {
        sb->failed = true;
        return CDSH_ENOMEM;
    }
    if (!sb->cap)
        grown[0] = '\0';
    sb->data = grown;
    sb->cap = cap;
    return 0;
}

int cdsh_strbuf_append(cdsh_strbuf *sb, const void *bytes, size_t n)
{
    if (n == 0)
        return 0;
    int rc = cdsh_strbuf_reserve(sb, n);
    if (rc)
        return rc;
    memcpy(sb->data + sb->len, bytes, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
    return 0;
}

int cdsh_strbuf_append_str(cdsh_strbuf *sb, const char *s)
{
    return s ? cdsh_strbuf_append(sb, s, strlen(s)) : 0;
}

int cdsh_strbuf_append_char(cdsh_strbuf *sb, char c)
{
    return cdsh_strbuf_append(sb, &c, 1);
}

int cdsh_strbuf_vappendf(cdsh_strbuf *sb, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        sb->failed = true;
        return CDSH_EINVAL;
    }
    if ((size_t)n < sizeof small)
        return cdsh_strbuf_append(sb, small, (size_t)n);
    int rc = cdsh_strbuf_reserve(sb, (size_t)n);
    if (rc)
        return rc;
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
    return 0;
}

int cdsh_strbuf_appendf(cdsh_strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = cdsh_strbuf_vappendf(sb, fmt, ap);
    va_end(ap);
    return rc;
}

int cdsh_strbuf_append_json_string(cdsh_strbuf *sb, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t start_len = sb->len;
    int rc = cdsh_strbuf_reserve(sb, n + 2);
    if (rc)
        return rc;
    int bad = cdsh_strbuf_append_char(sb, '"');
    size_t run = 0; /* start of the current run of bytes copied verbatim */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[7];
        size_t elen = 2;
        esc[0] = '\\';
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            if (c >= 0x20)
                continue;
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            elen = 6;
        }
        bad |= cdsh_strbuf_append(sb, s + run, i - run);
        bad |= cdsh_strbuf_append(sb, esc, elen);
        run = i + 1;
    }
    bad |= cdsh_strbuf_append(sb, s + run, n - run);
    bad |= cdsh_strbuf_append_char(sb, '"');
    if (bad) {
        cdsh_strbuf_truncate(sb, start_len);
        return CDSH_ENOMEM;
    }
    return 0;
}

void cdsh_strbuf_truncate(cdsh_strbuf *sb, size_t len)
{
    if (len >= sb->len)
        return;
    sb->len = len;
    sb->data[len] = '\0';
}

void cdsh_strbuf_reset(cdsh_strbuf *sb)
{
    cdsh_strbuf_truncate(sb, 0);
    sb->failed = false;
}

char *cdsh_strbuf_take(cdsh_strbuf *sb, size_t *len_out)
{
    char *out = NULL;
    size_t len = 0;
    if (!sb->failed) {
        if (sb->cap) {
            out = sb->data;
            len = sb->len;
            sb->cap = 0; /* ownership moved; deinit below must not free it */
        } else {
            out = calloc(1, 1);
        }
    }
    cdsh_strbuf_deinit(sb);
    if (len_out)
        *len_out = out ? len : 0;
    return out;
}
