/* test_plugins.c — the plugin lifecycle: config validation, apply, reverse
 * disposal, reload without leftovers, failure isolation, services (required,
 * optional, ownership by the caller), scoped contexts and profiles. */
#include "support/testkit.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"

/* ---- a small log every test plugin writes to ------------------------------ */

static char LOG[4096];

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    size_t n = strlen(LOG);
    if (n)
        LOG[n++] = ',';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(LOG + n, sizeof LOG - n, fmt, ap);
    va_end(ap);
}

static int setup(void **state)
{
    LOG[0] = '\0';
    *state = cdsh_host_new();
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    cdsh_host_free(*state);
    return 0;
}

static int ok_handler(void *arg, const cdsh_command_invocation *inv, cdsh_command_result *out,
                      cdsh_error *err)
{
    (void)inv, (void)err;
    return cdsh_command_result_set(out, CDSH_COMMAND_SUCCESS, arg);
}

static int rpc_ok(void *arg, const char *endpoint, const json_t *payload, cdsh_cancel *cancel,
                  json_t **result, cdsh_error *err)
{
    (void)arg, (void)endpoint, (void)payload, (void)cancel, (void)err;
    *result = cdsh_rpc_ok_new(json_string("pong"));
    return 0;
}

static void noop_listener(void *arg, const char *name, const cdsh_scope *scope,
                          const json_t *payload)
{
    (void)arg, (void)name, (void)scope, (void)payload;
}

static void log_disposer(void *arg)
{
    logf_("undo %s", (const char *)arg);
}

/* Registers one of everything: a command, a skill, an RPC channel, a
 * listener and two logged effects. */
static int apply_everything(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    const char *name = cdsh_ctx_name(ctx);
    logf_("apply %s depth=%lld", name,
          (long long)json_integer_value(json_object_get(config, "depth")));
    char cmd[64], channel[64];
    snprintf(cmd, sizeof cmd, "%s-cmd", name);
    snprintf(channel, sizeof channel, "/%s", name);
    cdsh_command_def c = {
        .name = cmd, .description = "a command", .handler = ok_handler, .arg = "ok"};
    cdsh_skill_def s = {.name = cmd, .description = "a skill", .content = "body"};
    int rc;
    if ((rc = cdsh_ctx_adopt(ctx, (cdsh_disposer_t){log_disposer, "first"}, err)) ||
        (rc = cdsh_ctx_register_command(ctx, &c, err)) ||
        (rc = cdsh_ctx_register_skill(ctx, &s, err)) ||
        (rc = cdsh_ctx_rpc_handle(ctx, channel, rpc_ok, NULL, err)) ||
        (rc = cdsh_ctx_on(ctx, "tools/*", noop_listener, NULL, err)) ||
        (rc = cdsh_ctx_adopt(ctx, (cdsh_disposer_t){log_disposer, "last"}, err)))
        return rc;
    return 0;
}

#define DEPTH_SCHEMA                                                                               \
    "{\"type\":\"object\",\"properties\":{\"depth\":{\"type\":\"integer\",\"default\":3,"          \
    "\"minimum\":1}}}"

static const cdsh_plugin_def ALPHA = {
    .name = "alpha", .config_schema = DEPTH_SCHEMA, .apply = apply_everything};
static const cdsh_plugin_def BETA = {.name = "beta", .apply = apply_everything};

static size_t live_registrations(cdsh_host *h)
{
    return cdsh_commands_count(cdsh_host_commands(h)) + cdsh_skills_count(cdsh_host_skills(h)) +
           cdsh_rpc_count(cdsh_host_rpc(h)) + cdsh_events_count(cdsh_host_events(h));
}

/* ---- tests ---------------------------------------------------------------- */

static void load_applies_with_filled_defaults(void **state)
{
    cdsh_host *h = *state;
    cdsh_plugin *p = NULL;
    assert_int_equal(cdsh_plugin_load(h, &ALPHA, NULL, &p, NULL), 0);
    assert_int_equal(cdsh_plugin_state_get(p), CDSH_PLUGIN_ACTIVE);
    assert_string_equal(LOG, "apply alpha depth=3");
    assert_int_equal(json_integer_value(json_object_get(cdsh_plugin_config(p), "depth")), 3);
    assert_int_equal(cdsh_plugin_effect_count(p), 6);
    assert_ptr_equal(cdsh_host_plugin_find(h, "alpha"), p);
}

static void given_config_reaches_apply(void **state)
{
    cdsh_host *h = *state;
    json_t *cfg = json_pack("{s:i}", "depth", 8);
    assert_int_equal(cdsh_plugin_load(h, &ALPHA, cfg, NULL, NULL), 0);
    assert_string_equal(LOG, "apply alpha depth=8");
    json_decref(cfg);
}

