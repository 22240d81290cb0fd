/* cmd_xiangqi_play.c — `cdsh xiangqi play`: a terminal game through the
 * xiangqi plugin's /xiangqi command (the same service the tools and the
 * panel use), with the board drawn in aligned CJK glyphs: the two sides in
 * their colours (none with --plain or NO_COLOR), redrawn in place on a
 * terminal (Ctrl-L redraws), refusals in one line, and the game kept open
 * after it ends for review, export or a new game. */
#include "plugins/xiangqi/cmd_xiangqi_play.h"

#include <editline/readline.h>
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "host/cli.h"
#include "host/host.h"
#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/notation.h"
#include "plugins/xiangqi/engine/position.h"
#include "plugins/xiangqi/plugin.h"

/* What `help` prints, and the middle of --help: the three notations and the
 * words the prompt understands. */
#define NOTATION_HELP                                                                     \
    "Moves, in any of three notations (着法可用三种记法):\n"                             \
    "  ICCS     h2e2, b0c2     from-square then to-square: files a-i from Red's left,\n"  \
    "                          ranks 0-9 from Red's side (H2-E2 also works)\n"            \
    "  Chinese  炮二平五, 马８进７  piece, its file, 进 forward / 退 back / 平 sideways,\n" \
    "                          then a file (平) or a distance; files count from the\n"    \
    "                          mover's right (Red 一..九, Black １..９ or 1..9);\n"      \
    "                          前/后 (front/rear) name one of two on a file: 前车进一\n" \
    "  WXF      C2.5, H2+3, R9+1  the same in letters: K A E H R C P, + forward,\n"      \
    "                          - back, . sideways; R++1 / R-.3 = front / rear chariot\n" \
    "Words: moves (list the legal moves), undo, hint, review, export, resign,\n"         \
    "  fallback (let the engine move for a failed model), board, new [r|b] (a new\n"      \
    "  game), help, quit. Ctrl-L redraws the board.\n"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: cdsh xiangqi play [--side r|b] [--opponent local|model] [--game KEY]\n"
            "                         [--resume] [--plain | --color] [--profile NAME]\n"
            "\n"
            "Plays xiangqi in the terminal against the local engine (or the session model\n"
            "with --opponent model). Red pieces are drawn in red, Black's in cyan; on a\n"
            "terminal the board is redrawn in place (Ctrl-L redraws it). When the game\n"
            "ends it stays open: review, export, or new for another game.\n"
            "\n"
            "%s"
            "\n"
            "Options:\n"
            "  --side r|b          your side (default: the plugin's defaultSide)\n"
            "  --opponent K        local or model (default: the plugin's defaultOpponent)\n"
            "  --game KEY          game to play (default \"play\"); saved in $CDSH_HOME/xiangqi\n"
            "  --resume            continue the saved game instead of starting a new one\n"
            "  --plain             no colours and no screen control (also when NO_COLOR is set\n"
            "                      or the output is not a terminal)\n"
            "  --color             colours even when the output is not a terminal\n"
            "  --profile NAME      profile with the xiangqi settings (default \"default\")\n"
            "  -h, --help          show this help\n",
            NOTATION_HELP);
}

static const char *glyph(char c)
{
    switch (c) {
    case 'K': return "帅";
    case 'A': return "仕";
    case 'B': return "相";
    case 'N': return "马";
    case 'R': return "车";
    case 'C': return "炮";
    case 'P': return "兵";
    case 'k': return "将";
    case 'a': return "士";
    case 'b': return "象";
    case 'n': return "馬";
    case 'r': return "車";
    case 'c': return "砲";
    case 'p': return "卒";
    default: return "・";
    }
}

static const char *message_zh(const char *code)
{
    static const char *const map[][2] = {
        {"ai.timeout", "模型超时，已由本地引擎代走"},
        {"ai.budget", "模型额度已用完，已由本地引擎代走"},
        {"ai.fallback.local", "已由本地引擎代走"},
        {"ai.error", "模型出错"},
    };
    for (size_t i = 0; code && i < sizeof map / sizeof map[0]; i++)
        if (strcmp(map[i][0], code) == 0)
            return map[i][1];
    return code ? code : "";
}

/* How the game is shown. Global state (documented): the Ctrl-L key
 * handler that libedit calls has no user pointer, so the settings and the
 * projection on screen live here; the play loop is the only writer. */
