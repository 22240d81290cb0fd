/* service_tools.c — the seven model tools of liketavern §9: write-context
 * checks (floor-not-open, floor-stale, binding-changed), budgets counted on
 * the pretty-printed result, lore catalog / uid / query modes, the readable
 * path whitelist and the story's virtual files. The rows naming these tools
 * are methods.c's. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/strbuf.h"
#include "plugins/tavern/memory.h"
#include "plugins/tavern/service_priv.h"
#include "plugins/tavern/worldstate.h"

#define LORE_BUDGET 2500
#define ASSET_BUDGET 3000
#define LIST_PART_BUDGET 900
#define CATALOG_MAX 400
#define FILES_MAX 200
#define SEARCH_TOP_MAX 20
#define LORE_TOP_DEFAULT 6

static json_t *fail(const char *code, const char *msg)
{
    return json_pack("{s:b,s:s,s:s}", "ok", 0, "code", code, "message", msg);
}

static const char *s_get(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* Tokens of the pretty JSON the model sees, tokensUsed included. */
static int pretty_tokens(json_t *v)
{
    int used = 0;
    for (int i = 0; i < 3; i++) {
        json_object_set_new(v, "tokensUsed", json_integer(used));
        char *t = json_dumps(v, JSON_INDENT(2) | JSON_ENSURE_ASCII * 0);
        int n = cdsh__tavern_est_tokens(t);
        free(t);
        if (n == used)
            break;
        used = n;
    }
    json_object_set_new(v, "tokensUsed", json_integer(used));
    return used;
}

/* Clips text to at most max_chars code points (owned). */
static char *clip_dup(const char *text, size_t max_chars, bool *clipped)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t n = 0;
    while (*p && n < max_chars) {
        p++;
        while ((*p & 0xC0) == 0x80)
            p++;
        n++;
    }
    *clipped = *p != '\0';
    if (!*clipped)
        return strdup(text);
    char *out = NULL;
    if (asprintf(&out, "%.*s…（已截断）", (int)((const char *)p - text), text) < 0)
        return NULL;
    return out;
}

static size_t char_count(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        n += (*p & 0xC0) != 0x80;
    return n;
}

/* Appends item to arr[key] inside out; if the result exceeds budget, clips
 * item[field] (binary search) to fit; returns false (nothing appended) when
 * even an empty field does not fit. */
static bool fit_item(json_t *out, const char *arr_key, json_t *item, const char *field, int budget,
                     bool *truncated)
{
    json_t *arr = json_object_get(out, arr_key);
    json_array_append(arr, item);
    if (pretty_tokens(out) <= budget) {
        *truncated = false;
        return true;
    }
    const char *full = s_get(item, field);
    if (!full) {
        json_array_remove(arr, json_array_size(arr) - 1);
        return false;
    }
    char *orig = strdup(full);
    size_t lo = 0, hi = char_count(orig), best = (size_t)-1;
    while (lo <= hi) {
        size_t mid = (lo + hi) / 2;
        bool c;
        char *t = clip_dup(orig, mid, &c);
        json_object_set_new(item, field, json_string(t));
        free(t);
        if (pretty_tokens(out) <= budget) {
            best = mid;
            lo = mid + 1;
        } else {
            if (mid == 0)
                break;
            hi = mid - 1;
        }
    }
    if (best == (size_t)-1) {
        json_array_remove(arr, json_array_size(arr) - 1);
        free(orig);
        return false;
    }
    bool c;
    char *t = clip_dup(orig, best, &c);
    json_object_set_new(item, field, json_string(t));
    free(t);
    free(orig);
    *truncated = true;
    pretty_tokens(out);
    return true;
}

/* ---- context ------------------------------------------------------------- */

typedef struct tctx {
    char *session, *card, *story_id, *floor;
    int64_t turn;
    cdsh_tavern_story *story;
    json_t *binding;
} tctx;

static void tctx_free(tctx *c)
{
    free(c->session);
    free(c->card);
    free(c->story_id);
    free(c->floor);
    cdsh_tavern_story_free(c->story);
    json_decref(c->binding);
}

/* Finds the open turn of the call's session (named by its scope) and lends
 * the call that turn's story handle. When two agents run turns on one
 * session, the call belongs to its own agent's turn. For writes also checks
 * the floor is current and the binding unchanged. *res gets a failure. */
static int resolve(cdsh_tavern_service *svc, const cdsh_scope *scope, bool write, tctx *c,
                   json_t **res, cdsh_error *err)
{
    memset(c, 0, sizeof *c);
    int64_t current = -1;
    const char *sid = cdsh__tavern_scope_session(scope);
    pthread_mutex_lock(&svc->mu);
    const cdsh__tavern_open_turn *mine = NULL;
    for (size_t i = 0; sid && i < svc->n_turns; i++) {
        const cdsh__tavern_open_turn *t = &svc->turns[i];
        if (t->ended || strcmp(t->session, sid) != 0)
            continue;
        if (!mine || t->scope == scope || (mine->scope != scope && t->turn > mine->turn))
            mine = t;
    }
    if (mine) {
        c->session = strdup(mine->session);
        c->card = strdup(mine->card);
        c->story_id = strdup(mine->story);
        c->floor = strdup(mine->floor);
        c->turn = mine->turn;
        c->story = cdsh__tavern_story_ref(mine->handle);
        current = json_integer_value(json_object_get(svc->current, mine->session));
    }
    pthread_mutex_unlock(&svc->mu);
    if (!c->session) {
        *res = fail("floor-not-open", "no tavern turn is open for this agent; write tools work "
                                      "only inside a role-play turn");
        return 1;
    }
    if (write && current != c->turn) {
        *res = fail("floor-stale", "this floor belongs to an earlier turn; nothing was written");
        return 1;
    }
    int rc = cdsh_tavern_binding_load(svc->bindings, c->session, &c->binding, err);
    if (rc == CDSH_ENOTFOUND ||
        (rc == 0 && (strcmp(s_get(c->binding, "cardId"), c->card) != 0 ||
                     strcmp(s_get(c->binding, "storyId"), c->story_id) != 0))) {
        *res = fail("binding-changed",
                    "the session was bound to another card or story since the turn began; "
                    "nothing was written");
        return 1;
    }
    if (rc < 0)
        return rc;
    if (write && !cdsh_tavern_story_floor_is_open(c->story, c->floor)) {
        *res = fail("floor-not-open", "the turn's floor is not open; nothing was written");
        return 1;
    }
    return 0;
}

