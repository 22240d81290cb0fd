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
/* Longest command line read (bytes): a `position ... moves` of about 3
 * million plies. A longer line is read to its end, dropped and reported. */
#define CDSH_XQ_PROTOCOL_LINE_MAX (16 * 1024 * 1024)

/* Runs the protocol until `quit` or end of input. `quit` stops a running
 * search (its best move is still written); at end of input a bounded search
 * (depth, nodes, time) runs to its end and one without a bound (plain `go`,
 * `go infinite`, ponder) is stopped; then the call returns. Returns 0, or
 * CDSH_ENOMEM. Malformed commands are answered with `info string error:
 * ...` (UCI) or `info message error: ...` (UCCI) and otherwise ignored, as
 * GUIs expect; a malformed `go` searches nothing, and after a refused
 * `position` every `go` is refused until a valid position arrives. */
int cdsh_xq_protocol_run(cdsh_xq_dialect dialect, FILE *in, FILE *out, cdsh_error *err);

#endif
