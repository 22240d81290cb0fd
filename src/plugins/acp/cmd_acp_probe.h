/* cmd_acp_probe.h — `cdsh acp probe <engine>`: try-connect with evidence. */
#ifndef CDSH_PLUGINS_ACP_CMD_ACP_PROBE_H
#define CDSH_PLUGINS_ACP_CMD_ACP_PROBE_H

int cdsh_cmd_acp_probe(int argc, char **argv);

#endif
