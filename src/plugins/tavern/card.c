/* card.c — character card parsing, normalisation, inspection and export.
 * Storage (card directories, ids on disk) lives in store.c; this file never
 * touches the filesystem. */
#include "plugins/tavern/card.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/json.h"
#include "base/random.h"
#include "base/utf8.h"
#include "base/base64.h"
#include "plugins/tavern/charx.h"
#include "plugins/tavern/lorebook.h"
#include "plugins/tavern/png.h"

struct cdsh_tavern_card {
    json_t *record;
    uint8_t *avatar;
    size_t avatar_len;
};

typedef enum ftype { F_STR, F_STRS, F_OBJ, F_BOOK, F_ANY, F_NUM } ftype;

typedef struct field {
    const char *name;
    ftype type;
    bool optional; /* absent stays absent (V3 optional fields) */
} field;

static const field V1_FIELDS[] = {
    {"name", F_STR, false},     {"description", F_STR, false}, {"personality", F_STR, false},
    {"scenario", F_STR, false}, {"first_mes", F_STR, false},   {"mes_example", F_STR, false},
};
static const field V2_FIELDS[] = {
    {"creator_notes", F_STR, false},
    {"system_prompt", F_STR, false},
    {"post_history_instructions", F_STR, false},
    {"alternate_greetings", F_STRS, false},
    {"character_book", F_BOOK, true},
    {"tags", F_STRS, false},
    {"creator", F_STR, false},
    {"character_version", F_STR, false},
    {"extensions", F_OBJ, false},
};
static const field V3_FIELDS[] = {
    {"assets", F_ANY, true},
    {"nickname", F_STR, true},
    {"creator_notes_multilingual", F_OBJ, true},
    {"source", F_STRS, true},
    {"group_only_greetings", F_STRS, false},
    {"creation_date", F_NUM, true},
    {"modification_date", F_NUM, true},
};
#define N(a) (sizeof(a) / sizeof((a)[0]))

static const field *known_field(const char *name, bool v3)
{
    for (size_t i = 0; i < N(V1_FIELDS); i++)
        if (!strcmp(V1_FIELDS[i].name, name))
            return &V1_FIELDS[i];
    for (size_t i = 0; i < N(V2_FIELDS); i++)
        if (!strcmp(V2_FIELDS[i].name, name))
            return &V2_FIELDS[i];
    for (size_t i = 0; v3 && i < N(V3_FIELDS); i++)
        if (!strcmp(V3_FIELDS[i].name, name))
            return &V3_FIELDS[i];
    return NULL;
}

static int bad_field(cdsh_error *err, const char *name, const char *what)
{
    return cdsh_error_set(err, CDSH_EINVAL, "CARD_BAD_FIELD", "card field data.%s must be %s", name,
                          what);
}

/* Normalises one known field into data (book handled by the caller). */
static int put_field(json_t *data, const field *f, const json_t *v, cdsh_error *err)
{
    bool absent = !v || json_is_null(v);
    if (absent && f->optional)
        return 0;
    switch (f->type) {
    case F_STR:
        if (absent)
            return json_object_set_new(data, f->name, json_string("")), 0;
        if (!json_is_string(v))
            return bad_field(err, f->name, "a string");
        break;
    case F_STRS:
        if (absent)
            return json_object_set_new(data, f->name, json_array()), 0;
        if (!json_is_array(v))
            return bad_field(err, f->name, "a list of strings");
        for (size_t i = 0; i < json_array_size(v); i++)
            if (!json_is_string(json_array_get(v, i)))
                return bad_field(err, f->name, "a list of strings");
        break;
    case F_OBJ:
        if (absent)
            return json_object_set_new(data, f->name, json_object()), 0;
        if (!json_is_object(v))
            return bad_field(err, f->name, "an object");
        break;
    case F_NUM:
        if (!json_is_number(v))
            return bad_field(err, f->name, "a number");
        break;
    case F_BOOK:
    case F_ANY: break;
    }
    json_object_set_new(data, f->name, json_deep_copy(v));
    return 0;
}

