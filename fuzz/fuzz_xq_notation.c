/* fuzz_xq_notation.c — notation parser fuzz target, independent of the FEN
 * parser: the first byte picks one of a few fixed positions (start, stacked
 * pieces, soldiers on two files, Black to move), the rest is move text given
 * to the Chinese, WXF and any-notation parsers. A parsed move must be legal and
 * its Chinese and WXF texts must parse back to it; a refusal must carry one
 * of the four NOTATION_* codes with English and Chinese messages. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/notation.h"
#include "plugins/xiangqi/engine/position.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const fens[] = {
    CDSH_XQ_START_FEN,
    "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR b - - 0 1",
    "3k5/9/9/9/9/7R1/9/9/9/4K2R1 w",
    "3k5/9/4P4/4P4/4P4/9/9/9/9/4K4 w",
    "3k5/4P4/4P4/4P4/4P4/9/9/9/9/4K4 w",
    "P3k4/P8/P8/P8/P8/9/9/9/9/3K5 w",
    "3k5/9/6P2/2P3P2/2P3P2/9/9/9/9/4K4 w",
    "4k4/9/9/9/9/2p3p2/2p3p2/2p6/9/3K5 b",
    "1n2k4/9/1n7/9/9/9/9/9/9/3K5 b",
    "3k5/9/9/9/9/2B6/9/9/9/2B1K4 w",
    "3k5/9/9/9/4r4/9/9/9/4R4/4K4 w",
};

static int known_code(const char *code)
{
    return strcmp(code, "NOTATION_SYNTAX") == 0 || strcmp(code, "NOTATION_AMBIGUOUS") == 0 ||
           strcmp(code, "NOTATION_NO_SUCH_PIECE") == 0 || strcmp(code, "NOTATION_ILLEGAL") == 0;
}

static void check(cdsh_xq_pos *pos, int rc, cdsh_xq_move_t m, const cdsh_xq_notation_error *e)
{
    if (rc != 0) {
        if (rc != CDSH_EINVAL || !known_code(e->err.code) || !e->err.message[0] || !e->zh[0])
            abort();
        return;
    }
    if (cdsh_xq_move_check(pos, m, NULL) != 0)
        abort();
    char zh[CDSH_XQ_ZH_MAX], wxf[CDSH_XQ_WXF_MAX];
    cdsh_xq_move_t back = 0;
    if (cdsh_xq_move_to_chinese(pos, m, zh, sizeof zh) != 0 ||
        cdsh_xq_move_to_wxf(pos, m, wxf, sizeof wxf) != 0)
        abort();
    if (cdsh_xq_parse_chinese(pos, zh, &back, NULL) != 0 || back != m)
        abort();
    if (cdsh_xq_parse_wxf(pos, wxf, &back, NULL) != 0 || back != m)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 256)
        return 0;
    cdsh_xq_pos *pos = malloc(sizeof *pos);
    char *text = malloc(size);
    if (!pos || !text)
        goto cleanup;
    if (cdsh_xq_pos_set_fen(pos, fens[data[0] % (sizeof fens / sizeof fens[0])], NULL) != 0)
        abort();
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0'; /* an embedded NUL just ends the text early */
    cdsh_xq_notation_error e;
    cdsh_xq_move_t m = 0;
    int rc = cdsh_xq_parse_chinese(pos, text, &m, &e);
    check(pos, rc, m, &e);
    rc = cdsh_xq_parse_wxf(pos, text, &m, &e);
    check(pos, rc, m, &e);
    rc = cdsh_xq_parse_any(pos, text, &m, &e);
    check(pos, rc, m, &e);
cleanup:
    free(pos);
    free(text);
    return 0;
}
