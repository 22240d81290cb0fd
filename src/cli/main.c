/* main.c — cdsh's entry point: global flags, then dispatch to a subcommand
 * from the table in subcommands.c. Nothing else lives here. */
#include <stdio.h>
#include <string.h>

#include "cli/subcommands.h"

int main(int argc, char **argv)
{
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
