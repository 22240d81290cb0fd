/* test_cmd_sessions.c — `cdsh sessions` driven through the built binary
 * against a session store filled in code in a temp CDSH_HOME. */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/session_store.h"
#include "base/json.h"

static char *home;
static char *sid; /* a session with one finished tool-using turn */

static void add(cdsh_session_store *s, const char *id, const char *type, int64_t turn,
                const char *payload)
{
    json_t *p = json_loads(payload, 0, NULL);
    assert_non_null(p);
    assert_int_equal(cdsh_session_store_append(s, id, type, turn, turn ? 1 : 0, p, NULL, NULL), 0);
    json_decref(p);
}

static int setup(void **state)
{
    (void)state;
    home = cdsh_test_home_new();
    cdsh_session_store *s = NULL;
    if (cdsh_session_store_open(cdsh_test_home(), NULL, &s, NULL))
        return -1;
    cdsh_session_spec spec = {.title = "Fix the parser\nplease",
                              .provider = "deepseek",
                              .model = "deepseek-chat",
                              .agent = "coder"};
    if (cdsh_session_store_create(s, &spec, &sid, NULL))
        return -1;
    add(s, sid, "turn/start", 1, "{}");
    add(s, sid, "user/message", 1, "{\"text\":\"why does\\nparse fail?\"}");
    add(s, sid, "assistant/message", 1,
        "{\"text\":\"\",\"reasoning\":\"look\",\"toolCalls\":[{\"id\":\"c1\",\"name\":\"read_"
        "file\","
        "\"arguments\":\"{\\\"path\\\":\\\"p.c\\\"}\"}]}");
    add(s, sid, "tool/call", 1,
        "{\"callId\":\"c1\",\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"p.c\\\"}\"}");
    add(s, sid, "tool/result", 1,
        "{\"callId\":\"c1\",\"isError\":false,\"content\":[{\"type\":\"text\",\"text\":\"int "
        "x;\"}]}");
    add(s, sid, "assistant/message", 1, "{\"text\":\"It is fine.\"}");
    add(s, sid, "turn/end", 1, "{\"reason\":\"done\"}");
    cdsh_session_store_close(s);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(sid);
    cdsh_test_home_free(home);
    return 0;
}

static json_t *parse_out(const char *out)
{
    json_t *v = cdsh_json_parse(out, strlen(out), 0, NULL);
    assert_non_null(v);
    return v;
}

static void help_describes_every_action(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "sessions", "--help", NULL), 0);
    assert_non_null(strstr(out, "Usage: cdsh sessions <action>"));
    for (const char *const *a = (const char *const[]){"list ", "show <id>", "rm <id>", "fork <id>",
                                                      "rename <id>", "--json", NULL};
         *a; a++)
        assert_non_null(strstr(out, *a));
    free(out);
    out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "--help", NULL), 0);
    assert_non_null(strstr(out, "  sessions "));
    free(out);
}

static void list_prints_a_readable_table(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "sessions", "list", NULL), 0);
    assert_non_null(strstr(out, "ID "));
    assert_non_null(strstr(out, sid));
    assert_non_null(strstr(out, "deepseek-chat"));
    assert_non_null(strstr(out, "Fix the parser please")); /* newline flattened */
    assert_non_null(strstr(out, "1-1 of 1 session\n"));
    char row[128];
    snprintf(row, sizeof row, "%s  ", sid);
    const char *line = strstr(out, row);
    assert_non_null(line);
    assert_non_null(strstr(line, "       7      1  ")); /* events, turns */
    free(out);
}

static void list_json_reports_sessions_and_paging(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, NULL, "sessions", "list", "--json", "--limit", "5", NULL),
        0);
    json_t *v = parse_out(out);
    assert_int_equal(json_integer_value(json_object_get(v, "total")), 1);
    assert_int_equal(json_integer_value(json_object_get(v, "limit")), 5);
    json_t *s = json_array_get(json_object_get(v, "sessions"), 0);
    assert_string_equal(json_string_value(json_object_get(s, "id")), sid);
    assert_int_equal(json_integer_value(json_object_get(s, "eventCount")), 7);
    assert_string_equal(json_string_value(json_object_get(s, "agent")), "coder");
    json_decref(v);
    free(out);
}

