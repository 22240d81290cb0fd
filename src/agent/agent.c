/* agent.c — the agent loop: prompt assembly, streaming a step, running its
 * tool calls with cdsh_dispatch_batch, recording every step in the session
 * store, limits and cancellation; plus slash commands for a session. It
 * keeps no state between turns: the session log is the conversation. */
#include "agent/agent.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/strbuf.h"
#include "host/dispatch.h"
#include "host/prompt.h"

#define MODULE "agent"

struct cdsh_agent {
    cdsh_host *host;
    cdsh_session_store *store;
    cdsh_model_config model;
    cdsh_scope *scope;
    int max_steps;
    int64_t max_tokens;
    size_t max_parallel;
    char *base_prompt;
    int64_t lease_timeout_ms;
};

int cdsh_agent_new(const cdsh_agent_options *opts, cdsh_agent **out, cdsh_error *err)
{
    if (out)
        *out = NULL;
    if (!opts || !out || !opts->host || !opts->store)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT",
                              "agent: host and store are required");
    if (opts->max_steps < 0 || opts->max_tokens < -1)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT",
                              "agent: limits must not be negative");
    cdsh_agent *a = calloc(1, sizeof *a);
    if (!a)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    a->host = opts->host;
    a->store = opts->store;
    cdsh_model_config_init(&a->model);
    if (opts->model && cdsh_model_config_copy(&a->model, opts->model) != 0)
        goto nomem;
    a->scope = cdsh_scope_ref(opts->scope);
    a->max_steps = opts->max_steps ? opts->max_steps : CDSH_AGENT_DEFAULT_MAX_STEPS;
    a->max_tokens = opts->max_tokens ? opts->max_tokens : CDSH_AGENT_DEFAULT_MAX_TOKENS;
    a->max_parallel = opts->max_parallel;
    a->base_prompt = strdup(opts->base_prompt ? opts->base_prompt : CDSH_AGENT_DEFAULT_PROMPT);
    if (!a->base_prompt)
        goto nomem;
    a->lease_timeout_ms = opts->lease_timeout_ms;
    *out = a;
    return 0;
nomem:
    cdsh_agent_free(a);
    return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
}

void cdsh_agent_free(cdsh_agent *agent)
{
    if (!agent)
        return;
    cdsh_model_config_deinit(&agent->model);
    cdsh_scope_unref(agent->scope);
    free(agent->base_prompt);
    free(agent);
}

cdsh_host *cdsh_agent_host(const cdsh_agent *agent)
{
    return agent->host;
}

cdsh_session_store *cdsh_agent_store(const cdsh_agent *agent)
{
    return agent->store;
}

void cdsh_agent_outcome_deinit(cdsh_agent_outcome *out)
{
    if (!out)
        return;
    free(out->text);
    memset(out, 0, sizeof *out);
}

/* ---- prompt ----------------------------------------------------------------- */

/* The prompt and tools a session sees are computed in its own scope, a child
 * of the agent's scope named after the session id: registrations inherit down
 * the chain, and plugins that keep per-session state (a game, a story) find
 * the session by walking exec->agent up to a scope whose id is a session id. */
static cdsh_scope *session_scope_new(cdsh_agent *agent, const char *session_id)
{
    return session_id && *session_id ? cdsh_scope_new(session_id, agent->scope)
                                     : cdsh_scope_ref(agent->scope);
}

/* Appends the segments with lo <= order < hi, blank lines between. */
static void append_segments(cdsh_strbuf *sb, const json_t *segs, json_int_t lo, json_int_t hi)
{
    size_t i;
    json_t *s;
    json_array_foreach(segs, i, s) {
        json_int_t order = json_integer_value(json_object_get(s, "order"));
        if (order < lo || order >= hi)
            continue;
        if (sb->len)
            cdsh_strbuf_append_str(sb, "\n\n");
        cdsh_strbuf_append_str(sb, json_string_value(json_object_get(s, "text")));
    }
}

/* Base prompt, segments below CDSH_PROMPT_AFTER_TOOLS_ORDER, skills index,
 * the tool list, then the later segments (context and state, seed 001 §5:
 * a segment never replaces the tool prefix). */
static char *system_prompt_dup(cdsh_agent *agent, cdsh_scope *scope)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    cdsh_strbuf_append_str(&sb, agent->base_prompt);
    json_t *segs = cdsh_prompt_segments(cdsh_host_prompt(agent->host), scope);
    append_segments(&sb, segs, INT64_MIN, CDSH_PROMPT_AFTER_TOOLS_ORDER);
    size_t i;
    json_t *s;
    char *skills = cdsh_skills_index_dup(cdsh_host_skills(agent->host), scope);
    if (skills) {
        if (sb.len)
            cdsh_strbuf_append_str(&sb, "\n\n");
        cdsh_strbuf_append_str(&sb, skills);
        free(skills);
    }
    /* The same list in the same order as the request's tools (toolOrder). */
    json_t *tools = cdsh_prompt_tools_dup(cdsh_host_prompt(agent->host),
                                          cdsh_host_tools(agent->host), scope, NULL, NULL);
    if (json_array_size(tools)) {
        if (sb.len)
            cdsh_strbuf_append_str(&sb, "\n\n");
        cdsh_strbuf_append_str(&sb, "<available_tools>\n");
        json_array_foreach(tools, i, s) {
            const char *desc = json_string_value(json_object_get(s, "description"));
            size_t dl = desc ? strcspn(desc, "\n") : 0;
            cdsh_strbuf_appendf(&sb, "- %s%s%.*s\n", json_string_value(json_object_get(s, "name")),
                                dl ? ": " : "", (int)dl, desc ? desc : "");
        }
        cdsh_strbuf_append_str(&sb, "</available_tools>");
    }
    json_decref(tools);
    append_segments(&sb, segs, CDSH_PROMPT_AFTER_TOOLS_ORDER, INT64_MAX);
    json_decref(segs);
    char *out = cdsh_strbuf_take(&sb, NULL);
    return out ? out : strdup("");
}

