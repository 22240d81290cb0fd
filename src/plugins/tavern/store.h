/* store.h — tavern assets on disk under $CDSH_HOME/tavern/: character card
 * directories, the lorebook and preset library, personas and global regex
 * rules. Every file is JSON written atomically inside an envelope
 *   {"cdsh":{"kind","revision":N,"tag":"N-<sha8>","updatedAt"},"value":...}
 * whose tag changes on every write; writers may pass the tag they read and
 * get REVISION_CONFLICT if someone wrote in between (optimistic
 * concurrency for the story engine). Writes take an exclusive lock on
 * <root>/.lock, so several processes may share one home. Paths are built
 * from validated ids only and re-checked to stay inside the root (no "..",
 * no symlink escapes: PATH_ESCAPE). A store handle is immutable after open
 * and may be used from several threads. */
#ifndef CDSH_TAVERN_STORE_H
#define CDSH_TAVERN_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/home.h"

typedef struct cdsh_tavern_store cdsh_tavern_store;

typedef enum cdsh_tavern_kind {
    CDSH_TAVERN_LOREBOOK = 0, /* library/lorebooks/<id>.json, ST world-info */
    CDSH_TAVERN_PRESET = 1,   /* library/presets/<id>.json, ST chat-completion preset */
    CDSH_TAVERN_PERSONA = 2,  /* personas/<id>.json */
} cdsh_tavern_kind;

typedef enum cdsh_tavern_book_choice {
    CDSH_TAVERN_BOOK_ASK = 0,     /* fail with BOOK_CHOICE_REQUIRED if the card has a book */
    CDSH_TAVERN_BOOK_IMPORT = 1,  /* --with-book */
    CDSH_TAVERN_BOOK_DISCARD = 2, /* --without-book: card and assets both without it */
} cdsh_tavern_book_choice;

/* Opens the store at root (NULL: <home>/tavern), creating it (0700). */
int cdsh_tavern_store_open(const cdsh_home *home, const char *root, cdsh_tavern_store **out,
                           cdsh_error *err);
void cdsh_tavern_store_free(cdsh_tavern_store *store);
const char *cdsh_tavern_store_root_get(const cdsh_tavern_store *store);

/* Generic envelope access; rel is relative to the root ("regex/rules.json").
 * get: *value owned, *tag owned (either may be NULL); CDSH_ENOTFOUND
 * (code NOT_FOUND) if missing. put: expected_tag NULL writes
 * unconditionally, "" requires the file to be absent, anything else must
 * equal the current tag (else CDSH_EBUSY, REVISION_CONFLICT); *new_tag
 * (may be NULL) gets the written tag. value is borrowed. */
int cdsh_tavern_store_load(cdsh_tavern_store *store, const char *rel, json_t **value, char **tag,
                           cdsh_error *err);
int cdsh_tavern_store_put(cdsh_tavern_store *store, const char *rel, const char *kind,
                          const json_t *value, const char *expected_tag, char **new_tag,
                          cdsh_error *err);

/* Imports a card file (PNG, JSON, CHARX) as a new card directory, built in a
 * hidden staging directory and renamed into place (nothing half-written).
 * *result (owned): {cardId, name, bookImported, bookEntries, regexRules,
 * tag}. Same-named cards never overwrite each other. */
int cdsh_tavern_store_import_card(cdsh_tavern_store *store, const uint8_t *bytes, size_t len,
                                  cdsh_tavern_book_choice choice, json_t **result, cdsh_error *err);

/* [{cardId, name, spec, hasAvatar, bookEntries, regexScripts, tag, tags,
 * creator, summary (the description's first 280 bytes, whole characters),
 * greetings (first message + alternates)}], sorted by name then id (the
 * gallery's list). Directories that are not valid cards are skipped. */
int cdsh_tavern_store_list_cards(cdsh_tavern_store *store, json_t **out, cdsh_error *err);

/* The stored card record (see card.h). CARD_NOT_FOUND if unknown. */
int cdsh_tavern_store_card_load(cdsh_tavern_store *store, const char *card_id, json_t **record,
                                char **tag, cdsh_error *err);

