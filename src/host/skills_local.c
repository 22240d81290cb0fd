/* skills_local.c — the "skills-local" plugin: the built-in on-disk skill
 * provider "local" (DSH's dsh-skill-local) on the skills registry's
 * providers API (skills.h). It scans, in rank order,
 *   100 project-cdsh    <project>/.cdsh/skills
 *   200 project-agents  <project>/.agents/skills
 *   300 custom          config customSkillDirs
 *   400 user-cdsh       $CDSH_HOME/skills
 *   500 user-agents     config agentsHome + /skills (only when set)
 * for bundles `<root>/<name>/SKILL.md` (the bundle directory is the skill's
 * resource base) and flat files `<root>/<name>.md`. The project is the
 * nearest ancestor of the lookup's cwd (else the process's) holding `.git`,
 * else that directory. Front matter (YAML) gives name and description
 * (required; the name kebab-case), whenToUse (or when_to_use), metadata (an
 * object), disable-model-invocation and user-invocable (YAML booleans or
 * true/false, yes/no, on/off, 1/0, any case). Invocation fails closed: an
 * invalid value, or the camel-case spellings disableModelInvocation /
 * userInvocable, drop the skill with a `log/warning`. Every load rereads the
 * file; a skill renamed or removed since the listing is no longer loadable
 * and invalidates the provider. A root that exists but cannot be read makes
 * the observation incomplete (not cached). The registry caches complete
 * catalogs, so every root and bundle a listing read is watched (inotify, one
 * thread): a skill added, removed or edited there invalidates the provider
 * and the next lookup lists again. */
#include "host/skills.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/home.h"
#include "host/host.h"
#include "host/plugins.h"
#include "host/profile.h"

#define SKILL_FILE_MAX (1024 * 1024) /* a SKILL.md larger than this is skipped */

typedef struct local {
    cdsh_events *bus;
    cdsh_skills *skills;
    char *user_root;   /* $CDSH_HOME/skills or NULL */
    char *agents_root; /* agentsHome/skills or NULL */
    json_t *custom;    /* array of directories */
    int ino;           /* inotify descriptor, -1 without one */
    int stop[2];       /* the watcher thread's stop pipe */
    pthread_t watcher;
    bool watching;
} local;

#define WATCH_MASK                                                                                 \
    (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE_SELF |     \
     IN_MOVE_SELF | IN_ATTRIB)

/* Watches dir (a root or a bundle the listing read); repeated calls for the
 * same directory are one watch. */
static void watch(local *l, const char *dir)
{
    if (l->ino >= 0)
        (void)inotify_add_watch(l->ino, dir, WATCH_MASK | IN_ONLYDIR);
}

/* The watcher thread: any event on a watched directory invalidates the
 * provider (the registry drops its cached catalogs and lists again). */
static void *watch_main(void *arg)
{
    local *l = arg;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        struct pollfd fds[2] = {{.fd = l->ino, .events = POLLIN}, {.fd = l->stop[0], .events = POLLIN}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (fds[1].revents)
            break;
        if (fds[0].revents & POLLIN) {
            ssize_t n = read(l->ino, buf, sizeof buf);
            if (n > 0)
                cdsh_skills_invalidate(l->skills, "local");
        }
    }
    return NULL;
}

static void local_free(void *ud)
{
    local *l = ud;
    if (!l)
        return;
    if (l->watching) {
        ssize_t w = write(l->stop[1], "x", 1);
        (void)w;
        pthread_join(l->watcher, NULL);
    }
    if (l->ino >= 0)
        close(l->ino);
    if (l->stop[0] >= 0)
        close(l->stop[0]);
    if (l->stop[1] >= 0)
        close(l->stop[1]);
    free(l->user_root);
    free(l->agents_root);
    json_decref(l->custom);
    free(l);
}

