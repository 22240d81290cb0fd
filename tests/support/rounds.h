/* rounds.h — how many rounds a stress test runs, by tier. A race, a chain of
 * turns or a crash loop runs a short count in the unit tier (`make test-fast`
 * stays under a minute) and the same executable runs again in the slow tier
 * with CDSH_TEST_ROUNDS=N, which multiplies every count. Counts, never time:
 * a test is as strong on a slow machine as on a fast one. */
#ifndef CDSH_TEST_ROUNDS_H
#define CDSH_TEST_ROUNDS_H

/* The factor: a positive integer, default 1; an unparsable value ends the
 * process with status 2 and a message. */
int cdsh_test_rounds_factor(void);

/* n times the factor, saturated at INT_MAX. */
int cdsh_test_rounds(int n);

#endif
