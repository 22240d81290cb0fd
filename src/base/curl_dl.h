/* curl_dl.h — libcurl, loaded on the first HTTP request rather than linked
 * into cdsh. libcurl brings OpenSSL's libssl, Kerberos, LDAP, SASL, libssh2,
 * nghttp2 and more: ~2 MB of resident memory and a third of the libraries
 * every process maps, while most commands (`tools list`, `--version`, the
 * xiangqi and tavern commands) never make a request. The model client and
 * the MCP HTTP client call libcurl only through the table below.
 *
 * Thread-safe: cdsh_curl_load may be called from any thread, any number of
 * times; the first call loads the library and runs curl_global_init once. */
#ifndef CDSH_BASE_CURL_DL_H
#define CDSH_BASE_CURL_DL_H

#include <curl/curl.h>
#include <stdbool.h>

#include "base/err.h"

/* Every libcurl function cdsh calls. The table's fields drop the `curl_`
 * prefix: curl.h defines curl_easy_setopt and friends as type-checking
 * macros that a field access of the same name would trigger. */
#define CDSH_CURL_FUNCTIONS(X)                                                                     \
    X(easy_cleanup)                                                                                \
    X(easy_getinfo)                                                                                \
    X(easy_init)                                                                                   \
    X(easy_perform)                                                                                \
    X(easy_setopt)                                                                                 \
    X(easy_strerror)                                                                               \
    X(getdate)                                                                                     \
    X(global_init)                                                                                 \
    X(multi_add_handle)                                                                            \
    X(multi_cleanup)                                                                               \
    X(multi_info_read)                                                                             \
    X(multi_init)                                                                                  \
    X(multi_perform)                                                                               \
    X(multi_poll)                                                                                  \
    X(multi_remove_handle)                                                                         \
    X(multi_wakeup)                                                                                \
    X(share_cleanup)                                                                               \
    X(share_init)                                                                                  \
    X(share_setopt)                                                                                \
    X(slist_append)                                                                                \
    X(slist_free_all)

typedef struct cdsh_curl {
#define CDSH_CURL_FIELD(name) __typeof__(curl_##name) *name;
    CDSH_CURL_FUNCTIONS(CDSH_CURL_FIELD)
#undef CDSH_CURL_FIELD
} cdsh_curl;

/* Loads libcurl (the soname CMake found at build time), resolves the table
 * and runs curl_global_init, once per process; later calls return the first
 * outcome. Fails with HTTP_CLIENT_MISSING (CDSH_ENOTFOUND) naming the
 * library and the package to install, or TRANSPORT (CDSH_EIO) if
 * curl_global_init failed. */
int cdsh_curl_load(cdsh_error *err);

/* The table; only valid after cdsh_curl_load succeeded. */
const cdsh_curl *cdsh_curl_get(void);

/* True once the library is mapped in this process.
 * keep-public: the tests pin the lazy load with it. */
bool cdsh_curl_loaded(void);

#endif
