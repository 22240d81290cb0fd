/* xq_rep_gen.c — the cdsh side of the live rules oracle (xq_rules_oracle.mjs):
 * draws repetition positions from a seed and prints, one JSON object a line,
 * the case and cdsh's verdict for it. A case is a position reached by a
 * seeded random game from the start, then a four-ply cycle (m1 m2 m3 m4,
 * each move undone two plies later) played twice, so the position before
 * the cycle stands for the third time after the eighth ply. Cycles are
 * picked by kind, in turn: "check" (one side checks with both its moves),
 * "chase" (no check, one side attacks an enemy piece after each of its
 * moves, as cdsh's chase probe sees it), "mutual" (both sides check
 * throughout — rare in random games — or, without a check, both chase),
 * "mixed" (some check, no one-sided perpetual check) and "idle" (no check,
 * no chase by either).
 * Usage: xq_rep_gen SEED COUNT. Each line: {id, kind, fen (the start of the
 * cycle), moves (eight ICCS moves, ranks 0-9), checks (which of the eight
 * moves give check), chased (per move, the squares the mover's side chases
 * after it and did not before it, by cdsh_xq_chased), verdict (from the side to move after the
 * eighth ply: "win", "loss", "draw" or "ongoing"), reason, fen7 (the FEN
 * after seven plies) and before (the verdict there, which must be
 * "ongoing")}. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/position.h"
#include "plugins/xiangqi/engine/rules.h"

enum { K_CHECK, K_CHASE, K_MUTUAL, K_MIXED, K_IDLE, K_COUNT };
static const char *const kind_name[K_COUNT] = {"check", "chase", "mutual", "mixed", "idle"};

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static cdsh_xq_move_t reverse(cdsh_xq_move_t m)
{
    return cdsh_xq_move_make(cdsh_xq_move_to(m), cdsh_xq_move_from(m));
}

typedef struct cycle {
    cdsh_xq_move_t m[4];
    int check[4];
    int nchased[4];
    cdsh_xq_square_t chased[4][16];
} cycle;

/* Plays m[0..3] on pos (undone before returning) when each is legal and
 * quiet, and fills the features; 0 when the cycle cannot be played. */
static int measure(cdsh_xq_pos *pos, cycle *c)
{
    int made = 0, ok = 1;
    for (int i = 0; i < 4 && ok; i++) {
        if (cdsh_xq_piece_at(pos, cdsh_xq_move_to(c->m[i])) ||
            !cdsh_xq_is_pseudo_legal(pos, c->m[i]) || !cdsh_xq_is_legal(pos, c->m[i])) {
            ok = 0;
            break;
        }
        int mover = cdsh_xq_side_to_move(pos);
        cdsh_xq_square_t before[16], after[16];
        int nbefore = cdsh_xq_chased(pos, mover, before);
        cdsh_xq_square_t from = cdsh_xq_move_from(c->m[i]), to = cdsh_xq_move_to(c->m[i]);
        cdsh_xq_make_move(pos, c->m[i]);
        made++;
        c->check[i] = cdsh_xq_in_check(pos);
        /* the chases made anew: attacked after the move, not before it (a
         * target that moved is followed from its old square) */
        int nafter = cdsh_xq_chased(pos, mover, after);
        c->nchased[i] = 0;
        for (int k = 0; k < nafter; k++) {
            int old = 0;
            for (int j = 0; j < nbefore && !old; j++)
                old = before[j] == after[k] && after[k] != to && before[j] != from;
            if (!old)
                c->chased[i][c->nchased[i]++] = after[k];
        }
        if (!cdsh_xq_has_legal_move(pos))
            ok = 0;
    }
    while (made--)
        cdsh_xq_unmake_move(pos);
    return ok;
}

static int kind_of(const cycle *c)
{
    int a_checks = c->check[0] && c->check[2], b_checks = c->check[1] && c->check[3];
    int any_check = c->check[0] || c->check[1] || c->check[2] || c->check[3];
    int a_chases = c->nchased[0] && c->nchased[2], b_chases = c->nchased[1] && c->nchased[3];
    if (a_checks && b_checks)
        return K_MUTUAL;
    if (a_checks != b_checks)
        return K_CHECK;
    if (any_check)
        return K_MIXED;
    if (a_chases && b_chases)
        return K_MUTUAL;
    if (a_chases || b_chases)
        return K_CHASE;
    if (!c->nchased[0] && !c->nchased[1] && !c->nchased[2] && !c->nchased[3])
        return K_IDLE;
    return -1; /* a chase on one move only: counted nowhere */
}

/* A random position from the start (8-110 random plies, stopping short of
 * a game end); 0 when the game ended too soon. */
static int random_position(cdsh_xq_pos *pos, uint64_t *s)
{
    cdsh_xq_pos_set_start(pos);
    int plies = 8 + (int)(rnd(s) % 103);
    cdsh_xq_move_t moves[CDSH_XQ_MAX_MOVES];
    for (int i = 0; i < plies; i++) {
        int n = cdsh_xq_gen_legal(pos, moves);
        if (!n)
            return 0;
        cdsh_xq_make_move(pos, moves[rnd(s) % (uint64_t)n]);
        if (cdsh_xq_status(pos, NULL).outcome != CDSH_XQ_ONGOING)
            return 0;
    }
    return 1;
}

