/* subcommand.h — one `cdsh <name>` command-line subcommand: the row type of
 * the front end's own table (src/cli/subcommands.c) and of the table a
 * plugin descriptor carries (cdsh_plugin_def.subcommands), so a plugin's
 * subcommands live in the plugin's folder and main finds them by walking
 * the built-in descriptors. Groups of sub-subcommands: host/cli_group.h. */
#ifndef CDSH_HOST_SUBCOMMAND_H
#define CDSH_HOST_SUBCOMMAND_H

typedef struct cdsh_subcommand {
    const char *name;
    const char *summary;               /* one line for `cdsh --help` */
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name; returns exit status */
} cdsh_subcommand;

#endif
