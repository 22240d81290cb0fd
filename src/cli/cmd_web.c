/* cmd_web.c — `cdsh web`: boots the host and agent for the profile, starts
 * the web server with the API, SSE and RPC gateway, prints the URL (with
 * its one-time token), optionally opens a browser, and serves until
 * SIGINT/SIGTERM. */
#include "cli/cmd_web.h"

#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/env_policy.h"
#include "cli/cli_agent.h"
#include "proto/mcp/mcp_bridge.h"
#include "server/api.h"
#include "server/connection.h"
#include "server/rpc_gateway.h"
#include "server/web.h"
#include "cli/cli_token.h"

static void usage(FILE *out)
{
    fprintf(out, "Usage: cdsh web [--host 127.0.0.1] [--port 0] [--no-open] [--allow-remote]\n"
                 "                [--token-file FILE] [--profile NAME] [--json]\n"
                 "\n"
                 "Starts the local web UI, its HTTP API, server-sent events and the RPC gateway,\n"
                 "and prints the URL to open. The URL carries a one-time access token that the\n"
                 "page turns into a cookie; every API request needs it. Stops on Ctrl-C.\n"
                 "\n"
                 "Options:\n"
                 "  --host ADDR     IPv4 address to listen on (default 127.0.0.1)\n"
                 "  --port N        port (default 0: a free port)\n"
                 "  --no-open       do not try to open a browser\n"
                 "  --allow-remote  allow a non-loopback --host (anyone with the token can run\n"
                 "                  tools, so only on networks you trust)\n"
                 "  --token-file F  use the first line of F ('-': stdin) as the access token\n"
                 "                  instead of a random one (or set CDSH_WEB_TOKEN; --token T\n"
                 "                  still works, but the command line shows it until cdsh\n"
                 "                  hides it: prefer the file or the variable)\n"
                 "  --profile NAME  plugin profile (default \"default\")\n"
                 "  --json          print {\"url\",\"port\",\"token\"} as one JSON line\n"
                 "  -h, --help      show this help\n");
}

/* Opens url with xdg-open when a graphical session is around; never waits.
 * The browser gets the environment every child gets (base/env_policy.h):
 * the access token and other credentials stay behind. */
