/* service_library.c — the library-edit RPC methods of the tavern service
 * (lorebooks, the embedded book, presets, personas, global regex rules, new
 * characters, stories of a card, the greeting and server-side rendering) and
 * the asset set a turn's prompt plan is built from. Storage is store.h's;
 * this file validates, checks references and shapes the values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/strbuf.h"
#include "plugins/tavern/card.h"
#include "plugins/tavern/jsregex.h"
#include "plugins/tavern/lorebook.h"
#include "plugins/tavern/macros.h"
#include "plugins/tavern/regex.h"
#include "plugins/tavern/regex_apply.h"
#include "plugins/tavern/service_priv.h"

#define GREETING_DOC "state/greeting.json"
#define AVATAR_MAX_BYTES (2u * 1024 * 1024)
#define REGEX_RULES_MAX 1000

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

#define BAD(err, ...) cdsh_error_set(err, CDSH_EINVAL, "bad-request", __VA_ARGS__)

/* Validation failures of the normalisers become bad-request (message kept). */
static int as_bad_request(int rc, cdsh_error *err)
{
    if ((rc == CDSH_EINVAL || rc == CDSH_ETOOBIG) && err)
        snprintf(err->code, sizeof err->code, "%s", "bad-request");
    return rc;
}

static const char *need(const json_t *p, const char *k, cdsh_error *err, int *rc)
{
    const char *v = str(p, k);
    if (!v || !*v)
        *rc = BAD(err, "field \"%s\" is required and must be a non-empty string", k);
    return v;
}

/* expectedRevision: absent (unconditional) or a string. */
static int expected_rev(const json_t *p, const char **out, cdsh_error *err)
{
    json_t *v = json_object_get(p, "expectedRevision");
    *out = json_string_value(v);
    if (v && !json_is_null(v) && !json_is_string(v))
        return BAD(err, "field \"%s\" must be a string", "expectedRevision");
    return 0;
}

/* ---- lorebook entries as the editor edits them -------------------------------- */

typedef struct int_field {
    const char *key;
    json_int_t min, max;
} int_field;

/* Strict checks of the fields the editor exposes; the normaliser fills the rest. */
static int check_entries(const json_t *book, cdsh_error *err)
{
    static const int_field INTS[] = {{"selectiveLogic", 0, 3}, {"position", 0, 7},
                                     {"depth", 0, 10000},      {"order", -100000, 100000},
                                     {"probability", 0, 100},  {"uid", 0, INT32_MAX}};
    static const char *const BOOLS[] = {"constant", "selective", "disable", "useProbability"};
    static const char *const LISTS[] = {"key", "keysecondary"};
    if (!json_is_object(book))
        return BAD(err, "field \"%s\" must be a lorebook object", "book");
    json_t *entries = json_object_get(book, "entries");
    if (!json_is_object(entries) && !json_is_array(entries))
        return BAD(err, "the lorebook needs \"entries\" (an object keyed by uid, or a list)");
    json_t *name = json_object_get(book, "name");
    if (name && !json_is_string(name))
        return BAD(err, "the lorebook name must be a string");
    const char *k;
    size_t i;
    json_t *e;
    json_t *list = json_is_array(entries) ? json_incref(entries) : json_array();
    if (json_is_object(entries))
        json_object_foreach(entries, k, e)
            json_array_append(list, e);
    int rc = 0;
    json_array_foreach(list, i, e) {
        if (rc < 0)
            break;
        if (!json_is_object(e)) {
            rc = BAD(err, "entry %zu is not an object", i);
            break;
        }
        for (size_t f = 0; f < sizeof INTS / sizeof *INTS && rc == 0; f++) {
            json_t *v = json_object_get(e, INTS[f].key);
            if (v && !json_is_null(v) &&
                (!json_is_integer(v) || json_integer_value(v) < INTS[f].min ||
                 json_integer_value(v) > INTS[f].max))
                rc = BAD(err, "entry %zu: %s must be an integer from %lld to %lld", i, INTS[f].key,
                         (long long)INTS[f].min, (long long)INTS[f].max);
        }
        for (size_t f = 0; f < sizeof BOOLS / sizeof *BOOLS && rc == 0; f++) {
            json_t *v = json_object_get(e, BOOLS[f]);
            if (v && !json_is_boolean(v))
                rc = BAD(err, "entry %zu: %s must be true or false", i, BOOLS[f]);
        }
        for (size_t f = 0; f < sizeof LISTS / sizeof *LISTS && rc == 0; f++) {
            json_t *v = json_object_get(e, LISTS[f]);
            if (v && !json_is_array(v))
                rc = BAD(err, "entry %zu: %s must be a list of strings", i, LISTS[f]);
        }
    }
    json_decref(list);
    return rc;
}

/* ---- references ----------------------------------------------------------------- */

/* Who uses library item `id` of `kind`: "session <id>" for bindings (presetId,
 * personaId, lorebookIds[]) and "persona <id>" for personas naming a book. */
