/* acp_agent.c — a scripted ACP agent for the client tests (runs under ASan
 * with the rest). Behaviour on start-up comes from flags; each prompt's
 * last text block is a command (earlier blocks are context): hello,
 * all-updates, permission, read P, write P TEXT, stall, stall-hard, slow N,
 * stream-forever (a chunk every 20 ms until session/cancel), stream-forever-hard
 * (the same, deaf to session/cancel: it streams until the pipe closes),
 * die, garbage, funds, auth, ratelimit, sessions, mcp, late-args (Claude's
 * late rawInput), abort (Codex: a rejected permission ends the turn
 * cancelled), recall (quotes the context block when one came, else the
 * session's previous message, which session/fork carries over). Sessions
 * are listed by session/list in pages of --page-size and kept in
 * --state-dir DIR/sessions.json when given (so another process can fork
 * them, as real agents' stores allow). --fork-volatile makes forked
 * sessions unknown to session/load and session/resume in another process
 * (as Claude Code ACP's). --no-mcp advertises no mcpCapabilities and
 * refuses mcpServers (as DSH); --fail-new TEXT fails session/new with the
 * cause only on stderr. --echo-env NAME echoes a variable. Not a real
 * agent: it never calls a model. */
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proto/jsonrpc.h"

static const char *config_style = "both"; /* options | modes | both | none */
static int no_load, need_auth, authed, leak, garbage_first, no_fork, no_list, no_mcp;
static int fork_volatile;
/* --fail-new TEXT: session/new writes TEXT to stderr and fails as Claude
 * Code ACP does as root (the cause only on stderr). */
static const char *fail_new;
static int page_size = 2;
static const char *state_dir; /* NULL: sessions only in memory */
static json_t *memory_db;     /* sessionId → {sessionId, cwd, title, updatedAt, last} */
static int init_delay_ms;
/* --echo-env NAME: the variable's value is echoed on stderr and in
 * initialize's agentInfo._meta (a careless agent). */
static const char *echo_env;
static int session_counter;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static cdsh_jsonrpc_request *held; /* a stalled prompt */
static int held_soft;
static volatile int cancel_seen; /* session/cancel arrived (stream-forever stops) */
static char current_mode[32] = "default";
static char current_model[64] = "fake/one";
static char mcp_names[256] = "-"; /* names of the MCP servers of the last session/new */

/* The session table: re-read from --state-dir at every use so that a fork
 * in another process sees what this one wrote. Caller holds mu. */
static json_t *db_load(void)
{
    if (!state_dir)
        return json_incref(memory_db);
    char path[4096];
    snprintf(path, sizeof path, "%s/sessions.json", state_dir);
    json_t *db = json_load_file(path, 0, NULL);
    return json_is_object(db) ? db : (json_decref(db), json_object());
}

static void db_save(json_t *db)
{
    if (!state_dir)
        return;
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/sessions.json", state_dir);
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    if (json_dump_file(db, tmp, JSON_COMPACT) == 0)
        rename(tmp, path);
}

static void db_put(const char *sid, const char *cwd, const char *title, const char *last)
{
    char now[32];
    time_t t = time(NULL);
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    pthread_mutex_lock(&mu);
    json_t *db = db_load();
    json_t *e = json_object_get(db, sid);
    if (!e) {
        e = json_pack("{s:s,s:s,s:n,s:n}", "sessionId", sid, "cwd", cwd ? cwd : "/", "title",
                      "last");
        json_object_set_new(db, sid, e);
    }
    if (cwd)
        json_object_set_new(e, "cwd", json_string(cwd));
    if (title && !json_is_string(json_object_get(e, "title")))
        json_object_set_new(e, "title", json_string(title));
    if (last)
        json_object_set_new(e, "last", json_string(last));
    json_object_set_new(e, "updatedAt", json_string(now));
    db_save(db);
    json_decref(db);
    pthread_mutex_unlock(&mu);
}

/* Owned copy of one session's row, or NULL. */
static json_t *db_get(const char *sid)
{
    pthread_mutex_lock(&mu);
    json_t *db = db_load();
    json_t *e = sid ? json_deep_copy(json_object_get(db, sid)) : NULL;
    json_decref(db);
    pthread_mutex_unlock(&mu);
    return e;
}

