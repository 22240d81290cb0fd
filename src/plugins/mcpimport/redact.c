/* redact.c — the importer's redaction: references stay, literal secrets go.
 * A config value is cut into references (`${VAR}`, `${VAR:-default}`,
 * `$VAR`) and literal text; only the literal text (and a default that is
 * itself a secret) is redacted, by cdsh's pattern filter plus two rules of
 * our own: the whole literal value under a secret-looking key, and the value
 * of a secret-looking URL query parameter (`?api_key=…`, `&key=…`). */
#include "plugins/mcpimport/redact.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/json.h"
#include "base/redact.h"
#include "base/strbuf.h"

/* Length of the reference starting at s ("${" with balanced braces, or
 * "$NAME"), 0 when s does not start one. */
static size_t ref_len(const char *s)
{
    if (s[0] != '$')
        return 0;
    if (s[1] == '{') {
        int depth = 0;
        for (size_t i = 1; s[i]; i++) {
            if (s[i] == '{')
                depth++;
            else if (s[i] == '}' && --depth == 0)
                return i + 1;
        }
        return 0;
    }
    if (isalpha((unsigned char)s[1]) || s[1] == '_') {
        size_t i = 2;
        while (isalnum((unsigned char)s[i]) || s[i] == '_')
            i++;
        return i;
    }
    return 0;
}

static bool query_key_secret(const char *k, size_t n)
{
    static const char *const extra[] = {"sig", "signature", "code", "pass", "pwd", NULL};
    if (cdsh_redact_key_is_secret(k, n))
        return true;
    for (const char *const *e = extra; *e; e++)
        if (strlen(*e) == n && strncasecmp(k, *e, n) == 0)
            return true;
    return false;
}

/* Literal text: the pattern filter, then secret query parameters. */
static void literal(cdsh_strbuf *b, const char *s, size_t n)
{
    size_t len = 0;
    char *r = cdsh_redact_dupn(s, n, &len);
    if (!r) {
        cdsh_strbuf_append_str(b, CDSH_REDACTED);
        return;
    }
    for (size_t i = 0; i < len;) {
        if ((r[i] == '?' || r[i] == '&') && i + 1 < len) {
            size_t k = i + 1, e = k;
            while (e < len && r[e] != '=' && r[e] != '&' && r[e] != '#' &&
                   !isspace((unsigned char)r[e]))
                e++;
            if (e < len && r[e] == '=' && e > k && query_key_secret(r + k, e - k)) {
                size_t v = e + 1, ve = v;
                while (ve < len && r[ve] != '&' && r[ve] != '#' && !isspace((unsigned char)r[ve]) &&
                       r[ve] != '"' && r[ve] != '\'')
                    ve++;
                cdsh_strbuf_append(b, r + i, v - i);
                if (ve > v && strncmp(r + v, CDSH_REDACTED, strlen(CDSH_REDACTED)) != 0 &&
                    !(r[v] == '$'))
                    cdsh_strbuf_append_str(b, CDSH_REDACTED);
                else
                    cdsh_strbuf_append(b, r + v, ve - v);
                i = ve;
                continue;
            }
        }
        cdsh_strbuf_append_char(b, r[i++]);
    }
    free(r);
}

/* A reference as written; its default is redacted when it is a secret
 * (a non-empty default of a secret-named variable, or one the filters change). */
static void reference(cdsh_strbuf *b, const char *s, size_t n)
{
    const char *dflt = s[1] == '{' ? strstr(s, ":-") : NULL;
    if (!dflt || dflt >= s + n) {
        cdsh_strbuf_append(b, s, n);
        return;
    }
    size_t name_len = (size_t)(dflt - (s + 2));
    size_t dlen = (size_t)(s + n - 1 - (dflt + 2));
    cdsh_strbuf_append(b, s, (size_t)(dflt + 2 - s));
    if (dlen && cdsh_redact_key_is_secret(s + 2, name_len))
        cdsh_strbuf_append_str(b, CDSH_REDACTED);
    else
        cdsh_mcpimport_redact_into(b, dflt + 2, dlen);
    cdsh_strbuf_append_char(b, '}');
}

void cdsh_mcpimport_redact_into(cdsh_strbuf *b, const char *s, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i < n;) {
        size_t r = s[i] == '$' ? ref_len(s + i) : 0;
        if (r && i + r <= n) {
            if (i > start)
                literal(b, s + start, i - start);
            reference(b, s + i, r);
            i += r;
            start = i;
        } else
            i++;
    }
    if (n > start)
        literal(b, s + start, n - start);
}

char *cdsh_mcpimport_redact_text_dup(const char *s)
{
    if (!s)
        return NULL;
    cdsh_strbuf b;
    cdsh_strbuf_init(&b);
    cdsh_mcpimport_redact_into(&b, s, strlen(s));
    return cdsh_strbuf_take(&b, NULL);
}

/* A value that names a file or folder rather than holding a secret. */
static bool names_a_path(const char *key, const char *v)
{
    static const char *const suffixes[] = {"_PATH", "_FILE", "_DIR", "_FILENAME", "_HOME", NULL};
    size_t kn = strlen(key);
    for (const char *const *x = suffixes; *x; x++) {
        size_t n = strlen(*x);
        if (kn > n && strcasecmp(key + kn - n, *x) == 0)
            return true;
    }
    return v[0] == '/' || strncmp(v, "~/", 2) == 0 || strncmp(v, "./", 2) == 0;
}

char *cdsh_mcpimport_redact_value_dup(const char *key, const char *v)
{
    if (!v)
        return NULL;
    bool secret_key = key && (cdsh_redact_key_is_secret(key, strlen(key)) ||
                              strcasecmp(key, "authorization") == 0);
    if (!secret_key || names_a_path(key, v))
        return cdsh_mcpimport_redact_text_dup(v);
    /* under a secret-looking key every literal part goes, except an auth
     * scheme word ("Bearer ${TOKEN}" stays) */
    cdsh_strbuf b;
    cdsh_strbuf_init(&b);
    size_t n = strlen(v), start = 0;
    static const char *const schemes[] = {"Bearer ", "Basic ", "Token ", "token ", "bearer ", NULL};
    for (const char *const *sc = schemes; *sc; sc++)
        if (strncmp(v, *sc, strlen(*sc)) == 0) {
            cdsh_strbuf_append_str(&b, *sc);
            start = strlen(*sc);
            break;
        }
    bool pending = false;
    for (size_t i = start; i < n;) {
        size_t r = v[i] == '$' ? ref_len(v + i) : 0;
        if (r) {
            if (pending)
                cdsh_strbuf_append_str(&b, CDSH_REDACTED);
            pending = false;
            reference(&b, v + i, r);
            i += r;
        } else {
            pending = true;
            i++;
        }
    }
    if (pending)
        cdsh_strbuf_append_str(&b, CDSH_REDACTED);
    return cdsh_strbuf_take(&b, NULL);
}

/* One string through the text redaction ("[REDACTED]" when that fails). */
static char *redact_string(void *ud, const char *s, size_t n, size_t *out_n)
{
    (void)n; /* the importer's strings hold no NUL */
    (void)ud;
    char *r = cdsh_mcpimport_redact_text_dup(s);
    if (!r)
        r = strdup(CDSH_REDACTED);
    *out_n = r ? strlen(r) : 0;
    return r;
}

/* Every string of a JSON value through the text redaction (keys kept). */
json_t *cdsh_mcpimport_redact_json_dup(const json_t *v)
{
    return cdsh_json_map_strings(v, redact_string, NULL, CDSH_MCPIMPORT_REDACT_MAX_DEPTH,
                                 CDSH_REDACTED);
}