/* The model's tools in prompt order (host/prompt.h); NULL with err when the
 * configured toolOrder does not fit the registry. */
static json_t *request_tools(cdsh_agent *agent, cdsh_scope *scope, cdsh_error *err)
{
    json_t *schemas = cdsh_prompt_tools_dup(cdsh_host_prompt(agent->host),
                                            cdsh_host_tools(agent->host), scope, NULL, err);
    if (!schemas)
        return NULL;
    json_t *out = json_array();
    size_t i;
    json_t *s;
    json_array_foreach(schemas, i, s) {
        json_t *params = json_object_get(s, "parameters");
        json_array_append_new(out,
                              json_pack("{s:s, s:{s:O, s:O, s:O}}", "type", "function", "function",
                                        "name", json_object_get(s, "name"), "description",
                                        json_object_get(s, "description"), "parameters",
                                        params ? params : json_pack("{s:s}", "type", "object")));
    }
    json_decref(schemas);
    return out;
}

char *cdsh_agent_system_prompt_dup(cdsh_agent *agent)
{
    return system_prompt_dup(agent, agent->scope);
}

json_t *cdsh_agent_request_tools(cdsh_agent *agent)
{
    json_t *tools = request_tools(agent, agent->scope, NULL);
    return tools ? tools : json_array();
}

/* ---- one turn ----------------------------------------------------------------- */

typedef struct turn {
    cdsh_agent *agent;
    const char *sid;
    cdsh_scope *scope; /* the session's scope (see session_scope_new) */
    int64_t turn;
    int step;
    cdsh_cancel *cancel;
    cdsh_agent_event_fn fn;
    void *arg;
    cdsh_model_usage usage;
    json_t *context_msg; /* frozen runtime-context message for every step, or NULL */
    json_t *sampling;    /* frozen applied sampling fields (see turn_context_freeze) */
    const cdsh_model_tool_call *calls; /* the step's calls while they run, or NULL */
    bool *answered;                    /* per call: its tool/result is in the log */
} turn;

/* Sends an event: type plus the common fields, then `fields` (stolen). */
static void emit(turn *t, const char *type, json_t *fields)
{
    json_t *ev = json_pack("{s:s, s:s, s:I}", "type", type, "sessionId", t->sid, "turn",
                           (json_int_t)t->turn);
    if (ev && t->step > 0)
        json_object_set_new(ev, "step", json_integer(t->step));
    if (ev && fields)
        json_object_update(ev, fields);
    json_decref(fields);
    if (ev && t->fn)
        t->fn(t->arg, ev);
    json_decref(ev);
}

/* Tells plugins on the host bus that a turn started or ended ("agent/turn",
 * {sessionId, turn, phase}, scoped to the session's scope): delivered synchronously,
 * so a plugin can open per-turn state before the first model call. */
static void bus_turn(turn *t, const char *phase)
{
    json_t *p = json_pack("{s:s, s:I, s:s}", "sessionId", t->sid, "turn", (json_int_t)t->turn,
                          "phase", phase);
    if (p)
        cdsh_events_emit(cdsh_host_events(t->agent->host), "agent/turn", t->scope, true, p);
    json_decref(p);
}

static int log_event(turn *t, const char *type, json_t *payload, int64_t *seq, cdsh_error *err)
{
    int rc = cdsh_session_store_append(t->agent->store, t->sid, type, t->turn, t->step, payload,
                                       seq, err);
    if (rc)
        cdsh_log_error(MODULE, "session %s: cannot record %s: %s", t->sid, type,
                       err ? err->message : "");
    return rc;
}

static void notice(turn *t, const char *level, const char *code, const char *text)
{
    json_t *p = json_pack("{s:s, s:s, s:s}", "level", level, "code", code, "text", text);
    int64_t seq = 0;
    log_event(t, "notice", p, &seq, NULL);
    json_object_set_new(p, "seq", json_integer(seq));
    emit(t, "notice", p);
}

