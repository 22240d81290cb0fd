/* turn.c — an engine turn as a recorded cdsh turn: the update → event
 * mapping of turn.h, the tool-call table of one turn and its closing
 * events. Talking to the agent is service.c; storing is the session store. */
#include "plugins/acp/turn.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "plugins/acp/state.h"

#define MODULE "acp"

typedef struct call {
    struct call *next; /* in order of first sight */
    char *id;
    char *name;
    char *args;  /* rawInput as JSON text, "{}" without one */
    char *title; /* of the first sight; may be NULL */
    char *kind;  /* likewise */
    char *status;
    json_t *content;    /* the latest ToolCallContent array */
    json_t *raw_output; /* the latest rawOutput */
    bool ready; /* its arguments are final: a status past "pending", a later call or the end */
    bool logged;        /* advertised and its tool/call logged */
    bool ended;         /* a completed/failed status was seen */
    bool failed;        /* that status was failed */
    bool done;          /* its tool/result is logged */
} call;

typedef struct writer {
    pthread_mutex_t mu;
    cdsh_session_store *store;
    const char *sid;
    int64_t turn;
    cdsh_agent_event_fn fn;
    void *arg;
    cdsh_strbuf text, reasoning;
    call *calls;
} writer;

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* Sends an event: type, sessionId, turn, step (1 inside the turn) and fields (stolen). */
static void emit(writer *w, const char *type, bool in_step, json_t *fields)
{
    json_t *ev = json_pack("{s:s, s:s, s:I}", "type", type, "sessionId", w->sid, "turn",
                           (json_int_t)w->turn);
    if (ev && in_step)
        json_object_set_new(ev, "step", json_integer(1));
    if (ev && fields)
        json_object_update(ev, fields);
    json_decref(fields);
    if (ev && w->fn)
        w->fn(w->arg, ev);
    json_decref(ev);
}

/* Logs an event and reports it with its seq (payload borrowed). */
static void record(writer *w, const char *type, int64_t step, json_t *payload, json_t *extra)
{
    int64_t seq = 0;
    cdsh_error err = {0};
    if (cdsh_session_store_append(w->store, w->sid, type, w->turn, step, payload, &seq, &err) != 0)
        cdsh_log_error(MODULE, "session %s: cannot record %s: %s", w->sid, type, err.message);
    json_t *ev = json_deep_copy(payload);
    if (seq)
        json_object_set_new(ev, "seq", json_integer(seq));
    if (extra)
        json_object_update(ev, extra);
    json_decref(extra);
    emit(w, type, step > 0, ev);
}

static void notice(writer *w, const char *level, const char *code, const char *text, json_t *more)
{
    json_t *p = json_pack("{s:s, s:s, s:s}", "level", level, "code", code, "text", text);
    if (more)
        json_object_update(p, more);
    json_decref(more);
    record(w, "notice", 1, p, NULL);
    json_decref(p);
}

/* ---- tool calls -------------------------------------------------------------------- */

static bool identifier_like(const char *s, size_t n)
{
    if (n == 0 || n > 80)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.' || c == '-' || c == ':' || c == '/';
        if (!ok)
            return false;
    }
    return true;
}

/* The tool's name (digest §4.5 resolveAcpToolName), owned. */
static char *tool_name_dup(const json_t *u)
{
    const json_t *meta = json_object_get(u, "_meta");
    const json_t *raw = json_object_get(u, "rawInput");
    const char *cands[] = {
        str(u, "toolName"),    str(u, "name"),
        str(meta, "toolName"), str(meta, "tool_name"),
        str(meta, "tool"),     str(meta, "name"),
        str(meta, "toolId"),   str(json_object_get(meta, "claudeCode"), "toolName"),
        str(raw, "tool"),      str(raw, "toolName"),
    };
    for (size_t i = 0; i < sizeof cands / sizeof *cands; i++)
        if (cands[i] && *cands[i])
            return strdup(cands[i]);
    const char *title = str(u, "title");
    if (title && identifier_like(title, strlen(title)))
        return strdup(title);
    if (title) {
        size_t n = strcspn(title, " ([:");
        const char *rest = title + n + strspn(title + n, " ");
        bool marked = *rest == '(' || *rest == '[' || *rest == ':' ||
                      strncmp(rest, "\xc2\xb7", 2) == 0 || strncmp(rest, "\xe2\x80\x94", 3) == 0;
        if (marked && identifier_like(title, n))
            return strndup(title, n);
    }
    const char *kind = str(u, "kind");
    return strdup(kind && *kind ? kind : "acp-tool");
}

