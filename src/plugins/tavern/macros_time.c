/* macros_time.c — the moment.js behaviour ST's time macros use, in the en
 * locale: format() tokens (with LT/LL… long formats, [literal] and \x
 * escapes), duration humanize() with moment's thresholds, and ISO 8601
 * parsing for {{timeDiff}}. Written from moment's documentation. Pure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/tavern/macros_priv.h"

static const char *const MONTHS[] = {"January", "February", "March",     "April",
                                     "May",     "June",     "July",      "August",
                                     "September", "October", "November", "December"};
static const char *const DAYS[] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                   "Thursday", "Friday", "Saturday"};

typedef struct tmx {
    int year, mon, mday, hour, min, sec, ms, wday, yday; /* yday 0-based */
    int64_t ms_epoch;
    int off_min;
} tmx;

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

static void breakdown(int64_t ms, int off_min, tmx *t)
{
    int64_t local = ms + (int64_t)off_min * 60000;
    int64_t days = floor_div(local, 86400000);
    int64_t rem = local - days * 86400000;
    time_t secs = (time_t)(days * 86400);
    struct tm tm;
    gmtime_r(&secs, &tm);
    t->year = tm.tm_year + 1900;
    t->mon = tm.tm_mon;
    t->mday = tm.tm_mday;
    t->wday = tm.tm_wday;
    t->yday = tm.tm_yday;
    t->hour = (int)(rem / 3600000);
    t->min = (int)(rem / 60000 % 60);
    t->sec = (int)(rem / 1000 % 60);
    t->ms = (int)(rem % 1000);
    t->ms_epoch = ms;
    t->off_min = off_min;
}

static bool leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Weekday (0 = Sunday) of year-01-01 + (day - 1). */
static int wday_of(int year, int day)
{
    struct tm tm = {.tm_year = year - 1900, .tm_mon = 0, .tm_mday = day, .tm_hour = 12};
    time_t t = timegm(&tm);
    gmtime_r(&t, &tm);
    return tm.tm_wday;
}

static int first_week_offset(int year, int dow, int doy)
{
    int fwd = 7 + dow - doy;
    int fwdlw = (7 + wday_of(year, fwd) - dow) % 7;
    return -fwdlw + fwd - 1;
}

static int weeks_in_year(int year, int dow, int doy)
{
    int a = first_week_offset(year, dow, doy), b = first_week_offset(year + 1, dow, doy);
    return ((leap(year) ? 366 : 365) - a + b) / 7;
}

/* moment's weekOfYear: week number and week-year. */
static void week_of_year(const tmx *t, int dow, int doy, int *week, int *wyear)
{
    int off = first_week_offset(t->year, dow, doy);
    int w = (int)floor((double)(t->yday + 1 - off - 1) / 7) + 1;
    if (w < 1) {
        *wyear = t->year - 1;
        *week = w + weeks_in_year(*wyear, dow, doy);
    } else if (w > weeks_in_year(t->year, dow, doy)) {
        *week = w - weeks_in_year(t->year, dow, doy);
        *wyear = t->year + 1;
    } else {
        *week = w;
        *wyear = t->year;
    }
}

static void ordinal(cdsh_strbuf *out, int n)
{
    int b = n % 10;
    const char *sfx = (n % 100) / 10 == 1 ? "th" : b == 1 ? "st" : b == 2 ? "nd" : b == 3 ? "rd" : "th";
    cdsh_strbuf_appendf(out, "%d%s", n, sfx);
}

static void zfill(cdsh_strbuf *out, long long v, int width)
{
    cdsh_strbuf_appendf(out, "%s%0*lld", v < 0 ? "-" : "", width, v < 0 ? -v : v);
}

