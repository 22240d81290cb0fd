/* jobs_tools.c — the "jobs" plugin: the control surface of background jobs
 * (jobs.c). Three kind-independent tools for the model — job_output,
 * job_list, job_kill, after DSH's task_output / task_list / task_kill —
 * and the RPC channel `/jobs` for the person's page (list, output, kill,
 * which see every job). It formats; the service decides. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "host/dispatch.h"
#include "host/host.h"
#include "host/jobs.h"
#include "host/prompt.h"

typedef struct jobs_surface {
    cdsh_host *host;
    cdsh_jobs *jobs;
    int64_t max_wait_ms;
} jobs_surface;

/* The owner a call stands for: its agent's scope id, NULL without one. */
static const char *caller_of(const cdsh_tool_exec *exec)
{
    return exec->agent ? cdsh_scope_id(exec->agent) : NULL;
}

static int fail_with(const cdsh_tool_exec *exec, const cdsh_error *e)
{
    return cdsh_dispatch_fail(exec, "ToolError", e->code[0] ? e->code : "JOB_ERROR", "%s",
                              e->message);
}

/* `[status: x]` or `[status: x — detail]`, appended to buf. */
static void status_line(char **buf, const json_t *v)
{
    const char *detail = json_string_value(json_object_get(v, "detail"));
    char *s = NULL;
    if (asprintf(&s, "%s[status: %s%s%s]", *buf, json_string_value(json_object_get(v, "status")),
                 detail ? " — " : "", detail ? detail : "") >= 0) {
        free(*buf);
        *buf = s;
    }
}

/* ---- job_output ------------------------------------------------------------ */

static int output_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    jobs_surface *js = ud;
    const char *id = json_string_value(json_object_get(exec->args, "job_id"));
    bool wait = json_is_true(json_object_get(exec->args, "wait"));
    const json_t *t = json_object_get(exec->args, "timeout_ms");
    int64_t wait_ms = 0;
    if (wait) {
        wait_ms = t ? (int64_t)json_integer_value(t) : js->max_wait_ms;
        if (wait_ms <= 0 || wait_ms > js->max_wait_ms)
            wait_ms = js->max_wait_ms; /* capped by config; a timeout is not an error */
    }
    cdsh_error e = {0};
    if (cdsh_jobs_read(js->jobs, caller_of(exec), id, wait_ms, exec->cancel, value, &e) < 0)
        return fail_with(exec, &e);
    return 0;
}

static json_t *output_render(void *ud, const json_t *args, const json_t *v, cdsh_error *err)
{
    (void)ud;
    (void)args;
    (void)err;
    char *buf = strdup("");
    json_int_t dropped = json_integer_value(json_object_get(v, "dropped"));
    const char *out = json_string_value(json_object_get(v, "output"));
    const char *status = json_string_value(json_object_get(v, "status"));
    char *s = NULL;
    if (dropped > 0 &&
        asprintf(&s,
                 "[… %lld bytes of earlier output dropped: the job keeps its last %lld "
                 "bytes]\n",
                 (long long)dropped,
                 (long long)json_integer_value(json_object_get(v, "outputLimit"))) >= 0) {
        free(buf);
        buf = s;
    }
    if (out && *out &&
        asprintf(&s, "%s%s%s", buf, out, out[strlen(out) - 1] == '\n' ? "" : "\n") >= 0) {
        free(buf);
        buf = s;
    }
    double done = json_real_value(json_object_get(v, "done"));
    double total = json_real_value(json_object_get(v, "total"));
    const char *msg = json_string_value(json_object_get(v, "message"));
    bool live = status && (!strcmp(status, "running") || !strcmp(status, "stopping"));
    if (live && (total > 0 || msg) &&
        asprintf(&s, "%s[progress: %s%.0f/%.0f%s%s]\n", buf, "", done, total, msg ? " — " : "",
                 msg ? msg : "") >= 0) {
        free(buf);
        buf = s;
    }
    status_line(&buf, v);
    json_t *content = json_pack("[{s:s, s:s}]", "type", "text", "text", buf ? buf : "");
    free(buf);
    return content;
}