static int references(cdsh_tavern_service *svc, cdsh_tavern_kind kind, const char *id,
                      cdsh_strbuf *out, size_t *count, cdsh_error *err)
{
    json_t *all = NULL;
    *count = 0;
    int rc = cdsh_tavern_binding_list(svc->bindings, NULL, &all, err);
    if (rc < 0)
        return rc;
    size_t i, j;
    json_t *b, *v;
    json_array_foreach(all, i, b) {
        bool uses = false;
        if (kind == CDSH_TAVERN_PRESET)
            uses = str(b, "presetId") && strcmp(str(b, "presetId"), id) == 0;
        else if (kind == CDSH_TAVERN_PERSONA)
            uses = str(b, "personaId") && strcmp(str(b, "personaId"), id) == 0;
        else
            json_array_foreach(json_object_get(b, "lorebookIds"), j, v)
                uses = uses || (json_is_string(v) && strcmp(json_string_value(v), id) == 0);
        if (uses)
            cdsh_strbuf_appendf(out, "%ssession %s", (*count)++ ? ", " : "", str(b, "sessionId"));
    }
    json_decref(all);
    if (kind != CDSH_TAVERN_LOREBOOK)
        return 0;
    json_t *personas = NULL;
    if ((rc = cdsh_tavern_store_list_assets(svc->store, CDSH_TAVERN_PERSONA, &personas, err)) < 0)
        return rc;
    json_array_foreach(personas, i, v)
        if (str(v, "lorebook") && !strcmp(str(v, "lorebook"), id))
            cdsh_strbuf_appendf(out, "%spersona %s", (*count)++ ? ", " : "", str(v, "id"));
    json_decref(personas);
    return 0;
}

static int delete_unreferenced(cdsh_tavern_service *svc, cdsh_tavern_kind kind, const char *what,
                               const json_t *p, json_t **value, cdsh_error *err)
{
    int rc = 0;
    const char *id = need(p, "id", err, &rc);
    if (rc < 0)
        return rc;
    json_t *cur = NULL;
    if ((rc = cdsh_tavern_store_asset_load(svc->store, kind, id, &cur, err)) < 0)
        return as_bad_request(rc, err);
    json_decref(cur);
    cdsh_strbuf refs;
    cdsh_strbuf_init(&refs);
    size_t n = 0;
    rc = references(svc, kind, id, &refs, &n, err);
    if (rc == 0 && n > 0)
        rc = cdsh_error_set(err, CDSH_EBUSY, "in-use", "%s \"%s\" is still used by %s", what, id,
                            refs.data);
    cdsh_strbuf_deinit(&refs);
    if (rc == 0)
        rc = cdsh_tavern_store_delete_asset(svc->store, kind, id, err);
    if (rc == 0)
        *value = json_pack("{s:s,s:b}", "id", id, "deleted", 1);
    return rc;
}

/* ---- lorebooks ---------------------------------------------------------------------- */

static json_t *saved(const json_t *res, const json_t *extra_take)
{
    json_t *v = json_pack("{s:O,s:O,s:O}", "id", json_object_get(res, "id"), "name",
                          json_object_get(res, "name"), "revision", json_object_get(res, "tag"));
    if (extra_take)
        json_object_update(v, (json_t *)extra_take);
    json_decref((json_t *)extra_take);
    return v;
}

static int save_lorebook(cdsh_tavern_service *svc, const json_t *p, json_t **value, cdsh_error *err)
{
    const char *expect = NULL, *id = str(p, "id");
    json_t *book = json_object_get(p, "book");
    int rc = expected_rev(p, &expect, err);
    if (rc == 0)
        rc = check_entries(book, err);
    if (rc < 0)
        return rc;
    json_t *res = NULL;
    rc = cdsh_tavern_store_save_asset(svc->store, CDSH_TAVERN_LOREBOOK, id && *id ? id : NULL, book,
                                      NULL, expect, &res, err);
    if (rc < 0)
        return as_bad_request(rc, err);
    json_t *stored = NULL;
    cdsh_tavern_store_asset_load(svc->store, CDSH_TAVERN_LOREBOOK, str(res, "id"), &stored, NULL);
    *value = saved(
        res, json_pack("{s:I}", "entries", (json_int_t)cdsh_tavern_lorebook_entry_count(stored)));
    json_decref(stored);
    json_decref(res);
    return 0;
}

static int get_character_lorebook(cdsh_tavern_service *svc, const json_t *p, json_t **value,
                                  cdsh_error *err)
{
    int rc = 0;
    const char *card = need(p, "cardId", err, &rc);
    json_t *rec = NULL, *wi = NULL;
    char *tag = NULL;
    if (rc < 0 || (rc = cdsh_tavern_store_card_load(svc->store, card, &rec, &tag, err)) < 0)
        return as_bad_request(rc, err);
    json_t *cb = json_object_get(json_object_get(rec, "data"), "character_book");
    if (cb && cdsh_tavern_lorebook_entry_count(cb) > 0)
        wi = cdsh_tavern_lorebook_normalize_dup(cb, NULL);
    if (wi && !json_is_string(json_object_get(wi, "name")))
        json_object_set(wi, "name", json_object_get(rec, "name"));
    *value = json_pack("{s:s,s:O,s:o,s:s,s:I}", "cardId", card, "name",
                       json_object_get(rec, "name"), "book", wi ? wi : json_null(), "revision", tag,
                       "entries", (json_int_t)cdsh_tavern_lorebook_entry_count(wi));
    json_decref(rec);
    free(tag);
    return 0;
}