/* The long formats of the en locale. */
static const char *long_format(const char *tok, size_t n)
{
    static const struct {
        const char *k, *v;
    } L[] = {{"LTS", "h:mm:ss A"},
             {"LT", "h:mm A"},
             {"LLLL", "dddd, MMMM D, YYYY h:mm A"},
             {"LLL", "MMMM D, YYYY h:mm A"},
             {"LL", "MMMM D, YYYY"},
             {"L", "MM/DD/YYYY"},
             {"llll", "ddd, MMM D, YYYY h:mm A"},
             {"lll", "MMM D, YYYY h:mm A"},
             {"ll", "MMM D, YYYY"},
             {"l", "M/D/YYYY"}};
    for (size_t i = 0; i < sizeof L / sizeof L[0]; i++)
        if (strlen(L[i].k) == n && !memcmp(L[i].k, tok, n))
            return L[i].v;
    return NULL;
}

/* Expands LT/LL… (outside [brackets] and \escapes), as moment's expandFormat. */
static void expand_long(const char *f, size_t n, cdsh_strbuf *out)
{
    for (size_t i = 0; i < n;) {
        if (f[i] == '[') {
            const char *close = memchr(f + i + 1, ']', n - i - 1);
            const char *open = memchr(f + i + 1, '[', n - i - 1);
            if (close && (!open || open > close)) {
                size_t l = (size_t)(close - (f + i)) + 1;
                cdsh_strbuf_append(out, f + i, l);
                i += l;
                continue;
            }
        }
        if (f[i] == '\\' && i + 1 < n) {
            cdsh_strbuf_append(out, f + i, 2);
            i += 2;
            continue;
        }
        size_t l = 0;
        if (f[i] == 'L') {
            if (i + 3 <= n && !memcmp(f + i, "LTS", 3))
                l = 3;
            else if (i + 2 <= n && !memcmp(f + i, "LT", 2))
                l = 2;
            else
                while (l < 4 && i + l < n && f[i + l] == 'L')
                    l++;
        } else if (f[i] == 'l') {
            while (l < 4 && i + l < n && f[i + l] == 'l')
                l++;
        }
        const char *v = l ? long_format(f + i, l) : NULL;
        if (v) {
            cdsh_strbuf_append_str(out, v);
            i += l;
        } else {
            cdsh_strbuf_append_char(out, f[i++]);
        }
    }
}

/* Length of the format token at f (moment's formattingTokens order). */
static size_t token_len(const char *f, size_t n)
{
    static const char *const T[] = {"Hmmss", "hmmss", "Hmm", "hmm", "MMMM", "MMM", "Mo", "MM",
                                    "DDDo", "DDDD", "DDD", "Do", "DD", "dddd", "ddd", "dd", "do",
                                    "wo", "ww", "Wo", "WW", "Qo", "YYYYYY", "YYYYY", "YYYY", "YY",
                                    "GGGGG", "GGGG", "GG", "ggggg", "gggg", "gg", "hh", "HH",
                                    "kk", "mm", "ss", "ZZ", "zz"};
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        size_t l = strlen(T[i]);
        if (l <= n && !memcmp(f, T[i], l))
            return l;
    }
    if (f[0] == 'S') {
        size_t l = 1;
        while (l < 9 && l < n && f[l] == 'S')
            l++;
        return l;
    }
    return 1;
}

