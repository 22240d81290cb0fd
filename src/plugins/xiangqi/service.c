/* service.c — the xiangqi game service: games by key, each behind its own
 * read-write lock (readers copy the cached projection in parallel, every
 * change is exclusive and saved before it is visible), the local engine as
 * opponent and advisor, and the hand-over to the model runner. */
#include "plugins/xiangqi/service.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/home.h"
#include "base/strbuf.h"
#include "plugins/xiangqi/engine/eval.h"
#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/search.h"
#include "plugins/xiangqi/game.h"

#define REVIEW_CLAMP 2000
#define ANALYSIS_HASH_MB 4 /* the analysis engine's table, cleared before every search */

struct cdsh_xq_service {
    pthread_mutex_t mu; /* games list, runner and listener */
    cdsh__xq_game *games;
    char *dir;
    cdsh_xq_service_opts o;
    char default_opponent[8];
    char *provider, *model_name;
    pthread_mutex_t engine_mu; /* one search at a time; taken after a game lock */
    cdsh_xq_engine *engine;    /* the opponent: keeps what it learnt between moves */
    cdsh_xq_engine *analysis;  /* board/hint/review figures: cleared before each search */
    cdsh_xq_model_runner_fn runner;
    void *runner_ud;
    cdsh_xq_change_fn listener;
    void *listener_ud;
};

static int nomem(cdsh_error *err)
{
    return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
}

bool cdsh_xq_service_key_valid(const char *key)
{
    size_t n = key ? strlen(key) : 0;
    if (n == 0 || n > CDSH__XQ_KEY_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)key[i]) && key[i] != '-' && key[i] != '_')
            return false;
    return true;
}

int cdsh_xq_service_new(const cdsh_xq_service_opts *opts, cdsh_xq_service **out, cdsh_error *err)
{
    *out = NULL;
    cdsh_xq_service *s = calloc(1, sizeof *s);
    if (!s)
        return nomem(err);
    if (opts)
        s->o = *opts;
    if (s->o.default_hero != 'b')
        s->o.default_hero = 'r';
    snprintf(s->default_opponent, sizeof s->default_opponent, "%s",
             s->o.default_opponent && strcmp(s->o.default_opponent, "model") == 0 ? "model"
                                                                                  : "local");
    if (s->o.max_plies <= 0 || s->o.max_plies >= CDSH_XQ_MAX_PLY)
        s->o.max_plies = 300;
    if (s->o.engine_depth <= 0)
        s->o.engine_depth = 5;
    if (s->o.engine_movetime_ms <= 0)
        s->o.engine_movetime_ms = 1000;
    if (s->o.hint_count <= 0)
        s->o.hint_count = 3;
    if (s->o.hint_depth <= 0)
        s->o.hint_depth = 6;
    if (s->o.review_depth <= 0)
        s->o.review_depth = 2;
    if (s->o.turning_cp <= 0)
        s->o.turning_cp = 150;
    s->provider = s->o.model_provider ? strdup(s->o.model_provider) : NULL;
    s->model_name = s->o.model_name ? strdup(s->o.model_name) : NULL;
    s->o.model_provider = s->o.model_name = NULL;
    s->o.default_opponent = NULL;
    int rc = 0;
    if (opts && opts->dir) {
        s->dir = strdup(opts->dir);
        if (!s->dir)
            rc = nomem(err);
    } else if ((rc = cdsh_home_ensure(opts ? opts->home : NULL, NULL, err)) == 0) {
        s->dir = cdsh_home_path_dup(opts->home, "xiangqi", (const char *)NULL);
        if (!s->dir)
            rc = cdsh_error_set(err, CDSH_ENOTFOUND, "NO_HOME", "the cdsh home is unknown");
    }
    s->o.dir = NULL;
    s->o.home = NULL;
    if (rc == 0)
        rc = cdsh_fs_mkdir_p(s->dir, 0700, err);
    cdsh_xq_engine_opts eo = {.hash_mb = s->o.engine_hash_mb > 0 ? s->o.engine_hash_mb : 16};
    if (rc == 0)
        rc = cdsh_xq_engine_new(&eo, &s->engine, err);
    cdsh_xq_engine_opts ao = {.hash_mb = ANALYSIS_HASH_MB};
    if (rc == 0)
        rc = cdsh_xq_engine_new(&ao, &s->analysis, err);
    if (rc == 0) {
        pthread_mutex_init(&s->mu, NULL);
        pthread_mutex_init(&s->engine_mu, NULL);
        *out = s;
        return 0;
    }
    cdsh_xq_engine_free(s->engine);
    free(s->dir);
    free(s->provider);
    free(s->model_name);
    free(s);
    return rc;
}

void cdsh_xq_service_free(cdsh_xq_service *svc)
{
    if (!svc)
        return;
    for (cdsh__xq_game *g = svc->games, *n; g; g = n) {
        n = g->next;
        cdsh__xq_game_free(g);
    }
    cdsh_xq_engine_free(svc->engine);
    cdsh_xq_engine_free(svc->analysis);
    pthread_mutex_destroy(&svc->mu);
    pthread_mutex_destroy(&svc->engine_mu);
    free(svc->dir);
    free(svc->provider);
    free(svc->model_name);
    free(svc);
}

