/* seed.h — reproducible randomness for tests. A randomised test takes its
 * seed from CDSH_TEST_SEED when that is set (decimal or 0x hex), otherwise it
 * draws one (cdsh_test_seed) or uses the default it pins (cdsh_test_seed_or).
 * Every seed is printed when taken ("test seed (what): N (replay with
 * CDSH_TEST_SEED=N)"; CTest shows it with a failing test's output and under
 * -V) and printed again when the process exits with a failure status. Draw
 * numbers from it with cdsh_test_rand (splitmix64). */
#ifndef CDSH_TEST_SEED_H
#define CDSH_TEST_SEED_H

#include <stdint.h>

/* A seed for `what` (a short name for the message). An unparsable
 * CDSH_TEST_SEED ends the process with status 2 and a message. */
uint64_t cdsh_test_seed(const char *what);

/* For tests that pin a seed so the normal run is always the same: `fixed`,
 * unless CDSH_TEST_SEED asks for another one. */
uint64_t cdsh_test_seed_or(const char *what, uint64_t fixed);

/* Next number of the stream whose state is *state (splitmix64). */
uint64_t cdsh_test_rand(uint64_t *state);

/* A number in [0, n) (n > 0) from the stream. */
uint64_t cdsh_test_rand_below(uint64_t *state, uint64_t n);

#endif
