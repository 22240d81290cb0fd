/* store.c — the tavern asset store: envelopes with revision tags, the store
 * lock, card directories (staged then renamed), library assets and global
 * regex rules. Parsing and normalisation are delegated to the pure modules. */
#include "plugins/tavern/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/hash.h"
#include "base/home.h"
#include "base/json.h"
#include "base/random.h"
#include "base/utf8.h"
#include "plugins/tavern/card.h"
#include "plugins/tavern/lorebook.h"
#include "plugins/tavern/preset.h"
#include "plugins/tavern/regex.h"

#define LOCK_TIMEOUT_MS 10000
#define JSON_FILE_MAX (64u * 1024 * 1024)

struct cdsh_tavern_store {
    char *root;
};

static const char *const KIND_DIRS[] = {"library/lorebooks", "library/presets", "personas"};
static const char *const KIND_NAMES[] = {"lorebook", "preset", "persona"};

int cdsh_tavern_store_open(const cdsh_home *home, const char *root, cdsh_tavern_store **out,
                           cdsh_error *err)
{
    if (!out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "store_open: no output");
    *out = NULL;
    char *path = NULL;
    if (root) {
        path = cdsh_fs_path_normalize_dup(root);
    } else {
        int rc = cdsh_home_ensure(home, NULL, err);
        if (rc < 0)
            return rc;
        path = cdsh_home_path_dup(home, "tavern", (char *)NULL);
    }
    if (!path)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "cannot build the tavern path");
    int rc = cdsh_fs_mkdir_p(path, 0700, err);
    if (rc < 0) {
        free(path);
        return rc;
    }
    cdsh_tavern_store *s = calloc(1, sizeof *s);
    if (!s) {
        free(path);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    s->root = path;
    *out = s;
    return 0;
}

void cdsh_tavern_store_free(cdsh_tavern_store *store)
{
    if (!store)
        return;
    free(store->root);
    free(store);
}

const char *cdsh_tavern_store_root_get(const cdsh_tavern_store *store)
{
    return store ? store->root : NULL;
}

/* Joins rel below the root and refuses anything that leaves it. */
static char *safe_path(const cdsh_tavern_store *s, const char *rel, cdsh_error *err)
{
    if (!rel || !*rel || rel[0] == '/' || strstr(rel, "..")) {
        cdsh_error_set(err, CDSH_EPERM, "PATH_ESCAPE", "path \"%s\" is not inside the tavern store",
                       rel ? rel : "");
        return NULL;
    }
    char *p = cdsh_fs_path_join_dup(s->root, rel);
    if (!p) {
        cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        return NULL;
    }
    if (!cdsh_fs_path_is_inside(s->root, p)) {
        cdsh_error_set(err, CDSH_EPERM, "PATH_ESCAPE",
                       "path \"%s\" leaves the tavern store (symlink?)", rel);
        free(p);
        return NULL;
    }
    return p;
}

static int lock_store(cdsh_tavern_store *s, cdsh_fs_lock **lock, cdsh_error *err)
{
    char *p = cdsh_fs_path_join_dup(s->root, ".lock");
    if (!p)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    int rc = cdsh_fs_lock_open(p, CDSH_FS_LOCK_EXCLUSIVE, LOCK_TIMEOUT_MS, NULL, lock, err);
    free(p);
    return rc;
}

json_t *cdsh_tavern_store_parse_json(const char *text, size_t len, cdsh_error *err)
{
    if (!text) {
        cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "no JSON text");
        return NULL;
    }
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) {
        text += 3;
        len -= 3;
    }
    if (!cdsh_utf8_valid(text, len)) {
        cdsh_error_set(err, CDSH_EINVAL, "JSON_NOT_UTF8",
                       "file is not valid UTF-8 (first bad byte at offset %zu)",
                       cdsh_utf8_valid_prefix(text, len));
        return NULL;
    }
    if (len > CDSH_TAVERN_CARD_JSON_MAX_CHARS &&
        cdsh_utf8_count(text, len) > CDSH_TAVERN_CARD_JSON_MAX_CHARS) {
        cdsh_error_set(err, CDSH_ETOOBIG, "JSON_TOO_BIG", "JSON is longer than 8 M characters");
        return NULL;
    }
    return cdsh_json_parse(text, len, 0, err);
}

/* ---- envelopes -------------------------------------------------------------- */

static int read_envelope(const char *path, const char *rel, json_t **env, cdsh_error *err)
{
    char *text = NULL;
    size_t len = 0;
    int rc = cdsh_fs_read_file(path, JSON_FILE_MAX, &text, &len, err);
    if (rc == CDSH_ENOTFOUND)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "NOT_FOUND", "%s does not exist", rel);
    if (rc < 0)
        return rc;
    cdsh_error jerr = {0};
    json_t *j = cdsh_json_parse(text, len, 0, &jerr);
    free(text);
    if (!j || !json_is_object(json_object_get(j, "cdsh")) || !json_object_get(j, "value")) {
        json_decref(j);
        return cdsh_error_set(err, CDSH_EIO, "STORE_CORRUPT", "%s is not a cdsh tavern file%s%s",
                              rel, jerr.message[0] ? ": " : "", jerr.message);
    }
    *env = j;
    return 0;
}