void cdsh_xq_service_set_model_runner(cdsh_xq_service *svc, cdsh_xq_model_runner_fn fn, void *ud)
{
    pthread_mutex_lock(&svc->mu);
    svc->runner = fn;
    svc->runner_ud = ud;
    pthread_mutex_unlock(&svc->mu);
}

void cdsh_xq_service_set_listener(cdsh_xq_service *svc, cdsh_xq_change_fn fn, void *ud)
{
    pthread_mutex_lock(&svc->mu);
    svc->listener = fn;
    svc->listener_ud = ud;
    pthread_mutex_unlock(&svc->mu);
}

/* ---- games ------------------------------------------------------------------ */

static void apply_new_opts(cdsh_xq_service *svc, cdsh__xq_game *g, const cdsh_xq_new_opts *o)
{
    const char *side = o && o->side ? o->side : NULL;
    g->hero = side ? (strcmp(side, "b") == 0 ? CDSH_XQ_BLACK : CDSH_XQ_RED)
                   : (svc->o.default_hero == 'b' ? CDSH_XQ_BLACK : CDSH_XQ_RED);
    const char *opp = o && o->opponent ? o->opponent : svc->default_opponent;
    g->model = strcmp(opp, "model") == 0;
    free(g->provider);
    free(g->model_name);
    g->provider = svc->provider ? strdup(svc->provider) : NULL;
    g->model_name = svc->model_name ? strdup(svc->model_name) : NULL;
    g->max_plies =
        o && o->max_plies > 0 && o->max_plies < CDSH_XQ_MAX_PLY ? o->max_plies : svc->o.max_plies;
}

/* Finds or loads the game (creating a default one when no file exists). */
static cdsh__xq_game *get_game(cdsh_xq_service *svc, const char *key, cdsh_error *err)
{
    if (!cdsh_xq_service_key_valid(key)) {
        cdsh_error_set(err, CDSH_EINVAL, "BAD_GAME_KEY",
                       "game key must be 1..96 of [A-Za-z0-9_-], got \"%s\"", key ? key : "");
        return NULL;
    }
    pthread_mutex_lock(&svc->mu);
    cdsh__xq_game *g = svc->games;
    while (g && strcmp(g->key, key) != 0)
        g = g->next;
    if (g) {
        pthread_mutex_unlock(&svc->mu);
        return g;
    }
    char file[CDSH__XQ_KEY_MAX + 8];
    snprintf(file, sizeof file, "%s.json", key);
    char *path = cdsh_fs_path_join_dup(svc->dir, file);
    g = path ? cdsh__xq_game_new(key, path) : NULL;
    free(path);
    if (!g) {
        pthread_mutex_unlock(&svc->mu);
        nomem(err);
        return NULL;
    }
    cdsh_error lerr;
    int rc = cdsh__xq_game_load(g, &lerr);
    if (rc == CDSH_ENOTFOUND) {
        apply_new_opts(svc, g, NULL);
        g->revision = 1;
        rc = cdsh__xq_game_save(g, &lerr);
    } else if (rc == 0 && g->pending == CDSH__XQ_PENDING_THINKING) {
        /* the process that was thinking is gone */
        g->pending = CDSH__XQ_PENDING_FAILED;
    }
    if (rc == 0)
        rc = cdsh__xq_game_refresh(g, &lerr);
    if (rc != 0) {
        pthread_mutex_unlock(&svc->mu);
        cdsh__xq_game_free(g);
        if (err)
            *err = lerr;
        return NULL;
    }
    g->next = svc->games;
    svc->games = g;
    pthread_mutex_unlock(&svc->mu);
    return g;
}

/* Refusal value (seed §2.1). */
static json_t *refusal(const cdsh__xq_game *g, const char *code, const char *zh, const char *en)
{
    json_t *legal = cdsh__xq_game_legal_json(g);
    return json_pack("{s:b,s:s,s:s,s:s,s:I,s:o}", "ok", 0, "error", code, "errorZh", zh, "message",
                     en, "revision", (json_int_t)g->revision, "legalMoves",
                     legal ? legal : json_array());
}

static json_t *copy_cache(const cdsh__xq_game *g)
{
    return json_deep_copy(g->cache);
}

/* After a change: bump the revision, save, refresh. The caller holds the lock. */
static int commit(cdsh__xq_game *g, cdsh_error *err)
{
    g->revision++;
    int rc = cdsh__xq_game_save(g, err);
    if (rc == 0)
        rc = cdsh__xq_game_refresh(g, err);
    return rc;
}

static void notify(cdsh_xq_service *svc, const char *key, const json_t *proj)
{
    pthread_mutex_lock(&svc->mu);
    cdsh_xq_change_fn fn = svc->listener;
    void *ud = svc->listener_ud;
    pthread_mutex_unlock(&svc->mu);
    if (fn && proj && json_is_true(json_object_get(proj, "ok")))
        fn(ud, key, proj);
}

