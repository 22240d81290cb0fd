/* perft.c — perft and divide over the inline generator; the last ply is
 * counted without making the moves (bulk counting). */
#include "plugins/xiangqi/engine/perft.h"

#include "plugins/xiangqi/engine/movegen_inline.h"

static uint64_t perft_rec(cdsh_xq_pos *pos, int depth)
{
    if (depth == 1)
        return (uint64_t)cdsh__xq_count_legal(pos);
    cdsh_xq_move_t buf[CDSH_XQ_MAX_MOVES];
    const int n = cdsh__xq_gen(pos, buf, XQ_GEN_ALL);
    const int k = pos->where[16 + 16 * pos->side], chk = cdsh_xq_in_check(pos);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (!cdsh__xq_legal(pos, k, chk, buf[i]))
            continue;
        cdsh_xq_make_move(pos, buf[i]);
        total += perft_rec(pos, depth - 1);
        cdsh_xq_unmake_move(pos);
    }
    return total;
}

uint64_t cdsh_xq_perft(cdsh_xq_pos *pos, int depth)
{
    if (depth <= 0)
        return 1;
    return perft_rec(pos, depth);
}

uint64_t cdsh_xq_perft_divide(cdsh_xq_pos *pos, int depth, cdsh_xq_divide_fn fn, void *user)
{
    cdsh_xq_move_t buf[CDSH_XQ_MAX_MOVES];
    const int n = cdsh_xq_gen_legal(pos, buf);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        uint64_t c = 1;
        if (depth > 1) {
            cdsh_xq_make_move(pos, buf[i]);
            c = perft_rec(pos, depth - 1);
            cdsh_xq_unmake_move(pos);
        }
        total += c;
        if (fn && fn(buf[i], c, i, n, user))
            break;
    }
    return total;
}
