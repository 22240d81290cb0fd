/* test_web.c — the web server, API, SSE hub and RPC gateway over real
 * loopback sockets (libcurl): token, Host/Origin and size guards with JSON
 * errors, session CRUD, turns started over HTTP with their events streamed
 * in order, cancel, busy sessions, plugin state events, the RPC envelope and
 * its HTTP codes, the route table and the remote-bind refusal. */
#include "support/rounds.h"
#include "support/testkit.h"

#include "support/model_env.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp/acp_fixture.h"
#include "agent/agent.h"
#include "base/strbuf.h"
#include "host/dispatch.h"
#include "host/host.h"
#include "plugins/acp/plugin.h"
#include "plugins/acp/service.h"
#include "server/api.h"
#include "server/rpc_gateway.h"
#include "server/web.h"
#include "support/danger_tool.h"

/* ---- fixture ----------------------------------------------------------------------- */

typedef struct srv {
    char *home;
    cdsh_host *host;
    cdsh_session_store *store;
    cdsh_agent *agent;
    cdsh_web *web;
    cdsh_api *api;
    char base[64];
    char auth[128];
    cdsh_test_fake_model fake;
    bool has_fake;
    cdsh_approvals *approvals; /* with engines (srv_open_ex) */
    cdsh_acp_service *acp;     /* the acp plugin's service (borrowed) */
} srv;

static int echo_rpc(void *arg, const char *endpoint, const json_t *payload, cdsh_cancel *cancel,
                    json_t **result, cdsh_error *err)
{
    (void)arg;
    (void)cancel;
    if (strcmp(endpoint, "boom") == 0)
        return cdsh_error_set(err, CDSH_EIO, "BOOM", "it broke");
    *result = cdsh_rpc_ok_new(json_pack("{s:s, s:O}", "endpoint", endpoint, "payload", payload));
    return 0;
}

/* A channel with one document endpoint ("frameDoc" → {html}, echoing the
 * query's q unescaped: the CSP, not the producer, confines it), one that
 * returns no html and one that fails. */
static int doc_rpc(void *arg, const char *endpoint, const json_t *payload, cdsh_cancel *cancel,
                   json_t **result, cdsh_error *err)
{
    (void)arg, (void)cancel, (void)err;
    const char *q = json_string_value(json_object_get(payload, "q"));
    if (strcmp(endpoint, "frameDoc") == 0)
        *result = cdsh_rpc_ok_new(json_pack("{s:s++}", "html", "<p>", q ? q : "", "</p>"));
    else if (strcmp(endpoint, "frameNoHtml") == 0)
        *result = cdsh_rpc_ok_new(json_pack("{s:i}", "n", 1));
    else if (strcmp(endpoint, "frameNope") == 0)
        *result = cdsh_rpc_error_new("not-bound", "no binding", NULL);
    else
        *result = cdsh_rpc_ok_new(json_pack("{s:s}", "reached", endpoint));
    return 0;
}

static size_t g_turn_workers; /* the next server's turn pool (0: the default) */

/* engines: the acp plugin loaded into the host (its "/acp" channel is the
 * engines surface) and an approval broker waiting approval_ms. */
static void srv_open_ex(srv *s, size_t max_body, const char *script, bool engines,
                        int64_t approval_ms)
{
    memset(s, 0, sizeof *s);
    s->home = cdsh_test_home_new();
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    unsetenv("CDSH_BASE_URL");
    if (script) {
        cdsh_test_model_env_start(&s->fake, script);
        s->has_fake = true;
    }
    s->host = cdsh_host_new();
    cdsh_error err;
    cdsh_disposer_t d;
    assert_int_equal(cdsh_rpc_handle(cdsh_host_rpc(s->host), "/echo", echo_rpc, NULL, &d, &err), 0);
    assert_int_equal(cdsh_rpc_handle(cdsh_host_rpc(s->host), "/doc", doc_rpc, NULL, &d, &err), 0);
    assert_int_equal(cdsh_session_store_open(cdsh_test_home(), NULL, &s->store, &err), 0);
    cdsh_agent_options o = {.host = s->host, .store = s->store};
    assert_int_equal(cdsh_agent_new(&o, &s->agent, &err), 0);
    cdsh_web_options wo = {.token = "secret-token", .max_body = max_body};
    assert_int_equal(cdsh_web_start(&wo, &s->web, &err), 0);
    cdsh_api_options ao = {.approval_timeout_ms = approval_ms, .turn_workers = g_turn_workers};
    if (engines) {
        s->approvals = cdsh_approvals_new(approval_ms);
        assert_int_equal(cdsh_plugin_load(s->host, &cdsh_acp_plugin, NULL, NULL, &err), 0);
        s->acp = cdsh_host_service(s->host, CDSH_ACP_SERVICE);
        ao.approvals = s->approvals;
    }
    assert_int_equal(cdsh_api_start_ex(s->web, s->agent, &ao, &s->api, &err), 0);
    assert_int_equal(cdsh_rpc_gateway_mount(s->web, cdsh_host_rpc(s->host), NULL, &err), 0);
    assert_int_equal(cdsh_rpc_gateway_mount_frames(s->web, cdsh_host_rpc(s->host), NULL, &err), 0);
    snprintf(s->base, sizeof s->base, "http://127.0.0.1:%u", cdsh_web_port(s->web));
    snprintf(s->auth, sizeof s->auth, "Authorization: Bearer secret-token");
}

static void srv_open(srv *s, size_t max_body, const char *script)
{
    srv_open_ex(s, max_body, script, false, 0);
}

static void srv_close(srv *s)
{
    cdsh_api_shutdown(s->api);
    cdsh_web_stop(s->web);
    cdsh_api_free(s->api);
    cdsh_agent_free(s->agent);
    cdsh_session_store_close(s->store);
    cdsh_host_free(s->host); /* unloads the acp plugin: its engine processes go */
    cdsh_approvals_free(s->approvals);
    if (s->has_fake)
        cdsh_test_model_env_stop(&s->fake);
    cdsh_test_home_free(s->home);
}

static size_t collect(char *ptr, size_t size, size_t n, void *ud)
{
    cdsh_strbuf_append(ud, ptr, size * n);
    return size * n;
}

/* One request. headers: NULL-terminated extra header lines. Returns the
 * status; *body (may be NULL) gets the parsed JSON body. */
static long http(const srv *s, const char *method, const char *path, const char *const *headers,
                 const char *body, json_t **out)
{
    CURL *c = curl_easy_init();
    char url[512];
    snprintf(url, sizeof url, "%s%s", s->base, path);
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    struct curl_slist *h = NULL;
    for (size_t i = 0; headers && headers[i]; i++)
        h = curl_slist_append(h, headers[i]);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sb);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (out) {
        *out = json_loads(sb.data, 0, NULL);
        if (!*out)
            fail_msg("not JSON: %s", sb.data);
    }
    cdsh_strbuf_deinit(&sb);
    return status;
}

#define H(...) ((const char *const[]){__VA_ARGS__, NULL})
#define JSON_CT "Content-Type: application/json"

static const char *err_code(const json_t *v)
{
    return json_string_value(json_object_get(json_object_get(v, "error"), "code"));
}

static char *create_session(srv *s)
{
    json_t *v;
    assert_int_equal(http(s, "POST", "/api/sessions", H(s->auth, JSON_CT), "{\"title\":\"t\"}", &v),
                     201);
    char *id = strdup(json_string_value(json_object_get(json_object_get(v, "session"), "id")));
    json_decref(v);
    return id;
}

/* ---- SSE client ------------------------------------------------------------------------- */

typedef struct sse {
    const srv *s;
    char path[256];
    const char *until; /* stop once this text arrived */
    cdsh_strbuf data;
    pthread_t th;
    volatile int connected;
} sse;

static size_t sse_write(char *ptr, size_t size, size_t n, void *ud)
{
    sse *x = ud;
    cdsh_strbuf_append(&x->data, ptr, size * n);
    x->connected = 1;
    return strstr(x->data.data, x->until) ? 0 : size * n; /* 0 ends the transfer */
}