/* The local engine's move for the side to move (NONE when there is none). */
static cdsh_xq_move_t engine_move(cdsh_xq_service *svc, cdsh__xq_game *g)
{
    cdsh_xq_limits lim = {.depth = svc->o.engine_depth, .movetime_ms = svc->o.engine_movetime_ms};
    cdsh_xq_search_result res;
    cdsh_error err;
    pthread_mutex_lock(&svc->engine_mu);
    int rc = cdsh_xq_search(svc->engine, g->pos, &lim, NULL, NULL, &res, &err);
    pthread_mutex_unlock(&svc->engine_mu);
    return rc == 0 ? res.best : CDSH_XQ_MOVE_NONE;
}

/* What must happen once the lock is released. */
enum { AFTER_NONE = 0, AFTER_RUNNER = 1 };

/* The opponent is to move in a live game: the local engine moves now, a
 * model opponent is marked thinking (the runner starts after unlocking).
 * by_model: the change came from the model itself (a tool), which is in a
 * turn already. Holds the lock. */
static int opponent_turn(cdsh_xq_service *svc, cdsh__xq_game *g, int by_model, cdsh_error *err)
{
    cdsh__xq_game_refresh(g, err);
    if (g->over || !cdsh__xq_game_opponent_to_move(g))
        return AFTER_NONE;
    if (g->model) {
        if (by_model)
            return AFTER_NONE;
        g->pending = CDSH__XQ_PENDING_THINKING;
        g->msg_code[0] = g->msg_tone[0] = 0;
        return AFTER_RUNNER;
    }
    cdsh_xq_move_t m = engine_move(svc, g);
    if (m != CDSH_XQ_MOVE_NONE)
        cdsh__xq_game_play(g, m, err);
    return AFTER_NONE;
}

/* Starts the runner (no lock held); without one, or when it refuses, the
 * local engine moves instead (ai.fallback.local). */
static void start_runner(cdsh_xq_service *svc, const char *key)
{
    pthread_mutex_lock(&svc->mu);
    cdsh_xq_model_runner_fn fn = svc->runner;
    void *ud = svc->runner_ud;
    pthread_mutex_unlock(&svc->mu);
    if (!fn || fn(ud, key) != 0)
        cdsh_xq_service_fallback_ai(svc, key, "ai.fallback.local", NULL, NULL);
}

/* Finishes a change: returns the projection (plus nothing else), notifies,
 * starts the runner. The caller holds the write lock and passes `after`. */
static json_t *finish(cdsh_xq_service *svc, cdsh__xq_game *g, int after, json_t *extra,
                      cdsh_error *err)
{
    json_t *out = NULL;
    if (commit(g, err) == 0 && (out = copy_cache(g)) && extra)
        json_object_update(out, extra);
    json_decref(extra);
    json_t *note = out ? json_deep_copy(g->cache) : NULL;
    char key[CDSH__XQ_KEY_MAX + 1];
    snprintf(key, sizeof key, "%s", g->key);
    pthread_rwlock_unlock(&g->lock);
    notify(svc, key, note);
    json_decref(note);
    if (out && after == AFTER_RUNNER) {
        start_runner(svc, key);
        /* the runner (or the fallback) may already have moved */
        {
            pthread_rwlock_rdlock(&g->lock);
            if (g->revision > json_integer_value(json_object_get(out, "revision"))) {
                json_t *fresh = copy_cache(g);
                if (fresh) {
                    json_t *played = json_object_get(out, "played");
                    json_t *cap = json_object_get(out, "captured");
                    if (played)
                        json_object_set(fresh, "played", played);
                    if (cap)
                        json_object_set(fresh, "captured", cap);
                    json_decref(out);
                    out = fresh;
                }
            }
            pthread_rwlock_unlock(&g->lock);
        }
    }
    return out;
}

/* ---- reads ------------------------------------------------------------------ */

json_t *cdsh_xq_service_state(cdsh_xq_service *svc, const char *key, cdsh_error *err)
{
    cdsh__xq_game *g = get_game(svc, key, err);
    if (!g)
        return NULL;
    pthread_rwlock_rdlock(&g->lock);
    json_t *out = copy_cache(g);
    pthread_rwlock_unlock(&g->lock);
    if (!out)
        nomem(err);
    return out;
}

/* Copies the position (search and notation helpers need a mutable one). */
static cdsh_xq_pos *pos_copy(const cdsh_xq_pos *pos)
{
    cdsh_xq_pos *p = malloc(sizeof *p);
    if (p)
        memcpy(p, pos, sizeof *p);
    return p;
}

/* ---- evaluations: one perspective, one function ----------------------------- */

/* Every figure the service reports (board evaluation, hint, review curve)
 * comes from here: a search of pos to `depth` by the analysis engine,
 * cleared first, so a position and a depth give the same number whatever
 * was searched before (the opponent's engine keeps its hash between moves
 * and is never used for figures). Scores are turned to Red's view (positive
 * favours Red), mates too (positive: Red mates). Caller holds engine_mu. */
