/* cmd_xiangqi_analyze.c — `cdsh xiangqi analyze [--fen F] [--depth N |
 * --movetime MS] [--multipv K] [--json]`: searches a position and prints
 * its best lines with the score (centipawns or mate in N) in ICCS and
 * Chinese notation. A depth beyond a turn's budget (CDSH_XQ_TURN_DEPTH)
 * runs as a background job of the xiangqi plugin (host/jobs.h): its id and
 * progress go to stderr, its output to stdout. */
#include "plugins/xiangqi/cmd_xiangqi_analyze.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "host/cli.h"
#include "host/host.h"
#include "host/jobs.h"
#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/notation.h"
#include "plugins/xiangqi/engine/search.h"
#include "plugins/xiangqi/engine/tt.h"

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

/* What to analyze. */
typedef struct analyze_req {
    char *fen;
    long depth, movetime, multipv, threads, hash;
    int json;
} analyze_req;

/* Searches and prints the result to o. 0, 1 (failed: said on stderr) or 2
 * (a bad FEN). */
static int analyze(const analyze_req *q, FILE *o, cdsh_cancel *cancel, cdsh_xq_info_fn info,
                   void *user)
{
    int rc = 1;
    cdsh_error err = {0};
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    cdsh_xq_engine *eng = NULL;
    json_t *out = NULL;
    if (!pos) {
        fprintf(stderr, "cdsh xiangqi analyze: out of memory\n");
        return 1;
    }
    if (cdsh_xq_pos_set_fen(pos, q->fen, &err) != 0) {
        fprintf(stderr, "cdsh xiangqi analyze: %s: %s\n", err.code, err.message);
        rc = 2;
        goto cleanup;
    }
    cdsh_xq_engine_opts eo = {.hash_mb = (int)q->hash, .threads = (int)q->threads};
    if (cdsh_xq_engine_new(&eo, &eng, &err) != 0) {
        fprintf(stderr, "cdsh xiangqi analyze: %s\n", err.message);
        goto cleanup;
    }
    cdsh_xq_limits lim = {.depth = (int)q->depth,
                          .movetime_ms = q->movetime,
                          .multipv = (int)q->multipv,
                          .cancel = cancel};
    cdsh_xq_search_result r;
    if (cdsh_xq_search(eng, pos, &lim, info, user, &r, &err) != 0) {
        fprintf(stderr, "cdsh xiangqi analyze: %s\n", err.message);
        goto cleanup;
    }
    char fen_out[CDSH_XQ_FEN_MAX];
    cdsh_xq_pos_fen(pos, fen_out);
    /* not static: analyses may run on several job threads */
    char iccs[CDSH_XQ_PV_MAX * 6 + 1], zh[CDSH_XQ_PV_MAX * (CDSH_XQ_ZH_MAX + 1) + 1];
    if (q->json) {
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
        fprintf(o, "%s\n", s);
        free(s);
        rc = 0;
        goto cleanup;
    }
    fprintf(o, "FEN: %s\n", fen_out);
    if (!r.best) {
        fprintf(o, "No legal move: %s to move has lost (%s).\n",
                cdsh_xq_side_to_move(pos) == CDSH_XQ_RED ? "Red" : "Black",
                cdsh_xq_in_check(pos) ? "checkmate" : "stalemate");
        rc = 0;
        goto cleanup;
    }
    fprintf(o, "Depth %d, %llu nodes, %lld ms, %llu nodes/s\n", r.depth,
            (unsigned long long)r.nodes, (long long)r.time_ms, (unsigned long long)r.nps);
    for (int i = 0; i < r.nlines; i++) {
        const cdsh_xq_line *l = &r.lines[i];
        char score[32];
        if (l->mate)
            snprintf(score, sizeof score, "mate %d", l->mate);
        else
            snprintf(score, sizeof score, "%+d cp", l->score);
        line_text(pos, l, 0, iccs, sizeof iccs);
        line_text(pos, l, 1, zh, sizeof zh);
        fprintf(o, "%d. %-10s %s\n   %s\n", i + 1, score, iccs, zh);
    }
    rc = 0;
cleanup:
    json_decref(out);
    cdsh_xq_engine_free(eng);
    cdsh_xq_pos_free(pos);
    return rc;
}

/* ---- as a background job ---------------------------------------------------- */

typedef struct job_info {
    cdsh_job *job;
    long depth;
} job_info;

