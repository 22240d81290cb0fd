/* bench_dispatch.c — cost of the dispatch pipeline: a trivial tool called
 * 1,000,000 times top-level (snapshot, validation, hooks lookup, body,
 * output validation, render, freeze), the same with a "tools/result"
 * listener, and a two-step nested call (ns per nested step). */
#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "host/dispatch.h"
#include "host/events.h"
#include "host/tools.h"

static int body_trivial(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    (void)exec;
    *value = json_true();
    return 0;
}

static int body_two_steps(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    for (int i = 0; i < 2; i++) {
        cdsh_toolresult *r = cdsh_dispatch_nested(exec, "step", "trivial", NULL);
        if (!r || r->is_error)
            abort();
        cdsh_toolresult_free(r);
    }
    *value = json_true();
    return 0;
}

static void on_result(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    (void)name;
    (void)scope;
    (void)payload;
    ++*(long *)arg;
}

static double run(cdsh_tools *tools, const char *name, long n)
{
    cdsh_dispatch_input in = {.call_id = "bench", .name = name};
    int64_t t0 = cdsh_clock_mono_ns();
    for (long i = 0; i < n; i++) {
        cdsh_toolresult *r = cdsh_dispatch_execute(tools, &in);
        if (!r || r->is_error)
            abort();
        cdsh_toolresult_free(r);
    }
    return (double)(cdsh_clock_mono_ns() - t0) / (double)n;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    cdsh_events *bus = cdsh_events_new();
    cdsh_tools *tools = cdsh_tools_new(bus);
    json_t *params = json_pack("{s:s}", "type", "object");
    json_t *output = json_pack("{s:s}", "type", "boolean");
    cdsh_tool_def trivial = {.name = "trivial",
                             .description = "returns true",
                             .parameters = params,
                             .output_schema = output,
                             .execute = body_trivial};
    cdsh_tool_def outer = trivial;
    outer.name = "two_steps";
    outer.execute = body_two_steps;
    cdsh_disposer_t d1, d2, d3;
    if (cdsh_tools_register(tools, NULL, &trivial, &d1, NULL) ||
        cdsh_tools_register(tools, NULL, &outer, &d2, NULL))
        return 1;

    double top = run(tools, "trivial", n);
    printf("dispatch: top-level trivial call: %.0f ns/call (%ld calls)\n", top, n);

    long heard = 0;
    cdsh_events_on(bus, "tools/result", NULL, on_result, &heard, &d3, NULL);
    double listened = run(tools, "trivial", n / 4);
    printf("dispatch: top-level call with a tools/result listener: %.0f ns/call\n", listened);
    cdsh_disposer_run(&d3);

    long m = n / 4;
    double both = run(tools, "two_steps", m);
    /* A two-step call is one top-level call plus two nested steps. */
    printf("dispatch: nested step: %.0f ns/step (two-step call %.0f ns, %ld calls)\n",
           (both - top) / 2.0, both, m);

    cdsh_disposer_run(&d2);
    cdsh_disposer_run(&d1);
    cdsh_tools_free(tools);
    cdsh_events_free(bus);
    json_decref(params);
    json_decref(output);
    return 0;
}