static int analyse(cdsh_xq_service *svc, const cdsh_xq_pos *pos, int depth, int multipv,
                   cdsh_xq_search_result *res, cdsh_error *err)
{
    cdsh_xq_engine_clear(svc->analysis);
    cdsh_xq_limits lim = {.depth = depth, .multipv = multipv};
    int rc = cdsh_xq_search(svc->analysis, pos, &lim, NULL, NULL, res, err);
    if (rc)
        return rc;
    const int sign = cdsh_xq_side_to_move(pos) == CDSH_XQ_RED ? 1 : -1;
    res->score *= sign;
    res->mate *= sign;
    for (int i = 0; i < res->nlines; i++) {
        res->lines[i].score *= sign;
        res->lines[i].mate *= sign;
    }
    return 0;
}

/* Red's-view score of pos at depth (see analyse); 0 if the search fails. */
static int red_score(cdsh_xq_service *svc, const cdsh_xq_pos *pos, int depth)
{
    cdsh_xq_search_result res;
    cdsh_error err;
    return analyse(svc, pos, depth, 1, &res, &err) == 0 ? res.score : 0;
}

json_t *cdsh_xq_service_board(cdsh_xq_service *svc, const char *key, bool include_moves,
                              bool include_eval, bool ascii, cdsh_error *err)
{
    cdsh__xq_game *g = get_game(svc, key, err);
    if (!g)
        return NULL;
    pthread_rwlock_rdlock(&g->lock);
    json_t *out = copy_cache(g);
    if (out && ascii) {
        char *d = cdsh__xq_drawing_dup(g->pos, 0);
        json_object_set_new(out, "ascii", json_string(d ? d : ""));
        free(d);
    }
    if (out && include_moves) {
        json_t *l = cdsh__xq_game_legal_json(g);
        json_object_set_new(out, "legalMoves", l ? l : json_array());
    }
    if (out && include_eval) { /* the review's figure for this position */
        const int depth = svc->o.review_depth;
        pthread_mutex_lock(&svc->engine_mu);
        const int sc = red_score(svc, g->pos, depth);
        pthread_mutex_unlock(&svc->engine_mu);
        const int stm = cdsh_xq_side_to_move(g->pos);
        json_object_set_new(out, "evaluation",
                            json_pack("{s:i,s:i,s:i}", "score", sc, "sideScore",
                                      stm == CDSH_XQ_RED ? sc : -sc, "depth", depth));
    }
    pthread_rwlock_unlock(&g->lock);
    if (!out)
        nomem(err);
    return out;
}

/* ---- changes ---------------------------------------------------------------- */

json_t *cdsh_xq_service_new_game(cdsh_xq_service *svc, const char *key,
                                 const cdsh_xq_new_opts *opts, cdsh_error *err)
{
    cdsh__xq_game *g = get_game(svc, key, err);
    if (!g)
        return NULL;
    pthread_rwlock_wrlock(&g->lock);
    cdsh_error ferr;
    if (cdsh__xq_game_reset(g, opts ? opts->fen : NULL, &ferr) != 0) {
        const char *zh = cdsh_xq_error_zh(ferr.code);
        json_t *r = refusal(g, "BAD_FEN", zh ? zh : "局面（FEN）无效", ferr.message);
        pthread_rwlock_unlock(&g->lock);
        return r;
    }
    apply_new_opts(svc, g, opts);
    int after = opponent_turn(svc, g, opts && opts->actor == CDSH_XQ_ACTOR_OPPONENT, err);
    return finish(svc, g, after, NULL, err);
}

static json_t *turn_refusal(const cdsh__xq_game *g, cdsh_xq_actor actor)
{
    if (actor == CDSH_XQ_ACTOR_OPPONENT)
        return refusal(g, "NOT_YOUR_TURN", "现在不是对手的回合，不得替人类方走子",
                       "it is the person's turn: the opponent must not move for them");
    return refusal(g, "NOT_YOUR_TURN", "现在是对手的回合，请等待对手走子",
                   "it is the opponent's turn: wait for its move");
}

static json_t *over_refusal(const cdsh__xq_game *g)
{
    char zh[192];
    snprintf(zh, sizeof zh, "对局已结束：%s", g->reason_zh);
    return refusal(g, "GAME_OVER", zh, "the game is over; start a new one");
}

/* Parses the move for the side to move: 0, or a refusal in *refused. */
static int parse_move(cdsh__xq_game *g, const char *text, int from, int to, cdsh_xq_move_t *m,
                      json_t **refused)
{
    if (!text) {
        if (from < 0 || from > 89 || to < 0 || to > 89) {
            *refused = refusal(g, "BAD_NOTATION", "坐标超出棋盘范围（应为 0..89）",
                               "from and to must be board indexes 0..89");
            return -1;
        }
        char iccs[6];
        cdsh_xq_move_to_iccs(
            cdsh_xq_move_make(cdsh_xq_square_from_index90(from), cdsh_xq_square_from_index90(to)),
            iccs);
        cdsh_xq_notation_error ne;
        if (cdsh_xq_parse_any(g->pos, iccs, m, &ne) == 0)
            return 0;
        *refused = refusal(g, "ILLEGAL_MOVE", ne.zh, ne.err.message);
        return -1;
    }
    cdsh_xq_notation_error ne;
    memset(&ne, 0, sizeof ne);
    if (cdsh_xq_parse_any(g->pos, text, m, &ne) == 0)
        return 0;
    const char *code = strcmp(ne.err.code, "NOTATION_SYNTAX") == 0      ? "BAD_NOTATION"
                       : strcmp(ne.err.code, "NOTATION_AMBIGUOUS") == 0 ? "AMBIGUOUS_MOVE"
                                                                        : "ILLEGAL_MOVE";
    *refused = refusal(g, code, ne.zh[0] ? ne.zh : "着法无效", ne.err.message);
    return -1;
}