static void *sse_main(void *arg)
{
    sse *x = arg;
    CURL *c = curl_easy_init();
    char url[512];
    snprintf(url, sizeof url, "%s%s", x->s->base, x->path);
    struct curl_slist *h = curl_slist_append(NULL, x->s->auth);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sse_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 15L);
    curl_easy_perform(c);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return NULL;
}

static void sse_start(sse *x, const srv *s, const char *path, const char *until)
{
    memset(x, 0, sizeof *x);
    x->s = s;
    snprintf(x->path, sizeof x->path, "%s", path);
    x->until = until;
    cdsh_strbuf_init(&x->data);
    pthread_create(&x->th, NULL, sse_main, x);
    for (int i = 0; i < 3000 && !x->connected; i++)
        usleep(10000);
    assert_true(x->connected);
}

/* Joins and returns the events as [{id, event, data}] (owned). */
static json_t *sse_finish(sse *x)
{
    pthread_join(x->th, NULL);
    json_t *out = json_array();
    char *text = x->data.data;
    for (char *frame = strstr(text, "id: "); frame; frame = strstr(frame + 1, "\nid: ")) {
        if (*frame == '\n')
            frame++;
        long long id = 0;
        char ev[64] = "";
        sscanf(frame, "id: %lld\nevent: %63s", &id, ev);
        char *data = strstr(frame, "\ndata: ");
        char *end = data ? strstr(data, "\n\n") : NULL;
        if (!end)
            break;
        json_t *d = json_loadb(data + 7, (size_t)(end - data - 7), 0, NULL);
        json_array_append_new(
            out, json_pack("{s:I, s:s, s:o}", "id", id, "event", ev, "data", d ? d : json_null()));
    }
    cdsh_strbuf_deinit(&x->data);
    return out;
}

/* ---- tests -------------------------------------------------------------------------------- */

static void requests_without_the_token_get_401(void **state)
{
    (void)state;
    srv s;
    srv_open(&s, 0, NULL);
    json_t *v;
    assert_int_equal(http(&s, "GET", "/api/sessions", NULL, NULL, &v), 401);
    assert_string_equal(err_code(v), "UNAUTHORIZED");
    json_decref(v);
    assert_int_equal(http(&s, "GET", "/api/sessions", H("Authorization: Bearer wrong"), NULL, &v),
                     401);
    json_decref(v);
    assert_int_equal(http(&s, "GET", "/api/events", H("Cookie: cdsh_token=nope"), NULL, &v), 401);
    json_decref(v);
    assert_int_equal(http(&s, "POST", "/rpc/echo/x", H(JSON_CT), "{}", &v), 401);
    json_decref(v);
    assert_int_equal(http(&s, "GET", "/", NULL, NULL, &v), 401);
    json_decref(v);
    /* The cookie works like the bearer token; /healthz is public. */
    assert_int_equal(
        http(&s, "GET", "/api/sessions", H("Cookie: cdsh_token=secret-token"), NULL, &v), 200);
    json_decref(v);
    assert_int_equal(http(&s, "GET", "/healthz", NULL, NULL, &v), 200);
    json_decref(v);
    srv_close(&s);
}

static void page_with_the_token_sets_an_httponly_strict_cookie(void **state)
{
    (void)state;
    srv s;
    srv_open(&s, 0, NULL);
    CURL *c = curl_easy_init();
    char url[256];
    snprintf(url, sizeof url, "%s/?token=secret-token", s.base);
    cdsh_strbuf hdr, body;
    cdsh_strbuf_init(&hdr);
    cdsh_strbuf_init(&body);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &hdr);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    long status;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    assert_int_equal(status, 200);
    assert_non_null(strstr(hdr.data, "Set-Cookie: cdsh_token=secret-token; Path=/; HttpOnly; "
                                     "SameSite=Strict"));
    assert_non_null(strstr(body.data, "<html"));
    curl_easy_cleanup(c);
    cdsh_strbuf_deinit(&hdr);
    cdsh_strbuf_deinit(&body);
    srv_close(&s);
}

static void bad_host_or_origin_gets_403(void **state)
{
    (void)state;
    srv s;
    srv_open(&s, 0, NULL);
    char host[64], origin[80];
    snprintf(host, sizeof host, "Host: evil.example:%u", cdsh_web_port(s.web));
    json_t *v;
    assert_int_equal(http(&s, "GET", "/api/sessions", H(s.auth, host), NULL, &v), 403);
    assert_string_equal(err_code(v), "BAD_HOST");
    json_decref(v);
    assert_int_equal(http(&s, "GET", "/api/sessions", H(s.auth, "Host: 127.0.0.1:1"), NULL, &v),
                     403);
    json_decref(v);
    assert_int_equal(http(&s, "POST", "/api/sessions",
                          H(s.auth, "Origin: http://evil.example", JSON_CT), "{}", &v),
                     403);
    assert_string_equal(err_code(v), "BAD_ORIGIN");
    json_decref(v);
    snprintf(origin, sizeof origin, "Origin: http://127.0.0.1:%u", cdsh_web_port(s.web));
    assert_int_equal(http(&s, "POST", "/api/sessions", H(s.auth, origin, JSON_CT), "{}", &v), 201);
    json_decref(v);
    srv_close(&s);
}

static void oversize_bodies_get_413(void **state)
{
    (void)state;
    srv s;
    srv_open(&s, 256, NULL);
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    json_t *v;
    assert_int_equal(http(&s, "POST", "/api/sessions", H(s.auth, JSON_CT), big, &v), 413);
    assert_string_equal(err_code(v), "TOO_LARGE");
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "error"), "message")),
                        "the request body is larger than 256 bytes");
    json_decref(v);
    /* Without a Content-Length (chunked) the limit holds as well. */
    assert_int_equal(
        http(&s, "POST", "/rpc/echo/x", H(s.auth, JSON_CT, "Transfer-Encoding: chunked"), big, &v),
        413);
    json_decref(v);
    srv_close(&s);
}

static void rpc_gateway_follows_the_envelope_contract(void **state)
{
    (void)state;
    srv s;
    srv_open(&s, 0, NULL);
    json_t *v;
    assert_int_equal(http(&s, "POST", "/rpc/echo/a/b", H(s.auth, JSON_CT),
                          "{\"type\":\"client-request\",\"rpcId\":\"r1\",\"method\":\"a/b\","
                          "\"payload\":{\"n\":1}}",
                          &v),
                     200);
    assert_string_equal(json_string_value(json_object_get(v, "type")), "server-response");
    assert_string_equal(json_string_value(json_object_get(v, "rpcId")), "r1");
    json_t *r = json_object_get(v, "result");
    assert_true(json_is_true(json_object_get(r, "ok")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "value"), "endpoint")),
                        "a/b");
    json_decref(v);
    /* method must equal the endpoint: a bad-request result with 200. */
    assert_int_equal(http(&s, "POST", "/rpc/echo/a", H(s.auth, JSON_CT),
                          "{\"type\":\"client-request\",\"rpcId\":\"r2\",\"method\":\"b\"}", &v),
                     200);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(v, "result"), "error"), "code")),
                        "bad-request");
    json_decref(v);
    assert_int_equal(
        http(&s, "POST", "/rpc/echo/a", H(s.auth, "Content-Type: text/plain"), "{}", &v), 415);
    json_decref(v);
    assert_int_equal(http(&s, "POST", "/rpc/echo/a", H(s.auth, JSON_CT), "{bad", &v), 400);
    assert_string_equal(err_code(v), "BAD_JSON");
    json_decref(v);
    assert_int_equal(http(&s, "GET", "/rpc/echo/a", H(s.auth), NULL, &v), 404);
    json_decref(v);
    assert_int_equal(http(&s, "POST", "/rpc/echo/..", H(s.auth, JSON_CT), "{}", &v), 404);
    json_decref(v);
    assert_int_equal(
        http(&s, "POST", "/rpc/nobody/x", H(s.auth, JSON_CT),
             "{\"type\":\"client-request\",\"rpcId\":\"r3\",\"method\":\"x\",\"payload\":null}",
             &v),
        404);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(v, "result"), "error"), "code")),
                        "not-found");
    json_decref(v);
    assert_int_equal(
        http(&s, "POST", "/rpc/echo/boom", H(s.auth, JSON_CT),
             "{\"type\":\"client-request\",\"rpcId\":\"r4\",\"method\":\"boom\",\"payload\":1}",
             &v),
        500);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(v, "result"), "error"), "message")),
                        "handler failure: it broke");
    json_decref(v);
    srv_close(&s);
}

