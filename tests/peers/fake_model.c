/* fake_model.c — a scripted OpenAI-compatible /chat/completions server on
 * 127.0.0.1 for tests and key-less demos: plays the responses of a script
 * (streamed text, reasoning, tool calls, usage, delays, stalls, HTTP errors,
 * dropped connections) and records every request. It is not a model: it
 * never looks at a request beyond the script's match predicates.
 * Usage and script format: docs/fake-model.md. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/strbuf.h"

/* ---- global server state (one server per process; guarded by lock) ---- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static json_t *script;   /* array of response objects */
static int *uses;        /* how many times each response has been played */
static json_t *requests; /* recorded requests */
static FILE *record_file;
static const char *expect_key;
static const char *model_name = "fake-model";
static atomic_bool stopping;
static int stop_pipe[2] = {-1, -1};

static void usage(void)
{
    fprintf(stderr, "usage: fake_model --script FILE [--port N] [--record FILE]\n"
                    "                  [--expect-key KEY] [--no-stdin]\n"
                    "Serves an OpenAI-compatible /chat/completions on 127.0.0.1 that plays\n"
                    "FILE (JSON or JSON lines; see docs/fake-model.md). Prints one line\n"
                    "{\"url\":...,\"port\":...} when ready; exits on SIGTERM/SIGINT or when\n"
                    "stdin closes (unless --no-stdin).\n");
}

/* Sleeps ms in small slices so that shutdown is never held up by a stall. */
static void nap(int64_t ms)
{
    while (ms > 0 && !atomic_load(&stopping)) {
        int64_t step = ms < 10 ? ms : 10;
        struct timespec ts = {0, (long)step * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
}

/* ---- script loading ----------------------------------------------------- */

static json_t *load_script(const char *path)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (root) {
        if (json_is_array(root))
            return root;
        json_t *r = json_object_get(root, "responses");
        if (json_is_array(r)) {
            json_incref(r);
            json_decref(root);
            return r;
        }
        if (json_is_object(root)) { /* a single response */
            json_t *arr = json_array();
            json_array_append_new(arr, root);
            return arr;
        }
        json_decref(root);
        fprintf(stderr, "fake_model: %s: expected an array or {\"responses\": [...]}\n", path);
        return NULL;
    }
    /* JSON lines: one response object per line; blank and '#' lines skipped. */
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "fake_model: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    json_t *arr = json_array();
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int lineno = 0;
    while ((n = getline(&line, &cap, f)) > 0) {
        lineno++;
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\n' || *p == '\0' || *p == '#')
            continue;
        json_t *obj = json_loads(p, 0, &jerr);
        if (!json_is_object(obj)) {
            fprintf(stderr, "fake_model: %s:%d: %s\n", path, lineno,
                    obj ? "expected an object" : jerr.text);
            json_decref(obj);
            json_decref(arr);
            arr = NULL;
            break;
        }
        json_array_append_new(arr, obj);
    }
    free(line);
    fclose(f);
    return arr;
}

/* ---- matching ----------------------------------------------------------- */

static const char *last_user_text(const json_t *body, cdsh_strbuf *scratch)
{
    const json_t *msgs = json_object_get(body, "messages");
    for (size_t i = json_array_size(msgs); i > 0; i--) {
        const json_t *m = json_array_get(msgs, i - 1);
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!role || strcmp(role, "user") != 0)
            continue;
        const json_t *content = json_object_get(m, "content");
        if (json_is_string(content))
            return json_string_value(content);
        for (size_t j = 0; j < json_array_size(content); j++)
            cdsh_strbuf_append_str(
                scratch, json_string_value(json_object_get(json_array_get(content, j), "text")));
        return scratch->data;
    }
    return "";
}