static int save_character_lorebook(cdsh_tavern_service *svc, const json_t *p, json_t **value,
                                   cdsh_error *err)
{
    int rc = 0;
    const char *card = need(p, "cardId", err, &rc), *expect = NULL;
    json_t *book = json_object_get(p, "book");
    if (rc == 0)
        rc = expected_rev(p, &expect, err);
    if (rc == 0)
        rc = check_entries(book, err);
    if (rc < 0)
        return rc;
    char *tag = NULL;
    if ((rc = cdsh_tavern_store_card_book_put(svc->store, card, book, expect, &tag, err)) < 0)
        return as_bad_request(rc, err);
    json_t *got = NULL;
    char rel[200];
    snprintf(rel, sizeof rel, "card:%s", card);
    cdsh_tavern_store_asset_load(svc->store, CDSH_TAVERN_LOREBOOK, rel, &got, NULL);
    *value = json_pack("{s:s,s:s,s:I}", "cardId", card, "revision", tag, "entries",
                       (json_int_t)cdsh_tavern_lorebook_entry_count(got));
    json_decref(got);
    free(tag);
    return 0;
}

static int delete_embedded_lorebook(cdsh_tavern_service *svc, const json_t *p, json_t **value,
                                    cdsh_error *err)
{
    int rc = 0;
    const char *card = need(p, "cardId", err, &rc), *expect = NULL;
    json_t *salvage = json_object_get(p, "salvage");
    if (rc == 0)
        rc = expected_rev(p, &expect, err);
    if (rc == 0 && salvage && !json_is_boolean(salvage))
        rc = BAD(err, "field \"%s\" must be true or false", "salvage");
    if (rc < 0)
        return rc;
    json_t *cur = NULL, *res = NULL;
    if ((rc = get_character_lorebook(svc, p, &cur, err)) < 0)
        return rc;
    json_t *book = json_object_get(cur, "book");
    if (json_is_null(book)) {
        json_decref(cur);
        return cdsh_error_set(err, CDSH_ENOTFOUND, "not-found",
                              "card \"%s\" has no embedded lorebook", card);
    }
    /* Salvage first: a failed delete then removes the copy again. */
    if (json_is_true(salvage))
        rc = cdsh_tavern_store_save_asset(svc->store, CDSH_TAVERN_LOREBOOK, NULL, book, NULL, NULL,
                                          &res, err);
    char *tag = NULL;
    if (rc == 0 &&
        (rc = cdsh_tavern_store_card_book_put(svc->store, card, NULL, expect, &tag, err)) < 0 &&
        res)
        cdsh_tavern_store_delete_asset(svc->store, CDSH_TAVERN_LOREBOOK, str(res, "id"), NULL);
    if (rc == 0)
        *value = json_pack("{s:s,s:s,s:b,s:O}", "cardId", card, "revision", tag, "deleted", 1,
                           "libraryId", res ? json_object_get(res, "id") : json_null());
    json_decref(res);
    json_decref(cur);
    free(tag);
    return as_bad_request(rc, err);
}

/* ---- presets and personas ------------------------------------------------------------- */

static int save_preset(cdsh_tavern_service *svc, const json_t *p, json_t **value, cdsh_error *err)
{
    const char *expect = NULL, *id = str(p, "id");
    json_t *preset = json_object_get(p, "preset");
    int rc = expected_rev(p, &expect, err);
    if (rc == 0 && !json_is_object(preset))
        rc = BAD(err, "field \"%s\" must be a preset object", "preset");
    if (rc < 0)
        return rc;
    json_t *res = NULL;
    rc = cdsh_tavern_store_save_asset(svc->store, CDSH_TAVERN_PRESET, id && *id ? id : NULL, preset,
                                      NULL, expect, &res, err);
    if (rc < 0)
        return as_bad_request(rc, err);
    *value = saved(res, NULL);
    json_decref(res);
    return 0;
}

/* A data URL of a PNG, JPEG, GIF or WebP image, at most AVATAR_MAX_BYTES. */
static int check_avatar(const char *url, cdsh_error *err)
{
    static const char *const TYPES[] = {"data:image/png;base64,", "data:image/jpeg;base64,",
                                        "data:image/gif;base64,", "data:image/webp;base64,"};
    const char *b64 = NULL;
    for (size_t i = 0; i < 4 && !b64; i++)
        if (strncmp(url, TYPES[i], strlen(TYPES[i])) == 0)
            b64 = url + strlen(TYPES[i]);
    if (!b64)
        return BAD(err, "avatar must be a data: URL of a PNG, JPEG, GIF or WebP image");
    uint8_t *bytes = NULL;
    size_t len = 0;
    if (strlen(b64) / 4 * 3 > AVATAR_MAX_BYTES + 3)
        return BAD(err, "avatar is larger than %u bytes", AVATAR_MAX_BYTES);
    if (cdsh_base64_decode(b64, strlen(b64), &bytes, &len, NULL) < 0 || len == 0) {
        free(bytes);
        return BAD(err, "avatar is not valid base64");
    }
    free(bytes);
    return 0;
}

