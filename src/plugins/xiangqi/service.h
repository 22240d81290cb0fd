/* service.h — the xiangqi game service: one game per key (a session id), kept
 * as an atomic JSON file under $CDSH_HOME/xiangqi/; the one implementation of
 * new/state/move/undo/hint/review/resign/fallback/export that the tools, the
 * /xiangqi command, the RPC channel and `cdsh xiangqi play` wrap. Thread-safe:
 * per-game read-write locks (changes serialised and saved first, reads parallel). */
#ifndef CDSH_XQ_SERVICE_H
#define CDSH_XQ_SERVICE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "base/home.h"

/* Projection contract (seed §2.2), returned by every operation on success:
 *   {ok:true, revision, fen, turn:"r"|"b", hero:"r"|"b", phase:"playing"|"over",
 *    pending:null|"ai-thinking"|"ai-failed",
 *    status:{state, winner:null|"r"|"b", reasonZh},
 *    inCheck (the side to move is in check; a cdsh addition for the panel),
 *    board:[90 strings: FEN letter or "" ; index (9-rank)*9+file, 0 = a9],
 *    legalTargets:{"<from>":[to...]},  (side to move; {} when the game is over)
 *    lastMove:null|{from,to,iccs,zh}, history:[{zh,iccs,captured}],
 *    opponent:{kind:"local"|"model", provider, model, label},
 *    usage:{inputTokens,outputTokens,totalTokens,calls}, clock:{red,black} (s),
 *    message:null|{code,tone:"info"|"warn"|"error"}}
 * A refused action returns instead (also a value, never an error):
 *   {ok:false, error:<CODE>, errorZh, message (English), revision,
 *    legalMoves:[{iccs,zh}...] (side to move)}
 * Codes: NOT_YOUR_TURN, ILLEGAL_MOVE, BAD_NOTATION, AMBIGUOUS_MOVE,
 * GAME_OVER, NOTHING_TO_UNDO, AI_NOT_PENDING, BAD_FEN. */

typedef struct cdsh_xq_service cdsh_xq_service;

/* Who acts: tools act for the opponent (the model), commands and RPC for
 * the person (the hero). */
typedef enum cdsh_xq_actor { CDSH_XQ_ACTOR_HERO = 0, CDSH_XQ_ACTOR_OPPONENT = 1 } cdsh_xq_actor;

/* Starts the model's turn for `key` on a thread of its own; the service
 * calls it (with no lock held) whenever a model opponent is to move. The
 * runner plays through the tools and, when it gives up, calls
 * cdsh_xq_service_fallback_ai. Return 0 if started; a failure makes the
 * service fall back to the local engine at once (ai.fallback.local). */
typedef int (*cdsh_xq_model_runner_fn)(void *ud, const char *key);

typedef struct cdsh_xq_service_opts {
    const char *dir;                         /* storage directory; NULL: <home>/xiangqi */
    const cdsh_home *home;                   /* borrowed, only read by cdsh_xq_service_new */
    char default_hero;                       /* 'r' or 'b'; 0 = 'r' */
    const char *default_opponent;            /* "local" | "model"; NULL = "local" */
    int max_plies;                           /* default game length limit; 0 = 300 */
    int engine_depth;                        /* local opponent: depth limit; 0 = 5 */
    int64_t engine_movetime_ms;              /* local opponent: time per move; 0 = 1000 */
    int engine_hash_mb;                      /* 0 = 16 */
    int hint_count, hint_depth;              /* defaults for hint; 0 = 3, 6 */
    int review_depth;                        /* search depth per ply of the curve; 0 = 2 */
    int turning_cp;                          /* a swing this large is a turning point; 0 = 150 */
    const char *model_provider, *model_name; /* shown in opponent{} for model games */
} cdsh_xq_service_opts;

/* Creates the directory when needed. Errors: NO_HOME, CDSH_EIO, CDSH_ENOMEM. */
int cdsh_xq_service_new(const cdsh_xq_service_opts *opts, cdsh_xq_service **out, cdsh_error *err);
/* Waits for no one: stop model runners before freeing. NULL-safe. */
void cdsh_xq_service_free(cdsh_xq_service *svc);

/* Installs the model runner (NULL removes it: model games then fall back to
 * the local engine with ai.fallback.local). */
void cdsh_xq_service_set_model_runner(cdsh_xq_service *svc, cdsh_xq_model_runner_fn fn, void *ud);

/* Called (no lock held) after every change with the new projection
 * (borrowed) — the plugin turns it into a `xiangqi/state` event. */
typedef void (*cdsh_xq_change_fn)(void *ud, const char *key, const json_t *projection);
void cdsh_xq_service_set_listener(cdsh_xq_service *svc, cdsh_xq_change_fn fn, void *ud);

/* Keys are 1..96 of [A-Za-z0-9_-] (session ids "s-..." qualify). */
bool cdsh_xq_service_key_valid(const char *key);

/* Every function below returns an owned JSON value (projection or refusal),
 * or NULL with err set for a bad key, storage failure or no memory. A key
 * without a game gets a new default game first. */

/* Projection of the current game. Readers run in parallel. */
json_t *cdsh_xq_service_state(cdsh_xq_service *svc, const char *key, cdsh_error *err);
/* Projection plus ascii (board drawing), legalMoves [{iccs,zh}] and, with
 * include_eval, evaluation {score (cp, Red's view), sideScore (the side to
 * move's view), depth (the review depth)}. Every evaluation the service
 * reports — board, hint, review — is Red's view (positive favours Red; a
 * mate count is positive when Red mates) and comes from one search function
 * on a cleared analysis engine: the same position at the same depth gives
 * the same figure in all three, on every call.
 * include_moves false drops legalMoves. For xiangqi_board. */
