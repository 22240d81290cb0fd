/* env_policy.h — the one rule for which of cdsh's environment variables
 * reach a child process (MCP stdio servers, ACP agents and their terminals,
 * the browser opener, helper programs): credentials and cdsh's own
 * configuration stay behind unless the child's own configuration names them.
 * The list is documented in docs/security.md; every spawner goes through
 * cdsh_process (which applies it) or cdsh_env_policy_child_env_new.
 *
 * Thread-safety: every function is thread-safe; the NULL-parent forms read
 * `environ`, so nobody may setenv concurrently (as for cdsh_process). */
#ifndef CDSH_BASE_ENV_POLICY_H
#define CDSH_BASE_ENV_POLICY_H

#include <stdbool.h>

#include "base/err.h"

typedef enum cdsh_env_verdict {
    CDSH_ENV_PASS = 0,     /* the child may see it */
    CDSH_ENV_SECRET_NAME,  /* the name looks like a credential */
    CDSH_ENV_SECRET_VALUE, /* the value carries one (URL userinfo, a provider key) */
    CDSH_ENV_OWN,          /* cdsh's or DSH's own settings (CDSH_*, DSH_*) */
} cdsh_env_verdict;

/* Judges one "NAME=value" entry (or a bare "NAME": then only the name rules
 * apply). NULL, an empty name or an entry starting with '=' are PASS (they
 * are never copied anyway). Case-insensitive:
 *  - OWN: the name starts with CDSH_ or DSH_;
 *  - SECRET_NAME: the name contains KEY, TOKEN, SECRET, PASSWORD, PASSWD,
 *    PASSPHRASE, CREDENTIAL, COOKIE, or AUTH (but not AUTHOR without
 *    AUTHORIZ, so GIT_AUTHOR_NAME passes); or one of its '_'-separated words is
 *    PAT, PASS, PW, DSN, JWT or BEARER; or it ends in _PWD; or it is
 *    DATABASE_URL. SSH_AUTH_SOCK and XAUTHORITY pass: they name a socket or
 *    file the child could find anyway, and programs break without them;
 *  - SECRET_VALUE: the value holds a URL with userinfo (scheme://user@… or
 *    scheme://user:password@…, anywhere in it), or starts like a provider key
 *    (sk-, ghp_/gho_/ghu_/ghs_/ghr_, github_pat_, glpat-, xox?-, AKIA/ASIA,
 *    AIza, hf_, npm_, a JWT, a PEM private key). */
cdsh_env_verdict cdsh_env_policy_judge(const char *entry);

/* True if the name alone (entry may be "NAME=value"; the value is ignored)
 * is SECRET_NAME. For redacting reports, where only a name is known. */
bool cdsh_env_policy_name_is_secret(const char *name);

/* "pass", "secret name", "secret value", "cdsh setting".
 * keep-public: the verdict's printable name; test_env_policy reports with it. */
const char *cdsh_env_policy_verdict_name(cdsh_env_verdict v);

/* A child's environment as owned "NAME=value" strings (NULL-terminated;
 * free with cdsh_env_policy_env_free): every entry of parent (NULL: environ)
 * that the policy passes, or whose name is in allow (NULL-terminated names,
 * exact match: the child's configuration named it), then every entry of set
 * ("NAME=value", later ones win) on top, replacing a parent entry of the same
 * name. Entries without '=' are dropped. NULL with err filled on ENOMEM or a
 * set entry without '=' or with an empty name (CDSH_EINVAL, "BAD_ENV"). */
char **cdsh_env_policy_child_env_new(const char *const *parent, const char *const *allow,
                                     const char *const *set, cdsh_error *err);

void cdsh_env_policy_env_free(char **env);

#endif
