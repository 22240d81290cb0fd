/* test_facade_service.c — the capabilities service beyond the harness: the 16
 * validation checks in order with their messages, all-or-nothing rollback,
 * step text/error clipping, invalid operation arguments, cancellation,
 * ownership across unload and reload (digest §6, the trap that must not
 * exist), profile (YAML) declarations, late step tools, concurrency. */
#include "facade_fixture.h"

#include <pthread.h>
#include <sys/stat.h>

#include "base/cancel.h"
#include "host/profile.h"

#define OP(steps) "{\"name\":\"a\",\"description\":\"d\",\"steps\":" steps "}"
#define CAP(ops) "{\"id\":\"pdf\",\"description\":\"d\",\"operations\":" ops "}"

static void refuse(const char *cap, int rc, const char *code, const char *message)
{
    cdsh_error err = {0};
    size_t before = cdsh_tools_count(cdsh_host_tools(H));
    assert_int_equal(declare_in(NULL, NULL, cap, NULL, &err), rc);
    assert_string_equal(err.code, code);
    assert_string_equal(err.message, message);
    assert_int_equal(cdsh_tools_count(cdsh_host_tools(H)), before);
    assert_int_equal(cdsh_facade_count(F), 0);
}

#define BAD(cap, msg) refuse(cap, CDSH_EINVAL, "INVALID_CAPABILITY", msg)

static void validation_runs_the_sixteen_checks_in_order(void **state)
{
    (void)state;
    stub_in(NULL, "pdf_extract", STUB_ECHO);
    BAD("[1]", "capability must be an object"); /* 1 */
    BAD("null", "capability must be an object");
    BAD("{\"id\":\"Pdf\"}", "capability id \"Pdf\" must match /^[a-z][a-z0-9_]*$/"); /* 2 */
    BAD("{\"id\":7}", "capability id \"7\" must match /^[a-z][a-z0-9_]*$/");
    BAD("{}", "capability id \"undefined\" must match /^[a-z][a-z0-9_]*$/");
    BAD("{\"id\":\"pdf\",\"description\":\"  \"}", /* 3 */
        "capability \"pdf\" needs a non-empty description: it is the only text the model reads "
        "before choosing");
    BAD("{\"id\":\"pdf\",\"description\":\"d\",\"operations\":[]}", /* 4 */
        "capability \"pdf\" needs a non-empty operations array");
    BAD(CAP("[3]"), "capability \"pdf\": every operation must be an object"); /* 5 */
    BAD(CAP("[{\"name\":\"A-b\"}]"),                                          /* 6 */
        "capability \"pdf\": operation name \"A-b\" must match /^[a-z][a-z0-9_]*$/");
    BAD("{\"id\":\"pdf\",\"description\":\"d\",\"operations\":[{\"name\":" /* 7 */
        "\"a123456789a123456789a123456789a123456789a123456789a123456789b\"}]}",
        "capability \"pdf\": generated tool name "
        "\"pdf_a123456789a123456789a123456789a123456789a123456789a123456789b\" is invalid");
    BAD(CAP("[" OP("[{\"tool\":\"pdf_extract\"}]") "," OP("[]") "]"), /* 8 */
        "capability \"pdf\": duplicate operation tool \"pdf_a\"");
    BAD(CAP("[{\"name\":\"a\",\"description\":\"\"}]"), /* 9 */
        "capability \"pdf.a\" needs a non-empty description");
    BAD(CAP("[{\"name\":\"a\",\"description\":\"d\",\"parameters\":[]}]"), /* 10 */
        "capability \"pdf.a\": parameters must be a parameter-spec object");
    BAD(CAP("[{\"name\":\"a\",\"description\":\"d\",\"parameters\":null}]"),
        "capability \"pdf.a\": parameters must be a parameter-spec object");
    BAD(CAP("[" OP("{}") "]"), "capability \"pdf.a\" needs a non-empty steps array"); /* 11 */
    BAD(CAP("[" OP("[{\"tool\":\"pdf_extract\"},\"x\"]") "]"),                        /* 12 */
        "capability \"pdf.a\" step 2 must be an object");
    BAD(CAP("[" OP("[{\"tool\":\"pdf.extract\"}]") "]"), /* 13: dots are not tool names */
        "capability \"pdf.a\" step 1: tool \"pdf.extract\" is not a valid tool name");
    BAD(CAP("[" OP("[{\"tool\":\"pdf_extract\",\"from\":\"targetDir\"}]") "]"), /* 14 */
        "capability \"pdf.a\" step 1: from \"targetDir\" must be a field name");
    refuse(CAP("[" OP("[{\"tool\":\"pdf_extract\"},{\"tool\":\"nope\"}]") "]"), CDSH_ENOTFOUND,
           "UNKNOWN_STEP_TOOL", /* 15 */
           "capability \"pdf.a\" step 2: tool \"nope\" is not registered (or is restricted "
           "away). Register the tool first, then the capability.");
    /* order: operation by operation, and within a step 13, 14, then 15 */
    refuse(CAP("[" OP("[{\"tool\":\"nope\"}]") ",{\"name\":\"B\"}]"), CDSH_ENOTFOUND,
           "UNKNOWN_STEP_TOOL",
           "capability \"pdf.a\" step 1: tool \"nope\" is not registered (or is restricted "
           "away). Register the tool first, then the capability.");
    BAD(CAP("[" OP("[{\"tool\":\"nope\",\"from\":\"X\"}]") "]"),
        "capability \"pdf.a\" step 1: from \"X\" must be a field name");
    assert_int_equal(
        declare_in(NULL, NULL, CAP("[" OP("[{\"tool\":\"pdf_extract\"}]") "]"), NULL, NULL), 0);
    cdsh_error err = {0}; /* 16 comes after validation: a bad second one still says invalid */
    assert_int_equal(declare_in(NULL, NULL, CAP("[" OP("[{\"tool\":\"nope\"}]") "]"), NULL, &err),
                     CDSH_ENOTFOUND);
    assert_int_equal(
        declare_in(NULL, NULL, CAP("[" OP("[{\"tool\":\"pdf_extract\"}]") "]"), NULL, &err),
        CDSH_EEXIST);
    assert_string_equal(err.message, "capability \"pdf\" is already registered");
}

