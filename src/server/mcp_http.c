/* mcp_http.c — Streamable HTTP for the MCP server: request checks (Host,
 * Origin, token, protocol version, size), Mcp-Session-Id sessions, JSON
 * answers, SSE answers for tools/call (with its progress), the GET stream
 * for list_changed, DELETE. The MCP semantics are mcp_server.c's. */
#include "server/mcp_http.h"

#include <netinet/in.h>
#include <openssl/evp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/json.h"
#include "proto/jsonrpc.h"
#include "base/random.h"
#include "base/strbuf.h"
#include "proto/mcp/mcp.h"
#include "server/mhd_dl.h"

#define KEEPALIVE_MS 15000
#define IDLE_TIMEOUT_S 30    /* default: an idle connection (no bytes either way) closes */
#define MAX_CONNECTIONS 64   /* default cap, counted before any request is read */
#define SHUTDOWN_GRACE_MS 500 /* how long shutdown waits for calls to end */

/* An SSE answer. The MHD connection thread sleeps in stream_read on poll()
 * over the stream's eventfd (written on every push and at the end) and the
 * client's socket (a client that goes away ends the stream at once). */
typedef struct stream {
    int refs; /* under lock */
    pthread_mutex_t lock;
    int efd;  /* eventfd: something to read, or finished */
    int sock; /* the client's socket (-1 unknown) */
    cdsh_strbuf q;
    size_t qoff;
    bool finished;
    uint64_t next_event;
    /* What routes notifications here: "<token key>" for a call's progress,
     * "sub:<id key>" for a subscription, "" for the GET stream. */
    char key[96];
    /* 2026-07-28 requests share one stateless session, so their progress
     * tokens and subscription ids are replaced by a unique key on the way in;
     * orig is the client's value, restored on the way out (NULL otherwise). */
    json_t *orig;
    /* Fired when a 2026-07-28 answer stream closes: there, closing the
     * stream is the cancellation. */
    cdsh_cancel *cancel;
    bool modern;
    struct cdsh_mcp_http *h; /* set once an MHD response reads this stream */
    json_t *rid;             /* the request's id as the session knows it */
    struct stream *next;
} stream;

typedef struct hsession hsession;
struct hsession {
    char id[40];
    cdsh_mcp_http *h;
    cdsh_mcp_session *ss;
    int refs; /* under h->lock */
    bool ended;
    pthread_mutex_t lock; /* streams, get */
    stream *streams;
    stream *get;
    bool pending_changed; /* list_changed seen while no GET stream was open */
    hsession *next;
};

struct cdsh_mcp_http {
    cdsh_mcp_server *server;
    char *token;
    uint16_t port;
    struct MHD_Daemon *daemon;
    pthread_mutex_t lock;
    hsession *sessions;
    hsession *stateless;
    bool closing;           /* shutting down: new requests get 503 */
    pthread_cond_t answered; /* (h->lock, monotonic) a POST stream left its session,
                                or an SSE response was released */
    int open_responses;      /* SSE responses MHD still holds (under lock) */
    unsigned idle_timeout_s, max_connections;
};

typedef struct post_buf {
    cdsh_strbuf body;
    bool too_big;
} post_buf;

/* ---- streams -------------------------------------------------------------------- */

static stream *stream_new(struct MHD_Connection *conn)
{
    stream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (!(s->cancel = cdsh_cancel_new(NULL))) {
        free(s);
        return NULL;
    }
    if ((s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        cdsh_cancel_free(s->cancel);
        free(s);
        return NULL;
    }
    const union MHD_ConnectionInfo *ci =
        conn ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;
    s->sock = ci ? ci->connect_fd : -1;
    s->refs = 1;
    pthread_mutex_init(&s->lock, NULL);
    cdsh_strbuf_init(&s->q);
    return s;
}

static void stream_unref(stream *s)
{
    pthread_mutex_lock(&s->lock);
    int left = --s->refs;
    pthread_mutex_unlock(&s->lock);
    if (left)
        return;
    json_decref(s->orig);
    json_decref(s->rid);
    cdsh_cancel_free(s->cancel);
    close(s->efd);
    cdsh_strbuf_deinit(&s->q);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* Under s->lock. */
static void stream_wake(stream *s)
{
    uint64_t one = 1;
    ssize_t n = write(s->efd, &one, sizeof one);
    (void)n; /* EAGAIN: the counter is already non-zero, the reader wakes anyway */
}

static void stream_push(stream *s, const char *json, bool last)
{
    pthread_mutex_lock(&s->lock);
    if (!s->finished) {
        cdsh_strbuf_appendf(&s->q, "event: message\nid: %llu\ndata: %s\n\n",
                            (unsigned long long)++s->next_event, json);
        s->finished = last;
        stream_wake(s);
    }
    pthread_mutex_unlock(&s->lock);
}

static void stream_finish(stream *s)
{
    pthread_mutex_lock(&s->lock);
    s->finished = true;
    stream_wake(s);
    pthread_mutex_unlock(&s->lock);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    stream *s = cls;
    bool gone = false;
    pthread_mutex_lock(&s->lock);
    while (s->q.len == s->qoff && !s->finished) {
        pthread_mutex_unlock(&s->lock);
        struct pollfd p[2] = {{.fd = s->efd, .events = POLLIN},
                              {.fd = s->sock, .events = POLLRDHUP}};
        int n = poll(p, 2, KEEPALIVE_MS);
        pthread_mutex_lock(&s->lock);
        if (p[0].revents & POLLIN) {
            uint64_t v;
            ssize_t got = read(s->efd, &v, sizeof v);
            (void)got;
        }
        if (n > 0 && (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR))) {
            gone = true; /* the client closed its side */
            break;
        }
        if (n == 0 && s->q.len == s->qoff && !s->finished) {
            cdsh_strbuf_append_str(&s->q, ": keep-alive\n\n");
            break;
        }
    }
    size_t avail = s->q.len - s->qoff;
    if (gone || avail == 0) {
        pthread_mutex_unlock(&s->lock);
        return gone ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
    }
    size_t n = avail < max ? avail : max;
    memcpy(buf, s->q.data + s->qoff, n);
    s->qoff += n;
    if (s->qoff == s->q.len) {
        cdsh_strbuf_reset(&s->q);
        s->qoff = 0;
    }
    pthread_mutex_unlock(&s->lock);
    return (ssize_t)n;
}

static void stream_response_free(void *cls)
{
    stream *s = cls;
    if (s->modern)
        cdsh_cancel_fire(s->cancel, "the client closed the answer stream");
    struct cdsh_mcp_http *h = s->h;
    stream_unref(s);
    pthread_mutex_lock(&h->lock);
    h->open_responses--;
    pthread_cond_broadcast(&h->answered);
    pthread_mutex_unlock(&h->lock);
}

/* An SSE response reading st (its reference is the response's). */
static struct MHD_Response *stream_response(cdsh_mcp_http *h, stream *st)
{
    st->h = h;
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read,
                                                               st, stream_response_free);
    if (r) {
        pthread_mutex_lock(&h->lock);
        h->open_responses++;
        pthread_mutex_unlock(&h->lock);
    }
    return r;
}

