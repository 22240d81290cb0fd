/* schema.h — the JSON Schema subset that tool parameters and outputs use
 * (../shared/reference/host-contracts.md §1): type (one string), oneOf
 * (exact-one, ≥2 branches, no siblings), properties, required (must name
 * declared properties), boolean additionalProperties, items, scalar enum and
 * const, annotations (description, title, default, examples), plus minimum,
 * maximum, minLength, maxLength and pattern (PCRE2). Anything else is refused
 * at compile time with code "UNSUPPORTED_SCHEMA".
 * Violation messages match DSH's forms:
 *   missing required property "a.b"
 *   "x" must be a string | number | integer | boolean | null | an object | an array
 *   "x" must be one of [..]        "x" must equal <const>
 *   "k" is not a declared property (additionalProperties: false)
 *   "x" must match exactly one oneOf branch (matched N)
 * A compiled schema is immutable and safe to share across threads. */
#ifndef CDSH_BASE_SCHEMA_H
#define CDSH_BASE_SCHEMA_H

#include <jansson.h>

#include "base/err.h"

typedef struct cdsh_schema cdsh_schema;

/* Compiles (and checks) a schema; borrows `schema` and keeps its own
 * reference. On refusal: CDSH_EUNSUPPORTED, code "UNSUPPORTED_SCHEMA", message
 * naming the schema path and keyword. */
int cdsh_schema_compile(const json_t *schema, cdsh_schema **out, cdsh_error *err);

void cdsh_schema_free(cdsh_schema *schema);

/* The schema JSON it was compiled from (borrowed). */
const json_t *cdsh_schema_json(const cdsh_schema *schema);

/* Validates `value`. `root` names the root in paths ("arguments" for tool
 * args, "value" for outputs). Returns 0 when valid; otherwise CDSH_EINVAL and,
 * if violations is non-NULL, *violations = owned JSON array of message
 * strings in document order. */
int cdsh_schema_validate(const cdsh_schema *schema, const json_t *value, const char *root,
                         json_t **violations);

/* Joins a violations array as DSH does: "v1; v2; ...". Owned string. */
char *cdsh_schema_violations_join_dup(const json_t *violations);

#endif
