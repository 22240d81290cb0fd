/* fuzz_acp_engine.c — fuzzes EngineSpec handling (plugins/acp/engine.c):
 * any JSON row either fails validation with a code or normalises to a row
 * that normalises again to the same row (idempotent), whose id matches the
 * regex, whose dialect is canonical and whose args/env are strings; a user
 * row never carries user-set capabilities or health. The input's first line
 * is the row, the rest a patch applied to the normalised row. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/acp/engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_row(const json_t *r)
{
    const char *id = json_string_value(json_object_get(r, "id"));
    if (!id || !*id || strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(id) ||
        id[0] == '-')
        abort();
    if (strcmp(json_string_value(json_object_get(r, "dialect")), "canonical") != 0)
        abort();
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(r, "args"), i, v) {
        if (!json_is_string(v))
            abort();
    }
    const char *k;
    json_object_foreach(json_object_get(r, "env"), k, v) {
        if (!json_is_string(v))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t first = nl ? (size_t)(nl - data) : size;
    json_t *row = json_loadb((const char *)data, first, 0, NULL);
    if (!row)
        return 0;
    json_t *n = NULL;
    cdsh_error err = {0};
    if (cdsh_acp_engine_normalize(row, "user-file", true, &n, &err) == 0) {
        check_row(n);
        if (json_object_get(row, "capabilities") || json_object_get(row, "health"))
            abort();
        json_t *again = NULL;
        json_object_del(n, "capabilities");
        json_object_del(n, "health");
        if (cdsh_acp_engine_normalize(n, "user-file", true, &again, NULL) != 0)
            abort();
        json_object_del(again, "capabilities");
        json_object_del(again, "health");
        if (!json_equal(n, again))
            abort();
        json_decref(again);
        if (nl) {
            json_t *patch = json_loadb((const char *)nl + 1, size - first - 1, 0, NULL);
            json_t *merged = NULL;
            if (patch && cdsh_acp_engine_patch(n, patch, &merged, NULL) == 0)
                check_row(merged);
            json_decref(merged);
            json_decref(patch);
        }
        json_decref(n);
    } else if (!err.code[0]) {
        abort();
    }
    json_decref(row);
    return 0;
}
