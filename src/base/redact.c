/* redact.c — secret removal with PCRE2 patterns compiled once (pthread_once)
 * and applied in a fixed order with pcre2_substitute. Matching runs in byte
 * mode so any input, valid UTF-8 or not, is scanned. Deciding what to log is
 * the caller's business; this file only scrubs. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "base/redact.h"

#include <ctype.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/strbuf.h"

/* Every pattern's group 1 is kept and the rest of the match replaced, so a
 * replacement is always "$1[REDACTED]" (group 1 may be empty). */
static const char *const patterns[] = {
    /* PEM private keys, whole block; a block cut off before its END line is
     * redacted to the end of the text. */
    "()-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"
    "(?:[\\s\\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----|[\\s\\S]*)",
    /* Authorization headers (scheme word kept). */
    "(?i)(\\bauthorization[\"']?\\s*[:=]\\s*[\"']?(?>(?:(?:bearer|basic|token|digest)\\s+)?))"
    "(?!\\[REDACTED\\])[^\\s\"',]+",
    /* Bare bearer/basic credentials. */
    "(?i)(\\b(?:bearer|basic)\\s+)(?!\\[REDACTED\\])[A-Za-z0-9._~+/=-]{8,}",
    /* Cookie headers: the whole value up to the end of the line. */
    "(?im)(\\b(?:set-)?cookie\\s*:(?>[ \\t]*))(?!\\[REDACTED\\])[^\\r\\n]+",
    /* key=value / "key": "value" for secret-looking keys, Chinese labels
     * (密码 password, 口令 passphrase, 密钥/秘钥 key, 令牌 token) too, with an
     * ASCII or fullwidth colon (U+FF1A, bytes EF BC 9A). An unquoted value
     * ends at whitespace, ASCII punctuation or a fullwidth comma / semicolon
     * / ideographic full stop or comma. */
    "(?i)((?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key"
    "|credentials?|cookie|auth|\xE5\xAF\x86\xE7\xA0\x81|\xE5\x8F\xA3\xE4\xBB\xA4"
    "|\xE5\xAF\x86\xE9\x92\xA5|\xE7\xA7\x98\xE9\x92\xA5|\xE4\xBB\xA4\xE7\x89\x8C)"
    "[\"']?\\s*(?:[:=]|\xEF\xBC\x9A)\\s*(?:([\"'])|))(?!\\[REDACTED\\])"
    "(?(2)(?:\\\\.|(?!\\2)[^\\\\\\n])+"
    "|(?:(?!\xEF\xBC[\x8C\x9B]|\xE3\x80[\x81\x82])[^\\s\\x00-\\x1f\"'&,;})\\]])+)",
    /* user:password@ in URLs. */
    "(\\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\\s:@]*:)(?!\\[REDACTED\\]@)[^/\\s@]+(?=@)",
    /* E-mail addresses (personal data). A local part right after '/' is a
     * URL's user name (kept, as above); the top-level domain is letters, so
     * npm specs such as pkg@1.2.3 are not addresses. */
    "()(?<![A-Za-z0-9._%+/-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)*"
    "\\.[A-Za-z]{2,}(?![A-Za-z0-9-])",
    /* Provider key formats. */
    "()(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{16,}",
    "()\\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
    "()\\bxox[abprs]-[A-Za-z0-9-]{10,}",
    "()\\b(?:AKIA|ASIA)[0-9A-Z]{16}\\b",
    "()\\bAIza[0-9A-Za-z_-]{35}",
    "()\\beyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}",
};
#define NPATTERNS (sizeof patterns / sizeof *patterns)

/* Written once under pthread_once, read-only afterwards. */
static pcre2_code *compiled[NPATTERNS];
static pcre2_match_context *match_ctx;
static bool compile_ok;
static pthread_once_t compile_once = PTHREAD_ONCE_INIT;

static void compile_patterns(void)
{
    for (size_t i = 0; i < NPATTERNS; i++) {
        int errcode;
        PCRE2_SIZE erroff;
        compiled[i] = pcre2_compile((PCRE2_SPTR)patterns[i], PCRE2_ZERO_TERMINATED, 0, &errcode,
                                    &erroff, NULL);
        if (!compiled[i])
            return;
        pcre2_jit_compile(compiled[i], PCRE2_JIT_COMPLETE); /* optional speed-up */
    }
    match_ctx = pcre2_match_context_create(NULL);
    if (!match_ctx)
        return;
    /* Bounds work on pathological input; hitting it fails closed. */
    pcre2_set_match_limit(match_ctx, 10000000);
    pcre2_set_depth_limit(match_ctx, 10000);
    compile_ok = true;
}

static char *fail_closed(size_t *out_len)
{
    if (out_len)
        *out_len = strlen(CDSH_REDACTED);
    return strdup(CDSH_REDACTED);
}

/* Applies one pattern; replaces *buf (owned) with the result. -1 on engine
 * failure, -2 on ENOMEM. */