static char *notice_dup(const char *what)
{
    char *n = NULL;
    if (asprintf(&n,
                 "【Tavern 同轮写入】%s It is known from now on; retrieval picks it up next turn.",
                 what) < 0)
        return NULL;
    return n;
}

/* ---- memory tools ------------------------------------------------------------ */

static int tool_memory_search(cdsh_tavern_service *svc, tctx *c, const json_t *args, json_t **value,
                              cdsh_error *err)
{
    json_t *settings = cdsh__tavern_settings_dup(svc);
    cdsh_tavern_memory_cfg cfg = cdsh__tavern_memory_cfg(settings);
    json_decref(settings);
    const char *query = s_get(args, "query");
    json_t *tk = json_object_get(args, "topK");
    int top = json_is_integer(tk) && json_integer_value(tk) > 0
                  ? (int)(json_integer_value(tk) > SEARCH_TOP_MAX ? SEARCH_TOP_MAX
                                                                  : json_integer_value(tk))
                  : cfg.retrieval_top_k;
    if (!query || !*query) {
        *value = fail("invalid-args", "query is required");
        return 0;
    }
    json_t *hits = NULL;
    int rc = cdsh_tavern_memory_search(c->story, query, top, &cfg, 0, &hits, err);
    if (rc < 0)
        return rc;
    json_t *out = json_pack("{s:b,s:i,s:i,s:b,s:[]}", "ok", 1, "count", 0, "omitted", 0,
                            "truncated", 0, "results");
    size_t i;
    json_t *h;
    int count = 0, omitted = 0;
    bool any_trunc = false;
    json_array_foreach(hits, i, h) {
        char *path = NULL;
        if (asprintf(&path, "memory/%s.md", s_get(h, "id")) < 0)
            path = NULL;
        json_t *item =
            json_pack("{s:O,s:s?,s:O,s:O,s:O,s:O,s:O,s:O,s:b,s:b}", "id", json_object_get(h, "id"),
                      "path", path, "archived", json_object_get(h, "archived"), "sourceRange",
                      json_object_get(h, "sourceRange"), "score", json_object_get(h, "score"),
                      "tags", json_object_get(h, "tags"), "keys", json_object_get(h, "keys"),
                      "body", json_object_get(h, "body"), "truncated", 0, "metadataTruncated", 0);
        free(path);
        bool t = false;
        if (fit_item(out, "results", item, "body", cfg.retrieval_budget, &t)) {
            count++;
            if (t) {
                json_object_set_new(item, "truncated", json_true());
                any_trunc = true;
            }
        } else {
            omitted++;
        }
        json_decref(item);
    }
    json_decref(hits);
    if (count == 0 && omitted > 0) {
        json_decref(out);
        *value = fail("memory-budget-too-small",
                      "the retrieval token budget is too small for even one result");
        return 0;
    }
    json_object_set_new(out, "count", json_integer(count));
    json_object_set_new(out, "omitted", json_integer(omitted));
    json_object_set_new(out, "truncated", json_boolean(any_trunc || omitted > 0));
    if (omitted > 0)
        json_object_set_new(out, "hint",
                            json_string("more results exist: narrow the query or lower topK"));
    pretty_tokens(out);
    *value = out;
    return 0;
}

static bool strings_or_absent(const json_t *args, const char *k)
{
    json_t *v = json_object_get(args, k);
    if (!v)
        return true;
    if (!json_is_array(v))
        return false;
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x)
        if (!json_is_string(x))
            return false;
    return true;
}

static int tool_memory_write(cdsh_tavern_service *svc, tctx *c, const json_t *args, json_t **value,
                             char **notice, cdsh_error *err)
{
    const char *body = s_get(args, "body");
    if (!body || !*body || !strings_or_absent(args, "tags") || !strings_or_absent(args, "keys")) {
        *value = fail("invalid-args", "body is required; tags and keys are string arrays");
        return 0;
    }
    json_t *settings = cdsh__tavern_settings_dup(svc);
    cdsh_tavern_memory_cfg cfg = cdsh__tavern_memory_cfg(settings);
    json_decref(settings);
    int rc = cdsh_tavern_memory_write(c->story, c->floor, body, json_object_get(args, "tags"),
                                      json_object_get(args, "keys"), &cfg, true, value, err);
    if (rc < 0)
        return rc;
    if (json_is_true(json_object_get(*value, "ok"))) {
        if (notice)
            *notice = notice_dup("A memory was saved.");
        cdsh__tavern_log(
            svc, "memory-write",
            json_pack("{s:s,s:O}", "session", c->session, "id", json_object_get(*value, "id")));
    }
    return 0;
}

