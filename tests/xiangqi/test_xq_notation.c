/* test_xq_notation.c — Chinese and WXF move notation: golden texts for the
 * reference's cases (stacked pieces, soldiers on two files, four and five on
 * a file, advisors/elephants, Black's full-width digits), variant spellings,
 * exact errors in both languages, parse_any, the notated legal-move list, and
 * generate -> parse round trips over the perft positions, random playouts
 * and random soldier-heavy positions. */
#include "support/testkit.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/notation.h"
#include "plugins/xiangqi/engine/position.h"

#if defined(__SANITIZE_ADDRESS__)
#define PLAYOUT_PLIES 24
#define RANDOM_POSITIONS 150
#else
#define PLAYOUT_PLIES 60
#define RANDOM_POSITIONS 1500
#endif

/* Positions of the golden table (side to move last). */
#define START_BLACK "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR b - - 0 1"
#define TWO_CHARIOTS "3k5/9/9/9/9/7R1/9/9/9/4K2R1 w"
#define TWO_SOLDIERS "3k5/9/9/9/4P4/4P4/9/9/9/4K4 w"
#define THREE_SOLDIERS "3k5/9/4P4/4P4/4P4/9/9/9/9/4K4 w"
#define FOUR_SOLDIERS "3k5/4P4/4P4/4P4/4P4/9/9/9/9/4K4 w"
#define FIVE_SOLDIERS "P3k4/P8/P8/P8/P8/9/9/9/9/3K5 w"
#define TWO_FILES "3k5/9/6P2/2P3P2/2P3P2/9/9/9/9/4K4 w"
#define BLACK_HORSES "1n2k4/9/1n7/9/9/9/9/9/9/3K5 b"
#define BLACK_TWO_FILES "4k4/9/9/9/9/2p3p2/2p3p2/2p6/9/3K5 b"
#define ADVISORS "3k5/9/9/9/9/9/9/3A5/9/3AK4 w"
#define ELEPHANTS "3k5/9/9/9/9/2B6/9/9/9/2B1K4 w"
#define PINNED "3k5/9/9/9/4r4/9/9/9/4R4/4K4 w"

typedef struct golden {
    const char *fen, *iccs, *zh, *wxf;
} golden;

