/* test_facade_harness.c — the 49 harness behaviours of capability-facade.md §7
 * (same scenarios: 3 and 7 stub primitives, pdf_*, preset_read), each group a
 * test named after the behaviour, against a real host and dispatch pipeline. */
#include "facade_fixture.h"

static const char *const three[] = {"pdf_extract", "pdf_layout", "pdf_ocr", NULL};
static const char *const seven[] = {"pdf_extract", "pdf_layout", "pdf_ocr",  "pdf_render",
                                    "pdf_split",   "pdf_merge",  "pdf_meta", NULL};

#define PDF_CAP                                                                                    \
    "{\"id\":\"pdf\",\"description\":\"Read a PDF document.\",\"operations\":["                    \
    "{\"name\":\"analyze\",\"description\":\"Extract text and layout.\","                          \
    "\"parameters\":{\"path\":{\"type\":\"string\",\"required\":true}},"                           \
    "\"steps\":[{\"tool\":\"pdf_extract\"},{\"tool\":\"pdf_layout\"},{\"tool\":\"pdf_ocr\"}]},"    \
    "{\"name\":\"scan\",\"description\":\"OCR a scanned PDF.\","                                   \
    "\"steps\":[{\"tool\":\"pdf_ocr\"}]}]}"

/* 1-4 */
static void registration_publishes_service_and_appends_operation_tools(void **state)
{
    (void)state;
    /* 1: the facade publishes the capabilities service with register */
    assert_ptr_equal(cdsh_ctx_get(CTX, CDSH_FACADE_SERVICE), F);
    /* 2: nothing declared, nothing added */
    assert_names(NULL, ""); /* no other plugin is loaded in this host */
    stubs(three);
    assert_int_equal(declare_in(NULL, NULL, PDF_CAP, NULL, NULL), 0);
    /* 3: operation tools after the stubs, registration order */
    assert_names(NULL, "pdf_extract,pdf_layout,pdf_ocr,pdf_analyze,pdf_scan");
    /* 4: list */
    json_t *list = cdsh_facade_list(F);
    assert_json(list, "[{\"id\":\"pdf\",\"description\":\"Read a PDF document.\","
                      "\"tools\":[\"pdf_analyze\",\"pdf_scan\"]}]");
    json_decref(list);
}

/* 5-8 */
static void refused_capability_registers_nothing_and_is_not_listed(void **state)
{
    (void)state;
    stub_in(NULL, "pdf_extract", STUB_ECHO);
    cdsh_error err = {0};
    int rc = declare_in(NULL, NULL,
                        "{\"id\":\"pdf\",\"description\":\"d\",\"operations\":[{\"name\":\"a\","
                        "\"description\":\"d\",\"steps\":[{\"tool\":\"pdf_extract\"},"
                        "{\"tool\":\"pdf_missing\"}]}]}",
                        NULL, &err);
    assert_int_equal(rc, CDSH_ENOTFOUND); /* 5 */
    assert_string_equal(err.code, "UNKNOWN_STEP_TOOL");
    assert_string_equal(err.message,
                        "capability \"pdf.a\" step 2: tool \"pdf_missing\" is not registered (or "
                        "is restricted away). Register the tool first, then the capability.");
    assert_names(NULL, "pdf_extract");         /* 6 */
    assert_int_equal(cdsh_facade_count(F), 0); /* 7 */
    const char *ok = "{\"id\":\"pdf\",\"description\":\"d\",\"operations\":[{\"name\":\"a\","
                     "\"description\":\"d\",\"steps\":[{\"tool\":\"pdf_extract\"}]}]}";
    assert_int_equal(declare_in(NULL, NULL, ok, NULL, NULL), 0);
    rc = declare_in(NULL, NULL, ok, NULL, &err); /* 8 */
    assert_int_equal(rc, CDSH_EEXIST);
    assert_string_equal(err.code, "CAPABILITY_EXISTS");
    assert_string_equal(err.message, "capability \"pdf\" is already registered");
    assert_names(NULL, "pdf_extract,pdf_a");
}

