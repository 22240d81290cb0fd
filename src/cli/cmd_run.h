/* cmd_run.h — `cdsh run` (see cmd_run.c). */
#ifndef CDSH_CLI_CMD_RUN_H
#define CDSH_CLI_CMD_RUN_H

int cdsh_cmd_run(int argc, char **argv);

#endif
