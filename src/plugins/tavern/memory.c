/* memory.c — memory entries of a story: writes through story_put (so floors
 * log them), FTS5 BM25 search with decay and summary reachability, IDF
 * dedupe, and summaries that archive their sources. It never calls a model:
 * the caller runs the helper and hands the reply to compress_commit. */
#include "plugins/tavern/memory.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/random.h"
#include "base/strbuf.h"

#define SEARCH_MAX_TOP 20
#define REACH_CAP 10000
#define SUMMARY_TEXT_MAX 100000

cdsh_tavern_memory_cfg cdsh_tavern_memory_cfg_default(void)
{
    return (cdsh_tavern_memory_cfg){200, 20000, 5, 1200, 30.0, 0.75, 20};
}

/* ---- tokens ------------------------------------------------------------- */

static uint32_t utf8_next(const unsigned char **p)
{
    const unsigned char *s = *p;
    uint32_t c = s[0];
    int n = 1;
    if (c >= 0xF0 && s[1] && s[2] && s[3]) {
        c = ((c & 7u) << 18) | ((s[1] & 63u) << 12) | ((s[2] & 63u) << 6) | (s[3] & 63u);
        n = 4;
    } else if (c >= 0xE0 && s[1] && s[2]) {
        c = ((c & 15u) << 12) | ((s[1] & 63u) << 6) | (s[2] & 63u);
        n = 3;
    } else if (c >= 0xC0 && s[1]) {
        c = ((c & 31u) << 6) | (s[1] & 63u);
        n = 2;
    }
    *p = s + n;
    return c;
}

static bool is_cjk(uint32_t c)
{
    return (c >= 0x3040 && c <= 0x30FF) || (c >= 0x3400 && c <= 0x9FFF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xAC00 && c <= 0xD7AF) ||
           (c >= 0x20000 && c <= 0x2FFFF);
}

/* Fullwidth ASCII and general punctuation count as separators. */
static bool is_sep(uint32_t c)
{
    if (c < 0x80)
        return !isalnum((int)c);
    return (c >= 0x2000 && c <= 0x206F) || (c >= 0x3000 && c <= 0x303F) ||
           (c >= 0xFF00 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20) ||
           (c >= 0xFF3B && c <= 0xFF40) || (c >= 0xFF5B && c <= 0xFF65);
}

int cdsh__tavern_est_tokens(const char *text)
{
    if (!text)
        return 0;
    size_t ascii = 0, other = 0;
    const unsigned char *p = (const unsigned char *)text;
    while (*p) {
        if (*p < 0x80) {
            ascii++;
            p++;
        } else {
            utf8_next(&p);
            other++;
        }
    }
    return (int)((ascii + 3) / 4 + other);
}

char *cdsh__tavern_memory_tokens_dup(const char *text)
{
    cdsh_strbuf b;
    cdsh_strbuf_init(&b);
    const unsigned char *p = (const unsigned char *)(text ? text : "");
    const unsigned char *prev_cjk = NULL; /* start of the previous CJK char in a run */
    bool run_single = false;
    while (*p) {
        const unsigned char *start = p;
        uint32_t c = utf8_next(&p);
        if (is_cjk(c)) {
            if (prev_cjk) {
                cdsh_strbuf_append(&b, (const char *)prev_cjk, (size_t)(p - prev_cjk));
                cdsh_strbuf_append_str(&b, " ");
                run_single = false;
            } else {
                run_single = true;
            }
            prev_cjk = start;
            continue;
        }
        if (prev_cjk && run_single) {
            cdsh_strbuf_append(&b, (const char *)prev_cjk, (size_t)(start - prev_cjk));
            cdsh_strbuf_append_str(&b, " ");
        }
        prev_cjk = NULL;
        if (is_sep(c))
            continue;
        /* a word: ASCII alnum lowercased, other letters as they are */
        const unsigned char *q = start;
        while (*q) {
            const unsigned char *cs = q;
            uint32_t d = utf8_next(&q);
            if (is_sep(d) || is_cjk(d)) {
                q = cs;
                break;
            }
            if (d < 0x80) {
                char lc = (char)tolower((int)d);
                cdsh_strbuf_append(&b, &lc, 1);
            } else {
                cdsh_strbuf_append(&b, (const char *)cs, (size_t)(q - cs));
            }
        }
        cdsh_strbuf_append_str(&b, " ");
        p = q;
    }
    if (prev_cjk && run_single)
        cdsh_strbuf_append_str(&b, (const char *)prev_cjk);
    return cdsh_strbuf_take(&b, NULL);
}

/* ---- entry values ----------------------------------------------------- */

static const char *s_get(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static char *keys_text_dup(const json_t *keys)
{
    cdsh_strbuf b;
    cdsh_strbuf_init(&b);
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k) {
        cdsh_strbuf_append_str(&b, json_string_value(k) ? json_string_value(k) : "");
        cdsh_strbuf_append_str(&b, " ");
    }
    return cdsh_strbuf_take(&b, NULL);
}