json_t *cdsh_xq_service_move(cdsh_xq_service *svc, const char *key, cdsh_xq_actor actor,
                             const char *text, int from, int to, cdsh_error *err)
{
    cdsh__xq_game *g = get_game(svc, key, err);
    if (!g)
        return NULL;
    pthread_rwlock_wrlock(&g->lock);
    json_t *refused = NULL;
    if (g->over)
        refused = over_refusal(g);
    else if ((actor == CDSH_XQ_ACTOR_OPPONENT) != cdsh__xq_game_opponent_to_move(g))
        refused = turn_refusal(g, actor);
    cdsh_xq_move_t m = 0;
    if (!refused && parse_move(g, text, from, to, &m, &refused) == 0) {
        int rc = cdsh__xq_game_play(g, m, err);
        if (rc != 0) {
            pthread_rwlock_unlock(&g->lock);
            return NULL;
        }
    }
    if (refused) {
        if (actor == CDSH_XQ_ACTOR_OPPONENT)
            g->invalid++;
        pthread_rwlock_unlock(&g->lock);
        return refused;
    }
    const cdsh__xq_ply *p = &g->plies[g->nplies - 1];
    char cap[2] = {p->captured, 0};
    json_t *extra = json_pack("{s:s,s:s}", "played", p->zh, "captured", cap);
    int after = AFTER_NONE;
    if (actor == CDSH_XQ_ACTOR_OPPONENT) {
        g->invalid = 0;
        g->pending = CDSH__XQ_PENDING_NONE;
        if (!g->model)
            g->msg_code[0] = g->msg_tone[0] = 0;
    } else {
        g->msg_code[0] = g->msg_tone[0] = 0;
        after = opponent_turn(svc, g, 0, err);
    }
    return finish(svc, g, after, extra, err);
}

json_t *cdsh_xq_service_undo(cdsh_xq_service *svc, const char *key, cdsh_xq_actor actor, int plies,
                             cdsh_error *err)
{
    cdsh__xq_game *g = get_game(svc, key, err);
    if (!g)
        return NULL;
    if (plies <= 0)
        plies = 2;
    pthread_rwlock_wrlock(&g->lock);
    if (g->nplies == 0) {
        json_t *r =
            refusal(g, "NOTHING_TO_UNDO", "没有可以悔的棋", "there is no move to take back");
        pthread_rwlock_unlock(&g->lock);
        return r;
    }
    json_t *undone = json_array();
    cdsh__xq_ply u;
    for (int i = 0; i < plies && cdsh__xq_game_unplay(g, &u) == 0; i++) {
        char cap[2] = {u.captured, 0};
        json_array_append_new(
            undone, json_pack("{s:s,s:s,s:s}", "iccs", u.iccs, "zh", u.zh, "captured", cap));
    }
    /* the person gets the move back */
    if (actor == CDSH_XQ_ACTOR_HERO && cdsh__xq_game_opponent_to_move(g) &&
        cdsh__xq_game_unplay(g, &u) == 0) {
        char cap[2] = {u.captured, 0};
        json_array_append_new(
            undone, json_pack("{s:s,s:s,s:s}", "iccs", u.iccs, "zh", u.zh, "captured", cap));
    }
    g->resigned = -1;
    g->pending = CDSH__XQ_PENDING_NONE;
    g->msg_code[0] = g->msg_tone[0] = 0;
    int after = opponent_turn(svc, g, actor == CDSH_XQ_ACTOR_OPPONENT, err);
    return finish(svc, g, after, json_pack("{s:o}", "undone", undone), err);
}

json_t *cdsh_xq_service_resign(cdsh_xq_service *svc, const char *key, cdsh_error *err)
{
    cdsh__xq_game *g = get_game(svc, key, err);
    if (!g)
        return NULL;
    pthread_rwlock_wrlock(&g->lock);
    if (g->over) {
        json_t *r = over_refusal(g);
        pthread_rwlock_unlock(&g->lock);
        return r;
    }
    g->resigned = g->hero;
    g->pending = CDSH__XQ_PENDING_NONE;
    return finish(svc, g, AFTER_NONE, NULL, err);
}

static json_t *fallback_locked(cdsh_xq_service *svc, cdsh__xq_game *g, const char *code,
                               const char *tone, const cdsh_error *cause, cdsh_error *err)
{
    cdsh_xq_move_t m = engine_move(svc, g);
    if (m != CDSH_XQ_MOVE_NONE && cdsh__xq_game_play(g, m, err) != 0) {
        pthread_rwlock_unlock(&g->lock);
        return NULL;
    }
    g->pending = CDSH__XQ_PENDING_NONE;
    g->invalid = 0;
    snprintf(g->msg_code, sizeof g->msg_code, "%s", code);
    snprintf(g->msg_tone, sizeof g->msg_tone, "%s", tone);
    snprintf(g->cause_code, sizeof g->cause_code, "%s", cause ? cause->code : "");
    snprintf(g->cause_text, sizeof g->cause_text, "%s", cause ? cause->message : "");
    return finish(svc, g, AFTER_NONE, NULL, err);
}