static json_t *config_options(void)
{
    return json_pack("[{s:s,s:s,s:s,s:s,s:s,s:s,s:[{s:s,s:s,s:s},{s:s,s:s,s:s}]},"
                     "{s:s,s:s,s:s,s:s,s:s,s:[{s:s,s:s},{s:s,s:s}]}]",
                     "id", "mode", "name", "Session Mode", "description",
                     "Controls how much the agent may do on its own", "category", "mode", "type",
                     "select", "currentValue", current_mode, "options", "value", "default", "name",
                     "Default", "description", "Asks before edits", "value", "plan", "name", "Plan",
                     "description", "Research and plan only — no edits or commands", "id", "model",
                     "name", "Model", "category", "model", "type", "select", "currentValue",
                     current_model, "options", "value", "fake/one", "name", "Fake One", "value",
                     "fake/two", "name", "Fake Two");
}

static json_t *modes(void)
{
    return json_pack("{s:s,s:[{s:s,s:s,s:s},{s:s,s:s,s:s}]}", "currentModeId", current_mode,
                     "availableModes", "id", "default", "name", "Default", "description",
                     "Asks before edits", "id", "plan", "name", "Plan", "description",
                     "Research and plan only — no edits or commands");
}

static void add_config(json_t *res)
{
    if (strcmp(config_style, "options") == 0 || strcmp(config_style, "both") == 0)
        json_object_set_new(res, "configOptions", config_options());
    if (strcmp(config_style, "modes") == 0 || strcmp(config_style, "both") == 0)
        json_object_set_new(res, "modes", modes());
}

static void update(cdsh_jsonrpc *peer, const char *sid, json_t *upd)
{
    json_t *p = json_pack("{s:s,s:o}", "sessionId", sid, "update", upd);
    cdsh_jsonrpc_notify(peer, "session/update", p, NULL);
    json_decref(p);
}

static void say(cdsh_jsonrpc *peer, const char *sid, const char *text)
{
    update(peer, sid,
           json_pack("{s:s,s:{s:s,s:s}}", "sessionUpdate", "agent_message_chunk", "content", "type",
                     "text", "text", text));
}

static void reply_stop(cdsh_jsonrpc_request *req, const char *stop)
{
    json_t *r = json_pack("{s:s,s:{s:i,s:i}}", "stopReason", stop, "usage", "inputTokens", 3,
                          "outputTokens", 1);
    cdsh_jsonrpc_respond(req, r, NULL);
    json_decref(r);
}

static void raw_line(const char *text)
{
    size_t n = strlen(text);
    while (n > 0) {
        ssize_t w = write(1, text, n);
        if (w <= 0) {
            usleep(1000);
            continue;
        }
        text += w;
        n -= (size_t)w;
    }
}

static void on_initialize(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)arg;
    (void)peer;
    if (init_delay_ms)
        usleep((useconds_t)init_delay_ms * 1000);
    json_t *r = json_pack("{s:i,s:{s:b,s:{s:b,s:b},s:{s:b,s:b},s:{s:{},s:{}}},s:{s:s,s:s,s:s},"
                          "s:[{s:s,s:s,s:s}]}",
                          "protocolVersion", 1, "agentCapabilities", "loadSession", !no_load,
                          "mcpCapabilities", "http", 1, "sse", 0, "promptCapabilities", "image", 0,
                          "embeddedContext", 1, "sessionCapabilities", "close", "resume",
                          "agentInfo", "name", "fixture-agent", "title", "Fixture Agent", "version",
                          "1.0.0", "authMethods", "id", "fixture-login", "name", "Fixture login",
                          "description", "Log in to the fixture");
    json_t *caps = json_object_get(json_object_get(r, "agentCapabilities"), "sessionCapabilities");
    if (!no_list)
        json_object_set_new(caps, "list", json_object());
    if (!no_fork)
        json_object_set_new(caps, "fork", json_object());
    if (echo_env)
        json_object_set_new(json_object_get(r, "agentInfo"), "_meta",
                            json_pack("{s:s}", "startedWith",
                                      getenv(echo_env) ? getenv(echo_env) : ""));
    if (no_mcp) /* like DSH: no mcpCapabilities, and session/new refuses any server */
        json_object_del(json_object_get(r, "agentCapabilities"), "mcpCapabilities");
    if (leak) {
        json_object_set_new(r, "_meta",
                            json_pack("{s:s,s:s,s:s}", "apiKey", "sk-fixtureSECRET1234567890",
                                      "note", "Authorization: Bearer fixtureTOKENabcdef123456",
                                      "cookie", "session=fixtureCOOKIE42"));
    }
    cdsh_jsonrpc_respond(req, r, NULL);
    json_decref(r);
}

