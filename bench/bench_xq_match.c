/* bench_xq_match.c — match runner: cdsh (in-process) vs any UCI/UCCI engine
 * (default fairy-stockfish, UCCI) from opening lines, both colours, fixed
 * time or nodes, adjudicated by cdsh's rules; prints W/L/D, score and Elo
 * with a 95% interval, and cdsh's nodes/s beside it. `--sprt E0,E1` runs a
 * sequential test (stops when H0 or H1 is accepted). No arguments (`make
 * bench`): 10 games at 50 ms. `--help` lists the flags. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugins/xiangqi/engine/bench.h"
#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/rules.h"
#include "plugins/xiangqi/engine/search.h"
#include "xq_client.h"

typedef struct opts {
    int games;
    int64_t movetime;
    uint64_t self_nodes, opp_nodes;
    int depth;
    const char *engine;
    int ucci;
    int ranks1; /* -1 auto */
    int threads, hash;
    int max_plies;
    int adjudicate;
    int quiet;
    int sprt; /* sequential test of elo0 against elo1 */
    double elo0, elo1, alpha, beta;
} opts;

/* ICCS <-> the engine's coordinates (FSF plain UCI numbers ranks 1-10). */
static void to_engine(const opp *o, const char *iccs, char *out)
{
    if (!o->ranks1) {
        strcpy(out, iccs);
        return;
    }
    snprintf(out, 16, "%c%d%c%d", iccs[0], (iccs[1] - '0' + 1) % 100, iccs[2],
             (iccs[3] - '0' + 1) % 100);
}

static int from_engine(const opp *o, const char *txt, char *out)
{
    if (!o->ranks1) {
        snprintf(out, 16, "%.4s", txt);
        return strlen(txt) == 4 ? 0 : -1;
    }
    char f1, f2;
    int r1, r2;
    if (sscanf(txt, "%c%d%c%d", &f1, &r1, &f2, &r2) != 4 || r1 < 1 || r1 > 10 || r2 < 1 || r2 > 10)
        return -1;
    snprintf(out, 16, "%c%u%c%u", f1, (unsigned char)(r1 - 1), f2, (unsigned char)(r2 - 1));
    return 0;
}

typedef struct game_rec {
    cdsh_xq_move_t moves[1024];
    int n;
} game_rec;

/* Asks the opponent for a move; returns 0 and *m, -1 on failure. *score
 * gets its last reported score (side to move's view) or INT32_MIN. */
static int opp_move(opp *o, const opts *op, cdsh_xq_pos *pos, const game_rec *g, int *score)
{
    static char cmd[65536];
    size_t n = (size_t)snprintf(cmd, sizeof cmd, "position startpos");
    if (g->n)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " moves");
    for (int i = 0; i < g->n && n < sizeof cmd - 16; i++) {
        char iccs[6], e[16];
        cdsh_xq_move_to_iccs(g->moves[i], iccs);
        to_engine(o, iccs, e);
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " %s", e);
    }
    opp_send(o, "%s", cmd);
    if (op->opp_nodes)
        opp_send(o, "go nodes %llu", (unsigned long long)op->opp_nodes);
    else if (op->depth)
        opp_send(o, "go depth %d", op->depth);
    else
        opp_send(o, "go movetime %lld", (long long)op->movetime);
    *score = INT32_MIN;
    char line[65536];
    const int timeout = (int)(op->movetime * 20 + 20000);
    while (opp_line(o, line, sizeof line, timeout) == 0) {
        char *p;
        if ((p = strstr(line, " score ")) != NULL && strncmp(line, "info", 4) == 0) {
            p += 7;
            if (strncmp(p, "cp ", 3) == 0)
                *score = atoi(p + 3);
            else if (strncmp(p, "mate ", 5) == 0)
                *score = atoi(p + 5) > 0 ? 20000 : -20000;
            else
                *score = atoi(p); /* UCCI: plain number */
        }
        if (strncmp(line, "bestmove ", 9) == 0 || strncmp(line, "nobestmove", 10) == 0) {
            char tok[16] = "", iccs[16];
            if (sscanf(line, "bestmove %15s", tok) != 1 || from_engine(o, tok, iccs) != 0)
                return -1;
            cdsh_xq_move_t m;
            if (cdsh_xq_parse_move(pos, iccs, &m, NULL) != 0) {
                fprintf(stderr, "illegal move from the opponent: %s\n", tok);
                return -1;
            }
            return (int)m;
        }
    }
    return -1;
}