static int save_persona(cdsh_tavern_service *svc, const json_t *p, json_t **value, cdsh_error *err)
{
    int rc = 0;
    const char *expect = NULL, *id = str(p, "id");
    const char *name = need(p, "name", err, &rc);
    json_t *desc = json_object_get(p, "description"), *avatar = json_object_get(p, "avatar");
    json_t *book = json_object_get(p, "lorebookId");
    if (rc == 0)
        rc = expected_rev(p, &expect, err);
    if (rc == 0 && desc && !json_is_string(desc))
        rc = BAD(err, "field \"%s\" must be a string", "description");
    if (rc == 0 && avatar && !json_is_null(avatar))
        rc = json_is_string(avatar) ? check_avatar(json_string_value(avatar), err)
                                    : BAD(err, "field \"%s\" must be a string or null", "avatar");
    if (rc == 0 && book && !json_is_null(book) && !json_is_string(book))
        rc = BAD(err, "field \"%s\" must be a library lorebook id or null", "lorebookId");
    if (rc < 0)
        return rc;
    const char *lb = json_string_value(book);
    json_t *cur = NULL;
    if (lb && *lb &&
        (rc = cdsh_tavern_store_asset_load(svc->store, CDSH_TAVERN_LOREBOOK, lb, &cur, err)) < 0)
        return as_bad_request(rc, err);
    json_decref(cur);
    cur = NULL;
    /* Editing keeps the persona's other keys (from an imported file). */
    if (id && *id &&
        (rc = cdsh_tavern_store_asset_load(svc->store, CDSH_TAVERN_PERSONA, id, &cur, err)) < 0)
        return as_bad_request(rc, err);
    json_t *v = cur ? cur : json_object();
    json_object_set_new(v, "name", json_string(name));
    if (desc)
        json_object_set(v, "description", desc);
    if (avatar)
        json_object_set(v, "avatar", avatar);
    if (book)
        json_object_set_new(v, "lorebook", lb && *lb ? json_string(lb) : json_null());
    json_t *res = NULL;
    rc = cdsh_tavern_store_save_asset(svc->store, CDSH_TAVERN_PERSONA, id && *id ? id : NULL, v,
                                      NULL, expect, &res, err);
    json_decref(v);
    if (rc < 0)
        return as_bad_request(rc, err);
    *value = saved(res, NULL);
    json_decref(res);
    return 0;
}

/* ---- regex rules ---------------------------------------------------------------------- */

/* Compiles a rule's find with the JS-regex layer. Finds with macro
 * substitution are compiled with each {{macro}} replaced by a letter. */
static int compile_find(const json_t *rule, cdsh_error *err)
{
    const char *find = str(rule, "find");
    char *pattern = NULL, *flags = NULL, *plain = NULL;
    if (json_integer_value(json_object_get(rule, "substituteRegex")) != 0) {
        cdsh_strbuf b;
        cdsh_strbuf_init(&b);
        for (const char *c = find; *c;) {
            const char *close = strncmp(c, "{{", 2) == 0 ? strstr(c + 2, "}}") : NULL;
            if (close) {
                cdsh_strbuf_append_str(&b, "x");
                c = close + 2;
            } else {
                cdsh_strbuf_append(&b, c++, 1);
            }
        }
        plain = cdsh_strbuf_take(&b, NULL);
        find = plain ? plain : "";
    }
    if (!cdsh_tavern_jsre_split_literal(find, &pattern, &flags)) {
        pattern = strdup(find);
        flags = strdup("");
    }
    cdsh_tavern_jsre *re = NULL;
    int rc = pattern && flags ? cdsh_tavern_jsre_compile(pattern, flags, &re, err)
                              : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    cdsh_tavern_jsre_free(re);
    free(pattern);
    free(flags);
    free(plain);
    return rc;
}

static int check_depths(const json_t *rule, size_t i, cdsh_error *err)
{
    json_t *lo = json_object_get(rule, "minDepth"), *hi = json_object_get(rule, "maxDepth");
    const json_t *d[2] = {lo, hi};
    for (int k = 0; k < 2; k++)
        if (d[k] && !json_is_null(d[k]) && (!json_is_integer(d[k]) || json_integer_value(d[k]) < 0))
            return BAD(err, "rule %zu: %s must be an integer >= 0 or null", i,
                       k ? "maxDepth" : "minDepth");
    if (json_is_integer(lo) && json_is_integer(hi) &&
        json_integer_value(lo) > json_integer_value(hi))
        return BAD(err, "rule %zu: minDepth is greater than maxDepth", i);
    return 0;
}

/* Every rule normalised and compiled, or nothing (all-or-nothing save). */
static json_t *validate_rules(const json_t *rules, cdsh_error *err)
{
    if (!json_is_array(rules)) {
        BAD(err, "field \"%s\" must be a list of rules", "rules");
        return NULL;
    }
    if (json_array_size(rules) > REGEX_RULES_MAX) {
        BAD(err, "at most %d rules", REGEX_RULES_MAX);
        return NULL;
    }
    json_t *out = json_array(), *ids = json_object();
    size_t i;
    json_t *r;
    json_array_foreach(rules, i, r) {
        cdsh_error e = {0};
        json_t *n =
            check_depths(r, i, err) < 0 ? NULL : cdsh_tavern_regex_rule_normalize_dup(r, &e);
        if (!n) {
            if (e.message[0])
                BAD(err, "rule %zu: %s", i, e.message);
            goto fail;
        }
        json_array_append_new(out, n);
        if (compile_find(n, &e) < 0) {
            BAD(err, "rule %zu (%s): the pattern does not compile: %s", i, str(n, "name"),
                e.message);
            goto fail;
        }
        if (json_object_get(ids, str(n, "id"))) {
            BAD(err, "rule %zu: id \"%s\" is used twice", i, str(n, "id"));
            goto fail;
        }
        json_object_set_new(ids, str(n, "id"), json_true());
    }
    json_decref(ids);
    return out;
fail:
    json_decref(ids);
    json_decref(out);
    return NULL;
}