typedef struct candidate {
    int where; /* 0 data, 1 root, 2 data.extensions, 3 root.extensions */
    const char *key;
} candidate;

static const candidate BOOK_CANDIDATES[] = {
    {0, "character_book"}, {1, "character_book"}, {0, "lorebook"},       {1, "lorebook"},
    {0, "characterBook"},  {1, "characterBook"},  {2, "character_book"}, {2, "characterBook"},
    {2, "world"},          {3, "character_book"}, {3, "characterBook"},  {3, "world"},
};
static const candidate REGEX_CANDIDATES[] = {
    {0, "regex_scripts"}, {1, "regex_scripts"}, {2, "regex_scripts"},
    {2, "regexScripts"},  {3, "regex_scripts"}, {3, "regexScripts"},
};
static const char *const WHERE_NAMES[] = {"data.", "", "data.extensions.", "extensions."};

static json_t *cand_get(const json_t *d, const json_t *r, const candidate *c)
{
    const json_t *base = c->where == 0   ? d
                         : c->where == 1 ? r
                         : c->where == 2 ? json_object_get(d, "extensions")
                                         : json_object_get(r, "extensions");
    return json_object_get(base, c->key);
}

static const char *spec_name(const json_t *root, bool ccv3_hint)
{
    const char *spec = json_string_value(json_object_get(root, "spec"));
    if (spec && !strcmp(spec, "chara_card_v3"))
        return "chara_card_v3";
    if (spec && !strcmp(spec, "chara_card_v2"))
        return "chara_card_v2";
    if (ccv3_hint)
        return "chara_card_v3";
    if (json_is_object(json_object_get(root, "data")))
        return "chara_card_v2";
    return "chara_card_v1";
}

/* The V2 spec types optional character-book fields strictly (entry ids are
 * numbers, position is before_char/after_char). Values of another type are
 * moved into the entry's (or book's) extensions as "cdsh_original_<key>", so
 * a V2 card stays valid and nothing is dropped. V3 cards keep them (a V3 id
 * may be a string); only their V2 backfill is cleaned. */
static void move_to_ext(json_t *obj, const char *key)
{
    json_t *ext = json_object_get(obj, "extensions");
    if (!json_is_object(ext)) {
        ext = json_object();
        json_object_set_new(obj, "extensions", ext);
    }
    char name[96];
    snprintf(name, sizeof name, "cdsh_original_%s", key);
    json_object_set(ext, name, json_object_get(obj, key));
    json_object_del(obj, key);
}

static bool type_ok(const json_t *v, char t)
{
    switch (t) {
    case 's': return json_is_string(v);
    case 'n': return json_is_number(v);
    case 'b': return json_is_boolean(v);
    case 'a': return json_is_array(v);
    case 'p':
        return json_is_string(v) && (!strcmp(json_string_value(v), "before_char") ||
                                     !strcmp(json_string_value(v), "after_char"));
    }
    return false;
}

static void v2_clean_book(json_t *book)
{
    static const char *const BOOK_KEYS[][2] = {{"name", "s"},
                                               {"description", "s"},
                                               {"scan_depth", "n"},
                                               {"token_budget", "n"},
                                               {"recursive_scanning", "b"}};
    static const char *const ENTRY_KEYS[][2] = {
        {"case_sensitive", "b"}, {"name", "s"},      {"priority", "n"},       {"id", "n"},
        {"comment", "s"},        {"selective", "b"}, {"secondary_keys", "a"}, {"constant", "b"},
        {"position", "p"}};
    if (!json_is_object(book))
        return;
    for (size_t i = 0; i < N(BOOK_KEYS); i++) {
        json_t *v = json_object_get(book, BOOK_KEYS[i][0]);
        if (v && !type_ok(v, BOOK_KEYS[i][1][0]))
            move_to_ext(book, BOOK_KEYS[i][0]);
    }
    size_t idx;
    json_t *e;
    json_array_foreach(json_object_get(book, "entries"), idx, e) {
        for (size_t i = 0; i < N(ENTRY_KEYS); i++) {
            json_t *v = json_object_get(e, ENTRY_KEYS[i][0]);
            if (v && !type_ok(v, ENTRY_KEYS[i][1][0]))
                move_to_ext(e, ENTRY_KEYS[i][0]);
        }
    }
}

