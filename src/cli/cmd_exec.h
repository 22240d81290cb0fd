/* cmd_exec.h — `cdsh exec` (see cmd_exec.c). */
#ifndef CDSH_CLI_CMD_EXEC_H
#define CDSH_CLI_CMD_EXEC_H

int cdsh_cmd_exec(int argc, char **argv);

#endif