static void text_of_content(cdsh_strbuf *sb, const json_t *block)
{
    const char *type = str(block, "type");
    if (type && strcmp(type, "text") == 0)
        cdsh_strbuf_append_str(sb, str(block, "text"));
    else
        cdsh_strbuf_appendf(sb, "[%s]", type ? type : "content");
}

/* The result's content blocks (digest §4.5 content conversion). */
static json_t *result_content(const call *c, bool failed)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    size_t i;
    json_t *e;
    json_array_foreach(c->content, i, e) {
        const char *type = str(e, "type");
        size_t before = sb.len;
        if (sb.len)
            cdsh_strbuf_append_char(&sb, '\n');
        size_t mark = sb.len;
        if (type && strcmp(type, "content") == 0) {
            text_of_content(&sb, json_object_get(e, "content"));
        } else if (type && strcmp(type, "diff") == 0) {
            cdsh_strbuf_appendf(&sb, "diff %s\n--- old\n%s\n+++ new\n%s", str(e, "path"),
                                str(e, "oldText") ? str(e, "oldText") : "",
                                str(e, "newText") ? str(e, "newText") : "");
        }
        if (sb.len == mark)
            cdsh_strbuf_truncate(&sb, before); /* terminal and unknown blocks: nothing */
    }
    if (!sb.len && c->raw_output) {
        if (json_is_string(c->raw_output)) {
            cdsh_strbuf_append_str(&sb, json_string_value(c->raw_output));
        } else {
            char *t = cdsh_json_dump_compact_dup(c->raw_output);
            cdsh_strbuf_append_str(&sb, t);
            free(t);
        }
    }
    if (!sb.len)
        cdsh_strbuf_append_str(&sb, failed ? "Tool failed" : "Tool completed");
    char *text = cdsh_strbuf_take(&sb, NULL);
    json_t *out = json_pack("[{s:s, s:s}]", "type", "text", "text", text ? text : "");
    free(text);
    return out;
}

/* The page's card for an engine's call (host-contracts §1 render intents):
 * its first diff block as a diff card, a terminal block (or kind
 * "execute") as a terminal card with the text the call reported; NULL for
 * the generic card. `content` is the result content already built. */
static json_t *present_of(const call *c, const json_t *content)
{
    size_t i;
    json_t *e;
    bool terminal = c->kind && strcmp(c->kind, "execute") == 0;
    json_array_foreach(c->content, i, e) {
        const char *type = str(e, "type");
        if (type && strcmp(type, "diff") == 0 && str(e, "path") && str(e, "newText"))
            return json_pack("{s:s, s:s, s:O, s:s}", "card", "diff", "path", str(e, "path"),
                             "oldText",
                             json_is_string(json_object_get(e, "oldText"))
                                 ? json_object_get(e, "oldText")
                                 : json_null(),
                             "newText", str(e, "newText"));
        if (type && strcmp(type, "terminal") == 0)
            terminal = true;
    }
    if (!terminal)
        return NULL;
    const char *out = str(json_array_get(content, 0), "text");
    return json_pack("{s:s, s:s?, s:s}", "card", "terminal", "command", c->title, "output",
                     out ? out : "");
}

