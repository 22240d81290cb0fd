/* cmd_chat.h — `cdsh chat` (see cmd_chat.c). */
#ifndef CDSH_CLI_CMD_CHAT_H
#define CDSH_CLI_CMD_CHAT_H

int cdsh_cmd_chat(int argc, char **argv);

#endif
