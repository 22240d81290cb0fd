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

/* For the scan (service.c): cdsh_mcpimport_discover_ex, except that each
 * command candidate is handed to `sink` (borrowed for the call) as soon as
 * it is found, in discovery order, instead of being put in *out (a large
 * commands folder then never holds every file's text at once). */
/* A command file as discovery hands it to the sink: the fields of a
 * command candidate without the candidate object (every pointer borrowed;
 * strings UTF-8; ns, root, meta may be NULL; file_refs as the candidate's
 * fileRefs, NULL when absent). */
typedef struct cdsh__mcpimport_md {
    const char *text;
    size_t len;
    const char *stem, *ns, *root;
    const json_t *provenance, *meta, *file_refs;
} cdsh__mcpimport_md;
/* The fields of command candidate c (borrowed from it). */
cdsh__mcpimport_md cdsh__mcpimport_md_of(const json_t *c);
typedef void (*cdsh__mcpimport_command_sink)(void *arg, const cdsh__mcpimport_md *md);
int cdsh__mcpimport_discover_streamed(const cdsh_mcpimport_roots *roots,
                                      cdsh__mcpimport_command_sink sink, void *sink_arg,
                                      json_t **out, cdsh_mcpimport_discover_stats *stats,
                                      cdsh_error *err);

#endif