static json_t *depth_prompt(const json_t *ext)
{
    json_t *dp = json_object_get(ext, "depth_prompt");
    const char *prompt = json_string_value(json_object_get(dp, "prompt"));
    if (!prompt || !*prompt)
        return json_null();
    json_t *depth = json_object_get(dp, "depth");
    json_t *role = json_object_get(dp, "role");
    const char *roles[] = {"system", "user", "assistant"};
    const char *r = "system";
    if (json_is_string(role)) {
        for (size_t i = 0; i < 3; i++)
            if (!strcmp(json_string_value(role), roles[i]))
                r = roles[i];
    } else if (json_is_integer(role) && json_integer_value(role) >= 0 &&
               json_integer_value(role) <= 2) {
        r = roles[json_integer_value(role)];
    }
    json_int_t d = json_is_number(depth) ? (json_int_t)json_number_value(depth) : 4;
    return json_pack("{s:s, s:I, s:s}", "prompt", prompt, "depth", (json_int_t)(d < 0 ? 4 : d),
                     "role", r);
}

static void remove_candidate(json_t *record, const candidate *c, bool v1)
{
    json_t *data = json_object_get(record, "data");
    json_t *extra = json_object_get(record, "extra");
    json_t *ext = json_object_get(data, "extensions");
    if (c->where == 0 || c->where == 2 || v1) {
        if (!(c->where == 0 && !strcmp(c->key, "character_book")))
            json_object_del(ext, c->key);
        if (c->where == 0 && strcmp(c->key, "character_book"))
            json_object_del(data, c->key);
    } else if (c->where == 1) {
        json_object_del(extra, c->key);
    } else {
        json_object_del(json_object_get(extra, "extensions"), c->key);
    }
}

/* Long by design: the V1/V2/V3 field mapping, one field a line, in the
 * order of the spec tables (sillytavern-formats.md). */
