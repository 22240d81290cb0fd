/* log.c — the global log sink: level filter, redaction, escaping, one locked
 * write per record. It formats and writes; rotation and choosing the log
 * path are the callers' business. */
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/redact.h"
#include "base/strbuf.h"
#include "base/utf8.h"

/* Global state, documented in log.h: `level` is atomic (-1 until first
 * set/read from the environment); `sink_file` is guarded by sink_lock. */
static atomic_int level = -1;
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *sink_file; /* NULL: stderr */

static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};

int cdsh_log_level_parse(const char *text, cdsh_log_level *out, cdsh_error *err)
{
    static const char *const lower[] = {"error", "warn", "info", "debug", "trace"};
    for (int i = 0; text && i < 5; i++) {
        if (strcasecmp(text, lower[i]) == 0) {
            *out = (cdsh_log_level)i;
            return 0;
        }
    }
    if (text && strcasecmp(text, "warning") == 0) {
        *out = CDSH_LOG_WARN;
        return 0;
    }
    return cdsh_error_set(err, CDSH_EINVAL, "BAD_LOG_LEVEL",
                          "\"%.40s\" is not a log level (use error, warn, info, debug or trace)",
                          text ? text : "");
}

const char *cdsh_log_level_name(cdsh_log_level lv)
{
    return (int)lv >= 0 && (int)lv < 5 ? level_names[lv] : "?";
}

int cdsh_log_init_from_env(void)
{
    const char *env = getenv("CDSH_LOG");
    cdsh_log_level lv = CDSH_LOG_DEFAULT_LEVEL;
    cdsh_error err;
    int rc = 0;
    if (env && *env)
        rc = cdsh_log_level_parse(env, &lv, &err);
    atomic_store(&level, rc ? (int)CDSH_LOG_DEFAULT_LEVEL : (int)lv);
    if (rc)
        cdsh_log_write(CDSH_LOG_WARN, "log", "CDSH_LOG: %s; using %s", err.message,
                       cdsh_log_level_name(CDSH_LOG_DEFAULT_LEVEL));
    return rc;
}

void cdsh_log_set_level(cdsh_log_level lv)
{
    atomic_store(&level, (int)lv);
}

cdsh_log_level cdsh_log_get_level(void)
{
    int lv = atomic_load(&level);
    if (lv < 0) {
        cdsh_log_init_from_env();
        lv = atomic_load(&level);
    }
    return (cdsh_log_level)lv;
}

bool cdsh_log_enabled(cdsh_log_level lv)
{
    return (int)lv <= (int)cdsh_log_get_level();
}

int cdsh_log_open_file(const char *path, cdsh_error *err)
{
    if (!path)
        return cdsh_error_set(err, CDSH_EINVAL, "LOG_OPEN_FAILED", "no log file path given");
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        return cdsh_error_set(err, e == ENOENT ? CDSH_ENOTFOUND : CDSH_EIO, "LOG_OPEN_FAILED",
                              "cannot open log file %s: %s", path, strerror(e));
    }
    FILE *f = fdopen(fd, "a");
    if (!f) {
        int e = errno;
        close(fd);
        return cdsh_error_set(err, CDSH_EIO, "LOG_OPEN_FAILED", "cannot open log file %s: %s", path,
                              strerror(e));
    }
    pthread_mutex_lock(&sink_lock);
    FILE *old = sink_file;
    sink_file = f;
    pthread_mutex_unlock(&sink_lock);
    if (old)
        fclose(old);
    return 0;
}

void cdsh_log_use_stderr(void)
{
    pthread_mutex_lock(&sink_lock);
    FILE *old = sink_file;
    sink_file = NULL;
    pthread_mutex_unlock(&sink_lock);
    if (old)
        fclose(old);
}

/* Appends s with controls escaped and invalid UTF-8 replaced. */
static void append_escaped(cdsh_strbuf *sb, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t len;
        int bad = cdsh_utf8_decode(s + i, n - i, &cp, &len);
        if (bad) {
            cdsh_strbuf_append_str(sb, "\xEF\xBF\xBD");
        } else if (cp == '\n') {
            cdsh_strbuf_append_str(sb, "\\n");
        } else if (cp == '\r') {
            cdsh_strbuf_append_str(sb, "\\r");
        } else if (cp == '\t') {
            cdsh_strbuf_append_str(sb, "\\t");
        } else if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0) || cp == 0x2028 || cp == 0x2029) {
            cdsh_strbuf_appendf(sb, "\\u%04x", (unsigned)cp);
        } else {
            cdsh_strbuf_append(sb, s + i, len);
        }
        i += len;
    }
}

static void log_vwrite(cdsh_log_level lv, const char *module, const char *fmt, va_list ap)
{
    if (!cdsh_log_enabled(lv) || !fmt)
        return;
    cdsh_strbuf msg, line;
    cdsh_strbuf_init(&msg);
    cdsh_strbuf_init(&line);
    cdsh_strbuf_vappendf(&msg, fmt, ap);
    size_t clean_len = 0;
    char *clean = cdsh_redact_dupn(msg.data, msg.len, &clean_len);
    char ts[CDSH_ISO8601_MAX];
    if (!cdsh_clock_format_iso8601(cdsh_clock_wall_ms(), ts, sizeof ts))
        snprintf(ts, sizeof ts, "-");
    cdsh_strbuf_appendf(&line, "%s %-5s ", ts, cdsh_log_level_name(lv));
    append_escaped(&line, module ? module : "-", module ? strlen(module) : 1);
    cdsh_strbuf_append_str(&line, ": ");
    if (clean)
        append_escaped(&line, clean, clean_len);
    else /* never write an unredacted message, even when out of memory */
        cdsh_strbuf_append_str(&line, "(message dropped: out of memory)");
    cdsh_strbuf_append_char(&line, '\n');
    if (!line.failed) {
        pthread_mutex_lock(&sink_lock);
        FILE *f = sink_file ? sink_file : stderr;
        fwrite(line.data, 1, line.len, f);
        fflush(f);
        pthread_mutex_unlock(&sink_lock);
    }
    free(clean);
    cdsh_strbuf_deinit(&msg);
    cdsh_strbuf_deinit(&line);
}

void cdsh_log_write(cdsh_log_level lv, const char *module, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vwrite(lv, module, fmt, ap);
    va_end(ap);
}
