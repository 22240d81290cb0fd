/* pgn.c — reading back the xiangqi PGN that export writes (XQ PGN with
 * [Format "ICCS"]): tags, an optional [FEN], ICCS moves, comments, result. */
#include "plugins/xiangqi/pgn.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/position.h"

static int bad(cdsh_error *err, const char *what, const char *tok)
{
    return cdsh_error_set(err, CDSH_EINVAL, "BAD_PGN", "%s%s%s", what, tok ? ": " : "",
                          tok ? tok : "");
}

/* Value of tag `name` ([Name "value"]) copied into out, or 0 if absent. */
static int tag_value(const char *pgn, const char *name, char *out, size_t size)
{
    size_t n = strlen(name);
    for (const char *p = pgn; (p = strchr(p, '[')); p++) {
        if (strncmp(p + 1, name, n) != 0 || p[1 + n] != ' ')
            continue;
        const char *q = strchr(p + 1 + n, '"');
        const char *e = q ? strchr(q + 1, '"') : NULL;
        if (!e || (size_t)(e - q - 1) >= size)
            return 0;
        memcpy(out, q + 1, (size_t)(e - q - 1));
        out[e - q - 1] = 0;
        return 1;
    }
    return 0;
}

static int is_result(const char *t)
{
    return !strcmp(t, "*") || !strcmp(t, "1-0") || !strcmp(t, "0-1") || !strcmp(t, "1/2-1/2");
}

int cdsh_xq_pgn_load(const char *pgn, char **start_fen, char **final_fen, json_t **moves,
                     cdsh_error *err)
{
    *start_fen = *final_fen = NULL;
    *moves = NULL;
    char fen[CDSH_XQ_FEN_MAX];
    if (!tag_value(pgn, "FEN", fen, sizeof fen))
        strcpy(fen, CDSH_XQ_START_FEN);
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    json_t *list = json_array();
    char *text = strdup(pgn);
    int rc = (pos && list && text) ? cdsh_xq_pos_set_fen(pos, fen, err) : CDSH_ENOMEM;
    if (rc == CDSH_ENOMEM)
        cdsh_error_set(err, rc, "NO_MEMORY", "out of memory");
    /* blank out tags, {comments} and ; comments */
    for (char *p = text; rc == 0 && p && *p; p++) {
        char close = *p == '[' ? ']' : *p == '{' ? '}' : *p == ';' ? '\n' : 0;
        if (!close)
            continue;
        char *e = strchr(p, close);
        if (!e)
            e = p + strlen(p) - 1;
        memset(p, ' ', (size_t)(e - p + 1));
        p = e;
    }
    char *save = NULL;
    for (char *t = rc == 0 ? strtok_r(text, " \t\r\n", &save) : NULL; t && rc == 0;
         t = strtok_r(NULL, " \t\r\n", &save)) {
        if (is_result(t))
            break;
        char *d = t;
        while (isdigit((unsigned char)*d))
            d++;
        if (d != t && *d == '.') { /* "12." "12..." */
            while (*d == '.')
                d++;
            if (!*d)
                continue;
            t = d;
        }
        if (strspn(t, ".") == strlen(t))
            continue;
        cdsh_xq_move_t m;
        if (cdsh_xq_parse_move(pos, t, &m, err) != 0 || cdsh_xq_play(pos, m, err) != 0) {
            rc = bad(err, "not a legal ICCS move here", t);
            break;
        }
        char iccs[6];
        cdsh_xq_move_to_iccs(m, iccs);
        json_array_append_new(list, json_string(iccs));
    }
    if (rc == 0) {
        char out[CDSH_XQ_FEN_MAX];
        cdsh_xq_pos_fen(pos, out);
        *start_fen = strdup(fen);
        *final_fen = strdup(out);
        *moves = list;
        list = NULL;
    }
    json_decref(list);
    free(text);
    cdsh_xq_pos_free(pos);
    return rc;
}
