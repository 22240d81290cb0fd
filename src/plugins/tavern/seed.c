/* seed.c — FNV-1a and mulberry32 for reproducible per-turn randomness. */
#include "plugins/tavern/seed.h"

#include <string.h>

uint32_t cdsh_tavern_seed_fnv1a(uint32_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h;
}

uint32_t cdsh_tavern_seed_fnv1a_str(uint32_t h, const char *s)
{
    return s ? cdsh_tavern_seed_fnv1a(h, s, strlen(s)) : h;
}

void cdsh_tavern_rng_init(cdsh_tavern_rng *rng, uint32_t seed)
{
    rng->state = seed;
}

double cdsh_tavern_rng_next(cdsh_tavern_rng *rng)
{
    uint32_t t = (rng->state += 0x6D2B79F5u);
    t = (t ^ (t >> 15)) * (t | 1u);
    t ^= t + (t ^ (t >> 7)) * (t | 61u);
    t ^= t >> 14;
    return (double)t / 4294967296.0;
}
