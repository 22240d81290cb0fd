/* bench_sse.c — throughput of the SSE parser on a typical streamed chat
 * completion (small "delta" chunks, fed in 1400-byte pieces as they come
 * off a TCP connection), with and without decoding each chunk's JSON. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/sse.h"
#include "base/strbuf.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int count_only(void *arg, const cdsh_sse_event *ev)
{
    (void)ev;
    ++*(long *)arg;
    return 0;
}

static int decode(void *arg, const cdsh_sse_event *ev)
{
    ++*(long *)arg;
    json_t *v = json_loadb(ev->data, ev->data_len, 0, NULL);
    json_decref(v);
    return 0;
}

static void run(const char *label, const cdsh_strbuf *stream, cdsh_sse_event_fn fn, int rounds)
{
    long events = 0;
    double start = now();
    for (int r = 0; r < rounds; r++) {
        cdsh_sse *p = cdsh_sse_new(0, fn, &events);
        for (size_t off = 0; off < stream->len; off += 1400) {
            size_t n = stream->len - off < 1400 ? stream->len - off : 1400;
            cdsh_sse_feed(p, stream->data + off, n, NULL);
        }
        cdsh_sse_finish(p);
        cdsh_sse_free(p);
    }
    double secs = now() - start;
    double mb = (double)stream->len * rounds / (1024.0 * 1024.0);
    printf("%-22s %8.1f MiB/s %12.0f events/s\n", label, mb / secs, (double)events / secs);
}

int main(void)
{
    cdsh_strbuf stream;
    cdsh_strbuf_init(&stream);
    for (int i = 0; i < 4000; i++)
        cdsh_strbuf_appendf(&stream,
                            "data: {\"id\":\"chatcmpl-%d\",\"object\":\"chat.completion.chunk\","
                            "\"created\":1732900000,\"model\":\"deepseek-chat\",\"choices\":[{"
                            "\"index\":0,\"delta\":{\"content\":\"token %d \"},"
                            "\"finish_reason\":null}]}\n\n",
                            i, i);
    cdsh_strbuf_append_str(&stream, "data: [DONE]\n\n");
    printf("stream of %zu bytes, 4001 events\n", stream.len);
    run("sse parse", &stream, count_only, 50);
    run("sse parse + json", &stream, decode, 20);
    cdsh_strbuf_deinit(&stream);
    return 0;
}