static void a_failing_registration_rolls_back_every_operation(void **state)
{
    (void)state;
    stub_in(NULL, "pdf_extract", STUB_ECHO);
    stub_in(NULL, "pdf_b", STUB_ECHO); /* the second operation's name is taken */
    cdsh_error err = {0};
    size_t before = cdsh_tools_count(cdsh_host_tools(H));
    assert_int_equal(declare_in(NULL, NULL,
                                "{\"id\":\"pdf\",\"description\":\"d\",\"operations\":[" OP(
                                    "[{\"tool\":\"pdf_extract\"}]") ",{\"name\":\"b\","
                                                                    "\"description\":\"d\","
                                                                    "\"steps\":[{\"tool\":"
                                                                    "\"pdf_extract\"}]}]}",
                                NULL, &err),
                     CDSH_EEXIST);
    assert_string_equal(err.code, "TOOL_EXISTS");
    assert_names(NULL, "pdf_extract,pdf_b");
    assert_int_equal(cdsh_tools_count(cdsh_host_tools(H)), before);
    assert_int_equal(cdsh_facade_count(F), 0);
    /* a bad parameter spec: the registry's schema refusal, nothing left */
    assert_int_equal(
        declare_in(NULL, NULL,
                   "{\"id\":\"pdf\",\"description\":\"d\",\"operations\":[" OP(
                       "[{\"tool\":\"pdf_extract\"}]") ",{\"name\":\"c\",\"description\":\"d\","
                                                       "\"parameters\":{\"x\":{\"type\":"
                                                       "\"sometimes\"}},\"steps\":[{\"tool\":"
                                                       "\"pdf_extract\"}]}]}",
                   NULL, &err),
        CDSH_EUNSUPPORTED);
    assert_string_equal(err.code, "UNSUPPORTED_SCHEMA");
    assert_names(NULL, "pdf_extract,pdf_b");
    assert_int_equal(cdsh_facade_count(F), 0);
    /* and the id is free again */
    assert_int_equal(
        declare_in(NULL, NULL, CAP("[" OP("[{\"tool\":\"pdf_extract\"}]") "]"), NULL, NULL), 0);
}

static void step_text_and_errors_are_clipped(void **state)
{
    (void)state;
    stub_in(NULL, "big_text", STUB_LONG_TEXT);
    stub_in(NULL, "plain_text", STUB_TEXT);
    assert_int_equal(
        declare_in(NULL, NULL,
                   "{\"id\":\"big\",\"description\":\"d\",\"operations\":[{\"name\":\"a\","
                   "\"description\":\"d\",\"steps\":[{\"tool\":\"plain_text\"},{\"tool\":"
                   "\"big_text\"}]}]}",
                   NULL, NULL),
        0);
    cdsh_toolresult *r = call("big_a", "{}");
    const json_t *steps = json_object_get(r->value, "steps");
    assert_string_equal(json_string_value(json_object_get(json_array_get(steps, 0), "text")),
                        "plain text result");
    const char *t = json_string_value(json_object_get(json_array_get(steps, 1), "text"));
    assert_int_equal(strlen(t), 2000 + strlen("\u2026[+truncated]"));
    assert_string_equal(t + 2000, "\u2026[+truncated]");
    /* the value itself is not clipped */
    assert_int_equal(json_string_length(json_object_get(json_array_get(steps, 1), "value")), 5000);
    cdsh_toolresult_free(r);
}

static char *long_guard(void *ud, const cdsh_tool_exec *exec)
{
    (void)ud;
    if (strcmp(exec->name, "pdf_extract") != 0)
        return NULL;
    char *s = malloc(1001);
    memset(s, 'g', 1000);
    s[1000] = 0;
    return s;
}