int cdsh__tavern_memory_reindex(sqlite3 *db, const char *key, const char *canon, cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "DELETE FROM memory_fts WHERE id=?", -1, &st, NULL) != SQLITE_OK)
        return cdsh_error_set(err, CDSH_EIO, "DB_ERROR", "memory index: %s", sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    st = NULL;
    if (rc < 0)
        return cdsh_error_set(err, CDSH_EIO, "DB_ERROR", "memory index: %s", sqlite3_errmsg(db));
    if (!canon)
        return 0;
    json_t *v = json_loads(canon, 0, NULL);
    char *kt = keys_text_dup(json_object_get(v, "keys"));
    char *bt = cdsh__tavern_memory_tokens_dup(s_get(v, "body"));
    char *ktt = cdsh__tavern_memory_tokens_dup(kt);
    if (sqlite3_prepare_v2(db, "INSERT INTO memory_fts(id, body, keys) VALUES(?,?,?)", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, bt ? bt : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, ktt ? ktt : "", -1, SQLITE_STATIC);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    } else {
        rc = -1;
    }
    sqlite3_finalize(st);
    free(kt);
    free(bt);
    free(ktt);
    json_decref(v);
    if (rc < 0)
        return cdsh_error_set(err, CDSH_EIO, "DB_ERROR", "memory index: %s", sqlite3_errmsg(db));
    return 0;
}

static json_t *str_set_union(const json_t *a, const json_t *b)
{
    json_t *out = json_array();
    const json_t *srcs[] = {a, b};
    for (size_t s = 0; s < 2; s++) {
        size_t i;
        json_t *v;
        json_array_foreach(srcs[s], i, v) {
            if (!json_is_string(v))
                continue;
            bool dup = false;
            size_t j;
            json_t *w;
            json_array_foreach(out, j, w)
                dup = dup || json_equal(v, w);
            if (!dup)
                json_array_append(out, v);
        }
    }
    return out;
}

static void now_iso(char *out, size_t n)
{
    cdsh_clock_format_iso8601(cdsh_clock_wall_ms(), out, n);
}

static char *new_id_dup(void)
{
    char hex[7], *id = NULL;
    if (cdsh_random_hex(hex, sizeof hex, 3) < 0)
        return NULL;
    char b36[16];
    unsigned long long t = (unsigned long long)cdsh_clock_wall_ms();
    int n = 0;
    char tmp[16];
    do {
        tmp[n++] = "0123456789abcdefghijklmnopqrstuvwxyz"[t % 36];
        t /= 36;
    } while (t && n < 15);
    for (int i = 0; i < n; i++)
        b36[i] = tmp[n - 1 - i];
    b36[n] = '\0';
    if (asprintf(&id, "m-%s-%s", b36, hex) < 0)
        return NULL;
    return id;
}

bool cdsh_tavern_memory_pending(cdsh_tavern_story *story)
{
    json_t *v = NULL;
    if (cdsh_tavern_story_load(story, CDSH_TAVERN_KIND_DOC, CDSH_TAVERN_PENDING_DOC, &v, NULL) < 0)
        return false;
    bool p = json_is_true(json_object_get(v, "compress"));
    json_decref(v);
    return p;
}

static int set_pending(cdsh_tavern_story *story, bool on, cdsh_error *err)
{
    json_t *v = json_pack("{s:b}", "compress", on);
    int rc = cdsh_tavern_story_put(story, NULL, CDSH_TAVERN_KIND_DOC, CDSH_TAVERN_PENDING_DOC, v,
                                   NULL, err);
    json_decref(v);
    return rc;
}

/* ---- listing ------------------------------------------------------------ */

static int cmp_created(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int c = strcmp(s_get(x, "created") ? s_get(x, "created") : "",
                   s_get(y, "created") ? s_get(y, "created") : "");
    return c ? c : strcmp(s_get(x, "id"), s_get(y, "id"));
}

/* All entries as id → value (owned). */
static int all_entries(cdsh_tavern_story *story, json_t **out, cdsh_error *err)
{
    json_t *rows = NULL;
    int rc = cdsh_tavern_story_list(story, CDSH_TAVERN_KIND_MEMORY, &rows, err);
    if (rc < 0)
        return rc;
    json_t *map = json_object();
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        json_t *v = json_object_get(r, "value");
        if (json_is_object(v) && json_is_string(json_object_get(v, "body")))
            json_object_set(map, s_get(r, "key"), v);
    }
    json_decref(rows);
    *out = map;
    return 0;
}