/* 9-11 */
static void seven_primitives_converge_to_two_operations(void **state)
{
    (void)state;
    stubs(seven);
    assert_names(NULL, "pdf_extract,pdf_layout,pdf_ocr,pdf_render,pdf_split,pdf_merge,pdf_meta");
    assert_int_equal(declare_in(NULL, NULL, PDF_CAP, NULL, NULL), 0);
    json_t *names = cdsh_tools_names(cdsh_host_tools(H), NULL);
    assert_int_equal(json_array_size(names), 9);
    json_decref(names);
    json_t *t = cdsh_tools_info_dup(cdsh_host_tools(H), NULL, "pdf_analyze");
    const char *d = json_string_value(json_object_get(t, "description"));
    assert_non_null(strstr(d, "1. pdf_extract"));
    assert_non_null(strstr(d, "2. pdf_layout"));
    assert_non_null(strstr(d, "3. pdf_ocr"));
    /* the exact composition */
    assert_string_equal(d, "Extract text and layout.\n\n[capability pdf] Read a PDF document.\n"
                           "Steps (run in this order by the harness, one call): 1. pdf_extract "
                           "\u2192 2. pdf_layout \u2192 3. pdf_ocr");
    assert_json(json_object_get(t, "parameters"),
                "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},"
                "\"required\":[\"path\"]}");
    assert_json(json_object_get(t, "outputSchema"),
                "{\"type\":\"object\",\"additionalProperties\":true}");
    json_decref(t);
}

