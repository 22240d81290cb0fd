/* test_model_client.c — the model client against the scripted fake endpoint
 * (tests/peers/fake_model): streaming, reasoning, tool calls, usage, every
 * error class with its verbatim message, retry policy, cancellation, idle
 * timeout; plus configuration resolution. One fake server per test. */
#include "support/testkit.h"

#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/fake_model.h"

#include "agent/model_client.h"
#include "agent/model_config.h"
#include "base/clock.h"
#include "base/process.h"
#include "base/strbuf.h"

#define KEY "sk-test-0123456789abcdef"

typedef cdsh_test_fake_model fake;

/* ---- client helpers --------------------------------------------------------- */

static int cap_reply_bytes, cap_tool_calls; /* 0: defaults */

static cdsh_model_client *client_with(const char *url, const char *key, int retries, int idle_ms)
{
    cdsh_model_config layer, resolved;
    cdsh_model_config_init(&layer);
    layer.max_reply_bytes = cap_reply_bytes;
    layer.max_tool_calls = cap_tool_calls;
    cdsh_model_config_set_base_url(&layer, url);
    cdsh_model_config_set_api_key(&layer, key);
    cdsh_model_config_set_model(&layer, "fake-chat");
    layer.max_retries = retries;
    layer.retry_base_ms = 10;
    layer.retry_max_ms = 100;
    layer.idle_timeout_ms = idle_ms;
    layer.connect_timeout_ms = 2000;
    cdsh_error err;
    assert_int_equal(cdsh_model_config_resolve(&layer, NULL, &resolved, &err), 0);
    cdsh_model_client *c = cdsh_model_client_new(&resolved, &err);
    assert_non_null(c);
    cdsh_model_config_deinit(&layer);
    cdsh_model_config_deinit(&resolved);
    return c;
}

static cdsh_model_client *client_for(fake *f)
{
    return client_with(f->url, KEY, 3, cdsh_test_scale_ms(30000));
}

static json_t *user_messages(const char *text)
{
    return json_pack("[{s:s, s:s}, {s:s, s:s}]", "role", "system", "content", "Be brief.", "role",
                     "user", "content", text);
}

typedef struct collect {
    cdsh_strbuf text, reasoning, args0, args1, order;
    int starts, finishes, usages, retries;
    char start_ids[2][32], start_names[2][32];
    int64_t first_text_ms;
    int abort_on_text; /* return non-zero on the n-th text event (1-based) */
    int text_events;
    cdsh_model_usage last_usage;
} collect;

static void collect_init(collect *c)
{
    memset(c, 0, sizeof *c);
    cdsh_strbuf_init(&c->text);
    cdsh_strbuf_init(&c->reasoning);
    cdsh_strbuf_init(&c->args0);
    cdsh_strbuf_init(&c->args1);
    cdsh_strbuf_init(&c->order);
}

static void collect_deinit(collect *c)
{
    cdsh_strbuf_deinit(&c->text);
    cdsh_strbuf_deinit(&c->reasoning);
    cdsh_strbuf_deinit(&c->args0);
    cdsh_strbuf_deinit(&c->args1);
    cdsh_strbuf_deinit(&c->order);
}

static int on_event(void *arg, const cdsh_model_event *ev)
{
    collect *c = arg;
    static const char tags[] = "TRSAFUY";
    cdsh_strbuf_append_char(&c->order, tags[ev->kind]);
    switch (ev->kind) {
    case CDSH_MODEL_EV_TEXT:
        cdsh_strbuf_append(&c->text, ev->text, ev->len);
        if (!c->first_text_ms)
            c->first_text_ms = cdsh_clock_mono_ms();
        if (++c->text_events == c->abort_on_text)
            return 1;
        break;
    case CDSH_MODEL_EV_REASONING: cdsh_strbuf_append(&c->reasoning, ev->text, ev->len); break;
    case CDSH_MODEL_EV_TOOL_CALL_START:
        if (c->starts < 2) {
            snprintf(c->start_ids[c->starts], 32, "%s", ev->id);
            snprintf(c->start_names[c->starts], 32, "%s", ev->name);
        }
        c->starts++;
        break;
    case CDSH_MODEL_EV_TOOL_CALL_ARGS:
        cdsh_strbuf_append(ev->index == 0 ? &c->args0 : &c->args1, ev->text, ev->len);
        break;
    case CDSH_MODEL_EV_FINISH: c->finishes++; break;
    case CDSH_MODEL_EV_USAGE:
        c->usages++;
        c->last_usage = *ev->usage;
        break;
    case CDSH_MODEL_EV_RETRY: c->retries++; break;
    }
    return 0;
}

/* Runs one completion of "hi" with the collector; returns rc. */
static int run(cdsh_model_client *c, collect *col, cdsh_model_reply *reply, cdsh_error *err)
{
    json_t *msgs = user_messages("hi");
    cdsh_model_request req = {.messages = msgs, .on_event = on_event, .event_arg = col};
    cdsh_error_clear(err);
    int rc = cdsh_model_client_complete(c, &req, reply, err);
    json_decref(msgs);
    return rc;
}

/* One test's fake endpoint, client, event collector and result. */
typedef struct ctx {
    fake f;
    cdsh_model_client *c;
    collect col;
    cdsh_model_reply reply;
    cdsh_error err;
} ctx;

static void ctx_open(ctx *x, const char *script, const char *key, int retries, int idle_ms)
{
    memset(x, 0, sizeof *x);
    cdsh_test_fake_model_start(&x->f, script, NULL);
    x->c = client_with(x->f.url, key, retries, idle_ms);
    collect_init(&x->col);
}

static int ctx_run(ctx *x)
{
    return run(x->c, &x->col, &x->reply, &x->err);
}

static void ctx_close(ctx *x)
{
    cdsh_model_reply_deinit(&x->reply);
    collect_deinit(&x->col);
    cdsh_model_client_free(x->c);
    cdsh_test_fake_model_stop(&x->f);
}

/* Runs a one-response script and expects a failure with code and message. */
static void expect_failure(const char *script, int retries, const char *code, int rc_expected,
                           const char *message, size_t requests)
{
    ctx x;
    ctx_open(&x, script, KEY, retries, cdsh_test_scale_ms(30000));
    assert_int_equal(ctx_run(&x), rc_expected);
    assert_string_equal(x.err.code, code);
    assert_int_equal(x.err.rc, rc_expected);
    if (message)
        assert_string_equal(x.err.message, message);
    assert_null(x.reply.text);
    assert_int_equal(cdsh_test_fake_model_count(&x.f), requests);
    ctx_close(&x);
}

static int setup(void **state)
{
    (void)state;
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    unsetenv("CDSH_BASE_URL");
    unsetenv("CDSH_MODEL");
    return 0;
}

/* ---- streaming ------------------------------------------------------------ */

static void streams_text_pieces_in_order_and_assembles_the_reply(void **state)
{
    (void)state;
    ctx x;
    ctx_open(&x,
             "[{\"chunks\":[{\"text\":\"Hel\"},{\"text\":\"lo, \"},{\"text\":\"world\"}],"
             "\"finish_reason\":\"stop\"}]",
             KEY, 3, cdsh_test_scale_ms(30000));
    assert_int_equal(ctx_run(&x), 0);
    assert_string_equal(x.col.text.data, "Hello, world");
    assert_string_equal(x.col.order.data, "TTTF");
    assert_string_equal(x.reply.text, "Hello, world");
    assert_string_equal(x.reply.finish_reason, "stop");
    assert_null(x.reply.reasoning);
    assert_int_equal(x.reply.n_tool_calls, 0);
    assert_true(x.reply.streamed);
    assert_int_equal(x.reply.http_status, 200);
    ctx_close(&x);
}