static void long_errors_are_clipped_to_600_and_codes_kept(void **state)
{
    (void)state;
    stub_in(NULL, "pdf_extract", STUB_ECHO);
    assert_int_equal(
        declare_in(NULL, NULL, CAP("[" OP("[{\"tool\":\"pdf_extract\"}]") "]"), NULL, NULL), 0);
    assert_int_equal(cdsh_ctx_guard_tools(CTX, long_guard, NULL, NULL, NULL), 0);
    cdsh_toolresult *r = call("pdf_a", "{}");
    const char *e = json_string_value(json_object_get(r->value, "error"));
    assert_int_equal(strlen(e), 600 + strlen("\u2026[+truncated]"));
    assert_null(json_object_get(json_array_get(json_object_get(r->value, "steps"), 0), "code"));
    cdsh_toolresult_free(r);
}

static void invalid_operation_arguments_fail_before_any_step(void **state)
{
    (void)state;
    stub_in(NULL, "pdf_extract", STUB_ECHO);
    assert_int_equal(
        declare_in(NULL, NULL,
                   CAP("[{\"name\":\"a\",\"description\":\"d\",\"parameters\":{\"path\":{"
                       "\"type\":\"string\",\"required\":true}},\"steps\":[{\"tool\":"
                       "\"pdf_extract\"}]}]"),
                   NULL, NULL),
        0);
    cdsh_toolresult *r = call("pdf_a", "{\"path\":3}");
    assert_true(r->is_error);
    assert_string_equal(r->error_code, "INVALID_ARGS");
    assert_string_equal(r->error_message, "invalid arguments: \"arguments.path\" must be a string");
    assert_int_equal(calls_of("pdf_extract"), 0);
    cdsh_toolresult_free(r);
    r = call("pdf_a", "{\"path\":\"x\",\"extra\":1}"); /* the root stays open */
    assert_false(r->is_error);
    cdsh_toolresult_free(r);
}

static cdsh_cancel *TOKEN;

static char *cancel_after_first(void *ud, const cdsh_tool_exec *exec)
{
    (void)ud;
    if (strcmp(exec->name, "pdf_layout") == 0)
        cdsh_cancel_fire(TOKEN, "user");
    return NULL;
}

static void caller_cancellation_makes_the_outer_call_aborted(void **state)
{
    (void)state;
    stub_in(NULL, "pdf_extract", STUB_ECHO);
    stub_in(NULL, "pdf_layout", STUB_ECHO);
    stub_in(NULL, "pdf_ocr", STUB_ECHO);
    assert_int_equal(declare_in(NULL, NULL,
                                CAP("[" OP("[{\"tool\":\"pdf_extract\"},{\"tool\":\"pdf_layout\"},"
                                           "{\"tool\":\"pdf_ocr\"}]") "]"),
                                NULL, NULL),
                     0);
    TOKEN = cdsh_cancel_new(NULL);
    assert_int_equal(cdsh_ctx_guard_tools(CTX, cancel_after_first, NULL, NULL, NULL), 0);
    json_t *a = js("{}");
    cdsh_dispatch_input in = {.call_id = "c1", .name = "pdf_a", .args = a, .cancel = TOKEN};
    cdsh_toolresult *r = cdsh_dispatch_execute(cdsh_host_tools(H), &in);
    assert_true(r->is_error);
    assert_string_equal(r->error_code, "ABORTED");
    assert_int_equal(calls_of("pdf_extract"), 1);
    /* the token fired in pdf_layout's guard: its body never ran, nor did pdf_ocr */
    assert_int_equal(calls_of("pdf_layout"), 0);
    assert_int_equal(calls_of("pdf_ocr"), 0);
    cdsh_toolresult_free(r);
    json_decref(a);
    cdsh_cancel_free(TOKEN);
}

/* ---- every step goes through the whole pipeline ---------------------------- */

static json_t *SEEN; /* stage:name:callId entries */

static void seen(const char *stage, const cdsh_tool_exec *exec)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s:%s", stage, exec->name);
    json_array_append_new(SEEN, json_string(buf));
}

static cdsh_tools_verdict pre_hook(void *ud, const cdsh_tool_exec *exec, char **reason)
{
    (void)ud;
    seen("pre", exec);
    if (strcmp(exec->name, "step_ask") == 0)
        return CDSH_TOOLS_ASK;
    if (strcmp(exec->name, "step_deny") == 0) {
        *reason = strdup("denied by pre-execute: P-1");
        return CDSH_TOOLS_DENY;
    }
    return CDSH_TOOLS_ALLOW;
}

static cdsh_toolresult *around_hook(void *ud, const cdsh_tool_exec *exec, cdsh_dispatch_next *next)
{
    (void)ud;
    seen("around", exec);
    return cdsh_dispatch_next_run(next, NULL);
}

