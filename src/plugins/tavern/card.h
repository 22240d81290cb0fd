/* card.h — character cards (V1, V2, V3) from JSON, PNG (chara/ccv3 text
 * chunks) and CHARX: spec detection, field normalisation with every field
 * kept (unknown data keys move into data.extensions), embedded lorebook and
 * regex-script discovery, depth_prompt, card ids, and export back to JSON and
 * PNG. Pure: no file or network I/O. Thread-safe on distinct cards.
 *
 * A card's *record* is the JSON stored in card.json:
 *   {name, spec, spec_version, data{...}, extra{top-level keys kept},
 *    depth_prompt: {prompt, depth, role}|null, regex_scripts: [ST scripts],
 *    book_source: "data.character_book"|...|null}
 * where data.character_book (if any) is a normalised character book. */
#ifndef CDSH_TAVERN_CARD_H
#define CDSH_TAVERN_CARD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define CDSH_TAVERN_CARD_JSON_MAX_CHARS (8u * 1024 * 1024) /* code points */
#define CDSH_TAVERN_CARD_ID_NAME_MAX 24

typedef struct cdsh_tavern_card cdsh_tavern_card;

/* Parses a card file: PNG (by signature), CHARX (zip signature) or JSON
 * (a UTF-8 BOM is skipped). Errors carry stable codes: CARD_TOO_BIG,
 * CARD_NOT_UTF8, CARD_BAD_JSON, CARD_BAD_SHAPE, CARD_BAD_FIELD, CARD_NO_NAME,
 * CARD_BAD_BASE64, the PNG_* and CHARX_* codes, INFLATE_TOO_BIG and the
 * LOREBOOK_* codes of an embedded book. */
int cdsh_tavern_card_parse(const uint8_t *bytes, size_t len, cdsh_tavern_card **out,
                           cdsh_error *err);

/* Builds a card from an already parsed JSON root (borrowed). ccv3_hint says
 * the text came from a ccv3 chunk (V3 when "spec" is absent). avatar (may be
 * NULL) is copied. */
int cdsh_tavern_card_from_json(const json_t *root, bool ccv3_hint, const uint8_t *avatar,
                               size_t avatar_len, cdsh_tavern_card **out, cdsh_error *err);

void cdsh_tavern_card_free(cdsh_tavern_card *card);

/* Borrowed views, valid until the card changes or is freed. */
const json_t *cdsh_tavern_card_record_get(const cdsh_tavern_card *card);
const char *cdsh_tavern_card_name_get(const cdsh_tavern_card *card);
const uint8_t *cdsh_tavern_card_avatar_get(const cdsh_tavern_card *card, size_t *len);
/* The normalised embedded book (data.character_book) or NULL. */
const json_t *cdsh_tavern_card_book_get(const cdsh_tavern_card *card);

/* Removes the embedded book from the card (the person chose not to import it). */
void cdsh_tavern_card_drop_book(cdsh_tavern_card *card);

/* {name, spec, hasAvatar, hasCharacterBook, characterBookName, entryCount,
 *  regexScripts, hasDepthPrompt} — what a person sees before importing. */
json_t *cdsh_tavern_card_inspect_dup(const cdsh_tavern_card *card);

/* The card file JSON for a record: V3 records as chara_card_v3, others as
 * chara_card_v2 (with SillyTavern's V1 mirror fields and the kept top-level
 * keys). force_v2 writes a V3 record with the V2 spec marker (the `chara`
 * chunk of a V3 PNG). Owned; NULL on ENOMEM or a record without data. */
json_t *cdsh_tavern_card_to_json_dup(const json_t *record, bool force_v2);

/* The card as PNG: avatar (NULL for a 1×1 placeholder) with `chara` (and for
 * V3, `ccv3`) text chunks. */
int cdsh_tavern_card_to_png(const json_t *record, const uint8_t *avatar, size_t avatar_len,
                            uint8_t **out, size_t *out_len, cdsh_error *err);

/* True if `key` is a card field a person may set through saveCharacter /
 * createCharacter with this value: "name" (string) or one of the data
 * fields (description, personality, scenario, first_mes, mes_example,
 * system_prompt, post_history_instructions, creator_notes,
 * alternate_greetings, tags, creator, character_version; strings or
 * arrays). */
bool cdsh_tavern_card_field_editable(const char *key, const json_t *value);

/* The directory-name part of a card id: lowercase, runs outside [a-z0-9] and
 * CJK U+4E00–U+9FA5 become "-", trimmed, at most 24 characters, "card" when
 * empty. Owned; NULL on ENOMEM. */
char *cdsh_tavern_card_sanitize_dup(const char *name);

/* A new card id: sanitised name + "-" + 8 hex digits of SHA-256(name ‖ 8
 * random bytes). Same-named cards get different ids. Owned; NULL on failure. */
char *cdsh_tavern_card_id_new(const char *name);

/* True for ids the store accepts: one path level, segments of
 * [A-Za-z0-9_-] or CJK joined by single dots, at most 128 bytes. */
bool cdsh_tavern_card_id_valid(const char *id);

#endif
