/* cmd_mcp.h — `cdsh mcp`: serve tools over MCP, and list/call any MCP server. */
#ifndef CDSH_CLI_CMD_MCP_H
#define CDSH_CLI_CMD_MCP_H

int cdsh_cmd_mcp(int argc, char **argv);

#endif