static void log_result(writer *w, call *c, bool failed, const char *code, const char *why)
{
    json_t *content =
        why ? json_pack("[{s:s, s:s}]", "type", "text", "text", why) : result_content(c, failed);
    json_t *p =
        json_pack("{s:s, s:b, s:o}", "callId", c->id, "isError", failed, "content", content);
    if (failed)
        json_object_set_new(p, "error",
                            json_pack("{s:s?, s:s}", "code", code, "message",
                                      why ? why
                                          : json_string_value(json_object_get(
                                                json_array_get(content, 0), "text"))));
    json_t *present = why ? NULL : present_of(c, content);
    if (present)
        json_object_set_new(p, "present", present);
    c->done = true;
    record(w, "tool/result", 1, p, json_pack("{s:s}", "name", c->name));
    json_decref(p);
}

/* The advertisement rule (digest §4.5): a call's tool/call is logged only
 * after an assistant/message whose toolCalls name it with the same name and
 * arguments, so a replay to a model pairs every result with its call. An
 * assistant message may not follow open calls, so calls first seen while
 * others are open wait (unlogged) until those have results, then are
 * advertised together; their results, if already known, follow at once. */
static void advertise(writer *w)
{
    for (call *c = w->calls; c; c = c->next)
        if (c->logged && !c->done)
            return;
    json_t *list = json_array();
    for (call *c = w->calls; c; c = c->next)
        if (!c->logged && c->ready)
            json_array_append_new(list, json_pack("{s:s, s:s, s:s}", "id", c->id, "name", c->name,
                                                  "arguments", c->args));
    if (!json_array_size(list)) {
        json_decref(list);
        return;
    }
    json_t *p = json_pack("{s:s, s:o}", "text", "", "toolCalls", list);
    record(w, "assistant/message", 1, p, NULL);
    json_decref(p);
    bool parallel = json_array_size(list) > 1;
    for (call *c = w->calls; c; c = c->next) {
        if (c->logged || !c->ready)
            continue;
        c->logged = true;
        json_t *tc = json_pack("{s:s, s:s, s:s, s:s?, s:s?}", "callId", c->id, "name", c->name,
                               "arguments", c->args, "title", c->title, "kind", c->kind);
        record(w, "tool/call", 1, tc, json_pack("{s:b}", "parallel", parallel));
        json_decref(tc);
    }
    for (call *c = w->calls; c; c = c->next)
        if (c->ended && !c->done)
            log_result(w, c, c->failed, "ACP_TOOL_FAILED", NULL);
}

static void on_tool(writer *w, const json_t *u)
{
    const char *id = str(u, "toolCallId");
    if (!id)
        return;
    call **pp = &w->calls;
    while (*pp && strcmp((*pp)->id, id) != 0)
        pp = &(*pp)->next;
    call *c = *pp;
    if (!c) {
        /* A new call means the agent finished streaming the earlier ones'
         * input: their arguments are final. */
        for (call *o = w->calls; o; o = o->next)
            o->ready = true;
        c = calloc(1, sizeof *c);
        if (!c)
            return;
        const json_t *raw = json_object_get(u, "rawInput");
        c->id = strdup(id);
        c->name = tool_name_dup(u);
        c->args = raw ? cdsh_json_dump_compact_dup(raw) : NULL;
        if (!c->args)
            c->args = strdup("{}");
        if (!c->id || !c->name || !c->args) { /* every later lookup and event needs them */
            free(c->id);
            free(c->name);
            free(c->args);
            free(c);
            return;
        }
        c->title = str(u, "title") ? strdup(str(u, "title")) : NULL;
        c->kind = str(u, "kind") ? strdup(str(u, "kind")) : NULL;
        *pp = c;
    }
    /* Arguments arrive late: Claude Code sends rawInput {} first and the
     * real input in a second pending tool_call, OpenCode a partial one until
     * in_progress. Until the call is advertised the latest rawInput, title
     * and kind win. */
    const json_t *raw = json_object_get(u, "rawInput");
    if (!c->logged && raw && !json_is_null(raw) &&
        !(json_is_object(raw) && json_object_size(raw) == 0)) {
        char *args = cdsh_json_dump_compact_dup(raw);
        if (args) {
            free(c->args);
            c->args = args;
        }
    }
    if (!c->logged && str(u, "title")) {
        char *t = strdup(str(u, "title"));
        if (t) {
            free(c->title);
            c->title = t;
        }
    }
    if (!c->logged && str(u, "kind")) {
        char *k = strdup(str(u, "kind"));
        if (k) {
            free(c->kind);
            c->kind = k;
        }
    }
    if (str(u, "status") && strcmp(str(u, "status"), "pending") != 0)
        c->ready = true;
    if (json_is_array(json_object_get(u, "content"))) {
        json_decref(c->content);
        c->content = json_deep_copy(json_object_get(u, "content"));
    }
    if (json_object_get(u, "rawOutput")) {
        json_decref(c->raw_output);
        c->raw_output = json_deep_copy(json_object_get(u, "rawOutput"));
    }
    const char *status = str(u, "status");
    if (status && !c->ended) {
        if (strcmp(status, "completed") == 0 || strcmp(status, "failed") == 0) {
            c->ended = true;
            c->failed = strcmp(status, "failed") == 0;
            if (c->logged)
                log_result(w, c, c->failed, "ACP_TOOL_FAILED", NULL);
        } else if (c->logged && (!c->status || strcmp(c->status, status) != 0)) {
            emit(w, "tool/update", true,
                 json_pack("{s:s, s:s, s:s, s:s?}", "callId", c->id, "name", c->name, "status",
                           status, "title", str(u, "title")));
        }
        free(c->status);
        c->status = strdup(status);
    }
    advertise(w);
}