/* ---- sessions ------------------------------------------------------------------- */

static void token_key(const json_t *tok, char *out, size_t n)
{
    if (json_is_string(tok))
        snprintf(out, n, "s:%s", json_string_value(tok));
    else if (json_is_integer(tok))
        snprintf(out, n, "i:%lld", (long long)json_integer_value(tok));
    else
        out[0] = '\0';
}

/* Session send function: progress goes to the stream of its request, a
 * subscription's notifications to its listen stream, the rest to the GET
 * stream when one is open (else it is dropped, as the spec allows). */
static void hs_send(void *arg, const char *method, json_t *params)
{
    hsession *hs = arg;
    char key[96] = "", k[80] = "";
    bool progress = strcmp(method, "notifications/progress") == 0;
    json_t *sub = json_object_get(json_object_get(params, "_meta"),
                                  "io.modelcontextprotocol/subscriptionId");
    if (progress) {
        token_key(json_object_get(params, "progressToken"), key, sizeof key);
    } else if (sub) {
        token_key(sub, k, sizeof k);
        snprintf(key, sizeof key, "sub:%s", k);
    }
    pthread_mutex_lock(&hs->lock);
    stream *target = NULL;
    if (key[0]) {
        for (stream *s = hs->streams; s && !target; s = s->next)
            if (strcmp(s->key, key) == 0)
                target = s;
    } else {
        target = hs->get;
    }
    if (!target) {
        if (strcmp(method, "notifications/tools/list_changed") == 0 && !sub)
            hs->pending_changed = true; /* delivered when the client opens its GET stream */
        pthread_mutex_unlock(&hs->lock);
        return;
    }
    json_t *out = params ? json_deep_copy(params) : NULL;
    if (out && target->orig) {
        if (progress)
            json_object_set(out, "progressToken", target->orig);
        else
            json_object_set(json_object_get(out, "_meta"),
                            "io.modelcontextprotocol/subscriptionId", target->orig);
    }
    json_t *msg = json_pack("{s:s,s:s}", "jsonrpc", "2.0", "method", method);
    if (msg && out)
        json_object_set(msg, "params", out);
    char *text = msg ? cdsh_json_dump_compact_dup(msg) : NULL;
    if (text)
        stream_push(target, text, false);
    pthread_mutex_unlock(&hs->lock);
    free(text);
    json_decref(msg);
    json_decref(out);
}

static hsession *hs_new(cdsh_mcp_http *h, bool stateless)
{
    hsession *hs = calloc(1, sizeof *hs);
    if (!hs)
        return NULL;
    hs->h = h;
    hs->refs = 1;
    pthread_mutex_init(&hs->lock, NULL);
    if (!stateless && cdsh_random_hex(hs->id, sizeof hs->id, 16) != 0) {
        free(hs);
        return NULL;
    }
    hs->ss = cdsh_mcp_session_new(h->server, "http", hs_send, hs, NULL);
    if (!hs->ss) {
        pthread_mutex_destroy(&hs->lock);
        free(hs);
        return NULL;
    }
    return hs;
}

static void hs_unref(hsession *hs)
{
    cdsh_mcp_http *h = hs->h;
    pthread_mutex_lock(&h->lock);
    int left = --hs->refs;
    pthread_mutex_unlock(&h->lock);
    if (left)
        return;
    cdsh_mcp_session_free(hs->ss);
    if (hs->get) {
        stream_finish(hs->get);
        stream_unref(hs->get);
    }
    pthread_mutex_destroy(&hs->lock);
    free(hs);
}

