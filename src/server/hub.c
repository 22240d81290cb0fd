/* hub.c — the SSE event buffer and the MHD stream that follows it. */
#include "server/hub.h"

#include "server/mhd_dl.h" /* <microhttpd.h>, loaded on first use */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/strbuf.h"

typedef struct entry {
    int64_t id;
    char *session;
    char *frame;
} entry;

struct cdsh_hub {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    entry *ring;
    size_t cap;
    int64_t last; /* id of the newest event; entry id k lives at ring[(k-1) % cap] */
    bool closed;
};

cdsh_hub *cdsh_hub_new(size_t capacity)
{
    cdsh_hub *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->cap = capacity ? capacity : CDSH_HUB_DEFAULT_CAPACITY;
    h->ring = calloc(h->cap, sizeof *h->ring);
    if (!h->ring) {
        free(h);
        return NULL;
    }
    pthread_mutex_init(&h->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->cv, &ca);
    pthread_condattr_destroy(&ca);
    return h;
}

void cdsh_hub_free(cdsh_hub *hub)
{
    if (!hub)
        return;
    for (size_t i = 0; i < hub->cap; i++) {
        free(hub->ring[i].session);
        free(hub->ring[i].frame);
    }
    free(hub->ring);
    pthread_cond_destroy(&hub->cv);
    pthread_mutex_destroy(&hub->mu);
    free(hub);
}

int64_t cdsh_hub_publish(cdsh_hub *hub, const char *session, const char *type, const json_t *data)
{
    char *json = json_dumps(data, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
    if (!json)
        return 0;
    char *sess = session ? strdup(session) : NULL;
    pthread_mutex_lock(&hub->mu);
    if (hub->closed) {
        pthread_mutex_unlock(&hub->mu);
        free(json);
        free(sess);
        return 0;
    }
    int64_t id = hub->last + 1;
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    cdsh_strbuf_appendf(&sb, "id: %lld\nevent: %s\ndata: %s\n\n", (long long)id, type, json);
    char *frame = cdsh_strbuf_take(&sb, NULL);
    free(json);
    if (!frame) {
        pthread_mutex_unlock(&hub->mu);
        free(sess);
        return 0;
    }
    entry *e = &hub->ring[(size_t)(id - 1) % hub->cap];
    free(e->session);
    free(e->frame);
    *e = (entry){id, sess, frame};
    hub->last = id;
    pthread_cond_broadcast(&hub->cv);
    pthread_mutex_unlock(&hub->mu);
    return id;
}

int64_t cdsh_hub_last_id(cdsh_hub *hub)
{
    pthread_mutex_lock(&hub->mu);
    int64_t id = hub->last;
    pthread_mutex_unlock(&hub->mu);
    return id;
}

void cdsh_hub_close(cdsh_hub *hub)
{
    pthread_mutex_lock(&hub->mu);
    hub->closed = true;
    pthread_cond_broadcast(&hub->cv);
    pthread_mutex_unlock(&hub->mu);
}

static bool visible(const entry *e, const char *session)
{
    if (!e->session)
        return true;
    return session && strcmp(e->session, session) == 0;
}

/* Waits up to timeout_ms for the next event after *cursor that `session`
 * sees (NULL: global events only; an id: that session's events and global
 * ones). Returns 1 with an owned SSE frame in *frame and *cursor advanced,
 * 0 on timeout, -1 once the hub is closed. A cursor older than the buffer
 * yields an "event: reset" frame first. */
static int cdsh_hub_next(cdsh_hub *hub, const char *session, int64_t *cursor, int64_t timeout_ms,
                         char **frame)
{
    struct timespec deadline;
    cdsh_clock_deadline(CLOCK_MONOTONIC, timeout_ms, &deadline);
    *frame = NULL;
    pthread_mutex_lock(&hub->mu);
    for (;;) {
        if (hub->closed) {
            pthread_mutex_unlock(&hub->mu);
            return -1;
        }
        int64_t oldest = hub->last - (int64_t)hub->cap + 1;
        if (*cursor + 1 < oldest && *cursor < hub->last) {
            char buf[160];
            snprintf(buf, sizeof buf,
                     "event: reset\ndata: {\"reason\":\"missed events\",\"lastId\":%lld}\n\n",
                     (long long)hub->last);
            *cursor = oldest - 1;
            pthread_mutex_unlock(&hub->mu);
            *frame = strdup(buf);
            return *frame ? 1 : -1;
        }
        while (*cursor < hub->last) {
            entry *e = &hub->ring[(size_t)*cursor % hub->cap];
            (*cursor)++;
            if (visible(e, session)) {
                *frame = strdup(e->frame);
                pthread_mutex_unlock(&hub->mu);
                return *frame ? 1 : -1;
            }
        }
        if (pthread_cond_timedwait(&hub->cv, &hub->mu, &deadline) != 0) {
            pthread_mutex_unlock(&hub->mu);
            return 0;
        }
    }
}

/* ---- the MHD stream ------------------------------------------------------------ */

typedef struct stream {
    cdsh_hub *hub;
    char *session;
    int64_t cursor;
    char *pending;
    size_t len, off;
} stream;

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    stream *s = cls;
    if (s->off >= s->len) {
        free(s->pending);
        s->pending = NULL;
        s->len = s->off = 0;
        int r = cdsh_hub_next(s->hub, s->session, &s->cursor, CDSH_HUB_KEEPALIVE_MS, &s->pending);
        if (r < 0)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (r == 0)
            s->pending = strdup(": keepalive\n\n");
        if (!s->pending)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        s->len = strlen(s->pending);
    }
    size_t n = s->len - s->off < max ? s->len - s->off : max;
    memcpy(buf, s->pending + s->off, n);
    s->off += n;
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    stream *s = cls;
    free(s->pending);
    free(s->session);
    free(s);
}

struct MHD_Response *cdsh_hub_stream_new(cdsh_hub *hub, const char *session, int64_t after)
{
    stream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->hub = hub;
    s->session = session ? strdup(session) : NULL;
    s->cursor = after < 0 ? cdsh_hub_last_id(hub) : after;
    /* A comment first, so the client sees the stream open at once. */
    s->pending = strdup("retry: 2000\n: connected\n\n");
    s->len = s->pending ? strlen(s->pending) : 0;
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, s, stream_free);
    if (!r) {
        stream_free(s);
        return NULL;
    }
    MHD_add_response_header(r, "Content-Type", "text/event-stream; charset=utf-8");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");
    return r;
}
