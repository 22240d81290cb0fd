/* wi_keys.h — world-info key matching, as SillyTavern's matchKeys: a key is
 * prepared once (macros substituted, trimmed, lowercased with the simple
 * case folding of the common alphabets) and matched against a scan text as
 * a /pattern/flags literal (JavaScript semantics, jsregex.h), as a whole word
 * (JavaScript's ASCII \W boundaries; a key holding whitespace falls back to
 * a substring, as ST does) or as a substring, case-sensitive or not.
 * Activation (which entries, which texts, budgets) is wi_activate.c's.
 * Thread-safety: a matcher is used by one thread at a time; keys are values. */
#ifndef CDSH_TAVERN_WI_KEYS_H
#define CDSH_TAVERN_WI_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "plugins/tavern/macros.h"

/* A prepared key: the text after macros and trimming, and its lowercase form. */
typedef struct cdsh_tavern_wi_key {
    char *key, *low;
    size_t n, nl;
    bool multi; /* holds whitespace: whole-word matching falls back to substring */
} cdsh_tavern_wi_key;

/* A scan text, raw and lowercased (cdsh_tavern_wi_lower_dup); borrowed. */
typedef struct cdsh_tavern_wi_hay {
    const char *raw, *low;
    size_t n, nl;
} cdsh_tavern_wi_hay;

/* Compiles each distinct regex key once and keeps it (bad ones too, as bad). */
typedef struct cdsh_tavern_wi_matcher cdsh_tavern_wi_matcher;

cdsh_tavern_wi_matcher *cdsh_tavern_wi_matcher_new(void);    /* NULL on ENOMEM */
void cdsh_tavern_wi_matcher_free(cdsh_tavern_wi_matcher *m); /* NULL-safe */

/* True when the key holds a macro ({{...}} or <...>): it must be prepared
 * again on every use, as the macro values may change. */
bool cdsh_tavern_wi_key_has_macro(const char *text);
/* Prepares text (macros expanded with env when it has any; env may be NULL;
 * the expansion may record unknown macros in it).
 * CDSH_ENOMEM on failure (out untouched then). */
int cdsh_tavern_wi_key_init(const char *text, cdsh_tavern_macro_env *env, cdsh_tavern_wi_key *out);
void cdsh_tavern_wi_key_deinit(cdsh_tavern_wi_key *k);

/* Does the key match the text? An empty key never matches. A key that is a
 * valid /regex/ literal is tested on the raw text (case and whole-word
 * settings do not apply); an invalid one never matches; a string starting
 * with '/' that is no literal is matched as plain text. */
bool cdsh_tavern_wi_key_match(cdsh_tavern_wi_matcher *m, const cdsh_tavern_wi_key *k,
                              const cdsh_tavern_wi_hay *h, bool case_sensitive, bool whole_words);

/* Lowercase copy of n bytes (owned): ASCII, Latin-1, Latin Extended-A,
 * Greek and Cyrillic fold; other code points and invalid bytes are kept. */
char *cdsh_tavern_wi_lower_dup(const char *s, size_t n);

#endif
