/* lorebook.h — SillyTavern world-info books and V2/V3 character books:
 * normalisation with every entry field defaulted, conversion between the two
 * shapes, and import limits. Pure (no I/O); thread-safe on distinct values.
 * json_t arguments are borrowed; results are owned by the caller. */
#ifndef CDSH_TAVERN_LOREBOOK_H
#define CDSH_TAVERN_LOREBOOK_H

#include <jansson.h>

#include "base/err.h"

#define CDSH_TAVERN_LOREBOOK_MAX_ENTRIES 5000
#define CDSH_TAVERN_LOREBOOK_MAX_CONTENT 200000 /* characters (code points) per entry */
#define CDSH_TAVERN_LOREBOOK_MAX_KEY 500        /* characters per key */
#define CDSH_TAVERN_LOREBOOK_MAX_KEYS 1000      /* keys per entry (each list) */

/* Normalises any accepted book shape into a world-info book:
 * {"name"?, "entries": {"<uid>": entry, ...}, ...other keys kept}. Accepted:
 * a world-info object (entries as a uid map or an array), a character book
 * (entries with "keys": converted as SillyTavern's convertCharacterBook does),
 * `{"spec":"lorebook_v3","data":{...}}`, a bare entry array, or a JSON
 * string holding one of these. Every entry gets all world-info fields with
 * SillyTavern's defaults; unknown entry keys are kept. Idempotent.
 * Errors (CDSH_EINVAL): LOREBOOK_BAD_SHAPE, LOREBOOK_BAD_ENTRY,
 * LOREBOOK_DUPLICATE_UID; (CDSH_ETOOBIG): LOREBOOK_TOO_MANY_ENTRIES,
 * LOREBOOK_CONTENT_TOO_LONG, LOREBOOK_KEY_TOO_LONG. */
json_t *cdsh_tavern_lorebook_normalize_dup(const json_t *in, cdsh_error *err);

/* Normalises a book found in a card into a V2/V3 character book:
 * {name?, description?, scan_depth?, token_budget?, recursive_scanning?,
 * extensions:{}, entries:[{keys, content, extensions, enabled,
 * insertion_order, ...}]}. Accepts the same shapes as above (world-info
 * entries are converted back). Optional fields that are null are dropped;
 * unknown keys are kept. Same limits and errors. Idempotent. */
json_t *cdsh_tavern_character_book_normalize_dup(const json_t *in, cdsh_error *err);

/* Number of entries of a normalised book of either shape (0 if none). */
size_t cdsh_tavern_lorebook_entry_count(const json_t *book);

/* True if `in` is a non-empty book candidate (object with entries, non-empty
 * array, or a string that parses to one). */
int cdsh_tavern_lorebook_is_candidate(const json_t *in);

#endif