static int model_event(void *arg, const cdsh_model_event *ev)
{
    turn *t = arg;
    switch (ev->kind) {
    case CDSH_MODEL_EV_TEXT:
    case CDSH_MODEL_EV_REASONING:
        emit(t, ev->kind == CDSH_MODEL_EV_TEXT ? "text/delta" : "reasoning/delta",
             json_pack("{s:s%}", "text", ev->text, ev->len));
        break;
    case CDSH_MODEL_EV_TOOL_CALL_START:
        emit(t, "tool/pending",
             json_pack("{s:i, s:s, s:s}", "index", ev->index, "callId", ev->id ? ev->id : "",
                       "name", ev->name ? ev->name : ""));
        break;
    case CDSH_MODEL_EV_RETRY:
        emit(t, "retry",
             json_pack("{s:i, s:i, s:s, s:s}", "attempt", ev->attempt, "delayMs", ev->delay_ms,
                       "code", ev->error ? ev->error->code : "", "message",
                       ev->error ? ev->error->message : ""));
        break;
    default: break;
    }
    return cdsh_cancel_is_fired(t->cancel) ? 1 : 0;
}

static json_t *usage_json(const cdsh_model_usage *u)
{
    return json_pack("{s:I, s:I, s:I}", "inputTokens", (json_int_t)u->input_tokens, "outputTokens",
                     (json_int_t)u->output_tokens, "totalTokens", (json_int_t)u->total_tokens);
}

/* Parses model arguments for dispatch: an object, {} for empty text, or the
 * raw string (dispatch then reports INVALID_ARGS through the pipeline). */
static json_t *call_args(const char *text)
{
    size_t n = text ? strspn(text, " \t\r\n") : 0;
    if (!text || text[n] == '\0')
        return json_object();
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (v && json_is_object(v))
        return v;
    json_decref(v);
    return json_string(text);
}

/* Sets the tool's render intent (host-contracts §1) on an event payload as
 * "present", for the page's tool cards; the bare generic card is left out. */
static void set_present(json_t *p, json_t *intent)
{
    if (intent && json_object_size(intent) > 1)
        json_object_set(p, "present", intent);
    json_decref(intent);
}

/* Logs a tool/call (the "started" marker) and reports it. */
static int log_call(turn *t, const cdsh_model_tool_call *c, bool parallel, cdsh_error *err)
{
    json_t *p = json_pack("{s:s, s:s, s:s}", "callId", c->id, "name", c->name, "arguments",
                          c->arguments ? c->arguments : "");
    json_t *args = call_args(c->arguments);
    set_present(p, cdsh_tools_present_call_dup(cdsh_host_tools(t->agent->host), t->scope, c->name,
                                               args));
    json_decref(args);
    int64_t seq = 0;
    int rc = log_event(t, "tool/call", p, &seq, err);
    if (rc == 0) {
        json_object_set_new(p, "seq", json_integer(seq));
        json_object_set_new(p, "parallel", json_boolean(parallel));
        emit(t, "tool/call", json_incref(p));
    }
    json_decref(p);
    return rc;
}

/* Logs a tool/result and reports it. */
static int log_result(turn *t, const cdsh_model_tool_call *c, const cdsh_toolresult *r,
                      cdsh_error *err)
{
    json_t *p = json_pack("{s:s, s:b, s:O}", "callId", c->id, "isError", r->is_error, "content",
                          r->content);
    if (r->is_error) {
        json_t *e = json_pack("{s:s}", "message", r->error_message ? r->error_message : "");
        if (r->error_name)
            json_object_set_new(e, "name", json_string(r->error_name));
        if (r->error_code)
            json_object_set_new(e, "code", json_string(r->error_code));
        json_object_set_new(p, "error", e);
    }
    json_t *args = call_args(c->arguments), *rj = cdsh_toolresult_to_json(r);
    set_present(p, cdsh_tools_present_result_dup(cdsh_host_tools(t->agent->host), t->scope,
                                                 c->name, args, rj));
    json_decref(args);
    json_decref(rj);
    int64_t seq = 0;
    int rc = log_event(t, "tool/result", p, &seq, err);
    if (rc == 0 && t->calls && t->answered)
        t->answered[c - t->calls] = true;
    cdsh_log_info(MODULE, "session %s turn %lld step %d: tool %s (%s) -> %s%s", t->sid,
                  (long long)t->turn, t->step, c->name, c->id, r->is_error ? "error " : "ok",
                  r->is_error && r->error_code ? r->error_code : "");
    if (rc == 0) {
        json_object_set_new(p, "seq", json_integer(seq));
        json_object_set_new(p, "name", json_string(c->name));
        if (r->meta)
            json_object_set(p, "meta", r->meta);
        emit(t, "tool/result", json_incref(p));
    }
    json_decref(p);
    return rc;
}

/* Runs the calls of one reply in groups with the kernel's scheduling rule:
 * a run of consecutive parallel calls goes to cdsh_dispatch_batch together,
 * any other call runs alone. Each group's tool/call events are logged just
 * before it runs (so repair can tell started calls from unstarted ones) and
 * its results right after, in model order. Sets *concludes. */
