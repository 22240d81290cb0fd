/* test_xq_plugin_panel.c — browser test of the board panel: a small HTTP
 * server serves web/xiangqi/, /rpc/xiangqi-mate and plugin/state as SSE;
 * panel_cdp.js drives Chromium over the DevTools protocol (click to move,
 * engine reply, an outside change arriving by events, undo, hint arrows,
 * review chart). Skipped without node or Chromium. */
#include "support/testkit.h"

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/session_store.h"
#include "base/strbuf.h"
#include "host/host.h"
#include "plugins/xiangqi/plugin.h"

#define CHROMIUM "/usr/bin/chromium"

typedef struct server {
    cdsh_host *host;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    cdsh_strbuf events; /* every SSE frame so far, appended */
    int stopping;
} server;

typedef struct stream {
    server *s;
    size_t off;
} stream;

static void on_state(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    (void)scope;
    server *s = arg;
    char *data = json_dumps(payload, JSON_COMPACT);
    pthread_mutex_lock(&s->mu);
    cdsh_strbuf_appendf(&s->events, "event: %s\ndata: %s\n\n", name, data);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    free(data);
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    stream *st = cls;
    server *s = st->s;
    pthread_mutex_lock(&s->mu);
    if (st->off >= s->events.len && !s->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    ssize_t n;
    if (s->stopping) {
        n = MHD_CONTENT_READER_END_OF_STREAM;
    } else if (st->off < s->events.len) {
        n = (ssize_t)(s->events.len - st->off < max ? s->events.len - st->off : max);
        memcpy(buf, s->events.data + st->off, (size_t)n);
        st->off += (size_t)n;
    } else {
        n = (ssize_t)snprintf(buf, max, ":\n"); /* keep-alive comment */
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

static int reply(struct MHD_Connection *c, unsigned status, const char *type, const char *body,
                 size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", type);
    int rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static int serve_file(struct MHD_Connection *c, const char *rel, const char *type)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/web/%s", CDSH_SOURCE_DIR, rel);
    size_t len = 0;
    char *text = cdsh_test_read_file(path, &len);
    if (!text)
        return reply(c, 404, "text/plain", "missing", 7);
    int rc = reply(c, 200, type, text, len);
    free(text);
    return rc;
}

static const char harness[] = "<!doctype html><meta charset=utf-8><title>xiangqi panel</title>"
                              "<div id=panel></div><script type=module>"
                              "import { mount } from '/xiangqi/board.js';"
                              "window.__unmount = mount(document.getElementById('panel'));"
                              "</script>";

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)version;
    server *s = cls;
    if (strcmp(method, "POST") == 0) {
        cdsh_strbuf *body = *con_cls;
        if (!body) {
            *con_cls = cdsh_strbuf_new();
            return MHD_YES;
        }
        if (*upload_size) {
            cdsh_strbuf_append(body, upload, *upload_size);
            *upload_size = 0;
            return MHD_YES;
        }
        const char *ep = strncmp(url, "/rpc/xiangqi-mate/", 18) == 0 ? url + 18 : NULL;
        json_t *in = json_loadb(body->data ? body->data : "", body->len, 0, NULL);
        cdsh_strbuf_free(body);
        *con_cls = NULL;
        if (!ep || !in) {
            json_decref(in);
            return reply(c, 404, "text/plain", "no", 2);
        }
        json_t *out =
            cdsh_rpc_dispatch_envelope(cdsh_host_rpc(s->host), CDSH_XQ_RPC_CHANNEL, ep, in, NULL);
        json_decref(in);
        char *text = json_dumps(out, JSON_COMPACT);
        json_decref(out);
        int rc = reply(c, 200, "application/json", text, strlen(text));
        free(text);
        return rc;
    }
    if (strcmp(url, "/") == 0)
        return reply(c, 200, "text/html; charset=utf-8", harness, strlen(harness));
    if (strcmp(url, "/xiangqi/board.js") == 0)
        return serve_file(c, "xiangqi/board.js", "text/javascript; charset=utf-8");
    if (strcmp(url, "/xiangqi/board.css") == 0)
        return serve_file(c, "xiangqi/board.css", "text/css; charset=utf-8");
    if (strncmp(url, "/api/sessions/", 14) == 0 && strstr(url, "/events")) {
        stream *st = calloc(1, sizeof *st);
        st->s = s;
        pthread_mutex_lock(&s->mu);
        st->off = s->events.len; /* like EventSource without Last-Event-ID: from now on */
        pthread_mutex_unlock(&s->mu);
        struct MHD_Response *r =
            MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_read, st, free);
        MHD_add_response_header(r, "Content-Type", "text/event-stream");
        MHD_add_response_header(r, "Cache-Control", "no-cache");
        int rc = MHD_queue_response(c, 200, r);
        MHD_destroy_response(r);
        return rc;
    }
    return reply(c, 404, "text/plain", "not found", 9);
}

