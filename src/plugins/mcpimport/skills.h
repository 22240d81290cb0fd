/* skills.h — skill IR from Claude Code skills/<name>/SKILL.md and sub-agents
 * agents/NAME.md (a sub-agent degrades to a skill whose instructions are its
 * system prompt), the name mapping to cdsh's kebab-case skill names, and the
 * text a skill is registered with. Pure: discovery hands in the file text and
 * the folder listing; judging is preflight.c. Thread-safe. */
#ifndef CDSH_MCPIMPORT_SKILLS_H
#define CDSH_MCPIMPORT_SKILLS_H

#include <jansson.h>

/* Bodies above this are judged warn: the skill tool hands the model at most
 * its maxBodyBytes (default 20000). Above the hard limit they are blocked. */
#define CDSH_MCPIMPORT_SKILL_WARN_BYTES 20000
#define CDSH_MCPIMPORT_SKILL_MAX_BYTES (256 * 1024)

/* cdsh skill name (^[a-z0-9]+(-[a-z0-9]+)*$) for a Claude skill or agent:
 * "<namespace>-<name>" (or the name alone), lower-cased, every character
 * outside [a-z0-9] mapped to '-' (as for commands; '_' too, which skill names
 * do not allow), runs of '-' folded and '-' trimmed at both ends; "" maps to
 * "skill". Owned; NULL on ENOMEM. */
char *cdsh_mcpimport_skill_name_dup(const char *ns, const char *name);

/* Skill IR (owned) for one discovered candidate:
 *   {kind: "skill"|"agent", text?, error?, stem, namespace?, provenance,
 *    pluginRoot?, skillDir?, files?: [relative paths], unreadable?: [...],
 *    filesTruncated?}
 * IR: {kind, name, originalName ("<plugin>:<name>" or the name),
 * description, descriptionFrom ("front matter" | "body" | null), hasName
 * (front matter "name" given), whenToUse?, argumentHint?, arguments (named,
 * from the front matter), placeholders (found in the body), content (the
 * text registered: see docs/import.md), bodyBytes, skillDir?, files,
 * unreadableFiles, error?, source, file, provenance, warnings, unsupported}.
 * `${CLAUDE_PLUGIN_ROOT}` becomes the plugin's directory and
 * `${CLAUDE_SKILL_DIR}` the skill's folder; every Claude-only key, placeholder,
 * `` !`cmd` `` and `@file` is a warning. NULL on ENOMEM. */
json_t *cdsh_mcpimport_skill_from_candidate(const json_t *cand);

#endif
