/* pgn.h — reading back the xiangqi PGN that the service exports (XQ PGN,
 * [Format "ICCS"]), so a game saved by cdsh or another xiangqi program can
 * be replayed. Pure; thread-safe. */
#ifndef CDSH_XQ_PGN_H
#define CDSH_XQ_PGN_H

#include <jansson.h>

#include "base/err.h"

/* Parses tags (an optional [FEN "..."]), ICCS moves ("H2-E2" or "h2e2"),
 * move numbers ("1." "1..."), {comments}, ; comments and the result, and
 * replays the moves. On success *start_fen, *final_fen (owned strings) and
 * *moves (owned array of ICCS strings) are filled. Errors: CDSH_EINVAL,
 * code BAD_PGN (a token that is not a legal ICCS move there) or the
 * engine's FEN_* code for a bad [FEN]; CDSH_ENOMEM. */
int cdsh_xq_pgn_load(const char *pgn, char **start_fen, char **final_fen, json_t **moves,
                     cdsh_error *err);

#endif