static void emit(const tmx *t, const char *k, size_t l, cdsh_strbuf *out)
{
#define IS(s) (l == strlen(s) && !memcmp(k, s, l))
    int h12 = t->hour % 12 ? t->hour % 12 : 12;
    int week, wyear;
    if (IS("YYYY"))
        t->year <= 9999 ? zfill(out, t->year, 4) : (void)cdsh_strbuf_appendf(out, "+%d", t->year);
    else if (IS("Y"))
        t->year <= 9999 ? zfill(out, t->year, 4) : (void)cdsh_strbuf_appendf(out, "+%d", t->year);
    else if (IS("YYYYY"))
        zfill(out, t->year, 5);
    else if (IS("YYYYYY"))
        cdsh_strbuf_appendf(out, "%c%06d", t->year < 0 ? '-' : '+', abs(t->year));
    else if (IS("YY"))
        zfill(out, ((t->year % 100) + 100) % 100, 2);
    else if (IS("Q"))
        cdsh_strbuf_appendf(out, "%d", t->mon / 3 + 1);
    else if (IS("Qo"))
        ordinal(out, t->mon / 3 + 1);
    else if (IS("M"))
        cdsh_strbuf_appendf(out, "%d", t->mon + 1);
    else if (IS("Mo"))
        ordinal(out, t->mon + 1);
    else if (IS("MM"))
        zfill(out, t->mon + 1, 2);
    else if (IS("MMM"))
        cdsh_strbuf_append(out, MONTHS[t->mon], 3);
    else if (IS("MMMM"))
        cdsh_strbuf_append_str(out, MONTHS[t->mon]);
    else if (IS("D"))
        cdsh_strbuf_appendf(out, "%d", t->mday);
    else if (IS("Do"))
        ordinal(out, t->mday);
    else if (IS("DD"))
        zfill(out, t->mday, 2);
    else if (IS("DDD"))
        cdsh_strbuf_appendf(out, "%d", t->yday + 1);
    else if (IS("DDDo"))
        ordinal(out, t->yday + 1);
    else if (IS("DDDD"))
        zfill(out, t->yday + 1, 3);
    else if (IS("d") || IS("e"))
        cdsh_strbuf_appendf(out, "%d", t->wday);
    else if (IS("do"))
        ordinal(out, t->wday);
    else if (IS("dd"))
        cdsh_strbuf_append(out, DAYS[t->wday], 2);
    else if (IS("ddd"))
        cdsh_strbuf_append(out, DAYS[t->wday], 3);
    else if (IS("dddd"))
        cdsh_strbuf_append_str(out, DAYS[t->wday]);
    else if (IS("E"))
        cdsh_strbuf_appendf(out, "%d", t->wday ? t->wday : 7);
    else if (IS("w") || IS("wo") || IS("ww") || IS("gg") || IS("gggg") || IS("ggggg")) {
        week_of_year(t, 0, 6, &week, &wyear);
        if (IS("w"))
            cdsh_strbuf_appendf(out, "%d", week);
        else if (IS("wo"))
            ordinal(out, week);
        else if (IS("ww"))
            zfill(out, week, 2);
        else if (IS("gg"))
            zfill(out, ((wyear % 100) + 100) % 100, 2);
        else
            zfill(out, wyear, l);
    } else if (IS("W") || IS("Wo") || IS("WW") || IS("GG") || IS("GGGG") || IS("GGGGG")) {
        week_of_year(t, 1, 4, &week, &wyear);
        if (IS("W"))
            cdsh_strbuf_appendf(out, "%d", week);
        else if (IS("Wo"))
            ordinal(out, week);
        else if (IS("WW"))
            zfill(out, week, 2);
        else if (IS("GG"))
            zfill(out, ((wyear % 100) + 100) % 100, 2);
        else
            zfill(out, wyear, l);
    } else if (IS("H"))
        cdsh_strbuf_appendf(out, "%d", t->hour);
    else if (IS("HH"))
        zfill(out, t->hour, 2);
    else if (IS("h"))
        cdsh_strbuf_appendf(out, "%d", h12);
    else if (IS("hh"))
        zfill(out, h12, 2);
    else if (IS("k"))
        cdsh_strbuf_appendf(out, "%d", t->hour ? t->hour : 24);
    else if (IS("kk"))
        zfill(out, t->hour ? t->hour : 24, 2);
    else if (IS("hmm") || IS("hmmss") || IS("Hmm") || IS("Hmmss")) {
        cdsh_strbuf_appendf(out, "%d%02d", k[0] == 'h' ? h12 : t->hour, t->min);
        if (l == 5)
            cdsh_strbuf_appendf(out, "%02d", t->sec);
    } else if (IS("m"))
        cdsh_strbuf_appendf(out, "%d", t->min);
    else if (IS("mm"))
        zfill(out, t->min, 2);
    else if (IS("s"))
        cdsh_strbuf_appendf(out, "%d", t->sec);
    else if (IS("ss"))
        zfill(out, t->sec, 2);
    else if (k[0] == 'S') {
        char ms[16];
        snprintf(ms, sizeof ms, "%03d", t->ms % 1000);
        for (size_t i = 0; i < l; i++)
            cdsh_strbuf_append_char(out, i < 3 ? ms[i] : '0');
    } else if (IS("a"))
        cdsh_strbuf_append_str(out, t->hour > 11 ? "pm" : "am");
    else if (IS("A"))
        cdsh_strbuf_append_str(out, t->hour > 11 ? "PM" : "AM");
    else if (IS("Z") || IS("ZZ")) {
        int o = t->off_min < 0 ? -t->off_min : t->off_min;
        cdsh_strbuf_appendf(out, "%c%02d%s%02d", t->off_min < 0 ? '-' : '+', o / 60, IS("Z") ? ":" : "",
                            o % 60);
    } else if (IS("X"))
        cdsh_strbuf_appendf(out, "%lld", (long long)floor_div(t->ms_epoch, 1000));
    else if (IS("x"))
        cdsh_strbuf_appendf(out, "%lld", (long long)t->ms_epoch);
    else if (IS("z") || IS("zz"))
        ; /* moment without timezone support prints nothing */
    else
        cdsh_strbuf_append(out, k, l);
#undef IS
}