json_t *cdsh_xq_service_board(cdsh_xq_service *svc, const char *key, bool include_moves,
                              bool include_eval, bool ascii, cdsh_error *err);

/* New game. side: hero's side "r"/"b" (NULL: default); opponent "local" /
 * "model" (NULL: default); max_plies <= 0: default; fen NULL: start. */
typedef struct cdsh_xq_new_opts {
    const char *side, *opponent, *fen;
    int max_plies;
    cdsh_xq_actor actor; /* the model itself (a tool) never starts the model runner */
} cdsh_xq_new_opts;
json_t *cdsh_xq_service_new_game(cdsh_xq_service *svc, const char *key,
                                 const cdsh_xq_new_opts *opts, cdsh_error *err);

/* Plays `text` (ICCS, Chinese or WXF) or, when text is NULL, from/to
 * (0..89 indexes) for `actor`. Adds `played` (Chinese) and `captured`
 * (FEN letter or "") to the projection. A local opponent answers before
 * this returns; a model opponent is started (pending "ai-thinking"). */
json_t *cdsh_xq_service_move(cdsh_xq_service *svc, const char *key, cdsh_xq_actor actor,
                             const char *text, int from, int to, cdsh_error *err);
/* Takes back `plies` (>= 1) plies; adds undone:[{iccs,zh,captured}] (last
 * first). A person's undo that would leave the opponent to move is extended
 * by one ply when possible, so the person is to move again. */
json_t *cdsh_xq_service_undo(cdsh_xq_service *svc, const char *key, cdsh_xq_actor actor, int plies,
                             cdsh_error *err);
/* Local engine candidates, never the model: adds candidates:[{iccs,zh,score,
 * mate,pv:[iccs],pvZh:[zh]}] and evaluation {score, mate, depth, bestIccs}
 * (Red's view, the one-line search at that depth: what the board and the
 * review say for the position at that depth).
 * count <= 0 / depth <= 0: defaults. */
json_t *cdsh_xq_service_hint(cdsh_xq_service *svc, const char *key, int count, int depth,
                             cdsh_error *err);
/* Review: adds highlight, moves:[{ply,side,iccs,zh,captured,score,delta,
 * turning}] (every ply), turningPoints:[{ply,side,iccs,zh,score,delta,
 * kindZh}] (|delta| >= turning_cp; kindZh 失误 or 好棋 from the mover's view)
 * and curve:[{ply,score}] (Red's view, ply 0 = start). highlight (NULL:
 * "turning") says what renderers emphasise: the turning points or all moves. */
json_t *cdsh_xq_service_review(cdsh_xq_service *svc, const char *key, const char *highlight,
                               cdsh_error *err);
/* The person resigns: the game ends, the opponent wins. */
json_t *cdsh_xq_service_resign(cdsh_xq_service *svc, const char *key, cdsh_error *err);
/* The person gives up waiting for the model: the local engine moves now
 * (message ai.fallback.local). Refusal AI_NOT_PENDING when the opponent is
 * not to move. */
json_t *cdsh_xq_service_fallback(cdsh_xq_service *svc, const char *key, cdsh_error *err);

/* ---- for the model runner -------------------------------------------------- */

/* The runner gave up with `code` (ai.timeout, ai.budget, ai.fallback.local):
 * if the opponent is still to move at `revision_seen` or later, the local
 * engine moves and message.code becomes `code` (tone warn); cause (may be
 * NULL) is why, kept with the message (a timeout's: the endpoint's or the
 * move clock's). 0 or error. */
int cdsh_xq_service_fallback_ai(cdsh_xq_service *svc, const char *key, const char *code,
                                const cdsh_error *cause, cdsh_error *err);
/* Adds one model call's tokens to the game's usage (no revision change). */
int cdsh_xq_service_add_usage(cdsh_xq_service *svc, const char *key, int64_t input_tokens,
                              int64_t output_tokens, int64_t total_tokens, cdsh_error *err);
/* Snapshot for the runner: is the model to move, and counters. */
typedef struct cdsh_xq_turn_info {
    bool model_to_move; /* opponent kind model, game on, opponent's turn */
    int64_t revision;
    int invalid_moves;           /* refused opponent moves since its last good one */
    int64_t calls, total_tokens; /* usage of this game */
    char fen[128];
} cdsh_xq_turn_info;
int cdsh_xq_service_turn_info(cdsh_xq_service *svc, const char *key, cdsh_xq_turn_info *out,
                              cdsh_error *err);
/* Marks the model's turn failed (pending "ai-failed", message code/tone);
 * cause (may be NULL) is the model failure, kept with the message. */
int cdsh_xq_service_mark_failed(cdsh_xq_service *svc, const char *key, const char *code,
                                const cdsh_error *cause, cdsh_error *err);

/* ---- export ---------------------------------------------------------------- */

/* {fen, startFen, pgn}: the PGN has [Format "ICCS"], moves like H2-E2 and
 * the Chinese notation of each move as a {comment}; pgn.h reads it back. */
json_t *cdsh_xq_service_export(cdsh_xq_service *svc, const char *key, cdsh_error *err);

#endif