int cdsh_tavern_card_from_json(const json_t *root, bool ccv3_hint, const uint8_t *avatar,
                               size_t avatar_len, cdsh_tavern_card **out, cdsh_error *err)
{
    if (!out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "card_from_json: no output");
    *out = NULL;
    if (!json_is_object(root))
        return cdsh_error_set(err, CDSH_EINVAL, "CARD_BAD_SHAPE",
                              "a character card must be a JSON object");
    const char *spec = spec_name(root, ccv3_hint);
    bool v3 = !strcmp(spec, "chara_card_v3");
    bool v1 = !strcmp(spec, "chara_card_v1");
    json_t *rdata = json_object_get(root, "data");
    const json_t *src = !v1 && json_is_object(rdata) ? rdata : root;
    bool has_data = src != root;

    json_t *record = json_object();
    json_t *data = json_object();
    json_t *extra = json_object();
    json_t *book = NULL;
    int rc = 0;
    cdsh_tavern_card *card = calloc(1, sizeof *card);
    if (!card || !record || !data || !extra) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory parsing card");
        goto cleanup;
    }
    const char *name = json_string_value(json_object_get(src, "name"));
    if (!name || !*name) {
        rc = cdsh_error_set(err, CDSH_EINVAL, "CARD_NO_NAME",
                            "the card has no name (data.name is missing or empty)");
        goto cleanup;
    }
    /* Known fields in spec order, then unknown keys into extensions. */
    const field *lists[3] = {V1_FIELDS, V2_FIELDS, V3_FIELDS};
    size_t counts[3] = {N(V1_FIELDS), N(V2_FIELDS), v3 ? N(V3_FIELDS) : 0};
    for (int l = 0; l < 3; l++)
        for (size_t i = 0; i < counts[l]; i++) {
            const field *f = &lists[l][i];
            if (f->type == F_BOOK)
                continue;
            if ((rc = put_field(data, f, json_object_get(src, f->name), err)) < 0)
                goto cleanup;
        }
    json_t *ext = json_object_get(data, "extensions");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)src, k, v) {
        if (known_field(k, v3))
            continue;
        if (!has_data && !v1 && (!strcmp(k, "spec") || !strcmp(k, "spec_version")))
            continue;
        if (!json_object_get(ext, k)) {
            json_object_set(ext, k, v);
        } else {
            char moved[256];
            snprintf(moved, sizeof moved, "cdsh_data.%s", k);
            json_object_set(ext, moved, v);
        }
    }
    if (has_data) {
        static const char *const SKIP[] = {"spec",     "spec_version", "data",
                                           "name",     "description",  "personality",
                                           "scenario", "first_mes",    "mes_example"};
        json_object_foreach((json_t *)root, k, v) {
            bool skip = false;
            for (size_t i = 0; i < N(SKIP) && !skip; i++)
                skip = !strcmp(k, SKIP[i]);
            if (!skip)
                json_object_set(extra, k, v);
        }
    }

    const char *ver = json_string_value(json_object_get(root, "spec_version"));
    json_object_set_new(record, "name", json_string(name));
    json_object_set_new(record, "spec", json_string(spec));
    json_object_set_new(record, "spec_version",
                        json_string(ver && !v1 ? ver
                                    : v3       ? "3.0"
                                    : v1       ? "1.0"
                                               : "2.0"));
    json_object_set(record, "data", data);
    json_object_set(record, "extra", extra);

    /* Embedded book: first non-empty candidate, else a present (empty) data book. */
    const candidate *hit = NULL;
    for (size_t i = 0; i < N(BOOK_CANDIDATES) && !hit; i++) {
        json_t *c = cand_get(src, root, &BOOK_CANDIDATES[i]);
        if (c && cdsh_tavern_lorebook_is_candidate(c))
            hit = &BOOK_CANDIDATES[i];
    }
    json_t *cb = hit ? cand_get(src, root, hit) : json_object_get(src, "character_book");
    if (cb && json_is_object(cb)) {
        book = cdsh_tavern_character_book_normalize_dup(cb, err);
        if (!book) {
            rc = err ? err->rc : CDSH_EINVAL;
            goto cleanup;
        }
    } else if (cb && hit) {
        book = cdsh_tavern_character_book_normalize_dup(cb, err);
        if (!book) {
            rc = err ? err->rc : CDSH_EINVAL;
            goto cleanup;
        }
    }
    if (book && !v3)
        v2_clean_book(book);
    if (hit) {
        remove_candidate(record, hit, v1 || !has_data);
        char where[128];
        snprintf(where, sizeof where, "%s%s", WHERE_NAMES[hit->where], hit->key);
        json_object_set_new(record, "book_source", json_string(where));
    } else {
        json_object_set_new(record, "book_source", json_null());
    }
    if (book) {
        /* Keep the book where the V2/V3 spec puts it, before extensions. */
        json_t *ordered = json_object();
        json_object_foreach(data, k, v) {
            if (!strcmp(k, "tags"))
                json_object_set(ordered, "character_book", book);
            json_object_set(ordered, k, v);
        }
        json_object_set(record, "data", ordered);
        json_decref(data);
        data = ordered;
    }

    json_t *scripts = NULL;
    for (size_t i = 0; i < N(REGEX_CANDIDATES) && !scripts; i++) {
        json_t *c = cand_get(src, root, &REGEX_CANDIDATES[i]);
        if (json_is_array(c) && json_array_size(c))
            scripts = c;
    }
    json_object_set_new(record, "regex_scripts", scripts ? json_deep_copy(scripts) : json_array());
    json_object_set_new(record, "depth_prompt", depth_prompt(json_object_get(data, "extensions")));

    if (avatar && avatar_len) {
        card->avatar = malloc(avatar_len);
        if (!card->avatar) {
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
            goto cleanup;
        }
        memcpy(card->avatar, avatar, avatar_len);
        card->avatar_len = avatar_len;
    }
    card->record = record;
    record = NULL;
    *out = card;
    card = NULL;
