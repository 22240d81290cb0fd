/* cli.h — what command-line subcommands share, the front end's own (tools,
 * commands, skills, config...) and the plugins' (`cdsh tavern`, `cdsh acp`...,
 * which live in the plugins' folders and so cannot include src/cli/):
 * opening a profile and a host with the plugins the profile enables,
 * action words and options, printing JSON. Errors go to stderr as
 * `cdsh <sub>: <message>`.
 * Global state (documented): the plugin tables hosts are opened with, set
 * once by main (the built-in descriptors) before any subcommand runs. */
#ifndef CDSH_HOST_CLI_H
#define CDSH_HOST_CLI_H

#include <jansson.h>
#include <stdio.h>

#include "host/host.h"

/* The home of this process's subcommands: the environment's
 * (cdsh_home_from_env), resolved on first use and kept for the process. Never NULL (out of memory
 * at first use exits 1). */
const cdsh_home *cdsh_cli_home(void);

/* Loads the profile (NULL: "default") from the cdsh home. With lock non-NULL
 * the profile lock is taken first (for edits; close it after saving).
 * 0, or exit status 1. */
int cdsh_cli_profile_open(const char *sub, const char *name, cdsh_fs_lock **lock,
                          cdsh_profile **out);

/* Profile plus a host with the enabled built-in plugins. A plugin that fails
 * to load is reported as a warning and skipped. 0, or exit status 1. */
int cdsh_cli_host_open(const char *sub, const char *profile_name, cdsh_host **host,
                       cdsh_profile **profile);

/* The descriptors every host cdsh_cli_host_open opens loads (NULL-terminated,
 * borrowed for the process; main passes plugins/builtin.h's table). Until it
 * is set, hosts load no plugins. Not thread-safe: set it once, first. */
void cdsh_cli_host_set_plugins(const cdsh_plugin_def *const *defs);

/* The table set above (never NULL: an empty table until set). Borrowed. */
const cdsh_plugin_def *const *cdsh_cli_host_plugins(void);

/* The descriptor named `name` in that table, or NULL. */
const cdsh_plugin_def *cdsh_cli_host_plugin_find(const char *name);

/* Plugins that every host cdsh_cli_host_open opens loads after the built-in
 * ones (NULL-terminated, borrowed for the process; the profile enables them
 * like built-ins). For a program that embeds cdsh's subcommands with tools of
 * its own; set it once, before the first subcommand runs. Not thread-safe.
 * keep-public: for programs that embed cdsh's subcommands (tests/peers/cdsh_asking.c). */
void cdsh_cli_host_set_extra_plugins(const cdsh_plugin_def *const *defs);

/* Options shared by the inspection subcommands, parsed after the action word
 * (argv[0] = subcommand, argv[1] = action). */
typedef struct cdsh_cli_opts {
    const char *profile; /* --profile NAME */
    const char *agent;   /* --agent A (only where allowed) */
    int json;            /* --json */
    const char *args[4]; /* positional arguments after the action */
    int nargs;
} cdsh_cli_opts;

/* Picks the action word argv[1] from the NULL-terminated `actions`: no action
 * prints usage to stderr (exit 2), --help/-h to stdout (exit 0), an unknown
 * one is reported (exit 2). Returns -1 with *index set when the caller should
 * go on, else the exit status. */
int cdsh_cli_action(const char *sub, int argc, char **argv, const char *const *actions,
                    void (*usage)(FILE *), int *index);

/* Returns -1 when the caller should go on, else the exit status to return
 * (0 after --help, 2 on a usage error, reported on stderr). */
int cdsh_cli_parse_opts(const char *sub, int argc, char **argv, int allow_agent, int max_args,
                        void (*usage)(FILE *), cdsh_cli_opts *o);

/* Pretty JSON plus newline. */
void cdsh_cli_print_json(FILE *out, const json_t *value);

/* First line of text, cut to max bytes (with "…"), into buf. */
const char *cdsh_cli_summary(const char *text, char *buf, size_t size, size_t max);

#endif
