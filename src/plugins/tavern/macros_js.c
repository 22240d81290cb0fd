/* macros_js.c — the JavaScript value rules SillyTavern's macros rely on:
 * whitespace and trim, Number(string), String(number), UTF-16 lengths,
 * ST's getStringHash (cyrb53) and seedrandom's ARC4 generator (for
 * {{pick}}), isTrueBoolean/isFalseBoolean. Written from the ECMAScript rules
 * and the algorithms' descriptions. Pure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugins/tavern/macros_priv.h"

/* Decodes one UTF-8 code point; *len = bytes (1 for an invalid byte). */
static uint32_t u8_next(const unsigned char *p, const unsigned char *end, size_t *len)
{
    unsigned c = p[0];
    if (c < 0x80) {
        *len = 1;
        return c;
    }
    size_t need = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : 9;
    if (need == 9 || p + need >= end) {
        *len = 1;
        return 0xFFFD;
    }
    uint32_t cp = need == 1 ? (c & 0x1F) : need == 2 ? (c & 0x0F) : (c & 0x07);
    for (size_t i = 1; i <= need; i++) {
        if ((p[i] & 0xC0) != 0x80) {
            *len = 1;
            return 0xFFFD;
        }
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    *len = need + 1;
    return cp;
}

size_t cdsh__js_space(const char *p, const char *end)
{
    if (p >= end)
        return 0;
    unsigned char c = (unsigned char)*p;
    if (c == ' ' || (c >= 9 && c <= 13))
        return 1;
    if (c < 0x80)
        return 0;
    size_t len;
    uint32_t cp = u8_next((const unsigned char *)p, (const unsigned char *)end, &len);
    if (cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
        cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000 || cp == 0xFEFF)
        return len;
    return 0;
}

/* Bytes of JavaScript whitespace ending at end (> start), or 0. */
static size_t js_space_before(const char *start, const char *end)
{
    for (size_t k = 1; k <= 3 && end - (ptrdiff_t)k >= start; k++) {
        const char *p = end - k;
        if (k > 1 && ((unsigned char)*p & 0xC0) == 0x80)
            continue;
        size_t l = cdsh__js_space(p, end);
        return l == k ? k : 0;
    }
    return 0;
}

void cdsh__js_trim(const char **s, size_t *n)
{
    const char *p = *s, *e = *s + *n;
    size_t l;
    while ((l = cdsh__js_space(p, e)))
        p += l;
    while (e > p && (l = js_space_before(p, e)))
        e -= l;
    *s = p;
    *n = (size_t)(e - p);
}

static bool all_digits(const char *s, size_t n, int base)
{
    if (!n)
        return false;
    for (size_t i = 0; i < n; i++) {
        int c = s[i], v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'z' ? c - 'a' + 10
                                                         : c >= 'A' && c <= 'Z' ? c - 'A' + 10
                                                                                : 99;
        if (v >= base)
            return false;
    }
    return true;
}

bool cdsh__js_to_number(const char *s, size_t n, double *out)
{
    cdsh__js_trim(&s, &n);
    if (!n) {
        *out = 0;
        return true;
    }
    if (n > 2 && s[0] == '0' && strchr("xXoObB", s[1])) {
        int base = (s[1] | 0x20) == 'x' ? 16 : (s[1] | 0x20) == 'o' ? 8 : 2;
        if (!all_digits(s + 2, n - 2, base))
            return false;
        double v = 0;
        for (size_t i = 2; i < n; i++) {
            int c = s[i];
            v = v * base + (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
        }
        *out = v;
        return true;
    }
    const char *p = s, *e = s + n;
    bool neg = false;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    if ((size_t)(e - p) == 8 && !memcmp(p, "Infinity", 8)) {
        *out = neg ? -INFINITY : INFINITY;
        return true;
    }
    size_t ip = 0, fp = 0;
    while (p + ip < e && p[ip] >= '0' && p[ip] <= '9')
        ip++;
    const char *q = p + ip;
    if (q < e && *q == '.') {
        q++;
        while (q + fp < e && q[fp] >= '0' && q[fp] <= '9')
            fp++;
        q += fp;
    }
    if (!ip && !fp)
        return false;
    if (q < e && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < e && (*q == '+' || *q == '-'))
            q++;
        size_t xd = 0;
        while (q + xd < e && q[xd] >= '0' && q[xd] <= '9')
            xd++;
        if (!xd)
            return false;
        q += xd;
    }
    if (q != e)
        return false;
    char buf[512];
    char *heap = NULL, *b = buf;
    if (n >= sizeof buf && !(b = heap = malloc(n + 1)))
        return false;
    memcpy(b, s, n);
    b[n] = 0;
    *out = strtod(b, NULL);
    free(heap);
    return true;
}

void cdsh__js_number_str(double d, char *buf)
{
    if (isnan(d)) {
        strcpy(buf, "NaN");
        return;
    }
    if (isinf(d)) {
        strcpy(buf, d < 0 ? "-Infinity" : "Infinity");
        return;
    }
    if (d == 0) {
        strcpy(buf, "0");
        return;
    }
    /* Shortest round-tripping digits. */
    char tmp[40];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, d);
        if (strtod(tmp, NULL) == d)
            break;
    }
    /* tmp: [-]d[.ddd]e±x */
    char digits[24];
    size_t k = 0;
    const char *p = tmp;
    bool neg = *p == '-';
    if (neg)
        p++;
    for (; *p && *p != 'e'; p++)
        if (*p != '.')
            digits[k++] = *p;
    while (k > 1 && digits[k - 1] == '0')
        k--;
    digits[k] = 0;
    int n = atoi(p + 1) + 1; /* decimal point position */
    char *o = buf;
    if (neg)
        *o++ = '-';
    if ((int)k <= n && n <= 21) {
        memcpy(o, digits, k);
        o += k;
        for (int i = (int)k; i < n; i++)
            *o++ = '0';
    } else if (0 < n && n <= 21) {
        memcpy(o, digits, (size_t)n);
        o += n;
        *o++ = '.';
        memcpy(o, digits + n, k - (size_t)n);
        o += k - (size_t)n;
    } else if (-6 < n && n <= 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -n; i++)
            *o++ = '0';
        memcpy(o, digits, k);
        o += k;
    } else {
        *o++ = digits[0];
        if (k > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, k - 1);
            o += k - 1;
        }
        o += sprintf(o, "e%c%d", n - 1 < 0 ? '-' : '+', abs(n - 1));
    }
    *o = 0;
}

