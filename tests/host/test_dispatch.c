/* test_dispatch.c — the dispatch pipeline: stage order, every error code,
 * denials, approval outcomes, guards, around-dispatch wrappers, post-execute
 * rewrites, finalize, results and events, cancellation, timeouts, nested
 * dispatch and the batch scheduler. */
#include "tools_fixture.h"

#include <time.h>

#include "base/clock.h"

/* ---- hooks that trace -------------------------------------------------------- */

typedef struct pre_rule {
    cdsh_tools_verdict verdict;
    const char *reason; /* NULL: none */
    const char *tag;    /* trace tag; NULL = "pre" */
} pre_rule;

static cdsh_tools_verdict pre_hook(void *ud, const cdsh_tool_exec *exec, char **reason)
{
    (void)exec;
    pre_rule *r = ud;
    trace(r && r->tag ? r->tag : "pre");
    if (!r)
        return CDSH_TOOLS_ALLOW;
    if (r->reason)
        *reason = strdup(r->reason);
    return r->verdict;
}

typedef struct approver {
    cdsh_approval_outcome outcome;
    char seen_reason[128];
    cdsh_cancel *fire_on_request; /* simulate the caller aborting while asked */
} approver;

static cdsh_approval_outcome approve(void *ud, const cdsh_tool_exec *exec, const char *reason)
{
    (void)exec;
    approver *a = ud;
    trace("approval");
    snprintf(a->seen_reason, sizeof a->seen_reason, "%s", reason ? reason : "(null)");
    if (a->fire_on_request)
        cdsh_cancel_fire(a->fire_on_request, "user left");
    return a->outcome;
}

static char *guard_hook(void *ud, const cdsh_tool_exec *exec)
{
    (void)exec;
    const char *reason = ud;
    trace(reason ? reason : "guard");
    return reason ? strdup(reason) : NULL;
}

static cdsh_toolresult *around_hook(void *ud, const cdsh_tool_exec *exec, cdsh_dispatch_next *next)
{
    (void)exec;
    const char *tag = ud ? ud : "around";
    char buf[64];
    snprintf(buf, sizeof buf, "%s>", tag);
    trace(buf);
    cdsh_toolresult *res = cdsh_dispatch_next_run(next, NULL);
    snprintf(buf, sizeof buf, "<%s", tag);
    trace(buf);
    return res;
}

static void post_accept(void *ud, const cdsh_tool_exec *exec, const cdsh_toolresult *res,
                        cdsh_tools_post *d)
{
    (void)ud;
    (void)exec;
    (void)res;
    (void)d;
    trace("post");
}

static json_t *finalize_trace(void *ud, const cdsh_tool_exec *exec, const cdsh_toolresult *res)
{
    (void)ud;
    (void)exec;
    (void)res;
    trace("finalize");
    return NULL;
}

static void add_pre(fx *f, cdsh_scope *scope, pre_rule *rule)
{
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_on_pre_execute(f->tools, scope, pre_hook, rule, NULL, &d, NULL), 0);
    fx_keep(f, d);
}

static void add_guard(fx *f, cdsh_scope *scope, const char *reason)
{
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_guard(f->tools, scope, guard_hook, (void *)reason, NULL, &d, NULL),
                     0);
    fx_keep(f, d);
}

static void add_post(fx *f, cdsh_scope *scope, cdsh_tools_post_fn fn, void *ud)
{
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_on_post_execute(f->tools, scope, fn, ud, NULL, &d, NULL), 0);
    fx_keep(f, d);
}

static void add_around(fx *f, cdsh_scope *scope, cdsh_tools_around_fn fn, void *ud)
{
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_on_execute(f->tools, scope, fn, ud, NULL, &d, NULL), 0);
    fx_keep(f, d);
}

static void add_approval(fx *f, approver *a)
{
    cdsh_approval_service svc = {.request = approve, .ud = a};
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_set_approval(f->tools, &svc, &d, NULL), 0);
    fx_keep(f, d);
}

static atomic_int g_heard;
static void count_event(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    (void)arg;
    (void)name;
    (void)scope;
    (void)payload;
    atomic_fetch_add(&g_heard, 1);
}

static char *guard_only_identity(void *ud, const cdsh_tool_exec *exec)
{
    (void)ud;
    return strcmp(exec->name, "identity") == 0 ? strdup("identity is off limits") : NULL;
}

static void release_count(void *ud)
{
    (void)ud;
    atomic_fetch_add(&g_heard, 1);
}

static const char *trace_of(fx *f)
{
    return f->trace;
}

/* ---- results and stage order --------------------------------------------------- */

static void success_result_has_value_and_text_content(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    cdsh_toolresult *res = fx_call(f, NULL, "echo", "{\"text\":\"hello\"}");
    assert_false(res->is_error);
    assert_string_equal(vstr(res), "hello");
    assert_string_equal(only_text(res), "hello");
    json_t *j = cdsh_toolresult_to_json(res);
    json_t *want = js("{\"isError\":false,\"value\":\"hello\","
                      "\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}");
    assert_true(json_equal(j, want));
    json_decref(j);
    json_decref(want);
    cdsh_toolresult_free(res);
}

static void default_render_prints_non_strings_as_compact_json(void **state)
{
    fx *f = *state;
    json_t *v = js("{\"a\":[1,2],\"b\":null}");
    cdsh_tool_def def = fx_def("obj", body_const, v);
    fx_add(f, NULL, &def);
    cdsh_toolresult *res = fx_call(f, NULL, "obj", NULL);
    assert_string_equal(only_text(res), "{\"a\":[1,2],\"b\":null}");
    assert_true(json_equal(res->value, v));
    cdsh_toolresult_free(res);
    json_decref(v);
}

static json_t *render_shout(void *ud, const json_t *args, const json_t *value, cdsh_error *err)
{
    (void)ud;
    (void)args;
    (void)err;
    char buf[128];
    snprintf(buf, sizeof buf, "%s!", json_string_value(value));
    json_t *c = cdsh_toolresult_text_content(buf);
    json_array_append_new(c, json_pack("{s:s, s:s}", "type", "text", "text", "second"));
    return c;
}

static json_t *render_fails(void *ud, const json_t *args, const json_t *value, cdsh_error *err)
{
    (void)ud;
    (void)args;
    (void)value;
    cdsh_error_set(err, CDSH_EINVAL, "X", "cannot draw this");
    return NULL;
}

static void custom_render_produces_content_blocks(void **state)
{
    fx *f = *state;
    json_t *v = json_string("hey");
    cdsh_tool_def def = fx_def("loud", body_const, v);
    def.render = render_shout;
    fx_add(f, NULL, &def);
    cdsh_toolresult *res = fx_call(f, NULL, "loud", NULL);
    assert_int_equal(json_array_size(res->content), 2);
    char *text = cdsh_toolresult_text_dup(res);
    assert_string_equal(text, "hey!\nsecond");
    free(text);
    cdsh_toolresult_free(res);
    json_decref(v);
}

static void render_failure_is_invalid_tool_output(void **state)
{
    fx *f = *state;
    json_t *v = json_string("x");
    cdsh_tool_def def = fx_def("broken", body_const, v);
    def.render = render_fails;
    fx_add(f, NULL, &def);
    cdsh_toolresult *res = fx_call(f, NULL, "broken", NULL);
    assert_error(res, "INVALID_TOOL_OUTPUT",
                 "tool \"broken\" output.render failed: cannot draw this");
    assert_string_equal(res->error_name, "ToolOutputError");
    cdsh_toolresult_free(res);
    json_decref(v);
}

static void stages_run_in_pipeline_order(void **state)
{
    fx *f = *state;
    cdsh_scope *agent = cdsh_scope_new("agent", NULL);
    json_t *params = js("{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}");
    cdsh_tool_def def = fx_def("echo", body_echo, NULL);
    def.parameters = params;
    def.finalize_content = finalize_trace;
    fx_add(f, NULL, &def);
    pre_rule ask = {CDSH_TOOLS_ASK, "please", "pre"};
    add_pre(f, NULL, &ask);
    approver a = {.outcome = CDSH_APPROVAL_ALLOWED_ONCE};
    add_approval(f, &a);
    add_guard(f, NULL, NULL);
    add_around(f, NULL, around_hook, NULL);
    add_post(f, NULL, post_accept, NULL);
    cdsh_toolresult *res = fx_call(f, agent, "echo", "{\"text\":\"t\"}");
    assert_string_equal(vstr(res), "t");
    assert_string_equal(trace_of(f),
                        "pre approval guard around> body <around post finalize result");
    assert_string_equal(a.seen_reason, "please");
    cdsh_toolresult_free(res);
    json_decref(params);
    cdsh_scope_unref(agent);
}

static void around_wrappers_nest_in_registration_order(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    add_around(f, NULL, around_hook, "outer");
    add_around(f, NULL, around_hook, "inner");
    cdsh_toolresult *res = fx_call(f, NULL, "echo", NULL);
    assert_string_equal(trace_of(f), "outer> inner> body <inner <outer result");
    cdsh_toolresult_free(res);
}

/* ---- argument and output errors ---------------------------------------------------- */

static void invalid_args_list_violations_with_paths(void **state)
{
    fx *f = *state;
    json_t *params = js("{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"},"
                        "\"n\":{\"type\":\"integer\"}},\"required\":[\"text\"],"
                        "\"additionalProperties\":false}");
    cdsh_tool_def def = fx_def("strict", body_echo, NULL);
    def.parameters = params;
    fx_add(f, NULL, &def);
    cdsh_toolresult *res = fx_call(f, NULL, "strict", "{\"n\":\"x\",\"z\":1}");
    assert_error(res, "INVALID_ARGS",
                 "invalid arguments: missing required property \"arguments.text\"; "
                 "\"arguments.n\" must be an integer; \"arguments.z\" is not a declared property "
                 "(additionalProperties: false)");
    assert_string_equal(res->error_name, "ToolArgsError");
    assert_string_equal(only_text(res),
                        "Error: invalid arguments: missing required property \"arguments.text\"; "
                        "\"arguments.n\" must be an integer; \"arguments.z\" is not a declared "
                        "property (additionalProperties: false)");
    cdsh_toolresult_free(res);
    json_decref(params);
}

