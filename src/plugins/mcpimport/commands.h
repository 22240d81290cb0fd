/* commands.h — command IR from Claude Code commands/NAME.md and Codex
 * prompts/NAME.md, the name mapping to ^[a-z][a-z0-9_-]*$, placeholder
 * detection and the expansion that runs when an imported command is used.
 * Skills and sub-agents are skills.h. Pure: callers hand in the file text.
 * Thread-safe. */
#ifndef CDSH_MCPIMPORT_COMMANDS_H
#define CDSH_MCPIMPORT_COMMANDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "plugins/mcpimport/cmdir.h"
#include "plugins/mcpimport/discover.h"

/* cdsh command name for a Claude/Codex command: "<namespace>_<stem>" (or the
 * stem alone), lower-cased, every character outside [a-z0-9_-] mapped to
 * '-', "cmd-" prefixed when it would not start with a letter. Owned. */
char *cdsh_mcpimport_command_name_dup(const char *ns, const char *stem);

/* keep-public: the front-matter fuzz target and the command tests parse one
 * file through it. */
/* Command IR (owned) for one Markdown file. cand: {provenance: {source:
 * "claude"|"codex", file, scope, plugin?}, stem, namespace?, pluginRoot?}.
 * IR: {name, originalName, description, argumentHint, prompt, arguments
 * (placeholders found, in order of first use), placeholderStyle ("claude",
 * "claude-1based", "codex" or "none"), namedArguments, allowedTools, model,
 * disableModelInvocation, source, file, provenance, warnings (behaviour that
 * differs), info (faithful mappings worth knowing: the name mapping, an
 * argument-hint list), unsupported ([{feature: "shell"|"file-include",
 * text}])}. cand may carry fileRefs (discover.h: the @paths that are files
 * of the tree; only those are reported) and meta (front matter from a
 * manifest's inline command, overriding the file's). NULL on ENOMEM. */
json_t *cdsh_mcpimport_command_from_markdown(const json_t *cand, const char *text, size_t len);
/* The same from the fields of a candidate, as a struct appended to l (the
 * scan's path: no JSON object per command; cmdir.h makes the JSON IR
 * above from it). NULL, with nothing appended, where the JSON function
 * returns NULL. */
cdsh__mcpimport_cmd *cdsh__mcpimport_command_add(cdsh__mcpimport_cmds *l,
                                                 const cdsh__mcpimport_md *md);

/* The prompt for one run of command IR `cmd` with the person's raw input:
 * $ARGUMENTS / {{args}} = the input trimmed; positional $N (Claude: from $0,
 * or from $1 when the file never uses $0; Codex: from $1) and named
 * arguments from a shell-like split; Codex $KEY from KEY=value words and $$
 * = $. A Claude body without placeholders gets "\n\nARGUMENTS: <input>"
 * appended (as Claude Code does). Errors: CDSH_EINVAL code
 * "MISSING_ARGUMENTS" `missing arguments: A, B (pass them as KEY=value)`
 * (Codex named placeholders), "BAD_ARGUMENTS" `unbalanced quote in the
 * arguments`. *out owned. */
int cdsh_mcpimport_command_expand(const json_t *cmd, const char *raw_input, char **out,
                                  cdsh_error *err);

/* Layer-internal (skills.c shares the command rules): */
/* A front-matter value as text (YAML scalars may be numbers or booleans); owned or NULL. */
char *cdsh__mcpimport_meta_text_dup(const json_t *v);
/* argument-hint as text: a YAML list (an unquoted "[message]") becomes the
 * string Claude Code shows for it (items joined by ","), with a note in
 * `info` (may be NULL). Owned or NULL. */
char *cdsh__mcpimport_hint_dup(const json_t *v, json_t *info);
/* A list given as a YAML sequence or a string split on `seps` (not inside
 * parentheses: "Bash(git add:*), Read"). Owned array. */
json_t *cdsh__mcpimport_meta_list(const json_t *v, const char *seps);
/* True when k is in the NULL-terminated list l. */
bool cdsh__mcpimport_in_list(const char *const *l, const char *k);
/* The body's first non-blank line without leading '#', cut to 100 bytes
 * (between characters), or fallback when there is none. Owned. */
char *cdsh__mcpimport_first_line_dup(const char *body, const char *fallback);
/* Appends the Claude placeholders of body ($ARGUMENTS, $ARGUMENTS[N], $N,
 * named $name from `named`, {{args}}) to `found`, each once. */
void cdsh__mcpimport_claude_placeholders(const char *body, const json_t *named, json_t *found);
/* Appends {feature: "shell"|"file-include", text} for every !`cmd` and @path
 * in body to `unsupported`, and one warning each to `warnings` (the text
 * stays as written; a repeated one is listed once). With file_refs (an
 * array of the @paths discovery found to be files inside the tree) only
 * those @paths count; NULL: every path-like @word. */
void cdsh__mcpimport_scan_unsupported(const char *body, json_t *unsupported, json_t *warnings,
                                      const json_t *file_refs);

#endif