static void on_authenticate(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)arg;
    (void)peer;
    const char *m =
        json_string_value(json_object_get(cdsh_jsonrpc_request_params(req), "methodId"));
    if (!m || strcmp(m, "fixture-login") != 0) {
        cdsh_jsonrpc_respond_error(req, -32602, "Invalid params: unknown auth method", NULL, NULL);
        return;
    }
    authed = 1;
    json_t *r = json_object();
    cdsh_jsonrpc_respond(req, r, NULL);
    json_decref(r);
}

static void on_session_new(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)arg;
    if (need_auth && !authed) {
        cdsh_jsonrpc_respond_error(req, -32000, "Authentication required", NULL, NULL);
        return;
    }
    if (fail_new) {
        fprintf(stderr, "%s\n", fail_new);
        fflush(stderr);
        cdsh_jsonrpc_respond_error(req, -32603,
                                   "Internal error: Query closed before response received", NULL,
                                   NULL);
        return;
    }
    if (no_mcp && json_array_size(json_object_get(cdsh_jsonrpc_request_params(req), "mcpServers"))) {
        cdsh_jsonrpc_respond_error(req, -32602, "mcpServers is not supported", NULL, NULL);
        return;
    }
    char sid[64];
    snprintf(sid, sizeof sid, "fx-%d-%d", (int)getpid(), ++session_counter);
    size_t i;
    json_t *m;
    mcp_names[0] = '\0';
    json_array_foreach(json_object_get(cdsh_jsonrpc_request_params(req), "mcpServers"), i, m) {
        const char *type = json_string_value(json_object_get(m, "type"));
        size_t len = strlen(mcp_names);
        snprintf(mcp_names + len, sizeof mcp_names - len, "%s%s:%s", len ? "," : "",
                 json_string_value(json_object_get(m, "name")), type ? type : "stdio");
    }
    if (!mcp_names[0])
        snprintf(mcp_names, sizeof mcp_names, "-");
    db_put(sid, json_string_value(json_object_get(cdsh_jsonrpc_request_params(req), "cwd")), NULL,
           NULL);
    json_t *r = json_pack("{s:s}", "sessionId", sid);
    add_config(r);
    cdsh_jsonrpc_respond(req, r, NULL);
    json_decref(r);
    update(peer, sid,
           json_pack("{s:s,s:[{s:s,s:s}]}", "sessionUpdate", "available_commands_update",
                     "availableCommands", "name", "init", "description", "create AGENTS.md"));
}

static void on_session_load(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    const char *method = arg;
    json_t *params = cdsh_jsonrpc_request_params(req);
    const char *sid = json_string_value(json_object_get(params, "sessionId"));
    /* A volatile fork ("fv-<pid>-<n>") exists only in the process that made it. */
    char mine[32];
    snprintf(mine, sizeof mine, "fv-%d-", (int)getpid());
    if (!sid || (strncmp(sid, "fx-", 3) != 0 && strncmp(sid, mine, strlen(mine)) != 0)) {
        cdsh_jsonrpc_respond_error(req, -32002, "Resource not found: session", NULL, NULL);
        return;
    }
    if (strcmp(method, "load") == 0) {
        update(peer, sid,
               json_pack("{s:s,s:{s:s,s:s}}", "sessionUpdate", "user_message_chunk", "content",
                         "type", "text", "text", "earlier question"));
        char text[128];
        snprintf(text, sizeof text, "restored %s", sid);
        say(peer, sid, text);
    }
    json_t *r = json_object();
    add_config(r);
    cdsh_jsonrpc_respond(req, r, NULL);
    json_decref(r);
}

static void on_set_config(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)arg;
    json_t *params = cdsh_jsonrpc_request_params(req);
    if (strcmp(config_style, "options") != 0 && strcmp(config_style, "both") != 0) {
        cdsh_jsonrpc_respond_error(req, -32601, "Method not found: session/set_config_option", NULL,
                                   NULL);
        return;
    }
    const char *id = json_string_value(json_object_get(params, "configId"));
    const char *v = json_string_value(json_object_get(params, "value"));
    if (id && v && strcmp(id, "mode") == 0)
        snprintf(current_mode, sizeof current_mode, "%s", v);
    else if (id && v && strcmp(id, "model") == 0)
        snprintf(current_model, sizeof current_model, "%s", v);
    else {
        cdsh_jsonrpc_respond_error(req, -32602, "Invalid params: unknown config option", NULL,
                                   NULL);
        return;
    }
    json_t *r = json_pack("{s:o}", "configOptions", config_options());
    cdsh_jsonrpc_respond(req, r, NULL);
    json_decref(r);
    update(peer, json_string_value(json_object_get(params, "sessionId")),
           json_pack("{s:s,s:o}", "sessionUpdate", "config_option_update", "configOptions",
                     config_options()));
}

