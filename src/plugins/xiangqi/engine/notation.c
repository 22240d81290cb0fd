/* notation.c — the notation layer's shared half: mover-relative piece lists,
 * the resolver from a parsed description to a legal move with precise
 * English/Chinese errors, cdsh_xq_parse_any and the notated legal-move list.
 * Chinese text itself is notation_zh.c, WXF is notation_wxf.c. */
#include "plugins/xiangqi/engine/notation.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "plugins/xiangqi/engine/notation_internal.h"
#include "plugins/xiangqi/engine/xq_internal.h"

int cdsh__xq_file_of(int side, cdsh_xq_square_t sq)
{
    int f = cdsh_xq_square_file(sq);
    return side == CDSH_XQ_RED ? 9 - f : f + 1;
}

int cdsh__xq_adv_of(int side, cdsh_xq_square_t sq)
{
    int r = cdsh_xq_square_rank(sq);
    return side == CDSH_XQ_RED ? r : 9 - r;
}

void cdsh__xq_nlist_get(const cdsh_xq_pos *pos, int side, int type, cdsh__xq_nlist *l)
{
    cdsh_xq_square_t sq[5];
    l->n = cdsh_xq_pieces(pos, side, type, sq);
    for (int i = 0; i < l->n; i++) {
        cdsh__xq_np p = {sq[i], cdsh__xq_file_of(side, sq[i]), cdsh__xq_adv_of(side, sq[i])};
        int j = i;
        /* insertion sort: file ascending, then the most advanced first */
        while (j > 0 && (l->p[j - 1].file > p.file ||
                         (l->p[j - 1].file == p.file && l->p[j - 1].adv < p.adv))) {
            l->p[j] = l->p[j - 1];
            j--;
        }
        l->p[j] = p;
    }
}

int cdsh__xq_nlist_on_file(const cdsh__xq_nlist *l, int file, int *first)
{
    int k = 0;
    for (int i = 0; i < l->n; i++)
        if (l->p[i].file == file) {
            if (k++ == 0 && first)
                *first = i;
        }
    return k;
}

int cdsh__xq_nlist_stacked_files(const cdsh__xq_nlist *l)
{
    int files = 0;
    for (int i = 0; i < l->n; i++)
        if (i + 1 < l->n && l->p[i + 1].file == l->p[i].file &&
            (i == 0 || l->p[i - 1].file != l->p[i].file))
            files++;
    return files;
}

int cdsh__xq_nlist_find(const cdsh__xq_nlist *l, cdsh_xq_square_t sq)
{
    for (int i = 0; i < l->n; i++)
        if (l->p[i].sq == sq)
            return i;
    return -1;
}

void cdsh__xq_nlist_stacked(const cdsh__xq_nlist *l, cdsh__xq_nlist *s)
{
    s->n = 0;
    for (int i = 0; i < l->n; i++)
        if (cdsh__xq_nlist_on_file(l, l->p[i].file, NULL) >= 2)
            s->p[s->n++] = l->p[i];
}

static int is_diagonal(int type)
{
    return type == CDSH_XQ_HORSE || type == CDSH_XQ_ELEPHANT || type == CDSH_XQ_ADVISOR;
}

void cdsh__xq_note_dir_num(int side, int type, cdsh_xq_move_t m, int *dir, int *num)
{
    cdsh_xq_square_t f = cdsh_xq_move_from(m), t = cdsh_xq_move_to(m);
    int da = cdsh__xq_adv_of(side, t) - cdsh__xq_adv_of(side, f);
    *dir = da > 0 ? 1 : da < 0 ? -1 : 0;
    if (*dir == 0 || is_diagonal(type))
        *num = cdsh__xq_file_of(side, t);
    else
        *num = abs(da);
}

static const char *const zh_red_num[10] = {"",   "一", "二", "三", "四",
                                           "五", "六", "七", "八", "九"};
static const char *const zh_black_num[10] = {"",   "１", "２", "３", "４",
                                             "５", "６", "７", "８", "９"};

const char *cdsh__xq_zh_number(int side, int n)
{
    if (n < 1 || n > 9)
        return "?";
    return side == CDSH_XQ_RED ? zh_red_num[n] : zh_black_num[n];
}

const char *cdsh__xq_zh_piece(int side, int type)
{
    static const char *const names[2][8] = {
        {"?", "帅", "仕", "相", "马", "车", "炮", "兵"},
        {"?", "将", "士", "象", "马", "车", "炮", "卒"},
    };
    return names[side & 1][type & 7];
}