static int write_envelope(const char *path, const char *kind, json_int_t revision,
                          const json_t *value, char **tag_out, cdsh_error *err)
{
    char *compact = cdsh_json_dump_compact_dup(value);
    char hex[CDSH_SHA256_HEX_LEN + 1];
    if (!compact || cdsh_hash_sha256_hex(compact, strlen(compact), hex) < 0) {
        free(compact);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "cannot serialise %s", kind);
    }
    free(compact);
    char tag[64], now[32];
    snprintf(tag, sizeof tag, "%lld-%.8s", (long long)revision, hex);
    cdsh_clock_format_iso8601(cdsh_clock_wall_ms(), now, sizeof now);
    json_t *env = json_pack("{s:{s:s, s:I, s:s, s:s}, s:O}", "cdsh", "kind", kind, "revision",
                            revision, "tag", tag, "updatedAt", now, "value", value);
    char *text = env ? cdsh_json_dump_pretty_dup(env) : NULL;
    json_decref(env);
    if (!text)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "cannot serialise %s", kind);
    int rc = cdsh_fs_write_atomic(path, text, strlen(text), 0600, err);
    free(text);
    if (rc == 0 && tag_out) {
        *tag_out = strdup(tag);
        if (!*tag_out)
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    return rc;
}

int cdsh_tavern_store_load(cdsh_tavern_store *store, const char *rel, json_t **value, char **tag,
                           cdsh_error *err)
{
    if (!store)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "store_load: no store");
    if (value)
        *value = NULL;
    if (tag)
        *tag = NULL;
    char *path = safe_path(store, rel, err);
    if (!path)
        return err ? err->rc : CDSH_EPERM;
    json_t *env = NULL;
    int rc = read_envelope(path, rel, &env, err);
    free(path);
    if (rc < 0)
        return rc;
    if (tag) {
        const char *t = json_string_value(json_object_get(json_object_get(env, "cdsh"), "tag"));
        *tag = strdup(t ? t : "");
    }
    if (value)
        *value = json_incref(json_object_get(env, "value"));
    json_decref(env);
    return 0;
}

/* Write with the revision check; the caller holds the store lock. */
static int put_locked(cdsh_tavern_store *s, const char *rel, const char *kind, const json_t *value,
                      const char *expected, char **new_tag, cdsh_error *err)
{
    char *path = safe_path(s, rel, err);
    if (!path)
        return err ? err->rc : CDSH_EPERM;
    json_t *env = NULL;
    json_int_t revision = 0;
    int rc = read_envelope(path, rel, &env, NULL);
    const char *cur = NULL;
    if (rc == 0) {
        json_t *meta = json_object_get(env, "cdsh");
        revision = json_integer_value(json_object_get(meta, "revision"));
        cur = json_string_value(json_object_get(meta, "tag"));
    }
    if (expected && strcmp(expected, cur ? cur : "") != 0) {
        rc = cdsh_error_set(err, CDSH_EBUSY, "REVISION_CONFLICT",
                            "%s changed since it was read (expected revision %s, found %s)", rel,
                            *expected ? expected : "none", cur ? cur : "none");
        goto cleanup;
    }
    char *dir = cdsh_fs_path_join_dup(path, "..");
    rc = dir ? cdsh_fs_mkdir_p(dir, 0700, err)
             : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    free(dir);
    if (rc == 0)
        rc = write_envelope(path, kind, revision + 1, value, new_tag, err);
cleanup:
    json_decref(env);
    free(path);
    return rc;
}

int cdsh_tavern_store_put(cdsh_tavern_store *store, const char *rel, const char *kind,
                          const json_t *value, const char *expected_tag, char **new_tag,
                          cdsh_error *err)
{
    if (!store || !kind || !value)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "store_put: bad arguments");
    if (new_tag)
        *new_tag = NULL;
    cdsh_fs_lock *lock = NULL;
    int rc = lock_store(store, &lock, err);
    if (rc < 0)
        return rc;
    rc = put_locked(store, rel, kind, value, expected_tag, new_tag, err);
    cdsh_fs_lock_close(lock);
    return rc;
}

/* ---- cards ---------------------------------------------------------------------- */

static char *card_rel(const char *card_id, const char *file)
{
    size_t n = strlen("characters/") + strlen(card_id) + 1 + strlen(file) + 1;
    char *r = malloc(n);
    if (r)
        snprintf(r, n, "characters/%s/%s", card_id, file);
    return r;
}

static int check_card_id(const char *card_id, cdsh_error *err)
{
    if (!cdsh_tavern_card_id_valid(card_id))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_CARD_ID", "\"%s\" is not a valid card id",
                              card_id ? card_id : "");
    return 0;
}

