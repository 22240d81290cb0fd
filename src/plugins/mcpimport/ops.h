/* ops.h — the importer's operations table (host/ops.h). Rows, all on the
 * CLI surface (`cdsh import <row>`), their values:
 *   scan    the report (report.h); registers nothing
 *   enable  {profile, added: [[kind, name]...], refused?: {why: "unknown" |
 *           "blocked", what, name, reasons?: [{code, message}] (redacted)}};
 *           with a refusal nothing is saved
 *   disable {disabled: [names], all, notEnabled?: name, saveError?: message};
 *           with notEnabled or saveError nothing is saved
 *   list    {enabled, servers, commands, skills}: what the profile enables
 * Arguments: roots, claudeDir, codexHome, keyringAllow (scan, enable),
 * profile, json (scan, list), names and all (enable: --all-ok; disable:
 * --all). Failures (the profile, the scan, saving after enable) are errors
 * with the message. The handlers use the profile of the CLI's home. */
#ifndef CDSH_PLUGINS_MCPIMPORT_OPS_H
#define CDSH_PLUGINS_MCPIMPORT_OPS_H

#include "host/ops.h"

const cdsh_ops_table *cdsh_mcpimport_ops_table(void);

#endif