static void request_body_carries_model_messages_tools_and_stream_options(void **state)
{
    (void)state;
    fake f;
    cdsh_test_fake_model_start(&f, "[{\"text\":\"ok\"}]", NULL);
    cdsh_model_client *c = client_for(&f);
    json_t *msgs = user_messages("weather?");
    json_t *tools = json_loads("[{\"type\":\"function\",\"function\":{\"name\":\"weather\","
                               "\"parameters\":{\"type\":\"object\"}}}]",
                               0, NULL);
    json_t *choice = json_string("auto");
    json_t *extra = json_loads("{\"thinking\":{\"type\":\"disabled\"}}", 0, NULL);
    cdsh_model_request req = {.messages = msgs,
                              .tools = tools,
                              .tool_choice = choice,
                              .extra = extra,
                              .temperature = 0.5,
                              .has_temperature = true,
                              .max_tokens = 77};
    cdsh_model_reply reply;
    cdsh_error err;
    assert_int_equal(cdsh_model_client_complete(c, &req, &reply, &err), 0);
    json_t *recs = cdsh_test_fake_model_requests(&f);
    json_t *body = json_object_get(json_array_get(recs, 0), "body");
    assert_string_equal(json_string_value(json_object_get(body, "model")), "fake-chat");
    assert_true(json_equal(json_object_get(body, "messages"), msgs));
    assert_true(json_equal(json_object_get(body, "tools"), tools));
    assert_string_equal(json_string_value(json_object_get(body, "tool_choice")), "auto");
    assert_true(json_is_true(json_object_get(body, "stream")));
    assert_true(
        json_is_true(json_object_get(json_object_get(body, "stream_options"), "include_usage")));
    assert_true(json_real_value(json_object_get(body, "temperature")) == 0.5);
    assert_int_equal(json_integer_value(json_object_get(body, "max_tokens")), 77);
    assert_true(json_equal(json_object_get(body, "thinking"), json_object_get(extra, "thinking")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(recs, 0), "path")),
                        "/chat/completions");
    json_decref(recs);
    json_decref(msgs);
    json_decref(tools);
    json_decref(choice);
    json_decref(extra);
    cdsh_model_reply_deinit(&reply);
    cdsh_model_client_free(c);
    cdsh_test_fake_model_stop(&f);
}

static void reasoning_streams_apart_from_the_answer(void **state)
{
    (void)state;
    ctx x;
    ctx_open(&x,
             "[{\"chunks\":[{\"reasoning\":\"Compare \"},{\"reasoning\":\"9.11 and 9.8.\"},"
             "{\"text\":\"9.8 is greater.\"}],\"finish_reason\":\"stop\"}]",
             KEY, 3, cdsh_test_scale_ms(30000));
    assert_int_equal(ctx_run(&x), 0);
    assert_string_equal(x.col.reasoning.data, "Compare 9.11 and 9.8.");
    assert_string_equal(x.col.text.data, "9.8 is greater.");
    assert_string_equal(x.col.order.data, "RRTF");
    assert_string_equal(x.reply.reasoning, "Compare 9.11 and 9.8.");
    assert_string_equal(x.reply.text, "9.8 is greater.");
    json_t *msg = cdsh_model_reply_to_message(&x.reply);
    assert_string_equal(json_string_value(json_object_get(msg, "reasoning_content")),
                        "Compare 9.11 and 9.8.");
    json_decref(msg);
    ctx_close(&x);
}

static void several_tool_calls_in_one_step_with_split_arguments(void **state)
{
    (void)state;
    ctx x;
    ctx_open(&x,
             "[{\"chunks\":["
             "{\"tool_call\":{\"index\":0,\"id\":\"call_a\",\"name\":\"read\",\"arguments\":"
             "\"{\\\"pa\"}},"
             "{\"tool_call\":{\"index\":1,\"id\":\"call_b\",\"name\":\"list\",\"arguments\":"
             "\"{\\\"dir\\\":\"}},"
             "{\"tool_call\":{\"index\":0,\"arguments\":\"th\\\":\\\"a.txt\\\"}\"}},"
             "{\"tool_call\":{\"index\":1,\"arguments\":\"\\\"/\\\"}\"}}],"
             "\"finish_reason\":\"tool_calls\"}]",
             KEY, 3, cdsh_test_scale_ms(30000));
    assert_int_equal(ctx_run(&x), 0);
    assert_int_equal(x.col.starts, 2);
    assert_string_equal(x.col.start_ids[0], "call_a");
    assert_string_equal(x.col.start_names[0], "read");
    assert_string_equal(x.col.start_ids[1], "call_b");
    assert_string_equal(x.col.start_names[1], "list");
    assert_string_equal(x.col.args0.data, "{\"path\":\"a.txt\"}");
    assert_string_equal(x.col.args1.data, "{\"dir\":\"/\"}");
    assert_string_equal(x.reply.text, "");
    assert_string_equal(x.reply.finish_reason, "tool_calls");
    assert_int_equal(x.reply.n_tool_calls, 2);
    assert_string_equal(x.reply.tool_calls[0].id, "call_a");
    assert_string_equal(x.reply.tool_calls[0].name, "read");
    assert_string_equal(x.reply.tool_calls[0].arguments, "{\"path\":\"a.txt\"}");
    assert_string_equal(x.reply.tool_calls[1].id, "call_b");
    assert_string_equal(x.reply.tool_calls[1].name, "list");
    assert_string_equal(x.reply.tool_calls[1].arguments, "{\"dir\":\"/\"}");
    json_t *msg = cdsh_model_reply_to_message(&x.reply);
    assert_true(json_is_null(json_object_get(msg, "content")));
    json_t *calls = json_object_get(msg, "tool_calls");
    assert_int_equal(json_array_size(calls), 2);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(calls, 1), "function"), "arguments")),
                        "{\"dir\":\"/\"}");
    json_decref(msg);
    ctx_close(&x);
}

static void tool_calls_without_index_or_id_are_keyed_by_position(void **state)
{
    (void)state;
    ctx x;
    ctx_open(&x,
             "[{\"chunks\":[{\"raw\":\"data: {\\\"choices\\\":[{\\\"delta\\\":{\\\"tool_calls\\\":"
             "[{\\\"function\\\":{\\\"name\\\":\\\"a\\\",\\\"arguments\\\":\\\"{}\\\"}},"
             "{\\\"function\\\":{\\\"name\\\":\\\"b\\\",\\\"arguments\\\":{\\\"k\\\":1}}}]}}]}"
             "\\n\\n\"}]}]",
             KEY, 3, cdsh_test_scale_ms(30000));
    assert_int_equal(ctx_run(&x), 0);
    assert_int_equal(x.reply.n_tool_calls, 2);
    assert_string_equal(x.reply.tool_calls[0].id, "call_0");
    assert_string_equal(x.col.start_ids[0], "call_0");
    assert_string_equal(x.col.start_ids[1], "call_1");
    assert_string_equal(x.reply.tool_calls[0].name, "a");
    assert_string_equal(x.reply.tool_calls[1].id, "call_1");
    assert_string_equal(x.reply.tool_calls[1].arguments, "{\"k\":1}");
    assert_null(x.reply.finish_reason);
    ctx_close(&x);
}

