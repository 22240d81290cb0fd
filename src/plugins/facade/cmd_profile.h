/* cmd_profile.h — `cdsh profile verify`: compose a profile in a temporary
 * home and report VERIFY-OK or exactly what failed. */
#ifndef CDSH_PLUGINS_FACADE_CMD_PROFILE_H
#define CDSH_PLUGINS_FACADE_CMD_PROFILE_H

int cdsh_cmd_profile(int argc, char **argv);

#endif