static int list_regex_rules(cdsh_tavern_service *svc, const json_t *p, json_t **value,
                            cdsh_error *err)
{
    char *tag = NULL;
    json_t *rules = NULL;
    int rc = 0;
    json_t *with = json_object_get(p, "withRevision");
    if ((rc = cdsh_tavern_store_regex_read(svc->store, &rules, &tag, err)) < 0)
        return rc;
    /* The bare list stays the default (the chat view's display rules). */
    *value = json_is_true(with) ? json_pack("{s:o,s:s}", "rules", rules, "revision", tag) : rules;
    free(tag);
    return 0;
}

static int save_regex_rules(cdsh_tavern_service *svc, const json_t *p, json_t **value,
                            cdsh_error *err)
{
    char *tag = NULL;
    json_t *rules = NULL;
    int rc = 0;
    const char *expect = NULL;
    if ((rc = expected_rev(p, &expect, err)) < 0)
        return rc;
    if (!(rules = validate_rules(json_object_get(p, "rules"), err)))
        return err ? err->rc : CDSH_EINVAL;
    rc = cdsh_tavern_store_regex_put(svc->store, rules, expect, &tag, err);
    if (rc == 0)
        *value = json_pack("{s:O,s:s,s:I}", "rules", rules, "revision", tag, "total",
                           (json_int_t)json_array_size(rules));
    json_decref(rules);
    free(tag);
    return rc;
}

/* ---- characters and stories -------------------------------------------------------------- */

static int create_character(cdsh_tavern_service *svc, const json_t *p, json_t **value,
                            cdsh_error *err)
{
    int rc = 0;
    need(p, "name", err, &rc);
    if (rc < 0)
        return rc;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)p, k, v) {
        if (!cdsh_tavern_card_field_editable(k, v))
            return BAD(err, "field \"%s\" cannot be set on a new character", k);
        size_t i;
        json_t *item;
        if (json_is_array(v))
            json_array_foreach(v, i, item)
                if (!json_is_string(item))
                    return BAD(err, "field \"%s\" must be a list of strings", k);
    }
    json_t *card =
        json_pack("{s:s,s:s,s:O}", "spec", "chara_card_v2", "spec_version", "2.0", "data", p);
    char *text = card ? json_dumps(card, JSON_COMPACT) : NULL;
    json_decref(card);
    if (!text)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    json_t *res = NULL;
    rc = cdsh_tavern_store_import_card(svc->store, (const uint8_t *)text, strlen(text),
                                       CDSH_TAVERN_BOOK_DISCARD, &res, err);
    free(text);
    if (rc < 0)
        return as_bad_request(rc, err);
    *value = json_pack("{s:O,s:O,s:O}", "cardId", json_object_get(res, "cardId"), "name",
                       json_object_get(res, "name"), "revision", json_object_get(res, "tag"));
    json_decref(res);
    return 0;
}

static int list_stories(cdsh_tavern_service *svc, const json_t *p, json_t **value, cdsh_error *err)
{
    int rc = 0;
    const char *card = need(p, "cardId", err, &rc);
    json_t *rec = NULL, *all = NULL;
    if (rc < 0 || (rc = cdsh_tavern_store_card_load(svc->store, card, &rec, NULL, err)) < 0)
        return as_bad_request(rc, err);
    json_decref(rec);
    if ((rc = cdsh_tavern_binding_list(svc->bindings, card, &all, err)) < 0)
        return rc;
    json_t *out = json_array();
    size_t i;
    json_t *b;
    json_array_foreach(all, i, b) {
        json_t *s =
            svc->sessions ? cdsh_session_store_info_dup(svc->sessions, str(b, "sessionId"), NULL) : NULL;
        json_array_append_new(
            out,
            json_pack("{s:O,s:O,s:O,s:O,s:O,s:O,s:O}", "storyId", json_object_get(b, "storyId"),
                      "sessionId", json_object_get(b, "sessionId"), "createdAt",
                      json_object_get(b, "createdAt"), "presetId", json_object_get(b, "presetId"),
                      "personaId", json_object_get(b, "personaId"), "title",
                      s && json_object_get(s, "title") ? json_object_get(s, "title") : json_null(),
                      "lastTurn",
                      s && json_object_get(s, "lastTurn") ? json_object_get(s, "lastTurn")
                                                          : json_integer(0)));
        json_decref(s);
    }
    json_decref(all);
    *value = out;
    return 0;
}

/* ---- greeting and rendering -------------------------------------------------------------- */

typedef struct render_ctx {
    json_t *binding, *card, *persona;
    cdsh_tavern_macro_env env;
} render_ctx;

static int render_ctx_open(cdsh_tavern_service *svc, const char *sid, render_ctx *c,
                           cdsh_error *err)
{
    memset(c, 0, sizeof *c);
    int rc = cdsh_tavern_binding_load(svc->bindings, sid, &c->binding, err);
    if (rc == 0)
        rc =
            cdsh_tavern_store_card_load(svc->store, str(c->binding, "cardId"), &c->card, NULL, err);
    if (rc == 0 && str(c->binding, "personaId"))
        cdsh_tavern_store_asset_load(svc->store, CDSH_TAVERN_PERSONA, str(c->binding, "personaId"),
                                     &c->persona, NULL);
    json_t *data = json_object_get(c->card, "data");
    c->env.chr = str(c->card, "name");
    c->env.user = str(c->persona, "name") ? str(c->persona, "name") : "User";
    c->env.persona = str(c->persona, "description");
    c->env.description = str(data, "description");
    c->env.personality = str(data, "personality");
    c->env.scenario = str(data, "scenario");
    c->env.first_message = str(data, "first_mes");
    c->env.chat_id = str(c->binding, "storyId");
    c->env.last_message_id = -1;
    return rc;
}

