/* worldstate.c — world deltas on top of story objects: validation, ids,
 * expiry, revocation and rendering. Undo is story.c's (per delta id, so a
 * manual or another session's delta is never touched by an undo). */
#include "plugins/tavern/worldstate.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/random.h"
#include "base/strbuf.h"
#include "plugins/tavern/memory.h"

/* ISO date (YYYY-MM-DD) or date-time accepted by base/clock. */
static int parse_expiry(const char *text, int64_t *ms)
{
    if (!text)
        return -1;
    size_t n = strlen(text);
    if (n == 10 && isdigit((unsigned char)text[0]) && text[4] == '-' && text[7] == '-') {
        char buf[40];
        snprintf(buf, sizeof buf, "%sT00:00:00Z", text);
        return cdsh_clock_parse_iso8601(buf, ms, NULL);
    }
    return cdsh_clock_parse_iso8601(text, ms, NULL);
}

static char *delta_id_dup(void)
{
    char hex[7], *id = NULL;
    if (cdsh_random_hex(hex, sizeof hex, 3) < 0)
        return NULL;
    if (asprintf(&id, "d-%llx-%s", (unsigned long long)cdsh_clock_wall_ms(), hex) < 0)
        return NULL;
    return id;
}

int cdsh_tavern_world_add(cdsh_tavern_story *story, const char *floor, const char *type,
                          const char *content, const char *ref, const json_t *keys, double order,
                          const char *expires, const char *source_range, json_t **out,
                          cdsh_error *err)
{
    if (!story || !type || !content)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "world delta needs type and content");
    if (strcmp(type, "add") != 0 && strcmp(type, "update") != 0 && strcmp(type, "invalidate") != 0)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "type must be add, update or invalidate");
    if (strcmp(type, "add") != 0 && (!ref || !*ref))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "%s needs ref", type);
    if (keys && !json_is_array(keys))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "keys must be an array of strings");
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k)
        if (!json_is_string(k))
            return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                                  "keys must be an array of strings");
    int64_t exp_ms = 0;
    if (expires && (parse_expiry(expires, &exp_ms) < 0 || exp_ms <= cdsh_clock_wall_ms()))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "expiresAt must be an ISO date or date-time in the future");
    char ts[40], exp[40];
    cdsh_clock_format_iso8601(cdsh_clock_wall_ms(), ts, sizeof ts);
    if (expires)
        cdsh_clock_format_iso8601(exp_ms, exp, sizeof exp);
    /* Creation order: timestamps tie within a millisecond and ids are random. */
    json_int_t seq = 1;
    json_t *rows = NULL;
    if (cdsh_tavern_story_list(story, CDSH_TAVERN_KIND_DELTA, &rows, NULL) >= 0)
        seq = (json_int_t)json_array_size(rows) + 1;
    json_decref(rows);
    char *id = delta_id_dup();
    if (!id)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    json_t *v =
        json_pack("{s:s,s:I,s:s,s:s,s:s?,s:s,s:o,s:f,s:s?,s:s?,s:b}", "id", id, "seq", seq, "ts",
                  ts, "type", type, "ref", ref, "content", content, "keys",
                  keys ? json_deep_copy(keys) : json_array(), "order", order < 0 ? 100.0 : order,
                  "sourceRange", source_range, "expires", expires ? exp : NULL, "revoked", 0);
    int rc = cdsh_tavern_story_put(story, floor, CDSH_TAVERN_KIND_DELTA, id, v, "", err);
    if (rc == 0 && out)
        *out = json_incref(v);
    json_decref(v);
    free(id);
    return rc;
}

int cdsh_tavern_world_revoke(cdsh_tavern_story *story, const char *floor, const char *id,
                             cdsh_error *err)
{
    json_t *cur = NULL;
    int rc = cdsh_tavern_story_load(story, CDSH_TAVERN_KIND_DELTA, id, &cur, err);
    if (rc == CDSH_ENOTFOUND)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "not-found", "no world delta \"%s\"", id);
    if (rc < 0)
        return rc;
    char *expect = cdsh_tavern_story_canon_dup(cur);
    json_object_set_new(cur, "revoked", json_true());
    rc = cdsh_tavern_story_put(story, floor, CDSH_TAVERN_KIND_DELTA, id, cur, expect, err);
    free(expect);
    json_decref(cur);
    return rc;
}

static int cmp_ts(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_int_t sx = json_integer_value(json_object_get(x, "seq")),
               sy = json_integer_value(json_object_get(y, "seq"));
    if (sx != sy)
        return sx < sy ? -1 : 1;
    int c = strcmp(cdsh_json_str(x, "ts") ? cdsh_json_str(x, "ts") : "",
                   cdsh_json_str(y, "ts") ? cdsh_json_str(y, "ts") : "");
    return c ? c
             : strcmp(cdsh_json_str(x, "id") ? cdsh_json_str(x, "id") : "",
                      cdsh_json_str(y, "id") ? cdsh_json_str(y, "id") : "");
}

