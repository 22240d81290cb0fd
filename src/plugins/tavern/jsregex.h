/* jsregex.h — JavaScript regular expressions on PCRE2: "/pattern/flags"
 * literals, flags g i m s u y with their JavaScript meaning, the
 * JavaScript-compatibility options of PCRE2 (\u escapes, unset back
 * references match empty, `$` only at the very end, `[^]`), and a bounded
 * matcher: every match runs under a backtracking limit and a wall-clock
 * deadline, so a catastrophic pattern fails with REGEX_TIMEOUT instead of
 * hanging. Subjects are UTF-8 and matched by code point (JavaScript without
 * `u` works on UTF-16 units; documented difference). A compiled regex is
 * immutable and may be shared between threads. */
#ifndef CDSH_TAVERN_JSREGEX_H
#define CDSH_TAVERN_JSREGEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/strbuf.h"

typedef struct cdsh_tavern_jsre cdsh_tavern_jsre;

/* Backtracking budget of one match attempt (PCRE2 match limit). */
#define CDSH_TAVERN_JSRE_MATCH_LIMIT 2000000u
/* Default wall-clock budget of one regex operation, in milliseconds. */
#define CDSH_TAVERN_JSRE_TIME_MS 250

/* Splits "/pattern/flags" as SillyTavern's parseRegexFromString does: the
 * text must start with '/', end with '/' + letters from "dgimsuy", and the
 * pattern may not contain an unescaped '/'. Returns true and owned copies in
 * *pattern / *flags (either out may be NULL), false if it is not a literal. */
bool cdsh_tavern_jsre_split_literal(const char *text, char **pattern, char **flags);

/* Compiles pattern with JavaScript flags (unknown or repeated flags:
 * REGEX_BAD_FLAGS; PCRE2 errors: REGEX_BAD_PATTERN with PCRE2's message and
 * offset). */
int cdsh_tavern_jsre_compile(const char *pattern, const char *flags, cdsh_tavern_jsre **out,
                             cdsh_error *err);
void cdsh_tavern_jsre_free(cdsh_tavern_jsre *re);

bool cdsh_tavern_jsre_is_global(const cdsh_tavern_jsre *re);
/* Number of capture groups; index of a named group or -1. */
int cdsh_tavern_jsre_group_count(const cdsh_tavern_jsre *re);
int cdsh_tavern_jsre_group_index(const cdsh_tavern_jsre *re, const char *name);

/* RegExp.prototype.test from lastIndex 0. 1 match, 0 no match, negative on
 * REGEX_TIMEOUT (limit or deadline) / REGEX_MATCH_FAILED. time_ms <= 0 means
 * the default. */
int cdsh_tavern_jsre_test(const cdsh_tavern_jsre *re, const char *s, size_t n, int time_ms,
                          cdsh_error *err);

/* One match: ov[2k], ov[2k+1] are byte offsets of group k (SIZE_MAX when the
 * group did not take part). */
typedef int (*cdsh_tavern_jsre_replacer)(void *ud, const char *subject, size_t subject_len,
                                         const size_t *ov, int ngroups, cdsh_strbuf *out);

/* String.prototype.replace: every match when the regex is global (empty
 * matches advance one code point), else the first; text between matches is
 * copied. fn appends the replacement of each match. *out owned. *count (may
 * be NULL) gets the number of matches. */
int cdsh_tavern_jsre_replace(const cdsh_tavern_jsre *re, const char *s, size_t n,
                             cdsh_tavern_jsre_replacer fn, void *ud, int time_ms, char **out,
                             size_t *count, cdsh_error *err);

/* Appends the JavaScript replacement string tpl for a match: $$, $&, $`, $',
 * $1..$99 (longest valid group number; out of range left literal), $<name>
 * (only if the regex has named groups). Unmatched groups are empty. */
int cdsh_tavern_jsre_expand(const cdsh_tavern_jsre *re, const char *tpl, size_t tpl_len,
                            const char *subject, size_t subject_len, const size_t *ov,
                            cdsh_strbuf *out);

/* Appends s[0..n) with every regex metacharacter escaped (lodash escapeRegExp). */
int cdsh_tavern_jsre_escape(const char *s, size_t n, cdsh_strbuf *out);

#endif
