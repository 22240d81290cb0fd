/* skills.h — the skill registry (DSH's ctx.skills): runtime skills registered
 * per scope layer (the first in a layer wins; a duplicate is a warning),
 * skill providers with ranks (runtime 250, bundled 600, lower wins, then
 * provider order), a bounded cache of completed provider catalogs, the
 * catalog snapshot with `complete`, lookup, the system-prompt index, a
 * skill's rendered body and its resources. The `skill` tool and `/skills`
 * are host/skilltool.c. Thread-safe; no lock is held while a provider runs or
 * an event is emitted. */
#ifndef CDSH_HOST_SKILLS_H
#define CDSH_HOST_SKILLS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/cancel.h"
#include "base/err.h"
#include "host/disposer.h"
#include "host/events.h"
#include "host/scope.h"

typedef struct cdsh_skills cdsh_skills;

#define CDSH_SKILLS_RUNTIME_PROVIDER "runtime"
#define CDSH_SKILLS_RUNTIME_RANK 250
#define CDSH_SKILLS_BUNDLED_RANK 600
#define CDSH_SKILLS_CACHE_DEFAULT 128

typedef struct cdsh_skill_def {
    const char *name;        /* kebab-case ^[a-z0-9]+(?:-[a-z0-9]+)*$ */
    const char *description; /* non-empty */
    const char *content;     /* the body the model loads; non-NULL */
    const char *when_to_use; /* optional */
    const char *source;      /* optional origin label (plugin name); default "runtime" */
    /* Invocation policy (DSH's {modelInvocable, userInvocable}; both by default): */
    bool user_only;  /* not model-invocable: left out of the skills index, and the `skill`
                        tool refuses it (Claude's disable-model-invocation: true) */
    bool model_only; /* not user-invocable: `/skills` refuses it and leaves it out
                        (Claude's user-invocable: false) */
    const char *path;            /* optional: absolute file the skill came from */
    const json_t *metadata;      /* optional object (copied) */
    const json_t *resource_base; /* optional (copied): {kind:"directory", path} |
                                    {kind:"url", url} | {kind:"opaque", description} */
    const char *provider;        /* optional label; default "runtime" */
} cdsh_skill_def;

/* Lookup options (DSH SkillLookupOptions); NULL means none. */
typedef struct cdsh_skill_lookup {
    const char *cwd;     /* workspace for cwd-sensitive providers; NULL: none */
    cdsh_cancel *cancel; /* may be NULL */
} cdsh_skill_lookup;

/* A skill provider (DSH SkillProvider). Both callbacks run without any
 * registry lock held and may be called from several threads at once.
 *  - list fills *candidates (an owned array) with candidate objects
 *    {name, description, whenToUse?, invocation?:{modelInvocable,
 *    userInvocable}, source, provider?, resourceBase?, rank (finite number),
 *    locator? (any JSON the provider wants back in get), path?, metadata?}
 *    and *complete (false: usable but not authoritative, never cached).
 *    A negative return (err filled) skips the provider with a warning.
 *  - get loads the full definition of a candidate it listed (the candidate is
 *    borrowed): *def = owned {name, description, content, whenToUse?,
 *    invocation?, source?, provider?, resourceBase?, path?, metadata?} or
 *    NULL when it is no longer loadable. Negative return: the lookup fails.
 *  - free_ud runs once when the registration is disposed (after any call in
 *    progress returns) or when registration is refused. */
typedef struct cdsh_skill_provider {
    const char *name;
    int (*list)(void *ud, const cdsh_skill_lookup *opts, json_t **candidates, bool *complete,
                cdsh_error *err);
    int (*get)(void *ud, const json_t *candidate, const cdsh_skill_lookup *opts, json_t **def,
               cdsh_error *err);
    void *ud;
    void (*free_ud)(void *ud);
} cdsh_skill_provider;

/* bus is borrowed and must outlive the registry. */
cdsh_skills *cdsh_skills_new(cdsh_events *bus);
void cdsh_skills_free(cdsh_skills *skills);

bool cdsh_skills_name_valid(const char *name);

/* Registers def (copied) in scope's layer (NULL: global).
 * Invalid name / empty description / NULL content / a malformed resource
 * base or metadata: CDSH_EINVAL, code "INVALID_SKILL"
 * (`skill name "X" must be kebab-case ...`).
 * Duplicate in the same layer: returns 0 with a no-op (zeroed) disposer, the
 * first registration stays, and a warning is emitted as event `log/warning`
 * {source:"skills", message:`skill "x" is already registered; keeping the
 * first registration`}. Emits `skills/change` (unfiltered) on a change. */
int cdsh_skills_register(cdsh_skills *skills, cdsh_scope *scope, const cdsh_skill_def *def,
                         cdsh_disposer_t *out, cdsh_error *err);

/* Registers a provider (the struct is copied; ud is owned from now on, also
 * on failure). Errors (CDSH_EINVAL, code "INVALID_SKILL_PROVIDER"): a missing
 * name or callback; name "runtime" (`"runtime" is reserved for runtime skill
 * registrations`); a name already registered (`a skill provider named "x" is
 * already registered`). Clears the catalog cache and emits `skills/change`;
 * so does running the disposer. Providers are global (every scope sees them). */
int cdsh_skills_register_provider(cdsh_skills *skills, const cdsh_skill_provider *provider,
                                  cdsh_disposer_t *out, cdsh_error *err);

/* DSH's SkillProviderControl.invalidate: the provider named says its
 * catalog changed. Clears the cache and emits `skills/change`; nothing when
 * no such provider is registered. */