static int tool_memory_update(cdsh_tavern_service *svc, tctx *c, const json_t *args, json_t **value,
                              char **notice, cdsh_error *err)
{
    const char *id = s_get(args, "id");
    json_t *body = json_object_get(args, "body");
    if (!id || (body && !json_is_string(body)) || !strings_or_absent(args, "tags") ||
        !strings_or_absent(args, "keys")) {
        *value = fail("invalid-args", "id is required; body is a string; tags and keys arrays");
        return 0;
    }
    cdsh_error e = {0};
    int rc = cdsh_tavern_memory_update(c->story, c->floor, id, json_string_value(body),
                                       json_object_get(args, "tags"), json_object_get(args, "keys"),
                                       true, value, &e);
    if (rc == CDSH_ENOTFOUND) {
        *value = fail("not-found", e.message);
        return 0;
    }
    if (rc < 0) {
        if (err)
            *err = e;
        return rc;
    }
    int count = 0, tokens = 0;
    json_t *settings = cdsh__tavern_settings_dup(svc);
    cdsh_tavern_memory_cfg cfg = cdsh__tavern_memory_cfg(settings);
    json_decref(settings);
    if (cdsh_tavern_memory_stats(c->story, &count, &tokens, NULL) == 0 && tokens > cfg.max_tokens)
        json_object_set_new(*value, "compressScheduled", json_true());
    if (notice)
        *notice = notice_dup("A memory was updated.");
    (void)svc;
    return 0;
}

static int tool_worldstate_update(cdsh_tavern_service *svc, tctx *c, const json_t *args,
                                  json_t **value, char **notice, cdsh_error *err)
{
    const char *type = s_get(args, "type"), *content = s_get(args, "content");
    const char *ref = s_get(args, "ref"), *exp = s_get(args, "expiresAt");
    json_t *e_at = json_object_get(args, "expiresAt");
    if (!type || !content || (e_at && !json_is_string(e_at)) || !strings_or_absent(args, "keys")) {
        *value = fail("invalid-args", "type and content are required");
        return 0;
    }
    char range[32];
    snprintf(range, sizeof range, "t%lld", (long long)c->turn);
    cdsh_error e = {0};
    json_t *d = NULL;
    int rc = cdsh_tavern_world_add(c->story, c->floor, type, content, ref,
                                   json_object_get(args, "keys"), 100, exp, range, &d, &e);
    if (rc == CDSH_EINVAL) {
        *value = fail("invalid-args", e.message);
        return 0;
    }
    if (rc < 0) {
        if (err)
            *err = e;
        return rc;
    }
    *value = json_pack("{s:b,s:O}", "ok", 1, "id", json_object_get(d, "id"));
    json_decref(d);
    if (notice)
        *notice = notice_dup("The world state was updated.");
    cdsh__tavern_log(svc, "worldstate-update",
                     json_pack("{s:s,s:s}", "session", c->session, "type", type));
    return 0;
}

/* ---- lore ---------------------------------------------------------------------- */

static void add_book(json_t *all, const json_t *book, const char *source, const char *ref)
{
    json_t *entries = json_object_get(book, "entries");
    const char *k;
    json_t *e;
    json_object_foreach(entries, k, e) {
        char *full = NULL;
        if (asprintf(&full, "%s:%s:%s", source, ref, k) < 0)
            continue;
        json_t *keys = json_object_get(e, "key");
        json_array_append_new(
            all, json_pack("{s:s,s:s,s:s,s:s,s:O,s:O,s:s,s:s,s:b,s:b,s:O}", "uid", full, "shortUid",
                           k, "source", source, "sourceRef", ref, "key", keys ? keys : json_array(),
                           "keysecondary",
                           json_object_get(e, "keysecondary") ? json_object_get(e, "keysecondary")
                                                              : json_array(),
                           "comment", s_get(e, "comment") ? s_get(e, "comment") : "", "content",
                           s_get(e, "content") ? s_get(e, "content") : "", "enabled",
                           !json_is_true(json_object_get(e, "disable")), "constant",
                           json_is_true(json_object_get(e, "constant")), "order",
                           json_object_get(e, "order") ? json_object_get(e, "order")
                                                       : json_integer(100)));
        free(full);
    }
}

/* Every entry the binding can see: global + character + chat + delta. */
static json_t *bound_entries(cdsh_tavern_service *svc, tctx *c, const char *only)
{
    json_t *all = json_array();
    json_t *books = json_object_get(c->binding, "lorebookIds");
    size_t i;
    json_t *b;
    if (!only || strcmp(only, "global") == 0) {
        json_array_foreach(books, i, b) {
            json_t *book = NULL;
            if (json_is_string(b) &&
                cdsh_tavern_store_asset_load(svc->store, CDSH_TAVERN_LOREBOOK, json_string_value(b),
                                             &book, NULL) == 0)
                add_book(all, book, "global", json_string_value(b));
            json_decref(book);
        }
    }
    if (!only || strcmp(only, "character") == 0) {
        char *id = NULL;
        json_t *book = NULL;
        if (asprintf(&id, "card:%s", c->card) > 0 &&
            cdsh_tavern_store_asset_load(svc->store, CDSH_TAVERN_LOREBOOK, id, &book, NULL) == 0)
            add_book(all, book, "character", c->card);
        json_decref(book);
        free(id);
    }
    if (!only || strcmp(only, "chat") == 0) {
        json_t *book = NULL;
        if (cdsh_tavern_story_load(c->story, CDSH_TAVERN_KIND_DOC, "assets/chat-lorebook.json",
                                   &book, NULL) == 0)
            add_book(all, book, "chat", c->story_id);
        json_decref(book);
    }
    if (!only || strcmp(only, "delta") == 0) {
        json_t *d = NULL;
        if (cdsh_tavern_world_entries(c->story, 0, &d, NULL) == 0) {
            json_array_foreach(d, i, b) {
                const char *uid = s_get(b, "uid");
                json_array_append_new(
                    all,
                    json_pack("{s:s,s:s,s:s,s:s,s:O,s:[],s:s,s:O,s:b,s:O,s:O}", "uid", uid,
                              "shortUid", strrchr(uid, ':') + 1, "source", "delta", "sourceRef",
                              "world-delta", "key", json_object_get(b, "key"), "keysecondary",
                              "comment", "", "content", json_object_get(b, "content"), "enabled", 1,
                              "constant", json_object_get(b, "constant"), "order",
                              json_object_get(b, "order")));
            }
        }
        json_decref(d);
    }
    return all;
}

