/* vars.h — the importer's `${VAR}` / `${VAR:-default}` reference syntax:
 * scanning a string for references (normalise records them in the IR) and
 * expanding them through a lookup (register, with values from secrets.c).
 * Pure functions, thread-safe; no environment access here. */
#ifndef CDSH_MCPIMPORT_VARS_H
#define CDSH_MCPIMPORT_VARS_H

#include <jansson.h>
#include <stdbool.h>

/* Appends one {kind, envVar, fallback, field} object per reference found in
 * s to `out` (an array; borrowed). `fallback` is the default text or null.
 * Names are [A-Za-z_][A-Za-z0-9_]* or user_config.KEY; anything else after
 * "${" is literal text. Returns the number of references appended. */
int cdsh_mcpimport_vars_scan(const char *s, const char *kind, const char *field, json_t *out);

/* The value of `name`, or NULL when it has none. */
typedef const char *(*cdsh_mcpimport_lookup_fn)(void *ud, const char *name);

/* Owned copy of s with every reference replaced: the lookup's value, else
 * the fallback (itself not expanded: Claude Code expands one level), else the
 * empty string with *missing set to true (missing may be NULL). NULL on ENOMEM. */
char *cdsh_mcpimport_vars_expand_dup(const char *s, cdsh_mcpimport_lookup_fn lookup, void *ud,
                                     bool *missing);

/* Owned copy of s with `${name}` (exactly, no default form) replaced by value. */
char *cdsh_mcpimport_vars_subst_dup(const char *s, const char *name, const char *value);

/* Layer-internal (normalise.c, commands.c): appends a formatted message
 * (cut to 511 bytes) to the JSON array `arr`. */
void cdsh__mcpimport_warnf(json_t *arr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
