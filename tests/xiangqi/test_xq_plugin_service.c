/* test_xq_plugin_service.c — the xiangqi game service on its own: every
 * projection field, revisions, actors and refusals, the three move forms,
 * undo/hint/review/resign/fallback, persistence across a restart, export. */
#include "support/testkit.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/xiangqi/pgn.h"
#include "plugins/xiangqi/service.h"

typedef struct fixture {
    char *home;
    char dir[512];
    cdsh_xq_service *svc;
    int runner_calls;
} fixture;

static cdsh_xq_service *open_service(fixture *f)
{
    cdsh_xq_service_opts o = {.dir = f->dir,
                              .engine_depth = 2,
                              .engine_movetime_ms = 200,
                              .hint_depth = 3,
                              .review_depth = 1,
                              .engine_hash_mb = 1};
    cdsh_xq_service *svc = NULL;
    cdsh_error err;
    assert_int_equal(cdsh_xq_service_new(&o, &svc, &err), 0);
    return svc;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    snprintf(f->dir, sizeof f->dir, "%s/xiangqi", f->home);
    f->svc = open_service(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    cdsh_xq_service_free(f->svc);
    cdsh_test_home_free(f->home);
    free(f);
    return 0;
}

/* A runner that accepts the turn and never moves (the model "thinks"). */
static int idle_runner(void *ud, const char *key)
{
    (void)key;
    ((fixture *)ud)->runner_calls++;
    return 0;
}

static const char *str(const json_t *v, const char *k)
{
    return json_string_value(json_object_get(v, k));
}

static long long num(const json_t *v, const char *k)
{
    return json_integer_value(json_object_get(v, k));
}

static json_t *new_game(fixture *f, const char *side, const char *opp)
{
    cdsh_xq_new_opts o = {.side = side, .opponent = opp};
    cdsh_error err;
    json_t *v = cdsh_xq_service_new_game(f->svc, "s-test", &o, &err);
    assert_non_null(v);
    assert_true(json_is_true(json_object_get(v, "ok")));
    return v;
}

static json_t *move(fixture *f, cdsh_xq_actor who, const char *text)
{
    cdsh_error err;
    json_t *v = cdsh_xq_service_move(f->svc, "s-test", who, text, -1, -1, &err);
    assert_non_null(v);
    return v;
}

static size_t count_targets(const json_t *v)
{
    size_t n = 0;
    const char *k;
    json_t *arr;
    json_object_foreach((json_t *)json_object_get(v, "legalTargets"), k, arr)
        n += json_array_size(arr);
    return n;
}

static void projection_has_every_field_at_the_start(void **state)
{
    fixture *f = *state;
    json_t *v = new_game(f, "r", "local");
    static const char *const keys[] = {
        "ok",    "revision",     "fen",      "turn",    "hero",     "phase", "pending", "status",
        "board", "legalTargets", "lastMove", "history", "opponent", "usage", "clock",   "message"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        assert_non_null(json_object_get(v, keys[i]));
    assert_string_equal(str(v, "fen"),
                        "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1");
    assert_string_equal(str(v, "turn"), "r");
    assert_string_equal(str(v, "hero"), "r");
    assert_string_equal(str(v, "phase"), "playing");
    assert_true(json_is_null(json_object_get(v, "pending")));
    json_t *st = json_object_get(v, "status");
    assert_string_equal(str(st, "state"), "playing");
    assert_true(json_is_null(json_object_get(st, "winner")));
    assert_string_equal(str(st, "reasonZh"), "对局进行中");
    json_t *board = json_object_get(v, "board");
    assert_int_equal(json_array_size(board), 90);
    assert_string_equal(json_string_value(json_array_get(board, 0)), "r");  /* a9 */
    assert_string_equal(json_string_value(json_array_get(board, 4)), "k");  /* e9 */
    assert_string_equal(json_string_value(json_array_get(board, 70)), "C"); /* h2 */
    assert_string_equal(json_string_value(json_array_get(board, 40)), "");  /* e5 */
    assert_int_equal(count_targets(v), 44);
    /* the cannon on h2 (index 70) reaches e2 (67) */
    json_t *h2 = json_object_get(json_object_get(v, "legalTargets"), "70");
    int found = 0;
    for (size_t i = 0; i < json_array_size(h2); i++)
        found |= json_integer_value(json_array_get(h2, i)) == 67;
    assert_true(found);
    assert_true(json_is_null(json_object_get(v, "lastMove")));
    assert_int_equal(json_array_size(json_object_get(v, "history")), 0);
    json_t *opp = json_object_get(v, "opponent");
    assert_string_equal(str(opp, "kind"), "local");
    assert_string_equal(str(opp, "label"), "本地引擎");
    json_t *u = json_object_get(v, "usage");
    assert_int_equal(num(u, "calls"), 0);
    assert_int_equal(num(u, "totalTokens"), 0);
    assert_int_equal(num(json_object_get(v, "clock"), "red"), 0);
    assert_true(json_is_null(json_object_get(v, "message")));
    json_decref(v);
}

static void hero_move_gets_the_engine_reply_and_revision_grows(void **state)
{
    fixture *f = *state;
    json_t *v0 = new_game(f, "r", "local");
    json_t *v = move(f, CDSH_XQ_ACTOR_HERO, "h2e2");
    assert_true(json_is_true(json_object_get(v, "ok")));
    assert_true(num(v, "revision") > num(v0, "revision"));
    assert_string_equal(str(v, "played"), "炮二平五");
    assert_string_equal(str(v, "captured"), "");
    json_t *hist = json_object_get(v, "history");
    assert_int_equal(json_array_size(hist), 2);
    assert_string_equal(str(json_array_get(hist, 0), "iccs"), "h2e2");
    assert_string_equal(str(json_array_get(hist, 0), "zh"), "炮二平五");
    assert_string_equal(str(v, "turn"), "r"); /* the engine answered at once */
    json_t *last = json_object_get(v, "lastMove");
    assert_string_equal(str(last, "iccs"), str(json_array_get(hist, 1), "iccs"));
    assert_true(num(last, "from") >= 0 && num(last, "from") < 90);
    json_t *st = cdsh_xq_service_state(f->svc, "s-test", NULL);
    assert_int_equal(num(st, "revision"), num(v, "revision"));
    json_decref(st);
    json_decref(v0);
    json_decref(v);
}

static void three_move_forms_are_accepted(void **state)
{
    fixture *f = *state;
    const char *forms[] = {"h2e2", "炮二平五", NULL};
    for (int i = 0; i < 3; i++) {
        json_decref(new_game(f, "r", "local"));
        cdsh_error err;
        json_t *v = forms[i] ? move(f, CDSH_XQ_ACTOR_HERO, forms[i])
                             : cdsh_xq_service_move(f->svc, "s-test", CDSH_XQ_ACTOR_HERO, NULL, 70,
                                                    67, &err);
        assert_true(json_is_true(json_object_get(v, "ok")));
        assert_string_equal(str(json_array_get(json_object_get(v, "history"), 0), "iccs"), "h2e2");
        json_decref(v);
    }
}

static void opponent_cannot_move_for_the_person(void **state)
{
    fixture *f = *state;
    json_decref(new_game(f, "r", "local"));
    json_t *v = move(f, CDSH_XQ_ACTOR_OPPONENT, "h9g7");
    assert_false(json_is_true(json_object_get(v, "ok")));
    assert_string_equal(str(v, "error"), "NOT_YOUR_TURN");
    assert_string_equal(str(v, "errorZh"), "现在不是对手的回合，不得替人类方走子");
    json_t *legal = json_object_get(v, "legalMoves");
    assert_int_equal(json_array_size(legal), 44);
    int found = 0;
    for (size_t i = 0; i < json_array_size(legal); i++)
        found |= !strcmp(str(json_array_get(legal, i), "iccs"), "a3a4") &&
                 !strcmp(str(json_array_get(legal, i), "zh"), "兵九进一");
    assert_true(found);
    json_decref(v);
}

static void person_cannot_move_while_the_model_thinks(void **state)
{
    fixture *f = *state;
    cdsh_xq_service_set_model_runner(f->svc, idle_runner, f);
    json_t *v0 = new_game(f, "b", "model"); /* the model (red) is to move */
    assert_string_equal(str(v0, "pending"), "ai-thinking");
    assert_int_equal(f->runner_calls, 1);
    json_t *v = move(f, CDSH_XQ_ACTOR_HERO, "h9g7");
    assert_string_equal(str(v, "error"), "NOT_YOUR_TURN");
    assert_string_equal(str(v, "errorZh"), "现在是对手的回合，请等待对手走子");
    assert_int_equal(json_array_size(json_object_get(v, "legalMoves")), 44);
    json_decref(v);
    /* the model plays through the opponent actor; pending clears */
    v = move(f, CDSH_XQ_ACTOR_OPPONENT, "炮二平五");
    assert_true(json_is_true(json_object_get(v, "ok")));
    assert_true(json_is_null(json_object_get(v, "pending")));
    assert_string_equal(str(v, "turn"), "b");
    assert_string_equal(str(json_object_get(v, "opponent"), "kind"), "model");
    assert_string_equal(str(json_object_get(v, "opponent"), "label"), "当前会话模型");
    json_decref(v);
    json_decref(v0);
}

static void bad_moves_are_refused_with_their_own_codes(void **state)
{
    fixture *f = *state;
    json_decref(new_game(f, "r", "local"));
    struct {
        const char *text, *code;
    } cases[] = {{"h2h8", "ILLEGAL_MOVE"},
                 {"zz", "BAD_NOTATION"},
                 {"车一进九", "ILLEGAL_MOVE"},
                 {"e0e2", "ILLEGAL_MOVE"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *v = move(f, CDSH_XQ_ACTOR_HERO, cases[i].text);
        assert_false(json_is_true(json_object_get(v, "ok")));
        assert_string_equal(str(v, "error"), cases[i].code);
        assert_true(strlen(str(v, "errorZh")) > 0);
        assert_int_equal(json_array_size(json_object_get(v, "legalMoves")), 44);
        json_decref(v);
    }
    cdsh_error err;
    json_t *v = cdsh_xq_service_move(f->svc, "s-test", CDSH_XQ_ACTOR_HERO, NULL, 70, 95, &err);
    assert_string_equal(str(v, "error"), "BAD_NOTATION");
    json_decref(v);
    json_t *st = cdsh_xq_service_state(f->svc, "s-test", NULL);
    assert_int_equal(json_array_size(json_object_get(st, "history")), 0); /* nothing changed */
    json_decref(st);
}

static void undo_takes_back_two_plies_and_lists_them(void **state)
{
    fixture *f = *state;
    json_decref(new_game(f, "r", "local"));
    json_decref(move(f, CDSH_XQ_ACTOR_HERO, "h2e2"));
    cdsh_error err;
    json_t *v = cdsh_xq_service_undo(f->svc, "s-test", CDSH_XQ_ACTOR_HERO, 2, &err);
    json_t *undone = json_object_get(v, "undone");
    assert_int_equal(json_array_size(undone), 2);
    assert_string_equal(str(json_array_get(undone, 1), "iccs"), "h2e2");
    assert_int_equal(json_array_size(json_object_get(v, "history")), 0);
    assert_int_equal(count_targets(v), 44);
    json_decref(v);
    v = cdsh_xq_service_undo(f->svc, "s-test", CDSH_XQ_ACTOR_HERO, 2, &err);
    assert_string_equal(str(v, "error"), "NOTHING_TO_UNDO");
    json_decref(v);
}

static void hint_gives_ranked_candidates_from_the_engine(void **state)
{
    fixture *f = *state;
    json_decref(new_game(f, "r", "local"));
    cdsh_error err;
    json_t *v = cdsh_xq_service_hint(f->svc, "s-test", 3, 3, &err);
    json_t *c = json_object_get(v, "candidates");
    assert_int_equal(json_array_size(c), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *x = json_array_get(c, i);
        assert_int_equal(strlen(str(x, "iccs")), 4);
        assert_true(strlen(str(x, "zh")) >= 12);
        assert_true(json_array_size(json_object_get(x, "pv")) >= 1);
        assert_string_equal(json_string_value(json_array_get(json_object_get(x, "pv"), 0)),
                            str(x, "iccs"));
        if (i > 0) /* best first */
            assert_true(num(x, "score") <= num(json_array_get(c, i - 1), "score"));
    }
    assert_string_equal(str(json_object_get(v, "evaluation"), "bestIccs"),
                        str(json_array_get(c, 0), "iccs"));
    assert_int_equal(num(json_object_get(v, "usage"), "calls"), 0);
    json_decref(v);
}

static void review_curve_has_one_point_per_ply(void **state)
{
    fixture *f = *state;
    json_decref(new_game(f, "r", "local"));
    json_decref(move(f, CDSH_XQ_ACTOR_HERO, "h2e2"));
    json_decref(move(f, CDSH_XQ_ACTOR_HERO, "h0g2"));
    cdsh_error err;
    json_t *v = cdsh_xq_service_review(f->svc, "s-test", "all", &err);
    assert_string_equal(str(v, "highlight"), "all");
    json_t *moves = json_object_get(v, "moves"), *curve = json_object_get(v, "curve");
    assert_int_equal(json_array_size(moves), 4);
    assert_int_equal(json_array_size(curve), 5);
    assert_int_equal(num(json_array_get(curve, 0), "ply"), 0);
    for (size_t i = 0; i < 4; i++) {
        json_t *m = json_array_get(moves, i);
        assert_int_equal(num(m, "delta"), num(json_array_get(curve, i + 1), "score") -
                                              num(json_array_get(curve, i), "score"));
        assert_string_equal(str(m, "side"), i % 2 ? "b" : "r");
    }
    assert_true(json_is_array(json_object_get(v, "turningPoints")));
    json_decref(v);
}

static void review_marks_a_hanging_chariot_as_a_turning_point(void **state)
{
    fixture *f = *state;
    /* Red to move; its chariot on a0 can take a loose black chariot on a9 */
    cdsh_xq_new_opts o = {
        .side = "r", .opponent = "local", .fen = "r2akab2/9/9/9/9/9/4P4/9/9/R2AKAB2 w - - 0 1"};
    cdsh_error err;
    json_decref(cdsh_xq_service_new_game(f->svc, "s-test", &o, &err));
    json_t *v = move(f, CDSH_XQ_ACTOR_HERO, "a0a1"); /* ignores it: black takes a1 */
    assert_true(json_is_true(json_object_get(v, "ok")));
    json_decref(v);
    v = cdsh_xq_service_review(f->svc, "s-test", "turning", &err);
    json_t *tp = json_object_get(v, "turningPoints");
    assert_true(json_array_size(tp) >= 1);
    assert_int_equal(num(json_array_get(tp, 0), "ply"), 1);
    assert_string_equal(str(json_array_get(tp, 0), "kindZh"), "失误");
    json_decref(v);
}


/* Issue 23: every evaluation is Red's view and the same figure in the
 * board, the hint and the review for one position and depth, on every call
 * (the hint gave the side to move's score with Black to move, the review
 * searched on the opponent's engine with whatever its hash held). */
static void evaluations_agree_in_one_perspective_and_repeat(void **state)
{
    fixture *f = *state;
    static const char *fens[] = {
        "r2akab2/9/9/9/9/9/4P4/9/9/RR1AKAB2 b - - 0 1", /* Black to move, Red a chariot up */
        "r2akab2/9/9/9/9/9/4P4/9/9/RR1AKAB2 w - - 0 1", /* Red to move, the same material */
        "rr1akab2/9/9/9/9/9/4p4/9/9/R2AKAB2 w - - 0 1", /* Red to move, Black a chariot up */
    };
    for (int k = 0; k < 3; k++) {
        cdsh_xq_new_opts o = {.side = k == 0 ? "b" : "r", .opponent = "local", .fen = fens[k]};
        cdsh_error err;
        json_t *g = cdsh_xq_service_new_game(f->svc, "s-test", &o, &err);
        assert_true(json_is_true(json_object_get(g, "ok")));
        json_decref(g);
        json_t *b = cdsh_xq_service_board(f->svc, "s-test", false, true, false, &err);
        const json_t *be = json_object_get(b, "evaluation");
        const long long score = num(be, "score");
        print_message("%s: board %lld (depth %lld)\n", fens[k], score, num(be, "depth"));
        assert_int_equal(num(be, "depth"), 1); /* the fixture's review depth */
        if (k < 2)
            assert_true(score > 300); /* Red is a chariot up, whoever moves */
        else
            assert_true(score < -300);
        assert_int_equal(num(be, "sideScore"), k == 0 ? -score : score);
        /* the hint at that depth: its evaluation, and its one candidate */
        json_t *h = cdsh_xq_service_hint(f->svc, "s-test", 1, 1, &err);
        assert_int_equal(num(json_object_get(h, "evaluation"), "score"), score);
        assert_int_equal(num(json_array_get(json_object_get(h, "candidates"), 0), "score"), score);
        json_decref(h);
        h = cdsh_xq_service_hint(f->svc, "s-test", 3, 1, &err);
        assert_int_equal(num(json_object_get(h, "evaluation"), "score"), score);
        json_decref(h);
        /* a deeper search in between changes nothing */
        json_decref(cdsh_xq_service_hint(f->svc, "s-test", 2, 4, &err));
        json_t *r1 = cdsh_xq_service_review(f->svc, "s-test", "all", &err);
        assert_int_equal(num(json_array_get(json_object_get(r1, "curve"), 0), "score"), score);
        json_t *b2 = cdsh_xq_service_board(f->svc, "s-test", false, true, false, &err);
        assert_true(json_equal(json_object_get(b2, "evaluation"), (json_t *)be));
        json_t *r2 = cdsh_xq_service_review(f->svc, "s-test", "all", &err);
        assert_true(json_equal(json_object_get(r1, "curve"), json_object_get(r2, "curve")));
        json_decref(r1);
        json_decref(r2);
        json_decref(b2);
        json_decref(b);
    }
}

/* The review of a played game repeats exactly (the curve changed between
 * runs: 10 vs 32 for the opening) and its start agrees with the board at
 * the review depth. */
static void review_of_a_game_is_deterministic(void **state)
{
    fixture *f = *state;
    json_decref(new_game(f, "r", "local"));
    json_decref(move(f, CDSH_XQ_ACTOR_HERO, "h2e2"));
    json_decref(move(f, CDSH_XQ_ACTOR_HERO, "h0g2"));
    json_decref(move(f, CDSH_XQ_ACTOR_HERO, "i0h0"));
    cdsh_error err;
    json_t *r1 = cdsh_xq_service_review(f->svc, "s-test", "all", &err);
    json_decref(cdsh_xq_service_hint(f->svc, "s-test", 3, 5, &err));
    json_t *r2 = cdsh_xq_service_review(f->svc, "s-test", "all", &err);
    assert_int_equal(json_array_size(json_object_get(r1, "curve")), 7);
    assert_true(json_equal(json_object_get(r1, "curve"), json_object_get(r2, "curve")));
    json_t *b = cdsh_xq_service_board(f->svc, "s-test", false, true, false, &err);
    assert_int_equal(num(json_object_get(b, "evaluation"), "score"),
                     num(json_array_get(json_object_get(r1, "curve"), 6), "score"));
    json_decref(b);
    json_decref(r1);
    json_decref(r2);
}

static void resign_ends_the_game_for_the_person(void **state)
{
    fixture *f = *state;
    json_decref(new_game(f, "r", "local"));
    cdsh_error err;
    json_t *v = cdsh_xq_service_resign(f->svc, "s-test", &err);
    assert_string_equal(str(v, "phase"), "over");
    json_t *st = json_object_get(v, "status");
    assert_string_equal(str(st, "state"), "resigned");
    assert_string_equal(str(st, "winner"), "b");
    assert_string_equal(str(st, "reasonZh"), "红方认输，黑方胜");
    assert_int_equal(json_object_size(json_object_get(v, "legalTargets")), 0);
    json_decref(v);
    v = move(f, CDSH_XQ_ACTOR_HERO, "h2e2");
    assert_string_equal(str(v, "error"), "GAME_OVER");
    json_decref(v);
}

static void fallback_plays_the_local_engine_move_now(void **state)
{
    fixture *f = *state;
    cdsh_xq_service_set_model_runner(f->svc, idle_runner, f);
    json_decref(new_game(f, "r", "model"));
    json_t *v = move(f, CDSH_XQ_ACTOR_HERO, "h2e2");
    assert_string_equal(str(v, "pending"), "ai-thinking");
    assert_string_equal(str(v, "turn"), "b");
    json_decref(v);
    cdsh_error err;
    v = cdsh_xq_service_fallback(f->svc, "s-test", &err);
    assert_true(json_is_null(json_object_get(v, "pending")));
    assert_string_equal(str(v, "turn"), "r");
    assert_string_equal(str(json_object_get(v, "message"), "code"), "ai.fallback.local");
    assert_string_equal(str(json_object_get(v, "message"), "tone"), "warn");
    json_decref(v);
    v = cdsh_xq_service_fallback(f->svc, "s-test", &err);
    assert_string_equal(str(v, "error"), "AI_NOT_PENDING");
    json_decref(v);
    /* the runner's own give-up codes */
    json_decref(move(f, CDSH_XQ_ACTOR_HERO, "h0g2"));
    assert_int_equal(cdsh_xq_service_fallback_ai(f->svc, "s-test", "ai.timeout", NULL, &err), 0);
    v = cdsh_xq_service_state(f->svc, "s-test", &err);
    assert_string_equal(str(json_object_get(v, "message"), "code"), "ai.timeout");
    assert_string_equal(str(v, "turn"), "r");
    json_decref(v);
}

static void without_a_runner_the_model_game_falls_back(void **state)
{
    fixture *f = *state;
    json_decref(new_game(f, "r", "model"));
    json_t *v = move(f, CDSH_XQ_ACTOR_HERO, "h2e2");
    assert_string_equal(str(v, "turn"), "r");
    assert_int_equal(json_array_size(json_object_get(v, "history")), 2);
    assert_string_equal(str(json_object_get(v, "message"), "code"), "ai.fallback.local");
    json_decref(v);
}

static void a_game_survives_a_restart(void **state)
{
    fixture *f = *state;
    json_decref(new_game(f, "b", "local")); /* the engine opens as red */
    json_t *before = move(f, CDSH_XQ_ACTOR_HERO, "h9g7");
    assert_true(json_is_true(json_object_get(before, "ok")));
    cdsh_error err;
    assert_int_equal(cdsh_xq_service_add_usage(f->svc, "s-test", 10, 5, 0, &err), 0);
    json_t *b2 = cdsh_xq_service_state(f->svc, "s-test", &err);
    cdsh_xq_service_free(f->svc);
    f->svc = open_service(f);
    json_t *after = cdsh_xq_service_state(f->svc, "s-test", &err);
    assert_string_equal(str(after, "fen"), str(b2, "fen"));
    assert_int_equal(num(after, "revision"), num(b2, "revision"));
    assert_string_equal(str(after, "hero"), "b");
    assert_true(json_equal(json_object_get(after, "history"), json_object_get(b2, "history")));
    assert_int_equal(num(json_object_get(after, "usage"), "totalTokens"), 15);
    assert_int_equal(num(json_object_get(after, "usage"), "calls"), 1);
    /* revisions keep growing after the restart, also across a new game */
    json_t *n = new_game(f, "r", "local");
    assert_true(num(n, "revision") > num(after, "revision"));
    json_decref(n);
    json_decref(before);
    json_decref(b2);
    json_decref(after);
}

static void keys_are_checked(void **state)
{
    fixture *f = *state;
    cdsh_error err;
    assert_null(cdsh_xq_service_state(f->svc, "../etc", &err));
    assert_string_equal(err.code, "BAD_GAME_KEY");
    assert_null(cdsh_xq_service_state(f->svc, "", &err));
}

static void export_loads_back_to_the_same_position(void **state)
{
    fixture *f = *state;
    json_decref(new_game(f, "r", "local"));
    json_decref(move(f, CDSH_XQ_ACTOR_HERO, "h2e2"));
    json_decref(move(f, CDSH_XQ_ACTOR_HERO, "h0g2"));
    cdsh_error err;
    json_t *ex = cdsh_xq_service_export(f->svc, "s-test", &err);
    const char *pgn = str(ex, "pgn");
    assert_non_null(strstr(pgn, "[Format \"ICCS\"]"));
    assert_non_null(strstr(pgn, "1. H2-E2 {炮二平五}"));
    char *start = NULL, *fin = NULL;
    json_t *moves = NULL;
    assert_int_equal(cdsh_xq_pgn_load(pgn, &start, &fin, &moves, &err), 0);
    assert_string_equal(fin, str(ex, "fen"));
    assert_int_equal(json_array_size(moves), 4);
    free(start);
    free(fin);
    json_decref(moves);
    json_decref(ex);
    /* from a custom position with Black to move */
    cdsh_xq_new_opts o = {.side = "b",
                          .fen = "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR b"};
    json_decref(cdsh_xq_service_new_game(f->svc, "s-test", &o, &err));
    json_decref(move(f, CDSH_XQ_ACTOR_HERO, "h7e7"));
    ex = cdsh_xq_service_export(f->svc, "s-test", &err);
    assert_non_null(strstr(str(ex, "pgn"), "[FEN \""));
    assert_non_null(strstr(str(ex, "pgn"), "1. ... H7-E7"));
    assert_int_equal(cdsh_xq_pgn_load(str(ex, "pgn"), &start, &fin, &moves, &err), 0);
    assert_string_equal(fin, str(ex, "fen"));
    free(start);
    free(fin);
    json_decref(moves);
    json_decref(ex);
    assert_int_equal(cdsh_xq_pgn_load("1. H2-H8", &start, &fin, &moves, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "BAD_PGN");
}

static void a_bad_fen_is_refused(void **state)
{
    fixture *f = *state;
    cdsh_xq_new_opts o = {.fen = "rnbakabnr/9/9 w"};
    cdsh_error err;
    json_t *v = cdsh_xq_service_new_game(f->svc, "s-test", &o, &err);
    assert_string_equal(str(v, "error"), "BAD_FEN");
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(projection_has_every_field_at_the_start, setup, teardown),
        cmocka_unit_test_setup_teardown(hero_move_gets_the_engine_reply_and_revision_grows, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(three_move_forms_are_accepted, setup, teardown),
        cmocka_unit_test_setup_teardown(opponent_cannot_move_for_the_person, setup, teardown),
        cmocka_unit_test_setup_teardown(person_cannot_move_while_the_model_thinks, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_moves_are_refused_with_their_own_codes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(undo_takes_back_two_plies_and_lists_them, setup, teardown),
        cmocka_unit_test_setup_teardown(hint_gives_ranked_candidates_from_the_engine, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(review_curve_has_one_point_per_ply, setup, teardown),
        cmocka_unit_test_setup_teardown(review_marks_a_hanging_chariot_as_a_turning_point, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(evaluations_agree_in_one_perspective_and_repeat, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(review_of_a_game_is_deterministic, setup, teardown),
        cmocka_unit_test_setup_teardown(resign_ends_the_game_for_the_person, setup, teardown),
        cmocka_unit_test_setup_teardown(fallback_plays_the_local_engine_move_now, setup, teardown),
        cmocka_unit_test_setup_teardown(without_a_runner_the_model_game_falls_back, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_game_survives_a_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(keys_are_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(export_loads_back_to_the_same_position, setup, teardown),
        cmocka_unit_test_setup_teardown(a_bad_fen_is_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