static bool ci_contains(const char *hay, const char *needle)
{
    if (!hay || !needle || !*needle)
        return false;
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++)
        if (strncasecmp(p, needle, n) == 0)
            return true;
    return false;
}

static int lore_score(const json_t *e, const char *q)
{
    const char *uid = s_get(e, "uid"), *short_uid = s_get(e, "shortUid");
    if (strcmp(uid, q) == 0 || strcmp(short_uid, q) == 0)
        return 100;
    if (strcasecmp(uid, q) == 0)
        return 95;
    int best = 0;
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(e, "key"), i, k) {
        if (json_is_string(k) && strcasecmp(json_string_value(k), q) == 0)
            best = best > 80 ? best : 80;
        else if (ci_contains(json_string_value(k), q))
            best = best > 60 ? best : 60;
    }
    json_array_foreach(json_object_get(e, "keysecondary"), i, k) {
        if (ci_contains(json_string_value(k), q))
            best = best > 50 ? best : 50;
    }
    if (!best && ci_contains(s_get(e, "comment"), q))
        best = 40;
    if (!best && ci_contains(s_get(e, "content"), q))
        best = 20;
    if (!best) {
        char *ks = json_dumps(json_object_get(e, "key"), JSON_COMPACT);
        if (ci_contains(ks, q))
            best = 10;
        free(ks);
    }
    return best;
}

static json_t *content_item(const json_t *e)
{
    return json_pack("{s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:b}", "uid", json_object_get(e, "uid"),
                     "source", json_object_get(e, "source"), "sourceRef",
                     json_object_get(e, "sourceRef"), "key", json_object_get(e, "key"), "comment",
                     json_object_get(e, "comment"), "enabled", json_object_get(e, "enabled"),
                     "constant", json_object_get(e, "constant"), "content",
                     json_object_get(e, "content"), "truncated", 0);
}

/* Long by design: the lookup by uid (with a trimmed retry) and the ranked
 * query share the budget, shaping and logging code below; a split would
 * repeat it. */