static json_t *compile_card_rules(const json_t *scripts)
{
    json_t *rules = json_array();
    size_t i;
    json_t *sc;
    json_array_foreach(scripts, i, sc) {
        json_t *r = NULL;
        /* A malformed script is skipped, not fatal: the card stays importable. */
        if (cdsh_tavern_regex_from_st(sc, CDSH_TAVERN_REGEX_CARD, &r, NULL) == 0 && r)
            json_array_append_new(rules, r);
    }
    return rules;
}

static int stage_card(cdsh_tavern_store *s, const char *stage, const cdsh_tavern_card *card,
                      const json_t *rules, char **tag, cdsh_error *err)
{
    char *assets = cdsh_fs_path_join_dup(stage, "assets");
    char *card_json = cdsh_fs_path_join_dup(stage, "card.json");
    char *card_png = cdsh_fs_path_join_dup(stage, "card.png");
    char *book_json = cdsh_fs_path_join_dup(stage, "assets/character-book.json");
    char *rx_json = cdsh_fs_path_join_dup(stage, "assets/regex-scripts.json");
    json_t *wi = NULL;
    int rc = 0;
    (void)s;
    if (!assets || !card_json || !card_png || !book_json || !rx_json) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto cleanup;
    }
    if ((rc = cdsh_fs_mkdir_p(assets, 0700, err)) < 0)
        goto cleanup;
    const json_t *record = cdsh_tavern_card_record_get(card);
    if ((rc = write_envelope(card_json, "card", 1, record, tag, err)) < 0)
        goto cleanup;
    size_t alen = 0;
    const uint8_t *avatar = cdsh_tavern_card_avatar_get(card, &alen);
    if (avatar && (rc = cdsh_fs_write_atomic(card_png, avatar, alen, 0600, err)) < 0)
        goto cleanup;
    const json_t *book = cdsh_tavern_card_book_get(card);
    if (book && cdsh_tavern_lorebook_entry_count(book) > 0) {
        wi = cdsh_tavern_lorebook_normalize_dup(book, err);
        if (!wi) {
            rc = err ? err->rc : CDSH_EINVAL;
            goto cleanup;
        }
        if (!json_is_string(json_object_get(wi, "name")))
            json_object_set_new(wi, "name", json_string(cdsh_tavern_card_name_get(card)));
        if ((rc = write_envelope(book_json, "lorebook", 1, wi, NULL, err)) < 0)
            goto cleanup;
    }
    rc = write_envelope(rx_json, "regex-rules", 1, rules, NULL, err);
cleanup:
    json_decref(wi);
    free(assets);
    free(card_json);
    free(card_png);
    free(book_json);
    free(rx_json);
    return rc;
}

int cdsh_tavern_store_import_card(cdsh_tavern_store *store, const uint8_t *bytes, size_t len,
                                  cdsh_tavern_book_choice choice, json_t **result, cdsh_error *err)
{
    if (!store || !result || (!bytes && len))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "import_card: bad arguments");
    *result = NULL;
    cdsh_tavern_card *card = NULL;
    cdsh_fs_lock *lock = NULL;
    json_t *rules = NULL;
    char *chars = NULL, *stage = NULL, *final = NULL, *id = NULL, *tag = NULL;
    bool staged = false;
    int rc = cdsh_tavern_card_parse(bytes, len, &card, err);
    if (rc < 0)
        goto cleanup;
    size_t entries = cdsh_tavern_lorebook_entry_count(cdsh_tavern_card_book_get(card));
    if (entries > 0 && choice == CDSH_TAVERN_BOOK_ASK) {
        const char *bn =
            json_string_value(json_object_get(cdsh_tavern_card_book_get(card), "name"));
        rc = cdsh_error_set(err, CDSH_EINVAL, "BOOK_CHOICE_REQUIRED",
                            "card \"%s\" embeds the lorebook \"%s\" with %zu entries; choose "
                            "--with-book or --without-book",
                            cdsh_tavern_card_name_get(card),
                            bn ? bn : cdsh_tavern_card_name_get(card), entries);
        goto cleanup;
    }
    if (choice != CDSH_TAVERN_BOOK_IMPORT) {
        cdsh_tavern_card_drop_book(card);
        entries = 0;
    }
    rules = compile_card_rules(json_object_get(cdsh_tavern_card_record_get(card), "regex_scripts"));
    if ((rc = lock_store(store, &lock, err)) < 0)
        goto cleanup;
    chars = cdsh_fs_path_join_dup(store->root, "characters");
    char rnd[17];
    if (!chars || cdsh_random_hex(rnd, sizeof rnd, 8) < 0) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto cleanup;
    }
    if ((rc = cdsh_fs_mkdir_p(chars, 0700, err)) < 0)
        goto cleanup;
    if (!cdsh_fs_path_is_inside(store->root, chars)) {
        rc = cdsh_error_set(err, CDSH_EPERM, "PATH_ESCAPE",
                            "characters/ leaves the tavern store (symlink?)");
        goto cleanup;
    }
    for (int attempt = 0; attempt < 8 && !final; attempt++) {
        free(id);
        id = cdsh_tavern_card_id_new(cdsh_tavern_card_name_get(card));
        char *candidate = id ? cdsh_fs_path_join_dup(chars, id) : NULL;
        struct stat st;
        if (candidate && lstat(candidate, &st) != 0 && errno == ENOENT)
            final = candidate;
        else
            free(candidate);
    }
    char stage_name[40];
    snprintf(stage_name, sizeof stage_name, ".preparing-%s", rnd);
    stage = cdsh_fs_path_join_dup(chars, stage_name);
    if (!final || !stage) {
        rc = cdsh_error_set(err, CDSH_EIO, "CARD_ID_FAILED", "cannot allocate a new card id");
        goto cleanup;
    }
    staged = true;
    if ((rc = stage_card(store, stage, card, rules, &tag, err)) < 0)
        goto cleanup;
    if (rename(stage, final) != 0) {
        rc = cdsh_error_set(err, CDSH_EIO, "IO_ERROR", "cannot publish card directory %s: %s",
                            final, strerror(errno));
        goto cleanup;
    }
    staged = false;
    *result = json_pack("{s:s, s:s, s:b, s:I, s:I, s:s}", "cardId", id, "name",
                        cdsh_tavern_card_name_get(card), "bookImported", entries > 0, "bookEntries",
                        (json_int_t)entries, "regexRules", (json_int_t)json_array_size(rules),
                        "tag", tag);
    if (!*result)
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
cleanup:
    if (staged)
        cdsh_fs_remove_tree(stage, NULL);
    cdsh_fs_lock_close(lock);
    cdsh_tavern_card_free(card);
    json_decref(rules);
    free(chars);
    free(stage);
    free(final);
    free(id);
    free(tag);
    return rc;
}

