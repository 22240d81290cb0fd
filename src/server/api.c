/* api.c — the /api routes: sessions, turns on a bounded worker pool with
 * their cancel tokens (model turns, or the turns of a plugin's session
 * runner for sessions bound to it — agent/session_runner.h), commands,
 * status, panels, approvals, and the SSE streams fed by the agent's events
 * and the host bus. The agent loop itself is agent.c. Plugin surfaces (the
 * ACP engines, say) are the plugins' RPC channels, not routes here. */
#include "server/api.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/session_runner.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/workpool.h"
#include "server/web_assets.h"

typedef struct running {
    struct running *next;
    cdsh_api *api;
    char sid[96];
    char *text;
    cdsh_cancel *tok;
    bool done;
    bool ending; /* turn/end went out; the job is finishing (releasing the lease) */
    const cdsh_session_runner *runner; /* a plugin runs the turn; NULL: the model */
} running;

struct cdsh_api {
    cdsh_web *web;
    cdsh_agent *agent;
    cdsh_hub *hub;
    pthread_mutex_t mu; /* guards turns, shutting_down */
    pthread_cond_t settled; /* a turn's job finished (done became true) */
    running *turns;
    cdsh_workpool *pool; /* turns run here: one pool thread per running turn */
    bool shutting_down;
    cdsh_disposer_t bus_state, bus_plugins, bus_sessions;
    int route_ids[4];
    cdsh_approvals *approvals; /* borrowed or owned (own_approvals) */
    bool own_approvals;
    cdsh_disposer_t tools_approval;
};

size_t cdsh_api_turn_threads(cdsh_api *api)
{
    return cdsh_workpool_threads(api->pool);
}

/* ---- helpers ------------------------------------------------------------------- */

static unsigned status_for(const cdsh_error *err)
{
    switch (err->rc) {
    case CDSH_ENOTFOUND: return 404;
    case CDSH_EINVAL: return 400;
    case CDSH_EBUSY: return 409;
    default: return 500;
    }
}

static void reply_err(cdsh_web_response *res, const cdsh_error *err)
{
    cdsh_web_reply_error(res, status_for(err), err->code[0] ? err->code : "INTERNAL", "%s",
                         err->message);
}

/* The body as an object, or {} when it is empty. */
static json_t *body_or_empty(const cdsh_web_request *req, cdsh_web_response *res)
{
    if (req->body_len == 0)
        return json_object();
    return cdsh_web_body_object(req, res);
}

static running *find_turn(cdsh_api *api, const char *sid)
{
    for (running *r = api->turns; r; r = r->next)
        if (strcmp(r->sid, sid) == 0)
            return r;
    return NULL;
}

/* A turn that already sent turn/end is over for everyone who saw the event;
 * its job only releases the session's lease. Waits (api->mu held) for that
 * short tail, so a request sent on the turn/end event never meets
 * SESSION_BUSY. True if r is still running after the wait. */
static bool busy_locked(cdsh_api *api, running *r)
{
    int64_t deadline = cdsh_clock_mono_ms() + CDSH_API_SETTLE_MS;
    while (r && !r->done && r->ending) {
        int64_t left = deadline - cdsh_clock_mono_ms();
        if (left <= 0)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += left / 1000;
        ts.tv_nsec += (left % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&api->settled, &api->mu, &ts);
    }
    return r && !r->done;
}

static bool is_running(cdsh_api *api, const char *sid)
{
    pthread_mutex_lock(&api->mu);
    bool busy = busy_locked(api, find_turn(api, sid));
    pthread_mutex_unlock(&api->mu);
    return busy;
}

/* ---- turns ------------------------------------------------------------------------ */

static void publish_event(void *arg, const json_t *ev)
{
    running *r = arg;
    const char *type = json_string_value(json_object_get(ev, "type"));
    if (type && strcmp(type, "turn/end") == 0 && r->tok) {
        /* Before the event goes out: whoever reacts to it finds the turn ending. */
        pthread_mutex_lock(&r->api->mu);
        r->ending = true;
        pthread_mutex_unlock(&r->api->mu);
    }
    cdsh_hub_publish(r->api->hub, r->sid, type, ev);
}

