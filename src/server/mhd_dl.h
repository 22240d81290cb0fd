/* mhd_dl.h — libmicrohttpd, loaded when the first HTTP server starts rather
 * than linked into cdsh. It pulls in GnuTLS, nettle, GMP, p11-kit and more
 * (~2.5 MB resident in every process); only `cdsh web` and `cdsh mcp
 * --http` serve HTTP.
 *
 * The server's .c files include this header (after <microhttpd.h>'s types)
 * and keep calling libmicrohttpd by its own names: the macros at the end
 * route each call through the table. A new MHD_* function used by a server
 * file must be added to CDSH_MHD_FUNCTIONS and to the macros (the link fails
 * on it otherwise, since cdsh no longer links the library). Headers never
 * include this file, so tests that drive MHD themselves link it normally.
 *
 * Thread-safe: cdsh_mhd_load may be called from any thread, any number of
 * times; the first call loads the library. */
#ifndef CDSH_SERVER_MHD_DL_H
#define CDSH_SERVER_MHD_DL_H

#include <microhttpd.h>
#include <stdbool.h>

#include "base/err.h"

/* Every libmicrohttpd function the server calls (fields drop `MHD_`). */
#define CDSH_MHD_FUNCTIONS(X)                                                                      \
    X(add_response_header)                                                                         \
    X(create_response_from_buffer)                                                                 \
    X(create_response_from_callback)                                                               \
    X(destroy_response)                                                                            \
    X(get_connection_info)                                                                         \
    X(get_connection_values)                                                                       \
    X(get_daemon_info)                                                                             \
    X(lookup_connection_value)                                                                     \
    X(queue_response)                                                                              \
    X(start_daemon_va)                                                                             \
    X(stop_daemon)

typedef struct cdsh_mhd {
#define CDSH_MHD_FIELD(name) __typeof__(MHD_##name) *name;
    CDSH_MHD_FUNCTIONS(CDSH_MHD_FIELD)
#undef CDSH_MHD_FIELD
} cdsh_mhd;

/* Loads the library and resolves the table, once per process; later calls
 * return the first outcome. Fails with HTTP_SERVER_MISSING (CDSH_ENOTFOUND)
 * naming the library and the package to install. */
int cdsh_mhd_load(cdsh_error *err);

/* The table; only valid after cdsh_mhd_load succeeded.
 * keep-public: the MHD_* macros below call it in every server file. */
const cdsh_mhd *cdsh_mhd_get(void);

/* True once the library is mapped in this process.
 * keep-public: the tests pin the lazy load with it. */
bool cdsh_mhd_loaded(void);

/* MHD_start_daemon, loading the library first: NULL (errno ELIBACC) if it
 * cannot be loaded. Callers call cdsh_mhd_load first for a clear error.
 * keep-public: MHD_start_daemon below names it. */
struct MHD_Daemon *cdsh_mhd_start_daemon(unsigned int flags, uint16_t port,
                                         MHD_AcceptPolicyCallback apc, void *apc_cls,
                                         MHD_AccessHandlerCallback dh, void *dh_cls, ...);

#define MHD_add_response_header (cdsh_mhd_get()->add_response_header)
#define MHD_create_response_from_buffer (cdsh_mhd_get()->create_response_from_buffer)
#define MHD_create_response_from_callback (cdsh_mhd_get()->create_response_from_callback)
#define MHD_destroy_response (cdsh_mhd_get()->destroy_response)
#define MHD_get_connection_info (cdsh_mhd_get()->get_connection_info)
#define MHD_get_connection_values (cdsh_mhd_get()->get_connection_values)
#define MHD_get_daemon_info (cdsh_mhd_get()->get_daemon_info)
#define MHD_lookup_connection_value (cdsh_mhd_get()->lookup_connection_value)
#define MHD_queue_response (cdsh_mhd_get()->queue_response)
#define MHD_start_daemon cdsh_mhd_start_daemon
#define MHD_stop_daemon (cdsh_mhd_get()->stop_daemon)

#endif
