/* tokens.h — token counts for prompt budgets. No tokenizer is packaged for
 * cdsh, so this is SillyTavern's own fallback estimate (tokenizers.js
 * guesstimate): ceil(UTF-8 bytes / 3.35), the same for every script (a CJK
 * character is 3 bytes, so about one token). Pure and thread-safe. */
#ifndef CDSH_TAVERN_TOKENS_H
#define CDSH_TAVERN_TOKENS_H

#include <stddef.h>

/* SillyTavern's BYTES_PER_TOKEN. */
#define CDSH_TAVERN_BYTES_PER_TOKEN 3.35

/* Estimated tokens of s[0..n) (UTF-8; an invalid subpart counts as U+FFFD). */
size_t cdsh_tavern_tokens_count(const char *s, size_t n);
/* Same for a NUL-terminated string (NULL counts 0). */
size_t cdsh_tavern_tokens_count_str(const char *s);

/* Incremental counting: add pieces, read the estimate of their
 * concatenation (exact, since the estimate only depends on the byte count). */
typedef struct cdsh_tavern_tokens_tally {
    size_t bytes;
} cdsh_tavern_tokens_tally;

void cdsh_tavern_tokens_add(cdsh_tavern_tokens_tally *t, const char *s, size_t n);
size_t cdsh_tavern_tokens_total(const cdsh_tavern_tokens_tally *t);

#endif
