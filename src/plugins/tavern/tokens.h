/* tokens.h — token counts for prompt budgets. No tokenizer is packaged for
 * cdsh, so this is a documented estimate: every CJK / kana / Hangul / emoji
 * code point counts one token, every other run of code points counts
 * ceil(n / 3.35) (SillyTavern's fallback ratio). Pure and thread-safe. */
#ifndef CDSH_TAVERN_TOKENS_H
#define CDSH_TAVERN_TOKENS_H

#include <stddef.h>

/* Estimated tokens of s[0..n) (UTF-8; invalid bytes count as one character). */
size_t cdsh_tavern_tokens_count(const char *s, size_t n);
/* Same for a NUL-terminated string (NULL counts 0). */
size_t cdsh_tavern_tokens_count_str(const char *s);

/* Incremental counting: add pieces, read the estimate of their
 * concatenation (exact, since the estimate only depends on the counts). */
typedef struct cdsh_tavern_tokens_tally {
    size_t wide, other;
} cdsh_tavern_tokens_tally;

void cdsh_tavern_tokens_add(cdsh_tavern_tokens_tally *t, const char *s, size_t n);
size_t cdsh_tavern_tokens_total(const cdsh_tavern_tokens_tally *t);

#endif
