/* seed.h — deterministic randomness for a turn: FNV-1a hashing of seeds and
 * a mulberry32 generator, so the same turn seed gives the same random
 * macros, probability rolls and group picks. Not cryptographic. Pure;
 * a generator is used by one thread at a time. */
#ifndef CDSH_TAVERN_SEED_H
#define CDSH_TAVERN_SEED_H

#include <stddef.h>
#include <stdint.h>

#define CDSH_TAVERN_FNV_BASIS 0x811c9dc5u

/* FNV-1a over data[0..n), continuing from h (start with CDSH_TAVERN_FNV_BASIS). */
uint32_t cdsh_tavern_seed_fnv1a(uint32_t h, const void *data, size_t n);
/* Same for a NUL-terminated string (NULL hashes as ""). */
uint32_t cdsh_tavern_seed_fnv1a_str(uint32_t h, const char *s);

typedef struct cdsh_tavern_rng {
    uint32_t state;
} cdsh_tavern_rng;

void cdsh_tavern_rng_init(cdsh_tavern_rng *rng, uint32_t seed);
/* A uniform double in [0, 1), like Math.random. */
double cdsh_tavern_rng_next(cdsh_tavern_rng *rng);

#endif