static void warn(local *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(local *l, const char *fmt, ...)
{
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    json_t *w = json_pack("{s:s, s:s}", "source", "skills-local", "message", msg);
    if (l->bus && w)
        cdsh_events_emit(l->bus, "log/warning", NULL, false, w);
    json_decref(w);
    free(msg);
}

/* ---- front matter ------------------------------------------------------------ */

/* Splits text at a leading `---` line and its closing `---` / `...` line.
 * *meta owned ({} without front matter); *body points into text. A front
 * matter that is not closed, not YAML or not a mapping is a problem (owned
 * message), since name and description live there. */
static json_t *front_matter(const char *text, const char **body, char **problem)
{
    *problem = NULL;
    *body = text;
    if (strncmp(text, "\xef\xbb\xbf", 3) == 0)
        text += 3, *body = text;
    if (strncmp(text, "---\n", 4) != 0 && strncmp(text, "---\r\n", 5) != 0)
        return json_object();
    const char *start = strchr(text, '\n') + 1;
    for (const char *line = start; *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        if (len && line[len - 1] == '\r')
            len--;
        if (len == 3 && (strncmp(line, "---", 3) == 0 || strncmp(line, "...", 3) == 0)) {
            cdsh_error e = {0};
            json_t *meta = cdsh_profile_yaml_parse(start, (size_t)(line - start), &e);
            *body = eol ? eol + 1 : line + strlen(line);
            if (!meta) {
                if (asprintf(problem, "front matter is not valid YAML (%s)", e.message) < 0)
                    *problem = NULL;
                return NULL;
            }
            if (json_is_null(meta)) { /* an empty block */
                json_decref(meta);
                return json_object();
            }
            if (!json_is_object(meta)) {
                json_decref(meta);
                *problem = strdup("front matter is not a mapping");
                return NULL;
            }
            return meta;
        }
        if (!eol)
            break;
        line = eol + 1;
    }
    *problem = strdup("front matter is not closed (no \"---\" line)");
    return NULL;
}

/* An invocation flag: 1 / 0, -1 when absent, -2 when invalid. */
static int flag(const json_t *v)
{
    if (!v)
        return -1;
    if (json_is_boolean(v))
        return json_is_true(v);
    if (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1))
        return (int)json_integer_value(v);
    const char *s = json_string_value(v);
    static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no",
                                                                                "off", "0"};
    for (size_t i = 0; s && i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0)
            return 1;
        if (strcasecmp(s, no[i]) == 0)
            return 0;
    }
    return -2;
}

/* Reads and checks one skill file. Returns an owned definition {name,
 * description, content, whenToUse?, metadata?, invocation, path,
 * resourceBase?} or NULL with an owned *problem (NULL problem: the file is
 * gone). */
static json_t *read_skill(const char *file, const char *bundle_dir, char **problem)
{
    *problem = NULL;
    char *text = NULL;
    cdsh_error e = {0};
    int rc = cdsh_fs_read_file(file, SKILL_FILE_MAX, &text, NULL, &e);
    if (rc == CDSH_ENOTFOUND)
        return NULL;
    if (rc < 0) {
        *problem = strdup(rc == CDSH_ETOOBIG ? "larger than 1 MiB" : "cannot be read");
        return NULL;
    }
    const char *body = NULL;
    json_t *meta = front_matter(text, &body, problem);
    json_t *def = NULL;
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *desc = json_string_value(json_object_get(meta, "description"));
    int dmi = flag(json_object_get(meta, "disable-model-invocation"));
    int ui = flag(json_object_get(meta, "user-invocable"));
    const char *camel = json_object_get(meta, "disableModelInvocation") ? "disableModelInvocation"
                        : json_object_get(meta, "userInvocable")        ? "userInvocable"
                                                                        : NULL;
    int n = 0;
    if (!meta)
        goto cleanup;
    if (!name || !cdsh_skills_name_valid(name))
        n = asprintf(problem, "%s", name ? "its name is not kebab-case (a-z 0-9 and single '-')"
                                         : "front matter has no name");
    else if (!desc || !*desc)
        n = asprintf(problem, "skill \"%s\" has no description", name);
    else if (camel)
        n = asprintf(problem,
                     "skill \"%s\": \"%s\" is not a recognised key; write %s (the skill is "
                     "left out rather than exposed)",
                     name, camel,
                     camel[0] == 'd' ? "disable-model-invocation" : "user-invocable");
    else if (dmi == -2 || ui == -2)
        n = asprintf(problem,
                     "skill \"%s\": %s must be a boolean (true/false, yes/no, on/off, 1/0); the "
                     "skill is left out rather than exposed",
                     name, dmi == -2 ? "disable-model-invocation" : "user-invocable");
    if (n < 0)
        *problem = NULL;
    if (*problem)
        goto cleanup;
    def = json_pack("{s:s, s:s, s:s, s:{s:b, s:b}, s:s}", "name", name, "description", desc,
                    "content", body, "invocation", "modelInvocable", dmi != 1, "userInvocable",
                    ui != 0, "path", file);
    const json_t *wtu = json_object_get(meta, "whenToUse");
    if (!wtu)
        wtu = json_object_get(meta, "when_to_use");
    if (def && json_is_string(wtu) && json_string_length(wtu))
        json_object_set(def, "whenToUse", (json_t *)wtu);
    if (def && json_is_object(json_object_get(meta, "metadata")))
        json_object_set(def, "metadata", json_object_get(meta, "metadata"));
    if (def && bundle_dir)
        json_object_set_new(def, "resourceBase",
                            json_pack("{s:s, s:s}", "kind", "directory", "path", bundle_dir));
cleanup:
    json_decref(meta);
    free(text);
    return def;
}

