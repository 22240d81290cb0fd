/* cmd_config.h — `cdsh config`: plugin settings in profiles (list, get, set, enable...). */
#ifndef CDSH_CLI_CMD_CONFIG_H
#define CDSH_CLI_CMD_CONFIG_H

int cdsh_cmd_config(int argc, char **argv);

#endif
