/* cmd_mcp_fixture.h — the fixture tools of `cdsh mcp --fixture` (echo, add,
 * fail, sleep, and the conformance scenarios' test_simple_text,
 * test_error_handling, test_image_content) for tests and benchmarks. */
#ifndef CDSH_CLI_CMD_MCP_FIXTURE_H
#define CDSH_CLI_CMD_MCP_FIXTURE_H

#include "base/err.h"
#include "host/tools.h"

#define CDSH_CLI_MCP_FIXTURE_N 7

/* Registers the fixture tools globally; out receives one disposer each.
 * All or nothing. */
int cdsh_cli_mcp_fixture_register(cdsh_tools *tools, cdsh_disposer_t out[CDSH_CLI_MCP_FIXTURE_N],
                                  cdsh_error *err);

#endif
