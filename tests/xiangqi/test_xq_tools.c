/* test_xq_tools.c — `cdsh xiangqi bench` and `cdsh xiangqi analyze` run as
 * the built binary: bench node counts reproducible and summed over the
 * positions, analyze lines with mate scores and Chinese notation, and the
 * usage errors of both. */
#include "support/testkit.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/xiangqi/engine/bench.h"

static json_t *run_json(const char *a1, const char *a2, const char *a3, const char *a4,
                        const char *a5, const char *a6)
{
    char *out = NULL;
    int rc = cdsh_test_run_cdsh(NULL, &out, NULL, "xiangqi", a1, a2, a3, a4, a5, a6, NULL);
    assert_int_equal(rc, 0);
    json_error_t e;
    json_t *j = json_loads(out, 0, &e);
    if (!j)
        fail_msg("not JSON: %s", out);
    free(out);
    return j;
}

static void bench_node_total_is_the_sum_and_reproducible(void **state)
{
    (void)state;
    json_t *a = run_json("bench", "--depth", "4", "--json", NULL, NULL);
    json_t *b = run_json("bench", "--depth", "4", "--json", NULL, NULL);
    json_t *pos = json_object_get(a, "positions");
    assert_int_equal(json_array_size(pos), cdsh_xq_bench_count);
    json_int_t sum = 0;
    size_t i;
    json_t *p;
    json_array_foreach(pos, i, p)
        sum += json_integer_value(json_object_get(p, "nodes"));
    assert_true(sum > 0);
    assert_int_equal(json_integer_value(json_object_get(a, "nodes")), sum);
    assert_int_equal(json_integer_value(json_object_get(b, "nodes")), sum);
    assert_int_equal(json_integer_value(json_object_get(a, "depth")), 4);
    /* CPU time beside the wall time: both present, nodes per CPU second
     * consistent with them (a search spends CPU) */
    const json_int_t cpu = json_integer_value(json_object_get(a, "cpu_ms"));
    const json_int_t cpu_nps = json_integer_value(json_object_get(a, "cpu_nps"));
    assert_true(json_is_integer(json_object_get(a, "cpu_ms")) && cpu >= 0);
    assert_true(cpu_nps > 0);
    if (cpu > 0) /* cpu_nps uses microseconds; the ms figure is rounded down */
        assert_true(cpu_nps <= sum * 1000 / cpu);
    json_decref(a);
    json_decref(b);
}

static void bench_prints_the_signature_lines(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "xiangqi", "bench", "--depth", "2", NULL),
                     0);
    assert_non_null(strstr(out, "Position  1/"));
    assert_non_null(strstr(out, "Nodes searched  : "));
    assert_non_null(strstr(out, "Nodes/second    : "));
    assert_non_null(strstr(out, "CPU time (ms)   : "));
    assert_non_null(strstr(out, "Nodes/CPU-second: "));
    free(out);
}

static void analyze_gives_mate_lines_in_chinese(void **state)
{
    (void)state;
    json_t *j = run_json("analyze", "--fen", "3k5/4a4/4ba3/9/9/9/9/9/R8/1R2K4 w - - 0 1", "--depth",
                         "8", "--json");
    json_t *l = json_array_get(json_object_get(j, "lines"), 0);
    assert_non_null(l);
    assert_int_equal(json_integer_value(json_object_get(l, "mate")), 3);
    const char *pv = json_string_value(json_object_get(l, "pv"));
    const char *zh = json_string_value(json_object_get(l, "pv_zh"));
    assert_non_null(pv);
    assert_non_null(zh);
    /* five plies in both notations; the first move is the chariot to the back rank */
    assert_int_equal(strncmp(pv, "b0b9 ", 5), 0);
    assert_int_equal(strncmp(zh, "车八进九 ", strlen("车八进九 ")), 0);
    json_decref(j);
}

static void analyze_multipv_prints_ranked_lines(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "xiangqi", "analyze", "--depth", "3",
                                        "--multipv", "3", NULL),
                     0);
    assert_non_null(strstr(out, "\n1. "));
    assert_non_null(strstr(out, "\n2. "));
    assert_non_null(strstr(out, "\n3. "));
    assert_null(strstr(out, "\n4. "));
    free(out);
}

static void analyze_reports_a_lost_position(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "xiangqi", "analyze", "--fen",
                                        "3k5/1R7/9/9/9/9/9/9/9/4K4 b - - 0 1", NULL),
                     0);
    assert_non_null(strstr(out, "No legal move: Black to move has lost (stalemate).\n"));
    free(out);
}

static void usage_errors_exit_2(void **state)
{
    (void)state;
    char *err = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, NULL, &err, "xiangqi", "analyze", "--depth", "0", NULL), 2);
    assert_non_null(strstr(err, "bad value for --depth: '0'"));
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "xiangqi", "analyze", "--depth", "3",
                                        "--movetime", "10", NULL),
                     2);
    assert_non_null(strstr(err, "give --depth or --movetime, not both"));
    free(err);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, NULL, &err, "xiangqi", "analyze", "--fen", "xyz", NULL), 2);
    assert_non_null(strstr(err, "FEN_"));
    free(err);
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, NULL, &err, "xiangqi", "bench", "--threads", "0", NULL), 2);
    assert_non_null(strstr(err, "--threads must be 1.."));
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "xiangqi", "uci", "extra", NULL), 2);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bench_node_total_is_the_sum_and_reproducible),
        cmocka_unit_test(bench_prints_the_signature_lines),
        cmocka_unit_test(analyze_gives_mate_lines_in_chinese),
        cmocka_unit_test(analyze_multipv_prints_ranked_lines),
        cmocka_unit_test(analyze_reports_a_lost_position),
        cmocka_unit_test(usage_errors_exit_2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
