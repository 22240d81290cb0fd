/* home.c — resolving and creating the cdsh home directory and building
 * paths below it. What lives inside the home is up to the modules using it. */
#include "base/home.h"

#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"

static char *passwd_home_dup(void)
{
    struct passwd pw, *res = NULL;
    char buf[4096];
    if (getpwuid_r(getuid(), &pw, buf, sizeof buf, &res) != 0 || !res || !pw.pw_dir ||
        !pw.pw_dir[0])
        return NULL;
    return strdup(pw.pw_dir);
}

int cdsh_home_dir(char **out, cdsh_error *err)
{
    if (!out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "cdsh_home_dir needs out");
    *out = NULL;
    char *base = NULL, *cwd = NULL, *path = NULL;
    int rc = 0;
    const char *env = getenv("CDSH_HOME");
    if (env && *env) {
        base = strdup(env);
    } else {
        const char *home = getenv("HOME");
        char *user_home = home && *home ? strdup(home) : passwd_home_dup();
        if (!user_home && !(home && *home))
            return cdsh_error_set(err, CDSH_ENOTFOUND, "NO_HOME",
                                  "cannot find the cdsh home: set CDSH_HOME or HOME");
        base = user_home ? cdsh_fs_path_join_dup(user_home, ".cdsh") : NULL;
        free(user_home);
    }
    if (!base)
        goto nomem;
    if (base[0] != '/') {
        cwd = getcwd(NULL, 0);
        if (!cwd) {
            rc = cdsh_error_set(err, CDSH_EIO, "IO_ERROR",
                                "CDSH_HOME %s is relative and the current directory is unknown",
                                base);
            goto cleanup;
        }
    }
    path = cwd ? cdsh_fs_path_join_dup(cwd, base) : cdsh_fs_path_normalize_dup(base);
    if (!path)
        goto nomem;
    *out = path;
    goto cleanup;

nomem:
    rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY",
                        "cannot resolve the cdsh home: out of memory");
cleanup:
    free(base);
    free(cwd);
    return rc;
}

int cdsh_home_ensure(char **out, cdsh_error *err)
{
    if (out)
        *out = NULL;
    char *dir = NULL;
    int rc = cdsh_home_dir(&dir, err);
    if (rc != 0)
        return rc;
    rc = cdsh_fs_mkdir_p(dir, 0700, err);
    if (rc == 0 && out)
        *out = dir;
    else
        free(dir);
    return rc;
}

char *cdsh_home_path_dup(const char *first, ...)
{
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
    char *home = NULL, *path = NULL;
    bool escapes = !rel || (rel[0] == '.' && rel[1] == '.' && (rel[2] == '\0' || rel[2] == '/'));
    if (!escapes && cdsh_home_dir(&home, NULL) == 0)
        path = cdsh_fs_path_join_dup(home, rel);
    free(home);
    free(rel);
    return path;
}