static hsession *hs_find(cdsh_mcp_http *h, const char *id)
{
    pthread_mutex_lock(&h->lock);
    hsession *hs = h->sessions;
    while (hs && strcmp(hs->id, id) != 0)
        hs = hs->next;
    if (hs)
        hs->refs++;
    pthread_mutex_unlock(&h->lock);
    return hs;
}

/* Removes a session from the table and cancels its calls; the last
 * reference frees it. */
static void hs_end(cdsh_mcp_http *h, hsession *hs)
{
    pthread_mutex_lock(&h->lock);
    bool found = false;
    for (hsession **p = &h->sessions; *p; p = &(*p)->next)
        if (*p == hs) {
            *p = hs->next;
            found = true;
            break;
        }
    pthread_mutex_unlock(&h->lock);
    if (!found)
        return;
    cdsh_mcp_session_cancel_all(hs->ss, "MCP session ended");
    pthread_mutex_lock(&hs->lock);
    if (hs->get)
        stream_finish(hs->get);
    pthread_mutex_unlock(&hs->lock);
    hs_unref(hs); /* the table's reference */
}

/* ---- replies ----------------------------------------------------------------------- */

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *ctype,
                             const char *body, const char *session_id)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", ctype);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    if (session_id && *session_id)
        MHD_add_response_header(r, "Mcp-Session-Id", session_id);
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result reply_rpc_error(struct MHD_Connection *conn, unsigned status,
                                       const json_t *id, int64_t code, const char *message)
{
    json_t *e =
        json_pack("{s:s,s:O,s:{s:I,s:s}}", "jsonrpc", "2.0", "id", id ? (json_t *)id : json_null(),
                  "error", "code", (json_int_t)code, "message", message);
    char *text = e ? cdsh_json_dump_compact_dup(e) : NULL;
    json_decref(e);
    enum MHD_Result ret = reply(conn, status, "application/json", text ? text : "{}", NULL);
    free(text);
    return ret;
}

static json_t *response_msg(const json_t *id, json_t *result, int64_t code, const char *msg,
                            json_t *data)
{
    if (result)
        return json_pack("{s:s,s:O,s:O}", "jsonrpc", "2.0", "id", id, "result", result);
    json_t *e = json_pack("{s:I,s:s}", "code", (json_int_t)code, "message", msg ? msg : "error");
    if (e && data)
        json_object_set(e, "data", data);
    return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "error", e);
}

/* ---- checks ------------------------------------------------------------------------ */