static void on_plan(writer *w, const json_t *u)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    cdsh_strbuf_append_str(&sb, "Plan:");
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(u, "entries"), i, e)
        cdsh_strbuf_appendf(&sb, "\n[%s] %s", str(e, "status") ? str(e, "status") : "pending",
                            str(e, "content") ? str(e, "content") : "");
    char *text = cdsh_strbuf_take(&sb, NULL);
    notice(w, "info", "ACP_PLAN",
           text ? text : "Plan:", json_pack("{s:O}", "entries", json_object_get(u, "entries")));
    free(text);
}

static void on_update(void *ud, const char *sid, cdsh_acp_update_kind kind, const char *kind_name,
                      const json_t *u)
{
    (void)sid;
    writer *w = ud;
    pthread_mutex_lock(&w->mu);
    switch (kind) {
    case CDSH_ACP_UPDATE_AGENT_MESSAGE_CHUNK:
    case CDSH_ACP_UPDATE_AGENT_THOUGHT_CHUNK: {
        cdsh_strbuf chunk;
        cdsh_strbuf_init(&chunk);
        text_of_content(&chunk, json_object_get(u, "content"));
        bool thought = kind == CDSH_ACP_UPDATE_AGENT_THOUGHT_CHUNK;
        cdsh_strbuf_append(thought ? &w->reasoning : &w->text, chunk.data, chunk.len);
        emit(w, thought ? "reasoning/delta" : "text/delta", true,
             json_pack("{s:s%}", "text", chunk.data ? chunk.data : "", chunk.len));
        cdsh_strbuf_deinit(&chunk);
        break;
    }
    case CDSH_ACP_UPDATE_TOOL_CALL:
    case CDSH_ACP_UPDATE_TOOL_CALL_UPDATE: on_tool(w, u); break;
    case CDSH_ACP_UPDATE_PLAN: on_plan(w, u); break;
    case CDSH_ACP_UPDATE_UNKNOWN:
        cdsh_log_debug(MODULE, "session %s: update %s ignored", w->sid, kind_name);
        break;
    default:
        emit(w, "acp/update", true, json_pack("{s:s, s:O}", "kind", kind_name, "update", u));
        break;
    }
    pthread_mutex_unlock(&w->mu);
}

/* ---- the turn ---------------------------------------------------------------------- */

static const char *end_reason(const json_t *res, const char **refusal)
{
    *refusal = NULL;
    if (!json_is_true(json_object_get(res, "ok"))) {
        const char *code = str(res, "code");
        return code && strcmp(code, "CANCELLED") == 0 ? "cancelled" : "error";
    }
    const char *stop = str(res, "stopReason");
    if (!stop || strcmp(stop, "end_turn") == 0)
        return "done";
    if (strcmp(stop, "cancelled") == 0)
        return "cancelled";
    if (strcmp(stop, "max_tokens") == 0)
        return "token-limit";
    if (strcmp(stop, "max_turn_requests") == 0)
        return "step-limit";
    if (strcmp(stop, "refusal") == 0)
        *refusal = stop;
    return "done";
}

