/* tools_fixture.h — shared fixture for the tool registry and dispatch tests:
 * a registry on a fresh event bus that records every tools/ event, tool
 * bodies with observable behaviour, and a stage trace. Header-only (static
 * functions) so each test executable stays self-contained. */
#ifndef CDSH_TESTS_TOOLS_FIXTURE_H
#define CDSH_TESTS_TOOLS_FIXTURE_H

#include "support/testkit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/dispatch.h"
#include "host/events.h"
#include "host/tools.h"

/* Each test file uses a different subset of these helpers. */
#pragma GCC diagnostic ignored "-Wunused-function"

typedef struct fx {
    cdsh_events *bus;
    cdsh_tools *tools;
    cdsh_disposer_t keep[128];
    size_t nkeep;
    pthread_mutex_t lock;
    json_t *events; /* [{event, scope, payload}] */
    char trace[2048];
} fx;

static fx *g_fx; /* the running test's fixture, for bodies that trace */

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v)
        fail_msg("bad JSON in test: %s (%s)", text, e.text);
    return v;
}

static void trace(const char *what)
{
    if (!g_fx)
        return;
    pthread_mutex_lock(&g_fx->lock);
    size_t n = strlen(g_fx->trace);
    snprintf(g_fx->trace + n, sizeof g_fx->trace - n, "%s%s", n ? " " : "", what);
    pthread_mutex_unlock(&g_fx->lock);
}

static void fx_on_event(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    fx *f = arg;
    json_t *rec =
        json_pack("{s:s, s:o, s:O}", "event", name, "scope",
                  scope ? json_string(cdsh_scope_id(scope)) : json_null(), "payload", payload);
    pthread_mutex_lock(&f->lock);
    json_array_append_new(f->events, rec);
    pthread_mutex_unlock(&f->lock);
    if (strcmp(name, "tools/result") == 0)
        trace("result");
}

static void fx_keep(fx *f, cdsh_disposer_t d)
{
    assert_true(f->nkeep < 128);
    f->keep[f->nkeep++] = d;
}

static int fx_setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    pthread_mutex_init(&f->lock, NULL);
    f->bus = cdsh_events_new();
    f->tools = cdsh_tools_new(f->bus);
    f->events = json_array();
    assert_non_null(f->bus);
    assert_non_null(f->tools);
    cdsh_disposer_t d;
    assert_int_equal(cdsh_events_on(f->bus, "tools/*", NULL, fx_on_event, f, &d, NULL), 0);
    fx_keep(f, d);
    g_fx = f;
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    fx *f = *state;
    /* Registrations first, in reverse, like a plugin unload; the bus listener
     * (keep[0]) goes last. */
    for (size_t i = f->nkeep; i-- > 1;)
        cdsh_disposer_run(&f->keep[i]);
    cdsh_tools_free(f->tools);
    cdsh_disposer_run(&f->keep[0]);
    cdsh_events_free(f->bus);
    json_decref(f->events);
    pthread_mutex_destroy(&f->lock);
    g_fx = NULL;
    free(f);
    return 0;
}

/* Number of recorded events called `name`. */
static size_t fx_count_events(fx *f, const char *name)
{
    size_t n = 0, i;
    json_t *rec;
    pthread_mutex_lock(&f->lock);
    json_array_foreach(f->events, i, rec) {
        n += strcmp(json_string_value(json_object_get(rec, "event")), name) == 0;
    }
    pthread_mutex_unlock(&f->lock);
    return n;
}

/* The k-th (0-based) recorded payload of event `name` (borrowed) or NULL. */
static json_t *fx_event(fx *f, const char *name, size_t k)
{
    size_t i;
    json_t *rec, *found = NULL;
    pthread_mutex_lock(&f->lock);
    json_array_foreach(f->events, i, rec) {
        if (strcmp(json_string_value(json_object_get(rec, "event")), name) == 0 && k-- == 0) {
            found = json_object_get(rec, "payload");
            break;
        }
    }
    pthread_mutex_unlock(&f->lock);
    return found;
}

/* ---- bodies ------------------------------------------------------------------ */

/* Returns args.text (or "" when absent). */
static int body_echo(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    trace("body");
    json_t *text = json_object_get(exec->args, "text");
    *value = text ? json_incref(text) : json_string("");
    return 0;
}

