/* eval.c — tapered static evaluation over the piece lists: material and
 * piece-square tables, mobility of chariots, horses and cannons, king safety
 * (missing defenders, central/empty cannons, chariots on the general's file,
 * attackers near the palace) and soldier structure. */
#include "plugins/xiangqi/engine/eval.h"

#include <pthread.h>
#include <string.h>

#include "plugins/xiangqi/engine/xq_internal.h"

static const cdsh_xq_eval_params default_params = CDSH_XQ_EVAL_PARAMS_DEFAULT;
static cdsh_xq_eval_tables default_tables; /* built once under pthread_once, then read-only */
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

void cdsh_xq_eval_tables_init(cdsh_xq_eval_tables *t, const cdsh_xq_eval_params *params)
{
    cdsh__xq_tables_init();
    memset(t, 0, sizeof *t);
    t->params = params ? *params : default_params;
    const cdsh_xq_eval_params *p = &t->params;
    for (int side = 0; side < 2; side++)
        for (int type = 1; type <= 7; type++) {
            const int pc = type | side << 3;
            for (int rank = 0; rank < 10; rank++)
                for (int file = 0; file < 9; file++) {
                    const int sq = cdsh_xq_square(file, rank);
                    const int row = side == CDSH_XQ_RED ? rank : 9 - rank;
                    t->psq_mg[pc][sq] = (short)(p->value_mg[type] + p->pst_mg[type][row][file]);
                    t->psq_eg[pc][sq] = (short)(p->value_eg[type] + p->pst_eg[type][row][file]);
                }
        }
    t->phase_max = 2 * 2 * (p->phase_chariot + p->phase_horse + p->phase_cannon);
    if (t->phase_max <= 0)
        t->phase_max = 1;
}

static void build_default(void)
{
    cdsh_xq_eval_tables_init(&default_tables, NULL);
}

const cdsh_xq_eval_tables *cdsh_xq_eval_tables_default(void)
{
    pthread_once(&default_once, build_default);
    return &default_tables;
}

int cdsh_xq_piece_value(int type)
{
    return type >= 1 && type <= 7 ? default_params.value_mg[type] : 0;
}

typedef struct side_terms {
    int mg, eg; /* material + psq */
    int mob_mg, mob_eg;
    int ks; /* king-safety penalty suffered (middlegame) */
    int pawn_mg, pawn_eg;
} side_terms;

static const int orth[4] = {16, -16, 1, -1};

/* The terms of one side, in one walk over its piece lists. Longer than 120
 * lines on purpose: this is the evaluation's hot loop (every node of the
 * search), and the terms share the walk's locals (the enemy general's
 * square, the palace guards, the attack counts) — split per term, each
 * helper would walk the lists again. */
