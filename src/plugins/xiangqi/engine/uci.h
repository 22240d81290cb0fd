/* uci.h — UCI (Pikafish's dialect) and UCCI (ElephantEye's) over streams:
 * commands are read on the calling thread, searches run on a worker that
 * writes info lines and the best move, so stop/isready/quit are answered
 * while it thinks. Thread-safety: one call per stream pair; each call owns
 * its engine, so several sessions may run in one process. */
#ifndef CDSH_XQ_UCI_H
#define CDSH_XQ_UCI_H

#include <stdio.h>

#include "base/err.h"

typedef enum cdsh_xq_dialect {
    CDSH_XQ_DIALECT_UCI = 0, /* uci / uciok, setoption name N value V, go wtime/btime... */
    CDSH_XQ_DIALECT_UCCI,    /* ucci / ucciok, setoption N V, go time/opptime, banmoves */
} cdsh_xq_dialect;

#define CDSH_XQ_ENGINE_NAME "cdsh-xiangqi"
#define CDSH_XQ_ENGINE_AUTHOR "cdsh"

/* Runs the protocol until `quit` or end of input. `quit` stops a running
 * search (its best move is still written); at end of input a finite search
 * (depth, nodes, time) runs to its end and an infinite one is stopped. Returns 0, or CDSH_ENOMEM
 * when the engine cannot be created. Malformed commands are answered with
 * `info string error: ...` (UCI) or `info message error: ...` (UCCI) and
 * otherwise ignored, as GUIs expect. */
int cdsh_xq_protocol_run(cdsh_xq_dialect dialect, FILE *in, FILE *out, cdsh_error *err);

#endif
