/* register.h — enabled command IR → cdsh slash commands, and enabled skill
 * IR (skills and sub-agents) → cdsh skills, through the plugin context (so
 * unloading removes them). Running a command expands its placeholders
 * (commands.h) and answers with the prompt text; a skill is registered with
 * its IR's content. Thread-safe as the host's registries are; command IR must
 * outlive the registration (skills are copied). */
#ifndef CDSH_MCPIMPORT_REGISTER_H
#define CDSH_MCPIMPORT_REGISTER_H

#include <jansson.h>

#include "base/err.h"
#include "host/plugins.h"

/* Registers command IR `cmd` (borrowed; keep it alive until ctx unloads).
 * Errors are the command registry's. */
int cdsh_mcpimport_register_command(cdsh_plugin_ctx *ctx, const json_t *cmd, cdsh_error *err);

/* Registers skill IR `skill` (borrowed) as a cdsh skill {name, description,
 * content, whenToUse}. A name already registered in the layer keeps the first
 * registration (skills.h: a warning, not an error). Errors are the skill
 * registry's (INVALID_SKILL). */
int cdsh_mcpimport_register_skill(cdsh_plugin_ctx *ctx, const json_t *skill, cdsh_error *err);

#endif
