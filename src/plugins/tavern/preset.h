/* preset.h — SillyTavern chat-completion presets (prompts[], prompt_order,
 * sampling fields, regexScripts) and personas: validation and normalisation
 * with defaults; unknown keys are kept. Pure; json_t arguments borrowed,
 * results owned; thread-safe on distinct values. */
#ifndef CDSH_TAVERN_PRESET_H
#define CDSH_TAVERN_PRESET_H

#include <jansson.h>

#include "base/err.h"

/* Normalises a preset. `fallback_name` (may be NULL) names a preset without a
 * "name" key (usually the file name). Sampling fields must be numbers,
 * prompts need a string identifier, prompt_order items need an order list.
 * Errors: PRESET_BAD_SHAPE, PRESET_BAD_FIELD (CDSH_EINVAL). Idempotent. */
json_t *cdsh_tavern_preset_normalize_dup(const json_t *in, const char *fallback_name,
                                         cdsh_error *err);

/* Normalises a persona {name (required, non-empty), description "", avatar
 * (string or null), lorebook (library lorebook id or null)}.
 * Errors: PERSONA_BAD_SHAPE, PERSONA_NO_NAME (CDSH_EINVAL). */
json_t *cdsh_tavern_persona_normalize_dup(const json_t *in, cdsh_error *err);

#endif
