/* subcommands.c — the `cdsh` subcommand table, usage text and suggestions. */
#include "cli/subcommands.h"

#include <string.h>

#include "cli/cmd_acp.h"
#include "cli/cmd_web.h"
#include "cli/cmd_xiangqi.h"

const cdsh_subcommand cdsh_subcommands[] = {
    {"acp", "external coding agents over ACP: engines, probe, prompt, sessions", cdsh_cmd_acp},
    {"web", "start the local web UI and RPC gateway on 127.0.0.1 (the main job)", cdsh_cmd_web},
    {"xiangqi", "xiangqi (Chinese chess) engine tools: perft", cdsh_cmd_xiangqi},
    {NULL, NULL, NULL},
};

const cdsh_subcommand *cdsh_subcommand_find(const char *name)
{
    for (const cdsh_subcommand *c = cdsh_subcommands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

void cdsh_cli_print_usage(FILE *out)
{
    fprintf(out,
            "cdsh %s — a C agent harness: host, xiangqi, tavern, facade, ACP and MCP import\n"
            "\n"
            "Usage: cdsh [--help | --version] <subcommand> [options]\n"
            "\n"
            "Subcommands:\n",
            CDSH_VERSION);
    for (const cdsh_subcommand *c = cdsh_subcommands; c->name; c++)
        fprintf(out, "  %-12s %s\n", c->name, c->summary);
    fprintf(out, "  %-12s %s\n", "help", "show this help, or `cdsh help <subcommand>` for one");
    fprintf(out,
            "\n"
            "Global options:\n"
            "  -h, --help     show this help\n"
            "  -V, --version  print the version and exit\n"
            "\n"
            "Environment:\n"
            "  CDSH_HOME          state directory (default ~/.cdsh)\n"
            "  DEEPSEEK_API_KEY   key for the default model endpoint\n"
            "  CDSH_BASE_URL      OpenAI-compatible endpoint to use instead\n"
            "  CDSH_MODEL         model name at that endpoint\n"
            "\n"
            "Run `cdsh <subcommand> --help` for the options of one subcommand.\n");
}

/* Levenshtein distance, small strings only (subcommand names). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 31 || lb > 31)
        return 99;
    size_t row[32];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t prev = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cur = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = prev + cost;
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            prev = cur;
        }
    }
    return row[lb];
}

const char *cdsh_subcommand_suggest(const char *name)
{
    const char *best = NULL;
    size_t best_d = 3; /* suggest only close matches */
    for (const cdsh_subcommand *c = cdsh_subcommands; c->name; c++) {
        size_t d = edit_distance(name, c->name);
        if (d < best_d || (strncmp(name, c->name, strlen(name)) == 0 && strlen(name) >= 2)) {
            best_d = d;
            best = c->name;
        }
    }
    return best;
}
