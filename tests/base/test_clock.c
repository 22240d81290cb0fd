/* test_clock.c — monotonic and wall clocks, ISO-8601 formatting/parsing. */
#include "support/testkit.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"

static void monotonic_clock_advances_with_sleep(void **state)
{
    (void)state;
    int64_t a_ms = cdsh_clock_mono_ms(), a_ns = cdsh_clock_mono_ns();
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
    int64_t b_ms = cdsh_clock_mono_ms(), b_ns = cdsh_clock_mono_ns();
    assert_true(b_ms - a_ms >= 20);
    assert_true(b_ns - a_ns >= 20 * 1000000LL);
}

static void wall_clock_matches_time(void **state)
{
    (void)state;
    /* bracketed by time() before and after, so a preemption between the
     * two reads cannot fail it; +-1 s for time()'s coarser clock */
    int64_t before = (int64_t)time(NULL);
    int64_t ms = cdsh_clock_wall_ms();
    int64_t after = (int64_t)time(NULL);
    assert_true(ms / 1000 >= before - 1 && ms / 1000 <= after + 1);
}

static void format_gives_utc_with_milliseconds(void **state)
{
    (void)state;
    char buf[CDSH_ISO8601_MAX];
    assert_int_equal(cdsh_clock_format_iso8601(1796158037123LL, buf, sizeof buf), 24);
    assert_string_equal(buf, "2026-12-01T20:47:17.123Z");
    assert_int_equal(cdsh_clock_format_iso8601(0, buf, sizeof buf), 24);
    assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
    assert_int_equal(cdsh_clock_format_iso8601(-1, buf, sizeof buf), 24);
    assert_string_equal(buf, "1969-12-31T23:59:59.999Z");
    assert_int_equal(cdsh_clock_format_iso8601(951782400000LL, buf, sizeof buf), 24);
    assert_string_equal(buf, "2000-02-29T00:00:00.000Z");
    assert_int_equal(cdsh_clock_format_iso8601(0, buf, 24), 0);
    assert_int_equal(cdsh_clock_format_iso8601(253402300800000LL, buf, sizeof buf), 0); /* 10000 */
}

static void parse_reads_z_and_offsets(void **state)
{
    (void)state;
    int64_t ms = 0;
    assert_int_equal(cdsh_clock_parse_iso8601("2026-12-01T20:47:17.123Z", &ms, NULL), 0);
    assert_int_equal(ms, 1796158037123LL);
    assert_int_equal(cdsh_clock_parse_iso8601("2026-12-01T20:47:17Z", &ms, NULL), 0);
    assert_int_equal(ms, 1796158037000LL);
    assert_int_equal(cdsh_clock_parse_iso8601("2026-12-02T04:47:17.1+08:00", &ms, NULL), 0);
    assert_int_equal(ms, 1796158037100LL);
    assert_int_equal(cdsh_clock_parse_iso8601("2026-12-01T15:17:17.123456-05:30", &ms, NULL), 0);
    assert_int_equal(ms, 1796158037123LL);
    assert_int_equal(cdsh_clock_parse_iso8601("1969-12-31t23:59:59.999z", &ms, NULL), 0);
    assert_int_equal(ms, -1);
}

static void parse_round_trips_format(void **state)
{
    (void)state;
    static const int64_t samples[] = {
        0, 1, -86400001LL, 951782400000LL, 4102444799999LL, 1796158037123LL};
    for (size_t i = 0; i < sizeof samples / sizeof *samples; i++) {
        char buf[CDSH_ISO8601_MAX];
        int64_t back = 42;
        assert_true(cdsh_clock_format_iso8601(samples[i], buf, sizeof buf) > 0);
        assert_int_equal(cdsh_clock_parse_iso8601(buf, &back, NULL), 0);
        assert_int_equal(back, samples[i]);
    }
}

static int64_t ts_ns(const struct timespec *ts)
{
    return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

/* Lies between (before + ms) and (after + ms) for the clock read inside it,
 * with tv_nsec normalised — whatever the milliseconds add up to. */
static void deadline_is_normalised_and_after_ms_from_now(void **state)
{
    (void)state;
    const int64_t ms[] = {0, 1, 999, 1000, 1001, 1999, 123456, 86400000};
    const clockid_t clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC};
    for (size_t c = 0; c < 2; c++)
        for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
            struct timespec before, at, after;
            clock_gettime(clocks[c], &before);
            cdsh_clock_deadline(clocks[c], ms[i], &at);
            clock_gettime(clocks[c], &after);
            assert_true(at.tv_nsec >= 0 && at.tv_nsec < 1000000000);
            assert_true(ts_ns(&at) >= ts_ns(&before) + ms[i] * 1000000);
            assert_true(ts_ns(&at) <= ts_ns(&after) + ms[i] * 1000000);
        }
    /* negative: now */
    struct timespec before, at, after;
    clock_gettime(CLOCK_MONOTONIC, &before);
    cdsh_clock_deadline(CLOCK_MONOTONIC, -5, &at);
    clock_gettime(CLOCK_MONOTONIC, &after);
    assert_true(ts_ns(&at) >= ts_ns(&before) && ts_ns(&at) <= ts_ns(&after));
}

static void parse_rejects_malformed_and_impossible_dates(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "2026-12-01",
        "2026-12-01T20:47:17",
        "2026-13-01T00:00:00Z",
        "2026-02-29T00:00:00Z",
        "1900-02-29T00:00:00Z",
        "2026-04-31T00:00:00Z",
        "2026-12-01T24:00:00Z",
        "2026-12-01T23:60:00Z",
        "2026-12-01T23:59:60Z",
        "2026-12-01T20:47:17.Z",
        "2026-12-01T20:47:17Zjunk",
        "2026-12-01T20:47:17+0800",
        "2026-1-01T00:00:00Z",
        "2026-12-01T20:47:17+24:00",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int64_t ms = 7;
        cdsh_error err = {0};
        assert_int_equal(cdsh_clock_parse_iso8601(bad[i], &ms, &err), CDSH_EINVAL);
        assert_int_equal(ms, 7);
        assert_string_equal(err.code, "BAD_TIME");
        assert_non_null(strstr(err.message, "is not an ISO-8601 UTC timestamp"));
    }
    int64_t ms;
    assert_int_equal(cdsh_clock_parse_iso8601("2000-02-29T00:00:00Z", &ms, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(monotonic_clock_advances_with_sleep),
        cmocka_unit_test(wall_clock_matches_time),
        cmocka_unit_test(format_gives_utc_with_milliseconds),
        cmocka_unit_test(parse_reads_z_and_offsets),
        cmocka_unit_test(parse_round_trips_format),
        cmocka_unit_test(parse_rejects_malformed_and_impossible_dates),
        cmocka_unit_test(deadline_is_normalised_and_after_ms_from_now),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
