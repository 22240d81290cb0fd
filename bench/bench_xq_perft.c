/* bench_xq_perft.c — xiangqi perft speed (start position depth 5 and 6, the
 * EPD suite of tests/data/xiangqi) side by side with Debian's fairy-stockfish when it is
 * installed, plus a differential perft against it on random legal positions.
 * Environment: CDSH_FAIRY_STOCKFISH (binary path), CDSH_BENCH_FSF_D6=1 (also
 * time fairy-stockfish at start depth 6, ~7 minutes), CDSH_BENCH_QUICK=1
 * (skip depth 6 entirely), CDSH_TEST_DATA_DIR (where xiangqi/xiangqi-perft.epd
 * is; default <source>/tests/data, found from __FILE__ so CMake needs no
 * change). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/perft.h"
#include "plugins/xiangqi/engine/position.h"
#include "xq_client.h"

#define MAX_JOBS 400

typedef struct job {
    char fen[CDSH_XQ_FEN_MAX];
    int depth;
    unsigned long long expect; /* 0 = unknown */
} job;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Runs fairy-stockfish (UCCI mode: xiangqi, ranks 0-9) on the jobs in one
 * process and collects each "Nodes searched" figure; returns seconds of wall
 * time minus the process start-up, or -1. */
static double run_fsf(const char *fsf, const job *jobs, int n, unsigned long long *counts)
{
    char path[] = "/tmp/cdsh_bench_xq_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    FILE *f = fdopen(fd, "w");
    fprintf(f, "ucci\n");
    for (int i = 0; i < n; i++)
        fprintf(f, "position fen %s\ngo perft %d\n", jobs[i].fen, jobs[i].depth);
    fprintf(f, "quit\n");
    fclose(f);
    char cmd[512];
    /* start-up cost, measured alone and subtracted */
    snprintf(cmd, sizeof cmd, "printf 'ucci\\nquit\\n' | %s >/dev/null 2>&1", fsf);
    double t0 = now();
    if (system(cmd) != 0) {
        unlink(path);
        return -1;
    }
    double startup = now() - t0;
    snprintf(cmd, sizeof cmd, "%s < %s 2>/dev/null", fsf, path);
    t0 = now();
    FILE *p = popen(cmd, "r");
    int got = 0;
    char line[512];
    while (p && fgets(line, sizeof line, p))
        if (strncmp(line, "Nodes searched: ", 16) == 0 && got < n)
            counts[got++] = strtoull(line + 16, NULL, 10);
    if (p)
        pclose(p);
    double secs = now() - t0 - startup;
    unlink(path);
    return got == n ? (secs > 0 ? secs : 1e-9) : -1;
}

static double run_ours(cdsh_xq_pos *pos, const job *jobs, int n, unsigned long long *counts)
{
    double t0 = now();
    for (int i = 0; i < n; i++) {
        if (cdsh_xq_pos_set_fen(pos, jobs[i].fen, NULL) != 0)
            return -1;
        counts[i] = cdsh_xq_perft(pos, jobs[i].depth);
    }
    return now() - t0;
}

static unsigned long long sum(const unsigned long long *c, int n)
{
    unsigned long long s = 0;
    for (int i = 0; i < n; i++)
        s += c[i];
    return s;
}

static int check(const char *who, const job *jobs, int n, const unsigned long long *c)
{
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (jobs[i].expect && c[i] != jobs[i].expect) {
            printf("  MISMATCH %s: %s depth %d = %llu, want %llu\n", who, jobs[i].fen,
                   jobs[i].depth, c[i], jobs[i].expect);
            bad++;
        }
    return bad;
}

static int compare(const char *title, cdsh_xq_pos *pos, const char *fsf, const job *jobs, int n)
{
    static unsigned long long ours[MAX_JOBS], theirs[MAX_JOBS];
    double t = run_ours(pos, jobs, n, ours);
    unsigned long long nodes = sum(ours, n);
    int bad = check("cdsh", jobs, n, ours);
    printf("%-28s cdsh           %14llu nodes %8.2f s %8.1f Mnps\n", title, nodes, t,
           (double)nodes / t / 1e6);
    if (!fsf)
        return bad;
    double tf = run_fsf(fsf, jobs, n, theirs);
    if (tf < 0) {
        printf("%-28s fairy-stockfish failed to run\n", title);
        return bad;
    }
    bad += check("fairy-stockfish", jobs, n, theirs);
    printf("%-28s fairy-stockfish%14llu nodes %8.2f s %8.1f Mnps   cdsh is %.2fx\n", title,
           sum(theirs, n), tf, (double)sum(theirs, n) / tf / 1e6, tf / t);
    return bad;
}

