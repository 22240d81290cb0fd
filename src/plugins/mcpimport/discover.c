/* discover.c — walks the Claude Code and Codex homes and project roots the
 * way the tools themselves load them and returns candidates with provenance.
 * The only file reading of the scan: every file is opened without following
 * a final symlink and without blocking (O_NOFOLLOW | O_NONBLOCK) and read
 * only when fstat says it is a regular file; a symlink is followed only when
 * its target stays inside the tree being scanned; every directory is entered
 * once (device and inode), which breaks loops and keeps a folder reached
 * twice (a project that is the home directory) from being scanned twice.
 * Parses JSON and TOML documents but interprets nothing (normalise.c,
 * commands.c and skills.c do). */
#include "plugins/mcpimport/discover.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "plugins/mcpimport/commands.h"

#define MAX_DOC ((size_t)16 * 1024 * 1024)
#define MAX_MD ((size_t)1024 * 1024)
#define MAX_SKILL_FILES 100

typedef struct walk {
    json_t *out;
    json_t *entered; /* "dev:ino" of every directory entered */
    const cdsh_mcpimport_roots *roots;
    char **projects;       /* real paths of the projects (NULL-terminated) */
    size_t nfiles;         /* directory entries looked at */
    const json_t *enabled; /* merged enabledPlugins: id -> {value, file} */
    cdsh__mcpimport_command_sink sink; /* NULL: command candidates go to out */
    void *sink_arg;
    json_t *no_refs; /* the fileRefs of a text without '@': [] (never changed) */
    size_t streamed; /* command candidates handed to the sink */
} walk;

/* One scanned tree: symlinks may not lead out of it. */
typedef struct tree {
    const char *real; /* real path of its root */
} tree;

/* ---- small helpers ----------------------------------------------------------- */

/* A JSON string of s (NULL: NULL). File names come from disk in any
 * encoding; a string that is not UTF-8 gets U+FFFD for its bad bytes, because
 * jansson refuses it and the item would silently vanish. */
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
    char buf[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_array_append_new(w->out, json_pack("{s:s, s:o, s:o}", "kind", "note", "provenance",
                                            provenance, "message", str_json(buf)));
}

static char *join(const char *a, const char *b)
{
    return cdsh_fs_path_join_dup(a, b);
}