static const golden goldens[] = {
    /* the reference's examples */
    {CDSH_XQ_START_FEN, "h2e2", "炮二平五", "C2.5"},
    {CDSH_XQ_START_FEN, "h0g2", "马二进三", "H2+3"},
    {CDSH_XQ_START_FEN, "a0a1", "车九进一", "R9+1"},
    {CDSH_XQ_START_FEN, "c0e2", "相七进五", "E7+5"},
    {CDSH_XQ_START_FEN, "d0e1", "仕六进五", "A6+5"},
    {CDSH_XQ_START_FEN, "e0e1", "帅五进一", "K5+1"},
    {CDSH_XQ_START_FEN, "a3a4", "兵九进一", "P9+1"},
    {START_BLACK, "h7e7", "炮８平５", "C8.5"},
    {START_BLACK, "b9c7", "马２进３", "H2+3"},
    {START_BLACK, "i9i7", "车９进２", "R9+2"},
    {START_BLACK, "c9e7", "象３进５", "E3+5"},
    {START_BLACK, "e9e8", "将５进１", "K5+1"},
    {START_BLACK, "c6c5", "卒３进１", "P3+1"},
    /* two chariots on a file: 前/后, + / - */
    {TWO_CHARIOTS, "h4h5", "前车进一", "R++1"},
    {TWO_CHARIOTS, "h4e4", "前车平五", "R+.5"},
    {TWO_CHARIOTS, "h0h1", "后车进一", "R-+1"},
    {TWO_CHARIOTS, "h0g0", "后车平三", "R-.3"},
    /* two Black horses on a file: Black's front is the lower ICCS rank */
    {BLACK_HORSES, "b7c5", "前马进３", "H++3"},
    {BLACK_HORSES, "b7d8", "前马退４", "H+-4"},
    {BLACK_HORSES, "b9c7", "后马进３", "H-+3"},
    /* soldiers: two, three, four and five on a file */
    {TWO_SOLDIERS, "e5e6", "前兵进一", "P++1"},
    {TWO_SOLDIERS, "e5d5", "前兵平六", "P+.6"},
    {TWO_SOLDIERS, "e4e5", NULL, NULL}, /* blocked by its own soldier */
    {THREE_SOLDIERS, "e7e8", "前兵进一", "P++1"},
    {THREE_SOLDIERS, "e7f7", "前兵平四", "P+.4"},
    {THREE_SOLDIERS, "e6d6", "中兵平六", "P5.6"},
    {THREE_SOLDIERS, "e5f5", "后兵平四", "P-.4"},
    {FOUR_SOLDIERS, "e8d8", "一兵平六", "++.6"},
    {FOUR_SOLDIERS, "e7d7", "二兵平六", "P+.6"},
    {FOUR_SOLDIERS, "e6d6", "三兵平六", "P-.6"},
    {FOUR_SOLDIERS, "e5d5", "四兵平六", "--.6"},
    {FIVE_SOLDIERS, "a9b9", "一兵平八", "++.8"},
    {FIVE_SOLDIERS, "a8b8", "二兵平八", "P+.8"},
    {FIVE_SOLDIERS, "a7b7", "三兵平八", "P9.8"},
    {FIVE_SOLDIERS, "a6b6", "四兵平八", "P-.8"},
    {FIVE_SOLDIERS, "a5b5", "五兵平八", "--.8"},
    /* soldiers on two files: xqbase numbers right to left, front to back;
     * WXF puts the file digit first (the reference's own example) */
    {TWO_FILES, "g7f7", "一兵平四", "3+.4"},
    {TWO_FILES, "g6f6", "二兵平四", "33.4"},
    {TWO_FILES, "g5f5", "三兵平四", "3-.4"},
    {TWO_FILES, "c6d6", "四兵平六", "7+.6"},
    {TWO_FILES, "c5d5", "五兵平六", "7-.6"},
    {TWO_FILES, "g7g8", "一兵进一", "3++1"},
    {BLACK_TWO_FILES, "c2c1", "１卒进１", "3++1"},
    {BLACK_TWO_FILES, "c2d2", "１卒平４", "3+.4"},
    {BLACK_TWO_FILES, "c3d3", "２卒平４", "33.4"},
    {BLACK_TWO_FILES, "c4d4", "３卒平４", "3-.4"},
    {BLACK_TWO_FILES, "g3f3", "４卒平６", "7+.6"},
    {BLACK_TWO_FILES, "g4f4", "５卒平６", "7-.6"},
    {BLACK_TWO_FILES, "g3g2", "４卒进１", "7++1"},
    /* advisors and elephants keep their file: the direction tells them apart */
    {ADVISORS, "d0e1", "仕六进五", "A6+5"},
    {ADVISORS, "d2e1", "仕六退五", "A6-5"},
    {ELEPHANTS, "c0e2", "相七进五", "E7+5"},
    {ELEPHANTS, "c4e2", "相七退五", "E7-5"},
    {ELEPHANTS, "c0a2", "相七进九", "E7+9"},
    {ELEPHANTS, "c4a2", "相七退九", "E7-9"},
};

static cdsh_xq_pos *pos_at(const char *fen)
{
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    assert_non_null(pos);
    cdsh_error err = {0};
    if (cdsh_xq_pos_set_fen(pos, fen, &err) != 0)
        fail_msg("FEN %s: %s", fen, err.message);
    return pos;
}

static cdsh_xq_move_t iccs(const char *text)
{
    cdsh_xq_move_t m = 0;
    assert_int_equal(cdsh_xq_move_parse_iccs(text, &m, NULL), 0);
    return m;
}

static void generation_matches_the_reference_examples(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof goldens / sizeof goldens[0]; i++) {
        const golden *g = &goldens[i];
        cdsh_xq_pos *pos = pos_at(g->fen);
        cdsh_xq_move_t m = iccs(g->iccs);
        char zh[CDSH_XQ_ZH_MAX], wxf[CDSH_XQ_WXF_MAX];
        int rz = cdsh_xq_move_to_chinese(pos, m, zh, sizeof zh);
        int rw = cdsh_xq_move_to_wxf(pos, m, wxf, sizeof wxf);
        if (!g->zh) {
            assert_int_equal(rz, CDSH_EINVAL);
            assert_int_equal(rw, CDSH_EINVAL);
            cdsh_xq_pos_free(pos);
            continue;
        }
        assert_int_equal(rz, 0);
        assert_int_equal(rw, 0);
        if (strcmp(zh, g->zh) != 0 || strcmp(wxf, g->wxf) != 0)
            fail_msg("%s in %s: got %s / %s, want %s / %s", g->iccs, g->fen, zh, wxf, g->zh,
                     g->wxf);
        cdsh_xq_move_t back = 0;
        cdsh_xq_notation_error err = {0};
        if (cdsh_xq_parse_chinese(pos, g->zh, &back, &err) != 0 || back != m)
            fail_msg("%s: %s %s", g->zh, err.err.code, err.err.message);
        if (cdsh_xq_parse_wxf(pos, g->wxf, &back, &err) != 0 || back != m)
            fail_msg("%s: %s %s", g->wxf, err.err.code, err.err.message);
        cdsh_xq_pos_free(pos);
    }
}