int cdsh_tavern_store_card_load(cdsh_tavern_store *store, const char *card_id, json_t **record,
                                char **tag, cdsh_error *err)
{
    int rc = check_card_id(card_id, err);
    if (rc < 0)
        return rc;
    char *rel = card_rel(card_id, "card.json");
    if (!rel)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    rc = cdsh_tavern_store_load(store, rel, record, tag, err);
    free(rel);
    if (rc == CDSH_ENOTFOUND)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "CARD_NOT_FOUND", "no card with id \"%s\"",
                              card_id);
    return rc;
}

static int cmp_cards(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int c = strcmp(json_string_value(json_object_get(x, "name")),
                   json_string_value(json_object_get(y, "name")));
    return c ? c
             : strcmp(json_string_value(json_object_get(x, "cardId")),
                      json_string_value(json_object_get(y, "cardId")));
}

/* A card's tags for the gallery: its string tags, trimmed, empty ones dropped. */
static json_t *card_tags(const json_t *data)
{
    json_t *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(data, "tags"), i, t) {
        const char *s = json_string_value(t);
        if (!s)
            continue;
        while (*s == ' ' || *s == '\t')
            s++;
        size_t len = strlen(s);
        while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
            len--;
        if (len)
            json_array_append_new(out, json_stringn(s, len));
    }
    return out;
}

/* The head of a card's description for the gallery: at most SUMMARY_MAX
 * bytes, cut at a character boundary (the search reads the whole card). */
#define SUMMARY_MAX 280
static json_t *card_summary(const json_t *data)
{
    const char *d = json_string_value(json_object_get(data, "description"));
    size_t len = d ? strlen(d) : 0;
    if (len <= SUMMARY_MAX)
        return json_string(d ? d : "");
    return json_stringn(d, cdsh_utf8_valid_prefix(d, SUMMARY_MAX));
}

