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
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* ---- typed getters ------------------------------------------------------
 * Each looks up `key` in object `obj`. Missing key: CDSH_ENOTFOUND with code
 * "MISSING_FIELD" and message `missing field "key"`; wrong type: CDSH_EINVAL
 * with code "BAD_FIELD" and message `field "key" must be a string` (etc.).
 * A NULL or non-object `obj` is CDSH_EINVAL with code "BAD_FIELD" and message
 * `cannot read field "key": the value is not a JSON object`. Borrowed outputs
 * live as long as obj. get_int also accepts a real with an integral value in
 * int64 range (3.0); get_number accepts integers and reals; get_string
 * refuses strings with embedded NUL (`must be a string without NUL
 * characters`). JSON null counts as the wrong type for the get_ variants.
 * keep-public: the checked getters with exact field errors, for plugins that
 * validate arguments by hand (in-tree code reads through schemas and
 * cdsh_json_str); tests/base/test_json.c pins their messages. */
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
int cdsh_json_opt_bool(const json_t *obj, const char *key, bool dflt, bool *out, cdsh_error *err);

/* Lenient reads for values already validated or only displayed: the string
 * at key (borrowed, lives as long as obj), else NULL — also for a missing
 * key, a non-string value or a NULL / non-object obj. _or returns dflt
 * instead of NULL. */
const char *cdsh_json_str(const json_t *obj, const char *key);
const char *cdsh_json_str_or(const json_t *obj, const char *key, const char *dflt);

/* ---- output --------------------------------------------------------------
 * Object keys keep insertion order; non-ASCII is emitted as UTF-8 (not \u
 * escapes); "/" is not escaped; controls are escaped (\n, \u001f, NUL as
 * \u0000). Reals print as cdsh_json_format_double(d, true) below: the
 * shortest form that reads back the same, always recognisable as a real
 * ("1.0", "0.1", "-0.0", "1e+300"). Owned string, NULL on ENOMEM or an
 * invalid value: a string or key that is not valid UTF-8, a non-finite real,
 * or nesting deeper than 2048 (which also catches reference cycles). */
char *cdsh_json_dump_compact_dup(const json_t *value);
char *cdsh_json_dump_pretty_dup(const json_t *value); /* 2-space indent, trailing newline */

/* Writes a double as JavaScript's Number.prototype.toString would: the
 * shortest digits that read back to the same double, fixed notation for
 * 1e-6 <= |d| < 1e21 ("0.000001", "100"), otherwise exponent notation
 * ("1e-7", "1e+21", "1.5e+300"). keep_real adds ".0" to integral fixed
 * output and keeps the sign of -0 ("100.0", "-0.0"), as the dumps above do;
 * without it -0 prints "0". Returns the length; 0 (and "") for NaN and
 * infinities. */
#define CDSH_JSON_DOUBLE_MAX 32
size_t cdsh_json_format_double(double d, bool keep_real, char out[CDSH_JSON_DOUBLE_MAX]);

/* ---- input ---------------------------------------------------------------
 * Parses exactly one JSON text (trailing whitespace allowed), rejecting
 * duplicate object keys, nesting deeper than 512 and inputs over max_bytes
 * (0: no limit). Any top-level value is accepted ("1", "\"x\""); strings
 * must be valid UTF-8 and may not contain \u0000. On failure returns NULL
 * with code "BAD_JSON" and err->rc CDSH_EINVAL, message
 * `invalid JSON at line L, column C: <reason>` (columns count code points
 * from 1); an input over max_bytes is CDSH_ETOOBIG with message
 * `JSON text is N bytes, over the limit of M bytes`. The result is owned, and
 * always passes cdsh_json_check_lossless. */
json_t *cdsh_json_parse(const char *text, size_t len, size_t max_bytes, cdsh_error *err);

/* ---- lossless JSON -------------------------------------------------------
 * Checks that every string (keys included) is valid UTF-8 without NUL, every
 * real is finite, and at most 512 arrays and objects are nested. On failure
 * returns CDSH_EINVAL, code "NOT_LOSSLESS", and a message naming the JSON
 * path, e.g. `value.items[2].name is not valid UTF-8`. `root` names the root
 * in paths ("arguments", "value"; NULL means "value"). Keys that are not
 * identifiers appear as `value["a b"]`; paths over 200 bytes are shortened
 * to their two ends joined by "...". Other messages: `<path> contains a NUL
 * character`, `<path> is not a finite number`, `<path> has a key that is not
 * valid UTF-8`, `<path> has a key that contains a NUL character`, `<path> is
 * nested deeper than 512 levels`. The first problem in document order is
 * reported. */
int cdsh_json_check_lossless(const json_t *value, const char *root, cdsh_error *err);

/* Deep copy with invalid UTF-8 replaced by U+FFFD (one per maximal invalid
 * subpart), NUL bytes dropped from strings (keys too), non-finite reals
 * replaced by null and containers nested deeper than 512 replaced by null, so
 * the result always passes cdsh_json_check_lossless. If two keys sanitise to
 * the same text the later one wins. Owned; NULL on ENOMEM or NULL input. */
json_t *cdsh_json_sanitize_dup(const json_t *value);

/* Layer-internal (base): the one recursive copy behind sanitize_dup and
 * redact.c's cdsh_redact_json_dup and cdsh_json_map_strings. Arrays and objects are rebuilt; every
 * other value goes through leaf; object keys through key, which also gives the child's flag (a flag
 * is inherited down the tree: redact's "under a secret key"). A value at depth >= max_depth
 * (containers only, unless deep_leaves) becomes too_deep(flag). All callbacks return owned values
 * or NULL for ENOMEM; the copy is then NULL. */
typedef struct cdsh__json_map_ops {
    int max_depth;
    bool deep_leaves;
    json_t *(*leaf)(void *ud, const json_t *v, bool flag);
    json_t *(*too_deep)(void *ud, bool flag);
    /* The key to store (owned JSON string) and *child_flag. */
    json_t *(*key)(const char *k, size_t n, bool flag, bool *child_flag);
    void *ud; /* passed to leaf and too_deep */
} cdsh__json_map_ops;
json_t *cdsh__json_map_dup(const json_t *value, const cdsh__json_map_ops *ops, bool flag);

/* Maps one string s[0..n) to an owned malloc'd text (its length in *out_n),
 * or NULL on ENOMEM. The text must be UTF-8 when s is (it is not checked). */
typedef char *(*cdsh_json_string_map_fn)(void *ud, const char *s, size_t n, size_t *out_n);

/* Owned deep copy of value with every string value mapped through fn (keys
 * are kept, numbers copied, true/false/null shared); a value nested deeper
 * than max_depth (the top level is depth 0) becomes the string too_deep.
 * The one walk behind the redactors that rewrite each string of a value
 * (base/redact.c, the importer's reports). NULL on ENOMEM (fn's NULL too)
 * or NULL value. */
json_t *cdsh_json_map_strings(const json_t *value, cdsh_json_string_map_fn fn, void *ud,
                              int max_depth, const char *too_deep);

/* Deep copy that is guaranteed lossless, or NULL with the same error as
 * cdsh_json_check_lossless (for snapshotting tool arguments and results). */
json_t *cdsh_json_snapshot_dup(const json_t *value, const char *root, cdsh_error *err);

/* Structural equality (object key order ignored; 1 and 1.0 are equal; strings
 * compare byte for byte). Two NULLs are equal; values nested deeper than 2048
 * compare unequal.
 * keep-public: tests and fuzz targets compare JSON with it. */
bool cdsh_json_equal(const json_t *a, const json_t *b);

#endif
