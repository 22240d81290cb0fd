/* cmd_xiangqi_perft.c — `cdsh xiangqi perft --depth N [--fen F] [--divide]
 * [--json]`: runs the engine's perft per root move, printing progress on
 * stderr when it is a terminal and the run takes more than a second. */
#include "plugins/xiangqi/cmd_xiangqi_perft.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/perft.h"

#define MAX_DEPTH 15

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: cdsh xiangqi perft --depth N [--fen FEN] [--divide] [--json]\n"
            "\n"
            "Counts the legal move paths of length N from a position (the start position\n"
            "unless --fen is given) and prints the count, time and speed.\n"
            "\n"
            "Options:\n"
            "  --depth N    depth in plies, 1 to %d (required)\n"
            "  --fen FEN    position in FEN (letters K A B N R C P, also E and H; side w/r/b)\n"
            "  --divide     also print the count under each legal root move (ICCS, h2e2)\n"
            "  --json       print one JSON object: fen, depth, nodes, seconds, nps[, divide]\n"
            "  -h, --help   show this help\n"
            "\n"
            "Progress goes to stderr when it is a terminal and the run is long.\n",
            MAX_DEPTH);
}

typedef struct run_state {
    int divide, json, progress;
    struct timespec start;
    uint64_t sum;
    json_t *moves;
} run_state;

static double elapsed(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

static int on_root_move(cdsh_xq_move_t m, uint64_t nodes, int index, int total, void *user)
{
    run_state *st = user;
    char txt[6];
    cdsh_xq_move_to_iccs(m, txt);
    st->sum += nodes;
    if (st->divide && st->json)
        json_array_append_new(st->moves,
                              json_pack("{s:s, s:I}", "move", txt, "nodes", (json_int_t)nodes));
    else if (st->divide) {
        if (st->progress)
            fprintf(stderr, "\r\033[K");
        printf("%s: %llu\n", txt, (unsigned long long)nodes);
        fflush(stdout);
    }
    if (st->progress) {
        double t = elapsed(&st->start);
        if (t > 1.0)
            fprintf(stderr, "\r\033[K[%d/%d] %llu nodes, %.1f s", index + 1, total,
                    (unsigned long long)st->sum, t);
    }
    return 0;
}

int cdsh_cmd_xiangqi_perft(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"depth", required_argument, NULL, 'd'}, {"fen", required_argument, NULL, 'f'},
        {"divide", no_argument, NULL, 'v'},      {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
    };
    run_state st = {0};
    const char *fen = CDSH_XQ_START_FEN;
    int depth = 0, c, rc = 2;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || v < 1 || v > MAX_DEPTH) {
                fprintf(stderr,
                        "cdsh xiangqi perft: --depth wants a number from 1 to %d, got '%s'\n",
                        MAX_DEPTH, optarg);
                return 2;
            }
            depth = (int)v;
            break;
        }
        case 'f': fen = optarg; break;
        case 'v': st.divide = 1; break;
        case 'j': st.json = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "cdsh xiangqi perft: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (depth == 0) {
        fprintf(stderr, "cdsh xiangqi perft: --depth N is required\n");
        usage(stderr);
        return 2;
    }
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    if (!pos) {
        fprintf(stderr, "cdsh xiangqi perft: out of memory\n");
        return 1;
    }
    cdsh_error err = {0};
    if (cdsh_xq_pos_set_fen(pos, fen, &err) != 0) {
        fprintf(stderr, "cdsh xiangqi perft: bad FEN (%s): %s\n", err.code, err.message);
        goto cleanup;
    }
    st.progress = isatty(STDERR_FILENO);
    if (st.json && st.divide)
        st.moves = json_array();
    clock_gettime(CLOCK_MONOTONIC, &st.start);
    uint64_t nodes = cdsh_xq_perft_divide(pos, depth, on_root_move, &st);
    double secs = elapsed(&st.start);
    double nps = secs > 0 ? (double)nodes / secs : 0;
    if (st.progress && secs > 1.0)
        fprintf(stderr, "\r\033[K");
    if (st.json) {
        char out_fen[CDSH_XQ_FEN_MAX];
        cdsh_xq_pos_fen(pos, out_fen);
        json_t *o = json_pack("{s:s, s:i, s:I, s:f, s:f}", "fen", out_fen, "depth", depth, "nodes",
                              (json_int_t)nodes, "seconds", secs, "nps", nps);
        if (st.moves)
            json_object_set(o, "divide", st.moves);
        char *text = json_dumps(o, JSON_COMPACT);
        printf("%s\n", text ? text : "{}");
        free(text);
        json_decref(o);
    } else {
        printf("Nodes searched: %llu\n", (unsigned long long)nodes);
        printf("Time: %.3f s (%.1f M nodes/s)\n", secs, nps / 1e6);
    }
    rc = 0;
cleanup:
    json_decref(st.moves);
    cdsh_xq_pos_free(pos);
    return rc;
}