static void on_set_mode(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)arg;
    json_t *params = cdsh_jsonrpc_request_params(req);
    const char *v = json_string_value(json_object_get(params, "modeId"));
    if (strcmp(config_style, "modes") != 0 && strcmp(config_style, "both") != 0) {
        cdsh_jsonrpc_respond_error(req, -32601, "Method not found: session/set_mode", NULL, NULL);
        return;
    }
    snprintf(current_mode, sizeof current_mode, "%s", v ? v : "default");
    json_t *r = json_object();
    cdsh_jsonrpc_respond(req, r, NULL);
    json_decref(r);
    update(peer, json_string_value(json_object_get(params, "sessionId")),
           json_pack("{s:s,s:s}", "sessionUpdate", "current_mode_update", "currentModeId",
                     current_mode));
}

static void on_simple(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)arg;
    (void)peer;
    json_t *r = json_object();
    cdsh_jsonrpc_respond(req, r, NULL);
    json_decref(r);
}

/* session/fork: a new session with the source's remembered message. */
static void on_fork(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)arg;
    (void)peer;
    json_t *params = cdsh_jsonrpc_request_params(req);
    json_t *src = db_get(json_string_value(json_object_get(params, "sessionId")));
    if (!src) {
        cdsh_jsonrpc_respond_error(req, -32002, "Resource not found: session", NULL, NULL);
        return;
    }
    char sid[64], title[256];
    snprintf(sid, sizeof sid, "%s-%d-%d", fork_volatile ? "fv" : "fx", (int)getpid(),
             ++session_counter);
    snprintf(title, sizeof title, "fork of %s",
             json_string_value(json_object_get(src, "title"))
                 ? json_string_value(json_object_get(src, "title"))
                 : json_string_value(json_object_get(src, "sessionId")));
    db_put(sid, json_string_value(json_object_get(params, "cwd")), title,
           json_string_value(json_object_get(src, "last")));
    json_decref(src);
    json_t *r = json_pack("{s:s}", "sessionId", sid);
    add_config(r);
    cdsh_jsonrpc_respond(req, r, NULL);
    json_decref(r);
}

/* session/list: the table filtered by cwd, page_size rows a page; the
 * cursor is the offset of the next row. */
static void on_list(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)arg;
    (void)peer;
    json_t *params = cdsh_jsonrpc_request_params(req);
    const char *cwd = json_string_value(json_object_get(params, "cwd"));
    const char *cursor = json_string_value(json_object_get(params, "cursor"));
    int from = cursor ? atoi(cursor) : 0, seen = 0;
    pthread_mutex_lock(&mu);
    json_t *db = db_load();
    pthread_mutex_unlock(&mu);
    json_t *page = json_array(), *r = json_pack("{s:o}", "sessions", page);
    const char *k;
    json_t *e;
    json_object_foreach(db, k, e) {
        if (cwd && strcmp(cwd, json_string_value(json_object_get(e, "cwd"))) != 0)
            continue;
        if (seen >= from && (int)json_array_size(page) < page_size)
            json_array_append_new(page, json_pack("{s:O,s:O,s:O,s:O}", "sessionId",
                                                  json_object_get(e, "sessionId"), "cwd",
                                                  json_object_get(e, "cwd"), "title",
                                                  json_object_get(e, "title"), "updatedAt",
                                                  json_object_get(e, "updatedAt")));
        seen++;
    }
    if (from + page_size < seen)
        json_object_set_new(r, "nextCursor", json_sprintf("%d", from + page_size));
    cdsh_jsonrpc_respond(req, r, NULL);
    json_decref(r);
    json_decref(db);
}

static void on_cancel(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)arg;
    (void)peer;
    (void)req;
    pthread_mutex_lock(&mu);
    cancel_seen = 1;
    cdsh_jsonrpc_request *h = held_soft ? held : NULL;
    if (h)
        held = NULL;
    pthread_mutex_unlock(&mu);
    if (h)
        reply_stop(h, "cancelled");
}

/* stream-forever[-hard]: streams from a thread of its own (handlers run one
 * at a time, and session/cancel must get through). */
typedef struct streamer {
    cdsh_jsonrpc *peer;
    cdsh_jsonrpc_request *req;
    char sid[256];
    int hard;
} streamer;

