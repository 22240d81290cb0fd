/* timing.h — budgets that follow the machine. CDSH_TEST_TIMEOUT_SCALE (a
 * positive number, default 1; .ci/run sets 3 under CI) multiplies every
 * budget a test gives a child, a peer or a wait, so a slow or busy machine
 * gets more time and a fast one loses nothing. Budgets are only upper
 * bounds: no test asserts that something took a given time. */
#ifndef CDSH_TEST_TIMING_H
#define CDSH_TEST_TIMING_H

/* The factor (>= 1 unless set lower on purpose); an unparsable value ends the
 * process with status 2 and a message. */
double cdsh_test_timeout_scale(void);

/* ms times the factor, saturated at INT_MAX. */
int cdsh_test_scale_ms(int ms);

#endif