/* ---- job_list ------------------------------------------------------------- */

static int list_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    jobs_surface *js = ud;
    *value = cdsh_jobs_list(js->jobs, caller_of(exec));
    return *value ? 0 : cdsh_dispatch_fail(exec, NULL, NULL, "out of memory");
}

static json_t *list_render(void *ud, const json_t *args, const json_t *v, cdsh_error *err)
{
    (void)ud;
    (void)args;
    (void)err;
    if (json_array_size(v) == 0)
        return json_pack("[{s:s, s:s}]", "type", "text", "text", "(no background jobs)");
    char *buf = strdup("");
    size_t i;
    json_t *it;
    json_array_foreach(v, i, it) {
        char *s = NULL;
        if (asprintf(&s, "%s%s%s [%s] %s — %s", buf, i ? "\n" : "",
                     json_string_value(json_object_get(it, "id")),
                     json_string_value(json_object_get(it, "kind")),
                     json_string_value(json_object_get(it, "status")),
                     json_string_value(json_object_get(it, "label"))) >= 0) {
            free(buf);
            buf = s;
        }
    }
    json_t *content = json_pack("[{s:s, s:s}]", "type", "text", "text", buf ? buf : "");
    free(buf);
    return content;
}

/* ---- job_kill -------------------------------------------------------------- */

#define KILL_WAIT_MS 2000 /* how long job_kill waits for the job to stop */

static int kill_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    jobs_surface *js = ud;
    const char *id = json_string_value(json_object_get(exec->args, "job_id"));
    const char *reason = json_string_value(json_object_get(exec->args, "reason"));
    cdsh_error e = {0};
    json_t *before = cdsh_jobs_get(js->jobs, caller_of(exec), false, id, &e);
    if (!before)
        return fail_with(exec, &e);
    const char *was = json_string_value(json_object_get(before, "status"));
    bool ended = strcmp(was, "running") != 0 && strcmp(was, "stopping") != 0;
    json_decref(before);
    cdsh_job_status st;
    if (cdsh_jobs_kill(js->jobs, caller_of(exec), false, id, reason, KILL_WAIT_MS, &st, &e) < 0)
        return fail_with(exec, &e);
    *value = json_pack("{s:s, s:s, s:b}", "id", id, "status", cdsh_job_status_name(st),
                       "alreadyEnded", ended);
    return 0;
}

static json_t *kill_render(void *ud, const json_t *args, const json_t *v, cdsh_error *err)
{
    (void)ud;
    (void)args;
    (void)err;
    const char *id = json_string_value(json_object_get(v, "id"));
    const char *st = json_string_value(json_object_get(v, "status"));
    char *s = NULL;
    int n;
    if (json_is_true(json_object_get(v, "alreadyEnded")))
        n = asprintf(&s, "job %s had already ended [status: %s]", id, st);
    else if (!strcmp(st, "stopping"))
        n = asprintf(&s, "kill requested for job %s; it is still stopping [status: stopping]", id);
    else
        n = asprintf(&s, "killed job %s [status: %s]", id, st);
    json_t *content = json_pack("[{s:s, s:s}]", "type", "text", "text", n >= 0 ? s : "");
    free(s);
    return content;
}

/* ---- the /jobs channel ----------------------------------------------------- */

