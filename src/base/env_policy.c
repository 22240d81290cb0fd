/* env_policy.c — which environment variables a child may inherit: the name
 * rules, the value rules (URL userinfo, provider key shapes) and building a
 * child's environment from them. Spawning itself is process.c's. */
#include "base/env_policy.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

static size_t name_len(const char *entry)
{
    return strcspn(entry, "=");
}

/* Case-insensitive search of word (upper case) in s[0..n). */
static const char *find_ci(const char *s, size_t n, const char *word, size_t from)
{
    size_t m = strlen(word);
    for (size_t i = from; i + m <= n; i++) {
        size_t j = 0;
        while (j < m && toupper((unsigned char)s[i + j]) == word[j])
            j++;
        if (j == m)
            return s + i;
    }
    return NULL;
}

static bool eq_ci(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && strncasecmp(s, word, n) == 0;
}

/* AUTH anywhere, except inside AUTHOR that is not AUTHORIZ(ATION). */
static bool has_auth(const char *s, size_t n)
{
    for (const char *p = s; (p = find_ci(s, n, "AUTH", (size_t)(p - s))) != NULL; p++) {
        size_t at = (size_t)(p - s);
        bool author = find_ci(s, n, "AUTHOR", at) == p;
        bool authoriz = find_ci(s, n, "AUTHORIZ", at) == p;
        if (!author || authoriz)
            return true;
    }
    return false;
}

static bool name_is_secret(const char *s, size_t n)
{
    static const char *const words[] = {"KEY",        "TOKEN",      "SECRET", "PASSWORD",
                                        "PASSWD",     "PASSPHRASE", "CREDENTIAL",
                                        "COOKIE"};
    static const char *const parts[] = {"PAT", "PASS", "PW", "DSN", "JWT", "BEARER"};
    if (n == 0)
        return false;
    /* Names of a socket or file, not a credential; documented. */
    if (eq_ci(s, n, "SSH_AUTH_SOCK") || eq_ci(s, n, "XAUTHORITY"))
        return false;
    for (size_t w = 0; w < sizeof words / sizeof *words; w++)
        if (find_ci(s, n, words[w], 0))
            return true;
    if (has_auth(s, n) || eq_ci(s, n, "DATABASE_URL"))
        return true;
    if (n > 4 && strncasecmp(s + n - 4, "_PWD", 4) == 0)
        return true;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && s[j] != '_')
            j++;
        for (size_t p = 0; p < sizeof parts / sizeof *parts; p++)
            if (eq_ci(s + i, j - i, parts[p]))
                return true;
        i = j + 1;
    }
    return false;
}

/* A URL with userinfo anywhere in v: scheme "://" authority-with-'@'. */
static bool has_url_userinfo(const char *v)
{
    for (const char *p = v; (p = strstr(p, "://")) != NULL; p += 3) {
        const char *b = p;
        while (b > v && (isalnum((unsigned char)b[-1]) || b[-1] == '+' || b[-1] == '-' ||
                         b[-1] == '.'))
            b--;
        if (b == p || !isalpha((unsigned char)*b))
            continue;
        size_t auth = strcspn(p + 3, "/?#\\ \t\r\n,;'\"");
        const char *at = memchr(p + 3, '@', auth);
        if (at && at > p + 3)
            return true;
    }
    return false;
}

static bool starts(const char *v, const char *prefix)
{
    return strncmp(v, prefix, strlen(prefix)) == 0;
}

/* The value starts like a provider's key (the shapes base/redact.c knows). */
static bool looks_like_key(const char *v)
{
    static const char *const prefixes[] = {"sk-",  "ghp_", "gho_", "ghu_",        "ghs_",
                                           "ghr_", "github_pat_", "glpat-", "hf_", "npm_",
                                           "AKIA", "ASIA", "AIza"};
    size_t len = strlen(v);
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
        size_t pl = strlen(prefixes[i]);
        /* A bare prefix ("sk-") or a short word ("npm_x") is no key. */
        if (len >= pl + 16 && starts(v, prefixes[i]))
            return true;
    }
    if (len >= 4 && starts(v, "xox") && strchr("abprs", v[3]) && v[4] == '-' && len >= 20)
        return true;
    if (starts(v, "eyJ")) { /* a JWT: three base64url parts */
        const char *d1 = strchr(v, '.');
        const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
        if (d1 && d2 && d2 > d1 + 1 && d2[1] && !strpbrk(v, " \t\n"))
            return true;
    }
    return starts(v, "-----BEGIN") && strstr(v, "PRIVATE KEY");
}

