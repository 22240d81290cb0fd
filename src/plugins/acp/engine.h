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
#define CDSH_ACP_INIT_COLD_FACTOR 10 /* coldSecs defaults to steadySecs × this */
#define CDSH_ACP_DISPOSE_GRACE_MS 6000
/* After session/cancel, how long a turn waits for the agent's answer before
 * it gives up on it (engine field cancelGraceMs). */
#define CDSH_ACP_CANCEL_GRACE_MS 6000
#define CDSH_ACP_IDLE_DISPOSE_MS 30000
#define CDSH_ACP_SORT_ORDER 100
#define CDSH_ACP_PROMPT_TIMEOUT_MS 300000
#define CDSH_ACP_IDLE_TIMEOUT_MS 180000

/* Validates and coerces one row (borrowed) into an owned normalised row with
 * every default filled in. Errors (CDSH_EINVAL, code "INVALID_ENGINE"):
 * not an object, empty id, id not matching ^[a-z0-9][a-z0-9-]*$ (after
 * trimming), missing or empty command, a dialect other than "canonical"
 * (code "UNKNOWN_DIALECT"); an enumerated field with another value, naming
 * the field (code "UNKNOWN_VALUE"): cwdPolicy (session|fixed),
 * initBudget.coldProbe (first-start|npx-cache|none), skillDelivery
 * (auto|args|none; default auto), permissionMode (default|dont_ask|bypass),
 * a permissionTemplates key other than dont_ask / bypass; skillsDirs,
 * skillArgsTemplate and permissionTemplates.* not string arrays (trimmed,
 * empty entries dropped; defaults ["~/.agents/skills"] and
 * ["--skill","{dir}"], which must contain "{dir}"); a permissionMode whose
 * template is missing or empty ("UNSUPPORTED_MODE"). poolKey is derived:
 * the id, or "<id>#<mode>" for another permissionMode, so asking and
 * non-asking processes are never shared. With from_user, the probed and
 * runtime fields "capabilities", "health" and "warm" are refused (a given
 * poolKey is ignored: it is always derived): CDSH_EPERM, code
 * "READ_ONLY_FIELD". source ("builtin", "user-file") is stored in the row. */
int cdsh_acp_engine_normalize(const json_t *row, const char *source, bool from_user, json_t **out,
                              cdsh_error *err);

/* Owned array of the normalised builtin rows, in sortOrder: omp, opencode,
 * commandcode, qodercn, codex-acp, claude-code-acp, gemini. */
json_t *cdsh_acp_engine_builtins_dup(void);

/* Applies a user patch (digest §3.1) to current (borrowed, normalised):
 * env merged key by key (null deletes a key); args, resolvedCommand,
 * commandOverrides, fallbackPaths, cwdPolicy, cwd, enabled, sortOrder,
 * initialConfigOptions, initBudget, promptTimeoutMs / idleTimeoutMs (null
 * or "" keep the current value), disposeGraceMs, cancelGraceMs, idleDisposeMs, label,
 * description, icon, command, dialect, mcp, skillsDirs, skillArgsTemplate,
 * permissionMode, permissionTemplates changed only when present. "id"
 * must equal the current id; "capabilities", "health", "warm", "poolKey"
 * and "skillDelivery" (the engine's declaration, seed 003 §1) are refused
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

/* Expands ${VAR}, %VAR% and a leading "~/" in a path template (owned).
 * keep-public: test_engine pins the path expansion. */
char *cdsh_acp_engine_expand_path_dup(const char *tmpl);

/* Whether the engine's next start is a cold one (initBudget.coldProbe).
 * "none": never cold. "first-start" (the default): cold until an
 * initialize of the resolved executable succeeded — the row's "warm"
 * marker (runtime.json, cdsh_acp_engine_warm_marker_dup) must name the same
 * path, inode and change time, so the first start after an install or
 * update is cold again. "npx-cache": the command is npx (or `npm exec` /
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

/* The warm marker of an executable (owned): {path, inode, changed (ctime
 * "sec.nsec"), at (now)}; NULL when it cannot be stat'ed. */
json_t *cdsh_acp_engine_warm_marker_dup(const char *resolved);

/* npx's cache directory name for a list of package specs as given on its
 * command line (libnpmexec): the specs sorted as JavaScript's
 * localeCompare(…, "en") orders them, joined with "\n", SHA-512, first 16
 * hex digits. Writes 16 hex digits + NUL into key. 0, CDSH_ENOMEM or
 * CDSH_EIO.
 * keep-public: test_engine and test_probe compute the cache key with it. */
int cdsh_acp_npx_cache_key(const char *const *specs, size_t n, char key[17]);

/* The initialize budget in ms: coldSecs when the cold check says cold,
 * else steadySecs (coldSecs defaults to steadySecs × CDSH_ACP_INIT_COLD_FACTOR,
 * so one named setting per engine scales both). check (may be NULL)
 * receives the check's outcome. */
int64_t cdsh_acp_engine_init_budget_ms(const json_t *row, cdsh_acp_cold_check *check);

/* Prompt gates in ms (<= 0 means none): promptTimeoutMs (default
 * CDSH_ACP_PROMPT_TIMEOUT_MS) and idleTimeoutMs (default
 * CDSH_ACP_IDLE_TIMEOUT_MS). */
int64_t cdsh_acp_engine_prompt_timeout_ms(const json_t *row);
int64_t cdsh_acp_engine_idle_timeout_ms(const json_t *row);

/* Owned NULL-terminated "NAME=value" array from the row's env (free with
 * cdsh_acp_engine_strv_free) and owned argv {resolved, args...,
 * the extra arguments (skill dirs, permission template)...}. */
char **cdsh_acp_engine_env_dup(const json_t *row);
char **cdsh_acp_engine_argv_dup(const json_t *row, const char *resolved);
void cdsh_acp_engine_strv_free(char **v);

/* What may be shown of a row (listings, evidence): an owned copy with every
 * env value "[REDACTED]" and the args as cdsh_acp_engine_args_public_dup
 * gives them. */
json_t *cdsh_acp_engine_public_dup(const json_t *row);

/* Owned copy of an args array with each element through the text redactor
 * and the value of a secret-looking option ("--api-key V", "--token=V":
 * the option name judged as cdsh_redact_key_is_secret judges a key)
 * replaced by "[REDACTED]". */
json_t *cdsh_acp_engine_args_public_dup(const json_t *args);

/* The literal secrets cdsh hands the engine (owned NULL-terminated list,
 * free with cdsh_acp_engine_strv_free): env values under a secret-looking
 * name or that look like a token (16+ characters, one word, no '/'), and
 * the values of secret-looking options in args; values under 4 bytes are
 * left out. For redacting what the agent echoes back. */
char **cdsh_acp_engine_secrets_dup(const json_t *row);

#endif
