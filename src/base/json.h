/* json.h — helpers over jansson: typed getters that report errors instead of
 * crashing, deterministic compact/pretty output, bounded parsing, and the
 * "lossless JSON" check and sanitiser applied to every tool input and output
 * (valid UTF-8 strings, finite numbers, no NaN).
 * Functions borrow their json_t arguments unless the name ends in _take/_steal;
 * _dup/_new results are owned by the caller. All functions are thread-safe on
 * distinct values. */
#ifndef CDSH_BASE_JSON_H
#define CDSH_BASE_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

/* ---- typed getters ------------------------------------------------------
 * Each looks up `key` in object `obj`. Missing key: CDSH_ENOTFOUND with code
 * "MISSING_FIELD" and message `missing field "key"`; wrong type: CDSH_EINVAL
 * with code "BAD_FIELD" and message `field "key" must be a string` (etc.).
 * A NULL or non-object `obj` is CDSH_EINVAL. Borrowed outputs live as long
 * as obj. */
int cdsh_json_get_string(const json_t *obj, const char *key, const char **out, cdsh_error *err);
int cdsh_json_get_int(const json_t *obj, const char *key, int64_t *out, cdsh_error *err);
int cdsh_json_get_number(const json_t *obj, const char *key, double *out, cdsh_error *err);
int cdsh_json_get_bool(const json_t *obj, const char *key, bool *out, cdsh_error *err);
int cdsh_json_get_object(const json_t *obj, const char *key, json_t **out, cdsh_error *err);
int cdsh_json_get_array(const json_t *obj, const char *key, json_t **out, cdsh_error *err);

/* Optional variants: a missing key (or JSON null) leaves *out = dflt and
 * returns 0; a present key of the wrong type is still CDSH_EINVAL. */
int cdsh_json_opt_string(const json_t *obj, const char *key, const char *dflt, const char **out,
                         cdsh_error *err);
int cdsh_json_opt_int(const json_t *obj, const char *key, int64_t dflt, int64_t *out,
                      cdsh_error *err);
int cdsh_json_opt_number(const json_t *obj, const char *key, double dflt, double *out,
                         cdsh_error *err);
int cdsh_json_opt_bool(const json_t *obj, const char *key, bool dflt, bool *out,
                       cdsh_error *err);

/* ---- output --------------------------------------------------------------
 * Object keys keep insertion order; non-ASCII is emitted as UTF-8 (not \u
 * escapes); "/" is not escaped; reals print in the shortest form that reads
 * back the same. Owned string, NULL on ENOMEM or an invalid value. */
char *cdsh_json_dump_compact_dup(const json_t *value);
char *cdsh_json_dump_pretty_dup(const json_t *value); /* 2-space indent, trailing newline */

/* ---- input ---------------------------------------------------------------
 * Parses exactly one JSON text (trailing whitespace allowed), rejecting
 * duplicate object keys, nesting deeper than 512 and inputs over max_bytes
 * (0: no limit). On failure returns NULL with code "BAD_JSON" and a message
 * naming line and column. The result is owned. */
json_t *cdsh_json_parse(const char *text, size_t len, size_t max_bytes, cdsh_error *err);

/* ---- lossless JSON -------------------------------------------------------
 * Checks that every string (keys included) is valid UTF-8 without NUL, every
 * real is finite, and nesting is at most 512 deep. On failure returns
 * CDSH_EINVAL, code "NOT_LOSSLESS", and a message naming the JSON path, e.g.
 * `value.items[2].name is not valid UTF-8`. `root` names the root in paths
 * ("arguments", "value"; NULL means "value"). */
int cdsh_json_check_lossless(const json_t *value, const char *root, cdsh_error *err);

/* Deep copy with invalid UTF-8 replaced by U+FFFD, NUL bytes dropped from
 * strings and non-finite reals replaced by null. Owned; NULL on ENOMEM. */
json_t *cdsh_json_sanitize_dup(const json_t *value);

/* Deep copy that is guaranteed lossless, or NULL with the same error as
 * cdsh_json_check_lossless (for snapshotting tool arguments and results). */
json_t *cdsh_json_snapshot_dup(const json_t *value, const char *root, cdsh_error *err);

/* Structural equality (object key order ignored; 1 and 1.0 are equal). */
bool cdsh_json_equal(const json_t *a, const json_t *b);

#endif
