/* toml.h — a TOML 1.0 parser producing jansson values: plain JSON for
 * importers (Codex's config.toml) and the toml-test typed encoding that keeps
 * every TOML type exact. Hand-written because Debian packages no C TOML library.
 * All functions are thread-safe (no shared state); results are owned by the caller. */
#ifndef CDSH_BASE_TOML_H
#define CDSH_BASE_TOML_H

#include <jansson.h>
#include <stddef.h>

#include "base/err.h"

#define CDSH_TOML_DEFAULT_MAX_BYTES ((size_t)16 * 1024 * 1024)
#define CDSH_TOML_DEFAULT_MAX_DEPTH 128
#define CDSH_TOML_MAX_DEPTH_CAP 512 /* larger max_depth values are lowered to this */

typedef struct cdsh_toml_options {
    size_t max_bytes; /* longest accepted document in bytes; 0 = CDSH_TOML_DEFAULT_MAX_BYTES */
    int max_depth;    /* deepest nesting of tables and arrays; 0 = CDSH_TOML_DEFAULT_MAX_DEPTH */
    int typed;        /* nonzero: the toml-test tagged encoding instead of plain JSON */
} cdsh_toml_options;

/* Parses a whole TOML document (text need not be NUL-terminated; a leading
 * UTF-8 BOM is skipped) into a JSON object whose keys keep document order.
 * Plain mapping: table -> object, array -> array, string -> string, integer ->
 * integer (64-bit), float -> real except inf/nan -> the strings "inf", "-inf",
 * "nan" (JSON has no such numbers; use the typed form to tell them from
 * strings), boolean -> true/false, offset date-time, local date-time, local
 * date and local time -> their canonical RFC 3339 text ("1979-05-27T07:32:00Z",
 * "1979-05-27T07:32:00", "1979-05-27", "07:32:00"; 'T' and 'Z' upper-case, a
 * space separator becomes 'T', fractional seconds kept as written).
 * Errors: malformed input is CDSH_EINVAL with code "BAD_TOML" and message
 * "line L, column C: <what is wrong>" (1-based, columns in characters);
 * input over the size limit or nested deeper than the depth limit is
 * CDSH_ETOOBIG with code "TOML_TOO_BIG" (the depth message has a position).
 * On failure *out is NULL. */
int cdsh_toml_parse(const char *text, size_t len, json_t **out, cdsh_error *err);

/* Same, in toml-test's tagged encoding: every leaf is
 * {"type": T, "value": S} with T one of "string", "integer", "float", "bool",
 * "datetime", "datetime-local", "date-local", "time-local" and S a string:
 * integers in decimal, floats as the shortest text that reads back to the
 * same double ("inf", "-inf", "nan" for the special values, "-0" kept),
 * booleans "true"/"false", date-times canonical as above.
 * keep-public: the typed form the TOML conformance tests compare with (docs/toml.md). */
int cdsh_toml_parse_typed(const char *text, size_t len, json_t **out, cdsh_error *err);

/* Either form with explicit limits (opts may be NULL for the defaults).
 * keep-public: the fuzz target and bench/bench_toml.c set limits with it. */
int cdsh_toml_parse_with(const char *text, size_t len, const cdsh_toml_options *opts, json_t **out,
                         cdsh_error *err);

#endif
