/* home.c — resolving the cdsh home (the one place that reads CDSH_HOME),
 * creating it and building paths below it. What lives inside the home is up
 * to the modules using it. */
#include "base/home.h"

#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"

struct cdsh_home {
    char *dir;      /* absolute, normalised; NULL: unknown */
    char *problem;  /* why dir is unknown (message for NO_HOME / IO_ERROR) */
    int problem_rc; /* CDSH_ENOTFOUND or CDSH_EIO */
};

static char *passwd_home_dup(void)
{
    struct passwd pw, *res = NULL;
    char buf[4096];
    if (getpwuid_r(getuid(), &pw, buf, sizeof buf, &res) != 0 || !res || !pw.pw_dir ||
        !pw.pw_dir[0])
        return NULL;
    return strdup(pw.pw_dir);
}

/* Absolute, normalised form of base; NULL with *problem set (or ENOMEM). */
static char *absolute_dup(const char *base, char **problem, int *problem_rc)
{
    if (base[0] == '/')
        return cdsh_fs_path_normalize_dup(base);
    char *cwd = getcwd(NULL, 0);
    if (!cwd) {
        *problem_rc = CDSH_EIO;
        if (asprintf(problem, "CDSH_HOME %s is relative and the current directory is unknown",
                     base) < 0)
            *problem = NULL;
        return NULL;
    }
    char *path = cdsh_fs_path_join_dup(cwd, base);
    free(cwd);
    return path;
}

cdsh_home *cdsh_home_from_env(void)
{
    cdsh_home *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    char *base = NULL;
    const char *env = getenv("CDSH_HOME");
    if (env && *env) {
        base = strdup(env);
    } else {
        const char *home = getenv("HOME");
        char *user_home = home && *home ? strdup(home) : passwd_home_dup();
        if (!user_home && !(home && *home)) {
            h->problem_rc = CDSH_ENOTFOUND;
            h->problem = strdup("cannot find the cdsh home: set CDSH_HOME or HOME");
            if (!h->problem)
                goto nomem;
            return h;
        }
        base = user_home ? cdsh_fs_path_join_dup(user_home, ".cdsh") : NULL;
        free(user_home);
    }
    if (!base)
        goto nomem;
    h->dir = absolute_dup(base, &h->problem, &h->problem_rc);
    free(base);
    if (!h->dir && !h->problem)
        goto nomem;
    return h;
nomem:
    cdsh_home_free(h);
    return NULL;
}

int cdsh_home_new(const char *dir, cdsh_home **out, cdsh_error *err)
{
    if (!out || !dir || !*dir)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "cdsh_home_new needs a directory");
    *out = NULL;
    cdsh_home *h = calloc(1, sizeof *h);
    if (!h)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    h->dir = absolute_dup(dir, &h->problem, &h->problem_rc);
    if (!h->dir) {
        int rc = h->problem ? cdsh_error_set(err, h->problem_rc, "IO_ERROR", "%s", h->problem)
                            : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        cdsh_home_free(h);
        return rc;
    }
    *out = h;
    return 0;
}

cdsh_home *cdsh_home_dup(const cdsh_home *home)
{
    if (!home)
        return NULL;
    cdsh_home *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->problem_rc = home->problem_rc;
    h->dir = home->dir ? strdup(home->dir) : NULL;
    h->problem = home->problem ? strdup(home->problem) : NULL;
    if ((home->dir && !h->dir) || (home->problem && !h->problem)) {
        cdsh_home_free(h);
        return NULL;
    }
    return h;
}

void cdsh_home_free(cdsh_home *home)
{
    if (!home)
        return;
    free(home->dir);
    free(home->problem);
    free(home);
}

const char *cdsh_home_dir_get(const cdsh_home *home)
{
    return home ? home->dir : NULL;
}

int cdsh_home_dir_dup(const cdsh_home *home, char **out, cdsh_error *err)
{
    if (!out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "cdsh_home_dir_dup needs out");
    *out = NULL;
    if (!home)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "NO_HOME",
                              "cannot find the cdsh home: none was given");
    if (!home->dir)
        return cdsh_error_set(err, home->problem_rc,
                              home->problem_rc == CDSH_EIO ? "IO_ERROR" : "NO_HOME", "%s",
                              home->problem);
    *out = strdup(home->dir);
    if (!*out)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY",
                              "cannot resolve the cdsh home: out of memory");
    return 0;
}

int cdsh_home_ensure(const cdsh_home *home, char **out, cdsh_error *err)
{
    if (out)
        *out = NULL;
    char *dir = NULL;
    int rc = cdsh_home_dir_dup(home, &dir, err);
    if (rc != 0)
        return rc;
    rc = cdsh_fs_mkdir_p(dir, 0700, err);
    if (rc == 0 && out)
        *out = dir;
    else
        free(dir);
    return rc;
}

char *cdsh_home_path_dup(const cdsh_home *home, const char *first, ...)
{
    if (!cdsh_home_dir_get(home))
        return NULL;
    /* Join the parts on their own first, so ".." may climb back within them
     * ("a/b", "../c") but the whole can be checked for leaving the home. */
    char *rel = strdup(".");
    va_list ap;
    va_start(ap, first);
    for (const char *part = first; part && rel; part = va_arg(ap, const char *)) {
        char *next = part[0] == '/' ? NULL : cdsh_fs_path_join_dup(rel, part);
        free(rel);
        rel = next;
    }
    va_end(ap);
    char *path = NULL;
    bool escapes = !rel || (rel[0] == '.' && rel[1] == '.' && (rel[2] == '\0' || rel[2] == '/'));
    if (!escapes)
        path = cdsh_fs_path_join_dup(home->dir, rel);
    free(rel);
    return path;
}
