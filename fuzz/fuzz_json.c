/* fuzz_json.c — cdsh_json_parse on arbitrary bytes; every parsed value must
 * be lossless, sanitise to an equal value, dump (compact and pretty) and
 * parse back equal. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cdsh_error err;
    json_t *v = cdsh_json_parse((const char *)data, size, 1 << 20, &err);
    if (!v) {
        if (strcmp(err.code, "BAD_JSON") != 0)
            abort();
        return 0;
    }
    if (cdsh_json_check_lossless(v, NULL, &err) != 0)
        abort();
    json_t *clean = cdsh_json_sanitize_dup(v);
    if (!clean || !cdsh_json_equal(v, clean))
        abort();
    char *compact = cdsh_json_dump_compact_dup(v);
    char *pretty = cdsh_json_dump_pretty_dup(v);
    if (!compact || !pretty)
        abort();
    json_t *back = cdsh_json_parse(compact, strlen(compact), 0, &err);
    json_t *back_pretty = cdsh_json_parse(pretty, strlen(pretty), 0, &err);
    if (!back || !back_pretty || !cdsh_json_equal(v, back) || !cdsh_json_equal(v, back_pretty))
        abort();
    /* output is deterministic: dumping the re-parsed value gives the same text */
    char *again = cdsh_json_dump_compact_dup(back);
    if (!again || strcmp(again, compact) != 0)
        abort();
    json_t *snap = cdsh_json_snapshot_dup(v, "value", &err);
    if (!snap || !cdsh_json_equal(v, snap))
        abort();
    json_decref(snap);
    free(again);
    json_decref(back);
    json_decref(back_pretty);
    free(compact);
    free(pretty);
    json_decref(clean);
    json_decref(v);
    return 0;
}