static bool under(const char *root, const char *path)
{
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/')
        return path[0] == '/';
    return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* True the first time a directory is entered. */
static bool enter(walk *w, const struct stat *st)
{
    char key[64];
    snprintf(key, sizeof key, "%llx:%llx", (unsigned long long)st->st_dev,
             (unsigned long long)st->st_ino);
    if (json_object_get(w->entered, key))
        return false;
    json_object_set_new(w->entered, key, json_true());
    return true;
}

/* The real path of `path` when it stays inside the tree (symlinks at any
 * level followed), with *st of what it is; NULL when it is missing (quietly)
 * or leaves the tree (a note). */
static char *resolve(walk *w, const tree *t, const char *path, struct stat *st, json_t *provenance)
{
    struct stat lst;
    if (lstat(path, &lst) != 0) {
        json_decref(provenance);
        return NULL;
    }
    char *real = realpath(path, NULL);
    if (!real) {
        if (errno == ELOOP)
            note(w, provenance, "%s is a symlink loop; not followed", path);
        else if (S_ISLNK(lst.st_mode))
            note(w, provenance, "%s is a dangling symlink; skipped", path);
        else
            json_decref(provenance);
        return NULL;
    }
    if (!t || !t->real || !under(t->real, real)) {
        note(w, provenance, "%s leads to %s, outside the scanned tree %s; not followed", path,
             real, t && t->real ? t->real : "?");
        free(real);
        return NULL;
    }
    if (stat(real, st) != 0) {
        json_decref(provenance);
        free(real);
        return NULL;
    }
    json_decref(provenance);
    return real;
}

/* One entry of a directory whose real path is dir_real: its real path (a
 * symlink is followed only inside the tree; a note otherwise), NULL to skip. */
static char *entry(walk *w, const tree *t, const char *dir_real, const char *name,
                   struct stat *st, const char *source, const char *scope, const char *plugin)
{
    w->nfiles++;
    char *p = join(dir_real, name);
    if (!p)
        return NULL;
    if (lstat(p, st) != 0) {
        free(p);
        return NULL;
    }
    if (!S_ISLNK(st->st_mode))
        return p;
    char *real = resolve(w, t, p, st, prov(source, p, scope, plugin));
    free(p);
    return real;
}

/* Reads a regular file without following a final symlink and without
 * blocking on a FIFO or device; path is relative to the folder dfd
 * (AT_FDCWD: as given). */
static int safe_read_at(int dfd, const char *path, size_t max, char **out, size_t *len,
                        cdsh_error *e)
{
    *out = NULL;
    *len = 0;
    int fd = openat(dfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return cdsh_error_set(e, CDSH_EIO, "OPEN_FAILED", "%s", strerror(errno));
    struct stat st;
    int rc = 0;
    char *buf = NULL;
    if (fstat(fd, &st) != 0)
        rc = cdsh_error_set(e, CDSH_EIO, "STAT_FAILED", "%s", strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = cdsh_error_set(e, CDSH_EINVAL, "NOT_REGULAR",
                            "not a regular file (a FIFO, device or socket is never opened)");
    else if ((size_t)st.st_size > max)
        rc = cdsh_error_set(e, CDSH_EINVAL, "TOO_LARGE", "larger than %zu bytes", max);
    if (rc == 0 && !(buf = malloc((size_t)st.st_size + 1)))
        rc = cdsh_error_set(e, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    size_t n = 0;
    while (rc == 0 && n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            rc = cdsh_error_set(e, CDSH_EIO, "READ_FAILED", "%s", strerror(errno));
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (rc != 0) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

/* A single top-level file of a tree (a registry, settings, .mcp.json):
 * its real path, or NULL (missing: quietly; leaving the tree or not a
 * regular file: a note). */
static char *tree_file(walk *w, const tree *t, const char *path, const char *source,
                       const char *scope, const char *plugin)
{
    struct stat st;
    char *real = resolve(w, t, path, &st, prov(source, path, scope, plugin));
    if (real && !S_ISREG(st.st_mode)) {
        if (!S_ISDIR(st.st_mode))
            note(w, prov(source, path, scope, plugin),
                 "%s is not a regular file (a FIFO, device or socket is never opened); skipped",
                 path);
        free(real);
        return NULL;
    }
    return real;
}

/* Reads and parses a JSON file of a tree; a problem becomes a note and NULL. */
static json_t *read_json(walk *w, const tree *t, const char *path, const char *source,
                         const char *scope, const char *plugin)
{
    char *real = tree_file(w, t, path, source, scope, plugin);
    if (!real)
        return NULL;
    char *text = NULL;
    size_t len = 0;
    cdsh_error e = {0};
    json_t *doc = NULL;
    if (safe_read_at(AT_FDCWD, real, MAX_DOC, &text, &len, &e) != 0)
        note(w, prov(source, path, scope, plugin), "cannot read %s: %s", path, e.message);
    else if (!(doc = cdsh_json_parse(text, len, MAX_DOC, &e)))
        note(w, prov(source, path, scope, plugin), "%s is not valid JSON: %s", path, e.message);
    free(text);
    free(real);
    return doc;
}

static void add_servers(walk *w, json_t *doc, const char *format, json_t *provenance,
                        const char *plugin_root)
{
    json_array_append_new(w->out, json_pack("{s:s, s:s, s:o, s:o, s:s?}", "kind", "servers",
                                            "format", format, "document", doc, "provenance",
                                            provenance, "pluginRoot", plugin_root));
}

static void add_mcp_file(walk *w, const tree *t, const char *path, const char *source,
                         const char *scope, const char *plugin, const char *root)
{
    json_t *doc = read_json(w, t, path, source, scope, plugin);
    if (doc)
        add_servers(w, doc, "json", prov(source, path, scope, plugin), root);
}

/* How many candidates the walk has produced so far (streamed ones too). */
static size_t emitted(const walk *w)
{
    return json_array_size(w->out) + w->streamed;
}

cdsh__mcpimport_md cdsh__mcpimport_md_of(const json_t *c)
{
    const json_t *text = json_object_get(c, "text");
    cdsh__mcpimport_md md = {json_string_value(text),
                             json_string_length(text),
                             json_string_value(json_object_get(c, "stem")),
                             json_string_value(json_object_get(c, "namespace")),
                             json_string_value(json_object_get(c, "pluginRoot")),
                             json_object_get(c, "provenance"),
                             json_object_get(c, "meta"),
                             json_object_get(c, "fileRefs")};
    return md;
}

/* True when every given string (NULL: none) is UTF-8, as str_json would
 * leave it. */
static bool utf8_all(const char *a, const char *b, const char *c)
{
    const char *v[] = {a, b, c};
    for (size_t i = 0; i < 3; i++)
        if (v[i] && !cdsh_utf8_valid(v[i], strlen(v[i])))
            return false;
    return true;
}

/* Hands a command candidate (owned) on: to the sink when there is one
 * (then NULL is returned), else into w->out (borrowed result). */
static json_t *emit_command(walk *w, json_t *c)
{
    if (!c || !w->sink) {
        if (c)
            json_array_append_new(w->out, c);
        return c;
    }
    cdsh__mcpimport_md md = cdsh__mcpimport_md_of(c);
    w->sink(w->sink_arg, &md);
    w->streamed++;
    json_decref(c);
    return NULL;
}

/* The @path mentions of text that resolve to a file inside the tree (the
 * only ones worth a warning: `@angular/core` or `@pytest.fixture` are not
 * file includes). */
static json_t *file_refs(const tree *t, const char *text)
{
    if (!strchr(text, '@')) /* most files: no mention to look at */
        return json_array();
    json_t *refs = json_array(), *found = json_array(), *warn = json_array();
    cdsh__mcpimport_scan_unsupported(text, found, warn, NULL);
    size_t i;
    json_t *f;
    json_array_foreach(found, i, f) {
        const char *tok = json_string_value(json_object_get(f, "text"));
        if (strcmp(json_string_value(json_object_get(f, "feature")), "file-include") != 0 ||
            !tok || tok[0] == '/' || tok[0] == '~' || !t || !t->real)
            continue;
        char *p = join(t->real, tok);
        char *real = p ? realpath(p, NULL) : NULL;
        struct stat st;
        if (real && under(t->real, real) && stat(real, &st) == 0 && S_ISREG(st.st_mode))
            json_array_append_new(refs, json_string(tok));
        free(real);
        free(p);
    }
    json_decref(found);
    json_decref(warn);
    return refs;
}

/* A Markdown candidate read from `real` (relative to the folder dfd, or
 * AT_FDCWD; shown as `path`). A file that
 * cannot be read is a note for commands; skills and agents carry the error
 * instead, so that they are judged (blocked, UNREADABLE_FILE) rather than
 * dropped. Returns the candidate (borrowed from w->out) or NULL. */
static json_t *add_markdown(walk *w, const tree *t, const char *kind, const char *path,
                            int dfd, const char *real, const char *stem, const char *ns,
                            json_t *provenance, const char *root, const json_t *meta)
{
    char *text = NULL;
    size_t len = 0;
    cdsh_error e = {0};
    json_t *c = NULL;
    int rc = safe_read_at(dfd, real, MAX_MD, &text, &len, &e);
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
    } else if (w->sink && strcmp(kind, "command") == 0 && utf8_all(stem, ns, root)) {
        /* Streamed: the command's fields go to the sink without a candidate. */
        bool at = strchr(text, '@') != NULL;
        json_t *refs = at ? file_refs(t, text) : NULL;
        cdsh__mcpimport_md md = {text, len, stem, ns, root, provenance, meta,
                                 at ? refs : w->no_refs};
        w->sink(w->sink_arg, &md);
        w->streamed++;
        json_decref(refs);
        json_decref(provenance);
        free(text);
        return NULL;
    } else
        c = json_pack("{s:s, s:s%, s:o, s:o?, s:o, s:o?, s:o}", "kind", kind, "text", text, len,
                      "stem", str_json(stem), "namespace", str_json(ns), "provenance", provenance,
                      "pluginRoot", str_json(root), "fileRefs", file_refs(t, text));
    free(text);
    if (c && json_object_size(meta))
        json_object_set(c, "meta", (json_t *)meta);
    if (strcmp(kind, "command") == 0)
        return emit_command(w, c);
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

/* A skill or sub-agent file that is a symlink which cannot be followed
 * (dangling, a loop, or leading out of the tree): judged blocked with the
 * reason instead of vanishing. True when it was handled so. */
static bool unfollowable(walk *w, const tree *t, const char *kind, const char *path,
                         const char *stem, json_t *provenance, const char *ns, const char *root)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode)) {
        json_decref(provenance);
        return false;
    }
    char *real = realpath(path, NULL);
    char msg[PATH_MAX + 512];
    if (real && t && t->real && under(t->real, real)) {
        free(real);
        json_decref(provenance);
        return false;
    }
    if (real)
        snprintf(msg, sizeof msg,
                 "cannot read %s: it is a symlink to %s, outside the scanned tree %s; not "
                 "followed",
                 path, real, t && t->real ? t->real : "?");
    else
        snprintf(msg, sizeof msg, "cannot read %s: it is a %s; not followed", path,
                 errno == ELOOP ? "symlink loop" : "dangling symlink");
    free(real);
    json_array_append_new(w->out,
                          json_pack("{s:s, s:o, s:o, s:o?, s:o, s:o?}", "kind", kind, "error",
                                    str_json(msg), "stem", str_json(stem), "namespace",
                                    str_json(ns), "provenance", provenance, "pluginRoot",
                                    str_json(root)));
    return true;
}

typedef struct where {
    const char *source, *scope, *plugin, *ns, *root;
} where;

/* A folder's entries with the type readdir reports, sorted by name (as
 * cdsh_fs_list_dir sorts), and the folder open for openat: a regular file
 * of a large commands/ folder then costs an open, an fstat, a read and a
 * close, not also an lstat and a walk of its absolute path. */
typedef struct dent {
    const char *name;
    unsigned char type; /* DT_*; DT_UNKNOWN when the file system does not say */
} dent;

typedef struct dlist {
    int fd;
    dent *v;
    size_t n;
    char *names; /* every name, NUL-separated */
} dlist;

static int dent_cmp(const void *a, const void *b)
{
    return strcmp(((const dent *)a)->name, ((const dent *)b)->name);
}

static void dlist_close(dlist *l)
{
    if (l->fd >= 0)
        close(l->fd);
    free(l->v);
    free(l->names);
    memset(l, 0, sizeof *l);
    l->fd = -1;
}

/* 0, or -1 (not a folder, unreadable, out of memory: listed as empty). */
static int dlist_open(const char *dir, dlist *l)
{
    memset(l, 0, sizeof *l);
    l->fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int dfd = l->fd >= 0 ? dup(l->fd) : -1;
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        dlist_close(l);
        return -1;
    }
    size_t used = 0, cap = 0, n = 0, ncap = 0;
    size_t *offs = NULL;
    unsigned char *types = NULL;
    bool ok = true;
    struct dirent *e;
    while (ok && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        size_t len = strlen(e->d_name) + 1;
        if (used + len > cap) {
            size_t nc = cap ? cap * 2 : 4096;
            while (nc < used + len)
                nc *= 2;
            char *g = realloc(l->names, nc);
            ok = g != NULL;
            if (g)
                l->names = g, cap = nc;
        }
        if (ok && n == ncap) {
            size_t nc = ncap ? ncap * 2 : 64;
            size_t *go = realloc(offs, nc * sizeof *go);
            if (go)
                offs = go;
            unsigned char *gt = go ? realloc(types, nc) : NULL;
            if (gt)
                types = gt, ncap = nc;
            ok = go && gt;
        }
        if (!ok)
            break;
        memcpy(l->names + used, e->d_name, len);
        offs[n] = used;
        types[n++] = e->d_type;
        used += len;
    }
    closedir(d);
    l->v = ok ? calloc(n ? n : 1, sizeof *l->v) : NULL;
    for (size_t i = 0; l->v && i < n; i++)
        l->v[i] = (dent){l->names + offs[i], types[i]};
    free(offs);
    free(types);
    if (!l->v) {
        dlist_close(l);
        return -1;
    }
    l->n = n;
    qsort(l->v, n, sizeof *l->v, dent_cmp);
    return 0;
}

/* *.md below dir_real (recursive up to depth; subfolders only label commands). */
static void md_tree(walk *w, const tree *t, const char *kind, const char *dir_real, int depth,
                    const where *at)
{
    dlist l;
    if (depth < 0 || dlist_open(dir_real, &l) != 0)
        return;
    for (size_t i = 0; i < l.n; i++) {
        const char *const *n = &l.v[i].name;
        if ((*n)[0] == '.')
            continue;
        struct stat st;
        size_t sl;
        if (l.v[i].type == DT_REG) {
            /* Not a symlink: nothing to resolve; read through the folder. */
            w->nfiles++;
            if (!ends_md(*n, &sl))
                continue;
            char shown[PATH_MAX + 256], stem[256];
            snprintf(shown, sizeof shown, "%s/%s", dir_real, *n);
            snprintf(stem, sizeof stem, "%.*s", (int)sl, *n);
            add_markdown(w, t, kind, shown, l.fd, *n, stem, at->ns,
                         prov(at->source, shown, at->scope, at->plugin), at->root, NULL);
            continue;
        }
        if (strcmp(kind, "command") != 0 && ends_md(*n, &sl)) {
            char *lp = join(dir_real, *n);
            char stem[256];
            snprintf(stem, sizeof stem, "%.*s", (int)sl, *n);
            bool done = lp && unfollowable(w, t, kind, lp, stem,
                                           prov(at->source, lp, at->scope, at->plugin), at->ns,
                                           at->root);
            free(lp);
            if (done)
                continue;
        }
        char *p = entry(w, t, dir_real, *n, &st, at->source, at->scope, at->plugin);
        if (!p)
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (depth > 0 && enter(w, &st))
                md_tree(w, t, kind, p, depth - 1, at);
            else if (depth > 0)
                note(w, prov(at->source, p, at->scope, at->plugin),
                     "%s/%s leads to a folder already scanned (a symlink loop or a second "
                     "way in); not scanned again",
                     dir_real, *n);
        } else if (ends_md(*n, &sl)) {
            char shown[PATH_MAX + 256];
            snprintf(shown, sizeof shown, "%s/%s", dir_real, *n);
            if (!S_ISREG(st.st_mode))
                note(w, prov(at->source, shown, at->scope, at->plugin),
                     "%s is not a regular file (a FIFO, device or socket is never opened); "
                     "skipped",
                     shown);
            else {
                char stem[256];
                snprintf(stem, sizeof stem, "%.*s", (int)sl, *n);
                add_markdown(w, t, kind, shown, AT_FDCWD, p, stem, at->ns,
                             prov(at->source, shown, at->scope, at->plugin), at->root, NULL);
            }
        }
        free(p);
    }
    dlist_close(&l);
}

/* The supporting files of a skill folder (relative paths, sorted, dot names
 * and the top-level SKILL.md left out, 3 levels deep); ones that cannot be
 * read (not regular files, no permission) also go to `unreadable`. */
static void skill_files(walk *w, const tree *t, const char *dir, const char *rel, int depth,
                        json_t *files, json_t *unreadable, bool *truncated, const where *at)
{
    char **names = NULL;
    if (cdsh_fs_list_dir(dir, &names, NULL, NULL) != 0)
        return;
    for (char **n = names; *n; n++) {
        if ((*n)[0] == '.' || (!*rel && strcmp(*n, "SKILL.md") == 0))
            continue;
        struct stat st;
        char *p = entry(w, t, dir, *n, &st, at->source, at->scope, at->plugin), r[1024];
        if (!p)
            continue;
        snprintf(r, sizeof r, "%s%s%s", rel, *rel ? "/" : "", *n);
        if (S_ISDIR(st.st_mode)) {
            if (depth > 0 && enter(w, &st))
                skill_files(w, t, p, r, depth - 1, files, unreadable, truncated, at);
        } else if (json_array_size(files) >= MAX_SKILL_FILES)
            *truncated = true;
        else {
            json_array_append_new(files, json_string(r));
            if (!S_ISREG(st.st_mode) || access(p, R_OK) != 0)
                json_array_append_new(unreadable, json_string(r));
        }
        free(p);
    }
    cdsh_fs_list_free(names);
}

/* skills/<name>/SKILL.md below dir_real. */
static void skills_dir(walk *w, const tree *t, const char *dir_real, const where *at)
{
    char **names = NULL;
    if (cdsh_fs_list_dir(dir_real, &names, NULL, NULL) != 0)
        return;
    for (char **n = names; *n; n++) {
        if ((*n)[0] == '.')
            continue;
        struct stat st;
        char *d = entry(w, t, dir_real, *n, &st, at->source, at->scope, at->plugin);
        if (!d || !S_ISDIR(st.st_mode) || !enter(w, &st)) {
            free(d);
            continue;
        }
        char shown[PATH_MAX + 256];
        snprintf(shown, sizeof shown, "%s/%s/SKILL.md", dir_real, *n);
        char *lp = join(d, "SKILL.md");
        bool done = lp && unfollowable(w, t, "skill", lp, *n,
                                       prov(at->source, shown, at->scope, at->plugin), at->ns,
                                       at->root);
        free(lp);
        char *f = done ? NULL : entry(w, t, d, "SKILL.md", &st, at->source, at->scope, at->plugin);
        json_t *c = NULL;
        if (f && !S_ISREG(st.st_mode))
            note(w, prov(at->source, shown, at->scope, at->plugin),
                 "%s is not a regular file (a FIFO, device or socket is never opened); skipped",
                 shown);
        else if (f)
            c = add_markdown(w, t, "skill", shown, AT_FDCWD, f, *n, at->ns,
                             prov(at->source, shown, at->scope, at->plugin), at->root, NULL);
        if (c) {
            json_t *files = json_array(), *unreadable = json_array();
            bool truncated = false;
            skill_files(w, t, d, "", 3, files, unreadable, &truncated, at);
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

/* A component folder of a tree (commands/, agents/, skills/): scanned once
 * (a folder reached again, e.g. ~/.claude/commands as a project's
 * .claude/commands when the project is the home directory, is skipped). */
static void component_dir(walk *w, const tree *t, const char *kind, const char *path, int depth,
                          const where *at)
{
    struct stat st;
    char *real = resolve(w, t, path, &st, prov(at->source, path, at->scope, at->plugin));
    if (real && S_ISDIR(st.st_mode) && enter(w, &st)) {
        if (strcmp(kind, "skill") == 0)
            skills_dir(w, t, real, at);
        else
            md_tree(w, t, kind, real, depth, at);
    } else if (real && S_ISREG(st.st_mode) && strcmp(kind, "skill") != 0) {
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        size_t sl;
        char stem[256];
        snprintf(stem, sizeof stem, "%.*s", ends_md(base, &sl) ? (int)sl : (int)strlen(base),
                 base);
        add_markdown(w, t, kind, path, AT_FDCWD, real, stem, at->ns,
                     prov(at->source, path, at->scope, at->plugin), at->root, NULL);
    } else if (real && !S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
        note(w, prov(at->source, path, at->scope, at->plugin),
             "%s is not a regular file or folder; skipped", path);
    free(real);
}

/* ---- plugin manifests -------------------------------------------------------- */

/* Inline command definitions of a manifest or marketplace entry:
 * {name: {source?: path, content?: text, description?, argumentHint?,
 * model?, allowedTools?}}. */
static void inline_commands(walk *w, const tree *t, const json_t *v, const where *at,
                            const char *manifest)
{
    const char *name;
    json_t *def;
    json_object_foreach((json_t *)v, name, def) {
        const char *src = json_string_value(json_object_get(def, "source"));
        const char *content = json_string_value(json_object_get(def, "content"));
        json_t *meta = json_object();
        static const char *const keys[][2] = {{"description", "description"},
                                              {"argumentHint", "argument-hint"},
                                              {"model", "model"},
                                              {"allowedTools", "allowed-tools"}};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            if (json_object_get(def, keys[k][0]))
                json_object_set(meta, keys[k][1], json_object_get(def, keys[k][0]));
        json_t *c = NULL;
        if (content) {
            c = json_pack("{s:s, s:s, s:o, s:o?, s:o, s:o?, s:[]}", "kind", "command", "text",
                          content, "stem", str_json(name), "namespace", str_json(at->ns),
                          "provenance", prov(at->source, manifest, at->scope, at->plugin),
                          "pluginRoot", str_json(at->root), "fileRefs");
            if (c && json_object_size(meta))
                json_object_set(c, "meta", meta);
            emit_command(w, c);
        } else if (src) {
            char *p = join(at->root, src);
            struct stat st;
            char *real = p ? resolve(w, t, p, &st, prov(at->source, p, at->scope, at->plugin))
                           : NULL;
            if (real && S_ISREG(st.st_mode))
                add_markdown(w, t, "command", p, AT_FDCWD, real, name, at->ns,
                             prov(at->source, p, at->scope, at->plugin), at->root, meta);
            else if (real)
                note(w, prov(at->source, manifest, at->scope, at->plugin),
                     "command \"%s\": %s is not a regular file; skipped", name, p);
            free(real);
            free(p);
        } else
            note(w, prov(at->source, manifest, at->scope, at->plugin),
                 "command \"%s\" has neither source nor content; skipped", name);
        json_decref(meta);
    }
}

/* A component path (or list of paths) from a manifest, relative to root. */
static void component_paths(walk *w, const tree *t, const json_t *v, const char *kind,
                            const where *at, const char *manifest)
{
    if (json_is_string(v)) {
        char *p = join(at->root, json_string_value(v));
        if (!p || !under(at->root, p))
            note(w, prov(at->source, manifest, at->scope, at->plugin),
                 "%s path \"%s\" leaves the plugin directory; ignored", kind,
                 json_string_value(v));
        else
            component_dir(w, t, kind, p, strcmp(kind, "command") == 0 ? 8 : 0, at);
        free(p);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            component_paths(w, t, e, kind, at, manifest);
        }
    } else if (json_is_object(v) && strcmp(kind, "command") == 0)
        inline_commands(w, t, v, at, manifest);
    else if (v)
        note(w, prov(at->source, manifest, at->scope, at->plugin),
             "%s definitions of this shape in the manifest are not imported", kind);
}

static void manifest_servers(walk *w, const tree *t, const json_t *v, const where *at,
                             const char *manifest)
{
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t n = strlen(s);
        if (strstr(s, "://") || (n > 5 && strcmp(s + n - 5, ".mcpb") == 0)) {
            note(w, prov(at->source, manifest, at->scope, at->plugin),
                 "MCPB bundle \"%s\" is not supported; not imported", s);
            return;
        }
        char *p = join(at->root, s);
        struct stat st;
        if (!p || !under(at->root, p))
            note(w, prov(at->source, manifest, at->scope, at->plugin),
                 "mcpServers path \"%s\" leaves the plugin directory; ignored", s);
        else if (lstat(p, &st) != 0)
            note(w, prov(at->source, manifest, at->scope, at->plugin),
                 "mcpServers file %s is missing", p);
        else
            add_mcp_file(w, t, p, at->source, at->scope, at->plugin, at->root);
        free(p);
    } else if (json_is_object(v)) {
        add_servers(w, json_deep_copy(v), "json",
                    prov(at->source, manifest, at->scope, at->plugin), at->root);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            manifest_servers(w, t, e, at, manifest);
        }
    }
}

/* The names of an inline map, or the path, for a note. */
static void describe(const json_t *v, char *buf, size_t n)
{
    buf[0] = '\0';
    if (json_is_string(v)) {
        snprintf(buf, n, "%s", json_string_value(v));
        return;
    }
    const char *k;
    json_t *x;
    size_t used = 0;
    json_object_foreach((json_t *)v, k, x) {
        int m = snprintf(buf + used, n - used, "%s%s", used ? ", " : "", k);
        if (m < 0 || (size_t)m >= n - used)
            break;
        used += (size_t)m;
    }
    if (!used)
        snprintf(buf, n, "%s", json_is_array(v) ? "a list" : "inline");
}

/* A plugin directory (Claude Code or Codex layout) described by `manifest`
 * (plugin.json, a marketplace entry, or both merged; may be NULL). */
static void plugin_dir(walk *w, const char *root, const char *id, const char *scope,
                       const char *source, const json_t *manifest, const char *mpath)
{
    tree t = {root};
    char name[256];
    const char *mn = json_string_value(json_object_get(manifest, "name"));
    snprintf(name, sizeof name, "%.*s", (int)strcspn(mn ? mn : id, "@"), mn ? mn : id);
    where at = {source, scope, id, name, root};
    bool codex = strcmp(source, "codex") == 0;
    const json_t *ms = json_object_get(manifest, "mcpServers");
    char *dot = join(root, ".mcp.json");
    if (!codex || !ms)
        add_mcp_file(w, &t, dot, source, scope, id, root);
    free(dot);
    if (ms)
        manifest_servers(w, &t, ms, &at, mpath);
    json_t *def = json_string("./commands");
    if (!codex) { /* commands and agents: a manifest entry replaces the default folder */
        const json_t *c = json_object_get(manifest, "commands");
        component_paths(w, &t, c ? c : def, "command", &at, mpath);
        const json_t *a = json_object_get(manifest, "agents");
        json_string_set(def, "./agents");
        component_paths(w, &t, a ? a : def, "agent", &at, mpath);
    } else {
        static const char *const dirs[] = {"commands", "agents", NULL};
        for (const char *const *d = dirs; *d; d++) {
            char *p = join(root, *d);
            struct stat st;
            if (p && stat(p, &st) == 0 && S_ISDIR(st.st_mode))
                note(w, prov(source, p, scope, id),
                     "%s/ of a Codex plugin: Codex does not load it; not imported", *d);
            free(p);
        }
    }
    json_string_set(def, "./skills"); /* skills: the manifest adds to the default */
    component_paths(w, &t, def, "skill", &at, mpath);
    if (json_object_get(manifest, "skills"))
        component_paths(w, &t, json_object_get(manifest, "skills"), "skill", &at, mpath);
    json_decref(def);
    static const struct {
        const char *key, *why;
    } not_imported[] = {
        {"hooks", "hooks are not imported (cdsh runs no Claude Code or Codex hooks)"},
        {"lspServers", "LSP servers are not imported: cdsh has no language-server client"},
        {"outputStyles", "output styles are not imported"},
        {"themes", "themes are not imported"},
        {"workflows", "workflows are not imported"},
        {"monitors", "monitors are not imported"},
        {"channels", "channels are not imported"},
        {"settings", "plugin settings are not imported"},
        {"userConfig", "user configuration (userConfig) is not prompted for; "
                       "${user_config.KEY} references stay unresolved"},
        {"apps", "Codex apps are not imported"},
        {NULL, NULL}};
    for (size_t k = 0; not_imported[k].key; k++) {
        const json_t *v = json_object_get(manifest, not_imported[k].key);
        if (!v)
            continue;
        char what[512];
        describe(v, what, sizeof what);
        note(w, prov(source, mpath, scope, id), "%s (%s: %s)", not_imported[k].why,
             not_imported[k].key, what);
    }
    static const char *const files[][2] = {{"hooks/hooks.json", "hooks"},
                                           {".lsp.json", "lspServers"},
                                           {".app.json", "apps"}};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        char *p = join(root, files[k][0]);
        struct stat st;
        if (!json_object_get(manifest, files[k][1]) && p && lstat(p, &st) == 0)
            note(w, prov(source, p, scope, id), "%s is not imported (%s)", files[k][0],
                 strcmp(files[k][1], "hooks") == 0        ? "cdsh runs no hooks"
                 : strcmp(files[k][1], "lspServers") == 0 ? "cdsh has no language-server client"
                                                          : "Codex apps are not supported");
        free(p);
    }
}

/* ---- Claude Code plugins ----------------------------------------------------- */

static const char *const scope_rank[] = {"local", "project", "user", NULL};

static int rank_of(const char *scope)
{
    for (int i = 0; scope_rank[i]; i++)
        if (strcmp(scope_rank[i], scope) == 0)
            return i;
    return 3;
}

static bool is_project(walk *w, const char *path)
{
    if (!path)
        return false;
    char *real = realpath(path, NULL);
    bool found = false;
    for (char **p = w->projects; p && *p && !found; p++)
        found = strcmp(*p, real ? real : path) == 0;
    free(real);
    return found;
}

/* enabledPlugins of one settings file merged under the ones already read
 * (the first file read wins: local > project > user). */
static void read_enabled(walk *w, json_t *merged, const tree *t, const char *path)
{
    json_t *doc = read_json(w, t, path, "claude", "user", NULL);
    const char *id;
    json_t *v;
    json_object_foreach(json_object_get(doc, "enabledPlugins"), id, v) {
        if (!json_object_get(merged, id))
            json_object_set_new(merged, id, json_pack("{s:O, s:s}", "value", v, "file", path));
    }
    json_decref(doc);
}

static json_t *enabled_plugins(walk *w, const tree *home)
{
    json_t *merged = json_object();
    for (char **p = w->projects; p && *p; p++) {
        tree t = {*p};
        static const char *const files[] = {".claude/settings.local.json",
                                            ".claude/settings.json", NULL};
        for (const char *const *f = files; *f; f++) {
            char *path = join(*p, *f);
            read_enabled(w, merged, &t, path);
            free(path);
        }
    }
    char *user = join(w->roots->claude_dir, "settings.json");
    read_enabled(w, merged, home, user);
    free(user);
    return merged;
}

/* ---- project .mcp.json approval ------------------------------------------------
 * Claude Code starts a server of a project's .mcp.json only once it is
 * approved: `enableAllProjectMcpServers: true` or the name in
 * `enabledMcpjsonServers`; a name in `disabledMcpjsonServers` is refused
 * (and wins). They are read from the project's .claude/settings.local.json,
 * .claude/settings.json, the user's settings.json and the project's entry in
 * ~/.claude.json (where the approval dialog records choices); the name lists
 * are merged, the first file that sets enableAllProjectMcpServers decides. */

static void approval_from(json_t *ap, const json_t *doc, const char *file)
{
    static const char *const lists[] = {"enabledMcpjsonServers", "disabledMcpjsonServers"};
    static const char *const keys[] = {"enabled", "disabled"};
    for (int l = 0; l < 2; l++) {
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(doc, lists[l]), i, v) {
            json_t *m = json_object_get(ap, keys[l]);
            if (json_is_string(v) && !json_object_get(m, json_string_value(v)))
                json_object_set_new(m, json_string_value(v), json_string(file));
        }
    }
    const json_t *all = json_object_get(doc, "enableAllProjectMcpServers");
    if (json_is_boolean(all) && !json_object_get(ap, "enableAll"))
        json_object_set_new(ap, "enableAll", json_pack("{s:b, s:s}", "value", json_is_true(all),
                                                       "file", file));
}

