/* cmd_mcp.c — `cdsh mcp`: serve cdsh's model-facing tools over MCP (stdio by
 * default, Streamable HTTP with --http), and the people's client commands
 * `cdsh mcp tools`, `cdsh mcp call` and `cdsh mcp name`. The protocol is in
 * src/proto/mcp; this file parses options and prints. */
#include "cli/cmd_mcp.h"

#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/strbuf.h"
#include "cli/cmd_mcp_fixture.h"
#include "host/cli.h"
#include "proto/mcp/mcp.h"
#include "proto/mcp/mcp_bridge.h"
#include "proto/mcp/mcp_client.h"
#include "proto/mcp/mcp_server.h"
#include "server/mcp_http.h"
#include "cli/cli_token.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage:\n"
            "  cdsh mcp [--tools GLOB] [--profile P] [--http PORT [--token-file F]] [--fixture]\n"
            "      serve cdsh's model-facing tools over MCP: stdio by default (one session per\n"
            "      process), or Streamable HTTP at http://127.0.0.1:PORT/mcp\n"
            "  cdsh mcp tools (--server 'CMD ARGS' | --url URL) [client options] [--json]\n"
            "      list every tool of an MCP server\n"
            "  cdsh mcp call (--server 'CMD ARGS' | --url URL) TOOL ['JSON ARGS'] [--json]\n"
            "      call one tool and print its result\n"
            "  cdsh mcp name SERVER TOOL\n"
            "      print the public name cdsh (and DSH) give that tool: mcp__SERVER__TOOL\n"
            "\n"
            "Serve options:\n"
            "  --tools GLOB   serve only tools whose names match GLOB (fnmatch)\n"
            "  --profile P    profile whose plugins provide the tools\n"
            "  --http PORT    Streamable HTTP on 127.0.0.1:PORT (0 picks one; URL printed)\n"
            "  --token-file F require Authorization: Bearer <the first line of F> over HTTP\n"
            "                 (F '-' reads stdin; or set CDSH_MCP_TOKEN; --token T still\n"
            "                 works but puts the token in the command line until cdsh hides it)\n"
            "  --fixture      add the fixture tools echo, add, fail, sleep (for tests)\n"
            "\n"
            "Client options:\n"
            "  --server CMD   command line of a stdio server (split like a shell, no expansion)\n"
            "  --url URL      Streamable HTTP endpoint\n"
            "  --name NAME    server name used in messages and public names (default: server)\n"
            "  --env K=V      extra environment for a stdio server (repeatable); --env K\n"
            "                 passes cdsh's own K; the rest of the environment is scrubbed of\n"
            "                 credentials and CDSH_ settings (docs/security.md)\n"
            "  --env-file F   NAME=VALUE (or NAME) lines from F ('-': stdin)\n"
            "  --header 'K: V' extra HTTP header (repeatable)\n"
            "  --header-file F 'Name: value' lines from F ('-': stdin); values given as\n"
            "                 --env or --header are hidden from ps once read, files never show\n"
            "  --bearer-file F HTTP bearer token from the first line of F ('-': stdin), or\n"
            "                 set CDSH_MCP_BEARER (--bearer T works, hidden from ps once read)\n"
            "  --timeout MS   per-call timeout (default 60000)\n"
            "  --progress     print progress notifications to stderr\n"
            "  --json         print JSON instead of text\n");
}

/* Splits a command line like a POSIX shell would without expansions: blanks
 * separate words, '...' is literal, "..." allows \" \\ \$ \`, backslash
 * escapes outside quotes. Owned NULL-terminated array; NULL on a dangling
 * quote. */
static char **split_words(const char *s)
{
    size_t cap = 8, n = 0;
    char **v = calloc(cap, sizeof *v);
    char *w = malloc(strlen(s) + 1);
    if (!v || !w)
        goto fail;
    while (*s) {
        while (*s == ' ' || *s == '\t' || *s == '\n')
            s++;
        if (!*s)
            break;
        size_t l = 0;
        while (*s && *s != ' ' && *s != '\t' && *s != '\n') {
            if (*s == '\'') {
                const char *e = strchr(s + 1, '\'');
                if (!e)
                    goto fail;
                memcpy(w + l, s + 1, (size_t)(e - s - 1));
                l += (size_t)(e - s - 1);
                s = e + 1;
            } else if (*s == '"') {
                s++;
                while (*s && *s != '"') {
                    if (*s == '\\' && s[1] && strchr("\"\\$`", s[1]))
                        s++;
                    w[l++] = *s++;
                }
                if (*s != '"')
                    goto fail;
                s++;
            } else if (*s == '\\' && s[1]) {
                w[l++] = s[1];
                s += 2;
            } else {
                w[l++] = *s++;
            }
        }
        if (n + 2 > cap) {
            char **nv = realloc(v, (cap *= 2) * sizeof *v);
            if (!nv)
                goto fail;
            v = nv;
        }
        if (!(v[n++] = strndup(w, l)))
            goto fail;
        v[n] = NULL;
    }
    free(w);
    if (n == 0) {
        free(v);
        return NULL;
    }
    return v;
fail:
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
    free(w);
    return NULL;
}