typedef struct play_ui {
    bool color;         /* ANSI colours: Red's pieces red, Black's cyan */
    bool screen;        /* a terminal: clear it and draw from the top */
    bool tty_in;        /* stdin is a terminal: lines through libedit */
    const json_t *shown; /* the projection on screen (borrowed), for Ctrl-L */
} play_ui;

static play_ui ui;

#define SGR_RED "\033[1;31m"
#define SGR_BLACK "\033[1;36m"
#define SGR_RESET "\033[0m"

static bool over(const json_t *v)
{
    const char *phase = json_string_value(json_object_get(v, "phase"));
    return phase && strcmp(phase, "over") == 0;
}

/* One point of the board: the glyph in its side's colour, the last move's
 * target in reverse video and its origin dimmed (screen mode only). */
static void draw_point(char piece, int idx, int lf, int lt)
{
    const char *g = glyph(piece);
    const char *sgr = !ui.color || !piece     ? ""
                      : (piece >= 'A' && piece <= 'Z') ? SGR_RED
                                                       : SGR_BLACK;
    const char *mark = !(ui.screen || ui.color) ? "" : idx == lt ? "\033[7m" : idx == lf ? "\033[2m" : "";
    if (*sgr || *mark)
        printf("%s%s%s" SGR_RESET, mark, sgr, g);
    else
        printf("%s", g);
}

/* Every cell is two columns wide (CJK glyph or full-width dot), so the grid
 * lines up in any terminal with East Asian wide characters. */
static void draw(const json_t *v)
{
    ui.shown = v;
    if (ui.screen)
        printf("\033[H\033[2J");
    json_t *board = json_object_get(v, "board");
    json_t *last = json_object_get(v, "lastMove");
    int lf = json_is_object(last) ? (int)json_integer_value(json_object_get(last, "from")) : -1;
    int lt = json_is_object(last) ? (int)json_integer_value(json_object_get(last, "to")) : -1;
    printf("\n   ａｂｃｄｅｆｇｈｉ\n");
    for (int row = 0; row < 10; row++) {
        printf("%d  ", 9 - row);
        for (int file = 0; file < 9; file++) {
            int idx = row * 9 + file;
            const char *s = json_string_value(json_array_get(board, (size_t)idx));
            draw_point(s && *s ? s[0] : 0, idx, lf, lt);
        }
        printf("\n");
        if (row == 4)
            printf("   　　楚河　　漢界\n");
    }
    json_t *st = json_object_get(v, "status");
    const char *turn = json_string_value(json_object_get(v, "turn"));
    const char *hero = json_string_value(json_object_get(v, "hero"));
    bool red_turn = !(turn && turn[0] == 'b');
    if (over(v))
        printf("对局结束：%s", json_string_value(json_object_get(st, "reasonZh")));
    else
        printf("%s · 轮到%s%s%s%s", json_string_value(json_object_get(st, "reasonZh")),
               ui.color ? (red_turn ? SGR_RED : SGR_BLACK) : "", red_turn ? "红方" : "黑方",
               ui.color ? SGR_RESET : "",
               turn && hero ? (strcmp(turn, hero) == 0 ? "（你）" : "（对手）") : "");
    if (json_is_object(last))
        printf(" · 上一步 %s (%s)", json_string_value(json_object_get(last, "zh")),
               json_string_value(json_object_get(last, "iccs")));
    json_t *msg = json_object_get(v, "message");
    if (json_is_object(msg))
        printf(" · %s", message_zh(json_string_value(json_object_get(msg, "code"))));
    printf("\n");
    /* a model failure or timeout: what the endpoint (or the move clock) said,
     * and what to do */
    json_t *cause = json_object_get(msg, "cause");
    if (json_is_object(cause)) {
        const char *code = json_string_value(json_object_get(msg, "code"));
        printf("%s：%s（%s）\n", code && !strcmp(code, "ai.timeout") ? "模型超时的原因" : "模型出错的原因",
               json_string_value(json_object_get(cause, "message")),
               json_string_value(json_object_get(cause, "code")));
        const char *fix = json_string_value(json_object_get(cause, "fixZh"));
        if (fix)
            printf("怎么办：%s\n", fix);
    }
    if (over(v))
        printf("对局已结束，棋局仍保留：review 复盘，export 导出，new 再来一局，quit 退出\n");
    const char *pending = json_string_value(json_object_get(v, "pending"));
    if (pending && strcmp(pending, "ai-failed") == 0)
        printf("模型未能走子：输入 fallback 由本地引擎代走。\n");
    fflush(stdout);
}

