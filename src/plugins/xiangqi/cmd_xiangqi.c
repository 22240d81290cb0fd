/* cmd_xiangqi.c — `cdsh xiangqi <sub>`: finds the sub-command in a table and
 * runs it; the sub-commands themselves are in cmd_xiangqi_<sub>.c. */
#include "plugins/xiangqi/cmd_xiangqi.h"

#include "host/cli_group.h"
#include "plugins/xiangqi/cmd_xiangqi_analyze.h"
#include "plugins/xiangqi/cmd_xiangqi_bench.h"
#include "plugins/xiangqi/cmd_xiangqi_perft.h"
#include "plugins/xiangqi/cmd_xiangqi_play.h"
#include "plugins/xiangqi/cmd_xiangqi_ucci.h"
#include "plugins/xiangqi/cmd_xiangqi_uci.h"

static const cdsh_subcommand subs[] = {
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

static const cdsh_cli_group group = {
    .name = "xiangqi",
    .about = "Xiangqi (Chinese chess): play a game in the terminal (against the local engine or\n"
              "the model), and the engine itself: analysis, benchmarks, UCI/UCCI.\n",
    .subs = subs,
};

int cdsh_cmd_xiangqi(int argc, char **argv)
{
    return cdsh_cli_group_run(&group, argc, argv);
}

const cdsh_subcommand cdsh_xq_subcommands[] = {
    {"xiangqi",
     "xiangqi (Chinese chess): play in the terminal, perft, bench, analyze, UCI/UCCI engine",
     cdsh_cmd_xiangqi},
    {NULL, NULL, NULL},
};
