/* model_client.c — OpenAI-compatible chat completions over libcurl: request
 * body, one attempt on a private multi handle (cancellation wakes the poll,
 * idle timeout measured between received bytes), SSE or plain-JSON reply
 * assembly, error classification, retries with backoff, usage totals.
 * Conversation state and tool execution belong to sessions and the loop.
 *
 * libcurl is loaded on the first request (base/curl_dl.h), never by
 * cdsh_model_client_new: a client that is built but never asked costs no
 * library. */
#include "agent/model_client.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/clock.h"
#include "base/curl_dl.h"
#include "base/sse.h"
#include "base/random.h"
#include "base/strbuf.h"

enum {
    MAX_ERROR_BODY = 64 * 1024,       /* kept of an error body (the message is in it) */
    MAX_JSON_BODY = 32 * 1024 * 1024, /* a non-streamed reply */
    MAX_SSE_EVENT = 16 * 1024 * 1024,
    /* Defaults of the per-reply caps (cdsh_model_config max_reply_bytes,
     * max_tool_calls): a model endpoint is an outside stream. */
    DEFAULT_MAX_REPLY_BYTES = 8 * 1024 * 1024,
    DEFAULT_MAX_TOOL_CALLS = 64,
    MAX_POLL_MS = 250,
};

struct cdsh_model_client {
    cdsh_model_config cfg;
    char *url;
    bool local;
    pthread_mutex_t lock; /* guards total */
    cdsh_model_usage total;
};

/* ---- small helpers ------------------------------------------------------ */

/* Replaces every occurrence of key in s (in place) with "[REDACTED]". */
static void redact(char *s, size_t cap, const char *key)
{
    static const char mark[] = "[REDACTED]";
    size_t klen = key ? strlen(key) : 0;
    if (klen == 0)
        return;
    char *hit;
    char *from = s;
    while ((hit = strstr(from, key)) != NULL) {
        size_t tail = strlen(hit + klen);
        size_t mlen = sizeof mark - 1;
        size_t head = (size_t)(hit - s);
        if (head + mlen + tail + 1 > cap)
            tail = cap > head + mlen + 1 ? cap - head - mlen - 1 : 0;
        if (head + mlen + 1 > cap) {
            *hit = '\0';
            return;
        }
        memmove(hit + mlen, hit + klen, tail);
        hit[mlen + tail] = '\0';
        memcpy(hit, mark, mlen);
        from = hit + mlen;
    }
}

__attribute__((format(printf, 5, 6))) static int
fail(const cdsh_model_client *c, cdsh_error *err, int rc, const char *code, const char *fmt, ...)
{
    if (!err)
        return rc;
    va_list ap;
    va_start(ap, fmt);
    cdsh_error_setv(err, rc, code, fmt, ap);
    va_end(ap);
    redact(err->message, sizeof err->message, c->cfg.api_key);
    return rc;
}

static bool contains_ci(const char *hay, const char *needle)
{
    return hay && strcasestr(hay, needle) != NULL;
}

static bool quota_wording(const char *s)
{
    static const char *const words[] = {"insufficient balance",        "insufficient_balance",
                                        "insufficient_quota",          "insufficient quota",
                                        "exceeded your current quota", "billing"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (contains_ci(s, words[i]))
            return true;
    return false;
}

static bool context_wording(const char *s)
{
    static const char *const words[] = {
        "context length",  "context_length",     "maximum context",   "context window",
        "too many tokens", "prompt is too long", "reduce the length", "context size"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (contains_ci(s, words[i]))
            return true;
    return false;
}

void cdsh_model_usage_add(cdsh_model_usage *dst, const cdsh_model_usage *src)
{
    dst->input_tokens += src->input_tokens;
    dst->output_tokens += src->output_tokens;
    dst->total_tokens += src->total_tokens;
    dst->cached_input_tokens += src->cached_input_tokens;
    dst->reasoning_tokens += src->reasoning_tokens;
    dst->calls += src->calls;
    dst->requests += src->requests;
}

static int64_t json_int_at(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_real(v))
        return (int64_t)json_real_value(v);
    return 0;
}

static void parse_usage(const json_t *u, cdsh_model_usage *out)
{
    out->input_tokens = json_int_at(u, "prompt_tokens");
    out->output_tokens = json_int_at(u, "completion_tokens");
    out->total_tokens = json_int_at(u, "total_tokens");
    if (out->total_tokens == 0)
        out->total_tokens = out->input_tokens + out->output_tokens;
    out->cached_input_tokens = json_int_at(u, "prompt_cache_hit_tokens");
    if (out->cached_input_tokens == 0)
        out->cached_input_tokens =
            json_int_at(json_object_get(u, "prompt_tokens_details"), "cached_tokens");
    out->reasoning_tokens =
        json_int_at(json_object_get(u, "completion_tokens_details"), "reasoning_tokens");
}

/* ---- reply -------------------------------------------------------------- */

void cdsh_model_reply_deinit(cdsh_model_reply *reply)
{
    if (!reply)
        return;
    free(reply->text);
    free(reply->reasoning);
    for (size_t i = 0; i < reply->n_tool_calls; i++) {
        free(reply->tool_calls[i].id);
        free(reply->tool_calls[i].name);
        free(reply->tool_calls[i].arguments);
    }
    free(reply->tool_calls);
    free(reply->finish_reason);
    memset(reply, 0, sizeof *reply);
}

json_t *cdsh_model_reply_to_message(const cdsh_model_reply *reply)
{
    json_t *msg = json_object();
    if (!msg)
        return NULL;
    bool text = reply->text && *reply->text;
    int bad = json_object_set_new(msg, "role", json_string("assistant"));
    /* OpenAI wants content null (not "") next to tool calls. */
    bad |= json_object_set_new(msg, "content",
                               text || reply->n_tool_calls == 0
                                   ? json_string(reply->text ? reply->text : "")
                                   : json_null());
    if (reply->reasoning)
        bad |= json_object_set_new(msg, "reasoning_content", json_string(reply->reasoning));
    if (reply->n_tool_calls) {
        json_t *calls = json_array();
        bad |= json_object_set_new(msg, "tool_calls", calls);
        for (size_t i = 0; calls && i < reply->n_tool_calls; i++) {
            const cdsh_model_tool_call *tc = &reply->tool_calls[i];
            bad |= json_array_append_new(calls, json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", tc->id,
                                                          "type", "function", "function", "name",
                                                          tc->name, "arguments", tc->arguments));
        }
    }
    if (bad) {
        json_decref(msg);
        return NULL;
    }
    return msg;
}

