/* cmd_xiangqi_analyze.c — `cdsh xiangqi analyze [--fen F] [--depth N |
 * --movetime MS] [--multipv K] [--json]`: searches a position and prints
 * its best lines with the score (centipawns or mate in N) in ICCS and
 * Chinese notation. */
#include "plugins/xiangqi/cmd_xiangqi_analyze.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/notation.h"
#include "plugins/xiangqi/engine/search.h"

#define DEFAULT_DEPTH 10

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: cdsh xiangqi analyze [--fen FEN] [--depth N | --movetime MS]\n"
            "                            [--multipv K] [--threads N] [--hash MB] [--json]\n"
            "\n"
            "Searches the position (the start position without --fen) and prints the\n"
            "best lines, best first: score from the side to move's view (centipawns,\n"
            "or mate in N moves), then the moves in ICCS (h2e2) and Chinese (炮二平五).\n"
            "\n"
            "Options:\n"
            "  --fen FEN       position in FEN\n"
            "  --depth N       search depth in plies (default %d)\n"
            "  --movetime MS   search for this many milliseconds instead\n"
            "  --multipv K     number of lines, 1..%d (default 1)\n"
            "  --threads N     search threads (default 1)\n"
            "  --hash MB       transposition table size (default 16)\n"
            "  --json          one JSON object: fen, depth, nodes, ms, lines[]\n"
            "  -h, --help      show this help\n",
            DEFAULT_DEPTH, CDSH_XQ_MULTIPV_MAX);
}

