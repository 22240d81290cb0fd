/* cmd_xiangqi_bench.h — `cdsh xiangqi bench`: the fixed search bench (total
 * nodes = the build's search signature, time, nodes per second). */
#ifndef CDSH_PLUGINS_XIANGQI_CMD_XIANGQI_BENCH_H
#define CDSH_PLUGINS_XIANGQI_CMD_XIANGQI_BENCH_H

int cdsh_cmd_xiangqi_bench(int argc, char **argv);

#endif