const char *cdsh__xq_zh_side(int side)
{
    return side == CDSH_XQ_RED ? "红方" : "黑方";
}

void cdsh__xq_note_echo(const char *text, char *out, size_t max)
{
    size_t n = text ? strlen(text) : 0;
    n = cdsh_utf8_valid_prefix(text ? text : "", n < max ? n : max);
    if (n)
        memcpy(out, text, n);
    out[n] = '\0';
}

int cdsh__xq_note_syntax(cdsh_xq_notation_error *e, const char *q, const char *what_en,
                         const char *what_zh, const char *why_en, const char *why_zh,
                         const char *hint_en, const char *hint_zh)
{
    char en[800], zh[800];
    snprintf(en, sizeof en, "'%s' is not %s: %s; %s", q, what_en, why_en, hint_en);
    snprintf(zh, sizeof zh, "“%s”不是正确的%s：%s；%s", q, what_zh, why_zh, hint_zh);
    return cdsh__xq_note_fail(e, "NOTATION_SYNTAX", NULL, en, zh);
}

int cdsh__xq_note_mover(const cdsh_xq_pos *pos, cdsh_xq_move_t m, const char *buf, size_t size,
                        size_t need)
{
    if (!pos || !buf)
        return CDSH_EINVAL;
    if (size < need)
        return CDSH_ETOOBIG;
    cdsh_xq_piece_t pc = cdsh_xq_piece_at(pos, cdsh_xq_move_from(m));
    if (pc == CDSH_XQ_NO_PIECE || cdsh_xq_piece_side(pc) != pos->side ||
        !cdsh_xq_is_pseudo_legal(pos, m))
        return CDSH_EINVAL;
    return cdsh_xq_piece_type(pc);
}

int cdsh__xq_note_fail(cdsh_xq_notation_error *e, const char *code, const char *cause,
                       const char *en, const char *zh)
{
    if (!e)
        return CDSH_EINVAL;
    cdsh_error_set(&e->err, CDSH_EINVAL, code, "%s", en);
    cdsh__xq_note_echo(zh, e->zh, sizeof e->zh - 1);
    snprintf(e->cause, sizeof e->cause, "%s", cause ? cause : "");
    return CDSH_EINVAL;
}

/* Where a piece on from goes for direction/number, or a reason why it cannot. */
static int dest_of(int side, int type, cdsh_xq_square_t from, int dir, int num,
                   cdsh_xq_square_t *to, char *en, char *zh, size_t size)
{
    const char *tn = cdsh__xq_type_name(type), *zn = cdsh__xq_zh_piece(side, type);
    int f = cdsh__xq_file_of(side, from), a = cdsh__xq_adv_of(side, from);
    int nf = f, na = a;
    if (!is_diagonal(type)) {
        if (dir == 0 && num == f) {
            snprintf(en, size, "the %s is already on file %d", tn, num);
            snprintf(zh, size, "该%s已经在%s路", zn, cdsh__xq_zh_number(side, num));
            return -1;
        }
        if (dir == 0)
            nf = num;
        else
            na = a + dir * num;
    } else {
        if (dir == 0) {
            snprintf(en, size,
                     "a%s %s never moves along a rank (平/.); give 进/+ or 退/- and the "
                     "destination file",
                     type == CDSH_XQ_ADVISOR || type == CDSH_XQ_ELEPHANT ? "n" : "", tn);
            snprintf(zh, size, "%s不能平移，应写进或退加目标纵线", zn);
            return -1;
        }
        int df = abs(num - f), da;
        if (type == CDSH_XQ_HORSE)
            da = df == 1 ? 2 : df == 2 ? 1 : 0;
        else if (type == CDSH_XQ_ELEPHANT)
            da = df == 2 ? 2 : 0;
        else
            da = df == 1 ? 1 : 0;
        if (da == 0) {
            snprintf(en, size, "a%s %s cannot go from file %d to file %d",
                     type == CDSH_XQ_HORSE ? "" : "n", tn, f, num);
            snprintf(zh, size, "%s不能从%s路走到%s路", zn, cdsh__xq_zh_number(side, f),
                     cdsh__xq_zh_number(side, num));
            return -1;
        }
        nf = num;
        na = a + dir * da;
    }
    if (na < 0 || na > 9) {
        snprintf(en, size, "the %s would leave the board", tn);
        snprintf(zh, size, "该%s会走出棋盘", zn);
        return -1;
    }
    int file = side == CDSH_XQ_RED ? 9 - nf : nf - 1;
    int rank = side == CDSH_XQ_RED ? na : 9 - na;
    *to = cdsh_xq_square(file, rank);
    return 0;
}

