/* secrets.h — resolves the IR's `${VAR}` references: from the environment,
 * then from the system keyring for allow-listed names only (libsecret's
 * `secret-tool lookup service cdsh-import name VAR`, where installed). The
 * values live in an opaque store that is wiped on free and has no
 * serialiser: the IR only learns where a value came from ("resolvedFrom":
 * "env" | "keyring" | "default" | null). Not thread-safe per store; the
 * environment is read with getenv (nobody may setenv concurrently). */
#ifndef CDSH_MCPIMPORT_SECRETS_H
#define CDSH_MCPIMPORT_SECRETS_H

#include <jansson.h>

#include "base/err.h"

typedef struct cdsh_mcpimport_secrets cdsh_mcpimport_secrets;

typedef struct cdsh_mcpimport_secret_opts {
    const char *const *keyring_allow; /* NULL-terminated names; NULL: the keyring is not asked */
    const char *secret_tool;          /* program; NULL: "secret-tool" on PATH */
} cdsh_mcpimport_secret_opts;

/* Resolves every reference of every server IR (array; "resolvedFrom" is set
 * on each reference) into a new store (*out, owned). A keyring lookup that
 * fails or times out (5 s) leaves the name unresolved. 0 or CDSH_ENOMEM. */
int cdsh_mcpimport_secrets_resolve(json_t *servers, const cdsh_mcpimport_secret_opts *opts,
                                   cdsh_mcpimport_secrets **out, cdsh_error *err);

/* The value for name (borrowed; valid until the store is freed), or NULL.
 * Matches cdsh_mcpimport_lookup_fn (vars.h) with the store as ud. */
const char *cdsh_mcpimport_secrets_get(void *store, const char *name);

/* Number of values held. */
size_t cdsh_mcpimport_secrets_count(const cdsh_mcpimport_secrets *store);

/* Overwrites every value with zeros and frees. NULL-safe. */
void cdsh_mcpimport_secrets_free(cdsh_mcpimport_secrets *store);

#endif