static void turn_main(void *arg)
{
    running *r = arg;
    cdsh_error err = {0};
    int rc;
    if (r->runner) {
        cdsh_session_turn t = {.store = cdsh_agent_store(r->api->agent),
                               .session_id = r->sid,
                               .text = r->text,
                               .cancel = r->tok,
                               .on_event = publish_event,
                               .event_arg = r};
        rc = r->runner->run(r->runner->arg, &t, NULL, &err);
    } else {
        cdsh_agent_outcome out;
        rc = cdsh_agent_run_turn(r->api->agent, r->sid, r->text, r->tok, publish_event, r, &out,
                                 &err);
        if (rc == 0)
            cdsh_agent_outcome_deinit(&out);
    }
    if (rc) {
        json_t *ev = json_pack("{s:s, s:s, s:s, s:s}", "type", "turn/error", "sessionId", r->sid,
                               "code", err.code, "message", err.message);
        cdsh_hub_publish(r->api->hub, r->sid, "turn/error", ev);
        json_decref(ev);
    }
    json_t *ch = json_pack("{s:s, s:s}", "reason", "turn-end", "id", r->sid);
    cdsh_hub_publish(r->api->hub, NULL, "sessions/change", ch);
    json_decref(ch);
    pthread_mutex_lock(&r->api->mu);
    r->done = true;
    pthread_cond_broadcast(&r->api->settled);
    pthread_mutex_unlock(&r->api->mu);
}

/* Queues a turn on the pool (the runner's turn when `runner` is set, else
 * the model's); CDSH_EBUSY when one runs (or waits for a thread) for sid. */
static int start_turn(cdsh_api *api, const char *sid, const char *text,
                      const cdsh_session_runner *runner, cdsh_error *err)
{
    pthread_mutex_lock(&api->mu);
    if (api->shutting_down) {
        pthread_mutex_unlock(&api->mu);
        return cdsh_error_set(err, CDSH_ECLOSED, "SHUTTING_DOWN", "the server is stopping");
    }
    running *r = find_turn(api, sid);
    if (busy_locked(api, r)) {
        pthread_mutex_unlock(&api->mu);
        return cdsh_error_set(err, CDSH_EBUSY, "SESSION_BUSY",
                              "session %s is running a turn; wait for it or cancel it", sid);
    }
    if (api->shutting_down) { /* checked again: the wait above let go of the lock */
        pthread_mutex_unlock(&api->mu);
        return cdsh_error_set(err, CDSH_ECLOSED, "SHUTTING_DOWN", "the server is stopping");
    }
    if (r) { /* the previous turn's job has finished: reuse its slot */
        free(r->text);
        cdsh_cancel_free(r->tok);
    } else {
        r = calloc(1, sizeof *r);
        if (!r) {
            pthread_mutex_unlock(&api->mu);
            return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        }
        snprintf(r->sid, sizeof r->sid, "%s", sid);
        r->api = api;
        r->next = api->turns;
        api->turns = r;
    }
    r->text = strdup(text);
    r->tok = cdsh_cancel_new(NULL);
    r->done = false;
    r->ending = false;
    r->runner = runner;
    if (!r->text || !r->tok) {
        r->done = true;
        pthread_mutex_unlock(&api->mu);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "cannot start the turn");
    }
    pthread_mutex_unlock(&api->mu);
    /* Outside the lock: with no thread to be had the job runs right here. */
    if (cdsh_workpool_submit(api->pool, turn_main, r) != 0) {
        pthread_mutex_lock(&api->mu);
        r->done = true;
        pthread_cond_broadcast(&api->settled);
        pthread_mutex_unlock(&api->mu);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "cannot start the turn");
    }
    return 0;
}

/* ---- routes -------------------------------------------------------------------------- */

static void list_sessions(cdsh_api *api, const cdsh_web_request *req, cdsh_web_response *res)
{
    const char *l = cdsh_web_query(req, "limit"), *o = cdsh_web_query(req, "offset");
    int64_t limit = l ? atoll(l) : 100, offset = o ? atoll(o) : 0, total = 0;
    if (limit < 1 || limit > 1000 || offset < 0) {
        cdsh_web_reply_error(res, 400, "BAD_REQUEST", "limit must be 1..1000 and offset >= 0");
        return;
    }
    cdsh_error err = {0};
    json_t *list =
        cdsh_session_store_list(cdsh_agent_store(api->agent), offset, limit, &total, &err);
    if (!list) {
        reply_err(res, &err);
        return;
    }
    size_t i;
    json_t *s;
    json_array_foreach(list, i, s)
        json_object_set_new(
            s, "running",
            json_boolean(is_running(api, json_string_value(json_object_get(s, "id")))));
    cdsh_web_reply_json(res, 200,
                        json_pack("{s:o, s:I}", "sessions", list, "total", (json_int_t)total));
}