static int tool_lore_read(cdsh_tavern_service *svc, tctx *c, const json_t *args, json_t **value)
{
    const char *uid = s_get(args, "uid"), *query = s_get(args, "query");
    const char *source = s_get(args, "source");
    if (source && strcmp(source, "persona") == 0)
        source = "global";
    if (source && strcmp(source, "global") != 0 && strcmp(source, "character") != 0 &&
        strcmp(source, "chat") != 0 && strcmp(source, "delta") != 0) {
        *value = fail("invalid-args", "source must be global, character, chat, delta or persona");
        return 0;
    }
    json_t *tk = json_object_get(args, "topK");
    int top = json_is_integer(tk) && json_integer_value(tk) > 0 ? (int)json_integer_value(tk)
                                                                : LORE_TOP_DEFAULT;
    if (top > 20)
        top = 20;
    json_t *all = bound_entries(svc, c, source);
    json_t *out = json_pack("{s:b,s:s,s:[],s:b}", "ok", 1, "mode",
                            uid     ? "uid"
                            : query ? "query"
                                    : "catalog",
                            "entries", "truncated", 0);
    size_t i;
    json_t *e;
    if (!uid && !query) {
        size_t n = 0;
        json_array_foreach(all, i, e) {
            if (n >= CATALOG_MAX)
                break;
            bool t1, t2;
            char *comment = clip_dup(s_get(e, "comment"), 80, &t1);
            char *preview = clip_dup(s_get(e, "content"), 80, &t2);
            json_t *item = json_pack(
                "{s:O,s:O,s:O,s:s,s:O,s:O,s:O,s:i,s:s}", "uid", json_object_get(e, "uid"), "source",
                json_object_get(e, "source"), "sourceRef", json_object_get(e, "sourceRef"),
                "comment", comment, "keys", json_object_get(e, "key"), "enabled",
                json_object_get(e, "enabled"), "constant", json_object_get(e, "constant"), "tokens",
                cdsh__tavern_est_tokens(s_get(e, "content")), "preview", preview);
            free(comment);
            free(preview);
            bool t;
            if (!fit_item(out, "entries", item, "preview", LORE_BUDGET, &t)) {
                json_decref(item);
                json_object_set_new(out, "truncated", json_true());
                break;
            }
            json_decref(item);
            n++;
        }
        json_object_set_new(out, "total", json_integer((json_int_t)json_array_size(all)));
    } else {
        json_t *picked = json_array();
        if (uid) {
            char *trimmed = strdup(uid);
            for (int pass = 0; pass < 2 && json_array_size(picked) == 0; pass++) {
                if (pass == 1) { /* trimmed retry */
                    char *s = trimmed;
                    while (isspace((unsigned char)*s))
                        s++;
                    memmove(trimmed, s, strlen(s) + 1);
                    size_t l = strlen(trimmed);
                    while (l && isspace((unsigned char)trimmed[l - 1]))
                        trimmed[--l] = '\0';
                }
                const char *want = trimmed;
                for (int level = 0; level < 3 && json_array_size(picked) == 0; level++) {
                    json_array_foreach(all, i, e) {
                        const char *full = s_get(e, "uid");
                        size_t fl = strlen(full), wl = strlen(want);
                        bool hit = level == 0   ? strcmp(full, want) == 0
                                   : level == 1 ? strcmp(s_get(e, "shortUid"), want) == 0
                                                : (fl > wl + 1 && full[fl - wl - 1] == ':' &&
                                                   strcmp(full + fl - wl, want) == 0);
                        if (hit)
                            json_array_append(picked, e);
                    }
                }
            }
            free(trimmed);
        } else {
            /* rank; ties by order desc */
            json_t *scored = json_array();
            json_array_foreach(all, i, e) {
                int s = lore_score(e, query);
                if (s > 0) {
                    json_t *x = json_deep_copy(e);
                    json_object_set_new(x, "_score", json_integer(s));
                    json_array_append_new(scored, x);
                }
            }
            while ((int)json_array_size(picked) < top && json_array_size(scored) > 0) {
                size_t bi = 0;
                json_array_foreach(scored, i, e) {
                    json_t *b = json_array_get(scored, bi);
                    json_int_t se = json_integer_value(json_object_get(e, "_score"));
                    json_int_t sb = json_integer_value(json_object_get(b, "_score"));
                    if (se > sb || (se == sb && json_number_value(json_object_get(e, "order")) >
                                                    json_number_value(json_object_get(b, "order"))))
                        bi = i;
                }
                json_array_append(picked, json_array_get(scored, bi));
                json_array_remove(scored, bi);
            }
            json_decref(scored);
        }
        json_array_foreach(picked, i, e) {
            json_t *item = content_item(e);
            bool t;
            if (!fit_item(out, "entries", item, "content", LORE_BUDGET, &t)) {
                json_decref(item);
                if (i == 0) {
                    json_decref(picked);
                    json_decref(all);
                    json_decref(out);
                    *value = fail("lore-output-too-large",
                                  "even the entry locators do not fit the lore budget");
                    return 0;
                }
                json_object_set_new(out, "truncated", json_true());
                break;
            }
            if (t) {
                json_object_set_new(item, "truncated", json_true());
                json_object_set_new(out, "truncated", json_true());
            }
            json_decref(item);
        }
        if (json_array_size(picked) == 0 && uid) {
            json_decref(picked);
            json_decref(all);
            json_decref(out);
            *value = fail("not-found", "no lore entry with that uid or key");
            return 0;
        }
        json_decref(picked);
    }
    pretty_tokens(out);
    json_decref(all);
    cdsh__tavern_log(
        svc, "lore-read",
        json_pack("{s:s,s:s?,s:s?}", "session", c->session, "uid", uid, "query", query));
    *value = out;
    return 0;
}

/* ---- assets ---------------------------------------------------------------------- */

static bool has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcasecmp(s + a - b, suf) == 0;
}

char *cdsh_tavern_readable_path_dup(const char *path, cdsh_error *err)
{
    if (!path)
        goto refuse;
    const char *s = path;
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    char *p = strndup(s, n);
    if (!p)
        return NULL;
    for (char *c = p; *c; c++)
        if (*c == '\\')
            *c = '/';
    cdsh_strbuf out;
    cdsh_strbuf_init(&out);
    bool bad = p[0] == '/' || (isalpha((unsigned char)p[0]) && p[1] == ':') || !*p;
    char *save = NULL;
    for (char *seg = strtok_r(p, "/", &save); seg && !bad; seg = strtok_r(NULL, "/", &save)) {
        if (strcmp(seg, ".") == 0)
            continue;
        if (strcmp(seg, "..") == 0 || strchr(seg, ':'))
            bad = true;
        if (out.len)
            cdsh_strbuf_append_char(&out, '/');
        cdsh_strbuf_append_str(&out, seg);
    }
    /* empty segments ("a//b") are refused: strtok hides them, so check the input */
    if (strstr(path, "//"))
        bad = true;
    free(p);
    char *norm = cdsh_strbuf_take(&out, NULL);
    if (bad || !norm)
        goto refuse_free;
    const char *denied[] = {".archive.json",
                            "story.json",
                            "state/template.json",
                            "state/helper.json",
                            "state/helper-mvu-abandon.json",
                            CDSH_TAVERN_PENDING_DOC};
    for (size_t i = 0; i < sizeof denied / sizeof *denied; i++)
        if (strcmp(norm, denied[i]) == 0 || has_suffix(norm, "/.archive.json"))
            goto refuse_free;
    if (strncmp(norm, "stories", 7) == 0 || strncmp(norm, "state/wal", 9) == 0 ||
        has_suffix(norm, "/story.json"))
        goto refuse_free;
    if (!has_suffix(norm, ".md") && !has_suffix(norm, ".json") && !has_suffix(norm, ".jsonl") &&
        !has_suffix(norm, ".txt"))
        goto refuse_free;
    return norm;
refuse_free:
    free(norm);
refuse:
    cdsh_error_set(err, CDSH_EPERM, "path-not-readable",
                   "path \"%s\" is not readable: only story and card text assets (.md .json "
                   ".jsonl .txt) outside state/wal and other stories",
                   path ? path : "");
    return NULL;
}