json_t *cdsh_xq_service_fallback(cdsh_xq_service *svc, const char *key, cdsh_error *err)
{
    cdsh__xq_game *g = get_game(svc, key, err);
    if (!g)
        return NULL;
    pthread_rwlock_wrlock(&g->lock);
    if (g->over || !cdsh__xq_game_opponent_to_move(g)) {
        json_t *r = g->over ? over_refusal(g)
                            : refusal(g, "AI_NOT_PENDING", "现在不是对手的回合，无需代走",
                                      "the opponent is not to move");
        pthread_rwlock_unlock(&g->lock);
        return r;
    }
    return fallback_locked(svc, g, "ai.fallback.local", "warn", NULL, err);
}

int cdsh_xq_service_fallback_ai(cdsh_xq_service *svc, const char *key, const char *code,
                                const cdsh_error *cause, cdsh_error *err)
{
    cdsh__xq_game *g = get_game(svc, key, err);
    if (!g)
        return err ? err->rc : CDSH_EINVAL;
    pthread_rwlock_wrlock(&g->lock);
    if (g->over || !cdsh__xq_game_opponent_to_move(g) || !g->model) {
        pthread_rwlock_unlock(&g->lock);
        return 0;
    }
    json_t *r = fallback_locked(svc, g, code, "warn", cause, err);
    if (!r)
        return err ? err->rc : CDSH_EIO;
    json_decref(r);
    return 0;
}

int cdsh_xq_service_mark_failed(cdsh_xq_service *svc, const char *key, const char *code,
                                const cdsh_error *cause, cdsh_error *err)
{
    cdsh__xq_game *g = get_game(svc, key, err);
    if (!g)
        return err ? err->rc : CDSH_EINVAL;
    pthread_rwlock_wrlock(&g->lock);
    if (g->over || !g->model || !cdsh__xq_game_opponent_to_move(g)) {
        pthread_rwlock_unlock(&g->lock);
        return 0;
    }
    g->pending = CDSH__XQ_PENDING_FAILED;
    snprintf(g->msg_code, sizeof g->msg_code, "%s", code);
    snprintf(g->msg_tone, sizeof g->msg_tone, "error");
    snprintf(g->cause_code, sizeof g->cause_code, "%s", cause ? cause->code : "");
    snprintf(g->cause_text, sizeof g->cause_text, "%s", cause ? cause->message : "");
    json_t *r = finish(svc, g, AFTER_NONE, NULL, err);
    if (!r)
        return err ? err->rc : CDSH_EIO;
    json_decref(r);
    return 0;
}

int cdsh_xq_service_add_usage(cdsh_xq_service *svc, const char *key, int64_t input_tokens,
                              int64_t output_tokens, int64_t total_tokens, cdsh_error *err)
{
    cdsh__xq_game *g = get_game(svc, key, err);
    if (!g)
        return err ? err->rc : CDSH_EINVAL;
    pthread_rwlock_wrlock(&g->lock);
    g->in_tok += input_tokens;
    g->out_tok += output_tokens;
    g->tot_tok += total_tokens ? total_tokens : input_tokens + output_tokens;
    g->calls++;
    int rc = commit(g, err);
    json_t *note = rc == 0 ? json_deep_copy(g->cache) : NULL;
    pthread_rwlock_unlock(&g->lock);
    notify(svc, key, note);
    json_decref(note);
    return rc;
}

int cdsh_xq_service_turn_info(cdsh_xq_service *svc, const char *key, cdsh_xq_turn_info *out,
                              cdsh_error *err)
{
    memset(out, 0, sizeof *out);
    cdsh__xq_game *g = get_game(svc, key, err);
    if (!g)
        return err ? err->rc : CDSH_EINVAL;
    pthread_rwlock_rdlock(&g->lock);
    out->model_to_move = g->model && !g->over && cdsh__xq_game_opponent_to_move(g);
    out->revision = g->revision;
    out->invalid_moves = g->invalid;
    out->calls = g->calls;
    out->total_tokens = g->tot_tok;
    cdsh_xq_pos_fen(g->pos, out->fen);
    pthread_rwlock_unlock(&g->lock);
    return 0;
}

/* ---- hint and review ---------------------------------------------------------- */

static json_t *pv_json(const cdsh_xq_pos *start, const cdsh_xq_line *l, json_t **zh_out)
{
    json_t *iccs = json_array(), *zh = json_array();
    cdsh_xq_pos *p = pos_copy(start);
    for (int i = 0; p && i < l->pv_len; i++) {
        char a[6], z[CDSH_XQ_ZH_MAX];
        cdsh_xq_move_to_iccs(l->pv[i], a);
        if (cdsh_xq_move_to_chinese(p, l->pv[i], z, sizeof z) != 0 ||
            cdsh_xq_play(p, l->pv[i], NULL) != 0)
            break;
        json_array_append_new(iccs, json_string(a));
        json_array_append_new(zh, json_string(z));
    }
    free(p);
    *zh_out = zh;
    return iccs;
}

