/* clock.c — clock_gettime wrappers and ISO-8601 conversion using civil-date
 * arithmetic (Howard Hinnant's days_from_civil), so no timegm/TZ involvement. */
#include "base/clock.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int64_t read_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t cdsh_clock_mono_ns(void)
{
    return read_ns(CLOCK_MONOTONIC);
}

void cdsh_clock_deadline(clockid_t clock, int64_t after_ms, struct timespec *out)
{
    clock_gettime(clock, out);
    if (after_ms < 0)
        after_ms = 0;
    int64_t ns = (int64_t)out->tv_nsec + (after_ms % 1000) * 1000000;
    out->tv_sec += (time_t)(after_ms / 1000 + ns / 1000000000);
    out->tv_nsec = (long)(ns % 1000000000);
}

int64_t cdsh_clock_mono_ms(void)
{
    return read_ns(CLOCK_MONOTONIC) / 1000000;
}

int64_t cdsh_clock_wall_ms(void)
{
    return read_ns(CLOCK_REALTIME) / 1000000;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = floor_div(y, 400);
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = floor_div(z, 146097);
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

size_t cdsh_clock_format_iso8601(int64_t epoch_ms, char *out, size_t out_size)
{
    if (!out || out_size < 25)
        return 0;
    int64_t days = floor_div(epoch_ms, 86400000);
    int64_t rem = epoch_ms - days * 86400000;
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    if (y < 0 || y > 9999)
        return 0;
    int n = snprintf(out, out_size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", (int)y, m, d,
                     (int)(rem / 3600000), (int)(rem / 60000 % 60), (int)(rem / 1000 % 60),
                     (int)(rem % 1000));
    return n > 0 && (size_t)n < out_size ? (size_t)n : 0;
}

/* Reads exactly `width` digits. */
static bool digits(const char **p, int width, int *out)
{
    int v = 0;
    for (int i = 0; i < width; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (c - '0');
    }
    *p += width;
    *out = v;
    return true;
}

static bool expect(const char **p, const char *any_of)
{
    if (**p == '\0' || !strchr(any_of, **p))
        return false;
    (*p)++;
    return true;
}

int cdsh_clock_parse_iso8601(const char *text, int64_t *epoch_ms, cdsh_error *err)
{
    if (!text || !epoch_ms)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_TIME", "no timestamp given");
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const char *p = text;
    int y, mo, d, h, mi, s, ms = 0, off_h = 0, off_m = 0, sign = 0;
    if (!digits(&p, 4, &y) || !expect(&p, "-") || !digits(&p, 2, &mo) || !expect(&p, "-") ||
        !digits(&p, 2, &d) || !expect(&p, "Tt ") || !digits(&p, 2, &h) || !expect(&p, ":") ||
        !digits(&p, 2, &mi) || !expect(&p, ":") || !digits(&p, 2, &s))
        goto bad;
    if (*p == '.') {
        p++;
        int nd = 0;
        while (*p >= '0' && *p <= '9') {
            if (nd < 3)
                ms = ms * 10 + (*p - '0');
            nd++;
            p++;
        }
        if (nd == 0)
            goto bad;
        for (; nd < 3; nd++)
            ms *= 10;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p == '-' ? -1 : 1;
        p++;
        if (!digits(&p, 2, &off_h) || !expect(&p, ":") || !digits(&p, 2, &off_m) || off_h > 23 ||
            off_m > 59)
            goto bad;
    } else {
        goto bad;
    }
    if (*p != '\0')
        goto bad;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap) ||
        h > 23 || mi > 59 || s > 59)
        goto bad;
    int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
    secs -= sign * (off_h * 3600 + off_m * 60);
    *epoch_ms = secs * 1000 + ms;
    return 0;
bad:
    return cdsh_error_set(err, CDSH_EINVAL, "BAD_TIME",
                          "\"%.64s\" is not an ISO-8601 UTC timestamp like "
                          "2026-11-29T20:47:17.123Z",
                          text);
}