static json_t *mcpjson_approval(walk *w, const char *project, const tree *pt, const tree *home,
                                const json_t *cj_project, const char *cj_file)
{
    json_t *ap = json_pack("{s:{}, s:{}}", "enabled", "disabled");
    static const char *const files[] = {".claude/settings.local.json", ".claude/settings.json",
                                        NULL};
    for (const char *const *f = files; *f; f++) {
        char *path = join(project, *f);
        struct stat st;
        if (path && lstat(path, &st) == 0) {
            json_t *doc = read_json(w, pt, path, "claude", "project", NULL);
            approval_from(ap, doc, path);
            json_decref(doc);
        }
        free(path);
    }
    if (home->real) {
        char *user = join(w->roots->claude_dir, "settings.json");
        struct stat st;
        if (user && lstat(user, &st) == 0) {
            json_t *doc = read_json(w, home, user, "claude", "user", NULL);
            approval_from(ap, doc, user);
            json_decref(doc);
        }
        free(user);
    }
    if (cj_project)
        approval_from(ap, cj_project, cj_file);
    return ap;
}

/* Marketplace name -> parsed marketplace.json (from known_marketplaces.json's
 * installLocation, else plugins/marketplaces/<name>). */
static json_t *marketplaces(walk *w, const tree *home)
{
    json_t *out = json_object();
    char *dir = join(w->roots->claude_dir, "plugins/marketplaces");
    char *known = join(w->roots->claude_dir, "plugins/known_marketplaces.json");
    json_t *k = read_json(w, home, known, "claude", "user", NULL);
    char **names = NULL;
    if (dir && cdsh_fs_list_dir(dir, &names, NULL, NULL) == 0) {
        for (char **n = names; *n; n++) {
            if ((*n)[0] == '.')
                continue;
            const char *loc =
                json_string_value(json_object_get(json_object_get(k, *n), "installLocation"));
            char *base = loc ? strdup(loc) : join(dir, *n);
            char *mp = base ? join(base, ".claude-plugin/marketplace.json") : NULL;
            char *mreal = base ? realpath(base, NULL) : NULL;
            tree mt = {mreal};
            json_t *doc = mp ? read_json(w, &mt, mp, "claude", "user", NULL) : NULL;
            if (doc) {
                json_object_set_new(doc, "_root", json_string(mreal));
                json_object_set_new(doc, "_file", json_string(mp));
                json_object_set_new(out, *n, doc);
            }
            free(mreal), free(mp), free(base);
        }
    }
    cdsh_fs_list_free(names);
    json_decref(k);
    free(known), free(dir);
    return out;
}

