/* cmd_tools.h — `cdsh tools list`: the model-visible tool surface with schema sizes. */
#ifndef CDSH_CLI_CMD_TOOLS_H
#define CDSH_CLI_CMD_TOOLS_H

int cdsh_cmd_tools(int argc, char **argv);

#endif