static void invalid_args_skip_policy_but_are_published(void **state)
{
    fx *f = *state;
    json_t *params = js("{\"type\":\"object\",\"required\":[\"a\"],\"properties\":{\"a\":{}}}");
    cdsh_tool_def def = fx_def("needs_a", body_echo, NULL);
    def.parameters = params;
    def.finalize_content = finalize_trace;
    fx_add(f, NULL, &def);
    add_pre(f, NULL, NULL);
    add_post(f, NULL, post_accept, NULL);
    cdsh_toolresult *res = fx_call(f, NULL, "needs_a", "{}");
    assert_string_equal(res->error_code, "INVALID_ARGS");
    assert_string_equal(trace_of(f), "finalize result");
    assert_int_equal(fx_count_events(f, "tools/result"), 1);
    cdsh_toolresult_free(res);
    json_decref(params);
}

static void non_object_arguments_are_invalid(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    cdsh_toolresult *res = fx_call(f, NULL, "echo", "[1,2]");
    assert_error(res, "INVALID_ARGS", "invalid arguments: arguments must be an object");
    cdsh_toolresult_free(res);
}

static void non_lossless_arguments_are_invalid(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    json_t *args = json_object();
    json_object_set_new(args, "text", json_stringn("a\0b", 3));
    cdsh_dispatch_input in = {.call_id = "c", .name = "echo", .args = args};
    cdsh_toolresult *res = cdsh_dispatch_execute(f->tools, &in);
    assert_true(res->is_error);
    assert_string_equal(res->error_code, "INVALID_ARGS");
    assert_non_null(strstr(res->error_message, "invalid arguments: "));
    assert_non_null(strstr(res->error_message, "arguments.text"));
    assert_string_equal(trace_of(f), "result");
    cdsh_toolresult_free(res);
    json_decref(args);
}

static void arguments_are_a_snapshot(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    json_t *args = js("{\"text\":\"before\"}");
    cdsh_dispatch_input in = {.call_id = "c", .name = "echo", .args = args};
    cdsh_toolresult *res = cdsh_dispatch_execute(f->tools, &in);
    json_object_set_new(args, "text", json_string("after"));
    assert_string_equal(vstr(res), "before");
    cdsh_toolresult_free(res);
    json_decref(args);
}

static void output_violating_schema_is_invalid_tool_output(void **state)
{
    fx *f = *state;
    json_t *v = json_integer(5);
    json_t *out = js("{\"type\":\"string\"}");
    cdsh_tool_def def = fx_def("liar", body_const, v);
    def.output_schema = out;
    fx_add(f, NULL, &def);
    cdsh_toolresult *res = fx_call(f, NULL, "liar", NULL);
    assert_error(res, "INVALID_TOOL_OUTPUT",
                 "tool \"liar\" returned invalid output: \"value\" must be a string");
    assert_string_equal(res->error_name, "ToolOutputError");
    cdsh_toolresult_free(res);
    json_decref(v);
    json_decref(out);
}

static void non_lossless_output_is_invalid_tool_output(void **state)
{
    fx *f = *state;
    json_t *v = json_stringn("x\0y", 3);
    cdsh_tool_def def = fx_def("nul", body_const, v);
    fx_add(f, NULL, &def);
    cdsh_toolresult *res = fx_call(f, NULL, "nul", NULL);
    assert_true(res->is_error);
    assert_string_equal(res->error_code, "INVALID_TOOL_OUTPUT");
    assert_non_null(strstr(res->error_message, "tool \"nul\" returned invalid output: "));
    cdsh_toolresult_free(res);
    json_decref(v);
}

static void body_failure_carries_name_and_code(void **state)
{
    fx *f = *state;
    cdsh_tool_def def = fx_def("boom", body_fail, "GameError|NOT_YOUR_TURN|wait for red");
    fx_add(f, NULL, &def);
    cdsh_toolresult *res = fx_call(f, NULL, "boom", NULL);
    assert_error(res, "NOT_YOUR_TURN", "wait for red");
    assert_string_equal(res->error_name, "GameError");
    assert_string_equal(only_text(res), "Error: wait for red");
    json_t *j = cdsh_toolresult_to_json(res);
    json_t *want = js("{\"isError\":true,\"error\":{\"message\":\"wait for red\",\"info\":"
                      "{\"name\":\"GameError\",\"code\":\"NOT_YOUR_TURN\"}},\"content\":"
                      "[{\"type\":\"text\",\"text\":\"Error: wait for red\"}]}");
    assert_true(json_equal(j, want));
    json_decref(j);
    json_decref(want);
    cdsh_toolresult_free(res);
}

static void plain_body_failure_has_no_info(void **state)
{
    fx *f = *state;
    cdsh_tool_def def = fx_def("plain", body_fail, "|x|disk full");
    fx_add(f, NULL, &def);
    cdsh_toolresult *res = fx_call(f, NULL, "plain", NULL);
    assert_error(res, NULL, "disk full");
    json_t *j = cdsh_toolresult_to_json(res);
    assert_null(json_object_get(json_object_get(j, "error"), "info"));
    json_decref(j);
    cdsh_toolresult_free(res);
}

static int body_bare_error(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    (void)exec;
    (void)value;
    return CDSH_ENOTFOUND;
}

static void undescribed_body_failure_gets_a_generic_message(void **state)
{
    fx *f = *state;
    cdsh_tool_def def = fx_def("bare", body_bare_error, NULL);
    fx_add(f, NULL, &def);
    cdsh_toolresult *res = fx_call(f, NULL, "bare", NULL);
    char want[128];
    snprintf(want, sizeof want, "tool failed: %s", cdsh_strerror(CDSH_ENOTFOUND));
    assert_error(res, NULL, want);
    cdsh_toolresult_free(res);
}

static void unknown_tool_still_meets_policy_hooks(void **state)
{
    fx *f = *state;
    add_pre(f, NULL, NULL);
    add_guard(f, NULL, NULL);
    add_post(f, NULL, post_accept, NULL);
    cdsh_toolresult *res = fx_call(f, NULL, "nobody", "{\"anything\":1}");
    assert_error(res, "UNKNOWN_TOOL", "unknown tool \"nobody\"");
    assert_string_equal(trace_of(f), "pre guard post result");
    cdsh_toolresult_free(res);
}

static void execute_refuses_calls_without_id_or_name(void **state)
{
    fx *f = *state;
    cdsh_dispatch_input in = {.call_id = "", .name = "x"};
    assert_null(cdsh_dispatch_execute(f->tools, &in));
    in = (cdsh_dispatch_input){.call_id = "c"};
    assert_null(cdsh_dispatch_execute(f->tools, &in));
    assert_null(cdsh_dispatch_execute(NULL, &in));
}

/* ---- pre-execute, approval, guards ------------------------------------------------- */

static void pre_execute_deny_reaches_model_verbatim_and_skips_body(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    pre_rule deny = {CDSH_TOOLS_DENY, "writes are disabled in plan mode", NULL};
    add_pre(f, NULL, &deny);
    add_post(f, NULL, post_accept, NULL);
    cdsh_toolresult *res = fx_call(f, NULL, "echo", NULL);
    assert_error(res, NULL, "writes are disabled in plan mode");
    assert_string_equal(only_text(res), "Error: writes are disabled in plan mode");
    assert_string_equal(trace_of(f), "pre post result");
    cdsh_toolresult_free(res);
}

static void deny_without_reason_gets_a_default(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    pre_rule deny = {CDSH_TOOLS_DENY, NULL, NULL};
    add_pre(f, NULL, &deny);
    cdsh_toolresult *res = fx_call(f, NULL, "echo", NULL);
    assert_error(res, NULL, "tool call denied by policy");
    cdsh_toolresult_free(res);
}

static void first_non_allow_pre_execute_decides(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    pre_rule allow = {CDSH_TOOLS_ALLOW, "ignored", "p1"};
    pre_rule deny = {CDSH_TOOLS_DENY, "second says no", "p2"};
    pre_rule never = {CDSH_TOOLS_DENY, "third", "p3"};
    add_pre(f, NULL, &allow);
    add_pre(f, NULL, &deny);
    add_pre(f, NULL, &never);
    cdsh_toolresult *res = fx_call(f, NULL, "echo", NULL);
    assert_error(res, NULL, "second says no");
    assert_string_equal(trace_of(f), "p1 p2 result");
    cdsh_toolresult_free(res);
}

static void scoped_pre_execute_sees_only_its_agents(void **state)
{
    fx *f = *state;
    cdsh_scope *preset = cdsh_scope_new("p", NULL);
    cdsh_scope *a = cdsh_scope_new("a", preset), *b = cdsh_scope_new("b", NULL);
    fx_add_echo(f, NULL, "echo");
    pre_rule deny = {CDSH_TOOLS_DENY, "preset policy", NULL};
    add_pre(f, preset, &deny);
    cdsh_toolresult *ra = fx_call(f, a, "echo", NULL);
    cdsh_toolresult *rb = fx_call(f, b, "echo", NULL);
    cdsh_toolresult *rg = fx_call(f, NULL, "echo", NULL);
    assert_error(ra, NULL, "preset policy");
    assert_false(rb->is_error);
    assert_false(rg->is_error);
    cdsh_toolresult_free(ra);
    cdsh_toolresult_free(rb);
    cdsh_toolresult_free(rg);
    cdsh_scope_unref(a);
    cdsh_scope_unref(b);
    cdsh_scope_unref(preset);
}