static bool matches(const json_t *resp, const json_t *body)
{
    const json_t *m = json_object_get(resp, "match");
    if (!json_is_object(m))
        return true;
    const char *needle = json_string_value(json_object_get(m, "last_user_contains"));
    if (needle) {
        cdsh_strbuf scratch;
        cdsh_strbuf_init(&scratch);
        bool ok = strstr(last_user_text(body, &scratch), needle) != NULL;
        cdsh_strbuf_deinit(&scratch);
        if (!ok)
            return false;
    }
    const json_t *tools = json_object_get(m, "has_tools");
    if (json_is_boolean(tools) &&
        json_is_true(tools) != (json_array_size(json_object_get(body, "tools")) > 0))
        return false;
    const char *model = json_string_value(json_object_get(m, "model"));
    if (model && !json_equal(json_object_get(body, "model"), json_object_get(m, "model")))
        return false;
    return true;
}

/* Picks the first response still available whose predicate matches. Returns
 * its index or -1. Called with lock held. */
static int pick(const json_t *body)
{
    for (size_t i = 0; i < json_array_size(script); i++) {
        const json_t *r = json_array_get(script, i);
        json_int_t times = 1;
        const json_t *t = json_object_get(r, "times");
        if (json_is_integer(t))
            times = json_integer_value(t);
        bool repeat = json_is_true(json_object_get(r, "repeat"));
        if (!repeat && uses[i] >= times)
            continue;
        if (!matches(r, body))
            continue;
        uses[i]++;
        return (int)i;
    }
    return -1;
}

/* ---- building replies --------------------------------------------------- */

typedef struct step {
    char *bytes; /* owned; may be NULL */
    size_t len;
    int64_t sleep_ms; /* before the bytes */
    bool drop;        /* close the connection abruptly */
    char *wait_file;  /* owned; non-NULL: hold the bytes until this file exists */
    long long repeat; /* sends of the bytes still to come after this one; -1 forever */
} step;

typedef struct plan {
    step *steps;
    size_t n, cur, off;
} plan;

static void plan_add(plan *p, char *bytes, int64_t sleep_ms, bool drop)
{
    p->steps = realloc(p->steps, (p->n + 1) * sizeof *p->steps);
    p->steps[p->n++] = (step){bytes, bytes ? strlen(bytes) : 0, sleep_ms, drop, NULL, 0};
}

static void plan_free(void *cls)
{
    plan *p = cls;
    for (size_t i = 0; i < p->n; i++) {
        free(p->steps[i].bytes);
        free(p->steps[i].wait_file);
    }
    free(p->steps);
    free(p);
}

static char *sse_data(json_t *chunk_take)
{
    char *js = json_dumps(chunk_take, JSON_COMPACT);
    json_decref(chunk_take);
    char *out = NULL;
    if (asprintf(&out, "data: %s\n\n", js) < 0)
        out = NULL;
    free(js);
    return out;
}

static json_t *chunk_with(json_t *delta_take, const char *finish)
{
    return json_pack("{s:s, s:s, s:i, s:s, s:[{s:i, s:o, s:o}]}", "id", "chatcmpl-fake", "object",
                     "chat.completion.chunk", "created", 0, "model", model_name, "choices", "index",
                     0, "delta", delta_take, "finish_reason",
                     finish ? json_string(finish) : json_null());
}

static json_t *tool_call_delta(const json_t *tc, size_t pos)
{
    json_t *d = json_object();
    const json_t *idx = json_object_get(tc, "index");
    json_object_set_new(d, "index",
                        json_is_integer(idx) ? json_copy((json_t *)idx)
                                             : json_integer((json_int_t)pos));
    if (json_object_get(tc, "id"))
        json_object_set(d, "id", json_object_get(tc, "id"));
    json_t *fn = json_object();
    if (json_object_get(tc, "name")) {
        json_object_set_new(d, "type", json_string("function"));
        json_object_set(fn, "name", json_object_get(tc, "name"));
    }
    if (json_object_get(tc, "arguments"))
        json_object_set(fn, "arguments", json_object_get(tc, "arguments"));
    json_object_set_new(d, "function", fn);
    return d;
}

/* Normalises a response into its list of chunk items: explicit "chunks"
 * first, then the shorthand fields. Returns a new array. */