static void *stream_main(void *arg)
{
    streamer *st = arg;
    for (long n = 0; !cdsh_jsonrpc_is_closed(st->peer); n++) {
        pthread_mutex_lock(&mu);
        int stop = cancel_seen && !st->hard;
        pthread_mutex_unlock(&mu);
        if (stop)
            break;
        char tick[32];
        snprintf(tick, sizeof tick, "tick%ld ", n);
        say(st->peer, st->sid, tick);
        usleep(20 * 1000);
    }
    if (!cdsh_jsonrpc_is_closed(st->peer))
        reply_stop(st->req, "cancelled");
    else
        cdsh_jsonrpc_respond_error(st->req, -32603, "shutting down", NULL, NULL);
    free(st);
    return NULL;
}

static void all_updates(cdsh_jsonrpc *peer, const char *sid)
{
    update(peer, sid,
           json_pack("{s:s,s:{s:s,s:s}}", "sessionUpdate", "agent_thought_chunk", "content", "type",
                     "text", "text", "thinking about it"));
    update(peer, sid,
           json_pack("{s:s,s:[{s:s,s:s,s:s},{s:s,s:s,s:s}]}", "sessionUpdate", "plan", "entries",
                     "content", "look", "priority", "high", "status", "completed", "content",
                     "answer", "priority", "medium", "status", "in_progress"));
    update(peer, sid,
           json_pack("{s:s,s:s,s:s,s:s,s:s,s:{s:s}}", "sessionUpdate", "tool_call", "toolCallId",
                     "call-1", "title", "ls", "kind", "execute", "status", "pending", "rawInput",
                     "command", "ls"));
    update(peer, sid,
           json_pack("{s:s,s:s,s:s,s:[{s:s,s:{s:s,s:s}}]}", "sessionUpdate", "tool_call_update",
                     "toolCallId", "call-1", "status", "completed", "content", "type", "content",
                     "content", "type", "text", "text", "a.txt b.txt"));
    update(peer, sid,
           json_pack("{s:s,s:s}", "sessionUpdate", "current_mode_update", "currentModeId", "plan"));
    update(peer, sid,
           json_pack("{s:s,s:s,s:s}", "sessionUpdate", "session_info_update", "title",
                     "Fixture session", "updatedAt", "2026-11-29T00:00:00Z"));
    update(peer, sid,
           json_pack("{s:s,s:i,s:i,s:{s:f,s:s}}", "sessionUpdate", "usage_update", "used", 10,
                     "size", 1000, "cost", "amount", 0.001, "currency", "USD"));
    update(peer, sid,
           json_pack("{s:s,s:s,s:s}", "sessionUpdate", "notice", "severity", "info", "title",
                     "heads up"));
    update(peer, sid,
           json_pack("{s:s,s:s}", "sessionUpdate", "mystery_update", "payload", "ignored"));
    say(peer, sid, "all done");
}

static void tool_call(cdsh_jsonrpc *peer, const char *sid, const char *id, const char *path)
{
    update(peer, sid,
           json_pack("{s:s,s:s,s:s,s:s,s:s,s:{s:s}}", "sessionUpdate", "tool_call", "toolCallId",
                     id, "title", "read", "kind", "read", "status", "pending", "rawInput", "path",
                     path));
}

static void tool_done(cdsh_jsonrpc *peer, const char *sid, const char *id, const char *text)
{
    update(peer, sid,
           json_pack("{s:s,s:s,s:s,s:[{s:s,s:{s:s,s:s}}]}", "sessionUpdate", "tool_call_update",
                     "toolCallId", id, "status", "completed", "content", "type", "content",
                     "content", "type", "text", "text", text));
}

/* Calls that overlap: b starts while a runs and ends first; c never ends. */
static void overlapping_tools(cdsh_jsonrpc *peer, const char *sid)
{
    say(peer, sid, "looking ");
    tool_call(peer, sid, "call-a", "a.txt");
    tool_call(peer, sid, "call-b", "b.txt");
    tool_done(peer, sid, "call-b", "B");
    tool_done(peer, sid, "call-a", "A");
    tool_call(peer, sid, "call-c", "c.txt");
    say(peer, sid, "done");
}