static void open_browser(const char *url)
{
    if (!getenv("DISPLAY") && !getenv("WAYLAND_DISPLAY"))
        return;
    char **env = cdsh_env_policy_child_env_new(NULL, NULL, NULL, NULL);
    if (!env)
        return;
    char *const args[] = {"xdg-open", (char *)url, NULL};
    pid_t pid = fork();
    if (pid == 0) {
        if (fork() == 0) { /* grandchild: reparented, so nobody has to reap it */
            int fd = open("/dev/null", O_RDWR);
            dup2(fd, 0);
            dup2(fd, 1);
            dup2(fd, 2);
            execvpe("xdg-open", args, env);
        }
        _exit(0);
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
    cdsh_env_policy_env_free(env);
}

int cdsh_cmd_web(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"host", required_argument, NULL, 'H'},
        {"port", required_argument, NULL, 'p'},
        {"no-open", no_argument, NULL, 'n'},
        {"allow-remote", no_argument, NULL, 'r'},
        {"token", required_argument, NULL, 't'},
        {"token-file", required_argument, NULL, 'F'},
        {"profile", required_argument, NULL, 'P'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    cdsh_web_options opts = {0};
    const char *profile = NULL, *token_file = NULL;
    char *token_arg = NULL;
    int json = 0, no_open = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'H': opts.host = optarg; break;
        case 'p': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || v < 0 || v > 65535) {
                fprintf(stderr, "cdsh web: --port wants a number from 0 to 65535, got '%s'\n",
                        optarg);
                free(token_arg);
                return 2;
            }
            opts.port = (uint16_t)v;
            break;
        }
        case 'n': no_open = 1; break;
        case 'r': opts.allow_remote = true; break;
        case 't':
            free(token_arg);
            token_arg = cdsh_cli_token_take_arg(optarg);
            break;
        case 'F': token_file = optarg; break;
        case 'P': profile = optarg; break;
        case 'j': json = 1; break;
        case 'h': usage(stdout); free(token_arg); return 0;
        default: usage(stderr); free(token_arg); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "cdsh web: unexpected argument '%s'\n", argv[optind]);
        free(token_arg);
        return 2;
    }
    int token_failed = 0;
    char *token = cdsh_cli_token_resolve("cdsh web", token_arg, token_file, "CDSH_WEB_TOKEN",
                                         &token_failed);
    if (token_failed)
        return 2;
    opts.token = token;

    /* Block the stop signals before any thread starts so only sigwait sees them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);

    cdsh_cli_agent a;
    if (cdsh_cli_agent_open("web", profile, &a)) {
        free(token);
        return 1;
    }
    /* Browsers reach the RPC channels from here on: plugins that register
     * panel channels only with a live connection (xiangqi §4.2) reload now. */
    cdsh_error cerr = {0};
    if (cdsh_plugin_load(a.host, &cdsh_web_connection_plugin, NULL, NULL, &cerr) != 0)
        fprintf(stderr, "cdsh web: warning: %s\n", cerr.message);
    /* MCP at /mcp: the tools of the profile's plugins (the same host the
     * chat uses), behind the web token (the server checks it first). */
    cdsh_mcp_export *ex =
        cdsh_mcp_export_new(cdsh_host_tools(a.host), cdsh_host_events(a.host), NULL, NULL);
    cdsh_mcp_server *mcp_server = NULL;
    if (ex) {
        cdsh_mcp_provider prov;
        cdsh_mcp_export_provider(ex, &prov);
        if ((mcp_server = cdsh_mcp_server_new(&prov, NULL, NULL)))
            opts.mcp = cdsh_mcp_http_new(mcp_server, NULL, NULL);
        cdsh_mcp_export_attach(ex, mcp_server);
    }

    /* The page's approval dialog: the api installs this broker on the host's
     * tools, where tools that ask and plugins asking for a person (an ACP
     * agent's permission request) find it. */
    cdsh_approvals *approvals = cdsh_approvals_new(0);
    cdsh_error err = {0};
    cdsh_api_options ao = {.approvals = approvals};

    cdsh_web *web = NULL;
    cdsh_api *api = NULL;
    int status = 1;
    if (!approvals) {
        fprintf(stderr, "cdsh web: out of memory\n");
        goto done;
    }
    if (cdsh_web_start(&opts, &web, &err) != 0 ||
        cdsh_api_start_ex(web, a.agent, &ao, &api, &err) != 0 ||
        cdsh_rpc_gateway_mount(web, cdsh_host_rpc(a.host), NULL, &err) != 0 ||
        cdsh_rpc_gateway_mount_frames(web, cdsh_host_rpc(a.host), NULL, &err) != 0) {
        fprintf(stderr, "cdsh web: %s\n", err.message);
        goto done;
    }
    char *url = cdsh_web_url_dup(web);
    if (json)
        printf("{\"url\":\"%s\",\"port\":%u,\"token\":\"%s\"}\n", url, cdsh_web_port(web),
               cdsh_web_token(web));
    else
        printf("cdsh web is running at %s\nPress Ctrl-C to stop.\n", url);
    fflush(stdout);
    if (!no_open)
        open_browser(url);
    free(url);

    int sig = 0;
    sigwait(&stop, &sig);
    status = 0;
    if (!json)
        fprintf(stderr, "cdsh web: stopping\n");
done:
    cdsh_api_shutdown(api);
    cdsh_web_stop(web);
    cdsh_api_free(api);
    cdsh_approvals_free(approvals);
    cdsh_mcp_http_free(opts.mcp);
    if (ex)
        cdsh_mcp_export_attach(ex, NULL);
    cdsh_mcp_server_free(mcp_server);
    cdsh_mcp_export_free(ex);
    cdsh_cli_agent_close(&a);
    free(token);
    return status;
}