bool cdsh__server_token_equal(const char *a, const char *b)
{
    if (!a || !b)
        return false;
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = (unsigned char)(la != lb);
    for (size_t i = 0; i < la && i < lb; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

const char *cdsh__server_bearer(const char *auth)
{
    if (!auth || strncasecmp(auth, "Bearer", 6) != 0 || (auth[6] != ' ' && auth[6] != '\t'))
        return NULL;
    auth += 6;
    while (*auth == ' ' || *auth == '\t')
        auth++;
    return auth;
}

static bool hex_digit(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Layer-internal: whether a raw request target (path and query, before
 * decoding) is free of "%00" and of malformed escapes ("%", "%4", "%zz").
 * libmicrohttpd decodes "%00" into a NUL that cuts the path short
 * ("/app.js%00.png" would serve /app.js), so both servers answer 400
 * BAD_URL to such a target (see cdsh__server_uri_log). */
static bool cdsh__server_uri_ok(const char *uri)
{
    for (const char *p = uri; p && *p; p++) {
        if (*p != '%')
            continue;
        if (!hex_digit(p[1]) || !hex_digit(p[2]) || (p[1] == '0' && p[2] == '0'))
            return false;
        p += 2;
    }
    return true;
}

char cdsh__server_bad_uri_mark;

void *cdsh__server_uri_log(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls, (void)conn;
    return cdsh__server_uri_ok(uri) ? NULL : CDSH__SERVER_BAD_URI;
}

static bool host_ok(const cdsh_mcp_http *h, const char *host)
{
    if (!host)
        return false;
    char a[64], b[64], c[64];
    snprintf(a, sizeof a, "127.0.0.1:%u", h->port);
    snprintf(b, sizeof b, "localhost:%u", h->port);
    snprintf(c, sizeof c, "[::1]:%u", h->port);
    return strcmp(host, a) == 0 || strcmp(host, b) == 0 || strcmp(host, c) == 0;
}

static bool origin_ok(const cdsh_mcp_http *h, const char *origin)
{
    if (!origin)
        return true; /* non-browser clients send none */
    char a[64], b[64];
    snprintf(a, sizeof a, "http://127.0.0.1:%u", h->port);
    snprintf(b, sizeof b, "http://localhost:%u", h->port);
    return strcmp(origin, a) == 0 || strcmp(origin, b) == 0;
}

static const char *header(struct MHD_Connection *conn, const char *name)
{
    return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

/* ---- POST ------------------------------------------------------------------------------ */

typedef struct call_job {
    hsession *hs;
    stream *st;
    json_t *id;     /* the client's, for the answer */
    json_t *sid;    /* the session's (a unique key on the stateless session) */
    json_t *params; /* with the progress token replaced likewise */
    char method[64];
} call_job;

static void call_run(void *arg)
{
    call_job *j = arg;
    json_t *result = NULL, *edata = NULL;
    int64_t code = 0;
    char *msg = NULL;
    if (cdsh_mcp_session_request(j->hs->ss, j->sid, j->method, j->params, j->st->cancel, &result,
                                 &code, &msg, &edata) != 0) {
        code = CDSH_JSONRPC_INTERNAL_ERROR;
        msg = strdup("out of memory");
    }
    json_t *resp = response_msg(j->id, result, code, msg, edata);
    char *text = resp ? cdsh_json_dump_compact_dup(resp) : NULL;
    /* The answer goes out before the stream leaves the session's list, so a
     * shutdown waiting for the list to empty never cuts it off. */
    if (text)
        stream_push(j->st, text, true);
    stream_finish(j->st);
    cdsh_mcp_http *h = j->hs->h;
    pthread_mutex_lock(&j->hs->lock);
    for (stream **p = &j->hs->streams; *p; p = &(*p)->next)
        if (*p == j->st) {
            *p = j->st->next;
            break;
        }
    pthread_mutex_unlock(&j->hs->lock);
    pthread_mutex_lock(&h->lock);
    pthread_cond_broadcast(&h->answered);
    pthread_mutex_unlock(&h->lock);
    free(text);
    json_decref(resp);
    json_decref(result);
    json_decref(edata);
    free(msg);
    stream_unref(j->st);
    hs_unref(j->hs);
    json_decref(j->id);
    json_decref(j->sid);
    json_decref(j->params);
    free(j);
}

static void *call_worker(void *arg)
{
    call_run(arg);
    return NULL;
}

static uint64_t unique_keys;

/* Answers a tools/call or subscriptions/listen with an SSE stream fed by a
 * worker. */
static enum MHD_Result post_stream(struct MHD_Connection *conn, hsession *hs, const cdsh_mcp_msg *m,
                                   bool modern)
{
    bool listen = strcmp(m->method, "subscriptions/listen") == 0;
    bool shared = hs == hs->h->stateless;
    json_t *tok = json_object_get(json_object_get(m->params, "_meta"), "progressToken");
    call_job *j = calloc(1, sizeof *j);
    stream *st = stream_new(conn);
    struct MHD_Response *r = NULL;
    if (!st || !j)
        goto fail;
    st->modern = modern;
    j->id = json_deep_copy(m->id);
    j->sid = json_deep_copy(m->id);
    j->params = m->params ? json_deep_copy(m->params) : NULL;
    if (!j->id || !j->sid || (m->params && !j->params))
        goto fail;
    if (shared && (listen || tok)) {
        char u[32];
        snprintf(u, sizeof u, "k%llu",
                 (unsigned long long)__atomic_add_fetch(&unique_keys, 1, __ATOMIC_RELAXED));
        if (listen) {
            st->orig = json_incref(j->sid);
            json_decref(j->sid);
            j->sid = json_string(u);
        } else {
            st->orig = json_incref(tok);
            json_object_set_new(json_object_get(j->params, "_meta"), "progressToken",
                                json_string(u));
        }
    }
    st->rid = json_incref(j->sid);
    char k[80] = "";
    if (listen) {
        token_key(j->sid, k, sizeof k);
        snprintf(st->key, sizeof st->key, "sub:%s", k);
    } else {
        token_key(json_object_get(json_object_get(j->params, "_meta"), "progressToken"), st->key,
                  sizeof st->key);
    }
    r = stream_response(hs->h, st);
    if (!r)
        goto fail;
    st->refs = 3; /* response, worker, creator (dropped below) */
    j->hs = hs;
    j->st = st;
    snprintf(j->method, sizeof j->method, "%s", m->method);
    pthread_mutex_lock(&hs->lock);
    st->next = hs->streams;
    hs->streams = st;
    pthread_mutex_unlock(&hs->lock);
    pthread_mutex_lock(&hs->h->lock);
    hs->refs++; /* the worker's */
    pthread_mutex_unlock(&hs->h->lock);
    /* Tool calls run on the server's bounded pool; a subscription (capped in
     * number by the server) holds its own thread while it is open. */
    if (!listen) {
        if (cdsh_mcp_server_submit(hs->h->server, call_run, j) != 0)
            call_run(j);
    } else {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, call_worker, j) != 0)
            call_run(j);
        pthread_attr_destroy(&attr);
    }
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    stream_unref(st);
    return ret;
fail:
    if (st)
        stream_unref(st);
    if (j) {
        json_decref(j->id);
        json_decref(j->sid);
        json_decref(j->params);
    }
    free(j);
    return reply_rpc_error(conn, 500, m->id, CDSH_JSONRPC_INTERNAL_ERROR, "out of memory");
}

/* The HTTP status of a 2026-07-28 error answer. */
static unsigned modern_status(int64_t code)
{
    if (code == CDSH_JSONRPC_METHOD_NOT_FOUND)
        return 404;
    if (code == CDSH_MCP_UNSUPPORTED_VERSION || code == CDSH_MCP_HEADER_MISMATCH)
        return 400;
    return 200;
}

static enum MHD_Result post_sync(struct MHD_Connection *conn, hsession *hs, const cdsh_mcp_msg *m,
                                 const char *session_header, bool modern)
{
    json_t *result = NULL, *edata = NULL;
    int64_t code = 0;
    char *msg = NULL;
    if (cdsh_mcp_session_request(hs->ss, m->id, m->method, m->params, NULL, &result, &code, &msg,
                                 &edata) != 0)
        return reply_rpc_error(conn, 500, m->id, CDSH_JSONRPC_INTERNAL_ERROR, "out of memory");
    json_t *resp = response_msg(m->id, result, code, msg, edata);
    char *text = resp ? cdsh_json_dump_compact_dup(resp) : NULL;
    enum MHD_Result ret =
        text ? reply(conn, result || !modern ? 200 : modern_status(code), "application/json", text,
                     session_header)
             : reply_rpc_error(conn, 500, m->id, CDSH_JSONRPC_INTERNAL_ERROR, "out of memory");
    free(text);
    json_decref(resp);
    json_decref(result);
    json_decref(edata);
    free(msg);
    return ret;
}

static bool is_modern(const cdsh_mcp_msg *m)
{
    return cdsh_mcp_version_is_modern(json_string_value(json_object_get(
        json_object_get(m->params, "_meta"), "io.modelcontextprotocol/protocolVersion")));
}

/* A header value as sent: plain, or "=?base64?<UTF-8 in base64>?=" (2026-07-28
 * encoding of values that are not plain visible ASCII). Owned; NULL when
 * absent or undecodable. */
static char *header_value_dup(struct MHD_Connection *conn, const char *name)
{
    const char *v = header(conn, name);
    if (!v)
        return NULL;
    size_t n = strlen(v);
    if (n < 11 || strncmp(v, "=?base64?", 9) != 0 || strcmp(v + n - 2, "?=") != 0)
        return strdup(v);
    size_t b64 = n - 11;
    if (b64 % 4)
        return NULL;
    unsigned char *out = malloc(b64 / 4 * 3 + 1);
    int len = out ? EVP_DecodeBlock(out, (const unsigned char *)v + 9, (int)b64) : -1;
    if (len < 0) {
        free(out);
        return NULL;
    }
    /* EVP_DecodeBlock counts the padding as zero bytes. */
    if (b64 >= 1 && v[9 + b64 - 1] == '=')
        len--;
    if (b64 >= 2 && v[9 + b64 - 2] == '=')
        len--;
    out[len] = '\0';
    if (strlen((char *)out) != (size_t)len) {
        free(out);
        return NULL;
    }
    return (char *)out;
}

/* 2026-07-28 request checks: the required _meta, and the mirrored headers
 * (MCP-Protocol-Version, Mcp-Method, Mcp-Name) equal to the body. Queues
 * the 400 answer and returns false on a mismatch. */
static bool modern_headers_ok(struct MHD_Connection *conn, const cdsh_mcp_msg *m,
                              enum MHD_Result *ret)
{
    json_t *meta = json_object_get(m->params, "_meta");
    const char *ver = json_string_value(json_object_get(meta, "io.modelcontextprotocol/protocolVersion"));
    if (m->kind == CDSH_MCP_MSG_REQUEST &&
        !json_is_object(json_object_get(meta, "io.modelcontextprotocol/clientCapabilities"))) {
        *ret = reply_rpc_error(conn, 400, m->id, CDSH_JSONRPC_INVALID_PARAMS,
                               "missing required _meta[\"io.modelcontextprotocol/"
                               "clientCapabilities\"]");
        return false;
    }
    const char *pv = header(conn, "MCP-Protocol-Version");
    if (!pv || strcmp(pv, ver) != 0) {
        *ret = reply_rpc_error(conn, 400, m->id, CDSH_MCP_HEADER_MISMATCH,
                               "MCP-Protocol-Version header does not match "
                               "_meta[\"io.modelcontextprotocol/protocolVersion\"]");
        return false;
    }
    char *method = header_value_dup(conn, "Mcp-Method");
    bool ok = method && strcmp(method, m->method) == 0;
    free(method);
    if (!ok) {
        *ret = reply_rpc_error(conn, 400, m->id, CDSH_MCP_HEADER_MISMATCH,
                               "Mcp-Method header missing or not equal to the method");
        return false;
    }
    const char *want = NULL;
    if (strcmp(m->method, "tools/call") == 0 || strcmp(m->method, "prompts/get") == 0)
        want = json_string_value(json_object_get(m->params, "name"));
    else if (strcmp(m->method, "resources/read") == 0)
        want = json_string_value(json_object_get(m->params, "uri"));
    if (want) {
        char *name = header_value_dup(conn, "Mcp-Name");
        ok = name && strcmp(name, want) == 0;
        free(name);
        if (!ok) {
            *ret = reply_rpc_error(conn, 400, m->id, CDSH_MCP_HEADER_MISMATCH,
                                   "Mcp-Name header missing or not equal to the name in the body");
            return false;
        }
    }
    return true;
}

static enum MHD_Result do_post(cdsh_mcp_http *h, struct MHD_Connection *conn, post_buf *rs)
{
    if (rs->too_big)
        return reply_rpc_error(conn, 413, NULL, CDSH_JSONRPC_INVALID_REQUEST,
                               "message exceeds 16 MiB");
    json_t *v = NULL;
    cdsh_mcp_msg m;
    cdsh_error err = {0};
    if (cdsh_mcp_msg_parse(rs->body.data, rs->body.len, &v, &m, &err) != 0) {
        int64_t code = strcmp(err.code, "PARSE_ERROR") == 0 ? CDSH_JSONRPC_PARSE_ERROR
                                                            : CDSH_JSONRPC_INVALID_REQUEST;
        return reply_rpc_error(conn, 400, NULL, code, err.message);
    }
    enum MHD_Result ret;
    const char *sid = header(conn, "Mcp-Session-Id");
    hsession *hs = NULL;
    if (m.kind == CDSH_MCP_MSG_REQUEST && strcmp(m.method, "initialize") == 0) {
        hs = hs_new(h, false);
        if (!hs) {
            ret = reply_rpc_error(conn, 500, m.id, CDSH_JSONRPC_INTERNAL_ERROR, "out of memory");
            goto out;
        }
        pthread_mutex_lock(&h->lock);
        hs->next = h->sessions;
        h->sessions = hs;
        hs->refs++; /* table + this request */
        pthread_mutex_unlock(&h->lock);
        ret = post_sync(conn, hs, &m, hs->id, false);
        goto out;
    }
    bool modern = is_modern(&m);
    if (modern && !modern_headers_ok(conn, &m, &ret))
        goto out;
    if (!sid && (modern || (m.kind == CDSH_MCP_MSG_REQUEST &&
                            strcmp(m.method, "server/discover") == 0))) {
        pthread_mutex_lock(&h->lock);
        hs = h->stateless;
        hs->refs++;
        pthread_mutex_unlock(&h->lock);
    } else if (!sid) {
        ret = reply_rpc_error(conn, 400, m.id, CDSH_JSONRPC_INVALID_REQUEST,
                              "Bad Request: Mcp-Session-Id header is required");
        goto out;
    } else if (!(hs = hs_find(h, sid))) {
        ret = reply_rpc_error(conn, 404, m.id, CDSH_JSONRPC_INVALID_REQUEST,
                              "Session not found: initialize again");
        goto out;
    }
    if (m.kind != CDSH_MCP_MSG_REQUEST) {
        bool cancel = m.kind == CDSH_MCP_MSG_NOTIFICATION &&
                      strcmp(m.method, "notifications/cancelled") == 0;
        /* On the shared stateless session request ids of different clients
         * may collide: there, closing the answer stream is the cancellation
         * (2026-07-28), and cancel notifications are ignored. */
        if (m.kind == CDSH_MCP_MSG_NOTIFICATION && !(cancel && hs == h->stateless)) {
            cdsh_mcp_session_notification(hs->ss, m.method, m.params);
            json_t *rid = json_object_get(m.params, "requestId");
            if (cancel && rid) {
                /* Also a call still queued for a pool worker. */
                pthread_mutex_lock(&hs->lock);
                for (stream *st = hs->streams; st; st = st->next)
                    if (st->rid && json_equal(st->rid, rid))
                        cdsh_cancel_fire(st->cancel, "cancelled by the MCP client");
                pthread_mutex_unlock(&hs->lock);
            }
        }
        ret = reply(conn, 202, "text/plain", "", NULL);
        goto out;
    }
    const char *accept = header(conn, "Accept");
    bool sse = accept && strstr(accept, "text/event-stream");
    bool listen = modern && strcmp(m.method, "subscriptions/listen") == 0;
    if (listen && !sse)
        ret = reply_rpc_error(conn, 406, m.id, CDSH_JSONRPC_INVALID_REQUEST,
                              "subscriptions/listen needs Accept: text/event-stream");
    else if ((strcmp(m.method, "tools/call") == 0 || listen) && sse)
        ret = post_stream(conn, hs, &m, modern);
    else
        ret = post_sync(conn, hs, &m, NULL, modern);
out:
    if (hs)
        hs_unref(hs);
    json_decref(v);
    return ret;
}

/* ---- GET / DELETE ----------------------------------------------------------------------- */

/* The session named by Mcp-Session-Id (a reference), or NULL with the 400 /
 * 404 answer queued in *ret. */
static hsession *session_of(cdsh_mcp_http *h, struct MHD_Connection *conn, enum MHD_Result *ret)
{
    const char *sid = header(conn, "Mcp-Session-Id");
    hsession *hs = sid ? hs_find(h, sid) : NULL;
    if (!sid)
        *ret = reply_rpc_error(conn, 400, NULL, CDSH_JSONRPC_INVALID_REQUEST,
                               "Bad Request: Mcp-Session-Id header is required");
    else if (!hs)
        *ret = reply_rpc_error(conn, 404, NULL, CDSH_JSONRPC_INVALID_REQUEST, "Session not found");
    return hs;
}

static enum MHD_Result do_get(cdsh_mcp_http *h, struct MHD_Connection *conn)
{
    const char *accept = header(conn, "Accept");
    if (!accept || !strstr(accept, "text/event-stream"))
        return reply(conn, 406, "text/plain", "GET needs Accept: text/event-stream\n", NULL);
    enum MHD_Result ret;
    hsession *hs = session_of(h, conn, &ret);
    if (!hs)
        return ret;
    stream *st = stream_new(conn);
    struct MHD_Response *r = st ? stream_response(h, st) : NULL;
    if (!r) {
        if (st)
            stream_unref(st);
        ret = reply(conn, 500, "text/plain", "out of memory\n", NULL);
        goto out;
    }
    pthread_mutex_lock(&hs->lock);
    if (hs->get) {
        /* One GET stream per session: the new one replaces the old. */
        stream_finish(hs->get);
        stream_unref(hs->get);
    }
    st->refs = 2; /* response + session */
    hs->get = st;
    if (hs->pending_changed) {
        hs->pending_changed = false;
        stream_push(st, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}",
                    false);
    }
    pthread_mutex_unlock(&hs->lock);
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");
    ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
out:
    hs_unref(hs);
    return ret;
}

static enum MHD_Result do_delete(cdsh_mcp_http *h, struct MHD_Connection *conn)
{
    enum MHD_Result ret;
    hsession *hs = session_of(h, conn, &ret);
    if (!hs)
        return ret;
    hs_end(h, hs);
    hs_unref(hs);
    return reply(conn, 200, "text/plain", "", NULL);
}

/* ---- entry points ------------------------------------------------------------------------- */

enum MHD_Result cdsh_mcp_http_handle(cdsh_mcp_http *h, struct MHD_Connection *conn,
                                     const char *method, const char *upload, size_t *upload_size,
                                     void **req_state)
{
    post_buf *rs = *req_state;
    if (!rs) {
        rs = calloc(1, sizeof *rs);
        if (!rs)
            return MHD_NO;
        cdsh_strbuf_init(&rs->body);
        *req_state = rs;
        return MHD_YES;
    }
    if (*upload_size) {
        if (rs->body.len + *upload_size > CDSH_MCP_MAX_MESSAGE)
            rs->too_big = true;
        else if (cdsh_strbuf_append(&rs->body, upload, *upload_size) != 0)
            rs->too_big = true;
        *upload_size = 0;
        return MHD_YES;
    }
    pthread_mutex_lock(&h->lock);
    bool closing = h->closing;
    pthread_mutex_unlock(&h->lock);
    if (closing)
        return reply(conn, 503, "text/plain", "the MCP server is shutting down\n", NULL);
    if (!host_ok(h, header(conn, "Host")))
        return reply(conn, 403, "text/plain", "Forbidden: unexpected Host header\n", NULL);
    if (!origin_ok(h, header(conn, "Origin")))
        return reply(conn, 403, "text/plain", "Forbidden: invalid Origin\n", NULL);
    if (h->token) {
        const char *bearer = cdsh__server_bearer(header(conn, "Authorization"));
        const char *q = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "token");
        if (!cdsh__server_token_equal(bearer, h->token) && !cdsh__server_token_equal(q, h->token))
            return reply(conn, 401, "text/plain",
                         "missing or wrong access token: send Authorization: Bearer <token>\n",
                         NULL);
    }
    const char *pv = header(conn, "MCP-Protocol-Version");
    if (pv && !cdsh_mcp_version_known(pv))
        return reply_rpc_error(conn, 400, NULL, CDSH_MCP_UNSUPPORTED_VERSION,
                               "Bad Request: unsupported MCP-Protocol-Version");
    if (strcmp(method, "POST") == 0)
        return do_post(h, conn, rs);
    if (strcmp(method, "GET") == 0)
        return do_get(h, conn);
    if (strcmp(method, "DELETE") == 0)
        return do_delete(h, conn);
    return reply(conn, 405, "text/plain", "method not allowed\n", NULL);
}

