/* cmd_facade.h — `cdsh facade analyze|list`: the read-only tool-surface
 * analyzer over plugin sources or the live registry, and the capabilities a
 * profile declares. */
#ifndef CDSH_CLI_CMD_FACADE_H
#define CDSH_CLI_CMD_FACADE_H

int cdsh_cmd_facade(int argc, char **argv);

#endif
