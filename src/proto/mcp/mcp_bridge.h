/* mcp_bridge.h — MCP meets the tool kernel in both directions:
 *  - export: a cdsh_mcp_provider that serves the registry's model-facing
 *    tools (optionally filtered by a glob) through the dispatch pipeline, one
 *    agent scope per MCP session, with list_changed on "tools/change";
 *  - import: registers a connected MCP client's tools into the registry as
 *    mcp__<server>__<tool> (DSH's names), with an enabledTools/disabledTools
 *    filter, re-registering on list_changed.
 * Thread-safety: all functions are thread-safe. */
#ifndef CDSH_PROTO_MCP_BRIDGE_H
#define CDSH_PROTO_MCP_BRIDGE_H

#include <jansson.h>

#include "base/err.h"
#include "host/events.h"
#include "host/tools.h"
#include "proto/mcp/mcp_client.h"
#include "proto/mcp/mcp_server.h"

/* ---- export ------------------------------------------------------------------ */

typedef struct cdsh_mcp_export cdsh_mcp_export;

typedef struct cdsh_mcp_export_opts {
    const char *tools_glob;    /* fnmatch pattern over tool names; NULL = all */
    cdsh_scope *parent_scope;  /* parent of each session's scope; NULL = global view */
    int64_t progress_every_ms; /* heartbeat progress while a call runs; 0 = 1000 */
} cdsh_mcp_export_opts;

/* tools and bus are borrowed and must outlive the export; bus may be NULL
 * (then no list_changed). */
cdsh_mcp_export *cdsh_mcp_export_new(cdsh_tools *tools, cdsh_events *bus,
                                     const cdsh_mcp_export_opts *opts, cdsh_error *err);

/* Fills *out with the provider (its ud is the export). */
void cdsh_mcp_export_provider(cdsh_mcp_export *ex, cdsh_mcp_provider *out);

/* Sends list_changed to server's sessions whenever the registry changes
 * (until cdsh_mcp_export_free). server NULL detaches. */
void cdsh_mcp_export_attach(cdsh_mcp_export *ex, cdsh_mcp_server *server);

void cdsh_mcp_export_free(cdsh_mcp_export *ex);

/* The MCP Tool object for one kernel tool description (as from
 * cdsh_tools_info_dup: {name, description, parameters, outputSchema}); owned.
 * outputSchema is kept only when it describes an object (type "object", or a
 * oneOf/anyOf of objects, which gains type "object" at its root as MCP asks).
 * keep-public: test_mcp_server checks the exported shape. */
json_t *cdsh_mcp_export_tool_json(const json_t *kernel_tool);

/* ---- import ------------------------------------------------------------------ */

typedef struct cdsh_mcp_import cdsh_mcp_import;

typedef struct cdsh_mcp_import_opts {
    const char *const *enabled_tools;  /* raw names allowed (NULL-terminated); NULL = all */
    const char *const *disabled_tools; /* raw names removed after the allow-list */
    cdsh_scope *scope;                 /* registration layer; NULL = global */
} cdsh_mcp_import_opts;

/* Registers every (filtered) tool of client into tools, as the client lists
 * them at this call. Registration is all-or-nothing: a conflict rolls
 * back every tool of this server (CDSH_EEXIST, code "TOOL_EXISTS"). The
 * client must outlive the import.
 * keep-public: test_mcp_client imports a server's tools with it. */
int cdsh_mcp_import_new(cdsh_mcp_client *client, cdsh_tools *tools,
                        const cdsh_mcp_import_opts *opts, cdsh_mcp_import **out, cdsh_error *err);

/* Owned array of {publicName, rawName} currently registered.
 * keep-public: test_mcp_client imports a server's tools with it. */
json_t *cdsh_mcp_import_names(cdsh_mcp_import *imp);

/* Unregisters everything and frees. NULL-safe.
 * keep-public: test_mcp_client imports a server's tools with it. */
void cdsh_mcp_import_free(cdsh_mcp_import *imp);

/* True when raw passes the enabled/disabled filter (Codex semantics:
 * allow-list first, then deny-list). */
bool cdsh_mcp_import_tool_enabled(const char *const *enabled, const char *const *disabled,
                                  const char *raw);

#endif