static int run_calls(turn *t, const cdsh_model_tool_call *calls, size_t n, bool *concludes,
                     cdsh_error *err)
{
    cdsh_tools *tools = cdsh_host_tools(t->agent->host);
    cdsh_dispatch_input *in = calloc(n, sizeof *in);
    json_t **args = calloc(n, sizeof *args);
    bool *par = calloc(n, sizeof *par);
    cdsh_toolresult **res = calloc(n, sizeof *res);
    int rc = 0;
    if (!in || !args || !par || !res) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        args[i] = call_args(calls[i].arguments);
        in[i] = (cdsh_dispatch_input){.call_id = calls[i].id,
                                      .name = calls[i].name,
                                      .args = args[i],
                                      .agent = t->scope,
                                      .cancel = t->cancel};
        par[i] = cdsh_tools_is_parallel(tools, t->scope, calls[i].name, args[i]);
    }
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (par[i] && j < n && par[j])
            j++;
        for (size_t k = i; k < j; k++)
            if ((rc = log_call(t, &calls[k], par[k], err)) != 0)
                goto done;
        cdsh_log_info(MODULE, "session %s turn %lld step %d: running %zu tool call(s)%s", t->sid,
                      (long long)t->turn, t->step, j - i, par[i] ? " in parallel" : "");
        if (cdsh_dispatch_batch(tools, in + i, j - i, t->agent->max_parallel, res + i) != 0) {
            /* Calls that did not run still need a result in the log. */
            for (size_t k = i; k < j; k++)
                if (!res[k])
                    res[k] = cdsh_toolresult_new_error("ToolNotStartedError", "TOOL_NOT_STARTED",
                                                       "the tool call could not be scheduled");
        }
        for (size_t k = i; k < j; k++) {
            if (!res[k]) {
                rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
                goto done;
            }
            if ((rc = log_result(t, &calls[k], res[k], err)) != 0)
                goto done;
            if (res[k]->concludes_turn)
                *concludes = true;
        }
        i = j;
    }
    /* Contexts deferred by bodies become user messages after the results. */
    for (size_t i = 0; i < n; i++) {
        size_t k;
        json_t *ctx;
        json_array_foreach(res[i]->additional_contexts, k, ctx) {
            json_t *p = json_pack("{s:O, s:s, s:s}", "text", ctx, "source", "tool-context",
                                  "callId", calls[i].id);
            int64_t seq = 0;
            rc = log_event(t, "user/message", p, &seq, err);
            if (rc) {
                json_decref(p);
                goto done;
            }
            json_object_set_new(p, "seq", json_integer(seq));
            emit(t, "user/message", p);
        }
    }
done:
    for (size_t i = 0; i < n && res; i++)
        cdsh_toolresult_free(res[i]);
    for (size_t i = 0; i < n && args; i++)
        json_decref(args[i]);
    free(res);
    free(par);
    free(args);
    free(in);
    return rc;
}

/* Asks the host's runtime-context and sampling providers once for this turn
 * and freezes their answers in t (the same bytes go to every step). Records
 * names, byte counts and sampling (never the texts) as a "turn/context"
 * event. Failures here only cost the context, never the turn. */
static void turn_context_freeze(turn *t)
{
    json_t *raw = NULL;
    json_t *ctxs = cdsh_prompt_turn_context(cdsh_host_prompt(t->agent->host), t->scope, t->sid,
                                            (long long)t->turn, &raw);
    json_t *names = json_array();
    json_t *applied = json_object(), *recorded = json_object();
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    size_t i;
    json_t *c;
    json_array_foreach(ctxs, i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *text = json_string_value(json_object_get(c, "text"));
        cdsh_strbuf_append_str(&sb, i ? "\n\n<runtime_context name=\""
                                      : CDSH_AGENT_CONTEXT_HEAD "<runtime_context name=\"");
        cdsh_strbuf_append_str(&sb, name);
        cdsh_strbuf_append_str(&sb, "\">\n");
        cdsh_strbuf_append_str(&sb, text);
        cdsh_strbuf_append_str(&sb, "\n</runtime_context>");
        json_array_append_new(
            names, json_pack("{s:s, s:I}", "name", name, "bytes", (json_int_t)strlen(text)));
    }
    char *body = cdsh_strbuf_take(&sb, NULL);
    if (body && json_array_size(ctxs))
        t->context_msg = json_pack("{s:s, s:s}", "role", "user", "content", body);
    free(body);
    const char *key;
    json_t *v;
    json_object_foreach(raw, key, v) {
        bool ok = (strcmp(key, "temperature") == 0 && json_is_number(v)) ||
                  (strcmp(key, "maxTokens") == 0 && json_is_integer(v) &&
                   json_integer_value(v) > 0 && json_integer_value(v) <= INT32_MAX) ||
                  (strcmp(key, "reasoningEffort") == 0 && json_is_string(v)) ||
                  (strcmp(key, "stop") == 0 && (json_is_string(v) || json_is_array(v)));
        if (ok && json_is_array(v)) {
            size_t k;
            json_t *e;
            json_array_foreach(v, k, e)
                ok = ok && json_is_string(e);
        }
        json_object_set(ok ? applied : recorded, key, v);
    }
    json_decref(raw);
    if (json_array_size(ctxs) || json_object_size(applied) || json_object_size(recorded)) {
        json_t *ev = json_pack("{s:o, s:O, s:O}", "contexts", names, "sampling", applied,
                               "recorded", recorded);
        names = NULL;
        cdsh_error e = {0};
        if (log_event(t, "turn/context", ev, NULL, &e))
            cdsh_log_warn(MODULE, "session %s turn %lld: could not record turn/context: %s", t->sid,
                          (long long)t->turn, e.message);
        json_decref(ev);
    }
    json_decref(names);
    json_decref(recorded);
    json_decref(ctxs);
    t->sampling = applied;
}

