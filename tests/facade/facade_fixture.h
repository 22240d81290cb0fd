/* facade_fixture.h — shared fixture for the capability facade tests: a real
 * host with the facade plugin and a "tester" plugin whose context the tests
 * register stub tools and capabilities through, stub tools that record how
 * they were called (args, callId, rootCallId, parent, agent), and JSON
 * helpers. Header-only (static functions) so each test stays self-contained. */
#ifndef CDSH_TESTS_FACADE_FIXTURE_H
#define CDSH_TESTS_FACADE_FIXTURE_H

#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/dispatch.h"
#include "host/host.h"
#include "plugins/facade/plugin.h"
#include "plugins/facade/service.h"

#pragma GCC diagnostic ignored "-Wunused-function"

typedef enum stub_mode { STUB_ECHO = 0, STUB_THROW, STUB_LONG_TEXT, STUB_TEXT } stub_mode;

typedef struct stub {
    char name[80];
    stub_mode mode;
} stub;

/* The running test's state (tests run one at a time). */
static cdsh_host *H;
static cdsh_plugin_ctx *CTX; /* the tester plugin's context */
static cdsh_plugin *TESTER;
static cdsh_facade *F;
static json_t *CALLS; /* [{tool, args, callId, rootCallId, parent, agent}] */

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v)
        fail_msg("bad JSON in test: %s (%s)", text, e.text);
    return v;
}

static int stub_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    stub *s = ud;
    json_array_append_new(CALLS, json_pack("{s:s, s:O, s:s, s:s, s:s?, s:s?}", "tool", s->name,
                                           "args", exec->args, "callId", exec->call_id,
                                           "rootCallId", exec->root_call_id, "parent",
                                           exec->parent ? exec->parent->call_id : NULL, "agent",
                                           exec->agent ? cdsh_scope_id(exec->agent) : NULL));
    switch (s->mode) {
    case STUB_THROW: return cdsh_dispatch_fail(exec, NULL, NULL, "corrupt file");
    case STUB_LONG_TEXT: {
        char *big = malloc(5001);
        memset(big, 'x', 5000);
        big[5000] = 0;
        *value = json_string(big);
        free(big);
        return 0;
    }
    case STUB_TEXT: *value = json_string("plain text result"); return 0;
    default: *value = json_pack("{s:s, s:O}", "tool", s->name, "echo", exec->args); return 0;
    }
}

static void stub_free(void *ud)
{
    free(ud);
}

/* Registers a stub through ctx (NULL: the tester's context). */
static void stub_in(cdsh_plugin_ctx *ctx, const char *name, stub_mode mode)
{
    stub *s = calloc(1, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->mode = mode;
    json_t *out = js("{}");
    cdsh_tool_def def = {.name = name,
                         .description = "stub tool",
                         .output_schema = out,
                         .execute = stub_body,
                         .ud = s,
                         .free_ud = stub_free};
    cdsh_error err = {0};
    int rc = cdsh_ctx_register_tool(ctx ? ctx : CTX, &def, &err);
    json_decref(out);
    if (rc)
        fail_msg("stub %s: %s", name, err.message);
}

static void stubs(const char *const *names)
{
    for (; *names; names++)
        stub_in(NULL, *names, STUB_ECHO);
}

static int tester_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config, (void)err;
    CTX = ctx;
    return 0;
}

static const char *const tester_requires[] = {CDSH_FACADE_SERVICE, NULL};
static const cdsh_plugin_def tester_plugin = {
    .name = "tester", .requires = tester_requires, .apply = tester_apply};

static int fx_setup(void **state)
{
    (void)state;
    H = cdsh_host_new();
    CALLS = json_array();
    cdsh_error err = {0};
    if (cdsh_plugin_load(H, &cdsh_facade_plugin, NULL, NULL, &err) != 0)
        fail_msg("facade: %s", err.message);
    F = cdsh_host_service(H, CDSH_FACADE_SERVICE);
    assert_non_null(F);
    assert_int_equal(cdsh_plugin_load(H, &tester_plugin, NULL, &TESTER, &err), 0);
    assert_non_null(CTX);
    return 0;
}

static int fx_teardown(void **state)
{
    (void)state;
    cdsh_host_free(H);
    json_decref(CALLS);
    H = NULL, CTX = NULL, F = NULL, CALLS = NULL, TESTER = NULL;
    return 0;
}

/* Declares capability JSON text through ctx (NULL: tester); returns rc. */
static int declare_in(cdsh_plugin_ctx *ctx, cdsh_scope *agent, const char *cap,
                      cdsh_disposer_t *undo, cdsh_error *err)
{
    json_t *c = js(cap);
    cdsh_facade_opts o = {.agent = agent};
    int rc = cdsh_facade_register(F, ctx ? ctx : CTX, c, &o, undo, err);
    json_decref(c);
    return rc;
}

static cdsh_toolresult *call_as(cdsh_scope *agent, const char *call_id, const char *name,
                                const char *args)
{
    json_t *a = js(args);
    cdsh_dispatch_input in = {.call_id = call_id, .name = name, .args = a, .agent = agent};
    cdsh_toolresult *r = cdsh_dispatch_execute(cdsh_host_tools(H), &in);
    json_decref(a);
    assert_non_null(r);
    return r;
}

static cdsh_toolresult *call(const char *name, const char *args)
{
    return call_as(NULL, "call-1", name, args);
}

/* Visible names as one comma-joined string, in order. */
static char *names_of(cdsh_scope *agent)
{
    json_t *names = cdsh_tools_names(cdsh_host_tools(H), agent);
    char buf[8192] = "";
    size_t i, used = 0;
    json_t *n;
    json_array_foreach(names, i, n) {
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", i ? "," : "",
                                 json_string_value(n));
    }
    json_decref(names);
    return strdup(buf);
}

static void assert_names(cdsh_scope *agent, const char *expected)
{
    char *got = names_of(agent);
    assert_string_equal(got, expected);
    free(got);
}

static size_t calls_of(const char *tool)
{
    size_t n = 0, i;
    json_t *c;
    json_array_foreach(CALLS, i, c) {
        n += strcmp(json_string_value(json_object_get(c, "tool")), tool) == 0;
    }
    return n;
}

static const json_t *last_call_of(const char *tool)
{
    const json_t *found = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(CALLS, i, c) {
        if (strcmp(json_string_value(json_object_get(c, "tool")), tool) == 0)
            found = c;
    }
    return found;
}

static void assert_json(const json_t *got, const char *expected)
{
    json_t *e = js(expected);
    if (!json_equal((json_t *)got, e)) {
        char *g = json_dumps(got, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
        fail_msg("JSON mismatch:\n got      %s\n expected %s", g, expected);
    }
    json_decref(e);
}

#endif
