/* uci.c — UCI (Pikafish dialect) and UCCI (ElephantEye) command loops over
 * one engine and one position; `go` runs the search on a worker thread. */
#include "plugins/xiangqi/engine/uci.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/cancel.h"
#include "plugins/xiangqi/engine/eval.h"
#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/search.h"

#define HISTORY_KEEP 1024 /* plies kept when a long move list outgrows the undo stack */

typedef struct session {
    cdsh_xq_dialect dialect;
    FILE *out;
    pthread_mutex_t out_lock;
    cdsh_xq_engine *eng;
    cdsh_xq_pos *pos;
    int multipv;
    int64_t overhead_ms;
    int usemillisec; /* UCCI: times in ms (else seconds) */
    cdsh_xq_move_t banned[CDSH_XQ_MAX_MOVES];
    int nbanned;
    int pos_ok;         /* 0 after a refused `position`: go is refused until a valid one */
    char pos_why[1100]; /* why the last position was refused */
    /* the running search */
    int searching;
    pthread_t worker;
    cdsh_xq_pos *search_pos;
    cdsh_xq_limits lim;
    int bounded; /* the running search has a depth, node or time limit */
    cdsh_cancel *cancel; /* fired by stop/quit; created before the worker starts */
    cdsh_xq_move_t searchmoves[CDSH_XQ_MAX_MOVES];
} session;

static void say(session *s, const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&s->out_lock);
    va_start(ap, fmt);
    vfprintf(s->out, fmt, ap);
    va_end(ap);
    fputc('\n', s->out);
    fflush(s->out);
    pthread_mutex_unlock(&s->out_lock);
}

static void complain(session *s, const char *fmt, const char *arg)
{
    char msg[2048];
    snprintf(msg, sizeof msg, fmt, arg);
    say(s, "info %s error: %s", s->dialect == CDSH_XQ_DIALECT_UCCI ? "message" : "string", msg);
}

static void on_info(const cdsh_xq_info *in, void *user)
{
    session *s = user;
    char buf[8192];
    size_t n = 0;
    const cdsh_xq_line *l = in->line;
#define ADD(...)                                                                                   \
    do {                                                                                           \
        int w_ = snprintf(buf + n, sizeof buf - n, __VA_ARGS__);                                   \
        if (w_ > 0 && (size_t)w_ < sizeof buf - n)                                                 \
            n += (size_t)w_;                                                                       \
    } while (0)
    if (s->dialect == CDSH_XQ_DIALECT_UCCI) {
        /* UCCI: mate scores as +-(10000 - plies)-style large values */
        int score = l->score;
        if (l->mate)
            score = l->mate > 0 ? 10000 - (2 * l->mate - 1) : -10000 + 2 * -l->mate;
        ADD("info depth %d score %d time %lld nodes %llu pv", in->depth, score,
            (long long)in->time_ms, (unsigned long long)in->nodes);
    } else {
        ADD("info depth %d seldepth %d multipv %d score ", in->depth, in->seldepth, in->multipv);
        if (l->mate)
            ADD("mate %d", l->mate);
        else
            ADD("cp %d", l->score);
        if (l->bound == 2)
            ADD(" lowerbound");
        else if (l->bound == 1)
            ADD(" upperbound");
        ADD(" nodes %llu nps %llu hashfull %d tbhits 0 time %lld pv", (unsigned long long)in->nodes,
            (unsigned long long)in->nps, in->hashfull, (long long)in->time_ms);
    }
    for (int i = 0; i < l->pv_len; i++) {
        char mv[6];
        cdsh_xq_move_to_iccs(l->pv[i], mv);
        ADD(" %s", mv);
    }
#undef ADD
    say(s, "%s", buf);
}

static void *worker_main(void *arg)
{
    session *s = arg;
    cdsh_xq_search_result r;
    cdsh_error err = {0};
    if (cdsh_xq_search(s->eng, s->search_pos, &s->lim, on_info, s, &r, &err) != 0) {
        complain(s, "%s", err.message);
        r.best = CDSH_XQ_MOVE_NONE;
    }
    char b[6], p[6];
    if (!r.best) {
        say(s, s->dialect == CDSH_XQ_DIALECT_UCCI ? "nobestmove" : "bestmove (none)");
        return NULL;
    }
    cdsh_xq_move_to_iccs(r.best, b);
    if (r.ponder) {
        cdsh_xq_move_to_iccs(r.ponder, p);
        say(s, "bestmove %s ponder %s", b, p);
    } else {
        say(s, "bestmove %s", b);
    }
    return NULL;
}