typedef struct alias {
    const char *fen, *text, *iccs;
} alias;

/* Other spellings that name the same move. */
static const alias aliases[] = {
    {CDSH_XQ_START_FEN, "砲二平五", "h2e2"},
    {CDSH_XQ_START_FEN, "包二平五", "h2e2"},
    {CDSH_XQ_START_FEN, "炮2平5", "h2e2"},
    {CDSH_XQ_START_FEN, "炮２平５", "h2e2"},
    {CDSH_XQ_START_FEN, " 炮 二 平 五 ", "h2e2"},
    {CDSH_XQ_START_FEN, "傌二進三", "h0g2"},
    {CDSH_XQ_START_FEN, "馬二进三", "h0g2"},
    {CDSH_XQ_START_FEN, "俥九進一", "a0a1"},
    {CDSH_XQ_START_FEN, "車九进一", "a0a1"},
    {CDSH_XQ_START_FEN, "象七进五", "c0e2"},
    {CDSH_XQ_START_FEN, "士六进五", "d0e1"},
    {CDSH_XQ_START_FEN, "帥五进一", "e0e1"},
    {CDSH_XQ_START_FEN, "将五进一", "e0e1"},
    {CDSH_XQ_START_FEN, "卒九进一", "a3a4"},
    /* Black: ASCII digits, full-width digits and Chinese numerals alike */
    {START_BLACK, "马2进3", "b9c7"},
    {START_BLACK, "马２进３", "b9c7"},
    {START_BLACK, "马二进三", "b9c7"},
    {START_BLACK, "炮8平5", "h7e7"},
    {START_BLACK, "將5進1", "e9e8"},
    {START_BLACK, "兵3进1", "c6c5"},
    {START_BLACK, "相3进5", "c9e7"},
    {START_BLACK, "仕4进5", "d9e8"},
    /* 後, and a file holding two when only one of them can make the move */
    {TWO_CHARIOTS, "後車進一", "h0h1"},
    {TWO_CHARIOTS, "车二进四", "h4h8"},
    {TWO_CHARIOTS, "车二退三", "h4h1"},
    /* DhtmlXQ: 前/二/三/(四)/后 for four or five on a file; 中 for five */
    {FOUR_SOLDIERS, "前兵平六", "e8d8"},
    {FOUR_SOLDIERS, "后兵平六", "e5d5"},
    {FIVE_SOLDIERS, "前兵平八", "a9b9"},
    {FIVE_SOLDIERS, "中兵平八", "a7b7"},
    {FIVE_SOLDIERS, "后兵平八", "a5b5"},
    {FIVE_SOLDIERS, "5兵平8", "a5b5"},
    /* index forms also work for two or three on a file */
    {THREE_SOLDIERS, "二兵平六", "e6d6"},
    {THREE_SOLDIERS, "3兵平四", "e5f5"},
    {BLACK_TWO_FILES, "四卒进一", "g3g2"},
    {BLACK_TWO_FILES, "4卒进1", "g3g2"},
    /* WXF variants: '=' for sideways, B/N letters, lower case */
    {CDSH_XQ_START_FEN, "C2=5", "h2e2"},
    {CDSH_XQ_START_FEN, "c2.5", "h2e2"},
    {CDSH_XQ_START_FEN, "N2+3", "h0g2"},
    {CDSH_XQ_START_FEN, "B7+5", "c0e2"},
    {CDSH_XQ_START_FEN, " R9+1\n", "a0a1"},
    {TWO_CHARIOTS, "R2+4", "h4h8"},
    {THREE_SOLDIERS, "P5=6", "e6d6"},
};

static void variant_spellings_parse_to_the_same_move(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        const alias *a = &aliases[i];
        cdsh_xq_pos *pos = pos_at(a->fen);
        cdsh_xq_move_t m = 0;
        cdsh_xq_notation_error err = {0};
        if (cdsh_xq_parse_any(pos, a->text, &m, &err) != 0)
            fail_msg("'%s' in %s: %s %s", a->text, a->fen, err.err.code, err.err.message);
        char got[6];
        cdsh_xq_move_to_iccs(m, got);
        if (strcmp(got, a->iccs) != 0)
            fail_msg("'%s' in %s: got %s, want %s", a->text, a->fen, got, a->iccs);
        cdsh_xq_pos_free(pos);
    }
}

typedef struct bad {
    const char *fen, *text, *code, *cause, *en, *zh;
} bad;

