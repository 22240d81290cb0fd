/* clock.h — time sources and ISO-8601 UTC timestamps. Monotonic time is for
 * durations and deadlines; wall-clock time is for records people read.
 * All functions are thread-safe (no static buffers, no TZ state). */
#ifndef CDSH_BASE_CLOCK_H
#define CDSH_BASE_CLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/err.h"

/* The time after_ms milliseconds from now (negative: now) on `clock` — the
 * clock of the condition variable it is for, CLOCK_REALTIME by default or
 * CLOCK_MONOTONIC — normalised for pthread_cond_timedwait. */
void cdsh_clock_deadline(clockid_t clock, int64_t after_ms, struct timespec *out);

/* Monotonic clock (CLOCK_MONOTONIC), from an arbitrary origin. */
int64_t cdsh_clock_mono_ms(void);
int64_t cdsh_clock_mono_ns(void);

/* Wall clock: milliseconds since the Unix epoch (CLOCK_REALTIME). */
int64_t cdsh_clock_wall_ms(void);

#define CDSH_ISO8601_MAX 32 /* room for any formatted timestamp plus NUL */

/* Formats ms since the epoch as "2026-11-29T20:47:17.123Z" (always UTC,
 * always milliseconds, 24 chars for years 0000..9999). Negative times round
 * toward the past. Returns the length, or 0 if out is too small or the
 * year is outside 0..9999. */
size_t cdsh_clock_format_iso8601(int64_t epoch_ms, char *out, size_t out_size);

/* Parses "YYYY-MM-DDTHH:MM:SS[.fff...]" followed by "Z" or "+hh:mm"/"-hh:mm"
 * ('t'/'z' and a space instead of 'T' accepted) into ms since the epoch.
 * Fractions beyond milliseconds are truncated; a leap second (:60) is
 * refused. The whole string must match. CDSH_EINVAL with code "BAD_TIME" and
 * a message quoting the input on failure. */
int cdsh_clock_parse_iso8601(const char *text, int64_t *epoch_ms, cdsh_error *err);

#endif