static void ask_without_approval_service_denies_with_ask_reason(void **state)
{
    fx *f = *state;
    cdsh_scope *agent = cdsh_scope_new("agent", NULL);
    fx_add_echo(f, NULL, "echo");
    pre_rule ask = {CDSH_TOOLS_ASK, "needs approval", NULL};
    add_pre(f, NULL, &ask);
    cdsh_toolresult *res = fx_call(f, agent, "echo", NULL);
    assert_error(res, NULL, "needs approval");
    assert_string_equal(only_text(res), "Error: needs approval");
    cdsh_toolresult_free(res);
    cdsh_scope_unref(agent);
}

static void ask_without_reason_or_service_uses_default_denial(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    pre_rule ask = {CDSH_TOOLS_ASK, NULL, NULL};
    add_pre(f, NULL, &ask);
    cdsh_toolresult *res = fx_call(f, NULL, "echo", NULL);
    assert_error(res, NULL, "tool \"echo\" requires approval (not yet supported)");
    cdsh_toolresult_free(res);
}

static void ask_without_agent_is_denied_even_with_a_service(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    pre_rule ask = {CDSH_TOOLS_ASK, "r", NULL};
    add_pre(f, NULL, &ask);
    approver a = {.outcome = CDSH_APPROVAL_ALLOWED_ONCE};
    add_approval(f, &a);
    cdsh_toolresult *res = fx_call(f, NULL, "echo", NULL);
    assert_error(res, NULL,
                 "tool \"echo\" requires approval, but the call has no agent to route it through");
    assert_string_equal(trace_of(f), "pre result");
    cdsh_toolresult_free(res);
}

static void approval_outcome_case(fx *f, cdsh_approval_outcome outcome, const char *want)
{
    cdsh_scope *agent = cdsh_scope_new("agent", NULL);
    fx_add_echo(f, NULL, "echo");
    pre_rule ask = {CDSH_TOOLS_ASK, NULL, NULL};
    add_pre(f, NULL, &ask);
    approver a = {.outcome = outcome};
    add_approval(f, &a);
    cdsh_toolresult *res = fx_call(f, agent, "echo", "{\"text\":\"ran\"}");
    if (want) {
        assert_error(res, NULL, want);
        assert_null(strstr(trace_of(f), "body"));
    } else {
        assert_string_equal(vstr(res), "ran");
    }
    assert_string_equal(a.seen_reason, "(null)");
    cdsh_toolresult_free(res);
    cdsh_scope_unref(agent);
}

static void approval_allowed_once_runs_the_body(void **state)
{
    approval_outcome_case(*state, CDSH_APPROVAL_ALLOWED_ONCE, NULL);
}

static void approval_rejected_has_its_own_reason(void **state)
{
    approval_outcome_case(*state, CDSH_APPROVAL_REJECTED, "the user rejected tool \"echo\"");
}

static void approval_cancelled_has_its_own_reason(void **state)
{
    approval_outcome_case(*state, CDSH_APPROVAL_CANCELLED,
                          "approval for tool \"echo\" was cancelled");
}

static void approval_unavailable_has_its_own_reason(void **state)
{
    approval_outcome_case(*state, CDSH_APPROVAL_UNAVAILABLE,
                          "tool \"echo\" requires approval, but no approval channel is available");
}

static void approval_cancelled_with_caller_aborted_is_aborted_before_dispatch(void **state)
{
    fx *f = *state;
    cdsh_scope *agent = cdsh_scope_new("agent", NULL);
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    fx_add_echo(f, NULL, "echo");
    pre_rule ask = {CDSH_TOOLS_ASK, "r", NULL};
    add_pre(f, NULL, &ask);
    add_post(f, NULL, post_accept, NULL);
    approver a = {.outcome = CDSH_APPROVAL_CANCELLED, .fire_on_request = tok};
    add_approval(f, &a);
    cdsh_toolresult *res = fx_call_as(f, agent, tok, "echo", NULL);
    assert_error(res, "ABORTED_BEFORE_DISPATCH", "tool call aborted before dispatch");
    assert_string_equal(res->error_name, "AbortError");
    assert_string_equal(trace_of(f), "pre approval post result");
    cdsh_toolresult_free(res);
    cdsh_cancel_free(tok);
    cdsh_scope_unref(agent);
}

static void approval_disposer_only_removes_its_own_service(void **state)
{
    fx *f = *state;
    cdsh_scope *agent = cdsh_scope_new("agent", NULL);
    fx_add_echo(f, NULL, "echo");
    pre_rule ask = {CDSH_TOOLS_ASK, "r", NULL};
    add_pre(f, NULL, &ask);
    approver first = {.outcome = CDSH_APPROVAL_REJECTED};
    approver second = {.outcome = CDSH_APPROVAL_ALLOWED_ONCE};
    cdsh_approval_service s1 = {approve, &first}, s2 = {approve, &second};
    cdsh_disposer_t d1, d2;
    assert_int_equal(cdsh_tools_set_approval(f->tools, &s1, &d1, NULL), 0);
    assert_int_equal(cdsh_tools_set_approval(f->tools, &s2, &d2, NULL), 0);
    cdsh_disposer_run(&d1); /* replaced already: must not remove the second */
    cdsh_toolresult *res = fx_call(f, agent, "echo", "{\"text\":\"ok\"}");
    assert_string_equal(vstr(res), "ok");
    cdsh_toolresult_free(res);
    cdsh_disposer_run(&d2);
    res = fx_call(f, agent, "echo", NULL);
    assert_error(res, NULL, "r");
    cdsh_toolresult_free(res);
    cdsh_scope_unref(agent);
}

static void guard_denial_is_verbatim_and_skips_body(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    add_guard(f, NULL, "sandbox forbids network access");
    cdsh_toolresult *res = fx_call(f, NULL, "echo", NULL);
    assert_error(res, NULL, "sandbox forbids network access");
    assert_string_equal(only_text(res), "Error: sandbox forbids network access");
    assert_null(strstr(trace_of(f), "body"));
    cdsh_toolresult_free(res);
}

static void guards_run_global_first_then_chain_farthest_first(void **state)
{
    fx *f = *state;
    cdsh_scope *preset = cdsh_scope_new("p", NULL);
    cdsh_scope *agent = cdsh_scope_new("a", preset);
    fx_add_echo(f, NULL, "echo");
    add_guard(f, agent, NULL);
    add_guard(f, preset, NULL);
    add_guard(f, NULL, NULL);
    add_guard(f, agent, "agent says no");
    add_guard(f, preset, "preset says no");
    cdsh_toolresult *res = fx_call(f, agent, "echo", NULL);
    /* global guard, both preset guards (the second denies), agent guards never run */
    assert_error(res, NULL, "preset says no");
    assert_string_equal(trace_of(f), "guard guard preset says no result");
    cdsh_toolresult_free(res);
    cdsh_scope_unref(agent);
    cdsh_scope_unref(preset);
}

static void scoped_guard_spares_other_agents_and_global_calls(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL), *b = cdsh_scope_new("b", NULL);
    fx_add_echo(f, NULL, "echo");
    add_guard(f, a, "not for a");
    cdsh_toolresult *ra = fx_call(f, a, "echo", NULL);
    cdsh_toolresult *rb = fx_call(f, b, "echo", NULL);
    cdsh_toolresult *rg = fx_call(f, NULL, "echo", NULL);
    assert_error(ra, NULL, "not for a");
    assert_false(rb->is_error);
    assert_false(rg->is_error);
    cdsh_toolresult_free(ra);
    cdsh_toolresult_free(rb);
    cdsh_toolresult_free(rg);
    cdsh_scope_unref(a);
    cdsh_scope_unref(b);
}

static void guards_do_not_run_after_a_pre_execute_denial(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    pre_rule deny = {CDSH_TOOLS_DENY, "pre", "pre"};
    add_pre(f, NULL, &deny);
    add_guard(f, NULL, "guard");
    cdsh_toolresult *res = fx_call(f, NULL, "echo", NULL);
    assert_error(res, NULL, "pre");
    assert_string_equal(trace_of(f), "pre result");
    cdsh_toolresult_free(res);
}

/* ---- around-dispatch wrappers ------------------------------------------------------- */

static cdsh_toolresult *around_author_value(void *ud, const cdsh_tool_exec *exec,
                                            cdsh_dispatch_next *next)
{
    (void)exec;
    (void)next;
    trace("author");
    return cdsh_toolresult_new_value_steal(json_deep_copy(ud));
}

static void wrapper_authored_success_is_validated_and_rendered(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    json_t *good = json_string("cached");
    add_around(f, NULL, around_author_value, good);
    cdsh_toolresult *res = fx_call(f, NULL, "echo", NULL);
    assert_string_equal(vstr(res), "cached");
    assert_string_equal(only_text(res), "cached");
    assert_string_equal(trace_of(f), "author result");
    cdsh_toolresult_free(res);
    json_decref(good);
}

static void wrapper_authored_invalid_value_is_invalid_tool_output(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    json_t *bad = json_integer(42);
    add_around(f, NULL, around_author_value, bad);
    cdsh_toolresult *res = fx_call(f, NULL, "echo", NULL);
    assert_error(res, "INVALID_TOOL_OUTPUT",
                 "tool \"echo\" returned invalid output: \"value\" must be a string");
    cdsh_toolresult_free(res);
    json_decref(bad);
}

static cdsh_toolresult *around_null(void *ud, const cdsh_tool_exec *exec, cdsh_dispatch_next *next)
{
    (void)ud;
    (void)exec;
    (void)next;
    return NULL;
}

