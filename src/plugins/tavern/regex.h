/* regex.h — SillyTavern regex scripts converted to the internal rule shape of
 * liketavern (§12): {id, name, find, replace, enabled, scopes, timing,
 * minDepth, maxDepth, substituteRegex, source, roles?, trimStrings?}, with the
 * enable policy for card rules. Shape only; no regex is run here. Pure;
 * thread-safe on distinct values. json_t arguments are borrowed. */
#ifndef CDSH_TAVERN_REGEX_H
#define CDSH_TAVERN_REGEX_H

#include <jansson.h>

#include "base/err.h"

typedef enum cdsh_tavern_regex_source {
    CDSH_TAVERN_REGEX_USER = 0,   /* global rules: enabled = !disabled */
    CDSH_TAVERN_REGEX_CARD = 1,   /* display-only kept on; prompt/input parts default off */
    CDSH_TAVERN_REGEX_PRESET = 2, /* enabled = !disabled */
} cdsh_tavern_regex_source;

/* Converts one ST script into a rule (owned). A script whose placements are
 * all unsupported (3 slash command, 4, 6 reasoning) yields NULL with rc 0:
 * it is ignored, as liketavern does. Errors: REGEX_BAD_SCRIPT (not an object,
 * findRegex missing or not a string, bad field types). */
int cdsh_tavern_regex_from_st(const json_t *script, cdsh_tavern_regex_source source, json_t **rule,
                              cdsh_error *err);

/* Converts an array of ST scripts (or one script object) into an owned array
 * of rules, skipping ignored ones. Fails on the first bad script, naming its
 * index. */
json_t *cdsh_tavern_regex_rules_from_st_dup(const json_t *scripts, cdsh_tavern_regex_source source,
                                            cdsh_error *err);

/* Validates and normalises an internal rule (as stored in regex/rules.json):
 * fills defaults, checks scopes/timing values. Owned; NULL + REGEX_BAD_RULE. */
json_t *cdsh_tavern_regex_rule_normalize_dup(const json_t *rule, cdsh_error *err);

/* Accepts either ST scripts or internal rules (array or single object; each
 * element decided by having "findRegex" or "find") and returns normalised
 * internal rules (owned). */
json_t *cdsh_tavern_regex_import_dup(const json_t *in, cdsh_tavern_regex_source source,
                                     cdsh_error *err);

#endif