static void render_ctx_close(render_ctx *c)
{
    json_decref(c->binding);
    json_decref(c->card);
    json_decref(c->persona);
}

static bool conversation_started(cdsh_tavern_service *svc, const char *sid)
{
    json_t *s = svc->sessions ? cdsh_session_store_info_dup(svc->sessions, sid, NULL) : NULL;
    bool started = s && json_integer_value(json_object_get(s, "lastTurn")) > 0;
    json_decref(s);
    return started;
}

/* The text of the opening already logged in the session (the last
 * session/opening before any message), owned, or NULL. */
static char *current_opening_dup(cdsh_tavern_service *svc, const char *sid, json_int_t *index)
{
    char *text = NULL;
    bool more = true;
    int64_t after = 0;
    while (more) {
        json_t *ev = cdsh_session_store_events(svc->sessions, sid, after, 10000, &more, NULL);
        if (!ev)
            break;
        size_t i;
        json_t *e;
        json_array_foreach(ev, i, e) {
            const char *type = str(e, "type");
            after = json_integer_value(json_object_get(e, "seq"));
            if (!strcmp(type, "user/message") || !strcmp(type, "assistant/message")) {
                more = false;
                break;
            }
            if (!strcmp(type, "session/opening") && str(json_object_get(e, "payload"), "text")) {
                free(text);
                text = strdup(str(json_object_get(e, "payload"), "text"));
                *index = json_integer_value(json_object_get(json_object_get(e, "payload"), "index"));
            }
        }
        json_decref(ev);
    }
    return text;
}

int cdsh__tavern_write_opening(cdsh_tavern_service *svc, const char *sid, cdsh_error *err)
{
    json_t *info = svc->sessions ? cdsh_session_store_info_dup(svc->sessions, sid, NULL) : NULL;
    bool known = info != NULL;
    json_decref(info);
    /* A binding may name a session of another store (or none yet): the
     * opening is written when the session exists here. */
    if (!known || conversation_started(svc, sid))
        return 0;
    render_ctx c;
    int rc = render_ctx_open(svc, sid, &c, err);
    if (rc < 0) {
        render_ctx_close(&c);
        return rc == CDSH_ENOTFOUND ? 0 : rc; /* unbound: no opening */
    }
    json_t *data = json_object_get(c.card, "data");
    json_int_t idx = json_integer_value(json_object_get(c.binding, "greetingIndex"));
    size_t total = 1 + json_array_size(json_object_get(data, "alternate_greetings"));
    const char *raw =
        idx == 0 ? str(data, "first_mes")
                 : json_string_value(json_array_get(json_object_get(data, "alternate_greetings"),
                                                    (size_t)idx - 1));
    char *text = cdsh_tavern_macros_expand_dup(raw ? raw : "", &c.env);
    json_int_t cur_idx = -1;
    char *cur = current_opening_dup(svc, sid, &cur_idx);
    bool same = cur && text && !strcmp(cur, text) && cur_idx == idx;
    if (text && *text && !same) {
        json_t *payload = json_pack("{s:s, s:I, s:I, s:s, s:s?}", "text", text, "index", idx,
                                    "total", (json_int_t)total, "source", "tavern", "character",
                                    c.env.chr);
        rc = payload ? cdsh_session_store_append(svc->sessions, sid, "session/opening", 0, 0,
                                                 payload, NULL, err)
                     : cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
        json_decref(payload);
    }
    free(cur);
    free(text);
    render_ctx_close(&c);
    return rc;
}

/* The greeting the story opens with, pinned in the story (state/greeting.json)
 * so prompt assembly shows it as the chat's first reply. Before the first turn
 * it follows greeting swipes; once the conversation started it stays. */
static int ensure_greeting(cdsh_tavern_service *svc, const json_t *p, json_t **value,
                           cdsh_error *err)
{
    int rc = 0;
    const char *sid = need(p, "sessionId", err, &rc);
    if (rc < 0)
        return rc;
    render_ctx c;
    cdsh_tavern_story *s = NULL;
    json_t *cur = NULL, *want = NULL;
    if ((rc = render_ctx_open(svc, sid, &c, err)) < 0 ||
        (rc = cdsh_tavern_binding_open_story(svc->bindings, sid, &s, err)) < 0)
        goto cleanup;
    json_t *data = json_object_get(c.card, "data");
    json_int_t idx = json_integer_value(json_object_get(c.binding, "greetingIndex"));
    size_t total = 1 + json_array_size(json_object_get(data, "alternate_greetings"));
    const char *raw =
        idx == 0 ? str(data, "first_mes")
                 : json_string_value(json_array_get(json_object_get(data, "alternate_greetings"),
                                                    (size_t)idx - 1));
    char *text = cdsh_tavern_macros_expand_dup(raw ? raw : "", &c.env);
    want = json_pack("{s:I,s:s}", "index", idx, "text", text ? text : "");
    free(text);
    bool started = conversation_started(svc, sid), written = false;
    if (cdsh_tavern_story_load(s, CDSH_TAVERN_KIND_DOC, GREETING_DOC, &cur, NULL) < 0)
        cur = NULL;
    if (!started && (!cur || !json_equal(cur, want))) {
        if ((rc = cdsh_tavern_story_put(s, NULL, CDSH_TAVERN_KIND_DOC, GREETING_DOC, want, NULL,
                                        err)) < 0)
            goto cleanup;
        written = true;
    }
    /* The session itself opens with it too (the model's history, the chat). */
    if (!started && (rc = cdsh__tavern_write_opening(svc, sid, err)) < 0)
        goto cleanup;
    json_t *shown = started && cur ? cur : want;
    *value = json_pack("{s:O,s:I,s:O,s:b,s:b}", "index", json_object_get(shown, "index"), "total",
                       (json_int_t)total, "text", json_object_get(shown, "text"), "written",
                       written, "conversationStarted", started);
cleanup:
    json_decref(cur);
    json_decref(want);
    cdsh_tavern_story_free(s);
    render_ctx_close(&c);
    return rc;
}

