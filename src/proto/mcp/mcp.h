/* mcp.h — the Model Context Protocol core shared by cdsh's client and server:
 * revisions and version negotiation, error codes, message classification,
 * tool and result shapes, DSH's public tool names and child environment
 * rules, and the model-visible text projection of content blocks.
 * Transports live in mcp_client.c / mcp_server.c; this file does no I/O.
 * Every function is thread-safe (pure functions over their arguments). */
#ifndef CDSH_PROTO_MCP_H
#define CDSH_PROTO_MCP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* ---- revisions -------------------------------------------------------------
 * Legacy (initialize-based) revisions cdsh speaks, oldest first, and the
 * stateless revision. The newest legacy revision is what the client sends in
 * initialize and what the server answers when a client asks for an unknown
 * one. */
#define CDSH_MCP_V2024_11_05 "2024-11-05"
#define CDSH_MCP_V2025_03_26 "2025-03-26"
#define CDSH_MCP_V2025_06_18 "2025-06-18"
#define CDSH_MCP_V2025_11_25 "2025-11-25"
#define CDSH_MCP_V2026_07_28 "2026-07-28" /* stateless ("modern") */
#define CDSH_MCP_LATEST_LEGACY CDSH_MCP_V2025_11_25

/* NULL-terminated list of the legacy revisions, oldest first. */
extern const char *const cdsh_mcp_legacy_versions[];

/* True for any revision above (legacy or modern). */
bool cdsh_mcp_version_known(const char *version);
/* True for the stateless revision (no initialize, no sessions). */
bool cdsh_mcp_version_is_modern(const char *version);

/* The version a legacy server answers to initialize: `requested` when it is
 * a known legacy revision, otherwise the newest legacy one (the client then
 * decides whether it can live with it). Never NULL; borrowed static text. */
const char *cdsh_mcp_negotiate(const char *requested);

/* ---- error codes (JSON-RPC standard ones are in proto/jsonrpc.h) ---------- */
enum {
    CDSH_MCP_RESOURCE_NOT_FOUND = -32002,  /* <= 2025-11-25 */
    CDSH_MCP_URL_ELICITATION = -32042,     /* 2025-11-25 */
    CDSH_MCP_HEADER_MISMATCH = -32020,     /* 2026-07-28 */
    CDSH_MCP_MISSING_CLIENT_CAP = -32021,  /* 2026-07-28 */
    CDSH_MCP_UNSUPPORTED_VERSION = -32022, /* 2026-07-28, data {supported, requested} */
};

/* Caps and defaults shared by both sides. */
#define CDSH_MCP_MAX_MESSAGE ((size_t)16 * 1024 * 1024) /* one frame / POST body */
#define CDSH_MCP_MAX_INSTRUCTIONS ((size_t)32 * 1024)   /* DSH maxInstructionBytes */
#define CDSH_MCP_CALL_TIMEOUT_MS 60000                  /* DSH toolCallTimeoutMs */
#define CDSH_MCP_PAGE_SIZE 50                           /* cdsh server's tools/list page */

/* ---- message classification ----------------------------------------------- */

typedef enum cdsh_mcp_msg_kind {
    CDSH_MCP_MSG_REQUEST = 1,
    CDSH_MCP_MSG_NOTIFICATION,
    CDSH_MCP_MSG_RESULT,
    CDSH_MCP_MSG_ERROR,
} cdsh_mcp_msg_kind;

/* A classified message; pointers are borrowed from the json_t it came from. */
typedef struct cdsh_mcp_msg {
    cdsh_mcp_msg_kind kind;
    const json_t *id;     /* request / result / error (may be JSON null for an error) */
    const char *method;   /* request / notification */
    const json_t *params; /* request / notification; NULL when absent */
    const json_t *result; /* result */
    int64_t error_code;   /* error */
    const char *error_message;
} cdsh_mcp_msg;

/* Classifies one JSON-RPC 2.0 message (`jsonrpc:"2.0"` required; ids are
 * strings or integers, never null in requests; params an object or array;
 * exactly one of result/error in a response; error.code an integer and
 * error.message a string). Batches (arrays) are refused: CDSH_EUNSUPPORTED
 * code "BATCH". Anything else malformed: CDSH_EINVAL code "INVALID_MESSAGE"
 * with a message saying what is wrong. */