json_t *cdsh_xq_service_hint(cdsh_xq_service *svc, const char *key, int count, int depth,
                             cdsh_error *err)
{
    cdsh__xq_game *g = get_game(svc, key, err);
    if (!g)
        return NULL;
    if (count <= 0)
        count = svc->o.hint_count;
    if (count > CDSH_XQ_MULTIPV_MAX)
        count = CDSH_XQ_MULTIPV_MAX;
    if (depth <= 0)
        depth = svc->o.hint_depth;
    if (depth > 30)
        depth = 30;
    pthread_rwlock_rdlock(&g->lock);
    json_t *out = copy_cache(g);
    json_t *cands = json_array();
    json_t *evaluation = json_null();
    if (!g->over && g->nlegal > 0) {
        if (count > g->nlegal)
            count = g->nlegal;
        cdsh_xq_search_result *res = malloc(sizeof *res), *one = malloc(sizeof *one);
        cdsh_error serr;
        pthread_mutex_lock(&svc->engine_mu);
        int rc = res && one ? analyse(svc, g->pos, depth, count, res, &serr) : -1;
        /* the evaluation is the one-line search the board and the review
         * make, so all three agree for a position and depth */
        if (rc == 0)
            rc = count == 1 ? (*one = *res, 0) : analyse(svc, g->pos, depth, 1, one, &serr);
        pthread_mutex_unlock(&svc->engine_mu);
        for (int i = 0; rc == 0 && i < res->nlines; i++) {
            const cdsh_xq_line *l = &res->lines[i];
            if (l->pv_len == 0)
                continue;
            json_t *zhs = NULL;
            json_t *pv = pv_json(g->pos, l, &zhs);
            char a[6], z[CDSH_XQ_ZH_MAX] = "";
            cdsh_xq_move_to_iccs(l->pv[0], a);
            cdsh_xq_move_to_chinese(g->pos, l->pv[0], z, sizeof z);
            json_array_append_new(
                cands,
                json_pack("{s:s,s:s,s:i,s:i,s:i,s:i,s:i,s:o,s:o}", "iccs", a, "zh", z, "from",
                          cdsh_xq_square_index90(cdsh_xq_move_from(l->pv[0])), "to",
                          cdsh_xq_square_index90(cdsh_xq_move_to(l->pv[0])), "score", l->score,
                          "mate", l->mate, "depth", l->depth, "pv", pv, "pvZh", zhs));
        }
        if (rc == 0 && one->nlines > 0) {
            char a[6];
            cdsh_xq_move_to_iccs(one->best, a);
            json_decref(evaluation);
            evaluation = json_pack("{s:i,s:i,s:i,s:s}", "score", one->score, "mate", one->mate,
                                   "depth", one->depth, "bestIccs", a);
        }
        free(res);
        free(one);
    }
    pthread_rwlock_unlock(&g->lock);
    if (!out || !cands) {
        json_decref(out);
        json_decref(cands);
        json_decref(evaluation);
        nomem(err);
        return NULL;
    }
    json_object_set_new(out, "candidates", cands);
    json_object_set_new(out, "evaluation", evaluation);
    return out;
}

/* Red's-view score of pos (see analyse), clamped for the chart (mates
 * become +-REVIEW_CLAMP). */
static int review_score(cdsh_xq_service *svc, const cdsh_xq_pos *pos, int depth)
{
    int sc = red_score(svc, pos, depth);
    if (sc > REVIEW_CLAMP)
        sc = REVIEW_CLAMP;
    if (sc < -REVIEW_CLAMP)
        sc = -REVIEW_CLAMP;
    return sc;
}

