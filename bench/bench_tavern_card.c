/* bench_tavern_card.c — cost of card handling on a realistic card (6 KiB of
 * text fields, a 200-entry book): JSON parse+normalise, PNG export, PNG
 * parse (base64 + JSON), and world-info normalisation of the book. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "plugins/tavern/card.h"
#include "plugins/tavern/lorebook.h"

static json_t *make_card(void)
{
    char text[6144];
    memset(text, 'x', sizeof text - 1);
    text[sizeof text - 1] = 0;
    json_t *entries = json_array();
    for (int i = 0; i < 200; i++)
        json_array_append_new(
            entries, json_pack("{s:[s,s], s:s, s:{s:i}, s:b, s:i, s:i}", "keys", "alpha", "beta",
                               "content", "A paragraph of lore about a place.", "extensions",
                               "depth", 4, "enabled", 1, "insertion_order", i, "id", i));
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:[s], s:{s:s, s:o}, s:{}}}", "spec",
                     "chara_card_v2", "spec_version", "2.0", "data", "name", "Bench", "description",
                     text, "first_mes", "Hello there.", "alternate_greetings", "Hi.",
                     "character_book", "name", "Book", "entries", entries, "extensions");
}

int main(void)
{
    json_t *card = make_card();
    char *text = cdsh_json_dump_compact_dup(card);
    size_t len = strlen(text);
    const int n = 300;

    int64_t t0 = cdsh_clock_mono_ns();
    for (int i = 0; i < n; i++) {
        cdsh_tavern_card *c = NULL;
        if (cdsh_tavern_card_parse((const uint8_t *)text, len, &c, NULL) != 0)
            abort();
        cdsh_tavern_card_free(c);
    }
    int64_t t1 = cdsh_clock_mono_ns();

    cdsh_tavern_card *c = NULL;
    cdsh_tavern_card_parse((const uint8_t *)text, len, &c, NULL);
    uint8_t *png = NULL;
    size_t png_len = 0;
    for (int i = 0; i < n; i++) {
        free(png);
        if (cdsh_tavern_card_to_png(cdsh_tavern_card_record_get(c), NULL, 0, &png, &png_len,
                                    NULL) != 0)
            abort();
    }
    int64_t t2 = cdsh_clock_mono_ns();
    for (int i = 0; i < n; i++) {
        cdsh_tavern_card *p = NULL;
        if (cdsh_tavern_card_parse(png, png_len, &p, NULL) != 0)
            abort();
        cdsh_tavern_card_free(p);
    }
    int64_t t3 = cdsh_clock_mono_ns();
    const json_t *book = cdsh_tavern_card_book_get(c);
    for (int i = 0; i < n; i++)
        json_decref(cdsh_tavern_lorebook_normalize_dup(book, NULL));
    int64_t t4 = cdsh_clock_mono_ns();

    printf("card: %zu bytes of JSON, 200 book entries, PNG export %zu bytes\n", len, png_len);
    printf("parse JSON card        %8.1f us/card\n", (double)(t1 - t0) / n / 1000.0);
    printf("export PNG             %8.1f us/card\n", (double)(t2 - t1) / n / 1000.0);
    printf("parse PNG card         %8.1f us/card\n", (double)(t3 - t2) / n / 1000.0);
    printf("book → world info      %8.1f us/book\n", (double)(t4 - t3) / n / 1000.0);
    free(png);
    cdsh_tavern_card_free(c);
    free(text);
    json_decref(card);
    return 0;
}
