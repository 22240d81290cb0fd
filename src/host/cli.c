/* cli.c — profile and host set-up shared by the command-line subcommands.
 * Global state (documented): the plugin tables (main's built-in one and an
 * embedder's extra one) and the process's home, each set once before any
 * subcommand runs (the home is otherwise resolved once, on first use, under a
 * pthread_once). */
#include "host/cli.h"

#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/home.h"

static cdsh_home *cli_home;
static pthread_once_t cli_home_once = PTHREAD_ONCE_INIT;

static void cli_home_resolve(void)
{
    cli_home = cdsh_home_from_env();
    if (!cli_home) {
        fprintf(stderr, "cdsh: out of memory\n");
        exit(1);
    }
}

const cdsh_home *cdsh_cli_home(void)
{
    pthread_once(&cli_home_once, cli_home_resolve);
    return cli_home;
}

/* A host on the CLI's home (cdsh_host_new_at with a copy of it). */
static cdsh_host *cdsh_cli_host_new(void)
{
    cdsh_home *copy = cdsh_home_dup(cdsh_cli_home());
    return copy ? cdsh_host_new_at(copy) : NULL;
}

int cdsh_cli_profile_open(const char *sub, const char *name, cdsh_fs_lock **lock,
                          cdsh_profile **out)
{
    char *home = NULL;
    cdsh_error err = {0};
    *out = NULL;
    if (lock)
        *lock = NULL;
    int rc = cdsh_home_dir_dup(cdsh_cli_home(), &home, &err);
    if (rc == 0 && lock)
        rc = cdsh_profile_lock(home, name, 10000, lock, &err);
    if (rc == 0)
        rc = cdsh_profile_load(home, name, out, &err);
    free(home);
    if (rc) {
        if (lock) {
            cdsh_fs_lock_close(*lock);
            *lock = NULL;
        }
        fprintf(stderr, "cdsh %s: %s\n", sub, err.message);
        return 1;
    }
    return 0;
}

static const cdsh_plugin_def *const no_plugins[] = {NULL};
static const cdsh_plugin_def *const *plugins = no_plugins;
static const cdsh_plugin_def *const *extra_plugins;

void cdsh_cli_host_set_plugins(const cdsh_plugin_def *const *defs)
{
    plugins = defs ? defs : no_plugins;
}

const cdsh_plugin_def *const *cdsh_cli_host_plugins(void)
{
    return plugins;
}

const cdsh_plugin_def *cdsh_cli_host_plugin_find(const char *name)
{
    for (const cdsh_plugin_def *const *d = plugins; name && *d; d++)
        if (strcmp((*d)->name, name) == 0)
            return *d;
    return NULL;
}

void cdsh_cli_host_set_extra_plugins(const cdsh_plugin_def *const *defs)
{
    extra_plugins = defs;
}

int cdsh_cli_host_open(const char *sub, const char *profile_name, cdsh_host **host,
                       cdsh_profile **profile)
{
    *host = NULL;
    if (cdsh_cli_profile_open(sub, profile_name, NULL, profile))
        return 1;
    *host = cdsh_cli_host_new();
    if (!*host) {
        fprintf(stderr, "cdsh %s: out of memory\n", sub);
        cdsh_profile_free(*profile);
        *profile = NULL;
        return 1;
    }
    cdsh_host_load_plugins(*host, plugins, *profile, NULL);
    cdsh_host_load_plugins(*host, extra_plugins, *profile, NULL);
    json_t *list = cdsh_host_plugins_list(*host);
    size_t i;
    json_t *p;
    json_array_foreach(list, i, p) {
        const char *error = json_string_value(json_object_get(p, "error"));
        if (error)
            fprintf(stderr, "cdsh %s: warning: %s\n", sub, error);
    }
    json_decref(list);
    return 0;
}

void cdsh_cli_print_json(FILE *out, const json_t *value)
{
    char *s = json_dumps(value, JSON_INDENT(2) | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
    if (s) {
        fputs(s, out);
        fputc('\n', out);
        free(s);
    }
}

const char *cdsh_cli_summary(const char *text, char *buf, size_t size, size_t max)
{
    if (!text)
        text = "";
    size_t n = strcspn(text, "\n");
    bool cut = n > max || text[n] == '\n';
    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
            n--;
    }
    snprintf(buf, size, "%.*s%s", (int)n, text, cut ? "…" : "");
    return buf;
}

int cdsh_cli_action(const char *sub, int argc, char **argv, const char *const *actions,
                    void (*usage)(FILE *), int *index)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (int i = 0; actions[i]; i++) {
        if (strcmp(argv[1], actions[i]) == 0) {
            *index = i;
            return -1;
        }
    }
    fprintf(stderr, "cdsh %s: unknown action '%s' (try `cdsh %s --help`)\n", sub, argv[1], sub);
    return 2;
}

int cdsh_cli_parse_opts(const char *sub, int argc, char **argv, int allow_agent, int max_args,
                        void (*usage)(FILE *), cdsh_cli_opts *o)
{
    static const struct option longopts[] = {
        {"agent", required_argument, NULL, 'a'},
        {"profile", required_argument, NULL, 'p'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    int c;
    optind = 1;
    opterr = 0;
    /* argv + 1: the action word plays getopt's program name. */
    while ((c = getopt_long(argc - 1, argv + 1, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'a':
            if (!allow_agent)
                goto bad;
            if (!*optarg) {
                fprintf(stderr, "cdsh %s: --agent needs a non-empty scope id\n", sub);
                return 2;
            }
            o->agent = optarg;
            break;
        case 'p': o->profile = optarg; break;
        case 'j': o->json = 1; break;
        case 'h': usage(stdout); return 0;
        default: goto bad;
        }
    }
    for (int i = optind + 1; i < argc; i++) {
        if (o->nargs >= max_args || o->nargs >= 4) {
            fprintf(stderr, "cdsh %s: unexpected argument '%s'\n", sub, argv[i]);
            return 2;
        }
        o->args[o->nargs++] = argv[i];
    }
    return -1;
bad:
    fprintf(stderr, "cdsh %s: unknown option '%s' (try `cdsh %s --help`)\n", sub,
            argv[optind < argc ? optind : argc - 1], sub);
    return 2;
}
