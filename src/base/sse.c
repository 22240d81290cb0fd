/* sse.c — incremental text/event-stream parser: splits lines across feeds,
 * applies the field rules (data/event/id/comments) and dispatches events on
 * blank lines. Transport, JSON and reconnection are the caller's business. */
#include "base/sse.h"

#include "base/strbuf.h"

#include <stdlib.h>
#include <string.h>

struct cdsh_sse {
    size_t max;
    cdsh_sse_event_fn fn;
    void *arg;
    cdsh_strbuf line;  /* the current, unterminated line */
    cdsh_strbuf data;  /* data lines of the pending event */
    cdsh_strbuf event; /* "event:" of the pending event */
    cdsh_strbuf id;    /* last event id (persists across events) */
    bool has_data;     /* at least one data line in the pending event */
    bool after_cr;     /* previous byte was '\r': a following '\n' belongs to it */
    bool started;      /* past the optional BOM */
    size_t bom;        /* BOM bytes matched so far */
};

static int buf_set(cdsh_strbuf *b, const char *s, size_t n)
{
    cdsh_strbuf_reset(b);
    return cdsh_strbuf_append(b, s, n);
}

cdsh_sse *cdsh_sse_new(size_t max_event_bytes, cdsh_sse_event_fn fn, void *arg)
{
    cdsh_sse *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->max = max_event_bytes ? max_event_bytes : (size_t)16 << 20;
    p->fn = fn;
    p->arg = arg;
    cdsh_strbuf_init(&p->line);
    cdsh_strbuf_init(&p->data);
    cdsh_strbuf_init(&p->event);
    cdsh_strbuf_init(&p->id);
    return p;
}

void cdsh_sse_free(cdsh_sse *p)
{
    if (!p)
        return;
    cdsh_strbuf_deinit(&p->line);
    cdsh_strbuf_deinit(&p->data);
    cdsh_strbuf_deinit(&p->event);
    cdsh_strbuf_deinit(&p->id);
    free(p);
}

static int dispatch(cdsh_sse *p)
{
    bool had = p->has_data;
    p->has_data = false;
    if (!had) {
        cdsh_strbuf_reset(&p->event);
        return 0;
    }
    cdsh_sse_event ev = {
        .event = p->event.len ? p->event.data : "message",
        .data = p->data.data,
        .data_len = p->data.len,
        .id = p->id.len ? p->id.data : "",
    };
    int rc = p->fn ? p->fn(p->arg, &ev) : 0;
    cdsh_strbuf_reset(&p->data);
    cdsh_strbuf_reset(&p->event);
    return rc;
}

static int process_line(cdsh_sse *p, cdsh_error *err)
{
    const char *l = p->line.data;
    size_t n = p->line.len;
    if (n == 0)
        return dispatch(p);
    if (l[0] == ':')
        return 0;
    const char *colon = memchr(l, ':', n);
    size_t flen = colon ? (size_t)(colon - l) : n;
    const char *val = colon ? colon + 1 : l + n;
    size_t vlen = n - (size_t)(val - l);
    if (vlen > 0 && val[0] == ' ') {
        val++;
        vlen--;
    }
    if (flen == 4 && memcmp(l, "data", 4) == 0) {
        if (p->data.len + vlen + 1 > p->max)
            return cdsh_error_set(err, CDSH_ETOOBIG, "SSE_TOO_BIG",
                                  "server-sent event data exceeds %zu bytes", p->max);
        if ((p->has_data && cdsh_strbuf_append(&p->data, "\n", 1)) ||
            cdsh_strbuf_append(&p->data, val, vlen))
            return cdsh_error_set(err, CDSH_ENOMEM, "ENOMEM", "out of memory");
        p->has_data = true;
    } else if (flen == 5 && memcmp(l, "event", 5) == 0) {
        if (buf_set(&p->event, val, vlen))
            return cdsh_error_set(err, CDSH_ENOMEM, "ENOMEM", "out of memory");
    } else if (flen == 2 && memcmp(l, "id", 2) == 0) {
        /* The specification ignores ids containing NUL. */
        if (!memchr(val, '\0', vlen) && buf_set(&p->id, val, vlen))
            return cdsh_error_set(err, CDSH_ENOMEM, "ENOMEM", "out of memory");
    }
    return 0;
}

int cdsh_sse_feed(cdsh_sse *p, const char *in, size_t len, cdsh_error *err)
{
    static const unsigned char bom[3] = {0xEF, 0xBB, 0xBF};
    size_t i = 0;
    while (!p->started && i < len) {
        if ((unsigned char)in[i] == bom[p->bom]) {
            i++;
            if (++p->bom == 3)
                p->started = true;
            continue;
        }
        /* Not a BOM after all: the bytes matched so far are content. */
        p->started = true;
        if (p->bom && cdsh_strbuf_append(&p->line, (const char *)bom, p->bom))
            return cdsh_error_set(err, CDSH_ENOMEM, "ENOMEM", "out of memory");
    }
    while (i < len) {
        if (p->after_cr && in[i] == '\n') {
            p->after_cr = false;
            i++;
            continue;
        }
        p->after_cr = false;
        size_t j = i;
        while (j < len && in[j] != '\n' && in[j] != '\r')
            j++;
        if (p->line.len + (j - i) > p->max)
            return cdsh_error_set(err, CDSH_ETOOBIG, "SSE_TOO_BIG",
                                  "server-sent event line exceeds %zu bytes", p->max);
        if (j > i && cdsh_strbuf_append(&p->line, in + i, j - i))
            return cdsh_error_set(err, CDSH_ENOMEM, "ENOMEM", "out of memory");
        if (j == len)
            break;
        p->after_cr = in[j] == '\r';
        int rc = process_line(p, err);
        cdsh_strbuf_reset(&p->line);
        if (rc)
            return rc;
        i = j + 1;
    }
    return 0;
}

bool cdsh_sse_finish(cdsh_sse *p)
{
    bool clean = p->line.len == 0 && !p->has_data;
    cdsh_strbuf_reset(&p->line);
    cdsh_strbuf_reset(&p->data);
    cdsh_strbuf_reset(&p->event);
    p->has_data = false;
    return clean;
}
