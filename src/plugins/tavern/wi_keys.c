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

#include <utf8proc.h>

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

/* JavaScript's toLowerCase() is Unicode's full lowercase mapping without
 * language tailoring: the simple mapping (utf8proc_tolower) plus the two
 * SpecialCasing rules that apply everywhere: U+0130 becomes "i\u0307" and a
 * capital sigma at the end of a word becomes the final sigma. */
static bool is_cased(uint32_t c)
{
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL ||
           k == UTF8PROC_CATEGORY_LT || utf8proc_islower((utf8proc_int32_t)c) ||
           utf8proc_isupper((utf8proc_int32_t)c);
}

/* Unicode's Case_Ignorable: marks, format controls, modifier letters and
 * symbols, and the word-internal punctuation of Word_Break MidLetter,
 * MidNumLet and Single_Quote. */
static bool is_case_ignorable(uint32_t c)
{
    switch (c) {
    case 0x27: case 0x2E: case 0x3A: case 0x5E: case 0x60: case 0xA8: case 0xAD: case 0xAF:
    case 0xB4: case 0xB7: case 0xB8: case 0x387: case 0x55F: case 0x5F4: case 0x2018:
    case 0x2019: case 0x2024: case 0x2027: case 0xFE13: case 0xFE52: case 0xFE55: case 0xFF07:
    case 0xFF0E: case 0xFF1A:
        return true;
    default: break;
    }
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_ME || k == UTF8PROC_CATEGORY_CF ||
           k == UTF8PROC_CATEGORY_LM || k == UTF8PROC_CATEGORY_SK;
}

/* The Final_Sigma condition for the sigma at s[i..i+2) of s[0..n). */
static bool final_sigma(const char *s, size_t n, size_t i)
{
    bool before = false;
    for (size_t j = i; j > 0;) {
        size_t k = j - 1;
        while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80)
            k--;
        uint32_t cp;
        size_t len;
        if (cdsh_utf8_decode(s + k, j - k, &cp, &len) < 0)
            break;
        if (is_case_ignorable(cp)) {
            j = k;
            continue;
        }
        before = is_cased(cp);
        break;
    }
    if (!before)
        return false;
    for (size_t j = i + 2; j < n;) {
        uint32_t cp;
        size_t len;
        if (cdsh_utf8_decode(s + j, n - j, &cp, &len) < 0)
            return true;
        if (is_case_ignorable(cp)) {
            j += len;
            continue;
        }
        return !is_cased(cp);
    }
    return true;
}

char *cdsh_tavern_wi_lower_dup(const char *s, size_t n)
{
    /* No code point grows by more than half its bytes when lowercased. */
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
        if (cp == 0x130) {
            w += cdsh_utf8_encode('i', w);
            w += cdsh_utf8_encode(0x307, w);
        } else if (cp == 0x3A3) {
            w += cdsh_utf8_encode(final_sigma(s, n, i) ? 0x3C2 : 0x3C3, w);
        } else {
            w += cdsh_utf8_encode((uint32_t)utf8proc_tolower((utf8proc_int32_t)cp), w);
        }
        i += len;
    }
    *w = 0;
    return out;
}

/* JavaScript's \s: ASCII and Unicode White_Space plus U+FEFF. */
static bool js_space(uint32_t c)
{
    return c == 0x20 || (c >= 0x09 && c <= 0x0D) || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000 || c == 0xFEFF;
}

/* Length of the JS whitespace code point at s[0..n), 0 when there is none. */
static size_t space_at(const char *s, size_t n)
{
    uint32_t cp;
    size_t len;
    if (!n)
        return 0;
    if ((unsigned char)*s < 0x80)
        return js_space((unsigned char)*s) ? 1 : 0;
    return cdsh_utf8_decode(s, n, &cp, &len) == 0 && js_space(cp) ? len : 0;
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
    /* String.prototype.trim(): JavaScript's whitespace, Unicode included. */
    char *a = s, *end = s + strlen(s);
    for (size_t k; (k = space_at(a, (size_t)(end - a))) > 0;)
        a += k;
    size_t l = (size_t)(end - a);
    for (bool cut = true; cut && l;) {
        cut = false;
        for (size_t back = 1; back <= 3 && back <= l; back++)
            if (space_at(a + l - back, back) == back) {
                l -= back;
                cut = true;
                break;
            }
    }
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
    for (size_t p = 0; p < l && !out->multi; p++)
        out->multi = space_at(s + p, l - p) > 0;
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