static int parse_num(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Writes the line's moves into buf, space separated: ICCS, or Chinese
 * notation (zh = 1; a move the notation cannot name falls back to ICCS). */
static void line_text(const cdsh_xq_pos *root, const cdsh_xq_line *l, int zh, char *buf, size_t cap)
{
    cdsh_xq_pos *p = zh ? malloc(sizeof *p) : NULL;
    size_t n = 0;
    buf[0] = '\0';
    if (zh && !p)
        return;
    if (p)
        *p = *root;
    for (int i = 0; i < l->pv_len; i++) {
        char mv[CDSH_XQ_ZH_MAX > 8 ? CDSH_XQ_ZH_MAX : 8];
        if (!p || cdsh_xq_move_to_chinese(p, l->pv[i], mv, sizeof mv) != 0)
            cdsh_xq_move_to_iccs(l->pv[i], mv);
        int w = snprintf(buf + n, cap - n, "%s%s", n ? " " : "", mv);
        if (w < 0 || (size_t)w >= cap - n)
            break;
        n += (size_t)w;
        if (p) {
            if (cdsh_xq_ply(p) >= CDSH_XQ_MAX_PLY)
                break;
            cdsh_xq_make_move(p, l->pv[i]);
        }
    }
    free(p);
}

int cdsh_cmd_xiangqi_analyze(int argc, char **argv)
{
    static const struct option opts[] = {{"fen", required_argument, NULL, 'f'},
                                         {"depth", required_argument, NULL, 'd'},
                                         {"movetime", required_argument, NULL, 'm'},
                                         {"multipv", required_argument, NULL, 'k'},
                                         {"threads", required_argument, NULL, 't'},
                                         {"hash", required_argument, NULL, 'H'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *fen = CDSH_XQ_START_FEN;
    long depth = 0, movetime = 0, multipv = 1, threads = 1, hash = 16;
    int json = 0, c, rc = 1;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        const char *bad = NULL;
        switch (c) {
        case 'f': fen = optarg; break;
        case 'd': bad = parse_num(optarg, 1, CDSH_XQ_MAX_DEPTH, &depth) ? "--depth" : NULL; break;
        case 'm': bad = parse_num(optarg, 1, 86400000, &movetime) ? "--movetime" : NULL; break;
        case 'k':
            bad = parse_num(optarg, 1, CDSH_XQ_MULTIPV_MAX, &multipv) ? "--multipv" : NULL;
            break;
        case 't':
            bad = parse_num(optarg, 1, CDSH_XQ_MAX_THREADS, &threads) ? "--threads" : NULL;
            break;
        case 'H': bad = parse_num(optarg, 1, 65536, &hash) ? "--hash" : NULL; break;
        case 'j': json = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (bad) {
            fprintf(stderr, "cdsh xiangqi analyze: bad value for %s: '%s'\n", bad, optarg);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "cdsh xiangqi analyze: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (depth && movetime) {
        fprintf(stderr, "cdsh xiangqi analyze: give --depth or --movetime, not both\n");
        return 2;
    }
    if (!depth && !movetime)
        depth = DEFAULT_DEPTH;
    cdsh_error err = {0};
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    cdsh_xq_engine *eng = NULL;
    json_t *out = NULL;
    if (!pos) {
        fprintf(stderr, "cdsh xiangqi analyze: out of memory\n");
        return 1;
    }
    if (cdsh_xq_pos_set_fen(pos, fen, &err) != 0) {
        fprintf(stderr, "cdsh xiangqi analyze: %s: %s\n", err.code, err.message);
        rc = 2;
        goto cleanup;
    }
    cdsh_xq_engine_opts eo = {.hash_mb = (int)hash, .threads = (int)threads};
    if (cdsh_xq_engine_new(&eo, &eng, &err) != 0) {
        fprintf(stderr, "cdsh xiangqi analyze: %s\n", err.message);
        goto cleanup;
    }
    cdsh_xq_limits lim = {.depth = (int)depth, .movetime_ms = movetime, .multipv = (int)multipv};
    cdsh_xq_search_result r;
    if (cdsh_xq_search(eng, pos, &lim, NULL, NULL, &r, &err) != 0) {
        fprintf(stderr, "cdsh xiangqi analyze: %s\n", err.message);
        goto cleanup;
    }
    char fen_out[CDSH_XQ_FEN_MAX];
    cdsh_xq_pos_fen(pos, fen_out);
    static char iccs[CDSH_XQ_PV_MAX * 6 + 1], zh[CDSH_XQ_PV_MAX * (CDSH_XQ_ZH_MAX + 1) + 1];
    if (json) {
        json_t *lines = json_array();
        for (int i = 0; i < r.nlines; i++) {
            line_text(pos, &r.lines[i], 0, iccs, sizeof iccs);
            line_text(pos, &r.lines[i], 1, zh, sizeof zh);
            json_array_append_new(lines, json_pack("{s:i, s:i, s:i, s:s, s:s}", "rank", i + 1,
                                                   "score", r.lines[i].score, "mate",
                                                   r.lines[i].mate, "pv", iccs, "pv_zh", zh));
        }
        out = json_pack("{s:s, s:i, s:I, s:I, s:o}", "fen", fen_out, "depth", r.depth, "nodes",
                        (json_int_t)r.nodes, "ms", (json_int_t)r.time_ms, "lines", lines);
        char *s = json_dumps(out, JSON_COMPACT);
        printf("%s\n", s);
        free(s);
        rc = 0;
        goto cleanup;
    }
    printf("FEN: %s\n", fen_out);
    if (!r.best) {
        printf("No legal move: %s to move has lost (%s).\n",
               cdsh_xq_side_to_move(pos) == CDSH_XQ_RED ? "Red" : "Black",
               cdsh_xq_in_check(pos) ? "checkmate" : "stalemate");
        rc = 0;
        goto cleanup;
    }
    printf("Depth %d, %llu nodes, %lld ms, %llu nodes/s\n", r.depth, (unsigned long long)r.nodes,
           (long long)r.time_ms, (unsigned long long)r.nps);
    for (int i = 0; i < r.nlines; i++) {
        const cdsh_xq_line *l = &r.lines[i];
        char score[32];
        if (l->mate)
            snprintf(score, sizeof score, "mate %d", l->mate);
        else
            snprintf(score, sizeof score, "%+d cp", l->score);
        line_text(pos, l, 0, iccs, sizeof iccs);
        line_text(pos, l, 1, zh, sizeof zh);
        printf("%d. %-10s %s\n   %s\n", i + 1, score, iccs, zh);
    }
    rc = 0;
cleanup:
    json_decref(out);
    cdsh_xq_engine_free(eng);
    cdsh_xq_pos_free(pos);
    return rc;
}