static void sq_name(cdsh_xq_square_t sq, char out[3])
{
    out[0] = (char)('a' + cdsh_xq_square_file(sq));
    out[1] = (char)('0' + cdsh_xq_square_rank(sq));
    out[2] = '\0';
}

/* Picks the candidate pieces for d; 0 or a failure already reported in e.
 * Longer than 120 lines on purpose: one case per way of naming a piece
 * (file, 前/中/后, numbered soldiers, WXF ++/--, file plus 前/后), each a few
 * lines of choice and a refusal written in English and Chinese; split per
 * case, each helper would take the same eight locals. */
static int select_pieces(const cdsh_xq_pos *pos, const cdsh__xq_ndesc *d, const char *q,
                         cdsh_xq_square_t *cand, int *nc, cdsh_xq_notation_error *e)
{
    const int side = pos->side;
    const char *sn = cdsh__xq_side_name(side), *zs = cdsh__xq_zh_side(side);
    const char *tn = cdsh__xq_type_name(d->type), *zn = cdsh__xq_zh_piece(side, d->type);
    char en[512], zh[512];
    cdsh__xq_nlist l, s;
    cdsh__xq_nlist_get(pos, side, d->type, &l);
    cdsh__xq_nlist_stacked(&l, &s);
    const int files = cdsh__xq_nlist_stacked_files(&l);
    const int pawn = d->type == CDSH_XQ_PAWN;
    int pick = -1, first = 0, k;
    *nc = 0;
    if (l.n == 0) {
        snprintf(en, sizeof en, "'%s': %s has no %s on the board", q, sn, tn);
        snprintf(zh, sizeof zh, "“%s”：%s已经没有%s", q, zs, zn);
        return cdsh__xq_note_fail(e, "NOTATION_NO_SUCH_PIECE", NULL, en, zh);
    }
    switch (d->sel) {
    case XQN_FILE:
        k = cdsh__xq_nlist_on_file(&l, d->arg, &first);
        if (k == 0) {
            snprintf(en, sizeof en,
                     "'%s': %s has no %s on file %d (files count from %s's right; file %d is "
                     "ICCS file %c)",
                     q, sn, tn, d->arg, sn, d->arg,
                     side == CDSH_XQ_RED ? 'a' + 9 - d->arg : 'a' + d->arg - 1);
            snprintf(zh, sizeof zh, "“%s”：%s在%s路没有%s", q, zs, cdsh__xq_zh_number(side, d->arg),
                     zn);
            return cdsh__xq_note_fail(e, "NOTATION_NO_SUCH_PIECE", NULL, en, zh);
        }
        if (d->wxf && pawn && (k == 3 || k == 5)) {
            pick = first + k / 2; /* official WXF: the file digit names the middle one */
            break;
        }
        for (int i = 0; i < k; i++)
            cand[(*nc)++] = l.p[first + i].sq;
        return 0;
    case XQN_FRONT:
    case XQN_MIDDLE:
    case XQN_REAR:
        if (!pawn) {
            for (int i = 0; i + 1 < l.n; i++)
                if (l.p[i].file == l.p[i + 1].file)
                    pick = d->sel == XQN_FRONT ? i : d->sel == XQN_REAR ? i + 1 : -1;
            if (pick < 0) {
                snprintf(en, sizeof en,
                         "'%s': %s has no %s%ss on one file, so front/middle/rear names none; "
                         "give the file instead",
                         q, sn, d->sel == XQN_MIDDLE ? "three " : "two ", tn);
                snprintf(zh, sizeof zh,
                         "“%s”：%s没有%s个%s在同一纵线上，不能用前、中、后，请写纵线", q, zs,
                         d->sel == XQN_MIDDLE ? "三" : "两", zn);
                return cdsh__xq_note_fail(e, "NOTATION_NO_SUCH_PIECE", NULL, en, zh);
            }
            break;
        }
        if (files == 0) {
            snprintf(en, sizeof en,
                     "'%s': no two %s soldiers share a file, so front/middle/rear names none; "
                     "give the file instead",
                     q, sn);
            snprintf(zh, sizeof zh, "“%s”：%s没有两个%s在同一纵线上，请写纵线", q, zs, zn);
            return cdsh__xq_note_fail(e, "NOTATION_NO_SUCH_PIECE", NULL, en, zh);
        }
        if (files == 2) {
            snprintf(en, sizeof en, "'%s' is ambiguous: %s soldiers are stacked on two files; %s",
                     q, sn,
                     d->wxf ? "put the file digit first (3+, 33, 3-)"
                            : "number them 一兵..五兵 from the right file, front to back");
            snprintf(zh, sizeof zh, "“%s”有歧义：%s的%s叠在两条纵线上，%s", q, zs, zn,
                     d->wxf ? "请把纵线数字放在最前（如 3+、33、3-）"
                            : "请从右到左、从前到后编号为一、二、三……");
            return cdsh__xq_note_fail(e, "NOTATION_AMBIGUOUS", NULL, en, zh);
        }
        k = s.n; /* one stacked file holding k soldiers, all of s */
        if (d->sel == XQN_FRONT)
            pick = d->wxf && k >= 4 ? 1 : 0;
        else if (d->sel == XQN_REAR)
            pick = d->wxf && k >= 4 ? k - 2 : k - 1;
        else if (k % 2 == 1)
            pick = k / 2;
        if (pick < 0) {
            snprintf(en, sizeof en,
                     "'%s' is ambiguous: %d %s soldiers share the file, so none is the middle "
                     "one; use 二兵 or 三兵",
                     q, k, sn);
            snprintf(zh, sizeof zh,
                     "“%s”有歧义：%d个%s在同一纵线上，没有居中的一个，请写二%s或三%s", q, k, zn, zn,
                     zn);
            return cdsh__xq_note_fail(e, "NOTATION_AMBIGUOUS", NULL, en, zh);
        }
        cand[(*nc)++] = s.p[pick].sq;
        return 0;
    case XQN_INDEX:
        if (!pawn || d->arg > s.n) {
            if (!pawn) {
                snprintf(en, sizeof en, "'%s': numbered forms (一兵..五兵) name soldiers only", q);
                snprintf(zh, sizeof zh, "“%s”：一、二、三……的编号只用于兵（卒）", q);
            } else {
                snprintf(en, sizeof en,
                         "'%s': only %d %s soldiers share a file with another soldier, so "
                         "number %d names none",
                         q, s.n, sn, d->arg);
                snprintf(zh, sizeof zh, "“%s”：%s只有%d个%s与其他%s同在一条纵线上，没有第%d个", q,
                         zs, s.n, zn, zn, d->arg);
            }
            return cdsh__xq_note_fail(e, "NOTATION_NO_SUCH_PIECE", NULL, en, zh);
        }
        cand[(*nc)++] = s.p[d->arg - 1].sq;
        return 0;
    case XQN_WXF_FFRONT:
    case XQN_WXF_RREAR:
        for (int i = 0; i < l.n; i++)
            if (cdsh__xq_nlist_on_file(&l, l.p[i].file, &first) >= 4) {
                k = cdsh__xq_nlist_on_file(&l, l.p[i].file, &first);
                pick = d->sel == XQN_WXF_FFRONT ? first : first + k - 1;
                break;
            }
        if (pick < 0) {
            snprintf(en, sizeof en,
                     "'%s': ++ and -- name the outer soldiers of four or five on one file; "
                     "%s has no such file",
                     q, sn);
            snprintf(zh, sizeof zh, "“%s”：++ 和 -- 只用于同一纵线上有四个或五个%s，%s没有", q, zn,
                     zs);
            return cdsh__xq_note_fail(e, "NOTATION_NO_SUCH_PIECE", NULL, en, zh);
        }
        break;
    default: /* XQN_FILE_FRONT, XQN_FILE_MIDDLE, XQN_FILE_REAR */
        k = cdsh__xq_nlist_on_file(&l, d->arg, &first);
        if (d->sel == XQN_FILE_FRONT && k >= 2)
            pick = first;
        else if (d->sel == XQN_FILE_REAR && k >= 2)
            pick = first + k - 1;
        else if (d->sel == XQN_FILE_MIDDLE && k % 2 == 1 && k >= 3)
            pick = first + k / 2;
        if (pick < 0) {
            snprintf(en, sizeof en, "'%s': %s has %d soldier%s on file %d, so %s names none", q, sn,
                     k, k == 1 ? "" : "s", d->arg,
                     d->sel == XQN_FILE_MIDDLE ? "a middle one" : "a front or rear one");
            snprintf(zh, sizeof zh, "“%s”：%s在%s路有%d个%s，没有所指的%s", q, zs,
                     cdsh__xq_zh_number(side, d->arg), k, zn,
                     d->sel == XQN_FILE_MIDDLE ? "中兵" : "前兵或后兵");
            return cdsh__xq_note_fail(e, "NOTATION_NO_SUCH_PIECE", NULL, en, zh);
        }
        break;
    }
    cand[(*nc)++] = l.p[pick].sq;
    return 0;
}

