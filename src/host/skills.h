/* skills.h — runtime skills the model loads on demand: registration per
 * scope layer (the first in a layer wins; a duplicate is a warning), listing,
 * lookup, the system-prompt index and a skill's rendered body. The `skill`
 * tool is host/skilltool.c; skill files on disk are not read here.
 * Thread-safe; no lock is held while events are emitted. */
#ifndef CDSH_HOST_SKILLS_H
#define CDSH_HOST_SKILLS_H

#include <jansson.h>
#include <stdbool.h>

#include "base/err.h"
#include "host/disposer.h"
#include "host/events.h"
#include "host/scope.h"

typedef struct cdsh_skills cdsh_skills;

typedef struct cdsh_skill_def {
    const char *name;        /* kebab-case ^[a-z0-9]+(?:-[a-z0-9]+)*$ */
    const char *description; /* non-empty */
    const char *content;     /* the body the model loads; non-NULL */
    const char *when_to_use; /* optional */
    const char *source;      /* optional: who registered it (plugin name); default "runtime" */
    /* Invocation policy (DSH's {modelInvocable, userInvocable}; both by default): */
    bool user_only;  /* not model-invocable: left out of the skills index, and the `skill`
                        tool refuses it (Claude's disable-model-invocation: true) */
    bool model_only; /* not user-invocable: marked in `cdsh skills list` (Claude's
                        user-invocable: false); cdsh has no user-facing skill runner */
} cdsh_skill_def;

/* bus is borrowed and must outlive the registry. */
cdsh_skills *cdsh_skills_new(cdsh_events *bus);
void cdsh_skills_free(cdsh_skills *skills);

bool cdsh_skills_name_valid(const char *name);

/* Registers def (copied) in scope's layer (NULL: global).
 * Invalid name / empty description / NULL content: CDSH_EINVAL, code
 * "INVALID_SKILL" (`skill name "X" must be kebab-case ...`).
 * Duplicate in the same layer: returns 0 with a no-op (zeroed) disposer, the
 * first registration stays, and a warning is emitted as event `log/warning`
 * {source:"skills", message:`skill "x" is already registered; keeping the
 * first registration`}. Emits `skills/change` (unfiltered) on a change. */
int cdsh_skills_register(cdsh_skills *skills, cdsh_scope *scope, const cdsh_skill_def *def,
                         cdsh_disposer_t *out, cdsh_error *err);

/* Summaries visible to scope (nearest layer shadows), sorted by name:
 * [{name, description, whenToUse?, source, invocation:{modelInvocable,
 * userInvocable}, userOnly?, modelOnly?}] (userOnly / modelOnly: true only when
 * set). Owned. */
json_t *cdsh_skills_list(cdsh_skills *skills, const cdsh_scope *scope);

/* Full definition {name, description, content, whenToUse?, source} or NULL
 * (unknown or invalid name). Owned. */
json_t *cdsh_skills_info_dup(cdsh_skills *skills, const cdsh_scope *scope, const char *name);

/* The skills index for the model's system prompt, or NULL when no skill is
 * visible. Owned string:
 *   <available_skills>
 *   - name: description (when to use: ...)
 *   </available_skills>
 * followed by one line telling the model to call the `skill` tool.
 * User-only skills are left out (NULL when only those are visible). */
char *cdsh_skills_index_dup(cdsh_skills *skills, const cdsh_scope *scope);

/* A skill's body as the model receives it:
 *   <skill_content name="x">\n<content>\n</skill_content>
 * NULL when unknown. Owned. */
char *cdsh_skills_render_dup(cdsh_skills *skills, const cdsh_scope *scope, const char *name);

size_t cdsh_skills_count(cdsh_skills *skills);

#endif