static void on_prompt(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)arg;
    json_t *params = cdsh_jsonrpc_request_params(req);
    const char *sid = json_string_value(json_object_get(params, "sessionId"));
    /* The last block is the command; earlier ones are context (cdsh's
     * replayed transcript), which recall quotes. */
    json_t *blocks = json_object_get(params, "prompt");
    size_t nblocks = json_array_size(blocks);
    const char *text = json_string_value(
        json_object_get(json_array_get(blocks, nblocks ? nblocks - 1 : 0), "text"));
    const char *context =
        nblocks > 1 ? json_string_value(json_object_get(json_array_get(blocks, 0), "text")) : NULL;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s", text ? text : "");
    if (!sid) {
        cdsh_jsonrpc_respond_error(req, -32602, "Invalid params: sessionId", NULL, NULL);
        return;
    }
    if (strcmp(cmd, "all-updates") == 0) {
        all_updates(peer, sid);
    } else if (strcmp(cmd, "overlapping-tools") == 0) {
        overlapping_tools(peer, sid);
    } else if (strcmp(cmd, "late-args") == 0) {
        /* As Claude Code ACP: rawInput {} first, the input in a second
         * pending tool_call, then the end without rawInput. */
        update(peer, sid,
               json_pack("{s:s,s:s,s:s,s:s,s:s,s:{}}", "sessionUpdate", "tool_call", "toolCallId",
                         "call-late", "title", "Terminal", "kind", "execute", "status", "pending",
                         "rawInput"));
        update(peer, sid,
               json_pack("{s:s,s:s,s:s,s:s,s:s,s:{s:s}}", "sessionUpdate", "tool_call",
                         "toolCallId", "call-late", "title", "`echo hi`", "kind", "execute",
                         "status", "pending", "rawInput", "command", "echo hi"));
        tool_done(peer, sid, "call-late", "hi");
        say(peer, sid, "ran it");
    } else if (strcmp(cmd, "abort") == 0) {
        /* As Codex ACP: a rejected permission ("abort") ends the turn cancelled. */
        json_t *p = json_pack("{s:s,s:{s:s,s:s},s:[{s:s,s:s,s:s},{s:s,s:s,s:s}]}", "sessionId",
                              sid, "toolCall", "toolCallId", "call-x", "title", "touch x",
                              "options", "optionId", "approved", "name", "Yes", "kind",
                              "allow_once", "optionId", "abort", "name",
                              "No, and tell Codex what to do differently", "kind", "reject_once");
        json_t *res = NULL;
        int rc =
            cdsh_jsonrpc_call(peer, "session/request_permission", p, 30000, NULL, &res, NULL, NULL);
        json_decref(p);
        const char *opt = json_string_value(
            json_object_get(json_object_get(res, "outcome"), "optionId"));
        bool go = rc == 0 && opt && strcmp(opt, "approved") == 0;
        json_decref(res);
        if (!go) {
            reply_stop(req, "cancelled");
            return;
        }
        say(peer, sid, "touched");
    } else if (strcmp(cmd, "permission") == 0) {
        update(peer, sid,
               json_pack("{s:s,s:s,s:s,s:s,s:s}", "sessionUpdate", "tool_call", "toolCallId",
                         "call-p", "title", "rm -rf build", "kind", "execute", "status",
                         "pending"));
        json_t *p =
            json_pack("{s:s,s:{s:s,s:s},s:[{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s,s:s}]}",
                      "sessionId", sid, "toolCall", "toolCallId", "call-p", "title", "rm -rf build",
                      "options", "optionId", "once", "name", "Allow once", "kind", "allow_once",
                      "optionId", "always", "name", "Always allow", "kind", "allow_always",
                      "optionId", "reject", "name", "Reject", "kind", "reject_once");
        json_t *res = NULL;
        cdsh_error e = {0};
        int rc =
            cdsh_jsonrpc_call(peer, "session/request_permission", p, 30000, NULL, &res, NULL, &e);
        json_decref(p);
        json_t *o = json_object_get(res, "outcome");
        char msg[256];
        snprintf(msg, sizeof msg, "permission: %s/%s",
                 rc == 0 ? json_string_value(json_object_get(o, "outcome")) : "error",
                 rc == 0 && json_object_get(o, "optionId")
                     ? json_string_value(json_object_get(o, "optionId"))
                     : "-");
        json_decref(res);
        say(peer, sid, msg);
    } else if (strncmp(cmd, "read ", 5) == 0 || strncmp(cmd, "write ", 6) == 0) {
        int is_read = cmd[0] == 'r';
        char *path = cmd + (is_read ? 5 : 6);
        char *content = NULL;
        if (!is_read && (content = strchr(path, ' ')))
            *content++ = '\0';
        json_t *p = is_read ? json_pack("{s:s,s:s}", "sessionId", sid, "path", path)
                            : json_pack("{s:s,s:s,s:s}", "sessionId", sid, "path", path, "content",
                                        content ? content : "");
        json_t *res = NULL;
        cdsh_jsonrpc_remote_error rerr = {0};
        int rc = cdsh_jsonrpc_call(peer, is_read ? "fs/read_text_file" : "fs/write_text_file", p,
                                   30000, NULL, &res, &rerr, NULL);
        json_decref(p);
        char msg[4096 + 64];
        if (rc == 0)
            snprintf(msg, sizeof msg, "%s: %s", is_read ? "read" : "write",
                     is_read ? json_string_value(json_object_get(res, "content")) : "ok");
        else
            snprintf(msg, sizeof msg, "%s-error: %lld %s", is_read ? "read" : "write",
                     (long long)rerr.code, rerr.message ? rerr.message : "?");
        cdsh_jsonrpc_remote_error_clear(&rerr);
        json_decref(res);
        say(peer, sid, msg);
    } else if (strcmp(cmd, "stall") == 0 || strcmp(cmd, "stall-hard") == 0) {
        say(peer, sid, "thinking...");
        pthread_mutex_lock(&mu);
        held = cdsh_jsonrpc_request_hold(req);
        held_soft = strcmp(cmd, "stall") == 0;
        pthread_mutex_unlock(&mu);
        return;
    } else if (strcmp(cmd, "stream-forever") == 0 || strcmp(cmd, "stream-forever-hard") == 0) {
        streamer *st = calloc(1, sizeof *st);
        pthread_t t;
        if (!st)
            _exit(4);
        st->peer = peer;
        snprintf(st->sid, sizeof st->sid, "%s", sid);
        st->hard = strcmp(cmd, "stream-forever-hard") == 0;
        pthread_mutex_lock(&mu);
        cancel_seen = 0;
        pthread_mutex_unlock(&mu);
        st->req = cdsh_jsonrpc_request_hold(req);
        if (pthread_create(&t, NULL, stream_main, st) != 0)
            _exit(4);
        pthread_detach(t);
        return;
    } else if (strncmp(cmd, "slow ", 5) == 0) {
        int n = atoi(cmd + 5);
        for (int i = 0; i < n; i++) {
            usleep(100 * 1000);
            say(peer, sid, ".");
        }
    } else if (strcmp(cmd, "die") == 0) {
        say(peer, sid, "about to crash");
        usleep(50 * 1000);
        _exit(3);
    } else if (strcmp(cmd, "garbage") == 0) {
        raw_line("this is not json {\n");
        raw_line("[1,2,3]\n");
        say(peer, sid, "PONG");
    } else if (strcmp(cmd, "funds") == 0) {
        json_t *d =
            json_pack("{s:s}", "details", "Upstream request failed: Insufficient account funds");
        cdsh_jsonrpc_respond_error(req, -32603, "Internal error", d, NULL);
        json_decref(d);
        return;
    } else if (strcmp(cmd, "auth") == 0) {
        cdsh_jsonrpc_respond_error(req, -32000, "Authentication required", NULL, NULL);
        return;
    } else if (strcmp(cmd, "badkey") == 0) {
        /* OpenCode's answer when the provider rejects the key */
        cdsh_jsonrpc_respond_error(req, -32603, "Internal error: Incorrect API key provided: dummy.",
                                   NULL, NULL);
        return;
    } else if (strcmp(cmd, "ratelimit") == 0) {
        cdsh_jsonrpc_respond_error(req, -32603, "Rate limit exceeded, retry later (429)", NULL,
                                   NULL);
        return;
    } else if (strcmp(cmd, "mcp") == 0) {
        char msg[300];
        snprintf(msg, sizeof msg, "mcp: %s", mcp_names);
        say(peer, sid, msg);
    } else if (strcmp(cmd, "recall") == 0) {
        json_t *e = db_get(sid);
        const char *last = json_string_value(json_object_get(e, "last"));
        char msg[4200];
        if (context)
            snprintf(msg, sizeof msg, "recall from context: %s", context);
        else
            snprintf(msg, sizeof msg, "recall: %s", last ? last : "-");
        json_decref(e);
        say(peer, sid, msg);
    } else if (strcmp(cmd, "sessions") == 0) {
        char msg[64];
        snprintf(msg, sizeof msg, "sessions: %d", session_counter);
        say(peer, sid, msg);
    } else {
        say(peer, sid, "PONG");
    }
    if (strcmp(cmd, "recall") != 0) /* what the next recall quotes */
        db_put(sid, NULL, cmd, cmd);
    reply_stop(req, "end_turn");
}