static void free_words(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static bool parse_port(const char *s, uint16_t *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < 0 || v > 65535)
        return false;
    *out = (uint16_t)v;
    return true;
}

/* ---- serve -------------------------------------------------------------------- */

typedef struct stop_ctx {
    sigset_t set;
    cdsh_cancel *stop;
} stop_ctx;

static void *signal_thread(void *arg)
{
    stop_ctx *s = arg;
    int sig = 0;
    sigwait(&s->set, &sig);
    cdsh_cancel_fire(s->stop, "signal");
    return NULL;
}

static int serve(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"tools", required_argument, NULL, 'g'}, {"profile", required_argument, NULL, 'P'},
        {"http", required_argument, NULL, 'H'},  {"token", required_argument, NULL, 't'},
        {"token-file", required_argument, NULL, 'F'},
        {"fixture", no_argument, NULL, 'f'},     {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
    };
    const char *glob = NULL, *profile_name = NULL, *token_file = NULL;
    char *token_arg = NULL, *token = NULL;
    bool http = false, fixture = false, json = false;
    uint16_t port = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'g': glob = optarg; break;
        case 'P': profile_name = optarg; break;
        case 'H':
            if (!parse_port(optarg, &port)) {
                fprintf(stderr, "cdsh mcp: --http wants a port from 0 to 65535, got '%s'\n",
                        optarg);
                free(token_arg);
                return 2;
            }
            http = true;
            break;
        case 't':
            free(token_arg);
            token_arg = cdsh_cli_token_take_arg(optarg);
            break;
        case 'F': token_file = optarg; break;
        case 'f': fixture = true; break;
        case 'j': json = true; break;
        case 'h': usage(stdout); free(token_arg); return 0;
        default: usage(stderr); free(token_arg); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "cdsh mcp: unknown subcommand or argument '%s' (try cdsh mcp --help)\n",
                argv[optind]);
        free(token_arg);
        return 2;
    }
    int token_failed = 0;
    token = cdsh_cli_token_resolve("cdsh mcp", token_arg, token_file, "CDSH_MCP_TOKEN",
                                   &token_failed);
    if (token_failed)
        return 2;
    stop_ctx sc;
    sigemptyset(&sc.set);
    sigaddset(&sc.set, SIGINT);
    sigaddset(&sc.set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sc.set, NULL);
    sc.stop = cdsh_cancel_new(NULL);

    int status = 1;
    cdsh_error err = {0};
    cdsh_host *host = NULL;
    cdsh_profile *profile = NULL;
    cdsh_events *bus = NULL;
    cdsh_tools *tools = NULL;
    cdsh_disposer_t fx[CDSH_CLI_MCP_FIXTURE_N] = {{0}};
    cdsh_mcp_export *ex = NULL;
    cdsh_mcp_server *server = NULL;
    cdsh_mcp_http *h = NULL;
    pthread_t sig_thr;
    bool sig_started = false;
    if (!sc.stop) {
        fprintf(stderr, "cdsh mcp: out of memory\n");
        goto out;
    }
    /* The tools of the profile's plugins; warnings go to stderr, never stdout. */
    if (cdsh_cli_host_open("mcp", profile_name, &host, &profile) != 0)
        goto out;
    bus = cdsh_host_events(host);
    tools = cdsh_host_tools(host);
    if (fixture && cdsh_cli_mcp_fixture_register(tools, fx, &err) != 0) {
        fprintf(stderr, "cdsh mcp: %s\n", err.message);
        goto out;
    }
    cdsh_mcp_export_opts eo = {.tools_glob = glob};
    if (!(ex = cdsh_mcp_export_new(tools, bus, &eo, &err))) {
        fprintf(stderr, "cdsh mcp: %s\n", err.message);
        goto out;
    }
    cdsh_mcp_provider prov;
    cdsh_mcp_export_provider(ex, &prov);
    cdsh_mcp_server_opts so = {
        .instructions = "cdsh's model-facing tools. Each MCP connection is one cdsh session.",
    };
    if (!(server = cdsh_mcp_server_new(&prov, &so, &err))) {
        fprintf(stderr, "cdsh mcp: %s\n", err.message);
        goto out;
    }
    cdsh_mcp_export_attach(ex, server);
    sig_started = pthread_create(&sig_thr, NULL, signal_thread, &sc) == 0;
    if (http) {
        cdsh_mcp_http_opts ho = {.token = token};
        if (!(h = cdsh_mcp_http_new(server, &ho, &err)) ||
            cdsh_mcp_http_listen(h, port, &err) != 0) {
            fprintf(stderr, "cdsh mcp: %s\n", err.message);
            goto out;
        }
        if (json)
            printf("{\"url\":\"http://127.0.0.1:%u/mcp\",\"port\":%u}\n", cdsh_mcp_http_port(h),
                   cdsh_mcp_http_port(h));
        else
            printf("cdsh MCP server at http://127.0.0.1:%u/mcp\n", cdsh_mcp_http_port(h));
        fflush(stdout);
        cdsh_cancel_wait(sc.stop, -1);
    } else if (cdsh_mcp_serve_fds(server, 0, 1, sc.stop, &err) != 0) {
        fprintf(stderr, "cdsh mcp: %s\n", err.message);
        goto out;
    }
    status = 0;