int cdsh_tavern_memory_list(cdsh_tavern_story *story, bool archived, json_t **out, cdsh_error *err)
{
    json_t *map = NULL;
    int rc = all_entries(story, &map, err);
    if (rc < 0)
        return rc;
    size_t n = json_object_size(map), k = 0;
    json_t **v = calloc(n ? n : 1, sizeof *v);
    const char *id;
    json_t *e;
    json_object_foreach(map, id, e) {
        if (json_is_true(json_object_get(e, "archived")) != archived)
            continue;
        json_t *c = json_deep_copy(e);
        json_object_set_new(c, "id", json_string(id));
        v[k++] = c;
    }
    qsort(v, k, sizeof *v, cmp_created);
    json_t *arr = json_array();
    for (size_t i = 0; i < k; i++)
        json_array_append_new(arr, v[i]);
    free(v);
    json_decref(map);
    *out = arr;
    return 0;
}

int cdsh_tavern_memory_stats(cdsh_tavern_story *story, int *count, int *tokens, cdsh_error *err)
{
    json_t *list = NULL;
    int rc = cdsh_tavern_memory_list(story, false, &list, err);
    if (rc < 0)
        return rc;
    int c = 0, t = 0;
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        c++;
        t += cdsh__tavern_est_tokens(s_get(e, "body"));
    }
    json_decref(list);
    if (count)
        *count = c;
    if (tokens)
        *tokens = t;
    return 0;
}

/* ---- similarity (dedupe) ------------------------------------------------ */

