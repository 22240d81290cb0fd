/* fuzz_jsonrpc_frame.c — arbitrary bytes as the incoming stream of a JSON-RPC
 * peer (over a socketpair, then EOF): nothing may crash, hang or leak, and a
 * pending call must end exactly once. */
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "proto/jsonrpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void answer(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)arg;
    (void)peer;
    json_t *params = cdsh_jsonrpc_request_params(req);
    if (cdsh_jsonrpc_request_is_notification(req))
        return;
    if (json_is_array(params))
        cdsh_jsonrpc_respond_error(req, -32000, "arrays refused", params, NULL);
    else
        cdsh_jsonrpc_respond(req, params, NULL);
}

static void done(void *arg, int rc, json_t *result, const cdsh_jsonrpc_remote_error *rerr,
                 const cdsh_error *err)
{
    (void)rc;
    (void)result;
    (void)rerr;
    (void)err;
    int *count = arg;
    (*count)++;
    if (*count != 1)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
        return 0;
    cdsh_jsonrpc_config cfg = {.name = "fuzz", .max_frame = 512, .close_fds = true};
    cdsh_jsonrpc *p = cdsh_jsonrpc_new(sv[0], sv[0], &cfg, NULL);
    if (!p) {
        close(sv[0]);
        close(sv[1]);
        return 0;
    }
    cdsh_jsonrpc_handle(p, "echo", answer, NULL, NULL);
    cdsh_jsonrpc_handle_fallback(p, answer, NULL);
    cdsh_jsonrpc_start(p, NULL);
    int count = 0;
    cdsh_jsonrpc_call_async(p, "first", NULL, -1, NULL, done, &count, NULL, NULL);
    size_t off = 0;
    while (off < size) {
        ssize_t n = write(sv[1], data + off, size - off);
        if (n <= 0)
            break;
        off += (size_t)n;
        /* keep the peer's replies from filling our receive buffer */
        char sink[4096];
        while (recv(sv[1], sink, sizeof sink, MSG_DONTWAIT) > 0) {
        }
    }
    shutdown(sv[1], SHUT_WR);
    char sink[4096];
    for (int i = 0; i < 5000 && !cdsh_jsonrpc_is_closed(p); i++) {
        while (recv(sv[1], sink, sizeof sink, MSG_DONTWAIT) > 0) {
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    cdsh_jsonrpc_free(p);
    if (count != 1)
        abort();
    close(sv[1]);
    return 0;
}
