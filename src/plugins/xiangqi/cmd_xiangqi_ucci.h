/* cmd_xiangqi_ucci.h — `cdsh xiangqi ucci`: the engine speaking UCCI on
 * stdin/stdout, for GUIs and match runners. */
#ifndef CDSH_PLUGINS_XIANGQI_CMD_XIANGQI_UCCI_H
#define CDSH_PLUGINS_XIANGQI_CMD_XIANGQI_UCCI_H

int cdsh_cmd_xiangqi_ucci(int argc, char **argv);

#endif