/* Prepends the system prompt, appends the turn's frozen runtime context and
 * sends one request with the turn's sampling. */
static int step_complete(turn *t, cdsh_model_client *client, const json_t *history,
                         const json_t *tools, cdsh_model_reply *reply, cdsh_error *err)
{
    char *system = system_prompt_dup(t->agent, t->scope);
    json_t *messages = json_array();
    if (system && *system)
        json_array_append_new(messages,
                              json_pack("{s:s, s:s}", "role", "system", "content", system));
    json_array_extend(messages, (json_t *)history);
    if (t->context_msg)
        json_array_append(messages, t->context_msg);
    free(system);
    cdsh_model_request req = {.messages = messages,
                              .tools = json_array_size(tools) ? tools : NULL,
                              .cancel = t->cancel,
                              .on_event = model_event,
                              .event_arg = t};
    json_t *extra = NULL;
    json_t *v;
    if ((v = json_object_get(t->sampling, "temperature"))) {
        req.temperature = json_number_value(v);
        req.has_temperature = true;
    }
    if ((v = json_object_get(t->sampling, "maxTokens")))
        req.max_tokens = (int)json_integer_value(v);
    if (json_object_get(t->sampling, "stop") || json_object_get(t->sampling, "reasoningEffort")) {
        extra = json_pack("{s:O?, s:O?}", "stop", json_object_get(t->sampling, "stop"),
                          "reasoning_effort", json_object_get(t->sampling, "reasoningEffort"));
        req.extra = extra;
    }
    cdsh_log_info(
        MODULE, "session %s turn %lld step %d: calling the model (%zu messages, %zu tools)", t->sid,
        (long long)t->turn, t->step, json_array_size(messages), json_array_size(tools));
    int rc = cdsh_model_client_complete(client, &req, reply, err);
    json_decref(messages);
    json_decref(extra);
    if (rc == 0)
        cdsh_log_info(MODULE,
                      "session %s turn %lld step %d: model replied (finish %s, %zu tool calls, "
                      "%lld tokens)",
                      t->sid, (long long)t->turn, t->step,
                      reply->finish_reason ? reply->finish_reason : "-", reply->n_tool_calls,
                      (long long)reply->usage.total_tokens);
    else
        cdsh_log_write(err->rc == CDSH_ECANCELED ? CDSH_LOG_INFO : CDSH_LOG_WARN, MODULE,
                       "session %s turn %lld step %d: model failed: %s: %s", t->sid,
                       (long long)t->turn, t->step, err->code, err->message);
    return rc;
}

static cdsh_model_client *client_for(turn *t, const json_t *session, cdsh_error *err)
{
    cdsh_model_config layer, resolved;
    cdsh_model_config_init(&layer);
    cdsh_model_config_set_base_url(&layer, json_string_value(json_object_get(session, "baseUrl")));
    cdsh_model_config_set_model(&layer, json_string_value(json_object_get(session, "model")));
    int rc = cdsh_model_config_resolve(&layer, &t->agent->model, &resolved, err);
    cdsh_model_config_deinit(&layer);
    if (rc)
        return NULL;
    cdsh_model_client *c = cdsh_model_client_new(&resolved, err);
    cdsh_model_config_deinit(&resolved);
    return c;
}

static const char *missing_key_text =
    "No model is configured: set DEEPSEEK_API_KEY (or CDSH_API_KEY) to use DeepSeek, or point "
    "CDSH_BASE_URL (and CDSH_MODEL) at an OpenAI-compatible server such as a local llama.cpp or "
    "Ollama. Plugins that need no model keep working.";

/* ---- the turn runner ---------------------------------------------------------- */

/* Everything one run of cdsh_agent_run_turn holds; its steps below share it.
 * Once turn/start is recorded (`opened`), every way out goes through
 * turn_close, so the log and the event stream always end with turn/end. */
typedef struct turn_run {
    turn t;
    const char *text;
    bool opened; /* turn/start is in the log */
    cdsh_session_lease *lease;
    cdsh_session_loaded loaded;
    cdsh_model_client *client;
    json_t *tools;
    json_t *history; /* borrowed: loaded.messages */
    cdsh_model_reply reply;
    char *last_text;
    const char *reason;
    cdsh_error failure; /* why the turn ended with reason "error" */
} turn_run;

/* Ends the turn as an error: a notice with the code, then (by the caller)
 * turn/end {reason:"error"}. A cancellation that caused the failure ends it
 * as "cancelled" instead. */
