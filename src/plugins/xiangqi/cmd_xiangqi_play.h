/* cmd_xiangqi_play.h — `cdsh xiangqi play`: a terminal game against the local
 * engine or the model, through the xiangqi plugin's service. */
#ifndef CDSH_PLUGINS_XIANGQI_CMD_XIANGQI_PLAY_H
#define CDSH_PLUGINS_XIANGQI_CMD_XIANGQI_PLAY_H

int cdsh_cmd_xiangqi_play(int argc, char **argv);

#endif
