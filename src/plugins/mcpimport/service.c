/* service.c — the scan pipeline (the seed's run(config)): discovery, then the
 * pure steps, then secrets and preflight. Registration is register*.c. */
#include "plugins/mcpimport/service.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "plugins/mcpimport/commands.h"
#include "plugins/mcpimport/normalise.h"
#include "plugins/mcpimport/skills.h"

static char *dup_or(const char *a)
{
    return a && *a ? strdup(a) : NULL;
}

int cdsh_mcpimport_rootset_init(cdsh_mcpimport_rootset *set, const char *claude_dir,
                                const char *codex_home, const char *const *projects,
                                cdsh_error *err)
{
    memset(set, 0, sizeof *set);
    const char *home = getenv("HOME");
    const char *ccd = getenv("CLAUDE_CONFIG_DIR");
    const char *cx = getenv("CODEX_HOME");
    if (claude_dir && *claude_dir) {
        set->claude_dir = strdup(claude_dir);
        set->claude_json = cdsh_fs_path_join_dup(claude_dir, ".claude.json");
    } else if (ccd && *ccd) {
        set->claude_dir = strdup(ccd);
        set->claude_json = cdsh_fs_path_join_dup(ccd, ".claude.json");
    } else if (home && *home) {
        set->claude_dir = cdsh_fs_path_join_dup(home, ".claude");
        set->claude_json = cdsh_fs_path_join_dup(home, ".claude.json");
    }
    if (codex_home && *codex_home)
        set->codex_home = strdup(codex_home);
    else if (cx && *cx)
        set->codex_home = dup_or(cx);
    else if (home && *home)
        set->codex_home = cdsh_fs_path_join_dup(home, ".codex");
    size_t n = 0;
    while (projects && projects[n])
        n++;
    set->projects = calloc(n + 1, sizeof *set->projects);
    char cwd[4096];
    bool have_cwd = getcwd(cwd, sizeof cwd) != NULL;
    for (size_t i = 0; set->projects && i < n; i++)
        set->projects[i] = projects[i][0] == '/' || !have_cwd
                               ? cdsh_fs_path_normalize_dup(projects[i])
                               : cdsh_fs_path_join_dup(cwd, projects[i]);
    if (!set->projects)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    return 0;
}

void cdsh_mcpimport_rootset_deinit(cdsh_mcpimport_rootset *set)
{
    free(set->claude_dir), free(set->claude_json), free(set->codex_home);
    for (char **p = set->projects; p && *p; p++)
        free(*p);
    free(set->projects);
    memset(set, 0, sizeof *set);
}

cdsh_mcpimport_roots cdsh_mcpimport_rootset_view(const cdsh_mcpimport_rootset *set)
{
    cdsh_mcpimport_roots r = {set->claude_dir, set->claude_json, set->codex_home,
                              (const char *const *)set->projects};
    return r;
}

/* Claude Code's precedence: personal skills shadow project ones, project
 * sub-agents shadow personal ones; plugin items are namespaced and come last;
 * skills before sub-agents (the native form wins a shared name). */
static int rank(const json_t *ir)
{
    const json_t *p = json_object_get(ir, "provenance");
    bool agent = strcmp(json_string_value(json_object_get(ir, "kind")), "agent") == 0;
    const char *scope = json_string_value(json_object_get(p, "scope"));
    bool project = scope && strcmp(scope, "project") == 0;
    if (json_string_value(json_object_get(p, "plugin"))) /* absent or null outside plugins */
        return agent ? 5 : 2;
    return agent ? (project ? 3 : 4) : (project ? 1 : 0);
}

/* Stable order by rank: one bucket per rank (linear). */
static void order_skills(json_t *skills)
{
    json_t *buckets[6];
    for (int r = 0; r < 6; r++)
        buckets[r] = json_array();
    size_t i;
    json_t *x;
    json_array_foreach(skills, i, x) {
        json_array_append(buckets[rank(x)], x);
    }
    json_array_clear(skills);
    for (int r = 0; r < 6; r++) {
        json_array_extend(skills, buckets[r]);
        json_decref(buckets[r]);
    }
}

/* With `consume`, each candidate is released once its IR is built (the file
 * texts of a large tree would otherwise stay in memory beside the IR: on a
 * 100 000-file tree that doubles the pages touched, and page faults are a
 * good part of the scan's cost). */
static void scan_init(cdsh_mcpimport_scan *out)
{
    memset(out, 0, sizeof *out);
    out->servers = json_array();
    cdsh__mcpimport_cmds_init(&out->commands);
    out->skills = json_array();
    out->notes = json_array();
}

/* A streamed command → its IR, appended to the scan's commands. */
static void add_command(void *arg, const cdsh__mcpimport_md *md)
{
    cdsh_mcpimport_scan *out = arg;
    cdsh__mcpimport_command_add(&out->commands, md);
}

