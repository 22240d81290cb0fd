/* preflight.h — judges server, command and skill IR: ok / warn / blocked, with every
 * reason. Pure: facts about the machine (is a program on PATH, is the Docker
 * daemon up) come from the probe callbacks (probe.h has the real ones, tests
 * pass fakes). Thread-safe as far as the probe is. */
#ifndef CDSH_MCPIMPORT_PREFLIGHT_H
#define CDSH_MCPIMPORT_PREFLIGHT_H

#include <jansson.h>
#include <stdbool.h>

#include "plugins/mcpimport/cmdir.h"

typedef struct cdsh_mcpimport_probe {
    /* True when `command` can be started: a name is looked up on PATH, a path
     * must be an executable file. */
    bool (*program_found)(void *ud, const char *command);
    /* True when the Docker daemon answers. */
    bool (*docker_reachable)(void *ud);
    void *ud;
} cdsh_mcpimport_probe;

/* Adds "verdict" ("ok" | "warn" | "blocked") and "reasons" ([{level: "warn" |
 * "blocked", code, message}]) to every server and command IR (arrays,
 * modified in place; discovery order = precedence order). Codes:
 * servers  UNSUPPORTED_TRANSPORT, NO_COMMAND, COMMAND_NOT_FOUND,
 *          RUNTIME_MISSING (npx/uvx/docker itself), DOCKER_UNREACHABLE,
 *          INVALID_URL, UNRESOLVED_SECRET, DEFAULT_USED, OPTIONAL_UNSET,
 *          NAME_COLLISION, DUPLICATE_SERVER, DISABLED_IN_SOURCE, SEMANTIC_LOSS;
 * commands EMPTY_PROMPT, NAME_COLLISION, DUPLICATE_COMMAND, UNSUPPORTED_FEATURE,
 *          SEMANTIC_LOSS.
 * A secret reference counts as resolved when its "resolvedFrom" is "env" or
 * "keyring" (secrets.c sets it); "default" gives DEFAULT_USED. probe may be
 * NULL (no machine checks). */
void cdsh_mcpimport_preflight(json_t *servers, json_t *commands, const cdsh_mcpimport_probe *probe);

/* The command half of cdsh_mcpimport_preflight over the scan's structs:
 * sets reasons and verdict of each (and drops JSON made before). */
void cdsh__mcpimport_preflight_cmds(cdsh__mcpimport_cmds *l);

/* Adds "verdict" and "reasons" to every skill IR (skills.h; skills and
 * sub-agents in one array, precedence order). Codes: UNREADABLE_FILE (the
 * file: blocked; a supporting file: warn), MISSING_NAME and
 * MISSING_DESCRIPTION (sub-agents: blocked; a skill without a description
 * takes its body's first line: warn, blocked when the body is empty too),
 * EMPTY_BODY, OVERSIZED_BODY (warn above CDSH_MCPIMPORT_SKILL_WARN_BYTES,
 * blocked above CDSH_MCPIMPORT_SKILL_MAX_BYTES), NAME_COLLISION,
 * DUPLICATE_SKILL, UNSUPPORTED_FEATURE, SEMANTIC_LOSS. */
void cdsh_mcpimport_preflight_skills(json_t *skills);

/* "ok", "warn" or "blocked" of one judged IR ("ok" when not judged). */
const char *cdsh_mcpimport_verdict(const json_t *ir);

#endif