void cdsh__moment_format(int64_t ms, int off_min, const char *fmt, size_t n, cdsh_strbuf *out)
{
    tmx t;
    breakdown(ms, off_min, &t);
    cdsh_strbuf f;
    cdsh_strbuf_init(&f);
    /* moment expands long formats up to five times (a long format can hold another). */
    cdsh_strbuf_append(&f, fmt, n);
    for (int round = 0; round < 5; round++) {
        cdsh_strbuf g;
        cdsh_strbuf_init(&g);
        expand_long(f.data ? f.data : "", f.len, &g);
        bool same = g.len == f.len && (!g.len || !memcmp(g.data, f.data, g.len));
        cdsh_strbuf_deinit(&f);
        f = g;
        if (same)
            break;
    }
    const char *s = f.data ? f.data : "";
    size_t len = f.len;
    for (size_t i = 0; i < len;) {
        if (s[i] == '[') {
            const char *close = memchr(s + i + 1, ']', len - i - 1);
            const char *open = memchr(s + i + 1, '[', len - i - 1);
            if (close && (!open || open > close)) {
                cdsh_strbuf_append(out, s + i + 1, (size_t)(close - s - i - 1));
                i = (size_t)(close - s) + 1;
                continue;
            }
        }
        bool esc = s[i] == '\\' && i + 1 < len;
        size_t at = i + (esc ? 1 : 0);
        size_t l = token_len(s + at, len - at);
        /* a multi-byte character is one "." token */
        if (l == 1 && ((unsigned char)s[at] & 0x80)) {
            while (at + l < len && ((unsigned char)s[at + l] & 0xC0) == 0x80)
                l++;
        }
        if (esc)
            cdsh_strbuf_append(out, s + at, l); /* \X: the token literally */
        else
            emit(&t, s + at, l, out);
        i = at + l;
    }
    cdsh_strbuf_deinit(&f);
}

void cdsh__moment_humanize(double ms, bool with_suffix, cdsh_strbuf *out)
{
    if (isnan(ms)) {
        cdsh_strbuf_append_str(out, "Invalid date");
        return;
    }
    double a = fabs(ms);
    double seconds = round(a / 1000), minutes = round(a / 6e4), hours = round(a / 36e5),
           days = round(a / 864e5), months = round(a / 864e5 * 4800 / 146097),
           years = round(a / 864e5 * 4800 / 146097 / 12);
    char body[64];
    if (seconds <= 44)
        snprintf(body, sizeof body, "a few seconds");
    else if (minutes <= 1)
        snprintf(body, sizeof body, "a minute");
    else if (minutes < 45)
        snprintf(body, sizeof body, "%.0f minutes", minutes);
    else if (hours <= 1)
        snprintf(body, sizeof body, "an hour");
    else if (hours < 22)
        snprintf(body, sizeof body, "%.0f hours", hours);
    else if (days <= 1)
        snprintf(body, sizeof body, "a day");
    else if (days < 26)
        snprintf(body, sizeof body, "%.0f days", days);
    else if (months <= 1)
        snprintf(body, sizeof body, "a month");
    else if (months < 11)
        snprintf(body, sizeof body, "%.0f months", months);
    else if (years <= 1)
        snprintf(body, sizeof body, "a year");
    else
        snprintf(body, sizeof body, "%.0f years", years);
    if (!with_suffix)
        cdsh_strbuf_append_str(out, body);
    else if (ms > 0)
        cdsh_strbuf_appendf(out, "in %s", body);
    else
        cdsh_strbuf_appendf(out, "%s ago", body);
}

