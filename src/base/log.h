/* log.h — the process-wide diagnostic log. One line per record:
 *   2026-11-29T20:47:17.123Z WARN  module: message
 * (UTC time with milliseconds, level padded to 5, module, message). Every
 * message passes through cdsh_redact_dup before reaching the sink, and
 * newlines, other control characters and invalid UTF-8 in it are escaped
 * (\n, \t, \u001b, U+FFFD) so a record can never forge another line.
 * Global state (documented exception): the level and the sink, behind one
 * mutex; records from concurrent threads never interleave. Thread-safe. */
#ifndef CDSH_BASE_LOG_H
#define CDSH_BASE_LOG_H

#include <stdarg.h>
#include <stdbool.h>

#include "base/err.h"

typedef enum cdsh_log_level {
    CDSH_LOG_ERROR = 0,
    CDSH_LOG_WARN = 1,
    CDSH_LOG_INFO = 2,
    CDSH_LOG_DEBUG = 3,
    CDSH_LOG_TRACE = 4,
} cdsh_log_level;

#define CDSH_LOG_DEFAULT_LEVEL CDSH_LOG_WARN

/* ---- control ----------------------------------------------------------------
 * keep-public: the log's control API (level, sink); the level follows CDSH_LOG
 * by default and tests/base/test_log.c drives these directly. */

/* Parses "error", "warn" (or "warning"), "info", "debug", "trace",
 * case-insensitively. 0, or CDSH_EINVAL with code "BAD_LOG_LEVEL". */
int cdsh_log_level_parse(const char *text, cdsh_log_level *out, cdsh_error *err);

/* "ERROR", "WARN", "INFO", "DEBUG", "TRACE" ("?" for anything else). */
const char *cdsh_log_level_name(cdsh_log_level level);

/* (Re)reads CDSH_LOG: unset or empty means CDSH_LOG_DEFAULT_LEVEL; an invalid
 * value also falls back to the default, logs a WARN record saying so and
 * returns CDSH_EINVAL. The first record or level query does this
 * implicitly unless cdsh_log_set_level was called before. */
int cdsh_log_init_from_env(void);

void cdsh_log_set_level(cdsh_log_level level);
cdsh_log_level cdsh_log_get_level(void);

/* True if a record at `level` would be written (cheap; use it to skip
 * building expensive messages). */
bool cdsh_log_enabled(cdsh_log_level level);

/* Sends records to the file at path (created 0600 if missing, appended to),
 * replacing the current sink (a previous file is closed). The caller picks
 * the path (normally $CDSH_HOME/logs/cdsh.log) and creates its directory.
 * 0, or CDSH_EIO / CDSH_ENOTFOUND with code "LOG_OPEN_FAILED" naming the path. */
int cdsh_log_open_file(const char *path, cdsh_error *err);

/* Sends records to stderr again (the initial sink), closing any file. */
void cdsh_log_use_stderr(void);

/* Writes one record if level is enabled. module is a short name ("host",
 * "rpc"; NULL prints "-"). Records are flushed before returning. */
void cdsh_log_write(cdsh_log_level level, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define cdsh_log_error(module, ...) cdsh_log_write(CDSH_LOG_ERROR, module, __VA_ARGS__)
#define cdsh_log_warn(module, ...) cdsh_log_write(CDSH_LOG_WARN, module, __VA_ARGS__)
#define cdsh_log_info(module, ...) cdsh_log_write(CDSH_LOG_INFO, module, __VA_ARGS__)
#define cdsh_log_debug(module, ...) cdsh_log_write(CDSH_LOG_DEBUG, module, __VA_ARGS__)
#define cdsh_log_trace(module, ...) cdsh_log_write(CDSH_LOG_TRACE, module, __VA_ARGS__)

#endif