cdsh_env_verdict cdsh_env_policy_judge(const char *entry)
{
    if (!entry)
        return CDSH_ENV_PASS;
    size_t n = name_len(entry);
    if (n == 0)
        return CDSH_ENV_PASS;
    if ((n >= 5 && strncasecmp(entry, "CDSH_", 5) == 0) ||
        (n >= 4 && strncasecmp(entry, "DSH_", 4) == 0))
        return CDSH_ENV_OWN;
    if (name_is_secret(entry, n))
        return CDSH_ENV_SECRET_NAME;
    if (entry[n] == '=' && (has_url_userinfo(entry + n + 1) || looks_like_key(entry + n + 1)))
        return CDSH_ENV_SECRET_VALUE;
    return CDSH_ENV_PASS;
}

bool cdsh_env_policy_name_is_secret(const char *name)
{
    return name && name_is_secret(name, name_len(name));
}

const char *cdsh_env_policy_verdict_name(cdsh_env_verdict v)
{
    switch (v) {
    case CDSH_ENV_SECRET_NAME:
        return "secret name";
    case CDSH_ENV_SECRET_VALUE:
        return "secret value";
    case CDSH_ENV_OWN:
        return "cdsh setting";
    case CDSH_ENV_PASS:
        break;
    }
    return "pass";
}

void cdsh_env_policy_env_free(char **env)
{
    if (!env)
        return;
    for (size_t i = 0; env[i]; i++)
        free(env[i]);
    free(env);
}

static bool named_in(const char *const *names, const char *entry)
{
    size_t n = name_len(entry);
    for (size_t i = 0; names && names[i]; i++)
        if (strlen(names[i]) == n && strncmp(names[i], entry, n) == 0)
            return true;
    return false;
}

/* Index of the entry with the same name as `entry`, or -1. */
static long find_same(char **env, size_t count, const char *entry)
{
    size_t n = name_len(entry);
    for (size_t i = 0; i < count; i++)
        if (strncmp(env[i], entry, n) == 0 && env[i][n] == '=')
            return (long)i;
    return -1;
}

char **cdsh_env_policy_child_env_new(const char *const *parent, const char *const *allow,
                                     const char *const *set, cdsh_error *err)
{
    if (!parent)
        parent = (const char *const *)environ;
    size_t np = 0, ns = 0;
    while (parent && parent[np])
        np++;
    while (set && set[ns])
        ns++;
    for (size_t i = 0; i < ns; i++)
        if (!strchr(set[i], '=') || set[i][0] == '=') {
            cdsh_error_set(err, CDSH_EINVAL, "BAD_ENV",
                           "environment entry \"%.100s\" must be NAME=value with a name", set[i]);
            return NULL;
        }
    char **env = calloc(np + ns + 1, sizeof *env);
    size_t k = 0;
    if (!env)
        goto nomem;
    for (size_t i = 0; i < np; i++) {
        const char *e = parent[i];
        if (!strchr(e, '=') || e[0] == '=')
            continue;
        if (cdsh_env_policy_judge(e) != CDSH_ENV_PASS && !named_in(allow, e))
            continue;
        if (!(env[k++] = strdup(e)))
            goto nomem;
    }
    for (size_t i = 0; i < ns; i++) {
        char *copy = strdup(set[i]);
        if (!copy)
            goto nomem;
        long at = find_same(env, k, copy);
        if (at >= 0) {
            free(env[at]);
            env[at] = copy;
        } else {
            env[k++] = copy;
        }
    }
    return env;
nomem:
    cdsh_env_policy_env_free(env);
    cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    return NULL;
}
