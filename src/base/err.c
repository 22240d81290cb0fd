/* err.c — filling cdsh_error values and naming CDSH_E* codes. */
#include "base/err.h"

#include <stdio.h>
#include <string.h>

int cdsh_error_setv(cdsh_error *err, int rc, const char *code, const char *fmt, va_list ap)
{
    if (!err)
        return rc;
    err->rc = rc;
    snprintf(err->code, sizeof err->code, "%s", code ? code : "");
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    return rc;
}

int cdsh_error_set(cdsh_error *err, int rc, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cdsh_error_setv(err, rc, code, fmt, ap);
    va_end(ap);
    return rc;
}

void cdsh_error_clear(cdsh_error *err)
{
    if (!err)
        return;
    err->rc = 0;
    err->code[0] = '\0';
    err->message[0] = '\0';
}

const char *cdsh_strerror(int rc)
{
    switch (rc) {
    case CDSH_OK: return "ok";
    case CDSH_EINVAL: return "invalid argument";
    case CDSH_ENOMEM: return "out of memory";
    case CDSH_EIO: return "input/output error";
    case CDSH_ETIMEDOUT: return "timed out";
    case CDSH_ECANCELED: return "cancelled";
    case CDSH_ENOTFOUND: return "not found";
    case CDSH_EEXIST: return "already exists";
    case CDSH_ECLOSED: return "closed";
    case CDSH_EPROTO: return "protocol error";
    case CDSH_EUNSUPPORTED: return "unsupported";
    case CDSH_EBUSY: return "busy";
    case CDSH_EPERM: return "not permitted";
    case CDSH_ETOOBIG: return "too big";
    default: return "unknown error";
    }
}
