/* tokens.c — the token estimate used by every tavern budget (see tokens.h).
 * It is not a tokenizer; it never splits text, it only counts. */
#include "plugins/tavern/tokens.h"

#include <math.h>
#include <string.h>

#include "base/utf8.h"

/* Bytes of s[0..n) as JavaScript's TextEncoder writes them: an invalid
 * subpart is U+FFFD there (3 bytes). */
static size_t utf8_bytes(const char *s, size_t n)
{
    size_t i = 0, bytes = 0;
    while (i < n) {
        size_t ok = cdsh_utf8_valid_prefix(s + i, n - i);
        bytes += ok;
        i += ok;
        if (i >= n)
            break;
        uint32_t cp;
        size_t len;
        cdsh_utf8_decode(s + i, n - i, &cp, &len);
        bytes += 3;
        i += len ? len : 1;
    }
    return bytes;
}

void cdsh_tavern_tokens_add(cdsh_tavern_tokens_tally *t, const char *s, size_t n)
{
    t->bytes += utf8_bytes(s, n);
}

size_t cdsh_tavern_tokens_total(const cdsh_tavern_tokens_tally *t)
{
    /* SillyTavern's guesstimate: Math.ceil(byteLength / BYTES_PER_TOKEN),
     * in the same double arithmetic. */
    return (size_t)ceil((double)t->bytes / CDSH_TAVERN_BYTES_PER_TOKEN);
}

size_t cdsh_tavern_tokens_count(const char *s, size_t n)
{
    cdsh_tavern_tokens_tally t = {0};
    cdsh_tavern_tokens_add(&t, s, n);
    return cdsh_tavern_tokens_total(&t);
}

size_t cdsh_tavern_tokens_count_str(const char *s)
{
    return s ? cdsh_tavern_tokens_count(s, strlen(s)) : 0;
}