cleanup:
    json_decref(book);
    json_decref(data);
    json_decref(extra);
    json_decref(record);
    cdsh_tavern_card_free(card);
    return rc;
}

static int parse_json_text(const char *text, size_t len, bool ccv3_hint, const uint8_t *avatar,
                           size_t avatar_len, cdsh_tavern_card **out, cdsh_error *err)
{
    if (len >= 3 && (uint8_t)text[0] == 0xEF && (uint8_t)text[1] == 0xBB &&
        (uint8_t)text[2] == 0xBF) {
        text += 3;
        len -= 3;
    }
    if (!cdsh_utf8_valid(text, len))
        return cdsh_error_set(err, CDSH_EINVAL, "CARD_NOT_UTF8",
                              "card JSON is not valid UTF-8 (first bad byte at offset %zu)",
                              cdsh_utf8_valid_prefix(text, len));
    if (len > CDSH_TAVERN_CARD_JSON_MAX_CHARS &&
        cdsh_utf8_count(text, len) > CDSH_TAVERN_CARD_JSON_MAX_CHARS)
        return cdsh_error_set(err, CDSH_ETOOBIG, "CARD_TOO_BIG",
                              "card JSON is longer than 8 M characters");
    cdsh_error jerr = {0};
    json_t *root = cdsh_json_parse(text, len, 0, &jerr);
    if (!root)
        return cdsh_error_set(err, CDSH_EINVAL, "CARD_BAD_JSON", "card is not valid JSON: %s",
                              jerr.message);
    int rc = cdsh_tavern_card_from_json(root, ccv3_hint, avatar, avatar_len, out, err);
    json_decref(root);
    return rc;
}

int cdsh_tavern_card_parse(const uint8_t *bytes, size_t len, cdsh_tavern_card **out,
                           cdsh_error *err)
{
    if (!out || (!bytes && len))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "card_parse: bad arguments");
    *out = NULL;
    if (len > CDSH_TAVERN_PNG_MAX)
        return cdsh_error_set(err, CDSH_ETOOBIG, "CARD_TOO_BIG",
                              "card file is %zu bytes; the limit is 32 MiB", len);
    if (len >= 4 && !memcmp(bytes, "\x89PNG", 4)) {
        char *text = NULL;
        size_t text_len = 0;
        bool ccv3 = false;
        int rc = cdsh_tavern_png_find_card(bytes, len, &text, &text_len, &ccv3, err);
        if (rc < 0)
            return rc;
        uint8_t *json = NULL;
        size_t json_len = 0;
        cdsh_error berr = {0};
        rc = cdsh_base64_decode(text, text_len, &json, &json_len, &berr);
        free(text);
        if (rc == CDSH_EINVAL)
            return cdsh_error_set(err, rc, "CARD_BAD_BASE64", "card payload is %s", berr.message);
        if (rc < 0)
            return cdsh_error_set(err, rc, berr.code, "%s", berr.message);
        rc = parse_json_text((const char *)json, json_len, ccv3, bytes, len, out, err);
        free(json);
        return rc;
    }
    if (cdsh_tavern_charx_is_zip(bytes, len)) {
        char *json = NULL;
        size_t json_len = 0;
        uint8_t *avatar = NULL;
        size_t avatar_len = 0;
        int rc = cdsh_tavern_charx_read(bytes, len, &json, &json_len, &avatar, &avatar_len, err);
        if (rc < 0)
            return rc;
        rc = parse_json_text(json, json_len, true, avatar, avatar_len, out, err);
        free(json);
        free(avatar);
        return rc;
    }
    return parse_json_text((const char *)bytes, len, false, NULL, 0, out, err);
}

void cdsh_tavern_card_free(cdsh_tavern_card *card)
{
    if (!card)
        return;
    json_decref(card->record);
    free(card->avatar);
    free(card);
}