/* A GET with the response headers and body kept as text (both owned). */
static long http_get_raw(const srv *s, const char *path, const char *header, char **head,
                         char **body)
{
    CURL *c = curl_easy_init();
    char url[512];
    snprintf(url, sizeof url, "%s%s", s->base, path);
    cdsh_strbuf hb, bb;
    cdsh_strbuf_init(&hb);
    cdsh_strbuf_init(&bb);
    struct curl_slist *h = header ? curl_slist_append(NULL, header) : NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &bb);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &hb);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    *head = cdsh_strbuf_take(&hb, NULL);
    *body = cdsh_strbuf_take(&bb, NULL);
    return status;
}

static void frame_documents_get_the_sandbox_csp_and_only_frame_endpoints(void **state)
{
    (void)state;
    srv s;
    srv_open(&s, 0, NULL);
    char *head, *body;
    assert_int_equal(
        http_get_raw(&s, "/frame/doc/frameDoc?q=%3Cb%3Ehi%3C/b%3E", s.auth, &head, &body), 200);
    assert_string_equal(body, "<p><b>hi</b></p>");
    assert_non_null(strstr(head, "Content-Type: text/html; charset=utf-8"));
    assert_non_null(strstr(head, "Content-Security-Policy: " CDSH_WEB_FRAME_CSP "\r\n"));
    assert_non_null(strstr(head, "X-Frame-Options: SAMEORIGIN"));
    assert_null(strstr(head, "DENY"));
    free(head);
    free(body);
    /* the same access checks as every route */
    assert_int_equal(http_get_raw(&s, "/frame/doc/frameDoc", NULL, &head, &body), 401);
    free(head);
    free(body);
    /* only frame* endpoints; errors are JSON, never a page */
    const struct {
        const char *path;
        long status;
        const char *code;
    } refused[] = {
        {"/frame/doc/other", 404, "NOT_FOUND"},
        {"/frame/doc/frameNoHtml", 502, "BAD_FRAME"},
        {"/frame/doc/frameNope?q=%3Cscript%3E", 422, "not-bound"},
        {"/frame/nobody/frameDoc", 404, "not-found"},
        {"/frame/doc", 404, "NOT_FOUND"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        assert_int_equal(http_get_raw(&s, refused[i].path, s.auth, &head, &body),
                         refused[i].status);
        json_t *v = json_loads(body, 0, NULL);
        assert_string_equal(err_code(v), refused[i].code);
        assert_non_null(strstr(head, "Content-Type: application/json"));
        assert_null(strstr(head, "Content-Security-Policy"));
        assert_null(strstr(body, "<script>"));
        json_decref(v);
        free(head);
        free(body);
    }
    json_t *v;
    assert_int_equal(http(&s, "POST", "/frame/doc/frameDoc", H(s.auth, JSON_CT), "{}", &v), 404);
    json_decref(v);
    srv_close(&s);
}

static void sessions_can_be_created_listed_shown_and_deleted(void **state)
{
    (void)state;
    srv s;
    srv_open(&s, 0, NULL);
    char *id = create_session(&s);
    json_t *v;
    assert_int_equal(http(&s, "GET", "/api/sessions", H(s.auth), NULL, &v), 200);
    assert_int_equal(json_integer_value(json_object_get(v, "total")), 1);
    json_decref(v);
    char path[128];
    snprintf(path, sizeof path, "/api/sessions/%s", id);
    assert_int_equal(http(&s, "GET", path, H(s.auth), NULL, &v), 200);
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "session"), "title")),
                        "t");
    assert_int_equal(json_array_size(json_object_get(v, "events")), 0);
    json_decref(v);
    assert_int_equal(http(&s, "DELETE", path, H(s.auth), NULL, &v), 200);
    json_decref(v);
    assert_int_equal(http(&s, "GET", path, H(s.auth), NULL, &v), 404);
    assert_string_equal(err_code(v), "NO_SESSION");
    json_decref(v);
    assert_int_equal(http(&s, "GET", "/api/sessions/bad!id", H(s.auth), NULL, &v), 400);
    json_decref(v);
    assert_int_equal(http(&s, "PUT", "/api/sessions", H(s.auth), NULL, &v), 405);
    json_decref(v);
    assert_int_equal(http(&s, "GET", "/api/nothing", H(s.auth), NULL, &v), 404);
    assert_string_equal(err_code(v), "NOT_FOUND");
    json_decref(v);
    snprintf(path, sizeof path, "/api/sessions/%s/messages", id);
    assert_int_equal(http(&s, "POST", path, H(s.auth, JSON_CT), "{\"text\":\"hi\"}", &v), 404);
    json_decref(v);
    free(id);
    srv_close(&s);
}

static void a_turn_streams_its_events_in_order(void **state)
{
    (void)state;
    /* the last chunk waits for a gate file, so the turn is surely still
     * running when the second message arrives */
    char *gdir = cdsh_test_home_new();
    char gate[512], script[1024];
    snprintf(gate, sizeof gate, "%s/gate", gdir);
    snprintf(script, sizeof script,
             "[{\"delay_ms\":30,\"chunks\":[{\"text\":\"one \"},{\"text\":\"two \"},"
             "{\"wait_file\":\"%s\",\"text\":\"three\"}],\"finish_reason\":\"stop\"}]",
             gate);
    srv s;
    srv_open(&s, 0, script);
    char *id = create_session(&s);
    char path[128];
    snprintf(path, sizeof path, "/api/sessions/%s/events", id);
    sse x;
    sse_start(&x, &s, path, "event: turn/end");
    snprintf(path, sizeof path, "/api/sessions/%s/messages", id);
    json_t *v;
    assert_int_equal(http(&s, "POST", path, H(s.auth, JSON_CT), "{\"text\":\"count\"}", &v), 202);
    json_decref(v);
    /* A second message while the turn runs is refused. */
    assert_int_equal(http(&s, "POST", path, H(s.auth, JSON_CT), "{\"text\":\"again\"}", &v), 409);
    assert_string_equal(err_code(v), "SESSION_BUSY");
    json_decref(v);
    cdsh_test_write_file(gate, "go");
    json_t *evs = sse_finish(&x);
    const char *want[] = {"turn/start", "user/message", "step/start",        "text/delta",
                          "text/delta", "text/delta",   "assistant/message", "turn/end"};
    assert_int_equal(json_array_size(evs), 8);
    json_int_t prev = 0;
    char text[64] = "";
    for (size_t i = 0; i < 8; i++) {
        json_t *e = json_array_get(evs, i);
        assert_string_equal(json_string_value(json_object_get(e, "event")), want[i]);
        assert_true(json_integer_value(json_object_get(e, "id")) > prev);
        prev = json_integer_value(json_object_get(e, "id"));
        if (i >= 3 && i <= 5)
            strcat(text, json_string_value(json_object_get(json_object_get(e, "data"), "text")));
    }
    assert_string_equal(text, "one two three");
    json_decref(evs);
    /* Resuming after an id replays the rest, in order. */
    snprintf(path, sizeof path, "/api/sessions/%s/events?after=%lld", id, (long long)(prev - 2));
    sse y;
    sse_start(&y, &s, path, "event: turn/end");
    evs = sse_finish(&y);
    assert_true(json_array_size(evs) >= 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(evs, 0), "event")),
                        "assistant/message");
    json_decref(evs);
    free(id);
    srv_close(&s);
    cdsh_test_home_free(gdir);
}

