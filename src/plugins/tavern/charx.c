/* charx.c — CHARX reading over libzip with per-entry inflate limits. Other
 * assets in the archive (backgrounds, emotions, audio) are not imported. */
#include "plugins/tavern/charx.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "plugins/tavern/png.h"

bool cdsh_tavern_charx_is_zip(const uint8_t *data, size_t len)
{
    return data && len >= 4 && data[0] == 'P' && data[1] == 'K' && data[2] == 3 && data[3] == 4;
}

/* Reads entry `name` into an owned buffer of at most max bytes. rc
 * CDSH_ENOTFOUND when there is no such entry. */
static int read_entry(zip_t *za, const char *name, size_t max, char **out, size_t *out_len,
                      cdsh_error *err)
{
    zip_int64_t idx = zip_name_locate(za, name, 0);
    if (idx < 0)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "CHARX_NO_CARD", "CHARX archive has no %s",
                              name);
    zip_file_t *zf = zip_fopen_index(za, (zip_uint64_t)idx, 0);
    if (!zf)
        return cdsh_error_set(err, CDSH_EINVAL, "CHARX_BAD_ZIP", "cannot open %s in CHARX: %s",
                              name, zip_strerror(za));
    size_t cap = 64 * 1024, used = 0;
    char *buf = malloc(cap + 1);
    int rc = 0;
    if (!buf) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory reading CHARX");
        goto cleanup;
    }
    for (;;) {
        if (used == cap) {
            if (cap > max) {
                rc = cdsh_error_set(err, CDSH_ETOOBIG, "CHARX_TOO_BIG",
                                    "%s in CHARX inflates beyond %zu bytes (refused as a zip "
                                    "bomb)",
                                    name, max);
                goto cleanup;
            }
            size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory reading CHARX");
                goto cleanup;
            }
            buf = nb;
            cap = ncap;
        }
        zip_int64_t n = zip_fread(zf, buf + used, cap - used);
        if (n < 0) {
            rc = cdsh_error_set(err, CDSH_EINVAL, "CHARX_BAD_ZIP", "cannot read %s in CHARX: %s",
                                name, zip_file_strerror(zf));
            goto cleanup;
        }
        if (n == 0)
            break;
        used += (size_t)n;
    }
    if (used > max) {
        rc = cdsh_error_set(err, CDSH_ETOOBIG, "CHARX_TOO_BIG",
                            "%s in CHARX inflates beyond %zu bytes (refused as a zip bomb)", name,
                            max);
        goto cleanup;
    }
    buf[used] = '\0';
    *out = buf;
    *out_len = used;
    buf = NULL;
cleanup:
    free(buf);
    zip_fclose(zf);
    return rc;
}

/* Path of the main icon named in card.json, or NULL (borrowed from root). */
static const char *icon_path(const json_t *root)
{
    json_t *assets = json_object_get(json_object_get(root, "data"), "assets");
    size_t i;
    json_t *a;
    const char *first = NULL;
    json_array_foreach(assets, i, a) {
        const char *type = json_string_value(json_object_get(a, "type"));
        const char *uri = json_string_value(json_object_get(a, "uri"));
        const char *name = json_string_value(json_object_get(a, "name"));
        if (!type || strcmp(type, "icon") || !uri)
            continue;
        const char *path = NULL;
        if (!strncmp(uri, "embeded://", 10))
            path = uri + 10;
        else if (!strncmp(uri, "embedded://", 11))
            path = uri + 11;
        if (!path)
            continue;
        if (name && !strcmp(name, "main"))
            return path;
        if (!first)
            first = path;
    }
    return first;
}

int cdsh_tavern_charx_read(const uint8_t *data, size_t len, char **json, size_t *json_len,
                           uint8_t **avatar, size_t *avatar_len, cdsh_error *err)
{
    if (!data || !json || !json_len || !avatar || !avatar_len)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "charx_read: bad arguments");
    *json = NULL;
    *avatar = NULL;
    *avatar_len = 0;
    if (len > CDSH_TAVERN_PNG_MAX)
        return cdsh_error_set(err, CDSH_ETOOBIG, "CARD_TOO_BIG",
                              "CHARX file is %zu bytes; the limit is 32 MiB", len);
    zip_error_t zerr;
    zip_error_init(&zerr);
    zip_source_t *src = zip_source_buffer_create(data, len, 0, &zerr);
    zip_t *za = NULL;
    int rc = 0;
    json_t *root = NULL;
    char *icon = NULL;
    size_t icon_len = 0;
    if (!src) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory opening CHARX");
        goto cleanup;
    }
    za = zip_open_from_source(src, ZIP_RDONLY, &zerr);
    if (!za) {
        zip_source_free(src);
        rc = cdsh_error_set(err, CDSH_EINVAL, "CHARX_BAD_ZIP", "not a valid CHARX archive: %s",
                            zip_error_strerror(&zerr));
        goto cleanup;
    }
    rc = read_entry(za, "card.json", CDSH_TAVERN_CHARX_JSON_MAX, json, json_len, err);
    if (rc < 0)
        goto cleanup;
    root = json_loadb(*json, *json_len, 0, NULL);
    const char *path = icon_path(root);
    int irc = read_entry(za, path ? path : "assets/icon/images/main.png", CDSH_TAVERN_PNG_MAX,
                         &icon, &icon_len, NULL);
    if (irc == 0 && cdsh_tavern_png_is_png((const uint8_t *)icon, icon_len)) {
        *avatar = (uint8_t *)icon;
        *avatar_len = icon_len;
        icon = NULL;
    }
cleanup:
    free(icon);
    json_decref(root);
    if (za)
        zip_discard(za);
    zip_error_fini(&zerr);
    if (rc < 0) {
        free(*json);
        *json = NULL;
    }
    return rc;
}
