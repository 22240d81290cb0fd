/* discover.c — walks the Claude Code and Codex homes and project roots and
 * returns candidates with provenance. Reads files; parses JSON and TOML
 * documents but interprets nothing (normalise.c and commands.c do). */
#include "plugins/mcpimport/discover.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/toml.h"
#include "base/utf8.h"

#define MAX_DOC ((size_t)16 * 1024 * 1024)
#define MAX_MD ((size_t)1024 * 1024)

typedef struct walk {
    json_t *out;
} walk;

/* A JSON string of s (NULL: NULL). File names come from
 * disk in any encoding; a string that is not UTF-8 gets U+FFFD for its bad
 * bytes, because jansson refuses it and the item would silently vanish. */
static json_t *str_json(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s);
    if (cdsh_utf8_valid(s, n))
        return json_stringn(s, n);
    size_t len = 0;
    char *clean = cdsh_utf8_sanitize_dup(s, n, &len);
    json_t *j = clean ? json_stringn(clean, len) : NULL;
    free(clean);
    return j;
}

static json_t *prov(const char *source, const char *file, const char *scope, const char *plugin)
{
    return json_pack("{s:s, s:o, s:s, s:o?}", "source", source, "file", str_json(file), "scope",
                     scope, "plugin", str_json(plugin));
}