int cdsh__xq_note_resolve(const cdsh_xq_pos *pos, const cdsh__xq_ndesc *d, const char *text,
                          cdsh_xq_move_t *out, cdsh_xq_notation_error *e)
{
    char q[48];
    cdsh__xq_note_echo(text, q, 40);
    cdsh_xq_square_t cand[5];
    int nc = 0;
    int rc = select_pieces(pos, d, q, cand, &nc, e);
    if (rc != 0)
        return rc;
    const int side = pos->side;
    char why_en[400] = "", why_zh[400] = "", cause[CDSH_ERROR_CODE_MAX] = "";
    cdsh_xq_move_t found[5];
    int nfound = 0;
    for (int i = 0; i < nc; i++) {
        char en[300], zh[300], from[3];
        cdsh_xq_square_t to;
        sq_name(cand[i], from);
        if (dest_of(side, d->type, cand[i], d->dir, d->num, &to, en, zh, sizeof en) != 0) {
            if (!why_en[0]) {
                snprintf(why_en, sizeof why_en, "the %s on %s cannot: %s",
                         cdsh__xq_type_name(d->type), from, en);
                snprintf(why_zh, sizeof why_zh, "%s的%s不能这样走：%s", from,
                         cdsh__xq_zh_piece(side, d->type), zh);
            }
            continue;
        }
        cdsh_xq_move_t m = cdsh_xq_move_make(cand[i], to);
        cdsh_error ce = {0};
        if (cdsh_xq_move_check(pos, m, &ce) == 0) {
            found[nfound++] = m;
            continue;
        }
        if (!why_en[0]) {
            const char *czh = cdsh_xq_error_zh(ce.code);
            snprintf(why_en, sizeof why_en, "%.390s", ce.message);
            snprintf(why_zh, sizeof why_zh, "%.390s", czh ? czh : ce.message);
            snprintf(cause, sizeof cause, "%s", ce.code);
        }
    }
    if (nfound == 1) {
        *out = found[0];
        return 0;
    }
    char en[700], zh[700];
    if (nfound > 1) {
        char a[3], b[3];
        sq_name(cdsh_xq_move_from(found[0]), a);
        sq_name(cdsh_xq_move_from(found[1]), b);
        snprintf(en, sizeof en,
                 "'%s' is ambiguous: %d %s %ss on that file can make it (%s and %s); name the "
                 "piece with %s",
                 q, nfound, cdsh__xq_side_name(side), cdsh__xq_type_name(d->type), a, b,
                 d->wxf ? "+ (front) or - (rear) instead of the file digit"
                        : "前 (front) or 后 (rear) before it");
        snprintf(zh, sizeof zh, "“%s”有歧义：这条纵线上有%d个%s都能这样走（%s和%s），%s", q, nfound,
                 cdsh__xq_zh_piece(side, d->type), a, b,
                 d->wxf ? "请用 +（前）或 -（后）代替纵线数字" : "请在前面加“前”或“后”");
        return cdsh__xq_note_fail(e, "NOTATION_AMBIGUOUS", NULL, en, zh);
    }
    snprintf(en, sizeof en, "'%s' cannot be played: %s", q, why_en);
    snprintf(zh, sizeof zh, "“%s”无法走：%s", q, why_zh);
    return cdsh__xq_note_fail(e, "NOTATION_ILLEGAL", cause, en, zh);
}