void cdsh_mcp_http_completed(void **req_state)
{
    post_buf *rs = req_state ? *req_state : NULL;
    if (!rs)
        return;
    cdsh_strbuf_deinit(&rs->body);
    free(rs);
    *req_state = NULL;
}

cdsh_mcp_http *cdsh_mcp_http_new(cdsh_mcp_server *server, const cdsh_mcp_http_opts *opts,
                                 cdsh_error *err)
{
    cdsh_mcp_http *h = calloc(1, sizeof *h);
    if (!h)
        goto nomem;
    h->server = server;
    h->port = opts ? opts->port : 0;
    h->idle_timeout_s = opts && opts->idle_timeout_s ? opts->idle_timeout_s : IDLE_TIMEOUT_S;
    h->max_connections = opts && opts->max_connections ? opts->max_connections : MAX_CONNECTIONS;
    pthread_mutex_init(&h->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->answered, &ca);
    pthread_condattr_destroy(&ca);
    if (opts && opts->token && !(h->token = strdup(opts->token)))
        goto nomem;
    if (!(h->stateless = hs_new(h, true)))
        goto nomem;
    return h;
nomem:
    cdsh_mcp_http_free(h);
    cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    return NULL;
}

/* Every session (the table's and the stateless one), each with a reference;
 * NULL-terminated, owned. */
