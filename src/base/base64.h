/* base64.h — standard base64 (RFC 4648, with padding) over libcrypto's block
 * coder, with the lenient reading that card files in the wild need. Pure
 * functions; thread-safe. */
#ifndef CDSH_BASE_BASE64_H
#define CDSH_BASE_BASE64_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Owned NUL-terminated base64 text of data[0..n), padded; NULL on ENOMEM
 * (or NULL data with n > 0). */
char *cdsh_base64_encode_dup(const uint8_t *data, size_t n);

/* Decodes text[0..n) into *out (owned, NUL-terminated for convenience; the
 * NUL is not counted in *out_len, which may be NULL). ASCII whitespace is
 * skipped anywhere; missing padding is accepted; the URL-safe symbols - and _
 * read as + and /. Any other character, a symbol after padding, more than two
 * '=' or a dangling single symbol is CDSH_EINVAL, code "BAD_BASE64",
 * `not valid base64 (bad character at offset N)` or `not valid base64
 * (truncated)`. */
int cdsh_base64_decode(const char *text, size_t n, uint8_t **out, size_t *out_len, cdsh_error *err);

#endif
