/* fuzz_tavern_lorebook.c — lorebook normalisation never crashes and is
 * idempotent in both shapes (world-info and character book). */
#include <stdint.h>
#include <stdlib.h>

#include "base/json.h"
#include "plugins/tavern/lorebook.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256 * 1024)
        return 0;
    json_t *in = cdsh_json_parse((const char *)data, size, 0, NULL);
    if (!in)
        return 0;
    json_t *wi = cdsh_tavern_lorebook_normalize_dup(in, NULL);
    if (wi) {
        json_t *again = cdsh_tavern_lorebook_normalize_dup(wi, NULL);
        if (!again || !cdsh_json_equal(wi, again))
            abort();
        json_decref(again);
    }
    json_t *cb = cdsh_tavern_character_book_normalize_dup(in, NULL);
    if (cb) {
        json_t *again = cdsh_tavern_character_book_normalize_dup(cb, NULL);
        if (!again || !cdsh_json_equal(cb, again))
            abort();
        if (cdsh_tavern_lorebook_entry_count(again) != cdsh_tavern_lorebook_entry_count(cb))
            abort();
        json_decref(again);
    }
    json_decref(wi);
    json_decref(cb);
    json_decref(in);
    return 0;
}
