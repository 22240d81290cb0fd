/* testkit.h — shared helpers for cdsh's cmocka tests: a fresh CDSH_HOME
 * per test, paths to helper peers and the cdsh binary, and running a child
 * command with captured output. Include after cmocka's prerequisites. */
#ifndef CDSH_TESTKIT_H
#define CDSH_TESTKIT_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

/* Creates a fresh temporary directory, points CDSH_HOME at it and returns
 * its path (owned). */
char *cdsh_test_home_new(void);

/* Removes the directory tree and frees the path. NULL-safe. */
void cdsh_test_home_free(char *path);

/* Owned path of a helper program built from tests/peers/<name>.c. */
char *cdsh_test_peer_path_dup(const char *name);

/* Runs argv (argv[0] is a path; no shell), feeding stdin_text (may be NULL),
 * and captures stdout and stderr (owned, NUL-terminated; pass NULL to drop).
 * Returns the exit status, or 128+signal, or -1 if it could not start.
 * Kills the child after timeout_ms. */
int cdsh_test_run(char *const argv[], const char *stdin_text, char **out, char **err,
                  int timeout_ms);

/* Convenience: runs the built cdsh binary with the given arguments. */
int cdsh_test_run_cdsh(const char *stdin_text, char **out, char **err, const char *arg, ...);

/* Reads a whole file (owned, NUL-terminated); NULL if unreadable. */
char *cdsh_test_read_file(const char *path, size_t *len);

/* Writes a whole file; asserts on failure. */
void cdsh_test_write_file(const char *path, const char *text);

#endif