static void wait_search(session *s, int stop)
{
    if (!s->searching)
        return;
    if (stop) {
        cdsh_cancel_fire(s->cancel, "stop");
        cdsh_xq_engine_stop(s->eng);
    }
    pthread_join(s->worker, NULL);
    cdsh_cancel_free(s->cancel);
    s->cancel = NULL;
    s->searching = 0;
}

static void refuse_position(session *s, const char *why)
{
    snprintf(s->pos_why, sizeof s->pos_why, "%s", why);
    s->pos_ok = 0;
    s->nbanned = 0;
    complain(s, "%s", why);
}

/* position {startpos | fen F...} [moves m...], of any length (the undo
 * stack keeps the last HISTORY_KEEP plies when a list outgrows it). A
 * refused position leaves none: go is refused until a valid one arrives. */
static void cmd_position(session *s, char **tok, int nt)
{
    int i = 1;
    char fen[1024] = "", why[1100];
    if (i < nt && strcmp(tok[i], "startpos") == 0) {
        snprintf(fen, sizeof fen, "%s", CDSH_XQ_START_FEN);
        i++;
    } else if (i < nt && strcmp(tok[i], "fen") == 0) {
        i++;
        size_t n = 0;
        for (; i < nt && strcmp(tok[i], "moves") != 0; i++) {
            int w = snprintf(fen + n, sizeof fen - n, "%s%s", n ? " " : "", tok[i]);
            if (w < 0 || (size_t)w >= sizeof fen - n) {
                snprintf(why, sizeof why, "bad FEN: longer than %zu bytes", sizeof fen - 1);
                refuse_position(s, why);
                return;
            }
            n += (size_t)w;
        }
    } else {
        refuse_position(s, "position needs startpos or fen");
        return;
    }
    cdsh_error err = {0};
    if (cdsh_xq_pos_set_fen(s->pos, fen, &err) != 0) {
        snprintf(why, sizeof why, "bad FEN: %s", err.message);
        refuse_position(s, why);
        return;
    }
    if (i < nt && strcmp(tok[i], "moves") != 0) {
        snprintf(why, sizeof why, "position: expected moves, got %.64s", tok[i]);
        refuse_position(s, why);
        return;
    }
    s->nbanned = 0;
    for (i++; i < nt; i++) {
        cdsh_xq_move_t m;
        if (cdsh_xq_parse_move(s->pos, tok[i], &m, &err) != 0) {
            snprintf(why, sizeof why, "illegal move %.64s", tok[i]);
            refuse_position(s, why);
            return;
        }
        if (cdsh_xq_ply(s->pos) >= CDSH_XQ_MAX_PLY - 1)
            cdsh_xq_pos_trim_history(s->pos, HISTORY_KEEP);
        cdsh_xq_play(s->pos, m, NULL);
    }
    s->pos_ok = 1;
}

/* The whole word as an integer in [lo, hi]; -1 when it is not one. */
static int parse_ll(const char *v, long long lo, long long hi, long long *out)
{
    if (!v || !*v)
        return -1;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (*end || errno == ERANGE || x < lo || x > hi)
        return -1;
    *out = x;
    return 0;
}

/* Reads the value after the parameter tok[*i] into *out; on a missing or
 * bad value complains and returns -1. */
static int go_value(session *s, char **tok, int nt, int *i, long long lo, long long hi,
                    long long *out)
{
    const int has = *i + 1 < nt;
    if (has && parse_ll(tok[*i + 1], lo, hi, out) == 0) {
        (*i)++;
        return 0;
    }
    char msg[256];
    snprintf(msg, sizeof msg, "go refused: %s needs a whole number from %lld to %lld, got %s%.32s%s",
             tok[*i], lo, hi, has ? "'" : "", has ? tok[*i + 1] : "nothing", has ? "'" : "");
    complain(s, "%s", msg);
    return -1;
}