int cdsh_tavern_store_list_cards(cdsh_tavern_store *store, json_t **out, cdsh_error *err)
{
    if (!store || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "list_cards: bad arguments");
    *out = NULL;
    char *chars = cdsh_fs_path_join_dup(store->root, "characters");
    char **names = NULL;
    size_t count = 0;
    int rc = chars ? cdsh_fs_list_dir(chars, &names, &count, err) : CDSH_ENOMEM;
    free(chars);
    if (rc == CDSH_ENOTFOUND) {
        *out = json_array();
        return 0;
    }
    if (rc < 0)
        return rc;
    json_t **items = calloc(count ? count : 1, sizeof *items);
    size_t n = 0;
    for (size_t i = 0; items && i < count; i++) {
        if (!cdsh_tavern_card_id_valid(names[i]))
            continue; /* staging directories and strays */
        json_t *rec = NULL;
        char *tag = NULL;
        if (cdsh_tavern_store_card_load(store, names[i], &rec, &tag, NULL) < 0)
            continue;
        char *png_rel = card_rel(names[i], "card.png");
        char *png = png_rel ? safe_path(store, png_rel, NULL) : NULL;
        struct stat st;
        bool avatar = png && stat(png, &st) == 0;
        free(png_rel);
        free(png);
        json_t *data = json_object_get(rec, "data");
        json_t *book = json_object_get(data, "character_book");
        items[n++] = json_pack(
            "{s:s, s:O, s:O, s:b, s:I, s:I, s:s, s:o, s:s, s:o, s:I}", "cardId", names[i], "name",
            json_object_get(rec, "name"), "spec", json_object_get(rec, "spec"), "hasAvatar", avatar,
            "bookEntries", (json_int_t)cdsh_tavern_lorebook_entry_count(book), "regexScripts",
            (json_int_t)json_array_size(json_object_get(rec, "regex_scripts")), "tag", tag, "tags",
            card_tags(data), "creator",
            json_string_value(json_object_get(data, "creator"))
                ? json_string_value(json_object_get(data, "creator"))
                : "",
            "summary", card_summary(data), "greetings",
            (json_int_t)(1 + json_array_size(json_object_get(data, "alternate_greetings"))));
        json_decref(rec);
        free(tag);
    }
    cdsh_fs_list_free(names);
    if (!items)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    qsort(items, n, sizeof *items, cmp_cards);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, items[i]);
    free(items);
    *out = arr;
    return 0;
}

int cdsh_tavern_store_export_card(cdsh_tavern_store *store, const char *card_id, bool png,
                                  uint8_t **out, size_t *out_len, cdsh_error *err)
{
    if (!out || !out_len)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "export_card: bad arguments");
    *out = NULL;
    json_t *rec = NULL;
    int rc = cdsh_tavern_store_card_load(store, card_id, &rec, NULL, err);
    if (rc < 0)
        return rc;
    if (!png) {
        json_t *j = cdsh_tavern_card_to_json_dup(rec, false);
        char *text = j ? cdsh_json_dump_pretty_dup(j) : NULL;
        json_decref(j);
        json_decref(rec);
        if (!text)
            return cdsh_error_set(err, CDSH_EIO, "STORE_CORRUPT", "card %s has no data", card_id);
        *out = (uint8_t *)text;
        *out_len = strlen(text);
        return 0;
    }
    char *png_rel = card_rel(card_id, "card.png");
    char *path = png_rel ? safe_path(store, png_rel, err) : NULL;
    char *avatar = NULL;
    size_t alen = 0;
    if (!path) {
        rc = err ? err->rc : CDSH_ENOMEM;
        goto cleanup;
    }
    rc = cdsh_fs_read_file(path, 32u * 1024 * 1024, &avatar, &alen, err);
    if (rc == CDSH_ENOTFOUND)
        rc = 0; /* no avatar: a 1×1 placeholder */
    if (rc < 0)
        goto cleanup;
    rc = cdsh_tavern_card_to_png(rec, (const uint8_t *)avatar, alen, out, out_len, err);
cleanup:
    free(avatar);
    free(path);
    free(png_rel);
    json_decref(rec);
    return rc;
}

int cdsh_tavern_store_delete_card(cdsh_tavern_store *store, const char *card_id, cdsh_error *err)
{
    int rc = cdsh_tavern_store_card_load(store, card_id, NULL, NULL, err);
    if (rc < 0)
        return rc;
    cdsh_fs_lock *lock = NULL;
    if ((rc = lock_store(store, &lock, err)) < 0)
        return rc;
    char rel[256];
    snprintf(rel, sizeof rel, "characters/%s", card_id);
    char *path = safe_path(store, rel, err);
    rc = path ? cdsh_fs_remove_tree(path, err) : (err ? err->rc : CDSH_EPERM);
    free(path);
    cdsh_fs_lock_close(lock);
    return rc;
}

/* ---- library assets ---------------------------------------------------------------- */

static char *asset_rel(cdsh_tavern_kind kind, const char *id)
{
    size_t n = strlen(KIND_DIRS[kind]) + strlen(id) + 8;
    char *r = malloc(n);
    if (r)
        snprintf(r, n, "%s/%s.json", KIND_DIRS[kind], id);
    return r;
}

static json_t *normalize_kind(cdsh_tavern_kind kind, const json_t *in, const char *fallback,
                              cdsh_error *err)
{
    switch (kind) {
    case CDSH_TAVERN_LOREBOOK: {
        json_t *b = cdsh_tavern_lorebook_normalize_dup(in, err);
        if (b && !json_is_string(json_object_get(b, "name")))
            json_object_set_new(b, "name",
                                json_string(fallback && *fallback ? fallback : "lorebook"));
        return b;
    }
    case CDSH_TAVERN_PRESET: return cdsh_tavern_preset_normalize_dup(in, fallback, err);
    case CDSH_TAVERN_PERSONA: return cdsh_tavern_persona_normalize_dup(in, err);
    }
    return NULL;
}

