/* curl_dl.c — loads libcurl on first use, resolves the function table and
 * initialises the library once (see curl_dl.h). No HTTP logic lives here. */
#include "base/curl_dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The runtime library of Debian's libcurl4 (whose -dev package the build
 * compiles against); CMake passes the soname it found. */
#ifndef CDSH_CURL_SONAME
#define CDSH_CURL_SONAME "libcurl.so.4"
#endif

static cdsh_curl g_curl;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static char g_missing[512]; /* empty: loaded */
static CURLcode g_init_rc = CURLE_OK;

static void load_once(void)
{
    /* RTLD_NODELETE: the table must stay valid for the life of the process. */
    void *h = dlopen(CDSH_CURL_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
        snprintf(g_missing, sizeof g_missing, "%s", dlerror());
        return;
    }
    void *sym;
#define CDSH_CURL_RESOLVE(name)                                                                    \
    if (!(sym = dlsym(h, "curl_" #name))) {                                                        \
        snprintf(g_missing, sizeof g_missing, "%s has no symbol curl_%s", CDSH_CURL_SONAME,        \
                 #name);                                                                           \
        return;                                                                                    \
    }                                                                                              \
    memcpy(&g_curl.name, &sym, sizeof sym);
    CDSH_CURL_FUNCTIONS(CDSH_CURL_RESOLVE)
#undef CDSH_CURL_RESOLVE
    g_init_rc = g_curl.global_init(CURL_GLOBAL_DEFAULT);
}

int cdsh_curl_load(cdsh_error *err)
{
    pthread_once(&g_once, load_once);
    if (g_missing[0])
        return cdsh_error_set(err, CDSH_ENOTFOUND, "HTTP_CLIENT_MISSING",
                              "libcurl could not be loaded (%s): install Debian's libcurl4 "
                              "(scripts/bootstrap.sh does)",
                              g_missing);
    if (g_init_rc != CURLE_OK)
        return cdsh_error_set(err, CDSH_EIO, "TRANSPORT", "libcurl failed to initialise: %s",
                              g_curl.easy_strerror(g_init_rc));
    return 0;
}

const cdsh_curl *cdsh_curl_get(void)
{
    return &g_curl;
}

bool cdsh_curl_loaded(void)
{
    /* RTLD_NOLOAD maps nothing: it only answers whether the library is in. */
    void *h = dlopen(CDSH_CURL_SONAME, RTLD_NOW | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}