static hsession **all_sessions(cdsh_mcp_http *h)
{
    pthread_mutex_lock(&h->lock);
    size_t n = 1;
    for (hsession *hs = h->sessions; hs; hs = hs->next)
        n++;
    hsession **v = calloc(n + 1, sizeof *v);
    size_t i = 0;
    for (hsession *hs = h->sessions; v && hs; hs = hs->next, i++)
        (v[i] = hs)->refs++;
    if (v && h->stateless)
        (v[i++] = h->stateless)->refs++;
    pthread_mutex_unlock(&h->lock);
    return v;
}

void cdsh_mcp_http_close_streams(cdsh_mcp_http *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    h->closing = true;
    pthread_mutex_unlock(&h->lock);
    hsession **v = all_sessions(h);
    if (!v)
        return;
    /* Cancel what runs (subscriptions then answer their closing result), give
     * the calls a moment to answer, then end every stream left. */
    for (size_t i = 0; v[i]; i++)
        cdsh_mcp_session_cancel_all(v[i]->ss, "the MCP server is shutting down");
    struct timespec until;
    cdsh_clock_deadline(CLOCK_MONOTONIC, SHUTDOWN_GRACE_MS, &until);
    pthread_mutex_lock(&h->lock);
    for (;;) {
        bool busy = false;
        for (size_t i = 0; v[i] && !busy; i++) {
            pthread_mutex_lock(&v[i]->lock);
            busy = v[i]->streams != NULL;
            pthread_mutex_unlock(&v[i]->lock);
        }
        if (!busy || pthread_cond_timedwait(&h->answered, &h->lock, &until) != 0)
            break;
    }
    pthread_mutex_unlock(&h->lock);
    for (size_t i = 0; v[i]; i++) {
        pthread_mutex_lock(&v[i]->lock);
        for (stream *st = v[i]->streams; st; st = st->next)
            stream_finish(st);
        if (v[i]->get)
            stream_finish(v[i]->get);
        pthread_mutex_unlock(&v[i]->lock);
        hs_unref(v[i]);
    }
    free(v);
    /* Let the connection threads send what the streams hold (stopping the
     * daemon cuts connections), but not for long. */
    cdsh_clock_deadline(CLOCK_MONOTONIC, SHUTDOWN_GRACE_MS, &until);
    pthread_mutex_lock(&h->lock);
    while (h->open_responses > 0)
        if (pthread_cond_timedwait(&h->answered, &h->lock, &until) != 0)
            break;
    pthread_mutex_unlock(&h->lock);
}

