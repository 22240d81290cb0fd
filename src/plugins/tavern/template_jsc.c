/* template_jsc.c — loads libjavascriptcoregtk on first use and resolves the
 * worker's function table (see template_jsc.h). */
#include "plugins/tavern/template_jsc.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The runtime library of Debian's libjavascriptcoregtk-4.1-0 (the -dev
 * package the build compiles against); CMake passes the soname it found. */
#ifndef CDSH_JSC_SONAME
#define CDSH_JSC_SONAME "libjavascriptcoregtk-4.1.so.0"
#endif

static cdsh_tavern_jsc g_jsc;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static char g_failure[512]; /* empty: loaded */

static void load_once(void)
{
    /* RTLD_NODELETE: the table must stay valid for the life of the process. */
    void *h = dlopen(CDSH_JSC_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
        snprintf(g_failure, sizeof g_failure, "%s", dlerror());
        return;
    }
    void *sym;
#define CDSH_JSC_RESOLVE(name)                                                                  \
    if (!(sym = dlsym(h, #name))) {                                                             \
        snprintf(g_failure, sizeof g_failure, "%s has no symbol %s", CDSH_JSC_SONAME, #name);  \
        return;                                                                                 \
    }                                                                                           \
    memcpy(&g_jsc.name, &sym, sizeof sym);
    CDSH_JSC_FUNCTIONS(CDSH_JSC_RESOLVE)
#undef CDSH_JSC_RESOLVE
}

int cdsh_tavern_jsc_load(cdsh_error *err)
{
    pthread_once(&g_once, load_once);
    if (g_failure[0])
        return cdsh_error_set(err, CDSH_ENOTFOUND, "TEMPLATE_ENGINE_MISSING",
                              "JavaScriptCore could not be loaded (%s): install Debian's "
                              "libjavascriptcoregtk-4.1-0 (scripts/bootstrap.sh does)",
                              g_failure);
    return 0;
}

const cdsh_tavern_jsc *cdsh_tavern_jsc_get(void)
{
    return &g_jsc;
}