static json_t *token_set(const char *text)
{
    char *t = cdsh__tavern_memory_tokens_dup(text);
    json_t *set = json_object();
    for (char *save = NULL, *tok = strtok_r(t, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
        json_object_set_new(set, tok, json_true());
    free(t);
    return set;
}

int cdsh_tavern_memory_similar(cdsh_tavern_story *story, const char *text, double threshold,
                               json_t **out, cdsh_error *err)
{
    cdsh_tavern_memory_attach();
    json_t *list = NULL;
    int rc = cdsh_tavern_memory_list(story, false, &list, err);
    if (rc < 0)
        return rc;
    size_t n = json_array_size(list);
    json_t **sets = calloc(n ? n : 1, sizeof *sets);
    json_t *df = json_object();
    json_t *q = token_set(text);
    for (size_t i = 0; i < n; i++) {
        sets[i] = token_set(s_get(json_array_get(list, i), "body"));
        const char *t;
        json_t *v;
        json_object_foreach(sets[i], t, v) {
            json_int_t c = json_integer_value(json_object_get(df, t));
            json_object_set_new(df, t, json_integer(c + 1));
        }
    }
    json_t *scored = json_array();
    for (size_t i = 0; i < n; i++) {
        const char *body = s_get(json_array_get(list, i), "body");
        double sim;
        if (strcmp(body, text) == 0) {
            sim = 1.0;
        } else {
            /* IDF among the other docs: this doc's own occurrence is not counted. */
            double N = (double)(n > 1 ? n - 1 : 1);
            double qw = 0, dw = 0, shared = 0;
            const char *t;
            json_t *v;
            json_object_foreach(q, t, v) {
                double d = (double)json_integer_value(json_object_get(df, t));
                if (json_object_get(sets[i], t))
                    d -= 1;
                double idf = log(1 + (N - d + 0.5) / (d + 0.5));
                qw += idf;
                if (json_object_get(sets[i], t))
                    shared += idf;
            }
            json_object_foreach(sets[i], t, v) {
                double d = (double)json_integer_value(json_object_get(df, t)) - 1;
                dw += log(1 + (N - d + 0.5) / (d + 0.5));
            }
            sim = (qw > 0 && dw > 0) ? fmin(shared / qw, shared / dw) : 0;
        }
        if (sim > 0 && sim >= threshold)
            json_array_append_new(scored, json_pack("{s:s,s:s,s:f}", "id",
                                                    s_get(json_array_get(list, i), "id"), "body",
                                                    body, "similarity", sim));
    }
    /* best three, ties by id */
    json_t *best = json_array();
    for (int k = 0; k < 3; k++) {
        size_t bi = (size_t)-1;
        size_t i;
        json_t *e;
        json_array_foreach(scored, i, e) {
            if (json_is_true(json_object_get(e, "taken")))
                continue;
            json_t *b = bi == (size_t)-1 ? NULL : json_array_get(scored, bi);
            double se = json_real_value(json_object_get(e, "similarity"));
            if (!b || se > json_real_value(json_object_get(b, "similarity")) ||
                (se == json_real_value(json_object_get(b, "similarity")) &&
                 strcmp(s_get(e, "id"), s_get(b, "id")) < 0))
                bi = i;
        }
        if (bi == (size_t)-1)
            break;
        json_t *pick = json_array_get(scored, bi);
        json_array_append_new(best, json_pack("{s:O,s:O,s:O}", "id", json_object_get(pick, "id"),
                                              "body", json_object_get(pick, "body"), "similarity",
                                              json_object_get(pick, "similarity")));
        json_object_set_new(pick, "taken", json_true());
    }
    for (size_t i = 0; i < n; i++)
        json_decref(sets[i]);
    free(sets);
    json_decref(df);
    json_decref(q);
    json_decref(scored);
    json_decref(list);
    *out = best;
    return 0;
}

/* ---- write / update / delete ------------------------------------------- */

static bool string_array(const json_t *a)
{
    if (!a)
        return true;
    if (!json_is_array(a))
        return false;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
        if (!json_is_string(v))
            return false;
    return true;
}

int cdsh_tavern_memory_write(cdsh_tavern_story *story, const char *floor, const char *body,
                             const json_t *tags, const json_t *keys,
                             const cdsh_tavern_memory_cfg *cfg, bool dedupe, json_t **result,
                             cdsh_error *err)
{
    cdsh_tavern_memory_attach();
    if (!story || !body || !result || !string_array(tags) || !string_array(keys))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "memory write needs a body and string arrays for tags and keys");
    cdsh_tavern_memory_cfg def = cdsh_tavern_memory_cfg_default();
    if (!cfg)
        cfg = &def;
    *result = NULL;
    size_t blen = strlen(body);
    while (blen && isspace((unsigned char)body[blen - 1]))
        blen--;
    if (blen == 0)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "memory body is empty");
    if (dedupe && cfg->dedup_similarity > 0) {
        json_t *sim = NULL;
        int rc = cdsh_tavern_memory_similar(story, body, cfg->dedup_similarity, &sim, err);
        if (rc < 0)
            return rc;
        json_t *top = json_array_get(sim, 0);
        if (top) {
            char preview[256];
            snprintf(preview, sizeof preview, "%s", s_get(top, "body"));
            *result = json_pack("{s:b,s:s,s:s,s:s,s:O,s:s}", "ok", 0, "status", "similar-found",
                                "similarId", s_get(top, "id"), "similarBody", preview, "similarity",
                                json_object_get(top, "similarity"), "hint",
                                "a similar memory exists: use tavern_memory_update with its id");
            json_decref(sim);
            return 0;
        }
        json_decref(sim);
    }
    int count = 0, tokens = 0;
    int rc = cdsh_tavern_memory_stats(story, &count, &tokens, err);
    if (rc < 0)
        return rc;
    char *id = new_id_dup();
    char ts[40];
    now_iso(ts, sizeof ts);
    json_t *v = json_pack("{s:s#,s:o,s:o,s:s,s:s,s:n,s:b}", "body", body, (int)blen, "tags",
                          str_set_union(tags, NULL), "keys", str_set_union(keys, NULL), "created",
                          ts, "updated", ts, "sourceRange", "archived", 0);
    if (!id || !v) {
        free(id);
        json_decref(v);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    rc = cdsh_tavern_story_put(story, floor, CDSH_TAVERN_KIND_MEMORY, id, v, "", err);
    bool over =
        count + 1 > cfg->max_entries || tokens + cdsh__tavern_est_tokens(body) > cfg->max_tokens;
    if (rc == 0 && over)
        set_pending(story, true, NULL);
    if (rc == 0)
        *result = json_pack("{s:b,s:s,s:b,s:b}", "ok", 1, "id", id, "overLength",
                            cdsh__tavern_est_tokens(body) > 0 &&
                                strlen(body) > CDSH_TAVERN_MEMORY_SOFT_LIMIT,
                            "compressScheduled", over);
    json_decref(v);
    free(id);
    return rc;
}

/* The entry (owned) or not-found. */
static int get_entry(cdsh_tavern_story *story, const char *id, json_t **cur, cdsh_error *err)
{
    int rc = cdsh_tavern_story_load(story, CDSH_TAVERN_KIND_MEMORY, id, cur, err);
    if (rc == CDSH_ENOTFOUND)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "not-found", "no memory entry \"%s\"", id);
    return rc;
}

int cdsh_tavern_memory_update(cdsh_tavern_story *story, const char *floor, const char *id,
                              const char *body, const json_t *tags, const json_t *keys, bool merge,
                              json_t **result, cdsh_error *err)
{
    cdsh_tavern_memory_attach();
    if (!story || !id || !result || !string_array(tags) || !string_array(keys))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "memory update needs an id and string arrays for tags and keys");
    json_t *cur = NULL;
    int rc = get_entry(story, id, &cur, err);
    if (rc < 0)
        return rc;
    char *expect = cdsh_tavern_story_canon_dup(cur);
    json_t *next = json_deep_copy(cur);
    if (body) {
        json_object_set_new(next, "body", json_string(body));
        if (!merge)
            json_object_set_new(next, "sourceRange", json_null());
    }
    if (tags)
        json_object_set_new(next, "tags",
                            merge ? str_set_union(json_object_get(cur, "tags"), tags)
                                  : str_set_union(tags, NULL));
    if (keys)
        json_object_set_new(next, "keys",
                            merge ? str_set_union(json_object_get(cur, "keys"), keys)
                                  : str_set_union(keys, NULL));
    char ts[40];
    now_iso(ts, sizeof ts);
    json_object_set_new(next, "updated", json_string(ts));
    rc = cdsh_tavern_story_put(story, floor, CDSH_TAVERN_KIND_MEMORY, id, next, expect, err);
    if (rc == 0)
        *result = json_pack("{s:b,s:s,s:b}", "ok", 1, "id", id, "updated", 1);
    free(expect);
    json_decref(cur);
    json_decref(next);
    return rc;
}