/* Closes the turn: dangling calls, the reply, failures, turn/end. */
static void finish(writer *w, const json_t *res)
{
    const char *refusal = NULL;
    const char *reason = end_reason(res, &refusal);
    char why[200];
    snprintf(why, sizeof why, "the engine gave no result for this call (the turn %s)",
             strcmp(reason, "cancelled") == 0 ? "was cancelled"
             : strcmp(reason, "error") == 0   ? "failed"
                                              : "ended");
    for (call *c = w->calls; c; c = c->next)
        c->ready = true; /* the turn is over: what is known is final */
    /* Open calls get their error result, so the waiting ones can be advertised. */
    for (call *c = w->calls; c; c = c->next)
        if (c->logged && !c->done)
            log_result(w, c, true, "ACP_NO_RESULT", why);
    advertise(w);
    for (call *c = w->calls; c; c = c->next)
        if (!c->done)
            log_result(w, c, true, "ACP_NO_RESULT", why);
    if (w->text.len || w->reasoning.len) {
        json_t *p = json_pack("{s:s%, s:s?, s:s?}", "text", w->text.data ? w->text.data : "",
                              w->text.len, "reasoning", w->reasoning.len ? w->reasoning.data : NULL,
                              "finishReason", str(res, "stopReason"));
        record(w, "assistant/message", 1, p, json_pack("{s:[]}", "toolCalls"));
        json_decref(p);
    }
    if (refusal)
        notice(w, "warning", "ACP_REFUSAL", "The engine refused to continue (stopReason refusal).",
               NULL);
    if (strcmp(reason, "error") == 0) {
        const char *msg = str(res, "message");
        notice(w, "error", str(res, "code") ? str(res, "code") : "UNKNOWN",
               msg && *msg ? msg : "the engine turn failed",
               json_pack("{s:s?, s:s?}", "engineId", str(res, "engineId"), "stderrTail",
                         str(res, "stderrTail")));
    } else if (strcmp(reason, "cancelled") == 0) {
        notice(w, "info", "TURN_CANCELLED", "The turn was cancelled.", NULL);
    }
    json_t *end = json_pack("{s:s, s:i, s:s?, s:s?}", "reason", reason, "steps", 1, "stopReason",
                            str(res, "stopReason"), "engineId", str(res, "engineId"));
    record(w, "turn/end", 1, end, NULL);
    json_decref(end);
}

/* One message's text for the transcript: content as a string, or the text
 * of its text blocks. */
static void message_text(cdsh_strbuf *sb, const json_t *m, size_t cap)
{
    const json_t *content = json_object_get(m, "content");
    size_t start = sb->len;
    if (json_is_string(content)) {
        cdsh_strbuf_append_str(sb, json_string_value(content));
    } else {
        size_t i;
        json_t *b;
        json_array_foreach(content, i, b) {
            if (str(b, "text"))
                cdsh_strbuf_appendf(sb, "%s%s", sb->len > start ? "\n" : "", str(b, "text"));
        }
    }
    if (sb->len - start > cap) {
        size_t cut = start + cap;
        while (cut > start && ((unsigned char)sb->data[cut] & 0xC0) == 0x80)
            cut--; /* not inside a UTF-8 sequence */
        cdsh_strbuf_truncate(sb, cut);
        cdsh_strbuf_append_str(sb, " […]");
    }
}

/* The conversation so far (cdsh_session_store_messages, borrowed) as one
 * text block for an agent that lost it: a header saying why, then "User:",
 * "Assistant:", "Assistant called tool N with ARGS" and "Tool result:"
 * lines (results cut at 2000 bytes), the most recent messages that fit
 * CDSH_ACP_TRANSCRIPT_MAX. Owned; NULL when there are no messages.
 * cdsh_acp_turn_run sends it before the person's text, with a notice
 * ACP_CONTEXT_REPLAYED, when cdsh_acp_service_context_lost says so. */