/* ICCS shape: file letter, rank digit, optional hyphen, file letter, rank digit. */
static int looks_iccs(const char *s)
{
    size_t n = strlen(s);
    if (n != 4 && n != 5)
        return 0;
    if (n == 5 && s[2] != '-')
        return 0;
    const char *t = s + n - 2;
    return ((s[0] | 32) >= 'a' && (s[0] | 32) <= 'i' && s[1] >= '0' && s[1] <= '9' &&
            (t[0] | 32) >= 'a' && (t[0] | 32) <= 'i' && t[1] >= '0' && t[1] <= '9');
}

int cdsh_xq_parse_any(const cdsh_xq_pos *pos, const char *text, cdsh_xq_move_t *out,
                      cdsh_xq_notation_error *err)
{
    if (!pos || !text || !out)
        return cdsh__xq_note_fail(err, "NOTATION_SYNTAX", NULL, "no move given", "没有给出着法");
    char buf[64];
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t' || text[n - 1] == '\n' ||
                     text[n - 1] == '\r'))
        n--;
    while (n > 0 && (*text == ' ' || *text == '\t' || *text == '\n' || *text == '\r'))
        text++, n--;
    if (n >= sizeof buf) /* too long for any notation; the Chinese parser words the error */
        return cdsh_xq_parse_chinese(pos, text, out, err);
    memcpy(buf, text, n);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)buf[i] >= 0x80) /* any CJK character: Chinese ("5兵平8" too) */
            return cdsh_xq_parse_chinese(pos, buf, out, err);
    if (!looks_iccs(buf))
        return cdsh_xq_parse_wxf(pos, buf, out, err);
    cdsh_error ce = {0};
    if (cdsh_xq_parse_move(pos, buf, out, &ce) == 0)
        return 0;
    const char *code =
        strcmp(ce.code, "MOVE_SYNTAX") == 0 ? "NOTATION_SYNTAX"
        : strcmp(ce.code, "MOVE_NO_PIECE") == 0 || strcmp(ce.code, "MOVE_NOT_YOUR_PIECE") == 0
            ? "NOTATION_NO_SUCH_PIECE"
            : "NOTATION_ILLEGAL";
    const char *zh = cdsh_xq_error_zh(ce.code);
    char zbuf[CDSH_ERROR_MESSAGE_MAX + 96];
    snprintf(zbuf, sizeof zbuf, "“%s”：%s", buf, zh ? zh : ce.message);
    return cdsh__xq_note_fail(err, code, ce.code, ce.message, zbuf);
}