int cdsh_tavern_memory_delete(cdsh_tavern_story *story, const char *floor, const char *id,
                              cdsh_error *err)
{
    cdsh_tavern_memory_attach();
    json_t *cur = NULL;
    int rc = get_entry(story, id, &cur, err);
    if (rc < 0)
        return rc;
    json_decref(cur);
    return cdsh_tavern_story_put(story, floor, CDSH_TAVERN_KIND_MEMORY, id, NULL, NULL, err);
}

/* ---- summaries ---------------------------------------------------------- */

/* Source ids of a summary (owned array) or NULL when not a summary. */
static json_t *summary_sources(const json_t *entry)
{
    const char *sr = s_get(entry, "sourceRange");
    if (!sr)
        return NULL;
    json_t *out = NULL;
    if (strncmp(sr, "compress-json:", 14) == 0 || strncmp(sr, "merge-json:", 11) == 0) {
        out = json_loads(strchr(sr, ':') + 1, 0, NULL);
        if (!json_is_array(out)) {
            json_decref(out);
            return NULL;
        }
        return out;
    }
    if (strncmp(sr, "compress:", 9) != 0 && strncmp(sr, "merge:", 6) != 0)
        return NULL;
    out = json_array();
    char *copy = strdup(strchr(sr, ':') + 1);
    for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
        json_array_append_new(out, json_string(t));
    free(copy);
    return out;
}

/* Active ids plus archived ids reachable from active summaries: id → true. */
static int visible_set(const json_t *map, json_t **out, cdsh_error *err)
{
    json_t *vis = json_object();
    json_t *queue = json_array();
    const char *id;
    json_t *e;
    json_object_foreach((json_t *)map, id, e) {
        if (json_is_true(json_object_get(e, "archived")))
            continue;
        json_object_set_new(vis, id, json_true());
        json_array_append_new(queue, json_string(id));
    }
    size_t reached = 0;
    for (size_t qi = 0; qi < json_array_size(queue); qi++) {
        json_t *entry = json_object_get(map, json_string_value(json_array_get(queue, qi)));
        json_t *src = summary_sources(entry);
        size_t i;
        json_t *s;
        json_array_foreach(src, i, s) {
            const char *sid = json_string_value(s);
            if (!sid || json_object_get(vis, sid) || !json_object_get(map, sid))
                continue;
            if (++reached > REACH_CAP) {
                json_decref(src);
                json_decref(vis);
                json_decref(queue);
                return cdsh_error_set(err, CDSH_ETOOBIG, "MEMORY_TOO_MANY_SOURCES",
                                      "more than %d archived sources are reachable", REACH_CAP);
            }
            json_object_set_new(vis, sid, json_true());
            json_array_append_new(queue, json_string(sid));
        }
        json_decref(src);
    }
    json_decref(queue);
    *out = vis;
    return 0;
}