void cdsh_mcp_http_free(cdsh_mcp_http *h)
{
    if (!h)
        return;
    if (h->daemon) {
        cdsh_mcp_http_close_streams(h);
        MHD_stop_daemon(h->daemon);
    }
    for (;;) {
        pthread_mutex_lock(&h->lock);
        hsession *hs = h->sessions;
        if (hs)
            hs->refs++;
        pthread_mutex_unlock(&h->lock);
        if (!hs)
            break;
        hs_end(h, hs);
        hs_unref(hs);
    }
    if (h->stateless)
        hs_unref(h->stateless);
    pthread_cond_destroy(&h->answered);
    pthread_mutex_destroy(&h->lock);
    free(h->token);
    free(h);
}

static enum MHD_Result standalone(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **req_state)
{
    (void)version;
    cdsh_mcp_http *h = cls;
    if (*req_state == CDSH__SERVER_BAD_URI) {
        *req_state = NULL;
        return reply(conn, 400, "text/plain",
                     "bad request: the URL has a %00 or a malformed percent-escape\n", NULL);
    }
    if (strcmp(url, "/mcp") != 0)
        return reply(conn, 404, "text/plain", "not found: the MCP endpoint is /mcp\n", NULL);
    return cdsh_mcp_http_handle(h, conn, method, upload, upload_size, req_state);
}

