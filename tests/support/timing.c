/* timing.c — CDSH_TEST_TIMEOUT_SCALE, read once. */
#include "support/timing.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

double cdsh_test_timeout_scale(void)
{
    static double scale;
    if (scale > 0)
        return scale;
    const char *env = getenv("CDSH_TEST_TIMEOUT_SCALE");
    double v = 1;
    if (env && *env) {
        char *end = NULL;
        v = strtod(env, &end);
        if (*end || !(v > 0) || v > 1000) {
            fprintf(stderr, "CDSH_TEST_TIMEOUT_SCALE=%s is not a number in (0, 1000]\n", env);
            exit(2);
        }
    }
    scale = v;
    return scale;
}

int cdsh_test_scale_ms(int ms)
{
    double v = (double)ms * cdsh_test_timeout_scale();
    return v >= (double)INT_MAX ? INT_MAX : (int)v;
}