static void post_hook(void *ud, const cdsh_tool_exec *exec, const cdsh_toolresult *res,
                      cdsh_tools_post *decision)
{
    (void)ud, (void)res;
    seen("post", exec);
    if (strcmp(exec->name, "step_block") == 0) {
        decision->block = true;
        decision->feedback = cdsh_toolresult_text_content("blocked after the fact");
    }
}

static void on_result(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    (void)arg, (void)name, (void)scope;
    char buf[256];
    snprintf(buf, sizeof buf, "result:%s:%s", json_string_value(json_object_get(payload, "name")),
             json_is_string(json_object_get(payload, "parent"))
                 ? json_string_value(json_object_get(payload, "parent"))
                 : "-");
    json_array_append_new(SEEN, json_string(buf));
}

static const json_t *step_of(const cdsh_toolresult *r, size_t k)
{
    return json_array_get(json_object_get(r->value, "steps"), k);
}

static void every_step_runs_the_whole_pipeline(void **state)
{
    (void)state;
    SEEN = json_array();
    const char *const names[] = {"step_ok", "step_ask", "step_deny", "step_block", NULL};
    stubs(names);
    assert_int_equal(cdsh_ctx_on_pre_execute(CTX, pre_hook, NULL, NULL, NULL), 0);
    assert_int_equal(cdsh_ctx_on_execute(CTX, around_hook, NULL, NULL, NULL), 0);
    assert_int_equal(cdsh_ctx_on_post_execute(CTX, post_hook, NULL, NULL, NULL), 0);
    assert_int_equal(cdsh_ctx_on(CTX, "tools/result", on_result, NULL, NULL), 0);
    const char *ops[] = {"step_ok", "step_ask", "step_deny", "step_block"};
    for (size_t i = 0; i < 4; i++) {
        char cap[512];
        snprintf(cap, sizeof cap,
                 "{\"id\":\"c%zu\",\"description\":\"d\",\"operations\":[{\"name\":\"run\","
                 "\"description\":\"d\",\"steps\":[{\"tool\":\"%s\"}]}]}",
                 i, ops[i]);
        assert_int_equal(declare_in(NULL, NULL, cap, NULL, NULL), 0);
    }
    cdsh_toolresult *r = call("c0_run", "{}");
    assert_true(json_is_true(json_object_get(r->value, "ok")));
    assert_json(SEEN, "[\"pre:c0_run\",\"around:c0_run\",\"pre:step_ok\",\"around:step_ok\","
                      "\"post:step_ok\",\"result:step_ok:call-1\",\"post:c0_run\","
                      "\"result:c0_run:-\"]");
    cdsh_toolresult_free(r);
    /* ask without an approval service is a denial, reason verbatim */
    r = call("c1_run", "{}");
    assert_string_equal(json_string_value(json_object_get(step_of(r, 0), "error")),
                        "tool \"step_ask\" requires approval (not yet supported)");
    cdsh_toolresult_free(r);
    r = call("c2_run", "{}");
    assert_string_equal(json_string_value(json_object_get(r->value, "error")),
                        "denied by pre-execute: P-1");
    assert_null(json_object_get(step_of(r, 0), "code"));
    cdsh_toolresult_free(r);
    r = call("c3_run", "{}"); /* the body ran, post-execute blocked its result */
    assert_int_equal(calls_of("step_block"), 1);
    assert_string_equal(json_string_value(json_object_get(r->value, "error")),
                        "blocked after the fact");
    cdsh_toolresult_free(r);
    assert_int_equal(calls_of("step_ask"), 0);
    assert_int_equal(calls_of("step_deny"), 0);
    json_decref(SEEN);
}

static void operations_can_be_steps_of_other_operations(void **state)
{
    (void)state;
    stub_in(NULL, "pdf_extract", STUB_ECHO);
    assert_int_equal(declare_in(NULL, NULL,
                                "{\"id\":\"inner\",\"description\":\"d\",\"operations\":[{"
                                "\"name\":\"run\",\"description\":\"d\",\"steps\":[{\"tool\":"
                                "\"pdf_extract\"}]}]}",
                                NULL, NULL),
                     0);
    assert_int_equal(declare_in(NULL, NULL,
                                "{\"id\":\"outer\",\"description\":\"d\",\"operations\":[{"
                                "\"name\":\"go\",\"description\":\"d\",\"steps\":[{\"tool\":"
                                "\"inner_run\"}]}]}",
                                NULL, NULL),
                     0);
    cdsh_toolresult *r = call("outer_go", "{\"x\":1}");
    assert_true(json_is_true(json_object_get(r->value, "ok")));
    const json_t *c = last_call_of("pdf_extract");
    assert_string_equal(json_string_value(json_object_get(c, "callId")),
                        "call-1:outer.go:1:inner.run:1");
    assert_string_equal(json_string_value(json_object_get(c, "rootCallId")), "call-1");
    assert_string_equal(json_string_value(json_object_get(c, "parent")), "call-1:outer.go:1");
    /* the inner operation's value is the outer step's value */
    const json_t *inner =
        json_object_get(json_array_get(json_object_get(r->value, "steps"), 0), "value");
    assert_string_equal(json_string_value(json_object_get(inner, "capability")), "inner");
    cdsh_toolresult_free(r);
}

