/* testkit.h — shared helpers for cdsh's cmocka tests: a fresh CDSH_HOME
 * per test, paths to helper peers, the cdsh binary and the vendored test data
 * (tests/data), and running a child command with captured output. Include
 * after cmocka's prerequisites. */
#ifndef CDSH_TESTKIT_H
#define CDSH_TESTKIT_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "support/seed.h"
#include "support/timing.h"

/* Creates a fresh temporary directory, points CDSH_HOME at it (for child
 * processes and cdsh_host_new) and returns its path (owned). */
char *cdsh_test_home_new(void);

/* A home handle (base/home.h) on the directory the last cdsh_test_home_new
 * made: what tests pass to the services that keep state. Valid until the
 * next cdsh_test_home_new or cdsh_test_home_free. */
const struct cdsh_home *cdsh_test_home(void);

/* Removes the directory tree and frees the path. NULL-safe. */
void cdsh_test_home_free(char *path);

/* Owned path of a helper program built from tests/peers/<name>.c. */
char *cdsh_test_peer_path_dup(const char *name);

/* Runs argv (argv[0] is a path; no shell), feeding stdin_text (may be NULL),
 * and captures stdout and stderr (owned, NUL-terminated; pass NULL to drop).
 * Returns the exit status, or 128+signal, or -1 if it could not start.
 * Kills the child after timeout_ms times CDSH_TEST_TIMEOUT_SCALE, saying so
 * on stderr. */
int cdsh_test_run(char *const argv[], const char *stdin_text, char **out, char **err,
                  int timeout_ms);

/* Convenience: runs the built cdsh binary with the given arguments. */
int cdsh_test_run_cdsh(const char *stdin_text, char **out, char **err, const char *arg, ...);

/* Reads a whole file (owned, NUL-terminated); NULL if unreadable. A file
 * under tests/data that cannot be read fails the test instead (naming it). */
char *cdsh_test_read_file(const char *path, size_t *len);

/* Path of tests/data/<rel> (rel a string literal). The file must exist: a
 * missing data file fails the running test with a message naming it, never
 * skips it. */
#define CDSH_TEST_DATA(rel) cdsh_test_data_path(CDSH_TEST_DATA_DIR "/" rel)

/* Returns path after checking it names a readable file; fails the test with
 * "test data missing: <path>" otherwise. */
const char *cdsh_test_data_path(const char *path);

/* Writes a whole file; asserts on failure. */
void cdsh_test_write_file(const char *path, const char *text);

#endif