/* Display depth of event messageId: real chat messages after it. */
static int message_depth(cdsh_tavern_service *svc, const char *sid, json_int_t id, int *depth,
                         cdsh_error *err)
{
    *depth = 0;
    if (!svc->sessions)
        return cdsh_error_set(err, CDSH_EUNSUPPORTED, "sessions-unavailable",
                              "messageId needs the host session store");
    bool found = false, more = true;
    int64_t after = 0;
    while (more) {
        json_t *ev = cdsh_session_store_events(svc->sessions, sid, after, 10000, &more, err);
        if (!ev)
            return err ? err->rc : CDSH_EIO;
        size_t i;
        json_t *e;
        json_array_foreach(ev, i, e) {
            json_int_t seq = json_integer_value(json_object_get(e, "seq"));
            const char *type = str(e, "type");
            bool real =
                strcmp(type, "user/message") == 0 ||
                (strcmp(type, "assistant/message") == 0 &&
                 json_array_size(json_object_get(json_object_get(e, "payload"), "toolCalls")) == 0);
            after = seq;
            if (seq == id)
                found = strcmp(type, "assistant/message") == 0;
            else if (found && real && seq > id)
                (*depth)++;
        }
        json_decref(ev);
    }
    if (!found)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "not-found",
                              "message %lld is not a reply of this session", (long long)id);
    return 0;
}

/* Effective display rules: global + the card's + the preset's. Owned. */
static json_t *effective_rules(cdsh_tavern_service *svc, const render_ctx *c)
{
    json_t *rules = NULL, *card_rules = NULL, *preset = NULL;
    if (cdsh_tavern_store_regex_load(svc->store, &rules, NULL) < 0)
        rules = json_array();
    char rel[256];
    snprintf(rel, sizeof rel, "characters/%s/assets/regex-scripts.json", str(c->binding, "cardId"));
    if (cdsh_tavern_store_load(svc->store, rel, &card_rules, NULL, NULL) == 0 &&
        json_is_array(card_rules))
        json_array_extend(rules, card_rules);
    json_decref(card_rules);
    if (str(c->binding, "presetId") &&
        cdsh_tavern_store_asset_load(svc->store, CDSH_TAVERN_PRESET, str(c->binding, "presetId"),
                                     &preset, NULL) == 0) {
        json_t *pr = cdsh_tavern_regex_rules_from_st_dup(json_object_get(preset, "regexScripts"),
                                                         CDSH_TAVERN_REGEX_PRESET, NULL);
        if (pr)
            json_array_extend(rules, pr);
        json_decref(pr);
    }
    json_decref(preset);
    return rules;
}

static int render_output_text(cdsh_tavern_service *svc, const json_t *p, json_t **value,
                              cdsh_error *err)
{
    int rc = 0;
    const char *sid = need(p, "sessionId", err, &rc);
    json_t *text = json_object_get(p, "text"), *mid = json_object_get(p, "messageId");
    if (rc == 0 && !json_is_string(text))
        rc = BAD(err, "field \"%s\" must be a string", "text");
    if (rc == 0 && mid && !json_is_null(mid) &&
        (!json_is_integer(mid) || json_integer_value(mid) < 1))
        rc = BAD(err, "field \"%s\" must be a message (event) number >= 1", "messageId");
    if (rc < 0)
        return rc;
    render_ctx c;
    json_t *rules = NULL, *failures = json_array();
    cdsh_tavern_rxset *set = NULL;
    char *shown = NULL, *out = NULL;
    int depth = 0;
    if ((rc = render_ctx_open(svc, sid, &c, err)) < 0)
        goto cleanup;
    if (json_is_integer(mid) &&
        (rc = message_depth(svc, sid, json_integer_value(mid), &depth, err)) < 0)
        goto cleanup;
    rules = effective_rules(svc, &c);
    if ((rc = cdsh_tavern_rxset_new(rules, &set, err)) < 0 ||
        (rc = cdsh_tavern_rxset_apply(set, json_string_value(text), "output", "render", "assistant",
                                      depth, &c.env, &shown, failures, err)) < 0)
        goto cleanup;
    out = cdsh_tavern_macros_expand_dup(shown, &c.env);
    *value =
        json_pack("{s:s,s:i,s:O}", "text", out ? out : shown, "depth", depth, "failures", failures);
cleanup:
    free(out);
    free(shown);
    cdsh_tavern_rxset_free(set);
    json_decref(rules);
    json_decref(failures);
    render_ctx_close(&c);
    return rc;
}