int cdsh_tavern_memory_search(cdsh_tavern_story *story, const char *query, int top_k,
                              const cdsh_tavern_memory_cfg *cfg, int64_t now_ms, json_t **hits,
                              cdsh_error *err)
{
    cdsh_tavern_memory_attach();
    if (!story || !query || !hits)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "memory search needs a query");
    cdsh_tavern_memory_cfg def = cdsh_tavern_memory_cfg_default();
    if (!cfg)
        cfg = &def;
    if (top_k <= 0)
        top_k = cfg->retrieval_top_k;
    if (top_k > SEARCH_MAX_TOP)
        top_k = SEARCH_MAX_TOP;
    if (now_ms <= 0)
        now_ms = cdsh_clock_wall_ms();
    json_t *map = NULL, *vis = NULL, *found = json_array();
    int rc = all_entries(story, &map, err);
    if (rc < 0 || (rc = visible_set(map, &vis, err)) < 0)
        goto cleanup;
    char *toks = cdsh__tavern_memory_tokens_dup(query);
    cdsh_strbuf q;
    cdsh_strbuf_init(&q);
    json_t *seen = json_object();
    for (char *save = NULL, *t = strtok_r(toks, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        if (json_object_get(seen, t))
            continue;
        json_object_set_new(seen, t, json_true());
        if (q.len)
            cdsh_strbuf_append_str(&q, " OR ");
        cdsh_strbuf_append_str(&q, "\"");
        for (char *c = t; *c; c++)
            cdsh_strbuf_append(&q, c, *c == '"' ? 0 : 1);
        cdsh_strbuf_append_str(&q, "\"");
    }
    json_decref(seen);
    free(toks);
    char *match = cdsh_strbuf_take(&q, NULL);
    if (match && *match) {
        cdsh__tavern_story_lock(story);
        sqlite3 *db = cdsh__tavern_story_db(story);
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db,
                               "SELECT id, -bm25(memory_fts, 0.0, 1.0, 2.0) FROM memory_fts"
                               " WHERE memory_fts MATCH ?",
                               -1, &st, NULL) != SQLITE_OK) {
            rc = cdsh_error_set(err, CDSH_EIO, "DB_ERROR", "memory search: %s", sqlite3_errmsg(db));
        } else {
            sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
            while (sqlite3_step(st) == SQLITE_ROW) {
                const char *id = (const char *)sqlite3_column_text(st, 0);
                json_t *e = json_object_get(map, id);
                if (!e || !json_object_get(vis, id))
                    continue;
                double score = sqlite3_column_double(st, 1);
                int64_t upd = 0;
                if (cfg->half_life_days > 0 &&
                    cdsh_clock_parse_iso8601(s_get(e, "updated"), &upd, NULL) == 0 &&
                    upd < now_ms) {
                    double days = (double)(now_ms - upd) / 86400000.0;
                    score *= pow(0.5, days / cfg->half_life_days);
                }
                json_t *h =
                    json_pack("{s:s,s:b,s:O,s:f,s:O,s:O,s:O}", "id", id, "archived",
                              json_is_true(json_object_get(e, "archived")), "sourceRange",
                              json_object_get(e, "sourceRange"), "score", score, "tags",
                              json_object_get(e, "tags"), "keys", json_object_get(e, "keys"),
                              "body", json_object_get(e, "body"));
                json_array_append_new(found, h);
            }
        }
        sqlite3_finalize(st);
        cdsh__tavern_story_unlock(story);
    }
    free(match);
    if (rc < 0)
        goto cleanup;
    /* sort by score desc, then id */
    size_t n = json_array_size(found);
    for (size_t i = 1; i < n; i++) {
        for (size_t j = i; j > 0; j--) {
            json_t *a = json_array_get(found, j - 1), *b = json_array_get(found, j);
            double sa = json_real_value(json_object_get(a, "score"));
            double sb = json_real_value(json_object_get(b, "score"));
            if (sa > sb || (sa == sb && strcmp(s_get(a, "id"), s_get(b, "id")) <= 0))
                break;
            json_incref(a);
            json_array_set(found, j - 1, b);
            json_array_set_new(found, j, a);
        }
    }
    while (json_array_size(found) > (size_t)top_k)
        json_array_remove(found, json_array_size(found) - 1);
cleanup:
    json_decref(map);
    json_decref(vis);
    if (rc < 0)
        json_decref(found);
    else
        *hits = found;
    return rc;
}

bool cdsh_tavern_memory_reply_acceptable(const char *finish_reason, const char *text,
                                         bool had_error)
{
    if (had_error || !finish_reason || strcmp(finish_reason, "stop") != 0 || !text)
        return false;
    size_t len = strlen(text);
    if (len > SUMMARY_TEXT_MAX)
        return false;
    for (const char *p = text; *p; p++)
        if (!isspace((unsigned char)*p))
            return true;
    return false;
}

int cdsh_tavern_memory_compress_plan(cdsh_tavern_story *story, const cdsh_tavern_memory_cfg *cfg,
                                     json_t **out, cdsh_error *err)
{
    cdsh_tavern_memory_cfg def = cdsh_tavern_memory_cfg_default();
    if (!cfg)
        cfg = &def;
    *out = NULL;
    int count = 0, tokens = 0;
    int rc = cdsh_tavern_memory_stats(story, &count, &tokens, err);
    if (rc < 0)
        return rc;
    bool due =
        cdsh_tavern_memory_pending(story) || count > cfg->max_entries || tokens > cfg->max_tokens;
    int batch = cfg->compress_batch < 2 ? 2 : cfg->compress_batch;
    if (!due || count < 2)
        return 0;
    json_t *list = NULL;
    if ((rc = cdsh_tavern_memory_list(story, false, &list, err)) < 0)
        return rc;
    json_t *ids = json_array(), *canon = json_array();
    cdsh_strbuf p;
    cdsh_strbuf_init(&p);
    cdsh_strbuf_append_str(&p, "Merge these memories into one concise memory of at most 200 "
                               "characters. Output only the body.\n");
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        if ((int)i >= batch)
            break;
        json_t *v = json_deep_copy(e);
        json_object_del(v, "id");
        char *c = cdsh_tavern_story_canon_dup(v);
        json_array_append_new(ids, json_string(s_get(e, "id")));
        json_array_append_new(canon, json_string(c));
        cdsh_strbuf_append_str(&p, "- ");
        cdsh_strbuf_append_str(&p, s_get(e, "body"));
        cdsh_strbuf_append_str(&p, "\n");
        free(c);
        json_decref(v);
    }
    char *prompt = cdsh_strbuf_take(&p, NULL);
    *out = json_pack("{s:o,s:o,s:s}", "ids", ids, "canon", canon, "prompt", prompt);
    free(prompt);
    json_decref(list);
    return 0;
}