static void turn_fail(turn_run *r, const cdsh_error *e, const char *text)
{
    if (e->rc == CDSH_ECANCELED || cdsh_cancel_is_fired(r->t.cancel)) {
        r->reason = "cancelled";
        return;
    }
    r->reason = "error";
    r->failure = *e;
    notice(&r->t, "error", e->code[0] ? e->code : "INTERNAL", text ? text : e->message);
}

/* Takes the lease, loads (repairing a crashed turn), records turn/start and
 * the user message, freezes the runtime context. Negative before the turn
 * started (nothing recorded); after turn/start, failures end the turn. */
static int turn_open(turn_run *r, cdsh_error *err)
{
    turn *t = &r->t;
    cdsh_agent *agent = t->agent;
    json_t *exists = cdsh_session_store_info_dup(agent->store, t->sid, err);
    if (!exists)
        return err ? err->rc : CDSH_ENOTFOUND;
    json_decref(exists);
    t->scope = session_scope_new(agent, t->sid);
    if (!t->scope)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    int rc = cdsh_session_store_lease(agent->store, t->sid, agent->lease_timeout_ms, t->cancel,
                                      &r->lease, err);
    if (rc == CDSH_ETIMEDOUT)
        rc = cdsh_error_set(err, CDSH_EBUSY, "SESSION_BUSY",
                            "session %s is running a turn; wait for it or cancel it", t->sid);
    if (rc)
        return rc;
    rc = cdsh_session_store_load(agent->store, t->sid, r->lease, &r->loaded, err);
    if (rc)
        return rc;
    if (r->loaded.repaired)
        cdsh_log_warn(MODULE, "session %s: repaired an interrupted turn (%d events)", t->sid,
                      r->loaded.repaired);
    t->turn = json_integer_value(json_object_get(r->loaded.session, "lastTurn")) + 1;
    json_t *start = json_object();
    rc = log_event(t, "turn/start", start, NULL, err);
    json_decref(start);
    if (rc)
        return rc;
    r->opened = true;
    emit(t, "turn/start", NULL);
    bus_turn(t, "start");
    json_t *um = json_pack("{s:s}", "text", r->text);
    int64_t seq = 0;
    cdsh_error uerr = {0};
    if (log_event(t, "user/message", um, &seq, &uerr) != 0) {
        json_decref(um);
        turn_fail(r, &uerr, NULL);
        return 0;
    }
    json_object_set_new(um, "seq", json_integer(seq));
    emit(t, "user/message", um);
    turn_context_freeze(t); /* after the message is logged: providers may read it */
    return 0;
}

/* The model client and the request's tools; the history gets the message.
 * False (the turn failed with a notice) when no model is configured. */
static bool turn_prepare_model(turn_run *r)
{
    cdsh_error merr = {0};
    r->client = client_for(&r->t, r->loaded.session, &merr);
    if (!r->client) {
        turn_fail(r, &merr,
                  strcmp(merr.code, "MISSING_CREDENTIAL") == 0 ? missing_key_text : NULL);
        return false;
    }
    r->tools = request_tools(r->t.agent, r->t.scope, &merr);
    if (!r->tools) { /* a toolOrder that does not fit the registry */
        turn_fail(r, &merr, NULL);
        return false;
    }
    r->history = r->loaded.messages;
    json_array_append_new(r->history,
                          json_pack("{s:s, s:s}", "role", "user", "content", r->text));
    return true;
}

/* Records the step's reply and reports it; the history gets it too. */
static int record_reply(turn_run *r, cdsh_error *err)
{
    turn *t = &r->t;
    const cdsh_model_reply *reply = &r->reply;
    int64_t seq = 0;
    int rc = cdsh_session_store_append_reply(t->agent->store, t->sid, t->turn, t->step, reply,
                                             &seq, err);
    if (rc)
        return rc;
    json_t *msg = cdsh_model_reply_to_message(reply);
    json_array_append(r->history, msg);
    json_decref(msg);
    json_t *calls = json_array();
    for (size_t i = 0; i < reply->n_tool_calls; i++)
        json_array_append_new(
            calls, json_pack("{s:s, s:s, s:s}", "id", reply->tool_calls[i].id, "name",
                             reply->tool_calls[i].name, "arguments",
                             reply->tool_calls[i].arguments ? reply->tool_calls[i].arguments : ""));
    emit(t, "assistant/message",
         json_pack("{s:I, s:s, s:s?, s:o, s:o, s:s?}", "seq", (json_int_t)seq, "text",
                   reply->text ? reply->text : "", "reasoning", reply->reasoning, "toolCalls",
                   calls, "usage", usage_json(&reply->usage), "finishReason",
                   reply->finish_reason));
    free(r->last_text);
    r->last_text = strdup(reply->text ? reply->text : "");
    return 0;
}

/* Runs the reply's calls and rebuilds the history from the log (results in
 * model order, deferred contexts after them). */