static void create_session(cdsh_api *api, const cdsh_web_request *req, cdsh_web_response *res)
{
    json_t *body = body_or_empty(req, res);
    if (!body)
        return;
    const char *title = json_string_value(json_object_get(body, "title"));
    cdsh_session_spec spec = {.title = title ? title : "New chat"};
    cdsh_error err = {0};
    char *id = NULL;
    json_t *s = NULL;
    if (cdsh_session_store_create(cdsh_agent_store(api->agent), &spec, &id, &err) == 0)
        s = cdsh_session_store_info_dup(cdsh_agent_store(api->agent), id, &err);
    json_decref(body);
    if (!s) {
        free(id);
        reply_err(res, &err);
        return;
    }
    json_t *ch = json_pack("{s:s, s:s}", "reason", "created", "id", id);
    cdsh_hub_publish(api->hub, NULL, "sessions/change", ch);
    json_decref(ch);
    free(id);
    json_object_set_new(s, "running", json_false());
    cdsh_web_reply_json(res, 201, json_pack("{s:o}", "session", s));
}

static void show_session(cdsh_api *api, const char *sid, const cdsh_web_request *req,
                         cdsh_web_response *res)
{
    const char *a = cdsh_web_query(req, "after");
    int64_t hub_id = cdsh_hub_last_id(api->hub); /* before reading: events after it follow */
    cdsh_error err = {0};
    cdsh_session_store *st = cdsh_agent_store(api->agent);
    json_t *s = cdsh_session_store_info_dup(st, sid, &err);
    if (!s) {
        reply_err(res, &err);
        return;
    }
    bool more = false;
    json_t *evs = cdsh_session_store_events(st, sid, a ? atoll(a) : 0, 10000, &more, &err);
    if (!evs) {
        json_decref(s);
        reply_err(res, &err);
        return;
    }
    json_object_set_new(s, "running", json_boolean(is_running(api, sid)));
    cdsh_web_reply_json(res, 200,
                        json_pack("{s:o, s:o, s:b, s:I}", "session", s, "events", evs, "hasMore",
                                  more, "hubId", (json_int_t)hub_id));
}

static void delete_session(cdsh_api *api, const char *sid, cdsh_web_response *res)
{
    if (is_running(api, sid)) {
        cdsh_web_reply_error(res, 409, "SESSION_BUSY",
                             "session %s is running a turn; cancel it first", sid);
        return;
    }
    cdsh_error err = {0};
    if (cdsh_session_store_delete(cdsh_agent_store(api->agent), sid, &err) != 0) {
        reply_err(res, &err);
        return;
    }
    /* What runners keep about it (an engine binding) goes with it. */
    cdsh_session_runners_forget(cdsh_agent_host(api->agent), sid);
    json_t *ch = json_pack("{s:s, s:s}", "reason", "deleted", "id", sid);
    /* and so does what the host keeps for it (background jobs it owns) */
    cdsh_events_emit(cdsh_host_events(cdsh_agent_host(api->agent)), CDSH_EVENT_SESSION_END, NULL,
                     false, ch);
    cdsh_hub_publish(api->hub, NULL, "sessions/change", ch);
    json_decref(ch);
    cdsh_web_reply_json(res, 200, json_pack("{s:s}", "deleted", sid));
}

/* What this front end holds for the fork participants: the host's services. */
static void *fork_service(void *arg, const char *name)
{
    cdsh_api *api = arg;
    return cdsh_host_service(cdsh_agent_host(api->agent), name);
}

/* {atSeq?, title?} → 201 {session, notes}: the participants' notes and
 * warnings (an engine-bound parent's binding carried over, say). */