static char *transcript_text_dup(const json_t *messages)
{
    size_t n = json_array_size(messages);
    if (!n)
        return NULL;
    /* The most recent messages that fit the cap, oldest first. */
    size_t from = n, total = 0;
    while (from > 0) {
        const json_t *m = json_array_get(messages, from - 1);
        const json_t *c = json_object_get(m, "content");
        size_t len = json_is_string(c) ? json_string_length(c) : 256;
        if (total + len > CDSH_ACP_TRANSCRIPT_MAX && from < n)
            break;
        total += len;
        from--;
    }
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    cdsh_strbuf_appendf(&sb, "[The conversation so far, replayed by cdsh because this agent "
                             "could not restore its session%s. Continue from it; the new "
                             "message follows.]\n",
                        from ? "; earlier messages left out" : "");
    for (size_t i = from; i < n; i++) {
        const json_t *m = json_array_get(messages, i);
        const char *role = str(m, "role");
        if (!role)
            continue;
        if (strcmp(role, "user") == 0) {
            cdsh_strbuf_append_str(&sb, "\nUser: ");
            message_text(&sb, m, CDSH_ACP_TRANSCRIPT_MAX);
        } else if (strcmp(role, "assistant") == 0) {
            size_t j;
            json_t *tc;
            if (json_is_string(json_object_get(m, "content")) &&
                json_string_length(json_object_get(m, "content"))) {
                cdsh_strbuf_append_str(&sb, "\nAssistant: ");
                message_text(&sb, m, CDSH_ACP_TRANSCRIPT_MAX);
            }
            json_array_foreach(json_object_get(m, "tool_calls"), j, tc) {
                const json_t *fn = json_object_get(tc, "function");
                cdsh_strbuf_appendf(&sb, "\nAssistant called tool %s with %s",
                                    str(fn, "name") ? str(fn, "name") : "?",
                                    str(fn, "arguments") ? str(fn, "arguments") : "{}");
            }
        } else if (strcmp(role, "tool") == 0) {
            cdsh_strbuf_append_str(&sb, "\nTool result: ");
            message_text(&sb, m, 2000);
        }
    }
    cdsh_strbuf_append_str(&sb, "\n[End of the earlier conversation.]");
    return cdsh_strbuf_take(&sb, NULL);
}

bool cdsh_acp_turn_is_bound(const cdsh_home *home, const char *session_id)
{
    json_t *entry = NULL;
    int rc = session_id ? cdsh_acp_state_session_get(home, session_id, &entry, NULL) : -1;
    json_decref(entry);
    return rc == 0;
}