out:
    cdsh_mcp_http_free(h);
    if (ex)
        cdsh_mcp_export_attach(ex, NULL);
    cdsh_mcp_server_free(server);
    cdsh_mcp_export_free(ex);
    for (size_t i = 0; i < CDSH_CLI_MCP_FIXTURE_N; i++)
        cdsh_disposer_run(&fx[i]);
    cdsh_host_free(host);
    cdsh_profile_free(profile);
    if (sig_started) {
        /* Wake the signal thread if no signal came. */
        pthread_kill(sig_thr, SIGTERM);
        pthread_join(sig_thr, NULL);
    }
    cdsh_cancel_free(sc.stop);
    free(token);
    return status;
}

/* ---- client commands ---------------------------------------------------------- */

/* Overwrites the value part of a --env/--header argument (from byte `from`)
 * in argv's own memory, which is the kernel's copy of the command line, so
 * /proc/PID/cmdline and ps show "NAME=***" (as --token, cli_token.c). */
static void hide_value(char *arg, size_t from)
{
    size_t n = strlen(arg);
    if (from >= n)
        return;
    size_t stars = n - from > 3 ? 3 : n - from;
    memset(arg + from, '*', stars);
    memset(arg + from + stars, '\0', n - from - stars);
}

/* Where the value of "Name: value" starts (after the colon and blanks). */
static size_t header_value_at(const char *arg)
{
    size_t at = strcspn(arg, ":");
    if (arg[at])
        at++;
    while (arg[at] == ' ')
        at++;
    return at;
}

/* NAME=VALUE, or NAME alone: the value of NAME in cdsh's own environment
 * (named on purpose, so it reaches the server even if it looks like a
 * credential). */
static bool add_env(json_t *env, const char *item, const char *what)
{
    const char *eq = strchr(item, '=');
    size_t n = eq ? (size_t)(eq - item) : strlen(item);
    if (n == 0) {
        fprintf(stderr, "cdsh mcp: %s wants NAME=VALUE or NAME, got '%s'\n", what,
                eq ? "=***" : item);
        return false;
    }
    char *k = strndup(item, n);
    const char *v = eq ? eq + 1 : getenv(k);
    if (!v) {
        fprintf(stderr, "cdsh mcp: %s %s: %s is not set in the environment\n", what, k, k);
        free(k);
        return false;
    }
    json_object_set_new(env, k, json_string(v));
    free(k);
    return true;
}

static bool add_header(json_t *headers, const char *item, const char *what)
{
    const char *colon = strchr(item, ':');
    if (!colon || colon == item) {
        fprintf(stderr, "cdsh mcp: %s wants 'Name: value', got '%.40s'\n", what, item);
        return false;
    }
    char *k = strndup(item, (size_t)(colon - item));
    const char *v = colon + 1;
    while (*v == ' ')
        v++;
    json_object_set_new(headers, k, json_string(v));
    free(k);
    return true;
}

/* One item per line of path ('-': stdin) through add; blank lines and lines
 * starting with '#' are skipped, "\r\n" endings accepted. */
