/* cmd_xiangqi_play.c — `cdsh xiangqi play`: a terminal game through the
 * xiangqi plugin's /xiangqi command (the same service the tools and the
 * panel use), with the board drawn in aligned CJK glyphs. */
#include "plugins/xiangqi/cmd_xiangqi_play.h"

#include <errno.h>
#include <getopt.h>
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
#include "plugins/xiangqi/plugin.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: cdsh xiangqi play [--side r|b] [--opponent local|model] [--game KEY]\n"
            "                         [--resume] [--profile NAME]\n"
            "\n"
            "Plays xiangqi in the terminal against the local engine (or the session model\n"
            "with --opponent model). Type moves in ICCS (h2e2) or Chinese (炮二平五), or:\n"
            "undo, hint, review, export, resign, fallback, board, quit.\n"
            "\n"
            "Options:\n"
            "  --side r|b          your side (default: the plugin's defaultSide)\n"
            "  --opponent K        local or model (default: the plugin's defaultOpponent)\n"
            "  --game KEY          game to play (default \"play\"); saved in $CDSH_HOME/xiangqi\n"
            "  --resume            continue the saved game instead of starting a new one\n"
            "  --profile NAME      profile with the xiangqi settings (default \"default\")\n"
            "  -h, --help          show this help\n");
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

/* Every cell is two columns wide (CJK glyph or full-width dot), so the grid
 * lines up in any terminal with East Asian wide characters. */
static void draw(const json_t *v)
{
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
            const char *g = glyph(s && *s ? s[0] : 0);
            if (idx == lt && isatty(STDOUT_FILENO))
                printf("\033[7m%s\033[0m", g);
            else if (idx == lf && isatty(STDOUT_FILENO))
                printf("\033[2m%s\033[0m", g);
            else
                printf("%s", g);
        }
        printf("\n");
        if (row == 4)
            printf("   　　楚河　　漢界\n");
    }
    json_t *st = json_object_get(v, "status");
    const char *turn = json_string_value(json_object_get(v, "turn"));
    printf("%s · 轮到%s", json_string_value(json_object_get(st, "reasonZh")),
           turn && turn[0] == 'b' ? "黑方" : "红方");
    if (json_is_object(last))
        printf(" · 上一步 %s (%s)", json_string_value(json_object_get(last, "zh")),
               json_string_value(json_object_get(last, "iccs")));
    json_t *msg = json_object_get(v, "message");
    if (json_is_object(msg))
        printf(" · %s", message_zh(json_string_value(json_object_get(msg, "code"))));
    printf("\n");
    /* a model failure: what the endpoint said, and what to do */
    json_t *cause = json_object_get(msg, "cause");
    if (json_is_object(cause)) {
        printf("模型出错的原因：%s（%s）\n", json_string_value(json_object_get(cause, "message")),
               json_string_value(json_object_get(cause, "code")));
        const char *fix = json_string_value(json_object_get(cause, "fixZh"));
        if (fix)
            printf("怎么办：%s\n", fix);
    }
    const char *pending = json_string_value(json_object_get(v, "pending"));
    if (pending && strcmp(pending, "ai-failed") == 0)
        printf("模型未能走子：输入 fallback 由本地引擎代走。\n");
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
    if (out.kind == CDSH_COMMAND_SUCCESS)
        v = json_loads(out.text ? out.text : "", 0, NULL);
    if (!v && !quiet)
        printf("%s\n", out.text ? out.text : "");
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

int cdsh_cmd_xiangqi_play(int argc, char **argv)
{
    static const struct option opts[] = {{"side", required_argument, NULL, 's'},
                                         {"opponent", required_argument, NULL, 'o'},
                                         {"game", required_argument, NULL, 'g'},
                                         {"resume", no_argument, NULL, 'r'},
                                         {"profile", required_argument, NULL, 'p'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *side = "", *opponent = "", *game = "play", *profile_name = NULL;
    int resume = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's': side = optarg; break;
        case 'o': opponent = optarg; break;
        case 'g': game = optarg; break;
        case 'r': resume = 1; break;
        case 'p': profile_name = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if ((*side && strcmp(side, "r") && strcmp(side, "b")) ||
        (*opponent && strcmp(opponent, "local") && strcmp(opponent, "model")) || optind < argc) {
        usage(stderr);
        return 2;
    }
    cdsh_host *host = NULL;
    cdsh_profile *profile = NULL;
    if (cdsh_cli_host_open("xiangqi play", profile_name, &host, &profile))
        return 1;
    /* the plugin is opt-in for sessions; this command is its own front end */
    if (!cdsh_host_plugin_find(host, cdsh_xq_plugin.name)) {
        cdsh_error err;
        if (cdsh_plugin_load(host, &cdsh_xq_plugin, cdsh_profile_config(profile, "xiangqi"), NULL,
                             &err) != 0)
            fprintf(stderr, "cdsh xiangqi play: %s\n", err.message);
    }
    cdsh_scope *scope = cdsh_scope_new(game, NULL);
    char line[600];
    if (resume)
        snprintf(line, sizeof line, "/xiangqi state");
    else
        snprintf(line, sizeof line, "/xiangqi new %s %s", side, opponent);
    json_t *v = scope ? wait_opponent(host, scope, run(host, scope, line, 0)) : NULL;
    int status = v ? 0 : 1;
    if (v)
        draw(v);
    while (v && strcmp(json_string_value(json_object_get(v, "phase")), "over") != 0) {
        printf("你的着法> ");
        fflush(stdout);
        char in[400];
        if (!fgets(in, sizeof in, stdin))
            break;
        in[strcspn(in, "\r\n")] = 0;
        if (!*in)
            continue;
        if (!strcmp(in, "quit") || !strcmp(in, "exit") || !strcmp(in, "q"))
            break;
        int is_word = !strcmp(in, "undo") || !strcmp(in, "hint") || !strcmp(in, "resign") ||
                      !strcmp(in, "review") || !strcmp(in, "export") || !strcmp(in, "board") ||
                      !strcmp(in, "fallback");
        if (!strcmp(in, "export")) {
            cdsh_command_outcome out;
            if (cdsh_commands_execute(cdsh_host_commands(host), scope, "/xiangqi export", NULL,
                                      NULL, &out, NULL) == 1) {
                printf("%s\n", out.text ? out.text : "");
                cdsh_commands_outcome_clear(&out);
            }
            continue;
        }
        snprintf(line, sizeof line, "/xiangqi %s%s", is_word ? "" : "move ",
                 !strcmp(in, "board") ? "state" : in);
        json_t *n = run(host, scope, line, 0);
        if (!n)
            continue;
        if (!strcmp(in, "hint")) {
            print_hint(n);
            json_decref(n);
            continue;
        }
        if (!strcmp(in, "review")) {
            print_review(n);
            json_decref(n);
            continue;
        }
        json_decref(v);
        v = wait_opponent(host, scope, n);
        if (v)
            draw(v);
    }
    if (v && strcmp(json_string_value(json_object_get(v, "phase")), "over") == 0)
        printf("对局结束：%s\n",
               json_string_value(json_object_get(json_object_get(v, "status"), "reasonZh")));
    json_decref(v);
    cdsh_scope_unref(scope);
    cdsh_host_free(host);
    cdsh_profile_free(profile);
    return status;
}
