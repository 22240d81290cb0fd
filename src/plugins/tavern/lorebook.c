/* lorebook.c — world-info / character-book normalisation and conversion
 * (SillyTavern's newWorldInfoEntryDefinition defaults and convertCharacterBook
 * mapping). Activation (scanning, budgets) is not here: this is asset shape. */
#include "plugins/tavern/lorebook.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/utf8.h"

typedef enum dkind { D_FALSE, D_TRUE, D_INT, D_STR, D_NULL, D_ARR } dkind;

typedef struct wi_field {
    const char *name;
    dkind kind;
    int ival;
} wi_field;

/* §2.2 of the SillyTavern digest, in SillyTavern's order. */
static const wi_field WI_FIELDS[] = {
    {"uid", D_INT, 0},
    {"key", D_ARR, 0},
    {"keysecondary", D_ARR, 0},
    {"comment", D_STR, 0},
    {"content", D_STR, 0},
    {"constant", D_FALSE, 0},
    {"vectorized", D_FALSE, 0},
    {"selective", D_TRUE, 0},
    {"selectiveLogic", D_INT, 0},
    {"addMemo", D_FALSE, 0},
    {"order", D_INT, 100},
    {"position", D_INT, 0},
    {"disable", D_FALSE, 0},
    {"excludeRecursion", D_FALSE, 0},
    {"preventRecursion", D_FALSE, 0},
    {"delayUntilRecursion", D_INT, 0},
    {"probability", D_INT, 100},
    {"useProbability", D_TRUE, 0},
    {"depth", D_INT, 4},
    {"group", D_STR, 0},
    {"groupOverride", D_FALSE, 0},
    {"groupWeight", D_INT, 100},
    {"scanDepth", D_NULL, 0},
    {"caseSensitive", D_NULL, 0},
    {"matchWholeWords", D_NULL, 0},
    {"useGroupScoring", D_NULL, 0},
    {"automationId", D_STR, 0},
    {"role", D_INT, 0},
    {"sticky", D_NULL, 0},
    {"cooldown", D_NULL, 0},
    {"delay", D_NULL, 0},
    {"ignoreBudget", D_FALSE, 0},
    {"matchPersonaDescription", D_FALSE, 0},
    {"matchCharacterDescription", D_FALSE, 0},
    {"matchCharacterPersonality", D_FALSE, 0},
    {"matchCharacterDepthPrompt", D_FALSE, 0},
    {"matchScenario", D_FALSE, 0},
    {"matchCreatorNotes", D_FALSE, 0},
    {"outletName", D_STR, 0},
    {"triggers", D_ARR, 0},
};
#define N_WI_FIELDS (sizeof WI_FIELDS / sizeof WI_FIELDS[0])

/* Character-book entry extension key ↔ world-info key (originalWIDataKeyMap). */
static const char *const EXT_MAP[][2] = {
    {"display_index", "displayIndex"},
    {"exclude_recursion", "excludeRecursion"},
    {"prevent_recursion", "preventRecursion"},
    {"delay_until_recursion", "delayUntilRecursion"},
    {"probability", "probability"},
    {"useProbability", "useProbability"},
    {"depth", "depth"},
    {"selectiveLogic", "selectiveLogic"},
    {"group", "group"},
    {"group_override", "groupOverride"},
    {"group_weight", "groupWeight"},
    {"scan_depth", "scanDepth"},
    {"case_sensitive", "caseSensitive"},
    {"match_whole_words", "matchWholeWords"},
    {"use_group_scoring", "useGroupScoring"},
    {"automation_id", "automationId"},
    {"role", "role"},
    {"vectorized", "vectorized"},
    {"sticky", "sticky"},
    {"cooldown", "cooldown"},
    {"delay", "delay"},
    {"outlet_name", "outletName"},
    {"match_persona_description", "matchPersonaDescription"},
    {"match_character_description", "matchCharacterDescription"},
    {"match_character_personality", "matchCharacterPersonality"},
    {"match_character_depth_prompt", "matchCharacterDepthPrompt"},
    {"match_scenario", "matchScenario"},
    {"match_creator_notes", "matchCreatorNotes"},
    {"triggers", "triggers"},
    {"ignore_budget", "ignoreBudget"},
};
#define N_EXT_MAP (sizeof EXT_MAP / sizeof EXT_MAP[0])