/* ---- the rows' handlers (methods.c) ------------------------------------------------------ */

#define LIB_OP(name, expr)                                                                         \
    CDSH__TAVERN_OP(cdsh__tavern_op_##name)                                                        \
    {                                                                                              \
        cdsh_tavern_service *svc = ud;                                                             \
        const json_t *p = call->args;                                                              \
        return expr;                                                                               \
    }

LIB_OP(saveLorebook, save_lorebook(svc, p, value, err))
LIB_OP(deleteLorebook,
       delete_unreferenced(svc, CDSH_TAVERN_LOREBOOK, "lorebook", p, value, err))
LIB_OP(getCharacterLorebook, get_character_lorebook(svc, p, value, err))
LIB_OP(saveCharacterLorebook, save_character_lorebook(svc, p, value, err))
LIB_OP(deleteEmbeddedLorebook, delete_embedded_lorebook(svc, p, value, err))
LIB_OP(savePreset, save_preset(svc, p, value, err))
LIB_OP(deletePreset, delete_unreferenced(svc, CDSH_TAVERN_PRESET, "preset", p, value, err))
LIB_OP(savePersona, save_persona(svc, p, value, err))
LIB_OP(deletePersona, delete_unreferenced(svc, CDSH_TAVERN_PERSONA, "persona", p, value, err))
LIB_OP(listRegexRules, list_regex_rules(svc, p, value, err))
LIB_OP(saveRegexRules, save_regex_rules(svc, p, value, err))
LIB_OP(createCharacter, create_character(svc, p, value, err))
LIB_OP(listStories, list_stories(svc, p, value, err))
LIB_OP(ensureGreeting, ensure_greeting(svc, p, value, err))
LIB_OP(renderOutputText, render_output_text(svc, p, value, err))

/* ---- the assets of a prompt plan ---------------------------------------------------------- */

static void rev_append(cdsh_strbuf *b, const char *what, const char *id, const char *tag)
{
    cdsh_strbuf_appendf(b, "%s%s:%s=%s", b->len ? "|" : "", what, id ? id : "", tag ? tag : "-");
}

int cdsh__tavern_assets_load(cdsh_tavern_service *svc, const json_t *binding,
                             cdsh__tavern_assets *a, cdsh_error *err)
{
    memset(a, 0, sizeof *a);
    cdsh_strbuf rev;
    cdsh_strbuf_init(&rev);
    char *tag = NULL;
    const char *pid = str(binding, "presetId"), *uid = str(binding, "personaId");
    int rc = cdsh_tavern_store_card_load(svc->store, str(binding, "cardId"), &a->card, &tag, err);
    rev_append(&rev, "card", str(binding, "cardId"), tag);
    free(tag);
    tag = NULL;
    if (rc == 0 && pid &&
        (rc = cdsh_tavern_store_asset_read(svc->store, CDSH_TAVERN_PRESET, pid, &a->preset, &tag,
                                           err)) == 0)
        rev_append(&rev, "preset", pid, tag);
    free(tag);
    tag = NULL;
    if (rc == 0 && uid &&
        (rc = cdsh_tavern_store_asset_read(svc->store, CDSH_TAVERN_PERSONA, uid, &a->persona, &tag,
                                           err)) == 0)
        rev_append(&rev, "persona", uid, tag);
    free(tag);
    tag = NULL;
    if (rc == 0)
        rc = cdsh_tavern_store_regex_read(svc->store, &a->rules, &tag, err);
    rev_append(&rev, "regex", "", tag);
    free(tag);
    tag = NULL;
    a->books = json_array();
    size_t i;
    json_t *id;
    /* A library book removed behind a binding's back is skipped, not fatal. */
    json_array_foreach(json_object_get(binding, "lorebookIds"), i, id) {
        json_t *book = NULL;
        if (rc == 0 && json_is_string(id) &&
            cdsh_tavern_store_asset_read(svc->store, CDSH_TAVERN_LOREBOOK, json_string_value(id),
                                         &book, &tag, NULL) == 0) {
            json_array_append_new(a->books, book);
            rev_append(&rev, "book", json_string_value(id), tag);
        }
        free(tag);
        tag = NULL;
    }
    const char *pb = str(a->persona, "lorebook");
    if (rc == 0 && pb &&
        cdsh_tavern_store_asset_read(svc->store, CDSH_TAVERN_LOREBOOK, pb, &a->persona_book, &tag,
                                     NULL) == 0)
        rev_append(&rev, "personaBook", pb, tag);
    free(tag);
    a->revision = cdsh_strbuf_take(&rev, NULL);
    if (rc < 0)
        cdsh__tavern_assets_deinit(a);
    return rc;
}

void cdsh__tavern_assets_deinit(cdsh__tavern_assets *a)
{
    json_decref(a->card);
    json_decref(a->preset);
    json_decref(a->persona);
    json_decref(a->rules);
    json_decref(a->books);
    json_decref(a->persona_book);
    free(a->revision);
    memset(a, 0, sizeof *a);
}

char *cdsh__tavern_greeting_dup(cdsh_tavern_story *story)
{
    json_t *g = NULL;
    char *text = NULL;
    if (story && cdsh_tavern_story_load(story, CDSH_TAVERN_KIND_DOC, GREETING_DOC, &g, NULL) == 0 &&
        str(g, "text") && *str(g, "text"))
        text = strdup(str(g, "text"));
    json_decref(g);
    return text;
}
