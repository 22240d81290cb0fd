/* test_http_lazy_load.c — libcurl and libmicrohttpd (with the TLS, Kerberos
 * and LDAP stacks behind them) are mapped only by a process that uses them:
 * the cdsh binary does not link them, a model client maps libcurl on its
 * first request (not when it is built), and libmicrohttpd is mapped when
 * the first HTTP server starts (base/curl_dl.h, server/mhd_dl.h). This
 * executable links neither library itself. */
#include "support/testkit.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/model_client.h"
#include "agent/model_config.h"
#include "base/curl_dl.h"
#include "server/mhd_dl.h"
#include "server/web.h"

static bool mapped(const char *lib)
{
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[4096];
    bool found = false;
    while (fgets(line, sizeof line, f))
        if (strstr(line, lib))
            found = true;
    fclose(f);
    return found;
}

/* A loopback port with nothing listening on it. */
static unsigned short closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void cdsh_binary_links_no_http_library(void **state)
{
    (void)state;
    char *const argv[] = {"/usr/bin/ldd", CDSH_BINARY, NULL};
    char *out = NULL;
    int rc = cdsh_test_run(argv, NULL, &out, NULL, 30000);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "libjansson")); /* ldd did list the libraries */
    static const char *const absent[] = {"libcurl", "libmicrohttpd", "libgnutls",
                                         "libssl",  "libkrb5",       "libldap",
                                         "libssh2", "libnghttp2",    "libjavascriptcoregtk"};
    for (size_t i = 0; i < sizeof absent / sizeof *absent; i++)
        if (strstr(out, absent[i]))
            fail_msg("cdsh loads %s at start:\n%s", absent[i], out);
    free(out);
}

static void libcurl_is_mapped_by_the_first_request_only(void **state)
{
    (void)state;
    assert_false(mapped("libcurl"));
    assert_false(cdsh_curl_loaded());
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/v1", closed_port());
    cdsh_model_config cfg = {.base_url = url,
                             .api_key = "test-key",
                             .model = "test-model",
                             .connect_timeout_ms = cdsh_test_scale_ms(5000),
                             .idle_timeout_ms = cdsh_test_scale_ms(5000),
                             .max_retries = -1};
    cdsh_error err = {0};
    cdsh_model_client *c = cdsh_model_client_new(&cfg, &err);
    assert_non_null(c);
    assert_false(mapped("libcurl")); /* a client that makes no request maps nothing */

    json_t *messages = json_pack("[{s:s,s:s}]", "role", "user", "content", "hi");
    cdsh_model_request req = {.messages = messages, .no_stream = true};
    cdsh_model_reply reply = {0};
    int rc = cdsh_model_client_complete(c, &req, &reply, &err);
    assert_int_equal(rc, CDSH_EIO); /* nothing listens: a transport error, from libcurl */
    assert_string_equal(err.code, "TRANSPORT");
    assert_true(mapped("libcurl"));
    assert_true(cdsh_curl_loaded());
    assert_int_equal(cdsh_curl_load(NULL), 0); /* loaded once; later calls agree */
    cdsh_model_reply_deinit(&reply);
    json_decref(messages);
    cdsh_model_client_free(c);
}

static void libmicrohttpd_is_mapped_when_a_server_starts(void **state)
{
    (void)state;
    assert_false(mapped("libmicrohttpd"));
    assert_false(cdsh_mhd_loaded());
    cdsh_web_options o = {.port = 0};
    cdsh_web *web = NULL;
    cdsh_error err = {0};
    int rc = cdsh_web_start(&o, &web, &err);
    if (rc != 0)
        fail_msg("web start failed: %s %s", err.code, err.message);
    assert_true(cdsh_web_port(web) > 0);
    assert_true(mapped("libmicrohttpd"));
    assert_true(cdsh_mhd_loaded());
    cdsh_web_stop(web);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cdsh_binary_links_no_http_library),
        cmocka_unit_test(libcurl_is_mapped_by_the_first_request_only),
        cmocka_unit_test(libmicrohttpd_is_mapped_when_a_server_starts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