/* A refusal in one line: its first line (code and Chinese reason), the
 * English reason in brackets, and how to see the legal moves. */
static void print_refusal(const char *text)
{
    const char *nl = strchr(text, '\n');
    const char *en = nl ? nl + 1 : "";
    size_t en_len = strcspn(en, "\n");
    printf("%.*s %.*s — type `moves` to list them（输入 moves 列出合法着法）\n",
           (int)(nl ? (size_t)(nl - text) : strlen(text)), text, (int)en_len, en);
}

/* Runs one /xiangqi line. Returns the projection (owned) or NULL after
 * printing the error text. */
static json_t *run(cdsh_host *host, cdsh_scope *scope, const char *line, int quiet)
{
    cdsh_command_outcome out;
    cdsh_error err;
    int rc = cdsh_commands_execute(cdsh_host_commands(host), scope, line, NULL, NULL, &out, &err);
    if (rc != 1) {
        fprintf(stderr, "cdsh xiangqi play: %s\n",
                rc == 0 ? "the xiangqi plugin is not enabled" : err.message);
        return NULL;
    }
    json_t *v = NULL;
    const char *text = out.text ? out.text : "";
    if (out.kind == CDSH_COMMAND_SUCCESS)
        v = json_loads(text, 0, NULL);
    if (!v && !quiet) {
        if (strncmp(text, "错误 ", strlen("错误 ")) == 0)
            print_refusal(text);
        else
            printf("%s\n", text);
    }
    cdsh_commands_outcome_clear(&out);
    return v;
}

/* How long the terminal waits for the model's move (its own timeout, then
 * the local engine's reply, normally answer well before). */
#define OPPONENT_WAIT_MS 600000

/* The service's change events (CDSH_XQ_EVENT): a counter the waiter sleeps
 * on. Global state (documented): static, not on the waiter's stack, because
 * a disposed listener may still receive an event already in flight
 * (host/events.h); the play loop is this process's only waiter. */
typedef struct state_watch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned changes;
} state_watch;

static state_watch watch = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void on_state(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    (void)name, (void)scope, (void)payload;
    state_watch *w = arg;
    pthread_mutex_lock(&w->mu);
    w->changes++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static bool thinking(const json_t *v)
{
    const char *pending = json_string_value(json_object_get(v, "pending"));
    return pending && strcmp(pending, "ai-thinking") == 0;
}

/* While the model thinks, wait for the game's change events (not a timer)
 * and read the state after each, until its move is in. */
static json_t *wait_opponent(cdsh_host *host, cdsh_scope *scope, json_t *v)
{
    if (!v || !thinking(v))
        return v;
    printf("对手思考中…\n");
    fflush(stdout);
    state_watch *w = &watch;
    cdsh_disposer_t sub = {0};
    bool subscribed =
        cdsh_events_on(cdsh_host_events(host), CDSH_XQ_EVENT, NULL, on_state, w, &sub, NULL) == 0;
    struct timespec until; /* the cond uses the default clock */
    cdsh_clock_deadline(CLOCK_REALTIME, OPPONENT_WAIT_MS, &until);
    pthread_mutex_lock(&w->mu);
    unsigned seen = w->changes;
    pthread_mutex_unlock(&w->mu);
    bool timed_out = false;
    /* Read once after subscribing: a move made before it is not missed. */
    while (v && thinking(v) && !timed_out) {
        json_t *n = run(host, scope, "/xiangqi state", 0);
        if (!n)
            break;
        json_decref(v);
        v = n;
        if (!thinking(v) || !subscribed)
            break;
        pthread_mutex_lock(&w->mu);
        while (w->changes == seen && !timed_out)
            timed_out = pthread_cond_timedwait(&w->cv, &w->mu, &until) == ETIMEDOUT;
        seen = w->changes;
        pthread_mutex_unlock(&w->mu);
    }
    if (subscribed)
        cdsh_disposer_run(&sub);
    return v;
}

static void print_hint(const json_t *v)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(v, "candidates"), i, c) {
        printf("  %zu. %s %s  评分 %lld\n", i + 1, json_string_value(json_object_get(c, "iccs")),
               json_string_value(json_object_get(c, "zh")),
               (long long)json_integer_value(json_object_get(c, "score")));
    }
}

