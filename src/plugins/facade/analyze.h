/* analyze.h — the read-only tool-surface analyzer (capability-facade.md §8):
 * finds the tools and capability declarations of a DSH JS/TS plugin, groups
 * tools by name prefix, classifies them by verb and turns groups into
 * candidates carrying a question, never a recommendation. Rendering is
 * report.h. Never writes to the analysed directory; thread-safe. */
#ifndef CDSH_PLUGINS_FACADE_ANALYZE_H
#define CDSH_PLUGINS_FACADE_ANALYZE_H

#include <jansson.h>
#include <stddef.h>

#include "base/err.h"
#include "host/tools.h"
#include "plugins/facade/service.h"

/* Files larger than this are listed as scanned but not read. */
#define CDSH_FACADE_ANALYZE_MAX_FILE (8u * 1024 * 1024)

/* Analyses one source text. Returns owned {tools:[{name, dynamic,
 * description, parameters?, file, line}], capabilities:[{id, operations,
 * file, line}]}; `parameters` is absent when the spec is missing or not a
 * literal. Never fails on any input (NULL only on ENOMEM).
 * keep-public: fuzz_facade_analyzer feeds sources through it. */
json_t *cdsh_facade_analyze_source(const char *text, size_t len, const char *file);

/* Walks `root` (extensions .js .mjs .cjs .ts .mts .cts; skips dot entries,
 * symlinks and node_modules .git dist build .turbo coverage test tests; files
 * sorted by path) and builds the report (see cdsh_facade_analyze_build).
 * Not a directory: CDSH_EINVAL, code "NOT_A_DIRECTORY",
 * `analyze: not a directory: <root>`. */
int cdsh_facade_analyze_dir(const char *root, json_t **report, cdsh_error *err);

/* Builds the report from found tools and capability declarations (both
 * borrowed): {root, scannedFiles, tools, capabilities, groups:[{group,
 * tools}], candidates:[{group, tools:[{name, kind, parameters}],
 * primitiveLike, operationLike, question}], counts:{files, tools,
 * capabilities, candidates}}. Owned.
 * keep-public: fuzz_facade_analyzer builds the grouping with it. */
json_t *cdsh_facade_analyze_build(const char *root, const json_t *scanned, const json_t *tools,
                                  const json_t *capabilities);

/* The same report for a live registry (`cdsh facade analyze --self`): every
 * tool visible in the global view becomes a record with file "registry",
 * line 0 and the top-level properties of its parameters; the capabilities
 * listed by `facade` (may be NULL) become declarations with file "facade".
 * `root` names what was analysed. Owned; NULL on ENOMEM. */
json_t *cdsh_facade_analyze_registry(cdsh_tools *tools, cdsh_facade *facade, const char *root);

/* The group of a tool name: its first part split on . _ - when it has at
 * least two parts, else "". Owned.
 * keep-public: test_facade_analyze checks the grouping. */
char *cdsh_facade_group_dup(const char *name);

/* "operation-like", "primitive-like" or "unclassified" by the name's last part. */
const char *cdsh_facade_classify(const char *name);

#endif