static int jobs_rpc(void *arg, const char *endpoint, const json_t *payload, cdsh_cancel *cancel,
                    json_t **result, cdsh_error *err)
{
    (void)cancel;
    (void)err;
    jobs_surface *js = arg;
    const char *id = json_string_value(json_object_get(payload, "id"));
    cdsh_error e = {0};
    if (strcmp(endpoint, "list") == 0) {
        *result = cdsh_rpc_ok_new(json_pack("{s:o}", "jobs", cdsh_jobs_list_all(js->jobs)));
        return 0;
    }
    if (strcmp(endpoint, "output") == 0 || strcmp(endpoint, "kill") == 0) {
        if (!id) {
            *result =
                cdsh_rpc_error_new(CDSH_RPC_BAD_REQUEST, "payload needs an \"id\" string", NULL);
            return 0;
        }
        json_t *v = NULL;
        int rc;
        if (endpoint[0] == 'o') {
            json_int_t max = json_integer_value(json_object_get(payload, "max"));
            rc = cdsh_jobs_tail(js->jobs, id, max > 0 ? (size_t)max : 16384, &v, &e);
        } else {
            cdsh_job_status st;
            rc = cdsh_jobs_kill(js->jobs, NULL, true, id,
                                json_string_value(json_object_get(payload, "reason")), KILL_WAIT_MS,
                                &st, &e);
            if (rc == 0)
                v = cdsh_jobs_get(js->jobs, NULL, true, id, &e);
        }
        *result = rc == 0 && v ? cdsh_rpc_ok_new(v)
                               : cdsh_rpc_error_new(CDSH_RPC_NOT_FOUND, e.message, NULL);
        return 0;
    }
    if (strcmp(endpoint, "starters") == 0 || strcmp(endpoint, "start") == 0) {
        const void **hooks = cdsh_host_hooks_dup(js->host, CDSH_JOB_STARTERS);
        json_t *list = json_array();
        const cdsh_job_starter *pick = NULL;
        const char *kind = json_string_value(json_object_get(payload, "kind"));
        for (size_t i = 0; hooks && hooks[i]; i++) {
            const cdsh_job_starter *st = hooks[i];
            json_array_append_new(list,
                                  json_pack("{s:s, s:s}", "kind", st->kind, "label", st->label));
            if (kind && strcmp(kind, st->kind) == 0)
                pick = st;
        }
        free(hooks);
        if (strcmp(endpoint, "starters") == 0) {
            *result = cdsh_rpc_ok_new(json_pack("{s:o}", "starters", list));
            return 0;
        }
        json_decref(list);
        if (!pick) {
            char m[160];
            snprintf(m, sizeof m, "no job starter of kind \"%.60s\" (see starters)",
                     kind ? kind : "");
            *result = cdsh_rpc_error_new(CDSH_RPC_NOT_FOUND, m, NULL);
            return 0;
        }
        char *nid = NULL;
        if (pick->start(js->host, json_object_get(payload, "args"), &nid, &e) < 0) {
            *result = cdsh_rpc_error_new(e.rc == CDSH_EBUSY ? "busy" : CDSH_RPC_BAD_REQUEST,
                                         e.message, json_pack("{s:s}", "code", e.code));
            return 0;
        }
        *result = cdsh_rpc_ok_new(json_pack("{s:s}", "id", nid));
        free(nid);
        return 0;
    }
    char msg[160];
    snprintf(msg, sizeof msg,
             "unknown endpoint \"%s\" of /jobs (list, output, kill, starters, start)", endpoint);
    *result = cdsh_rpc_error_new(CDSH_RPC_NOT_FOUND, msg, NULL);
    return 0;
}

/* ---- completion notices ------------------------------------------------------- */

char *cdsh_jobs_notice_text(const json_t *notices)
{
    if (!json_array_size(notices))
        return NULL;
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    size_t i;
    const json_t *n;
    json_array_foreach(notices, i, n) {
        const char *id = json_string_value(json_object_get(n, "id"));
        const char *detail = json_string_value(json_object_get(n, "detail"));
        json_int_t unread = json_integer_value(json_object_get(n, "unreadBytes"));
        cdsh_strbuf_appendf(&sb, "%sbackground job %s %s%s%s%s — %s; ", i ? "\n" : "", id,
                            json_string_value(json_object_get(n, "status")),
                            detail ? " (" : "", detail ? detail : "", detail ? ")" : "",
                            json_string_value(json_object_get(n, "label")));
        if (unread > 0)
            cdsh_strbuf_appendf(&sb, "%lld bytes of output not read yet: ", (long long)unread);
        else
            cdsh_strbuf_append_str(&sb, "no output left to read: ");
        cdsh_strbuf_appendf(&sb, "call job_output with job_id \"%s\" to collect it.", id);
    }
    return cdsh_strbuf_take(&sb, NULL);
}

