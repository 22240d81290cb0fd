/* fuzz_web_request.c — raw HTTP requests against a live in-process
 * `cdsh web` server over a real loopback socket ("PORT" and "TOKEN" in the
 * input become the server's); every answer must be HTTP, and JSON where it
 * says so. Global state (documented): one server per process, started lazily. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "base/fs.h"
#include "server/api.h"
#include "server/rpc_gateway.h"
#include "server/web.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static cdsh_web *web;
static char port_text[8];

static int echo(void *arg, const char *endpoint, const json_t *payload, cdsh_cancel *cancel,
                json_t **result, cdsh_error *err)
{
    (void)arg;
    (void)cancel;
    (void)err;
    *result = cdsh_rpc_ok_new(json_pack("{s:s, s:O}", "endpoint", endpoint, "payload", payload));
    return 0;
}

static char home[] = "/tmp/cdsh-fuzz-web-XXXXXX";

/* The corpus replay (every test run) exits normally: leave no home behind. */
static void remove_home(void)
{
    cdsh_fs_remove_tree(home, NULL);
}

static void start(void)
{
    if (!mkdtemp(home))
        abort();
    atexit(remove_home);
    setenv("CDSH_HOME", home, 1);
    unsetenv("CDSH_BASE_URL");
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    cdsh_host *host = cdsh_host_new();
    cdsh_session_store *store = NULL;
    cdsh_agent *agent = NULL;
    cdsh_api *api = NULL;
    cdsh_disposer_t d;
    cdsh_web_options o = {.token = "TOKEN", .max_body = 4096};
    if (!host || cdsh_rpc_handle(cdsh_host_rpc(host), "/echo", echo, NULL, &d, NULL) ||
        cdsh_session_store_open(cdsh_host_home(host), NULL, &store, NULL) ||
        cdsh_agent_new(&(cdsh_agent_options){.host = host, .store = store}, &agent, NULL) ||
        cdsh_web_start(&o, &web, NULL) || cdsh_api_start(web, agent, &api, NULL) ||
        cdsh_rpc_gateway_mount(web, cdsh_host_rpc(host), NULL, NULL) ||
        cdsh_rpc_gateway_mount_frames(web, cdsh_host_rpc(host), NULL, NULL))
        abort();
    snprintf(port_text, sizeof port_text, "%u", cdsh_web_port(web));
    /* Left running for the life of the process: the fuzzer never returns. */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!web)
        start();
    if (size > 8192)
        return 0;
    /* Substitute the placeholders. */
    char *req = malloc(size * 2 + 16), *w = req;
    for (size_t i = 0; i < size;) {
        if (i + 4 <= size && memcmp(data + i, "PORT", 4) == 0) {
            w += sprintf(w, "%s", port_text);
            i += 4;
        } else {
            *w++ = (char)data[i++];
        }
    }
    size_t len = (size_t)(w - req);

    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(cdsh_web_port(web))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {.tv_sec = 1};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
        abort();
    if (len && write(fd, req, len) < 0) {
        /* The server may close early (an error answered before the body). */
    }
    shutdown(fd, SHUT_WR);
    char buf[65536];
    size_t got = 0;
    ssize_t r;
    while (got < sizeof buf - 1 && (r = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)r;
    buf[got] = '\0';
    close(fd);
    if (got && strncmp(buf, "HTTP/1.", 7) != 0)
        abort();
    /* Errors and API answers from cdsh (not MHD's own 400s for broken
     * framing) are JSON. Another response may follow on the connection, a
     * HEAD answer has no body, and a truncated read proves nothing. */
    const char *body = strstr(buf, "\r\n\r\n");
    const char *cl = strcasestr(buf, "\r\nContent-Length: ");
    bool head = len >= 4 && memcmp(req, "HEAD", 4) == 0;
    if (!head && body && cl && cl < body && strstr(buf, "application/json")) {
        size_t n = strtoul(cl + 18, NULL, 10);
        size_t have = got - (size_t)(body + 4 - buf);
        if (n > 0 && have >= n) {
            json_t *v = json_loadb(body + 4, n, 0, NULL);
            if (!v)
                abort();
            json_decref(v);
        }
    }
    free(req);
    return 0;
}