static void wrapper_failure_is_final_and_bypasses_post_execute(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    add_around(f, NULL, around_null, NULL);
    add_post(f, NULL, post_accept, NULL);
    cdsh_toolresult *res = fx_call(f, NULL, "echo", NULL);
    assert_error(res, NULL, "around-dispatch wrapper failed");
    assert_null(strstr(trace_of(f), "post"));
    cdsh_toolresult_free(res);
}

static cdsh_toolresult *around_twice(void *ud, const cdsh_tool_exec *exec, cdsh_dispatch_next *next)
{
    (void)ud;
    (void)exec;
    cdsh_toolresult *first = cdsh_dispatch_next_run(next, NULL);
    cdsh_toolresult *second = cdsh_dispatch_next_run(next, NULL);
    trace(second->is_error ? second->error_message : "second ran");
    cdsh_toolresult_free(second);
    return first;
}

static void wrapper_cannot_run_the_body_twice(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    add_around(f, NULL, around_twice, NULL);
    cdsh_toolresult *res = fx_call(f, NULL, "echo", "{\"text\":\"once\"}");
    assert_string_equal(vstr(res), "once");
    assert_string_equal(trace_of(f), "body around-dispatch wrapper called next() twice result");
    cdsh_toolresult_free(res);
}

static cdsh_toolresult *around_swap_token(void *ud, const cdsh_tool_exec *exec,
                                          cdsh_dispatch_next *next)
{
    (void)exec;
    cdsh_cancel *mine = cdsh_cancel_new(NULL);
    if (ud)
        cdsh_cancel_fire(mine, "wrapper gave up");
    cdsh_toolresult *res = cdsh_dispatch_next_run(next, mine);
    cdsh_cancel_free(mine);
    return res;
}

static void wrapper_token_reaches_the_body_fused_with_the_callers(void **state)
{
    fx *f = *state;
    cdsh_tool_def def = fx_def("waiter", body_wait_cancel, NULL);
    fx_add(f, NULL, &def);
    add_around(f, NULL, around_swap_token, (void *)1);
    /* The wrapper's token is already fired: the fused token the body would
     * see is fired too, so the body never starts. */
    cdsh_toolresult *res = fx_call(f, NULL, "waiter", NULL);
    assert_error(res, "ABORTED_BEFORE_DISPATCH", "tool call aborted before dispatch");
    cdsh_toolresult_free(res);
}

typedef struct delayed_fire {
    cdsh_cancel *tok;
} delayed_fire;

/* Fires the caller's token once body_wait_cancel is running, so the cancel
 * lands mid-body (never before dispatch) however threads are scheduled. */
static void *fire_when_body_waits(void *arg)
{
    delayed_fire *d = arg;
    while (!atomic_load(&fx_body_waiting))
        usleep(1000);
    cdsh_cancel_fire(d->tok, "user pressed stop");
    return NULL;
}

static void caller_cancellation_reaches_a_body_behind_a_swapped_token(void **state)
{
    fx *f = *state;
    cdsh_tool_def def = fx_def("waiter", body_wait_cancel, NULL);
    fx_add(f, NULL, &def);
    add_around(f, NULL, around_swap_token, NULL);
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    delayed_fire d = {tok};
    atomic_store(&fx_body_waiting, 0);
    pthread_t th;
    pthread_create(&th, NULL, fire_when_body_waits, &d);
    cdsh_toolresult *res = fx_call_as(f, NULL, tok, "waiter", NULL);
    pthread_join(th, NULL);
    /* The body woke with the caller's reason and its success became ABORTED. */
    assert_error(res, "ABORTED", "tool call aborted");
    cdsh_toolresult_free(res);
    cdsh_cancel_free(tok);
}

/* ---- post-execute -------------------------------------------------------------------- */

typedef struct post_rule {
    bool block;
    const char *feedback; /* block: text, NULL = no feedback */
    const char *content;  /* JSON text */
    const char *value;    /* JSON text */
} post_rule;

static void post_apply(void *ud, const cdsh_tool_exec *exec, const cdsh_toolresult *res,
                       cdsh_tools_post *d)
{
    (void)exec;
    (void)res;
    post_rule *r = ud;
    trace("post");
    d->block = r->block;
    if (r->feedback)
        d->feedback = cdsh_toolresult_text_content(r->feedback);
    if (r->content)
        d->content = js(r->content);
    if (r->value)
        d->value = js(r->value);
}

static void post_execute_replaces_content(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    post_rule r = {.content = "[{\"type\":\"text\",\"text\":\"redacted\"}]"};
    add_post(f, NULL, post_apply, &r);
    cdsh_toolresult *res = fx_call(f, NULL, "echo", "{\"text\":\"secret\"}");
    assert_string_equal(vstr(res), "secret");
    assert_string_equal(only_text(res), "redacted");
    cdsh_toolresult_free(res);
}

static void post_execute_replaces_value_and_rerenders(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    post_rule r = {.value = "\"rewritten\""};
    add_post(f, NULL, post_apply, &r);
    cdsh_toolresult *res = fx_call(f, NULL, "echo", "{\"text\":\"orig\"}");
    assert_string_equal(vstr(res), "rewritten");
    assert_string_equal(only_text(res), "rewritten");
    cdsh_toolresult_free(res);
}

static void post_execute_value_is_revalidated(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    post_rule r = {.value = "7"};
    add_post(f, NULL, post_apply, &r);
    cdsh_toolresult *res = fx_call(f, NULL, "echo", "{\"text\":\"orig\"}");
    assert_error(res, "INVALID_TOOL_OUTPUT",
                 "tool \"echo\" returned invalid output: \"value\" must be a string");
    cdsh_toolresult_free(res);
}

static void post_execute_cannot_give_a_failure_a_value(void **state)
{
    fx *f = *state;
    cdsh_tool_def def = fx_def("boom", body_fail, "|x|broke");
    fx_add(f, NULL, &def);
    post_rule r = {.value = "\"fine\""};
    add_post(f, NULL, post_apply, &r);
    cdsh_toolresult *res = fx_call(f, NULL, "boom", NULL);
    assert_error(res, NULL, "tools/post-execute cannot replace the value of a failed result");
    cdsh_toolresult_free(res);
}

static void post_execute_cannot_replace_both(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    post_rule r = {.value = "\"v\"", .content = "[]"};
    add_post(f, NULL, post_apply, &r);
    cdsh_toolresult *res = fx_call(f, NULL, "echo", NULL);
    assert_error(res, NULL,
                 "tools/post-execute accept decision cannot replace both value and content");
    cdsh_toolresult_free(res);
}

static void post_execute_block_turns_feedback_into_the_error(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    post_rule r = {.block = true, .feedback = "output contained a secret; retry with redaction"};
    add_post(f, NULL, post_apply, &r);
    cdsh_toolresult *res = fx_call(f, NULL, "echo", "{\"text\":\"x\"}");
    assert_error(res, NULL, "output contained a secret; retry with redaction");
    assert_string_equal(only_text(res), "output contained a secret; retry with redaction");
    cdsh_toolresult_free(res);
}

static void post_execute_block_without_feedback_has_default_message(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    post_rule r = {.block = true};
    add_post(f, NULL, post_apply, &r);
    cdsh_toolresult *res = fx_call(f, NULL, "echo", NULL);
    assert_error(res, NULL, "tool result blocked by post-execute policy");
    assert_string_equal(only_text(res), "Error: tool result blocked by post-execute policy");
    cdsh_toolresult_free(res);
}

static void post_hook_sees_what_the_previous_one_rewrote(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    post_rule first = {.value = "\"one\""};
    post_rule block = {.block = true, .feedback = "stop"};
    post_rule never = {.value = "\"never\""};
    add_post(f, NULL, post_apply, &first);
    add_post(f, NULL, post_accept, NULL);
    add_post(f, NULL, post_apply, &block);
    add_post(f, NULL, post_apply, &never);
    cdsh_toolresult *res = fx_call(f, NULL, "echo", NULL);
    assert_error(res, NULL, "stop");
    assert_string_equal(trace_of(f), "body post post post result");
    cdsh_toolresult_free(res);
}

/* ---- finalize, events, contexts ------------------------------------------------------- */

static json_t *finalize_tag(void *ud, const cdsh_tool_exec *exec, const cdsh_toolresult *res)
{
    (void)ud;
    (void)exec;
    char buf[256];
    snprintf(buf, sizeof buf, "[%s] %s", res->is_error ? "failed" : "ok",
             json_string_value(json_object_get(json_array_get(res->content, 0), "text")));
    return cdsh_toolresult_text_content(buf);
}

static void finalize_content_shapes_successes_and_failures(void **state)
{
    fx *f = *state;
    cdsh_tool_def def = fx_def("fin", body_echo, NULL);
    def.finalize_content = finalize_tag;
    fx_add(f, NULL, &def);
    cdsh_toolresult *ok = fx_call(f, NULL, "fin", "{\"text\":\"v\"}");
    assert_string_equal(only_text(ok), "[ok] v");
    assert_string_equal(vstr(ok), "v");
    pre_rule deny = {CDSH_TOOLS_DENY, "nope", NULL};
    add_pre(f, NULL, &deny);
    cdsh_toolresult *bad = fx_call(f, NULL, "fin", NULL);
    assert_string_equal(only_text(bad), "[failed] Error: nope");
    assert_string_equal(bad->error_message, "nope");
    cdsh_toolresult_free(ok);
    cdsh_toolresult_free(bad);
}