/* Returns a copy of the JSON value in ud. */
static int body_const(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)exec;
    trace("body");
    *value = json_deep_copy((json_t *)ud);
    return 0;
}

/* Fails with {name, code} from ud = "Name|CODE|message" (Name empty → no info). */
static int body_fail(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)value;
    trace("body");
    char buf[256];
    snprintf(buf, sizeof buf, "%s", (const char *)ud);
    char *code = strchr(buf, '|');
    *code++ = '\0';
    char *msg = strchr(code, '|');
    *msg++ = '\0';
    return cdsh_dispatch_fail(exec, *buf ? buf : NULL, *buf ? code : NULL, "%s", msg);
}

/* Set by body_wait_cancel once it runs, so a test can fire its token while
 * the body is in flight instead of guessing with a sleep. */
static atomic_int fx_body_waiting;

/* Waits for its token (up to 60 s), then succeeds with "woke:<reason>". */
static int body_wait_cancel(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    trace("body");
    atomic_store(&fx_body_waiting, 1);
    bool fired = cdsh_cancel_wait(exec->cancel, 60000);
    char buf[128];
    snprintf(buf, sizeof buf, "woke:%s", fired ? cdsh_cancel_reason(exec->cancel) : "no");
    *value = json_string(buf);
    return 0;
}

static const char *ANY_OBJECT = "{\"type\":\"object\"}";
static const char *ANY = "{}";

static cdsh_tool_def fx_def(const char *name, cdsh_tool_body_fn body, void *ud)
{
    static json_t *params, *output; /* shared immutable schemas (registry copies them) */
    if (!params) {
        params = js(ANY_OBJECT);
        output = js(ANY);
    }
    return (cdsh_tool_def){.name = name,
                           .description = "a test tool",
                           .parameters = params,
                           .output_schema = output,
                           .execute = body,
                           .ud = ud};
}

static void fx_add(fx *f, cdsh_scope *scope, const cdsh_tool_def *def)
{
    cdsh_disposer_t d;
    cdsh_error err;
    int rc = cdsh_tools_register(f->tools, scope, def, &d, &err);
    if (rc != 0)
        fail_msg("register %s: %s", def->name, err.message);
    fx_keep(f, d);
}

/* Registers an echo tool with {text: string} parameters and string output. */
static void fx_add_echo(fx *f, cdsh_scope *scope, const char *name)
{
    json_t *params = js("{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}");
    json_t *output = js("{\"type\":\"string\"}");
    cdsh_tool_def def = {.name = name,
                         .description = "echo the text",
                         .parameters = params,
                         .output_schema = output,
                         .execute = body_echo};
    fx_add(f, scope, &def);
    json_decref(params);
    json_decref(output);
}

static cdsh_toolresult *fx_call_as(fx *f, cdsh_scope *agent, cdsh_cancel *cancel, const char *name,
                                   const char *args)
{
    json_t *a = args ? js(args) : NULL;
    cdsh_dispatch_input in = {
        .call_id = "call-1", .name = name, .args = a, .agent = agent, .cancel = cancel};
    cdsh_toolresult *res = cdsh_dispatch_execute(f->tools, &in);
    json_decref(a);
    assert_non_null(res);
    assert_true(cdsh_toolresult_is_frozen(res));
    return res;
}

static cdsh_toolresult *fx_call(fx *f, cdsh_scope *agent, const char *name, const char *args)
{
    return fx_call_as(f, agent, NULL, name, args);
}

/* Asserts an error result with the given message and info (code NULL = none). */
static void assert_error(const cdsh_toolresult *res, const char *code, const char *message)
{
    assert_true(res->is_error);
    assert_null(res->value);
    assert_string_equal(res->error_message, message);
    if (code) {
        assert_non_null(res->error_code);
        assert_string_equal(res->error_code, code);
        assert_non_null(res->error_name);
    } else {
        assert_null(res->error_code);
        assert_null(res->error_name);
    }
}

/* The text of the single text block. */
static const char *only_text(const cdsh_toolresult *res)
{
    assert_int_equal(json_array_size(res->content), 1);
    json_t *block = json_array_get(res->content, 0);
    assert_string_equal(json_string_value(json_object_get(block, "type")), "text");
    return json_string_value(json_object_get(block, "text"));
}

static const char *vstr(const cdsh_toolresult *res)
{
    assert_false(res->is_error);
    assert_true(json_is_string(res->value));
    return json_string_value(res->value);
}

#endif