/* ---- roots ------------------------------------------------------------------- */

typedef struct root {
    char *dir;
    const char *source;
    double rank;
} root;

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The project directory for cwd (owned): the nearest ancestor with .git. */
static char *project_of(const char *cwd)
{
    char here[4096];
    if (!cwd) {
        if (!getcwd(here, sizeof here))
            return NULL;
        cwd = here;
    }
    char *dir = cdsh_fs_path_normalize_dup(cwd);
    for (char *d = dir ? strdup(dir) : NULL; d;) {
        char *git = cdsh_fs_path_join_dup(d, ".git");
        bool found = git && access(git, F_OK) == 0;
        free(git);
        if (found) {
            free(dir);
            return d;
        }
        if (strcmp(d, "/") == 0 || strcmp(d, ".") == 0) {
            free(d);
            break;
        }
        char *up = cdsh_fs_dirname_dup(d);
        free(d);
        d = up;
    }
    return dir;
}

static void add_root(root *rs, size_t *n, char *dir, const char *source, double rank)
{
    if (!dir)
        return;
    for (size_t i = 0; i < *n; i++)
        if (strcmp(rs[i].dir, dir) == 0) { /* the same directory under two names: first wins */
            free(dir);
            return;
        }
    rs[(*n)++] = (root){dir, source, rank};
}

/* ---- the provider ------------------------------------------------------------ */

static int list(void *ud, const cdsh_skill_lookup *opts, json_t **candidates, bool *complete,
                cdsh_error *err)
{
    local *l = ud;
    *complete = true;
    json_t *out = json_array();
    if (!out)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    root rs[8 + 64];
    size_t nr = 0;
    char *project = project_of(opts ? opts->cwd : NULL);
    if (project) {
        add_root(rs, &nr, cdsh_fs_path_join_dup(project, ".cdsh/skills"), "project-cdsh", 100);
        add_root(rs, &nr, cdsh_fs_path_join_dup(project, ".agents/skills"), "project-agents",
                 200);
    }
    free(project);
    size_t i;
    json_t *c;
    json_array_foreach(l->custom, i, c) {
        if (nr < sizeof rs / sizeof *rs - 2)
            add_root(rs, &nr, cdsh_fs_path_normalize_dup(json_string_value(c)), "custom", 300);
    }
    if (l->user_root)
        add_root(rs, &nr, strdup(l->user_root), "user-cdsh", 400);
    if (l->agents_root)
        add_root(rs, &nr, strdup(l->agents_root), "user-agents", 500);

    for (size_t r = 0; r < nr; r++) {
        if (opts && opts->cancel && cdsh_cancel_is_fired(opts->cancel))
            break;
        char **names = NULL;
        cdsh_error e = {0};
        int rc = cdsh_fs_list_dir(rs[r].dir, &names, NULL, &e);
        if (rc == CDSH_ENOTFOUND)
            continue; /* a root that does not exist is an empty one */
        if (rc < 0) {
            warn(l, "skill root %s cannot be read: %s", rs[r].dir, e.message);
            *complete = false;
            continue;
        }
        watch(l, rs[r].dir);
        for (char **nm = names; *nm; nm++) {
            if ((*nm)[0] == '.')
                continue;
            char *p = cdsh_fs_path_join_dup(rs[r].dir, *nm);
            char *file = NULL, *bundle = NULL;
            size_t len = strlen(*nm);
            if (p && is_dir(p)) {
                watch(l, p); /* its SKILL.md may appear, change or go */
                file = cdsh_fs_path_join_dup(p, "SKILL.md");
                bundle = p;
                p = NULL;
            } else if (p && len > 3 && strcmp(*nm + len - 3, ".md") == 0) {
                file = p;
                p = NULL;
            }
            char *problem = NULL;
            json_t *def = file ? read_skill(file, bundle, &problem) : NULL;
            if (problem)
                warn(l, "skill file %s skipped: %s", file, problem);
            if (def) {
                json_object_del(def, "content"); /* a candidate is a summary */
                json_object_set_new(def, "source", json_string(rs[r].source));
                json_object_set_new(def, "provider", json_string("local"));
                json_object_set_new(def, "rank", json_real(rs[r].rank));
                json_object_set_new(def, "locator", json_pack("{s:s, s:s?}", "file", file,
                                                              "bundle", bundle));
                json_array_append_new(out, def);
            }
            free(problem);
            free(file);
            free(bundle);
            free(p);
        }
        cdsh_fs_list_free(names);
    }
    for (size_t r = 0; r < nr; r++)
        free(rs[r].dir);
    if (opts && opts->cancel && cdsh_cancel_is_fired(opts->cancel)) {
        json_decref(out);
        return cdsh_error_set(err, CDSH_ECANCELED, "CANCELLED", "skill lookup cancelled");
    }
    *candidates = out;
    return 0;
}