/* Every playable cycle of the wanted kind in pos; one of them, at random. */
static int find_cycle(cdsh_xq_pos *pos, int want, uint64_t *s, cycle *out)
{
    cdsh_xq_move_t a[CDSH_XQ_MAX_MOVES], b[CDSH_XQ_MAX_MOVES];
    int na = cdsh_xq_gen_legal(pos, a), found = 0;
    for (int i = 0; i < na; i++) {
        if (cdsh_xq_piece_at(pos, cdsh_xq_move_to(a[i])))
            continue;
        cdsh_xq_make_move(pos, a[i]);
        int nb = cdsh_xq_gen_legal(pos, b);
        cdsh_xq_unmake_move(pos);
        for (int j = 0; j < nb; j++) {
            cycle c = {.m = {a[i], b[j], reverse(a[i]), reverse(b[j])}};
            if (!measure(pos, &c) || kind_of(&c) != want)
                continue;
            /* reservoir sampling: each candidate equally likely */
            if (rnd(s) % (uint64_t)++found == 0)
                *out = c;
        }
    }
    return found;
}

static const char *verdict(cdsh_xq_pos *pos, const char **reason)
{
    cdsh_xq_result r = cdsh_xq_status(pos, NULL);
    *reason = cdsh_xq_reason_name(r.reason);
    if (r.outcome == CDSH_XQ_ONGOING)
        return "ongoing";
    if (r.outcome == CDSH_XQ_DRAW)
        return "draw";
    int red_wins = r.outcome == CDSH_XQ_RED_WINS;
    return red_wins == (cdsh_xq_side_to_move(pos) == CDSH_XQ_RED) ? "win" : "loss";
}

static void print_case(int id, int kind, cdsh_xq_pos *pos, const cycle *c)
{
    char fen[CDSH_XQ_FEN_MAX], iccs[6];
    cdsh_xq_pos_fen(pos, fen);
    printf("{\"id\":%d,\"kind\":\"%s\",\"fen\":\"%s\",\"moves\":[", id, kind_name[kind], fen);
    for (int i = 0; i < 8; i++) {
        cdsh_xq_move_to_iccs(c->m[i % 4], iccs);
        printf("%s\"%s\"", i ? "," : "", iccs);
    }
    printf("],\"checks\":[");
    for (int i = 0; i < 8; i++)
        printf("%s%d", i ? "," : "", c->check[i % 4]);
    printf("],\"chased\":[");
    for (int i = 0; i < 8; i++) {
        printf("%s[", i ? "," : "");
        for (int k = 0; k < c->nchased[i % 4]; k++) {
            cdsh_xq_square_t sq = c->chased[i % 4][k];
            printf("%s\"%c%c\"", k ? "," : "", 'a' + cdsh_xq_square_file(sq),
                   '0' + cdsh_xq_square_rank(sq));
        }
        printf("]");
    }
    const char *reason, *before_reason;
    for (int i = 0; i < 7; i++)
        cdsh_xq_make_move(pos, c->m[i % 4]);
    const char *before = verdict(pos, &before_reason);
    char fen7[CDSH_XQ_FEN_MAX];
    cdsh_xq_pos_fen(pos, fen7);
    cdsh_xq_make_move(pos, c->m[3]);
    const char *v = verdict(pos, &reason);
    printf("],\"fen7\":\"%s\",\"verdict\":\"%s\",\"reason\":\"%s\",\"before\":\"%s\"}\n",
           fen7, v, reason, before);
    for (int i = 0; i < 8; i++)
        cdsh_xq_unmake_move(pos);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: xq_rep_gen SEED COUNT\n");
        return 2;
    }
    uint64_t s = strtoull(argv[1], NULL, 0);
    int count = atoi(argv[2]);
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    cdsh_xq_pos *fresh = cdsh_xq_pos_new();
    if (!pos || !fresh)
        return 1;
    for (int id = 0; id < count; id++) {
        int kind = id % K_COUNT, tries = 0;
        cycle c;
        for (;;) {
            if (++tries > 400) {
                fprintf(stderr, "xq_rep_gen: no %s cycle in 400 positions\n", kind_name[kind]);
                return 1;
            }
            if (!random_position(pos, &s))
                continue;
            /* the cycle starts a fresh history from the position's FEN, as
             * the oracle receives it */
            char fen[CDSH_XQ_FEN_MAX];
            cdsh_xq_pos_fen(pos, fen);
            if (cdsh_xq_pos_set_fen(fresh, fen, NULL) != 0)
                continue;
            if (find_cycle(fresh, kind, &s, &c))
                break;
        }
        print_case(id, kind, fresh, &c);
    }
    cdsh_xq_pos_free(fresh);
    cdsh_xq_pos_free(pos);
    return 0;
}