static bool read_lines_file(const char *path, const char *what, json_t *into,
                            bool (*add)(json_t *, const char *, const char *))
{
    char *text = NULL;
    size_t len = 0;
    if (strcmp(path, "-") == 0) {
        cdsh_strbuf sb;
        cdsh_strbuf_init(&sb);
        char buf[4096];
        size_t got;
        while ((got = fread(buf, 1, sizeof buf, stdin)) > 0 && sb.len < (1u << 20))
            cdsh_strbuf_append(&sb, buf, got);
        text = cdsh_strbuf_take(&sb, &len);
    } else {
        cdsh_error err = {0};
        if (cdsh_fs_read_file(path, 1u << 20, &text, &len, &err) != 0) {
            fprintf(stderr, "cdsh mcp: %s: %s\n", what, err.message);
            return false;
        }
    }
    bool ok = text != NULL;
    if (ok && memchr(text, '\0', len)) {
        fprintf(stderr, "cdsh mcp: %s %s: a NUL byte in the file\n", what, path);
        ok = false;
    }
    for (char *line = text, *next; ok && line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        size_t n = strlen(line);
        if (n && line[n - 1] == '\r')
            line[--n] = '\0';
        if (n == 0 || line[0] == '#')
            continue;
        ok = add(into, line, what);
    }
    if (text)
        memset(text, 0, len);
    free(text);
    return ok;
}

static void print_progress(void *arg, double progress, double total, const char *message)
{
    (void)arg;
    if (total >= 0)
        fprintf(stderr, "progress %g/%g%s%s\n", progress, total, message ? " " : "",
                message ? message : "");
    else
        fprintf(stderr, "progress %g%s%s\n", progress, message ? " " : "", message ? message : "");
}

static void print_tools_text(const json_t *tools)
{
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        const char *d = json_string_value(json_object_get(t, "description"));
        printf("%s%s%s\n", json_string_value(json_object_get(t, "name")), d ? " — " : "",
               d ? d : "");
    }
}