/* The turn's runtime context "jobs": the session's jobs that ended since it
 * last heard of them (each exactly once). The agent loop asks once per turn. */
static char *notices_context(void *ud, const cdsh_scope *scope, const char *session_id,
                             long long turn)
{
    (void)turn;
    jobs_surface *js = ud;
    const char *owner = session_id && *session_id ? session_id
                        : scope                   ? cdsh_scope_id(scope)
                                                  : NULL;
    if (!owner)
        return NULL;
    json_t *n = cdsh_jobs_take_notices(js->jobs, owner);
    char *text = cdsh_jobs_notice_text(n);
    json_decref(n);
    return text;
}

/* DSH's prompt guidance for background work, in the system prompt of a
 * session only while it has jobs (so it costs nothing otherwise). */
#define GUIDANCE                                                                                   \
    "Background jobs: you have work running or finished in the background (job_list shows "   \
    "it). Keep the job ids. Do not busy-poll or start the same job twice: do other useful "     \
    "work, or wait explicitly with job_output (wait: true). Collect the results that matter "  \
    "with job_output before your final answer, and stop with job_kill what no longer matters. " \
    "When a job ends you are told at the start of your next turn."

static char *guidance(void *ud, const cdsh_scope *scope)
{
    jobs_surface *js = ud;
    const char *owner = scope ? cdsh_scope_id(scope) : NULL;
    json_t *mine = owner ? cdsh_jobs_list(js->jobs, owner) : NULL;
    bool any = json_array_size(mine) > 0;
    json_decref(mine);
    return any ? strdup(GUIDANCE) : NULL;
}

/* A session is over (host/events.h): the jobs it owns go with it. */
static void on_session_end(void *arg, const char *name, const cdsh_scope *scope,
                           const json_t *payload)
{
    (void)name;
    (void)scope;
    jobs_surface *js = arg;
    cdsh_jobs_dispose_owner(js->jobs, json_string_value(json_object_get(payload, "id")));
}

/* ---- the plugin -------------------------------------------------------------- */

static int reg(cdsh_plugin_ctx *ctx, jobs_surface *js, const char *name, const char *desc,
               const char *params, const char *value_type, cdsh_tool_body_fn body,
               cdsh_tool_render_fn render, bool parallel, cdsh_error *err)
{
    json_t *p = json_loads(params, 0, NULL);
    json_t *o = json_pack("{s:s}", "type", value_type);
    cdsh_tool_def def = {
        .name = name,
        .description = desc,
        .parameters = p,
        .output_schema = o,
        .execute = body,
        .render = render,
        .is_concurrency_safe = parallel ? cdsh_tools_always_safe : NULL,
        .ud = js,
    };
    int rc = p && o ? cdsh_ctx_register_tool(ctx, &def, err)
                    : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    json_decref(p);
    json_decref(o);
    return rc;
}