static json_t *items_of(const json_t *resp)
{
    json_t *items = json_array();
    const json_t *chunks = json_object_get(resp, "chunks");
    for (size_t i = 0; i < json_array_size(chunks); i++)
        json_array_append(items, json_array_get(chunks, i));
    if (json_object_get(resp, "reasoning"))
        json_array_append_new(items,
                              json_pack("{s:O}", "reasoning", json_object_get(resp, "reasoning")));
    if (json_object_get(resp, "text"))
        json_array_append_new(items, json_pack("{s:O}", "text", json_object_get(resp, "text")));
    if (json_object_get(resp, "tool_calls"))
        json_array_append_new(
            items, json_pack("{s:O}", "tool_calls", json_object_get(resp, "tool_calls")));
    return items;
}

/* The whole reply as one chat.completion object (non-streaming mode). */
static json_t *assemble(const json_t *resp, const json_t *items)
{
    cdsh_strbuf text, reasoning;
    cdsh_strbuf_init(&text);
    cdsh_strbuf_init(&reasoning);
    bool has_reasoning = false;
    json_t *calls = json_array();
    for (size_t i = 0; i < json_array_size(items); i++) {
        const json_t *it = json_array_get(items, i);
        cdsh_strbuf_append_str(&text, json_string_value(json_object_get(it, "text")));
        if (json_is_string(json_object_get(it, "reasoning"))) {
            has_reasoning = true;
            cdsh_strbuf_append_str(&reasoning, json_string_value(json_object_get(it, "reasoning")));
        }
        json_t *tcs = json_object_get(it, "tool_calls");
        json_t *one = json_object_get(it, "tool_call");
        size_t n = one ? 1 : json_array_size(tcs);
        for (size_t j = 0; j < n; j++) {
            const json_t *tc = one ? one : json_array_get(tcs, j);
            const json_t *idx = json_object_get(tc, "index");
            size_t at = json_is_integer(idx) ? (size_t)json_integer_value(idx) : j;
            while (json_array_size(calls) <= at)
                json_array_append_new(calls, json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", "", "type",
                                                       "function", "function", "name", "",
                                                       "arguments", ""));
            json_t *c = json_array_get(calls, at);
            json_t *fn = json_object_get(c, "function");
            if (json_is_string(json_object_get(tc, "id")))
                json_object_set(c, "id", json_object_get(tc, "id"));
            if (json_is_string(json_object_get(tc, "name")))
                json_object_set(fn, "name", json_object_get(tc, "name"));
            const char *args = json_string_value(json_object_get(tc, "arguments"));
            if (args) {
                char *joined = NULL;
                if (asprintf(&joined, "%s%s", json_string_value(json_object_get(fn, "arguments")),
                             args) >= 0) {
                    json_object_set_new(fn, "arguments", json_string(joined));
                    free(joined);
                }
            }
        }
    }
    json_t *msg = json_pack("{s:s, s:s}", "role", "assistant", "content", text.data);
    if (has_reasoning)
        json_object_set_new(msg, "reasoning_content", json_string(reasoning.data));
    if (json_array_size(calls))
        json_object_set(msg, "tool_calls", calls);
    json_decref(calls);
    const char *finish = json_string_value(json_object_get(resp, "finish_reason"));
    json_t *out =
        json_pack("{s:s, s:s, s:i, s:s, s:[{s:i, s:o, s:o}]}", "id", "chatcmpl-fake", "object",
                  "chat.completion", "created", 0, "model", model_name, "choices", "index", 0,
                  "message", msg, "finish_reason", finish ? json_string(finish) : json_null());
    if (json_object_get(resp, "usage"))
        json_object_set(out, "usage", json_object_get(resp, "usage"));
    cdsh_strbuf_deinit(&text);
    cdsh_strbuf_deinit(&reasoning);
    return out;
}