static const json_t *market_entry(const json_t *markets, const char *market, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(json_object_get(markets, market), "plugins"), i, e) {
        const char *n = json_string_value(json_object_get(e, "name"));
        if (n && strcmp(n, name) == 0)
            return e;
    }
    return NULL;
}

/* The manifest a plugin is loaded with: plugin.json, and with a marketplace
 * entry marked strict:false the entry itself (its fields win). Owned. */
static json_t *effective_manifest(walk *w, const char *root, const char *id, const char *scope,
                                  const json_t *entry, char **mpath, const char *market_file)
{
    tree t = {root};
    char *pj = join(root, ".claude-plugin/plugin.json");
    json_t *m = read_json(w, &t, pj, "claude", scope, id);
    *mpath = pj;
    bool strict = !entry || !json_is_false(json_object_get(entry, "strict"));
    if (entry && (!strict || !m)) {
        json_t *merged = m ? m : json_object();
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)entry, k, v) {
            if (strcmp(k, "source") != 0 && strcmp(k, "strict") != 0)
                json_object_set(merged, k, v);
        }
        m = merged;
        if (!strict) {
            free(pj);
            *mpath = strdup(market_file);
        }
    }
    return m;
}

static void claude_plugins(walk *w)
{
    const char *cd = w->roots->claude_dir;
    char *cd_real = realpath(cd, NULL);
    tree home = {cd_real};
    char *reg = join(cd, "plugins/installed_plugins.json");
    json_t *doc = cd_real ? read_json(w, &home, reg, "claude", "user", NULL) : NULL;
    json_t *enabled = cd_real ? enabled_plugins(w, &home) : json_object();
    json_t *markets = cd_real ? marketplaces(w, &home) : json_object();
    const json_t *plugins = json_object_get(doc, "plugins");
    if (doc && json_integer_value(json_object_get(doc, "version")) != 2)
        note(w, prov("claude", reg, "user", NULL),
             "%s is not version 2 of the registry; read as far as it matches", reg);
    const char *id;
    json_t *v;
    json_object_foreach((json_t *)plugins, id, v) {
        json_t *list = json_is_array(v) ? json_incref(v) : json_pack("[O]", v);
        /* Claude Code loads one install: the closest scope that applies here */
        const json_t *best = NULL, *other = NULL;
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) {
            const char *scope = json_string_value(json_object_get(e, "scope"));
            const char *pp = json_string_value(json_object_get(e, "projectPath"));
            if (!scope)
                scope = "user";
            bool applies = strcmp(scope, "user") == 0 || !pp || is_project(w, pp);
            if (!applies) {
                other = e;
                continue;
            }
            const char *bs = best ? json_string_value(json_object_get(best, "scope")) : NULL;
            if (!best || rank_of(scope) < rank_of(bs ? bs : "user"))
                best = e;
        }
        char market[256] = "", pname[256];
        const char *at = strrchr(id, '@');
        snprintf(pname, sizeof pname, "%.*s", (int)(at ? (size_t)(at - id) : strlen(id)), id);
        if (at)
            snprintf(market, sizeof market, "%s", at + 1);
        json_t *state = json_object_get(enabled, id);
        if (!best) {
            note(w, prov("claude", reg, json_string_value(json_object_get(other, "scope")), id),
                 "plugin %s is installed for project %s (%s scope), not for this one; not "
                 "imported here",
                 id, json_string_value(json_object_get(other, "projectPath")),
                 json_string_value(json_object_get(other, "scope")));
        } else {
            const char *scope = json_string_value(json_object_get(best, "scope"));
            const char *path = json_string_value(json_object_get(best, "installPath"));
            char *root = path ? realpath(path, NULL) : NULL;
            struct stat st;
            if (!scope)
                scope = "user";
            if (!root || stat(root, &st) != 0 || !S_ISDIR(st.st_mode))
                note(w, prov("claude", reg, scope, id), "plugin %s: install path %s is missing",
                     id, path ? path : "(none)");
            else if (state && json_is_false(json_object_get(state, "value")))
                note(w, prov("claude", reg, scope, id),
                     "plugin %s is disabled (enabledPlugins in %s); not imported", id,
                     json_string_value(json_object_get(state, "file")));
            else {
                const json_t *entry = market_entry(markets, market, pname);
                const char *mfile =
                    json_string_value(json_object_get(json_object_get(markets, market), "_file"));
                char *mpath = NULL;
                json_t *manifest =
                    effective_manifest(w, root, id, scope, entry, &mpath, mfile ? mfile : reg);
                if (!state && json_is_false(json_object_get(manifest, "defaultEnabled")))
                    note(w, prov("claude", reg, scope, id),
                         "plugin %s is off by default (defaultEnabled: false) and no "
                         "enabledPlugins setting turns it on; not imported",
                         id);
                else {
                    size_t before = emitted(w);
                    plugin_dir(w, root, id, scope, "claude", manifest, mpath);
                    if (emitted(w) == before)
                        note(w, prov("claude", reg, scope, id),
                             "plugin %s has nothing cdsh imports (no commands, skills, "
                             "sub-agents or MCP servers)",
                             id);
                }
                json_decref(manifest);
                free(mpath);
            }
            free(root);
        }
        json_decref(list);
    }
    /* enabled but not installed, cached but not installed, offered but not installed */
    json_object_foreach(enabled, id, v) {
        if (!json_object_get(plugins, id) && json_is_true(json_object_get(v, "value")))
            note(w, prov("claude", json_string_value(json_object_get(v, "file")), "user", id),
                 "plugin %s is enabled in %s but not installed; nothing to import", id,
                 json_string_value(json_object_get(v, "file")));
    }
    char *cache = join(cd, "plugins/cache");
    char **ms = NULL;
    if (cd_real && cache && cdsh_fs_list_dir(cache, &ms, NULL, NULL) == 0) {
        for (char **m = ms; *m; m++) {
            char *md = join(cache, *m);
            char **ps = NULL;
            if (md && (*m)[0] != '.' && cdsh_fs_list_dir(md, &ps, NULL, NULL) == 0) {
                for (char **p = ps; *p; p++) {
                    char pid[600];
                    snprintf(pid, sizeof pid, "%s@%s", *p, *m);
                    if ((*p)[0] != '.' && !json_object_get(plugins, pid))
                        note(w, prov("claude", md, "user", pid),
                             "plugin %s is in the plugin cache but not installed (not in "
                             "installed_plugins.json); not imported",
                             pid);
                }
            }
            cdsh_fs_list_free(ps);
            free(md);
        }
    }
    cdsh_fs_list_free(ms);
    free(cache);
    const char *mname;
    json_t *mdoc;
    json_object_foreach(markets, mname, mdoc) {
        size_t i, n = 0;
        json_t *e;
        char list[1024] = "";
        size_t used = 0;
        json_array_foreach(json_object_get(mdoc, "plugins"), i, e) {
            const char *pn = json_string_value(json_object_get(e, "name"));
            char pid[600];
            snprintf(pid, sizeof pid, "%s@%s", pn ? pn : "?", mname);
            if (!pn || json_object_get(plugins, pid))
                continue;
            n++;
            int m = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", pn);
            if (m > 0 && (size_t)m < sizeof list - used)
                used += (size_t)m;
        }
        if (n)
            note(w, prov("claude", json_string_value(json_object_get(mdoc, "_file")), "user", NULL),
                 "marketplace %s offers %zu plugin%s that %s not installed (%s); not imported", mname,
                 n, n == 1 ? "" : "s", n == 1 ? "is" : "are", list);
    }
    json_decref(markets);
    json_decref(enabled);
    json_decref(doc);
    free(reg);
    free(cd_real);
}

