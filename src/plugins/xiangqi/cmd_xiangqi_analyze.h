/* cmd_xiangqi_analyze.h — `cdsh xiangqi analyze`: best lines of a position
 * with scores, in ICCS and Chinese notation. */
#ifndef CDSH_PLUGINS_XIANGQI_CMD_XIANGQI_ANALYZE_H
#define CDSH_PLUGINS_XIANGQI_CMD_XIANGQI_ANALYZE_H

/* Deeper than this many plies is more than a turn may spend: the analysis
 * runs as a background job (kind "xiangqi-analyze"). */
#define CDSH_XQ_TURN_DEPTH 12

/* The xiangqi plugin provides its own context under this name, so that the
 * command can start jobs the plugin owns (unloaded with it). */
#define CDSH_XQ_JOBS_SERVICE "xiangqi-jobs"

int cdsh_cmd_xiangqi_analyze(int argc, char **argv);

#endif
