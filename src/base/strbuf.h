/* strbuf.h — a growable, always NUL-terminated byte buffer for building
 * strings (messages, JSON text, log lines). Not a rope: appends copy.
 * A strbuf is not thread-safe; use one per thread or lock around it. */
#ifndef CDSH_BASE_STRBUF_H
#define CDSH_BASE_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct cdsh_strbuf {
    char *data;  /* NUL-terminated; "" (a static empty string) until the first append */
    size_t len;  /* bytes before the terminating NUL (data may hold NULs itself) */
    size_t cap;  /* allocated bytes; 0 while data points at the static "" */
    bool failed; /* an append ran out of memory; the buffer keeps what it had */
} cdsh_strbuf;

/* Embedded use: init never allocates; deinit frees and re-inits. */
void cdsh_strbuf_init(cdsh_strbuf *sb);
void cdsh_strbuf_deinit(cdsh_strbuf *sb);

/* Heap use: NULL on ENOMEM. free is NULL-safe.
 * keep-public: the heap form of the buffer; tests use it. */
cdsh_strbuf *cdsh_strbuf_new(void);
void cdsh_strbuf_free(cdsh_strbuf *sb);

/* Appends. Each returns 0 or CDSH_ENOMEM (or CDSH_ETOOBIG if the length
 * would overflow size_t; the printf forms also CDSH_EINVAL if vsnprintf
 * reports an encoding error). On failure the contents are unchanged and
 * sb->failed is set, so a caller may append many pieces and check once. */
int cdsh_strbuf_append(cdsh_strbuf *sb, const void *bytes, size_t n);
int cdsh_strbuf_append_str(cdsh_strbuf *sb, const char *s); /* NULL appends nothing */
int cdsh_strbuf_append_char(cdsh_strbuf *sb, char c);
int cdsh_strbuf_appendf(cdsh_strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int cdsh_strbuf_vappendf(cdsh_strbuf *sb, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Appends s[0..n) as a JSON string literal including the quotes: `"`, `\`
 * and controls are escaped (\n \r \t \b \f, others \u00XX, NUL as \u0000);
 * "/" and bytes >= 0x80 are copied as they are (no validation: callers that
 * need valid UTF-8 check it first). */
int cdsh_strbuf_append_json_string(cdsh_strbuf *sb, const char *s, size_t n);

/* Ensures room for `extra` more bytes without reallocating. 0 or ENOMEM.
 * keep-public: for callers that know the size ahead; test_strbuf checks it. */
int cdsh_strbuf_reserve(cdsh_strbuf *sb, size_t extra);

/* Shortens to len bytes (no-op if already shorter); keeps the allocation. */
void cdsh_strbuf_truncate(cdsh_strbuf *sb, size_t len);

/* Empties the buffer and clears `failed`; keeps the allocation. */
void cdsh_strbuf_reset(cdsh_strbuf *sb);

/* Hands the contents to the caller (owned, NUL-terminated, free()) and
 * leaves sb empty. *len_out (if non-NULL) gets the length. Returns NULL if
 * an append had failed (the partial contents are discarded) or on ENOMEM. */
char *cdsh_strbuf_take(cdsh_strbuf *sb, size_t *len_out);

#endif
