/* main.c — cdsh's entry point: hands the built-in plugin descriptors to the
 * front end (the one place outside src/plugins/ that reaches their list),
 * then global flags, then dispatch to a subcommand (subcommands.c). */
#include <stdio.h>
#include <string.h>

#include "cli/subcommands.h"
#include "host/cli.h"
#include "plugins/builtin.h"

int main(int argc, char **argv)
{
    cdsh_cli_host_set_plugins(cdsh_builtin_plugins);
    if (argc < 2) {
        cdsh_cli_print_usage(stderr);
        return 2;
    }
    const char *first = argv[1];
    if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0) {
        cdsh_cli_print_usage(stdout);
        return 0;
    }
    if (strcmp(first, "--version") == 0 || strcmp(first, "-V") == 0 ||
        strcmp(first, "version") == 0) {
        printf("cdsh %s\n", CDSH_VERSION);
        return 0;
    }
    if (strcmp(first, "help") == 0) {
        if (argc < 3) {
            cdsh_cli_print_usage(stdout);
            return 0;
        }
        const cdsh_subcommand *c = cdsh_subcommand_find(argv[2]);
        if (!c) {
            fprintf(stderr, "cdsh: unknown subcommand '%s'; run `cdsh --help` for the list\n",
                    argv[2]);
            return 2;
        }
        char *help_argv[] = {argv[2], "--help", NULL};
        return c->run(2, help_argv);
    }
    const cdsh_subcommand *c = cdsh_subcommand_find(first);
    if (!c) {
        const char *hint = first[0] == '-' ? NULL : cdsh_subcommand_suggest(first);
        if (first[0] == '-')
            fprintf(stderr, "cdsh: unknown option '%s'\n", first);
        else
            fprintf(stderr, "cdsh: unknown subcommand '%s'\n", first);
        if (hint)
            fprintf(stderr, "Did you mean `cdsh %s`?\n", hint);
        fprintf(stderr, "Run `cdsh --help` to list the subcommands.\n");
        return 2;
    }
    return c->run(argc - 1, argv + 1);
}