static int run_reply_calls(turn_run *r, bool *concludes, cdsh_error *err)
{
    turn *t = &r->t;
    free(t->answered);
    t->answered = calloc(r->reply.n_tool_calls, sizeof *t->answered);
    if (!t->answered)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    t->calls = r->reply.tool_calls;
    int rc = run_calls(t, r->reply.tool_calls, r->reply.n_tool_calls, concludes, err);
    if (rc)
        return rc; /* t->calls stays set: turn_close answers the calls left open */
    t->calls = NULL;
    json_t *fresh = cdsh_session_store_messages(t->agent->store, t->sid, err);
    if (!fresh)
        return err && err->rc ? err->rc : CDSH_EIO;
    json_array_clear(r->history);
    json_array_extend(r->history, fresh);
    json_decref(fresh);
    return 0;
}

/* After a step that ran tools: whether a limit stops the turn (with a notice). */
static bool limit_reached(turn_run *r)
{
    turn *t = &r->t;
    char buf[200];
    if (t->step >= t->agent->max_steps) {
        r->reason = "step-limit";
        snprintf(buf, sizeof buf,
                 "The turn stopped after %d model steps (the limit per turn); send another "
                 "message to let it continue.",
                 t->step);
        notice(t, "warning", "STEP_LIMIT", buf);
        return true;
    }
    if (t->agent->max_tokens > 0 && t->usage.total_tokens >= t->agent->max_tokens) {
        r->reason = "token-limit";
        snprintf(buf, sizeof buf,
                 "The turn stopped after using %lld tokens (the limit per turn is %lld); send "
                 "another message to let it continue.",
                 (long long)t->usage.total_tokens, (long long)t->agent->max_tokens);
        notice(t, "warning", "TOKEN_LIMIT", buf);
        return true;
    }
    return false;
}

/* One step: a model call, its reply recorded, its tool calls run. True when
 * another step follows; false with r->reason set when the turn ends. */
static bool turn_step(turn_run *r)
{
    turn *t = &r->t;
    cdsh_error e = {0};
    if (cdsh_cancel_is_fired(t->cancel)) {
        r->reason = "cancelled";
        return false;
    }
    t->step++;
    emit(t, "step/start", NULL);
    cdsh_model_reply_deinit(&r->reply);
    if (step_complete(t, r->client, r->history, r->tools, &r->reply, &e) != 0) {
        turn_fail(r, &e, NULL);
        return false;
    }
    cdsh_model_usage_add(&t->usage, &r->reply.usage);
    if (record_reply(r, &e) != 0) {
        turn_fail(r, &e, NULL);
        return false;
    }
    if (r->reply.n_tool_calls == 0)
        return false;
    bool concludes = false;
    if (run_reply_calls(r, &concludes, &e) != 0) {
        turn_fail(r, &e, NULL);
        return false;
    }
    if (cdsh_cancel_is_fired(t->cancel)) {
        r->reason = "cancelled";
        return false;
    }
    return !concludes && !limit_reached(r);
}

/* After a failure in the middle of a step's calls: an error result for every
 * call the reply listed that has none yet, so the log can close the turn. */
static void answer_open_calls(turn_run *r)
{
    turn *t = &r->t;
    if (!t->calls || !t->answered)
        return;
    for (size_t i = 0; i < r->reply.n_tool_calls; i++) {
        if (t->answered[i])
            continue;
        cdsh_toolresult *res = cdsh_toolresult_new_error(
            "ToolResultLostError", "TOOL_RESULT_LOST",
            "the turn failed before this call's result could be recorded");
        cdsh_error e = {0};
        if (res && log_result(t, &t->calls[i], res, &e) != 0)
            cdsh_log_warn(MODULE, "session %s: cannot close call %s: %s", t->sid,
                          t->calls[i].id, e.message);
        cdsh_toolresult_free(res);
    }
    t->calls = NULL;
}

/* Records turn/end and reports it (the event goes out even when the store
 * refuses it, so a front end never waits for a turn that is over; the next
 * turn's repair then closes the log). Returns the store's failure, if any. */
static int turn_close(turn_run *r, cdsh_error *err)
{
    turn *t = &r->t;
    answer_open_calls(r);
    if (strcmp(r->reason, "cancelled") == 0)
        notice(t, "info", "TURN_CANCELLED", "The turn was cancelled.");
    json_t *end = json_pack("{s:s, s:i, s:o}", "reason", r->reason, "steps", t->step, "usage",
                            usage_json(&t->usage));
    if (strcmp(r->reason, "error") == 0 && r->failure.code[0])
        json_object_set_new(end, "code", json_string(r->failure.code));
    int64_t seq = 0;
    int rc = log_event(t, "turn/end", end, &seq, err);
    if (rc == 0)
        json_object_set_new(end, "seq", json_integer(seq));
    int step = t->step;
    t->step = 0;
    emit(t, "turn/end", end);
    bus_turn(t, "end");
    t->step = step;
    cdsh_log_info(MODULE, "session %s turn %lld ended: %s after %d step(s)", t->sid,
                  (long long)t->turn, r->reason, t->step);
    return rc;
}