static void completed(void *cls, struct MHD_Connection *conn, void **req_state,
                      enum MHD_RequestTerminationCode code)
{
    (void)cls, (void)conn, (void)code;
    if (*req_state != CDSH__SERVER_BAD_URI)
        cdsh_mcp_http_completed(req_state);
}

int cdsh_mcp_http_listen(cdsh_mcp_http *h, uint16_t port, cdsh_error *err)
{
    int rc = cdsh_mhd_load(err);
    if (rc)
        return rc;
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    /* No MHD_USE_ERROR_LOG: clients that stop reading an SSE answer once they
     * have their response are normal, not errors worth printing. A thread
     * per connection, so connections are capped as they are accepted —
     * before a byte of the request (or its token) is read — and idle ones
     * (no bytes either way, e.g. a half-sent request) are closed; event
     * streams stay busy with keep-alives well inside the idle limit. */
    h->daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL, NULL, standalone,
        h, MHD_OPTION_SOCK_ADDR, &addr, MHD_OPTION_NOTIFY_COMPLETED, completed, h,
        MHD_OPTION_URI_LOG_CALLBACK, cdsh__server_uri_log, NULL,
        MHD_OPTION_CONNECTION_TIMEOUT, h->idle_timeout_s, MHD_OPTION_CONNECTION_LIMIT,
        h->max_connections, MHD_OPTION_END);
    if (!h->daemon)
        return cdsh_error_set(err, CDSH_EIO, "LISTEN_FAILED", "cannot listen on 127.0.0.1:%u",
                              port);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : port;
    return 0;
}

uint16_t cdsh_mcp_http_port(const cdsh_mcp_http *h)
{
    return h->port;
}

void cdsh_mcp_http_set_port(cdsh_mcp_http *h, uint16_t port)
{
    h->port = port;
}