/* Character-book entry fields that are optional and dropped when null. */
static const char *const CB_OPTIONAL[] = {
    "case_sensitive", "name",           "priority", "id",       "comment",
    "selective",      "secondary_keys", "constant", "position", "use_regex"};

static const wi_field *wi_field_find(const char *name)
{
    for (size_t i = 0; i < N_WI_FIELDS; i++)
        if (!strcmp(WI_FIELDS[i].name, name))
            return &WI_FIELDS[i];
    return NULL;
}

static json_t *wi_default(const wi_field *f)
{
    switch (f->kind) {
    case D_FALSE: return json_false();
    case D_TRUE: return json_true();
    case D_INT: return json_integer(f->ival);
    case D_STR: return json_string("");
    case D_NULL: return json_null();
    case D_ARR: return json_array();
    }
    return json_null();
}

static int bad(cdsh_error *err, int rc, const char *code, const char *fmt, size_t idx,
               const char *what)
{
    return cdsh_error_set(err, rc, code, fmt, idx, what);
}

/* A key list: array of strings; a lone string becomes a one-element list. */
static json_t *key_list(const json_t *v, size_t idx, const char *field, cdsh_error *err)
{
    if (!v || json_is_null(v))
        return json_array();
    if (json_is_string(v)) {
        json_t *a = json_array();
        if (json_string_length(v))
            json_array_append(a, (json_t *)v);
        return a;
    }
    if (!json_is_array(v)) {
        bad(err, CDSH_EINVAL, "LOREBOOK_BAD_ENTRY", "lorebook entry %zu: %s must be a list", idx,
            field);
        return NULL;
    }
    size_t i;
    json_t *k;
    json_array_foreach(v, i, k) {
        if (!json_is_string(k)) {
            bad(err, CDSH_EINVAL, "LOREBOOK_BAD_ENTRY",
                "lorebook entry %zu: every item of %s must be a string", idx, field);
            return NULL;
        }
    }
    return json_deep_copy(v);
}

static int check_limits(const json_t *keys, const json_t *keys2, const json_t *content, size_t idx,
                        cdsh_error *err)
{
    const json_t *lists[2] = {keys, keys2};
    for (int l = 0; l < 2; l++) {
        if (!lists[l])
            continue;
        if (json_array_size(lists[l]) > CDSH_TAVERN_LOREBOOK_MAX_KEYS)
            return cdsh_error_set(err, CDSH_ETOOBIG, "LOREBOOK_KEY_TOO_LONG",
                                  "lorebook entry %zu has more than %d keys", idx,
                                  CDSH_TAVERN_LOREBOOK_MAX_KEYS);
        size_t i;
        json_t *k;
        json_array_foreach(lists[l], i, k) {
            if (cdsh_utf8_count(json_string_value(k), json_string_length(k)) >
                CDSH_TAVERN_LOREBOOK_MAX_KEY)
                return cdsh_error_set(err, CDSH_ETOOBIG, "LOREBOOK_KEY_TOO_LONG",
                                      "lorebook entry %zu has a key longer than %d characters", idx,
                                      CDSH_TAVERN_LOREBOOK_MAX_KEY);
        }
    }
    if (content && cdsh_utf8_count(json_string_value(content), json_string_length(content)) >
                       CDSH_TAVERN_LOREBOOK_MAX_CONTENT)
        return cdsh_error_set(err, CDSH_ETOOBIG, "LOREBOOK_CONTENT_TOO_LONG",
                              "lorebook entry %zu has content longer than %d characters", idx,
                              CDSH_TAVERN_LOREBOOK_MAX_CONTENT);
    return 0;
}

static bool is_cb_entry(const json_t *e)
{
    return json_object_get(e, "keys") != NULL || json_object_get(e, "insertion_order") != NULL;
}

