/* toolresult_priv.h — the parts of a tool result only the pipeline touches:
 * its reference count, the frozen flag and which call validated its value.
 * Layer-internal (cdsh__). */
#ifndef CDSH_HOST_TOOLRESULT_PRIV_H
#define CDSH_HOST_TOOLRESULT_PRIV_H

#include <stdarg.h>
#include <stdatomic.h>

#include "host/toolresult.h"

struct cdsh__toolresult_priv {
    atomic_int refs;
    bool frozen;
    bool final;                /* a pipeline failure that skips post-execute (wrapper failure) */
    const void *canonical_for; /* the exec whose pipeline validated and rendered it */
};

/* Zeroed result (success, no value, no content) with one reference. */
cdsh_toolresult *cdsh__toolresult_alloc(void);

/* vsnprintf into a fresh owned string; NULL on ENOMEM. */
char *cdsh__vformat_dup(const char *fmt, va_list ap);

#endif