static void invalid_config_fails_before_apply(void **state)
{
    cdsh_host *h = *state;
    json_t *cfg = json_pack("{s:i, s:b}", "depth", 0, "extra", 1);
    cdsh_plugin *p = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_plugin_load(h, &ALPHA, cfg, &p, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_CONFIG");
    assert_string_equal(err.message, "invalid config:\n"
                                     "  - expected a value >= 1 but got 0 (at depth)\n"
                                     "  - unknown key (at extra)");
    assert_int_equal(cdsh_plugin_state_get(p), CDSH_PLUGIN_FAILED);
    assert_string_equal(cdsh_plugin_error(p), err.message);
    assert_string_equal(LOG, ""); /* apply never ran */
    assert_int_equal(live_registrations(h), 0);
    json_decref(cfg);
}

static void failed_plugin_can_be_loaded_again(void **state)
{
    cdsh_host *h = *state;
    json_t *bad = json_pack("{s:i}", "depth", 0), *good = json_pack("{s:i}", "depth", 2);
    cdsh_plugin *first = NULL, *second = NULL;
    assert_int_equal(cdsh_plugin_load(h, &ALPHA, bad, &first, NULL), CDSH_EINVAL);
    assert_int_equal(cdsh_plugin_load(h, &ALPHA, good, &second, NULL), 0);
    assert_int_equal(cdsh_plugin_state_get(first), CDSH_PLUGIN_DISPOSED); /* handle still valid */
    assert_int_equal(cdsh_plugin_state_get(second), CDSH_PLUGIN_ACTIVE);
    json_t *list = cdsh_host_plugins_list(h);
    char *s = json_dumps(list, JSON_COMPACT);
    assert_string_equal(s, "[{\"name\":\"alpha\",\"state\":\"active\"}]");
    free(s);
    json_decref(list);
    json_decref(bad);
    json_decref(good);
}

static void unsupported_schema_fails_the_plugin(void **state)
{
    cdsh_host *h = *state;
    static const cdsh_plugin_def bad = {.name = "bad",
                                        .config_schema = "{\"type\":\"object\",\"properties\":"
                                                         "{\"a\":{\"type\":\"date\"}}}",
                                        .apply = apply_everything};
    static const cdsh_plugin_def notjson = {
        .name = "notjson", .config_schema = "{", .apply = apply_everything};
    cdsh_error err = {0};
    assert_int_equal(cdsh_plugin_load(h, &bad, NULL, NULL, &err), CDSH_EUNSUPPORTED);
    assert_string_equal(err.code, "UNSUPPORTED_SCHEMA");
    assert_int_equal(cdsh_plugin_load(h, &notjson, NULL, NULL, &err), CDSH_EUNSUPPORTED);
    assert_memory_equal(err.message, "plugin \"notjson\": config schema is not JSON", 42);
}

static void descriptor_needs_name_and_apply(void **state)
{
    cdsh_host *h = *state;
    static const cdsh_plugin_def noname = {.apply = apply_everything}, noapply = {.name = "x"};
    assert_int_equal(cdsh_plugin_load(h, &noname, NULL, NULL, NULL), CDSH_EINVAL);
    assert_int_equal(cdsh_plugin_load(h, &noapply, NULL, NULL, NULL), CDSH_EINVAL);
}

static void same_name_cannot_load_twice(void **state)
{
    cdsh_host *h = *state;
    cdsh_error err = {0};
    assert_int_equal(cdsh_plugin_load(h, &ALPHA, NULL, NULL, NULL), 0);
    assert_int_equal(cdsh_plugin_load(h, &ALPHA, NULL, NULL, &err), CDSH_EEXIST);
    assert_string_equal(err.code, "PLUGIN_EXISTS");
    assert_string_equal(err.message, "plugin \"alpha\" is already loaded");
}

static void unload_runs_disposers_in_reverse_order(void **state)
{
    cdsh_host *h = *state;
    cdsh_plugin *p = NULL;
    cdsh_plugin_load(h, &ALPHA, NULL, &p, NULL);
    LOG[0] = '\0';
    cdsh_plugin_unload(p);
    assert_string_equal(LOG, "undo last,undo first");
    assert_int_equal(cdsh_plugin_state_get(p), CDSH_PLUGIN_DISPOSED);
    assert_int_equal(cdsh_plugin_effect_count(p), 0);
    assert_null(cdsh_host_plugin_find(h, "alpha"));
    cdsh_plugin_unload(p); /* no-op */
    assert_string_equal(LOG, "undo last,undo first");
}

static void reload_leaves_nothing_behind(void **state)
{
    cdsh_host *h = *state;
    size_t baseline = live_registrations(h);
    cdsh_plugin *p = NULL;
    assert_int_equal(cdsh_plugin_load(h, &ALPHA, NULL, &p, NULL), 0);
    size_t once = live_registrations(h);
    assert_int_equal(once - baseline, 4); /* command, skill, channel, listener */
    cdsh_plugin_unload(p);
    assert_int_equal(live_registrations(h), baseline);
    cdsh_error err = {0};
    assert_int_equal(cdsh_plugin_load(h, &ALPHA, NULL, &p, &err), 0); /* no "already registered" */
    assert_int_equal(live_registrations(h), once);
    json_t *cmds = cdsh_commands_list(cdsh_host_commands(h), NULL);
    assert_int_equal(json_array_size(cmds), 1);
    json_decref(cmds);
    json_t *r = cdsh_rpc_call(cdsh_host_rpc(h), "/alpha", "ping", NULL, NULL);
    assert_string_equal(json_string_value(json_object_get(r, "value")), "pong");
    json_decref(r);
    json_t *list = cdsh_host_plugins_list(h); /* the disposed fiber is not listed */
    assert_int_equal(json_array_size(list), 1);
    json_decref(list);
}

static int apply_then_fail(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    int rc = apply_everything(ctx, config, err);
    if (rc)
        return rc;
    return cdsh_error_set(err, CDSH_EIO, "ENGINE_MISSING", "engine binary not found");
}

static void failing_apply_is_rolled_back_and_isolated(void **state)
{
    cdsh_host *h = *state;
    static const cdsh_plugin_def broken = {.name = "broken", .apply = apply_then_fail};
    cdsh_plugin *a = NULL, *b = NULL;
    cdsh_plugin_load(h, &ALPHA, NULL, &a, NULL);
    size_t with_alpha = live_registrations(h);
    cdsh_error err = {0};
    LOG[0] = '\0';
    assert_int_equal(cdsh_plugin_load(h, &broken, NULL, &b, &err), CDSH_EIO);
    assert_string_equal(err.code, "ENGINE_MISSING");
    assert_string_equal(err.message, "plugin \"broken\" failed to apply: engine binary not found");
    assert_int_equal(cdsh_plugin_state_get(b), CDSH_PLUGIN_FAILED);
    assert_string_equal(LOG, "apply broken depth=0,undo last,undo first");
    assert_int_equal(live_registrations(h), with_alpha); /* broken's registrations are gone */
    assert_int_equal(cdsh_plugin_state_get(a), CDSH_PLUGIN_ACTIVE);
    json_t *r = cdsh_rpc_call(cdsh_host_rpc(h), "/alpha", "ping", NULL, NULL);
    assert_true(json_is_true(json_object_get(r, "ok")));
    json_decref(r);
    json_t *list = cdsh_host_plugins_list(h);
    char *s = json_dumps(list, JSON_COMPACT);
    assert_string_equal(s, "[{\"name\":\"alpha\",\"state\":\"active\"},{\"name\":\"broken\","
                           "\"state\":\"failed\",\"error\":\"plugin \\\"broken\\\" failed to "
                           "apply: engine binary not found\"}]");
    free(s);
    json_decref(list);
}

static void collect_names(void *arg, const char *name, const cdsh_scope *scope,
                          const json_t *payload)
{
    (void)scope;
    json_t *arr = arg;
    const char *st = json_string_value(json_object_get(payload, "state"));
    const char *msg = json_string_value(json_object_get(payload, "message"));
    char buf[256];
    snprintf(buf, sizeof buf, "%s:%s", name, st ? st : msg);
    json_array_append_new(arr, json_string(buf));
}

static void lifecycle_events_report_states_and_failures(void **state)
{
    cdsh_host *h = *state;
    json_t *seen = json_array();
    cdsh_disposer_t d1, d2;
    cdsh_events_on(cdsh_host_events(h), "plugins/change", NULL, collect_names, seen, &d1, NULL);
    cdsh_events_on(cdsh_host_events(h), "plugin/failed", NULL, collect_names, seen, &d2, NULL);
    cdsh_plugin *p = NULL;
    cdsh_plugin_load(h, &BETA, NULL, &p, NULL);
    cdsh_plugin_unload(p);
    static const cdsh_plugin_def broken = {.name = "broken", .apply = apply_then_fail};
    cdsh_plugin_load(h, &broken, NULL, NULL, NULL);
    char *s = json_dumps(seen, JSON_COMPACT);
    assert_string_equal(s, "[\"plugins/change:loading\",\"plugins/change:active\","
                           "\"plugins/change:unloading\",\"plugins/change:disposed\","
                           "\"plugins/change:loading\",\"plugins/change:unloading\","
                           "\"plugins/change:failed\",\"plugin/failed:plugin \\\"broken\\\" failed "
                           "to apply: engine binary not found\"]");
    free(s);
    cdsh_disposer_run(&d1);
    cdsh_disposer_run(&d2);
    json_decref(seen);
}

/* A plugin that tries to register from inside one of its own disposers. */
typedef struct late {
    cdsh_plugin_ctx *ctx;
    int rc;
    char code[64];
} late;

static void register_late(void *arg)
{
    late *l = arg;
    cdsh_error err = {0};
    cdsh_command_def c = {.name = "late", .description = "d", .handler = ok_handler, .arg = "x"};
    l->rc = cdsh_ctx_register_command(l->ctx, &c, &err);
    snprintf(l->code, sizeof l->code, "%s", err.code);
}

static late LATE;

static int apply_late(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    LATE.ctx = ctx;
    return cdsh_ctx_adopt(ctx, (cdsh_disposer_t){register_late, &LATE}, err);
}

static void effects_are_refused_while_unloading_and_after(void **state)
{
    cdsh_host *h = *state;
    static const cdsh_plugin_def def = {.name = "late", .apply = apply_late};
    cdsh_plugin *p = NULL;
    cdsh_plugin_load(h, &def, NULL, &p, NULL);
    cdsh_plugin_unload(p);
    assert_int_equal(LATE.rc, CDSH_ECLOSED);
    assert_string_equal(LATE.code, "INACTIVE_EFFECT");
    assert_int_equal(cdsh_commands_count(cdsh_host_commands(h)), 0);
    cdsh_error err = {0};
    cdsh_command_def c = {.name = "after", .description = "d", .handler = ok_handler, .arg = "x"};
    assert_int_equal(cdsh_ctx_register_command(LATE.ctx, &c, &err), CDSH_ECLOSED);
    assert_string_equal(err.message, "plugin \"late\" is not active: effects cannot be added "
                                     "while it is disposed");
    LOG[0] = '\0';
    assert_int_equal(cdsh_ctx_adopt(LATE.ctx, (cdsh_disposer_t){log_disposer, "adopted"}, NULL),
                     CDSH_ECLOSED);
    assert_string_equal(LOG, "undo adopted"); /* run at once, not leaked */
    assert_int_equal(cdsh_commands_count(cdsh_host_commands(h)), 0);
}

/* ---- services ------------------------------------------------------------- */

/* The "greeter" service: its registration function takes the CALLER's ctx. */
typedef struct greeter {
    int greetings;
} greeter;

static int greeter_add_command(greeter *g, cdsh_plugin_ctx *caller, const char *name,
                               cdsh_error *err)
{
    g->greetings++;
    cdsh_command_def c = {
        .name = name, .description = "greets", .handler = ok_handler, .arg = "hello"};
    return cdsh_ctx_register_command(caller, &c, err);
}

static greeter GREETER;

static int apply_provider(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    logf_("apply provider");
    return cdsh_ctx_provide(ctx, "greeter", &GREETER, err);
}

static int apply_consumer(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    greeter *g = cdsh_ctx_get(ctx, "greeter");
    logf_("apply consumer");
    return greeter_add_command(g, ctx, "greet", err);
}

static const char *const NEEDS_GREETER[] = {"greeter", NULL};
static const cdsh_plugin_def PROVIDER = {.name = "provider", .apply = apply_provider};
static const cdsh_plugin_def CONSUMER = {
    .name = "consumer", .requires = NEEDS_GREETER, .apply = apply_consumer};

static void required_service_holds_plugin_pending_until_provided(void **state)
{
    cdsh_host *h = *state;
    cdsh_plugin *c = NULL, *p = NULL;
    assert_int_equal(cdsh_plugin_load(h, &CONSUMER, NULL, &c, NULL), 0);
    assert_int_equal(cdsh_plugin_state_get(c), CDSH_PLUGIN_PENDING);
    assert_string_equal(LOG, "");
    assert_int_equal(cdsh_plugin_load(h, &PROVIDER, NULL, &p, NULL), 0);
    assert_string_equal(LOG, "apply provider,apply consumer");
    assert_int_equal(cdsh_plugin_state_get(c), CDSH_PLUGIN_ACTIVE);
    assert_ptr_equal(cdsh_host_service(h, "greeter"), &GREETER);
}

static void provider_unload_sends_dependent_back_to_pending_and_back(void **state)
{
    cdsh_host *h = *state;
    cdsh_plugin *c = NULL, *p = NULL;
    cdsh_plugin_load(h, &PROVIDER, NULL, &p, NULL);
    cdsh_plugin_load(h, &CONSUMER, NULL, &c, NULL);
    assert_int_equal(cdsh_commands_count(cdsh_host_commands(h)), 1);
    cdsh_plugin_unload(p);
    assert_int_equal(cdsh_plugin_state_get(c), CDSH_PLUGIN_PENDING);
    assert_null(cdsh_host_service(h, "greeter"));
    assert_int_equal(cdsh_commands_count(cdsh_host_commands(h)), 0);
    LOG[0] = '\0';
    cdsh_plugin_load(h, &PROVIDER, NULL, &p, NULL);
    assert_string_equal(LOG, "apply provider,apply consumer");
    assert_int_equal(cdsh_plugin_state_get(c), CDSH_PLUGIN_ACTIVE);
    assert_int_equal(cdsh_commands_count(cdsh_host_commands(h)), 1); /* no duplicate */
}

static void registrations_through_a_service_belong_to_the_caller(void **state)
{
    cdsh_host *h = *state;
    cdsh_plugin *c = NULL, *p = NULL;
    cdsh_plugin_load(h, &PROVIDER, NULL, &p, NULL);
    cdsh_plugin_load(h, &CONSUMER, NULL, &c, NULL);
    assert_int_equal(cdsh_plugin_effect_count(c), 1); /* recorded in the consumer */
    assert_int_equal(cdsh_plugin_effect_count(p), 1); /* only the service itself */
    cdsh_plugin_unload(c);                            /* provider stays */
    assert_int_equal(cdsh_plugin_state_get(p), CDSH_PLUGIN_ACTIVE);
    json_t *d = cdsh_commands_find(cdsh_host_commands(h), NULL, "greet");
    assert_null(d); /* the consumer's command left with the consumer */
    cdsh_error err = {0};
    assert_int_equal(cdsh_plugin_load(h, &CONSUMER, NULL, &c, &err), 0); /* re-declare works */
    assert_int_equal(cdsh_commands_count(cdsh_host_commands(h)), 1);
}

static void *UNDECLARED_SEEN = (void *)1;

static int apply_undeclared(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config, (void)err;
    UNDECLARED_SEEN = cdsh_ctx_get(ctx, "greeter");
    return 0;
}

static void undeclared_services_are_not_handed_out(void **state)
{
    cdsh_host *h = *state;
    static const cdsh_plugin_def sneaky = {.name = "sneaky", .apply = apply_undeclared};
    cdsh_plugin_load(h, &PROVIDER, NULL, NULL, NULL);
    assert_int_equal(cdsh_plugin_load(h, &sneaky, NULL, NULL, NULL), 0);
    assert_null(UNDECLARED_SEEN);
    assert_ptr_equal(cdsh_host_service(h, "greeter"), &GREETER); /* front ends may look */
}

static void a_service_name_is_provided_once(void **state)
{
    cdsh_host *h = *state;
    static const cdsh_plugin_def second = {.name = "second", .apply = apply_provider};
    cdsh_error err = {0};
    cdsh_plugin_load(h, &PROVIDER, NULL, NULL, NULL);
    assert_int_equal(cdsh_plugin_load(h, &second, NULL, NULL, &err), CDSH_EEXIST);
    assert_string_equal(err.code, "SERVICE_EXISTS");
    assert_string_equal(err.message, "plugin \"second\" failed to apply: service \"greeter\" is "
                                     "already provided by plugin \"provider\"");
}

static int OPTIONAL_SEEN[4];
static int OPTIONAL_APPLIES;

static int apply_optional(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config, (void)err;
    OPTIONAL_SEEN[OPTIONAL_APPLIES++ % 4] = cdsh_ctx_get(ctx, "greeter") != NULL;
    return 0;
}

static void optional_service_changes_reload_the_plugin(void **state)
{
    cdsh_host *h = *state;
    static const char *const OPT[] = {"greeter", NULL};
    static const cdsh_plugin_def def = {.name = "opt", .optional = OPT, .apply = apply_optional};
    OPTIONAL_APPLIES = 0;
    cdsh_plugin *o = NULL, *p = NULL;
    cdsh_plugin_load(h, &def, NULL, &o, NULL);
    assert_int_equal(cdsh_plugin_state_get(o), CDSH_PLUGIN_ACTIVE); /* not held pending */
    cdsh_plugin_load(h, &PROVIDER, NULL, &p, NULL);
    cdsh_plugin_unload(p);
    assert_int_equal(OPTIONAL_APPLIES, 3);
    assert_int_equal(OPTIONAL_SEEN[0], 0);
    assert_int_equal(OPTIONAL_SEEN[1], 1);
    assert_int_equal(OPTIONAL_SEEN[2], 0);
    assert_int_equal(cdsh_plugin_state_get(o), CDSH_PLUGIN_ACTIVE);
}

static int apply_provide_then_fail(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    cdsh_ctx_provide(ctx, "greeter", &GREETER, NULL);
    return cdsh_error_set(err, CDSH_EINVAL, "NOPE", "no");
}

static void failed_provider_leaves_dependents_pending(void **state)
{
    cdsh_host *h = *state;
    static const cdsh_plugin_def bad = {.name = "badprov", .apply = apply_provide_then_fail};
    cdsh_plugin *c = NULL;
    cdsh_plugin_load(h, &CONSUMER, NULL, &c, NULL);
    assert_int_equal(cdsh_plugin_load(h, &bad, NULL, NULL, NULL), CDSH_EINVAL);
    assert_int_equal(cdsh_plugin_state_get(c), CDSH_PLUGIN_PENDING);
    assert_null(cdsh_host_service(h, "greeter"));
    assert_string_equal(LOG, "");
}

/* ---- scoped contexts and child plugins ------------------------------------ */

static cdsh_plugin_ctx *ROOT_CTX;

static int apply_keep_ctx(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config, (void)err;
    ROOT_CTX = ctx;
    return 0;
}

static void scoped_context_registers_in_the_agent_layer(void **state)
{
    cdsh_host *h = *state;
    static const cdsh_plugin_def def = {.name = "agents", .apply = apply_keep_ctx};
    cdsh_plugin *p = NULL;
    cdsh_plugin_load(h, &def, NULL, &p, NULL);
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    cdsh_plugin_ctx *actx = cdsh_ctx_scoped_new(ROOT_CTX, a, NULL);
    assert_non_null(actx);
    assert_ptr_equal(cdsh_ctx_scope(actx), a);
    assert_null(cdsh_ctx_scope(ROOT_CTX));
    cdsh_command_def c = {.name = "mine", .description = "d", .handler = ok_handler, .arg = "x"};
    assert_int_equal(cdsh_ctx_register_command(actx, &c, NULL), 0);
    cdsh_commands *cmds = cdsh_host_commands(h);
    json_t *in_a = cdsh_commands_find(cmds, a, "mine"),
           *global = cdsh_commands_find(cmds, NULL, "mine");
    assert_non_null(in_a);
    assert_null(global);
    json_decref(in_a);
    cdsh_ctx_scoped_free(actx); /* the agent ends */
    assert_int_equal(cdsh_commands_count(cmds), 0);
    assert_int_equal(cdsh_plugin_effect_count(p), 0);
    assert_int_equal(cdsh_plugin_state_get(p), CDSH_PLUGIN_ACTIVE);
    cdsh_scope_unref(a);
}

static void plugin_unload_disposes_scoped_contexts_too(void **state)
{
    cdsh_host *h = *state;
    static const cdsh_plugin_def def = {.name = "agents", .apply = apply_keep_ctx};
    cdsh_plugin *p = NULL;
    cdsh_plugin_load(h, &def, NULL, &p, NULL);
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    cdsh_plugin_ctx *actx = cdsh_ctx_scoped_new(ROOT_CTX, a, NULL);
    cdsh_skill_def s = {.name = "agent-skill", .description = "d", .content = "c"};
    assert_int_equal(cdsh_ctx_register_skill(actx, &s, NULL), 0);
    assert_int_equal(cdsh_ctx_on(actx, "*", noop_listener, NULL, NULL), 0);
    cdsh_plugin_unload(p);
    assert_int_equal(cdsh_skills_count(cdsh_host_skills(h)), 0);
    assert_int_equal(cdsh_events_count(cdsh_host_events(h)), 0);
    cdsh_error err = {0};
    assert_int_equal(cdsh_ctx_register_skill(actx, &s, &err), CDSH_ECLOSED);
    assert_string_equal(err.code, "INACTIVE_EFFECT");
    cdsh_ctx_scoped_free(actx); /* still safe after the plugin went away */
    assert_null(cdsh_ctx_scoped_new(ROOT_CTX, a, &err));
    assert_string_equal(err.code, "INACTIVE_EFFECT");
    cdsh_scope_unref(a);
}

static void skill_source_defaults_to_the_plugin_name(void **state)
{
    cdsh_host *h = *state;
    cdsh_plugin_load(h, &BETA, NULL, NULL, NULL);
    json_t *sk = cdsh_skills_info_dup(cdsh_host_skills(h), NULL, "beta-cmd");
    assert_string_equal(json_string_value(json_object_get(sk, "source")), "beta");
    json_decref(sk);
}

static int apply_parent(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    return cdsh_ctx_plugin(ctx, &BETA, NULL, NULL, err);
}

static void child_plugin_unloads_with_its_parent(void **state)
{
    cdsh_host *h = *state;
    static const cdsh_plugin_def parent = {.name = "parent", .apply = apply_parent};
    cdsh_plugin *p = NULL;
    assert_int_equal(cdsh_plugin_load(h, &parent, NULL, &p, NULL), 0);
    cdsh_plugin *child = cdsh_host_plugin_find(h, "beta");
    assert_non_null(child);
    assert_int_equal(cdsh_plugin_state_get(child), CDSH_PLUGIN_ACTIVE);
    cdsh_plugin_unload(p);
    assert_int_equal(cdsh_plugin_state_get(child), CDSH_PLUGIN_DISPOSED);
    assert_int_equal(live_registrations(h), 0);
}

static int failing_start(void *arg, cdsh_disposer_t *out, cdsh_error *err)
{
    (void)arg, (void)out;
    return cdsh_error_set(err, CDSH_EIO, "NO_THREAD", "cannot start");
}

static int good_start(void *arg, cdsh_disposer_t *out, cdsh_error *err)
{
    (void)err;
    logf_("start %s", (const char *)arg);
    *out = (cdsh_disposer_t){log_disposer, arg};
    return 0;
}

static void effect_records_only_what_started(void **state)
{
    cdsh_host *h = *state;
    static const cdsh_plugin_def def = {.name = "fx", .apply = apply_keep_ctx};
    cdsh_plugin *p = NULL;
    cdsh_plugin_load(h, &def, NULL, &p, NULL);
    cdsh_error err = {0};
    assert_int_equal(cdsh_ctx_effect(ROOT_CTX, failing_start, NULL, &err), CDSH_EIO);
    assert_int_equal(cdsh_plugin_effect_count(p), 0);
    assert_int_equal(cdsh_ctx_effect(ROOT_CTX, good_start, "timer", NULL), 0);
    assert_int_equal(cdsh_plugin_effect_count(p), 1);
    cdsh_plugin_unload(p);
    assert_string_equal(LOG, "start timer,undo timer");
}

static int apply_unload_self(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    cdsh_command_def c = {.name = "early", .description = "d", .handler = ok_handler, .arg = "x"};
    cdsh_ctx_register_command(ctx, &c, NULL);
    cdsh_plugin_unload(cdsh_ctx_plugin_get(ctx));
    c.name = "late";
    return cdsh_ctx_register_command(ctx, &c, err); /* refused: INACTIVE_EFFECT */
}

static void plugin_unloaded_during_apply_ends_disposed_not_failed(void **state)
{
    cdsh_host *h = *state;
    static const cdsh_plugin_def def = {.name = "selfish", .apply = apply_unload_self};
    cdsh_plugin *p = NULL;
    assert_int_equal(cdsh_plugin_load(h, &def, NULL, &p, NULL), 0);
    assert_int_equal(cdsh_plugin_state_get(p), CDSH_PLUGIN_DISPOSED);
    assert_null(cdsh_plugin_error(p));
    assert_int_equal(cdsh_commands_count(cdsh_host_commands(h)), 0);
}

typedef struct racer {
    cdsh_plugin_ctx *ctx;
    int ok, refused;
} racer;

static void *register_many(void *arg)
{
    racer *r = arg;
    for (int i = 0; i < 200; i++) {
        cdsh_error err = {0};
        char name[32];
        snprintf(name, sizeof name, "c%d", i);
        cdsh_command_def c = {.name = name, .description = "d", .handler = ok_handler, .arg = "x"};
        int rc = cdsh_ctx_register_command(r->ctx, &c, &err);
        if (rc == 0)
            r->ok++;
        else if (rc == CDSH_ECLOSED)
            r->refused++;
    }
    return NULL;
}

static void registrations_racing_an_unload_leave_nothing_behind(void **state)
{
    cdsh_host *h = *state;
    static const cdsh_plugin_def def = {.name = "racy", .apply = apply_keep_ctx};
    cdsh_plugin *p = NULL;
    cdsh_plugin_load(h, &def, NULL, &p, NULL);
    racer r = {.ctx = ROOT_CTX};
    pthread_t t;
    pthread_create(&t, NULL, register_many, &r);
    cdsh_plugin_unload(p); /* while the thread registers */
    pthread_join(t, NULL);
    assert_int_equal(r.ok + r.refused, 200);
    assert_int_equal(cdsh_commands_count(cdsh_host_commands(h)), 0);
    assert_int_equal(cdsh_plugin_effect_count(p), 0);
}

/* ---- hosts and profiles ----------------------------------------------------- */

static void two_hosts_in_one_process_are_independent(void **state)
{
    cdsh_host *h1 = *state;
    cdsh_host *h2 = cdsh_host_new();
    assert_int_equal(cdsh_plugin_load(h1, &ALPHA, NULL, NULL, NULL), 0);
    assert_int_equal(cdsh_plugin_load(h2, &ALPHA, NULL, NULL, NULL), 0); /* same name, other host */
    assert_int_equal(cdsh_plugin_load(h2, &PROVIDER, NULL, NULL, NULL), 0);
    assert_null(cdsh_host_service(h1, "greeter"));
    assert_int_equal(live_registrations(h1), live_registrations(h2));
    cdsh_host_free(h2);
    assert_non_null(cdsh_host_plugin_find(h1, "alpha"));
}

static void host_free_unloads_plugins_in_reverse_load_order(void **state)
{
    (void)state;
    cdsh_host *h = cdsh_host_new();
    cdsh_plugin_load(h, &PROVIDER, NULL, NULL, NULL);
    cdsh_plugin_load(h, &CONSUMER, NULL, NULL, NULL);
    cdsh_plugin_load(h, &BETA, NULL, NULL, NULL);
    LOG[0] = '\0';
    cdsh_host_free(h);
    assert_string_equal(LOG, "undo last,undo first"); /* beta's effects; nothing restarted */
}

static void profile_decides_enabled_plugins_and_their_config(void **state)
{
    cdsh_host *h = *state;
    char *home = cdsh_test_home_new();
    cdsh_profile *prof = NULL;
    cdsh_profile_load(home, NULL, &prof, NULL);
    cdsh_profile_set_enabled(prof, "alpha", true);
    cdsh_profile_set_config(prof, "alpha", "depth", json_integer(5), NULL);
    cdsh_profile_set_enabled(prof, "beta", false);
    static const cdsh_plugin_def on_by_default = {
        .name = "gamma", .enabled_by_default = true, .apply = apply_everything};
    static const cdsh_plugin_def off_by_default = {.name = "delta", .apply = apply_everything};
    const cdsh_plugin_def *defs[] = {&ALPHA, &BETA, &on_by_default, &off_by_default, NULL};
    assert_true(cdsh_host_plugin_enabled(&ALPHA, prof));
    assert_false(cdsh_host_plugin_enabled(&BETA, prof));
    assert_true(cdsh_host_plugin_enabled(&on_by_default, NULL));
    assert_int_equal(cdsh_host_load_plugins(h, defs, prof, NULL), 0);
    assert_string_equal(LOG, "apply alpha depth=5,apply gamma depth=0");
    assert_null(cdsh_host_plugin_find(h, "beta"));
    assert_null(cdsh_host_plugin_find(h, "delta"));
    cdsh_profile_free(prof);
    cdsh_test_home_free(home);
}

static void profile_load_continues_past_a_failing_plugin(void **state)
{
    cdsh_host *h = *state;
    static const cdsh_plugin_def broken = {
        .name = "broken", .enabled_by_default = true, .apply = apply_then_fail};
    static const cdsh_plugin_def gamma = {
        .name = "gamma", .enabled_by_default = true, .apply = apply_everything};
    const cdsh_plugin_def *defs[] = {&broken, &gamma, NULL};
    cdsh_error err = {0};
    assert_int_equal(cdsh_host_load_plugins(h, defs, NULL, &err), CDSH_EIO);
    assert_string_equal(err.message, "plugin \"broken\" failed to apply: engine binary not found");
    assert_int_equal(cdsh_plugin_state_get(cdsh_host_plugin_find(h, "gamma")), CDSH_PLUGIN_ACTIVE);
}

/* ---- load order and hooks by kind ----------------------------------------- */

static int apply_log_name(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config, (void)err;
    size_t n = strlen(LOG);
    snprintf(LOG + n, sizeof LOG - n, "%s%s", n ? "," : "", cdsh_ctx_name(ctx));
    return 0;
}

static void after_orders_the_load_and_star_means_last(void **state)
{
    cdsh_host *h = *state;
    static const char *const after_b[] = {"b", NULL};
    static const char *const star[] = {"*", NULL};
    static const char *const after_missing[] = {"not-in-the-table", NULL};
    static const cdsh_plugin_def wrap = {
        .name = "wrap", .enabled_by_default = true, .apply = apply_log_name, .after = star};
    static const cdsh_plugin_def a = {
        .name = "a", .enabled_by_default = true, .apply = apply_log_name, .after = after_b};
    static const cdsh_plugin_def b = {
        .name = "b", .enabled_by_default = true, .apply = apply_log_name};
    static const cdsh_plugin_def c = {
        .name = "c", .enabled_by_default = true, .apply = apply_log_name, .after = after_missing};
    const cdsh_plugin_def *defs[] = {&wrap, &a, &b, &c, NULL};
    LOG[0] = '\0';
    assert_int_equal(cdsh_host_load_plugins(h, defs, NULL, NULL), 0);
    assert_string_equal(LOG, "b,a,c,wrap");
    /* A cycle falls back to table order instead of loading nothing. */
    cdsh_host *h2 = cdsh_host_new();
    static const char *const after_y[] = {"y", NULL};
    static const char *const after_x[] = {"x", NULL};
    static const cdsh_plugin_def x = {
        .name = "x", .enabled_by_default = true, .apply = apply_log_name, .after = after_y};
    static const cdsh_plugin_def y = {
        .name = "y", .enabled_by_default = true, .apply = apply_log_name, .after = after_x};
    const cdsh_plugin_def *cyc[] = {&x, &y, NULL};
    LOG[0] = '\0';
    assert_int_equal(cdsh_host_load_plugins(h2, cyc, NULL, NULL), 0);
    assert_string_equal(LOG, "x,y");
    cdsh_host_free(h2);
}

static const int HOOK_ONE = 1, HOOK_TWO = 2;

static int apply_hooks(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    int rc = cdsh_ctx_hook(ctx, "test/kind", &HOOK_ONE, err);
    if (rc == 0)
        rc = cdsh_ctx_hook(ctx, "test/other", &HOOK_TWO, err);
    return rc;
}

static void hooks_are_listed_by_kind_and_go_with_their_plugin(void **state)
{
    cdsh_host *h = *state;
    static const cdsh_plugin_def hooker = {.name = "hooker", .apply = apply_hooks};
    cdsh_plugin *p = NULL;
    assert_int_equal(cdsh_plugin_load(h, &hooker, NULL, &p, NULL), 0);
    const void **list = cdsh_host_hooks_dup(h, "test/kind");
    assert_ptr_equal(list[0], &HOOK_ONE);
    assert_null(list[1]);
    free(list);
    list = cdsh_host_hooks_dup(h, "nobody/registers");
    assert_null(list[0]);
    free(list);
    cdsh_error err = {0};
    /* The same pointer twice under one kind is refused. */
    static const cdsh_plugin_def twice = {.name = "twice", .apply = apply_hooks};
    assert_int_equal(cdsh_plugin_load(h, &twice, NULL, NULL, &err), CDSH_EEXIST);
    assert_string_equal(err.code, "HOOK_EXISTS");
    list = cdsh_host_hooks_dup(h, "test/kind");
    assert_ptr_equal(list[0], &HOOK_ONE);
    assert_null(list[1]); /* the failed plugin's registrations were undone */
    free(list);
    list = cdsh_host_hooks_dup(h, "test/other");
    assert_ptr_equal(list[0], &HOOK_TWO);
    assert_null(list[1]);
    free(list);
    cdsh_plugin_unload(p);
    list = cdsh_host_hooks_dup(h, "test/kind");
    assert_null(list[0]);
    free(list);
}

static void state_names_are_lowercase_words(void **state)
{
    (void)state;
    assert_string_equal(cdsh_plugin_state_name(CDSH_PLUGIN_PENDING), "pending");
    assert_string_equal(cdsh_plugin_state_name(CDSH_PLUGIN_LOADING), "loading");
    assert_string_equal(cdsh_plugin_state_name(CDSH_PLUGIN_ACTIVE), "active");
    assert_string_equal(cdsh_plugin_state_name(CDSH_PLUGIN_UNLOADING), "unloading");
    assert_string_equal(cdsh_plugin_state_name(CDSH_PLUGIN_DISPOSED), "disposed");
    assert_string_equal(cdsh_plugin_state_name(CDSH_PLUGIN_FAILED), "failed");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(load_applies_with_filled_defaults),
        T(given_config_reaches_apply),
        T(invalid_config_fails_before_apply),
        T(failed_plugin_can_be_loaded_again),
        T(unsupported_schema_fails_the_plugin),
        T(descriptor_needs_name_and_apply),
        T(same_name_cannot_load_twice),
        T(unload_runs_disposers_in_reverse_order),
        T(reload_leaves_nothing_behind),
        T(failing_apply_is_rolled_back_and_isolated),
        T(lifecycle_events_report_states_and_failures),
        T(effects_are_refused_while_unloading_and_after),
        T(required_service_holds_plugin_pending_until_provided),
        T(provider_unload_sends_dependent_back_to_pending_and_back),
        T(registrations_through_a_service_belong_to_the_caller),
        T(undeclared_services_are_not_handed_out),
        T(a_service_name_is_provided_once),
        T(optional_service_changes_reload_the_plugin),
        T(failed_provider_leaves_dependents_pending),
        T(scoped_context_registers_in_the_agent_layer),
        T(plugin_unload_disposes_scoped_contexts_too),
        T(skill_source_defaults_to_the_plugin_name),
        T(child_plugin_unloads_with_its_parent),
        T(effect_records_only_what_started),
        T(plugin_unloaded_during_apply_ends_disposed_not_failed),
        T(registrations_racing_an_unload_leave_nothing_behind),
        T(two_hosts_in_one_process_are_independent),
        cmocka_unit_test(host_free_unloads_plugins_in_reverse_load_order),
        T(profile_decides_enabled_plugins_and_their_config),
        T(profile_load_continues_past_a_failing_plugin),
        cmocka_unit_test(state_names_are_lowercase_words),
        T(after_orders_the_load_and_star_means_last),
        T(hooks_are_listed_by_kind_and_go_with_their_plugin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