typedef enum { R_WIN = 0, R_DRAW, R_LOSS } res_t; /* from cdsh's point of view */

/* cdsh's search speed over the match, all moves and the middlegame (plies
 * 20-79 of a game), printed beside the score */
static uint64_t speed_nodes[2];
static int64_t speed_ms[2];

static const char *reason_text(cdsh_xq_reason r)
{
    return cdsh_xq_reason_name(r);
}

static res_t play_game(const opts *op, cdsh_xq_engine *eng, opp *o, const char *opening,
                       int cdsh_side, char *why, size_t whycap, int *plies)
{
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    static game_rec g;
    g.n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", opening);
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        cdsh_xq_move_t m;
        if (cdsh_xq_parse_move(pos, t, &m, NULL) != 0) {
            snprintf(why, whycap, "bad opening move %s", t);
            cdsh_xq_pos_free(pos);
            return R_DRAW;
        }
        cdsh_xq_play(pos, m, NULL);
        g.moves[g.n++] = m;
    }
    cdsh_xq_engine_clear(eng);
    opp_send(o, op->ucci ? "isready" : "ucinewgame");
    res_t res = R_DRAW;
    int streak_win = 0, streak_loss = 0;
    for (;;) {
        cdsh_xq_result st = cdsh_xq_status(pos, NULL);
        if (st.outcome != CDSH_XQ_ONGOING) {
            snprintf(why, whycap, "%s", reason_text(st.reason));
            if (st.outcome == CDSH_XQ_DRAW)
                res = R_DRAW;
            else
                res =
                    (st.outcome == CDSH_XQ_RED_WINS) == (cdsh_side == CDSH_XQ_RED) ? R_WIN : R_LOSS;
            break;
        }
        if (g.n >= op->max_plies || g.n >= 1000) {
            snprintf(why, whycap, "ply cap");
            res = R_DRAW;
            break;
        }
        const int stm = cdsh_xq_side_to_move(pos);
        int score; /* side to move's view */
        cdsh_xq_move_t m;
        if (stm == cdsh_side) {
            cdsh_xq_limits lim = {.overhead_ms = 1};
            if (op->self_nodes)
                lim.nodes = op->self_nodes;
            else if (op->depth)
                lim.depth = op->depth;
            else
                lim.movetime_ms = op->movetime;
            cdsh_xq_search_result r;
            cdsh_xq_search(eng, pos, &lim, NULL, NULL, &r, NULL);
            m = r.best;
            speed_nodes[0] += r.nodes;
            speed_ms[0] += r.time_ms;
            if (g.n >= 20 && g.n < 80) {
                speed_nodes[1] += r.nodes;
                speed_ms[1] += r.time_ms;
            }
            score = r.mate ? (r.mate > 0 ? 20000 : -20000) : r.score;
        } else {
            int v = opp_move(o, op, pos, &g, &score);
            if (v < 0) {
                snprintf(why, whycap, "opponent failed to move");
                res = R_WIN;
                break;
            }
            m = (cdsh_xq_move_t)v;
        }
        /* score adjudication: both engines agree for 4 moves each */
        if (op->adjudicate && score != INT32_MIN) {
            const int ours = stm == cdsh_side ? score : -score;
            static int agree_w[2], agree_l[2];
            if (g.n <= 4)
                agree_w[0] = agree_w[1] = agree_l[0] = agree_l[1] = 0;
            const int who = stm == cdsh_side;
            agree_w[who] = ours >= 1000 ? agree_w[who] + 1 : 0;
            agree_l[who] = ours <= -1000 ? agree_l[who] + 1 : 0;
            streak_win = agree_w[0] >= 4 && agree_w[1] >= 4;
            streak_loss = agree_l[0] >= 4 && agree_l[1] >= 4;
            if (streak_win || streak_loss) {
                snprintf(why, whycap, "adjudicated on agreed score");
                res = streak_win ? R_WIN : R_LOSS;
                break;
            }
        }
        if (cdsh_xq_ply(pos) >= CDSH_XQ_MAX_PLY - 1) {
            snprintf(why, whycap, "history full");
            break;
        }
        cdsh_xq_play(pos, m, NULL);
        g.moves[g.n++] = m;
    }
    *plies = g.n;
    cdsh_xq_pos_free(pos);
    return res;
}