static void result_event_carries_the_frozen_result_and_identity(void **state)
{
    fx *f = *state;
    cdsh_scope *agent = cdsh_scope_new("agent-7", NULL);
    fx_add_echo(f, NULL, "echo");
    cdsh_toolresult *res = fx_call(f, agent, "echo", "{\"text\":\"e\"}");
    assert_int_equal(fx_count_events(f, "tools/result"), 1);
    json_t *p = fx_event(f, "tools/result", 0);
    assert_string_equal(json_string_value(json_object_get(p, "callId")), "call-1");
    assert_string_equal(json_string_value(json_object_get(p, "rootCallId")), "call-1");
    assert_string_equal(json_string_value(json_object_get(p, "name")), "echo");
    assert_string_equal(json_string_value(json_object_get(p, "agent")), "agent-7");
    assert_true(json_is_null(json_object_get(p, "parent")));
    assert_int_equal(json_integer_value(json_object_get(p, "depth")), 0);
    assert_false(json_is_true(json_object_get(p, "isError")));
    assert_string_equal(json_string_value(json_object_get(p, "value")), "e");
    cdsh_toolresult_free(res);
    cdsh_scope_unref(agent);
}

static void result_event_is_filtered_by_agent(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL), *b = cdsh_scope_new("b", NULL);
    fx_add_echo(f, NULL, "echo");
    atomic_store(&g_heard, 0);
    cdsh_disposer_t d;
    assert_int_equal(cdsh_events_on(f->bus, "tools/result", a, count_event, NULL, &d, NULL), 0);
    cdsh_toolresult_free(fx_call(f, b, "echo", NULL));
    cdsh_toolresult_free(fx_call(f, NULL, "echo", NULL));
    assert_int_equal(atomic_load(&g_heard), 0);
    cdsh_toolresult_free(fx_call(f, a, "echo", NULL));
    assert_int_equal(atomic_load(&g_heard), 1);
    cdsh_disposer_run(&d);
    cdsh_scope_unref(a);
    cdsh_scope_unref(b);
}

static int body_defers(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    assert_int_equal(cdsh_dispatch_defer_context(exec, "remember the board"), 0);
    assert_int_equal(cdsh_dispatch_defer_context(exec, "second note"), 0);
    cdsh_dispatch_conclude_turn(exec);
    *value = json_string("done");
    return 0;
}

static void deferred_contexts_and_conclude_turn_reach_the_result(void **state)
{
    fx *f = *state;
    cdsh_tool_def def = fx_def("defer", body_defers, NULL);
    fx_add(f, NULL, &def);
    cdsh_toolresult *res = fx_call(f, NULL, "defer", NULL);
    assert_true(res->concludes_turn);
    json_t *j = cdsh_toolresult_to_json(res);
    json_t *want = js("{\"isError\":false,\"value\":\"done\",\"content\":[{\"type\":\"text\","
                      "\"text\":\"done\"}],\"additionalContexts\":[\"remember the board\","
                      "\"second note\"],\"concludesTurn\":true}");
    assert_true(json_equal(j, want));
    json_decref(j);
    json_decref(want);
    cdsh_toolresult_free(res);
}

static json_t *meta_of(void *ud, const json_t *args, const json_t *value)
{
    (void)ud;
    (void)args;
    return json_pack("{s:O}", "shown", value);
}

static int body_nested_meta(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    cdsh_toolresult *inner = cdsh_dispatch_nested(exec, NULL, "meta", NULL);
    *value = json_boolean(inner->meta == NULL);
    cdsh_toolresult_free(inner);
    return 0;
}

static void presentation_meta_only_for_top_level_calls(void **state)
{
    fx *f = *state;
    json_t *v = json_string("m");
    cdsh_tool_def def = fx_def("meta", body_const, v);
    def.presentation_meta = meta_of;
    fx_add(f, NULL, &def);
    cdsh_tool_def outer = fx_def("outer", body_nested_meta, NULL);
    fx_add(f, NULL, &outer);
    cdsh_toolresult *res = fx_call(f, NULL, "meta", NULL);
    assert_string_equal(json_string_value(json_object_get(res->meta, "shown")), "m");
    cdsh_toolresult_free(res);
    res = fx_call(f, NULL, "outer", NULL);
    assert_true(json_is_true(res->value));
    cdsh_toolresult_free(res);
    json_decref(v);
}

/* ---- cancellation ------------------------------------------------------------------------ */

static void caller_aborted_before_dispatch(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    add_pre(f, NULL, NULL);
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    cdsh_cancel_fire(tok, "stop");
    cdsh_toolresult *res = fx_call_as(f, NULL, tok, "echo", NULL);
    assert_error(res, "ABORTED_BEFORE_DISPATCH", "tool call aborted before dispatch");
    assert_string_equal(only_text(res), "Error: tool call aborted before dispatch");
    assert_string_equal(trace_of(f), "result");
    cdsh_toolresult_free(res);
    cdsh_cancel_free(tok);
}

static cdsh_tools_verdict pre_cancels(void *ud, const cdsh_tool_exec *exec, char **reason)
{
    (void)exec;
    (void)reason;
    cdsh_cancel_fire(ud, "late stop");
    return CDSH_TOOLS_ALLOW;
}

static void cancel_during_policy_stops_before_the_body(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_on_pre_execute(f->tools, NULL, pre_cancels, tok, NULL, &d, NULL),
                     0);
    fx_keep(f, d);
    add_post(f, NULL, post_accept, NULL);
    cdsh_toolresult *res = fx_call_as(f, NULL, tok, "echo", NULL);
    assert_error(res, "ABORTED_BEFORE_DISPATCH", "tool call aborted before dispatch");
    assert_string_equal(trace_of(f), "post result");
    cdsh_toolresult_free(res);
    cdsh_cancel_free(tok);
}

static void cancel_mid_body_yields_aborted(void **state)
{
    fx *f = *state;
    cdsh_tool_def def = fx_def("waiter", body_wait_cancel, NULL);
    fx_add(f, NULL, &def);
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    delayed_fire d = {tok};
    atomic_store(&fx_body_waiting, 0);
    pthread_t th;
    pthread_create(&th, NULL, fire_when_body_waits, &d);
    int64_t t0 = cdsh_clock_mono_ms();
    cdsh_toolresult *res = fx_call_as(f, NULL, tok, "waiter", NULL);
    int64_t took = cdsh_clock_mono_ms() - t0;
    pthread_join(th, NULL);
    assert_error(res, "ABORTED", "tool call aborted");
    assert_string_equal(res->error_name, "AbortError");
    assert_true(took < 30000); /* the body would wait 60 s for its token */
    cdsh_toolresult_free(res);
    cdsh_cancel_free(tok);
}

static int body_fails_on_cancel(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    (void)value;
    cdsh_cancel_fire(exec->cancel, "self");
    return cdsh_dispatch_fail(exec, "IoError", "EIO", "read interrupted");
}

static void cancelled_failure_keeps_the_tools_own_error(void **state)
{
    fx *f = *state;
    cdsh_tool_def def = fx_def("flaky", body_fails_on_cancel, NULL);
    fx_add(f, NULL, &def);
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    cdsh_toolresult *res = fx_call_as(f, NULL, tok, "flaky", NULL);
    assert_error(res, "EIO", "read interrupted");
    cdsh_toolresult_free(res);
    cdsh_cancel_free(tok);
}

/* ---- timeouts ------------------------------------------------------------------------------ */

static void timeout_fires_the_token_and_yields_tool_timeout(void **state)
{
    fx *f = *state;
    cdsh_tool_def def = fx_def("slow", body_wait_cancel, NULL);
    def.timeout_ms = 40;
    fx_add(f, NULL, &def);
    cdsh_toolresult *res = fx_call(f, NULL, "slow", NULL);
    assert_error(res, "TOOL_TIMEOUT", "tool call timed out after 40ms");
    assert_string_equal(res->error_name, "ToolTimeoutError");
    assert_string_equal(only_text(res), "Error: tool call timed out after 40ms");
    cdsh_toolresult_free(res);
}

static int body_quick(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    assert_non_null(exec->cancel); /* a timed body always has a token */
    *value = json_string(cdsh_cancel_is_fired(exec->cancel) ? "fired" : "fresh");
    return 0;
}

static void fast_body_under_a_timeout_succeeds(void **state)
{
    fx *f = *state;
    cdsh_tool_def def = fx_def("quick", body_quick, NULL);
    def.timeout_ms = 60000; /* only spent if the body hangs */
    fx_add(f, NULL, &def);
    cdsh_toolresult *res = fx_call(f, NULL, "quick", NULL);
    assert_string_equal(vstr(res), "fresh");
    cdsh_toolresult_free(res);
}

typedef struct stubborn {
    atomic_int finished;
    atomic_int freed;
    atomic_int release; /* sleep_ms < 0: the body runs until this is set */
    int sleep_ms;
} stubborn;

static int body_ignores_cancel(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    stubborn *s = ud;
    if (s->sleep_ms < 0) {
        while (!atomic_load(&s->release))
            usleep(1000);
    } else {
        usleep((useconds_t)s->sleep_ms * 1000);
    }
    /* Everything reachable through exec is still valid after the deadline. */
    *value = json_pack("{s:s, s:s}", "id", exec->call_id, "reason",
                       cdsh_cancel_reason(exec->cancel) ? cdsh_cancel_reason(exec->cancel) : "");
    cdsh_dispatch_defer_context(exec, "late");
    atomic_store(&s->finished, 1);
    return 0;
}

static void stubborn_free(void *ud)
{
    stubborn *s = ud;
    atomic_store(&s->freed, atomic_load(&s->finished) ? 1 : -1);
}