/* Exact messages for the main kinds; needles (NULL en/zh = not checked). */
static const bad bads[] = {
    {CDSH_XQ_START_FEN, "车五进一", "NOTATION_NO_SUCH_PIECE", "",
     "'车五进一': Red has no chariot on file 5 (files count from Red's right; file 5 is ICCS "
     "file e)",
     "“车五进一”：红方在五路没有车"},
    {START_BLACK, "马５进７", "NOTATION_NO_SUCH_PIECE", "",
     "'马５进７': Black has no horse on file 5 (files count from Black's right; file 5 is ICCS "
     "file e)",
     "“马５进７”：黑方在５路没有马"},
    {CDSH_XQ_START_FEN, "马二平三", "NOTATION_ILLEGAL", "",
     "'马二平三' cannot be played: the horse on h0 cannot: a horse never moves along a rank "
     "(平/.); give 进/+ or 退/- and the destination file",
     "“马二平三”无法走：h0的马不能这样走：马不能平移，应写进或退加目标纵线"},
    {CDSH_XQ_START_FEN, "马二进五", "NOTATION_ILLEGAL", "",
     "'马二进五' cannot be played: the horse on h0 cannot: a horse cannot go from file 2 to "
     "file 5",
     "“马二进五”无法走：h0的马不能这样走：马不能从二路走到五路"},
    {CDSH_XQ_START_FEN, "相三进四", "NOTATION_ILLEGAL", "",
     "'相三进四' cannot be played: the elephant on g0 cannot: an elephant cannot go from file 3 "
     "to file 4",
     NULL},
    {CDSH_XQ_START_FEN, "炮二进八", "NOTATION_ILLEGAL", "",
     "'炮二进八' cannot be played: the cannon on h2 cannot: the cannon would leave the board",
     "“炮二进八”无法走：h2的炮不能这样走：该炮会走出棋盘"},
    {CDSH_XQ_START_FEN, "炮二平二", "NOTATION_ILLEGAL", "",
     "'炮二平二' cannot be played: the cannon on h2 cannot: the cannon is already on file 2",
     "“炮二平二”无法走：h2的炮不能这样走：该炮已经在二路"},
    {CDSH_XQ_START_FEN, "炮二进五", "NOTATION_ILLEGAL", "MOVE_ILLEGAL_FOR_PIECE",
     "'炮二进五' cannot be played: h2h7: a cannon cannot move from h2 to h7 here",
     "“炮二进五”无法走：该棋子不能这样走"},
    {CDSH_XQ_START_FEN, "车九进三", "NOTATION_ILLEGAL", "MOVE_OWN_PIECE", NULL, NULL},
    {PINNED, "车五平九", "NOTATION_ILLEGAL", "MOVE_SELF_CHECK",
     "'车五平九' cannot be played: e1a1: this move leaves Red's general in check",
     "“车五平九”无法走：走后己方将（帅）被将军"},
    {CDSH_XQ_START_FEN, "前车进一", "NOTATION_NO_SUCH_PIECE", "",
     "'前车进一': Red has no two chariots on one file, so front/middle/rear names none; give the "
     "file instead",
     "“前车进一”：红方没有两个车在同一纵线上，不能用前、中、后，请写纵线"},
    {CDSH_XQ_START_FEN, "前兵进一", "NOTATION_NO_SUCH_PIECE", "", NULL,
     "“前兵进一”：红方没有两个兵在同一纵线上，请写纵线"},
    {TWO_CHARIOTS, "车二进一", "NOTATION_AMBIGUOUS", "",
     "'车二进一' is ambiguous: 2 Red chariots on that file can make it (h4 and h0); name the "
     "piece with 前 (front) or 后 (rear) before it",
     "“车二进一”有歧义：这条纵线上有2个车都能这样走（h4和h0），请在前面加“前”或“后”"},
    {TWO_CHARIOTS, "R2+1", "NOTATION_AMBIGUOUS", "",
     "'R2+1' is ambiguous: 2 Red chariots on that file can make it (h4 and h0); name the piece "
     "with + (front) or - (rear) instead of the file digit",
     NULL},
    {TWO_CHARIOTS, "车二进六", "NOTATION_ILLEGAL", "", NULL, NULL},
    {TWO_FILES, "前兵平四", "NOTATION_AMBIGUOUS", "",
     "'前兵平四' is ambiguous: Red soldiers are stacked on two files; number them 一兵..五兵 "
     "from the right file, front to back",
     "“前兵平四”有歧义：红方的兵叠在两条纵线上，请从右到左、从前到后编号为一、二、三……"},
    {TWO_FILES, "P+.4", "NOTATION_AMBIGUOUS", "", NULL, NULL},
    {FOUR_SOLDIERS, "中兵平六", "NOTATION_AMBIGUOUS", "", NULL, NULL},
    {THREE_SOLDIERS, "四兵平六", "NOTATION_NO_SUCH_PIECE", "",
     "'四兵平六': only 3 Red soldiers share a file with another soldier, so number 4 names none",
     "“四兵平六”：红方只有3个兵与其他兵同在一条纵线上，没有第4个"},
    {CDSH_XQ_START_FEN, "++.4", "NOTATION_NO_SUCH_PIECE", "", NULL, NULL},
    {THREE_SOLDIERS, "4+.5", "NOTATION_NO_SUCH_PIECE", "",
     "'4+.5': Red has 0 soldiers on file 4, so a front or rear one names none", NULL},
    {CDSH_XQ_START_FEN, "车九进十", "NOTATION_SYNTAX", "",
     "'车九进十' is not Chinese notation: the last character must be a number (一..九 or 1..9); "
     "write piece, file, 进/退/平, number (炮二平五, 马８进７) or 前/中/后 and the piece first "
     "(前车进一)",
     "“车九进十”不是正确的中文记谱：最后一个字应为数字（一至九或1至9）；应写棋子、纵线、进/退/"
     "平、数字（如 炮二平五、马８进７），或前/中/后加棋子（如 前车进一）"},
    {CDSH_XQ_START_FEN, "车九上一", "NOTATION_SYNTAX", "", NULL, NULL},
    {CDSH_XQ_START_FEN, "王五进一", "NOTATION_SYNTAX", "", NULL, NULL},
    {CDSH_XQ_START_FEN, "炮二平", "NOTATION_SYNTAX", "", NULL,
     "“炮二平”不是正确的中文记谱：不足四个字"},
    {CDSH_XQ_START_FEN, "炮二平五五", "NOTATION_SYNTAX", "", NULL, NULL},
    {CDSH_XQ_START_FEN, "\xe7\x82", "NOTATION_SYNTAX", "", NULL, NULL},
    {CDSH_XQ_START_FEN, "Z2.5", "NOTATION_SYNTAX", "", NULL, NULL},
    {CDSH_XQ_START_FEN, "C2*5", "NOTATION_SYNTAX", "",
     "'C2*5' is not WXF notation: the third character must be +, - or . (= is also accepted); "
     "write piece letter (K A E H R C P), file 1-9 from the mover's right (or + / - for front / "
     "rear), + - or . for forward, backward, sideways, and a number: C2.5, H2+3, R+.3",
     NULL},
    {CDSH_XQ_START_FEN, "C2.0", "NOTATION_SYNTAX", "", NULL, NULL},
    {CDSH_XQ_START_FEN, "", "NOTATION_SYNTAX", "", NULL, NULL},
    /* ICCS through parse_any keeps the engine's reason as the cause */
    {CDSH_XQ_START_FEN, "h2h2", "NOTATION_SYNTAX", "MOVE_SYNTAX",
     "'h2h2' does not move: source and destination are the same", NULL},
    {CDSH_XQ_START_FEN, "e5e6", "NOTATION_NO_SUCH_PIECE", "MOVE_NO_PIECE", NULL,
     "“e5e6”：起点没有棋子"},
    {CDSH_XQ_START_FEN, "a9a8", "NOTATION_NO_SUCH_PIECE", "MOVE_NOT_YOUR_PIECE", NULL, NULL},
    {PINNED, "e1a1", "NOTATION_ILLEGAL", "MOVE_SELF_CHECK", NULL, NULL},
};