#define TIME_MAX (INT64_MAX / 4000) /* ms (UCCI: s), so units and planning cannot overflow */

/* Parses go's parameters into s->lim. Malformed parameters — a missing or
 * non-numeric value, a zero or negative limit, no time on the clock of the
 * side to move, an illegal searchmove, an unknown word — get an error line
 * and -1: nothing is searched. */
static int parse_go(session *s, char **tok, int nt, int *nsm_out)
{
    cdsh_xq_limits *l = &s->lim;
    memset(l, 0, sizeof *l);
    l->multipv = s->multipv;
    l->overhead_ms = s->overhead_ms;
    const int side = cdsh_xq_side_to_move(s->pos);
    const int unit = s->dialect == CDSH_XQ_DIALECT_UCCI && !s->usemillisec ? 1000 : 1;
    int nsm = 0, clock_given = 0;
    long long v;
    for (int i = 1; i < nt; i++) {
        const char *t = tok[i];
        if (strcmp(t, "depth") == 0 && i + 1 < nt && strcmp(tok[i + 1], "infinite") == 0) {
            l->infinite = 1;
            i++;
        } else if (strcmp(t, "depth") == 0) {
            if (go_value(s, tok, nt, &i, 1, CDSH_XQ_MAX_DEPTH, &v))
                return -1;
            l->depth = (int)v;
        } else if (strcmp(t, "nodes") == 0) {
            if (go_value(s, tok, nt, &i, 1, LLONG_MAX, &v))
                return -1;
            l->nodes = (uint64_t)v;
        } else if (strcmp(t, "movetime") == 0) {
            if (go_value(s, tok, nt, &i, 1, TIME_MAX, &v))
                return -1;
            l->movetime_ms = v * unit;
        } else if (strcmp(t, "wtime") == 0 || strcmp(t, "btime") == 0) {
            const int who = t[0] == 'w' ? CDSH_XQ_RED : CDSH_XQ_BLACK;
            if (go_value(s, tok, nt, &i, 0, TIME_MAX, &v))
                return -1;
            l->time_ms[who] = v;
            clock_given |= who == side;
        } else if (strcmp(t, "winc") == 0 || strcmp(t, "binc") == 0) {
            if (go_value(s, tok, nt, &i, 0, TIME_MAX, &v))
                return -1;
            l->inc_ms[t[0] == 'w' ? CDSH_XQ_RED : CDSH_XQ_BLACK] = v;
        } else if (strcmp(t, "movestogo") == 0 || strcmp(t, "oppmovestogo") == 0) {
            if (go_value(s, tok, nt, &i, 1, 100000, &v))
                return -1;
            if (t[0] == 'm')
                l->movestogo = (int)v;
        } else if (strcmp(t, "time") == 0 || strcmp(t, "opptime") == 0) {
            const int who = t[0] == 't' ? side : side ^ 1;
            if (go_value(s, tok, nt, &i, 0, TIME_MAX, &v))
                return -1;
            l->time_ms[who] = v * unit;
            clock_given |= who == side;
        } else if (strcmp(t, "increment") == 0 || strcmp(t, "oppincrement") == 0) {
            if (go_value(s, tok, nt, &i, 0, TIME_MAX, &v))
                return -1;
            l->inc_ms[t[0] == 'i' ? side : side ^ 1] = v * unit;
        } else if (strcmp(t, "infinite") == 0 || strcmp(t, "ponder") == 0) {
            l->infinite = 1;
        } else if (strcmp(t, "draw") == 0) {
            /* UCCI: the opponent offers a draw; the engine plays on */
        } else if (strcmp(t, "mate") == 0) {
            if (go_value(s, tok, nt, &i, 1, (CDSH_XQ_MAX_DEPTH - 1) / 2, &v))
                return -1;
            l->depth = 2 * (int)v + 1;
        } else if (strcmp(t, "searchmoves") == 0) {
            cdsh_xq_move_t m;
            for (; i + 1 < nt && cdsh_xq_move_parse_iccs(tok[i + 1], &m, NULL) == 0; i++) {
                if (cdsh_xq_parse_move(s->pos, tok[i + 1], &m, NULL) != 0) {
                    complain(s, "go refused: searchmoves: %s is not a legal move here", tok[i + 1]);
                    return -1;
                }
                if (nsm < CDSH_XQ_MAX_MOVES)
                    s->searchmoves[nsm++] = m;
            }
            if (!nsm) {
                complain(s, "%s", "go refused: searchmoves names no move");
                return -1;
            }
        } else {
            complain(s, "go refused: unknown parameter %s", t);
            return -1;
        }
    }
    if (clock_given && l->time_ms[side] <= 0 && l->inc_ms[side] <= 0 && !l->movetime_ms &&
        !l->depth && !l->nodes && !l->infinite) {
        complain(s, "%s", "go refused: no time left on the clock of the side to move");
        return -1;
    }
    s->bounded = !l->infinite && (l->depth || l->nodes || l->movetime_ms || l->time_ms[side] > 0 ||
                                  l->inc_ms[side] > 0);
    *nsm_out = nsm;
    return 0;
}