/* ---- client ------------------------------------------------------------- */

cdsh_model_client *cdsh_model_client_new(const cdsh_model_config *resolved, cdsh_error *err)
{
    if (!resolved || !resolved->base_url || !resolved->model) {
        cdsh_error_set(err, CDSH_EINVAL, "INVALID_CONFIG",
                       "model client needs a resolved configuration (base URL and model)");
        return NULL;
    }
    cdsh_model_client *c = calloc(1, sizeof *c);
    if (!c)
        goto nomem;
    if (cdsh_model_config_copy(&c->cfg, resolved))
        goto nomem;
    /* Accept a base URL that already names the endpoint. */
    const char *base = c->cfg.base_url;
    size_t n = strlen(base);
    while (n > 0 && base[n - 1] == '/')
        n--;
    static const char suffix[] = "/chat/completions";
    bool has_suffix = n >= sizeof suffix - 1 &&
                      strncmp(base + n - (sizeof suffix - 1), suffix, sizeof suffix - 1) == 0;
    c->url = malloc(n + sizeof suffix);
    if (!c->url)
        goto nomem;
    memcpy(c->url, base, n);
    strcpy(c->url + n, has_suffix ? "" : suffix);
    c->local = cdsh_model_config_is_local(base);
    if (c->cfg.connect_timeout_ms <= 0)
        c->cfg.connect_timeout_ms = 10000;
    if (c->cfg.idle_timeout_ms <= 0)
        c->cfg.idle_timeout_ms = 60000;
    if (c->cfg.max_retries < 0)
        c->cfg.max_retries = 0;
    if (c->cfg.retry_base_ms <= 0)
        c->cfg.retry_base_ms = 500;
    if (c->cfg.retry_max_ms <= 0)
        c->cfg.retry_max_ms = 20000;
    if (c->cfg.max_reply_bytes <= 0)
        c->cfg.max_reply_bytes = DEFAULT_MAX_REPLY_BYTES;
    if (c->cfg.max_tool_calls <= 0)
        c->cfg.max_tool_calls = DEFAULT_MAX_TOOL_CALLS;
    pthread_mutex_init(&c->lock, NULL);
    return c;
nomem:
    if (c) {
        cdsh_model_config_deinit(&c->cfg);
        free(c->url);
        free(c);
    }
    cdsh_error_set(err, CDSH_ENOMEM, "ENOMEM", "out of memory");
    return NULL;
}

void cdsh_model_client_free(cdsh_model_client *c)
{
    if (!c)
        return;
    cdsh_model_config_deinit(&c->cfg);
    free(c->url);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

void cdsh_model_client_usage(cdsh_model_client *c, cdsh_model_usage *out)
{
    pthread_mutex_lock(&c->lock);
    *out = c->total;
    pthread_mutex_unlock(&c->lock);
}

/* ---- request body ------------------------------------------------------- */

static bool is_role(const json_t *msg, const char *role)
{
    const char *r = json_string_value(json_object_get(msg, "role"));
    return r && strcmp(r, role) == 0;
}

/* Applies the reasoning policy to a deep copy of the history. */
static void apply_reasoning_policy(json_t *messages, cdsh_model_reasoning_policy policy)
{
    if (policy == CDSH_MODEL_REASONING_KEEP)
        return;
    size_t n = json_array_size(messages);
    size_t turn_start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && !is_role(json_array_get(messages, i), "user"))
            continue;
        /* [turn_start, i) is one user turn (its user message first). */
        bool tools = false;
        for (size_t j = turn_start; j < i && policy == CDSH_MODEL_REASONING_AUTO; j++) {
            const json_t *m = json_array_get(messages, j);
            if (is_role(m, "assistant") && json_array_size(json_object_get(m, "tool_calls")) > 0)
                tools = true;
        }
        for (size_t j = turn_start; j < i && !tools; j++)
            json_object_del(json_array_get(messages, j), "reasoning_content");
        turn_start = i;
    }
}

