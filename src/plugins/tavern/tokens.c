/* tokens.c — the token estimate used by every tavern budget (see tokens.h).
 * It is not a tokenizer; it never splits text, it only counts. */
#include "plugins/tavern/tokens.h"

#include <string.h>

#include "base/utf8.h"

static int is_wide(unsigned cp)
{
    return (cp >= 0x1100 && cp <= 0x11FF) || (cp >= 0x2E80 && cp <= 0xA4CF) ||
           (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
           (cp >= 0xFF00 && cp <= 0xFFEF) || (cp >= 0x1F300 && cp <= 0x1FAFF) ||
           (cp >= 0x20000 && cp <= 0x3FFFF);
}

void cdsh_tavern_tokens_add(cdsh_tavern_tokens_tally *t, const char *s, size_t n)
{
    size_t wide = 0, other = 0, i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            other++;
            i++;
            continue;
        }
        uint32_t cp;
        size_t len;
        if (cdsh_utf8_decode(s + i, n - i, &cp, &len) < 0) {
            other++;
            i += len ? len : 1;
            continue;
        }
        if (is_wide(cp))
            wide++;
        else
            other++;
        i += len;
    }
    t->wide += wide;
    t->other += other;
}

size_t cdsh_tavern_tokens_total(const cdsh_tavern_tokens_tally *t)
{
    /* ceil(other / 3.35) in integers: (other * 100 + 334) / 335. */
    return t->wide + (t->other * 100 + 334) / 335;
}

size_t cdsh_tavern_tokens_count(const char *s, size_t n)
{
    cdsh_tavern_tokens_tally t = {0, 0};
    cdsh_tavern_tokens_add(&t, s, n);
    return cdsh_tavern_tokens_total(&t);
}

size_t cdsh_tavern_tokens_count_str(const char *s)
{
    return s ? cdsh_tavern_tokens_count(s, strlen(s)) : 0;
}
