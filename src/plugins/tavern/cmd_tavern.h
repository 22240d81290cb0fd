/* cmd_tavern.h — `cdsh tavern`: inspect, import, list and export character
 * cards, lorebooks, presets, personas and global regex rules. */
#ifndef CDSH_CLI_CMD_TAVERN_H
#define CDSH_CLI_CMD_TAVERN_H

int cdsh_cmd_tavern(int argc, char **argv);

#endif
