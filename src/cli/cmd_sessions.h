/* cmd_sessions.h — `cdsh sessions`: list, show, rm, fork and rename stored sessions. */
#ifndef CDSH_CLI_CMD_SESSIONS_H
#define CDSH_CLI_CMD_SESSIONS_H

int cdsh_cmd_sessions(int argc, char **argv);

#endif