static void cmd_go(session *s, char **tok, int nt)
{
    wait_search(s, 1);
    if (!s->pos_ok) {
        complain(s, "go refused: no valid position (%s); send a position first", s->pos_why);
        return;
    }
    int nsm = 0;
    if (parse_go(s, tok, nt, &nsm) != 0)
        return;
    cdsh_xq_limits *l = &s->lim;
    if (!nsm && s->nbanned) { /* UCCI banmoves: search every other legal move */
        cdsh_xq_move_t legal[CDSH_XQ_MAX_MOVES];
        int n = cdsh_xq_gen_legal(s->pos, legal);
        for (int i = 0; i < n; i++) {
            int banned = 0;
            for (int j = 0; j < s->nbanned; j++)
                banned |= legal[i] == s->banned[j];
            if (!banned)
                s->searchmoves[nsm++] = legal[i];
        }
        if (!nsm) {
            say(s, "nobestmove");
            return;
        }
    }
    l->searchmoves = nsm ? s->searchmoves : NULL;
    l->nsearchmoves = nsm;
    *s->search_pos = *s->pos;
    s->cancel = cdsh_cancel_new(NULL);
    if (!s->cancel) {
        complain(s, "%s", "out of memory");
        return;
    }
    l->cancel = s->cancel;
    if (pthread_create(&s->worker, NULL, worker_main, s) != 0) {
        complain(s, "%s", "cannot start the search thread");
        cdsh_cancel_free(s->cancel);
        s->cancel = NULL;
        return;
    }
    s->searching = 1;
}

static int parse_int(const char *v, int lo, int hi, int *out)
{
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || x < lo || x > hi)
        return -1;
    *out = (int)x;
    return 0;
}

static void set_option(session *s, const char *name, const char *value)
{
    int v;
    cdsh_error err = {0};
    if (!strcasecmp(name, "Hash") || !strcasecmp(name, "hashsize")) {
        if (parse_int(value, 1, 4096, &v) != 0 || cdsh_xq_engine_set_hash(s->eng, v, &err) != 0)
            complain(s, "bad hash size %s", value ? value : "");
    } else if (!strcasecmp(name, "Threads")) {
        if (parse_int(value, 1, CDSH_XQ_MAX_THREADS, &v) != 0 ||
            cdsh_xq_engine_set_threads(s->eng, v, &err) != 0)
            complain(s, "bad thread count %s", value ? value : "");
    } else if (!strcasecmp(name, "MultiPV")) {
        if (parse_int(value, 1, CDSH_XQ_MULTIPV_MAX, &v) != 0)
            complain(s, "bad MultiPV %s", value ? value : "");
        else
            s->multipv = v;
    } else if (!strcasecmp(name, "Move Overhead") || !strcasecmp(name, "Move_Overhead")) {
        if (parse_int(value, 0, 5000, &v) != 0)
            complain(s, "bad Move Overhead %s", value ? value : "");
        else
            s->overhead_ms = v;
    } else if (!strcasecmp(name, "Clear Hash") || !strcasecmp(name, "newgame")) {
        cdsh_xq_engine_clear(s->eng);
    } else if (!strcasecmp(name, "usemillisec")) {
        s->usemillisec = !value || !strcasecmp(value, "true") || !strcmp(value, "on");
    } else if (s->dialect == CDSH_XQ_DIALECT_UCI) {
        complain(s, "no such option: %s", name);
    }
    /* UCCI: other conventional options (batch, debug, ponder, usebook, ...) are accepted */
}