/* ---- ownership (digest §6) -------------------------------------------------- */

static int declarer_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    stub_in(ctx, "pdf_extract", STUB_ECHO);
    json_t *cap = js(CAP("[" OP("[{\"tool\":\"pdf_extract\"}]") "]"));
    int rc =
        cdsh_facade_register(cdsh_ctx_get(ctx, CDSH_FACADE_SERVICE), ctx, cap, NULL, NULL, err);
    json_decref(cap);
    return rc;
}

static const char *const declarer_requires[] = {CDSH_FACADE_SERVICE, NULL};
static const cdsh_plugin_def declarer = {
    .name = "declarer", .requires = declarer_requires, .apply = declarer_apply};

/* Declares over a tool owned by ANOTHER plugin (the tester), the digest's
 * default-scope case (a). */
static int borrower_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    json_t *cap = js("{\"id\":\"borrow\",\"description\":\"d\",\"operations\":[" OP(
        "[{\"tool\":\"shared_tool\"}]") "]}");
    int rc =
        cdsh_facade_register(cdsh_ctx_get(ctx, CDSH_FACADE_SERVICE), ctx, cap, NULL, NULL, err);
    json_decref(cap);
    return rc;
}

static const cdsh_plugin_def borrower = {
    .name = "borrower", .requires = declarer_requires, .apply = borrower_apply};

static void unloading_the_declarer_removes_its_operations_and_listing(void **state)
{
    (void)state;
    size_t empty = cdsh_tools_count(cdsh_host_tools(H));
    for (int round = 0; round < 3; round++) {
        cdsh_plugin *p = NULL;
        cdsh_error err = {0};
        if (cdsh_plugin_load(H, &declarer, NULL, &p, &err) != 0)
            fail_msg("round %d: %s", round, err.message); /* "already registered" = the trap */
        assert_names(NULL, "pdf_extract,pdf_a");
        json_t *list = cdsh_facade_list(F);
        assert_json(list, "[{\"id\":\"pdf\",\"description\":\"d\",\"tools\":[\"pdf_a\"]}]");
        json_decref(list);
        cdsh_toolresult *r = call("pdf_a", "{}");
        assert_true(json_is_true(json_object_get(r->value, "ok")));
        cdsh_toolresult_free(r);
        cdsh_plugin_unload(p);
        assert_names(NULL, ""); /* step tools AND operation tools are gone */
        assert_int_equal(cdsh_facade_count(F), 0);
        assert_int_equal(cdsh_tools_count(cdsh_host_tools(H)), empty);
    }
}

static void declaring_over_anothers_tools_still_belongs_to_the_declarer(void **state)
{
    (void)state;
    stub_in(NULL, "shared_tool", STUB_ECHO);
    cdsh_plugin *p = NULL;
    assert_int_equal(cdsh_plugin_load(H, &borrower, NULL, &p, NULL), 0);
    assert_names(NULL, "shared_tool,borrow_a");
    cdsh_plugin_unload(p);
    assert_names(NULL, "shared_tool");
    assert_int_equal(cdsh_facade_count(F), 0);
    assert_int_equal(cdsh_plugin_load(H, &borrower, NULL, &p, NULL), 0);
    assert_names(NULL, "shared_tool,borrow_a");
    /* unloading the tool's owner while the borrower stays: the operation
     * stays and reports UNKNOWN_TOOL per step, as a nested dispatch would */
    cdsh_plugin_unload(TESTER);
    assert_names(NULL, "borrow_a");
    cdsh_toolresult *r = call("borrow_a", "{}");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(r->value, "steps"), 0), "code")),
                        "UNKNOWN_TOOL");
    cdsh_toolresult_free(r);
}

static void unloading_the_facade_sends_declarers_back_and_reload_redeclares(void **state)
{
    (void)state;
    cdsh_plugin *p = NULL;
    assert_int_equal(cdsh_plugin_load(H, &declarer, NULL, &p, NULL), 0);
    cdsh_plugin *facade = cdsh_host_plugin_find(H, CDSH_FACADE_PLUGIN);
    cdsh_plugin_unload(facade);
    assert_int_equal(cdsh_plugin_state_get(p), CDSH_PLUGIN_PENDING);
    assert_names(NULL, "");
    assert_int_equal(cdsh_plugin_load(H, &cdsh_facade_plugin, NULL, NULL, NULL), 0);
    F = cdsh_host_service(H, CDSH_FACADE_SERVICE);
    assert_int_equal(cdsh_plugin_state_get(p), CDSH_PLUGIN_ACTIVE);
    assert_names(NULL, "pdf_extract,pdf_a");
    assert_int_equal(cdsh_facade_count(F), 1);
}