static int stub_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    static int token;
    return cdsh_ctx_provide(ctx, "connection", &token, err);
}
static const cdsh_plugin_def connection_stub = {.name = "connection-stub", .apply = stub_apply};

static int have(const char *prog)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", prog);
    return system(cmd) == 0;
}

static void panel_plays_hints_undoes_and_reviews_in_chromium(void **state)
{
    (void)state;
    if (!have("node") || access(CHROMIUM, X_OK) != 0)
        skip();
    char *home = cdsh_test_home_new();
    server s = {0};
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    cdsh_strbuf_init(&s.events);
    cdsh_session_store *store = NULL;
    cdsh_error err;
    assert_int_equal(cdsh_session_store_open(cdsh_test_home(), NULL, &store, &err), 0);
    cdsh_session_spec spec = {.title = "panel"};
    char *sid = NULL;
    assert_int_equal(cdsh_session_store_create(store, &spec, &sid, &err), 0);
    cdsh_session_store_close(store);
    s.host = cdsh_host_new();
    cdsh_disposer_t d;
    assert_int_equal(
        cdsh_events_on(cdsh_host_events(s.host), "plugin/state", NULL, on_state, &s, &d, &err), 0);
    json_t *cfg = json_pack("{s:{s:i,s:i,s:i},s:{s:i},s:{s:i}}", "engine", "depth", 1, "movetimeMs",
                            100, "hashMb", 1, "hint", "depth", 2, "review", "depth", 1);
    assert_int_equal(cdsh_plugin_load(s.host, &connection_stub, NULL, NULL, &err), 0);
    assert_int_equal(cdsh_plugin_load(s.host, &cdsh_xq_plugin, cfg, NULL, &err), 0);
    json_decref(cfg);
    struct MHD_Daemon *daemon =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
                         NULL, handle, &s, MHD_OPTION_END);
    assert_non_null(daemon);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    char url[256], script[1024];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/?session=%s", (unsigned)info->port, sid);
    snprintf(script, sizeof script, "%s/tests/xiangqi/panel_cdp.js", CDSH_SOURCE_DIR);
    char node[] = "node";
    char flag[] = "--experimental-websocket";
    char *const argv[] = {"/usr/bin/env", node, flag, script, url, sid, NULL};
    char *out = NULL, *errtext = NULL;
    int rc = cdsh_test_run(argv, NULL, &out, &errtext, 90000);
    pthread_mutex_lock(&s.mu);
    s.stopping = 1;
    pthread_cond_broadcast(&s.cv);
    pthread_mutex_unlock(&s.mu);
    MHD_stop_daemon(daemon);
    if (rc == 77) {
        free(out);
        free(errtext);
        cdsh_host_free(s.host);
        cdsh_test_home_free(home);
        skip();
    }
    if (rc != 0)
        fail_msg("panel_cdp.js failed (%d):\n%s\n%s", rc, out, errtext);
    assert_non_null(strstr(out, "panel ok"));
    free(out);
    free(errtext);
    cdsh_host_free(s.host);
    cdsh_strbuf_deinit(&s.events);
    free(sid);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(panel_plays_hints_undoes_and_reviews_in_chromium),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