/* ---- Codex -------------------------------------------------------------------- */

/* Numeric-aware version order ("1.10.0" after "1.9.2"). */
static int version_cmp(const char *a, const char *b)
{
    while (*a && *b) {
        if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
            char *ea, *eb;
            unsigned long long x = strtoull(a, &ea, 10), y = strtoull(b, &eb, 10);
            if (x != y)
                return x < y ? -1 : 1;
            a = ea, b = eb;
        } else if (*a != *b)
            return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        else
            a++, b++;
    }
    return *a ? 1 : *b ? -1 : 0;
}

static void codex_plugins(walk *w, const char *home, const json_t *config, const char *cfg_path)
{
    const json_t *table = json_object_get(config, "plugins");
    char *cache = join(home, "plugins/cache");
    json_t *seen = json_object();
    char **ms = NULL;
    if (cache && cdsh_fs_list_dir(cache, &ms, NULL, NULL) == 0) {
        for (char **m = ms; *m; m++) {
            char *md = join(cache, *m);
            char **ps = NULL;
            if (md && (*m)[0] != '.' && cdsh_fs_list_dir(md, &ps, NULL, NULL) == 0) {
                for (char **p = ps; *p; p++) {
                    if ((*p)[0] == '.')
                        continue;
                    char id[600];
                    snprintf(id, sizeof id, "%s@%s", *p, *m);
                    json_object_set_new(seen, id, json_true());
                    char *pd = join(md, *p);
                    char **vs = NULL;
                    const char *latest = NULL;
                    if (pd && cdsh_fs_list_dir(pd, &vs, NULL, NULL) == 0)
                        for (char **x = vs; *x; x++)
                            if ((*x)[0] != '.' && (!latest || version_cmp(*x, latest) > 0))
                                latest = *x;
                    const json_t *cfg = json_object_get(table, id);
                    char *vd = latest ? join(pd, latest) : NULL;
                    char *root = vd ? realpath(vd, NULL) : NULL;
                    struct stat st;
                    if (!root || stat(root, &st) != 0 || !S_ISDIR(st.st_mode))
                        note(w, prov("codex", pd, "user", id),
                             "Codex plugin %s has no installed version in the cache", id);
                    else if (!cfg)
                        note(w, prov("codex", vd, "user", id),
                             "Codex plugin %s is in the plugin cache but not in %s [plugins]; "
                             "Codex does not load it; not imported",
                             id, cfg_path);
                    else if (json_is_false(json_object_get(cfg, "enabled")))
                        note(w, prov("codex", cfg_path, "user", id),
                             "Codex plugin %s is disabled (enabled = false in %s); not imported",
                             id, cfg_path);
                    else {
                        tree t = {root};
                        char *cp = join(root, ".codex-plugin/plugin.json");
                        struct stat ms2;
                        if (lstat(cp, &ms2) != 0) { /* a Claude-format plugin installed by Codex */
                            free(cp);
                            cp = join(root, ".claude-plugin/plugin.json");
                        }
                        json_t *manifest = read_json(w, &t, cp, "codex", "user", id);
                        size_t before = emitted(w);
                        plugin_dir(w, root, id, "user", "codex", manifest, cp);
                        if (emitted(w) == before)
                            note(w, prov("codex", vd, "user", id),
                                 "Codex plugin %s has nothing cdsh imports (no skills or MCP "
                                 "servers)",
                                 id);
                        json_decref(manifest);
                        free(cp);
                    }
                    free(root), free(vd), free(pd);
                    cdsh_fs_list_free(vs);
                }
            }
            cdsh_fs_list_free(ps);
            free(md);
        }
    }
    cdsh_fs_list_free(ms);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)table, k, v) {
        if (!json_object_get(seen, k) && !json_is_false(json_object_get(v, "enabled")))
            note(w, prov("codex", cfg_path, "user", k),
                 "Codex plugin %s is enabled in %s but not in the plugin cache; nothing to "
                 "import",
                 k, cfg_path);
    }
    json_decref(seen);
    free(cache);
}

