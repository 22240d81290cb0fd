/* cmd_acp.h — `cdsh acp`: engines, probe, prompt, sessions (external ACP agents). */
#ifndef CDSH_CLI_CMD_ACP_H
#define CDSH_CLI_CMD_ACP_H

int cdsh_cmd_acp(int argc, char **argv);

/* Sub-commands (argv[0] is the sub-command name). */
int cdsh_cmd_acp_engines(int argc, char **argv);
int cdsh_cmd_acp_sessions(int argc, char **argv);

#endif