static void cancel_stops_a_running_turn(void **state)
{
    (void)state;
    srv s;
    srv_open(&s, 0,
             "[{\"chunks\":[{\"text\":\"slow\"},{\"stall_ms\":60000},{\"text\":\"never\"}]}]");
    char *id = create_session(&s);
    char path[128];
    snprintf(path, sizeof path, "/api/sessions/%s/events", id);
    sse x;
    sse_start(&x, &s, path, "event: turn/end");
    /* a second stream, subscribed before the turn starts (text deltas are
     * live only, not replayed), ends at the first streamed text */
    sse w;
    sse_start(&w, &s, path, "event: text/delta");
    snprintf(path, sizeof path, "/api/sessions/%s/messages", id);
    json_t *v;
    assert_int_equal(http(&s, "POST", path, H(s.auth, JSON_CT), "{\"text\":\"go\"}", &v), 202);
    json_decref(v);
    /* cancel once the turn is surely running: its first text has streamed */
    json_decref(sse_finish(&w));
    snprintf(path, sizeof path, "/api/sessions/%s/cancel", id);
    assert_int_equal(http(&s, "POST", path, H(s.auth), NULL, &v), 200);
    assert_true(json_is_true(json_object_get(v, "cancelled")));
    json_decref(v);
    json_t *evs = sse_finish(&x);
    json_t *last = json_array_get(evs, json_array_size(evs) - 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(last, "data"), "reason")),
                        "cancelled");
    json_decref(evs);
    free(id);
    srv_close(&s);
}

static void plugin_state_events_reach_the_streams(void **state)
{
    (void)state;
    srv s;
    srv_open(&s, 0, NULL);
    char *id = create_session(&s);
    char path[128];
    snprintf(path, sizeof path, "/api/sessions/%s/events", id);
    sse x;
    sse_start(&x, &s, path, "\"n\":2");
    sse g;
    sse_start(&g, &s, "/api/events", "\"n\":2");
    cdsh_events *bus = cdsh_host_events(s.host);
    json_t *p1 =
        json_pack("{s:s, s:s, s:{s:i}}", "plugin", "xiangqi", "sessionId", id, "state", "n", 1);
    json_t *p0 = json_pack("{s:s, s:{s:i}}", "plugin", "xiangqi", "state", "n", 2);
    cdsh_events_emit(bus, "plugin/state", NULL, false, p1);
    cdsh_events_emit(bus, "plugin/state", NULL, false, p0);
    json_decref(p1);
    json_decref(p0);
    json_t *evs = sse_finish(&x);
    assert_int_equal(json_array_size(evs), 2); /* its session's event and the global one */
    assert_string_equal(json_string_value(json_object_get(json_array_get(evs, 0), "event")),
                        "plugin/state");
    json_decref(evs);
    evs = sse_finish(&g);
    assert_int_equal(json_array_size(evs), 1); /* the global stream skips session events */
    json_decref(evs);
    free(id);
    srv_close(&s);
}

static void without_a_model_the_status_says_how_to_set_one(void **state)
{
    (void)state;
    srv s;
    srv_open(&s, 0, NULL);
    json_t *v;
    assert_int_equal(http(&s, "GET", "/api/status", H(s.auth), NULL, &v), 200);
    json_t *m = json_object_get(v, "model");
    assert_true(json_is_false(json_object_get(m, "configured")));
    assert_string_equal(json_string_value(json_object_get(m, "code")), "MISSING_CREDENTIAL");
    assert_non_null(strstr(json_string_value(json_object_get(m, "hint")), "DEEPSEEK_API_KEY"));
    json_decref(v);
    srv_close(&s);
}

static void custom(void *arg, const cdsh_web_request *req, cdsh_web_response *res)
{
    (void)arg;
    cdsh_web_reply_json(res, 200, json_pack("{s:s}", "tail", req->tail));
}

static void modules_add_and_remove_routes(void **state)
{
    (void)state;
    srv s;
    srv_open(&s, 0, NULL);
    int id;
    cdsh_error err;
    assert_int_equal(
        cdsh_web_route(s.web, "POST", "/mcp/", CDSH_WEB_ROUTE_PREFIX, custom, NULL, &id, &err), 0);
    assert_int_equal(
        cdsh_web_route(s.web, "POST", "/mcp/", CDSH_WEB_ROUTE_PREFIX, custom, NULL, NULL, &err),
        CDSH_EEXIST);
    assert_string_equal(err.code, "ROUTE_EXISTS");
    json_t *v;
    assert_int_equal(http(&s, "POST", "/mcp/x/y", H(s.auth), "", &v), 200);
    assert_string_equal(json_string_value(json_object_get(v, "tail")), "x/y");
    json_decref(v);
    assert_int_equal(http(&s, "GET", "/mcp/x", H(s.auth), NULL, &v), 405);
    json_decref(v);
    cdsh_web_unroute(s.web, id);
    assert_int_equal(http(&s, "POST", "/mcp/x/y", H(s.auth), "", &v), 404);
    json_decref(v);
    srv_close(&s);
}

static void remote_bind_needs_allow_remote(void **state)
{
    (void)state;
    cdsh_web *web = NULL;
    cdsh_error err;
    cdsh_web_options o = {.host = "0.0.0.0"};
    assert_int_equal(cdsh_web_start(&o, &web, &err), CDSH_EPERM);
    assert_string_equal(err.code, "REMOTE_REFUSED");
    o.host = "not-an-ip";
    assert_int_equal(cdsh_web_start(&o, &web, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "BAD_HOST");
    o.host = "0.0.0.0";
    o.allow_remote = true;
    assert_int_equal(cdsh_web_start(&o, &web, &err), 0);
    char *url = cdsh_web_url_dup(web);
    assert_non_null(strstr(url, "http://0.0.0.0:"));
    free(url);
    cdsh_web_stop(web);
}

/* ---- engines and approvals ------------------------------------------------------------ */

static json_t *find_event(json_t *evs, const char *type)
{
    size_t i;
    json_t *e;
    json_array_foreach(evs, i, e) {
        if (strcmp(json_string_value(json_object_get(e, "event")), type) == 0)
            return json_object_get(e, "data");
    }
    return NULL;
}

/* One call on the acp plugin's RPC channel through the gateway, as the page
 * makes it. Returns the HTTP status; *out (owned) the RpcResult. */
static long acp_rpc(srv *s, const char *endpoint, const char *payload, json_t **out)
{
    char path[160], body[8192];
    snprintf(path, sizeof path, "/rpc/acp/%s", endpoint);
    snprintf(body, sizeof body,
             "{\"type\":\"client-request\",\"rpcId\":\"t1\",\"method\":\"%s\",\"payload\":%s}",
             endpoint, payload ? payload : "null");
    json_t *v = NULL;
    long st = http(s, "POST", path, H(s->auth, JSON_CT), body, &v);
    *out = json_incref(json_object_get(v, "result"));
    json_decref(v);
    return st;
}

/* The value of an ok result (borrowed from r); fails the test otherwise. */
static json_t *ok_value(json_t *r)
{
    if (!json_is_true(json_object_get(r, "ok"))) {
        char *d = json_dumps(r, 0);
        fail_msg("RPC failed: %s", d ? d : "(null)");
    }
    return json_object_get(r, "value");
}

static const char *rpc_code(json_t *r)
{
    return json_string_value(json_object_get(json_object_get(r, "error"), "code"));
}

static const char *rpc_detail_code(json_t *r)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(r, "error"), "details"), "code"));
}

/* POSTs a message to an engine session and returns its SSE events up to
 * `until` (owned). */
static json_t *send_and_follow(srv *s, const char *id, const char *text, const char *until)
{
    char path[160], body[256];
    snprintf(path, sizeof path, "/api/sessions/%s/events", id);
    sse x;
    sse_start(&x, s, path, until);
    snprintf(path, sizeof path, "/api/sessions/%s/messages", id);
    snprintf(body, sizeof body, "{\"text\":\"%s\"}", text);
    json_t *v;
    assert_int_equal(http(s, "POST", path, H(s->auth, JSON_CT), body, &v), 202);
    json_decref(v);
    return sse_finish(&x);
}

static void wait_idle(srv *s, const char *id)
{
    char path[160];
    snprintf(path, sizeof path, "/api/sessions/%s", id);
    for (int i = 0; i < 1000; i++) {
        json_t *v;
        http(s, "GET", path, H(s->auth), NULL, &v);
        bool running = json_is_true(json_object_get(json_object_get(v, "session"), "running"));
        json_decref(v);
        if (!running)
            return;
        usleep(20 * 1000);
    }
    fail_msg("the turn did not end");
}



