/* cmd_xiangqi_analyze.h — `cdsh xiangqi analyze`: best lines of a position
 * with scores, in ICCS and Chinese notation. */
#ifndef CDSH_PLUGINS_XIANGQI_CMD_XIANGQI_ANALYZE_H
#define CDSH_PLUGINS_XIANGQI_CMD_XIANGQI_ANALYZE_H

int cdsh_cmd_xiangqi_analyze(int argc, char **argv);

#endif