static char *memory_file_dup(const json_t *e)
{
    char *out = NULL;
    char *tags = json_dumps(json_object_get(e, "tags"), JSON_COMPACT);
    char *keys = json_dumps(json_object_get(e, "keys"), JSON_COMPACT);
    if (asprintf(&out,
                 "---\ncreated: %s\nupdated: %s\nsource_range: %s\ntags: %s\nkeys: %s\n---\n\n%s\n",
                 s_get(e, "created"), s_get(e, "updated"),
                 s_get(e, "sourceRange") ? s_get(e, "sourceRange") : "", tags, keys,
                 s_get(e, "body")) < 0)
        out = NULL;
    free(tags);
    free(keys);
    return out;
}

/* The text of a readable path: story virtual files first, then the card's. */
static char *read_path_dup(cdsh_tavern_service *svc, tctx *c, const char *norm)
{
    json_t *v = NULL;
    char *text = NULL;
    if (strcmp(norm, "journal.md") == 0 || strcmp(norm, "assets/chat-lorebook.json") == 0) {
        if (cdsh_tavern_story_load(c->story, CDSH_TAVERN_KIND_DOC, norm, &v, NULL) == 0)
            text = json_is_string(v) ? strdup(json_string_value(v)) : json_dumps(v, JSON_INDENT(2));
        json_decref(v);
        return text;
    }
    if (strcmp(norm, "state/world-delta.jsonl") == 0) {
        cdsh_strbuf b;
        cdsh_strbuf_init(&b);
        if (cdsh_tavern_world_list(c->story, true, 0, &v, NULL) == 0) {
            size_t i;
            json_t *d;
            json_array_foreach(v, i, d) {
                char *line = json_dumps(d, JSON_COMPACT);
                cdsh_strbuf_append_str(&b, line);
                cdsh_strbuf_append_char(&b, '\n');
                free(line);
            }
        }
        json_decref(v);
        text = cdsh_strbuf_take(&b, NULL);
        return text ? text : strdup("");
    }
    if (strncmp(norm, "memory/", 7) == 0 && has_suffix(norm, ".md") && !strchr(norm + 7, '/')) {
        char *id = strndup(norm + 7, strlen(norm) - 10);
        if (cdsh_tavern_story_load(c->story, CDSH_TAVERN_KIND_MEMORY, id, &v, NULL) == 0 &&
            !json_is_true(json_object_get(v, "archived")))
            text = memory_file_dup(v);
        json_decref(v);
        free(id);
        return text;
    }
    if (strncmp(norm, "memory/", 7) == 0 || strncmp(norm, "state/", 6) == 0)
        return NULL; /* story-scoped: never fall back to the card's copy */
    char *rel = NULL;
    if (asprintf(&rel, "characters/%s/%s", c->card, norm) < 0)
        return NULL;
    if (cdsh_tavern_store_load(svc->store, rel, &v, NULL, NULL) == 0)
        text = json_dumps(v, JSON_INDENT(2));
    json_decref(v);
    free(rel);
    return text;
}

static json_t *readable_files(cdsh_tavern_service *svc, tctx *c)
{
    json_t *files = json_array();
    const char *story_files[] = {"journal.md", "assets/chat-lorebook.json",
                                 "state/world-delta.jsonl"};
    for (size_t i = 0; i < 3; i++)
        json_array_append_new(files, json_string(story_files[i]));
    json_t *mem = NULL;
    if (cdsh_tavern_memory_list(c->story, false, &mem, NULL) == 0) {
        size_t i;
        json_t *e;
        json_array_foreach(mem, i, e) {
            char *p = NULL;
            if (asprintf(&p, "memory/%s.md", s_get(e, "id")) > 0)
                json_array_append_new(files, json_string(p));
            free(p);
        }
    }
    json_decref(mem);
    const char *card_files[] = {"card.json", "assets/character-book.json",
                                "assets/regex-scripts.json"};
    for (size_t i = 0; i < 3; i++) {
        char *rel = NULL;
        json_t *v = NULL;
        if (asprintf(&rel, "characters/%s/%s", c->card, card_files[i]) > 0 &&
            cdsh_tavern_store_load(svc->store, rel, &v, NULL, NULL) == 0)
            json_array_append_new(files, json_string(card_files[i]));
        json_decref(v);
        free(rel);
    }
    return files;
}

static json_t *preset_catalog(cdsh_tavern_service *svc, tctx *c)
{
    json_t *preset = NULL, *cat = json_array();
    const char *pid = s_get(c->binding, "presetId");
    if (!pid ||
        cdsh_tavern_store_asset_load(svc->store, CDSH_TAVERN_PRESET, pid, &preset, NULL) < 0)
        return cat;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(preset, "prompts"), i, p) {
        json_array_append_new(
            cat,
            json_pack("{s:O,s:O,s:b,s:O,s:b}", "identifier", json_object_get(p, "identifier"),
                      "entryName",
                      json_object_get(p, "name") ? json_object_get(p, "name") : json_string(""),
                      "enabled", !json_is_false(json_object_get(p, "enabled")), "role",
                      json_object_get(p, "role"), "marker",
                      json_is_true(json_object_get(p, "marker"))));
    }
    json_decref(preset);
    return cat;
}

