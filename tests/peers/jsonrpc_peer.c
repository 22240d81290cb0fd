/* jsonrpc_peer.c — a small JSON-RPC 2.0 peer on stdin/stdout for
 * tests/base/test_jsonrpc.c. Written directly on jansson (not on
 * src/base/jsonrpc.c) so the tests exercise the peer against an independent
 * implementation. Methods: echo, add, fail, sleep, die, garbage, huge,
 * oversize, crlf, callback, notify, notes. */
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t notes_lock = PTHREAD_MUTEX_INITIALIZER;
static json_t *notes; /* texts of "note" notifications received, in order */
static int callback_seq;

static void write_raw(const char *text, size_t len)
{
    while (len) {
        ssize_t n = write(1, text, len);
        if (n <= 0)
            _exit(2);
        text += n;
        len -= (size_t)n;
    }
}

static void send_json(json_t *msg, const char *eol)
{
    char *text = json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER);
    pthread_mutex_lock(&out_lock);
    write_raw(text, strlen(text));
    write_raw(eol, strlen(eol));
    pthread_mutex_unlock(&out_lock);
    free(text);
    json_decref(msg);
}

static void reply(json_t *id, json_t *result)
{
    send_json(json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result), "\n");
}

static void reply_error(json_t *id, int code, const char *message, json_t *data)
{
    json_t *error = json_pack("{s:i, s:s}", "code", code, "message", message);
    if (data)
        json_object_set_new(error, "data", data);
    send_json(
        json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error", error),
        "\n");
}

typedef struct sleeper {
    json_t *id;
    long ms;
} sleeper;

