/* engine.h — EngineSpec rows (seed 003 §2, digest §1): validation and
 * coercion, the builtin engines, user patches, command resolution and the
 * argv/env/budgets derived from a row (the cold-start check looks into npx's
 * cache). Rows are jansson objects; state files are state.h's job. All
 * functions are pure or only read the environment and the file system;
 * thread-safe as long as nobody calls setenv concurrently. */
#ifndef CDSH_PLUGINS_ACP_ENGINE_H
#define CDSH_PLUGINS_ACP_ENGINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

/* Defaults (seed §2, digest §1.1). */
#define CDSH_ACP_INIT_STEADY_SECS 30
#define CDSH_ACP_INIT_COLD_SECS 300
#define CDSH_ACP_DISPOSE_GRACE_MS 6000
#define CDSH_ACP_IDLE_DISPOSE_MS 30000
#define CDSH_ACP_SORT_ORDER 100
#define CDSH_ACP_PROMPT_TIMEOUT_MS 300000
#define CDSH_ACP_IDLE_TIMEOUT_MS 180000

/* Validates and coerces one row (borrowed) into an owned normalised row with
 * every default filled in. Errors (CDSH_EINVAL, code "INVALID_ENGINE"):
 * not an object, empty id, id not matching ^[a-z0-9][a-z0-9-]*$ (after
 * trimming), missing or empty command, a dialect other than "canonical"
 * (code "UNKNOWN_DIALECT"). With from_user, the probed and runtime fields
 * "capabilities" and "health" are refused: CDSH_EPERM, code
 * "READ_ONLY_FIELD". source ("builtin", "user-file") is stored in the row. */
int cdsh_acp_engine_normalize(const json_t *row, const char *source, bool from_user, json_t **out,
                              cdsh_error *err);

/* Owned array of the normalised builtin rows, in sortOrder: omp, opencode,
 * commandcode, qoder-cn, codex-acp, claude-code-acp, gemini. */
json_t *cdsh_acp_engine_builtins_dup(void);

/* Applies a user patch (digest §3.1) to current (borrowed, normalised):
 * env merged key by key (null deletes a key); args, resolvedCommand,
 * commandOverrides, fallbackPaths, cwdPolicy, cwd, enabled, sortOrder,
 * initialConfigOptions, initBudget, promptTimeoutMs / idleTimeoutMs (null
 * or "" keep the current value), disposeGraceMs, idleDisposeMs, label,
 * description, icon, command, dialect, mcp changed only when present. "id"
 * must equal the current id; "capabilities" / "health" are refused
 * (CDSH_EPERM, "READ_ONLY_FIELD"); unknown keys are CDSH_EINVAL
 * ("UNKNOWN_FIELD"). *merged is the owned, re-validated full row. */
int cdsh_acp_engine_patch(const json_t *current, const json_t *patch, json_t **merged,
                          cdsh_error *err);

/* Resolves the executable of a row: resolvedCommand, then
 * commandOverrides[<platform>] ("linux", "darwin"), then each fallbackPaths
 * entry (with ${VAR}, %VAR% and a leading ~ expanded), then command on
 * PATH. A candidate containing '/' must exist and be executable. *resolved
 * is owned, *via (may be NULL) is "resolvedCommand", "commandOverrides",
 * "fallbackPaths" or "PATH". CDSH_ENOTFOUND (code "COMMAND_NOT_FOUND")
 * naming every candidate tried. */
int cdsh_acp_engine_resolve(const json_t *row, char **resolved, const char **via, cdsh_error *err);

/* Expands ${VAR}, %VAR% and a leading "~/" in a path template (owned). */
char *cdsh_acp_engine_expand_path_dup(const char *tmpl);

/* Whether the engine's next start is a cold one (initBudget.coldProbe).
 * "none": never cold. "npx-cache": the command is npx (or `npm exec` /
 * `npm x`) and one of its packages is missing from npx's cache,
 * <cache>/_npx/<key>/node_modules/<name> (cache: `--cache` in args, else
 * the row's or the process's npm_config_cache, else ~/.npm; key: see
 * cdsh_acp_npx_cache_key); a package spec that is not a registry name
 * (git, path, URL) counts as cold. A command that is not npx is never
 * cold. reason says why, in English, naming the directory checked. */
typedef struct cdsh_acp_cold_check {
    bool cold;
    char reason[600];
} cdsh_acp_cold_check;

void cdsh_acp_engine_cold_check(const json_t *row, cdsh_acp_cold_check *out);

/* npx's cache directory name for a list of package specs as given on its
 * command line (libnpmexec): the specs sorted as JavaScript's
 * localeCompare(…, "en") orders them, joined with "\n", SHA-512, first 16
 * hex digits. Writes 16 hex digits + NUL into key. 0, CDSH_ENOMEM or
 * CDSH_EIO. */
int cdsh_acp_npx_cache_key(const char *const *specs, size_t n, char key[17]);

/* The initialize budget in ms: coldSecs when the cold check says cold,
 * else steadySecs. check (may be NULL) receives the check's outcome. */
int64_t cdsh_acp_engine_init_budget_ms(const json_t *row, cdsh_acp_cold_check *check);

/* Prompt gates in ms (<= 0 means none): promptTimeoutMs (default
 * CDSH_ACP_PROMPT_TIMEOUT_MS) and idleTimeoutMs (default
 * CDSH_ACP_IDLE_TIMEOUT_MS). */
int64_t cdsh_acp_engine_prompt_timeout_ms(const json_t *row);
int64_t cdsh_acp_engine_idle_timeout_ms(const json_t *row);

/* Owned NULL-terminated "NAME=value" array from the row's env (free with
 * cdsh_acp_engine_strv_free) and owned argv {resolved, args...}. */
char **cdsh_acp_engine_env_dup(const json_t *row);
char **cdsh_acp_engine_argv_dup(const json_t *row, const char *resolved);
void cdsh_acp_engine_strv_free(char **v);

#endif