/* ---- character-book entry → world-info entry (convertCharacterBook) ---- */

static json_t *cb_to_wi_entry(const json_t *e, size_t idx)
{
    json_t *w = json_object();
    json_t *ext = json_object_get(e, "extensions");
    json_t *id = json_object_get(e, "id");
    json_object_set_new(w, "uid",
                        json_is_integer(id) ? json_copy(id) : json_integer((json_int_t)idx));
    json_t *v;
    if ((v = json_object_get(e, "keys")))
        json_object_set(w, "key", v);
    if ((v = json_object_get(e, "secondary_keys")) && !json_is_null(v))
        json_object_set(w, "keysecondary", v);
    const char *same[] = {"comment", "content", "constant", "selective"};
    for (size_t i = 0; i < 4; i++)
        if ((v = json_object_get(e, same[i])) && !json_is_null(v))
            json_object_set(w, same[i], v);
    if ((v = json_object_get(e, "insertion_order")) && !json_is_null(v))
        json_object_set(w, "order", v);
    if ((v = json_object_get(e, "enabled")) && json_is_boolean(v))
        json_object_set_new(w, "disable", json_boolean(!json_is_true(v)));
    json_t *xpos = json_object_get(ext, "position");
    if (json_is_number(xpos)) {
        json_object_set(w, "position", xpos);
    } else {
        const char *p = json_string_value(json_object_get(e, "position"));
        json_object_set_new(w, "position", json_integer(p && !strcmp(p, "before_char") ? 0 : 1));
    }
    for (size_t i = 0; i < N_EXT_MAP; i++)
        if ((v = json_object_get(ext, EXT_MAP[i][0])) && !json_is_null(v))
            json_object_set(w, EXT_MAP[i][1], v);
    if (!json_object_get(w, "caseSensitive") &&
        json_is_boolean(v = json_object_get(e, "case_sensitive")))
        json_object_set(w, "caseSensitive", v);
    /* Extension keys with no world-info field, and character-book-only fields,
     * are kept so that nothing of the card is lost. */
    json_t *rest = json_object();
    const char *k;
    json_object_foreach(ext, k, v) {
        bool mapped = !strcmp(k, "position");
        for (size_t i = 0; i < N_EXT_MAP && !mapped; i++)
            mapped = !strcmp(k, EXT_MAP[i][0]);
        if (!mapped)
            json_object_set(rest, k, v);
    }
    if (json_object_size(rest))
        json_object_set(w, "extensions", rest);
    json_decref(rest);
    const char *keep[] = {"name", "priority", "use_regex"};
    for (size_t i = 0; i < 3; i++)
        if ((v = json_object_get(e, keep[i])) && !json_is_null(v))
            json_object_set(w, keep[i], v);
    return w;
}

/* ---- world-info entry → character-book entry ---------------------------- */

static json_t *wi_to_cb_entry(const json_t *w)
{
    json_t *e = json_object();
    json_t *ext = json_object();
    json_t *v;
    json_t *own_ext = json_object_get(w, "extensions");
    if (json_is_object(own_ext))
        json_object_update(ext, own_ext);
    json_t *wk = json_object_get(w, "key");
    json_object_set_new(e, "keys", wk ? json_incref(wk) : json_array());
    if ((v = json_object_get(w, "keysecondary")))
        json_object_set(e, "secondary_keys", v);
    const char *same[] = {"comment", "content", "constant", "selective"};
    for (size_t i = 0; i < 4; i++)
        if ((v = json_object_get(w, same[i])) && !json_is_null(v))
            json_object_set(e, same[i], v);
    if ((v = json_object_get(w, "order")))
        json_object_set(e, "insertion_order", v);
    if ((v = json_object_get(w, "disable")))
        json_object_set_new(e, "enabled", json_boolean(!json_is_true(v)));
    if ((v = json_object_get(w, "uid")) && json_is_integer(v))
        json_object_set(e, "id", v);
    if ((v = json_object_get(w, "position")) && json_is_integer(v)) {
        json_object_set_new(e, "position",
                            json_string(json_integer_value(v) == 0 ? "before_char" : "after_char"));
        json_object_set(ext, "position", v);
    }
    for (size_t i = 0; i < N_EXT_MAP; i++)
        if ((v = json_object_get(w, EXT_MAP[i][1])))
            json_object_set(ext, EXT_MAP[i][0], v);
    const char *k;
    json_object_foreach((json_t *)w, k, v) {
        if (wi_field_find(k) || !strcmp(k, "extensions") || !strcmp(k, "displayIndex"))
            continue;
        if (!json_object_get(e, k))
            json_object_set(e, k, v);
    }
    json_object_set_new(e, "extensions", ext);
    return e;
}

