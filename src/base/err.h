/* err.h — cdsh's error convention: functions that can fail return 0 or a
 * negative CDSH_E* code and fill an optional cdsh_error with a stable code
 * string and a human message. Expected failures of operations triggered by a
 * model or a person are results (JSON with ok:false), not these errors. */
#ifndef CDSH_BASE_ERR_H
#define CDSH_BASE_ERR_H

#include <stdarg.h>

enum {
    CDSH_OK = 0,
    CDSH_EINVAL = -1,        /* bad argument or malformed input */
    CDSH_ENOMEM = -2,        /* allocation failed */
    CDSH_EIO = -3,           /* read/write/system call failed */
    CDSH_ETIMEDOUT = -4,     /* a wait ran out of time */
    CDSH_ECANCELED = -5,     /* the caller's cancellation token fired */
    CDSH_ENOTFOUND = -6,     /* no such file, name, id or key */
    CDSH_EEXIST = -7,        /* already registered / already exists */
    CDSH_ECLOSED = -8,       /* the peer or resource is gone */
    CDSH_EPROTO = -9,        /* the other side broke the protocol */
    CDSH_EUNSUPPORTED = -10, /* valid but outside what cdsh supports */
    CDSH_EBUSY = -11,        /* locked or in use */
    CDSH_EPERM = -12,        /* refused by policy */
    CDSH_ETOOBIG = -13,      /* exceeds a size limit */
};

#define CDSH_ERROR_CODE_MAX 64
#define CDSH_ERROR_MESSAGE_MAX 1024

typedef struct cdsh_error {
    int rc;                               /* the CDSH_E* value returned alongside */
    char code[CDSH_ERROR_CODE_MAX];       /* stable machine code, e.g. "INVALID_ARGS" */
    char message[CDSH_ERROR_MESSAGE_MAX]; /* English, one line, says what to do */
} cdsh_error;

/* Fills err (if non-NULL) and returns rc, so a failing function can end with
 * `return cdsh_error_set(err, CDSH_EINVAL, "BAD_FEN", "...", ...);`.
 * Messages longer than the buffer are truncated. */
int cdsh_error_set(cdsh_error *err, int rc, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int cdsh_error_setv(cdsh_error *err, int rc, const char *code, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* Resets err to "no error". */
void cdsh_error_clear(cdsh_error *err);

/* Short English name of a CDSH_E* value ("timed out", "not found", ...). */
const char *cdsh_strerror(int rc);

#endif