static void bad_moves_give_exact_codes_and_messages(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        const bad *b = &bads[i];
        cdsh_xq_pos *pos = pos_at(b->fen);
        cdsh_xq_move_t m = 0;
        cdsh_xq_notation_error err = {0};
        int rc = cdsh_xq_parse_any(pos, b->text, &m, &err);
        if (rc != CDSH_EINVAL || strcmp(err.err.code, b->code) != 0 ||
            strcmp(err.cause, b->cause) != 0)
            fail_msg("'%s' in %s: rc %d code %s cause %s (%s), want %s %s", b->text, b->fen, rc,
                     err.err.code, err.cause, err.err.message, b->code, b->cause);
        assert_int_equal(err.err.rc, CDSH_EINVAL);
        assert_true(err.zh[0] != '\0');
        assert_true(err.err.message[0] != '\0');
        if (b->en && strcmp(err.err.message, b->en) != 0)
            fail_msg("'%s': message\n  %s\nwant\n  %s", b->text, err.err.message, b->en);
        /* zh: the whole text, or its start where only the start is given */
        if (b->zh && strncmp(err.zh, b->zh, strlen(b->zh)) != 0)
            fail_msg("'%s': zh\n  %s\nwant\n  %s", b->text, err.zh, b->zh);
        assert_non_null(cdsh_xq_notation_error_zh(err.err.code));
        cdsh_xq_pos_free(pos);
    }
}

