/* cmd_xiangqi_uci.c — `cdsh xiangqi uci` (and the shared runner behind
 * `cdsh xiangqi ucci`): run the protocol loop of plugins/xiangqi/engine/uci.h on stdin/stdout. */
#include "plugins/xiangqi/cmd_xiangqi_uci.h"

#include <stdio.h>
#include <string.h>

#include "plugins/xiangqi/engine/uci.h"

static int run(cdsh_xq_dialect d, int argc, char **argv)
{
    const char *name = d == CDSH_XQ_DIALECT_UCCI ? "ucci" : "uci";
    if (argc > 1) {
        FILE *o = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ? stdout : stderr;
        fprintf(o,
                "Usage: cdsh xiangqi %s\n"
                "\n"
                "Speaks %s on stdin/stdout (moves in ICCS coordinates, h2e2; ranks 0-9).\n"
                "Options: Hash (MB), Threads, MultiPV, Move Overhead%s.\n",
                name,
                d == CDSH_XQ_DIALECT_UCCI ? "UCCI (ElephantEye's protocol)" : "UCI (as Pikafish)",
                d == CDSH_XQ_DIALECT_UCCI ? "; usemillisec, banmoves" : "");
        return o == stdout ? 0 : 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    cdsh_error err = {0};
    if (cdsh_xq_protocol_run(d, stdin, stdout, &err) != 0) {
        fprintf(stderr, "cdsh xiangqi %s: %s\n", name, err.message);
        return 1;
    }
    return 0;
}

int cdsh_cmd_xiangqi_protocol(int ucci, int argc, char **argv)
{
    return run(ucci ? CDSH_XQ_DIALECT_UCCI : CDSH_XQ_DIALECT_UCI, argc, argv);
}

int cdsh_cmd_xiangqi_uci(int argc, char **argv)
{
    return run(CDSH_XQ_DIALECT_UCI, argc, argv);
}