static void note(walk *w, json_t *provenance, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note(walk *w, json_t *provenance, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_array_append_new(w->out, json_pack("{s:s, s:o, s:o}", "kind", "note", "provenance",
                                            provenance, "message", str_json(buf)));
}

static bool is_dir(const char *p)
{
    struct stat st;
    return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *p)
{
    struct stat st;
    return p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static char *join(const char *a, const char *b)
{
    return cdsh_fs_path_join_dup(a, b);
}

/* Reads and parses a JSON file; a problem becomes a note and NULL. */
static json_t *read_json(walk *w, const char *path, json_t *provenance)
{
    char *text = NULL;
    size_t len = 0;
    cdsh_error e = {0};
    if (cdsh_fs_read_file(path, MAX_DOC, &text, &len, &e) != 0) {
        note(w, provenance, "cannot read %s: %s", path, e.message);
        return NULL;
    }
    json_t *doc = cdsh_json_parse(text, len, MAX_DOC, &e);
    free(text);
    if (!doc) {
        note(w, provenance, "%s is not valid JSON: %s", path, e.message);
        return NULL;
    }
    json_decref(provenance);
    return doc;
}

static void add_servers(walk *w, json_t *doc, const char *format, json_t *provenance,
                        const char *plugin_root)
{
    json_array_append_new(w->out, json_pack("{s:s, s:s, s:o, s:o, s:s?}", "kind", "servers",
                                            "format", format, "document", doc, "provenance",
                                            provenance, "pluginRoot", plugin_root));
}

static void add_mcp_file(walk *w, const char *path, const char *source, const char *scope,
                         const char *plugin, const char *root)
{
    if (!is_file(path))
        return;
    json_t *doc = read_json(w, path, prov(source, path, scope, plugin));
    if (doc)
        add_servers(w, doc, "json", prov(source, path, scope, plugin), root);
}

static bool exists(const char *p)
{
    struct stat st;
    return p && lstat(p, &st) == 0 && !S_ISDIR(st.st_mode);
}

/* A Markdown candidate. A file that cannot be read is a note for commands;
 * skills and agents carry the error instead, so that they are judged
 * (blocked, UNREADABLE_FILE) rather than dropped. Returns the candidate
 * (borrowed from w->out) or NULL. */
static json_t *add_markdown(walk *w, const char *kind, const char *path, const char *stem,
                            const char *ns, json_t *provenance, const char *root)
{
    char *text = NULL;
    size_t len = 0;
    cdsh_error e = {0};
    json_t *c = NULL;
    int rc = cdsh_fs_read_file(path, MAX_MD, &text, &len, &e);
    if (rc == 0 && !cdsh_utf8_valid(text, len))
        rc = cdsh_error_set(&e, CDSH_EINVAL, "NOT_UTF8",
                            "the file is not UTF-8 text (save it as UTF-8 to import it)");
    if (rc != 0) {
        if (strcmp(kind, "command") == 0) {
            note(w, provenance, "cannot read %s: %s", path, e.message);
            free(text);
            return NULL;
        }
        char msg[1024 + sizeof e.message];
        snprintf(msg, sizeof msg, "cannot read %s: %s", path, e.message);
        c = json_pack("{s:s, s:o, s:o, s:o?, s:o, s:o?}", "kind", kind, "error", str_json(msg),
                      "stem", str_json(stem), "namespace", str_json(ns), "provenance", provenance,
                      "pluginRoot", str_json(root));
    } else
        c = json_pack("{s:s, s:s%, s:o, s:o?, s:o, s:o?}", "kind", kind, "text", text, len, "stem",
                      str_json(stem), "namespace", str_json(ns), "provenance", provenance,
                      "pluginRoot", str_json(root));
    free(text);
    json_array_append_new(w->out, c);
    return c;
}

static bool ends_md(const char *name, size_t *stem_len)
{
    size_t n = strlen(name);
    if (n > 3 && strcmp(name + n - 3, ".md") == 0) {
        *stem_len = n - 3;
        return true;
    }
    return false;
}

/* *.md below dir (recursive up to depth; subfolders only label commands). */
static void md_tree(walk *w, const char *kind, const char *dir, int depth, const char *source,
                    const char *scope, const char *plugin, const char *ns, const char *root)
{
    char **names = NULL;
    if (depth < 0 || cdsh_fs_list_dir(dir, &names, NULL, NULL) != 0)
        return;
    for (char **n = names; *n; n++) {
        if ((*n)[0] == '.')
            continue;
        char *p = join(dir, *n);
        size_t sl;
        if (is_dir(p)) {
            if (depth > 0)
                md_tree(w, kind, p, depth - 1, source, scope, plugin, ns, root);
        } else if (ends_md(*n, &sl) && exists(p)) {
            char stem[256];
            snprintf(stem, sizeof stem, "%.*s", (int)sl, *n);
            add_markdown(w, kind, p, stem, ns, prov(source, p, scope, plugin), root);
        }
        free(p);
    }
    cdsh_fs_list_free(names);
}

#define MAX_SKILL_FILES 100

/* The supporting files of a skill folder (relative paths, sorted, dot names
 * and the top-level SKILL.md left out, 3 levels deep); ones that cannot be
 * read (dangling links, no permission) also go to `unreadable`. */
static void skill_files(const char *dir, const char *rel, int depth, json_t *files,
                        json_t *unreadable, bool *truncated)
{
    char **names = NULL;
    if (cdsh_fs_list_dir(dir, &names, NULL, NULL) != 0)
        return;
    for (char **n = names; *n; n++) {
        if ((*n)[0] == '.' || (!*rel && strcmp(*n, "SKILL.md") == 0))
            continue;
        char *p = join(dir, *n), r[1024];
        snprintf(r, sizeof r, "%s%s%s", rel, *rel ? "/" : "", *n);
        if (is_dir(p)) {
            if (depth > 0)
                skill_files(p, r, depth - 1, files, unreadable, truncated);
        } else if (json_array_size(files) >= MAX_SKILL_FILES)
            *truncated = true;
        else {
            json_array_append_new(files, json_string(r));
            if (!is_file(p) || access(p, R_OK) != 0)
                json_array_append_new(unreadable, json_string(r));
        }
        free(p);
    }
    cdsh_fs_list_free(names);
}

/* skills/<name>/SKILL.md */
static void skills_dir(walk *w, const char *dir, const char *source, const char *scope,
                       const char *plugin, const char *ns, const char *root)
{
    char **names = NULL;
    if (cdsh_fs_list_dir(dir, &names, NULL, NULL) != 0)
        return;
    for (char **n = names; *n; n++) {
        char *d = join(dir, *n), *f = d ? join(d, "SKILL.md") : NULL;
        json_t *c = (*n)[0] != '.' && is_dir(d) && exists(f)
                        ? add_markdown(w, "skill", f, *n, ns, prov(source, f, scope, plugin), root)
                        : NULL;
        if (c) {
            json_t *files = json_array(), *unreadable = json_array();
            bool truncated = false;
            skill_files(d, "", 3, files, unreadable, &truncated);
            json_object_set_new(c, "skillDir", json_string(d));
            json_object_set_new(c, "files", files);
            json_object_set_new(c, "unreadable", unreadable);
            if (truncated)
                json_object_set_new(c, "filesTruncated", json_true());
        }
        free(f);
        free(d);
    }
    cdsh_fs_list_free(names);
}

/* A component path (or list of paths) from a manifest, relative to root. */
static void component_paths(walk *w, const json_t *v, const char *root, const char *kind,
                            const char *plugin, const char *ns, const char *scope,
                            const char *manifest)
{
    if (json_is_string(v)) {
        char *p = join(root, json_string_value(v));
        if (!p || !cdsh_fs_path_is_inside(root, p))
            note(w, prov("claude", manifest, scope, plugin),
                 "%s path \"%s\" leaves the plugin "
                 "directory; ignored",
                 kind, json_string_value(v));
        else if (strcmp(kind, "skill") == 0)
            skills_dir(w, p, "claude", scope, plugin, ns, root);
        else if (is_dir(p))
            md_tree(w, kind, p, strcmp(kind, "command") == 0 ? 8 : 0, "claude", scope, plugin, ns,
                    root);
        else if (is_file(p)) {
            const char *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
            size_t sl;
            char stem[256];
            snprintf(stem, sizeof stem, "%.*s", ends_md(base, &sl) ? (int)sl : (int)strlen(base),
                     base);
            add_markdown(w, kind, p, stem, ns, prov("claude", p, scope, plugin), root);
        }
        free(p);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            component_paths(w, e, root, kind, plugin, ns, scope, manifest);
        }
    } else if (v)
        note(w, prov("claude", manifest, scope, plugin),
             "inline %s definitions in the manifest are not imported", kind);
}

static void manifest_servers(walk *w, const json_t *v, const char *root, const char *plugin,
                             const char *scope, const char *manifest)
{
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t n = strlen(s);
        if (strstr(s, "://") || (n > 5 && strcmp(s + n - 5, ".mcpb") == 0)) {
            note(w, prov("claude", manifest, scope, plugin),
                 "MCPB bundle \"%s\" is not supported; not imported", s);
            return;
        }
        char *p = join(root, s);
        if (!p || !cdsh_fs_path_is_inside(root, p))
            note(w, prov("claude", manifest, scope, plugin),
                 "mcpServers path \"%s\" leaves the plugin directory; ignored", s);
        else if (!is_file(p))
            note(w, prov("claude", manifest, scope, plugin), "mcpServers file %s is missing", p);
        else
            add_mcp_file(w, p, "claude", scope, plugin, root);
        free(p);
    } else if (json_is_object(v)) {
        add_servers(w, json_deep_copy(v), "json", prov("claude", manifest, scope, plugin), root);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            manifest_servers(w, e, root, plugin, scope, manifest);
        }
    }
}