/* "%00" would cut the path short after decoding ("/app.js%00.png" served
 * app.js); it and malformed escapes are refused before routing. */
static void nul_and_malformed_escapes_get_400(void **state)
{
    (void)state;
    srv s;
    srv_open(&s, 0, NULL);
    const char *bad[] = {"/app.js%00.png",      "/api/sessions%00/x", "/api/sessions?limit=1%00",
                         "/api/sessions?x=%zz", "/api/sessions?x=%4", "/index.html%",
                         "/api/status?%00=1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *v = NULL;
        assert_int_equal(http(&s, "GET", bad[i], H(s.auth), NULL, &v), 400);
        assert_string_equal(err_code(v), "BAD_URL");
        json_decref(v);
    }
    json_t *v = NULL; /* well-formed escapes still decode */
    assert_int_equal(http(&s, "GET", "/api/sessions?limit=%31%30", H(s.auth), NULL, &v), 200);
    json_decref(v);
    srv_close(&s);
}

static void the_bearer_scheme_is_case_insensitive(void **state)
{
    (void)state;
    srv s;
    srv_open(&s, 0, NULL);
    const char *ok[] = {"Authorization: bearer secret-token", "Authorization: BEARER secret-token",
                        "Authorization: Bearer   secret-token"};
    for (size_t i = 0; i < 3; i++) {
        json_t *v = NULL;
        assert_int_equal(http(&s, "GET", "/api/sessions", H(ok[i]), NULL, &v), 200);
        json_decref(v);
    }
    const char *no[] = {"Authorization: Basic secret-token", "Authorization: Bearersecret-token",
                        "Authorization: bearer wrong"};
    for (size_t i = 0; i < 3; i++) {
        json_t *v = NULL;
        assert_int_equal(http(&s, "GET", "/api/sessions", H(no[i]), NULL, &v), 401);
        json_decref(v);
    }
    srv_close(&s);
}

/* ---- turn/end and SESSION_BUSY --------------------------------------------------------- */

/* Posts the next message from inside the SSE callback, the moment the
 * turn/end event arrives (what a page does), `posts` times: 100 in the unit
 * tier, 500 in the slow tier (CDSH_TEST_ROUNDS=5). */
typedef struct chain {
    const srv *s;
    int posts;
    char path[160];
    cdsh_strbuf data;
    size_t seen; /* turn/end events read so far */
    int accepted, busy, other;
} chain;

static size_t chain_write(char *ptr, size_t size, size_t n, void *ud)
{
    chain *c = ud;
    cdsh_strbuf_append(&c->data, ptr, size * n);
    size_t ends = 0;
    for (const char *p = c->data.data; (p = strstr(p, "event: turn/end\n")); p++)
        ends++;
    for (; c->seen < ends; c->seen++) {
        if (c->accepted + c->busy + c->other >= c->posts)
            return 0; /* done: end the stream */
        json_t *v = NULL;
        long st = http(c->s, "POST", c->path, H(c->s->auth, JSON_CT), "{\"text\":\"next\"}", &v);
        if (st == 202)
            c->accepted++;
        else if (st == 409 && strcmp(err_code(v), "SESSION_BUSY") == 0)
            c->busy++;
        else
            c->other++;
        json_decref(v);
        if (st != 202)
            return 0; /* refused: no turn follows, so no further turn/end */
    }
    if (c->data.len > (1u << 20)) { /* keep the tail: events never span 64 KiB */
        size_t keep = 65536;
        char *tail = strdup(c->data.data + c->data.len - keep);
        size_t tail_ends = 0;
        for (const char *p = tail; (p = strstr(p, "event: turn/end\n")); p++)
            tail_ends++;
        cdsh_strbuf_deinit(&c->data);
        cdsh_strbuf_init(&c->data);
        cdsh_strbuf_append_str(&c->data, tail);
        free(tail);
        c->seen = tail_ends;
    }
    return size * n;
}

static void a_message_posted_on_turn_end_is_never_busy(void **state)
{
    (void)state;
    srv s;
    srv_open(&s, 0, "[{\"text\":\"ok\",\"finish_reason\":\"stop\",\"repeat\":true}]");
    char *id = create_session(&s);
    chain c = {.s = &s, .posts = cdsh_test_rounds(100)};
    cdsh_strbuf_init(&c.data);
    snprintf(c.path, sizeof c.path, "/api/sessions/%s/messages", id);
    char url[256];
    snprintf(url, sizeof url, "%s/api/sessions/%s/events?after=0", s.base, id);
    CURL *h = curl_easy_init();
    struct curl_slist *hd = curl_slist_append(NULL, s.auth);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, chain_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &c);
    /* The stream replays from the first event (after=0), so it may open late. */
    json_t *v;
    assert_int_equal(http(&s, "POST", c.path, H(s.auth, JSON_CT), "{\"text\":\"first\"}", &v), 202);
    json_decref(v);
    curl_easy_perform(h);
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    cdsh_strbuf_deinit(&c.data);
    print_message("posted on turn/end %d times: %d accepted, %d busy, %d other\n", c.posts,
                  c.accepted, c.busy, c.other);
    assert_int_equal(c.busy, 0);
    assert_int_equal(c.other, 0);
    assert_int_equal(c.accepted, c.posts);
    wait_idle(&s, id);
    cdsh_error err;
    json_t *info = cdsh_session_store_info_dup(s.store, id, &err);
    assert_int_equal(json_integer_value(json_object_get(info, "lastTurn")), c.posts + 1);
    json_decref(info);
    free(id);
    srv_close(&s);
}

#define RACERS 25
#define POSTS_PER_RACER 20

typedef struct racer {
    const srv *s;
    const char *path;
    pthread_barrier_t *go;
    int accepted, busy, other;
} racer;

static void *race_main(void *arg)
{
    racer *r = arg;
    pthread_barrier_wait(r->go);
    for (int i = 0; i < POSTS_PER_RACER; i++) {
        json_t *v = NULL;
        long st = http(r->s, "POST", r->path, H(r->s->auth, JSON_CT), "{\"text\":\"mine\"}", &v);
        if (st == 202)
            r->accepted++;
        else if (st == 409 && strcmp(err_code(v), "SESSION_BUSY") == 0)
            r->busy++;
        else
            r->other++;
        json_decref(v);
    }
    return NULL;
}

/* 500 posts at once on one session, three times over: one turn starts each
 * time, every other post gets SESSION_BUSY, and nothing is lost or hangs. */
static void concurrent_posts_start_exactly_one_turn(void **state)
{
    (void)state;
    char *gdir = cdsh_test_home_new();
    char script[2048];
    snprintf(script, sizeof script,
             "[{\"chunks\":[{\"text\":\"a\"},{\"wait_file\":\"%s/gate1\",\"text\":\"b\"}]},"
             "{\"chunks\":[{\"text\":\"a\"},{\"wait_file\":\"%s/gate2\",\"text\":\"b\"}]},"
             "{\"chunks\":[{\"text\":\"a\"},{\"wait_file\":\"%s/gate3\",\"text\":\"b\"}]}]",
             gdir, gdir, gdir);
    srv s;
    srv_open(&s, 0, script);
    char *id = create_session(&s);
    char path[160];
    snprintf(path, sizeof path, "/api/sessions/%s/messages", id);
    for (int round = 1; round <= 3; round++) {
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, RACERS);
        racer r[RACERS];
        pthread_t th[RACERS];
        for (int i = 0; i < RACERS; i++) {
            r[i] = (racer){.s = &s, .path = path, .go = &go};
            pthread_create(&th[i], NULL, race_main, &r[i]);
        }
        int accepted = 0, busy = 0, other = 0;
        for (int i = 0; i < RACERS; i++) {
            pthread_join(th[i], NULL);
            accepted += r[i].accepted;
            busy += r[i].busy;
            other += r[i].other;
        }
        pthread_barrier_destroy(&go);
        print_message("round %d: %d accepted, %d busy, %d other\n", round, accepted, busy, other);
        assert_int_equal(accepted, 1);
        assert_int_equal(busy, RACERS * POSTS_PER_RACER - 1);
        assert_int_equal(other, 0);
        char gate[600];
        snprintf(gate, sizeof gate, "%s/gate%d", gdir, round);
        cdsh_test_write_file(gate, "go");
        wait_idle(&s, id);
    }
    cdsh_error err;
    json_t *info = cdsh_session_store_info_dup(s.store, id, &err);
    assert_int_equal(json_integer_value(json_object_get(info, "lastTurn")), 3);
    json_decref(info);
    free(id);
    srv_close(&s);
    cdsh_test_home_free(gdir);
}

