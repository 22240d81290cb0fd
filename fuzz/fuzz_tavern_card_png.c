/* fuzz_tavern_card_png.c — PNG card parsing never crashes; when a PNG parses,
 * re-exporting it and parsing the export gives the same fields. The input is
 * treated as a PNG (the signature is forced) so the chunk walker is always hit. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "plugins/tavern/card.h"
#include "plugins/tavern/png.h"

static const uint8_t SIG[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1024 * 1024)
        return 0;
    uint8_t *buf = malloc(size + 8);
    if (!buf)
        return 0;
    memcpy(buf, SIG, 8);
    memcpy(buf + 8, data, size);
    cdsh_tavern_card *card = NULL;
    if (cdsh_tavern_card_parse(buf, size + 8, &card, NULL) == 0) {
        uint8_t *png = NULL;
        size_t n = 0;
        size_t alen = 0;
        const uint8_t *avatar = cdsh_tavern_card_avatar_get(card, &alen);
        if (cdsh_tavern_card_to_png(cdsh_tavern_card_record_get(card), avatar, alen, &png, &n,
                                    NULL) != 0)
            abort();
        cdsh_tavern_card *again = NULL;
        if (cdsh_tavern_card_parse(png, n, &again, NULL) != 0)
            abort();
        if (!cdsh_json_equal(json_object_get(cdsh_tavern_card_record_get(card), "data"),
                             json_object_get(cdsh_tavern_card_record_get(again), "data")))
            abort();
        cdsh_tavern_card_free(again);
        free(png);
        cdsh_tavern_card_free(card);
    }
    char *text = NULL;
    size_t tl = 0;
    bool is3 = false;
    if (cdsh_tavern_png_find_card(buf, size + 8, &text, &tl, &is3, NULL) == 0)
        free(text);
    free(buf);
    return 0;
}