/* Long by design: one transaction (summary, archived sources, pending
 * marker); every write and its rollback path stay together. */
int cdsh_tavern_memory_compress_commit(cdsh_tavern_story *story, const json_t *plan,
                                       const char *finish_reason, const char *text, bool had_error,
                                       char **id_out, cdsh_error *err)
{
    cdsh_tavern_memory_attach();
    if (!story || !plan)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "compress_commit: missing plan");
    if (!cdsh_tavern_memory_reply_acceptable(finish_reason, text, had_error)) {
        set_pending(story, true, NULL);
        return cdsh_error_set(err, CDSH_EPROTO, "SUMMARY_REJECTED",
                              "the summary reply did not end with a normal stop (%s); nothing "
                              "archived, retried at the next idle",
                              had_error       ? "error"
                              : finish_reason ? finish_reason
                                              : "no finish");
    }
    json_t *ids = json_object_get(plan, "ids"), *canon = json_object_get(plan, "canon");
    char *sid = new_id_dup();
    cdsh_strbuf sr;
    cdsh_strbuf_init(&sr);
    json_t *tags = json_array(), *keys = json_array();
    bool plain = true;
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v) {
        for (const char *c = json_string_value(v); *c; c++)
            plain = plain && (isalnum((unsigned char)*c) || *c == '-' || *c == '_');
    }
    if (plain) {
        cdsh_strbuf_append_str(&sr, "compress:");
        json_array_foreach(ids, i, v) {
            if (i)
                cdsh_strbuf_append_str(&sr, ",");
            cdsh_strbuf_append_str(&sr, json_string_value(v));
        }
    } else {
        char *j = json_dumps(ids, JSON_COMPACT);
        cdsh_strbuf_append_str(&sr, "compress-json:");
        cdsh_strbuf_append_str(&sr, j);
        free(j);
    }
    char *range = cdsh_strbuf_take(&sr, NULL);
    int rc = 0;
    cdsh__tavern_story_lock(story);
    sqlite3 *db = cdsh__tavern_story_db(story);
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        rc = cdsh_error_set(err, CDSH_EBUSY, "DB_ERROR", "story is busy");
        goto cleanup;
    }
    json_t *sources = json_array();
    json_array_foreach(ids, i, v) {
        char *cur = cdsh__tavern_story_raw_load(db, CDSH_TAVERN_KIND_MEMORY, json_string_value(v),
                                                &rc, err);
        const char *want = json_string_value(json_array_get(canon, i));
        if (rc == 0 && (!cur || !want || strcmp(cur, want) != 0))
            rc = cdsh_error_set(err, CDSH_EBUSY, "SUMMARY_STALE",
                                "memory %s changed while the summary was written; abandoned",
                                json_string_value(v));
        if (rc == 0) {
            json_t *e = json_loads(cur, 0, NULL);
            json_t *nt = str_set_union(tags, json_object_get(e, "tags"));
            json_t *nk = str_set_union(keys, json_object_get(e, "keys"));
            json_decref(tags);
            json_decref(keys);
            tags = nt;
            keys = nk;
            json_array_append_new(sources, e);
        }
        free(cur);
        if (rc < 0)
            break;
    }
    if (rc == 0) {
        json_t *first = json_pack("[s]", "compressed");
        json_t *t2 = str_set_union(first, tags);
        json_decref(first);
        char ts[40];
        now_iso(ts, sizeof ts);
        json_t *summary =
            json_pack("{s:s,s:o,s:O,s:s,s:s,s:s,s:b}", "body", text, "tags", t2, "keys", keys,
                      "created", ts, "updated", ts, "sourceRange", range, "archived", 0);
        char *c = cdsh_tavern_story_canon_dup(summary);
        /* summary first, then archive: a crash in between cannot happen inside
         * one transaction, and the order documents the intent */
        rc = cdsh__tavern_story_raw_put(db, CDSH_TAVERN_KIND_MEMORY, sid, c, err);
        free(c);
        json_decref(summary);
        json_array_foreach(sources, i, v) {
            if (rc < 0)
                break;
            json_object_set_new(v, "archived", json_true());
            char *sc = cdsh_tavern_story_canon_dup(v);
            rc = cdsh__tavern_story_raw_put(db, CDSH_TAVERN_KIND_MEMORY,
                                            json_string_value(json_array_get(ids, i)), sc, err);
            free(sc);
        }
        if (rc == 0) {
            json_t *pend = json_pack("{s:b}", "compress", 0);
            char *pc = cdsh_tavern_story_canon_dup(pend);
            rc = cdsh__tavern_story_raw_put(db, CDSH_TAVERN_KIND_DOC, CDSH_TAVERN_PENDING_DOC, pc,
                                            err);
            free(pc);
            json_decref(pend);
        }
    }
    json_decref(sources);
    if (rc == 0 && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = cdsh_error_set(err, CDSH_EIO, "DB_ERROR", "commit: %s", sqlite3_errmsg(db));
    if (!sqlite3_get_autocommit(db))
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
cleanup:
    cdsh__tavern_story_unlock(story);
    if (rc == 0 && id_out)
        *id_out = strdup(sid);
    free(sid);
    free(range);
    json_decref(tags);
    json_decref(keys);
    return rc;
}