static void print_review(const json_t *v)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(v, "moves"), i, m) {
        printf("  %3lld. %-8s %s  %+5lld%s\n",
               (long long)json_integer_value(json_object_get(m, "ply")),
               json_string_value(json_object_get(m, "zh")),
               json_string_value(json_object_get(m, "iccs")),
               (long long)json_integer_value(json_object_get(m, "score")),
               json_is_true(json_object_get(m, "turning")) ? "  ★转折" : "");
    }
}

/* The legal moves of the position on the board (from the projection's FEN),
 * four a line, in ICCS, Chinese and WXF. */
static void print_moves(const json_t *v)
{
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    cdsh_xq_notated_move *moves = calloc(CDSH_XQ_MAX_MOVES, sizeof *moves);
    const char *fen = json_string_value(json_object_get(v, "fen"));
    if (!pos || !moves || !fen || cdsh_xq_pos_set_fen(pos, fen, NULL) != 0) {
        printf("no position to list the moves of\n");
        goto done;
    }
    int n = cdsh_xq_legal_moves_notated(pos, moves);
    printf("合法着法 legal moves (%d):\n", n);
    for (int i = 0; i < n; i++)
        printf("  %s %s %-6s%s", moves[i].iccs, moves[i].zh, moves[i].wxf,
               i % 4 == 3 || i + 1 == n ? "\n" : "");
done:
    free(moves);
    cdsh_xq_pos_free(pos);
}

/* Ctrl-L on a terminal (libedit): the board again, then the line being
 * typed. */
static int redraw_key(int count, int key)
{
    (void)count, (void)key;
    if (ui.shown)
        draw(ui.shown);
    rl_forced_update_display();
    return 0;
}

/* One line from the person (owned), NULL at the end of input: libedit on a
 * terminal, else stdin's next line, where a form feed (Ctrl-L) redraws the
 * board and is dropped. */
static char *read_line(const char *prompt)
{
    if (ui.tty_in) {
        char *line = readline(prompt);
        if (line && *line)
            add_history(line);
        return line;
    }
    printf("%s", prompt);
    fflush(stdout);
    char buf[400];
    if (!fgets(buf, sizeof buf, stdin))
        return NULL;
    buf[strcspn(buf, "\r\n")] = 0;
    if (strchr(buf, '\f')) {
        size_t o = 0;
        for (size_t i = 0; buf[i]; i++)
            if (buf[i] != '\f')
                buf[o++] = buf[i];
        buf[o] = 0;
        if (ui.shown)
            draw(ui.shown);
    }
    return strdup(buf);
}

typedef struct play_opts {
    const char *side, *opponent, *game, *profile;
    int resume;
    int color; /* -1 never (--plain), 1 always (--color), 0 when a terminal */
} play_opts;

