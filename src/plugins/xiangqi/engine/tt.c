/* tt.c — lock-free transposition table (xor-keyed entries in 64-byte
 * clusters of four; replace the entry with the lowest depth, counting older
 * generations as shallower). The table is an anonymous mapping on 2 MB
 * transparent huge pages where the kernel allows them: a probe is one cache
 * miss, and with 4 KB pages it was a TLB miss too (perf: the probe's load
 * was a quarter of the search's time). */
#include "plugins/xiangqi/engine/tt.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* data layout: move 16 | score 16 | eval 16 | depth 8 | bound 2 + gen 6 */
typedef struct tt_entry {
    _Atomic uint64_t key; /* key ^ data */
    _Atomic uint64_t data;
} tt_entry;

#define TT_WAYS 4

#define TT_HUGE ((size_t)2 << 20)

struct cdsh_xq_tt {
    void *raw;       /* what mmap returned */
    size_t raw_bytes;
    tt_entry *table; /* raw, aligned to a cache line */
    size_t clusters; /* power of two */
    size_t mb;
    unsigned gen; /* 0..63 */
};

static uint64_t pack(cdsh_xq_move_t move, int score, int eval, int depth, int bound, unsigned gen)
{
    if (depth < 0)
        depth = 0;
    if (depth > 255)
        depth = 255;
    return (uint64_t)move | (uint64_t)(uint16_t)(int16_t)score << 16 |
           (uint64_t)(uint16_t)(int16_t)eval << 32 | (uint64_t)depth << 48 |
           (uint64_t)(bound | gen << 2) << 56;
}

static int alloc_table(cdsh_xq_tt *tt, size_t mb, cdsh_error *err)
{
    if (mb < CDSH_XQ_TT_MIN_MB || mb > CDSH_XQ_TT_MAX_MB)
        return cdsh_error_set(err, CDSH_EINVAL, "TT_SIZE", "hash size %zu MB is outside %d..%d", mb,
                              CDSH_XQ_TT_MIN_MB, CDSH_XQ_TT_MAX_MB);
    size_t want = mb * 1024 * 1024 / (sizeof(tt_entry) * TT_WAYS), n = 1;
    while (n * 2 <= want)
        n *= 2;
    /* an anonymous mapping: fresh pages come zeroed from the kernel and only
     * count as resident once the search touches them; aligned to 2 MB and
     * marked for huge pages, so the probes do not miss the TLB too */
    const size_t bytes = n * TT_WAYS * sizeof(tt_entry);
    const size_t raw_bytes = bytes >= TT_HUGE ? bytes + TT_HUGE : bytes;
    void *raw = mmap(NULL, raw_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "cannot allocate %zu MB of hash", mb);
    uintptr_t start = (uintptr_t)raw;
    if (bytes >= TT_HUGE) {
        start = (start + TT_HUGE - 1) & ~(uintptr_t)(TT_HUGE - 1);
#ifdef MADV_HUGEPAGE
        madvise((void *)start, bytes, MADV_HUGEPAGE); /* a hint: failure is harmless */
#endif
    }
    if (tt->raw)
        munmap(tt->raw, tt->raw_bytes);
    tt->raw = raw;
    tt->raw_bytes = raw_bytes;
    tt->table = (tt_entry *)start;
    tt->clusters = n;
    tt->mb = mb;
    return 0;
}

int cdsh_xq_tt_new(size_t mb, cdsh_xq_tt **out, cdsh_error *err)
{
    *out = NULL;
    cdsh_xq_tt *tt = calloc(1, sizeof *tt);
    if (!tt)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    int rc = alloc_table(tt, mb, err);
    if (rc) {
        free(tt);
        return rc;
    }
    *out = tt;
    return 0;
}

void cdsh_xq_tt_free(cdsh_xq_tt *tt)
{
    if (!tt)
        return;
    if (tt->raw)
        munmap(tt->raw, tt->raw_bytes);
    free(tt);
}

int cdsh_xq_tt_resize(cdsh_xq_tt *tt, size_t mb, cdsh_error *err)
{
    if (mb == tt->mb)
        return 0;
    return alloc_table(tt, mb, err);
}

size_t cdsh_xq_tt_size_mb(const cdsh_xq_tt *tt)
{
    return tt->mb;
}

void cdsh_xq_tt_clear(cdsh_xq_tt *tt)
{
    memset(tt->table, 0, tt->clusters * TT_WAYS * sizeof(tt_entry));
    tt->gen = 0;
}

void cdsh_xq_tt_new_search(cdsh_xq_tt *tt)
{
    tt->gen = (tt->gen + 1) & 63;
}

static tt_entry *cluster(const cdsh_xq_tt *tt, uint64_t key)
{
    return tt->table + (size_t)(key & (tt->clusters - 1)) * TT_WAYS;
}

int cdsh_xq_tt_probe(const cdsh_xq_tt *tt, uint64_t key, cdsh_xq_tt_hit *hit)
{
    tt_entry *c = cluster(tt, key);
    for (int i = 0; i < TT_WAYS; i++) {
        const uint64_t d = atomic_load_explicit(&c[i].data, memory_order_relaxed);
        const uint64_t k = atomic_load_explicit(&c[i].key, memory_order_relaxed);
        if ((k ^ d) == key && d) {
            hit->move = (cdsh_xq_move_t)(d & 0xFFFF);
            hit->score = (int16_t)(uint16_t)(d >> 16);
            hit->eval = (int16_t)(uint16_t)(d >> 32);
            hit->depth = (int)(d >> 48 & 0xFF);
            hit->bound = (int)(d >> 56 & 3);
            return 1;
        }
    }
    return 0;
}

void cdsh_xq_tt_store(cdsh_xq_tt *tt, uint64_t key, cdsh_xq_move_t move, int score, int eval,
                      int depth, int bound)
{
    tt_entry *c = cluster(tt, key);
    int victim = 0, worst = 1 << 30;
    for (int i = 0; i < TT_WAYS; i++) {
        const uint64_t d = atomic_load_explicit(&c[i].data, memory_order_relaxed);
        const uint64_t k = atomic_load_explicit(&c[i].key, memory_order_relaxed);
        if (!d || (k ^ d) == key) {
            victim = i;
            if (d && (k ^ d) == key) {
                /* keep a known move, and a deeper exact result from this search */
                if (!move)
                    move = (cdsh_xq_move_t)(d & 0xFFFF);
                const int od = (int)(d >> 48 & 0xFF);
                const unsigned og = (unsigned)(d >> 58);
                if (og == tt->gen && bound != CDSH_XQ_BOUND_EXACT && od > depth + 3)
                    return;
            }
            break;
        }
        const unsigned g = (unsigned)(d >> 58);
        const int age = (int)((tt->gen - g) & 63);
        const int value = (int)(d >> 48 & 0xFF) - 8 * age;
        if (value < worst) {
            worst = value;
            victim = i;
        }
    }
    const uint64_t d = pack(move, score, eval, depth, bound, tt->gen);
    atomic_store_explicit(&c[victim].key, key ^ d, memory_order_relaxed);
    atomic_store_explicit(&c[victim].data, d, memory_order_relaxed);
}

int cdsh_xq_tt_hashfull(const cdsh_xq_tt *tt)
{
    size_t n = tt->clusters < 250 ? tt->clusters : 250, used = 0;
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < TT_WAYS; j++) {
            const uint64_t d =
                atomic_load_explicit(&tt->table[i * TT_WAYS + j].data, memory_order_relaxed);
            if (d && (unsigned)(d >> 58) == tt->gen)
                used++;
        }
    return (int)(used * 1000 / (n * TT_WAYS));
}