/* 12-19 */
static void one_call_runs_the_pipeline_nested_in_order(void **state)
{
    (void)state;
    stubs(three);
    assert_int_equal(declare_in(NULL, NULL, PDF_CAP, NULL, NULL), 0);
    cdsh_toolresult *r = call("pdf_analyze", "{\"path\":\"a.pdf\"}");
    assert_false(r->is_error);                    /* 12 */
    assert_int_equal(calls_of("pdf_extract"), 1); /* 13 */
    assert_int_equal(calls_of("pdf_layout"), 1);
    assert_int_equal(calls_of("pdf_ocr"), 1);
    const char *order[] = {"pdf_extract", "pdf_layout", "pdf_ocr"};
    for (size_t k = 0; k < 3; k++) {
        const json_t *c = json_array_get(CALLS, k);
        assert_string_equal(json_string_value(json_object_get(c, "tool")), order[k]);
        assert_json(json_object_get(c, "args"), "{\"path\":\"a.pdf\"}");                /* 14 */
        assert_string_equal(json_string_value(json_object_get(c, "parent")), "call-1"); /* 15 */
        assert_string_equal(json_string_value(json_object_get(c, "rootCallId")), "call-1");
        char id[64];
        snprintf(id, sizeof id, "call-1:pdf.analyze:%zu", k + 1);
        assert_string_equal(json_string_value(json_object_get(c, "callId")), id);
    }
    assert_true(json_is_true(json_object_get(r->value, "ok")));                             /* 16 */
    assert_string_equal(json_string_value(json_object_get(r->value, "capability")), "pdf"); /* 17 */
    assert_string_equal(json_string_value(json_object_get(r->value, "operation")), "analyze");
    const json_t *steps = json_object_get(r->value, "steps"); /* 18 */
    assert_int_equal(json_array_size(steps), 3);
    for (size_t k = 0; k < 3; k++) {
        const json_t *s = json_array_get(steps, k);
        char want[160];
        snprintf(want, sizeof want, "{\"tool\":\"%s\",\"echo\":{\"path\":\"a.pdf\"}}", order[k]);
        assert_json(json_object_get(s, "value"), want);
        assert_true(json_is_true(json_object_get(s, "ok")));
        assert_string_equal(json_string_value(json_object_get(s, "tool")), order[k]);
        /* the step's own text content (its compact JSON render) */
        char *compact = json_dumps(json_object_get(s, "value"), JSON_COMPACT | JSON_PRESERVE_ORDER);
        assert_string_equal(json_string_value(json_object_get(s, "text")), compact);
        free(compact);
    }
    assert_null(json_object_get(r->value, "failedStep"));
    char *text = cdsh_toolresult_text_dup(r); /* 19 */
    assert_non_null(strstr(text, "pdf_extract"));
    char *compact = json_dumps(r->value, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_string_equal(text, compact);
    free(compact);
    free(text);
    cdsh_toolresult_free(r);
}

/* 20-24 */
static void from_maps_one_field_and_reports_a_missing_one(void **state)
{
    (void)state;
    stubs(seven);
    assert_int_equal(
        declare_in(NULL, NULL,
                   "{\"id\":\"pdf\",\"description\":\"d\",\"operations\":[{\"name\":\"view\","
                   "\"description\":\"d\",\"parameters\":{\"path\":{\"type\":\"string\"},"
                   "\"render\":{\"type\":\"json\"}},"
                   "\"steps\":[{\"tool\":\"pdf_render\",\"from\":\"render\"}]}]}",
                   NULL, NULL),
        0);
    cdsh_toolresult *r = call("pdf_view", "{\"path\":\"a.pdf\",\"render\":{\"page\":2}}");
    assert_json(json_object_get(last_call_of("pdf_render"), "args"), "{\"page\":2}"); /* 20 */
    assert_true(json_is_true(json_object_get(r->value, "ok")));                       /* 21 */
    cdsh_toolresult_free(r);
    r = call("pdf_view", "{\"path\":\"a.pdf\"}");
    assert_false(r->is_error);
    assert_json(r->value, /* 22, 23: no code, not dispatched */
                "{\"ok\":false,\"capability\":\"pdf\",\"operation\":\"view\",\"steps\":["
                "{\"tool\":\"pdf_render\",\"ok\":false,\"error\":\"operation input has no field "
                "\\\"render\\\" required by step \\\"pdf_render\\\"\"}],"
                "\"failedStep\":\"pdf_render\",\"error\":\"operation input has no field "
                "\\\"render\\\" required by step \\\"pdf_render\\\"\"}");
    assert_int_equal(calls_of("pdf_render"), 1); /* 24 */
    cdsh_toolresult_free(r);
    r = call("pdf_view", "{\"render\":[1]}");
    assert_string_equal(json_string_value(json_object_get(r->value, "error")),
                        "operation input field \"render\" must be an object for step "
                        "\"pdf_render\"");
    assert_int_equal(calls_of("pdf_render"), 1);
    cdsh_toolresult_free(r);
}

static char *deny_extract(void *ud, const cdsh_tool_exec *exec)
{
    (void)ud;
    return strcmp(exec->name, "pdf_extract") == 0 ? strdup("pdf_extract is blocked: policy P-7")
                                                  : NULL;
}

/* 25-27 */
static void guards_still_apply_and_their_reason_passes_verbatim(void **state)
{
    (void)state;
    stubs(three);
    assert_int_equal(declare_in(NULL, NULL, PDF_CAP, NULL, NULL), 0);
    assert_int_equal(cdsh_ctx_guard_tools(CTX, deny_extract, NULL, NULL, NULL), 0);
    cdsh_toolresult *r = call("pdf_analyze", "{\"path\":\"a.pdf\"}");
    assert_int_equal(calls_of("pdf_extract"), 0); /* 25 */
    assert_int_equal(calls_of("pdf_layout"), 0);
    assert_false(r->is_error);
    assert_json(r->value, /* 26, 27 */
                "{\"ok\":false,\"capability\":\"pdf\",\"operation\":\"analyze\",\"steps\":["
                "{\"tool\":\"pdf_extract\",\"ok\":false,\"error\":\"pdf_extract is blocked: "
                "policy P-7\"}],\"failedStep\":\"pdf_extract\",\"error\":\"pdf_extract is "
                "blocked: policy P-7\"}");
    cdsh_toolresult_free(r);
}

/* 28-32 */
static void first_failing_step_stops_the_pipeline_as_a_successful_call(void **state)
{
    (void)state;
    stub_in(NULL, "pdf_extract", STUB_THROW);
    stub_in(NULL, "pdf_layout", STUB_ECHO);
    stub_in(NULL, "pdf_ocr", STUB_ECHO);
    assert_int_equal(declare_in(NULL, NULL, PDF_CAP, NULL, NULL), 0);
    cdsh_toolresult *r = call("pdf_analyze", "{\"path\":\"a.pdf\"}");
    assert_int_equal(calls_of("pdf_extract"), 1); /* 28 */
    assert_int_equal(calls_of("pdf_layout"), 0);  /* 29 */
    assert_json(r->value,
                "{\"ok\":false,\"capability\":\"pdf\",\"operation\":\"analyze\","
                "\"steps\":[{\"tool\":\"pdf_extract\",\"ok\":false,\"error\":\"corrupt "
                "file\"}],\"failedStep\":\"pdf_extract\",\"error\":\"corrupt file\"}"); /* 30, 31 */
    assert_false(r->is_error);                                                          /* 32 */
    cdsh_toolresult_free(r);
}

/* 33-37 */
static void disposer_withdraws_once_and_the_id_can_return(void **state)
{
    (void)state;
    stubs(three);
    cdsh_disposer_t undo;
    assert_int_equal(declare_in(NULL, NULL, PDF_CAP, &undo, NULL), 0);
    assert_true(cdsh_tools_visible(cdsh_host_tools(H), NULL, "pdf_analyze")); /* 33 */
    cdsh_disposer_t again = undo;
    cdsh_disposer_run(&undo);
    assert_names(NULL, "pdf_extract,pdf_layout,pdf_ocr"); /* 34 */
    assert_int_equal(cdsh_facade_count(F), 0);            /* 35 */
    cdsh_disposer_run(&again);                            /* 36 */
    assert_names(NULL, "pdf_extract,pdf_layout,pdf_ocr");
    assert_int_equal(declare_in(NULL, NULL, PDF_CAP, NULL, NULL), 0); /* 37 */
    assert_names(NULL, "pdf_extract,pdf_layout,pdf_ocr,pdf_analyze,pdf_scan");
}

/* 38-40 */
static void agent_restriction_cuts_nested_dispatch_too(void **state)
{
    (void)state;
    stub_in(NULL, "pdf_extract", STUB_ECHO);
    assert_int_equal(
        declare_in(NULL, NULL,
                   "{\"id\":\"pdf\",\"description\":\"d\",\"operations\":[{\"name\":\"analyze\","
                   "\"description\":\"d\",\"steps\":[{\"tool\":\"pdf_extract\"}]}]}",
                   NULL, NULL),
        0);
    cdsh_scope *agent = cdsh_scope_new("agent-1", NULL);
    cdsh_plugin_ctx *actx = cdsh_ctx_scoped_new(CTX, agent, NULL);
    const char *deny[] = {"pdf_extract", NULL};
    assert_int_equal(cdsh_ctx_restrict_tools(actx, NULL, deny, NULL), 0);
    assert_names(agent, "pdf_analyze"); /* 38 */
    cdsh_toolresult *r = call_as(agent, "call-1", "pdf_analyze", "{}");
    assert_false(r->is_error);
    assert_string_equal(json_string_value(json_object_get(r->value, "failedStep")),
                        "pdf_extract"); /* 39 */
    const json_t *s = json_array_get(json_object_get(r->value, "steps"), 0);
    assert_string_equal(json_string_value(json_object_get(s, "error")),
                        "unknown tool \"pdf_extract\""); /* 40 */
    assert_string_equal(json_string_value(json_object_get(s, "code")), "UNKNOWN_TOOL");
    assert_int_equal(calls_of("pdf_extract"), 0);
    cdsh_toolresult_free(r);
    cdsh_ctx_scoped_free(actx);
    cdsh_scope_unref(agent);
}

/* 41-44 */
static void narrowing_is_authoring_time(void **state)
{
    (void)state;
    stub_in(NULL, "pdf_extract", STUB_ECHO);
    cdsh_scope *agent = cdsh_scope_new("agent-1", NULL);
    cdsh_plugin_ctx *actx = cdsh_ctx_scoped_new(CTX, agent, NULL);
    stub_in(actx, "agent_own", STUB_ECHO);
    assert_names(agent, "pdf_extract,agent_own"); /* 41 */
    const char *deny_own[] = {"agent_own", NULL};
    cdsh_error err = {0};
    assert_int_equal(cdsh_ctx_restrict_tools(actx, NULL, deny_own, &err), CDSH_EINVAL);
    assert_non_null(strstr(err.message, "unknown global tool \"agent_own\"")); /* 42 */
    assert_true(cdsh_tools_visible(cdsh_host_tools(H), agent, "agent_own"));   /* 43 */
    const char *deny[] = {"pdf_extract", NULL};
    assert_int_equal(cdsh_ctx_restrict_tools(actx, NULL, deny, NULL), 0);
    cdsh_toolresult *r = call_as(agent, "c", "pdf_extract", "{}"); /* 44 */
    assert_true(r->is_error);
    assert_string_equal(r->error_message, "unknown tool \"pdf_extract\"");
    cdsh_toolresult_free(r);
    cdsh_ctx_scoped_free(actx);
    cdsh_scope_unref(agent);
}

/* 45-49 */
static void agent_scoped_capability_is_that_agents_alone(void **state)
{
    (void)state;
    cdsh_scope *agent = cdsh_scope_new("agent-1", NULL);
    cdsh_scope *other = cdsh_scope_new("agent-2", NULL);
    cdsh_plugin_ctx *actx = cdsh_ctx_scoped_new(CTX, agent, NULL);
    stub_in(actx, "preset_fetch", STUB_ECHO);
    cdsh_disposer_t undo;
    const char *cap = "{\"id\":\"preset\",\"description\":\"Presets.\",\"operations\":[{"
                      "\"name\":\"read\",\"description\":\"Read a preset.\","
                      "\"steps\":[{\"tool\":\"preset_fetch\"}]}]}";
    /* without the agent the step resolves in the global view and is refused */
    cdsh_error err = {0};
    assert_int_equal(declare_in(actx, NULL, cap, NULL, &err), CDSH_ENOTFOUND);
    assert_int_equal(declare_in(actx, agent, cap, &undo, NULL), 0);
    assert_names(agent, "preset_fetch,preset_read"); /* 45 */
    assert_names(other, "");                         /* 46 */
    assert_names(NULL, "");
    cdsh_toolresult *r = call_as(agent, "call-9", "preset_read", "{\"name\":\"x\"}");
    assert_true(json_is_true(json_object_get(r->value, "ok"))); /* 47 */
    const json_t *c = last_call_of("preset_fetch");
    assert_string_equal(json_string_value(json_object_get(c, "agent")), "agent-1"); /* 48 */
    assert_string_equal(json_string_value(json_object_get(c, "parent")), "call-9");
    cdsh_toolresult_free(r);
    r = call_as(other, "call-10", "preset_read", "{}");
    assert_string_equal(r->error_code, "UNKNOWN_TOOL");
    cdsh_toolresult_free(r);
    cdsh_disposer_run(&undo);
    assert_names(agent, "preset_fetch"); /* 49 */
    cdsh_ctx_scoped_free(actx);
    cdsh_scope_unref(agent);
    cdsh_scope_unref(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)
        T(registration_publishes_service_and_appends_operation_tools),
        T(refused_capability_registers_nothing_and_is_not_listed),
        T(seven_primitives_converge_to_two_operations),
        T(one_call_runs_the_pipeline_nested_in_order),
        T(from_maps_one_field_and_reports_a_missing_one),
        T(guards_still_apply_and_their_reason_passes_verbatim),
        T(first_failing_step_stops_the_pipeline_as_a_successful_call),
        T(disposer_withdraws_once_and_the_id_can_return),
        T(agent_restriction_cuts_nested_dispatch_too),
        T(narrowing_is_authoring_time),
        T(agent_scoped_capability_is_that_agents_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