int cdsh_acp_turn_run(const cdsh_acp_turn_opts *o, const char *session_id, const char *text,
                      cdsh_cancel *cancel, json_t **result, cdsh_error *err)
{
    if (result)
        *result = NULL;
    if (!o || !o->svc || !o->store || !session_id)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "acp turn: missing arguments");
    if (!text || !*text)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "agent: the message is empty");
    if (!cdsh_session_id_valid(session_id))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_SESSION_ID", "invalid session id \"%s\"",
                              session_id);
    json_t *entry = NULL;
    int rc = cdsh_acp_state_session_get(cdsh_acp_service_home(o->svc), session_id, &entry, err);
    json_decref(entry);
    if (rc < 0)
        return rc;
    json_t *exists = cdsh_session_store_info_dup(o->store, session_id, err);
    if (!exists)
        return err ? err->rc : CDSH_ENOTFOUND;
    json_decref(exists);
    cdsh_session_lease *lease = NULL;
    cdsh_session_loaded loaded = {0};
    rc = cdsh_session_store_lease(o->store, session_id, o->lease_timeout_ms, cancel, &lease, err);
    if (rc == CDSH_ETIMEDOUT)
        rc = cdsh_error_set(err, CDSH_EBUSY, "SESSION_BUSY",
                            "session %s is running a turn; wait for it or cancel it", session_id);
    if (rc == 0)
        rc = cdsh_session_store_load(o->store, session_id, lease, &loaded, err);
    if (rc) {
        cdsh_session_lease_release(lease);
        return rc;
    }
    writer w = {.store = o->store, .sid = session_id, .fn = o->on_event, .arg = o->event_arg};
    pthread_mutex_init(&w.mu, NULL);
    cdsh_strbuf_init(&w.text);
    cdsh_strbuf_init(&w.reasoning);
    w.turn = json_integer_value(json_object_get(loaded.session, "lastTurn")) + 1;
    json_t *history = json_incref(loaded.messages); /* before this turn */
    cdsh_session_loaded_deinit(&loaded);

    json_t *start = json_object();
    record(&w, "turn/start", 0, start, NULL);
    json_decref(start);
    json_t *um = json_pack("{s:s}", "text", text);
    record(&w, "user/message", 0, um, NULL);
    json_decref(um);
    /* Opened first with no sink: what a session/load replays is history,
     * not this turn's reply. */
    json_t *warnings = NULL;
    cdsh_error oerr = {0};
    int orc = cdsh_acp_service_open(o->svc, session_id, NULL, &warnings, &oerr);
    size_t i;
    json_t *wv;
    pthread_mutex_lock(&w.mu);
    json_array_foreach(warnings, i, wv)
        notice(&w, "warning", "ACP_WARNING", json_string_value(wv), NULL);
    pthread_mutex_unlock(&w.mu);
    json_decref(warnings);
    json_t *res = NULL;
    if (orc < 0) {
        res = json_pack("{s:b, s:s, s:s, s:[]}", "ok", 0, "code",
                        oerr.code[0] ? oerr.code : "UNKNOWN", "message", oerr.message, "warnings");
    } else {
        emit(&w, "step/start", true, NULL);
        cdsh_acp_turn_sink sink = {on_update, &w};
        json_t *blocks = json_array();
        /* The agent lost the conversation (a fork it cannot restore, a
         * session it cannot load): the transcript goes with this message. */
        char *context =
            cdsh_acp_service_context_lost(o->svc, session_id) ? transcript_text_dup(history) : NULL;
        if (context) {
            json_array_append_new(blocks, json_pack("{s:s,s:s}", "type", "text", "text", context));
            pthread_mutex_lock(&w.mu);
            notice(&w, "info", "ACP_CONTEXT_REPLAYED",
                   "The engine could not restore this conversation; its transcript was sent "
                   "with this message.",
                   json_pack("{s:I}", "messages", (json_int_t)json_array_size(history)));
            pthread_mutex_unlock(&w.mu);
        }
        json_array_append_new(blocks, json_pack("{s:s,s:s}", "type", "text", "text", text));
        res = cdsh_acp_service_prompt_blocks(o->svc, session_id, blocks, &sink, cancel);
        json_decref(blocks);
        free(context);
    }
    json_decref(history);
    pthread_mutex_lock(&w.mu);
    if (res)
        finish(&w, res);
    pthread_mutex_unlock(&w.mu);
    /* A result may lack both (an ok reply without stopReason; no result at all). */
    const char *how = !res                                       ? "NO_MEMORY"
                      : json_is_true(json_object_get(res, "ok")) ? str(res, "stopReason")
                                                                 : str(res, "code");
    cdsh_log_info(MODULE, "session %s turn %lld (engine): %s", session_id, (long long)w.turn,
                  how ? how : "-");
    while (w.calls) {
        call *c = w.calls;
        w.calls = c->next;
        free(c->id);
        free(c->name);
        free(c->args);
        free(c->title);
        free(c->kind);
        free(c->status);
        json_decref(c->content);
        json_decref(c->raw_output);
        free(c);
    }
    cdsh_strbuf_deinit(&w.text);
    cdsh_strbuf_deinit(&w.reasoning);
    pthread_mutex_destroy(&w.mu);
    cdsh_session_lease_release(lease);
    if (!res)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    if (result)
        *result = res;
    else
        json_decref(res);
    return 0;
}