static bool digits(const char *s, size_t n, size_t at, size_t cnt, int *v)
{
    if (at + cnt > n)
        return false;
    int r = 0;
    for (size_t i = 0; i < cnt; i++) {
        if (s[at + i] < '0' || s[at + i] > '9')
            return false;
        r = r * 10 + (s[at + i] - '0');
    }
    *v = r;
    return true;
}

bool cdsh__moment_parse(const char *s, size_t n, int off_min, double *ms)
{
    cdsh__js_trim(&s, &n);
    int y, mo = 1, d = 1, h = 0, mi = 0, se = 0, frac = 0;
    size_t i = 0;
    if (!digits(s, n, 0, 4, &y))
        return false;
    i = 4;
    bool ext = i < n && s[i] == '-';
    if (ext) {
        if (!digits(s, n, 5, 2, &mo))
            return false;
        i = 7;
        if (i < n && s[i] == '-') {
            if (!digits(s, n, 8, 2, &d))
                return false;
            i = 10;
        }
    } else if (n >= 8 && digits(s, n, 4, 2, &mo) && digits(s, n, 6, 2, &d)) {
        i = 8;
    } else if (n != 4) {
        return false;
    }
    bool has_off = false;
    int off = 0;
    if (i < n && (s[i] == 'T' || s[i] == ' ')) {
        i++;
        if (!digits(s, n, i, 2, &h))
            return false;
        i += 2;
        bool colon = i < n && s[i] == ':';
        if (i < n && (colon || (s[i] >= '0' && s[i] <= '9'))) {
            i += colon;
            if (!digits(s, n, i, 2, &mi))
                return false;
            i += 2;
            if (i < n && (s[i] == ':' || (!colon && s[i] >= '0' && s[i] <= '9'))) {
                i += s[i] == ':';
                if (!digits(s, n, i, 2, &se))
                    return false;
                i += 2;
                if (i < n && (s[i] == '.' || s[i] == ',')) {
                    i++;
                    int scale = 100, cnt = 0;
                    while (i < n && s[i] >= '0' && s[i] <= '9') {
                        if (cnt++ < 3)
                            frac += (s[i] - '0') * scale, scale /= 10;
                        i++;
                    }
                    if (!cnt)
                        return false;
                }
            }
        }
        if (i < n && s[i] == 'Z') {
            has_off = true;
            i++;
        } else if (i < n && (s[i] == '+' || s[i] == '-')) {
            int sign = s[i] == '-' ? -1 : 1, oh, om = 0;
            i++;
            if (!digits(s, n, i, 2, &oh))
                return false;
            i += 2;
            if (i < n && s[i] == ':')
                i++;
            if (i < n && !digits(s, n, i, 2, &om))
                return false;
            if (i < n)
                i += 2;
            has_off = true;
            off = sign * (oh * 60 + om);
        }
    }
    if (i != n || mo < 1 || mo > 12 || d < 1 || h > 24 || mi > 59 || se > 59)
        return false;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (d > mdays[mo - 1] + (mo == 2 && leap(y)))
        return false;
    if (h == 24 && (mi || se || frac))
        return false;
    struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi,
                    .tm_sec = se};
    double t = (double)timegm(&tm) * 1000 + frac;
    t -= (double)(has_off ? off : off_min) * 60000;
    *ms = t;
    return true;
}