static void nothing_declared_costs_nothing(void **state)
{
    (void)state;
    /* the fixture's host: facade + tester, nothing declared */
    assert_names(NULL, "");
    json_t *l = cdsh_facade_list(F);
    assert_json(l, "[]");
    json_decref(l);
    json_t *p = cdsh_facade_problems(F);
    assert_json(p, "[]");
    json_decref(p);
    cdsh_plugin *facade = cdsh_host_plugin_find(H, CDSH_FACADE_PLUGIN);
    /* adopt(state) + provide: no tool, no listener, no skill or prompt text */
    assert_int_equal(cdsh_plugin_effect_count(facade), 2);
    assert_int_equal(cdsh_tools_count(cdsh_host_tools(H)), 0);
    assert_int_equal(cdsh_skills_count(cdsh_host_skills(H)), 0);
}

/* ---- profile declarations ------------------------------------------------------ */

static json_t *yaml_config(const char *yaml)
{
    cdsh_error err = {0};
    json_t *doc = cdsh_profile_yaml_parse(yaml, strlen(yaml), &err);
    if (!doc)
        fail_msg("yaml: %s", err.message);
    json_t *cfg = json_incref(
        json_object_get(json_object_get(json_object_get(doc, "plugins"), "facade"), "config"));
    json_decref(doc);
    return cfg;
}

static const char *PROFILE_YAML =
    "plugins:\n"
    "  facade:\n"
    "    config:\n"
    "      capabilities:\n"
    "        - id: pdf\n"
    "          description: Read a PDF document.\n"
    "          operations:\n"
    "            - name: analyze\n"
    "              description: Extract text and layout in one call.\n"
    "              parameters:\n"
    "                path: {type: string, required: true}\n"
    "              steps:\n"
    "                - tool: pdf_extract\n"
    "                - tool: pdf_layout\n"
    "        - id: Broken\n"
    "          description: bad id\n"
    "          operations: []\n"
    "        - id: half\n"
    "          description: one good operation, one bad step\n"
    "          operations:\n"
    "            - name: ok\n"
    "              description: fine\n"
    "              steps: [{tool: pdf_extract}]\n"
    "            - name: bad\n"
    "              description: names a dotted tool\n"
    "              steps: [{tool: pdf.extract}]\n"
    "        - id: later\n"
    "          description: its step tool arrives after the facade\n"
    "          operations:\n"
    "            - name: run\n"
    "              description: run it\n"
    "              steps: [{tool: mcp_slow_tool}]\n";

static int WARNINGS;

static void count_warning(void *arg, const char *name, const cdsh_scope *scope,
                          const json_t *payload)
{
    (void)arg, (void)name, (void)scope;
    if (strcmp(json_string_value(json_object_get(payload, "source")), "facade") == 0)
        WARNINGS++;
}

static void profile_declarations_register_over_existing_tools_and_report_bad_ones(void **state)
{
    (void)state;
    cdsh_host_free(H); /* a fresh host where the tools exist before the facade */
    H = cdsh_host_new();
    CTX = NULL;
    const char *const no_requires[] = {NULL};
    cdsh_plugin_def tools_first = {
        .name = "tester", .requires = no_requires, .apply = tester_apply};
    assert_int_equal(cdsh_plugin_load(H, &tools_first, NULL, NULL, NULL), 0);
    cdsh_disposer_t listen;
    WARNINGS = 0;
    assert_int_equal(cdsh_events_on(cdsh_host_events(H), "log/warning", NULL, count_warning, NULL,
                                    &listen, NULL),
                     0);
    stub_in(NULL, "pdf_extract", STUB_ECHO);
    stub_in(NULL, "pdf_layout", STUB_ECHO);
    json_t *cfg = yaml_config(PROFILE_YAML);
    cdsh_error err = {0};
    assert_int_equal(cdsh_plugin_load(H, &cdsh_facade_plugin, cfg, NULL, &err), 0);
    F = cdsh_host_service(H, CDSH_FACADE_SERVICE);
    assert_names(NULL, "pdf_extract,pdf_layout,pdf_analyze");
    json_t *problems = cdsh_facade_problems(F);
    assert_json(problems,
                "[{\"index\":1,\"id\":\"Broken\",\"code\":\"INVALID_CAPABILITY\",\"message\":"
                "\"capability id \\\"Broken\\\" must match /^[a-z][a-z0-9_]*$/\"},"
                "{\"index\":2,\"id\":\"half\",\"code\":\"INVALID_CAPABILITY\",\"message\":"
                "\"capability \\\"half.bad\\\" step 1: tool \\\"pdf.extract\\\" is not a valid "
                "tool name\"},"
                "{\"index\":3,\"id\":\"later\",\"code\":\"UNKNOWN_STEP_TOOL\",\"message\":"
                "\"capability \\\"later.run\\\" step 1: tool \\\"mcp_slow_tool\\\" is not "
                "registered (or is restricted away). Register the tool first, then the "
                "capability.\"}]");
    json_decref(problems);
    cdsh_toolresult *r = call("pdf_analyze", "{\"path\":\"a.pdf\"}");
    assert_true(json_is_true(json_object_get(r->value, "ok")));
    assert_int_equal(calls_of("pdf_layout"), 1);
    cdsh_toolresult_free(r);
    assert_int_equal(WARNINGS, 3);
    /* unrelated tools arrive: the waiting declaration is retried, not re-reported */
    stub_in(NULL, "unrelated_1", STUB_ECHO);
    stub_in(NULL, "unrelated_2", STUB_ECHO);
    assert_int_equal(WARNINGS, 3);
    /* the late tool arrives (an MCP server that connected later) */
    stub_in(NULL, "mcp_slow_tool", STUB_ECHO);
    assert_names(NULL, "pdf_extract,pdf_layout,pdf_analyze,unrelated_1,unrelated_2,mcp_slow_tool,"
                       "later_run");
    problems = cdsh_facade_problems(F);
    assert_int_equal(json_array_size(problems), 2);
    json_decref(problems);
    /* it goes away with its step tool's owner only through the facade's unload */
    cdsh_plugin_unload(cdsh_host_plugin_find(H, CDSH_FACADE_PLUGIN));
    assert_names(NULL, "pdf_extract,pdf_layout,unrelated_1,unrelated_2,mcp_slow_tool");
    cdsh_disposer_run(&listen);
    json_decref(cfg);
}

