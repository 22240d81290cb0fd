/* b64.h — standard base64 (RFC 4648, with padding) for card payloads in PNG
 * text chunks. Pure functions; thread-safe. */
#ifndef CDSH_TAVERN_B64_H
#define CDSH_TAVERN_B64_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Owned NUL-terminated base64 text of data[0..n); NULL on ENOMEM. */
char *cdsh_tavern_b64_encode_dup(const uint8_t *data, size_t n);

/* Decodes text[0..n) into *out (owned, NUL-terminated for convenience; the NUL
 * is not counted in *out_len). ASCII whitespace is skipped; missing padding is
 * accepted; any other character, or a dangling single symbol, is CDSH_EINVAL
 * with code "CARD_BAD_BASE64". */
int cdsh_tavern_b64_decode(const char *text, size_t n, uint8_t **out, size_t *out_len,
                           cdsh_error *err);

#endif
