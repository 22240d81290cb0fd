/* cmd_xiangqi_perft.h — `cdsh xiangqi perft`: perft from a FEN, with divide,
 * JSON output and progress on a terminal. */
#ifndef CDSH_PLUGINS_XIANGQI_CMD_XIANGQI_PERFT_H
#define CDSH_PLUGINS_XIANGQI_CMD_XIANGQI_PERFT_H

int cdsh_cmd_xiangqi_perft(int argc, char **argv);

#endif