int cdsh_tavern_world_list(cdsh_tavern_story *story, bool all, int64_t now_ms, json_t **out,
                           cdsh_error *err)
{
    json_t *rows = NULL;
    int rc = cdsh_tavern_story_list(story, CDSH_TAVERN_KIND_DELTA, &rows, err);
    if (rc < 0)
        return rc;
    if (now_ms <= 0)
        now_ms = cdsh_clock_wall_ms();
    size_t n = json_array_size(rows), k = 0;
    json_t **v = calloc(n ? n : 1, sizeof *v);
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        json_t *d = json_object_get(r, "value");
        if (!json_is_object(d))
            continue;
        int64_t exp = 0;
        bool expired = cdsh_json_str(d, "expires") &&
                       parse_expiry(cdsh_json_str(d, "expires"), &exp) == 0 && exp < now_ms;
        if (!all && (json_is_true(json_object_get(d, "revoked")) || expired))
            continue;
        v[k++] = d;
    }
    qsort(v, k, sizeof *v, cmp_ts);
    json_t *arr = json_array();
    for (i = 0; i < k; i++)
        json_array_append(arr, v[i]);
    free(v);
    json_decref(rows);
    *out = arr;
    return 0;
}

static char *prefixed_dup(const json_t *d)
{
    const char *type = cdsh_json_str(d, "type"), *content = cdsh_json_str(d, "content");
    const char *pre = strcmp(type, "update") == 0       ? "【当前状态·更新】"
                      : strcmp(type, "invalidate") == 0 ? "【当前状态·已失效】"
                                                        : "";
    char *out = NULL;
    if (asprintf(&out, "%s%s", pre, content ? content : "") < 0)
        return NULL;
    return out;
}

int cdsh_tavern_world_entries(cdsh_tavern_story *story, int64_t now_ms, json_t **out,
                              cdsh_error *err)
{
    json_t *list = NULL;
    int rc = cdsh_tavern_world_list(story, false, now_ms, &list, err);
    if (rc < 0)
        return rc;
    json_t *arr = json_array();
    size_t i;
    json_t *d;
    json_array_foreach(list, i, d) {
        char *uid = NULL, *content = prefixed_dup(d);
        if (asprintf(&uid, "delta:world-delta:%s", cdsh_json_str(d, "id")) < 0)
            uid = NULL;
        json_array_append_new(arr, json_pack("{s:s?,s:s,s:s?,s:O,s:O,s:b}", "uid", uid, "source",
                                             "delta", "content", content, "key",
                                             json_object_get(d, "keys"), "order",
                                             json_object_get(d, "order"), "constant",
                                             json_array_size(json_object_get(d, "keys")) == 0));
        free(uid);
        free(content);
    }
    json_decref(list);
    *out = arr;
    return 0;
}

static bool key_hit(const json_t *keys, const char *scan)
{
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k) {
        const char *ks = json_string_value(k);
        if (!ks || !*ks || !scan)
            continue;
        size_t kl = strlen(ks);
        for (const char *p = scan; *p; p++)
            if (strncasecmp(p, ks, kl) == 0)
                return true;
    }
    return false;
}

int cdsh_tavern_world_render(cdsh_tavern_story *story, const char *scan_text, int budget,
                             int64_t now_ms, char **text, cdsh_error *err)
{
    json_t *list = NULL;
    int rc = cdsh_tavern_world_list(story, false, now_ms, &list, err);
    if (rc < 0)
        return rc;
    if (budget <= 0)
        budget = CDSH_TAVERN_WORLD_TURN_BUDGET;
    size_t n = json_array_size(list);
    bool *take = calloc(n ? n : 1, sizeof *take);
    int used = 0;
    for (size_t i = n; i-- > 0;) { /* newest first */
        json_t *d = json_array_get(list, i);
        json_t *keys = json_object_get(d, "keys");
        if (json_array_size(keys) > 0 && !key_hit(keys, scan_text))
            continue;
        char *line = prefixed_dup(d);
        int t = cdsh__tavern_est_tokens(line) + 1;
        free(line);
        if (used + t > budget)
            break;
        used += t;
        take[i] = true;
    }
    cdsh_strbuf b;
    cdsh_strbuf_init(&b);
    for (size_t i = 0; i < n; i++) {
        if (!take[i])
            continue;
        char *line = prefixed_dup(json_array_get(list, i));
        cdsh_strbuf_append_str(&b, line);
        cdsh_strbuf_append_str(&b, "\n");
        free(line);
    }
    free(take);
    json_decref(list);
    char *s = cdsh_strbuf_take(&b, NULL);
    *text = s ? s : strdup("");
    return 0;
}