static void profile_file_declarations_show_in_the_cli_surface(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    char path[4096];
    snprintf(path, sizeof path, "%s/profiles", home);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/profiles/default.yaml", home);
    /* xiangqi, tavern and jobs (on by default) are off in both profiles:
     * the surfaces compared are exactly `skill`, then `skill` plus the
     * declared operation */
    cdsh_test_write_file(path, "plugins:\n"
                               "  xiangqi:\n"
                               "    enabled: false\n"
                               "  tavern:\n"
                               "    enabled: false\n"
                               "  jobs:\n"
                               "    enabled: false\n"
                               "  facade:\n"
                               "    config:\n"
                               "      capabilities:\n"
                               "        - id: docs\n"
                               "          description: Project documentation.\n"
                               "          operations:\n"
                               "            - name: open\n"
                               "              description: Load one skill's instructions.\n"
                               "              parameters: {name: {type: string, required: true}}\n"
                               "              steps: [{tool: skill}]\n"
                               "        - id: bad\n"
                               "          description: x\n"
                               "          operations: [{name: x, description: y, steps: "
                               "[{tool: nowhere}]}]\n");
    char *out = NULL, *err = NULL;
    /* the surface before: a profile without declarations */
    snprintf(path, sizeof path, "%s/profiles/bare.yaml", home);
    cdsh_test_write_file(path,
                         "plugins:\n  xiangqi:\n    enabled: false\n  tavern:\n    enabled: false\n"
                         "  jobs:\n    enabled: false\n");
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "tools", "list", "--json", "--profile", "bare", NULL),
        0);
    json_t *before = json_loads(out, 0, NULL);
    assert_non_null(before);
    free(out), free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "tools", "list", "--json", NULL), 0);
    json_t *doc = json_loads(out, 0, NULL);
    assert_non_null(doc);
    assert_int_equal(json_integer_value(json_object_get(before, "count")), 1);
    assert_int_equal(json_integer_value(json_object_get(doc, "count")), 2);
    /* tools are listed in the order the model sees: by name (host contracts §2) */
    const json_t *op = json_array_get(json_object_get(doc, "tools"), 0);
    assert_string_equal(json_string_value(json_object_get(op, "name")), "docs_open");
    /* the declaration adds exactly its operation's schema bytes */
    assert_int_equal(json_integer_value(json_object_get(doc, "totalBytes")),
                     json_integer_value(json_object_get(before, "totalBytes")) +
                         json_integer_value(json_object_get(op, "bytes")));
    json_decref(before);
    json_decref(doc);
    free(out), free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "facade", "list", NULL), 1);
    assert_string_equal(out, "docs: Project documentation.\n  docs_open\nnot registered: "
                             "capability \"bad.x\" step 1: tool \"nowhere\" is not registered "
                             "(or is restricted away). Register the tool first, then the "
                             "capability.\n");
    free(out), free(err);
    cdsh_test_home_free(home);
}

/* ---- concurrency --------------------------------------------------------------- */

static void *declare_thread(void *arg)
{
    cdsh_disposer_t *undo = arg;
    json_t *c = js(CAP("[" OP("[{\"tool\":\"pdf_extract\"}]") "]"));
    int rc = cdsh_facade_register(F, CTX, c, NULL, undo, NULL);
    json_decref(c);
    return (void *)(intptr_t)rc;
}