void cdsh_skills_invalidate(cdsh_skills *skills, const char *provider_name);

/* collectCacheMaxEntries: how many completed provider catalogs (one per cwd)
 * are kept; the oldest entry goes first. n >= 1, else CDSH_EINVAL
 * "INVALID_CONFIG" (`skill: collectCacheMaxEntries must be an integer greater
 * than or equal to 1`). Shrinking evicts at once. Default 128. */
int cdsh_skills_set_cache_max(cdsh_skills *skills, long long n, cdsh_error *err);
size_t cdsh_skills_cache_max(cdsh_skills *skills);
/* Entries now in the catalog cache. */
size_t cdsh_skills_cache_size(cdsh_skills *skills);

/* The catalog scope sees: {skills:[summary...] sorted by name (bytewise),
 * complete:bool}. A summary is {name, description, whenToUse?, invocation:
 * {modelInvocable, userInvocable}, source, provider, resourceBase?} plus
 * userOnly / modelOnly (true only when set). Candidates merge by rank (lower
 * wins), then provider order (runtime skills first), then the provider's own
 * order; a losing same-name candidate is reported as `log/warning` `skill
 * "x" from SOURCE ignored because a higher-priority skill already exists`
 * (once per fresh collection). complete is false when a provider failed,
 * returned an incomplete observation or the provider set changed twice while
 * collecting. NULL with err only for a cancelled lookup (CDSH_ECANCELED) or
 * ENOMEM. Owned. */
json_t *cdsh_skills_snapshot(cdsh_skills *skills, const cdsh_scope *scope,
                             const cdsh_skill_lookup *opts, cdsh_error *err);

/* snapshot's skills without opts (never NULL unless ENOMEM). Owned. */
json_t *cdsh_skills_list(cdsh_skills *skills, const cdsh_scope *scope);

/* The winning definition: {name, description, content, whenToUse?,
 * invocation, source, provider, resourceBase?, path?, metadata?, userOnly?,
 * modelOnly?}. Returns 0 with *def NULL for an invalid or unknown name, or a
 * skill its provider can no longer load; negative with err when the lookup
 * is cancelled or the provider fails or returns a malformed definition
 * (CDSH_EINVAL "INVALID_SKILL", DSH's `loaded skill "x" ...` messages). */
int cdsh_skills_get_dup(cdsh_skills *skills, const cdsh_scope *scope, const char *name,
                        const cdsh_skill_lookup *opts, json_t **def, cdsh_error *err);

/* cdsh_skills_get_dup without opts; NULL on any failure. Owned. */
json_t *cdsh_skills_info_dup(cdsh_skills *skills, const cdsh_scope *scope, const char *name);

/* The skills index for the model's system prompt, or NULL when no
 * model-invocable skill is visible. Owned string:
 *   <available_skills>
 *   - name: description (when to use: ...)
 *   </available_skills>
 * followed by one line telling the model to call the `skill` tool. */
char *cdsh_skills_index_dup(cdsh_skills *skills, const cdsh_scope *scope);

/* A loaded definition as the model receives it (DSH tool-skill):
 *   <skill_content name="x">
 *   <skill_resources>
 *   <where resources are: base directory / base URL / description /
 *    "managed by provider">
 *   [Files: - rel ... (directory bases; up to 200, sorted)]
 *   </skill_resources>
 *
 *   <skill_instructions>
 *   <content>
 *   </skill_instructions>
 *   </skill_content>
 * The name is attribute-escaped (& " <), the hint text-escaped (& < >).
 * Owned; NULL on ENOMEM. */
char *cdsh_skills_render_def_dup(const json_t *def);

/* cdsh_skills_get_dup + cdsh_skills_render_def_dup; NULL when unknown. */
char *cdsh_skills_render_dup(cdsh_skills *skills, const cdsh_scope *scope, const char *name);

/* The files below a definition's directory resource base, relative paths
 * sorted bytewise, depth <= 4, dot-files and the skill's own file left out,
 * at most max (sets *truncated when there were more). Symlinks are listed
 * only when they stay inside the directory. An empty array when the base is
 * not a directory. Owned. */
json_t *cdsh_skills_resources_dup(const json_t *def, size_t max, bool *truncated);

/* Reads resource rel of a definition (text, at most max_bytes bytes).
 * Errors, all naming the skill: no directory base — CDSH_EINVAL
 * "NO_SKILL_RESOURCES"; rel empty, absolute or leaving the directory (also
 * through a symlink) — CDSH_EINVAL "INVALID_RESOURCE"; missing or not a
 * regular file — CDSH_ENOTFOUND "UNKNOWN_RESOURCE"; larger than max_bytes —
 * CDSH_ETOOBIG "RESOURCE_TOO_LARGE"; not UTF-8 — CDSH_EINVAL
 * "RESOURCE_NOT_TEXT". *out owned. */
int cdsh_skills_resource_read_dup(const json_t *def, const char *rel, size_t max_bytes,
                                  char **out, cdsh_error *err);

/* Runtime registrations (all layers). */
size_t cdsh_skills_count(cdsh_skills *skills);

/* The "skills-local" plugin (skills_local.c, enabled by default): the
 * on-disk provider "local" — SKILL.md bundles and flat .md skills in
 * <project>/.cdsh/skills (rank 100), <project>/.agents/skills (200), the
 * config's customSkillDirs (300), $CDSH_HOME/skills (400) and agentsHome's
 * skills/ (500, only when configured); see docs/host.md "Skills". */
typedef struct cdsh_plugin_def cdsh_plugin_def;
extern const cdsh_plugin_def cdsh_skills_local_plugin;

#endif
