/* cmd_xiangqi.c — `cdsh xiangqi <sub>`: finds the sub-command in a table and
 * runs it; the sub-commands themselves are in cmd_xiangqi_<sub>.c. */
#include "cli/cmd_xiangqi.h"

#include <stdio.h>
#include <string.h>

#include "cli/cmd_xiangqi_analyze.h"
#include "cli/cmd_xiangqi_bench.h"
#include "cli/cmd_xiangqi_perft.h"
#include "cli/cmd_xiangqi_play.h"
#include "cli/cmd_xiangqi_ucci.h"
#include "cli/cmd_xiangqi_uci.h"

typedef struct xq_sub {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the sub-command name */
} xq_sub;

static const xq_sub subs[] = {
    {"perft", "count legal move paths to a depth (move-generator check and speed)",
     cdsh_cmd_xiangqi_perft},
    {"bench", "search fixed positions to a fixed depth: total nodes (build signature), nps",
     cdsh_cmd_xiangqi_bench},
    {"analyze", "best lines of a position with scores, in ICCS and Chinese notation",
     cdsh_cmd_xiangqi_analyze},
    {"uci", "speak UCI (Pikafish dialect) on stdin/stdout for GUIs and match runners",
     cdsh_cmd_xiangqi_uci},
    {"ucci", "speak UCCI (ElephantEye's protocol) on stdin/stdout", cdsh_cmd_xiangqi_ucci},
    {"play", "play a game in the terminal against the local engine or the model",
     cdsh_cmd_xiangqi_play},
    {NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "Usage: cdsh xiangqi <subcommand> [options]\n"
                 "\n"
                 "Xiangqi (Chinese chess) engine tools.\n"
                 "\n"
                 "Subcommands:\n");
    for (const xq_sub *s = subs; s->name; s++)
        fprintf(out, "  %-10s %s\n", s->name, s->summary);
    fprintf(out, "\nRun `cdsh xiangqi <subcommand> --help` for its options.\n");
}

int cdsh_cmd_xiangqi(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    for (const xq_sub *s = subs; s->name; s++)
        if (strcmp(s->name, argv[1]) == 0)
            return s->run(argc - 1, argv + 1);
    fprintf(stderr, "cdsh xiangqi: unknown subcommand '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