int main(int argc, char **argv)
{
    const char *pid_file = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            config_style = argv[++i];
        else if (strcmp(argv[i], "--no-load") == 0)
            no_load = 1;
        else if (strcmp(argv[i], "--auth") == 0)
            need_auth = 1;
        else if (strcmp(argv[i], "--leak") == 0)
            leak = 1;
        else if (strcmp(argv[i], "--no-fork") == 0)
            no_fork = 1;
        else if (strcmp(argv[i], "--no-list") == 0)
            no_list = 1;
        else if (strcmp(argv[i], "--no-mcp") == 0)
            no_mcp = 1;
        else if (strcmp(argv[i], "--fail-new") == 0 && i + 1 < argc)
            fail_new = argv[++i];
        else if (strcmp(argv[i], "--state-dir") == 0 && i + 1 < argc)
            state_dir = argv[++i];
        else if (strcmp(argv[i], "--page-size") == 0 && i + 1 < argc)
            page_size = atoi(argv[++i]) > 0 ? atoi(argv[i]) : 2;
        else if (strcmp(argv[i], "--garbage-first") == 0)
            garbage_first = 1;
        else if (strcmp(argv[i], "--fork-volatile") == 0)
            fork_volatile = 1;
        else if (strcmp(argv[i], "--echo-env") == 0 && i + 1 < argc)
            echo_env = argv[++i];
        else if (strcmp(argv[i], "--init-delay") == 0 && i + 1 < argc)
            init_delay_ms = atoi(argv[++i]);
        else if (strcmp(argv[i], "--pid-file") == 0 && i + 1 < argc)
            pid_file = argv[++i];
        else if (strcmp(argv[i], "--exit-at-once") == 0) {
            fprintf(stderr, "fixture: refusing to start (asked to)\n");
            return 7;
        }
    }
    if (pid_file) {
        FILE *f = fopen(pid_file, "a");
        if (f) {
            fprintf(f, "%d\n", (int)getpid());
            fclose(f);
        }
    }
    if (garbage_first)
        raw_line("fixture agent starting (not json)\n");
    memory_db = json_object();
    if (echo_env) /* echoes what cdsh passed, as careless agents log it */
        fprintf(stderr, "using %s=%s; contact ops@example.com, 密码：hunter2x\n", echo_env,
                getenv(echo_env) ? getenv(echo_env) : "");
    fprintf(stderr, "fixture agent ready\n");
    cdsh_jsonrpc_config cfg = {.name = "client"};
    cdsh_jsonrpc *peer = cdsh_jsonrpc_new(0, 1, &cfg, NULL);
    if (!peer)
        return 1;
    cdsh_jsonrpc_handle(peer, "initialize", on_initialize, NULL, NULL);
    cdsh_jsonrpc_handle(peer, "authenticate", on_authenticate, NULL, NULL);
    cdsh_jsonrpc_handle(peer, "session/new", on_session_new, NULL, NULL);
    cdsh_jsonrpc_handle(peer, "session/load", on_session_load, "load", NULL);
    cdsh_jsonrpc_handle(peer, "session/resume", on_session_load, "resume", NULL);
    cdsh_jsonrpc_handle(peer, "session/set_config_option", on_set_config, NULL, NULL);
    cdsh_jsonrpc_handle(peer, "session/set_mode", on_set_mode, NULL, NULL);
    cdsh_jsonrpc_handle(peer, "session/close", on_simple, NULL, NULL);
    cdsh_jsonrpc_handle(peer, "session/list", on_list, NULL, NULL);
    cdsh_jsonrpc_handle(peer, "session/fork", on_fork, NULL, NULL);
    cdsh_jsonrpc_handle(peer, "session/prompt", on_prompt, NULL, NULL);
    cdsh_jsonrpc_handle(peer, "session/cancel", on_cancel, NULL, NULL);
    cdsh_jsonrpc_start(peer, NULL);
    while (!cdsh_jsonrpc_is_closed(peer))
        usleep(20 * 1000);
    pthread_mutex_lock(&mu);
    cdsh_jsonrpc_request *h = held;
    held = NULL;
    pthread_mutex_unlock(&mu);
    if (h)
        cdsh_jsonrpc_respond_error(h, -32603, "shutting down", NULL, NULL);
    cdsh_jsonrpc_free(peer);
    json_decref(memory_db);
    return 0;
}