static void parsers_refuse_null_arguments_and_report_without_err(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = pos_at(CDSH_XQ_START_FEN);
    cdsh_xq_move_t m = 0;
    cdsh_xq_notation_error err = {0};
    assert_int_equal(cdsh_xq_parse_chinese(pos, NULL, &m, &err), CDSH_EINVAL);
    assert_string_equal(err.err.code, "NOTATION_SYNTAX");
    assert_string_equal(err.zh, "没有给出着法");
    assert_int_equal(cdsh_xq_parse_wxf(NULL, "C2.5", &m, &err), CDSH_EINVAL);
    assert_int_equal(cdsh_xq_parse_any(pos, "C2.5", NULL, &err), CDSH_EINVAL);
    assert_int_equal(cdsh_xq_parse_any(pos, "车五进一", &m, NULL), CDSH_EINVAL);
    assert_int_equal(cdsh_xq_parse_any(pos, "C2.5", &m, NULL), 0);
    assert_int_equal(m, iccs("h2e2"));
    /* text far too long is refused, and the quote in the message is cut on a character */
    char longtext[400] = "";
    for (int i = 0; i < 60; i++)
        strcat(longtext, "炮");
    assert_int_equal(cdsh_xq_parse_any(pos, longtext, &m, &err), CDSH_EINVAL);
    assert_string_equal(err.err.code, "NOTATION_SYNTAX");
    assert_non_null(strstr(err.err.message, "'炮炮炮炮炮炮炮炮炮炮炮炮炮' is not Chinese"));
    /* invalid UTF-8 is refused and never copied into the messages (they go into JSON) */
    assert_int_equal(cdsh_xq_parse_any(pos, "炮\xff二平五", &m, &err), CDSH_EINVAL);
    assert_string_equal(err.err.code, "NOTATION_SYNTAX");
    assert_non_null(strstr(err.err.message, "'炮' is not Chinese notation: the text is not valid"));
    assert_non_null(strstr(err.zh, "“炮”不是正确的中文记谱：文本不是有效的 UTF-8"));
    assert_true(cdsh_utf8_valid(err.err.message, strlen(err.err.message)));
    assert_true(cdsh_utf8_valid(err.zh, strlen(err.zh)));
    assert_string_equal(cdsh_xq_notation_error_zh("NOTATION_AMBIGUOUS"),
                        "着法有歧义，不能确定走哪一个棋子");
    assert_string_equal(cdsh_xq_notation_error_zh("MOVE_SELF_CHECK"), "走后己方将（帅）被将军");
    assert_null(cdsh_xq_notation_error_zh("NO_SUCH_CODE"));
    cdsh_xq_pos_free(pos);
}

static void generation_refuses_moves_that_are_not_pseudo_legal(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = pos_at(CDSH_XQ_START_FEN);
    char zh[CDSH_XQ_ZH_MAX], wxf[CDSH_XQ_WXF_MAX];
    const char *bad_moves[] = {"e5e6", "a9a8", "h2h7", "b0d1", "a0a3"};
    for (size_t i = 0; i < sizeof bad_moves / sizeof bad_moves[0]; i++) {
        assert_int_equal(cdsh_xq_move_to_chinese(pos, iccs(bad_moves[i]), zh, sizeof zh),
                         CDSH_EINVAL);
        assert_int_equal(cdsh_xq_move_to_wxf(pos, iccs(bad_moves[i]), wxf, sizeof wxf),
                         CDSH_EINVAL);
    }
    assert_int_equal(cdsh_xq_move_to_chinese(pos, CDSH_XQ_MOVE_NONE, zh, sizeof zh), CDSH_EINVAL);
    assert_int_equal(cdsh_xq_move_to_chinese(pos, iccs("h2e2"), zh, 12), CDSH_ETOOBIG);
    assert_int_equal(cdsh_xq_move_to_wxf(pos, iccs("h2e2"), wxf, 4), CDSH_ETOOBIG);
    cdsh_xq_pos_free(pos);
}

/* Every legal move: Chinese, WXF and ICCS each parse back (directly and via
 * parse_any) to the move they were made from; returns the moves checked. */