/* Does summary `e` reach key through its (possibly nested) sources? */
static bool reaches(const json_t *map, const json_t *e, const char *key, int depth)
{
    if (depth > 64)
        return false;
    json_t *src = summary_sources(e);
    bool hit = false;
    size_t i;
    json_t *s;
    json_array_foreach(src, i, s) {
        const char *sid = json_string_value(s);
        if (!sid)
            continue;
        json_t *child = json_object_get(map, sid);
        if (strcmp(sid, key) == 0 || (child && reaches(map, child, key, depth + 1))) {
            hit = true;
            break;
        }
    }
    json_decref(src);
    return hit;
}

/* Restores the sources of summary id (recursively for nested summaries
 * that reach key) and removes the summary. */
static int expand_one(sqlite3 *db, json_t *map, const char *id, const char *key, cdsh_error *err)
{
    json_t *e = json_object_get(map, id);
    json_t *src = summary_sources(e);
    int rc = cdsh__tavern_story_raw_put(db, CDSH_TAVERN_KIND_MEMORY, id, NULL, err);
    size_t i;
    json_t *s;
    json_array_foreach(src, i, s) {
        const char *sid = json_string_value(s);
        json_t *child = sid ? json_object_get(map, sid) : NULL;
        if (rc < 0 || !child)
            continue;
        json_t *restored = json_deep_copy(child);
        json_object_set_new(restored, "archived", json_false());
        char *c = cdsh_tavern_story_canon_dup(restored);
        rc = cdsh__tavern_story_raw_put(db, CDSH_TAVERN_KIND_MEMORY, sid, c, err);
        free(c);
        json_decref(restored);
        if (rc == 0 && reaches(map, child, key, 0))
            rc = expand_one(db, map, sid, key, err);
    }
    json_decref(src);
    return rc;
}

int cdsh__tavern_memory_expand_for(sqlite3 *db, const char *key, cdsh_error *err)
{
    sqlite3_stmt *st = NULL;
    json_t *map = json_object();
    if (sqlite3_prepare_v2(db, "SELECT key, value FROM objects WHERE kind='memory'", -1, &st,
                           NULL) != SQLITE_OK) {
        json_decref(map);
        return cdsh_error_set(err, CDSH_EIO, "DB_ERROR", "memory: %s", sqlite3_errmsg(db));
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        json_t *v = json_loads((const char *)sqlite3_column_text(st, 1), 0, NULL);
        if (v)
            json_object_set_new(map, (const char *)sqlite3_column_text(st, 0), v);
    }
    sqlite3_finalize(st);
    int rc = 0;
    const char *id;
    json_t *e;
    json_t *todo = json_array();
    json_object_foreach(map, id, e) {
        if (!json_is_true(json_object_get(e, "archived")) && reaches(map, e, key, 0))
            json_array_append_new(todo, json_string(id));
    }
    size_t i;
    json_t *t;
    json_array_foreach(todo, i, t) {
        if (rc == 0)
            rc = expand_one(db, map, json_string_value(t), key, err);
    }
    json_decref(todo);
    json_decref(map);
    return rc;
}

/* ---- story listener --------------------------------------------------------- */

static int on_changed(sqlite3 *db, const char *kind, const char *key, const char *canon,
                      cdsh_error *err)
{
    return strcmp(kind, CDSH_TAVERN_KIND_MEMORY) == 0
               ? cdsh__tavern_memory_reindex(db, key, canon, err)
               : 0;
}

static int on_undoing(sqlite3 *db, const char *kind, const char *key, cdsh_error *err)
{
    return strcmp(kind, CDSH_TAVERN_KIND_MEMORY) == 0 ? cdsh__tavern_memory_expand_for(db, key, err)
                                                      : 0;
}

static const cdsh__tavern_story_listener LISTENER = {on_changed, on_undoing};
static pthread_once_t g_attached = PTHREAD_ONCE_INIT;

static void attach_once(void)
{
    cdsh__tavern_story_listen(&LISTENER); /* the first listener: cannot be full */
}

void cdsh_tavern_memory_attach(void)
{
    pthread_once(&g_attached, attach_once);
}