static void usage_is_reported_per_reply_and_summed_per_client(void **state)
{
    (void)state;
    fake f;
    cdsh_test_fake_model_start(
        &f,
        "[{\"text\":\"one\",\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":4,"
        "\"total_tokens\":14,\"prompt_cache_hit_tokens\":6,"
        "\"completion_tokens_details\":{\"reasoning_tokens\":2}}},"
        "{\"text\":\"two\",\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":5}}]",
        NULL);
    cdsh_model_client *c = client_for(&f);
    collect col;
    collect_init(&col);
    cdsh_model_reply r1, r2;
    cdsh_error err;
    assert_int_equal(run(c, &col, &r1, &err), 0);
    assert_int_equal(col.usages, 1);
    assert_int_equal(col.last_usage.input_tokens, 10);
    assert_int_equal(r1.usage.input_tokens, 10);
    assert_int_equal(r1.usage.output_tokens, 4);
    assert_int_equal(r1.usage.total_tokens, 14);
    assert_int_equal(r1.usage.cached_input_tokens, 6);
    assert_int_equal(r1.usage.reasoning_tokens, 2);
    assert_int_equal(r1.usage.calls, 1);
    assert_int_equal(r1.usage.requests, 1);
    assert_int_equal(run(c, &col, &r2, &err), 0);
    assert_int_equal(r2.usage.total_tokens, 25); /* input + output when total is absent */
    cdsh_model_usage total;
    cdsh_model_client_usage(c, &total);
    assert_int_equal(total.input_tokens, 30);
    assert_int_equal(total.output_tokens, 9);
    assert_int_equal(total.total_tokens, 39);
    assert_int_equal(total.cached_input_tokens, 6);
    assert_int_equal(total.calls, 2);
    assert_int_equal(total.requests, 2);
    cdsh_model_usage sum = {0};
    cdsh_model_usage_add(&sum, &r1.usage);
    cdsh_model_usage_add(&sum, &r2.usage);
    assert_int_equal(sum.total_tokens, 39);
    assert_int_equal(sum.calls, 2);
    cdsh_model_reply_deinit(&r1);
    cdsh_model_reply_deinit(&r2);
    collect_deinit(&col);
    cdsh_model_client_free(c);
    cdsh_test_fake_model_stop(&f);
}

static void plain_json_reply_is_accepted_and_delivered_as_events(void **state)
{
    (void)state;
    ctx x;
    ctx_open(&x,
             "[{\"stream\":false,\"reasoning\":\"think\",\"text\":\"Done.\","
             "\"tool_calls\":[{\"id\":\"call_x\",\"name\":\"f\",\"arguments\":\"{}\"}],"
             "\"finish_reason\":\"tool_calls\",\"usage\":{\"prompt_tokens\":3,"
             "\"completion_tokens\":2,\"total_tokens\":5}}]",
             KEY, 3, cdsh_test_scale_ms(30000));
    assert_int_equal(ctx_run(&x), 0);
    assert_false(x.reply.streamed);
    assert_string_equal(x.col.order.data, "RTSAFU");
    assert_string_equal(x.col.text.data, "Done.");
    assert_string_equal(x.reply.reasoning, "think");
    assert_int_equal(x.reply.n_tool_calls, 1);
    assert_string_equal(x.reply.tool_calls[0].id, "call_x");
    assert_int_equal(x.reply.usage.total_tokens, 5);
    ctx_close(&x);
}

static void no_stream_request_asks_for_a_plain_reply(void **state)
{
    (void)state;
    fake f;
    cdsh_test_fake_model_start(&f, "[{\"text\":\"plain\"}]", NULL);
    cdsh_model_client *c = client_for(&f);
    json_t *msgs = user_messages("hi");
    cdsh_model_request req = {.messages = msgs, .no_stream = true};
    cdsh_model_reply reply;
    cdsh_error err;
    assert_int_equal(cdsh_model_client_complete(c, &req, &reply, &err), 0);
    assert_string_equal(reply.text, "plain");
    assert_false(reply.streamed);
    json_t *recs = cdsh_test_fake_model_requests(&f);
    json_t *body = json_object_get(json_array_get(recs, 0), "body");
    assert_true(json_is_false(json_object_get(body, "stream")));
    assert_null(json_object_get(body, "stream_options"));
    json_decref(recs);
    json_decref(msgs);
    cdsh_model_reply_deinit(&reply);
    cdsh_model_client_free(c);
    cdsh_test_fake_model_stop(&f);
}

static void script_predicates_pick_the_response_for_the_last_user_message(void **state)
{
    (void)state;
    ctx x;
    ctx_open(&x,
             "[{\"match\":{\"last_user_contains\":\"bye\"},\"text\":\"Goodbye\"},"
             "{\"match\":{\"last_user_contains\":\"hi\"},\"text\":\"Hello\"}]",
             KEY, 3, cdsh_test_scale_ms(30000));
    assert_int_equal(ctx_run(&x), 0);
    assert_string_equal(x.reply.text, "Hello");
    ctx_close(&x);
}

/* ---- reasoning_content in the history ------------------------------------- */

static json_t *history_with_reasoning(void)
{
    return json_loads(
        "[{\"role\":\"user\",\"content\":\"q1\"},"
        "{\"role\":\"assistant\",\"content\":\"a1\",\"reasoning_content\":\"r1\"},"
        "{\"role\":\"user\",\"content\":\"q2\"},"
        "{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"r2\","
        "\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\","
        "\"arguments\":\"{}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"42\"},"
        "{\"role\":\"assistant\",\"content\":\"a2\",\"reasoning_content\":\"r3\"},"
        "{\"role\":\"user\",\"content\":\"q3\"}]",
        0, NULL);
}

static const char *reasoning_at(const json_t *body, size_t i)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(body, "messages"), i), "reasoning_content"));
}

static void reasoning_is_sent_back_only_for_turns_with_tool_calls(void **state)
{
    (void)state;
    cdsh_model_client *c = client_with("http://127.0.0.1:9", NULL, 0, 1000);
    json_t *msgs = history_with_reasoning();
    cdsh_model_request req = {.messages = msgs};
    json_t *body = cdsh_model_client_request_body(c, &req, NULL);
    assert_non_null(body);
    assert_null(reasoning_at(body, 1));
    assert_string_equal(reasoning_at(body, 3), "r2");
    assert_string_equal(reasoning_at(body, 5), "r3");
    /* The caller's history is not modified. */
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(msgs, 1), "reasoning_content")), "r1");
    json_decref(body);
    req.reasoning = CDSH_MODEL_REASONING_DROP;
    body = cdsh_model_client_request_body(c, &req, NULL);
    assert_null(reasoning_at(body, 3));
    assert_null(reasoning_at(body, 5));
    json_decref(body);
    req.reasoning = CDSH_MODEL_REASONING_KEEP;
    body = cdsh_model_client_request_body(c, &req, NULL);
    assert_string_equal(reasoning_at(body, 1), "r1");
    json_decref(body);
    json_decref(msgs);
    cdsh_model_client_free(c);
}