static int tool_asset_list(cdsh_tavern_service *svc, tctx *c, json_t **value)
{
    json_t *files = readable_files(svc, c);
    int count = 0, tokens = 0;
    cdsh_tavern_memory_stats(c->story, &count, &tokens, NULL);
    json_t *out = json_pack("{s:b,s:[],s:{s:i,s:i},s:[],s:I,s:b,s:i,s:o,s:b,s:s}", "ok", 1, "index",
                            "memory", "count", count, "tokens", tokens, "files", "fileCount",
                            (json_int_t)json_array_size(files), "filesTruncated", 0, "filesOmitted",
                            0, "preset", preset_catalog(svc, c), "truncated", 0, "hint",
                            "read a file with tavern_asset_read {path}");
    size_t i;
    json_t *f;
    int omitted = 0;
    json_t *part = json_pack("{s:[]}", "files");
    json_array_foreach(files, i, f) {
        if (i >= FILES_MAX) {
            omitted++;
            continue;
        }
        bool t;
        json_t *item = json_pack("{s:O}", "path", f);
        if (!fit_item(part, "files", item, "path", LIST_PART_BUDGET, &t) || t) {
            if (t)
                json_array_remove(json_object_get(part, "files"),
                                  json_array_size(json_object_get(part, "files")) - 1);
            omitted++;
        } else {
            json_array_append(json_object_get(out, "files"), f);
        }
        json_decref(item);
    }
    json_decref(part);
    /* index: path + first line summary (≤ 60 chars) */
    json_t *ipart = json_pack("{s:[]}", "index");
    json_array_foreach(files, i, f) {
        char *text = read_path_dup(svc, c, json_string_value(f));
        const char *line = text ? text : "";
        if (strncmp(line, "---\n", 4) == 0) { /* skip front matter */
            const char *end = strstr(line + 4, "\n---\n");
            line = end ? end + 5 : line;
        }
        while (*line == '\n')
            line++;
        size_t l = strcspn(line, "\n");
        char *first = strndup(line, l);
        bool c2;
        char *sum = clip_dup(first, 60, &c2);
        json_t *item = json_pack("{s:O,s:s,s:i}", "path", f, "summary", sum, "tokens",
                                 cdsh__tavern_est_tokens(text));
        bool t;
        if (fit_item(ipart, "index", item, "summary", LIST_PART_BUDGET, &t))
            json_array_append(json_object_get(out, "index"), item);
        json_decref(item);
        free(first);
        free(sum);
        free(text);
    }
    json_decref(ipart);
    json_object_set_new(out, "filesOmitted", json_integer(omitted));
    json_object_set_new(out, "filesTruncated", json_boolean(omitted > 0));
    json_object_set_new(out, "filesTokensUsed", json_integer(0));
    int used = pretty_tokens(out);
    json_object_set_new(out, "truncated", json_boolean(omitted > 0 || used > ASSET_BUDGET));
    pretty_tokens(out);
    json_decref(files);
    *value = out;
    return 0;
}

static int tool_asset_read(cdsh_tavern_service *svc, tctx *c, const json_t *args, json_t **value)
{
    const char *path = s_get(args, "path");
    json_t *preset = json_object_get(args, "preset");
    json_t *pident = json_object_get(args, "presetIdentifier");
    if (preset && pident) {
        *value = fail("invalid-args", "preset and presetIdentifier are mutually exclusive");
        return 0;
    }
    if (!path && !preset && !pident) {
        *value = fail("invalid-args", "give path, preset or presetIdentifier");
        return 0;
    }
    int parts = (path ? 1 : 0) + (preset || pident ? 1 : 0);
    int share = ASSET_BUDGET / parts;
    json_t *out = json_pack("{s:b,s:[]}", "ok", 1, "items");
    if (path) {
        cdsh_error e = {0};
        char *norm = cdsh_tavern_readable_path_dup(path, &e);
        if (!norm) {
            json_decref(out);
            *value = fail("path-not-readable", e.message);
            return 0;
        }
        char *text = read_path_dup(svc, c, norm);
        if (!text) {
            free(norm);
            json_decref(out);
            *value = fail("not-found", "no such readable file");
            return 0;
        }
        json_t *item = json_pack("{s:s,s:s,s:s,s:b}", "kind", "file", "path", norm, "content", text,
                                 "truncated", 0);
        bool t;
        json_t *tmp = json_pack("{s:[]}", "items");
        if (fit_item(tmp, "items", item, "content", share, &t)) {
            json_object_set_new(item, "truncated", json_boolean(t));
            json_array_append(json_object_get(out, "items"), item);
        }
        json_decref(tmp);
        json_decref(item);
        free(text);
        free(norm);
    }
    if (preset || pident) {
        json_t *cat = preset_catalog(svc, c);
        const char *want = json_string_value(pident ? pident : preset);
        char *trim = want ? strdup(want) : strdup("");
        if (!pident) { /* legacy lookup is trimmed; presetIdentifier keeps whitespace */
            char *s = trim;
            while (isspace((unsigned char)*s))
                s++;
            memmove(trim, s, strlen(s) + 1);
            size_t l = strlen(trim);
            while (l && isspace((unsigned char)trim[l - 1]))
                trim[--l] = '\0';
        }
        bool catalog = !pident && (!*trim || strcmp(trim, "list") == 0 ||
                                   strcmp(trim, "catalog") == 0 || strcmp(trim, "*") == 0);
        if (catalog) {
            json_array_append_new(json_object_get(out, "items"),
                                  json_pack("{s:s,s:O}", "kind", "preset-catalog", "entries", cat));
        } else {
            json_t *preset_v = NULL;
            const char *pid = s_get(c->binding, "presetId");
            bool found = false;
            if (pid && cdsh_tavern_store_asset_load(svc->store, CDSH_TAVERN_PRESET, pid, &preset_v,
                                                    NULL) == 0) {
                size_t i;
                json_t *p;
                json_array_foreach(json_object_get(preset_v, "prompts"), i, p) {
                    if (!s_get(p, "identifier") || strcmp(s_get(p, "identifier"), trim) != 0)
                        continue;
                    json_t *item = json_pack(
                        "{s:s,s:O,s:O,s:b,s:O,s:b,s:O,s:O}", "kind", "preset", "identifier",
                        json_object_get(p, "identifier"), "entryName",
                        json_object_get(p, "name") ? json_object_get(p, "name") : json_string(""),
                        "enabled", !json_is_false(json_object_get(p, "enabled")), "role",
                        json_object_get(p, "role"), "marker",
                        json_is_true(json_object_get(p, "marker")), "markerId",
                        json_object_get(p, "identifier"), "content",
                        json_object_get(p, "content") ? json_object_get(p, "content")
                                                      : json_string(""));
                    json_t *tmp = json_pack("{s:[]}", "items");
                    bool t;
                    if (fit_item(tmp, "items", item, "content", share, &t))
                        json_array_append(json_object_get(out, "items"), item);
                    json_decref(tmp);
                    json_decref(item);
                    found = true;
                    break;
                }
            }
            json_decref(preset_v);
            if (!found && !path) {
                json_decref(cat);
                free(trim);
                json_decref(out);
                *value = fail("not-found", "no preset entry with that identifier");
                return 0;
            }
        }
        json_decref(cat);
        free(trim);
    }
    pretty_tokens(out);
    *value = out;
    return 0;
}

