/* regex_apply.h — runs liketavern regex rules (regex.h shape) on text:
 * scope/timing/role placement, min/max depth (depth 0 = newest real
 * message), trim strings, substituteRegex 0 (none) / 1 (raw macros) /
 * 2 (macro values regex-escaped), {{match}}, $0..$N, $<name>, $&, $$, and
 * macro expansion of each replacement. Each rule runs under the JS regex
 * time limit; a failing rule (bad pattern, timeout) is reported in
 * `failures` and skipped, the other rules still run. A rule set is
 * immutable after creation and may be shared between threads only if the
 * macro env passed to apply is per-thread. */
#ifndef CDSH_TAVERN_REGEX_APPLY_H
#define CDSH_TAVERN_REGEX_APPLY_H

#include <jansson.h>

#include "base/err.h"
#include "plugins/tavern/macros.h"

typedef struct cdsh_tavern_rxset cdsh_tavern_rxset;

/* Prepares rules (an array of normalised rules; borrowed, must outlive the
 * set). Patterns are compiled now except those with substituteRegex != 0,
 * which depend on macros and compile per call. A rule whose pattern does not
 * compile is kept and reported by every apply that selects it. */
int cdsh_tavern_rxset_new(const json_t *rules, cdsh_tavern_rxset **out, cdsh_error *err);
void cdsh_tavern_rxset_free(cdsh_tavern_rxset *set);

/* Per-rule time limit in ms (default CDSH_TAVERN_JSRE_TIME_MS). */
void cdsh_tavern_rxset_set_time_limit(cdsh_tavern_rxset *set, int time_ms);

/* Applies, in order, every enabled rule whose scopes contain `scope`
 * ("input", "output", "prompt") and timing contains `timing` ("send",
 * "assemble", "render"), whose roles (if listed) contain `role` (NULL: no
 * role check) and whose depth bounds admit `depth` (negative: no depth).
 * env (may be NULL) expands macros in replacements and finds. *out owned.
 * failures (array or NULL) gets {id, name, code, message} per failed rule.
 * Returns 0, or CDSH_ENOMEM / CDSH_EINVAL. */
int cdsh_tavern_rxset_apply(const cdsh_tavern_rxset *set, const char *text, const char *scope,
                            const char *timing, const char *role, int depth,
                            cdsh_tavern_macro_env *env, char **out, json_t *failures,
                            cdsh_error *err);

#endif