uint64_t cdsh__js_utf16_len(const char *s, size_t n)
{
    uint64_t u = 0;
    const unsigned char *p = (const unsigned char *)s, *e = p + n;
    while (p < e) {
        size_t l;
        uint32_t cp = u8_next(p, e, &l);
        u += cp >= 0x10000 ? 2 : 1;
        p += l;
    }
    return u;
}

static uint32_t imul(uint32_t a, uint32_t b)
{
    return a * b;
}

double cdsh__js_string_hash(const char *s, size_t n)
{
    uint32_t h1 = 0xdeadbeefu, h2 = 0x41c6ce57u;
    const unsigned char *p = (const unsigned char *)s, *e = p + n;
    while (p < e) {
        size_t l;
        uint32_t cp = u8_next(p, e, &l);
        p += l;
        uint32_t units[2];
        int nu = 0;
        if (cp >= 0x10000) {
            units[nu++] = 0xD800 + ((cp - 0x10000) >> 10);
            units[nu++] = 0xDC00 + ((cp - 0x10000) & 0x3FF);
        } else {
            units[nu++] = cp;
        }
        for (int i = 0; i < nu; i++) {
            h1 = imul(h1 ^ units[i], 2654435761u);
            h2 = imul(h2 ^ units[i], 1597334677u);
        }
    }
    uint32_t a = imul(h1 ^ (h1 >> 16), 2246822507u) ^ imul(h2 ^ (h2 >> 13), 3266489909u);
    uint32_t b = imul(h2 ^ (h2 >> 16), 2246822507u) ^ imul(a ^ (a >> 13), 3266489909u);
    return 4294967296.0 * (double)(b & 2097151u) + (double)a;
}

static double arc4_g(js_arc4 *a, int count)
{
    double r = 0;
    uint8_t i = a->i, j = a->j;
    while (count--) {
        i = (uint8_t)(i + 1);
        uint8_t t = a->s[i];
        j = (uint8_t)(j + t);
        a->s[i] = a->s[j];
        a->s[j] = t;
        r = r * 256 + a->s[(uint8_t)(a->s[i] + t)];
    }
    a->i = i;
    a->j = j;
    return r;
}

void cdsh__js_arc4_seed(js_arc4 *a, const char *seed, size_t n)
{
    /* mixkey: key bytes from the seed's char codes with a running smear. */
    int key[256];
    bool set[256] = {false};
    size_t keylen = 0;
    int smear = 0;
    for (size_t j = 0; j < n; j++) {
        int slot = (int)(j & 255);
        smear ^= set[slot] ? key[slot] * 19 : 0;
        key[slot] = 255 & (smear + (unsigned char)seed[j]);
        set[slot] = true;
        if (j + 1 > keylen)
            keylen = j + 1 > 256 ? 256 : j + 1;
    }
    if (!keylen) {
        key[0] = 0;
        keylen = 1;
    }
    for (int i = 0; i < 256; i++)
        a->s[i] = (uint8_t)i;
    uint8_t j = 0;
    for (int i = 0; i < 256; i++) {
        uint8_t t = a->s[i];
        j = (uint8_t)(j + key[(size_t)i % keylen] + t);
        a->s[i] = a->s[j];
        a->s[j] = t;
    }
    a->i = a->j = 0;
    arc4_g(a, 256); /* RC4-drop[256] */
}

double cdsh__js_arc4_next(js_arc4 *a)
{
    const double significance = 4503599627370496.0, overflow = 9007199254740992.0;
    double n = arc4_g(a, 6), d = 281474976710656.0, x = 0;
    while (n < significance) {
        n = (n + x) * 256;
        d *= 256;
        x = arc4_g(a, 1);
    }
    while (n >= overflow) {
        n /= 2;
        d /= 2;
        x = (double)((uint32_t)x >> 1);
    }
    return (n + x) / d;
}

static bool bool_word(const char *s, size_t n, const char *const *words)
{
    cdsh__js_trim(&s, &n);
    for (; *words; words++)
        if (strlen(*words) == n && !strncasecmp(s, *words, n))
            return true;
    return false;
}

bool cdsh__js_false_bool(const char *s, size_t n)
{
    static const char *const W[] = {"off", "false", "0", NULL};
    return bool_word(s, n, W);
}

bool cdsh__js_true_bool(const char *s, size_t n)
{
    static const char *const W[] = {"on", "true", "1", NULL};
    return bool_word(s, n, W);
}
