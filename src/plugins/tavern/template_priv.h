/* template_priv.h — what template.c (the host side) and template_worker.c
 * (the JavaScriptCore worker process) share: the runtime files, the frame
 * format on the socket between them, and the worker's entry point. */
#ifndef CDSH_TAVERN_TEMPLATE_PRIV_H
#define CDSH_TAVERN_TEMPLATE_PRIV_H

#include <stddef.h>
#include <stdint.h>

/* Files of the template runtime, relative to its directory (runtime/js in
 * the source tree). The first four are pinned npm packages' browser
 * builds, FAKER is bundled from @faker-js/faker at install time, the last
 * two are cdsh's own code. */
enum {
    CDSH_TPL_LODASH,
    CDSH_TPL_EJS,
    CDSH_TPL_SHOWDOWN,
    CDSH_TPL_JSONREPAIR,
    CDSH_TPL_FAKER,
    CDSH_TPL_LIB_REALM,
    CDSH_TPL_TEMPLATE_REALM,
    CDSH_TPL_NFILES
};
extern const char *const cdsh_tavern_template_files[CDSH_TPL_NFILES];

/* A frame: a 12-byte header (payload length, time limit in ms, output cap;
 * little-endian u32 each) then the JSON payload. Replies use the same header
 * with the two limits zero. */
#define CDSH_TPL_HEADER 12
#define CDSH_TPL_MAX_FRAME (64u << 20)

/* Runs the worker on fd (a connected socket); never returns. dir: the
 * runtime directory, mem_bytes: the memory the worker may add to what it
 * inherited. The first reply is the ready frame: {"ok":true} or
 * {"ok":false,"code":..,"message":..}. */
void cdsh_tavern_template_worker_main(int fd, const char *dir, size_t mem_bytes)
    __attribute__((noreturn));

int cdsh_tavern_template_frame_write(int fd, const char *payload, size_t len, uint32_t time_ms,
                                     uint32_t max_output);

#endif
