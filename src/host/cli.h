/* cli_host.h — what the inspection subcommands (tools, commands, skills,
 * config) share: opening a profile and a host with the built-in plugins the
 * profile enables, and printing JSON. Errors go to stderr as
 * `cdsh <sub>: <message>`. */
#ifndef CDSH_CLI_CLI_HOST_H
#define CDSH_CLI_CLI_HOST_H

#include <jansson.h>
#include <stdio.h>

#include "host/host.h"

/* Loads the profile (NULL: "default") from the cdsh home. With lock non-NULL
 * the profile lock is taken first (for edits; close it after saving).
 * 0, or exit status 1. */
int cdsh_cli_profile_open(const char *sub, const char *name, cdsh_fs_lock **lock,
                          cdsh_profile **out);

/* Profile plus a host with the enabled built-in plugins. A plugin that fails
 * to load is reported as a warning and skipped. 0, or exit status 1. */
int cdsh_cli_host_open(const char *sub, const char *profile_name, cdsh_host **host,
                       cdsh_profile **profile);

/* Plugins that every host cdsh_cli_host_open opens loads after the built-in
 * ones (NULL-terminated, borrowed for the process; the profile enables them
 * like built-ins). For a program that embeds cdsh's subcommands with tools of
 * its own; set it once, before the first subcommand runs. Not thread-safe. */
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
