/* home.h — where cdsh keeps its state: $CDSH_HOME if set and non-empty,
 * else $HOME/.cdsh (the password database's home if HOME is unset). Paths
 * are absolute and normalised. Reads the environment on every call: safe to
 * call from several threads as long as nobody calls setenv concurrently. */
#ifndef CDSH_BASE_HOME_H
#define CDSH_BASE_HOME_H

#include "base/err.h"

/* Owned absolute path of the cdsh home (not created). A relative CDSH_HOME
 * is taken relative to the current directory. CDSH_ENOTFOUND (code
 * "NO_HOME") when neither CDSH_HOME nor a home directory is known. */
int cdsh_home_dir(char **out, cdsh_error *err);

/* Like cdsh_home_dir, but creates the directory (and parents) with mode
 * 0700 if missing. An existing directory keeps its permissions; a file in
 * the way is an error naming it. out may be NULL. */
int cdsh_home_ensure(char **out, cdsh_error *err);

/* Owned path of a file below the home: cdsh_home_path_dup("profiles",
 * "x.yaml", NULL) is "<home>/profiles/x.yaml". Parts may contain slashes and
 * "..", but must be relative and together must not climb out of the home;
 * NULL then, or when the home is unknown, or on ENOMEM. Creates nothing. */
char *cdsh_home_path_dup(const char *first, ...) __attribute__((sentinel));

#endif