/* ---- entry normalisation -------------------------------------------------- */

/* Releases an entry normaliser's temporaries and passes its result through. */
static json_t *entry_done(json_t *result, json_t *keys, json_t *keys2, json_t *conv)
{
    json_decref(keys);
    json_decref(keys2);
    json_decref(conv);
    return result;
}

static json_t *wi_entry_normalize(const json_t *src, size_t idx, cdsh_error *err)
{
    if (!json_is_object(src)) {
        bad(err, CDSH_EINVAL, "LOREBOOK_BAD_ENTRY", "lorebook entry %zu is not an object%s", idx,
            "");
        return NULL;
    }
    json_t *conv = is_cb_entry(src) && !json_object_get(src, "key") ? cb_to_wi_entry(src, idx)
                                                                    : json_incref((json_t *)src);
    json_t *out = json_object();
    json_t *keys = key_list(json_object_get(conv, "key"), idx, "key", err);
    json_t *keys2 =
        keys ? key_list(json_object_get(conv, "keysecondary"), idx, "keysecondary", err) : NULL;
    json_t *content = json_object_get(conv, "content");
    json_t *comment = json_object_get(conv, "comment");
    if (!keys || !keys2)
        goto fail;
    if ((content && !json_is_string(content) && !json_is_null(content)) ||
        (comment && !json_is_string(comment) && !json_is_null(comment))) {
        bad(err, CDSH_EINVAL, "LOREBOOK_BAD_ENTRY",
            "lorebook entry %zu: content and comment must be strings%s", idx, "");
        goto fail;
    }
    if (check_limits(keys, keys2, json_is_string(content) ? content : NULL, idx, err) < 0)
        goto fail;
    for (size_t i = 0; i < N_WI_FIELDS; i++) {
        const wi_field *f = &WI_FIELDS[i];
        json_t *v = json_object_get(conv, f->name);
        if (!strcmp(f->name, "key"))
            json_object_set(out, "key", keys);
        else if (!strcmp(f->name, "keysecondary"))
            json_object_set(out, "keysecondary", keys2);
        else if (!strcmp(f->name, "uid") && !json_is_integer(v))
            json_object_set_new(out, "uid", json_integer((json_int_t)idx));
        else if (v && (!json_is_null(v) || f->kind == D_NULL))
            json_object_set(out, f->name, v);
        else
            json_object_set_new(out, f->name, wi_default(f));
    }
    const char *k;
    json_t *v;
    json_object_foreach(conv, k, v) {
        if (!json_object_get(out, k))
            json_object_set(out, k, v);
    }
    return entry_done(out, keys, keys2, conv);
fail:
    json_decref(out);
    return entry_done(NULL, keys, keys2, conv);
}

