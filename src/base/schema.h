/* schema.h — the JSON Schema subset that tool parameters and outputs use
 * (DSH 0.1.0-rc.8's tool contract): type (one string), oneOf
 * (exact-one, ≥2 branches, no siblings), properties, required (must name
 * declared properties), boolean additionalProperties, items, scalar enum and
 * const, annotations (description, title, default, examples), plus cdsh's
 * minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength,
 * pattern (PCRE2), minItems and maxItems. Anything else is refused at compile
 * time with code "UNSUPPORTED_SCHEMA".
 *
 * Schema refusals use DSH's forms (json-schema.ts), every problem collected in
 * walk order and joined with "; " after the prefix "unsupported JSON schema: ":
 *   schema.properties.x.anyOf is not a supported keyword (subset: ...)
 *   schema.type must be a single type string (type arrays are not supported)
 *   schema.type must be one of object/array/string/number/integer/boolean/null
 *   schema.additionalProperties must be a boolean
 *   schema.required names "k" which is not in properties
 *   schema.required must be an array of strings
 *   schema.properties must be an object of schemas
 *   schema.oneOf must be an array of at least two schemas
 *   schema.oneOf[0] must be a schema object
 *   schema cannot declare both type and oneOf
 *   schema.items is not supported beside oneOf | requires type or oneOf
 *   schema.items is not supported on type "string"
 *   schema.enum must be a non-empty array of string values
 *   schema.const must be a string value
 *   schema.const must be one of schema.enum when both are declared
 *   schema.default annotation must be lossless JSON data
 *   schema.description must be a string       (title likewise)
 *   schema.minimum must be a number           (maximum, exclusive* likewise)
 *   schema.minLength must be a non-negative integer (maxLength, min/maxItems)
 *   schema.pattern must be a string
 *   schema.pattern is not a supported pattern: <PCRE2 message> at offset N
 *   schema.properties.a... is nested too deeply (more than 256 levels)
 * A schema with neither type nor oneOf (annotations only) accepts any JSON.
 * "$schema" is tolerated at the root only, as a string annotation (MCP
 * servers commonly send it); anywhere else it is an unsupported keyword.
 *
 * Value violations use DSH's forms, in DSH's walk order: for an object, its
 * missing required properties (in `required` order), then its declared
 * properties' own violations (in `properties` order), then its undeclared
 * keys (in the value's key order); for an array, min/maxItems then each item:
 *   missing required property "a.b"
 *   "x" must be a string | a number | an integer | a boolean | null |
 *       an object | an array
 *   "x" must be a finite JSON number      (a real -0.0, as DSH refuses -0)
 *   "x" must be one of ["a",1,true,null]  (JSON.stringify of the enum)
 *   "x" must be "c"                        (JSON.stringify of the const)
 *   "k" is not a declared property (additionalProperties: false)
 *   "x" must match exactly one oneOf branch (matched N)
 * and, for cdsh's additions (numbers printed as JavaScript prints them):
 *   "x" must be >= 1 | > 1 | <= 10 | < 10
 *   "x" must be at least N characters | at most N characters  ("character" for 1)
 *   "x" must match pattern "^a"            (pattern printed as a JSON string)
 *   "x" must have at least N items | at most N items          ("item" for 1)
 *   "x" must be a lossless JSON value      (a string that is not valid UTF-8)
 * Type is checked first; a scalar failing enum/const reports only that. Once
 * the type matches, every range/length/pattern failure is reported.
 * "integer" follows JavaScript's Number.isInteger: 1.0 and 1e300 are integers.
 * minLength/maxLength count Unicode code points (not bytes, not UTF-16 units).
 * pattern is an unanchored search, compiled by PCRE2 in UTF mode with
 * ECMAScript-like options (\uHHHH escapes, `$` only at the very end). A
 * match that exhausts PCRE2's backtracking budget (10^6 steps) counts as a
 * failure: `"x" must match pattern "p" (pattern match failed: match limit
 * exceeded)`.
 *
 * Thread safety: a compiled schema is immutable; any number of threads may
 * validate against one schema at the same time (match data is per call). */
#ifndef CDSH_BASE_SCHEMA_H
#define CDSH_BASE_SCHEMA_H

#include <jansson.h>

#include "base/err.h"

typedef struct cdsh_schema cdsh_schema;

/* Compiles (and checks) a schema; borrows `schema` and keeps its own deep
 * copy, so later changes to `schema` do not affect the compiled one. Paths in
 * refusals start at "schema". On refusal: CDSH_EUNSUPPORTED, code
 * "UNSUPPORTED_SCHEMA", message "unsupported JSON schema: <v1>; <v2>" naming
 * each offending schema path and keyword (truncated to the cdsh_error buffer).
 * NULL schema or out: CDSH_EINVAL. */
int cdsh_schema_compile(const json_t *schema, cdsh_schema **out, cdsh_error *err);

/* Like cdsh_schema_compile, with `root` naming the schema's root in refusal
 * paths ("parameters", "output.schema"; NULL means "schema"), and, if
 * violations is non-NULL, *violations = owned JSON array of every refusal
 * message (NULL when the schema compiled). */
int cdsh_schema_compile_at(const json_t *schema, const char *root, cdsh_schema **out,
                           json_t **violations, cdsh_error *err);

/* NULL-safe. */
void cdsh_schema_free(cdsh_schema *schema);

/* The schema JSON it was compiled from (borrowed; the compiled copy).
 * keep-public: test_schema reads the compiled copy back. */
const json_t *cdsh_schema_json(const cdsh_schema *schema);

/* Validates `value`. `root` names the root in paths ("arguments" for tool
 * args -> "arguments.a.b", "arguments.items[2]"; "value" for outputs; NULL
 * means "value"). The empty string "" selects DSH's implicit parameter root:
 * property paths have no prefix ("a.b", `missing required property "a"`) and
 * the root itself prints as "arguments". Returns 0 when valid (and sets
 * *violations = NULL); CDSH_EINVAL when invalid and, if violations is
 * non-NULL, *violations = owned JSON array of message strings (never empty);
 * CDSH_ENOMEM on allocation failure. A NULL value is one violation ("x" must
 * be a lossless JSON value); a NULL schema is CDSH_EINVAL with no array.
 * Values are otherwise taken as jansson holds them (finite numbers); use
 * cdsh_json_check_lossless for the lossless boundary. Thread-safe. */
int cdsh_schema_validate(const cdsh_schema *schema, const json_t *value, const char *root,
                         json_t **violations);

/* Joins a violations array as DSH does: "v1; v2; ...". Non-string entries are
 * skipped; NULL or empty gives "". Owned string, NULL on ENOMEM. */
char *cdsh_schema_violations_join_dup(const json_t *violations);

#endif
