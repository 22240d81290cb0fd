/* discover.h — finds what Claude Code and Codex have installed and hands
 * each file over as a candidate with provenance {source: "claude"|"codex",
 * file, scope, plugin?: "name@marketplace"}: the installed-plugins registry
 * and each install path (manifest, .mcp.json, inline mcpServers, commands/,
 * skills/, agents/), ~/.claude.json user and per-project ("local") scopes,
 * each project's .mcp.json, .claude/commands, .claude/skills and
 * .claude/agents, ~/.claude/commands, skills and agents, Codex config.toml
 * and prompts/. The only
 * file reading of the importer's scan; judging happens later. Thread-safe
 * (no shared state). */
#ifndef CDSH_MCPIMPORT_DISCOVER_H
#define CDSH_MCPIMPORT_DISCOVER_H

#include <jansson.h>
#include <stddef.h>

#include "base/err.h"

typedef struct cdsh_mcpimport_roots {
    const char *claude_dir;      /* $CLAUDE_CONFIG_DIR or ~/.claude; NULL: skip Claude */
    const char *claude_json;     /* $CLAUDE_CONFIG_DIR/.claude.json or ~/.claude.json */
    const char *codex_home;      /* $CODEX_HOME or ~/.codex; NULL: skip Codex */
    const char *const *projects; /* absolute project directories, NULL-terminated (or NULL) */
} cdsh_mcpimport_roots;

/* *out (owned) is an array of candidates in precedence order (Claude local >
 * project > user > plugins, then Codex; skills are put in Claude's order for
 * them by the scan, service.h):
 *   {kind: "servers", format: "json"|"codex-toml", document, provenance, pluginRoot?}
 *   {kind: "command"|"agent"|"skill", text, stem, namespace?, provenance, pluginRoot?}
 *     an agent or skill that cannot be read has "error" (the message) instead
 *     of text; a skill also has skillDir, files and unreadable (relative
 *     paths of its supporting files) and filesTruncated when over 100
 *   {kind: "note", provenance, message}  (unreadable or malformed files,
 *                                         components that are not imported)
 * Plugins are loaded as the tools load them: a Claude Code plugin only when
 * its install applies here (user scope, or a projectPath among the
 * projects; the closest scope wins), it is not disabled by enabledPlugins
 * (project settings.local.json > settings.json > ~/.claude/settings.json;
 * absent: the manifest's defaultEnabled, else on), with the marketplace
 * entry as its manifest when the entry says strict:false; a Codex plugin
 * from plugins/cache/<market>/<plugin>/<latest version>/ when config.toml
 * [plugins."id"] has it and does not say enabled = false. Every other
 * plugin found (another project's, disabled, cached or offered but not
 * installed) is one note; so is each component that is not imported.
 * Safe on untrusted trees: a symlink is followed only inside the tree it
 * is found in (the project, the config dir, the plugin), a FIFO, device or
 * socket is never opened (a note), each folder is entered once.
 * Missing roots and files are simply absent. 0, or CDSH_ENOMEM. */
int cdsh_mcpimport_discover(const cdsh_mcpimport_roots *roots, json_t **out, cdsh_error *err);

/* What a walk looked at (tests and benchmarks count these). */
typedef struct cdsh_mcpimport_discover_stats {
    size_t entries; /* directory entries looked at */
    size_t folders; /* folders entered */
} cdsh_mcpimport_discover_stats;

/* cdsh_mcpimport_discover with the figures of the walk. */
int cdsh_mcpimport_discover_ex(const cdsh_mcpimport_roots *roots, json_t **out,
                               cdsh_mcpimport_discover_stats *stats, cdsh_error *err);

#endif