static void fork_session(cdsh_api *api, const char *sid, const cdsh_web_request *req,
                         cdsh_web_response *res)
{
    if (is_running(api, sid)) {
        cdsh_web_reply_error(res, 409, "SESSION_BUSY",
                             "session %s is running a turn; wait for it or cancel it first", sid);
        return;
    }
    json_t *body = body_or_empty(req, res);
    if (!body)
        return;
    json_t *at = json_object_get(body, "atSeq"), *title = json_object_get(body, "title");
    cdsh_error err = {0};
    char *child = NULL;
    json_t *notes = NULL, *s = NULL;
    cdsh_session_fork_env env = {fork_service, api, cdsh_host_home(cdsh_agent_host(api->agent))};
    /* The participants: the fork hooks the host's plugins registered. */
    const void **hooks = cdsh_host_hooks_dup(cdsh_agent_host(api->agent), CDSH_SESSION_FORK_HOOKS);
    if (at && !json_is_null(at) && (!json_is_integer(at) || json_integer_value(at) < 1))
        cdsh_error_set(&err, CDSH_EINVAL, "BAD_REQUEST", "\"atSeq\" must be an event seq >= 1");
    else if (title && !json_is_null(title) && !json_is_string(title))
        cdsh_error_set(&err, CDSH_EINVAL, "BAD_REQUEST", "\"title\" must be a string");
    else if (!hooks)
        cdsh_error_set(&err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    else if (cdsh_session_store_fork_with(cdsh_agent_store(api->agent), sid, json_integer_value(at),
                                          json_string_value(title),
                                          (const cdsh_session_fork_hook *const *)hooks, &env,
                                          &child, &notes, &err) == 0)
        s = cdsh_session_store_info_dup(cdsh_agent_store(api->agent), child, &err);
    free(hooks);
    json_decref(body);
    if (!s) {
        reply_err(res, &err);
        free(child);
        json_decref(notes);
        return;
    }
    json_t *ch = json_pack("{s:s, s:s, s:s}", "reason", "forked", "id", child, "parentId", sid);
    cdsh_hub_publish(api->hub, NULL, "sessions/change", ch);
    json_decref(ch);
    free(child);
    json_object_set_new(s, "running", json_false());
    cdsh_web_reply_json(
        res, 201, json_pack("{s:o, s:o}", "session", s, "notes", notes ? notes : json_array()));
}

static void send_message(cdsh_api *api, const char *sid, const cdsh_web_request *req,
                         cdsh_web_response *res)
{
    json_t *body = cdsh_web_body_object(req, res);
    if (!body)
        return;
    const char *text = json_string_value(json_object_get(body, "text"));
    cdsh_error err = {0};
    json_t *s = NULL;
    /* Read once, here: start_turn holds the api lock, no file I/O under it. */
    const cdsh_session_runner *runner =
        text && *text ? cdsh_session_runner_find(cdsh_agent_host(api->agent), sid) : NULL;
    if (!text || !*text) {
        cdsh_web_reply_error(res, 400, "BAD_REQUEST", "the body needs a non-empty \"text\"");
    } else if (!(s = cdsh_session_store_info_dup(cdsh_agent_store(api->agent), sid, &err))) {
        reply_err(res, &err);
    } else if (start_turn(api, sid, text, runner, &err) != 0) {
        reply_err(res, &err);
    } else {
        cdsh_web_reply_json(res, 202, json_pack("{s:s, s:b}", "sessionId", sid, "accepted", 1));
    }
    json_decref(s);
    json_decref(body);
}

static void cancel_turn(cdsh_api *api, const char *sid, cdsh_web_response *res)
{
    pthread_mutex_lock(&api->mu);
    running *r = find_turn(api, sid);
    bool fired = r && !r->done;
    if (fired)
        cdsh_cancel_fire(r->tok, "cancelled from the web UI");
    pthread_mutex_unlock(&api->mu);
    cdsh_approvals_cancel_session(api->approvals, sid);
    cdsh_web_reply_json(res, 200, json_pack("{s:s, s:b}", "sessionId", sid, "cancelled", fired));
}

static void run_command(cdsh_api *api, const char *sid, const cdsh_web_request *req,
                        cdsh_web_response *res)
{
    json_t *body = cdsh_web_body_object(req, res);
    if (!body)
        return;
    const char *line = json_string_value(json_object_get(body, "line"));
    running tmp = {.api = api};
    snprintf(tmp.sid, sizeof tmp.sid, "%s", sid);
    json_t *result = NULL;
    cdsh_error err = {0};
    if (cdsh_agent_exec_command(api->agent, sid, line, NULL, publish_event, &tmp, &result, &err))
        reply_err(res, &err);
    else
        cdsh_web_reply_json(res, 200, json_pack("{s:o}", "result", result));
    json_decref(body);
}

static void stream(cdsh_api *api, const char *sid, const cdsh_web_request *req,
                   cdsh_web_response *res)
{
    if (sid) {
        cdsh_error err = {0};
        json_t *s = cdsh_session_store_info_dup(cdsh_agent_store(api->agent), sid, &err);
        if (!s) {
            reply_err(res, &err);
            return;
        }
        json_decref(s);
    }
    const char *last = cdsh_web_header(req, "Last-Event-ID");
    const char *after = cdsh_web_query(req, "after");
    int64_t from = last ? atoll(last) : after ? atoll(after) : -1;
    res->raw = cdsh_hub_stream_new(api->hub, sid, from);
    if (!res->raw)
        cdsh_web_reply_error(res, 500, "INTERNAL", "out of memory");
}

static json_t *panels_json(cdsh_api *api)
{
    json_t *out = json_array();
    cdsh_host *host = cdsh_agent_host(api->agent);
    for (const cdsh_web_asset *a = cdsh_web_assets; a->path; a++) {
        const char *p = a->path;
        size_t n = strlen(p);
        if (strncmp(p, "/panels/", 8) != 0 || n < 12 || strcmp(p + n - 3, ".js") != 0 ||
            strchr(p + 8, '/'))
            continue;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(n - 11), p + 8);
        cdsh_plugin *pl = cdsh_host_plugin_find(host, name);
        bool active = pl && cdsh_plugin_state_get(pl) == CDSH_PLUGIN_ACTIVE;
        json_array_append_new(
            out, json_pack("{s:s, s:s, s:b}", "plugin", name, "module", p, "active", active));
    }
    return out;
}