static void body_ignoring_its_token_is_detached_at_the_deadline(void **state)
{
    fx *f = *state;
    static stubborn s;
    atomic_store(&s.finished, 0);
    atomic_store(&s.freed, 0);
    atomic_store(&s.release, 0);
    s.sleep_ms = -1; /* the body ignores its token until released below */
    cdsh_tools_set_timeout_grace(f->tools, 10);
    cdsh_tool_def def = fx_def("stubborn", body_ignores_cancel, &s);
    def.timeout_ms = 30;
    def.free_ud = stubborn_free;
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_register(f->tools, NULL, &def, &d, NULL), 0);
    /* The body cannot finish until released, so the call returning at all
     * (with the body unfinished) shows it was detached at the deadline. */
    cdsh_toolresult *res = fx_call(f, NULL, "stubborn", NULL);
    assert_error(res, "TOOL_TIMEOUT", "tool call timed out after 30ms");
    assert_int_equal(atomic_load(&s.finished), 0);
    cdsh_toolresult_free(res);
    /* Disposing the tool now must not free its ud under the running body. */
    cdsh_disposer_run(&d);
    assert_int_equal(atomic_load(&s.freed), 0);
    atomic_store(&s.release, 1);
    while (!atomic_load(&s.freed)) /* no time budget: CTest's timeout catches a hang */
        usleep(5000);
    assert_int_equal(atomic_load(&s.freed), 1);
}

static void registry_free_waits_for_a_detached_body(void **state)
{
    fx *f = *state;
    static stubborn s;
    atomic_store(&s.finished, 0);
    atomic_store(&s.freed, 0);
    atomic_store(&s.release, 0);
    s.sleep_ms = 100;
    cdsh_tools_set_timeout_grace(f->tools, 0);
    cdsh_tool_def def = fx_def("stubborn", body_ignores_cancel, &s);
    def.timeout_ms = 10;
    def.free_ud = stubborn_free;
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_register(f->tools, NULL, &def, &d, NULL), 0);
    cdsh_toolresult *res = fx_call(f, NULL, "stubborn", NULL);
    assert_string_equal(res->error_code, "TOOL_TIMEOUT");
    cdsh_toolresult_free(res);
    cdsh_disposer_run(&d);
    cdsh_tools_free(f->tools);
    f->tools = NULL;
    assert_int_equal(atomic_load(&s.finished), 1);
    assert_int_equal(atomic_load(&s.freed), 1);
}

static void caller_cancellation_reaches_a_timed_body(void **state)
{
    fx *f = *state;
    cdsh_tool_def def = fx_def("timed_waiter", body_wait_cancel, NULL);
    def.timeout_ms = 60000;
    fx_add(f, NULL, &def);
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    delayed_fire d = {tok};
    atomic_store(&fx_body_waiting, 0);
    pthread_t th;
    pthread_create(&th, NULL, fire_when_body_waits, &d);
    int64_t t0 = cdsh_clock_mono_ms();
    cdsh_toolresult *res = fx_call_as(f, NULL, tok, "timed_waiter", NULL);
    pthread_join(th, NULL);
    assert_true(cdsh_clock_mono_ms() - t0 < 30000); /* not woken by the 60 s timeout */
    assert_error(res, "ABORTED", "tool call aborted");
    cdsh_toolresult_free(res);
    cdsh_cancel_free(tok);
}

static int body_reports_reason(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)value;
    char *out = ud;
    cdsh_cancel_wait(exec->cancel, 60000);
    snprintf(out, 64, "%s", cdsh_cancel_reason(exec->cancel));
    return cdsh_dispatch_fail(exec, NULL, NULL, "gave up");
}

static void timed_out_body_sees_reason_timeout(void **state)
{
    fx *f = *state;
    static char reason[64];
    reason[0] = '\0';
    cdsh_tools_set_timeout_grace(f->tools, 30000); /* only spent if the body hangs */
    cdsh_tool_def def = fx_def("observer", body_reports_reason, reason);
    def.timeout_ms = 20;
    fx_add(f, NULL, &def);
    cdsh_toolresult *res = fx_call(f, NULL, "observer", NULL);
    assert_string_equal(res->error_code, "TOOL_TIMEOUT");
    /* With a long grace the body finished before the caller moved on. */
    assert_string_equal(reason, "timeout");
    cdsh_toolresult_free(res);
}

/* ---- nested dispatch --------------------------------------------------------------------------
 */

typedef struct nest_plan {
    const char *step;    /* tool to call */
    const char *call_id; /* NULL = derived */
    char seen[512];      /* what the body observed */
    bool shared;         /* used by several threads at once: record nothing */
} nest_plan;

static int body_nest(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    nest_plan *p = ud;
    trace("outer");
    cdsh_toolresult *inner = cdsh_dispatch_nested(exec, p->call_id, p->step, NULL);
    if (!p->shared)
        snprintf(p->seen, sizeof p->seen, "%s|%s", inner->is_error ? "error" : "ok",
                 inner->is_error ? inner->error_message : "");
    *value = json_pack("{s:b, s:O?}", "ok", !inner->is_error, "step", inner->value);
    cdsh_toolresult_free(inner);
    return 0;
}

static int body_identity(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    trace("inner");
    *value = json_pack("{s:s, s:s, s:s?, s:i, s:s?, s:b}", "callId", exec->call_id, "rootCallId",
                       exec->root_call_id, "parent", exec->parent ? exec->parent->call_id : NULL,
                       "depth", (int)exec->depth, "agent",
                       exec->agent ? cdsh_scope_id(exec->agent) : NULL, "sameToken",
                       exec->parent && exec->parent->cancel == exec->cancel);
    return 0;
}

static void nested_call_shares_root_token_and_agent(void **state)
{
    fx *f = *state;
    cdsh_scope *agent = cdsh_scope_new("agent", NULL);
    nest_plan p = {.step = "identity"};
    cdsh_tool_def outer = fx_def("outer", body_nest, &p);
    cdsh_tool_def inner = fx_def("identity", body_identity, NULL);
    fx_add(f, NULL, &outer);
    fx_add(f, NULL, &inner);
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    cdsh_toolresult *res = fx_call_as(f, agent, tok, "outer", NULL);
    json_t *want = js("{\"ok\":true,\"step\":{\"callId\":\"call-1:1\",\"rootCallId\":\"call-1\","
                      "\"parent\":\"call-1\",\"depth\":1,\"agent\":\"agent\",\"sameToken\":true}}");
    assert_true(json_equal(res->value, want));
    /* The nested call published its own result, with its parent. */
    assert_int_equal(fx_count_events(f, "tools/result"), 2);
    json_t *nested = fx_event(f, "tools/result", 0);
    assert_string_equal(json_string_value(json_object_get(nested, "parent")), "call-1");
    assert_string_equal(json_string_value(json_object_get(nested, "rootCallId")), "call-1");
    assert_string_equal(json_string_value(json_object_get(nested, "callId")), "call-1:1");
    assert_string_equal(trace_of(f), "outer inner result result");
    json_decref(want);
    cdsh_toolresult_free(res);
    cdsh_cancel_free(tok);
    cdsh_scope_unref(agent);
}

static void nested_call_id_can_be_chosen(void **state)
{
    fx *f = *state;
    nest_plan p = {.step = "identity", .call_id = "call-1:pdf.analyze:1"};
    cdsh_tool_def outer = fx_def("outer", body_nest, &p);
    cdsh_tool_def inner = fx_def("identity", body_identity, NULL);
    fx_add(f, NULL, &outer);
    fx_add(f, NULL, &inner);
    cdsh_toolresult *res = fx_call(f, NULL, "outer", NULL);
    json_t *step = json_object_get(res->value, "step");
    assert_string_equal(json_string_value(json_object_get(step, "callId")), "call-1:pdf.analyze:1");
    cdsh_toolresult_free(res);
}

static void nested_dispatch_meets_the_callers_restrictions(void **state)
{
    fx *f = *state;
    cdsh_scope *agent = cdsh_scope_new("agent", NULL);
    nest_plan p = {.step = "pdf_extract"};
    cdsh_tool_def outer = fx_def("pdf_analyze", body_nest, &p);
    fx_add(f, NULL, &outer);
    fx_add_echo(f, NULL, "pdf_extract");
    const char *deny[] = {"pdf_extract", NULL};
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_restrict(f->tools, agent, NULL, deny, &d, NULL), 0);
    fx_keep(f, d);
    cdsh_toolresult *res = fx_call(f, agent, "pdf_analyze", NULL);
    assert_false(json_is_true(json_object_get(res->value, "ok")));
    assert_string_equal(p.seen, "error|unknown tool \"pdf_extract\"");
    cdsh_toolresult_free(res);
    /* Without the agent the step is visible. */
    res = fx_call(f, NULL, "pdf_analyze", NULL);
    assert_true(json_is_true(json_object_get(res->value, "ok")));
    cdsh_toolresult_free(res);
    cdsh_scope_unref(agent);
}

static void nested_dispatch_meets_guards_verbatim(void **state)
{
    fx *f = *state;
    cdsh_scope *agent = cdsh_scope_new("agent", NULL);
    nest_plan p = {.step = "identity"};
    cdsh_tool_def outer = fx_def("outer", body_nest, &p);
    cdsh_tool_def inner = fx_def("identity", body_identity, NULL);
    fx_add(f, NULL, &outer);
    fx_add(f, NULL, &inner);
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_guard(f->tools, agent, guard_only_identity, NULL, NULL, &d, NULL),
                     0);
    fx_keep(f, d);
    cdsh_toolresult *res = fx_call(f, agent, "outer", NULL);
    assert_false(res->is_error);
    assert_string_equal(p.seen, "error|identity is off limits");
    assert_null(strstr(trace_of(f), "inner"));
    cdsh_toolresult_free(res);
    cdsh_scope_unref(agent);
}

static int body_recurse(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    cdsh_toolresult *inner = cdsh_dispatch_nested(exec, NULL, "recurse", NULL);
    if (inner->is_error) {
        *value = json_pack("{s:s, s:i}", "error", inner->error_message, "depth", (int)exec->depth);
    } else {
        *value = json_incref(inner->value);
    }
    cdsh_toolresult_free(inner);
    return 0;
}

