/* globals.c — the home-wide global variables file (see globals.h): frozen
 * loads, and commits that merge a turn's changes under a cross-process lock.
 * Which turn commits, and when, is the caller's business (wire.c). */
#include "plugins/tavern/globals.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/json.h"
#include "plugins/tavern/macros.h"

#define LOCK_TIMEOUT_MS 15000

static char *path_in(const char *dir, const char *name)
{
    return cdsh_fs_path_join_dup(dir, name);
}

int cdsh_tavern_globals_load(const char *dir, json_t **vars, cdsh_error *err)
{
    if (!dir || !vars)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "globals: missing argument");
    *vars = NULL;
    char *path = path_in(dir, CDSH_TAVERN_GLOBALS_FILE), *data = NULL;
    size_t len = 0;
    if (!path)
        return cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
    cdsh_error rerr = {0};
    int rc = cdsh_fs_read_file(path, CDSH_TAVERN_GLOBALS_MAX_BYTES, &data, &len, &rerr);
    if (rc == CDSH_ENOTFOUND) {
        *vars = json_object();
        rc = *vars ? 0 : cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
    } else if (rc < 0) {
        rc = cdsh_error_set(err, rc, "GLOBALS_IO", "cannot read %s: %s", path, rerr.message);
    } else {
        json_t *v = json_loadb(data, len, 0, NULL);
        if (json_is_object(v)) {
            *vars = v;
        } else {
            json_decref(v);
            rc = cdsh_error_set(err, CDSH_EINVAL, "GLOBALS_CORRUPT",
                                "%s does not hold a JSON object", path);
        }
    }
    free(data);
    free(path);
    return rc;
}

/* Applies one key's change (before → after) to cur. */
static void merge_key(json_t *cur, const char *k, const json_t *b, const json_t *a)
{
    if (!a) {
        json_object_del(cur, k);
        return;
    }
    double vb, va, vc;
    /* add/inc/dec leave a JSON number: replay it as a delta on today's value. */
    if (json_is_number(a) && cdsh__tavern_var_number(b, &vb) &&
        cdsh__tavern_var_number(json_object_get(cur, k), &vc)) {
        va = json_number_value(a);
        json_object_set_new(cur, k, cdsh__tavern_var_number_json(vc + (va - vb)));
        return;
    }
    json_object_set_new(cur, k, json_deep_copy(a));
}

int cdsh_tavern_globals_commit(const char *dir, const json_t *before, const json_t *after,
                               json_t **merged, cdsh_error *err)
{
    if (merged)
        *merged = NULL;
    if (!dir || !json_is_object(before) || !json_is_object(after))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "globals: bad arguments");
    bool changed = false;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)after, k, v)
        changed |= !json_equal(v, json_object_get(before, k));
    json_object_foreach((json_t *)before, k, v)
        changed |= !json_object_get(after, k);
    if (!changed && !merged)
        return 0;
    char *lock_path = path_in(dir, CDSH_TAVERN_GLOBALS_LOCK);
    char *path = path_in(dir, CDSH_TAVERN_GLOBALS_FILE);
    char *text = NULL;
    cdsh_fs_lock *lock = NULL;
    json_t *cur = NULL;
    int rc;
    if (!lock_path || !path) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
        goto cleanup;
    }
    cdsh_error ferr = {0};
    if ((rc = cdsh_fs_mkdir_p(dir, 0700, &ferr)) < 0) {
        rc = cdsh_error_set(err, rc, "GLOBALS_IO", "%s", ferr.message);
        goto cleanup;
    }
    if ((rc = cdsh_fs_lock_open(lock_path, CDSH_FS_LOCK_EXCLUSIVE, LOCK_TIMEOUT_MS, NULL, &lock,
                                &ferr)) < 0) {
        rc = cdsh_error_set(err, rc, rc == CDSH_ETIMEDOUT ? "LOCK_TIMEOUT" : "GLOBALS_IO", "%s",
                            ferr.message);
        goto cleanup;
    }
    if ((rc = cdsh_tavern_globals_load(dir, &cur, err)) < 0)
        goto cleanup;
    if (changed) {
        json_object_foreach((json_t *)after, k, v) {
            const json_t *b = json_object_get(before, k);
            if (!json_equal(v, b))
                merge_key(cur, k, b, v);
        }
        json_object_foreach((json_t *)before, k, v)
            if (!json_object_get(after, k))
                merge_key(cur, k, v, NULL);
        text = cdsh_json_dump_compact_dup(cur);
        if (!text) {
            rc = cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
            goto cleanup;
        }
        if (strlen(text) > CDSH_TAVERN_GLOBALS_MAX_BYTES) {
            rc = cdsh_error_set(err, CDSH_ETOOBIG, "GLOBALS_TOO_BIG",
                                "global variables would exceed %u bytes",
                                CDSH_TAVERN_GLOBALS_MAX_BYTES);
            goto cleanup;
        }
        if ((rc = cdsh_fs_write_atomic(path, text, strlen(text), 0600, &ferr)) < 0) {
            rc = cdsh_error_set(err, rc, "GLOBALS_IO", "%s", ferr.message);
            goto cleanup;
        }
    }
    if (merged) {
        *merged = cur;
        cur = NULL;
    }
    rc = 0;
cleanup:
    cdsh_fs_lock_close(lock);
    json_decref(cur);
    free(text);
    free(path);
    free(lock_path);
    return rc;
}