static void malformed_requests_are_refused_before_sending(void **state)
{
    (void)state;
    cdsh_model_client *c = client_with("http://127.0.0.1:9", NULL, 0, 1000);
    cdsh_model_reply reply;
    cdsh_error err;
    json_t *empty = json_array();
    cdsh_model_request req = {.messages = empty};
    assert_int_equal(cdsh_model_client_complete(c, &req, &reply, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_REQUEST");
    assert_string_equal(err.message, "messages must be a non-empty array");
    json_t *bad = json_loads("[{\"content\":\"no role\"}]", 0, NULL);
    req.messages = bad;
    assert_int_equal(cdsh_model_client_complete(c, &req, &reply, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "messages[0] must be an object with a string \"role\"");
    json_decref(empty);
    json_decref(bad);
    cdsh_model_client_free(c);
}

/* ---- errors ------------------------------------------------------------------ */

static void http_401_is_invalid_credential_with_the_provider_message_and_no_retry(void **state)
{
    (void)state;
    expect_failure("[{\"status\":401,\"error\":{\"message\":\"Authentication Fails, Your api key: "
                   "****cdef is invalid\",\"type\":\"authentication_error\"},\"repeat\":true}]",
                   3, "INVALID_CREDENTIAL", CDSH_EPERM,
                   "HTTP 401: Authentication Fails, Your api key: ****cdef is invalid", 1);
}

static void http_403_is_invalid_credential(void **state)
{
    (void)state;
    expect_failure(
        "[{\"status\":403,\"error\":{\"message\":\"Forbidden region\"},\"repeat\":true}]", 3,
        "INVALID_CREDENTIAL", CDSH_EPERM, "HTTP 403: Forbidden region", 1);
}

static void http_402_is_quota_insufficient_balance_and_no_retry(void **state)
{
    (void)state;
    expect_failure("[{\"status\":402,\"error\":{\"message\":\"Insufficient Balance\",\"type\":"
                   "\"unknown_error\"},\"repeat\":true}]",
                   3, "QUOTA", CDSH_EPERM, "HTTP 402: Insufficient Balance", 1);
}

static void http_429_with_quota_wording_is_quota_not_rate_limit(void **state)
{
    (void)state;
    expect_failure("[{\"status\":429,\"error\":{\"message\":\"You exceeded your current quota, "
                   "please check your plan.\",\"code\":\"insufficient_quota\"},\"repeat\":true}]",
                   3, "QUOTA", CDSH_EPERM,
                   "HTTP 429: You exceeded your current quota, please check your plan.", 1);
}

static void http_429_is_rate_limit_after_bounded_retries(void **state)
{
    (void)state;
    expect_failure("[{\"status\":429,\"error\":{\"message\":\"Rate limit reached for requests\"},"
                   "\"repeat\":true}]",
                   2, "RATE_LIMIT", CDSH_EBUSY, "HTTP 429: Rate limit reached for requests", 3);
}

static void http_400_with_context_wording_is_context_window_exceeded(void **state)
{
    (void)state;
    expect_failure(
        "[{\"status\":400,\"error\":{\"message\":\"This model's maximum context length is 65536 "
        "tokens. However, you requested 70000 tokens.\",\"type\":\"invalid_request_error\"}}]",
        3, "CONTEXT_WINDOW_EXCEEDED", CDSH_ETOOBIG,
        "HTTP 400: This model's maximum context length is 65536 tokens. However, you requested "
        "70000 tokens.",
        1);
}

static void other_400_is_invalid_request_verbatim_and_not_retried(void **state)
{
    (void)state;
    expect_failure("[{\"status\":400,\"error\":{\"message\":\"Invalid tool_choice: must be one of "
                   "none, auto, required\"},\"repeat\":true}]",
                   3, "INVALID_REQUEST", CDSH_EINVAL,
                   "HTTP 400: Invalid tool_choice: must be one of none, auto, required", 1);
}

static void http_5xx_is_server_with_its_message(void **state)
{
    (void)state;
    expect_failure("[{\"status\":503,\"error\":{\"message\":\"Server overloaded, please retry "
                   "shortly\"},\"repeat\":true}]",
                   -1, "SERVER", CDSH_EIO, "HTTP 503: Server overloaded, please retry shortly", 1);
}

static void non_json_error_body_is_kept_verbatim(void **state)
{
    (void)state;
    expect_failure("[{\"status\":502,\"body\":\"<html>Bad Gateway</html>\",\"content_type\":"
                   "\"text/html\",\"repeat\":true}]",
                   1, "SERVER", CDSH_EIO, "HTTP 502: <html>Bad Gateway</html>", 2);
}

static void error_object_inside_a_200_stream_is_reported_verbatim(void **state)
{
    (void)state;
    expect_failure("[{\"chunks\":[{\"text\":\"par\"},{\"error\":{\"message\":\"upstream model "
                   "crashed\"}}]}]",
                   3, "SERVER", CDSH_EIO, "HTTP 200: upstream model crashed", 1);
}

static void http_408_is_timeout_and_413_is_context_window_exceeded(void **state)
{
    (void)state;
    expect_failure("[{\"status\":408,\"error\":{\"message\":\"Request Timeout\"}}]", -1, "TIMEOUT",
                   CDSH_ETIMEDOUT, "HTTP 408: Request Timeout", 1);
    expect_failure("[{\"status\":413,\"body\":\"Payload Too Large\",\"content_type\":"
                   "\"text/plain\"}]",
                   3, "CONTEXT_WINDOW_EXCEEDED", CDSH_ETOOBIG, "HTTP 413: Payload Too Large", 1);
}

static void empty_event_stream_is_empty_response(void **state)
{
    (void)state;
    expect_failure("[{\"body\":\"\",\"content_type\":\"text/event-stream\"}]", 3, "EMPTY_RESPONSE",
                   CDSH_EPROTO, "model returned no choices (HTTP 200, finish_reason none)", 1);
}

static void non_json_200_body_is_bad_response(void **state)
{
    (void)state;
    expect_failure("[{\"body\":\"<html>captive portal</html>\",\"content_type\":"
                   "\"text/html\"}]",
                   3, "BAD_RESPONSE", CDSH_EPROTO, NULL, 1);
}

static void event_stream_sent_with_a_json_content_type_is_still_parsed(void **state)
{
    (void)state;
    ctx x;
    ctx_open(&x,
             "[{\"body\":\"data: {\\\"choices\\\":[{\\\"delta\\\":{\\\"content\\\":"
             "\\\"mislabelled\\\"}}]}\\n\\ndata: [DONE]\\n\\n\"}]",
             KEY, 3, cdsh_test_scale_ms(30000));
    assert_int_equal(ctx_run(&x), 0);
    assert_string_equal(x.reply.text, "mislabelled");
    assert_string_equal(x.col.text.data, "mislabelled");
    ctx_close(&x);
}

static void malformed_stream_chunk_is_bad_response(void **state)
{
    (void)state;
    ctx x;
    ctx_open(&x, "[{\"chunks\":[{\"raw\":\"data: {not json\\n\\n\"}]}]", KEY, 3,
             cdsh_test_scale_ms(30000));
    assert_int_equal(ctx_run(&x), CDSH_EPROTO);
    assert_string_equal(x.err.code, "BAD_RESPONSE");
    assert_non_null(strstr(x.err.message, "malformed stream chunk"));
    assert_non_null(strstr(x.err.message, "{not json"));
    ctx_close(&x);
}

static void stream_without_choices_is_empty_response(void **state)
{
    (void)state;
    expect_failure("[{\"chunks\":[{\"raw\":\"data: {\\\"choices\\\":[]}\\n\\n\"}]}]", 3,
                   "EMPTY_RESPONSE", CDSH_EPROTO, NULL, 1);
}

static void reply_with_neither_text_nor_tool_calls_is_empty_response(void **state)
{
    (void)state;
    expect_failure("[{\"stream\":false,\"text\":\"\",\"finish_reason\":\"stop\"}]", 3,
                   "EMPTY_RESPONSE", CDSH_EPROTO,
                   "model returned no text or tool calls (HTTP 200, finish_reason stop)", 1);
}

static void api_key_never_appears_in_error_messages(void **state)
{
    (void)state;
    ctx x;
    ctx_open(&x,
             "[{\"status\":401,\"error\":{\"message\":\"Incorrect API key provided: $AUTH. "
             "You can find your key at ...\"}}]",
             KEY, 3, cdsh_test_scale_ms(30000));
    assert_int_equal(ctx_run(&x), CDSH_EPERM);
    assert_string_equal(x.err.code, "INVALID_CREDENTIAL");
    assert_null(strstr(x.err.message, KEY));
    assert_string_equal(x.err.message,
                        "HTTP 401: Incorrect API key provided: [REDACTED]. You can find your key "
                        "at ...");
    ctx_close(&x);
}

static void bearer_key_is_sent_and_checked_by_the_endpoint(void **state)
{
    (void)state;
    fake f;
    const char *expect_key[] = {"--expect-key", KEY, NULL};
    cdsh_test_fake_model_start(&f, "[{\"text\":\"hi\",\"repeat\":true}]", expect_key);
    cdsh_model_client *good = client_for(&f);
    cdsh_model_client *bad = client_with(f.url, "sk-wrong", 3, cdsh_test_scale_ms(30000));
    collect col;
    collect_init(&col);
    cdsh_model_reply reply;
    cdsh_error err;
    assert_int_equal(run(good, &col, &reply, &err), 0);
    cdsh_model_reply_deinit(&reply);
    assert_int_equal(run(bad, &col, &reply, &err), CDSH_EPERM);
    assert_string_equal(err.code, "INVALID_CREDENTIAL");
    assert_string_equal(err.message, "HTTP 401: Authentication Fails, Your api key is invalid");
    json_t *recs = cdsh_test_fake_model_requests(&f);
    assert_int_equal(json_array_size(recs), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(recs, 0), "auth")), "ok");
    assert_string_equal(json_string_value(json_object_get(json_array_get(recs, 1), "auth")), "bad");
    json_decref(recs);
    collect_deinit(&col);
    cdsh_model_client_free(good);
    cdsh_model_client_free(bad);
    cdsh_test_fake_model_stop(&f);
}

static void keyless_local_endpoint_gets_no_authorization_header(void **state)
{
    (void)state;
    ctx x;
    ctx_open(&x, "[{\"text\":\"local\"}]", NULL, 0, cdsh_test_scale_ms(30000));
    assert_int_equal(ctx_run(&x), 0);
    json_t *recs = cdsh_test_fake_model_requests(&x.f);
    assert_string_equal(json_string_value(json_object_get(json_array_get(recs, 0), "auth")),
                        "absent");
    json_decref(recs);
    ctx_close(&x);
}

/* ---- retries --------------------------------------------------------------- */

static void rate_limit_and_server_errors_are_retried_then_succeed(void **state)
{
    (void)state;
    ctx x;
    ctx_open(&x,
             "[{\"status\":429,\"error\":{\"message\":\"slow down\"}},"
             "{\"status\":503,\"error\":{\"message\":\"busy\"}},"
             "{\"text\":\"finally\",\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}]",
             KEY, 3, cdsh_test_scale_ms(30000));
    assert_int_equal(ctx_run(&x), 0);
    assert_string_equal(x.reply.text, "finally");
    assert_int_equal(x.col.retries, 2);
    assert_string_equal(x.col.order.data, "YYTU");
    assert_int_equal(cdsh_test_fake_model_count(&x.f), 3);
    assert_int_equal(x.reply.usage.requests, 3);
    cdsh_model_usage total;
    cdsh_model_client_usage(x.c, &total);
    assert_int_equal(total.requests, 3);
    assert_int_equal(total.calls, 1);
    ctx_close(&x);
}

static void retry_after_is_honoured(void **state)
{
    (void)state;
    fake f;
    cdsh_test_fake_model_start(
        &f,
        "[{\"status\":429,\"headers\":{\"Retry-After\":\"0.3\"},\"error\":{\"message\":"
        "\"wait\"}},{\"text\":\"ok\"}]",
        NULL);
    cdsh_model_config layer, resolved;
    cdsh_model_config_init(&layer);
    cdsh_model_config_set_base_url(&layer, f.url);
    cdsh_model_config_set_api_key(&layer, KEY);
    layer.retry_base_ms = 1;
    layer.retry_max_ms = 5000;
    assert_int_equal(cdsh_model_config_resolve(&layer, NULL, &resolved, NULL), 0);
    cdsh_model_client *c = cdsh_model_client_new(&resolved, NULL);
    collect col;
    collect_init(&col);
    cdsh_model_reply reply;
    cdsh_error err;
    int64_t t0 = cdsh_clock_mono_ms();
    assert_int_equal(run(c, &col, &reply, &err), 0);
    int64_t took = cdsh_clock_mono_ms() - t0;
    assert_true(took >= 280);
    assert_int_equal(cdsh_test_fake_model_count(&f), 2);
    cdsh_model_reply_deinit(&reply);
    collect_deinit(&col);
    cdsh_model_config_deinit(&layer);
    cdsh_model_config_deinit(&resolved);
    cdsh_model_client_free(c);
    cdsh_test_fake_model_stop(&f);
}

static void retry_after_is_capped_by_retry_max(void **state)
{
    (void)state;
    fake f;
    cdsh_test_fake_model_start(
        &f,
        "[{\"status\":503,\"headers\":{\"Retry-After\":\"120\"},\"error\":{\"message\":"
        "\"later\"}},{\"text\":\"ok\"}]",
        NULL);
    cdsh_model_client *c = client_for(&f); /* retry_max_ms 100 */
    collect col;
    collect_init(&col);
    cdsh_model_reply reply;
    cdsh_error err;
    int64_t t0 = cdsh_clock_mono_ms();
    assert_int_equal(run(c, &col, &reply, &err), 0);
    assert_true(cdsh_clock_mono_ms() - t0 < 30000); /* not the 120 s asked for */
    assert_int_equal(cdsh_test_fake_model_count(&f), 2);
    cdsh_model_reply_deinit(&reply);
    collect_deinit(&col);
    cdsh_model_client_free(c);
    cdsh_test_fake_model_stop(&f);
}

static void connect_failure_is_transport_and_retried(void **state)
{
    (void)state;
    /* A port that was just free: nothing listens there. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    cdsh_model_client *c = client_with(url, KEY, 2, 1000);
    collect col;
    collect_init(&col);
    cdsh_model_reply reply;
    cdsh_error err;
    assert_int_equal(run(c, &col, &reply, &err), CDSH_EIO);
    assert_string_equal(err.code, "TRANSPORT");
    assert_true(strncmp(err.message, "cannot reach the model endpoint: ", 33) == 0);
    assert_int_equal(col.retries, 2);
    cdsh_model_usage total;
    cdsh_model_client_usage(c, &total);
    assert_int_equal(total.requests, 3);
    assert_int_equal(total.calls, 0);
    collect_deinit(&col);
    cdsh_model_client_free(c);
}

static void dropped_connection_mid_stream_is_transport_and_not_retried(void **state)
{
    (void)state;
    ctx x;
    ctx_open(&x, "[{\"chunks\":[{\"text\":\"partial \"},{\"drop\":true}]},{\"text\":\"again\"}]",
             KEY, 3, cdsh_test_scale_ms(30000));
    assert_int_equal(ctx_run(&x), CDSH_EIO);
    assert_string_equal(x.err.code, "TRANSPORT");
    assert_true(strncmp(x.err.message, "model connection failed mid-reply: ", 35) == 0);
    assert_string_equal(x.col.text.data, "partial ");
    assert_int_equal(x.col.retries, 0);
    assert_int_equal(cdsh_test_fake_model_count(&x.f), 1);
    ctx_close(&x);
}

/* ---- timeouts and cancellation ------------------------------------------- */

static void stalled_stream_hits_the_idle_timeout(void **state)
{
    (void)state;
    ctx x;
    ctx_open(&x, "[{\"chunks\":[{\"text\":\"start\"},{\"stall_ms\":60000,\"text\":\"late\"}]}]",
             KEY, 3, 150);
    int64_t t0 = cdsh_clock_mono_ms();
    assert_int_equal(ctx_run(&x), CDSH_ETIMEDOUT);
    int64_t took = cdsh_clock_mono_ms() - t0;
    assert_string_equal(x.err.code, "LLM_STREAM_IDLE_TIMEOUT");
    assert_string_equal(x.err.message, "model stream idle: no data for 150 ms");
    assert_true(took >= 140 && took < 30000); /* the stall lasts 60 s */
    assert_string_equal(x.col.text.data, "start");
    assert_int_equal(cdsh_test_fake_model_count(&x.f), 1);
    ctx_close(&x);
}

static void silence_before_the_first_byte_hits_the_idle_timeout(void **state)
{
    (void)state;
    ctx x;
    ctx_open(&x, "[{\"first_byte_delay_ms\":60000,\"text\":\"late\"}]", KEY, 3, 150);
    int64_t t0 = cdsh_clock_mono_ms();
    assert_int_equal(ctx_run(&x), CDSH_ETIMEDOUT);
    assert_string_equal(x.err.code, "LLM_STREAM_IDLE_TIMEOUT");
    assert_true(cdsh_clock_mono_ms() - t0 < 30000); /* the silence lasts 60 s */
    assert_int_equal(cdsh_test_fake_model_count(&x.f), 1);
    ctx_close(&x);
}

typedef struct canceller {
    cdsh_cancel *tok;
    collect *col;
} canceller;

static void *cancel_soon(void *arg)
{
    canceller *k = arg;
    /* Wait for the first text piece, then cancel while the server stalls. */
    while (!__atomic_load_n(&k->col->first_text_ms, __ATOMIC_SEQ_CST))
        usleep(10000);
    usleep(50000);
    cdsh_cancel_fire(k->tok, "user pressed stop");
    return NULL;
}

/* ---- a hostile endpoint ------------------------------------------------------ */

static void endless_stream_stops_at_the_reply_cap(void **state)
{
    (void)state;
    char script[2048], piece[1025];
    memset(piece, 'x', 1024);
    piece[1024] = '\0';
    snprintf(script, sizeof script, "[{\"chunks\":[{\"text\":\"%s\",\"forever\":true}]}]", piece);
    cap_reply_bytes = 256 * 1024;
    ctx x;
    ctx_open(&x, script, KEY, 3, 30000);
    assert_int_equal(ctx_run(&x), CDSH_ETOOBIG);
    assert_string_equal(x.err.code, "REPLY_TOO_LARGE");
    assert_non_null(strstr(x.err.message, "262144 bytes (max_reply_bytes)"));
    /* Pieces were delivered, so it was not retried. */
    assert_int_equal(cdsh_test_fake_model_count(&x.f), 1);
    ctx_close(&x);
    cap_reply_bytes = 0;
}

static void a_single_giant_line_stops_at_the_reply_cap(void **state)
{
    (void)state;
    /* One SSE line that never ends: no event is ever complete. */
    cap_reply_bytes = 128 * 1024;
    ctx x;
    ctx_open(&x, "[{\"chunks\":[{\"raw\":\"data: {\\\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
                 "\"forever\":true}]}]",
             KEY, 0, 30000);
    assert_int_equal(ctx_run(&x), CDSH_ETOOBIG);
    assert_string_equal(x.err.code, "REPLY_TOO_LARGE");
    ctx_close(&x);
    cap_reply_bytes = 0;
}

static void too_many_tool_calls_are_refused(void **state)
{
    (void)state;
    cap_tool_calls = 3;
    expect_failure("[{\"chunks\":[{\"tool_calls\":[{\"name\":\"a\",\"arguments\":\"{}\"},"
                   "{\"name\":\"a\",\"arguments\":\"{}\"},{\"name\":\"a\",\"arguments\":\"{}\"},"
                   "{\"name\":\"a\",\"arguments\":\"{}\"}]}],\"finish_reason\":\"tool_calls\"}]",
                   0, "TOO_MANY_TOOL_CALLS", CDSH_ETOOBIG,
                   "model reply has more than 3 tool calls (max_tool_calls)", 1);
    cap_tool_calls = 0;
}

static void duplicate_tool_call_ids_are_a_bad_response(void **state)
{
    (void)state;
    expect_failure("[{\"chunks\":[{\"tool_calls\":[{\"id\":\"c1\",\"name\":\"a\",\"arguments\":\"{}\"},"
                   "{\"id\":\"c1\",\"name\":\"b\",\"arguments\":\"{}\"}]}],"
                   "\"finish_reason\":\"tool_calls\"}]",
                   0, "BAD_RESPONSE", CDSH_EPROTO, "model reply repeats tool call id c1", 1);
}

static void cancel_from_another_thread_stops_mid_stream_promptly(void **state)
{
    (void)state;
    fake f;
    cdsh_test_fake_model_start(
        &f, "[{\"chunks\":[{\"text\":\"thinking...\"},{\"stall_ms\":60000,\"text\":\"x\"}]}]",
        NULL);
    cdsh_model_client *c = client_with(f.url, KEY, 3, 90000);
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    collect col;
    collect_init(&col);
    canceller k = {tok, &col};
    pthread_t th;
    json_t *msgs = user_messages("hi");
    cdsh_model_request req = {
        .messages = msgs, .cancel = tok, .on_event = on_event, .event_arg = &col};
    cdsh_model_reply reply;
    cdsh_error err;
    pthread_create(&th, NULL, cancel_soon, &k);
    assert_int_equal(cdsh_model_client_complete(c, &req, &reply, &err), CDSH_ECANCELED);
    int64_t after_fire = cdsh_clock_mono_ms() - col.first_text_ms;
    pthread_join(th, NULL);
    assert_string_equal(err.code, "ABORTED");
    assert_string_equal(err.message, "model request cancelled: user pressed stop");
    assert_string_equal(col.text.data, "thinking...");
    assert_true(after_fire < 30000); /* 50 ms after the text, not the 60 s stall */
    json_decref(msgs);
    collect_deinit(&col);
    cdsh_cancel_free(tok);
    cdsh_model_client_free(c);
    cdsh_test_fake_model_stop(&f);
}

static void cancel_during_retry_backoff_stops_waiting(void **state)
{
    (void)state;
    fake f;
    cdsh_test_fake_model_start(
        &f,
        "[{\"status\":429,\"headers\":{\"Retry-After\":\"60\"},\"error\":{\"message\":"
        "\"later\"},\"repeat\":true}]",
        NULL);
    cdsh_model_config layer, resolved;
    cdsh_model_config_init(&layer);
    cdsh_model_config_set_base_url(&layer, f.url);
    layer.retry_max_ms = 60000;
    assert_int_equal(cdsh_model_config_resolve(&layer, NULL, &resolved, NULL), 0);
    cdsh_model_client *c = cdsh_model_client_new(&resolved, NULL);
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    collect col;
    collect_init(&col);
    col.first_text_ms = 1; /* let the canceller go at once */
    canceller k = {tok, &col};
    pthread_t th;
    json_t *msgs = user_messages("hi");
    cdsh_model_request req = {.messages = msgs, .cancel = tok};
    cdsh_model_reply reply;
    cdsh_error err;
    int64_t t0 = cdsh_clock_mono_ms();
    pthread_create(&th, NULL, cancel_soon, &k);
    assert_int_equal(cdsh_model_client_complete(c, &req, &reply, &err), CDSH_ECANCELED);
    pthread_join(th, NULL);
    assert_string_equal(err.code, "ABORTED");
    assert_true(cdsh_clock_mono_ms() - t0 < 30000); /* the back-off would last 60 s */
    json_decref(msgs);
    collect_deinit(&col);
    cdsh_cancel_free(tok);
    cdsh_model_config_deinit(&layer);
    cdsh_model_config_deinit(&resolved);
    cdsh_model_client_free(c);
    cdsh_test_fake_model_stop(&f);
}

static void already_fired_token_aborts_at_once(void **state)
{
    (void)state;
    fake f;
    cdsh_test_fake_model_start(&f, "[{\"first_byte_delay_ms\":60000,\"text\":\"slow\"}]", NULL);
    cdsh_model_client *c = client_for(&f);
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    cdsh_cancel_fire(tok, NULL);
    json_t *msgs = user_messages("hi");
    cdsh_model_request req = {.messages = msgs, .cancel = tok};
    cdsh_model_reply reply;
    cdsh_error err;
    int64_t t0 = cdsh_clock_mono_ms();
    assert_int_equal(cdsh_model_client_complete(c, &req, &reply, &err), CDSH_ECANCELED);
    assert_true(cdsh_clock_mono_ms() - t0 < 30000); /* the reply would take 60 s */
    assert_string_equal(err.message, "model request cancelled: cancelled");
    json_decref(msgs);
    cdsh_cancel_free(tok);
    cdsh_model_client_free(c);
    cdsh_test_fake_model_stop(&f);
}

static void event_handler_can_stop_the_stream(void **state)
{
    (void)state;
    ctx x;
    ctx_open(&x, "[{\"chunks\":[{\"text\":\"a\"},{\"text\":\"b\"},{\"text\":\"c\"}]}]", KEY, 3,
             30000);
    x.col.abort_on_text = 2;
    assert_int_equal(ctx_run(&x), CDSH_ECANCELED);
    assert_string_equal(x.err.code, "ABORTED");
    assert_string_equal(x.err.message, "model request aborted by the event handler");
    assert_string_equal(x.col.text.data, "ab");
    assert_int_equal(cdsh_test_fake_model_count(&x.f), 1);
    ctx_close(&x);
}

/* ---- concurrency -------------------------------------------------------------- */

typedef struct worker {
    cdsh_model_client *c;
    int rc;
    char text[32];
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    json_t *msgs = user_messages("hi");
    cdsh_model_request req = {.messages = msgs};
    cdsh_model_reply reply;
    w->rc = cdsh_model_client_complete(w->c, &req, &reply, NULL);
    if (w->rc == 0)
        snprintf(w->text, sizeof w->text, "%s", reply.text);
    cdsh_model_reply_deinit(&reply);
    json_decref(msgs);
    return NULL;
}

static void one_client_serves_several_threads_at_once(void **state)
{
    (void)state;
    fake f;
    cdsh_test_fake_model_start(
        &f,
        "[{\"repeat\":true,\"delay_ms\":20,\"chunks\":[{\"text\":\"par\"},{\"text\":"
        "\"allel\"}],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":3}}]",
        NULL);
    cdsh_model_client *c = client_for(&f);
    worker w[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker){.c = c};
        pthread_create(&th[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].rc, 0);
        assert_string_equal(w[i].text, "parallel");
    }
    cdsh_model_usage total;
    cdsh_model_client_usage(c, &total);
    assert_int_equal(total.calls, 4);
    assert_int_equal(total.total_tokens, 20);
    cdsh_model_client_free(c);
    cdsh_test_fake_model_stop(&f);
}