/* The card as PNG (stored avatar or a 1×1 placeholder) or as JSON text. */
int cdsh_tavern_store_export_card(cdsh_tavern_store *store, const char *card_id, bool png,
                                  uint8_t **out, size_t *out_len, cdsh_error *err);

/* Removes a card directory. CARD_NOT_FOUND if unknown. */
int cdsh_tavern_store_delete_card(cdsh_tavern_store *store, const char *card_id, cdsh_error *err);

/* Library assets. import parses JSON text (UTF-8, ≤ 8 M characters),
 * normalises it for its kind and stores it under a new id derived from its
 * name (collisions get -2…-99). fallback_name names nameless input.
 * *result: {id, name, tag}. */
int cdsh_tavern_store_import_asset(cdsh_tavern_store *store, cdsh_tavern_kind kind,
                                   const char *text, size_t len, const char *fallback_name,
                                   json_t **result, cdsh_error *err);
/* Saves an edited item (in: the raw value, normalised and validated as on
 * import). id NULL creates a new item with an id derived from its name;
 * otherwise the item must exist (NOT_FOUND) and expected_tag follows
 * cdsh_tavern_store_put. A persona's lorebook must be in the library
 * (PERSONA_UNKNOWN_LOREBOOK). *result: {id, name, tag}. */
int cdsh_tavern_store_save_asset(cdsh_tavern_store *store, cdsh_tavern_kind kind, const char *id,
                                 const json_t *in, const char *fallback_name,
                                 const char *expected_tag, json_t **result, cdsh_error *err);
/* Removes an item (NOT_FOUND if absent). References are the caller's to check. */
int cdsh_tavern_store_delete_asset(cdsh_tavern_store *store, cdsh_tavern_kind kind, const char *id,
                                   cdsh_error *err);
/* Replaces (book non-NULL, any accepted lorebook shape) or removes (NULL) a
 * card's embedded lorebook: card.json's data.character_book (the source of
 * truth, written with the card's revision check) and its world-info copy
 * assets/character-book.json. *new_tag: the card's new tag (owned). */
int cdsh_tavern_store_card_book_put(cdsh_tavern_store *store, const char *card_id,
                                    const json_t *book, const char *expected_tag, char **new_tag,
                                    cdsh_error *err);
/* [{id, name, tag, ...kind specifics}] sorted by id. */
int cdsh_tavern_store_list_assets(cdsh_tavern_store *store, cdsh_tavern_kind kind, json_t **out,
                                  cdsh_error *err);
/* The stored value (owned). "card:<cardId>" as a LOREBOOK id reads that
 * card's character book. NOT_FOUND if unknown. */
int cdsh_tavern_store_asset_load(cdsh_tavern_store *store, cdsh_tavern_kind kind, const char *id,
                                 json_t **value, cdsh_error *err);
/* asset_load that also returns the item's tag (owned; tag may be NULL). */
int cdsh_tavern_store_asset_read(cdsh_tavern_store *store, cdsh_tavern_kind kind, const char *id,
                                 json_t **value, char **tag, cdsh_error *err);

/* Global regex rules (regex/rules.json). import accepts ST scripts or
 * internal rules (array or object) and appends them; *result {added, total,
 * tag}. load returns the array ([] if none). */
int cdsh_tavern_store_import_regex(cdsh_tavern_store *store, const char *text, size_t len,
                                   json_t **result, cdsh_error *err);
int cdsh_tavern_store_regex_load(cdsh_tavern_store *store, json_t **rules, cdsh_error *err);
/* regex_load with the file's tag ("" when there is no file yet; owned). */
int cdsh_tavern_store_regex_read(cdsh_tavern_store *store, json_t **rules, char **tag,
                                 cdsh_error *err);
/* Replaces the global rules (already validated by the caller) with the
 * revision check of cdsh_tavern_store_put. */
int cdsh_tavern_store_regex_put(cdsh_tavern_store *store, const json_t *rules,
                                const char *expected_tag, char **new_tag, cdsh_error *err);

/* Parses JSON text from outside: UTF-8 (BOM skipped), ≤ 8 M characters.
 * Codes JSON_NOT_UTF8, JSON_TOO_BIG, BAD_JSON. Owned result. */
json_t *cdsh_tavern_store_parse_json(const char *text, size_t len, cdsh_error *err);

#endif