static int round_trip_all(cdsh_xq_pos *pos)
{
    cdsh_xq_notated_move moves[CDSH_XQ_MAX_MOVES];
    int n = cdsh_xq_legal_moves_notated(pos, moves);
    char fen[CDSH_XQ_FEN_MAX];
    for (int i = 0; i < n; i++) {
        const cdsh_xq_notated_move *nm = &moves[i];
        const char *texts[3] = {nm->zh, nm->wxf, nm->iccs};
        for (int t = 0; t < 3; t++) {
            cdsh_xq_move_t m = 0;
            cdsh_xq_notation_error err = {0};
            int rc = t == 0   ? cdsh_xq_parse_chinese(pos, texts[t], &m, &err)
                     : t == 1 ? cdsh_xq_parse_wxf(pos, texts[t], &m, &err)
                              : 0;
            if (rc == 0)
                rc = cdsh_xq_parse_any(pos, texts[t], &m, &err);
            if (rc != 0 || m != nm->move) {
                cdsh_xq_pos_fen(pos, fen);
                fail_msg("%s: %s (for %s) -> rc %d %s %s", fen, texts[t], nm->iccs, rc,
                         err.err.code, err.err.message);
            }
        }
        /* the three texts name one move only: no two legal moves share a text */
        for (int j = 0; j < i; j++)
            if (strcmp(moves[j].zh, nm->zh) == 0 || strcmp(moves[j].wxf, nm->wxf) == 0) {
                cdsh_xq_pos_fen(pos, fen);
                fail_msg("%s: %s and %s share %s / %s", fen, moves[j].iccs, nm->iccs, nm->zh,
                         nm->wxf);
            }
    }
    return n;
}