/* ---- configuration ------------------------------------------------------------ */

static void config_defaults_to_deepseek_with_its_key(void **state)
{
    (void)state;
    setenv("DEEPSEEK_API_KEY", "sk-deep", 1);
    cdsh_model_config out;
    assert_int_equal(cdsh_model_config_resolve(NULL, NULL, &out, NULL), 0);
    assert_string_equal(out.base_url, "https://api.deepseek.com");
    assert_string_equal(out.model, "deepseek-chat");
    assert_string_equal(out.api_key, "sk-deep");
    assert_int_equal(out.max_retries, 3);
    assert_int_equal(out.idle_timeout_ms, 60000);
    cdsh_model_config_deinit(&out);
    unsetenv("DEEPSEEK_API_KEY");
}

static void config_without_key_for_a_remote_endpoint_is_missing_credential(void **state)
{
    (void)state;
    cdsh_model_config out;
    cdsh_error err;
    assert_int_equal(cdsh_model_config_resolve(NULL, NULL, &out, &err), CDSH_EPERM);
    assert_string_equal(err.code, "MISSING_CREDENTIAL");
    assert_non_null(strstr(err.message, "DEEPSEEK_API_KEY"));
    assert_null(out.base_url);
}

static void deepseek_key_is_never_sent_to_another_provider(void **state)
{
    (void)state;
    setenv("DEEPSEEK_API_KEY", "sk-deep", 1);
    setenv("CDSH_BASE_URL", "https://api.openai.com/v1", 1);
    cdsh_model_config out;
    cdsh_error err;
    assert_int_equal(cdsh_model_config_resolve(NULL, NULL, &out, &err), CDSH_EPERM);
    assert_string_equal(err.code, "MISSING_CREDENTIAL");
    setenv("CDSH_API_KEY", "sk-openai", 1);
    setenv("CDSH_MODEL", "gpt-x", 1);
    assert_int_equal(cdsh_model_config_resolve(NULL, NULL, &out, &err), 0);
    assert_string_equal(out.api_key, "sk-openai");
    assert_string_equal(out.model, "gpt-x");
    assert_string_equal(out.base_url, "https://api.openai.com/v1");
    cdsh_model_config_deinit(&out);
    setup(NULL);
}