static void nesting_deeper_than_the_limit_fails_clearly(void **state)
{
    fx *f = *state;
    cdsh_tools_set_max_depth(f->tools, 3);
    cdsh_tool_def def = fx_def("recurse", body_recurse, NULL);
    fx_add(f, NULL, &def);
    cdsh_toolresult *res = fx_call(f, NULL, "recurse", NULL);
    json_t *want = js("{\"error\":\"nested tool call depth limit (3) exceeded\",\"depth\":3}");
    assert_true(json_equal(res->value, want));
    json_decref(want);
    cdsh_toolresult_free(res);
    /* The refused call was published with its code. */
    json_t *p = fx_event(f, "tools/result", 0);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(p, "error"), "info"), "code")),
                        "TOOL_DEPTH_EXCEEDED");
    assert_int_equal(json_integer_value(json_object_get(p, "depth")), 4);
}

static int body_cancel_then_nest(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    cdsh_cancel_fire(exec->cancel, "caller stopped");
    cdsh_toolresult *inner = cdsh_dispatch_nested(exec, NULL, "identity", NULL);
    *value = json_string(inner->error_code ? inner->error_code : "ran");
    cdsh_toolresult_free(inner);
    return 0;
}

static void cancelled_caller_cancels_its_nested_calls(void **state)
{
    fx *f = *state;
    cdsh_tool_def outer = fx_def("outer", body_cancel_then_nest, NULL);
    cdsh_tool_def inner = fx_def("identity", body_identity, NULL);
    fx_add(f, NULL, &outer);
    fx_add(f, NULL, &inner);
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    cdsh_toolresult *res = fx_call_as(f, NULL, tok, "outer", NULL);
    /* The outer call itself ends ABORTED (the body had started). */
    assert_error(res, "ABORTED", "tool call aborted");
    json_t *nested = fx_event(f, "tools/result", 0);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(nested, "error"), "info"), "code")),
                        "ABORTED_BEFORE_DISPATCH");
    cdsh_toolresult_free(res);
    cdsh_cancel_free(tok);
}

/* ---- batch scheduling ---------------------------------------------------------------------------
 */

static atomic_int g_running, g_peak;
static char linger_tag;
#define LINGER ((void *)&linger_tag)

static int body_overlap(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    int now = atomic_fetch_add(&g_running, 1) + 1;
    int peak = atomic_load(&g_peak);
    while (now > peak && !atomic_compare_exchange_weak(&g_peak, &peak, now))
        ;
    if (ud == LINGER) {
        /* A parallel call lingers until a sibling overlaps it, so overlap
         * does not depend on thread start-up luck (a serial batch hangs
         * here, and CTest's timeout reports it). */
        while (atomic_load(&g_peak) < 2)
            usleep(1000);
        usleep(5000);
    } else if (ud) {
        /* Where overlap would be a bug, linger up to 200 ms to give any
         * wrongly overlapping sibling the chance to show up. */
        for (int i = 0; i < 40 && atomic_load(&g_peak) < 2; i++)
            usleep(5000);
        usleep(5000);
    } else {
        usleep(5000);
    }
    atomic_fetch_sub(&g_running, 1);
    *value = json_string(exec->call_id);
    return 0;
}

/* linger: "safe" calls wait for a sibling to overlap them (only for batches
 * that must run in parallel: a lone safe call would wait forever); otherwise
 * they wait a bounded while. */
static void add_overlap_tools(fx *f, bool linger)
{
    cdsh_tool_def safe = fx_def("safe", body_overlap, linger ? LINGER : (void *)1);
    safe.is_concurrency_safe = cdsh_tools_always_safe;
    cdsh_tool_def excl = fx_def("excl", body_overlap, NULL);
    fx_add(f, NULL, &safe);
    fx_add(f, NULL, &excl);
    atomic_store(&g_running, 0);
    atomic_store(&g_peak, 0);
}

static void batch_runs_safe_calls_in_parallel_keeping_model_order(void **state)
{
    fx *f = *state;
    add_overlap_tools(f, true);
    const char *ids[] = {"a", "b", "c", "d", "e"};
    cdsh_dispatch_input in[5];
    cdsh_toolresult *out[5];
    for (int i = 0; i < 5; i++)
        in[i] = (cdsh_dispatch_input){.call_id = ids[i], .name = "safe"};
    assert_int_equal(cdsh_dispatch_batch(f->tools, in, 5, 0, out), 0);
    assert_true(atomic_load(&g_peak) >= 2);
    for (int i = 0; i < 5; i++) {
        assert_string_equal(vstr(out[i]), ids[i]);
        cdsh_toolresult_free(out[i]);
    }
}

static void batch_treats_unsafe_calls_as_barriers(void **state)
{
    fx *f = *state;
    add_overlap_tools(f, false);
    cdsh_dispatch_input in[4] = {{.call_id = "1", .name = "excl"},
                                 {.call_id = "2", .name = "excl"},
                                 {.call_id = "3", .name = "safe"},
                                 {.call_id = "4", .name = "excl"}};
    cdsh_toolresult *out[4];
    assert_int_equal(cdsh_dispatch_batch(f->tools, in, 4, 4, out), 0);
    assert_int_equal(atomic_load(&g_peak), 1);
    for (int i = 0; i < 4; i++) {
        assert_string_equal(vstr(out[i]), in[i].call_id);
        cdsh_toolresult_free(out[i]);
    }
}

static void batch_pool_is_bounded(void **state)
{
    fx *f = *state;
    add_overlap_tools(f, true);
    cdsh_dispatch_input in[6];
    char ids[6][4];
    for (int i = 0; i < 6; i++) {
        snprintf(ids[i], sizeof ids[i], "%d", i);
        in[i] = (cdsh_dispatch_input){.call_id = ids[i], .name = "safe"};
    }
    cdsh_toolresult *out[6];
    assert_int_equal(cdsh_dispatch_batch(f->tools, in, 6, 2, out), 0);
    assert_int_equal(atomic_load(&g_peak), 2);
    for (int i = 0; i < 6; i++)
        cdsh_toolresult_free(out[i]);
}

static void batch_reports_results_for_unknown_and_invalid_calls(void **state)
{
    fx *f = *state;
    add_overlap_tools(f, false);
    cdsh_dispatch_input in[3] = {{.call_id = "1", .name = "ghost"},
                                 {.call_id = "2", .name = "safe"},
                                 {.call_id = NULL, .name = "safe"}};
    cdsh_toolresult *out[3];
    assert_int_equal(cdsh_dispatch_batch(f->tools, in, 3, 0, out), CDSH_EINVAL);
    assert_string_equal(out[0]->error_code, "UNKNOWN_TOOL");
    assert_string_equal(vstr(out[1]), "2");
    assert_null(out[2]);
    cdsh_toolresult_free(out[0]);
    cdsh_toolresult_free(out[1]);
}

/* ---- hook lifetimes and re-resolution ------------------------------------------------- */

typedef struct restrict_in_pre {
    fx *f;
    cdsh_scope *agent;
    cdsh_disposer_t d;
} restrict_in_pre;

static cdsh_tools_verdict pre_restricts(void *ud, const cdsh_tool_exec *exec, char **reason)
{
    (void)reason;
    restrict_in_pre *r = ud;
    const char *deny[] = {exec->name, NULL};
    assert_int_equal(cdsh_tools_restrict(r->f->tools, r->agent, NULL, deny, &r->d, NULL), 0);
    return CDSH_TOOLS_ALLOW;
}

static void visibility_is_checked_again_right_before_the_body(void **state)
{
    fx *f = *state;
    cdsh_scope *agent = cdsh_scope_new("agent", NULL);
    fx_add_echo(f, NULL, "echo");
    restrict_in_pre r = {f, agent, {0}};
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_on_pre_execute(f->tools, NULL, pre_restricts, &r, NULL, &d, NULL),
                     0);
    cdsh_toolresult *res = fx_call(f, agent, "echo", NULL);
    assert_error(res, "UNKNOWN_TOOL", "unknown tool \"echo\"");
    assert_null(strstr(trace_of(f), "body"));
    cdsh_toolresult_free(res);
    cdsh_disposer_run(&d);
    cdsh_disposer_run(&r.d);
    cdsh_scope_unref(agent);
}

static void disposed_hooks_stop_running_and_release_their_state(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    atomic_store(&g_heard, 0);
    static pre_rule deny = {CDSH_TOOLS_DENY, "blocked", NULL};
    cdsh_disposer_t pre, guard, post, around;
    assert_int_equal(
        cdsh_tools_on_pre_execute(f->tools, NULL, pre_hook, &deny, release_count, &pre, NULL), 0);
    assert_int_equal(cdsh_tools_guard(f->tools, NULL, guard_hook, "g", release_count, &guard, NULL),
                     0);
    assert_int_equal(
        cdsh_tools_on_post_execute(f->tools, NULL, post_accept, NULL, release_count, &post, NULL),
        0);
    assert_int_equal(
        cdsh_tools_on_execute(f->tools, NULL, around_hook, NULL, release_count, &around, NULL), 0);
    cdsh_toolresult *res = fx_call(f, NULL, "echo", NULL);
    assert_error(res, NULL, "blocked");
    cdsh_toolresult_free(res);
    cdsh_disposer_run(&pre);
    cdsh_disposer_run(&guard);
    cdsh_disposer_run(&post);
    cdsh_disposer_run(&around);
    assert_int_equal(atomic_load(&g_heard), 4);
    f->trace[0] = '\0';
    res = fx_call(f, NULL, "echo", "{\"text\":\"free\"}");
    assert_string_equal(vstr(res), "free");
    assert_string_equal(trace_of(f), "body result");
    assert_int_equal(cdsh_tools_count(f->tools), 1);
    cdsh_toolresult_free(res);
}