/* Five sessions' turns on a pool of two threads: all are accepted, two run
 * (the model sees two requests), three wait and count as running, and every
 * one ends once the model answers; the pool never grows past two. */
static void web_turns_run_on_a_bounded_pool(void **state)
{
    (void)state;
    char *gdir = cdsh_test_home_new();
    char script[1024];
    snprintf(script, sizeof script,
             "[{\"chunks\":[{\"wait_file\":\"%s/gate\",\"text\":\"done\"}],"
             "\"finish_reason\":\"stop\",\"repeat\":true}]",
             gdir);
    g_turn_workers = 2;
    srv s;
    srv_open(&s, 0, script);
    g_turn_workers = 0;
    char *ids[5];
    for (int i = 0; i < 5; i++) {
        ids[i] = create_session(&s);
        char path[160];
        snprintf(path, sizeof path, "/api/sessions/%s/messages", ids[i]);
        json_t *v;
        assert_int_equal(http(&s, "POST", path, H(s.auth, JSON_CT), "{\"text\":\"hold\"}", &v),
                         202);
        json_decref(v);
    }
    json_t *bodies = NULL;
    while (!bodies || json_array_size(bodies) < 2) { /* no time budget: CTest's timeout */
        json_decref(bodies);
        usleep(10000);
        bodies = cdsh_test_model_env_bodies(&s.fake);
    }
    json_decref(bodies);
    assert_int_equal(cdsh_api_turn_threads(s.api), 2);
    for (int i = 0; i < 5; i++) { /* queued turns hold their sessions too */
        char path[160];
        snprintf(path, sizeof path, "/api/sessions/%s/messages", ids[i]);
        json_t *v;
        assert_int_equal(http(&s, "POST", path, H(s.auth, JSON_CT), "{\"text\":\"x\"}", &v), 409);
        json_decref(v);
    }
    bodies = cdsh_test_model_env_bodies(&s.fake);
    assert_int_equal(json_array_size(bodies), 2);
    json_decref(bodies);
    char gate[600];
    snprintf(gate, sizeof gate, "%s/gate", gdir);
    cdsh_test_write_file(gate, "go");
    for (int i = 0; i < 5; i++) {
        wait_idle(&s, ids[i]);
        cdsh_error err;
        json_t *info = cdsh_session_store_info_dup(s.store, ids[i], &err);
        assert_int_equal(json_integer_value(json_object_get(info, "lastTurn")), 1);
        json_decref(info);
        free(ids[i]);
    }
    assert_int_equal(cdsh_api_turn_threads(s.api), 2);
    srv_close(&s);
    cdsh_test_home_free(gdir);
}

static void engine_sessions_bind_stream_ask_and_cancel_over_http(void **state)
{
    (void)state;
    srv s;
    srv_open_ex(&s, 0, NULL, true, 0);
    char pidfile[4300], args[4400];
    snprintf(pidfile, sizeof pidfile, "%s/pids", s.home);
    snprintf(args, sizeof args, "[\"--pid-file\",\"%s\"]", pidfile);
    acp_write_fixture_engine(s.home, args, "");
    json_t *v, *r;
    /* The old web-only route is gone: the plugin's channel is the one surface. */
    assert_int_equal(http(&s, "GET", "/api/engines", H(s.auth), NULL, &v), 404);
    json_decref(v);
    assert_int_equal(acp_rpc(&s, "engines", NULL, &r), 200);
    v = ok_value(r);
    json_t *fx = NULL, *e;
    size_t i;
    json_array_foreach(json_object_get(v, "engines"), i, e) {
        if (strcmp(json_string_value(json_object_get(e, "id")), "fixture") == 0)
            fx = e;
    }
    assert_non_null(fx);
    assert_true(json_is_true(json_object_get(json_object_get(fx, "resolved"), "found")));
    assert_true(json_is_true(json_object_get(fx, "enabled")));
    json_decref(r);

    char *id = create_session(&s);
    char path[160], body[4400];
    /* Binding is announced on the global stream (the session list shows it). */
    sse ch;
    sse_start(&ch, &s, "/api/events", "\"engine\"");
    snprintf(body, sizeof body, "{\"session\":\"%s\",\"engine\":\"fixture\",\"cwd\":\"%s\"}", id,
             s.home);
    assert_int_equal(acp_rpc(&s, "bind", body, &r), 200);
    v = ok_value(r);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(v, "binding"), "engineId")), "fixture");
    assert_false(json_is_true(json_object_get(v, "locked")));
    json_decref(r);
    json_t *chev = sse_finish(&ch);
    assert_string_equal(
        json_string_value(json_object_get(find_event(chev, "sessions/change"), "id")), id);
    json_decref(chev);
    /* Opened before the first message: the agent's own option names. */
    snprintf(body, sizeof body, "{\"session\":\"%s\"}", id);
    assert_int_equal(acp_rpc(&s, "open", body, &r), 200);
    v = ok_value(r);
    json_t *opt = json_array_get(json_object_get(json_object_get(v, "config"), "configOptions"), 0);
    assert_string_equal(json_string_value(json_object_get(opt, "name")), "Session Mode");
    json_decref(r);
    snprintf(body, sizeof body, "{\"session\":\"%s\",\"configId\":\"mode\",\"value\":\"plan\"}",
             id);
    assert_int_equal(acp_rpc(&s, "config", body, &r), 200);
    assert_string_equal(json_string_value(json_object_get(ok_value(r), "via")),
                        "set_config_option");
    json_decref(r);
    snprintf(body, sizeof body, "{\"session\":\"%s\",\"configId\":\"mode\"}", id);
    assert_int_equal(acp_rpc(&s, "config", body, &r), 200);
    assert_string_equal(rpc_code(r), "bad-request");
    json_decref(r);
    assert_int_equal(acp_rpc(&s, "session", "{\"session\":\"\"}", &r), 200);
    assert_string_equal(rpc_code(r), "bad-request");
    json_decref(r);

    /* A message goes to the engine and streams the normal turn events. */
    json_t *evs = send_and_follow(&s, id, "hello", "event: turn/end");
    assert_string_equal(json_string_value(json_object_get(find_event(evs, "text/delta"), "text")),
                        "PONG");
    assert_string_equal(
        json_string_value(json_object_get(find_event(evs, "assistant/message"), "text")), "PONG");
    assert_string_equal(json_string_value(json_object_get(find_event(evs, "turn/end"), "reason")),
                        "done");
    json_decref(evs);
    wait_idle(&s, id);
    /* Locked now: neither another engine nor unbinding. */
    snprintf(body, sizeof body, "{\"session\":\"%s\"}", id);
    assert_int_equal(acp_rpc(&s, "session", body, &r), 200);
    assert_true(json_is_true(json_object_get(ok_value(r), "locked")));
    json_decref(r);
    assert_int_equal(acp_rpc(&s, "unbind", body, &r), 200);
    assert_string_equal(rpc_code(r), "conflict");
    assert_string_equal(rpc_detail_code(r), "ENGINE_LOCKED");
    json_decref(r);
    snprintf(body, sizeof body, "{\"session\":\"%s\",\"engine\":\"gemini\"}", id);
    assert_int_equal(acp_rpc(&s, "bind", body, &r), 200);
    assert_string_equal(rpc_code(r), "conflict");
    assert_string_equal(rpc_detail_code(r), "ENGINE_LOCKED");
    json_decref(r);

    /* A permission request reaches the page with the agent's labels and is
     * answered through the approval endpoint. */
    evs = send_and_follow(&s, id, "permission", "event: approval/request");
    json_t *req = json_deep_copy(find_event(evs, "approval/request"));
    json_decref(evs);
    assert_non_null(req);
    assert_string_equal(json_string_value(json_object_get(req, "title")), "rm -rf build");
    assert_string_equal(json_string_value(json_object_get(req, "source")), "acp");
    json_t *opts = json_object_get(req, "options");
    assert_int_equal(json_array_size(opts), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(opts, 1), "name")),
                        "Always allow");
    const char *aid = json_string_value(json_object_get(req, "id"));
    snprintf(path, sizeof path, "/api/sessions/%s/approvals", id);
    assert_int_equal(http(&s, "GET", path, H(s.auth), NULL, &v), 200);
    assert_int_equal(json_array_size(json_object_get(v, "approvals")), 1);
    json_decref(v);
    snprintf(path, sizeof path, "/api/sessions/%s/approvals/%s", id, aid);
    assert_int_equal(http(&s, "POST", path, H(s.auth, JSON_CT), "{\"optionId\":\"nope\"}", &v),
                     400);
    assert_string_equal(err_code(v), "BAD_OPTION");
    json_decref(v);
    snprintf(body, sizeof body, "{\"optionId\":\"%s\"}",
             json_string_value(json_object_get(json_array_get(opts, 0), "optionId")));
    assert_int_equal(http(&s, "POST", path, H(s.auth, JSON_CT), body, &v), 200);
    json_decref(v);
    assert_int_equal(http(&s, "POST", path, H(s.auth, JSON_CT), body, &v), 404);
    assert_string_equal(err_code(v), "NO_APPROVAL");
    json_decref(v);
    json_decref(req);
    wait_idle(&s, id);
    snprintf(path, sizeof path, "/api/sessions/%s", id);
    assert_int_equal(http(&s, "GET", path, H(s.auth), NULL, &v), 200);
    const char *last_text = NULL;
    json_array_foreach(json_object_get(v, "events"), i, e) {
        if (strcmp(json_string_value(json_object_get(e, "type")), "assistant/message") == 0)
            last_text = json_string_value(json_object_get(json_object_get(e, "payload"), "text"));
    }
    assert_string_equal(last_text, "permission: selected/once");
    json_decref(v);

    /* Cancel ends an engine turn. */
    snprintf(path, sizeof path, "/api/sessions/%s/events", id);
    sse x, w;
    sse_start(&x, &s, path, "event: turn/end");
    sse_start(&w, &s, path, "event: text/delta");
    snprintf(path, sizeof path, "/api/sessions/%s/messages", id);
    assert_int_equal(http(&s, "POST", path, H(s.auth, JSON_CT), "{\"text\":\"stall\"}", &v), 202);
    json_decref(v);
    json_decref(sse_finish(&w));
    snprintf(path, sizeof path, "/api/sessions/%s/cancel", id);
    assert_int_equal(http(&s, "POST", path, H(s.auth), NULL, &v), 200);
    json_decref(v);
    evs = sse_finish(&x);
    assert_string_equal(json_string_value(json_object_get(find_event(evs, "turn/end"), "reason")),
                        "cancelled");
    json_decref(evs);
    wait_idle(&s, id);
    char *pids = cdsh_test_read_file(pidfile, NULL);
    int pid = atoi(pids);
    free(pids);
    free(id);
    srv_close(&s);
    assert_false(acp_pid_alive(pid)); /* the server's stop disposed the agent */
}