static json_t *cb_entry_normalize(const json_t *src, size_t idx, cdsh_error *err)
{
    if (!json_is_object(src)) {
        bad(err, CDSH_EINVAL, "LOREBOOK_BAD_ENTRY", "lorebook entry %zu is not an object%s", idx,
            "");
        return NULL;
    }
    json_t *conv = !is_cb_entry(src) && json_object_get(src, "key") ? wi_to_cb_entry(src)
                                                                    : json_incref((json_t *)src);
    json_t *out = json_object();
    json_t *keys = key_list(json_object_get(conv, "keys"), idx, "keys", err);
    json_t *keys2 = NULL;
    json_t *sk = json_object_get(conv, "secondary_keys");
    if (keys && sk && !json_is_null(sk))
        keys2 = key_list(sk, idx, "secondary_keys", err);
    json_t *content = json_object_get(conv, "content");
    json_t *ext = json_object_get(conv, "extensions");
    if (!keys || (sk && !json_is_null(sk) && !keys2))
        goto fail;
    if ((content && !json_is_string(content) && !json_is_null(content)) ||
        (ext && !json_is_object(ext) && !json_is_null(ext))) {
        bad(err, CDSH_EINVAL, "LOREBOOK_BAD_ENTRY",
            "lorebook entry %zu: content must be a string and extensions an object%s", idx, "");
        goto fail;
    }
    if (check_limits(keys, keys2, json_is_string(content) ? content : NULL, idx, err) < 0)
        goto fail;
    json_object_set(out, "keys", keys);
    json_object_set_new(out, "content",
                        json_is_string(content) ? json_copy(content) : json_string(""));
    json_object_set_new(out, "extensions",
                        json_is_object(ext) ? json_deep_copy(ext) : json_object());
    json_t *en = json_object_get(conv, "enabled");
    json_object_set_new(out, "enabled", json_boolean(!json_is_boolean(en) || json_is_true(en)));
    json_t *io = json_object_get(conv, "insertion_order");
    json_object_set_new(out, "insertion_order",
                        json_is_number(io) ? json_copy(io) : json_integer(100));
    if (keys2)
        json_object_set(out, "secondary_keys", keys2);
    const char *k;
    json_t *v;
    json_object_foreach(conv, k, v) {
        if (json_object_get(out, k) || !strcmp(k, "secondary_keys"))
            continue;
        bool optional = false;
        for (size_t i = 0; i < sizeof CB_OPTIONAL / sizeof CB_OPTIONAL[0]; i++)
            optional = optional || !strcmp(k, CB_OPTIONAL[i]);
        if (optional && json_is_null(v))
            continue;
        json_object_set(out, k, v);
    }
    return entry_done(out, keys, keys2, conv);
fail:
    json_decref(out);
    return entry_done(NULL, keys, keys2, conv);
}

/* ---- book shapes ----------------------------------------------------------- */

/* Resolves a JSON string and the lorebook_v3 wrapper; returns an owned
 * object or array, NULL with err set otherwise. */
static json_t *unwrap(const json_t *in, cdsh_error *err)
{
    json_t *cur = json_incref((json_t *)in);
    if (json_is_string(cur)) {
        json_t *parsed =
            cdsh_json_parse(json_string_value(cur), json_string_length(cur), 8u * 1024 * 1024, err);
        json_decref(cur);
        if (!parsed)
            return NULL;
        cur = parsed;
    }
    json_t *data = json_object_get(cur, "data");
    const char *spec = json_string_value(json_object_get(cur, "spec"));
    if (spec && !strcmp(spec, "lorebook_v3") && json_is_object(data)) {
        json_incref(data);
        json_decref(cur);
        cur = data;
    }
    if (json_is_array(cur))
        return cur;
    if (json_is_object(cur)) {
        json_t *e = json_object_get(cur, "entries");
        if (!e || json_is_array(e) || json_is_object(e))
            return cur;
    }
    json_decref(cur);
    cdsh_error_set(err, CDSH_EINVAL, "LOREBOOK_BAD_SHAPE",
                   "not a lorebook: expected an object with \"entries\" (a list or a uid map)");
    return NULL;
}

/* Entries of a book as a flat list of (borrowed) values. */
static json_t *entry_list(const json_t *book)
{
    const json_t *e = json_is_array(book) ? book : json_object_get(book, "entries");
    json_t *list = json_array();
    if (json_is_array(e)) {
        json_array_extend(list, (json_t *)e);
    } else if (json_is_object(e)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)e, k, v) {
            json_array_append(list, v);
        }
    }
    return list;
}

/* Book-level keys kept in the output: everything but the entries; the
 * character-book shape also drops null optionals and needs an extensions object. */