static void status(cdsh_api *api, cdsh_web_response *res)
{
    cdsh_model_config resolved;
    cdsh_error err = {0};
    json_t *model;
    if (cdsh_model_config_resolve(NULL, NULL, &resolved, &err) == 0) {
        model = json_pack("{s:b, s:s, s:s}", "configured", 1, "model", resolved.model, "baseUrl",
                          resolved.base_url);
        cdsh_model_config_deinit(&resolved);
    } else {
        model = json_pack("{s:b, s:s, s:s, s:s}", "configured", 0, "code", err.code, "message",
                          err.message, "hint",
                          "Set DEEPSEEK_API_KEY (or CDSH_API_KEY) before starting `cdsh web`, or "
                          "point CDSH_BASE_URL and CDSH_MODEL at an OpenAI-compatible server. "
                          "Panels that need no model work without one.");
    }
    cdsh_host *host = cdsh_agent_host(api->agent);
    cdsh_web_reply_json(res, 200,
                        json_pack("{s:s, s:o, s:o, s:o, s:o, s:I}", "version", CDSH_VERSION,
                                  "model", model, "plugins", cdsh_host_plugins_list(host),
                                  "commands", cdsh_commands_list(cdsh_host_commands(host), NULL),
                                  "panels", panels_json(api), "hubId",
                                  (json_int_t)cdsh_hub_last_id(api->hub)));
}

/* ---- approvals ------------------------------------------------------------------------- */

static void session_approvals(cdsh_api *api, const char *sid, const char *id,
                              const cdsh_web_request *req, cdsh_web_response *res)
{
    if (!*id && strcmp(req->method, "GET") == 0) {
        cdsh_web_reply_json(
            res, 200,
            json_pack("{s:o}", "approvals", cdsh_approvals_pending_dup(api->approvals, sid)));
        return;
    }
    if (!*id || strcmp(req->method, "POST") != 0) {
        cdsh_web_reply_error(res, 405, "METHOD_NOT_ALLOWED", "method not allowed here");
        return;
    }
    json_t *body = cdsh_web_body_object(req, res);
    if (!body)
        return;
    const char *option = json_string_value(json_object_get(body, "optionId"));
    bool cancel = json_is_true(json_object_get(body, "cancel"));
    cdsh_error err = {0};
    int rc = option || cancel
                 ? cdsh_approvals_answer(api->approvals, id, sid, cancel ? NULL : option, &err)
                 : cdsh_error_set(&err, CDSH_EINVAL, "BAD_REQUEST",
                                  "the body needs an \"optionId\" or \"cancel\": true");
    json_decref(body);
    if (rc < 0)
        reply_err(res, &err);
    else
        cdsh_web_reply_json(
            res, 200,
            json_pack("{s:s, s:s}", "id", id, "outcome", cancel ? "cancelled" : "selected"));
}

