/* frontmatter.h — the strict front-matter splitter of command, prompt, skill
 * and agent Markdown files: a leading `---` line, YAML (libyaml, through the
 * profile reader: no anchors, aliases or tags), a closing `---` or `...`
 * line, then the body. Malformed front matter never fails the file: it
 * yields a clear warning and a best-effort reading. Pure; thread-safe. */
#ifndef CDSH_MCPIMPORT_FRONTMATTER_H
#define CDSH_MCPIMPORT_FRONTMATTER_H

#include <jansson.h>
#include <stddef.h>

/* Parses text[0..len) (need not be NUL-terminated; a UTF-8 BOM is skipped).
 * *meta (owned) is the front matter as an object ({} when there is none or
 * it is unusable); *body_off is where the body starts. Warnings (strings)
 * are appended to `warnings`:
 *   "front matter is not closed (no \"---\" line); the whole file is the body"
 *   "front matter is not valid YAML (<parser message>); read as key: value lines"
 *   "front matter is not a mapping; ignored"
 *   "front matter contains a NUL byte; ignored"
 * Returns 0, or CDSH_ENOMEM. */
int cdsh_mcpimport_frontmatter_parse(const char *text, size_t len, json_t **meta, size_t *body_off,
                                     json_t *warnings);

#endif