int cdsh_tavern_store_import_asset(cdsh_tavern_store *store, cdsh_tavern_kind kind,
                                   const char *text, size_t len, const char *fallback_name,
                                   json_t **result, cdsh_error *err)
{
    if (!store || !result || kind > CDSH_TAVERN_PERSONA)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "import_asset: bad arguments");
    *result = NULL;
    json_t *in = cdsh_tavern_store_parse_json(text, len, err);
    if (!in)
        return err ? err->rc : CDSH_EINVAL;
    int rc = cdsh_tavern_store_save_asset(store, kind, NULL, in, fallback_name, NULL, result, err);
    json_decref(in);
    return rc;
}

/* Picks a free id derived from name (collisions get -2…-99, then a
 * timestamp); the caller holds the store lock. *rel owned. */
static int new_asset_id(cdsh_tavern_store *s, cdsh_tavern_kind kind, const char *name, char *id,
                        size_t id_size, char **rel, cdsh_error *err)
{
    char *base = cdsh_tavern_card_sanitize_dup(name ? name : KIND_NAMES[kind]);
    if (!base)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    *rel = NULL;
    for (int i = 1; i <= 100 && !*rel; i++) {
        if (i == 1)
            snprintf(id, id_size, "%s", base);
        else if (i < 100)
            snprintf(id, id_size, "%s-%d", base, i);
        else
            snprintf(id, id_size, "%s-%lld", base, (long long)time(NULL));
        char *r = asset_rel(kind, id);
        char *p = r ? safe_path(s, r, NULL) : NULL;
        struct stat st;
        if (p && lstat(p, &st) != 0 && errno == ENOENT)
            *rel = r;
        else
            free(r);
        free(p);
    }
    free(base);
    if (!*rel)
        return cdsh_error_set(err, CDSH_EEXIST, "ASSET_ID_TAKEN", "no free id for %s \"%s\"",
                              KIND_NAMES[kind], name ? name : "");
    return 0;
}

int cdsh_tavern_store_save_asset(cdsh_tavern_store *store, cdsh_tavern_kind kind, const char *id,
                                 const json_t *in, const char *fallback_name,
                                 const char *expected_tag, json_t **result, cdsh_error *err)
{
    if (!store || !result || !in || kind > CDSH_TAVERN_PERSONA)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "save_asset: bad arguments");
    *result = NULL;
    if (id && !cdsh_tavern_card_id_valid(id))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ASSET_ID", "\"%s\" is not a valid %s id", id,
                              KIND_NAMES[kind]);
    json_t *value = normalize_kind(kind, in, fallback_name ? fallback_name : id, err);
    if (!value)
        return err ? err->rc : CDSH_EINVAL;
    const char *name = json_string_value(json_object_get(value, "name"));
    cdsh_fs_lock *lock = NULL;
    char *rel = NULL, *tag = NULL, *path = NULL, fresh[96] = "";
    int rc = 0;
    if (kind == CDSH_TAVERN_PERSONA) {
        const char *lb = json_string_value(json_object_get(value, "lorebook"));
        json_t *check = NULL;
        if (lb && cdsh_tavern_store_asset_load(store, CDSH_TAVERN_LOREBOOK, lb, &check, NULL) < 0) {
            rc = cdsh_error_set(err, CDSH_ENOTFOUND, "PERSONA_UNKNOWN_LOREBOOK",
                                "persona names lorebook \"%s\", which is not in the library", lb);
            goto cleanup;
        }
        json_decref(check);
    }
    if ((rc = lock_store(store, &lock, err)) < 0)
        goto cleanup;
    if (!id) {
        if ((rc = new_asset_id(store, kind, name, fresh, sizeof fresh, &rel, err)) < 0)
            goto cleanup;
        expected_tag = "";
    } else {
        rel = asset_rel(kind, id);
        path = rel ? safe_path(store, rel, err) : NULL;
        if (!path) {
            rc = rel ? (err ? err->rc : CDSH_EPERM)
                     : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
            goto cleanup;
        }
        /* Saving by id edits an existing item; new items get their id from the
         * name. (put_locked reads the file for the revision check.) */
        struct stat st;
        if (stat(path, &st) != 0 && errno == ENOENT) {
            rc = cdsh_error_set(err, CDSH_ENOTFOUND, "NOT_FOUND", "no %s with id \"%s\"",
                                KIND_NAMES[kind], id);
            goto cleanup;
        }
    }
    if ((rc = put_locked(store, rel, KIND_NAMES[kind], value, expected_tag, &tag, err)) < 0)
        goto cleanup;
    *result =
        json_pack("{s:s, s:s, s:s}", "id", id ? id : fresh, "name", name ? name : "", "tag", tag);
cleanup:
    cdsh_fs_lock_close(lock);
    json_decref(value);
    free(path);
    free(rel);
    free(tag);
    return rc;
}

