/* cmd_xiangqi_uci.h — `cdsh xiangqi uci`: the engine speaking UCI on
 * stdin/stdout, for GUIs and match runners. */
#ifndef CDSH_PLUGINS_XIANGQI_CMD_XIANGQI_UCI_H
#define CDSH_PLUGINS_XIANGQI_CMD_XIANGQI_UCI_H

int cdsh_cmd_xiangqi_uci(int argc, char **argv);
/* Shared by uci and ucci: ucci = 1 for the UCCI dialect. */
int cdsh_cmd_xiangqi_protocol(int ucci, int argc, char **argv);

#endif
