/* cmd_xiangqi.h — `cdsh xiangqi <sub>`: dispatcher for the xiangqi engine's
 * command-line tools. Each sub-command lives in its own cmd_xiangqi_<sub>.c. */
#ifndef CDSH_CLI_CMD_XIANGQI_H
#define CDSH_CLI_CMD_XIANGQI_H

int cdsh_cmd_xiangqi(int argc, char **argv);

#endif
