/* config.h — plugin config schemas: a small JSON Schema vocabulary,
 * validation that fills defaults, `invalid config:` reports naming each path,
 * and the flattened field list behind `cdsh config list`. Profiles are
 * profile.h. Pure functions, thread-safe on distinct values; json_t
 * arguments are borrowed. */
#ifndef CDSH_HOST_CONFIG_H
#define CDSH_HOST_CONFIG_H

#include <jansson.h>

#include "base/err.h"

/* The vocabulary: type, properties, items, additionalProperties, required,
 * default, description, title, examples, enum, minimum, maximum, minLength,
 * maxLength. */

/* Checks a config schema: the root must be {type:"object"}; every node needs
 * a `type` (string, integer, number, boolean, array, object); only the
 * keywords above are allowed; every `default` must satisfy its own node.
 * Refusal: CDSH_EUNSUPPORTED, code "UNSUPPORTED_SCHEMA", message naming the
 * schema path (e.g. `config schema: unsupported keyword "pattern" at depth`). */
int cdsh_config_schema_check(const json_t *schema, cdsh_error *err);

/* Validates `input` (NULL or null: nothing given) against `schema` and fills
 * defaults: an absent field takes its default; an absent object is built from
 * its children's defaults. Undeclared keys are refused unless the object says
 * additionalProperties:true. On success *out is the complete config (owned).
 * On failure CDSH_EINVAL, code "INVALID_CONFIG", err->message is
 *   invalid config:
 *     - expected integer but got string (at depth)
 * one line per issue, and, if issues is non-NULL, *issues is an owned array
 * of {path, message}. Messages: `expected <type> but got <type>`,
 * `expected one of [..] but got <v>`, `expected a value >= N but got V`,
 * `expected a value <= N ...`, `expected at least N characters`,
 * `expected at most N characters`, `missing required property`,
 * `unknown key`. Paths are dotted with [i] for array items. */
int cdsh_config_resolve(const json_t *schema, const json_t *input, json_t **out, json_t **issues,
                        cdsh_error *err);

/* The leaf fields of a schema in declaration order (objects with properties
 * are flattened into dotted keys): an owned array of {key, type, default?,
 * description?, enum?, minimum?, maximum?}. */
json_t *cdsh_config_fields(const json_t *schema);

/* The schema node for a dotted key, or NULL. Borrowed from schema. */
const json_t *cdsh_config_schema_at(const json_t *schema, const char *key);

/* Value at a dotted key in an object, or NULL. Borrowed. */
json_t *cdsh_config_path_get(const json_t *obj, const char *key);

/* Sets (value non-NULL; reference taken) or removes (value NULL) the dotted key
 * in obj, creating intermediate objects. CDSH_EINVAL when a path component
 * exists but is not an object, or the key is empty. */
int cdsh_config_path_set(json_t *obj, const char *key, json_t *value, cdsh_error *err);

/* Parses command-line text for the field at `key`: strings are taken
 * literally, anything else is parsed as JSON (`true`, `4`, `["a"]`).
 * Unknown key: CDSH_ENOTFOUND, code "UNKNOWN_KEY"; unparsable: CDSH_EINVAL,
 * code "INVALID_CONFIG". *out is owned. */
int cdsh_config_parse_value(const json_t *schema, const char *key, const char *text, json_t **out,
                            cdsh_error *err);

#endif
