/* fuzz_xq_fen.c — xiangqi FEN parser fuzz target: a parsed FEN must print and
 * re-parse to the same FEN and hash; every legal move must make and unmake
 * back to the same board and hash; a second line is tried as an ICCS move. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/position.h"
#include "plugins/xiangqi/engine/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1024)
        return 0;
    char *text = malloc(size + 1);
    cdsh_xq_pos *pos = malloc(sizeof *pos), *again = malloc(sizeof *again);
    if (!text || !pos || !again)
        goto cleanup;
    memcpy(text, data, size);
    text[size] = '\0';
    char *move_text = strchr(text, '\n');
    if (move_text)
        *move_text++ = '\0';
    cdsh_error err = {0};
    if (cdsh_xq_pos_set_fen(pos, text, &err) != 0) {
        if (err.code[0] == '\0' || !cdsh_xq_error_zh(err.code))
            abort(); /* every failure carries a known code */
        goto cleanup;
    }
    char fen[CDSH_XQ_FEN_MAX], fen2[CDSH_XQ_FEN_MAX];
    cdsh_xq_pos_fen(pos, fen);
    if (cdsh_xq_pos_set_fen(again, fen, NULL) != 0)
        abort();
    cdsh_xq_pos_fen(again, fen2);
    if (strcmp(fen, fen2) != 0 || cdsh_xq_hash(pos) != cdsh_xq_hash(again))
        abort();
    if (cdsh_xq_hash(pos) != cdsh_xq_hash_compute(pos))
        abort();
    cdsh_xq_move_t moves[CDSH_XQ_MAX_MOVES];
    int n = cdsh_xq_gen_legal(pos, moves);
    uint8_t board[256];
    memcpy(board, pos->board, sizeof board);
    uint64_t h = cdsh_xq_hash(pos);
    for (int i = 0; i < n; i++) {
        if (cdsh_xq_move_check(pos, moves[i], NULL) != 0)
            abort();
        cdsh_xq_make_move(pos, moves[i]);
        if (cdsh_xq_hash(pos) != cdsh_xq_hash_compute(pos))
            abort();
        cdsh_xq_unmake_move(pos);
        if (memcmp(board, pos->board, sizeof board) != 0 || cdsh_xq_hash(pos) != h)
            abort();
    }
    (void)cdsh_xq_status(pos, NULL);
    if (move_text) {
        cdsh_xq_move_t m;
        if (cdsh_xq_parse_move(pos, move_text, &m, NULL) == 0 && cdsh_xq_play(pos, m, NULL) != 0)
            abort();
    }
cleanup:
    free(text);
    free(pos);
    free(again);
    return 0;
}
