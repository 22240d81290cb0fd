/* report.h — the scan report: one object grouping the judged server and
 * command IR, skill IR (skills and sub-agents) and file notes per source (Claude Code, Codex),
 * with a summary, and its readable text form. Literal credentials written in
 * a config (env or header values under secret-looking names, the argument
 * after --password/--token, provider keys anywhere) are shown as
 * "[REDACTED]"; resolved secret values never reach the IR at all. Pure;
 * thread-safe; arguments borrowed. */
#ifndef CDSH_MCPIMPORT_REPORT_H
#define CDSH_MCPIMPORT_REPORT_H

#include <jansson.h>

/* {sources: [{source: "claude"|"codex", servers, commands, skills, agents,
 * notes}], summary: {servers, commands, skills, agents: {ok, warn, blocked},
 * notes}, registered: false}. `skills` holds both kinds ("kind": "skill" |
 * "agent"); the report files them under skills and agents. Owned.
 * keep-public: the JSON-built reference the tests hold the streamed report to. */
json_t *cdsh_mcpimport_report_new(const json_t *servers, const json_t *commands,
                                  const json_t *skills, const json_t *notes);

/* The same report for a scan, made from its command structs: the commands'
 * JSON IR is not made (and the scan is left as it was). Every distinct
 * string is redacted once, and equal strings share one JSON string in the
 * result. Owned. */
typedef struct cdsh_mcpimport_scan cdsh_mcpimport_scan;
json_t *cdsh_mcpimport_report_of_scan(const cdsh_mcpimport_scan *scan);

/* The text form (owned). */
char *cdsh_mcpimport_report_text_dup(const json_t *report);

#endif
