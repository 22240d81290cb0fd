/* cmd_web.h — `cdsh web`: run the local web UI until interrupted. */
#ifndef CDSH_CLI_CMD_WEB_H
#define CDSH_CLI_CMD_WEB_H

int cdsh_cmd_web(int argc, char **argv);

#endif