/* ---- the rows' handlers (methods.c) and the turn they run in ------------------------ */

/* call->frame of a tool handler: the resolved turn and the notice slot. */
typedef struct tool_frame {
    tctx c;
    char **notice;
} tool_frame;

CDSH__TAVERN_OP(cdsh__tavern_op_memory_search)
{
    tool_frame *f = call->frame;
    return tool_memory_search(ud, &f->c, call->args, value, err);
}

CDSH__TAVERN_OP(cdsh__tavern_op_memory_write)
{
    tool_frame *f = call->frame;
    return tool_memory_write(ud, &f->c, call->args, value, f->notice, err);
}

CDSH__TAVERN_OP(cdsh__tavern_op_memory_update)
{
    tool_frame *f = call->frame;
    return tool_memory_update(ud, &f->c, call->args, value, f->notice, err);
}

CDSH__TAVERN_OP(cdsh__tavern_op_lore_read)
{
    (void)err;
    tool_frame *f = call->frame;
    return tool_lore_read(ud, &f->c, call->args, value);
}

CDSH__TAVERN_OP(cdsh__tavern_op_worldstate_update)
{
    tool_frame *f = call->frame;
    return tool_worldstate_update(ud, &f->c, call->args, value, f->notice, err);
}

CDSH__TAVERN_OP(cdsh__tavern_op_asset_list)
{
    (void)err;
    tool_frame *f = call->frame;
    return tool_asset_list(ud, &f->c, value);
}

CDSH__TAVERN_OP(cdsh__tavern_op_asset_read)
{
    (void)err;
    tool_frame *f = call->frame;
    return tool_asset_read(ud, &f->c, call->args, value);
}

int cdsh__tavern_tool_run(cdsh_tavern_service *svc, const cdsh_op_call *call, json_t **value,
                          char **notice, cdsh_error *err)
{
    *value = NULL;
    if (notice)
        *notice = NULL;
    tool_frame f = {.notice = notice};
    cdsh_op_call framed = *call;
    framed.frame = &f;
    bool write = !(call->op->flags & CDSH_OP_READ);
    int rc = resolve(svc, call->agent, write, &f.c, value, err);
    if (rc == 0)
        rc = call->op->handler(svc, &framed, value, err);
    if (rc > 0)
        rc = 0;
    if (rc < 0 && !*value && strcmp(err->code, "FLOOR_NOT_OPEN") == 0) {
        /* the turn ended between the check and the write: nothing was written */
        *value = fail("floor-not-open", "the turn's floor closed; nothing was written");
        rc = 0;
    }
    tctx_free(&f.c);
    return rc;
}

int cdsh_tavern_service_tool(cdsh_tavern_service *svc, const cdsh_scope *scope, const char *name,
                             const json_t *args, json_t **value, char **notice, cdsh_error *err)
{
    if (!svc || !name || !value)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "tool: missing argument");
    *value = NULL;
    if (notice)
        *notice = NULL;
    const char *prefix = cdsh_ops_table_get(svc->ops)->tool_prefix;
    size_t plen = strlen(prefix);
    const cdsh_op *op =
        strncmp(name, prefix, plen) == 0 ? cdsh_ops_find(svc->ops, name + plen) : NULL;
    if (!op || !(op->surfaces & CDSH_OP_TOOL))
        return cdsh_error_set(err, CDSH_ENOTFOUND, "NOT_FOUND", "no tavern tool %s", name);
    if (!args)
        args = json_object();
    else
        json_incref((json_t *)args);
    cdsh_error local = {0};
    if (!err)
        err = &local;
    cdsh_op_call call = {.op = op, .surface = CDSH_OP_TOOL, .args = args, .agent = scope};
    int rc = cdsh__tavern_tool_run(svc, &call, value, notice, err);
    json_decref((json_t *)args);
    return rc;
}
