/* xq_position.c — see xq_position.h. */
#include "support/testkit.h"

#include "support/xq_position.h"

#include <stdio.h>
#include <string.h>

#include "plugins/xiangqi/engine/movegen.h"
#include "plugins/xiangqi/engine/rules.h"

cdsh_xq_pos *cdsh_test_xq_pos(const char *fen)
{
    cdsh_xq_pos *pos = cdsh_xq_pos_new();
    assert_non_null(pos);
    cdsh_error err = {0};
    if (cdsh_xq_pos_set_fen(pos, fen, &err) != 0)
        fail_msg("FEN %s: %s", fen, err.message);
    return pos;
}

void cdsh_test_xq_play(cdsh_xq_pos *pos, const char *moves)
{
    char buf[1024];
    if (strlen(moves) >= sizeof buf)
        fail_msg("move list too long for the test helper");
    snprintf(buf, sizeof buf, "%s", moves);
    char *save = NULL;
    for (char *m = strtok_r(buf, " ", &save); m; m = strtok_r(NULL, " ", &save)) {
        cdsh_xq_move_t mv;
        cdsh_error err = {0};
        if (cdsh_xq_parse_move(pos, m, &mv, &err) != 0 || cdsh_xq_play(pos, mv, &err) != 0)
            fail_msg("%s: %s", m, err.message);
    }
}
