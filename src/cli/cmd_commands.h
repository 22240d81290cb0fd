/* cmd_commands.h — `cdsh commands list`: the slash commands the plugins register. */
#ifndef CDSH_CLI_CMD_COMMANDS_H
#define CDSH_CLI_CMD_COMMANDS_H

int cdsh_cmd_commands(int argc, char **argv);

#endif