static void plugin_dir(walk *w, const char *root, const char *id, const char *scope)
{
    char *mpath = join(root, ".claude-plugin/plugin.json");
    json_t *manifest =
        is_file(mpath) ? read_json(w, mpath, prov("claude", mpath, scope, id)) : NULL;
    char name[256];
    const char *mn = json_string_value(json_object_get(manifest, "name"));
    snprintf(name, sizeof name, "%.*s", (int)strcspn(mn ? mn : id, "@"), mn ? mn : id);
    char *dot = join(root, ".mcp.json");
    add_mcp_file(w, dot, "claude", scope, id, root);
    free(dot);
    if (json_object_get(manifest, "mcpServers"))
        manifest_servers(w, json_object_get(manifest, "mcpServers"), root, id, scope, mpath);
    /* commands and agents: a manifest entry replaces the default folder */
    const json_t *c = json_object_get(manifest, "commands");
    json_t *def = json_string("./commands");
    component_paths(w, c ? c : def, root, "command", id, name, scope, mpath);
    const json_t *a = json_object_get(manifest, "agents");
    json_string_set(def, "./agents");
    component_paths(w, a ? a : def, root, "agent", id, name, scope, mpath);
    json_string_set(def, "./skills"); /* skills: the manifest adds to the default */
    component_paths(w, def, root, "skill", id, name, scope, mpath);
    if (json_object_get(manifest, "skills"))
        component_paths(w, json_object_get(manifest, "skills"), root, "skill", id, name, scope,
                        mpath);
    json_decref(def);
    static const char *const not_imported[] = {
        "hooks",    "lspServers", "outputStyles", "themes",     "workflows",
        "monitors", "channels",   "settings",     "userConfig", NULL};
    for (const char *const *k = not_imported; *k; k++)
        if (json_object_get(manifest, *k))
            note(w, prov("claude", mpath, scope, id), "\"%s\" is not imported", *k);
    char *hooks = join(root, "hooks/hooks.json");
    if (!json_object_get(manifest, "hooks") && is_file(hooks))
        note(w, prov("claude", hooks, scope, id), "hooks are not imported");
    free(hooks);
    json_decref(manifest);
    free(mpath);
}