static void concurrent_declarations_of_one_id_admit_exactly_one(void **state)
{
    (void)state;
    stub_in(NULL, "pdf_extract", STUB_ECHO);
    for (int round = 0; round < 20; round++) {
        pthread_t t[4];
        cdsh_disposer_t undo[4] = {{0}};
        for (int i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, declare_thread, &undo[i]);
        int ok = 0;
        for (int i = 0; i < 4; i++) {
            void *rc;
            pthread_join(t[i], &rc);
            ok += (intptr_t)rc == 0;
        }
        assert_int_equal(ok, 1);
        assert_names(NULL, "pdf_extract,pdf_a");
        for (int i = 0; i < 4; i++)
            cdsh_disposer_run(&undo[i]);
        assert_names(NULL, "pdf_extract");
    }
}

/* ---- what a step's result does not pass on (digest §5) ------------------------ */

/* A step that defers a context, concludes the turn, renders an image next to
 * its text and has presentation meta. */
static int rich_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    assert_int_equal(cdsh_dispatch_defer_context(exec, "remember the step's note"), 0);
    cdsh_dispatch_conclude_turn(exec);
    *value = json_pack("{s:i}", "pages", 2);
    return 0;
}

static json_t *rich_render(void *ud, const json_t *args, const json_t *value, cdsh_error *err)
{
    (void)ud, (void)args, (void)value, (void)err;
    return json_pack("[{s:s, s:s}, {s:s, s:{s:s, s:s}}, {s:s, s:s}]", "type", "text", "text",
                     "page one", "type", "image", "attachment", "id", "img-1", "mimeType",
                     "image/png", "type", "text", "text", "page two");
}

static json_t *rich_meta(void *ud, const json_t *args, const json_t *value)
{
    (void)ud, (void)args, (void)value;
    return json_pack("{s:s}", "card", "step-card");
}

static void a_steps_contexts_turn_end_images_and_meta_are_not_passed_on(void **state)
{
    (void)state;
    json_t *out = js("{}");
    cdsh_tool_def def = {.name = "pdf_rich",
                         .description = "rich step",
                         .output_schema = out,
                         .execute = rich_body,
                         .render = rich_render,
                         .presentation_meta = rich_meta};
    assert_int_equal(cdsh_ctx_register_tool(CTX, &def, NULL), 0);
    json_decref(out);
    /* called directly, the step's result carries all four */
    cdsh_toolresult *r = call("pdf_rich", "{}");
    assert_false(r->is_error);
    assert_true(r->concludes_turn);
    assert_int_equal(json_array_size(r->additional_contexts), 1);
    assert_non_null(r->meta);
    assert_int_equal(json_array_size(r->content), 3);
    cdsh_toolresult_free(r);
    assert_int_equal(
        declare_in(NULL, NULL, CAP("[" OP("[{\"tool\":\"pdf_rich\"}]") "]"), NULL, NULL), 0);
    r = call("pdf_a", "{}");
    assert_false(r->is_error);
    assert_false(r->concludes_turn);
    assert_int_equal(json_array_size(r->additional_contexts), 0);
    char *meta = r->meta ? json_dumps(r->meta, JSON_COMPACT) : NULL;
    assert_true(!meta || !strstr(meta, "step-card"));
    free(meta);
    /* text only: the step's text blocks joined, the image dropped */
    const json_t *step = json_array_get(json_object_get(r->value, "steps"), 0);
    assert_string_equal(json_string_value(json_object_get(step, "text")), "page one\npage two");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(step, "value"), "pages")),
                     2);
    size_t i;
    json_t *block;
    json_array_foreach(r->content, i, block) {
        assert_string_equal(json_string_value(json_object_get(block, "type")), "text");
    }
    char *dump = json_dumps(r->value, JSON_COMPACT);
    assert_null(strstr(dump, "remember the step's note"));
    assert_null(strstr(dump, "img-1"));
    free(dump);
    cdsh_toolresult_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)
        T(validation_runs_the_sixteen_checks_in_order),
        T(a_failing_registration_rolls_back_every_operation),
        T(step_text_and_errors_are_clipped),
        T(long_errors_are_clipped_to_600_and_codes_kept),
        T(invalid_operation_arguments_fail_before_any_step),
        T(caller_cancellation_makes_the_outer_call_aborted),
        T(operations_can_be_steps_of_other_operations),
        T(every_step_runs_the_whole_pipeline),
        T(unloading_the_declarer_removes_its_operations_and_listing),
        T(declaring_over_anothers_tools_still_belongs_to_the_declarer),
        T(unloading_the_facade_sends_declarers_back_and_reload_redeclares),
        T(nothing_declared_costs_nothing),
        T(profile_declarations_register_over_existing_tools_and_report_bad_ones),
        T(profile_file_declarations_show_in_the_cli_surface),
        T(concurrent_declarations_of_one_id_admit_exactly_one),
        T(a_steps_contexts_turn_end_images_and_meta_are_not_passed_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
