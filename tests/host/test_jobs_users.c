/* test_jobs_users.c — the two command-line users of background jobs:
 * `cdsh xiangqi analyze` deeper than a turn's budget runs as job
 * xiangqi-analyze-N (id and per-depth progress on stderr, the usual result
 * on stdout), and `cdsh acp probe --all` probes every engine as job
 * acp-probe-N (one line per engine). Within the budget, analyze runs in
 * the turn as before. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "acp/acp_fixture.h"

#define MATE_FEN "3k5/4a4/4ba3/9/9/9/9/9/R8/1R2K4 w - - 0 1"

static void deep_analysis_runs_as_a_job(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "xiangqi", "analyze", "--depth", "13",
                                        "--fen", MATE_FEN, NULL),
                     0);
    assert_non_null(strstr(out, "1. mate 3     b0b9 d9d8 a1a8 d8d7 b9b7\n"
                                "   车八进九 将４进１ 车九进七 将４进１ 车八退二\n"));
    assert_non_null(strstr(err, "cdsh xiangqi analyze: depth 13 is beyond a turn's budget (12 "
                                "plies): running as background job xiangqi-analyze-1\n"));
    assert_non_null(strstr(err, "xiangqi-analyze-1: [0/13] searching\n"));
    assert_non_null(strstr(err, "xiangqi-analyze-1: [3/13] depth 3: mate 3, "));
    assert_non_null(strstr(err, "xiangqi-analyze-1: [13/13] depth 13: mate 3, "));
    /* the end comes last */
    size_t n = strlen(err);
    assert_string_equal(err + n - strlen("xiangqi-analyze-1: completed\n"),
                        "xiangqi-analyze-1: completed\n");
    free(out);
    free(err);
    cdsh_test_home_free(home);
}

static void analysis_within_the_budget_stays_in_the_turn(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *out = NULL, *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "xiangqi", "analyze", "--depth", "12",
                                        "--fen", MATE_FEN, NULL),
                     0);
    assert_non_null(strstr(out, "1. mate 3 "));
    assert_string_equal(err, "");
    free(out);
    free(err);
    cdsh_test_home_free(home);
}

static void a_bad_position_is_refused_before_any_job(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "xiangqi", "analyze", "--depth", "20",
                                        "--fen", "9/9/9 w", NULL),
                     2);
    assert_null(strstr(err, "background job"));
    free(err);
    cdsh_test_home_free(home);
}

static void probe_all_probes_every_engine_as_a_job(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char *peer = cdsh_test_peer_path_dup("acp_agent");
    char rows[8192];
    snprintf(rows, sizeof rows,
             "[{\"id\":\"fixture\",\"command\":\"%s\",\"args\":[]},"
             "{\"id\":\"ghost\",\"command\":\"/nonexistent/ghost-agent\",\"args\":[]}]",
             peer);
    acp_write_engines(home, rows);
    char *out = NULL, *err = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "acp", "probe", "--all", "--cwd", home, NULL), 0);
    assert_non_null(strstr(out, "fixture          ok (evidence: "));
    assert_non_null(strstr(out, "ghost            not installed ("));
    assert_non_null(strstr(err, "cdsh acp probe: every engine: running as background job "
                                "acp-probe-1\n"));
    assert_non_null(strstr(err, "] probing fixture\n"));
    assert_non_null(strstr(err, "] probing ghost\n"));
    assert_non_null(strstr(err, "acp-probe-1: completed: "));
    assert_non_null(strstr(err, " engines: 1 ok, 0 failed, "));
    free(out);
    free(err);
    /* --all takes no engine and no --json */
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, NULL, "acp", "probe", "--all", "fixture", NULL),
                     2);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, NULL, "acp", "probe", "--all", "--json", NULL),
                     2);
    free(peer);
    cdsh_test_home_free(home);
}

static void a_failing_engine_fails_the_job(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    /* /bin/false starts and exits at once: the probe reaches it and fails */
    acp_write_engines(home, "[{\"id\":\"broken\",\"command\":\"/bin/false\",\"args\":[]}]");
    char *out = NULL, *err = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "acp", "probe", "--all", "--cwd", home, NULL), 1);
    assert_non_null(strstr(out, "broken           failed"));
    assert_non_null(strstr(err, "acp-probe-1: failed: "));
    assert_non_null(strstr(err, " engines: 0 ok, 1 failed, "));
    free(out);
    free(err);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(deep_analysis_runs_as_a_job),
        cmocka_unit_test(analysis_within_the_budget_stays_in_the_turn),
        cmocka_unit_test(a_bad_position_is_refused_before_any_job),
        cmocka_unit_test(probe_all_probes_every_engine_as_a_job),
        cmocka_unit_test(a_failing_engine_fails_the_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