static int parse_opts(int argc, char **argv, play_opts *o)
{
    static const struct option opts[] = {{"side", required_argument, NULL, 's'},
                                         {"opponent", required_argument, NULL, 'o'},
                                         {"game", required_argument, NULL, 'g'},
                                         {"resume", no_argument, NULL, 'r'},
                                         {"plain", no_argument, NULL, 'P'},
                                         {"color", no_argument, NULL, 'C'},
                                         {"profile", required_argument, NULL, 'p'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    *o = (play_opts){.side = "", .opponent = "", .game = "play"};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's': o->side = optarg; break;
        case 'o': o->opponent = optarg; break;
        case 'g': o->game = optarg; break;
        case 'r': o->resume = 1; break;
        case 'P': o->color = -1; break;
        case 'C': o->color = 1; break;
        case 'p': o->profile = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if ((*o->side && strcmp(o->side, "r") && strcmp(o->side, "b")) ||
        (*o->opponent && strcmp(o->opponent, "local") && strcmp(o->opponent, "model")) ||
        optind < argc) {
        usage(stderr);
        return 2;
    }
    return -1;
}

static void setup_ui(const play_opts *o)
{
    const char *no_color = getenv("NO_COLOR");
    bool out_tty = isatty(STDOUT_FILENO);
    ui.screen = o->color >= 0 && out_tty;
    ui.color = o->color > 0 || (o->color == 0 && out_tty && !(no_color && *no_color));
    ui.tty_in = isatty(STDIN_FILENO) && out_tty;
    if (ui.tty_in) {
        setlocale(LC_CTYPE, ""); /* libedit needs the locale for multibyte input */
        rl_catch_signals = 0;
        rl_initialize();
        rl_add_defun("cdsh-xiangqi-redraw", redraw_key, '\f');
    }
}

static bool is_word(const char *in)
{
    static const char *const words[] = {"undo",   "hint",  "resign", "review",
                                        "export", "board", "fallback"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (!strcmp(in, words[i]))
            return true;
    return false;
}

/* One line typed at the prompt. Returns the projection to show next (v
 * itself, or a new one after v was released), NULL to quit. */
static json_t *handle_line(cdsh_host *host, cdsh_scope *scope, const play_opts *o, json_t *v,
                           const char *in)
{
    char line[600];
    if (!strcmp(in, "help") || !strcmp(in, "?")) {
        printf("%s", NOTATION_HELP);
        return v;
    }
    if (!strcmp(in, "moves")) {
        if (over(v))
            printf("对局已结束，没有可走的着法 (the game is over: no legal moves)\n");
        else
            print_moves(v);
        return v;
    }
    if (!strcmp(in, "export")) {
        cdsh_command_outcome out;
        if (cdsh_commands_execute(cdsh_host_commands(host), scope, "/xiangqi export", NULL, NULL,
                                  &out, NULL) == 1) {
            printf("%s\n", out.text ? out.text : "");
            cdsh_commands_outcome_clear(&out);
        }
        return v;
    }
    if (!strcmp(in, "new") || !strncmp(in, "new ", 4)) {
        const char *side = in[3] ? in + 4 : o->side;
        if (*side && strcmp(side, "r") && strcmp(side, "b")) {
            printf("new takes r or b (your side), got '%s'\n", side);
            return v;
        }
        snprintf(line, sizeof line, "/xiangqi new %s %s", side, o->opponent);
    } else if (over(v) && !is_word(in)) {
        printf("对局已结束：review 复盘，export 导出，new 再来一局，quit 退出 "
               "(the game is over: review, export, new or quit)\n");
        return v;
    } else {
        snprintf(line, sizeof line, "/xiangqi %s%s", is_word(in) ? "" : "move ",
                 !strcmp(in, "board") ? "state" : in);
    }
    json_t *n = run(host, scope, line, 0);
    if (!n)
        return v;
    if (!strcmp(in, "hint") || !strcmp(in, "review")) {
        (!strcmp(in, "hint") ? print_hint : print_review)(n);
        json_decref(n);
        return v;
    }
    json_decref(v);
    v = wait_opponent(host, scope, n);
    if (v)
        draw(v);
    return v;
}

int cdsh_cmd_xiangqi_play(int argc, char **argv)
{
    play_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc >= 0)
        return rc;
    cdsh_host *host = NULL;
    cdsh_profile *profile = NULL;
    if (cdsh_cli_host_open("xiangqi play", o.profile, &host, &profile))
        return 1;
    /* the plugin is opt-in for sessions; this command is its own front end */
    if (!cdsh_host_plugin_find(host, cdsh_xq_plugin.name)) {
        cdsh_error err;
        if (cdsh_plugin_load(host, &cdsh_xq_plugin, cdsh_profile_config(profile, "xiangqi"), NULL,
                             &err) != 0)
            fprintf(stderr, "cdsh xiangqi play: %s\n", err.message);
    }
    setup_ui(&o);
    cdsh_scope *scope = cdsh_scope_new(o.game, NULL);
    char line[600];
    if (o.resume)
        snprintf(line, sizeof line, "/xiangqi state");
    else
        snprintf(line, sizeof line, "/xiangqi new %s %s", o.side, o.opponent);
    json_t *v = scope ? wait_opponent(host, scope, run(host, scope, line, 0)) : NULL;
    int status = v ? 0 : 1;
    if (v)
        draw(v);
    /* the game stays open when it is over: review, export, new */
    while (v) {
        char *in = read_line(over(v) ? "对局已结束> " : "你的着法> ");
        if (!in)
            break;
        const char *t = in;
        while (*t == ' ')
            t++;
        if (!strcmp(t, "quit") || !strcmp(t, "exit") || !strcmp(t, "q")) {
            free(in);
            break;
        }
        if (*t)
            v = handle_line(host, scope, &o, v, t);
        free(in);
    }
    if (ui.tty_in)
        printf("\n");
    ui.shown = NULL;
    json_decref(v);
    cdsh_scope_unref(scope);
    cdsh_host_free(host);
    cdsh_profile_free(profile);
    return status;
}
