/* report.h — rendering an analyzer report (analyze.h): the Markdown report,
 * and the starter proposals for one candidate group — the original's JS
 * skeleton and the equivalent cdsh profile YAML declaration. Proposals are
 * review artefacts full of TODOs, never patches. Pure functions; thread-safe. */
#ifndef CDSH_PLUGINS_FACADE_REPORT_H
#define CDSH_PLUGINS_FACADE_REPORT_H

#include <jansson.h>

/* `# Tool-surface analysis: <root>` ... `## Boundary`. Owned, no trailing newline.
 * keep-public: test_facade_analyze checks each rendering. */
char *cdsh_facade_report_markdown_dup(const json_t *report);

/* `// PROPOSAL — review before adopting...` + ctx.capabilities.register({...}). Owned.
 * keep-public: test_facade_analyze checks each rendering. */
char *cdsh_facade_proposal_js_dup(const json_t *candidate);

/* The same proposal as a cdsh profile fragment (plugins.facade.config.capabilities). Owned.
 * keep-public: test_facade_analyze checks each rendering. */
char *cdsh_facade_proposal_yaml_dup(const json_t *candidate);

/* Markdown plus, when `propose`, per candidate `---`, `## Starter declaration
 * for \`<group>\`` and a js and a yaml code block. Owned. */
char *cdsh_facade_report_full_dup(const json_t *report, int propose);

#endif