json_t *cdsh_model_client_request_body(const cdsh_model_client *c, const cdsh_model_request *req,
                                       cdsh_error *err)
{
    if (!req || !json_is_array(req->messages) || json_array_size(req->messages) == 0) {
        fail(c, err, CDSH_EINVAL, "INVALID_REQUEST", "messages must be a non-empty array");
        return NULL;
    }
    for (size_t i = 0; i < json_array_size(req->messages); i++) {
        const json_t *m = json_array_get(req->messages, i);
        if (!json_is_object(m) || !json_is_string(json_object_get(m, "role"))) {
            fail(c, err, CDSH_EINVAL, "INVALID_REQUEST",
                 "messages[%zu] must be an object with a string \"role\"", i);
            return NULL;
        }
    }
    if (req->tools && !json_is_array(req->tools)) {
        fail(c, err, CDSH_EINVAL, "INVALID_REQUEST", "tools must be an array");
        return NULL;
    }
    if (req->extra && !json_is_object(req->extra)) {
        fail(c, err, CDSH_EINVAL, "INVALID_REQUEST", "extra must be an object");
        return NULL;
    }
    json_t *body = json_object();
    json_t *messages = json_deep_copy(req->messages);
    int bad = !body || !messages;
    if (!bad) {
        apply_reasoning_policy(messages, req->reasoning);
        const char *model = req->model && *req->model ? req->model : c->cfg.model;
        bad |= json_object_set_new(body, "model", json_string(model));
        bad |= json_object_set(body, "messages", messages);
        if (json_array_size(req->tools) > 0)
            bad |= json_object_set_new(body, "tools", json_deep_copy(req->tools));
        if (req->tool_choice)
            bad |= json_object_set_new(body, "tool_choice", json_deep_copy(req->tool_choice));
        if (req->has_temperature)
            bad |= json_object_set_new(body, "temperature", json_real(req->temperature));
        if (req->max_tokens > 0)
            bad |= json_object_set_new(body, "max_tokens", json_integer(req->max_tokens));
        bad |= json_object_set_new(body, "stream", json_boolean(!req->no_stream));
        if (!req->no_stream)
            bad |=
                json_object_set_new(body, "stream_options", json_pack("{s:b}", "include_usage", 1));
        if (req->extra)
            bad |= json_object_update(body, (json_t *)req->extra);
    }
    json_decref(messages);
    if (bad) {
        json_decref(body);
        fail(c, err, CDSH_ENOMEM, "ENOMEM", "out of memory");
        return NULL;
    }
    return body;
}

/* ---- one attempt -------------------------------------------------------- */

typedef struct tool_slot {
    int index;
    cdsh_strbuf id, name, args;
} tool_slot;

typedef struct attempt {
    const cdsh_model_client *c;
    const cdsh_model_request *req;
    CURL *easy;
    CURLM *multi;
    long status;
    bool headers_done;
    bool is_sse;
    int64_t retry_after_ms; /* from Retry-After; -1 if absent */
    cdsh_strbuf body;       /* error body or non-streamed reply */
    cdsh_sse *sse;
    int64_t last_rx_ms;
    bool delivered;   /* an event reached the caller: no retry from here on */
    int64_t rx_bytes; /* body bytes of this reply so far */
    /* assembly */
    cdsh_strbuf text, reasoning, finish;
    bool has_reasoning, saw_choice, done;
    tool_slot *tools;
    size_t n_tools;
    cdsh_model_usage usage;
    /* set when the transfer was stopped on purpose */
    bool stopped;
    cdsh_error stop_err;
} attempt;

static void attempt_deinit(attempt *a)
{
    cdsh_strbuf_deinit(&a->body);
    cdsh_strbuf_deinit(&a->text);
    cdsh_strbuf_deinit(&a->reasoning);
    cdsh_strbuf_deinit(&a->finish);
    for (size_t i = 0; i < a->n_tools; i++) {
        cdsh_strbuf_deinit(&a->tools[i].id);
        cdsh_strbuf_deinit(&a->tools[i].name);
        cdsh_strbuf_deinit(&a->tools[i].args);
    }
    free(a->tools);
    cdsh_sse_free(a->sse);
}

/* Records why the transfer stops (the first reason wins). */
__attribute__((format(printf, 4, 5))) static int stop(attempt *a, int rc, const char *code,
                                                      const char *fmt, ...)
{
    if (a->stopped)
        return rc;
    a->stopped = true;
    va_list ap;
    va_start(ap, fmt);
    cdsh_error_setv(&a->stop_err, rc, code, fmt, ap);
    va_end(ap);
    redact(a->stop_err.message, sizeof a->stop_err.message, a->c->cfg.api_key);
    return rc;
}

static int deliver(attempt *a, cdsh_model_event *ev)
{
    a->delivered = true;
    if (!a->req->on_event)
        return 0;
    if (a->req->on_event(a->req->event_arg, ev) != 0)
        return stop(a, CDSH_ECANCELED, "ABORTED", "model request aborted by the event handler");
    return 0;
}

static int emit_piece(attempt *a, cdsh_model_event_kind kind, int index, const char *s, size_t n)
{
    cdsh_model_event ev = {.kind = kind, .text = s, .len = n, .index = index};
    return deliver(a, &ev);
}