static int client_cmd(int argc, char **argv, bool is_call)
{
    static const struct option longopts[] = {
        {"server", required_argument, NULL, 's'},
        {"url", required_argument, NULL, 'u'},
        {"name", required_argument, NULL, 'n'},
        {"env", required_argument, NULL, 'e'},
        {"header", required_argument, NULL, 'H'},
        {"env-file", required_argument, NULL, 'E'},
        {"header-file", required_argument, NULL, 'F'},
        {"bearer", required_argument, NULL, 'b'},
        {"bearer-file", required_argument, NULL, 'B'},
        {"timeout", required_argument, NULL, 'T'},
        {"progress", no_argument, NULL, 'p'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *server_cmd = NULL, *url = NULL, *name = "server", *bearer_file = NULL;
    const char *env_file = NULL, *header_file = NULL;
    char *bearer_arg = NULL, *bearer = NULL;
    bool json = false, progress = false;
    long timeout = 0;
    json_t *env = json_object(), *headers = json_object();
    int c, status = 2;
    char **words = NULL;
    cdsh_mcp_client *cl = NULL;
    json_t *args = NULL, *res = NULL;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 's': server_cmd = optarg; break;
        case 'u': url = optarg; break;
        case 'n': name = optarg; break;
        case 'b':
            free(bearer_arg);
            bearer_arg = cdsh_cli_token_take_arg(optarg);
            break;
        case 'B': bearer_file = optarg; break;
        case 'p': progress = true; break;
        case 'j': json = true; break;
        case 'T': {
            char *end;
            timeout = strtol(optarg, &end, 10);
            if (!*optarg || *end || timeout <= 0) {
                fprintf(stderr, "cdsh mcp: --timeout wants milliseconds > 0, got '%s'\n", optarg);
                goto out;
            }
            break;
        }
        case 'e':
            if (!add_env(env, optarg, "--env"))
                goto out;
            hide_value(optarg, strcspn(optarg, "=") + 1);
            break;
        case 'E': env_file = optarg; break;
        case 'H':
            if (!add_header(headers, optarg, "--header"))
                goto out;
            hide_value(optarg, header_value_at(optarg));
            break;
        case 'F': header_file = optarg; break;
        case 'h':
            usage(stdout);
            status = 0;
            goto out;
        default: usage(stderr); goto out;
        }
    }
    int from_stdin = (bearer_file && strcmp(bearer_file, "-") == 0) +
                     (env_file && strcmp(env_file, "-") == 0) +
                     (header_file && strcmp(header_file, "-") == 0);
    if (from_stdin > 1) {
        fprintf(stderr, "cdsh mcp: only one of --bearer-file, --env-file and --header-file "
                        "can read stdin ('-')\n");
        goto out;
    }
    if ((env_file && !read_lines_file(env_file, "--env-file", env, add_env)) ||
        (header_file && !read_lines_file(header_file, "--header-file", headers, add_header)))
        goto out;
    int bearer_failed = 0;
    bearer = cdsh_cli_token_resolve("cdsh mcp", bearer_arg, bearer_file, "CDSH_MCP_BEARER",
                                    &bearer_failed);
    bearer_arg = NULL; /* resolve took it */
    if (bearer_failed)
        goto out;
    if ((server_cmd == NULL) == (url == NULL)) {
        fprintf(stderr, "cdsh mcp: give exactly one of --server 'CMD ARGS' and --url URL\n");
        goto out;
    }
    const char *tool = NULL;
    if (is_call) {
        if (optind >= argc) {
            fprintf(stderr,
                    "cdsh mcp call: which tool? (cdsh mcp call --server ... TOOL '{...}')\n");
            goto out;
        }
        tool = argv[optind++];
        cdsh_error perr = {0};
        args = optind < argc ? cdsh_json_parse(argv[optind], strlen(argv[optind]), 0, &perr)
                             : json_object();
        if (optind < argc)
            optind++;
        if (!json_is_object(args)) {
            fprintf(stderr, "cdsh mcp call: arguments must be a JSON object%s%s\n",
                    perr.message[0] ? ": " : "", perr.message);
            goto out;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "cdsh mcp: unexpected argument '%s'\n", argv[optind]);
        goto out;
    }
    if (server_cmd && !(words = split_words(server_cmd))) {
        fprintf(stderr, "cdsh mcp: --server needs a command (check the quotes)\n");
        goto out;
    }
    status = 1;
    cdsh_mcp_client_opts o = {
        .name = name,
        .argv = (const char *const *)words,
        .env = env,
        .url = url,
        .headers = headers,
        .bearer_token = bearer,
        .call_timeout_ms = timeout,
    };
    cdsh_error err = {0};
    if (cdsh_mcp_client_connect(&o, &cl, &err) != 0) {
        fprintf(stderr, "cdsh mcp: %s\n", err.message);
        goto out;
    }
    if (!is_call) {
        json_t *tools = cdsh_mcp_client_tools_dup(cl);
        if (json) {
            char *s = cdsh_json_dump_pretty_dup(tools);
            fputs(s ? s : "[]\n", stdout);
            free(s);
        } else {
            print_tools_text(tools);
        }
        json_decref(tools);
        status = 0;
        goto out;
    }
    cdsh_mcp_call_opts co = {.on_progress = progress ? print_progress : NULL};
    if (cdsh_mcp_client_call(cl, tool, args, &co, &res, &err) != 0) {
        fprintf(stderr, "cdsh mcp call: %s\n", err.message);
        goto out;
    }
    bool is_error = json_is_true(json_object_get(res, "isError"));
    if (json) {
        char *s = cdsh_json_dump_pretty_dup(res);
        fputs(s ? s : "{}\n", stdout);
        free(s);
    } else {
        /* The model-visible view only: structuredContent is for programs
         * (--json prints it), a server repeats it in its text blocks. */
        char *text = cdsh_mcp_content_text_dup(json_object_get(res, "content"), tool);
        printf("%s\n", text ? text : "");
        free(text);
    }
    status = is_error ? 3 : 0; /* a tool failure is reported through the exit status */
out:
    cdsh_mcp_client_free(cl);
    free(bearer_arg);
    free(bearer);
    free_words(words);
    json_decref(env);
    json_decref(headers);
    json_decref(args);
    json_decref(res);
    return status;
}

static int name_cmd(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "Usage: cdsh mcp name SERVER TOOL\n");
        return 2;
    }
    char out[CDSH_MCP_PUBLIC_NAME_MAX + 1];
    if (cdsh_mcp_public_tool_name(argv[1], argv[2], out) != 0)
        return 1;
    printf("%s\n", out);
    return 0;
}

int cdsh_cmd_mcp(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "tools") == 0)
        return client_cmd(argc - 1, argv + 1, false);
    if (argc >= 2 && strcmp(argv[1], "call") == 0)
        return client_cmd(argc - 1, argv + 1, true);
    if (argc >= 2 && strcmp(argv[1], "name") == 0)
        return name_cmd(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "serve") == 0)
        return serve(argc - 1, argv + 1);
    return serve(argc, argv);
}