static int load_epd_fens(char fens[][256], int max)
{
    char *text = cdsh_test_read_file(CDSH_TEST_DATA("xiangqi/xiangqi-perft.epd"), NULL);
    assert_non_null(text);
    int n = 0;
    for (char *line = strtok(text, "\n"); line && n < max; line = strtok(NULL, "\n")) {
        char *semi = strchr(line, ';');
        if (line[0] == '#' || !semi)
            continue;
        snprintf(fens[n++], 256, "%.*s", (int)(semi - line), line);
    }
    free(text);
    return n;
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void every_legal_move_of_the_perft_positions_round_trips(void **state)
{
    (void)state;
    char fens[64][256];
    int n = load_epd_fens(fens, 64);
    assert_true(n >= 10);
    int checked = 0;
    for (int i = 0; i < n; i++) {
        cdsh_xq_pos *pos = pos_at(fens[i]);
        checked += round_trip_all(pos);
        cdsh_xq_pos_free(pos);
    }
    assert_true(checked > 300);
}

static void every_legal_move_along_random_playouts_round_trips(void **state)
{
    (void)state;
    char fens[64][256];
    int n = load_epd_fens(fens, 64);
    uint64_t seed = cdsh_test_seed_or("playouts", 0x5EED5EED12345ull);
    int checked = 0;
    for (int i = 0; i < n; i++) {
        for (int game = 0; game < 2; game++) {
            cdsh_xq_pos *pos = pos_at(fens[i]);
            for (int ply = 0; ply < PLAYOUT_PLIES; ply++) {
                checked += round_trip_all(pos);
                cdsh_xq_move_t moves[CDSH_XQ_MAX_MOVES];
                int nm = cdsh_xq_gen_legal(pos, moves);
                if (nm == 0)
                    break;
                assert_int_equal(cdsh_xq_play(pos, moves[rng_next(&seed) % (uint64_t)nm], NULL), 0);
            }
            cdsh_xq_pos_free(pos);
        }
    }
    assert_true(checked > 1000);
}

/* Random positions rich in soldiers (so stacks of two to five on one or two
 * files turn up often) plus a few other pieces, either side to move. */
static void every_legal_move_of_random_soldier_positions_round_trips(void **state)
{
    (void)state;
    uint64_t seed = cdsh_test_seed_or("soldier positions", 0xC0FFEE1234567ull);
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    int used = 0, stacks = 0, checked = 0;
    for (int tries = 0; used < RANDOM_POSITIONS && tries < RANDOM_POSITIONS * 50; tries++) {
        char board[10][9];
        memset(board, 0, sizeof board);
        board[rng_next(&seed) % 3][3 + rng_next(&seed) % 3] = 'K';
        board[7 + rng_next(&seed) % 3][3 + rng_next(&seed) % 3] = 'k';
        const char extra[] = "RRNNCCrrnncc";
        for (int side = 0; side < 2; side++) {
            /* narrow file ranges make stacks likely */
            int f0 = (int)(rng_next(&seed) % 5), width = 2 + (int)(rng_next(&seed) % 3);
            for (int k = 0; k < 5; k++) {
                int r = side == 0 ? 5 + (int)(rng_next(&seed) % 5) : (int)(rng_next(&seed) % 5);
                int f = f0 + (int)(rng_next(&seed) % (uint64_t)width);
                if (!board[r][f])
                    board[r][f] = side == 0 ? 'P' : 'p';
            }
        }
        for (int k = 0; k < 6; k++) {
            int r = (int)(rng_next(&seed) % 10), f = (int)(rng_next(&seed) % 9);
            if (!board[r][f])
                board[r][f] = extra[rng_next(&seed) % 12];
        }
        char fen[160];
        size_t len = 0;
        for (int r = 9; r >= 0; r--) {
            int empty = 0;
            for (int f = 0; f < 9; f++) {
                if (!board[r][f]) {
                    empty++;
                    continue;
                }
                if (empty)
                    fen[len++] = (char)('0' + empty);
                empty = 0;
                fen[len++] = board[r][f];
            }
            if (empty)
                fen[len++] = (char)('0' + empty);
            fen[len++] = r ? '/' : ' ';
        }
        fen[len++] = rng_next(&seed) % 2 ? 'w' : 'b';
        fen[len] = '\0';
        if (cdsh_xq_pos_set_fen(pos, fen, NULL) != 0)
            continue; /* unreachable squares, facing generals, side not to move in check */
        used++;
        for (int side = 0; side < 2; side++) {
            int per_file[9] = {0}, files = 0;
            for (int r = 0; r < 10; r++)
                for (int f = 0; f < 9; f++)
                    per_file[f] += board[r][f] == (side ? 'p' : 'P');
            for (int f = 0; f < 9; f++)
                files += per_file[f] >= 2;
            stacks += files >= 2;
        }
        checked += round_trip_all(pos);
    }
    cdsh_xq_pos_free(pos);
    assert_int_equal(used, RANDOM_POSITIONS);
    assert_true(stacks > RANDOM_POSITIONS / 10); /* soldiers on two files were exercised */
    assert_true(checked > RANDOM_POSITIONS * 5);
}

static void legal_moves_json_lists_every_move_in_three_notations(void **state)
{
    (void)state;
    cdsh_xq_pos *pos = pos_at(CDSH_XQ_START_FEN);
    json_t *arr = cdsh_xq_legal_moves_json(pos);
    assert_non_null(arr);
    assert_int_equal(json_array_size(arr), 44);
    int seen = 0;
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o) {
        assert_int_equal(json_object_size(o), 5);
        const char *ic = json_string_value(json_object_get(o, "iccs"));
        assert_non_null(ic);
        assert_non_null(json_string_value(json_object_get(o, "zh")));
        assert_non_null(json_string_value(json_object_get(o, "wxf")));
        if (strcmp(ic, "h2e2") == 0) {
            assert_string_equal(json_string_value(json_object_get(o, "zh")), "炮二平五");
            assert_string_equal(json_string_value(json_object_get(o, "wxf")), "C2.5");
            assert_int_equal(json_integer_value(json_object_get(o, "from")), 70);
            assert_int_equal(json_integer_value(json_object_get(o, "to")), 67);
            seen++;
        }
        if (strcmp(ic, "a3a4") == 0) {
            assert_string_equal(json_string_value(json_object_get(o, "zh")), "兵九进一");
            seen++;
        }
    }
    assert_int_equal(seen, 2);
    json_decref(arr);
    /* a mated side has no moves: an empty array, not NULL */
    assert_int_equal(cdsh_xq_pos_set_fen(pos, "3k5/9/9/9/9/9/9/9/r8/r3K4 w", NULL), 0);
    arr = cdsh_xq_legal_moves_json(pos);
    assert_non_null(arr);
    assert_int_equal(json_array_size(arr), 0);
    json_decref(arr);
    cdsh_xq_pos_free(pos);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(generation_matches_the_reference_examples),
        cmocka_unit_test(variant_spellings_parse_to_the_same_move),
        cmocka_unit_test(bad_moves_give_exact_codes_and_messages),
        cmocka_unit_test(parsers_refuse_null_arguments_and_report_without_err),
        cmocka_unit_test(generation_refuses_moves_that_are_not_pseudo_legal),
        cmocka_unit_test(every_legal_move_of_the_perft_positions_round_trips),
        cmocka_unit_test(every_legal_move_along_random_playouts_round_trips),
        cmocka_unit_test(every_legal_move_of_random_soldier_positions_round_trips),
        cmocka_unit_test(legal_moves_json_lists_every_move_in_three_notations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