json_t *cdsh_xq_service_review(cdsh_xq_service *svc, const char *key, const char *highlight,
                               cdsh_error *err)
{
    cdsh__xq_game *g = get_game(svc, key, err);
    if (!g)
        return NULL;
    int all = highlight && strcmp(highlight, "all") == 0;
    pthread_rwlock_rdlock(&g->lock);
    json_t *out = copy_cache(g);
    int n = g->nplies;
    cdsh__xq_ply *plies = n ? malloc((size_t)n * sizeof *plies) : NULL;
    if (n && plies)
        memcpy(plies, g->plies, (size_t)n * sizeof *plies);
    char start[CDSH_XQ_FEN_MAX];
    snprintf(start, sizeof start, "%s", g->start_fen);
    pthread_rwlock_unlock(&g->lock);
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    json_t *moves = json_array(), *turning = json_array(), *curve = json_array();
    if (!out || !pos || !moves || !turning || !curve || (n && !plies) ||
        cdsh_xq_pos_set_fen(pos, start, err) != 0) {
        json_decref(out);
        json_decref(moves);
        json_decref(turning);
        json_decref(curve);
        free(plies);
        cdsh_xq_pos_free(pos);
        if (err && !err->code[0])
            nomem(err);
        return NULL;
    }
    pthread_mutex_lock(&svc->engine_mu);
    int prev = review_score(svc, pos, svc->o.review_depth);
    json_array_append_new(curve, json_pack("{s:i,s:i}", "ply", 0, "score", prev));
    for (int i = 0; i < n; i++) {
        int side = cdsh_xq_side_to_move(pos);
        if (cdsh_xq_play(pos, plies[i].move, NULL) != 0)
            break;
        int sc = review_score(svc, pos, svc->o.review_depth);
        int delta = sc - prev;
        int mover_delta = side == CDSH_XQ_RED ? delta : -delta;
        int is_turn = abs(delta) >= svc->o.turning_cp;
        const char *kind = mover_delta < 0 ? "失误" : "好棋";
        char cap[2] = {plies[i].captured, 0};
        json_array_append_new(curve, json_pack("{s:i,s:i}", "ply", i + 1, "score", sc));
        json_array_append_new(moves, json_pack("{s:i,s:s,s:s,s:s,s:s,s:i,s:i,s:b}", "ply", i + 1,
                                               "side", side == CDSH_XQ_RED ? "r" : "b", "iccs",
                                               plies[i].iccs, "zh", plies[i].zh, "captured", cap,
                                               "score", sc, "delta", delta, "turning", is_turn));
        if (is_turn)
            json_array_append_new(turning, json_pack("{s:i,s:s,s:s,s:s,s:i,s:i,s:s}", "ply", i + 1,
                                                     "side", side == CDSH_XQ_RED ? "r" : "b",
                                                     "iccs", plies[i].iccs, "zh", plies[i].zh,
                                                     "score", sc, "delta", delta, "kindZh", kind));
        prev = sc;
    }
    pthread_mutex_unlock(&svc->engine_mu);
    free(plies);
    cdsh_xq_pos_free(pos);
    json_object_set_new(out, "highlight", json_string(all ? "all" : "turning"));
    json_object_set_new(out, "moves", moves);
    json_object_set_new(out, "turningPoints", turning);
    json_object_set_new(out, "curve", curve);
    return out;
}

/* ---- export ------------------------------------------------------------------- */

json_t *cdsh_xq_service_export(cdsh_xq_service *svc, const char *key, cdsh_error *err)
{
    cdsh__xq_game *g = get_game(svc, key, err);
    if (!g)
        return NULL;
    pthread_rwlock_rdlock(&g->lock);
    char fen[CDSH_XQ_FEN_MAX], date[16];
    cdsh_xq_pos_fen(g->pos, fen);
    int64_t now = cdsh_clock_wall_ms();
    char iso[CDSH_ISO8601_MAX];
    cdsh_clock_format_iso8601(now, iso, sizeof iso);
    snprintf(date, sizeof date, "%.4s.%.2s.%.2s", iso, iso + 5, iso + 8);
    const char *result = g->winner == CDSH_XQ_RED     ? "1-0"
                         : g->winner == CDSH_XQ_BLACK ? "0-1"
                         : g->over                    ? "1/2-1/2"
                                                      : "*";
    const char *opp = g->model ? "model" : "cdsh local engine";
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    cdsh_strbuf_appendf(&sb,
                        "[Game \"Chinese Chess\"]\n[Event \"cdsh xiangqi\"]\n[Site \"cdsh\"]\n"
                        "[Date \"%s\"]\n[Red \"%s\"]\n[Black \"%s\"]\n[Result \"%s\"]\n",
                        date, g->hero == CDSH_XQ_RED ? "person" : opp,
                        g->hero == CDSH_XQ_BLACK ? "person" : opp, result);
    if (strcmp(g->start_fen, CDSH_XQ_START_FEN) != 0)
        cdsh_strbuf_appendf(&sb, "[FEN \"%s\"]\n", g->start_fen);
    cdsh_strbuf_append_str(&sb, "[Format \"ICCS\"]\n\n");
    int black_first = strstr(g->start_fen, " b ") != NULL;
    int number = 1;
    for (int i = 0; i < g->nplies; i++) {
        const cdsh__xq_ply *p = &g->plies[i];
        int red_ply = black_first ? (i % 2 == 1) : (i % 2 == 0);
        if (red_ply)
            cdsh_strbuf_appendf(&sb, "%d. ", number);
        else if (i == 0)
            cdsh_strbuf_appendf(&sb, "%d. ... ", number);
        cdsh_strbuf_appendf(&sb, "%c%c-%c%c {%s} ", toupper((unsigned char)p->iccs[0]), p->iccs[1],
                            toupper((unsigned char)p->iccs[2]), p->iccs[3], p->zh);
        if (!red_ply) {
            number++;
            cdsh_strbuf_append_char(&sb, '\n');
        }
    }
    cdsh_strbuf_appendf(&sb, "%s\n", result);
    char *pgn = cdsh_strbuf_take(&sb, NULL);
    json_t *out =
        pgn ? json_pack("{s:s,s:s,s:s}", "fen", fen, "startFen", g->start_fen, "pgn", pgn) : NULL;
    free(pgn);
    pthread_rwlock_unlock(&g->lock);
    if (!out)
        nomem(err);
    return out;
}