/* The streamed reply as a plan of SSE writes, sleeps and drops. */
static plan *stream_plan(const json_t *resp, const json_t *items)
{
    plan *p = calloc(1, sizeof *p);
    json_int_t gap = json_integer_value(json_object_get(resp, "delay_ms"));
    plan_add(
        p, sse_data(chunk_with(json_pack("{s:s, s:s}", "role", "assistant", "content", ""), NULL)),
        0, false);
    for (size_t i = 0; i < json_array_size(items); i++) {
        const json_t *it = json_array_get(items, i);
        int64_t sleep_ms = gap + json_integer_value(json_object_get(it, "delay_ms")) +
                           json_integer_value(json_object_get(it, "stall_ms"));
        char *bytes = NULL;
        const json_t *v;
        if ((v = json_object_get(it, "text")))
            bytes = sse_data(chunk_with(json_pack("{s:O}", "content", v), NULL));
        else if ((v = json_object_get(it, "reasoning")))
            bytes = sse_data(chunk_with(json_pack("{s:O}", "reasoning_content", v), NULL));
        else if ((v = json_object_get(it, "tool_call")))
            bytes = sse_data(
                chunk_with(json_pack("{s:[o]}", "tool_calls", tool_call_delta(v, 0)), NULL));
        else if ((v = json_object_get(it, "tool_calls"))) {
            json_t *arr = json_array();
            for (size_t j = 0; j < json_array_size(v); j++)
                json_array_append_new(arr, tool_call_delta(json_array_get(v, j), j));
            bytes = sse_data(chunk_with(json_pack("{s:o}", "tool_calls", arr), NULL));
        } else if ((v = json_object_get(it, "error")))
            bytes = sse_data(json_pack("{s:O}", "error", v));
        else if ((v = json_object_get(it, "raw")) && json_is_string(v))
            bytes = strdup(json_string_value(v));
        else if ((v = json_object_get(it, "usage")))
            bytes = sse_data(json_pack("{s:s, s:s, s:i, s:s, s:[], s:O}", "id", "chatcmpl-fake",
                                       "object", "chat.completion.chunk", "created", 0, "model",
                                       model_name, "choices", "usage", v));
        else if ((v = json_object_get(it, "finish_reason")))
            bytes = sse_data(chunk_with(json_object(), json_string_value(v)));
        plan_add(p, bytes, sleep_ms, json_is_true(json_object_get(it, "drop")));
        const char *gate = json_string_value(json_object_get(it, "wait_file"));
        if (gate)
            p->steps[p->n - 1].wait_file = strdup(gate);
        /* A hostile endpoint: the same chunk `times` times, or forever. */
        json_int_t times = json_integer_value(json_object_get(it, "times"));
        if (json_is_true(json_object_get(it, "forever")))
            p->steps[p->n - 1].repeat = -1;
        else if (times > 1)
            p->steps[p->n - 1].repeat = times - 1;
    }
    const char *finish = json_string_value(json_object_get(resp, "finish_reason"));
    if (finish)
        plan_add(p, sse_data(chunk_with(json_object(), finish)), gap, false);
    const json_t *u = json_object_get(resp, "usage");
    if (u)
        plan_add(p,
                 sse_data(json_pack("{s:s, s:s, s:i, s:s, s:[], s:O}", "id", "chatcmpl-fake",
                                    "object", "chat.completion.chunk", "created", 0, "model",
                                    model_name, "choices", "usage", u)),
                 gap, false);
    if (!json_is_false(json_object_get(resp, "done")))
        plan_add(p, strdup("data: [DONE]\n\n"), 0, false);
    return p;
}

static ssize_t plan_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    plan *p = cls;
    while (p->cur < p->n) {
        step *s = &p->steps[p->cur];
        if (p->off == 0 && s->sleep_ms > 0) {
            nap(s->sleep_ms);
            s->sleep_ms = 0;
        }
        while (p->off == 0 && s->wait_file && access(s->wait_file, F_OK) != 0 &&
               !atomic_load(&stopping))
            nap(10);
        if (atomic_load(&stopping) || s->drop)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (p->off < s->len) {
            size_t n = s->len - p->off < max ? s->len - p->off : max;
            memcpy(buf, s->bytes + p->off, n);
            p->off += n;
            return (ssize_t)n;
        }
        p->off = 0;
        if (s->repeat != 0) {
            if (s->repeat > 0)
                s->repeat--;
            continue;
        }
        p->cur++;
    }
    return MHD_CONTENT_READER_END_OF_STREAM;
}

/* ---- HTTP ----------------------------------------------------------------- */

typedef struct conn_state {
    cdsh_strbuf body;
} conn_state;

