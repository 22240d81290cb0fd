/* wi_keys.c — world-info key matching (see wi_keys.h): key preparation,
 * case folding, JavaScript whole-word boundaries and the per-call regex
 * cache. Which entries are scanned, and over which text, is wi_activate.c's. */
#include "plugins/tavern/wi_keys.h"

#include <ctype.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/utf8.h"
#include "plugins/tavern/jsregex.h"

struct cdsh_tavern_wi_matcher {
    json_t *index; /* key text -> index into res, or -1 for a key that does not compile */
    cdsh_tavern_jsre **res;
    size_t nres;
};

cdsh_tavern_wi_matcher *cdsh_tavern_wi_matcher_new(void)
{
    cdsh_tavern_wi_matcher *m = calloc(1, sizeof *m);
    if (m && !(m->index = json_object())) {
        free(m);
        m = NULL;
    }
    return m;
}

void cdsh_tavern_wi_matcher_free(cdsh_tavern_wi_matcher *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nres; i++)
        cdsh_tavern_jsre_free(m->res[i]);
    free(m->res);
    json_decref(m->index);
    free(m);
}

/* Unicode simple lowercase for the common alphabets (ASCII, Latin-1,
 * Latin Extended-A, Greek, Cyrillic); other code points are kept. */
static uint32_t lower_cp(uint32_t c)
{
    if (c < 0x80)
        return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    if ((c >= 0xC0 && c <= 0xDE && c != 0xD7))
        return c + 32;
    if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x138 && c != 0x149 && c != 0x17F) {
        bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
        if (odd_upper)
            return (c & 1) ? c + 1 : c;
        return (c & 1) ? c : c + 1;
    }
    if (c >= 0x391 && c <= 0x3AB && c != 0x3A2)
        return c + 32;
    if (c >= 0x410 && c <= 0x42F)
        return c + 32;
    if (c >= 0x400 && c <= 0x40F)
        return c + 80;
    return c;
}

char *cdsh_tavern_wi_lower_dup(const char *s, size_t n)
{
    char *out = malloc(n * 2 + 1), *w = out;
    if (!out)
        return NULL;
    size_t i = 0;
    while (i < n) {
        unsigned char b = (unsigned char)s[i];
        if (b < 0x80) {
            *w++ = (char)((b >= 'A' && b <= 'Z') ? b + 32 : b);
            i++;
            continue;
        }
        uint32_t cp;
        size_t len;
        if (cdsh_utf8_decode(s + i, n - i, &cp, &len) < 0) {
            size_t k = len ? len : 1;
            memcpy(w, s + i, k);
            w += k;
            i += k;
            continue;
        }
        w += cdsh_utf8_encode(lower_cp(cp), w);
        i += len;
    }
    *w = 0;
    return out;
}

static bool is_word(unsigned char c)
{
    return isalnum(c) || c == '_';
}

/* (?:^|\W)(needle)(?:$|\W) with JavaScript's ASCII \W. */
static bool whole_word_find(const char *text, size_t hn, const char *needle, size_t nn)
{
    if (!nn)
        return true;
    const char *p = text, *end = text + hn;
    while (p < end) {
        const char *hit = memmem(p, (size_t)(end - p), needle, nn);
        if (!hit)
            return false;
        bool left = hit == text || !is_word((unsigned char)hit[-1]);
        bool right = hit + nn == end || !is_word((unsigned char)hit[nn]);
        if (left && right)
            return true;
        p = hit + 1;
    }
    return false;
}

/* The compiled regex of a /pattern/flags key; NULL with *bad when it is a
 * literal that does not compile, NULL without *bad when it is no literal. */
static cdsh_tavern_jsre *regex_key(cdsh_tavern_wi_matcher *m, const char *key, bool *bad)
{
    *bad = false;
    json_t *idx = json_object_get(m->index, key);
    if (idx) {
        json_int_t i = json_integer_value(idx);
        *bad = i < 0;
        return i < 0 ? NULL : m->res[i];
    }
    char *pat = NULL, *flags = NULL;
    cdsh_tavern_jsre *re = NULL;
    if (!cdsh_tavern_jsre_split_literal(key, &pat, &flags))
        return NULL;
    cdsh_tavern_jsre_compile(pat, flags, &re, NULL);
    free(pat);
    free(flags);
    if (!re) {
        json_object_set_new(m->index, key, json_integer(-1));
        *bad = true;
        return NULL;
    }
    cdsh_tavern_jsre **res = realloc(m->res, (m->nres + 1) * sizeof *res);
    if (!res) {
        cdsh_tavern_jsre_free(re);
        *bad = true;
        return NULL;
    }
    m->res = res;
    res[m->nres] = re;
    json_object_set_new(m->index, key, json_integer((json_int_t)m->nres));
    m->nres++;
    return re;
}

bool cdsh_tavern_wi_key_has_macro(const char *text)
{
    return strstr(text, "{{") || strchr(text, '<');
}

void cdsh_tavern_wi_key_deinit(cdsh_tavern_wi_key *k)
{
    free(k->key);
    free(k->low);
}

int cdsh_tavern_wi_key_init(const char *text, cdsh_tavern_macro_env *env, cdsh_tavern_wi_key *out)
{
    memset(out, 0, sizeof *out);
    char *s = (env && cdsh_tavern_wi_key_has_macro(text)) ? cdsh_tavern_macros_expand_dup(text, env)
                                                          : strdup(text);
    if (!s)
        return CDSH_ENOMEM;
    char *a = s;
    while (isspace((unsigned char)*a))
        a++;
    size_t l = strlen(a);
    while (l && isspace((unsigned char)a[l - 1]))
        l--;
    memmove(s, a, l);
    s[l] = 0;
    out->key = s;
    out->n = l;
    out->low = cdsh_tavern_wi_lower_dup(s, l);
    if (!out->low) {
        free(s);
        out->key = NULL;
        return CDSH_ENOMEM;
    }
    out->nl = strlen(out->low);
    for (const char *p = s; *p; p++)
        out->multi |= isspace((unsigned char)*p) != 0;
    return 0;
}

bool cdsh_tavern_wi_key_match(cdsh_tavern_wi_matcher *m, const cdsh_tavern_wi_key *k,
                              const cdsh_tavern_wi_hay *h, bool case_sensitive, bool whole_words)
{
    if (!k->n)
        return false;
    if (k->key[0] == '/') {
        bool bad;
        cdsh_tavern_jsre *re = regex_key(m, k->key, &bad);
        if (re)
            return cdsh_tavern_jsre_test(re, h->raw, h->n, 0, NULL) == 1;
        if (bad)
            return false;
    }
    const char *hs = case_sensitive ? h->raw : h->low;
    size_t hn = case_sensitive ? h->n : h->nl;
    const char *needle = case_sensitive ? k->key : k->low;
    size_t nn = case_sensitive ? k->n : k->nl;
    if (whole_words && !k->multi)
        return whole_word_find(hs, hn, needle, nn);
    return memmem(hs, hn, needle, nn) != NULL;
}
