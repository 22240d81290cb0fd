/* redact.h — redaction for the importer's reports and logs that knows a
 * reference from a value: `${VAR}`, `${VAR:-default}` and `$VAR` stay as
 * written (a reference is not a secret; a default is redacted only when it
 * is one), literal secrets anywhere — env and header values, URL query
 * parameters, arguments, messages — become "[REDACTED]". Pure; thread-safe. */
#ifndef CDSH_MCPIMPORT_REDACT_H
#define CDSH_MCPIMPORT_REDACT_H

#include <jansson.h>
#include <stddef.h>

#include "base/strbuf.h"

/* Free text (a URL, an argument, a message): references kept; the literal
 * parts through cdsh's secret patterns (base/redact.h) and with the value of
 * every query parameter whose name looks secret (api_key, token, key, sig,
 * …) redacted. Owned; NULL only for NULL. */
char *cdsh_mcpimport_redact_text_dup(const char *s);

/* Appends the redaction of s[0..n) to b. */
void cdsh_mcpimport_redact_into(cdsh_strbuf *b, const char *s, size_t n);

/* The value of an env variable or header named key: under a secret-looking
 * name (KEY, TOKEN, SECRET, PASSWORD, AUTH…, Authorization) every literal
 * part is redacted ("TFE_TOKEN=${TFE_TOKEN}" and "Bearer ${T}" stay), except
 * for a name ending in _PATH, _FILE, _DIR, _FILENAME or _HOME or a value
 * that is a path; otherwise as free text. Owned. */
char *cdsh_mcpimport_redact_value_dup(const char *key, const char *value);

/* Deep copy with every string as free text (keys kept; a value nested
 * deeper than CDSH_MCPIMPORT_REDACT_MAX_DEPTH, which parsed JSON never is,
 * becomes "[REDACTED]"). Owned; NULL on ENOMEM. */
#define CDSH_MCPIMPORT_REDACT_MAX_DEPTH 2048
json_t *cdsh_mcpimport_redact_json_dup(const json_t *value);

#endif