int cdsh_mcp_msg_classify(const json_t *msg, cdsh_mcp_msg *out, cdsh_error *err);

/* Parses text (bounded by CDSH_MCP_MAX_MESSAGE; CDSH_ETOOBIG beyond it) and
 * classifies it. On 0 *json is the owned parsed value that `out` borrows
 * from. Parse failures: CDSH_EINVAL code "PARSE_ERROR". */
int cdsh_mcp_msg_parse(const char *text, size_t len, json_t **json, cdsh_mcp_msg *out,
                       cdsh_error *err);

/* ---- tools ----------------------------------------------------------------- */

/* Checks one Tool object from tools/list: object with a non-empty string
 * `name` (at most 128 bytes, no control characters) and an object
 * `inputSchema`; optional description string, outputSchema object,
 * annotations object. CDSH_EINVAL code "BAD_TOOL" naming the problem. */
int cdsh_mcp_tool_check(const json_t *tool, cdsh_error *err);

/* True when the tool declares execution.taskSupport "required" (cdsh does
 * not run task-based tools; DSH refuses them the same way). */
bool cdsh_mcp_tool_requires_task(const json_t *tool);

/* Checks a CallToolResult: `content` must be an array of objects with a
 * string `type` (a legacy result without content is accepted and reported
 * through *legacy); isError a boolean when present. CDSH_EINVAL code
 * "BAD_RESULT". legacy may be NULL. */
int cdsh_mcp_call_result_check(const json_t *result, bool *legacy, cdsh_error *err);

/* A CallToolResult with one text block (owned). structured (borrowed, may be
 * NULL) becomes structuredContent. */
json_t *cdsh_mcp_text_result_new(const char *text, const json_t *structured, bool is_error);

/* DSH's model-visible projection of content blocks (mcp-import.md §2.5):
 * text blocks joined by "\n"; resource_link → "Resource link: <name> (<uri>)";
 * image/audio/resource/unknown → bracketed notes; empty →
 * "(<tool> returned no model-visible content)". Owned; NULL on ENOMEM. */
char *cdsh_mcp_content_text_dup(const json_t *content, const char *tool);

/* ---- DSH naming and environment rules -------------------------------------- */

#define CDSH_MCP_PUBLIC_NAME_MAX 64

/* DSH's publicToolName(serverName, rawName) (mcp-import.md §2.2):
 * "mcp__<server>__<raw>" with every byte outside [A-Za-z0-9_-] replaced by
 * "_"; kept verbatim when nothing was replaced and it fits in 64 bytes,
 * otherwise the first 51 bytes + "_" + the first 12 hex digits of
 * SHA-256(server "\0" raw). Non-ASCII bytes are each replaced (one "_" per
 * UTF-16 code unit as JavaScript would do: one for a BMP character, two for
 * an astral one). out gets the NUL-terminated name. CDSH_EINVAL for NULL
 * arguments. */
int cdsh_mcp_public_tool_name(const char *server, const char *raw,
                              char out[CDSH_MCP_PUBLIC_NAME_MAX + 1]);

/* DSH's scrubbedParentEnv test, now cdsh's one policy for every child
 * (base/env_policy.h): true when the entry is not passed to a child — a
 * credential-looking name (KEY, PASSWORD, SECRET, TOKEN, AUTH, _PAT, …), a
 * "DSH_" or "CDSH_" prefix, or (for "NAME=value") a value with URL userinfo
 * or a provider key's shape.
 * keep-public: test_mcp and fuzz_mcp_message check the scrub rule. */
bool cdsh_mcp_env_name_scrubbed(const char *name);

/* The environment for a stdio server child: `parent` ("NAME=value" strings,
 * NULL-terminated; NULL = environ) minus scrubbed names, then each member of
 * `server_env` (an object of strings, borrowed, may be NULL) set on top.
 * Owned NULL-terminated array of owned strings; free with
 * cdsh_mcp_env_free. NULL on ENOMEM or a non-string value (err filled). */
char **cdsh_mcp_child_env_new(const char *const *parent, const json_t *server_env, cdsh_error *err);
void cdsh_mcp_env_free(char **env);

/* ---- notifications --------------------------------------------------------- */

/* params of notifications/progress (owned): {progressToken, progress,
 * total?, message?}. total < 0 and message NULL are omitted. */
json_t *cdsh_mcp_progress_params_new(const json_t *token, double progress, double total,
                                     const char *message);

#endif