const json_t *cdsh_tavern_card_record_get(const cdsh_tavern_card *card)
{
    return card ? card->record : NULL;
}

const char *cdsh_tavern_card_name_get(const cdsh_tavern_card *card)
{
    return card ? json_string_value(json_object_get(card->record, "name")) : NULL;
}

const uint8_t *cdsh_tavern_card_avatar_get(const cdsh_tavern_card *card, size_t *len)
{
    if (len)
        *len = card ? card->avatar_len : 0;
    return card ? card->avatar : NULL;
}

const json_t *cdsh_tavern_card_book_get(const cdsh_tavern_card *card)
{
    return card ? json_object_get(json_object_get(card->record, "data"), "character_book") : NULL;
}

void cdsh_tavern_card_drop_book(cdsh_tavern_card *card)
{
    if (!card)
        return;
    json_object_del(json_object_get(card->record, "data"), "character_book");
    json_object_set_new(card->record, "book_source", json_null());
}

json_t *cdsh_tavern_card_inspect_dup(const cdsh_tavern_card *card)
{
    if (!card)
        return NULL;
    const json_t *book = cdsh_tavern_card_book_get(card);
    size_t entries = cdsh_tavern_lorebook_entry_count(book);
    const char *bname = json_string_value(json_object_get(book, "name"));
    return json_pack(
        "{s:O, s:O, s:b, s:b, s:o, s:I, s:I, s:b}", "name", json_object_get(card->record, "name"),
        "spec", json_object_get(card->record, "spec"), "hasAvatar", card->avatar != NULL,
        "hasCharacterBook", entries > 0, "characterBookName",
        entries > 0 ? json_string(bname ? bname : cdsh_tavern_card_name_get(card)) : json_null(),
        "entryCount", (json_int_t)entries, "regexScripts",
        (json_int_t)json_array_size(json_object_get(card->record, "regex_scripts")),
        "hasDepthPrompt", json_is_object(json_object_get(card->record, "depth_prompt")));
}

json_t *cdsh_tavern_card_to_json_dup(const json_t *record, bool force_v2)
{
    json_t *data = json_object_get(record, "data");
    if (!json_is_object(data))
        return NULL;
    const char *spec = json_string_value(json_object_get(record, "spec"));
    bool v3 = spec && !strcmp(spec, "chara_card_v3") && !force_v2;
    json_t *out = json_object();
    static const char *const MIRRORS[] = {"name",     "description", "personality",
                                          "scenario", "first_mes",   "mes_example"};
    for (size_t i = 0; i < N(MIRRORS); i++)
        json_object_set(out, MIRRORS[i], json_object_get(data, MIRRORS[i]));
    json_object_update(out, json_object_get(record, "extra"));
    const char *ver = json_string_value(json_object_get(record, "spec_version"));
    json_object_set_new(out, "spec", json_string(v3 ? "chara_card_v3" : "chara_card_v2"));
    json_object_set_new(out, "spec_version",
                        json_string(v3 ? (ver && ver[0] == '3' ? ver : "3.0") : "2.0"));
    json_t *dcopy = json_deep_copy(data);
    if (!v3)
        v2_clean_book(json_object_get(dcopy, "character_book"));
    json_object_set_new(out, "data", dcopy);
    return out;
}

static char *b64_json(const json_t *v)
{
    char *text = cdsh_json_dump_compact_dup(v);
    if (!text)
        return NULL;
    char *b = cdsh_base64_encode_dup((const uint8_t *)text, strlen(text));
    free(text);
    return b;
}

