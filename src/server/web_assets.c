/* web_assets.c — lookup into the embedded asset table. */
#include "server/web_assets.h"

#include <string.h>

const cdsh_web_asset *cdsh_web_asset_find(const char *path)
{
    if (!path || strcmp(path, "/") == 0)
        path = "/index.html";
    for (const cdsh_web_asset *a = cdsh_web_assets; a->path; a++)
        if (strcmp(a->path, path) == 0)
            return a;
    return NULL;
}