static void on_info(const cdsh_xq_info *info, void *user)
{
    job_info *ji = user;
    if (info->multipv != 1 || info->line->bound != CDSH_XQ_BOUND_EXACT)
        return;
    char msg[96];
    if (info->line->mate)
        snprintf(msg, sizeof msg, "depth %d: mate %d, %llu nodes", info->depth, info->line->mate,
                 (unsigned long long)info->nodes);
    else
        snprintf(msg, sizeof msg, "depth %d: %+d cp, %llu nodes", info->depth, info->line->score,
                 (unsigned long long)info->nodes);
    cdsh_job_progress(ji->job, info->depth, (double)ji->depth, msg);
}

static void req_free(void *ud)
{
    analyze_req *q = ud;
    if (q)
        free(q->fen);
    free(q);
}

static int analyze_job_run(void *ud, cdsh_job *job)
{
    analyze_req *q = ud;
    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    if (!o)
        return CDSH_ENOMEM;
    cdsh_job_progress(job, 0, (double)q->depth, "searching");
    job_info ji = {job, q->depth};
    int rc = analyze(q, o, cdsh_job_cancel(job), on_info, &ji);
    fclose(o);
    cdsh_job_write(job, buf, len);
    free(buf);
    if (rc != 0)
        cdsh_job_set_detail(job, "the search failed (exit status %d)", rc);
    return rc == 0 ? 0 : CDSH_EIO;
}

int cdsh__xq_analysis_job_start(cdsh_plugin_ctx *ctx, const char *fen, int depth, int multipv,
                                const char *owner, const char *label, char **id_out,
                                cdsh_error *err)
{
    analyze_req *q = calloc(1, sizeof *q);
    if (!q || !(q->fen = strdup(fen))) {
        req_free(q);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    q->depth = depth;
    q->multipv = multipv < 1 ? 1 : multipv > CDSH_XQ_MULTIPV_MAX ? CDSH_XQ_MULTIPV_MAX : multipv;
    q->threads = 1;
    q->hash = 16;
    cdsh_job_spec spec = {.kind = "xiangqi-analyze",
                          .label = label,
                          .owner = owner,
                          .run = analyze_job_run,
                          .ud = q,
                          .free_ud = req_free};
    return cdsh_ctx_job_start(ctx, &spec, id_out, err);
}

/* Runs the analysis as a job of the xiangqi plugin and waits for it. */
static int analyze_as_job(const analyze_req *req)
{
    cdsh_host *host = NULL;
    cdsh_profile *profile = NULL;
    int rc = 1;
    cdsh_error err = {0};
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    if (!pos || cdsh_xq_pos_set_fen(pos, req->fen, &err) != 0) { /* before any job */
        if (pos)
            fprintf(stderr, "cdsh xiangqi analyze: %s: %s\n", err.code, err.message);
        cdsh_xq_pos_free(pos);
        return pos ? 2 : 1;
    }
    cdsh_xq_pos_free(pos);
    if (cdsh_cli_host_open("xiangqi analyze", NULL, &host, &profile) != 0)
        return 1;
    cdsh_plugin_ctx *ctx = cdsh_host_service(host, CDSH_XQ_JOBS_SERVICE);
    analyze_req *q = calloc(1, sizeof *q);
    if (q) {
        *q = *req;
        q->fen = strdup(req->fen);
    }
    if (!ctx) {
        fprintf(stderr,
                "cdsh xiangqi analyze: depth %ld is beyond a turn's budget (%d) and "
                "runs as a background job, but the xiangqi plugin is not enabled in "
                "this profile\n",
                req->depth, CDSH_XQ_TURN_DEPTH);
        req_free(q);
        goto cleanup;
    }
    if (!q || !q->fen) {
        fprintf(stderr, "cdsh xiangqi analyze: out of memory\n");
        req_free(q);
        goto cleanup;
    }
    char label[160], why[96];
    snprintf(label, sizeof label, "analyze to depth %ld: %.120s", req->depth, req->fen);
    snprintf(why, sizeof why, "depth %ld is beyond a turn's budget (%d plies)", req->depth,
             CDSH_XQ_TURN_DEPTH);
    cdsh_job_spec spec = {.kind = "xiangqi-analyze",
                          .label = label,
                          .run = analyze_job_run,
                          .ud = q,
                          .free_ud = req_free};
    rc = cdsh_jobs_cli_run(ctx, "cdsh xiangqi analyze", &spec, why, stdout, stderr);
cleanup:
    cdsh_host_free(host);
    cdsh_profile_free(profile);
    return rc;
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
    int json = 0, c;
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
    analyze_req q = {.fen = (char *)fen,
                     .depth = depth,
                     .movetime = movetime,
                     .multipv = multipv,
                     .threads = threads,
                     .hash = hash,
                     .json = json};
    if (depth > CDSH_XQ_TURN_DEPTH)
        return analyze_as_job(&q);
    return analyze(&q, stdout, NULL, NULL, NULL);
}