static void show_prints_session_and_events(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "sessions", "show", sid, NULL), 0);
    assert_non_null(strstr(out, "Session "));
    assert_non_null(strstr(out, "model    deepseek/deepseek-chat   agent coder"));
    assert_non_null(strstr(out, "events   7 in 1 turn\n"));
    assert_non_null(strstr(out, "user/message       why does parse fail?"));
    assert_non_null(strstr(out, "assistant/message  [reasoning] calls: read_file\n"));
    assert_non_null(strstr(out, "tool/call          c1 read_file {\"path\":\"p.c\"}"));
    assert_non_null(strstr(out, "tool/result        c1 ok: int x;"));
    assert_non_null(strstr(out, "turn/end           done"));
    free(out);
}

static void show_json_pages_events(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "sessions", "show", sid, "--json",
                                        "--after", "2", "--limit", "3", NULL),
                     0);
    json_t *v = parse_out(out);
    json_t *evs = json_object_get(v, "events");
    assert_int_equal(json_array_size(evs), 3);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(evs, 0), "seq")), 3);
    assert_true(json_is_true(json_object_get(v, "hasMore")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "session"), "id")),
                        sid);
    json_decref(v);
    free(out);
}

static void show_unknown_session_fails_with_code(void **state)
{
    (void)state;
    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "sessions", "show", "s-nope", NULL), 1);
    assert_string_equal(err, "cdsh sessions: NO_SESSION: no session \"s-nope\"\n");
    free(err);
    err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "sessions", "show", "bad/id", NULL), 1);
    assert_non_null(strstr(err, "BAD_SESSION_ID"));
    free(err);
}

static void fork_then_rm_round_trip(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "sessions", "fork", sid, "--at", "2",
                                        "--title", "branch", "--json", NULL),
                     0);
    json_t *f = parse_out(out);
    free(out);
    const char *fid = json_string_value(json_object_get(f, "id"));
    assert_string_equal(json_string_value(json_object_get(f, "parentId")), sid);
    assert_int_equal(json_integer_value(json_object_get(f, "forkSeq")), 2);
    assert_string_equal(json_string_value(json_object_get(f, "title")), "branch");
    /* Forking inside turn 1 closed the copy's turn: 2 copied + notice + turn/end. */
    assert_int_equal(json_integer_value(json_object_get(f, "eventCount")), 4);

    out = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, NULL, "sessions", "rename", fid, "renamed", NULL), 0);
    char want[128];
    snprintf(want, sizeof want, "renamed %s: renamed\n", fid);
    assert_string_equal(out, want);
    free(out);

    out = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, NULL, "sessions", "rm", fid, "--json", NULL),
                     0);
    json_t *v = parse_out(out);
    assert_string_equal(json_string_value(json_array_get(json_object_get(v, "deleted"), 0)), fid);
    json_decref(v);
    free(out);

    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "sessions", "rm", fid, NULL), 1);
    assert_non_null(strstr(err, "NO_SESSION"));
    free(err);
    json_decref(f);
}

static void bad_usage_exits_2(void **state)
{
    (void)state;
    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "sessions", "frob", NULL), 2);
    assert_non_null(strstr(err, "unknown action 'frob' (list, show, rm, fork, rename)"));
    free(err);
    err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "sessions", "show", NULL), 2);
    assert_non_null(strstr(err, "'show' needs a session id"));
    free(err);
    err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "sessions", "list", "--limit", "x", NULL),
                     2);
    assert_non_null(strstr(err, "--limit wants a number from 1 to 10000, got 'x'"));
    free(err);
    err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "sessions", "list", "--at", "3", NULL),
                     2);
    assert_string_equal(err, "cdsh sessions: --at does not apply to 'list'\n");
    free(err);
    err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "sessions", "list", "extra", NULL), 2);
    assert_non_null(strstr(err, "unexpected argument 'extra'"));
    free(err);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(help_describes_every_action),
        T(list_prints_a_readable_table),
        T(list_json_reports_sessions_and_paging),
        T(show_prints_session_and_events),
        T(show_json_pages_events),
        T(show_unknown_session_fails_with_code),
        T(fork_then_rm_round_trip),
        T(bad_usage_exits_2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