const char *cdsh_xq_notation_error_zh(const char *code)
{
    static const struct {
        const char *code, *zh;
    } texts[] = {
        {"NOTATION_SYNTAX", "着法格式错误：可写坐标（h2e2）、中文记谱（炮二平五）或 WXF（C2.5）"},
        {"NOTATION_NO_SUCH_PIECE", "着法所指的棋子不存在"},
        {"NOTATION_AMBIGUOUS", "着法有歧义，不能确定走哪一个棋子"},
        {"NOTATION_ILLEGAL", "着法不合规则"},
    };
    if (!code)
        return NULL;
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        if (strcmp(texts[i].code, code) == 0)
            return texts[i].zh;
    return cdsh_xq_error_zh(code);
}

int cdsh_xq_legal_moves_notated(cdsh_xq_pos *pos, cdsh_xq_notated_move out[CDSH_XQ_MAX_MOVES])
{
    cdsh_xq_move_t moves[CDSH_XQ_MAX_MOVES];
    int n = cdsh_xq_gen_legal(pos, moves);
    for (int i = 0; i < n; i++) {
        cdsh_xq_notated_move *o = &out[i];
        o->move = moves[i];
        o->from = cdsh_xq_square_index90(cdsh_xq_move_from(moves[i]));
        o->to = cdsh_xq_square_index90(cdsh_xq_move_to(moves[i]));
        cdsh_xq_move_to_iccs(moves[i], o->iccs);
        /* cannot fail: generated moves are pseudo-legal and the buffers are full size */
        (void)cdsh_xq_move_to_chinese(pos, moves[i], o->zh, sizeof o->zh);
        (void)cdsh_xq_move_to_wxf(pos, moves[i], o->wxf, sizeof o->wxf);
    }
    return n;
}

json_t *cdsh_xq_legal_moves_json(cdsh_xq_pos *pos)
{
    cdsh_xq_notated_move moves[CDSH_XQ_MAX_MOVES];
    int n = cdsh_xq_legal_moves_notated(pos, moves);
    json_t *arr = json_array();
    if (!arr)
        return NULL;
    for (int i = 0; i < n; i++) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:i}", "iccs", moves[i].iccs, "zh", moves[i].zh,
                              "wxf", moves[i].wxf, "from", moves[i].from, "to", moves[i].to);
        if (!o || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}
