/* fuzz_xq_pgn.c — the xiangqi PGN reader (cdsh_xq_pgn_load) on arbitrary
 * text: it either loads (then its final FEN parses and its moves are ICCS)
 * or refuses with BAD_PGN / a FEN_* code; never crashes or leaks. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/xiangqi/engine/position.h"
#include "plugins/xiangqi/pgn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    char *start = NULL, *fin = NULL;
    json_t *moves = NULL;
    cdsh_error err;
    if (cdsh_xq_pgn_load(text, &start, &fin, &moves, &err) == 0) {
        cdsh_xq_pos *pos = cdsh_xq_pos_new();
        if (pos && cdsh_xq_pos_set_fen(pos, fin, &err) != 0)
            abort();
        for (size_t i = 0; i < json_array_size(moves); i++)
            if (strlen(json_string_value(json_array_get(moves, i))) != 4)
                abort();
        cdsh_xq_pos_free(pos);
    } else if (!err.code[0]) {
        abort();
    }
    free(start);
    free(fin);
    json_decref(moves);
    free(text);
    return 0;
}