/* out is initialised (scan_init) and may already hold commands. */
static int scan_impl(json_t *candidates, bool consume, const cdsh_mcpimport_probe *probe,
                     const cdsh_mcpimport_secret_opts *secrets, cdsh_mcpimport_scan *out,
                     cdsh_error *err)
{
    size_t i;
    json_t *c;
    json_array_foreach(candidates, i, c) {
        const char *kind = json_string_value(json_object_get(c, "kind"));
        if (!kind)
            continue;
        if (strcmp(kind, "servers") == 0) {
            json_t *file_notes = json_array();
            cdsh_mcpimport_normalise(c, out->servers, file_notes);
            size_t k;
            json_t *m;
            json_array_foreach(file_notes, k, m) {
                json_array_append_new(out->notes,
                                      json_pack("{s:s, s:O, s:O}", "kind", "note", "provenance",
                                                json_object_get(c, "provenance"), "message", m));
            }
            json_decref(file_notes);
        } else if (strcmp(kind, "command") == 0) {
            cdsh__mcpimport_md md = cdsh__mcpimport_md_of(c);
            cdsh__mcpimport_command_add(&out->commands, &md);
        } else if (strcmp(kind, "agent") == 0 || strcmp(kind, "skill") == 0) {
            json_t *s = cdsh_mcpimport_skill_from_candidate(c);
            if (s)
                json_array_append_new(out->skills, s);
        } else if (strcmp(kind, "note") == 0)
            json_array_append(out->notes, c);
        if (consume)
            json_array_set_new(candidates, i, json_null());
    }
    int rc = cdsh_mcpimport_secrets_resolve(out->servers, secrets, &out->secrets, err);
    if (rc != 0) {
        cdsh_mcpimport_scan_deinit(out);
        return rc;
    }
    cdsh_mcpimport_preflight(out->servers, NULL, probe);
    cdsh__mcpimport_preflight_cmds(&out->commands);
    order_skills(out->skills);
    cdsh_mcpimport_preflight_skills(out->skills);
    return 0;
}

int cdsh_mcpimport_scan_candidates(const json_t *candidates, const cdsh_mcpimport_probe *probe,
                                   const cdsh_mcpimport_secret_opts *secrets,
                                   cdsh_mcpimport_scan *out, cdsh_error *err)
{
    scan_init(out);
    return scan_impl((json_t *)candidates, false, probe, secrets, out, err); /* not modified */
}

int cdsh_mcpimport_scan_run(const cdsh_mcpimport_roots *roots, const cdsh_mcpimport_probe *probe,
                            const cdsh_mcpimport_secret_opts *secrets, cdsh_mcpimport_scan *out,
                            cdsh_error *err)
{
    json_t *cands = NULL;
    cdsh_mcpimport_discover_stats stats;
    scan_init(out);
    /* Commands are built as they are found (in discovery order, which the
     * other candidates keep too): the texts of a large tree are never all
     * in memory at once. */
    int rc = cdsh__mcpimport_discover_streamed(roots, add_command, out, &cands, &stats, err);
    if (rc == 0)
        rc = scan_impl(cands, true, probe, secrets, out, err);
    else
        cdsh_mcpimport_scan_deinit(out);
    json_decref(cands);
    return rc;
}

void cdsh_mcpimport_scan_deinit(cdsh_mcpimport_scan *scan)
{
    json_decref(scan->servers);
    cdsh__mcpimport_cmds_deinit(&scan->commands);
    json_decref(scan->skills), json_decref(scan->notes);
    cdsh_mcpimport_secrets_free(scan->secrets);
    memset(scan, 0, sizeof *scan);
}

static json_t *first_named(const json_t *list, const char *name)
{
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x) {
        if (strcmp(json_string_value(json_object_get(x, "name")), name) == 0)
            return x;
    }
    return NULL;
}

json_t *cdsh_mcpimport_scan_server(const cdsh_mcpimport_scan *scan, const char *name)
{
    return first_named(scan->servers, name);
}

json_t *cdsh_mcpimport_scan_commands_json(cdsh_mcpimport_scan *scan)
{
    return cdsh__mcpimport_cmds_json(&scan->commands);
}

json_t *cdsh_mcpimport_scan_command(const cdsh_mcpimport_scan *scan, const char *name)
{
    cdsh__mcpimport_cmd *c = cdsh__mcpimport_cmds_find(&scan->commands, name);
    return c ? cdsh__mcpimport_cmd_json(c) : NULL; /* made once, kept by the scan */
}

json_t *cdsh_mcpimport_scan_skill(const cdsh_mcpimport_scan *scan, const char *name)
{
    return first_named(scan->skills, name);
}
