/* rounds.c — CDSH_TEST_ROUNDS, read once. */
#include "support/rounds.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

int cdsh_test_rounds_factor(void)
{
    static int factor;
    if (factor > 0)
        return factor;
    const char *env = getenv("CDSH_TEST_ROUNDS");
    long v = 1;
    if (env && *env) {
        char *end = NULL;
        v = strtol(env, &end, 10);
        if (*end || v < 1 || v > 1000) {
            fprintf(stderr, "CDSH_TEST_ROUNDS=%s is not a whole number in [1, 1000]\n", env);
            exit(2);
        }
    }
    factor = (int)v;
    return factor;
}

int cdsh_test_rounds(int n)
{
    long long v = (long long)n * cdsh_test_rounds_factor();
    return v >= INT_MAX ? INT_MAX : (int)v;
}