int cdsh_tavern_card_to_png(const json_t *record, const uint8_t *avatar, size_t avatar_len,
                            uint8_t **out, size_t *out_len, cdsh_error *err)
{
    if (!record || !out || !out_len)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "card_to_png: bad arguments");
    const char *spec = json_string_value(json_object_get(record, "spec"));
    bool v3 = spec && !strcmp(spec, "chara_card_v3");
    json_t *v2 = cdsh_tavern_card_to_json_dup(record, true);
    json_t *j3 = v3 ? cdsh_tavern_card_to_json_dup(record, false) : NULL;
    char *chara = v2 ? b64_json(v2) : NULL;
    char *ccv3 = j3 ? b64_json(j3) : NULL;
    int rc;
    if (!chara || (v3 && !ccv3))
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "cannot serialise the card");
    else
        rc = cdsh_tavern_png_embed(avatar, avatar ? avatar_len : 0, chara, ccv3, out, out_len, err);
    free(chara);
    free(ccv3);
    json_decref(v2);
    json_decref(j3);
    return rc;
}

static bool is_cjk(uint32_t cp)
{
    return cp >= 0x4E00 && cp <= 0x9FA5;
}

bool cdsh_tavern_card_field_editable(const char *key, const json_t *value)
{
    static const char *const fields[] = {"description",
                                         "personality",
                                         "scenario",
                                         "first_mes",
                                         "mes_example",
                                         "system_prompt",
                                         "post_history_instructions",
                                         "creator_notes",
                                         "alternate_greetings",
                                         "tags",
                                         "creator",
                                         "character_version",
                                         NULL};
    if (!key)
        return false;
    if (strcmp(key, "name") == 0)
        return json_is_string(value);
    for (const char *const *f = fields; *f; f++)
        if (strcmp(*f, key) == 0)
            return json_is_string(value) || json_is_array(value);
    return false;
}

char *cdsh_tavern_card_sanitize_dup(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    char *out = malloc(n * 1 + 8 + 1);
    if (!out)
        return NULL;
    size_t o = 0, chars = 0;
    bool dash = false;
    for (size_t i = 0; i < n && chars < CDSH_TAVERN_CARD_ID_NAME_MAX;) {
        uint32_t cp;
        size_t l;
        cdsh_utf8_decode(name + i, n - i, &cp, &l);
        if (l == 0)
            break;
        if (cp >= 'A' && cp <= 'Z')
            cp += 32;
        if ((cp >= 'a' && cp <= 'z') || (cp >= '0' && cp <= '9') || is_cjk(cp)) {
            if (dash && o > 0) {
                out[o++] = '-';
                chars++;
                if (chars >= CDSH_TAVERN_CARD_ID_NAME_MAX)
                    break;
            }
            dash = false;
            o += cdsh_utf8_encode(cp, out + o);
            chars++;
        } else {
            dash = true;
        }
        i += l;
    }
    if (o == 0) {
        strcpy(out, "card");
        return out;
    }
    out[o] = '\0';
    return out;
}

char *cdsh_tavern_card_id_new(const char *name)
{
    if (!name)
        return NULL;
    char *base = cdsh_tavern_card_sanitize_dup(name);
    if (!base)
        return NULL;
    size_t n = strlen(name);
    uint8_t *buf = malloc(n + 8);
    char hex[CDSH_SHA256_HEX_LEN + 1];
    char *id = NULL;
    if (buf && cdsh_random_bytes(buf + n, 8) == 0) {
        memcpy(buf, name, n);
        if (cdsh_hash_sha256_hex(buf, n + 8, hex) == 0) {
            size_t bl = strlen(base);
            id = malloc(bl + 10);
            if (id)
                snprintf(id, bl + 10, "%s-%.8s", base, hex);
        }
    }
    free(buf);
    free(base);
    return id;
}

bool cdsh_tavern_card_id_valid(const char *id)
{
    if (!id || !*id || strlen(id) > 128)
        return false;
    size_t n = strlen(id);
    bool seg_empty = true;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l;
        if (cdsh_utf8_decode(id + i, n - i, &cp, &l) < 0)
            return false;
        if (cp == '.') {
            if (seg_empty)
                return false;
            seg_empty = true;
        } else if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') ||
                   (cp >= '0' && cp <= '9') || cp == '_' || cp == '-' || is_cjk(cp)) {
            seg_empty = false;
        } else {
            return false;
        }
        i += l;
    }
    return !seg_empty;
}