static void claude_plugins(walk *w, const char *claude_dir)
{
    char *reg = join(claude_dir, "plugins/installed_plugins.json");
    if (!is_file(reg)) {
        free(reg);
        return;
    }
    json_t *doc = read_json(w, reg, prov("claude", reg, "user", NULL));
    const json_t *plugins = json_object_get(doc, "plugins");
    const char *id;
    json_t *v;
    json_object_foreach((json_t *)plugins, id, v) {
        json_t *list = json_is_array(v) ? json_incref(v) : json_pack("[O]", v);
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) {
            const char *path = json_string_value(json_object_get(e, "installPath"));
            const char *scope = json_string_value(json_object_get(e, "scope"));
            if (!scope)
                scope = "user";
            if (!path || !is_dir(path))
                note(w, prov("claude", reg, scope, id), "plugin %s: install path %s is missing", id,
                     path ? path : "(none)");
            else
                plugin_dir(w, path, id, scope);
        }
        json_decref(list);
    }
    json_decref(doc);
    free(reg);
}

static void claude_json_scope(walk *w, const json_t *servers, const char *file, const char *scope)
{
    if (!servers)
        return;
    if (!json_is_object(servers)) {
        note(w, prov("claude", file, scope, NULL), "mcpServers is not an object; ignored");
        return;
    }
    json_t *doc = json_pack("{s:O}", "mcpServers", servers);
    add_servers(w, doc, "json", prov("claude", file, scope, NULL), NULL);
}

int cdsh_mcpimport_discover(const cdsh_mcpimport_roots *roots, json_t **out, cdsh_error *err)
{
    walk w = {json_array()};
    if (!w.out)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    json_t *cj = NULL;
    if (roots->claude_json && is_file(roots->claude_json))
        cj = read_json(&w, roots->claude_json, prov("claude", roots->claude_json, "user", NULL));
    /* servers, in precedence order */
    for (const char *const *p = roots->projects; p && *p; p++) {
        const json_t *proj = json_object_get(json_object_get(cj, "projects"), *p);
        claude_json_scope(&w, json_object_get(proj, "mcpServers"), roots->claude_json, "local");
        char *f = join(*p, ".mcp.json");
        add_mcp_file(&w, f, "claude", "project", NULL, NULL);
        free(f);
    }
    claude_json_scope(&w, json_object_get(cj, "mcpServers"), roots->claude_json, "user");
    json_decref(cj);
    if (roots->claude_dir)
        claude_plugins(&w, roots->claude_dir);
    if (roots->codex_home) {
        char *cfg = join(roots->codex_home, "config.toml");
        char *text = NULL;
        size_t len = 0;
        cdsh_error e = {0};
        if (is_file(cfg)) {
            json_t *doc = NULL;
            if (cdsh_fs_read_file(cfg, MAX_DOC, &text, &len, &e) != 0 ||
                cdsh_toml_parse(text, len, &doc, &e) != 0)
                note(&w, prov("codex", cfg, "user", NULL), "%s: %s", cfg, e.message);
            else {
                const char *k;
                json_t *v;
                json_object_foreach(json_object_get(doc, "plugins"), k, v) {
                    note(&w, prov("codex", cfg, "user", k),
                         "Codex plugin %s is reported only (its files are not imported)", k);
                }
                add_servers(&w, doc, "codex-toml", prov("codex", cfg, "user", NULL), NULL);
            }
            free(text);
        }
        free(cfg);
    }
    /* skills: user, then project (Claude's precedence for skills); plugins above */
    if (roots->claude_dir) {
        char *d = join(roots->claude_dir, "skills");
        skills_dir(&w, d, "claude", "user", NULL, NULL, NULL);
        free(d);
    }
    for (const char *const *p = roots->projects; p && *p; p++) {
        char *d = join(*p, ".claude/skills");
        skills_dir(&w, d, "claude", "project", NULL, NULL, NULL);
        free(d);
    }
    /* commands, agents and prompts: project, user, plugins (above), Codex */
    for (const char *const *p = roots->projects; p && *p; p++) {
        char *d = join(*p, ".claude/commands");
        md_tree(&w, "command", d, 8, "claude", "project", NULL, NULL, NULL);
        free(d);
        d = join(*p, ".claude/agents");
        md_tree(&w, "agent", d, 0, "claude", "project", NULL, NULL, NULL);
        free(d);
    }
    if (roots->claude_dir) {
        char *d = join(roots->claude_dir, "commands");
        md_tree(&w, "command", d, 8, "claude", "user", NULL, NULL, NULL);
        free(d);
        d = join(roots->claude_dir, "agents");
        md_tree(&w, "agent", d, 0, "claude", "user", NULL, NULL, NULL);
        free(d);
    }
    if (roots->codex_home) {
        char *d = join(roots->codex_home, "prompts");
        md_tree(&w, "command", d, 0, "codex", "user", NULL, NULL, NULL);
        free(d);
    }
    *out = w.out;
    return 0;
}
