/* cli_group.c — subcommand-group dispatch shared by the `cdsh <group>` commands. */
#include "host/cli_group.h"

#include <string.h>

static void cdsh_cli_group_usage(const cdsh_cli_group *group, FILE *out)
{
    fprintf(out, "Usage: cdsh %s <subcommand> [options]\n\n%s\nSubcommands:\n", group->name,
            group->about);
    for (const cdsh_subcommand *s = group->subs; s->name; s++)
        fprintf(out, "  %-10s %s\n", s->name, s->summary);
    fprintf(out, "\nRun `cdsh %s <subcommand> --help` for its options.\n", group->name);
}

int cdsh_cli_group_run(const cdsh_cli_group *group, int argc, char **argv)
{
    if (argc < 2) {
        cdsh_cli_group_usage(group, stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        cdsh_cli_group_usage(group, stdout);
        return 0;
    }
    for (const cdsh_subcommand *s = group->subs; s->name; s++)
        if (strcmp(s->name, argv[1]) == 0)
            return s->run(argc - 1, argv + 1);
    fprintf(stderr, "cdsh %s: unknown subcommand '%s'\n\n", group->name, argv[1]);
    cdsh_cli_group_usage(group, stderr);
    return 2;
}
