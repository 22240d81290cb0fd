/* service.h — the importer's pipeline, shared by the plugin and the CLI:
 * roots → discover → normalise → commands / skills → secrets → preflight →
 * report.
 * A scan registers nothing. Not thread-safe per scan object; scans are
 * independent. */
#ifndef CDSH_MCPIMPORT_SERVICE_H
#define CDSH_MCPIMPORT_SERVICE_H

#include <jansson.h>
#include <stdbool.h>

#include "base/err.h"
#include "plugins/mcpimport/cmdir.h"
#include "plugins/mcpimport/discover.h"
#include "plugins/mcpimport/preflight.h"
#include "plugins/mcpimport/secrets.h"

/* Default roots, owned strings. */
typedef struct cdsh_mcpimport_rootset {
    char *claude_dir, *claude_json, *codex_home;
    char **projects; /* NULL-terminated */
} cdsh_mcpimport_rootset;

/* Fills set from overrides (NULL or "" = default) and the environment:
 * claude_dir = override or $CLAUDE_CONFIG_DIR or $HOME/.claude; claude_json =
 * <claude_dir>/.claude.json when CLAUDE_CONFIG_DIR or the override is used,
 * else $HOME/.claude.json; codex_home = override or $CODEX_HOME or
 * $HOME/.codex; projects = the given ones, made absolute. 0 or CDSH_ENOMEM. */
int cdsh_mcpimport_rootset_init(cdsh_mcpimport_rootset *set, const char *claude_dir,
                                const char *codex_home, const char *const *projects,
                                cdsh_error *err);
void cdsh_mcpimport_rootset_deinit(cdsh_mcpimport_rootset *set);
/* Borrowed view for discover. */
cdsh_mcpimport_roots cdsh_mcpimport_rootset_view(const cdsh_mcpimport_rootset *set);

typedef struct cdsh_mcpimport_scan {
    json_t *servers;                 /* judged server IR */
    cdsh__mcpimport_cmds commands;   /* judged command IR as structs: JSON through
                                        cdsh_mcpimport_scan_commands_json */
    json_t *skills;                  /* judged skill IR: skills, then sub-agents */
    json_t *notes;                   /* file-level notes */
    cdsh_mcpimport_secrets *secrets; /* values for register; never serialised */
} cdsh_mcpimport_scan;

/* The pure middle of the pipeline over discovered candidates (borrowed):
 * normalise and parse every candidate, resolve secrets (opts may be NULL:
 * environment only), judge with probe (may be NULL). Skills are ordered by
 * Claude Code's precedence before they are judged: skills (user, project,
 * plugins), then sub-agents (project, user, plugins); the first of a name
 * wins. */
int cdsh_mcpimport_scan_candidates(const json_t *candidates, const cdsh_mcpimport_probe *probe,
                                   const cdsh_mcpimport_secret_opts *secrets,
                                   cdsh_mcpimport_scan *out, cdsh_error *err);

/* Discover + scan_candidates. */
int cdsh_mcpimport_scan_run(const cdsh_mcpimport_roots *roots, const cdsh_mcpimport_probe *probe,
                            const cdsh_mcpimport_secret_opts *secrets, cdsh_mcpimport_scan *out,
                            cdsh_error *err);

void cdsh_mcpimport_scan_deinit(cdsh_mcpimport_scan *scan);

/* The judged command IR (commands.h) as a JSON array, borrowed from scan:
 * made at the first call (a scan holds its commands as C structs, so a
 * large scan makes no JSON it is not asked for). NULL on ENOMEM. */
json_t *cdsh_mcpimport_scan_commands_json(cdsh_mcpimport_scan *scan);

/* The winning (first) server / command / skill IR named `name`, borrowed, or NULL. */
json_t *cdsh_mcpimport_scan_server(const cdsh_mcpimport_scan *scan, const char *name);
json_t *cdsh_mcpimport_scan_command(const cdsh_mcpimport_scan *scan, const char *name);
json_t *cdsh_mcpimport_scan_skill(const cdsh_mcpimport_scan *scan, const char *name);

#endif