static void turn_report(turn_run *r, cdsh_agent_outcome *out)
{
    if (!out)
        return;
    out->turn = r->t.turn;
    out->steps = r->t.step;
    snprintf(out->reason, sizeof out->reason, "%s", r->reason);
    if (strcmp(r->reason, "error") == 0)
        snprintf(out->code, sizeof out->code, "%s", r->failure.code);
    out->usage = r->t.usage;
    out->text = r->last_text;
    r->last_text = NULL;
}

static void turn_run_deinit(turn_run *r)
{
    free(r->last_text);
    cdsh_model_reply_deinit(&r->reply);
    json_decref(r->tools);
    cdsh_model_client_free(r->client);
    cdsh_session_loaded_deinit(&r->loaded);
    cdsh_session_lease_release(r->lease);
    cdsh_scope_unref(r->t.scope);
    json_decref(r->t.context_msg);
    json_decref(r->t.sampling);
    free(r->t.answered);
}

int cdsh_agent_run_turn(cdsh_agent *agent, const char *session_id, const char *text,
                        cdsh_cancel *cancel, cdsh_agent_event_fn on_event, void *event_arg,
                        cdsh_agent_outcome *out, cdsh_error *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!agent || !session_id)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "agent: session id is required");
    if (!text || !*text)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "agent: the message is empty");
    if (!cdsh_session_id_valid(session_id))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_SESSION_ID", "invalid session id \"%s\"",
                              session_id);
    turn_run r = {.t = {.agent = agent,
                        .sid = session_id,
                        .cancel = cancel,
                        .fn = on_event,
                        .arg = event_arg},
                  .text = text,
                  .reason = "done"};
    int rc = turn_open(&r, err);
    if (rc == 0 && strcmp(r.reason, "done") == 0 && turn_prepare_model(&r))
        while (turn_step(&r))
            ;
    if (r.opened) {
        int crc = turn_close(&r, err);
        if (rc == 0)
            rc = crc;
        if (rc == 0)
            turn_report(&r, out);
    }
    turn_run_deinit(&r);
    return rc;
}

/* ---- commands ---------------------------------------------------------------- */

int cdsh_agent_exec_command(cdsh_agent *agent, const char *session_id, const char *line,
                            cdsh_cancel *cancel, cdsh_agent_event_fn on_event, void *event_arg,
                            json_t **result, cdsh_error *err)
{
    if (result)
        *result = NULL;
    char name[64];
    const char *raw = NULL;
    if (!agent || !result)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "agent: result is required");
    if (!line || !cdsh_commands_parse(line, name, sizeof name, &raw))
        return cdsh_error_set(err, CDSH_EINVAL, "NOT_A_COMMAND",
                              "not a slash command: write /name followed by its input");
    if (session_id) {
        json_t *s = cdsh_session_store_info_dup(agent->store, session_id, err);
        if (!s)
            return err ? err->rc : CDSH_ENOTFOUND;
        json_decref(s);
    }
    turn t = {
        .agent = agent, .sid = session_id ? session_id : "", .fn = on_event, .arg = event_arg};
    cdsh_commands *cmds = cdsh_host_commands(agent->host);
    cdsh_command_outcome oc = {0};
    cdsh_error cerr = {0};
    t.scope = session_scope_new(agent, session_id);
    if (!t.scope)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    int handled = cdsh_commands_execute(cmds, t.scope, line, NULL, cancel, &oc, &cerr);
    if (handled == 0) {
        char *msg = cdsh_commands_unknown_message_dup(cmds, t.scope, line);
        *result = json_pack("{s:n, s:s, s:s, s:s, s:s}", "commandId", "name", name, "kind", "error",
                            "code", "unknown-command", "text", msg ? msg : "unknown command");
        free(msg);
        emit(&t, "command/done", json_deep_copy(*result));
        cdsh_scope_unref(t.scope);
        return 0;
    }
    cdsh_scope_unref(t.scope); /* the handler has run; nothing below dispatches */
    const char *kind = handled > 0 && oc.kind == CDSH_COMMAND_SUCCESS ? "success" : "error";
    const char *text = handled > 0 ? oc.text : cerr.message;
    const char *args = raw ? raw + strspn(raw, " \t") : "";
    json_t *run = json_pack("{s:s, s:s, s:s, s:{s:s}}", "commandId", oc.command_id, "name", name,
                            "args", args, "source", "kind", "user");
    json_t *done = json_pack("{s:s, s:s}", "commandId", oc.command_id, "kind", kind);
    if (text)
        json_object_set_new(done, "text", json_string(text));
    int rc = 0;
    if (session_id) {
        int64_t seq = 0;
        rc = cdsh_session_store_append(agent->store, session_id, "command/run", 0, 0, run, &seq,
                                       err);
        if (rc == 0)
            json_object_set_new(done, "sourceEventSeq", json_integer(seq));
        if (rc == 0)
            rc = cdsh_session_store_append(agent->store, session_id, "command/done", 0, 0, done,
                                           NULL, err);
    }
    emit(&t, "command/run", json_incref(run));
    json_object_set_new(done, "name", json_string(name));
    emit(&t, "command/done", json_incref(done));
    json_decref(run);
    if (rc == 0)
        *result = done;
    else
        json_decref(done);
    cdsh_commands_outcome_clear(&oc);
    return rc;
}
