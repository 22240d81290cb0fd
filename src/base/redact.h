/* redact.h — removes secrets from text and JSON before they are logged,
 * stored in traces or shown: each secret becomes "[REDACTED]". It is a
 * best-effort pattern filter, not a guarantee; callers still avoid handing
 * secrets to it where they can. All functions are thread-safe (patterns are
 * compiled once, on first use, under pthread_once). */
#ifndef CDSH_BASE_REDACT_H
#define CDSH_BASE_REDACT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define CDSH_REDACTED "[REDACTED]"

/* Owned copy of text with secrets replaced by "[REDACTED]". Recognised:
 *  - provider keys: sk-… (OpenAI, Anthropic sk-ant-…), GitHub ghp_/gho_/ghu_/
 *    ghs_/ghr_… and github_pat_…, Slack xox[abprs]-…, AWS AKIA…/ASIA…,
 *    Google AIza…, JWTs (eyJ….….…), PEM private key blocks (to the end of
 *    the text when the END line is missing);
 *  - `Authorization: Bearer|Basic|Token <value>` (the scheme word is kept),
 *    and a bare `Bearer <value>`/`Basic <value>` of 8+ characters;
 *  - the whole value of `Cookie:` and `Set-Cookie:` headers (to end of line);
 *  - the value after a key containing password, passwd, passphrase, secret,
 *    token, api_key/api-key/apikey, access_key, private_key, credential(s),
 *    cookie or auth
 *    followed by `=` or `:` (optionally quoted, as in `"token": "…"`; a quoted
 *    value is redacted up to its closing quote, JSON escapes respected);
 *    — and the Chinese labels 密码, 口令, 密钥, 秘钥, 令牌 — followed by `=`,
 *    `:` or a fullwidth `：` (an unquoted value ends at whitespace, ASCII
 *    punctuation or a fullwidth comma, semicolon or ideographic stop);
 *  - the password in URLs `scheme://user:password@host` (user kept);
 *  - e-mail addresses (name@domain.tld; not a URL's user name after '/').
 * Already redacted text is left as it is (redacting twice changes nothing).
 * Works on bytes: invalid UTF-8 is copied through. NULL on ENOMEM or NULL
 * text. If the pattern engine fails (match limit on pathological input) the
 * whole result is "[REDACTED]" — failing closed. */
char *cdsh_redact_dup(const char *text);

/* Same for text[0..len) which may contain NUL bytes; *out_len (if non-NULL)
 * receives the result's length. */
char *cdsh_redact_dupn(const char *text, size_t len, size_t *out_len);

/* True if an object key names a secret: it contains (case-insensitively)
 * key, token, secret, password, passwd, credential, cookie or auth — except
 * that "author" alone (without "authoriz") does not count. */
bool cdsh_redact_key_is_secret(const char *key, size_t len);

/* Owned deep copy of value (borrowed). Under a secret-looking key (see
 * above) every string, at any depth (inside nested arrays and objects too),
 * becomes "[REDACTED]"; numbers, booleans and null are kept so that
 * "max_tokens": 1024 stays readable. Every other string value goes through
 * cdsh_redact_dupn. Keys are copied unchanged. NULL on ENOMEM or NULL value. */
json_t *cdsh_redact_json_dup(const json_t *value);

/* Owned copy of text[0..len) with every occurrence of each literal secret
 * (a NULL-terminated list, may be NULL; entries shorter than 4 bytes are
 * ignored as too likely to be ordinary text) replaced by "[REDACTED]"; at
 * each position the longest secret wins. For values the caller itself
 * handed out (an engine's env and secret arguments) and may see echoed
 * back. No patterns are applied. NULL on ENOMEM or NULL text.
 * keep-public: the byte-length form; test_redact calls it with embedded NULs. */
char *cdsh_redact_literals_dupn(const char *text, size_t len, const char *const *secrets,
                                size_t *out_len);

/* Owned deep copy of value with cdsh_redact_literals_dupn applied to every
 * string at any depth (keys kept; nesting deeper than 2048 becomes
 * "[REDACTED]"). NULL on ENOMEM or NULL value. */
json_t *cdsh_redact_json_literals_dup(const json_t *value, const char *const *secrets);

#endif
