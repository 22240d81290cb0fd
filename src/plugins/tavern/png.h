/* png.h — the PNG side of character cards: finding the `chara` / `ccv3` text
 * chunk (tEXt, zTXt or iTXt) and writing a PNG with card chunks replaced.
 * Works on chunk level only; pixels are never decoded. Pure and thread-safe.
 * Limits: PNG ≤ 32 MiB, inflated text ≤ 4 MiB (a larger one is a zip bomb). */
#ifndef CDSH_TAVERN_PNG_H
#define CDSH_TAVERN_PNG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define CDSH_TAVERN_PNG_MAX (32u * 1024 * 1024)
#define CDSH_TAVERN_INFLATE_MAX (4u * 1024 * 1024)

/* True if data starts with the 8-byte PNG signature. */
bool cdsh_tavern_png_is_png(const uint8_t *data, size_t len);

/* Walks every chunk of the PNG (signature, IHDR first, lengths inside the
 * file, IEND present) and returns the text of the card chunk: the first
 * `ccv3` if any (*is_ccv3 = true), else the first `chara`. Keywords compare
 * case-insensitively. *text is owned and NUL-terminated (the base64 payload,
 * not yet decoded). CRCs are not verified (as SillyTavern; documented).
 * Errors (CDSH_EINVAL unless noted): PNG_BAD_SIGNATURE, PNG_TRUNCATED,
 * PNG_BAD_CHUNK, PNG_NO_CARD (CDSH_ENOTFOUND), CARD_TOO_BIG and
 * INFLATE_TOO_BIG (CDSH_ETOOBIG). */
int cdsh_tavern_png_find_card(const uint8_t *data, size_t len, char **text, size_t *text_len,
                              bool *is_ccv3, cdsh_error *err);

/* Copies png (or, when png is NULL, a 1×1 transparent image) with every
 * chara/ccv3 text chunk removed and `tEXt chara` = chara_b64 (plus
 * `tEXt ccv3` = ccv3_b64 when non-NULL) inserted before IEND, CRCs computed.
 * *out is owned. The source must pass the same structural checks as
 * cdsh_tavern_png_find_card (a truncated PNG is PNG_TRUNCATED). */
int cdsh_tavern_png_embed(const uint8_t *png, size_t png_len, const char *chara_b64,
                          const char *ccv3_b64, uint8_t **out, size_t *out_len, cdsh_error *err);

#endif