static void scoped_wrapper_wraps_only_its_agents(void **state)
{
    fx *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL), *b = cdsh_scope_new("b", NULL);
    fx_add_echo(f, NULL, "echo");
    add_around(f, a, around_hook, "a-only");
    cdsh_toolresult_free(fx_call(f, b, "echo", NULL));
    assert_string_equal(trace_of(f), "body result");
    f->trace[0] = '\0';
    cdsh_toolresult_free(fx_call(f, a, "echo", NULL));
    assert_string_equal(trace_of(f), "a-only> body <a-only result");
    cdsh_scope_unref(a);
    cdsh_scope_unref(b);
}

static char *guard_on_args(void *ud, const cdsh_tool_exec *exec)
{
    (void)ud;
    const char *text = json_string_value(json_object_get(exec->args, "text"));
    return text && strstr(text, "rm -rf") ? strdup("refusing a destructive command") : NULL;
}

static void guards_see_the_validated_arguments(void **state)
{
    fx *f = *state;
    fx_add_echo(f, NULL, "echo");
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_guard(f->tools, NULL, guard_on_args, NULL, NULL, &d, NULL), 0);
    fx_keep(f, d);
    cdsh_toolresult *bad = fx_call(f, NULL, "echo", "{\"text\":\"rm -rf /\"}");
    cdsh_toolresult *ok = fx_call(f, NULL, "echo", "{\"text\":\"ls\"}");
    assert_error(bad, NULL, "refusing a destructive command");
    assert_string_equal(vstr(ok), "ls");
    cdsh_toolresult_free(bad);
    cdsh_toolresult_free(ok);
}

static void denials_are_published_like_any_result(void **state)
{
    fx *f = *state;
    cdsh_scope *agent = cdsh_scope_new("agent", NULL);
    fx_add_echo(f, NULL, "echo");
    add_guard(f, NULL, "no");
    cdsh_toolresult_free(fx_call(f, agent, "echo", NULL));
    json_t *p = fx_event(f, "tools/result", 0);
    assert_true(json_is_true(json_object_get(p, "isError")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(p, "error"), "message")),
                        "no");
    assert_string_equal(json_string_value(json_object_get(p, "agent")), "agent");
    cdsh_scope_unref(agent);
}

typedef struct hammer {
    fx *f;
    cdsh_scope *agent;
    atomic_int *bad;
} hammer;

static void *hammer_main(void *arg)
{
    hammer *h = arg;
    for (int i = 0; i < 300; i++) {
        json_t *args = json_pack("{s:s}", "text", "x");
        cdsh_dispatch_input in = {.call_id = "h", .name = "outer", .args = args, .agent = h->agent};
        cdsh_toolresult *res = cdsh_dispatch_execute(h->f->tools, &in);
        if (!res || res->is_error || !json_is_true(json_object_get(res->value, "ok")))
            atomic_fetch_add(h->bad, 1);
        cdsh_toolresult_free(res);
        json_decref(args);
    }
    return NULL;
}

static void concurrent_nested_calls_with_hooks_are_consistent(void **state)
{
    fx *f = *state;
    cdsh_scope *agent = cdsh_scope_new("agent", NULL);
    static nest_plan p = {.step = "identity", .shared = true};
    cdsh_tool_def outer = fx_def("outer", body_nest, &p);
    cdsh_tool_def inner = fx_def("identity", body_identity, NULL);
    fx_add(f, NULL, &outer);
    fx_add(f, NULL, &inner);
    add_around(f, NULL, around_hook, NULL);
    add_post(f, agent, post_accept, NULL);
    add_guard(f, agent, NULL);
    g_fx = NULL; /* the trace buffer is not meant for this volume */
    atomic_int bad = 0;
    pthread_t th[4];
    hammer h = {f, agent, &bad};
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, hammer_main, &h);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    g_fx = f;
    assert_int_equal(atomic_load(&bad), 0);
    assert_int_equal(fx_count_events(f, "tools/result"), 4 * 300 * 2);
    cdsh_scope_unref(agent);
}

/* ---- toolresult helpers
 * --------------------------------------------------------------------------- */

static void error_constructors_build_model_text(void **state)
{
    (void)state;
    cdsh_toolresult *r = cdsh_toolresult_new_errorf("X", "Y", "bad %d", 7);
    assert_error(r, "Y", "bad 7");
    assert_string_equal(only_text(r), "Error: bad 7");
    assert_false(cdsh_toolresult_is_frozen(r));
    cdsh_toolresult *ref = cdsh_toolresult_ref(r);
    cdsh_toolresult_free(r);
    assert_string_equal(ref->error_name, "X");
    cdsh_toolresult_free(ref);
    r = cdsh_toolresult_new_error(NULL, NULL, NULL);
    assert_error(r, NULL, "tool failed");
    cdsh_toolresult_free(r);
}

static void text_dup_skips_non_text_blocks(void **state)
{
    (void)state;
    cdsh_toolresult *r = cdsh_toolresult_new_value_steal(json_null());
    r->content = js("[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"image\",\"attachment\":{}},"
                    "{\"type\":\"text\",\"text\":\"b\"}]");
    char *t = cdsh_toolresult_text_dup(r);
    assert_string_equal(t, "a\nb");
    free(t);
    json_t *j = cdsh_toolresult_to_json(r);
    assert_true(json_is_null(json_object_get(j, "value")));
    assert_null(json_object_get(j, "concludesTurn"));
    json_decref(j);
    cdsh_toolresult_free(r);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(success_result_has_value_and_text_content),
        T(default_render_prints_non_strings_as_compact_json),
        T(custom_render_produces_content_blocks),
        T(render_failure_is_invalid_tool_output),
        T(stages_run_in_pipeline_order),
        T(around_wrappers_nest_in_registration_order),
        T(invalid_args_list_violations_with_paths),
        T(invalid_args_skip_policy_but_are_published),
        T(non_object_arguments_are_invalid),
        T(non_lossless_arguments_are_invalid),
        T(arguments_are_a_snapshot),
        T(output_violating_schema_is_invalid_tool_output),
        T(non_lossless_output_is_invalid_tool_output),
        T(body_failure_carries_name_and_code),
        T(plain_body_failure_has_no_info),
        T(undescribed_body_failure_gets_a_generic_message),
        T(unknown_tool_still_meets_policy_hooks),
        T(execute_refuses_calls_without_id_or_name),
        T(pre_execute_deny_reaches_model_verbatim_and_skips_body),
        T(deny_without_reason_gets_a_default),
        T(first_non_allow_pre_execute_decides),
        T(scoped_pre_execute_sees_only_its_agents),
        T(ask_without_approval_service_denies_with_ask_reason),
        T(ask_without_reason_or_service_uses_default_denial),
        T(ask_without_agent_is_denied_even_with_a_service),
        T(approval_allowed_once_runs_the_body),
        T(approval_rejected_has_its_own_reason),
        T(approval_cancelled_has_its_own_reason),
        T(approval_unavailable_has_its_own_reason),
        T(approval_cancelled_with_caller_aborted_is_aborted_before_dispatch),
        T(approval_disposer_only_removes_its_own_service),
        T(guard_denial_is_verbatim_and_skips_body),
        T(guards_run_global_first_then_chain_farthest_first),
        T(scoped_guard_spares_other_agents_and_global_calls),
        T(guards_do_not_run_after_a_pre_execute_denial),
        T(wrapper_authored_success_is_validated_and_rendered),
        T(wrapper_authored_invalid_value_is_invalid_tool_output),
        T(wrapper_failure_is_final_and_bypasses_post_execute),
        T(wrapper_cannot_run_the_body_twice),
        T(wrapper_token_reaches_the_body_fused_with_the_callers),
        T(caller_cancellation_reaches_a_body_behind_a_swapped_token),
        T(post_execute_replaces_content),
        T(post_execute_replaces_value_and_rerenders),
        T(post_execute_value_is_revalidated),
        T(post_execute_cannot_give_a_failure_a_value),
        T(post_execute_cannot_replace_both),
        T(post_execute_block_turns_feedback_into_the_error),
        T(post_execute_block_without_feedback_has_default_message),
        T(post_hook_sees_what_the_previous_one_rewrote),
        T(finalize_content_shapes_successes_and_failures),
        T(result_event_carries_the_frozen_result_and_identity),
        T(result_event_is_filtered_by_agent),
        T(deferred_contexts_and_conclude_turn_reach_the_result),
        T(presentation_meta_only_for_top_level_calls),
        T(caller_aborted_before_dispatch),
        T(cancel_during_policy_stops_before_the_body),
        T(cancel_mid_body_yields_aborted),
        T(cancelled_failure_keeps_the_tools_own_error),
        T(timeout_fires_the_token_and_yields_tool_timeout),
        T(fast_body_under_a_timeout_succeeds),
        T(body_ignoring_its_token_is_detached_at_the_deadline),
        T(registry_free_waits_for_a_detached_body),
        T(caller_cancellation_reaches_a_timed_body),
        T(timed_out_body_sees_reason_timeout),
        T(nested_call_shares_root_token_and_agent),
        T(nested_call_id_can_be_chosen),
        T(nested_dispatch_meets_the_callers_restrictions),
        T(nested_dispatch_meets_guards_verbatim),
        T(nesting_deeper_than_the_limit_fails_clearly),
        T(cancelled_caller_cancels_its_nested_calls),
        T(batch_runs_safe_calls_in_parallel_keeping_model_order),
        T(batch_treats_unsafe_calls_as_barriers),
        T(batch_pool_is_bounded),
        T(batch_reports_results_for_unknown_and_invalid_calls),
        T(visibility_is_checked_again_right_before_the_body),
        T(disposed_hooks_stop_running_and_release_their_state),
        T(scoped_wrapper_wraps_only_its_agents),
        T(guards_see_the_validated_arguments),
        T(denials_are_published_like_any_result),
        T(concurrent_nested_calls_with_hooks_are_consistent),
        T(error_constructors_build_model_text),
        T(text_dup_skips_non_text_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
