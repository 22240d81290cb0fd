/* test_sse.c — the incremental server-sent-events parser: field rules, line
 * endings, events split at every byte, comments, BOM, limits. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "base/sse.h"
#include "base/strbuf.h"

typedef struct seen {
    cdsh_strbuf log; /* "event|id|data\n" per event */
    int count;
    int stop_at; /* return 7 on this event (1-based) */
} seen;

static int record(void *arg, const cdsh_sse_event *ev)
{
    seen *s = arg;
    cdsh_strbuf_appendf(&s->log, "%s|%s|", ev->event, ev->id);
    cdsh_strbuf_append(&s->log, ev->data, ev->data_len);
    cdsh_strbuf_append_char(&s->log, '\n');
    assert_int_equal(ev->data[ev->data_len], '\0');
    return ++s->count == s->stop_at ? 7 : 0;
}

/* Feeds text in pieces of `step` bytes (0: all at once) and returns the log. */
static char *parse(const char *text, size_t step, bool *clean)
{
    seen s = {.stop_at = -1};
    cdsh_strbuf_init(&s.log);
    cdsh_sse *p = cdsh_sse_new(0, record, &s);
    size_t len = strlen(text);
    if (step == 0)
        step = len ? len : 1;
    for (size_t i = 0; i < len; i += step)
        assert_int_equal(cdsh_sse_feed(p, text + i, len - i < step ? len - i : step, NULL), 0);
    bool c = cdsh_sse_finish(p);
    if (clean)
        *clean = c;
    cdsh_sse_free(p);
    return cdsh_strbuf_take(&s.log, NULL);
}

static void assert_parses(const char *text, const char *expected)
{
    for (size_t step = 0; step <= 3; step++) {
        char *got = parse(text, step, NULL);
        assert_string_equal(got, expected);
        free(got);
    }
}

static void data_lines_become_one_event_per_blank_line(void **state)
{
    (void)state;
    assert_parses("data: {\"a\":1}\n\ndata: [DONE]\n\n", "message||{\"a\":1}\nmessage||[DONE]\n");
}

static void multiple_data_lines_are_joined_with_newlines(void **state)
{
    (void)state;
    assert_parses("data: one\ndata:two\ndata\n\n", "message||one\ntwo\n\n");
}

static void crlf_and_bare_cr_line_endings_are_accepted(void **state)
{
    (void)state;
    assert_parses("data: a\r\n\r\ndata: b\r\rdata: c\n\n", "message||a\nmessage||b\nmessage||c\n");
}

static void event_and_id_fields_are_reported(void **state)
{
    (void)state;
    assert_parses("event: delta\nid: 7\ndata: x\n\ndata: y\n\n", "delta|7|x\nmessage|7|y\n");
}

static void comments_retry_and_unknown_fields_are_ignored(void **state)
{
    (void)state;
    assert_parses(": keep-alive\nretry: 100\nfoo: bar\ndata: z\n\n: ping\n\n", "message||z\n");
}

static void only_one_leading_space_is_stripped(void **state)
{
    (void)state;
    assert_parses("data:  two spaces\n\n", "message|| two spaces\n");
}

static void leading_bom_is_skipped(void **state)
{
    (void)state;
    assert_parses("\xEF\xBB\xBF"
                  "data: bom\n\n",
                  "message||bom\n");
}

static void blank_lines_without_data_dispatch_nothing(void **state)
{
    (void)state;
    assert_parses("\n\n\nevent: lonely\n\n", "");
}

static void unterminated_last_event_is_dropped_and_reported(void **state)
{
    (void)state;
    bool clean = true;
    char *got = parse("data: whole\n\ndata: half", 0, &clean);
    assert_string_equal(got, "message||whole\n");
    assert_false(clean);
    free(got);
    got = parse("data: whole\n\n", 1, &clean);
    assert_true(clean);
    free(got);
}

static void callback_can_stop_parsing(void **state)
{
    (void)state;
    seen s = {.stop_at = 1};
    cdsh_strbuf_init(&s.log);
    cdsh_sse *p = cdsh_sse_new(0, record, &s);
    const char *text = "data: 1\n\ndata: 2\n\n";
    assert_int_equal(cdsh_sse_feed(p, text, strlen(text), NULL), 7);
    assert_int_equal(s.count, 1);
    cdsh_sse_free(p);
    cdsh_strbuf_deinit(&s.log);
}

static void oversized_lines_and_events_are_refused(void **state)
{
    (void)state;
    seen s = {.stop_at = -1};
    cdsh_strbuf_init(&s.log);
    cdsh_sse *p = cdsh_sse_new(16, record, &s);
    cdsh_error err;
    const char *line = "data: 0123456789abcdef\n\n";
    assert_int_equal(cdsh_sse_feed(p, line, strlen(line), &err), CDSH_ETOOBIG);
    assert_string_equal(err.code, "SSE_TOO_BIG");
    assert_string_equal(err.message, "server-sent event line exceeds 16 bytes");
    cdsh_sse_free(p);
    p = cdsh_sse_new(16, record, &s);
    const char *many = "data: 01234\ndata: 56789\ndata: abcde\n\n";
    assert_int_equal(cdsh_sse_feed(p, many, strlen(many), &err), CDSH_ETOOBIG);
    assert_string_equal(err.message, "server-sent event data exceeds 16 bytes");
    assert_int_equal(s.count, 0);
    cdsh_sse_free(p);
    cdsh_strbuf_deinit(&s.log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(data_lines_become_one_event_per_blank_line),
        cmocka_unit_test(multiple_data_lines_are_joined_with_newlines),
        cmocka_unit_test(crlf_and_bare_cr_line_endings_are_accepted),
        cmocka_unit_test(event_and_id_fields_are_reported),
        cmocka_unit_test(comments_retry_and_unknown_fields_are_ignored),
        cmocka_unit_test(only_one_leading_space_is_stripped),
        cmocka_unit_test(leading_bom_is_skipped),
        cmocka_unit_test(blank_lines_without_data_dispatch_nothing),
        cmocka_unit_test(unterminated_last_event_is_dropped_and_reported),
        cmocka_unit_test(callback_can_stop_parsing),
        cmocka_unit_test(oversized_lines_and_events_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