static void elo(int w, int d, int l, double *e, double *lo, double *hi)
{
    const double n = w + d + l;
    const double s = (w + 0.5 * d) / n;
    const double var = (w * (1 - s) * (1 - s) + d * (0.5 - s) * (0.5 - s) + l * s * s) / n;
    const double se = sqrt(var / n);
#define ELO(x) ((x) <= 0 ? -INFINITY : (x) >= 1 ? INFINITY : -400.0 * log10(1.0 / (x)-1.0))
    *e = ELO(s);
    *lo = ELO(s - 1.96 * se);
    *hi = ELO(s + 1.96 * se);
#undef ELO
}

/* Log-likelihood ratio of H1 (elo1) against H0 (elo0) after w/d/l, in the
 * normal approximation of the trinomial score that fishtest and cutechess
 * use: N (s1 - s0) (2 m - s0 - s1) / (2 v), m the mean score per game and v
 * its variance. 0 until the games have a variance. */
static double sprt_llr(int w, int d, int l, double elo0, double elo1)
{
    const double n = w + d + l;
    if (n < 2 || w + l == 0)
        return 0;
    const double m = (w + 0.5 * d) / n;
    const double v = (w * (1 - m) * (1 - m) + d * (0.5 - m) * (0.5 - m) + l * m * m) / n;
    if (v <= 0)
        return 0;
    const double s0 = 1 / (1 + pow(10, -elo0 / 400)), s1 = 1 / (1 + pow(10, -elo1 / 400));
    return n * (s1 - s0) * (2 * m - s0 - s1) / (2 * v);
}

static void usage(void)
{
    printf("Usage: bench_xq_match [options]\n"
           "  --games N          games to play (default 10; openings cycle, colours alternate)\n"
           "  --movetime MS      time per move for both engines (default 50)\n"
           "  --nodes N          nodes per move for both engines\n"
           "  --self-nodes N     nodes per move for cdsh only (load-independent)\n"
           "  --opp-nodes N      nodes per move for the opponent only\n"
           "  --depth N          fixed depth for both engines\n"
           "  --engine CMD       opponent command, arguments split on spaces\n"
           "                     (default: fairy-stockfish; e.g. \"build/cdsh xiangqi uci\")\n"
           "  --protocol P       ucci (default) or uci\n"
           "  --uci-ranks 0|1    UCI ranks numbered 1-10 (default: on for Fairy-Stockfish)\n"
           "  --threads N, --hash MB   cdsh's threads and hash\n"
           "  --max-plies N      draw after N plies (default 400)\n"
           "  --no-adjudicate    play every game to the rules' end\n"
           "  --quiet            no per-game lines\n"
           "  --sprt E0,E1       sequential probability ratio test: play (at most --games,\n"
           "                     default 2000) until H0 (Elo = E0) or H1 (Elo = E1) is\n"
           "                     accepted; checked after each pair of games\n"
           "  --alpha A, --beta B  the test's error rates (default 0.05 each)\n");
}

