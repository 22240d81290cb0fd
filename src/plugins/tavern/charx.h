/* charx.h — CHARX (.charx) character archives: a zip with card.json at the
 * root (V3) and assets inside. Reads card.json and the main icon with
 * bounded inflation (libzip). Pure over an in-memory buffer; thread-safe. */
#ifndef CDSH_TAVERN_CHARX_H
#define CDSH_TAVERN_CHARX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define CDSH_TAVERN_CHARX_JSON_MAX (32u * 1024 * 1024) /* bytes of card.json */

/* True if data starts with a zip local-file signature. */
bool cdsh_tavern_charx_is_zip(const uint8_t *data, size_t len);

/* Extracts card.json (*json owned, NUL-terminated) and, when the card names
 * an `embeded://` (sic) icon or a file assets/icon/images/main.png exists,
 * that PNG as *avatar (owned; NULL if none). Errors: CHARX_BAD_ZIP,
 * CHARX_NO_CARD (CDSH_ENOTFOUND), CHARX_TOO_BIG (CDSH_ETOOBIG: an entry
 * inflates past its limit — a zip bomb is refused). */
int cdsh_tavern_charx_read(const uint8_t *data, size_t len, char **json, size_t *json_len,
                           uint8_t **avatar, size_t *avatar_len, cdsh_error *err);

#endif