static int apply(const pcre2_code *re, char **buf, size_t *len)
{
    static const char repl[] = "$1" CDSH_REDACTED;
    size_t cap = *len + *len / 4 + 64;
    for (int attempt = 0; attempt < 2; attempt++) {
        char *out = malloc(cap);
        if (!out)
            return -2;
        PCRE2_SIZE outlen = cap;
        int rc = pcre2_substitute(re, (PCRE2_SPTR)*buf, *len, 0,
                                  PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH, NULL,
                                  match_ctx, (PCRE2_SPTR)repl, PCRE2_ZERO_TERMINATED,
                                  (PCRE2_UCHAR *)out, &outlen);
        if (rc == PCRE2_ERROR_NOMEMORY) {
            free(out);
            cap = outlen + 1; /* OVERFLOW_LENGTH reported the size needed */
            continue;
        }
        if (rc < 0) {
            free(out);
            return -1;
        }
        free(*buf);
        *buf = out;
        *len = outlen;
        return 0;
    }
    return -1;
}

char *cdsh_redact_dupn(const char *text, size_t len, size_t *out_len)
{
    if (!text)
        return NULL;
    pthread_once(&compile_once, compile_patterns);
    if (!compile_ok)
        return fail_closed(out_len);
    char *buf = malloc(len + 1);
    if (!buf)
        return NULL;
    memcpy(buf, text, len);
    buf[len] = '\0';
    for (size_t i = 0; i < NPATTERNS; i++) {
        int rc = apply(compiled[i], &buf, &len);
        if (rc == -2) {
            free(buf);
            return NULL;
        }
        if (rc < 0) {
            free(buf);
            return fail_closed(out_len);
        }
    }
    if (out_len)
        *out_len = len;
    return buf;
}

char *cdsh_redact_dup(const char *text)
{
    return text ? cdsh_redact_dupn(text, strlen(text), NULL) : NULL;
}

static bool contains_ci(const char *s, size_t n, const char *word)
{
    size_t w = strlen(word);
    for (size_t i = 0; i + w <= n; i++) {
        size_t j = 0;
        while (j < w && tolower((unsigned char)s[i + j]) == word[j])
            j++;
        if (j == w)
            return true;
    }
    return false;
}

bool cdsh_redact_key_is_secret(const char *key, size_t len)
{
    static const char *const words[] = {"key",    "token",      "secret", "password",
                                        "passwd", "credential", "cookie"};
    if (!key)
        return false;
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (contains_ci(key, len, words[i]))
            return true;
    /* "author" is a person's name, not a credential; "authorization" is. */
    if (contains_ci(key, len, "auth"))
        return !contains_ci(key, len, "author") || contains_ci(key, len, "authoriz");
    return false;
}

static json_t *redact_leaf(void *ud, const json_t *v, bool secret)
{
    (void)ud;
    switch (json_typeof(v)) {
    case JSON_STRING: {
        if (secret)
            return json_string(CDSH_REDACTED);
        size_t n;
        char *clean = cdsh_redact_dupn(json_string_value(v), json_string_length(v), &n);
        json_t *out = clean ? json_stringn_nocheck(clean, n) : NULL;
        free(clean);
        return out;
    }
    case JSON_INTEGER: return json_integer(json_integer_value(v));
    case JSON_REAL: return json_real(json_real_value(v));
    default: return json_incref((json_t *)v);
    }
}

static json_t *redact_too_deep(void *ud, bool secret)
{
    (void)ud, (void)secret;
    return json_string(CDSH_REDACTED); /* deeper than any lossless value */
}

/* Keys are kept as they are; a secret-looking key makes everything below secret. */
static json_t *redact_key(const char *k, size_t n, bool secret, bool *child_secret)
{
    *child_secret = secret || cdsh_redact_key_is_secret(k, n);
    return json_stringn_nocheck(k, n);
}

json_t *cdsh_redact_json_dup(const json_t *value)
{
    static const cdsh__json_map_ops ops = {.max_depth = 2049,
                                           .deep_leaves = true,
                                           .leaf = redact_leaf,
                                           .too_deep = redact_too_deep,
                                           .key = redact_key};
    return cdsh__json_map_dup(value, &ops, false);
}

/* ---- literal secrets (values the caller itself handed out) ---------------- */

#define LITERAL_MIN 4
#define LITERAL_MAX_DEPTH 2048

char *cdsh_redact_literals_dupn(const char *text, size_t len, const char *const *secrets,
                                size_t *out_len)
{
    if (!text)
        return NULL;
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    size_t i = 0;
    while (i < len) {
        size_t hit = 0;
        for (const char *const *s = secrets; s && *s; s++) {
            size_t n = strlen(*s);
            if (n >= LITERAL_MIN && n <= len - i && n > hit && memcmp(text + i, *s, n) == 0)
                hit = n; /* the longest secret starting here */
        }
        if (hit) {
            cdsh_strbuf_append_str(&sb, CDSH_REDACTED);
            i += hit;
        } else {
            cdsh_strbuf_append_char(&sb, text[i++]);
        }
    }
    if (sb.failed) {
        cdsh_strbuf_deinit(&sb);
        return NULL;
    }
    size_t n = 0;
    char *out = cdsh_strbuf_take(&sb, &n);
    if (!out)
        out = strdup("");
    if (out_len)
        *out_len = out ? n : 0;
    return out;
}

static char *literals_string(void *secrets, const char *s, size_t n, size_t *out_n)
{
    return cdsh_redact_literals_dupn(s, n, secrets, out_n);
}

json_t *cdsh_redact_json_literals_dup(const json_t *value, const char *const *secrets)
{
    return cdsh_json_map_strings(value, literals_string, (void *)secrets, LITERAL_MAX_DEPTH,
                                 CDSH_REDACTED);
}
