/* mhd_dl.c — loads libmicrohttpd on first use and resolves the server's
 * function table (see mhd_dl.h). No HTTP handling lives here. */
#include "server/mhd_dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The runtime library of Debian's libmicrohttpd12 (whose -dev package the
 * build compiles against); CMake passes the soname it found. */
#ifndef CDSH_MHD_SONAME
#define CDSH_MHD_SONAME "libmicrohttpd.so.12"
#endif

static cdsh_mhd g_mhd;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static char g_missing[512]; /* empty: loaded */

static void load_once(void)
{
    /* RTLD_NODELETE: the table must stay valid for the life of the process. */
    void *h = dlopen(CDSH_MHD_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
        snprintf(g_missing, sizeof g_missing, "%s", dlerror());
        return;
    }
    void *sym;
#define CDSH_MHD_RESOLVE(name)                                                                     \
    if (!(sym = dlsym(h, "MHD_" #name))) {                                                         \
        snprintf(g_missing, sizeof g_missing, "%s has no symbol MHD_%s", CDSH_MHD_SONAME, #name);  \
        return;                                                                                    \
    }                                                                                              \
    memcpy(&g_mhd.name, &sym, sizeof sym);
    CDSH_MHD_FUNCTIONS(CDSH_MHD_RESOLVE)
#undef CDSH_MHD_RESOLVE
}

int cdsh_mhd_load(cdsh_error *err)
{
    pthread_once(&g_once, load_once);
    if (g_missing[0])
        return cdsh_error_set(err, CDSH_ENOTFOUND, "HTTP_SERVER_MISSING",
                              "libmicrohttpd could not be loaded (%s): install Debian's "
                              "libmicrohttpd12 (scripts/bootstrap.sh does)",
                              g_missing);
    return 0;
}

const cdsh_mhd *cdsh_mhd_get(void)
{
    return &g_mhd;
}

bool cdsh_mhd_loaded(void)
{
    /* RTLD_NOLOAD maps nothing: it only answers whether the library is in. */
    void *h = dlopen(CDSH_MHD_SONAME, RTLD_NOW | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

struct MHD_Daemon *cdsh_mhd_start_daemon(unsigned int flags, uint16_t port,
                                         MHD_AcceptPolicyCallback apc, void *apc_cls,
                                         MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
    if (cdsh_mhd_load(NULL) != 0) {
        errno = ELIBACC;
        return NULL;
    }
    va_list ap;
    va_start(ap, dh_cls);
    struct MHD_Daemon *d = g_mhd.start_daemon_va(flags, port, apc, apc_cls, dh, dh_cls, ap);
    va_end(ap);
    return d;
}
