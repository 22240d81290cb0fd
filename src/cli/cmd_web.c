/* cmd_web.c — `cdsh web`: parses options, starts the web server, prints the
 * URL (or JSON) and serves until SIGINT/SIGTERM. */
#include "cli/cmd_web.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_host.h"
#include "proto/mcp/mcp_bridge.h"
#include "server/web.h"

#define DEFAULT_PORT 8765

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: cdsh web [--port N] [--token T] [--json]\n"
            "\n"
            "Starts the local web UI on 127.0.0.1 and prints the URL to open, which carries\n"
            "a per-run access token. Stops on Ctrl-C.\n"
            "\n"
            "Options:\n"
            "  --port N    port to listen on (default %d; 0 picks a free port; if %d is\n"
            "              busy and --port was not given, a free port is used instead)\n"
            "  --token T   use this access token instead of a random one\n"
            "  --json      print {\"url\",\"port\",\"token\"} as one JSON line instead of text\n"
            "  -h, --help  show this help\n",
            DEFAULT_PORT, DEFAULT_PORT);
}

int cdsh_cmd_web(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"port", required_argument, NULL, 'p'},
        {"token", required_argument, NULL, 't'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    cdsh_web_options opts = {.port = DEFAULT_PORT, .token = NULL};
    int json = 0, port_given = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'p': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || v < 0 || v > 65535) {
                fprintf(stderr, "cdsh web: --port wants a number from 0 to 65535, got '%s'\n",
                        optarg);
                return 2;
            }
            opts.port = (uint16_t)v;
            port_given = 1;
            break;
        }
        case 't': opts.token = optarg; break;
        case 'j': json = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "cdsh web: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }

    /* Block the stop signals before any thread starts so only sigwait sees them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);

    /* MCP at /mcp: the tools of the default profile's plugins, behind the
     * web token (the web server checks it before handing requests over). */
    cdsh_host *host = NULL;
    cdsh_profile *profile = NULL;
    cdsh_mcp_export *ex = NULL;
    cdsh_mcp_server *mcp_server = NULL;
    if (cdsh_cli_host_open("web", NULL, &host, &profile) == 0 &&
        (ex = cdsh_mcp_export_new(cdsh_host_tools(host), cdsh_host_events(host), NULL, NULL))) {
        cdsh_mcp_provider prov;
        cdsh_mcp_export_provider(ex, &prov);
        if ((mcp_server = cdsh_mcp_server_new(&prov, NULL, NULL)))
            opts.mcp = cdsh_mcp_http_new(mcp_server, NULL, NULL);
        cdsh_mcp_export_attach(ex, mcp_server);
    }

    cdsh_web *web = NULL;
    cdsh_error err = {0};
    if (cdsh_web_start(&opts, &web, &err) != 0 && !port_given) {
        opts.port = 0;
        cdsh_error_clear(&err);
        cdsh_web_start(&opts, &web, &err);
    }
    int status = 0;
    if (!web) {
        fprintf(stderr, "cdsh web: %s\n", err.message);
        status = 1;
        goto out;
    }
    char *url = cdsh_web_url_dup(web);
    if (json)
        printf("{\"url\":\"%s\",\"port\":%u,\"token\":\"%s\"}\n", url, cdsh_web_port(web),
               cdsh_web_token(web));
    else
        printf("cdsh web is running at %s\nPress Ctrl-C to stop.\n", url);
    fflush(stdout);
    free(url);

    int sig = 0;
    sigwait(&stop, &sig);
    cdsh_web_stop(web);
    if (!json)
        fprintf(stderr, "cdsh web: stopped\n");
out:
    cdsh_mcp_http_free(opts.mcp);
    if (ex)
        cdsh_mcp_export_attach(ex, NULL);
    cdsh_mcp_server_free(mcp_server);
    cdsh_mcp_export_free(ex);
    cdsh_host_free(host);
    cdsh_profile_free(profile);
    return status;
}