/* POSTs a fork request; returns the status, *out the body (owned). */
static long post_fork(srv *s, const char *id, const char *body, json_t **out)
{
    char path[160];
    snprintf(path, sizeof path, "/api/sessions/%s/fork", id);
    return http(s, "POST", path, H(s->auth, JSON_CT), body, out);
}

static const char *session_str(const json_t *v, const char *key)
{
    return json_string_value(json_object_get(json_object_get(v, "session"), key));
}

static void a_plain_session_forks_over_http_at_a_chosen_event(void **state)
{
    (void)state;
    srv s;
    srv_open(&s, 0, NULL);
    char *id = create_session(&s);
    cdsh_session_store *st = cdsh_agent_store(s.agent);
    const char *texts[] = {"first", "second", "third"};
    for (int i = 0; i < 3; i++) {
        json_t *p = json_pack("{s:s}", "text", texts[i]);
        assert_int_equal(cdsh_session_store_append(st, id, "user/message", 0, 0, p, NULL, NULL), 0);
        json_decref(p);
    }
    sse x;
    sse_start(&x, &s, "/api/events", "\"forked\"");
    json_t *v;
    assert_int_equal(post_fork(&s, id, NULL, &v), 201);
    assert_string_equal(session_str(v, "parentId"), id);
    assert_string_equal(session_str(v, "title"), "t (fork)");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "session"), "forkSeq")),
                     3);
    assert_false(json_is_true(json_object_get(json_object_get(v, "session"), "running")));
    assert_int_equal(json_array_size(json_object_get(v, "notes")), 0); /* no participant spoke */
    char *whole = strdup(session_str(v, "id"));
    json_decref(v);
    json_t *evs = sse_finish(&x);
    json_t *ch = find_event(evs, "sessions/change");
    assert_string_equal(json_string_value(json_object_get(ch, "id")), whole);
    assert_string_equal(json_string_value(json_object_get(ch, "parentId")), id);
    json_decref(evs);

    /* At an earlier event, with a title: the copy ends there. */
    assert_int_equal(post_fork(&s, id, "{\"atSeq\":2,\"title\":\"branch\"}", &v), 201);
    assert_string_equal(session_str(v, "title"), "branch");
    char path[160];
    snprintf(path, sizeof path, "/api/sessions/%s", session_str(v, "id"));
    json_decref(v);
    assert_int_equal(http(&s, "GET", path, H(s.auth), NULL, &v), 200);
    json_t *events = json_object_get(v, "events");
    assert_int_equal(json_array_size(events), 2);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(events, 1), "payload"), "text")),
                        "second");
    json_decref(v);
    assert_int_equal(http(&s, "GET", "/api/sessions", H(s.auth), NULL, &v), 200);
    assert_int_equal(json_integer_value(json_object_get(v, "total")), 3);
    json_decref(v);

    /* Bad requests name what was wrong; nothing is created. */
    assert_int_equal(post_fork(&s, id, "{\"atSeq\":9}", &v), 400);
    assert_string_equal(err_code(v), "BAD_EVENT");
    json_decref(v);
    assert_int_equal(post_fork(&s, id, "{\"atSeq\":\"2\"}", &v), 400);
    assert_string_equal(err_code(v), "BAD_REQUEST");
    assert_non_null(strstr(
        json_string_value(json_object_get(json_object_get(v, "error"), "message")), "atSeq"));
    json_decref(v);
    assert_int_equal(post_fork(&s, "s-missing", NULL, &v), 404);
    assert_string_equal(err_code(v), "NO_SESSION");
    json_decref(v);
    snprintf(path, sizeof path, "/api/sessions/%s/fork", id);
    assert_int_equal(http(&s, "GET", path, H(s.auth), NULL, &v), 405);
    json_decref(v);
    assert_int_equal(http(&s, "GET", "/api/sessions", H(s.auth), NULL, &v), 200);
    assert_int_equal(json_integer_value(json_object_get(v, "total")), 3);
    json_decref(v);
    free(whole);
    free(id);
    srv_close(&s);
}

/* The text of the last assistant/message of session id. */
static char *last_reply_dup(srv *s, const char *id)
{
    char path[160];
    snprintf(path, sizeof path, "/api/sessions/%s", id);
    json_t *v;
    assert_int_equal(http(s, "GET", path, H(s->auth), NULL, &v), 200);
    const char *text = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(v, "events"), i, e) {
        if (strcmp(json_string_value(json_object_get(e, "type")), "assistant/message") == 0)
            text = json_string_value(json_object_get(json_object_get(e, "payload"), "text"));
    }
    char *out = text ? strdup(text) : NULL;
    json_decref(v);
    return out;
}

