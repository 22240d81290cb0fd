/* seed.c — test seeds: read from CDSH_TEST_SEED or drawn (or a test's pinned
 * default), printed at first use and again on a failing exit (glibc's
 * on_exit sees the exit status). */
#include "support/seed.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/random.h"

#define MAX_SEEDS 16

static struct {
    char what[64];
    uint64_t seed;
} g_seeds[MAX_SEEDS];
static int g_count;
static bool g_hooked;

static void print_seed(const char *what, uint64_t seed, const char *when)
{
    printf("test seed%s (%s): %" PRIu64 " (replay with CDSH_TEST_SEED=%" PRIu64 ")\n", when, what,
           seed, seed);
    fflush(stdout);
}

static void on_exit_print(int status, void *arg)
{
    (void)arg;
    if (status == 0)
        return;
    for (int i = 0; i < g_count; i++)
        print_seed(g_seeds[i].what, g_seeds[i].seed, " of this failed run");
}

static bool env_seed(uint64_t *out)
{
    const char *env = getenv("CDSH_TEST_SEED");
    if (!env || !*env)
        return false;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(env, &end, 0);
    if (errno || *end || env[0] == '-') {
        fprintf(stderr, "CDSH_TEST_SEED=%s is not an unsigned number\n", env);
        exit(2);
    }
    *out = v;
    return true;
}

static uint64_t remember(const char *what, uint64_t seed)
{
    if (!g_hooked) {
        g_hooked = true;
        on_exit(on_exit_print, NULL);
    }
    for (int i = 0; i < g_count; i++)
        if (strcmp(g_seeds[i].what, what) == 0 && g_seeds[i].seed == seed)
            return seed;
    if (g_count < MAX_SEEDS) {
        snprintf(g_seeds[g_count].what, sizeof g_seeds[g_count].what, "%s", what);
        g_seeds[g_count++].seed = seed;
    }
    print_seed(what, seed, "");
    return seed;
}

uint64_t cdsh_test_seed(const char *what)
{
    uint64_t seed = 0;
    if (!env_seed(&seed) && cdsh_random_bytes(&seed, sizeof seed) != 0) {
        fprintf(stderr, "test seed: no random source\n");
        exit(2);
    }
    return remember(what, seed);
}

uint64_t cdsh_test_seed_or(const char *what, uint64_t fixed)
{
    uint64_t seed = fixed;
    env_seed(&seed);
    return remember(what, seed);
}

uint64_t cdsh_test_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t cdsh_test_rand_below(uint64_t *state, uint64_t n)
{
    return cdsh_test_rand(state) % n;
}
