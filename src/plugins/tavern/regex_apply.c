/* regex_apply.c — the regex rule engine (see regex_apply.h). Rule shape
 * conversion lives in regex.c; the JavaScript regex dialect in jsregex.c. */
#include "plugins/tavern/regex_apply.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/json.h"
#include "base/strbuf.h"
#include "plugins/tavern/jsregex.h"

typedef struct rx_rule {
    const json_t *rule;
    cdsh_tavern_jsre *re; /* NULL: compiled per call or failed */
    cdsh_error compile_err;
    bool failed;
    int sub;
} rx_rule;

struct cdsh_tavern_rxset {
    rx_rule *rules;
    size_t n;
    int time_ms;
};

static bool list_has(const json_t *arr, const char *v)
{
    size_t i;
    json_t *x;
    json_array_foreach(arr, i, x) {
        if (json_is_string(x) && !strcmp(json_string_value(x), v))
            return true;
    }
    return false;
}

static int compile_find(const char *find, cdsh_tavern_jsre **re, cdsh_error *err)
{
    char *pat = NULL, *flags = NULL;
    int rc;
    if (cdsh_tavern_jsre_split_literal(find, &pat, &flags))
        rc = cdsh_tavern_jsre_compile(pat, flags, re, err);
    else /* a bare pattern: no flags (case-sensitive, first match only) */
        rc = cdsh_tavern_jsre_compile(find, "", re, err);
    free(pat);
    free(flags);
    return rc;
}

int cdsh_tavern_rxset_new(const json_t *rules, cdsh_tavern_rxset **out, cdsh_error *err)
{
    if (!out || (rules && !json_is_array(rules)))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "rxset_new: rules must be a list");
    *out = NULL;
    cdsh_tavern_rxset *set = calloc(1, sizeof *set);
    size_t n = json_array_size(rules);
    if (!set || (n && !(set->rules = calloc(n, sizeof *set->rules)))) {
        free(set);
        return cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
    }
    set->time_ms = CDSH_TAVERN_JSRE_TIME_MS;
    for (size_t i = 0; i < n; i++) {
        rx_rule *r = &set->rules[set->n++];
        r->rule = json_array_get(rules, i);
        r->sub = (int)json_integer_value(json_object_get(r->rule, "substituteRegex"));
        if (json_is_true(json_object_get(r->rule, "substituteRegex")))
            r->sub = 1;
        if (r->sub == 0 &&
            compile_find(cdsh_json_str_or(r->rule, "find", ""), &r->re, &r->compile_err) < 0)
            r->failed = true;
    }
    *out = set;
    return 0;
}

void cdsh_tavern_rxset_free(cdsh_tavern_rxset *set)
{
    if (!set)
        return;
    for (size_t i = 0; i < set->n; i++)
        cdsh_tavern_jsre_free(set->rules[i].re);
    free(set->rules);
    free(set);
}

void cdsh_tavern_rxset_set_time_limit(cdsh_tavern_rxset *set, int time_ms)
{
    if (set)
        set->time_ms = time_ms > 0 ? time_ms : CDSH_TAVERN_JSRE_TIME_MS;
}

/* substituteRegex: 1 expands macros as they are, 2 escapes each value. */
static char *substitute_find(const char *find, int mode, cdsh_tavern_macro_env *env)
{
    if (!env || !strstr(find, "{{"))
        return strdup(find);
    if (mode == 1)
        return cdsh_tavern_macros_expand_dup(find, env);
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    const char *p = find;
    while (*p) {
        const char *o = strstr(p, "{{");
        const char *c = o ? strstr(o + 2, "}}") : NULL;
        if (!o || !c) {
            cdsh_strbuf_append_str(&sb, p);
            break;
        }
        cdsh_strbuf_append(&sb, p, (size_t)(o - p));
        char *tok = strndup(o, (size_t)(c + 2 - o));
        char *val = tok ? cdsh_tavern_macros_expand_dup(tok, env) : NULL;
        if (val)
            cdsh_tavern_jsre_escape(val, strlen(val), &sb);
        free(tok);
        free(val);
        p = c + 2;
    }
    return cdsh_strbuf_take(&sb, NULL);
}

typedef struct repl_ctx {
    const cdsh_tavern_jsre *re;
    const char *tpl;
    const json_t *trims;
    cdsh_tavern_macro_env *env;
} repl_ctx;

/* Appends s[0..n) with every trim string removed. */
static void append_trimmed(cdsh_strbuf *out, const char *s, size_t n, const json_t *trims,
                           cdsh_tavern_macro_env *env)
{
    if (!json_array_size(trims)) {
        cdsh_strbuf_append(out, s, n);
        return;
    }
    char *cur = strndup(s, n);
    size_t i;
    json_t *t;
    json_array_foreach(trims, i, t) {
        const char *ts = json_string_value(t);
        if (!cur || !ts || !*ts)
            continue;
        char *tv = env ? cdsh_tavern_macros_expand_dup(ts, env) : strdup(ts);
        if (!tv || !*tv) {
            free(tv);
            continue;
        }
        size_t tl = strlen(tv);
        char *w = cur;
        for (char *r = cur; *r;) {
            if (!strncmp(r, tv, tl)) {
                r += tl;
                continue;
            }
            *w++ = *r++;
        }
        *w = 0;
        free(tv);
    }
    cdsh_strbuf_append_str(out, cur);
    free(cur);
}