static int apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    cdsh_jobs *jobs = cdsh_host_jobs(cdsh_ctx_host(ctx));
    jobs_surface *js = calloc(1, sizeof *js);
    if (!js)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    js->jobs = jobs;
    js->host = cdsh_ctx_host(ctx);
    js->max_wait_ms = json_integer_value(json_object_get(config, "maxWaitMs"));
    int rc = cdsh_ctx_adopt(ctx, (cdsh_disposer_t){free, js}, err); /* freed last */
    if (rc)
        return rc;
    cdsh_jobs_limits lim = {
        .max_per_owner = (unsigned)json_integer_value(json_object_get(config, "maxPerOwner")),
        .max_running = (unsigned)json_integer_value(json_object_get(config, "maxRunning")),
        .output_limit = (size_t)json_integer_value(json_object_get(config, "outputLimitBytes")),
    };
    cdsh_jobs_set_limits(jobs, &lim);
    cdsh_disposer_t surface = {0};
    if ((rc = cdsh_jobs_attach_surface(jobs, "jobs", &surface, err)) < 0 ||
        (rc = cdsh_ctx_adopt(ctx, surface, err)) < 0)
        return rc;
    if ((rc = reg(ctx, js, "job_output",
                  "Read a background job's output since your previous read, followed by its "
                  "[status: ...]. Pass wait: true to block until the job ends (at most "
                  "timeout_ms); a wait that times out reports the job still running and does "
                  "not stop it.",
                  "{\"type\":\"object\",\"properties\":{"
                  "\"job_id\":{\"type\":\"string\",\"description\":\"the id job_list shows, "
                  "e.g. xiangqi-analyze-1\"},"
                  "\"wait\":{\"type\":\"boolean\",\"description\":\"block until the job "
                  "ends\"},"
                  "\"timeout_ms\":{\"type\":\"integer\",\"description\":\"longest wait "
                  "(capped by the host)\"}},"
                  "\"required\":[\"job_id\"],\"additionalProperties\":false}",
                  "object", output_body, output_render, false, err)) < 0 ||
        (rc = reg(ctx, js, "job_list",
                  "List your background jobs, one per line: <id> [<kind>] <status> — <label>.",
                  "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}", "array",
                  list_body, list_render, true, err)) < 0 ||
        (rc = reg(ctx, js, "job_kill",
                  "Stop a background job that no longer matters. A job that has already "
                  "ended keeps its status.",
                  "{\"type\":\"object\",\"properties\":{"
                  "\"job_id\":{\"type\":\"string\"},"
                  "\"reason\":{\"type\":\"string\",\"description\":\"why (logged, passed to "
                  "the job)\"}},"
                  "\"required\":[\"job_id\"],\"additionalProperties\":false}",
                  "object", kill_body, kill_render, false, err)) < 0)
        return rc;
    cdsh_prompt_provider_def notices = {.name = "jobs", .context = notices_context, .ud = js};
    cdsh_prompt_segment_def rules = {.id = "jobs:guidance", .order = 150, .render = guidance,
                                     .ud = js};
    if ((rc = cdsh_prompt_ctx_provide(ctx, &notices, err)) < 0 ||
        (rc = cdsh_prompt_ctx_register(ctx, &rules, err)) < 0 ||
        (rc = cdsh_ctx_on(ctx, CDSH_EVENT_SESSION_END, on_session_end, js, err)) < 0)
        return rc;
    return cdsh_ctx_rpc_handle(ctx, "/jobs", jobs_rpc, js, err);
}

const cdsh_plugin_def cdsh_jobs_plugin = {
    .name = "jobs",
    .description = "background jobs: the tools job_output, job_list, job_kill and the /jobs "
                   "channel",
    .config_schema =
        "{\"type\":\"object\",\"properties\":{"
        "\"maxPerOwner\":{\"type\":\"integer\",\"default\":10,\"minimum\":1,\"maximum\":100,"
        "\"description\":\"running background jobs per owner\"},"
        "\"maxRunning\":{\"type\":\"integer\",\"default\":32,\"minimum\":1,\"maximum\":256,"
        "\"description\":\"running background jobs in the host (one thread each)\"},"
        "\"outputLimitBytes\":{\"type\":\"integer\",\"default\":65536,\"minimum\":256,"
        "\"description\":\"output a job keeps (older bytes are dropped and counted)\"},"
        "\"maxWaitMs\":{\"type\":\"integer\",\"default\":30000,\"minimum\":1,"
        "\"description\":\"longest job_output wait\"}}}",
    .enabled_by_default = true,
    .apply = apply,
};