static void session_overrides_profile_overrides_environment(void **state)
{
    (void)state;
    setenv("CDSH_BASE_URL", "http://127.0.0.1:1111", 1);
    setenv("CDSH_MODEL", "env-model", 1);
    setenv("CDSH_API_KEY", "env-key", 1);
    cdsh_model_config profile, session, out;
    cdsh_model_config_init(&profile);
    cdsh_model_config_init(&session);
    cdsh_model_config_set_model(&profile, "profile-model");
    cdsh_model_config_set_api_key(&profile, "profile-key");
    profile.idle_timeout_ms = 5000;
    cdsh_model_config_set_model(&session, "session-model");
    cdsh_model_config_set_api_key(&session, ""); /* empty counts as unset */
    assert_int_equal(cdsh_model_config_resolve(&session, &profile, &out, NULL), 0);
    assert_string_equal(out.model, "session-model");
    assert_string_equal(out.api_key, "profile-key");
    assert_string_equal(out.base_url, "http://127.0.0.1:1111");
    assert_int_equal(out.idle_timeout_ms, 5000);
    cdsh_model_config_deinit(&out);
    cdsh_model_config_deinit(&profile);
    cdsh_model_config_deinit(&session);
    setup(NULL);
}

static void loopback_endpoints_need_no_key_and_bad_urls_are_refused(void **state)
{
    (void)state;
    assert_true(cdsh_model_config_is_local("http://localhost:8080/v1"));
    assert_true(cdsh_model_config_is_local("http://127.0.0.1:11434"));
    assert_true(cdsh_model_config_is_local("http://[::1]:8080"));
    assert_false(cdsh_model_config_is_local("http://127.0.0.1.evil.example/v1"));
    assert_false(cdsh_model_config_is_local("https://api.deepseek.com"));
    assert_false(cdsh_model_config_is_local("http://user@10.0.0.1/"));
    cdsh_model_config layer, out;
    cdsh_model_config_init(&layer);
    cdsh_model_config_set_base_url(&layer, "http://localhost:8080/v1");
    assert_int_equal(cdsh_model_config_resolve(&layer, NULL, &out, NULL), 0);
    assert_null(out.api_key);
    cdsh_model_config_deinit(&out);
    cdsh_error err;
    cdsh_model_config_set_base_url(&layer, "ftp://example.com");
    assert_int_equal(cdsh_model_config_resolve(&layer, NULL, &out, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_CONFIG");
    assert_string_equal(err.message,
                        "model base URL \"ftp://example.com\" is not an http:// or https:// URL "
                        "with a host");
    cdsh_model_config_deinit(&layer);
}

static void base_url_naming_the_endpoint_is_used_as_is(void **state)
{
    (void)state;
    fake f;
    cdsh_test_fake_model_start(&f, "[{\"text\":\"ok\"}]", NULL);
    char url[192];
    snprintf(url, sizeof url, "%s/v1/chat/completions/", f.url);
    cdsh_model_client *c = client_with(url, KEY, 0, cdsh_test_scale_ms(30000));
    collect col;
    collect_init(&col);
    cdsh_model_reply reply;
    cdsh_error err;
    assert_int_equal(run(c, &col, &reply, &err), 0);
    json_t *recs = cdsh_test_fake_model_requests(&f);
    assert_string_equal(json_string_value(json_object_get(json_array_get(recs, 0), "path")),
                        "/v1/chat/completions");
    json_decref(recs);
    cdsh_model_reply_deinit(&reply);
    collect_deinit(&col);
    cdsh_model_client_free(c);
    cdsh_test_fake_model_stop(&f);
}

#define T(fn) cmocka_unit_test_setup(fn, setup)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(streams_text_pieces_in_order_and_assembles_the_reply),
        T(request_body_carries_model_messages_tools_and_stream_options),
        T(reasoning_streams_apart_from_the_answer),
        T(several_tool_calls_in_one_step_with_split_arguments),
        T(tool_calls_without_index_or_id_are_keyed_by_position),
        T(usage_is_reported_per_reply_and_summed_per_client),
        T(plain_json_reply_is_accepted_and_delivered_as_events),
        T(no_stream_request_asks_for_a_plain_reply),
        T(script_predicates_pick_the_response_for_the_last_user_message),
        T(reasoning_is_sent_back_only_for_turns_with_tool_calls),
        T(malformed_requests_are_refused_before_sending),
        T(http_401_is_invalid_credential_with_the_provider_message_and_no_retry),
        T(http_403_is_invalid_credential),
        T(http_402_is_quota_insufficient_balance_and_no_retry),
        T(http_429_with_quota_wording_is_quota_not_rate_limit),
        T(http_429_is_rate_limit_after_bounded_retries),
        T(http_400_with_context_wording_is_context_window_exceeded),
        T(other_400_is_invalid_request_verbatim_and_not_retried),
        T(http_5xx_is_server_with_its_message),
        T(non_json_error_body_is_kept_verbatim),
        T(error_object_inside_a_200_stream_is_reported_verbatim),
        T(http_408_is_timeout_and_413_is_context_window_exceeded),
        T(empty_event_stream_is_empty_response),
        T(non_json_200_body_is_bad_response),
        T(event_stream_sent_with_a_json_content_type_is_still_parsed),
        T(malformed_stream_chunk_is_bad_response),
        T(stream_without_choices_is_empty_response),
        T(reply_with_neither_text_nor_tool_calls_is_empty_response),
        T(api_key_never_appears_in_error_messages),
        T(bearer_key_is_sent_and_checked_by_the_endpoint),
        T(keyless_local_endpoint_gets_no_authorization_header),
        T(rate_limit_and_server_errors_are_retried_then_succeed),
        T(retry_after_is_honoured),
        T(retry_after_is_capped_by_retry_max),
        T(connect_failure_is_transport_and_retried),
        T(dropped_connection_mid_stream_is_transport_and_not_retried),
        T(stalled_stream_hits_the_idle_timeout),
        T(silence_before_the_first_byte_hits_the_idle_timeout),
        T(endless_stream_stops_at_the_reply_cap),
        T(a_single_giant_line_stops_at_the_reply_cap),
        T(too_many_tool_calls_are_refused),
        T(duplicate_tool_call_ids_are_a_bad_response),
        T(cancel_from_another_thread_stops_mid_stream_promptly),
        T(cancel_during_retry_backoff_stops_waiting),
        T(already_fired_token_aborts_at_once),
        T(event_handler_can_stop_the_stream),
        T(one_client_serves_several_threads_at_once),
        T(config_defaults_to_deepseek_with_its_key),
        T(config_without_key_for_a_remote_endpoint_is_missing_credential),
        T(deepseek_key_is_never_sent_to_another_provider),
        T(session_overrides_profile_overrides_environment),
        T(loopback_endpoints_need_no_key_and_bad_urls_are_refused),
        T(base_url_naming_the_endpoint_is_used_as_is),
    };
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