static enum MHD_Result send_json(struct MHD_Connection *conn, unsigned status, json_t *take)
{
    char *text = json_dumps(take, JSON_COMPACT);
    json_decref(take);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Replaces "$AUTH" in s with the bearer token received (to test redaction). */
static char *subst_auth(const char *s, const char *token)
{
    cdsh_strbuf out;
    cdsh_strbuf_init(&out);
    const char *hit;
    while ((hit = strstr(s, "$AUTH")) != NULL) {
        cdsh_strbuf_append(&out, s, (size_t)(hit - s));
        cdsh_strbuf_append_str(&out, token);
        s = hit + 5;
    }
    cdsh_strbuf_append_str(&out, s);
    return cdsh_strbuf_take(&out, NULL);
}

static enum MHD_Result respond(struct MHD_Connection *conn, const json_t *resp, const json_t *body,
                               const char *token)
{
    nap(json_integer_value(json_object_get(resp, "first_byte_delay_ms")));
    const json_t *jstatus = json_object_get(resp, "status");
    const json_t *err = json_object_get(resp, "error");
    const json_t *raw = json_object_get(resp, "body");
    unsigned status = json_is_integer(jstatus) ? (unsigned)json_integer_value(jstatus)
                      : err                    ? 500
                                               : 200;
    struct MHD_Response *r = NULL;
    const char *ctype = "application/json";
    if (err || json_is_string(raw)) {
        char *text;
        if (json_is_string(raw)) {
            text = subst_auth(json_string_value(raw), token);
        } else {
            json_t *wrapped = json_pack("{s:O}", "error", err);
            char *js = json_dumps(wrapped, JSON_COMPACT);
            json_decref(wrapped);
            text = subst_auth(js, token);
            free(js);
        }
        const char *ct = json_string_value(json_object_get(resp, "content_type"));
        if (ct)
            ctype = ct;
        r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    } else {
        json_t *items = items_of(resp);
        const json_t *force = json_object_get(resp, "stream");
        bool stream = json_is_boolean(force) ? json_is_true(force)
                                             : json_is_true(json_object_get(body, "stream"));
        if (stream) {
            plan *p = stream_plan(resp, items);
            r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, plan_read, p, plan_free);
            ctype = "text/event-stream";
        } else {
            json_t *whole = assemble(resp, items);
            char *text = json_dumps(whole, JSON_COMPACT);
            json_decref(whole);
            r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
        }
        json_decref(items);
    }
    MHD_add_response_header(r, "Content-Type", ctype);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)json_object_get(resp, "headers"), k, v)
        if (json_is_string(v))
            MHD_add_response_header(r, k, json_string_value(v));
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)cls;
    (void)version;
    conn_state *st = *con_cls;
    if (!st) {
        st = calloc(1, sizeof *st);
        cdsh_strbuf_init(&st->body);
        *con_cls = st;
        return MHD_YES;
    }
    if (*upload_size) {
        cdsh_strbuf_append(&st->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, "GET") == 0 && strcmp(url, "/__requests") == 0) {
        pthread_mutex_lock(&lock);
        json_t *copy = json_deep_copy(requests);
        pthread_mutex_unlock(&lock);
        return send_json(conn, 200, copy);
    }
    size_t ulen = strlen(url);
    static const char suffix[] = "/chat/completions";
    if (strcmp(method, "POST") != 0 || ulen < sizeof suffix - 1 ||
        strcmp(url + ulen - (sizeof suffix - 1), suffix) != 0)
        return send_json(conn, 404,
                         json_pack("{s:{s:s, s:s}}", "error", "message",
                                   "fake-model: only POST .../chat/completions is served", "type",
                                   "invalid_request_error"));

    const char *authz = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    const char *token = authz && strncmp(authz, "Bearer ", 7) == 0 ? authz + 7 : "";
    const char *auth_state = !authz                           ? "absent"
                             : !expect_key                    ? "present"
                             : strcmp(token, expect_key) == 0 ? "ok"
                                                              : "bad";
    json_t *body = json_loadb(st->body.data, st->body.len, 0, NULL);
    pthread_mutex_lock(&lock);
    int idx = strcmp(auth_state, "bad") == 0 || (expect_key && !authz) ? -1 : pick(body);
    json_t *rec = json_pack("{s:s, s:s, s:s, s:i}", "method", method, "path", url, "auth",
                            auth_state, "response", idx);
    json_object_set_new(rec, "body", body ? json_incref(body) : json_string(st->body.data));
    json_array_append_new(requests, rec);
    if (record_file) {
        char *line = json_dumps(rec, JSON_COMPACT);
        fprintf(record_file, "%s\n", line);
        fflush(record_file);
        free(line);
    }
    json_t *resp = idx >= 0 ? json_incref(json_array_get(script, (size_t)idx)) : NULL;
    pthread_mutex_unlock(&lock);

    enum MHD_Result ret;
    if (expect_key && strcmp(auth_state, "ok") != 0)
        ret =
            send_json(conn, 401,
                      json_pack("{s:{s:s, s:s, s:n, s:s}}", "error", "message",
                                "Authentication Fails, Your api key is invalid", "type",
                                "authentication_error", "param", "code", "invalid_request_error"));
    else if (!resp)
        ret = send_json(conn, 500,
                        json_pack("{s:{s:s, s:s}}", "error", "message",
                                  "fake-model: no scripted response left for this request", "type",
                                  "fake_model_script_exhausted"));
    else
        ret = respond(conn, resp, body, token);
    json_decref(resp);
    json_decref(body);
    return ret;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode code)
{
    (void)cls;
    (void)conn;
    (void)code;
    conn_state *st = *con_cls;
    if (st) {
        cdsh_strbuf_deinit(&st->body);
        free(st);
        *con_cls = NULL;
    }
}