static int lines_in(const char *path)
{
    char *text = cdsh_test_read_file(path, NULL);
    int n = 0;
    for (const char *c = text; c && *c; c++)
        n += *c == '\n';
    free(text);
    return n;
}

static void an_engine_bound_fork_runs_on_the_servers_engine_process(void **state)
{
    (void)state;
    srv s;
    srv_open_ex(&s, 0, NULL, true, 0);
    char pidfile[4300], args[4400], body[4400];
    snprintf(pidfile, sizeof pidfile, "%s/pids", s.home);
    snprintf(args, sizeof args, "[\"--pid-file\",\"%s\"]", pidfile);
    acp_write_fixture_engine(s.home, args, "");
    char *parent = create_session(&s);
    snprintf(body, sizeof body, "{\"session\":\"%s\",\"engine\":\"fixture\",\"cwd\":\"%s\"}",
             parent, s.home);
    json_t *v, *r;
    assert_int_equal(acp_rpc(&s, "bind", body, &r), 200);
    ok_value(r);
    json_decref(r);
    json_decref(send_and_follow(&s, parent, "the parent said this", "event: turn/end"));
    wait_idle(&s, parent);
    assert_int_equal(lines_in(pidfile), 1);

    assert_int_equal(post_fork(&s, parent, NULL, &v), 201);
    char *child = strdup(session_str(v, "id"));
    json_t *notes = json_object_get(v, "notes");
    assert_int_equal(json_array_size(notes), 1);
    assert_non_null(strstr(json_string_value(json_array_get(notes, 0)),
                           "bound to engine fixture, ACP session forked as "));
    json_decref(v);
    snprintf(body, sizeof body, "{\"session\":\"%s\"}", child);
    assert_int_equal(acp_rpc(&s, "session", body, &r), 200);
    v = ok_value(r);
    json_t *b = json_object_get(v, "binding");
    assert_string_equal(json_string_value(json_object_get(b, "forkedFrom")), parent);
    assert_string_equal(json_string_value(json_object_get(b, "engineId")), "fixture");
    assert_true(json_is_true(json_object_get(v, "locked")));
    json_decref(r);

    /* The child's first reply recalls the parent's context, and no second
     * agent process was started for the fork or the reply. */
    json_decref(send_and_follow(&s, child, "recall", "event: turn/end"));
    wait_idle(&s, child);
    char *reply = last_reply_dup(&s, child);
    assert_string_equal(reply, "recall: the parent said this");
    free(reply);
    assert_int_equal(cdsh_acp_service_process_count(s.acp), 1);
    assert_int_equal(lines_in(pidfile), 1);
    /* The parent goes on as it was. */
    json_decref(send_and_follow(&s, parent, "recall", "event: turn/end"));
    wait_idle(&s, parent);
    reply = last_reply_dup(&s, parent);
    assert_string_equal(reply, "recall: the parent said this");
    free(reply);
    free(child);
    free(parent);
    srv_close(&s);
}

static void add_asking_tool(srv *s)
{
    json_t *out = json_pack("{s:s}", "type", "string");
    cdsh_tool_def def = {.name = "danger",
                         .description = "does something dangerous",
                         .output_schema = out,
                         .execute = danger_body};
    cdsh_disposer_t d;
    assert_int_equal(cdsh_tools_register(cdsh_host_tools(s->host), NULL, &def, &d, NULL), 0);
    assert_int_equal(cdsh_tools_on_pre_execute(cdsh_host_tools(s->host), NULL, danger_always_asks,
                                               NULL, NULL, &d, NULL),
                     0);
    json_decref(out);
}

#define DANGER_SCRIPT                                                                              \
    "[{\"chunks\":[{\"tool_call\":{\"index\":0,\"id\":\"c1\",\"name\":\"danger\","                 \
    "\"arguments\":\"{}\"}}],\"finish_reason\":\"tool_calls\"},"                                   \
    "{\"chunks\":[{\"text\":\"after\"}],\"finish_reason\":\"stop\"}]"

static void a_tool_that_asks_is_answered_through_the_approval_endpoint(void **state)
{
    (void)state;
    srv s;
    srv_open_ex(&s, 0, DANGER_SCRIPT, false, 0);
    add_asking_tool(&s);
    char *id = create_session(&s);
    json_t *evs = send_and_follow(&s, id, "do it", "event: approval/request");
    json_t *req = json_deep_copy(find_event(evs, "approval/request"));
    json_decref(evs);
    assert_string_equal(json_string_value(json_object_get(req, "source")), "tool");
    assert_string_equal(json_string_value(json_object_get(req, "title")), "danger");
    assert_string_equal(json_string_value(json_object_get(req, "sessionId")), id);
    assert_non_null(
        strstr(json_string_value(json_object_get(req, "description")), "danger needs a person"));
    char path[200];
    snprintf(path, sizeof path, "/api/sessions/%s/events", id);
    sse x;
    sse_start(&x, &s, path, "event: turn/end");
    snprintf(path, sizeof path, "/api/sessions/%s/approvals/%s", id,
             json_string_value(json_object_get(req, "id")));
    json_t *v;
    assert_int_equal(
        http(&s, "POST", path, H(s.auth, JSON_CT), "{\"optionId\":\"allow_once\"}", &v), 200);
    json_decref(v);
    evs = sse_finish(&x);
    json_t *res = find_event(evs, "tool/result");
    assert_false(json_is_true(json_object_get(res, "isError")));
    assert_non_null(find_event(evs, "approval/resolved"));
    json_decref(evs);
    json_decref(req);
    free(id);
    srv_close(&s);
}

static void an_approval_nobody_answers_fails_closed(void **state)
{
    (void)state;
    srv s;
    srv_open_ex(&s, 0, DANGER_SCRIPT, false, 300);
    add_asking_tool(&s);
    char *id = create_session(&s);
    json_t *evs = send_and_follow(&s, id, "do it", "event: turn/end");
    json_t *res = find_event(evs, "tool/result");
    assert_true(json_is_true(json_object_get(res, "isError")));
    assert_non_null(
        strstr(json_string_value(json_object_get(json_object_get(res, "error"), "message")),
               "approval for tool \"danger\" was cancelled"));
    assert_string_equal(
        json_string_value(json_object_get(find_event(evs, "approval/resolved"), "outcome")),
        "timeout");
    json_decref(evs);
    free(id);
    srv_close(&s);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(requests_without_the_token_get_401),
        cmocka_unit_test(page_with_the_token_sets_an_httponly_strict_cookie),
        cmocka_unit_test(bad_host_or_origin_gets_403),
        cmocka_unit_test(nul_and_malformed_escapes_get_400),
        cmocka_unit_test(the_bearer_scheme_is_case_insensitive),
        cmocka_unit_test(oversize_bodies_get_413),
        cmocka_unit_test(rpc_gateway_follows_the_envelope_contract),
        cmocka_unit_test(frame_documents_get_the_sandbox_csp_and_only_frame_endpoints),
        cmocka_unit_test(sessions_can_be_created_listed_shown_and_deleted),
        cmocka_unit_test(a_turn_streams_its_events_in_order),
        cmocka_unit_test(a_message_posted_on_turn_end_is_never_busy),
        cmocka_unit_test(concurrent_posts_start_exactly_one_turn),
        cmocka_unit_test(web_turns_run_on_a_bounded_pool),
        cmocka_unit_test(cancel_stops_a_running_turn),
        cmocka_unit_test(plugin_state_events_reach_the_streams),
        cmocka_unit_test(without_a_model_the_status_says_how_to_set_one),
        cmocka_unit_test(modules_add_and_remove_routes),
        cmocka_unit_test(remote_bind_needs_allow_remote),
        cmocka_unit_test(engine_sessions_bind_stream_ask_and_cancel_over_http),
        cmocka_unit_test(a_plain_session_forks_over_http_at_a_chosen_event),
        cmocka_unit_test(an_engine_bound_fork_runs_on_the_servers_engine_process),
        cmocka_unit_test(a_tool_that_asks_is_answered_through_the_approval_endpoint),
        cmocka_unit_test(an_approval_nobody_answers_fails_closed),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