int cdsh_tavern_store_delete_asset(cdsh_tavern_store *store, cdsh_tavern_kind kind, const char *id,
                                   cdsh_error *err)
{
    if (!store || !id || kind > CDSH_TAVERN_PERSONA)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "delete_asset: bad arguments");
    if (!cdsh_tavern_card_id_valid(id))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ASSET_ID", "\"%s\" is not a valid %s id", id,
                              KIND_NAMES[kind]);
    cdsh_fs_lock *lock = NULL;
    char *rel = asset_rel(kind, id);
    char *path = rel ? safe_path(store, rel, err) : NULL;
    int rc = path ? lock_store(store, &lock, err) : (err && rel ? err->rc : CDSH_ENOMEM);
    if (rc == 0 && unlink(path) != 0)
        rc = errno == ENOENT ? cdsh_error_set(err, CDSH_ENOTFOUND, "NOT_FOUND",
                                              "no %s with id \"%s\"", KIND_NAMES[kind], id)
                             : cdsh_error_set(err, CDSH_EIO, "IO_ERROR", "cannot delete %s: %s",
                                              rel, strerror(errno));
    cdsh_fs_lock_close(lock);
    free(path);
    free(rel);
    return rc;
}

int cdsh_tavern_store_card_book_put(cdsh_tavern_store *store, const char *card_id,
                                    const json_t *book, const char *expected_tag, char **new_tag,
                                    cdsh_error *err)
{
    if (!store || !new_tag)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "card_book_put: bad arguments");
    *new_tag = NULL;
    json_t *wi = NULL, *cb = NULL, *rec = NULL;
    cdsh_fs_lock *lock = NULL;
    char *card_json = card_rel(card_id ? card_id : "", "card.json");
    char *book_json = card_rel(card_id ? card_id : "", "assets/character-book.json");
    char *book_path = NULL;
    int rc = check_card_id(card_id, err);
    if (rc < 0)
        goto cleanup;
    if (!card_json || !book_json) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto cleanup;
    }
    if (book && (!(wi = cdsh_tavern_lorebook_normalize_dup(book, err)) ||
                 !(cb = cdsh_tavern_character_book_normalize_dup(wi, err)))) {
        rc = err ? err->rc : CDSH_EINVAL;
        goto cleanup;
    }
    if ((rc = lock_store(store, &lock, err)) < 0)
        goto cleanup;
    if ((rc = cdsh_tavern_store_card_load(store, card_id, &rec, NULL, err)) < 0)
        goto cleanup;
    json_t *data = json_object_get(rec, "data");
    if (!json_is_object(data)) {
        rc = cdsh_error_set(err, CDSH_EIO, "STORE_CORRUPT", "card %s has no data", card_id);
        goto cleanup;
    }
    if (cb)
        json_object_set(data, "character_book", cb);
    else
        json_object_del(data, "character_book");
    /* card.json is the book's source of truth (prompt assembly reads it);
     * assets/character-book.json is its world-info copy for the tools and is
     * rewritten right after, under the same lock. */
    if ((rc = put_locked(store, card_json, "card", rec, expected_tag, new_tag, err)) < 0)
        goto cleanup;
    if (wi) {
        if (!json_is_string(json_object_get(wi, "name")))
            json_object_set(wi, "name", json_object_get(rec, "name"));
        rc = put_locked(store, book_json, "lorebook", wi, NULL, NULL, err);
    } else if ((book_path = safe_path(store, book_json, err)) && unlink(book_path) != 0 &&
               errno != ENOENT) {
        rc = cdsh_error_set(err, CDSH_EIO, "IO_ERROR", "cannot remove %s: %s", book_json,
                            strerror(errno));
    }
cleanup:
    cdsh_fs_lock_close(lock);
    json_decref(wi);
    json_decref(cb);
    json_decref(rec);
    free(card_json);
    free(book_json);
    free(book_path);
    return rc;
}

int cdsh_tavern_store_asset_load(cdsh_tavern_store *store, cdsh_tavern_kind kind, const char *id,
                                 json_t **value, cdsh_error *err)
{
    return cdsh_tavern_store_asset_read(store, kind, id, value, NULL, err);
}

int cdsh_tavern_store_asset_read(cdsh_tavern_store *store, cdsh_tavern_kind kind, const char *id,
                                 json_t **value, char **tag, cdsh_error *err)
{
    if (!store || !value || !id || kind > CDSH_TAVERN_PERSONA)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "asset_load: bad arguments");
    *value = NULL;
    char *rel = NULL;
    if (kind == CDSH_TAVERN_LOREBOOK && !strncmp(id, "card:", 5)) {
        int rc = check_card_id(id + 5, err);
        if (rc < 0)
            return rc;
        rel = card_rel(id + 5, "assets/character-book.json");
    } else {
        if (!cdsh_tavern_card_id_valid(id))
            return cdsh_error_set(err, CDSH_EINVAL, "BAD_ASSET_ID", "\"%s\" is not a valid %s id",
                                  id, KIND_NAMES[kind]);
        rel = asset_rel(kind, id);
    }
    if (!rel)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    int rc = cdsh_tavern_store_load(store, rel, value, tag, err);
    free(rel);
    if (rc == CDSH_ENOTFOUND)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "NOT_FOUND", "no %s with id \"%s\"",
                              KIND_NAMES[kind], id);
    return rc;
}