static tool_slot *tool_at(attempt *a, int index, bool *created)
{
    *created = false;
    for (size_t i = 0; i < a->n_tools; i++)
        if (a->tools[i].index == index)
            return &a->tools[i];
    tool_slot *grown = realloc(a->tools, (a->n_tools + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    a->tools = grown;
    /* Keep the slots ordered by index. */
    size_t pos = a->n_tools;
    while (pos > 0 && a->tools[pos - 1].index > index)
        pos--;
    memmove(&a->tools[pos + 1], &a->tools[pos], (a->n_tools - pos) * sizeof *grown);
    tool_slot *t = &a->tools[pos];
    memset(t, 0, sizeof *t);
    t->index = index;
    cdsh_strbuf_init(&t->id);
    cdsh_strbuf_init(&t->name);
    cdsh_strbuf_init(&t->args);
    a->n_tools++;
    *created = true;
    return t;
}

/* The provider's message from an error object or body, verbatim. */
static const char *error_message_of(const json_t *root, const char *raw)
{
    const json_t *e = json_object_get(root, "error");
    const char *m = json_string_value(json_object_get(e, "message"));
    if (!m)
        m = json_string_value(e);
    if (!m)
        m = json_string_value(json_object_get(root, "message"));
    if (!m)
        m = json_string_value(json_object_get(root, "detail"));
    return m ? m : raw;
}

/* An "error" object inside a 200 reply (some providers stream errors). */
static int stream_error(attempt *a, const json_t *root, const char *raw)
{
    const char *msg = error_message_of(root, raw);
    if (quota_wording(raw))
        return stop(a, CDSH_EPERM, "QUOTA", "HTTP 200: %s", msg);
    if (context_wording(raw))
        return stop(a, CDSH_ETOOBIG, "CONTEXT_WINDOW_EXCEEDED", "HTTP 200: %s", msg);
    return stop(a, CDSH_EIO, "SERVER", "HTTP 200: %s", msg);
}

static int add_tool_delta(attempt *a, const json_t *tc, size_t pos)
{
    const json_t *jidx = json_object_get(tc, "index");
    int index = json_is_integer(jidx) ? (int)json_integer_value(jidx) : (int)pos;
    if (index < 0 || index > 1024)
        return stop(a, CDSH_EPROTO, "BAD_RESPONSE", "tool call index %d out of range", index);
    bool created;
    tool_slot *t = tool_at(a, index, &created);
    if (!t)
        return stop(a, CDSH_ENOMEM, "ENOMEM", "out of memory");
    const json_t *fn = json_object_get(tc, "function");
    const char *id = json_string_value(json_object_get(tc, "id"));
    const char *name = json_string_value(json_object_get(fn, "name"));
    if (id && *id && t->id.len == 0)
        cdsh_strbuf_append_str(&t->id, id);
    if (name && *name && t->name.len == 0)
        cdsh_strbuf_append_str(&t->name, name);
    if (created && t->id.len == 0) /* The event and the reply use the same stand-in id. */
        cdsh_strbuf_appendf(&t->id, "call_%d", index);
    if (created && a->n_tools > (size_t)a->c->cfg.max_tool_calls)
        return stop(a, CDSH_ETOOBIG, "TOO_MANY_TOOL_CALLS",
                    "model reply has more than %d tool calls (max_tool_calls)",
                    a->c->cfg.max_tool_calls);
    for (size_t i = 0; created && i < a->n_tools; i++)
        if (&a->tools[i] != t && a->tools[i].id.len && strcmp(a->tools[i].id.data, t->id.data) == 0)
            return stop(a, CDSH_EPROTO, "BAD_RESPONSE", "model reply repeats tool call id %s",
                        t->id.data);
    if (created) {
        cdsh_model_event ev = {.kind = CDSH_MODEL_EV_TOOL_CALL_START,
                               .index = index,
                               .id = t->id.data,
                               .name = t->name.data};
        if (deliver(a, &ev))
            return -1;
    }
    const json_t *args = json_object_get(fn, "arguments");
    char *dumped = NULL;
    const char *piece = json_string_value(args);
    size_t plen = piece ? json_string_length(args) : 0;
    if (!piece && (json_is_object(args) || json_is_array(args))) {
        /* Some servers send the arguments as a JSON value, not a string. */
        dumped = json_dumps(args, JSON_COMPACT);
        piece = dumped;
        plen = dumped ? strlen(dumped) : 0;
    }
    int rc = 0;
    if (plen > 0) {
        cdsh_strbuf_append(&t->args, piece, plen);
        rc = emit_piece(a, CDSH_MODEL_EV_TOOL_CALL_ARGS, index, piece, plen);
    }
    free(dumped);
    return rc;
}

static int add_string_piece(attempt *a, cdsh_strbuf *sb, cdsh_model_event_kind kind,
                            const json_t *v)
{
    size_t n = json_string_length(v);
    if (!json_is_string(v) || n == 0)
        return 0;
    cdsh_strbuf_append(sb, json_string_value(v), n);
    if (sb->failed)
        return stop(a, CDSH_ENOMEM, "ENOMEM", "out of memory");
    return emit_piece(a, kind, 0, json_string_value(v), n);
}

static int set_usage(attempt *a, const json_t *u)
{
    if (!json_is_object(u))
        return 0;
    parse_usage(u, &a->usage);
    cdsh_model_event ev = {.kind = CDSH_MODEL_EV_USAGE, .usage = &a->usage};
    return deliver(a, &ev);
}

/* One chunk (streamed) or the whole reply (plain JSON) in OpenAI shape. */
static int absorb(attempt *a, const json_t *root, const char *raw)
{
    if (!json_is_object(root))
        return stop(a, CDSH_EPROTO, "BAD_RESPONSE", "model reply is not a JSON object: %.200s",
                    raw);
    if (json_object_get(root, "error") && !json_is_null(json_object_get(root, "error")))
        return stream_error(a, root, raw);
    const json_t *choices = json_object_get(root, "choices");
    const json_t *choice = json_array_get(choices, 0);
    if (json_is_object(choice)) {
        a->saw_choice = true;
        const json_t *d = json_object_get(choice, "delta");
        if (!json_is_object(d))
            d = json_object_get(choice, "message");
        const json_t *r = json_object_get(d, "reasoning_content");
        if (!json_is_string(r))
            r = json_object_get(d, "reasoning"); /* OpenRouter, some local servers */
        if (json_is_string(r))
            a->has_reasoning = true;
        if (add_string_piece(a, &a->reasoning, CDSH_MODEL_EV_REASONING, r))
            return -1;
        if (add_string_piece(a, &a->text, CDSH_MODEL_EV_TEXT, json_object_get(d, "content")))
            return -1;
        const json_t *tcs = json_object_get(d, "tool_calls");
        for (size_t i = 0; i < json_array_size(tcs); i++)
            if (add_tool_delta(a, json_array_get(tcs, i), i))
                return -1;
        const char *fr = json_string_value(json_object_get(choice, "finish_reason"));
        if (fr && *fr) {
            cdsh_strbuf_reset(&a->finish);
            cdsh_strbuf_append_str(&a->finish, fr);
            cdsh_model_event ev = {.kind = CDSH_MODEL_EV_FINISH, .finish_reason = fr};
            if (deliver(a, &ev))
                return -1;
        }
    }
    return set_usage(a, json_object_get(root, "usage"));
}

static int on_sse_event(void *arg, const cdsh_sse_event *ev)
{
    attempt *a = arg;
    if (a->done)
        return 0;
    if (strcmp(ev->data, "[DONE]") == 0) {
        a->done = true;
        return 0;
    }
    if (ev->data_len == 0)
        return 0;
    json_error_t jerr;
    json_t *root = json_loadb(ev->data, ev->data_len, JSON_ALLOW_NUL, &jerr);
    if (!root)
        return stop(a, CDSH_EPROTO, "BAD_RESPONSE", "malformed stream chunk (%s): %.200s",
                    jerr.text, ev->data);
    int rc = absorb(a, root, ev->data);
    json_decref(root);
    return rc ? rc : (a->stopped ? -1 : 0);
}

static size_t on_header(char *buf, size_t size, size_t n, void *arg)
{
    attempt *a = arg;
    size_t len = size * n;
    a->last_rx_ms = cdsh_clock_mono_ms();
    if (len >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
        /* A new response (after 100 Continue or a retry inside curl). */
        a->headers_done = false;
        a->is_sse = false;
        a->retry_after_ms = -1;
        return len;
    }
    if (len <= 2 && (buf[0] == '\r' || buf[0] == '\n')) {
        cdsh_curl_get()->easy_getinfo(a->easy, CURLINFO_RESPONSE_CODE, &a->status);
        if (a->status >= 200)
            a->headers_done = true;
        return len;
    }
    char line[512];
    size_t copy = len < sizeof line - 1 ? len : sizeof line - 1;
    memcpy(line, buf, copy);
    line[copy] = '\0';
    line[strcspn(line, "\r\n")] = '\0';
    if (strncasecmp(line, "content-type:", 13) == 0) {
        a->is_sse = strcasestr(line + 13, "text/event-stream") != NULL;
    } else if (strncasecmp(line, "retry-after:", 12) == 0) {
        const char *v = line + 12;
        while (*v == ' ' || *v == '\t')
            v++;
        char *end;
        double secs = strtod(v, &end);
        if (end != v && secs >= 0) {
            a->retry_after_ms = (int64_t)(secs * 1000.0);
        } else {
            time_t when = cdsh_curl_get()->getdate(v, NULL);
            if (when != -1)
                a->retry_after_ms = ((int64_t)when - (int64_t)time(NULL)) * 1000;
            if (a->retry_after_ms < 0 && when != -1)
                a->retry_after_ms = 0;
        }
    }
    return len;
}

static size_t on_body(char *buf, size_t size, size_t n, void *arg)
{
    attempt *a = arg;
    size_t len = size * n;
    a->last_rx_ms = cdsh_clock_mono_ms();
    if (a->stopped)
        return 0;
    if (a->status == 0)
        cdsh_curl_get()->easy_getinfo(a->easy, CURLINFO_RESPONSE_CODE, &a->status);
    a->rx_bytes += (int64_t)len;
    if (a->status >= 200 && a->status < 300 && a->rx_bytes > a->c->cfg.max_reply_bytes) {
        stop(a, CDSH_ETOOBIG, "REPLY_TOO_LARGE",
             "model reply exceeds %d bytes (max_reply_bytes): the endpoint kept sending",
             a->c->cfg.max_reply_bytes);
        return 0;
    }
    if (a->status >= 200 && a->status < 300 && a->is_sse) {
        if (!a->sse && !(a->sse = cdsh_sse_new(MAX_SSE_EVENT, on_sse_event, a))) {
            stop(a, CDSH_ENOMEM, "ENOMEM", "out of memory");
            return 0;
        }
        cdsh_error perr;
        cdsh_error_clear(&perr);
        int rc = cdsh_sse_feed(a->sse, buf, len, &perr);
        if (rc && !a->stopped)
            stop(a, CDSH_EPROTO, "BAD_RESPONSE", "%s", perr.message);
        return a->stopped ? 0 : len;
    }
    size_t cap = a->status >= 300 ? MAX_ERROR_BODY : MAX_JSON_BODY;
    if (a->body.len + len > cap) {
        if (a->status >= 300) /* Enough of an error body; the message is at the start. */
            return len;
        stop(a, CDSH_ETOOBIG, "BAD_RESPONSE", "model reply exceeds %d bytes", MAX_JSON_BODY);
        return 0;
    }
    if (cdsh_strbuf_append(&a->body, buf, len)) {
        stop(a, CDSH_ENOMEM, "ENOMEM", "out of memory");
        return 0;
    }
    return len;
}

static void wake_multi(void *arg)
{
    cdsh_curl_get()->multi_wakeup(arg);
}

/* Classifies an HTTP error status with its body. Sets *retry. */
static int http_error(attempt *a, cdsh_error *err, bool *retry)
{
    const cdsh_model_client *c = a->c;
    long st = a->status;
    const char *raw = a->body.data;
    json_t *root = json_loadb(a->body.data, a->body.len, 0, NULL);
    char text[900]; /* the provider's message, verbatim (truncated only if huge) */
    snprintf(text, sizeof text, "%s", error_message_of(root, raw));
    json_decref(root);
    if (!*text)
        snprintf(text, sizeof text, "(empty body)");
    *retry = false;
    if (st == 401 || st == 403)
        return fail(c, err, CDSH_EPERM, "INVALID_CREDENTIAL", "HTTP %ld: %s", st, text);
    if (st == 402 || (st >= 400 && st < 500 && quota_wording(raw)))
        return fail(c, err, CDSH_EPERM, "QUOTA", "HTTP %ld: %s", st, text);
    if (st == 429) {
        *retry = true;
        return fail(c, err, CDSH_EBUSY, "RATE_LIMIT", "HTTP %ld: %s", st, text);
    }
    if (st == 413 || (st >= 400 && st < 500 && context_wording(raw)))
        return fail(c, err, CDSH_ETOOBIG, "CONTEXT_WINDOW_EXCEEDED", "HTTP %ld: %s", st, text);
    if (st == 408) {
        *retry = true;
        return fail(c, err, CDSH_ETIMEDOUT, "TIMEOUT", "HTTP %ld: %s", st, text);
    }
    if (st >= 500) {
        *retry = true;
        return fail(c, err, CDSH_EIO, "SERVER", "HTTP %ld: %s", st, text);
    }
    return fail(c, err, CDSH_EINVAL, "INVALID_REQUEST", "HTTP %ld: %s", st, text);
}

/* Moves the assembled reply into out. */
static int take_reply(attempt *a, cdsh_model_reply *out, cdsh_error *err)
{
    const cdsh_model_client *c = a->c;
    memset(out, 0, sizeof *out);
    out->n_tool_calls = a->n_tools;
    out->tool_calls = a->n_tools ? calloc(a->n_tools, sizeof *out->tool_calls) : NULL;
    out->text = strdup(a->text.data);
    out->reasoning = a->has_reasoning ? strdup(a->reasoning.data) : NULL;
    out->finish_reason = a->finish.len ? strdup(a->finish.data) : NULL;
    bool bad = !out->text || (a->has_reasoning && !out->reasoning) ||
               (a->finish.len && !out->finish_reason) || (a->n_tools && !out->tool_calls);
    for (size_t i = 0; !bad && i < a->n_tools; i++) {
        cdsh_model_tool_call *tc = &out->tool_calls[i];
        tc->id = strdup(a->tools[i].id.data);
        tc->name = strdup(a->tools[i].name.data);
        tc->arguments = strdup(a->tools[i].args.data);
        bad = !tc->id || !tc->name || !tc->arguments;
    }
    out->usage = a->usage;
    out->http_status = (int)a->status;
    out->streamed = a->is_sse;
    if (bad) {
        cdsh_model_reply_deinit(out);
        return fail(c, err, CDSH_ENOMEM, "ENOMEM", "out of memory");
    }
    return 0;
}

/* Runs one HTTP attempt. Returns 0 with *out filled, or an error with
 * *retry telling whether another attempt is allowed and *retry_after_ms the
 * server's wish (-1: none). *delivered says whether events were delivered. */
static int run_attempt(const cdsh_model_client *c, const cdsh_model_request *req, const char *body,
                       cdsh_model_reply *out, bool *retry, int64_t *retry_after_ms, bool *delivered,
                       cdsh_error *err)
{
    attempt a = {.c = c, .req = req, .retry_after_ms = -1};
    cdsh_strbuf_init(&a.body);
    cdsh_strbuf_init(&a.text);
    cdsh_strbuf_init(&a.reasoning);
    cdsh_strbuf_init(&a.finish);
    struct curl_slist *headers = NULL;
    char *auth = NULL;
    uint64_t sub = 0;
    char curl_err[CURL_ERROR_SIZE] = "";
    CURLcode result = CURLE_OK;
    int rc = 0;
    *retry = false;

    const cdsh_curl *cu = cdsh_curl_get(); /* loaded by cdsh_model_client_complete */
    a.easy = cu->easy_init();
    a.multi = cu->multi_init();
    if (!a.easy || !a.multi) {
        rc = fail(c, err, CDSH_ENOMEM, "ENOMEM", "out of memory");
        goto cleanup;
    }
    headers = cu->slist_append(headers, "Content-Type: application/json");
    headers = cu->slist_append(headers, req->no_stream ? "Accept: application/json"
                                                       : "Accept: text/event-stream");
    if (c->cfg.api_key && *c->cfg.api_key) {
        if (asprintf(&auth, "Authorization: Bearer %s", c->cfg.api_key) < 0)
            auth = NULL;
        headers = auth ? cu->slist_append(headers, auth) : NULL;
    }
    if (!headers) {
        rc = fail(c, err, CDSH_ENOMEM, "ENOMEM", "out of memory");
        goto cleanup;
    }
    cu->easy_setopt(a.easy, CURLOPT_URL, c->url);
    cu->easy_setopt(a.easy, CURLOPT_NOSIGNAL, 1L);
    cu->easy_setopt(a.easy, CURLOPT_HTTPHEADER, headers);
    cu->easy_setopt(a.easy, CURLOPT_POSTFIELDS, body);
    cu->easy_setopt(a.easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    cu->easy_setopt(a.easy, CURLOPT_USERAGENT, "cdsh/" CDSH_VERSION);
    cu->easy_setopt(a.easy, CURLOPT_CONNECTTIMEOUT_MS, (long)c->cfg.connect_timeout_ms);
    cu->easy_setopt(a.easy, CURLOPT_WRITEFUNCTION, on_body);
    cu->easy_setopt(a.easy, CURLOPT_WRITEDATA, &a);
    cu->easy_setopt(a.easy, CURLOPT_HEADERFUNCTION, on_header);
    cu->easy_setopt(a.easy, CURLOPT_HEADERDATA, &a);
    cu->easy_setopt(a.easy, CURLOPT_ERRORBUFFER, curl_err);
    cu->easy_setopt(a.easy, CURLOPT_TCP_KEEPALIVE, 1L);
    cu->easy_setopt(a.easy, CURLOPT_PROTOCOLS_STR, "http,https");
    if (c->local) /* A proxy from the environment must not see loopback traffic. */
        cu->easy_setopt(a.easy, CURLOPT_NOPROXY, "*");
    cu->multi_add_handle(a.multi, a.easy);
    sub = cdsh_cancel_subscribe(req->cancel, wake_multi, a.multi);

    bool idle_clock = false;
    int running = 1;
    while (running) {
        if (cu->multi_perform(a.multi, &running) != CURLM_OK) {
            rc = fail(c, err, CDSH_EIO, "TRANSPORT", "libcurl multi interface failed");
            goto cleanup;
        }
        if (!running || a.stopped)
            break;
        int64_t now = cdsh_clock_mono_ms();
        if (cdsh_cancel_is_fired(req->cancel)) {
            const char *why = cdsh_cancel_reason(req->cancel);
            stop(&a, CDSH_ECANCELED, "ABORTED", "model request cancelled: %s",
                 why ? why : "cancelled");
            break;
        }
        if (!idle_clock) {
            /* The idle clock starts once the request is on its way. */
            curl_off_t pre = 0;
            cu->easy_getinfo(a.easy, CURLINFO_PRETRANSFER_TIME_T, &pre);
            if (pre > 0 || a.last_rx_ms) {
                idle_clock = true;
                if (!a.last_rx_ms)
                    a.last_rx_ms = now;
            }
        }
        int64_t wait = MAX_POLL_MS;
        if (idle_clock) {
            int64_t left = a.last_rx_ms + c->cfg.idle_timeout_ms - now;
            if (left <= 0) {
                stop(&a, CDSH_ETIMEDOUT, "LLM_STREAM_IDLE_TIMEOUT",
                     "model stream idle: no data for %d ms", c->cfg.idle_timeout_ms);
                break;
            }
            if (left < wait)
                wait = left;
        } else if (wait > 20) {
            wait = 20; /* poll for the end of the connect phase */
        }
        cu->multi_poll(a.multi, NULL, 0, (int)wait, NULL);
    }
    if (!a.stopped) {
        int left;
        CURLMsg *m;
        while ((m = cu->multi_info_read(a.multi, &left)) != NULL)
            if (m->msg == CURLMSG_DONE)
                result = m->data.result;
    }
    cu->easy_getinfo(a.easy, CURLINFO_RESPONSE_CODE, &a.status);
    *retry_after_ms = a.retry_after_ms;

    if (a.stopped) {
        if (err)
            *err = a.stop_err;
        rc = a.stop_err.rc;
        goto cleanup;
    }
    if (result != CURLE_OK && a.status == 0) {
        *retry = true;
        const char *detail = *curl_err ? curl_err : cu->easy_strerror(result);
        if (result == CURLE_OPERATION_TIMEDOUT)
            rc = fail(c, err, CDSH_ETIMEDOUT, "TIMEOUT", "model endpoint timed out: %s", detail);
        else
            rc = fail(c, err, CDSH_EIO, "TRANSPORT", "cannot reach the model endpoint: %s", detail);
        goto cleanup;
    }
    if (a.status >= 300) {
        rc = http_error(&a, err, retry);
        goto cleanup;
    }
    if (result != CURLE_OK) {
        *retry = true;
        rc = fail(c, err, CDSH_EIO, "TRANSPORT", "model connection failed mid-reply: %s",
                  *curl_err ? curl_err : cu->easy_strerror(result));
        goto cleanup;
    }
    if (a.is_sse) {
        if (a.sse) /* An unterminated last event is dropped, as the spec says. */
            cdsh_sse_finish(a.sse);
    } else if (a.body.len > 0) {
        json_error_t jerr;
        json_t *root = json_loadb(a.body.data, a.body.len, 0, &jerr);
        if (root) {
            absorb(&a, root, a.body.data);
            json_decref(root);
        } else if (strncmp(a.body.data, "data:", 5) == 0) {
            /* An event stream with the wrong Content-Type. */
            a.is_sse = true;
            a.sse = cdsh_sse_new(MAX_SSE_EVENT, on_sse_event, &a);
            if (a.sse && !cdsh_sse_feed(a.sse, a.body.data, a.body.len, NULL))
                cdsh_sse_feed(a.sse, "\n\n", 2, NULL);
        } else {
            stop(&a, CDSH_EPROTO, "BAD_RESPONSE", "model reply is not JSON (%s): %.200s", jerr.text,
                 a.body.data);
        }
        if (a.stopped) {
            if (err)
                *err = a.stop_err;
            rc = a.stop_err.rc;
            goto cleanup;
        }
    }
    if (!a.saw_choice || (a.text.len == 0 && a.n_tools == 0)) {
        rc = fail(c, err, CDSH_EPROTO, "EMPTY_RESPONSE",
                  "model returned no %s (HTTP %ld, finish_reason %s)",
                  a.saw_choice ? "text or tool calls" : "choices", a.status,
                  a.finish.len ? a.finish.data : "none");
        goto cleanup;
    }
    rc = take_reply(&a, out, err);

cleanup:
    *delivered = a.delivered;
    cdsh_cancel_unsubscribe(req->cancel, sub);
    if (a.multi && a.easy)
        cu->multi_remove_handle(a.multi, a.easy);
    if (a.easy)
        cu->easy_cleanup(a.easy);
    if (a.multi)
        cu->multi_cleanup(a.multi);
    cu->slist_free_all(headers);
    if (auth) {
        explicit_bzero(auth, strlen(auth));
        free(auth);
    }
    attempt_deinit(&a);
    return rc;
}

static uint32_t jitter_u32(void)
{
    uint32_t r = 0;
    if (cdsh_random_bytes(&r, sizeof r) != 0)
        r = (uint32_t)cdsh_clock_mono_ns();
    return r;
}

int cdsh_model_client_complete(cdsh_model_client *c, const cdsh_model_request *req,
                               cdsh_model_reply *out, cdsh_error *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!c || !req || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_REQUEST",
                              "model request needs a client, a request and a reply");
    int lrc = cdsh_curl_load(err);
    if (lrc)
        return lrc;
    json_t *body_json = cdsh_model_client_request_body(c, req, err);
    if (!body_json)
        return err ? err->rc : CDSH_EINVAL;
    char *body = json_dumps(body_json, JSON_COMPACT);
    json_decref(body_json);
    if (!body)
        return fail(c, err, CDSH_ENOMEM, "ENOMEM", "out of memory");

    int rc = 0;
    int attempts = 0;
    for (;;) {
        attempts++;
        bool retry = false, delivered = false;
        int64_t retry_after = -1;
        cdsh_error e;
        cdsh_error_clear(&e);
        rc = run_attempt(c, req, body, out, &retry, &retry_after, &delivered, &e);
        if (rc == 0)
            break;
        /* Never retry once the caller has seen part of a reply. */
        if (!retry || delivered || attempts > c->cfg.max_retries) {
            if (err)
                *err = e;
            break;
        }
        int64_t delay;
        if (retry_after >= 0) {
            delay = retry_after;
        } else {
            int shift = attempts - 1 < 20 ? attempts - 1 : 20;
            int64_t step = (int64_t)c->cfg.retry_base_ms << shift;
            /* Equal jitter: half fixed, half random, so waits never collapse to 0. */
            delay = step / 2 + (int64_t)(jitter_u32() % (uint32_t)(step / 2 + 1));
        }
        if (delay > c->cfg.retry_max_ms)
            delay = c->cfg.retry_max_ms;
        if (req->on_event) {
            cdsh_model_event ev = {.kind = CDSH_MODEL_EV_RETRY,
                                   .attempt = attempts + 1,
                                   .delay_ms = (int)delay,
                                   .error = &e};
            if (req->on_event(req->event_arg, &ev) != 0) {
                rc = fail(c, err, CDSH_ECANCELED, "ABORTED",
                          "model request aborted by the event handler");
                break;
            }
        }
        if (cdsh_cancel_wait(req->cancel, delay)) {
            const char *why = cdsh_cancel_reason(req->cancel);
            rc = fail(c, err, CDSH_ECANCELED, "ABORTED", "model request cancelled: %s",
                      why ? why : "cancelled");
            break;
        }
    }
    free(body);

    pthread_mutex_lock(&c->lock);
    c->total.requests += attempts;
    if (rc == 0) {
        out->usage.calls = 1;
        out->usage.requests = attempts;
        c->total.calls += 1;
        c->total.input_tokens += out->usage.input_tokens;
        c->total.output_tokens += out->usage.output_tokens;
        c->total.total_tokens += out->usage.total_tokens;
        c->total.cached_input_tokens += out->usage.cached_input_tokens;
        c->total.reasoning_tokens += out->usage.reasoning_tokens;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}