int main(int argc, char **argv)
{
    opts op = {.games = 10,
               .movetime = 50,
               .ucci = 1,
               .ranks1 = -1,
               .threads = 1,
               .hash = 16,
               .max_plies = 400,
               .adjudicate = 1,
               .alpha = 0.05,
               .beta = 0.05};
    int games_set = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEXT()                                                                                     \
    do {                                                                                           \
        if (!v) {                                                                                  \
            usage();                                                                               \
            return 2;                                                                              \
        }                                                                                          \
        i++;                                                                                       \
    } while (0)
        if (!strcmp(a, "--games")) {
            NEXT();
            op.games = atoi(v);
            games_set = 1;
        } else if (!strcmp(a, "--movetime")) {
            NEXT();
            op.movetime = atoll(v);
        } else if (!strcmp(a, "--nodes")) {
            NEXT();
            op.self_nodes = op.opp_nodes = strtoull(v, NULL, 10);
        } else if (!strcmp(a, "--self-nodes")) {
            NEXT();
            op.self_nodes = strtoull(v, NULL, 10);
        } else if (!strcmp(a, "--opp-nodes")) {
            NEXT();
            op.opp_nodes = strtoull(v, NULL, 10);
        } else if (!strcmp(a, "--depth")) {
            NEXT();
            op.depth = atoi(v);
        } else if (!strcmp(a, "--engine")) {
            NEXT();
            op.engine = v;
        } else if (!strcmp(a, "--protocol")) {
            NEXT();
            op.ucci = strcmp(v, "uci") != 0;
        } else if (!strcmp(a, "--uci-ranks")) {
            NEXT();
            op.ranks1 = atoi(v) == 1;
        } else if (!strcmp(a, "--threads")) {
            NEXT();
            op.threads = atoi(v);
        } else if (!strcmp(a, "--hash")) {
            NEXT();
            op.hash = atoi(v);
        } else if (!strcmp(a, "--max-plies")) {
            NEXT();
            op.max_plies = atoi(v);
        } else if (!strcmp(a, "--sprt")) {
            NEXT();
            if (sscanf(v, "%lf,%lf", &op.elo0, &op.elo1) != 2 || op.elo0 >= op.elo1) {
                usage();
                return 2;
            }
            op.sprt = 1;
        } else if (!strcmp(a, "--alpha")) {
            NEXT();
            op.alpha = atof(v);
        } else if (!strcmp(a, "--beta")) {
            NEXT();
            op.beta = atof(v);
        } else if (!strcmp(a, "--no-adjudicate"))
            op.adjudicate = 0;
        else if (!strcmp(a, "--quiet"))
            op.quiet = 1;
        else {
            usage();
            return !strcmp(a, "--help") ? 0 : 2;
        }
#undef NEXT
    }
    if (op.sprt && !games_set)
        op.games = 2000;
    if (op.games < 1 || op.movetime < 1 || op.alpha <= 0 || op.alpha >= 0.5 || op.beta <= 0 ||
        op.beta >= 0.5) {
        usage();
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!op.engine)
        op.engine = find_fsf();
    if (!op.engine) {
        printf("xiangqi match: no opponent (fairy-stockfish not installed; pass --engine PATH)\n");
        return 0;
    }
    cdsh_xq_engine *eng = NULL;
    cdsh_xq_engine_opts eo = {.hash_mb = op.hash, .threads = op.threads};
    if (cdsh_xq_engine_new(&eo, &eng, NULL) != 0)
        return 1;
    static opp o;
    if (opp_start(&o, op.engine, op.ucci, op.ranks1) != 0) {
        printf("xiangqi match: cannot talk to %s\n", op.engine);
        opp_stop(&o);
        cdsh_xq_engine_free(eng);
        return 1;
    }
    char limit[128];
    if (op.depth)
        snprintf(limit, sizeof limit, "depth %d", op.depth);
    else
        snprintf(limit, sizeof limit, "cdsh %s%llu%s, opponent %s%llu%s", op.self_nodes ? "" : "",
                 op.self_nodes ? (unsigned long long)op.self_nodes
                               : (unsigned long long)op.movetime,
                 op.self_nodes ? " nodes" : " ms", "",
                 op.opp_nodes ? (unsigned long long)op.opp_nodes : (unsigned long long)op.movetime,
                 op.opp_nodes ? " nodes" : " ms");
    printf("xiangqi match: cdsh vs %s (%s), %d games, %s per move\n", o.name,
           op.ucci ? "UCCI" : "UCI", op.games, limit);
    int w = 0, d = 0, l = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int gi = 0; gi < op.games; gi++) {
        const int opening = (gi / 2) % cdsh_xq_openings_count;
        const int side = gi % 2 == 0 ? CDSH_XQ_RED : CDSH_XQ_BLACK;
        char why[64] = "";
        int plies = 0;
        res_t r = play_game(&op, eng, &o, cdsh_xq_openings[opening], side, why, sizeof why, &plies);
        if (r == R_WIN)
            w++;
        else if (r == R_DRAW)
            d++;
        else
            l++;
        if (!op.quiet)
            printf("game %3d/%d  opening %2d  cdsh %-5s  %s  (%s, %d plies)   +%d =%d -%d\n",
                   gi + 1, op.games, opening + 1, side == CDSH_XQ_RED ? "Red" : "Black",
                   r == R_WIN    ? "win "
                   : r == R_DRAW ? "draw"
                                 : "loss",
                   why, plies, w, d, l);
        if (op.sprt && gi % 2 == 1) {
            const double llr = sprt_llr(w, d, l, op.elo0, op.elo1);
            const double lo = log(op.beta / (1 - op.alpha)), hi = log((1 - op.beta) / op.alpha);
            printf("SPRT [%.1f, %.1f]: LLR %.3f (bounds %.3f, %.3f) after %d games\n", op.elo0,
                   op.elo1, llr, lo, hi, gi + 1);
            if (llr <= lo || llr >= hi) {
                printf("SPRT: %s accepted (H%d: Elo %s %.1f)\n", llr >= hi ? "H1" : "H0",
                       llr >= hi, llr >= hi ? ">=" : "<=", llr >= hi ? op.elo1 : op.elo0);
                break;
            }
        }
        if (!o.proc || cdsh_process_wait(o.proc, 0, NULL, NULL, NULL) == 0) {
            opp_stop(&o);
            if (opp_start(&o, op.engine, op.ucci, op.ranks1) != 0)
                break;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const int n = w + d + l;
    if (n > 0) {
        double e, lo, hi;
        elo(w, d, l, &e, &lo, &hi);
        printf("Score of cdsh vs %s: %d - %d - %d  [%.3f] %d games (W-L-D)\n", o.name, w, l, d,
               (w + 0.5 * d) / n, n);
        if (isfinite(lo) && isfinite(hi))
            printf("Elo difference: %.1f +/- %.1f (95%%: %.1f .. %.1f)\n", e, (hi - lo) / 2, lo,
                   hi);
        else
            printf("Elo difference: %.1f (95%% interval unbounded: %.1f .. %.1f)\n", e, lo, hi);
        if (op.sprt) {
            const double llr = sprt_llr(w, d, l, op.elo0, op.elo1);
            if (llr > log(op.beta / (1 - op.alpha)) && llr < log((1 - op.beta) / op.alpha))
                printf("SPRT [%.1f, %.1f]: no decision after %d games (LLR %.3f)\n", op.elo0,
                       op.elo1, n, llr);
        }
        for (int k = 0; k < 2; k++)
            printf("cdsh speed, %s: %llu nodes in %.1f s, %.0f nodes/s\n",
                   k ? "middlegame (plies 20-79)" : "all its moves",
                   (unsigned long long)speed_nodes[k], speed_ms[k] / 1000.0,
                   speed_ms[k] > 0 ? speed_nodes[k] * 1000.0 / (double)speed_ms[k] : 0.0);
        printf("Time: %.1f s\n", (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
    }
    opp_stop(&o);
    cdsh_xq_engine_free(eng);
    return 0;
}