static void on_signal(int sig)
{
    (void)sig;
    ssize_t w = write(stop_pipe[1], "x", 1);
    (void)w;
}

int main(int argc, char **argv)
{
    const char *script_path = NULL, *record_path = NULL;
    int port = 0;
    bool watch_stdin = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--script") == 0 && next)
            script_path = argv[++i];
        else if (strcmp(a, "--port") == 0 && next)
            port = atoi(argv[++i]);
        else if (strcmp(a, "--record") == 0 && next)
            record_path = argv[++i];
        else if (strcmp(a, "--expect-key") == 0 && next)
            expect_key = argv[++i];
        else if (strcmp(a, "--model") == 0 && next)
            model_name = argv[++i];
        else if (strcmp(a, "--no-stdin") == 0)
            watch_stdin = false;
        else {
            usage();
            return strcmp(a, "--help") == 0 ? 0 : 2;
        }
    }
    script = script_path ? load_script(script_path) : json_array();
    if (!script)
        return 2;
    uses = calloc(json_array_size(script) + 1, sizeof *uses);
    requests = json_array();
    if (record_path && !(record_file = fopen(record_path, "a"))) {
        fprintf(stderr, "fake_model: cannot open %s: %s\n", record_path, strerror(errno));
        return 2;
    }

    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof addr;
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&addr, &alen) != 0) {
        fprintf(stderr, "fake_model: cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
        return 1;
    }
    port = ntohs(addr.sin_port);

    if (pipe2(stop_pipe, O_CLOEXEC) != 0)
        return 1;
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    struct MHD_Daemon *d =
        MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL,
                         NULL, handle, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
                         MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "fake_model: libmicrohttpd failed to start\n");
        return 1;
    }
    printf("{\"url\":\"http://127.0.0.1:%d\",\"port\":%d}\n", port, port);
    fflush(stdout);

    struct pollfd fds[2] = {{stop_pipe[0], POLLIN, 0}, {watch_stdin ? 0 : -1, POLLIN, 0}};
    for (;;) {
        if (poll(fds, 2, -1) < 0 && errno != EINTR)
            break;
        if (fds[0].revents)
            break;
        if (fds[1].revents) {
            char buf[256];
            ssize_t n = read(0, buf, sizeof buf);
            if (n <= 0)
                break; /* stdin closed: the parent is gone */
        }
    }
    atomic_store(&stopping, true);
    MHD_stop_daemon(d); /* also closes the listening socket */
    if (record_file)
        fclose(record_file);
    json_decref(script);
    json_decref(requests);
    free(uses);
    return 0;
}
