/* fuzz_model_stream.c — arbitrary bytes as a model endpoint's reply body,
 * through the model client exactly as the agent uses it (HTTP over
 * 127.0.0.1, the SSE parser, chunk JSON, tool-call assembly by index, the
 * reply and tool-call caps, usage, error objects inside the stream). The
 * first byte picks the response: even = text/event-stream, odd = one JSON
 * body (the non-streaming path). fuzz_sse.c covers the SSE parser alone;
 * this covers what the client builds on it. Nothing may crash, hang or
 * leak; a success has a reply within the caps, a failure a code. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/model_client.h"
#include "agent/model_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct serve {
    int listen_fd;
    const uint8_t *body;
    size_t len;
    bool json;
} serve;

static void write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        c += w;
        n -= (size_t)w;
    }
}

/* Answers exactly one request with the fuzz bytes, then closes. */
static void *serve_one(void *arg)
{
    serve *s = arg;
    int fd = accept(s->listen_fd, NULL, NULL);
    if (fd < 0)
        return NULL;
    char buf[65536];
    size_t have = 0;
    long want = -1;
    for (;;) { /* headers, then Content-Length bytes of body */
        ssize_t r = recv(fd, buf + have, sizeof buf - 1 - have, 0);
        if (r <= 0)
            break;
        have += (size_t)r;
        buf[have] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        if (end && want < 0) {
            char *cl = strcasestr(buf, "content-length:");
            want = (long)(end + 4 - buf) + (cl ? atol(cl + 15) : 0);
        }
        if ((want >= 0 && (long)have >= want) || have >= sizeof buf - 1)
            break;
    }
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nConnection: close\r\n\r\n",
                     s->json ? "application/json" : "text/event-stream");
    write_all(fd, head, (size_t)n);
    write_all(fd, s->body, s->len);
    shutdown(fd, SHUT_WR);
    close(fd);
    return NULL;
}

static int on_event(void *arg, const cdsh_model_event *ev)
{
    (void)ev;
    size_t *n = arg;
    (*n)++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int listen_fd = -1;
    static unsigned short port;
    if (listen_fd < 0) {
        listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t al = sizeof a;
        if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
            listen(listen_fd, 4) != 0 || getsockname(listen_fd, (struct sockaddr *)&a, &al) != 0)
            abort();
        port = ntohs(a.sin_port);
    }
    if (size == 0)
        return 0;
    serve s = {.listen_fd = listen_fd, .body = data + 1, .len = size - 1, .json = data[0] & 1};
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/v1", port);
    cdsh_model_config cfg = {.base_url = url,
                             .api_key = "fuzz-key",
                             .model = "fuzz-model",
                             .connect_timeout_ms = 5000,
                             .idle_timeout_ms = 5000,
                             .max_retries = -1,
                             .retry_base_ms = 1,
                             .retry_max_ms = 1,
                             .max_reply_bytes = 256 * 1024,
                             .max_tool_calls = 8};
    cdsh_model_client *c = cdsh_model_client_new(&cfg, NULL);
    if (!c)
        abort();
    pthread_t thr;
    if (pthread_create(&thr, NULL, serve_one, &s) != 0)
        abort();
    json_t *messages = json_pack("[{s:s,s:s}]", "role", "user", "content", "hi");
    size_t events = 0;
    cdsh_model_request req = {.messages = messages,
                              .no_stream = s.json,
                              .on_event = on_event,
                              .event_arg = &events};
    cdsh_model_reply reply = {0};
    cdsh_error err = {0};
    int rc = cdsh_model_client_complete(c, &req, &reply, &err);
    pthread_join(thr, NULL);
    if (rc == 0) {
        if (!reply.text || reply.n_tool_calls > 8)
            abort();
        for (size_t i = 0; i < reply.n_tool_calls; i++)
            if (!reply.tool_calls[i].id || !reply.tool_calls[i].arguments)
                abort();
        json_decref(cdsh_model_reply_to_message(&reply));
    } else if (!err.code[0]) {
        abort(); /* every failure has its code */
    }
    cdsh_model_reply_deinit(&reply);
    json_decref(messages);
    cdsh_model_client_free(c);
    return 0;
}