static int get(void *ud, const json_t *candidate, const cdsh_skill_lookup *opts, json_t **def,
               cdsh_error *err)
{
    (void)opts;
    (void)err;
    local *l = ud;
    const json_t *loc = json_object_get(candidate, "locator");
    const char *file = json_string_value(json_object_get(loc, "file"));
    const char *bundle = json_string_value(json_object_get(loc, "bundle"));
    const char *name = json_string_value(json_object_get(candidate, "name"));
    char *problem = NULL;
    json_t *d = file ? read_skill(file, bundle, &problem) : NULL;
    if (!d || strcmp(json_string_value(json_object_get(d, "name")), name) != 0) {
        /* removed, broken or renamed since the listing: not loadable; the
         * next listing says what is there now */
        if (problem)
            warn(l, "skill file %s cannot be loaded: %s", file, problem);
        free(problem);
        json_decref(d);
        *def = NULL;
        cdsh_skills_invalidate(l->skills, "local");
        return 0;
    }
    json_object_set(d, "source", json_object_get(candidate, "source"));
    json_object_set_new(d, "provider", json_string("local"));
    *def = d;
    return 0;
}

/* ---- the plugin -------------------------------------------------------------- */

static int apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    cdsh_host *host = cdsh_ctx_host(ctx);
    local *l = calloc(1, sizeof *l);
    if (!l)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    l->bus = cdsh_host_events(host);
    l->skills = cdsh_host_skills(host);
    l->stop[0] = l->stop[1] = -1;
    /* Without inotify (or a thread) skills still load; only changes on disk
     * wait for the plugin's reload. */
    l->ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (l->ino >= 0 && pipe2(l->stop, O_CLOEXEC) == 0)
        l->watching = pthread_create(&l->watcher, NULL, watch_main, l) == 0;
    const cdsh_home *home = cdsh_ctx_home(ctx);
    const char *hd = home ? cdsh_home_dir_get(home) : NULL;
    const char *agents = json_string_value(json_object_get(config, "agentsHome"));
    l->user_root = hd ? cdsh_fs_path_join_dup(hd, "skills") : NULL;
    l->agents_root = agents && *agents ? cdsh_fs_path_join_dup(agents, "skills") : NULL;
    l->custom = json_array();
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(config, "customSkillDirs"), i, d) {
        if (json_string_length(d))
            json_array_append(l->custom, d);
    }
    cdsh_skill_provider p = {
        .name = "local", .list = list, .get = get, .ud = l, .free_ud = local_free};
    cdsh_disposer_t disp = {0};
    int rc = cdsh_skills_register_provider(l->skills, &p, &disp, err); /* owns l from here */
    if (rc < 0)
        return rc;
    return cdsh_ctx_adopt(ctx, disp, err);
}

const cdsh_plugin_def cdsh_skills_local_plugin = {
    .name = "skills-local",
    .description = "skills on disk: <project>/.cdsh/skills, <project>/.agents/skills, "
                   "customSkillDirs and $CDSH_HOME/skills (SKILL.md bundles and flat .md files)",
    .config_schema =
        "{\"type\":\"object\",\"properties\":{"
        "\"customSkillDirs\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"default\":[],"
        "\"description\":\"more skill roots, scanned after the project's and before "
        "$CDSH_HOME/skills\"},"
        "\"agentsHome\":{\"type\":\"string\",\"default\":\"\",\"description\":\"a shared agent "
        "config root (e.g. ~/.agents) whose skills/ is scanned last; empty: none\"}}}",
    .enabled_by_default = true,
    .apply = apply,
};