static void cmd_setoption(session *s, char **tok, int nt)
{
    wait_search(s, 1);
    if (s->dialect == CDSH_XQ_DIALECT_UCCI) {
        if (nt < 2)
            return;
        set_option(s, tok[1], nt > 2 ? tok[2] : NULL);
        return;
    }
    /* setoption name <N words> [value <V words>] */
    char name[256] = "", value[256] = "";
    int i = 1, in_value = 0;
    if (i < nt && strcmp(tok[i], "name") == 0)
        i++;
    for (; i < nt; i++) {
        if (!in_value && strcmp(tok[i], "value") == 0) {
            in_value = 1;
            continue;
        }
        char *dst = in_value ? value : name;
        size_t len = strlen(dst);
        snprintf(dst + len, 256 - len, "%s%s", len ? " " : "", tok[i]);
    }
    set_option(s, name, in_value ? value : NULL);
}

static void cmd_id(session *s)
{
    if (s->dialect == CDSH_XQ_DIALECT_UCCI) {
        say(s, "id name %s", CDSH_XQ_ENGINE_NAME);
        say(s, "id author %s", CDSH_XQ_ENGINE_AUTHOR);
        say(s, "option usemillisec type check default true");
        say(s, "option hashsize type spin min 1 max 4096 default 16");
        say(s, "option threads type spin min 1 max %d default 1", CDSH_XQ_MAX_THREADS);
        say(s, "option multipv type spin min 1 max %d default 1", CDSH_XQ_MULTIPV_MAX);
        say(s, "option newgame type button");
        say(s, "ucciok");
        return;
    }
    say(s, "id name %s", CDSH_XQ_ENGINE_NAME);
    say(s, "id author %s", CDSH_XQ_ENGINE_AUTHOR);
    say(s, "option name Hash type spin default 16 min 1 max 4096");
    say(s, "option name Threads type spin default 1 min 1 max %d", CDSH_XQ_MAX_THREADS);
    say(s, "option name MultiPV type spin default 1 min 1 max %d", CDSH_XQ_MULTIPV_MAX);
    say(s, "option name Move Overhead type spin default 30 min 0 max 5000");
    say(s, "option name Clear Hash type button");
    say(s, "uciok");
}

/* Reads one line (without its newline) into *buf, growing it up to
 * CDSH_XQ_PROTOCOL_LINE_MAX bytes. 1: a line; 0: end of input; -1: the line
 * was longer (read to its end and dropped); CDSH_ENOMEM: no memory. */
static int read_line(FILE *in, char **buf, size_t *cap)
{
    size_t n = 0;
    int c, over = 0;
    while ((c = getc(in)) != EOF && c != '\n') {
        if (over)
            continue;
        if (n + 1 >= *cap) {
            if (*cap > CDSH_XQ_PROTOCOL_LINE_MAX) {
                over = 1;
                continue;
            }
            size_t nc = *cap * 2 > CDSH_XQ_PROTOCOL_LINE_MAX + 1 ? CDSH_XQ_PROTOCOL_LINE_MAX + 2
                                                                : *cap * 2;
            char *nb = realloc(*buf, nc);
            if (!nb)
                return CDSH_ENOMEM;
            *buf = nb;
            *cap = nc;
        }
        (*buf)[n++] = (char)c;
    }
    if (over)
        return -1;
    if (c == EOF && n == 0)
        return 0;
    (*buf)[n] = 0;
    return 1;
}

/* Splits line in place into *tok (grown as needed); the count, or -1. */
static int split(char *line, char ***tok, size_t *cap)
{
    size_t n = 0;
    char *save = NULL;
    for (char *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
        if (n == *cap) {
            size_t nc = *cap ? *cap * 2 : 64;
            char **nt = realloc(*tok, nc * sizeof *nt);
            if (!nt)
                return -1;
            *tok = nt;
            *cap = nc;
        }
        (*tok)[n++] = t;
    }
    return n > INT_MAX ? -1 : (int)n;
}