static void *sleep_then_reply(void *arg)
{
    sleeper *s = arg;
    struct timespec ts = {s->ms / 1000, (s->ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
    reply(s->id, json_pack("{s:i}", "slept", (int)s->ms));
    json_decref(s->id);
    free(s);
    return NULL;
}

static void process_line(char *line);

/* Reads stdin until a line arrives; NULL on EOF. */
static char *read_line(void)
{
    static char *buf;
    static size_t cap;
    ssize_t n = getline(&buf, &cap, stdin);
    if (n < 0)
        return NULL;
    return buf;
}

/* Sends a request to the client and processes other lines until its answer
 * arrives; returns the response message (owned). */
static json_t *call_client(const char *method, json_t *params, bool numeric_id)
{
    json_t *id =
        numeric_id ? json_integer(9000 + ++callback_seq) : json_sprintf("cb-%d", ++callback_seq);
    json_t *req = json_pack("{s:s, s:O, s:s}", "jsonrpc", "2.0", "id", id, "method", method);
    if (params)
        json_object_set(req, "params", params);
    send_json(req, "\n");
    for (;;) {
        char *line = read_line();
        if (!line)
            exit(0);
        json_t *msg = json_loads(line, 0, NULL);
        if (msg && !json_object_get(msg, "method") && json_equal(json_object_get(msg, "id"), id)) {
            json_decref(id);
            return msg;
        }
        json_decref(msg);
        process_line(line);
    }
}

static void handle(const char *method, json_t *id, json_t *params)
{
    if (strcmp(method, "note") == 0) {
        pthread_mutex_lock(&notes_lock);
        json_array_append(notes, json_object_get(params, "text"));
        pthread_mutex_unlock(&notes_lock);
        return;
    }
    if (!id)
        return; /* other notifications are ignored */
    if (strcmp(method, "echo") == 0) {
        reply(id, params ? json_incref(params) : json_null());
    } else if (strcmp(method, "add") == 0) {
        json_t *a = json_object_get(params, "a"), *b = json_object_get(params, "b");
        if (!json_is_integer(a) || !json_is_integer(b))
            reply_error(id, -32602, "Invalid params", json_pack("{s:s}", "need", "a and b"));
        else
            reply(id, json_integer(json_integer_value(a) + json_integer_value(b)));
    } else if (strcmp(method, "fail") == 0) {
        reply_error(id, -32001, "deliberate failure", json_pack("{s:s}", "why", "asked"));
    } else if (strcmp(method, "sleep") == 0) {
        sleeper *s = malloc(sizeof *s);
        s->id = json_deep_copy(id); /* owned by the sleeper thread alone */
        s->ms = (long)json_integer_value(json_object_get(params, "ms"));
        pthread_t t;
        pthread_create(&t, NULL, sleep_then_reply, s);
        pthread_detach(t);
    } else if (strcmp(method, "die") == 0) {
        _exit(3);
    } else if (strcmp(method, "garbage") == 0) {
        const char *lines = "this is not json\n{\"broken\": \n\n   \r\n[1, 2\n]]]\n";
        pthread_mutex_lock(&out_lock);
        write_raw(lines, strlen(lines));
        pthread_mutex_unlock(&out_lock);
        reply(id, json_pack("{s:b}", "ok", 1));
    } else if (strcmp(method, "huge") == 0 || strcmp(method, "oversize") == 0) {
        size_t n = (size_t)json_integer_value(json_object_get(params, "bytes"));
        char *big = malloc(n + 1);
        memset(big, 'x', n);
        big[n] = '\0';
        if (strcmp(method, "huge") == 0) {
            reply(id, json_pack("{s:s, s:I}", "data", big, "bytes", (json_int_t)n));
        } else {
            /* a well-formed response to this very call, but too long for the
             * client: it must be discarded, and the short one below used */
            reply(id, json_pack("{s:s}", "data", big));
            reply(id, json_pack("{s:s}", "data", "short"));
        }
        free(big);
    } else if (strcmp(method, "crlf") == 0) {
        pthread_mutex_lock(&out_lock);
        write_raw("\r\n\n", 3);
        pthread_mutex_unlock(&out_lock);
        send_json(json_pack("{s:s, s:O, s:s}", "jsonrpc", "2.0", "id", id, "result", "crlf"),
                  "\r\n");
    } else if (strcmp(method, "callback") == 0) {
        json_t *resp = call_client(json_string_value(json_object_get(params, "method")),
                                   json_object_get(params, "params"),
                                   json_is_true(json_object_get(params, "numeric_id")));
        json_t *error = json_object_get(resp, "error");
        if (error)
            reply(id, json_pack("{s:O}", "clientError", error));
        else
            reply(id, json_pack("{s:O}", "answer", json_object_get(resp, "result")));
        json_decref(resp);
    } else if (strcmp(method, "notify") == 0) {
        int count = (int)json_integer_value(json_object_get(params, "count"));
        for (int i = 0; i < count; i++)
            send_json(json_pack("{s:s, s:s, s:{s:i}}", "jsonrpc", "2.0", "method", "progress",
                                "params", "i", i),
                      "\n");
        reply(id, json_pack("{s:i}", "sent", count));
    } else if (strcmp(method, "notes") == 0) {
        pthread_mutex_lock(&notes_lock);
        reply(id, json_deep_copy(notes));
        pthread_mutex_unlock(&notes_lock);
    } else {
        char msg[256];
        snprintf(msg, sizeof msg, "Method not found: %s", method);
        reply_error(id, -32601, msg, NULL);
    }
}

static void process_line(char *line)
{
    json_error_t je;
    json_t *msg = json_loads(line, 0, &je);
    if (!msg) {
        if (line[strspn(line, " \t\r\n")])
            reply_error(NULL, -32700, "Parse error", NULL);
        return;
    }
    json_t *method = json_object_get(msg, "method");
    if (json_is_string(method))
        handle(json_string_value(method), json_object_get(msg, "id"),
               json_object_get(msg, "params"));
    json_decref(msg);
}

int main(void)
{
    notes = json_array();
    for (;;) {
        char *line = read_line();
        if (!line)
            break;
        process_line(line);
    }
    json_decref(notes);
    return 0;
}
