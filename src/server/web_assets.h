/* web_assets.h — the web UI files compiled into the binary by
 * cmake/embed_web.cmake (web/ → generated/web_assets.c). */
#ifndef CDSH_SERVER_WEB_ASSETS_H
#define CDSH_SERVER_WEB_ASSETS_H

#include <stddef.h>

typedef struct cdsh_web_asset {
    const char *path; /* "/index.html" */
    const char *mime;
    const unsigned char *data;
    size_t size;
} cdsh_web_asset;

/* Terminated by an entry whose path is NULL. */
extern const cdsh_web_asset cdsh_web_assets[];

/* The asset for a request path ("/" maps to "/index.html"); NULL if none. */
const cdsh_web_asset *cdsh_web_asset_find(const char *path);

#endif