int cdsh_xq_protocol_run(cdsh_xq_dialect dialect, FILE *in, FILE *out, cdsh_error *err)
{
    session s = {.dialect = dialect,
                 .out = out,
                 .multipv = 1,
                 .overhead_ms = 30,
                 .usemillisec = dialect == CDSH_XQ_DIALECT_UCCI ? 0 : 1,
                 .pos_ok = 1};
    size_t line_cap = 4096, tok_cap = 0;
    char *line = NULL;
    char **tok = NULL;
    int rc = 0;
    pthread_mutex_init(&s.out_lock, NULL);
    s.pos = cdsh_xq_pos_new();
    s.search_pos = cdsh_xq_pos_new();
    line = malloc(line_cap);
    if (!s.pos || !s.search_pos || !line) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto cleanup;
    }
    rc = cdsh_xq_engine_new(NULL, &s.eng, err);
    if (rc)
        goto cleanup;
    int quit = 0;
    while (!quit) {
        const int got = read_line(in, &line, &line_cap);
        if (got == 0)
            break;
        if (got == -1) {
            char msg[128];
            snprintf(msg, sizeof msg, "line longer than %d bytes ignored", CDSH_XQ_PROTOCOL_LINE_MAX);
            complain(&s, "%s", msg);
            continue;
        }
        const int nt = got == 1 ? split(line, &tok, &tok_cap) : -1;
        if (nt < 0) {
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
            break;
        }
        if (nt == 0)
            continue;
        const char *c = tok[0];
        if (!strcmp(c, "quit")) {
            quit = 1;
        } else if (!strcmp(c, "uci") || !strcmp(c, "ucci")) {
            cmd_id(&s);
        } else if (!strcmp(c, "isready")) {
            say(&s, "readyok");
        } else if (!strcmp(c, "ucinewgame")) {
            wait_search(&s, 1);
            cdsh_xq_engine_clear(s.eng);
        } else if (!strcmp(c, "setoption")) {
            cmd_setoption(&s, tok, nt);
        } else if (!strcmp(c, "position")) {
            wait_search(&s, 1);
            cmd_position(&s, tok, nt);
        } else if (!strcmp(c, "banmoves")) {
            s.nbanned = 0;
            for (int i = 1; i < nt && s.nbanned < CDSH_XQ_MAX_MOVES; i++) {
                cdsh_xq_move_t m;
                if (cdsh_xq_parse_move(s.pos, tok[i], &m, NULL) == 0)
                    s.banned[s.nbanned++] = m;
                else
                    complain(&s, "banmoves: %s is not a legal move here", tok[i]);
            }
        } else if (!strcmp(c, "go")) {
            cmd_go(&s, tok, nt);
        } else if (!strcmp(c, "stop") || !strcmp(c, "ponderhit")) {
            wait_search(&s, 1);
        } else if (!strcmp(c, "d")) {
            char fen[CDSH_XQ_FEN_MAX];
            cdsh_xq_pos_fen(s.pos, fen);
            say(&s, "Fen: %s", fen);
        } else if (!strcmp(c, "eval")) {
            cdsh_xq_eval_terms t;
            cdsh_xq_eval_explain(s.pos, NULL, &t);
            say(&s,
                "info string eval (Red's view) material+psq %d mobility %d king_safety %d "
                "soldiers %d phase %d/%d total %d",
                t.material_psq, t.mobility, t.king_safety, t.soldiers, t.phase, t.phase_max,
                t.total);
        } else {
            complain(&s, "unknown command %s", c);
        }
    }
    /* quit stops the search; at end of input a bounded search (depth, nodes,
     * time) is finished first, so `printf 'position ...\ngo depth 8\n' | cdsh
     * xiangqi uci` works, and one without a bound is stopped */
    wait_search(&s, quit || !s.bounded);
    if (dialect == CDSH_XQ_DIALECT_UCCI)
        say(&s, "bye");
cleanup:
    cdsh_xq_engine_free(s.eng);
    cdsh_xq_pos_free(s.pos);
    cdsh_xq_pos_free(s.search_pos);
    free(line);
    free(tok);
    pthread_mutex_destroy(&s.out_lock);
    return rc;
}