/* The web channel: a request becomes an SSE event of its session. */
static int web_present(void *ud, const json_t *request)
{
    cdsh_api *api = ud;
    const char *sid = json_string_value(json_object_get(request, "sessionId"));
    return cdsh_hub_publish(api->hub, sid && *sid ? sid : NULL, "approval/request", request) > 0
               ? 0
               : CDSH_ECLOSED;
}

static void web_resolved(void *ud, const json_t *resolution)
{
    cdsh_api *api = ud;
    const char *sid = json_string_value(json_object_get(resolution, "sessionId"));
    cdsh_hub_publish(api->hub, sid && *sid ? sid : NULL, "approval/resolved", resolution);
}

/* /api/sessions/<id>[/<action>] */
static void sessions_route(void *arg, const cdsh_web_request *req, cdsh_web_response *res)
{
    cdsh_api *api = arg;
    char sid[96];
    const char *slash = strchr(req->tail, '/');
    size_t n = slash ? (size_t)(slash - req->tail) : strlen(req->tail);
    if (n == 0 || n >= sizeof sid) {
        cdsh_web_reply_error(res, 404, "NOT_FOUND", "no such API route");
        return;
    }
    memcpy(sid, req->tail, n);
    sid[n] = '\0';
    if (!cdsh_session_id_valid(sid)) {
        cdsh_web_reply_error(res, 400, "BAD_SESSION_ID", "invalid session id \"%s\"", sid);
        return;
    }
    const char *action = slash ? slash + 1 : "";
    const char *m = req->method;
    bool get = strcmp(m, "GET") == 0, post = strcmp(m, "POST") == 0;
    if (strcmp(action, "approvals") == 0 || strncmp(action, "approvals/", 10) == 0)
        session_approvals(api, sid, action[9] ? action + 10 : "", req, res);
    else if (!*action && get)
        show_session(api, sid, req, res);
    else if (!*action && strcmp(m, "DELETE") == 0)
        delete_session(api, sid, res);
    else if (strcmp(action, "messages") == 0 && post)
        send_message(api, sid, req, res);
    else if (strcmp(action, "cancel") == 0 && post)
        cancel_turn(api, sid, res);
    else if (strcmp(action, "commands") == 0 && post)
        run_command(api, sid, req, res);
    else if (strcmp(action, "fork") == 0 && post)
        fork_session(api, sid, req, res);
    else if (strcmp(action, "events") == 0 && get)
        stream(api, sid, req, res);
    else if (!*action || !strcmp(action, "messages") || !strcmp(action, "cancel") ||
             !strcmp(action, "commands") || !strcmp(action, "events") || !strcmp(action, "fork"))
        cdsh_web_reply_error(res, 405, "METHOD_NOT_ALLOWED", "method not allowed here");
    else
        cdsh_web_reply_error(res, 404, "NOT_FOUND", "no such API route");
}

static void api_route(void *arg, const cdsh_web_request *req, cdsh_web_response *res)
{
    cdsh_api *api = arg;
    bool get = strcmp(req->method, "GET") == 0;
    if (strcmp(req->path, "/api/sessions") == 0) {
        if (get)
            list_sessions(api, req, res);
        else if (strcmp(req->method, "POST") == 0)
            create_session(api, req, res);
        else
            cdsh_web_reply_error(res, 405, "METHOD_NOT_ALLOWED", "method not allowed here");
    } else if (strcmp(req->path, "/api/status") == 0 && get) {
        status(api, res);
    } else if (strcmp(req->path, "/api/panels") == 0 && get) {
        cdsh_web_reply_json(res, 200, json_pack("{s:o}", "panels", panels_json(api)));
    } else if (strcmp(req->path, "/api/events") == 0 && get) {
        stream(api, NULL, req, res);
    } else {
        cdsh_web_reply_error(res, 404, "NOT_FOUND", "no such API route");
    }
}

/* ---- bus → SSE ---------------------------------------------------------------------- */

static void on_bus(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    (void)scope;
    cdsh_api *api = arg;
    const char *sid = json_string_value(json_object_get(payload, "sessionId"));
    cdsh_hub_publish(api->hub, sid, name, payload);
}

