/* game.h — one xiangqi game record (layer-internal to the plugin): the moves
 * from a start FEN with their notation, players, counters, its JSON file
 * (load/save), and the cached projection readers copy. Locking is the
 * service's (service.c); these functions assume the caller holds the game. */
#ifndef CDSH_XQ_GAME_H
#define CDSH_XQ_GAME_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "base/err.h"
#include "plugins/xiangqi/engine/notation.h"
#include "plugins/xiangqi/engine/position.h"

#define CDSH__XQ_KEY_MAX 96

typedef struct cdsh__xq_ply {
    cdsh_xq_move_t move;
    int from, to; /* 0..89 */
    char iccs[6];
    char zh[CDSH_XQ_ZH_MAX];
    char captured; /* FEN letter, 0 for none */
} cdsh__xq_ply;

enum { CDSH__XQ_PENDING_NONE = 0, CDSH__XQ_PENDING_THINKING, CDSH__XQ_PENDING_FAILED };

typedef struct cdsh__xq_game {
    char key[CDSH__XQ_KEY_MAX + 1];
    char *path; /* the JSON file */
    pthread_rwlock_t lock;
    int64_t revision;
    char start_fen[CDSH_XQ_FEN_MAX];
    cdsh_xq_pos *pos; /* current position (start + plies) */
    cdsh__xq_ply *plies;
    int nplies, cap;
    int hero;  /* CDSH_XQ_RED / CDSH_XQ_BLACK */
    int model; /* 1: opponent is the model, 0: the local engine */
    char *provider, *model_name;
    int max_plies;
    int pending;
    char msg_code[48], msg_tone[8]; /* "" = no message */
    /* why the model failed (with msg_code "ai.error"): the model client's
     * error code and message ("HTTP 401: ..."); "" = unknown */
    char cause_code[64], cause_text[1024];
    int64_t in_tok, out_tok, tot_tok, calls;
    int64_t clock_ms[2];
    int64_t turn_started_ms; /* wall clock; not persisted */
    int resigned;            /* side that resigned, -1 none */
    int invalid;             /* refused opponent moves since its last good one */
    /* derived by cdsh__xq_game_refresh */
    int over;
    int winner; /* -1 none */
    char state[24];
    char reason_zh[128];
    cdsh_xq_notated_move legal[CDSH_XQ_MAX_MOVES];
    int nlegal;
    json_t *cache; /* the projection */
    struct cdsh__xq_game *next;
} cdsh__xq_game;

/* New empty game at the start position (not saved). NULL on ENOMEM. */
cdsh__xq_game *cdsh__xq_game_new(const char *key, const char *path);
void cdsh__xq_game_free(cdsh__xq_game *g);

/* Restarts at fen (NULL: start) keeping revision, usage reset. CDSH_EINVAL
 * with the engine's FEN_* code on a bad FEN. */
int cdsh__xq_game_reset(cdsh__xq_game *g, const char *fen, cdsh_error *err);
/* Plays a legal move (checked) and records it; updates the clocks. */
int cdsh__xq_game_play(cdsh__xq_game *g, cdsh_xq_move_t m, cdsh_error *err);
/* Takes back the last ply (0, or CDSH_ENOTFOUND when there is none). */
int cdsh__xq_game_unplay(cdsh__xq_game *g, cdsh__xq_ply *undone);

/* Recomputes status, legal moves and the cached projection. */
int cdsh__xq_game_refresh(cdsh__xq_game *g, cdsh_error *err);

/* Loads g->path. CDSH_ENOTFOUND when there is no file; CDSH_EPROTO code
 * BAD_GAME_FILE when it cannot be read back. */
int cdsh__xq_game_load(cdsh__xq_game *g, cdsh_error *err);
/* Writes g->path atomically. */
int cdsh__xq_game_save(cdsh__xq_game *g, cdsh_error *err);

/* Side to move, and whether that is the opponent. */
int cdsh__xq_game_turn(const cdsh__xq_game *g);
int cdsh__xq_game_opponent_to_move(const cdsh__xq_game *g);

/* [{iccs, zh}] of the side to move. Owned. */
json_t *cdsh__xq_game_legal_json(const cdsh__xq_game *g);

/* The board drawn in text: FEN letters (cjk 0) or Chinese glyphs on a
 * full-width grid (cjk 1), ranks 9..0 top down with files a..i. Owned. */
char *cdsh__xq_drawing_dup(const cdsh_xq_pos *pos, int cjk);

#endif