static void copy_book_keys(const json_t *book, json_t *out, bool to_cb)
{
    static const char *const BOOK_OPTIONAL[] = {"name", "description", "scan_depth", "token_budget",
                                                "recursive_scanning"};
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)book, k, v) {
        bool optional = !strcmp(k, "name");
        for (size_t i = 1; to_cb && i < 5; i++)
            optional = optional || !strcmp(k, BOOK_OPTIONAL[i]);
        if (!strcmp(k, "entries") || (optional && json_is_null(v)))
            continue;
        if (to_cb && !strcmp(k, "extensions") && !json_is_object(v))
            continue;
        json_object_set(out, k, v);
    }
    if (to_cb && !json_object_get(out, "extensions"))
        json_object_set_new(out, "extensions", json_object());
}

/* Adds a normalised entry: by uid into a map (world info) or appended. */
static int add_entry(json_t *entries, json_t *e, cdsh_error *err)
{
    if (json_is_array(entries))
        return json_array_append_new(entries, e), 0;
    char uid[32];
    snprintf(uid, sizeof uid, "%lld", (long long)json_integer_value(json_object_get(e, "uid")));
    if (json_object_get(entries, uid)) {
        json_decref(e);
        return cdsh_error_set(err, CDSH_EINVAL, "LOREBOOK_DUPLICATE_UID",
                              "lorebook has two entries with uid %s", uid);
    }
    return json_object_set_new(entries, uid, e), 0;
}

static json_t *normalize_book(const json_t *in, bool to_cb, cdsh_error *err)
{
    json_t *book = unwrap(in, err);
    if (!book)
        return NULL;
    json_t *list = entry_list(book);
    json_t *out = json_object();
    json_t *entries = to_cb ? json_array() : json_object();
    if (json_array_size(list) > CDSH_TAVERN_LOREBOOK_MAX_ENTRIES) {
        cdsh_error_set(err, CDSH_ETOOBIG, "LOREBOOK_TOO_MANY_ENTRIES",
                       "lorebook has %zu entries; the limit is %d", json_array_size(list),
                       CDSH_TAVERN_LOREBOOK_MAX_ENTRIES);
        goto fail;
    }
    copy_book_keys(book, out, to_cb); /* a bare entry list has no keys but still gets extensions */
    json_object_set(out, "entries", entries);
    size_t i;
    json_t *src;
    json_array_foreach(list, i, src) {
        json_t *e = to_cb ? cb_entry_normalize(src, i, err) : wi_entry_normalize(src, i, err);
        if (!e || add_entry(entries, e, err) < 0)
            goto fail;
    }
    json_decref(entries);
    json_decref(list);
    json_decref(book);
    return out;
fail:
    json_decref(entries);
    json_decref(list);
    json_decref(book);
    json_decref(out);
    return NULL;
}

json_t *cdsh_tavern_lorebook_normalize_dup(const json_t *in, cdsh_error *err)
{
    return normalize_book(in, false, err);
}

json_t *cdsh_tavern_character_book_normalize_dup(const json_t *in, cdsh_error *err)
{
    return normalize_book(in, true, err);
}

size_t cdsh_tavern_lorebook_entry_count(const json_t *book)
{
    const json_t *e = json_is_array(book) ? book : json_object_get(book, "entries");
    return json_is_array(e) ? json_array_size(e) : json_is_object(e) ? json_object_size(e) : 0;
}

int cdsh_tavern_lorebook_is_candidate(const json_t *in)
{
    if (json_is_array(in))
        return json_array_size(in) > 0;
    if (json_is_object(in))
        return cdsh_tavern_lorebook_entry_count(in) > 0 ||
               cdsh_tavern_lorebook_entry_count(json_object_get(in, "data")) > 0;
    if (json_is_string(in)) {
        json_t *p =
            cdsh_json_parse(json_string_value(in), json_string_length(in), 8u * 1024 * 1024, NULL);
        int r = p && !json_is_string(p) && cdsh_tavern_lorebook_is_candidate(p);
        json_decref(p);
        return r;
    }
    return 0;
}