/* ---- lifecycle ----------------------------------------------------------------------- */

int cdsh_api_start(cdsh_web *web, cdsh_agent *agent, cdsh_api **out, cdsh_error *err)
{
    return cdsh_api_start_ex(web, agent, NULL, out, err);
}

int cdsh_api_start_ex(cdsh_web *web, cdsh_agent *agent, const cdsh_api_options *opts,
                      cdsh_api **out, cdsh_error *err)
{
    *out = NULL;
    cdsh_api *api = calloc(1, sizeof *api);
    if (!api)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    api->web = web;
    api->agent = agent;
    pthread_mutex_init(&api->mu, NULL);
    pthread_cond_init(&api->settled, NULL);
    api->pool = cdsh_workpool_new(opts && opts->turn_workers ? opts->turn_workers
                                                             : CDSH_API_TURN_WORKERS);
    api->hub = cdsh_hub_new(0);
    api->approvals = opts ? opts->approvals : NULL;
    if (!api->approvals) {
        api->approvals = cdsh_approvals_new(opts ? opts->approval_timeout_ms : 0);
        api->own_approvals = true;
    }
    int rc = api->hub && api->approvals && api->pool
                 ? 0
                 : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    if (rc == 0) {
        cdsh_approval_channel ch = {web_present, web_resolved, api};
        cdsh_approvals_set_channel(api->approvals, &ch);
        rc = cdsh_approvals_install(api->approvals, cdsh_host_tools(cdsh_agent_host(agent)),
                                    &api->tools_approval, err);
    }
    cdsh_events *bus = cdsh_host_events(cdsh_agent_host(agent));
    if (rc == 0)
        rc = cdsh_events_on(bus, "plugin/state", NULL, on_bus, api, &api->bus_state, err);
    if (rc == 0)
        rc = cdsh_events_on(bus, "plugins/change", NULL, on_bus, api, &api->bus_plugins, err);
    if (rc == 0) /* plugins' changes to sessions (an engine bound, say) */
        rc = cdsh_events_on(bus, "sessions/change", NULL, on_bus, api, &api->bus_sessions, err);
    if (rc == 0)
        rc = cdsh_web_route(web, NULL, "/api/sessions/", CDSH_WEB_ROUTE_PREFIX, sessions_route, api,
                            &api->route_ids[0], err);
    const char *exact[] = {"/api/sessions", "/api/status", "/api/panels", "/api/events"};
    for (int i = 0; rc == 0 && i < 4; i++) {
        int id = 0;
        rc = cdsh_web_route(web, NULL, exact[i], 0, api_route, api, &id, err);
        (void)id; /* exact routes go away with the server */
    }
    if (rc) {
        cdsh_api_shutdown(api);
        cdsh_api_free(api);
        return rc;
    }
    *out = api;
    return 0;
}

void cdsh_api_shutdown(cdsh_api *api)
{
    if (!api)
        return;
    pthread_mutex_lock(&api->mu);
    api->shutting_down = true;
    for (running *r = api->turns; r; r = r->next)
        if (!r->done)
            cdsh_cancel_fire(r->tok, "the server is stopping");
    pthread_mutex_unlock(&api->mu);
    /* Pending requests end "cancelled" and new ones fail closed at once. */
    cdsh_approvals_close(api->approvals);
    cdsh_approvals_set_channel(api->approvals, NULL);
    cdsh_disposer_run(&api->bus_state);
    cdsh_disposer_run(&api->bus_plugins);
    cdsh_disposer_run(&api->bus_sessions);
    if (api->hub)
        cdsh_hub_close(api->hub);
}

void cdsh_api_free(cdsh_api *api)
{
    if (!api)
        return;
    cdsh_workpool_free(api->pool); /* every turn job has run and returned */
    running *r = api->turns;
    while (r) {
        running *next = r->next;
        free(r->text);
        cdsh_cancel_free(r->tok);
        free(r);
        r = next;
    }
    cdsh_disposer_run(&api->tools_approval); /* no turn asks any more */
    if (api->own_approvals)
        cdsh_approvals_free(api->approvals);
    cdsh_hub_free(api->hub);
    pthread_cond_destroy(&api->settled);
    pthread_mutex_destroy(&api->mu);
    free(api);
}
