/* home.h — where cdsh keeps its state, as a handle: the front end resolves
 * it once (cdsh_home_from_env: $CDSH_HOME if set and non-empty, else
 * $HOME/.cdsh, else the password database's home) or names it
 * (cdsh_home_new), the host owns it and hands it to everything that keeps
 * state, so two hosts in one process can have two homes. This file is the
 * only reader of CDSH_HOME. A handle is immutable: thread-safe. */
#ifndef CDSH_BASE_HOME_H
#define CDSH_BASE_HOME_H

#include "base/err.h"

typedef struct cdsh_home cdsh_home;

/* The home the environment names, resolved now (a relative CDSH_HOME is
 * taken relative to the current directory). When no home is known the
 * handle is still made and every use fails with CDSH_ENOTFOUND, code
 * "NO_HOME" (so a front end only fails when it needs state). NULL on ENOMEM. */
cdsh_home *cdsh_home_from_env(void);

/* A home at dir (relative: below the current directory; normalised; not
 * created). CDSH_EINVAL "INVALID_ARGS" for a NULL or empty dir. */
int cdsh_home_new(const char *dir, cdsh_home **out, cdsh_error *err);

/* An owned copy (an unknown home stays unknown). NULL on ENOMEM or NULL home. */
cdsh_home *cdsh_home_dup(const cdsh_home *home);

void cdsh_home_free(cdsh_home *home); /* NULL-safe */

/* The absolute home path (borrowed, valid while the handle lives), or NULL
 * when the home is unknown or home is NULL.
 * keep-public: the home handle's path; the tests' homes and embedders read it. */
const char *cdsh_home_dir_get(const cdsh_home *home);

/* Owned copy of the home path (not created). CDSH_ENOTFOUND "NO_HOME" when
 * the home is unknown (or home is NULL). */
int cdsh_home_dir_dup(const cdsh_home *home, char **out, cdsh_error *err);

/* Like cdsh_home_dir_dup, but creates the directory (and parents) with mode
 * 0700 if missing. An existing directory keeps its permissions; a file in
 * the way is an error naming it. out may be NULL. */
int cdsh_home_ensure(const cdsh_home *home, char **out, cdsh_error *err);

/* Owned path of a file below the home: cdsh_home_path_dup(h, "profiles",
 * "x.yaml", NULL) is "<home>/profiles/x.yaml". Parts may contain slashes and
 * "..", but must be relative and together must not climb out of the home;
 * NULL then, or when the home is unknown, or on ENOMEM. Creates nothing. */
char *cdsh_home_path_dup(const cdsh_home *home, const char *first, ...) __attribute__((sentinel));

#endif