static void epd_path(char *out, size_t cap)
{
    const char *env = getenv("CDSH_TEST_DATA_DIR");
    if (env && *env) {
        snprintf(out, cap, "%s/xiangqi/xiangqi-perft.epd", env);
        return;
    }
    /* __FILE__ is <source>/bench/bench_xq_perft.c */
    const char *file = __FILE__;
    const char *slash = strrchr(file, '/');
    int len = slash ? (int)(slash - file) : 0;
    snprintf(out, cap, "%.*s/../tests/data/xiangqi/xiangqi-perft.epd", len, file);
}

static int load_epd(job *jobs, int max, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[1024];
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char *semi = strchr(line, ';');
        if (!semi)
            continue;
        job *j = &jobs[n];
        snprintf(j->fen, sizeof j->fen, "%.*s", (int)(semi - line), line);
        j->depth = 0;
        for (char *p = semi; p; p = strchr(p + 1, ';')) {
            int d;
            unsigned long long c;
            if (sscanf(p, "; D%d %llu", &d, &c) == 2 && d <= 5 && d > j->depth) {
                j->depth = d;
                j->expect = c;
            }
        }
        if (j->depth)
            n++;
    }
    fclose(f);
    return n;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* figures appear as they are measured */
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    const char *fsf = find_fsf();
    int bad = 0;
    printf("xiangqi perft, 1 thread, bulk counting; fairy-stockfish: %s\n",
           fsf ? fsf : "not installed (skipped)");

    job start5 = {CDSH_XQ_START_FEN, 5, 133312995ull};
    bad += compare("start position depth 5", pos, fsf, &start5, 1);

    static job epd[64];
    char path[4096];
    epd_path(path, sizeof path);
    int n = load_epd(epd, 64, path);
    if (n > 0)
        bad += compare("EPD suite (16 positions)", pos, fsf, epd, n);
    else {
        printf("EPD suite: cannot read %s\n", path);
        bad++;
    }

    if (!getenv("CDSH_BENCH_QUICK")) {
        job start6 = {CDSH_XQ_START_FEN, 6, 5392831844ull};
        const char *full = getenv("CDSH_BENCH_FSF_D6");
        bad +=
            compare("start position depth 6", pos, full && *full == '1' ? fsf : NULL, &start6, 1);
        if (fsf && !(full && *full == '1'))
            printf("  (fairy-stockfish at depth 6 takes ~7 min here; set CDSH_BENCH_FSF_D6=1)\n");
    }

    if (fsf) {
        /* differential perft on random legal positions from seeded random games */
        static job rnd[300];
        unsigned seed = 20261129;
        int m = 0;
        cdsh_xq_move_t moves[CDSH_XQ_MAX_MOVES];
        while (m < 300) {
            cdsh_xq_pos_set_start(pos);
            for (int ply = 0; ply < 200 && m < 300; ply++) {
                int k = cdsh_xq_gen_legal(pos, moves);
                if (k == 0)
                    break;
                seed = seed * 1103515245u + 12345u;
                cdsh_xq_make_move(pos, moves[(seed >> 16) % (unsigned)k]);
                if (ply % 7 == 3) {
                    cdsh_xq_pos_fen(pos, rnd[m].fen);
                    rnd[m].depth = 3;
                    m++;
                }
            }
        }
        static unsigned long long ours[300], theirs[300];
        run_ours(pos, rnd, m, ours);
        int diff = 0;
        if (run_fsf(fsf, rnd, m, theirs) < 0) {
            printf("differential perft: fairy-stockfish failed to run\n");
        } else {
            for (int i = 0; i < m; i++)
                if (ours[i] != theirs[i]) {
                    printf("  DIFF %s depth 3: cdsh %llu, fairy-stockfish %llu\n", rnd[i].fen,
                           ours[i], theirs[i]);
                    diff++;
                }
            printf("differential perft depth 3 on %d random positions: %d differences "
                   "(%llu nodes)\n",
                   m, diff, sum(ours, m));
        }
        bad += diff;
    }
    cdsh_xq_pos_free(pos);
    if (bad)
        printf("FAILED: %d mismatches\n", bad);
    return bad ? 1 : 0;
}