static void eval_side(const cdsh_xq_pos *pos, const cdsh_xq_eval_tables *t, int side,
                      side_terms *st)
{
    const cdsh_xq_eval_params *p = &t->params;
    const uint8_t *b = pos->board;
    const uint8_t *w = pos->where + 16 + 16 * side;
    const uint8_t own = (uint8_t)(XQ_SIDE_BIT(side) | XQ_OFF), opp = (uint8_t)XQ_SIDE_BIT(side ^ 1);
    const uint8_t *po = cdsh__xq_piece_of;
    memset(st, 0, sizeof *st);
    for (int i = 0; i < 16; i++) {
        const int sq = w[i];
        if (!sq)
            continue;
        const int pc = po[b[sq]];
        st->mg += t->psq_mg[pc][sq];
        st->eg += t->psq_eg[pc][sq];
    }
    /* chariots and cannons: points reached by sliding, plus the capture
     * (a cannon captures over exactly one screen) */
    for (int i = 7; i <= 10; i++) {
        const int f = w[i];
        if (!f)
            continue;
        const int cannon = i >= 9;
        int n = 0;
        for (int j = 0; j < 4; j++) {
            int x = f + orth[j];
            while (!b[x]) {
                n++;
                x += orth[j];
            }
            if (cannon && b[x] != XQ_OFF) {
                x += orth[j];
                while (!b[x])
                    x += orth[j];
            }
            n += (b[x] & opp) != 0;
        }
        if (cannon) {
            st->mob_mg += (n - p->mob_base_cannon) * p->mob_cannon_mg;
            st->mob_eg += (n - p->mob_base_cannon) * p->mob_cannon_eg;
        } else {
            st->mob_mg += (n - p->mob_base_chariot) * p->mob_chariot_mg;
            st->mob_eg += (n - p->mob_base_chariot) * p->mob_chariot_eg;
        }
    }
    /* horses */
    static const int tg[4][2] = {{33, 31}, {-31, -33}, {18, -14}, {14, -18}};
    for (int i = 5; i <= 6; i++) {
        const int f = w[i];
        if (!f)
            continue;
        int n = 0;
        for (int j = 0; j < 4; j++) {
            if (b[f + orth[j]])
                continue;
            n += !(b[f + tg[j][0]] & own);
            n += !(b[f + tg[j][1]] & own);
        }
        st->mob_mg += (n - p->mob_base_horse) * p->mob_horse_mg;
        st->mob_eg += (n - p->mob_base_horse) * p->mob_horse_eg;
    }
    /* soldiers */
    const int fwd = side == CDSH_XQ_RED ? 16 : -16;
    const uint8_t own_pawn = (uint8_t)(CDSH_XQ_PAWN | side << 3);
    for (int i = 11; i <= 15; i++) {
        const int f = w[i];
        if (!f)
            continue;
        if (cdsh__xq_sqflags[f] & XQ_F_HALF(side ^ 1)) {
            if (po[b[f + 1]] == own_pawn) {
                st->pawn_mg += p->pawn_connected_mg;
                st->pawn_eg += p->pawn_connected_eg;
            }
        } else if (b[f + fwd] && b[f + fwd] != XQ_OFF) {
            st->pawn_mg -= p->pawn_blocked_mg;
        }
    }
    /* king safety of this side against the opponent */
    const int o = side ^ 1;
    const int units = 2 * pos->count[o][CDSH_XQ_CHARIOT] + pos->count[o][CDSH_XQ_HORSE] +
                      pos->count[o][CDSH_XQ_CANNON];
    int ks = (2 - pos->count[side][CDSH_XQ_ADVISOR]) * p->ks_missing_advisor * units +
             (2 - pos->count[side][CDSH_XQ_ELEPHANT]) * p->ks_missing_elephant * units;
    const int k = w[0];
    const uint8_t eC = (uint8_t)(CDSH_XQ_CANNON | o << 3), eR = (uint8_t)(CDSH_XQ_CHARIOT | o << 3);
    {
        int x = k + fwd, screens = 0;
        while (b[x] != XQ_OFF && screens <= 2) {
            if (b[x]) {
                const uint8_t pc = po[b[x]];
                if (pc == eC) {
                    ks += screens == 0 ? p->ks_empty_cannon : p->ks_central_cannon;
                    break;
                }
                if (pc == eR && screens <= 1) {
                    ks += p->ks_chariot_file;
                    break;
                }
                screens++;
            }
            x += fwd;
        }
    }
    if (units) {
        const int kf = k & 15, kr = k >> 4;
        static const uint8_t near_types[3] = {CDSH_XQ_HORSE, CDSH_XQ_CHARIOT, CDSH_XQ_PAWN};
        for (int n = 0; n < 3; n++) {
            const int first = cdsh__xq_slot_first[near_types[n]],
                      cnt = cdsh__xq_slot_count[near_types[n]];
            for (int i = first; i < first + cnt; i++) {
                const int sq = pos->where[16 + 16 * o + i];
                if (!sq)
                    continue;
                const int df = (sq & 15) - kf, dr = (sq >> 4) - kr;
                if (df >= -2 && df <= 2 && dr >= -2 && dr <= 2)
                    ks += p->ks_near_attacker;
            }
        }
        if ((k & 15) != 3 + 4 && pos->count[o][CDSH_XQ_CHARIOT])
            ks += p->ks_king_exposed;
    }
    st->ks = ks;
}

static int taper(int mg, int eg, int phase, int max)
{
    return (mg * phase + eg * (max - phase)) / max;
}

void cdsh_xq_eval_explain(const cdsh_xq_pos *pos, const cdsh_xq_eval_tables *t,
                          cdsh_xq_eval_terms *out)
{
    if (!t)
        t = cdsh_xq_eval_tables_default();
    const cdsh_xq_eval_params *p = &t->params;
    side_terms s[2];
    eval_side(pos, t, CDSH_XQ_RED, &s[0]);
    eval_side(pos, t, CDSH_XQ_BLACK, &s[1]);
    int phase = 0;
    for (int side = 0; side < 2; side++)
        phase += p->phase_chariot * pos->count[side][CDSH_XQ_CHARIOT] +
                 p->phase_horse * pos->count[side][CDSH_XQ_HORSE] +
                 p->phase_cannon * pos->count[side][CDSH_XQ_CANNON];
    if (phase > t->phase_max)
        phase = t->phase_max;
    const int max = t->phase_max;
    out->phase = phase;
    out->phase_max = max;
    out->material_psq = taper(s[0].mg - s[1].mg, s[0].eg - s[1].eg, phase, max);
    out->mobility = taper(s[0].mob_mg - s[1].mob_mg, s[0].mob_eg - s[1].mob_eg, phase, max);
    out->king_safety = taper(s[1].ks - s[0].ks, 0, phase, max);
    out->soldiers = taper(s[0].pawn_mg - s[1].pawn_mg, s[0].pawn_eg - s[1].pawn_eg, phase, max);
    out->total = out->material_psq + out->mobility + out->king_safety + out->soldiers;
}

int cdsh_xq_eval(const cdsh_xq_pos *pos, const cdsh_xq_eval_tables *t)
{
    if (!t)
        t = cdsh_xq_eval_tables_default();
    cdsh_xq_eval_terms e;
    cdsh_xq_eval_explain(pos, t, &e);
    const int v = pos->side == CDSH_XQ_RED ? e.total : -e.total;
    return v + t->params.tempo;
}