/* ---- ~/.claude.json and the whole walk ----------------------------------------- */

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

/* True when project's .claude folder is the Claude config dir itself (a scan
 * from the home directory): its commands, skills and agents are user scope. */
static bool is_config_dir(const char *project, const char *cd_real)
{
    char *p = join(project, ".claude");
    char *r = p ? realpath(p, NULL) : NULL;
    bool same = r && cd_real && strcmp(r, cd_real) == 0;
    free(r), free(p);
    return same;
}

/* The parent folder's real path (the tree of a single file such as ~/.claude.json). */
static char *parent_real(const char *path)
{
    char *dir = strdup(path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    char *real = dir ? realpath(slash ? dir : ".", NULL) : NULL;
    free(dir);
    return real;
}

int cdsh_mcpimport_discover(const cdsh_mcpimport_roots *roots, json_t **out, cdsh_error *err)
{
    cdsh_mcpimport_discover_stats stats;
    return cdsh_mcpimport_discover_ex(roots, out, &stats, err);
}

int cdsh_mcpimport_discover_ex(const cdsh_mcpimport_roots *roots, json_t **out,
                               cdsh_mcpimport_discover_stats *stats, cdsh_error *err)
{
    return cdsh__mcpimport_discover_streamed(roots, NULL, NULL, out, stats, err);
}

int cdsh__mcpimport_discover_streamed(const cdsh_mcpimport_roots *roots,
                                      cdsh__mcpimport_command_sink sink, void *sink_arg,
                                      json_t **out, cdsh_mcpimport_discover_stats *stats,
                                      cdsh_error *err)
{
    walk w = {json_array(), json_object(), roots, NULL, 0, NULL, sink, sink_arg, json_array(), 0};
    size_t np = 0;
    while (roots->projects && roots->projects[np])
        np++;
    w.projects = calloc(np + 1, sizeof *w.projects);
    if (!w.out || !w.entered || !w.projects) {
        json_decref(w.out), json_decref(w.entered), free(w.projects);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    for (size_t i = 0, j = 0; i < np; i++) {
        char *r = realpath(roots->projects[i], NULL);
        if (r)
            w.projects[j++] = r;
    }
    char *cd_real = roots->claude_dir ? realpath(roots->claude_dir, NULL) : NULL;
    char *cx_real = roots->codex_home ? realpath(roots->codex_home, NULL) : NULL;
    tree home = {cd_real}, codex = {cx_real};
    json_t *cj = NULL;
    char *cj_dir = roots->claude_json ? parent_real(roots->claude_json) : NULL;
    tree cjt = {cj_dir};
    if (roots->claude_json && cj_dir)
        cj = read_json(&w, &cjt, roots->claude_json, "claude", "user", NULL);
    /* servers, in precedence order */
    for (size_t i = 0; i < np; i++) {
        const json_t *proj = json_object_get(json_object_get(cj, "projects"), roots->projects[i]);
        claude_json_scope(&w, json_object_get(proj, "mcpServers"), roots->claude_json, "local");
        char *f = join(roots->projects[i], ".mcp.json");
        char *pr = realpath(roots->projects[i], NULL);
        tree pt = {pr};
        size_t before = json_array_size(w.out);
        if (pr)
            add_mcp_file(&w, &pt, f, "claude", "project", NULL, NULL);
        json_t *added = json_array_get(w.out, json_array_size(w.out) - 1);
        if (json_array_size(w.out) > before &&
            strcmp(json_string_value(json_object_get(added, "kind")), "servers") == 0)
            json_object_set_new(added, "approval",
                                mcpjson_approval(&w, roots->projects[i], &pt, &home, proj,
                                                 roots->claude_json));
        free(pr);
        free(f);
    }
    claude_json_scope(&w, json_object_get(cj, "mcpServers"), roots->claude_json, "user");
    json_decref(cj);
    free(cj_dir);
    if (cd_real)
        claude_plugins(&w);
    json_t *cx = NULL;
    char *cfg = cx_real ? join(roots->codex_home, "config.toml") : NULL;
    char *cfg_real = cfg ? tree_file(&w, &codex, cfg, "codex", "user", NULL) : NULL;
    if (cfg_real) {
        char *text = NULL;
        size_t len = 0;
        cdsh_error e = {0};
        if (safe_read_at(AT_FDCWD, cfg_real, MAX_DOC, &text, &len, &e) != 0 ||
            cdsh_toml_parse(text, len, &cx, &e) != 0)
            note(&w, prov("codex", cfg, "user", NULL), "%s: %s", cfg, e.message);
        else
            add_servers(&w, json_incref(cx), "codex-toml", prov("codex", cfg, "user", NULL), NULL);
        free(text);
    }
    if (cx_real)
        codex_plugins(&w, roots->codex_home, cx, cfg ? cfg : "config.toml");
    json_decref(cx);
    free(cfg_real);
    /* skills: user, then project (Claude's precedence for skills); plugins above */
    where user = {"claude", "user", NULL, NULL, NULL};
    where project = {"claude", "project", NULL, NULL, NULL};
    if (cd_real) {
        char *d = join(roots->claude_dir, "skills");
        component_dir(&w, &home, "skill", d, 0, &user);
        free(d);
    }
    for (size_t i = 0; i < np; i++) {
        char *pr = realpath(roots->projects[i], NULL);
        tree pt = {pr};
        char *d = join(roots->projects[i], ".claude/skills");
        if (pr && !is_config_dir(roots->projects[i], cd_real))
            component_dir(&w, &pt, "skill", d, 0, &project);
        free(d);
        free(pr);
    }
    /* commands, agents and prompts: project, user, plugins (above), Codex */
    for (size_t i = 0; i < np; i++) {
        char *pr = realpath(roots->projects[i], NULL);
        tree pt = {pr};
        char *d = join(roots->projects[i], ".claude/commands");
        char *a = join(roots->projects[i], ".claude/agents");
        if (pr && !is_config_dir(roots->projects[i], cd_real)) {
            component_dir(&w, &pt, "command", d, 8, &project);
            component_dir(&w, &pt, "agent", a, 0, &project);
        }
        free(d), free(a), free(pr);
    }
    if (cd_real) {
        char *d = join(roots->claude_dir, "commands");
        char *a = join(roots->claude_dir, "agents");
        component_dir(&w, &home, "command", d, 8, &user);
        component_dir(&w, &home, "agent", a, 0, &user);
        free(d), free(a);
    }
    if (cx_real) {
        where cu = {"codex", "user", NULL, NULL, NULL};
        char *d = join(roots->codex_home, "prompts");
        component_dir(&w, &codex, "command", d, 0, &cu);
        free(d);
    }
    stats->entries = w.nfiles;
    stats->folders = json_object_size(w.entered);
    for (char **p = w.projects; *p; p++)
        free(*p);
    free(w.projects);
    free(cd_real), free(cx_real), free(cfg);
    json_decref(w.entered);
    json_decref(w.no_refs);
    *out = w.out;
    return 0;
}