static void append_group(cdsh_strbuf *out, const char *s, const size_t *ov, int k,
                         const repl_ctx *c)
{
    if (ov[2 * k] != SIZE_MAX)
        append_trimmed(out, s + ov[2 * k], ov[2 * k + 1] - ov[2 * k], c->trims, c->env);
}

static int replace_one(void *ud, const char *s, size_t slen, const size_t *ov, int ngroups,
                       cdsh_strbuf *out)
{
    (void)slen;
    repl_ctx *c = ud;
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    const char *t = c->tpl;
    for (size_t i = 0; t[i]; i++) {
        if (t[i] == '{' && !strncasecmp(t + i, "{{match}}", 9)) {
            append_group(&sb, s, ov, 0, c);
            i += 8;
            continue;
        }
        if (t[i] != '$') {
            cdsh_strbuf_append_char(&sb, t[i]);
            continue;
        }
        char d = t[i + 1];
        if (d >= '0' && d <= '9') {
            size_t j = i + 1;
            int num = 0;
            while (t[j] >= '0' && t[j] <= '9' && num <= 1000)
                num = num * 10 + (t[j++] - '0');
            if (num <= ngroups) {
                append_group(&sb, s, ov, num, c);
                i = j - 1;
            } else { /* out of range: left literal */
                cdsh_strbuf_append_char(&sb, '$');
            }
        } else if (d == '<') {
            const char *close = strchr(t + i + 2, '>');
            if (!close) {
                cdsh_strbuf_append_char(&sb, '$');
                continue;
            }
            char *name = strndup(t + i + 2, (size_t)(close - t - i - 2));
            int k = cdsh_tavern_jsre_group_index(c->re, name);
            free(name);
            if (k > 0)
                append_group(&sb, s, ov, k, c);
            i = (size_t)(close - t);
        } else if (d == '&') {
            append_group(&sb, s, ov, 0, c);
            i++;
        } else if (d == '$') {
            cdsh_strbuf_append_char(&sb, '$');
            i++;
        } else {
            cdsh_strbuf_append_char(&sb, '$');
        }
    }
    if (sb.failed) {
        cdsh_strbuf_deinit(&sb);
        return CDSH_ENOMEM;
    }
    if (c->env && strstr(sb.data, "{{")) {
        char *x = cdsh_tavern_macros_expand_dup(sb.data, c->env);
        cdsh_strbuf_append_str(out, x);
        free(x);
    } else {
        cdsh_strbuf_append(out, sb.data, sb.len);
    }
    cdsh_strbuf_deinit(&sb);
    return 0;
}

static void note_failure(json_t *failures, const json_t *rule, const cdsh_error *e)
{
    if (!failures)
        return;
    json_array_append_new(failures,
                          json_pack("{s:s, s:s, s:s, s:s}", "id", cdsh_json_str_or(rule, "id", ""),
                                    "name", cdsh_json_str_or(rule, "name", ""), "code", e->code,
                                    "message", e->message));
}

static bool depth_admits(const json_t *rule, int depth)
{
    if (depth < 0)
        return true;
    json_t *mn = json_object_get(rule, "minDepth"), *mx = json_object_get(rule, "maxDepth");
    if (json_is_number(mn) && json_number_value(mn) >= -1 && depth < json_number_value(mn))
        return false;
    if (json_is_number(mx) && json_number_value(mx) >= 0 && depth > json_number_value(mx))
        return false;
    return true;
}

int cdsh_tavern_rxset_apply(const cdsh_tavern_rxset *set, const char *text, const char *scope,
                            const char *timing, const char *role, int depth,
                            cdsh_tavern_macro_env *env, char **out, json_t *failures,
                            cdsh_error *err)
{
    if (!set || !text || !scope || !timing || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "rxset_apply: bad arguments");
    char *cur = strdup(text);
    if (!cur)
        return cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
    for (size_t i = 0; i < set->n; i++) {
        const rx_rule *r = &set->rules[i];
        const json_t *rule = r->rule;
        if (!json_is_true(json_object_get(rule, "enabled")) ||
            !list_has(json_object_get(rule, "scopes"), scope) ||
            !list_has(json_object_get(rule, "timing"), timing))
            continue;
        json_t *roles = json_object_get(rule, "roles");
        if (role && json_array_size(roles) && !list_has(roles, role))
            continue;
        if (!depth_admits(rule, depth) || !*cdsh_json_str_or(rule, "find", ""))
            continue;
        if (r->failed) {
            note_failure(failures, rule, &r->compile_err);
            continue;
        }
        cdsh_tavern_jsre *re = r->re, *own = NULL;
        cdsh_error e = {0};
        if (!re) {
            char *find = substitute_find(cdsh_json_str_or(rule, "find", ""), r->sub, env);
            if (!find || compile_find(find, &own, &e) < 0) {
                free(find);
                note_failure(failures, rule, &e);
                continue;
            }
            free(find);
            re = own;
        }
        repl_ctx c = {re, cdsh_json_str_or(rule, "replace", ""),
                      json_object_get(rule, "trimStrings"), env};
        char *next = NULL;
        if (cdsh_tavern_jsre_replace(re, cur, strlen(cur), replace_one, &c, set->time_ms, &next,
                                     NULL, &e) < 0) {
            note_failure(failures, rule, &e);
        } else {
            free(cur);
            cur = next;
        }
        cdsh_tavern_jsre_free(own);
    }
    *out = cur;
    return 0;
}
