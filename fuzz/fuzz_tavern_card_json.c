/* fuzz_tavern_card_json.c — card JSON parsing never crashes, and a card that
 * parses survives export → parse with identical data, extra and book. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "plugins/tavern/card.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1024 * 1024 ||
        (size >= 4 && (!memcmp(data, "\x89PNG", 4) || !memcmp(data, "PK\3\4", 4))))
        return 0;
    cdsh_tavern_card *card = NULL;
    if (cdsh_tavern_card_parse(data, size, &card, NULL) != 0)
        return 0;
    json_t *inspect = cdsh_tavern_card_inspect_dup(card);
    if (!inspect)
        abort();
    json_decref(inspect);
    json_t *out = cdsh_tavern_card_to_json_dup(cdsh_tavern_card_record_get(card), false);
    char *text = out ? cdsh_json_dump_compact_dup(out) : NULL;
    if (!text)
        abort();
    cdsh_tavern_card *again = NULL;
    if (cdsh_tavern_card_parse((const uint8_t *)text, strlen(text), &again, NULL) != 0)
        abort();
    const json_t *a = cdsh_tavern_card_record_get(card), *b = cdsh_tavern_card_record_get(again);
    if (!cdsh_json_equal(json_object_get(a, "data"), json_object_get(b, "data")) ||
        !cdsh_json_equal(json_object_get(a, "extra"), json_object_get(b, "extra")))
        abort();
    cdsh_tavern_card_free(again);
    free(text);
    json_decref(out);
    cdsh_tavern_card_free(card);
    return 0;
}