int cdsh_tavern_store_list_assets(cdsh_tavern_store *store, cdsh_tavern_kind kind, json_t **out,
                                  cdsh_error *err)
{
    if (!store || !out || kind > CDSH_TAVERN_PERSONA)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "list_assets: bad arguments");
    *out = json_array();
    char *dir = cdsh_fs_path_join_dup(store->root, KIND_DIRS[kind]);
    char **names = NULL;
    int rc = dir ? cdsh_fs_list_dir(dir, &names, NULL, err) : CDSH_ENOMEM;
    free(dir);
    if (rc == CDSH_ENOTFOUND)
        return 0;
    if (rc < 0) {
        json_decref(*out);
        *out = NULL;
        return rc;
    }
    for (size_t i = 0; names[i]; i++) {
        size_t l = strlen(names[i]);
        if (l < 6 || strcmp(names[i] + l - 5, ".json"))
            continue;
        names[i][l - 5] = '\0';
        if (!cdsh_tavern_card_id_valid(names[i]))
            continue;
        char *rel = asset_rel(kind, names[i]);
        json_t *v = NULL;
        char *tag = NULL;
        if (rel && cdsh_tavern_store_load(store, rel, &v, &tag, NULL) == 0) {
            json_t *item = json_pack("{s:s, s:O, s:s}", "id", names[i], "name",
                                     json_object_get(v, "name"), "tag", tag);
            if (kind == CDSH_TAVERN_LOREBOOK)
                json_object_set_new(item, "entries",
                                    json_integer((json_int_t)cdsh_tavern_lorebook_entry_count(v)));
            else if (kind == CDSH_TAVERN_PRESET)
                json_object_set_new(
                    item, "prompts",
                    json_integer((json_int_t)json_array_size(json_object_get(v, "prompts"))));
            else
                json_object_set(item, "lorebook", json_object_get(v, "lorebook"));
            json_array_append_new(*out, item);
        }
        json_decref(v);
        free(tag);
        free(rel);
    }
    cdsh_fs_list_free(names);
    return 0;
}

/* ---- global regex rules --------------------------------------------------------------- */

int cdsh_tavern_store_regex_load(cdsh_tavern_store *store, json_t **rules, cdsh_error *err)
{
    return cdsh_tavern_store_regex_read(store, rules, NULL, err);
}

int cdsh_tavern_store_regex_read(cdsh_tavern_store *store, json_t **rules, char **tag,
                                 cdsh_error *err)
{
    if (!rules)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "regex_load: no output");
    int rc = cdsh_tavern_store_load(store, "regex/rules.json", rules, tag, err);
    if (rc == CDSH_ENOTFOUND) {
        *rules = json_array();
        if (tag && !(*tag = strdup("")))
            return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        return 0;
    }
    return rc;
}

int cdsh_tavern_store_import_regex(cdsh_tavern_store *store, const char *text, size_t len,
                                   json_t **result, cdsh_error *err)
{
    if (!store || !result)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "import_regex: bad arguments");
    *result = NULL;
    json_t *in = cdsh_tavern_store_parse_json(text, len, err);
    if (!in)
        return err ? err->rc : CDSH_EINVAL;
    json_t *added = cdsh_tavern_regex_import_dup(in, CDSH_TAVERN_REGEX_USER, err);
    json_decref(in);
    if (!added)
        return err ? err->rc : CDSH_EINVAL;
    cdsh_fs_lock *lock = NULL;
    json_t *rules = NULL;
    char *tag = NULL, *new_tag = NULL;
    int rc = lock_store(store, &lock, err);
    if (rc < 0)
        goto cleanup;
    rc = cdsh_tavern_store_load(store, "regex/rules.json", &rules, &tag, err);
    if (rc == CDSH_ENOTFOUND) {
        rules = json_array();
        tag = strdup("");
        rc = 0;
    }
    if (rc < 0)
        goto cleanup;
    json_array_extend(rules, added);
    if ((rc = put_locked(store, "regex/rules.json", "regex-rules", rules, tag, &new_tag, err)) < 0)
        goto cleanup;
    *result = json_pack("{s:I, s:I, s:s}", "added", (json_int_t)json_array_size(added), "total",
                        (json_int_t)json_array_size(rules), "tag", new_tag);
cleanup:
    cdsh_fs_lock_close(lock);
    json_decref(added);
    json_decref(rules);
    free(tag);
    free(new_tag);
    return rc;
}

int cdsh_tavern_store_regex_put(cdsh_tavern_store *store, const json_t *rules,
                                const char *expected_tag, char **new_tag, cdsh_error *err)
{
    if (!store || !json_is_array(rules))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "regex_put: bad arguments");
    return cdsh_tavern_store_put(store, "regex/rules.json", "regex-rules", rules, expected_tag,
                                 new_tag, err);
}
