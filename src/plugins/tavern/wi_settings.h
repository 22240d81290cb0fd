/* wi_settings.h — SillyTavern 1.19's world-info settings as JSON: read from
 * cdsh's camelCase object or from SillyTavern's own world_info_* keys (a
 * settings.json or its "world_info_settings" object), validated, layered
 * (defaults ← profile ← story ← preview flags) and written back. Pure. */
#ifndef CDSH_TAVERN_WI_SETTINGS_H
#define CDSH_TAVERN_WI_SETTINGS_H

#include <jansson.h>

#include "base/err.h"
#include "plugins/tavern/wi_activate.h"

/* Applies the settings in o over *s. Keys (SillyTavern's name in brackets):
 * scanDepth [world_info_depth] 0..1000, budgetPercent [world_info_budget]
 * 1..100, budgetCap [world_info_budget_cap] >= 0, minActivations
 * [world_info_min_activations] >= 0, minActivationsDepthMax
 * [world_info_min_activations_depth_max] 0..1000, maxRecursionSteps
 * [world_info_max_recursion_steps] >= 0, characterStrategy
 * [world_info_character_strategy] 0 evenly, 1 character first, 2 global
 * first, and the booleans recursive, caseSensitive, matchWholeWords,
 * includeNames, overflowAlert, useGroupScoring [world_info_recursive, ...];
 * cdsh's own: maxContext >= 1 (the model window the percent applies to) and
 * tokenBudget >= 0 (an absolute budget; 0 uses the percent). A nested
 * "world_info_settings" object (SillyTavern's settings.json) is read too;
 * "world_info" (its book selection) is ignored. Numbers must be integers,
 * booleans booleans (SillyTavern's 0/1 are accepted for booleans).
 * On an unknown key, a wrong type or a value out of range: CDSH_EINVAL,
 * code "wi-settings-rejected", naming the key; *s is then unchanged.
 * o NULL or null: nothing to apply (0). */
int cdsh_tavern_wi_settings_apply(cdsh_tavern_wi_settings *s, const json_t *o, cdsh_error *err);

/* The settings as a camelCase object (every key above). Owned; NULL on ENOMEM. */
json_t *cdsh_tavern_wi_settings_json(const cdsh_tavern_wi_settings *s);

/* The budget in tokens these settings give (SillyTavern's rule). */
int cdsh_tavern_wi_settings_budget(const cdsh_tavern_wi_settings *s);

/* SillyTavern's generation types (GENERATION_TYPE_TRIGGERS): normal,
 * continue, impersonate, swipe, regenerate, quiet. */
bool cdsh_tavern_generation_type_valid(const char *type);

#endif
